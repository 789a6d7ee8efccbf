"""hipocampo.document_text (issue 45 §6: the hub's document view): a document's stored text chunk
by chunk in order, one model's chunks, only the caller's tenant's."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import World

Conn = psycopg.Connection[dict[str, Any]]


def text_of(db: Conn, document: Any, tenant: Any = None) -> list[dict[str, Any]]:
    return db.execute("select chunk_index, content from hipocampo.document_text(%s, %s)", (document, tenant)).fetchall()


def test_a_member_reads_the_text_in_order(db: Conn, world: World) -> None:
    world.act("service_role")
    stored = db.execute(
        "select chunk_index, content from hipocampo_private.chunks where document_id = %s order by chunk_index",
        (world.doc_a,),
    ).fetchall()
    world.act("authenticated", world.member_a, world.tenant_a)
    assert text_of(db, world.doc_a) == stored and stored


def test_another_tenant_s_or_an_unknown_document_has_no_text(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_b, world.tenant_b)
    assert text_of(db, world.doc_a) == []
    assert text_of(db, uuid.uuid4()) == []
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        text_of(db, world.doc_a, world.tenant_a)  # a tenant argument is service_role's


def test_a_document_with_another_model_s_chunks_still_shows_its_text(db: Conn, world: World) -> None:
    """The search model's chunks when the document has them, else another model's (a document
    stored under a model the knowledge base no longer searches is not shown empty)."""
    world.act("service_role")
    db.execute("select hipocampo.register_embedding_model('probe-model', 'local', 384, false)")
    db.execute("reset role")
    db.execute(
        "update hipocampo_private.chunks set embedding_model = 'probe-model' where document_id = %s", (world.doc_a,)
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = text_of(db, world.doc_a)
    assert rows and [r["chunk_index"] for r in rows] == sorted(r["chunk_index"] for r in rows)
