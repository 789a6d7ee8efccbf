"""The benchmark harness: named suites, one entry point, each suite writing its sections of
docs/BENCHMARKS.md, and an A/B of any suite against another commit.

Usage (``make bench SUITE=<suite> [WRITE=1] [AGAINST=<ref>] [ROUNDS=3]`` runs the same):

    .venv/bin/python benchmarks/bench.py list
    .venv/bin/python benchmarks/bench.py run latency [--write] [--only search_peers]
    .venv/bin/python benchmarks/bench.py run latency --against 9df732f [--rounds 3] [--out ab.md]
    .venv/bin/python benchmarks/bench.py run latency --only search_peers --step-args "--sets faquad"
    .venv/bin/python benchmarks/bench.py run latency --only search_peers --fresh

``--fresh`` runs the suite in a new database of its own (migrated and seeded from this checkout,
dropped after the run), which holds only what the suite's steps build: the setting of a table
that says "a database holding the benchmark knowledge bases only". Without it the suite runs in
the usual database (``db.ensure_database``), and its built worlds stay for the next run.

A suite is a list of steps; a step is one script of this folder with its arguments, run in its own
process (``benchmarks/_step.py``), which prints its tables and, with ``--write``, replaces its
marked section of docs/BENCHMARKS.md (``report.write_section``). The scripts share their datasets
and built worlds: ``report`` (the ``bench`` tenant and its member, the latency tenants),
``ingest.Corpus``, ``hipocampo.evaluation.datasets`` (FaQuAD, Quati, SciFact, LoCoMo from
``../shared/datasets``) and the embedding cache, so a world built by one step is reused by the next
and by the next run.

``--against REF`` measures the database as commit REF defines it beside the current one: two
scratch databases on the same server (``hipocampo.db.scratch_database``), one migrated from this
checkout's ``supabase/migrations``, one from REF's (``git archive``), each step run against each in
turn for ``--rounds`` rounds (which goes first alternates), every step's sections captured instead
of written, and each table printed once with every number as ``current / REF`` (the median of the
rounds) and the ratio of the medians. The Python is this checkout's on both sides: an A/B measures
SQL (functions, indexes, plans); for a change to the client, check out the other commit and run
the suite there. Steps that start servers or databases of their own (``scale``'s replica and move)
are left out of an A/B.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
E5 = "multilingual-e5-small"
MINILM = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class Step:
    """One script of benchmarks/ and its arguments; ``ab``: meaningful in an A/B (it measures the
    database it is given, and builds no server of its own)."""

    script: str
    args: tuple[str, ...] = ()
    ab: bool = True
    write: bool = True  # takes --write

    @property
    def name(self) -> str:
        return self.script.removesuffix(".py")

    def command(self, write: bool) -> list[str]:
        return [self.script, *self.args, *(["--write"] if write and self.write else [])]


@dataclass(frozen=True)
class Suite:
    """A named suite: what it measures (its BENCHMARKS.md sections) and its steps, in order."""

    about: str
    steps: tuple[Step, ...] = field(default_factory=tuple)


SUITES: dict[str, Suite] = {
    "retrieval": Suite(
        "nDCG@10 / recall@10 of hybrid search on FaQuAD, Quati, SciFact per offline model; the dense "
        "leg's lean fitted leave-one-dataset-out; the paraphrase sets (a regulation, a contract, a "
        "services FAQ, the regulation in Spanish and in English); "
        "the language check; knowledge bases of several languages; the similarity floor's rule per model",
        (
            Step("retrieval.py", ("--extra",)),
            Step("retrieval.py", ("--models", f"{MINILM},{E5}", "--sets", "faquad,quati,scifact")),
            Step("fusion_coverage.py", ("--model", E5)),
            Step("fusion_coverage.py", ("--model", MINILM)),
            Step("regulation.py", ()),
            Step("regulation.py", ("--set", "contract")),
            Step("regulation.py", ("--set", "faq")),
            Step("regulation.py", ("--set", "spanish")),
            Step("regulation.py", ("--set", "english")),
            Step("language_check.py", ()),
            Step("languages.py", ()),
            Step("calibrate_similarity.py", ("--sets", "faquad,quati", "--model", E5), write=False),
        ),
    ),
    "answers": Suite(
        "answers that cite or refuse on FaQuAD and Quati, the gate's thresholds chosen on train "
        "splits, the sentence similarity, the gate as a calibrated model, the on-topic floor",
        (
            Step("answers.py", ()),
            Step("answers.py", ("--model", E5)),
            Step("calibrate_answers.py", ()),
            Step("calibrate_answers.py", ("--model", E5, "--min-scores", "0.30,0.35,0.40")),
            Step("calibrate_sentences.py", ()),
            Step("calibrate_sentences.py", ("--model", E5)),
            Step("sentence_cost.py", ()),
            Step("gate_features.py", ("--model", E5), write=False),
            Step("gate_fit.py", ()),
            Step("passages_floor.py", ()),
        ),
    ),
    "memory": Suite(
        "LoCoMo evidence recall per model, the memory engine's upsert and search at 500k memories, "
        "history search, the memory and duplicate thresholds per model, memories proposed from messages",
        (
            Step("locomo.py", ()),
            Step("locomo.py", ("--model", E5)),
            Step("memory.py", ()),
            Step("history_latency.py", ("--runs", "3")),
            Step("calibrate_memory.py", ("--model", E5), write=False),
            Step("calibrate_duplicates.py", ("--models", f"{MINILM},{E5}", "--sets", "faquad,quati")),
            Step("memory_proposals.py", ()),
        ),
    ),
    "latency": Suite(
        "hybrid_search beside the Supabase guide's and LangChain's on FaQuAD and SciFact; 100,000 "
        "chunks in 50 tenants at 1 and 4 clients; a knowledge base not analysed yet; the "
        "near-duplicate lookup; the CLI from a cold process",
        (
            Step("search_peers.py", ("--queries", "200", "--rounds", "3")),
            Step("latency.py", ()),
            Step(
                "search_peers.py",
                (
                    "--sets",
                    "scifact",
                    "--queries",
                    "200",
                    "--rounds",
                    "3",
                    "--section",
                    "search-peers-beside",
                    "--title",
                    "SciFact beside 100,000 chunks of 50 other tenants (one run)",
                    "--beside",
                    "the 50 tenants of latency.py too (100,000 chunks, one HNSW graph for the model)",
                    "--beside-chunks",
                    "100000",
                ),
            ),
            Step("kb_latency.py", ()),
            Step("near_duplicates.py", ()),
            Step("cli_latency.py", (), ab=False),
        ),
    ),
    "ingest": Suite(
        "bulk ingestion, the embedders (fp32 / int8, both offline models), the PII scrub by size",
        (
            Step("ingest.py", ()),
            Step("embedder.py", ("--quality", "--e5"), ab=False),
            Step("scrub.py", ("--sizes", "1", "2", "5", "10", "20")),
        ),
    ),
    "scale": Suite(
        "one knowledge base growing to 100,000 chunks; a million chunks in 1,000 tenants beside the peers; "
        "deleting a tenant; a tenant moved online; a streaming replica",
        (
            Step("scale.py", ()),
            Step("tenants.py", ("--drop",), ab=False),
            Step("tenant_delete.py", ("--per-tenant", "20000", "--rounds", "2", "--timeout", "600")),
            Step("tenant_move.py", (), ab=False),
            Step("replica.py", (), ab=False),
        ),
    ),
    "install": Suite(
        "the install's size outside the checkout (fresh venvs from the built wheel)",
        (Step("install_size.py", (), ab=False),),
    ),
}


def _run(step: Step, write: bool, env: dict[str, str] | None = None) -> None:
    """Run one step in its own process; exits with its code when it fails."""
    cmd = [sys.executable, str(HERE / "_step.py"), *step.command(write)]
    print(f"\n== {step.name} {' '.join(step.args)}", flush=True)
    done = subprocess.run(cmd, cwd=ROOT, env=env, check=False)
    if done.returncode:
        sys.exit(f"{step.name} failed (exit {done.returncode}): {' '.join(cmd[1:])}")


def _steps(suite: str, only: Sequence[str]) -> list[Step]:
    steps = list(SUITES[suite].steps)
    if only:
        unknown = set(only) - {s.name for s in steps}
        if unknown:
            sys.exit(f"no step {', '.join(sorted(unknown))} in suite {suite}: {', '.join(s.name for s in steps)}")
        steps = [s for s in steps if s.name in only]
    return steps


# -- A/B ----------------------------------------------------------------------------------------
NUMBER = re.compile(r"^(-?[\d,]*\.?\d+)(\s*(?:ms|s|%|×|x|MB|GB|/s)?)$")


def _migrations_at(ref: str, into: Path) -> Path:
    """REF's supabase/migrations, extracted under ``into``."""
    archive = into / "migrations.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", ref, "supabase/migrations"], cwd=ROOT, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "supabase" / "migrations"


