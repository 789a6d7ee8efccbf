"""Forbidden sources in SQL (issue 45 §4): hipocampo.forbidden_content finds credentials,
conversations with an AI, individual financial statements and biometric records under the
forbidden_sources config, and passes what only resembles them; hipocampo.quarantine_document keeps
a file out with its reason, and writing the file again makes it an ordinary document."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ..conftest import MODEL, World, unit_vector

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]

CORPUS = Path(__file__).resolve().parents[1] / "data" / "forbidden"


def found(db: Conn, kb: Any, texts: list[str]) -> list[tuple[int, str]]:
    rows = db.execute("select n, kind from hipocampo.forbidden_content(%s, %s)", (texts, kb)).fetchall()
    return [(r["n"], r["kind"]) for r in rows]


def corpus(pattern: str) -> list[Path]:
    files = sorted(CORPUS.glob(pattern))
    assert files, pattern
    return files


@pytest.mark.parametrize("path", corpus("kind_*"), ids=lambda p: p.name)
def test_each_forbidden_file_is_found_as_its_kind(db: Conn, world: World, path: Path) -> None:
    kind = path.name.removeprefix("kind_").split("__")[0]
    world.act("authenticated", world.admin_a, world.tenant_a)
    rows = db.execute(
        "select kind, reason from hipocampo.forbidden_content(%s, %s)", ([path.read_text("utf-8")], world.kb_a)
    ).fetchall()
    if kind == "credentials" and not rows:  # what detect-secrets finds (tests/test_forbidden_ingest.py)
        pytest.skip("a credential only detect-secrets' rules know")
    assert [r["kind"] for r in rows] == [kind]
    assert " line " in rows[0]["reason"] or kind in ("transcript", "financial_statement")


@pytest.mark.parametrize("path", corpus("allowed_*"), ids=lambda p: p.name)
def test_what_only_resembles_them_passes(db: Conn, world: World, path: Path) -> None:
    """A policy on biometric access, a password rule, a FAQ's P:/R:, minutes naming speakers, a
    regulation's fees, a condominium's monthly accounts titled as such without 'extrato'."""
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert found(db, world.kb_a, [path.read_text("utf-8")]) == []


def test_the_reason_never_carries_the_secret(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    secret = "Xk9pq2LmZzQ"
    row = db.execute(
        "select reason from hipocampo.forbidden_content(%s, %s)", ([f"config\nsenha: {secret}\n"], world.kb_a)
    ).fetchone()
    assert row is not None and secret not in row["reason"] and "line 2" in row["reason"]


def test_the_thresholds_are_the_config_s(db: Conn, world: World) -> None:
    """Switched off (a threshold no file reaches), the same transcript passes: the check reads the
    config rows, not constants."""
    text = (CORPUS / "kind_transcript__chat.txt").read_text("utf-8")
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert found(db, world.kb_a, [text]) == [(1, "transcript")]
    db.execute("select hipocampo.set_tenant_config('forbidden_sources', '{\"transcript_min_turns\": 1000}')")
    assert found(db, world.kb_a, [text]) == []


def test_actions_are_checked_when_set(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with (
        pytest.raises(psycopg.errors.InvalidParameterValue, match="must be one of refuse, quarantine, allow"),
        db.transaction(),
    ):
        db.execute("select hipocampo.set_tenant_config('forbidden_sources', '{\"credentials\": \"burn\"}')")
    with (
        pytest.raises(psycopg.errors.InvalidParameterValue, match=r"by_source_type must be one of .*\(got keep\)"),
        db.transaction(),
    ):
        db.execute(
            "select hipocampo.set_tenant_config('forbidden_sources', %s)",
            (json.dumps({"by_source_type": {"faq": {"transcript": "keep"}}}),),
        )
    with (
        pytest.raises(psycopg.errors.InvalidParameterValue, match=r"by_source_type may name only .*\(got pdf\)"),
        db.transaction(),
    ):
        db.execute(
            "select hipocampo.set_tenant_config('forbidden_sources', %s)",
            (json.dumps({"by_source_type": {"pdf": {"transcript": "allow"}}}),),
        )
    with (
        pytest.raises(psycopg.errors.InvalidParameterValue, match=r"unknown key forbidden_sources\.credentials_values"),
        db.transaction(),
    ):
        db.execute("select hipocampo.set_tenant_config('forbidden_sources', '{\"credentials_values\": []}')")
    db.execute("select hipocampo.set_tenant_config('forbidden_sources', '{\"credentials\": \"refuse\"}')")


def test_bounds_of_one_call(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="at most 64 texts"), db.transaction():
        found(db, world.kb_a, ["x"] * 65)
    with pytest.raises(psycopg.errors.NoDataFound), db.transaction():
        found(db, uuid.uuid4(), ["x"])
    world.act("authenticated", world.admin_b, world.tenant_b)
    with pytest.raises(psycopg.errors.NoDataFound), db.transaction():
        found(db, world.kb_a, ["x"])  # another tenant's knowledge base


# -- quarantine ------------------------------------------------------------------------------------
def quarantine(db: Conn, kb: Any, uri: str, kind: str = "credentials", reason: str = "a key on line 2") -> Any:
    row = db.execute(
        "select hipocampo.quarantine_document(%s, %s, 'chaves', 'other', %s, %s, 'h1') as id", (kb, uri, kind, reason)
    ).fetchone()
    assert row is not None
    return row["id"]


def test_quarantine_removes_every_version_of_the_text(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    doc = quarantine(db, world.kb_a, "test://a1")
    assert str(doc) == str(world.doc_a)  # the stored document at that source_uri
    row = db.execute(
        "select status, chunk_count, quarantine from hipocampo.get_document(%s)", (world.doc_a,)
    ).fetchone()
    assert row is not None and row["status"] == "quarantined" and row["chunk_count"] == 0
    assert row["quarantine"]["kind"] == "credentials" and row["quarantine"]["reason"] == "a key on line 2"
    assert db.execute("select * from hipocampo.document_text(%s)", (world.doc_a,)).fetchall() == []
    hits = db.execute(
        "select count(*) as n from hipocampo.hybrid_search('trancamento de matrícula', %s::extensions.vector,"
        " kb_ids => array[%s]::uuid[])",
        (unit_vector(1), world.kb_a),
    ).fetchone()
    assert hits == {"n": 0}
    assert quarantine(db, world.kb_a, "test://a1") == doc  # idempotent


def test_writing_the_file_again_makes_it_an_ordinary_document(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    quarantine(db, world.kb_a, "test://a1")
    chunks = [
        {
            "chunk_index": 0,
            "content": "A chave fica com o zelador.",
            "token_count": 6,
            "content_hash": "a1-new",
            "metadata": {},
            "embedding": unit_vector(7),
        }
    ]
    document = {"title": "a1", "source_uri": "test://a1", "content_hash": "a1-v2", "source_type": "regulation"}
    db.execute(
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
        (world.kb_a, json.dumps(document), json.dumps(chunks), MODEL),
    )
    row = db.execute(
        "select status, chunk_count, quarantine from hipocampo.get_document(%s)", (world.doc_a,)
    ).fetchone()
    assert row == {"status": "active", "chunk_count": 1, "quarantine": None}


@pytest.mark.parametrize(
    ("kind", "reason", "hash_", "message"),
    [
        ("secrets", "r", "h", "kind must be one of"),
        (None, "r", "h", "kind must be one of"),
        ("credentials", "", "h", "reason must have 1 to 500 characters"),
        ("credentials", "r" * 501, "h", "reason must have 1 to 500 characters"),
        ("credentials", "r", "", "content_hash must have 1 to 128 characters"),
    ],
)
def test_quarantine_arguments(db: Conn, world: World, kind: Any, reason: str, hash_: str, message: str) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message), db.transaction():
        db.execute(
            "select hipocampo.quarantine_document(%s, 'test://x', 't', 'other', %s, %s, %s)",
            (world.kb_a, kind, reason, hash_),
        )


def test_a_member_cannot_quarantine(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
        quarantine(db, world.kb_a, "test://a1")
