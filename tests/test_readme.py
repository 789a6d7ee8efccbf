"""The tour of docs/getting-started.md is a script (issue 19 §2): its bash block runs line by line
against the session's database through the real ``hipocampo`` command, each line with the exit
code its comment gives (``# exit N``; 0 otherwise), then its Python snippet runs; the README's
five-minute tour is lines of it, in its order (issue 58 §5). A change that breaks the flow fails
here."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import DEFAULT_MODEL, MODEL

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
TOUR = ROOT / "docs" / "getting-started.md"
BIN = Path(sys.executable).parent


def bash_lines(text: str, offset: int = 0) -> list[tuple[int, str, int]]:
    """The first bash block's commands as (line, command, expected exit code)."""
    bash = re.search(r"```bash\n(.*?)```", text, flags=re.S)
    assert bash, "the tour lost its bash block"
    start = offset + text[: bash.start(1)].count("\n") + 1
    commands: list[tuple[int, str, int]] = []
    for n, line in enumerate(bash.group(1).splitlines()):
        code, _, comment = line.partition("  #")
        if not code.strip() or code.lstrip().startswith("#"):
            continue
        exit_code = re.match(r"\s*exit (\d+)", comment)
        commands.append((start + n, code.strip(), int(exit_code.group(1)) if exit_code else 0))
    return commands


def using_it() -> tuple[list[tuple[int, str, int]], str]:
    """The tour's bash commands as (line of docs/getting-started.md, command, expected exit code),
    and its Python snippet."""
    text = TOUR.read_text("utf-8")
    python = re.search(r"```python\n(.*?)```", text, flags=re.S)
    assert python, "the tour lost its python block"
    return bash_lines(text), python.group(1)


def script(commands: list[tuple[int, str, int]]) -> str:
    """One bash script: each command's output behind a marker, its exit code checked."""
    out = ["set -u"]
    for line, command, expected in commands:
        out.append(f"echo '### tour line {line}: '{shlex.quote(command)}")
        out.append(f"{command} 2>&1")
        failed = f'echo "tour line {line} exited $rc, expected {expected}"; exit 99'
        out.append(f'rc=$?; if [ "$rc" -ne {expected} ]; then {failed}; fi')
    return "\n".join(out) + "\n"


def outputs(log: str) -> dict[str, str]:
    """Each command's output by its text."""
    parts = re.split(r"^### tour line \d+: (.*)$", log, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


@pytest.fixture
def env(database_url: str) -> dict[str, str]:
    e = {**os.environ, "HIPOCAMPO_DATABASE_URL": database_url, "COLUMNS": "160", "OMP_NUM_THREADS": "2"}
    e["PATH"] = f"{BIN}{os.pathsep}{e.get('PATH', '')}"
    e.pop("HIPOCAMPO_USER", None)
    return e


@pytest.mark.skipif(MODEL != DEFAULT_MODEL, reason="the README shows the default model; make pytest-minilm runs MiniLM")
def test_the_tour_runs_as_written(env: dict[str, str]) -> None:
    commands, snippet = using_it()
    assert len(commands) >= 40
    proc = subprocess.run(
        ["bash", "-c", script(commands)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    out = outputs(proc.stdout)

    def of(prefix: str) -> str:
        found = [v for k, v in out.items() if k.startswith(prefix)]
        assert found, prefix
        return " ".join(found[0].split())

    assert "6 ingested, 0 unchanged, 0 metadata updated, 0 failed" in of("hipocampo ingest examples/condominio/")
    broken = of("hipocampo ingest examples/broken/")
    assert "4 failed" in broken and broken.count("corrompido.pdf") == 1
    assert "foto-do-aviso.txt: the content is image/png (.png), not text" in broken  # issue 58 §3
    assert "EOF marker" not in broken and "WARNING" not in broken  # no library noise (§1.8)
    assert "unsupported file type .xlsx; supported: .txt, .md, .pdf, .docx, .json, .html" in broken
    assert "0 ingested, 0 unchanged, 6 metadata updated" in of(
        "hipocampo ingest examples/condominio/ --kb regulamentos --tenant sol --source-type regulation --trust"
    )
    assert "Regimento Interno" in of('hipocampo search "qual o prazo')
    answer = of('hipocampo ask "qual o prazo')
    assert "15 dias" in answer and "REFUSAL" not in answer and "##" not in answer
    other_words = of('hipocampo ask "posso fazer mudança no domingo?"')  # the article, answered or quoted
    assert "segunda a sábado" in other_words and "REFUSAL" not in other_words
    assert "REFUSAL" in of('hipocampo ask "qual a previsão do tempo')
    assert "error [22003]: rag.top_k must lie in [1, 20]" in of("hipocampo config set rag '{\"top_k\": 99}'")
    assert "prefs.short_answers" in of('hipocampo memory recall "como devo responder?"')
    assert of("hipocampo memory correct").startswith("corrected ")
    assert of("hipocampo memory promote").startswith("created ")
    assert of("hipocampo memory forget") == "forgotten"
    assert "deleted rascunho" in of("hipocampo kb delete rascunho")

    proc = subprocess.run(
        [sys.executable, "-c", snippet], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["Perguntas frequentes", "prefs.short_answers", "O elevador parou"]
    assert proc.stderr == "", proc.stderr


def test_the_readme_s_tour_is_lines_of_the_whole_tour_in_its_order() -> None:
    text = README.read_text("utf-8")
    readme = [command for _, command, _ in bash_lines(text[text.index("## A five-minute tour") :])]
    tour = [command for _, command, _ in using_it()[0]]
    assert len(readme) >= 10
    at = 0
    for command in readme:
        assert command in tour[at:], command
        at = tour.index(command, at) + 1


def test_every_command_has_an_example_in_the_docs() -> None:
    """The README and the documentation give every command one example each (issue 19 §3)."""
    import typer

    from hipocampo.cli import app

    def paths(group: object, prefix: list[str]) -> list[str]:
        out: list[str] = []
        for name, sub in getattr(group, "commands", {}).items():
            out.extend(paths(sub, [*prefix, name]) if hasattr(sub, "commands") else [" ".join([*prefix, name])])
        return out

    text = "".join(p.read_text("utf-8") for p in [README, *sorted((ROOT / "docs").glob("*.md"))])
    missing = [p for p in paths(typer.main.get_command(app), []) if f"hipocampo {p}" not in text]
    assert missing == []