def _sections(folder: Path) -> dict[str, str]:
    return {p.stem: p.read_text("utf-8") for p in sorted(folder.glob("*.md"))}


def _number(cell: str) -> tuple[float, str] | None:
    m = NUMBER.match(cell.strip())
    return (float(m.group(1).replace(",", "")), m.group(2)) if m else None


def _merged_cell(current: list[str], reference: list[str]) -> str:
    """A table cell over the rounds: the text when every run printed the same, else
    ``median current / median REF (ratio)`` for numbers, or both texts."""
    if len(set(current + reference)) == 1:
        return current[0]
    a = [_number(c) for c in current]
    b = [_number(c) for c in reference]
    if all(a) and all(b):
        ma = statistics.median(x[0] for x in a if x)
        mb = statistics.median(x[0] for x in b if x)
        unit = (a[0] or (0.0, ""))[1]
        ratio = f" ({ma / mb:.2f}×)" if mb else ""
        return f"{ma:g}{unit} / {mb:g}{unit}{ratio}"
    return f"{current[0]} / {reference[0]}"


# (a number may end a sentence: a period after it that no digit follows is not its own)
IN_TEXT = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?!\w|\.\d)")


def _merged_text(rows: list[str], n: int) -> str:
    """A line of prose over the rounds: when every run wrote it alike but for its numbers, each
    number merged as a table cell is; otherwise the current side's first round's line."""
    skeletons = {IN_TEXT.sub("#", r) for r in rows}
    if len(skeletons) != 1:
        return rows[0]
    numbers = [IN_TEXT.findall(r) for r in rows]
    merged = iter(
        _merged_cell([x[j] for x in numbers[:n]], [x[j] for x in numbers[n:]]) for j in range(len(numbers[0]))
    )
    return IN_TEXT.sub(lambda _: next(merged), rows[0])


