"""What make test's phases leave to the default phase (issue 60 §6; tests/conftest.py): with MiniLM
configured, the tests marked any_model; on the other PostgreSQL version's scratch server, the tests
that never reach it. Collection only, in a subprocess with each phase's environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import DEFAULT_MODEL, MINILM

pytestmark = pytest.mark.any_model
ROOT = Path(__file__).resolve().parents[1]


def collected(env: dict[str, str], *files: str) -> list[str]:
    """The node ids pytest collects from ``files`` with ``env`` added (nothing runs)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("HIPOCAMPO_TEST_MODEL", "HIPOCAMPO_TEST_SERVER_URL")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_with_minilm_configured_the_any_model_tests_are_left_to_the_default_phase() -> None:
    assert MINILM != DEFAULT_MODEL
    files = ("tests/test_cli_lifecycle.py", "tests/test_cli.py")
    default, minilm = collected({}, *files), collected({"HIPOCAMPO_TEST_MODEL": MINILM}, *files)
    assert "tests/test_cli_lifecycle.py::test_tenants_and_members" in default
    assert "tests/test_cli_lifecycle.py::test_tenants_and_members" not in minilm
    # any_model(False) on a test of a marked module: its recall is the model's
    assert "tests/test_cli_lifecycle.py::test_memory_commands_print_tables_and_take_emotion" in minilm
    cli = "tests/test_cli.py::"
    assert [n for n in default if n.startswith(cli)] == [n for n in minilm if n.startswith(cli)]  # unmarked


def test_on_another_server_the_tests_that_never_reach_it_are_left_to_the_default_phase() -> None:
    default = collected({}, "tests/test_text.py")
    other = collected({"HIPOCAMPO_TEST_SERVER_URL": "postgresql://unused"}, "tests/test_text.py")
    assert other == ["tests/test_text.py::test_the_sql_plain_text_is_the_python_one"]
    assert len(default) > len(other)
