"""The calibration rules (issue 22 §2) on distributions whose answers are known, and the command's
refusal of an unknown model. The rules on the real datasets are measured by `hipocampo calibrate`
and benchmarks/calibrate_*.py (docs/BENCHMARKS.md, "Thresholds per embedding model")."""

from __future__ import annotations

from typer.testing import CliRunner

from hipocampo.calibration import answer_threshold, context_threshold, grid, grid_step, similarity_floor
from hipocampo.cli import app


def spread(lo: float, hi: float, n: int = 1000) -> list[float]:
    """``n`` cosines evenly spread over [lo, hi)."""
    return [lo + (hi - lo) * i / n for i in range(n)]


def test_the_grid_follows_the_spread_of_the_evidence_cosines() -> None:
    assert grid_step(spread(0.1, 0.7)) == 0.05  # MiniLM-like: wide
    assert grid_step(spread(0.78, 0.88)) == 0.01  # e5-like: crowded
    assert grid(0.05)[:3] == [0.05, 0.1, 0.15] and grid(0.05)[-1] == 0.95 and len(grid(0.01)) == 99


def test_each_rule_picks_the_documented_value() -> None:
    # A floor may drop at most 0.5 % of the relevant pairs of every set: the stricter set decides.
    assert similarity_floor([spread(0.30, 0.90), spread(0.40, 0.90)], grid(0.05)) == 0.3
    assert similarity_floor([spread(0.30, 0.90), spread(0.20, 0.90)], grid(0.05)) == 0.2
    # Context keeps >= 75 % of the evidence: the 25th percentile, rounded down to the grid.
    assert context_threshold(spread(0.2, 0.6), grid(0.05)) == 0.3
    # Answer keeps <= 1.5 % of the other pairs: above their 98.5th percentile, rounded up.
    assert answer_threshold(spread(0.0, 0.5), grid(0.05)) == 0.5
    assert answer_threshold(spread(0.75, 0.85), grid(0.01)) == 0.85


def test_calibrate_refuses_an_unknown_model() -> None:
    res = CliRunner().invoke(app, ["calibrate", "--model", "bert-base"])
    assert res.exit_code == 1 and "unknown local embedding model" in res.output
