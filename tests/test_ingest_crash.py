"""A crash mid-ingest (issue 16 §1.8): the CLI killed with SIGKILL, or the server going away.

The real ``hipocampo ingest`` runs as a subprocess on a folder of generated documents. Killed
mid-run, it leaves no partial document (one transaction per document), and its job is recovered
at once, its session having ended with it (issue 44 §5; the lease covers clients that do not hold
their session): failed (interrupted), the knowledge base ready again; a second run completes
without duplicates. When the server dies under it, the CLI says so in one line and
exits 3, without a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from hipocampo import Hipocampo
from hipocampo import db as hdb

HIPOCAMPO = str(Path(sys.executable).parent / "hipocampo")
WORDS = ["prazo", "multa", "assembleia", "síndico", "condomínio", "reforma", "garagem", "piscina", "portaria"]


def write_documents(folder: Path, n: int) -> None:
    for i in range(n):
        body = " ".join(WORDS[(i + j) % len(WORDS)] for j in range(70))
        (folder / f"regra_{i:03d}.txt").write_text(f"Art. {i}º {body}.", encoding="utf-8")


def ingest(url: str, folder: Path, slug: str) -> subprocess.Popen[str]:
    env = {**os.environ, "HIPOCAMPO_DATABASE_URL": url, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [HIPOCAMPO, "ingest", str(folder), "--kb", "crash", "--create-kb", "--tenant", slug, "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def state(url: str, slug: str) -> dict[str, Any]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        row = conn.execute(
            "select k.status as kb,"
            " (select count(*) from hipocampo_private.documents as d where d.kb_id = k.id) as docs,"
            " (select array_agg(j.status order by j.started_at) from hipocampo_private.ingestion_jobs as j"
            "  where j.kb_id = k.id) as jobs,"
            " (select count(*) from hipocampo_private.documents as d where d.kb_id = k.id and d.chunk_count"
            "  <> (select count(*) from hipocampo_private.chunks as c where c.document_id = d.id)) as partial,"
            " (select count(*) - count(distinct (c.document_id, c.chunk_index)) from hipocampo_private.chunks as c"
            "  where c.kb_id = k.id) as duplicates"
            " from hipocampo_private.knowledge_bases as k join hipocampo_private.tenants as t on t.id = k.tenant_id"
            " where t.slug = %s and k.name = 'crash'",
            (slug,),
        ).fetchone()
    return dict(row) if row else {}


def wait_for(predicate: Any, timeout: float, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            pytest.fail(f"the ingest ended before the crash: {proc.communicate()}")
        time.sleep(0.05)
    pytest.fail("the ingest did not get under way in time")


def killed_ingest(database_url: str, folder: Path, n: int) -> str:
    """A new tenant's ``hipocampo ingest`` of ``n`` documents, killed with SIGKILL once some of
    them (not all) are stored; returns the tenant's slug."""
    write_documents(folder, n)
    slug = f"crash-{uuid.uuid4().hex[:8]}"
    with Hipocampo(database_url) as root:
        root.create_tenant("Crash", slug)
    proc = ingest(database_url, folder, slug)
    wait_for(lambda: 0 < state(database_url, slug).get("docs", 0) < n, 180, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return slug


def test_a_killed_ingest_is_recovered_and_a_rerun_completes(database_url: str, tmp_path: Path) -> None:
    n = 160
    slug = killed_ingest(database_url, tmp_path, n)
    s = state(database_url, slug)
    assert (s["kb"], s["jobs"], s["partial"], s["duplicates"]) == ("indexing", ["running"], 0, 0)
    written = s["docs"]
    assert 0 < written < n

    # The killed client's session ended with it: its job needs no lease to run out (issue 44 §5).
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and conn.execute(
            "select bool_or(hipocampo_private._job_session_alive(j.id)) as alive"
            " from hipocampo_private.ingestion_jobs as j where j.status = 'running' and j.session_bound"
        ).fetchone() == {"alive": True}:
            time.sleep(0.05)
        assert conn.execute("select hipocampo.recover_ingestion_jobs() as v").fetchone() == {
            "v": {"interrupted": 1, "knowledge_bases": 1}
        }
        error = conn.execute(
            "select j.errors -> -1 ->> 'error' as e from hipocampo_private.ingestion_jobs as j"
            " join hipocampo_private.tenants as t on t.id = j.tenant_id where t.slug = %s",
            (slug,),
        ).fetchone()
    assert error is not None and error["e"].startswith("interrupted: the session that ran it ended")
    s = state(database_url, slug)
    assert (s["kb"], s["jobs"]) == ("ready", ["failed"])

    rerun = ingest(database_url, tmp_path, slug)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    summary = json.loads(out)
    assert (summary["documents_unchanged"], summary["documents_ingested"]) == (written, n - written)
    s = state(database_url, slug)
    assert s == {**s, "kb": "ready", "docs": n, "jobs": ["failed", "succeeded"], "partial": 0, "duplicates": 0}


def test_a_rerun_right_after_a_kill_finds_the_killed_job_interrupted(database_url: str, tmp_path: Path) -> None:
    """No recovery run in between, no lease to wait for: the rerun's start recovers the job."""
    n = 160
    slug = killed_ingest(database_url, tmp_path, n)
    rerun = ingest(database_url, tmp_path, slug)
    _, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    s = state(database_url, slug)
    assert s == {**s, "kb": "ready", "docs": n, "jobs": ["failed", "succeeded"], "partial": 0}


def test_a_lost_server_is_one_line_and_exit_3(tmp_path: Path) -> None:
    """The server is killed (SIGKILL to the postmaster) under a running ingest."""
    data = tmp_path / "server" / "data"
    data.parent.mkdir()
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        data.parent.chmod(0o777)
        tmp_path.chmod(0o755)
    url = hdb.start(data)
    try:
        hdb.apply_migrations(url, shim=True)
        slug = f"lost-{uuid.uuid4().hex[:8]}"
        with Hipocampo(url) as root:
            root.create_tenant("Lost", slug)
        docs = tmp_path / "docs"
        docs.mkdir()
        write_documents(docs, 160)
        proc = ingest(url, docs, slug)
        wait_for(lambda: state(url, slug).get("docs", 0) > 0, 180, proc)
        postmaster = int((data / "postmaster.pid").read_text().splitlines()[0])
        os.kill(postmaster, signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        subprocess.run(["pkill", "-9", "-f", str(data)], check=False)
        shutil.rmtree(data.parent, ignore_errors=True)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 3, err  # the database is unreachable (hipocampo.cli.common)
    assert "Traceback" not in err and len(lines) == 1, err
    assert lines[0].startswith("error [") and "lost the database connection" in lines[0], err
