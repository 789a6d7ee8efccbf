"""The CLI against the session's server (HIPOCAMPO_DATA_DIR points at the embedded one;
HIPOCAMPO_DATABASE_URL at a scratch server given by HIPOCAMPO_TEST_SERVER_URL)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from typer.testing import CliRunner

from hipocampo.cli import app

runner = CliRunner()


def test_db_status_and_url(database_url: str) -> None:
    res = runner.invoke(app, ["db", "status"])
    # A scratch server of another PostgreSQL version (HIPOCAMPO_TEST_SERVER_URL) is external.
    expected = "external database configured" if os.environ.get("HIPOCAMPO_TEST_SERVER_URL") else "running: True"
    assert res.exit_code == 0 and expected in res.output
    res = runner.invoke(app, ["db", "url"])
    assert res.exit_code == 0 and res.output.strip() == database_url


def test_tenant_kb_ingest_search(database_url: str, tmp_path: Path) -> None:
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    res = runner.invoke(app, ["tenant", "create", "Condomínio", "--slug", slug])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["tenant", "create", "Outro", "--slug", slug])
    assert res.exit_code == 1 and f"tenant slug already exists: {slug}" in res.output
    assert runner.invoke(app, ["kb", "create", "regras", "--tenant", slug]).exit_code == 0
    (tmp_path / "r.txt").write_text("Art. 1º O salão de festas fecha à meia-noite.", encoding="utf-8")
    res = runner.invoke(
        app, ["ingest", str(tmp_path), "--kb", "regras", "--tenant", slug, "--source-type", "regulation", "--json"]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["documents_ingested"] == 1 and summary["chunks_written"] == 1
    res = runner.invoke(app, ["kb", "list", "--tenant", slug, "--json"])
    assert json.loads(res.output)[0]["status"] == "ready"
    res = runner.invoke(app, ["search", "quando fecha o salão de festas", "--kb", "regras", "--tenant", slug, "--json"])
    assert res.exit_code == 0, res.output
    hits = json.loads(res.output)
    assert hits[0]["content"].startswith("Art. 1º") and hits[0]["source_uri"].startswith("file://")
    res = runner.invoke(app, ["search", "salão", "--tenant", slug])
    assert res.exit_code == 0 and "Art. 1º" in res.output


def test_errors_are_clear(database_url: str) -> None:
    res = runner.invoke(app, ["search", "", "--tenant", "default"])
    assert res.exit_code == 1 and "error [22023]: query_text must be 1..2000 characters" in res.output
    res = runner.invoke(app, ["search", "x", "--kb", "nao-existe", "--tenant", "default"])
    assert res.exit_code == 1 and "error [P0002]: unknown knowledge base: nao-existe" in res.output
    res = runner.invoke(app, ["kb", "list", "--tenant", "nobody-here"])
    assert res.exit_code == 1 and "unknown tenant 'nobody-here'" in res.output


def test_worker_runs_the_maintenance_jobs_once(database_url: str) -> None:
    res = runner.invoke(app, ["worker", "--once"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert set(out) == {
        "decayed",
        "deactivated",
        "expired",
        "staging_purged",
        "sessions_purged",
        "retention",
        "transient",
        "ingestion",
    }
    assert set(out["retention"]) == {"documents", "chunks"}
    assert set(out["transient"]) == {"answer_cache", "rate_limit_buckets"}


def test_worker_embeds_what_search_cannot_read(database_url: str) -> None:
    # With --embed-missing each run also embeds rows without a vector of the active model and
    # stores the tokens of messages that have none (tests/test_backfill.py checks what).
    res = runner.invoke(app, ["worker", "--once", "--embed-missing"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert set(out["embedded"]) == {"memories", "memory_staging", "messages"}
    assert isinstance(out["message_tokens_stored"], int)
    res = runner.invoke(app, ["worker", "--once", "--embed-missing"])
    out = json.loads(res.output)
    assert out["embedded"] == {"memories": 0, "memory_staging": 0, "messages": 0} and out["message_tokens_stored"] == 0
