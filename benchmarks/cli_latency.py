"""CLI latency from a cold process (issue 18 §2): the real ``hipocampo`` commands timed as
subprocesses, Python start, imports, model load and the query included, on one embedded database.

    python benchmarks/cli_latency.py [--runs 7] [--cli after=.venv/bin/hipocampo --cli before=PATH] [--write]

Each ``--cli NAME=PATH`` is a ``hipocampo`` executable (e.g. one installed from an older commit in
its own venv); all of them are timed against the same database in the same run, interleaved
(one run of every CLI, then the next run), so a ratio between them is fair on a noisy machine.
The database is a throwaway embedded server with the README's examples/condominio ingested and
one user who gave consent and has two memories. Reports the median and the spread (min–max)
in seconds; targets: search/ask/memory recall p50 <= 1.5 s, memory consent/kb list/db status
<= 0.8 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import write_section

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"search": 1.5, "ask": 1.5, "memory recall": 1.5, "memory consent": 0.8, "kb list": 0.8, "db status": 0.8}
BEGIN, END = "<!-- cli_latency:begin -->", "<!-- cli_latency:end -->"


def commands(user: str) -> dict[str, list[str]]:
    q = "qual o prazo de recurso contra multa?"
    return {
        "search": ["search", q, "--kb", "regulamentos", "--tenant", "sol"],
        "ask": ["ask", q, "--kb", "regulamentos", "--tenant", "sol"],
        "memory recall": ["memory", "recall", "como devo responder?", "--tenant", "sol", "--user", user],
        "memory consent": ["memory", "consent", "--tenant", "sol", "--user", user],
        "kb list": ["kb", "list", "--tenant", "sol"],
        "db status": ["db", "status"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cli", action="append", default=[], help="NAME=PATH of a hipocampo executable")
    ap.add_argument("--write", action="store_true", help="rewrite the docs/BENCHMARKS.md section")
    args = ap.parse_args()
    clis = dict(c.split("=", 1) for c in args.cli) or {"now": str(ROOT / ".venv" / "bin" / "hipocampo")}
    tmp = Path(tempfile.mkdtemp(prefix="hipocampo-cli-bench-"))
    tmp.chmod(0o777)  # the embedded server runs as its own user under root
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIPOCAMPO_")}
    env |= {"HIPOCAMPO_DATA_DIR": str(tmp / "data"), "COLUMNS": "120"}
    first = next(iter(clis.values()))

    def run(cli: str, *a: str, check: bool = True) -> float:
        t0 = time.perf_counter()
        res = subprocess.run([cli, *a], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
        took = time.perf_counter() - t0
        if check and res.returncode != 0:
            raise SystemExit(f"{cli} {' '.join(a)} exited {res.returncode}: {res.stderr[-1500:]}")
        return took

    user = str(uuid.uuid4())
    try:
        run(first, "db", "start")
        run(first, "tenant", "create", "Condomínio Sol", "--slug", "sol")
        run(first, "ingest", "examples/condominio/", "--kb", "regulamentos", "--create-kb", "--tenant", "sol")
        run(first, "member", "add", user, "--tenant", "sol")
        run(first, "memory", "consent", "--tenant", "sol", "--user", user)
        for key, value, desc, category in (
            ("prefs.short_answers", "true", "Prefere respostas curtas", "preference"),
            ("projects.horta", "tomates", "Planta tomates na varanda", "projects"),
        ):
            run(first, "memory", "remember", key, value, desc, "-c", category, "--tenant", "sol", "--user", user)
        cmds = commands(user)
        for cli in clis.values():  # one warm-up each: caches (page cache, .pyc, the ONNX graph) filled
            for c in cmds.values():
                run(cli, *c)
        times: dict[tuple[str, str], list[float]] = {(n, c): [] for n in clis for c in cmds}
        for _ in range(args.runs):
            for name, cli in clis.items():
                for cname, c in cmds.items():
                    times[(name, cname)].append(run(cli, *c))
    finally:
        subprocess.run([first, "db", "stop"], env=env, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)

    names = list(clis)
    head = "| command | target | " + " | ".join(f"{n} p50 (min–max) s" for n in names)
    if len(names) == 2:
        head += f" | {names[0]} / {names[1]}"
    head += " |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for cname in cmds:
        row = f"| `hipocampo {cname}` | ≤ {TARGETS[cname]} |"
        meds = []
        for n in names:
            xs = times[(n, cname)]
            meds.append(statistics.median(xs))
            row += f" {meds[-1]:.2f} ({min(xs):.2f}–{max(xs):.2f}) |"
        if len(names) == 2:
            row += f" {meds[0] / meds[1]:.1f}× |"
        lines.append(row)
    table = "\n".join(lines)
    print(table)
    if args.write:
        cmd = "python benchmarks/cli_latency.py " + " ".join(f"--cli {c}" for c in args.cli) + f" --runs {args.runs}"
        text = (
            f"{BEGIN}\n## CLI latency from a cold process (issue 18 §2)\n\n"
            f"`{cmd.strip()}` ({time.strftime('%Y-%m-%d')}, 2 cores): each command a new process (Python start, "
            f"imports, model load, the query), {args.runs} runs after one warm-up, the CLIs interleaved against one "
            "embedded database holding examples/condominio and one user with consent and two memories.\n\n"
            f"{table}\n{END}"
        )
        print(f"written: {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