def ab_table(current: Sequence[str], reference: Sequence[str]) -> str:
    """One section's text from the rounds of both sides: its lines as the current side's first
    round printed them, each table cell and each number of a prose line merged over the rounds
    (:func:`_merged_cell`). Rows and lines the runs do not share are the current side's."""
    split = [s.splitlines() for s in (*current, *reference)]
    n = len(current)
    out = []
    for i, line in enumerate(split[0]):
        rows = [lines[i] if i < len(lines) else "" for lines in split]
        if not line.startswith("|") or set(line) <= set("|-: ") or any(not r.startswith("|") for r in rows):
            out.append(line if set(line) <= set("|-: ") else _merged_text(rows, n))
            continue
        cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
        if len({len(c) for c in cells}) != 1:
            out.append(line)
            continue
        merged = [_merged_cell([c[j] for c in cells[:n]], [c[j] for c in cells[n:]]) for j in range(len(cells[0]))]
        out.append("| " + " | ".join(merged) + " |")
    return "\n".join(out)


def run_ab(suite: str, steps: list[Step], ref: str, rounds: int, out: Path | None) -> None:
    """The suite's steps against this checkout's schema and REF's, ``rounds`` times in turn."""
    sys.path.insert(0, str(ROOT / "py_client"))
    from hipocampo import db

    kept = [s for s in steps if s.ab]
    if not kept:
        sys.exit(f"suite {suite} has no step an A/B measures (each builds a server of its own)")
    left = [s.name for s in steps if not s.ab]
    if left:
        print(f"left out of the A/B (they build servers of their own): {', '.join(left)}")
    with tempfile.TemporaryDirectory(prefix="hipocampo-ab-") as tmp:
        ref_dir = _migrations_at(ref, Path(tmp))
        with (
            db.scratch_database("hipocampo_bench_head") as head_url,
            db.scratch_database("hipocampo_bench_ref", migrations=ref_dir) as ref_url,
        ):
            sides = {"current": head_url, ref: ref_url}
            for r in range(rounds):
                order = list(sides) if r % 2 == 0 else list(reversed(sides))
                for side in order:
                    for step in kept:
                        target = Path(tmp) / side.replace("/", "_") / str(r)
                        target.mkdir(parents=True, exist_ok=True)
                        env = os.environ | {
                            "HIPOCAMPO_DATABASE_URL": sides[side],
                            "HIPOCAMPO_BENCH_SECTIONS": str(target),
                            "HIPOCAMPO_BENCH_FIXED_SCHEMA": "1",
                        }
                        print(f"-- round {r + 1}/{rounds}, {side}", flush=True)
                        _run(step, True, env)
            text = [f"# {suite}: current / {ref}, median of {rounds} rounds (ratio of the medians)", ""]
            names = _sections(Path(tmp) / "current" / "0")
            for name in names:
                cur = [_sections(Path(tmp) / "current" / str(r)).get(name, "") for r in range(rounds)]
                old = [_sections(Path(tmp) / ref.replace("/", "_") / str(r)).get(name, "") for r in range(rounds)]
                text += [ab_table(cur, old), ""]
    report = "\n".join(text)
    print("\n" + report)
    if out:
        out.write_text(report, "utf-8")
        print(f"written to {out}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench", description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the suites and their steps")
    run = sub.add_parser("run", help="run a suite")
    run.add_argument("suite", choices=sorted(SUITES))
    run.add_argument("--write", action="store_true", help="each step rewrites its section of docs/BENCHMARKS.md")
    run.add_argument("--only", action="append", default=[], help="a step of the suite by its script's name")
    run.add_argument("--step-args", help="with one --only: its arguments instead of the suite's")
    run.add_argument("--fresh", action="store_true", help="in a new database of its own, dropped after the run")
    run.add_argument("--against", metavar="REF", help="A/B: the database at git revision REF beside the current one")
    run.add_argument("--rounds", type=int, default=3, help="A/B rounds (default 3)")
    run.add_argument("--out", type=Path, help="A/B: also write the report to this file")
    args = ap.parse_args(argv)
    if args.cmd == "list":
        for name, suite in SUITES.items():
            print(f"{name}: {suite.about}")
            for step in suite.steps:
                print(f"    {' '.join(step.command(True))}{'' if step.ab else '   (not in an A/B)'}")
        return 0
    steps = _steps(args.suite, args.only)
    if args.step_args is not None:
        if len({s.script for s in steps}) != 1:
            sys.exit("--step-args needs one script (--only)")
        steps = [replace(steps[0], args=tuple(shlex.split(args.step_args)))]
    if args.against:
        if args.write:
            sys.exit("--write and --against: an A/B writes no section of docs/BENCHMARKS.md (use --out)")
        run_ab(args.suite, steps, args.against, max(1, args.rounds), args.out)
        return 0
    if args.fresh:
        sys.path.insert(0, str(ROOT / "py_client"))
        from hipocampo import db

        with db.scratch_database("hipocampo_bench_fresh") as url:
            env = os.environ | {"HIPOCAMPO_DATABASE_URL": url, "HIPOCAMPO_BENCH_FIXED_SCHEMA": "1"}
            for step in steps:
                _run(step, args.write, env)
        return 0
    for step in steps:
        _run(step, args.write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
