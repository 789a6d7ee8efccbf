"""The read RPCs as a member of tenant A calls them (issue 46): shared by the read-recording tests
(tests/sql/test_read_recording.py) and the hot-standby tests (tests/test_replica.py)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg

from .conftest import World, unit_vector, vec_text
from .sql.memory_helpers import remember

Conn = psycopg.Connection[dict[str, Any]]

# Each read RPC as a member of tenant A calls it, with the memories and chunks it records.
READS = {
    "hybrid_search": "select * from hipocampo.hybrid_search(query_text => 'prazo',"
    " query_embedding => %(v)s::extensions.vector, min_similarity => -1)",
    "answer_evidence": "select hipocampo.answer_evidence('Qual o prazo?', %(v)s::extensions.vector,"
    " array[%(kb)s]::uuid[])",
    "search_memories": "select * from hipocampo.search_memories(%(v)s::extensions.vector, min_score => -1)",
    "lookup_memories": "select * from hipocampo.lookup_memories()",
    "context_pack": "select hipocampo.context_pack(%(conv)s, 'Qual o prazo?', %(v)s::extensions.vector,"
    " session_id => %(session)s)",
    "search_history": "select * from hipocampo.search_history('prazo')",
    "get_session": "select hipocampo.get_session(%(session)s, renew => false)",
    "conversation_context": "select hipocampo.conversation_context(%(conv)s)",
    "evidence_support": "select * from hipocampo.evidence_support('prazo', array[%(chunk)s]::bigint[])",
}
# The reads whose answers hold no time of the reading (context_pack and get_session carry expiries):
# two databases holding the same rows give the same answers to these.
TIMELESS = ("hybrid_search", "answer_evidence", "search_memories", "lookup_memories", "search_history",
            "evidence_support", "conversation_context")  # fmt: skip
# The reads that record themselves, with the rpc name of their record.
RECORDED = {
    "hybrid_search": "hybrid_search",
    "answer_evidence": "hybrid_search",
    "search_memories": "search_memories",
    "lookup_memories": "lookup_memories",
    "context_pack": "context_pack",
    "search_history": "search_history",
}


def reader(db: Conn, world: World) -> dict[str, Any]:
    """Member A with a memory, a conversation and a session: the arguments of READS."""
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    remember(db, "prefs.prazo", "curto", "Prefere prazos curtos", seed=1)
    conv = uuid.uuid4()
    db.execute("select hipocampo.add_message(%s, 'user', 'Qual o prazo de trancamento?')", (conv,))
    row = db.execute("select hipocampo.open_session(%s) as v", (conv,)).fetchone()
    chunk = db.execute("select min(id) as id from hipocampo_private.chunks where document_id = %s", (world.doc_a,))
    first = chunk.fetchone()
    assert row is not None and first is not None
    return {
        "v": vec_text(unit_vector(1)),
        "conv": conv,
        "session": row["v"]["session_id"],
        "kb": world.kb_a,
        "chunk": first["id"],
    }


def act_on(conn: Conn, role: str, sub: Any = None, tenant: Any = None) -> None:
    """What the ``act`` fixture does, on any connection: the rest of its transaction as ``role``
    with the JWT claims of ``sub`` in ``tenant``."""
    claims: dict[str, Any] = {"role": role}
    if sub:
        claims["sub"] = str(sub)
    if tenant:
        claims["app_metadata"] = {"tenant_id": str(tenant)}
    conn.execute("reset role")
    conn.execute(f"set local role {role}")
    conn.execute("select set_config('request.jwt.claims', %s, true)", (json.dumps(claims),))
