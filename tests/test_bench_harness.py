"""The benchmark harness (issue 60 §3): every suite's step is a script of benchmarks/ that parses
its arguments, an A/B merges both sides' tables cell by cell, and a step's section is captured,
not written, when the harness asks (benchmarks/bench.py, benchmarks/report.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench  # noqa: E402
import report  # noqa: E402

pytestmark = pytest.mark.any_model


def test_the_issue_s_suites_exist_and_each_step_is_a_script() -> None:
    assert {"retrieval", "answers", "memory", "latency", "ingest", "scale", "install"} <= set(bench.SUITES)
    for suite in bench.SUITES.values():
        for step in suite.steps:
            assert (ROOT / "benchmarks" / step.script).is_file(), step.script


def test_every_step_s_arguments_parse() -> None:
    """Each step's script accepts the suite's arguments (argparse exits 2 on an unknown one); the
    script is asked for --help after them, so nothing runs."""
    for suite in bench.SUITES.values():
        for step in suite.steps:
            cmd = [sys.executable, str(ROOT / "benchmarks" / "_step.py"), *step.command(True), "--help"]
            done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
            assert done.returncode == 0, (step.script, step.args, done.stderr[-500:])


def test_an_ab_table_shows_each_number_as_current_over_the_reference_with_the_ratio() -> None:
    head = "| set | method | p50 ms |\n|---|---|---|\n"
    current = [head + "| faquad | hipocampo | 2.00 |", head + "| faquad | hipocampo | 4.00 |"]
    reference = [head + "| faquad | hipocampo | 1.00 |", head + "| faquad | hipocampo | 3.00 |"]
    merged = bench.ab_table(current, reference).splitlines()
    assert merged[:2] == ["| set | method | p50 ms |", "|---|---|---|"]
    assert merged[2] == "| faquad | hipocampo | 3 / 2 (1.50×) |"
    prose = bench.ab_table(["ask p50 10.0 ms over 120 asks"] * 2, ["ask p50 5.0 ms over 120 asks"] * 2)
    assert prose == "ask p50 10 / 5 (2.00×) ms over 120 asks"
    # A number that ends the sentence (the answers step's latency line).
    ended = bench.ab_table(["ask p95 40.0; pack p95 9.0."] * 2, ["ask p95 50.0; pack p95 10.0."] * 2)
    assert ended == "ask p95 40 / 50 (0.80×); pack p95 9 / 10 (0.90×)."


def test_a_section_is_captured_under_the_harness_and_written_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIPOCAMPO_BENCH_SECTIONS", str(tmp_path))
    out = report.write_section("<!-- search-peers:begin -->", "<!-- search-peers:end -->", "text")
    assert out == tmp_path / "search-peers.md" and out.read_text("utf-8") == "text"
    assert "text" not in (ROOT / "docs" / "BENCHMARKS.md").read_text("utf-8").splitlines()


def test_the_harness_lists_its_suites() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench.py"), "list"], capture_output=True, text=True, check=True
    )
    assert all(f"{name}:" in done.stdout for name in bench.SUITES)
