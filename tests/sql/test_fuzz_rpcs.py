"""Property-based fuzzing of the RPCs (issue 16 §1.9, §2 "Validation").

hypothesis draws every argument of 101 RPCs (SPECS: the user-facing ones, the admin ones and the
answer helpers, called as a signed-in admin; SERVICE_SPECS: the backfill, the model switch,
tenancy and maintenance, called as service_role; docs/SECURITY.md §Validation lists them) from
edge-heavy strategies (nulls, empty and huge texts, match counts of -1 and 2^31-1, NaN and
infinite floats, vectors of the wrong dimensions or in a malformed text form, odd json shapes,
config patches with out-of-range and mistyped values, batches naming one source_uri twice,
another tenant's ids, row ids of the wrong kind) and calls the RPC as PostgREST does. Every
outcome must be a result or one of the documented SQLSTATEs (ALLOWED, and ALSO_ALLOWED per RPC):
never an engine error such as 2201W, 22003, 22009, 22P02, 23502, 54000 or XX000.

Examples per RPC: HIPOCAMPO_FUZZ_EXAMPLES (300 in `make test`, 3,000 in `make fuzz`).
"""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..conftest import DIMS, MODEL, SUMMARY_AT_END, World, unit_vector, vec_text

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]

EXAMPLES = int(os.environ.get("HIPOCAMPO_FUZZ_EXAMPLES", "300"))

# The documented SQLSTATEs of these RPCs (their docblocks): bad argument, too long, wrong vector
# dimensions, not allowed, not found, misconfigured / wrong state, constraint (memory and
# message fields), quota, duplicate.
ALLOWED = {"22023", "22001", "22000", "42501", "P0002", "55000", "23514", "53400", "23505"}

OUTCOMES: Counter[str] = Counter()

# -- argument strategies ---------------------------------------------------------------------------
NO_NUL = st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))
SMALL_TEXT = st.text(NO_NUL, max_size=40)
HUGE_TEXT = st.builds(
    lambda c, n: c * n, st.sampled_from(["a", "é", "9", " ", "😀"]), st.sampled_from([201, 2001, 3000, 8001, 100_001])
)
TEXT = st.one_of(st.none(), SMALL_TEXT, HUGE_TEXT, st.sampled_from(["", " ", "prazo", "CPF 529.982.247-25"]))
INT = st.one_of(st.none(), st.sampled_from([-(2**31), -1, 0, 1, 5, 1000, 2**31 - 1]), st.integers(-(2**31), 2**31 - 1))
FLOAT = st.one_of(
    st.none(), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0])
)
VECTOR = st.sampled_from(["none", "unit", "zeros", "short", "long", "nan"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | SMALL_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(SMALL_TEXT, inner, max_size=4),
    max_leaves=10,
)
UUID = st.sampled_from(["none", "random", "kb_a", "kb_b", "tenant_a", "tenant_b", "member_a", "admin_b"])
TEXTS = st.one_of(st.none(), st.lists(st.one_of(st.none(), SMALL_TEXT), max_size=4))
MODALITY = st.one_of(st.none(), st.sampled_from(["chat", "voice", "video", ""]), SMALL_TEXT)
TIMESTAMP = st.sampled_from([None, "infinity", "-infinity", "2024-03-12T10:00:00Z", "1900-01-01", "294276-12-31"])


def mostly(valid: st.SearchStrategy[Any], edge: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``valid`` nine times in ten, else ``edge``: most calls get past the first check, so the
    fuzzer reaches the code behind it with one or two odd arguments."""
    return st.integers(0, 9).flatmap(lambda i: edge if i == 0 else valid)


Q = st.sampled_from(["prazo", "Qual o prazo de trancamento?", "biblioteca abre", "multa"])
UNIT = st.sampled_from(["unit"])
COUNT = st.integers(1, 100)
UNIT_FLOAT = st.floats(0, 1)


def vector(kind: str) -> str | None:
    return {
        "none": None,
        "unit": vec_text(unit_vector(7)),
        "zeros": vec_text([0.0] * DIMS),
        "short": vec_text(unit_vector(7, 8)),
        "long": vec_text(unit_vector(7, DIMS + 1)),
        "nan": "[" + ",".join(["NaN"] * DIMS) + "]",
    }[kind]


def an_id(world: World, kind: str) -> str | None:
    if kind == "none":
        return None
    if kind == "random":
        return str(uuid.uuid4())
    return str(getattr(world, kind))


# -- one spec per RPC: (SQL with named placeholders, strategy of the arguments) --------------------
Spec = tuple[str, Callable[[World], st.SearchStrategy[dict[str, Any]]]]


def _hybrid(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "query_text": mostly(Q, TEXT),
            "query_embedding": mostly(UNIT, VECTOR).map(vector),
            "kb_ids": mostly(st.none(), st.lists(UUID.map(lambda k: an_id(world, k)), max_size=3)),
            "source_types": mostly(st.none(), TEXTS),
            "metadata_filter": mostly(st.none(), JSON.map(json.dumps)),
            "match_count": mostly(COUNT, INT),
            "min_similarity": mostly(st.none(), FLOAT),
            "fusion": mostly(st.sampled_from([None, "rrf", "score"]), SMALL_TEXT),
            "dense_weight": mostly(st.none(), FLOAT),
            "lexical_weight": mostly(st.none(), FLOAT),
            "rerank": mostly(st.none(), st.one_of(st.sampled_from(["none", "lexical", "cross"]), SMALL_TEXT)),
            "mmr_lambda": mostly(st.one_of(st.none(), UNIT_FLOAT), FLOAT),
            "embedding_model": mostly(st.sampled_from([None, MODEL]), SMALL_TEXT),
        }
    )


def _remember(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "key": mostly(st.sampled_from(["prefs.cafe", "prefs.cha", "perfil.nome"]), TEXT),
            "value": mostly(JSON.map(json.dumps), st.none()),
            "description": mostly(st.sampled_from(["Gosta de café preto", "Prefere respostas curtas"]), TEXT),
            "category": mostly(st.just("preference"), st.one_of(st.none(), SMALL_TEXT)),
            "embedding": mostly(UNIT, VECTOR).map(vector),
            "scope": mostly(st.sampled_from(["personal", "tenant_shared"]), st.sampled_from([None, "x"])),
            "confidence": mostly(st.floats(0.6, 1), FLOAT),
            "source": mostly(st.sampled_from(["explicit_user", "inferred"]), st.sampled_from([None, "x"])),
            "tags": mostly(st.none(), TEXTS),
            "intensity": mostly(
                st.one_of(st.none(), st.integers(0, 10)), st.decimals(allow_nan=False, allow_infinity=False, places=2)
            ),
            "token_count": mostly(st.none(), INT),
            "expires_at": mostly(st.none(), TIMESTAMP),
        }
    )


def _search_memories(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "query_embedding": mostly(UNIT, VECTOR).map(vector),
            "mode": mostly(st.sampled_from(["context", "answer"]), st.sampled_from([None, "x"])),
            "match_count": mostly(COUNT, INT),
            "filter_tags": mostly(st.none(), TEXTS),
            "filter_category": mostly(st.none(), SMALL_TEXT),
            "filter_scope": mostly(st.sampled_from([None, "personal", "tenant_shared"]), st.just("x")),
            "min_score": mostly(st.one_of(st.none(), UNIT_FLOAT), FLOAT),
            "include_staging": mostly(st.booleans(), st.none()),
        }
    )


def _search_history(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "query_text": mostly(Q, TEXT),
            "query_embedding": mostly(UNIT, VECTOR).map(vector),
            "filter_conversation_id": mostly(st.none(), UUID.map(lambda k: an_id(world, k))),
            "match_count": mostly(COUNT, INT),
            "filter_modality": mostly(st.sampled_from([None, "chat", "voice"]), MODALITY),
            "query_token_ids": st.one_of(st.none(), st.lists(st.integers(-(2**31), 2**31 - 1), max_size=5)),
        }
    )


def _context_pack(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "conversation_id": mostly(st.builds(lambda: str(uuid.uuid4())), UUID.map(lambda k: an_id(world, k))),
            "query": mostly(Q, TEXT),
            "query_embedding": mostly(UNIT, VECTOR).map(vector),
            "modality": mostly(st.sampled_from(["chat", "voice"]), MODALITY),
            "token_budget": mostly(st.one_of(st.none(), st.integers(100, 8000)), INT),
            "kb_ids": mostly(st.none(), st.lists(UUID.map(lambda k: an_id(world, k)), max_size=3)),
            "agent": mostly(st.none(), SMALL_TEXT),
            "session_id": mostly(st.none(), UUID.map(lambda k: an_id(world, k))),
        }
    )


def _chunk(kind: str) -> Any:
    embedding: Any = {
        "short": unit_vector(3, 8),
        # pgvector's text form (the bulk path's cheaper encoding): well formed, NaN, not a vector
        "text": vec_text(unit_vector(3)),
        "nan_text": "[" + ",".join(["NaN"] * DIMS) + "]",
        "bad_text": "[" + ",".join(["x"] * DIMS) + "]",
    }.get(kind, unit_vector(3))
    return {
        "chunk_index": 0,
        "content": "Prazo de 30 dias." if kind != "empty" else "",
        "token_count": 4,
        "content_hash": uuid.uuid4().hex,
        "embedding": embedding,
    }


CHUNK_KINDS = st.sampled_from(["empty", "short", "text", "nan_text", "bad_text"])


def _document() -> st.SearchStrategy[Any]:
    return mostly(
        st.fixed_dictionaries(
            {
                "title": mostly(st.just("Regimento"), TEXT),
                "source_uri": mostly(st.builds(lambda: f"fuzz://{uuid.uuid4()}"), TEXT),
                "content_hash": mostly(st.builds(lambda: uuid.uuid4().hex), st.one_of(st.none(), SMALL_TEXT)),
                "source_type": mostly(st.sampled_from(["regulation", "faq"]), st.sampled_from([None, "x"])),
                "trust_score": mostly(
                    st.one_of(st.none(), UNIT_FLOAT),
                    st.one_of(st.floats(allow_nan=False, allow_infinity=False), SMALL_TEXT),
                ),
                "published_at": mostly(st.sampled_from([None, "2024-01-01"]), SMALL_TEXT),
                "expires_at": mostly(st.none(), SMALL_TEXT),
            }
        ),
        st.one_of(st.none(), JSON),
    )


# One chunk more than a document may take (embedding.max_chunks_per_document, 5,000; issue 44 §4).
TOO_MANY_CHUNKS = [{"chunk_index": i, "content": "x"} for i in range(5001)]


def _chunks() -> st.SearchStrategy[Any]:
    return mostly(
        st.lists(mostly(st.just("ok"), CHUNK_KINDS).map(_chunk), min_size=1, max_size=3),
        st.one_of(st.none(), JSON, st.just([]), st.just(TOO_MANY_CHUNKS)),
    )


def _ingest(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "kb_id": mostly(st.just(str(world.kb_a)), UUID.map(lambda k: an_id(world, k))),
            "document": _document().map(json.dumps),
            "chunks": _chunks().map(json.dumps),
            "embedding_model": mostly(st.just(MODEL), st.one_of(st.none(), SMALL_TEXT)),
        }
    )


def _ingest_many(world: World) -> st.SearchStrategy[dict[str, Any]]:
    item = mostly(st.fixed_dictionaries({"document": _document(), "chunks": _chunks()}), JSON)
    same_uri = st.builds(lambda: {"title": "a", "source_uri": "fuzz://twin", "content_hash": "h"})
    twins = st.builds(lambda d, c: [{"document": d, "chunks": c}] * 2, same_uri, _chunks())
    return st.fixed_dictionaries(
        {
            "kb_id": mostly(st.just(str(world.kb_a)), UUID.map(lambda k: an_id(world, k))),
            "documents": mostly(
                st.lists(item, min_size=1, max_size=3), st.one_of(st.none(), JSON, st.just([]), twins)
            ).map(json.dumps),
            "embedding_model": mostly(st.just(MODEL), st.one_of(st.none(), SMALL_TEXT)),
        }
    )


def _add_message(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "conversation_id": mostly(st.builds(lambda: str(uuid.uuid4())), UUID.map(lambda k: an_id(world, k))),
            "role": mostly(st.sampled_from(["user", "assistant"]), st.sampled_from([None, "x"])),
            "content": mostly(Q, TEXT),
            "modality": mostly(st.sampled_from(["chat", "voice"]), MODALITY),
            "attachments": mostly(st.just("[]"), st.one_of(st.none(), JSON.map(json.dumps))),
            "embedding": mostly(st.sampled_from(["unit", "none"]), VECTOR).map(vector),
            "metadata": mostly(st.just("{}"), st.one_of(st.none(), JSON.map(json.dumps))),
            "language": mostly(st.sampled_from([None, "portuguese", "english"]), st.just("klingon")),
            "created_at": mostly(st.none(), TIMESTAMP),
        }
    )


def _session_add_message(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "session_id": mostly(st.just(str(world.session)), UUID.map(lambda k: an_id(world, k))),
            "role": mostly(st.sampled_from(["user", "assistant"]), st.sampled_from([None, "x"])),
            "content": mostly(Q, TEXT),
            "modality": mostly(st.sampled_from(["chat", "voice"]), MODALITY),
            "attachments": mostly(st.just("[]"), st.one_of(st.none(), JSON.map(json.dumps))),
            "embedding": mostly(st.sampled_from(["unit", "none"]), VECTOR).map(vector),
            "metadata": mostly(st.just("{}"), st.one_of(st.none(), JSON.map(json.dumps))),
        }
    )


def _session_turn(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "session_id": mostly(st.just(str(world.session)), UUID.map(lambda k: an_id(world, k))),
            "question": mostly(st.sampled_from(["e aos domingos?", "Qual o prazo?"]), TEXT),
            "query_embedding": mostly(UNIT, VECTOR).map(vector),
        }
    )


def _session_record_turn(world: World) -> st.SearchStrategy[dict[str, Any]]:
    answers = st.one_of(
        st.just(json.dumps({"answer": "Sim [1]", "refused": False, "sources": [{"chunk_id": 1}]})),
        st.none(),
        JSON.map(json.dumps),
        HUGE_JSON,
    )
    return st.fixed_dictionaries(
        {
            "session_id": mostly(st.just(str(world.session)), UUID.map(lambda k: an_id(world, k))),
            "question": mostly(Q, TEXT),
            "resolved_question": mostly(st.one_of(st.none(), Q), TEXT),
            "answer": answers,
        }
    )


# A config patch: a key of the section (or none) with an edge value, or any json.
TUNED_KEYS = [
    "dense_weight",
    "min_similarity",
    "min_confidence",
    "min_score",
    "sentence_weight",
    "answer_threshold",
    "top_k",
    "context_prompt",
    "sensitive_patterns",
    "nope",
]
PATCH_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([-1, 0, 0.5, 1, 2, 1e308, -1e308, 2**31, "0.5", [0.5], {"a": 1}]),
    st.floats(allow_nan=False, allow_infinity=False),
    SMALL_TEXT,
    # over the bounds of what an admin configures (issue 44 §4): a long prompt, too many or too
    # long patterns, a pattern that does not compile
    HUGE_TEXT,
    st.sampled_from([["(unclosed"], ["a"] * 21, ["x" * 5000], ["(a+)+$"]]),
)
PATCH = st.one_of(
    st.dictionaries(st.sampled_from(TUNED_KEYS), PATCH_VALUE, max_size=3).map(json.dumps),
    JSON.map(json.dumps),
    st.none(),
)
SECTION = mostly(
    st.sampled_from(["retrieval", "rag"]), st.one_of(st.none(), st.sampled_from(["memory", ""]), SMALL_TEXT)
)


def _kb_config(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"kb_id": mostly(st.just("kb_a"), UUID).map(lambda k: an_id(world, k)), "section": SECTION, "patch": PATCH}
    )


def _kb_tuning(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "kb_id": mostly(st.just("kb_a"), UUID).map(lambda k: an_id(world, k)),
            "model": mostly(st.just(MODEL), st.one_of(st.none(), SMALL_TEXT, HUGE_TEXT)),
            "section": SECTION,
            "patch": PATCH,
        }
    )


def _tenant_tuning(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "model": mostly(st.just(MODEL), st.one_of(st.none(), SMALL_TEXT, HUGE_TEXT)),
            "section": mostly(st.sampled_from(["retrieval", "rag", "memory", "conversations"]), SECTION),
            "patch": PATCH,
        }
    )


def _tenant_config(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"section": SECTION, "patch": PATCH})


def _agent_binding(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "name": mostly(st.sampled_from(["portaria", "sac.v2"]), TEXT),
            "kb_ids": mostly(st.just(["kb_a"]), st.one_of(st.none(), st.lists(UUID, max_size=3))).map(
                lambda ks: None if ks is None else [an_id(world, k) for k in ks]
            ),
            "rag_overrides": mostly(st.just("{}"), PATCH),
        }
    )


def _create_kb(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "name": mostly(st.builds(lambda n: f"kb-{n}", st.integers(0, 10**6)), TEXT),
            "description": mostly(st.none(), TEXT),
            "tags": mostly(st.none(), TEXTS),
            "language": mostly(st.sampled_from(["portuguese", "english", "simple"]), TEXT),
            "overrides": mostly(
                st.just("{}"),
                st.one_of(PATCH, PATCH.map(lambda p: json.dumps({"rag": None if p is None else json.loads(p)}))),
            ),
        }
    )


def _update_kb(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"kb_id": mostly(st.just("kb_a"), UUID).map(lambda k: an_id(world, k)), "name": TEXT, "description": TEXT}
    )


DOC = mostly(st.just("doc_a"), st.sampled_from(["none", "random", "doc_b", "kb_a"]))
DOC_FIELDS = ["source_type", "doc_type", "author", "trust_score", "effective_date", "expires_at", "tags", "nope"]


def _document_metadata(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "document_id": DOC.map(lambda k: an_id(world, k)),
            "metadata": st.one_of(
                st.dictionaries(st.sampled_from(DOC_FIELDS), st.one_of(PATCH_VALUE, TIMESTAMP), max_size=3).map(
                    json.dumps
                ),
                JSON.map(json.dumps),
                st.none(),
            ),
        }
    )


def _document_status(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "document_id": DOC.map(lambda k: an_id(world, k)),
            "status": mostly(st.sampled_from([None, "active", "superseded", "archived"]), TEXT),
            # Within real's range: the argument's own cast (as PostgREST's) would fail before the call.
            "trust_score": mostly(
                st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0])),
                st.sampled_from([None, -1.0, 1.5, 1e30, -1e30, float("nan"), float("inf"), float("-inf")]),
            ),
        }
    )


def _answer_evidence(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "query_text": mostly(Q, TEXT),
            "query_embedding": mostly(UNIT, VECTOR).map(vector),
            "kb_ids": mostly(st.none(), st.lists(UUID.map(lambda k: an_id(world, k)), max_size=3)),
            "agent": mostly(st.none(), st.one_of(SMALL_TEXT, st.just("portaria"))),
        }
    )


def _seed_profile(world: World) -> st.SearchStrategy[dict[str, Any]]:
    keys = st.sampled_from(["user.name", "user.city", "user.language", "prefs.tom", "nope", ""])
    return st.fixed_dictionaries(
        {
            "profile": st.one_of(st.dictionaries(keys, PATCH_VALUE, max_size=3).map(json.dumps), JSON.map(json.dumps)),
            "source_ref": mostly(st.sampled_from([None, "onboarding", "profile"]), TEXT),
        }
    )


def _correct_memory(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "memory_id": UUID.map(lambda k: an_id(world, k)),
            "value": mostly(JSON.map(json.dumps), st.none()),
            "description": TEXT,
            "embedding": mostly(UNIT, VECTOR).map(vector),
        }
    )


EVIDENCE_ITEM = st.fixed_dictionaries(
    {},
    optional={
        "n": PATCH_VALUE,
        "best_window": st.one_of(PATCH_VALUE, TEXT),
        "content": st.one_of(PATCH_VALUE, TEXT, st.just("Multa de R$ 1.200,50 em 30 dias.")),
        "title": st.one_of(PATCH_VALUE, SMALL_TEXT),
        "support": PATCH_VALUE,
    },
)
EVIDENCE = st.one_of(st.lists(EVIDENCE_ITEM, max_size=4).map(json.dumps), JSON.map(json.dumps), st.none())


def _extractive_answer(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"evidence": EVIDENCE, "min_support": mostly(UNIT_FLOAT, FLOAT), "max_quotes": mostly(st.integers(1, 4), INT)}
    )


def _numbers_absent(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"answer": mostly(st.just("A multa é R$ 900 [1], em 30 dias."), TEXT), "evidence": EVIDENCE}
    )


def _tenant_metrics(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"days": mostly(st.integers(1, 366), INT)})


def _record_feedback(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "trace_id": UUID.map(lambda k: an_id(world, k)),
            "useful": st.one_of(st.none(), st.booleans()),
            "comment": TEXT,
            "question": mostly(Q, TEXT),
        }
    )


def _feedback_summary(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "kb_id": mostly(st.just("kb_a"), UUID).map(lambda k: an_id(world, k)),
            "weeks": mostly(st.integers(1, 104), INT),
        }
    )


def _judge_feedback(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "trace_id": UUID.map(lambda k: an_id(world, k)),
            "document_ids": st.one_of(st.none(), st.lists(UUID.map(lambda k: an_id(world, k)), max_size=3)),
        }
    )


def _list_documents(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "kb_id": mostly(st.just("kb_a"), UUID).map(lambda k: an_id(world, k)),
            "after_source_uri": mostly(st.none(), TEXT),
            "max_rows": mostly(st.one_of(st.none(), st.integers(1, 1000)), INT),
        }
    )


SESSION = mostly(st.just("session"), UUID)
BIGINTS = st.one_of(
    st.none(), st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.sampled_from([0, 1, -1])), max_size=4)
)
# Within real's range (no underflow either): the argument's own cast would fail before the call.
REAL = st.one_of(
    st.none(),
    st.floats(-1e30, 1e30).filter(lambda x: x == 0 or abs(x) > 1e-30),
    st.sampled_from([float("nan"), float("inf"), -1.0, 0.0, 0.5]),
)
# (over session.payload_max_bytes, 16,384, and far over)
HUGE_JSON = st.sampled_from([16_385, 100_000]).map(lambda n: json.dumps({"x": "a" * n}))
JSONS = st.one_of(st.none(), JSON.map(json.dumps), HUGE_JSON)


def _get_session(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"session_id": SESSION.map(lambda k: an_id(world, k)), "renew": st.one_of(st.none(), st.booleans())}
    )


def _update_session(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"session_id": SESSION.map(lambda k: an_id(world, k)), "summary": TEXT, "tool": mostly(st.none(), TEXT)}
    )


def _add_pending(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "session_id": SESSION.map(lambda k: an_id(world, k)),
            "action": mostly(st.sampled_from(["forget_memory", "erase_user"]), TEXT),
            "payload": mostly(st.just('{"memory_id": "x"}'), JSONS),
        }
    )


def _resolve_pending(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"session_id": SESSION.map(lambda k: an_id(world, k)), "confirmation_id": UUID.map(lambda k: an_id(world, k))}
    )


def _cache_get(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "question": mostly(Q, TEXT),
            "kb_ids": mostly(st.none(), st.lists(UUID.map(lambda k: an_id(world, k)), max_size=3)),
            "agent": mostly(st.none(), SMALL_TEXT),
        }
    )


def _cache_put(world: World) -> st.SearchStrategy[dict[str, Any]]:
    source = st.fixed_dictionaries(
        {
            "n": st.integers(0, 3),
            "chunk_id": st.integers(0, 10**6),
            "document": TEXT,
            "document_id": UUID.map(lambda k: str(an_id(world, k))),
            "source_uri": TEXT,
            "excerpt": TEXT,
            "score": st.floats(allow_nan=False, allow_infinity=False),
        }
    )
    answer = st.fixed_dictionaries(
        {"answer": TEXT, "sources": st.lists(mostly(source, JSON), max_size=2)},
        optional={"confidence": JSON, "refused": JSON, "answer_source": TEXT, "conflicts": JSON},
    ).map(json.dumps)
    return st.fixed_dictionaries(
        {
            "question": mostly(Q, TEXT),
            "kb_ids": mostly(st.just([str(world.kb_a)]), st.lists(UUID.map(lambda k: an_id(world, k)), max_size=3)),
            "answer": mostly(answer, JSONS),
            "agent": mostly(st.none(), SMALL_TEXT),
            "tenant_id": mostly(st.just(str(world.tenant_a)), UUID.map(lambda k: an_id(world, k))),
        }
    )


def _documents_not_language(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "kb_id": mostly(st.just(str(world.kb_a)), UUID.map(lambda k: an_id(world, k))),
            "source_uris": mostly(st.none(), st.lists(st.one_of(st.none(), SMALL_TEXT), max_size=3)),
        }
    )


def _search_model(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "kb_ids": mostly(
                st.just([str(world.kb_a)]),
                st.one_of(st.none(), st.lists(UUID.map(lambda k: an_id(world, k)), max_size=3)),
            )
        }
    )


def _record_answer(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "trace_id": UUID.map(lambda k: an_id(world, k)),
            "question": mostly(Q, TEXT),
            "answer_source": mostly(st.sampled_from(["LLM", "extractive", "cache", "refused"]), TEXT),
            "reason": mostly(st.sampled_from([None, "low_confidence"]), TEXT),
            "confidence": REAL,
            "candidates": INT,
            "filtered": INT,
            "evidence_chunk_ids": BIGINTS,
            "timings_ms": mostly(st.just('{"retrieval": 3.2}'), JSONS),
            "latency_ms": REAL,
            "kb_ids": mostly(st.none(), st.lists(UUID.map(lambda k: an_id(world, k)), max_size=3)),
            "agent": mostly(st.none(), SMALL_TEXT),
        }
    )


def _take_rate_limit(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"cost": mostly(st.floats(0, 5), FLOAT)})


def _lookup_memories(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "key": mostly(st.sampled_from(["prefs.cafe", "prefs.*"]), TEXT),
            "category": mostly(st.none(), TEXT),
            "include_history": st.one_of(st.none(), st.booleans()),
        }
    )


def _promote_memory(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "staging_id": UUID.map(lambda k: an_id(world, k)),
            "intensity": mostly(
                st.one_of(st.none(), st.integers(0, 10)), st.decimals(allow_nan=False, allow_infinity=False, places=2)
            ),
            "override": st.one_of(st.none(), st.booleans()),
        }
    )


def _conversation_summary(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "conversation_id": UUID.map(lambda k: an_id(world, k)),
            "summary": TEXT,
            "through_message_id": st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
        }
    )


def _conversation_context(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"conversation_id": UUID.map(lambda k: an_id(world, k)), "last_n": INT})


def _evidence_support(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "query_text": mostly(Q, TEXT),
            "chunk_ids": BIGINTS,
            "stopwords": mostly(st.none(), st.one_of(st.lists(SMALL_TEXT, max_size=3).map(json.dumps), JSONS)),
        }
    )


def _answer_sources(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"answer": mostly(st.just("O prazo é de 30 dias [1]."), TEXT), "evidence": EVIDENCE})


def _refusal_text(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "reason": mostly(st.sampled_from(["low_confidence", "conflicting_sources", "no_evidence"]), TEXT),
            "conflicts": JSONS,
            "refusal_message": mostly(st.none(), TEXT),
        }
    )


def _question_refusal(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"question": TEXT, "min_chars": INT, "max_chars": INT})


def _scrub_pii(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"texts": TEXTS})


def _forbidden_content(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "texts": st.one_of(TEXTS, st.just(["Usuário: oi\nIA: olá\nUsuário: e?\nIA: sim"]), st.just(["x"] * 65)),
            "kb_id": mostly(st.just("kb_a"), UUID).map(lambda k: an_id(world, k)),
        }
    )


def _quarantine_document(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "kb_id": mostly(st.just("kb_a"), UUID).map(lambda k: an_id(world, k)),
            "source_uri": TEXT,
            "title": TEXT,
            "source_type": mostly(st.sampled_from(["other", "faq"]), TEXT),
            "kind": mostly(st.sampled_from(["credentials", "transcript", "financial_statement", "biometric"]), TEXT),
            "reason": mostly(st.just("a key on line 2"), TEXT),
            "content_hash": mostly(st.just("h"), TEXT),
        }
    )


def _start_job(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"kb_id": mostly(st.just("kb_a"), UUID).map(lambda k: an_id(world, k)), "documents_total": INT}
    )


def _finish_job(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "job_id": UUID.map(lambda k: an_id(world, k)),
            "status": mostly(st.sampled_from(["succeeded", "failed", "partial"]), TEXT),
            "counts": JSONS,
            "errors": JSONS,
        }
    )


def _inspect_user_memory(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "user_id": mostly(st.just("member_a"), UUID).map(lambda k: an_id(world, k)),
            "key": mostly(st.none(), TEXT),
            "history_limit": mostly(st.none(), INT),
        }
    )


def _document_hashes(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "kb_id": mostly(st.just("kb_a"), UUID).map(lambda k: an_id(world, k)),
            "embedding_model": mostly(st.sampled_from([None, MODEL]), TEXT),
        }
    )


def _ids(*names: str, default: str = "random") -> Callable[[World], st.SearchStrategy[dict[str, Any]]]:
    """A spec whose arguments are ids: each ``default`` nine times in ten, else any UUID kind."""

    def spec(world: World) -> st.SearchStrategy[dict[str, Any]]:
        kind = mostly(st.just(default), UUID)
        return st.fixed_dictionaries({n: kind.map(lambda k: an_id(world, k)) for n in names})

    return spec


def _texts(**fields: st.SearchStrategy[Any]) -> Callable[[World], st.SearchStrategy[dict[str, Any]]]:
    return lambda world: st.fixed_dictionaries(fields)


def _recover_jobs(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"now": TIMESTAMP, "kb_id": mostly(st.just("kb_a"), UUID).map(lambda k: an_id(world, k))}
    )


def _kb_status(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "kb_id": mostly(st.just("kb_a"), UUID).map(lambda k: an_id(world, k)),
            "status": mostly(st.sampled_from(["draft", "indexing", "ready", "error"]), TEXT),
        }
    )


# -- the remaining user-facing RPCs and the service_role ones (model switch, backfill, tenancy) ---
KIND = mostly(st.sampled_from(["chunks", "memories", "memory_staging", "messages"]), TEXT)
# A row id as the backfill passes it (text): a number, a uuid, or anything.
ROW_ID = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.sampled_from(["1", "0", "-1", "1e3", "99999999999999999999", " 42 "]),
    st.builds(lambda: str(uuid.uuid4())),
    SMALL_TEXT,
)
EMBEDDING = st.one_of(
    VECTOR.map(vector),
    VECTOR.map(lambda k: None if vector(k) is None else json.loads(vector(k).replace("NaN", "null") or "null")),
    JSON,
)
ITEMS = st.one_of(
    st.lists(
        st.fixed_dictionaries(
            {}, optional={"id": ROW_ID, "memory_id": ROW_ID, "embedding": EMBEDDING, "sentence_embeddings": JSON}
        ),
        max_size=3,
    ),
    st.lists(
        st.fixed_dictionaries({"id": ROW_ID, "sentence_embeddings": st.lists(EMBEDDING, max_size=3) | JSON}),
        max_size=3,
    ),
    JSON,
    st.none(),
).map(lambda x: None if x is None else json.dumps(x))
MODEL_NAME = mostly(st.sampled_from([MODEL, "fuzz-model"]), st.one_of(TEXT, st.sampled_from(["", "A B", "x" * 201])))
NOW = mostly(st.sampled_from([None, "2024-03-12T10:00:00Z"]), TIMESTAMP)
BITS = st.one_of(
    st.none(),
    st.lists(
        st.one_of(
            st.none(),
            st.integers(0, 2 ** (DIMS) - 1).map(lambda i: format(i, f"0{DIMS}b")),
            st.integers(0, 255).map(lambda i: format(i, "08b")),
            st.just(""),
        ),
        max_size=4,
    ),
)


def _row_embeddings(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"kind": KIND, "items": ITEMS})


def _rows_to_embed(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"kind": KIND, "batch_size": mostly(COUNT, INT), "after_id": ROW_ID})


def _embedding_failure(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"kind": KIND, "row_ids": st.one_of(st.none(), st.lists(ROW_ID, max_size=3)), "error": TEXT}
    )


def _without(after: str) -> Callable[[World], st.SearchStrategy[dict[str, Any]]]:
    def spec(world: World) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries(
            {
                "batch_size": mostly(COUNT, INT),
                "filter_tenant_id": mostly(st.sampled_from(["none", "tenant_a"]), UUID).map(lambda k: an_id(world, k)),
                after: st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
            }
        )

    return spec


def _message_tokens(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "message_id": st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
            "token_ids": st.one_of(
                st.none(), st.lists(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)), max_size=4)
            ),
            "token_bits": BITS,
        }
    )


def _detect_conflicts(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "query_text": mostly(Q, TEXT),
            "chunk_ids": BIGINTS,
            "trust_margin": mostly(st.one_of(st.none(), UNIT_FLOAT), FLOAT),
            "stopwords": mostly(st.none(), JSONS),
            "subject_overlap": mostly(st.one_of(st.none(), UNIT_FLOAT), FLOAT),
        }
    )


def _register_model(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "name": MODEL_NAME,
            "provider": mostly(st.sampled_from(["local", "openai", "azure"]), TEXT),
            "dims": mostly(st.sampled_from([DIMS, 8, 1536]), INT),
            "activate": st.one_of(st.none(), st.booleans()),
        }
    )


def _model_calibration(world: World) -> st.SearchStrategy[dict[str, Any]]:
    keys = st.sampled_from(["retrieval", "rag", "memory", "conversations", "nope"])
    section = st.one_of(st.dictionaries(st.sampled_from(TUNED_KEYS), PATCH_VALUE, max_size=3), JSON)
    return st.fixed_dictionaries(
        {
            "model": MODEL_NAME,
            "calibration": st.one_of(st.dictionaries(keys, section, max_size=3), JSON).map(json.dumps),
        }
    )


def _create_tenant(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "name": mostly(st.just("Condomínio"), TEXT),
            "slug": mostly(st.builds(lambda: f"fuzz-{uuid.uuid4().hex[:8]}"), TEXT),
            "admin_user_id": mostly(st.just("random"), UUID).map(lambda k: an_id(world, k)),
        }
    )


def _add_member(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "tenant_id": mostly(st.just("tenant_a"), UUID).map(lambda k: an_id(world, k)),
            "user_id": mostly(st.just("random"), UUID).map(lambda k: an_id(world, k)),
            "role": mostly(st.sampled_from(["member", "admin"]), TEXT),
        }
    )


def _config_of(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "tenant_id": mostly(st.sampled_from(["none", "tenant_a"]), UUID).map(lambda k: an_id(world, k)),
            "kb_id": mostly(st.sampled_from(["none", "kb_a"]), UUID).map(lambda k: an_id(world, k)),
        }
    )


def _rag_config(world: World) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "kb_id": mostly(st.sampled_from(["none", "kb_a"]), UUID).map(lambda k: an_id(world, k)),
            "agent": mostly(st.sampled_from([None, "portaria"]), TEXT),
            "tenant_id": mostly(st.sampled_from(["none", "tenant_a"]), UUID).map(lambda k: an_id(world, k)),
        }
    )


IP = st.one_of(
    st.none(),
    st.sampled_from(["127.0.0.1", "10.0.0.0/8", "::1", "2001:db8::/32", "0.0.0.0", "255.255.255.255"]),
    st.integers(0, 2**32 - 1).map(lambda i: ".".join(str((i >> s) & 255) for s in (24, 16, 8, 0))),
)


CASTS = {
    "query_embedding": "::extensions.vector",
    "embedding": "::extensions.vector",
    "kb_ids": "::uuid[]",
    "source_types": "::text[]",
    "tags": "::text[]",
    "filter_tags": "::text[]",
    "metadata_filter": "::jsonb",
    "value": "::jsonb",
    "document": "::jsonb",
    "chunks": "::jsonb",
    "documents": "::jsonb",
    "patch": "::jsonb",
    "renew": "::boolean",
    "include_history": "::boolean",
    "override": "::boolean",
    "payload": "::jsonb",
    "timings_ms": "::jsonb",
    "stopwords": "::jsonb",
    "conflicts": "::jsonb",
    "counts": "::jsonb",
    "errors": "::jsonb",
    "confirmation_id": "::uuid",
    "trace_id": "::uuid",
    "staging_id": "::uuid",
    "job_id": "::uuid",
    "user_id": "::uuid",
    "evidence_chunk_ids": "::bigint[]",
    "chunk_ids": "::bigint[]",
    "through_message_id": "::bigint",
    "candidates": "::integer",
    "filtered": "::integer",
    "last_n": "::integer",
    "min_chars": "::integer",
    "max_chars": "::integer",
    "documents_total": "::integer",
    "history_limit": "::integer",
    "cost": "::double precision",
    "texts": "::text[]",
    "keys": "::text[]",
    "tenant_id": "::uuid",
    "granted": "::boolean",
    "now": "::timestamptz",
    "rag_overrides": "::jsonb",
    "overrides": "::jsonb",
    "profile": "::jsonb",
    "evidence": "::jsonb",
    "trust_score": "::real",
    "days": "::integer",
    "max_rows": "::integer",
    "max_quotes": "::integer",
    "min_support": "::double precision",
    "memory_id": "::uuid",
    "document_id": "::uuid",
    "attachments": "::jsonb",
    "metadata": "::jsonb",
    "intensity": "::numeric",
    "expires_at": "::timestamptz",
    "created_at": "::timestamptz",
    "match_count": "::integer",
    "token_count": "::integer",
    "token_budget": "::integer",
    "min_similarity": "::double precision",
    "dense_weight": "::double precision",
    "lexical_weight": "::double precision",
    "mmr_lambda": "::double precision",
    "confidence": "::double precision",
    "min_score": "::double precision",
    "query_token_ids": "::integer[]",
    "kb_id": "::uuid",
    "conversation_id": "::uuid",
    "filter_conversation_id": "::uuid",
    "session_id": "::uuid",
    "items": "::jsonb",
    "batch_size": "::integer",
    "row_ids": "::text[]",
    "filter_tenant_id": "::uuid",
    "after_chunk_id": "::bigint",
    "after_message_id": "::bigint",
    "message_id": "::bigint",
    "token_ids": "::integer[]",
    "token_bits": "::varbit[]",
    "trust_margin": "::double precision",
    "subject_overlap": "::double precision",
    "dims": "::integer",
    "activate": "::boolean",
    "calibration": "::jsonb",
    "admin_user_id": "::uuid",
    "ip": "::inet",
}

SPECS: dict[str, Callable[[World], st.SearchStrategy[dict[str, Any]]]] = {
    "hybrid_search": _hybrid,
    "remember": _remember,
    "search_memories": _search_memories,
    "search_history": _search_history,
    "context_pack": _context_pack,
    "ingest_document": _ingest,
    "ingest_documents": _ingest_many,
    "add_message": _add_message,
    "session_add_message": _session_add_message,
    "session_turn": _session_turn,
    "session_record_turn": _session_record_turn,
    "set_knowledge_base_config": _kb_config,
    "set_knowledge_base_tuning": _kb_tuning,
    "set_tenant_config": _tenant_config,
    "set_tenant_tuning": _tenant_tuning,
    "set_agent_binding": _agent_binding,
    "create_knowledge_base": _create_kb,
    "update_knowledge_base": _update_kb,
    "set_document_metadata": _document_metadata,
    "set_document_status": _document_status,
    "answer_evidence": _answer_evidence,
    "seed_profile": _seed_profile,
    "correct_memory": _correct_memory,
    "extractive_answer": _extractive_answer,
    "numbers_absent": _numbers_absent,
    "tenant_metrics": _tenant_metrics,
    "record_feedback": _record_feedback,
    "feedback_summary": _feedback_summary,
    "judge_feedback": _judge_feedback,
    "list_documents": _list_documents,
    "get_session": _get_session,
    "update_session": _update_session,
    "add_pending_confirmation": _add_pending,
    "resolve_pending_confirmation": _resolve_pending,
    "cache_get": _cache_get,
    "search_model": _search_model,
    "documents_not_language": _documents_not_language,
    "record_answer": _record_answer,
    "take_rate_limit": _take_rate_limit,
    "lookup_memories": _lookup_memories,
    "promote_memory": _promote_memory,
    "update_conversation_summary": _conversation_summary,
    "conversation_context": _conversation_context,
    "evidence_support": _evidence_support,
    "answer_sources": _answer_sources,
    "refusal_text": _refusal_text,
    "question_refusal": _question_refusal,
    "scrub_pii": _scrub_pii,
    "forbidden_content": _forbidden_content,
    "quarantine_document": _quarantine_document,
    "start_ingestion_job": _start_job,
    "finish_ingestion_job": _finish_job,
    "inspect_user_memory": _inspect_user_memory,
    "document_hashes": _document_hashes,
    "close_session": _ids("session_id", default="session"),
    "open_session": _ids("conversation_id"),
    "delete_document": _ids("document_id", default="doc_a"),
    "get_document": _ids("document_id", default="doc_a"),
    "judged_questions": _ids("kb_id", default="kb_a"),
    "my_tenants": _texts(),
    "delete_judged_question": _texts(id=st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))),
    "document_text": _ids("document_id", default="doc_a"),
    "delete_knowledge_base": _ids("kb_id", default="kb_a"),
    "set_knowledge_base_status": _kb_status,
    "forget_memory": _ids("memory_id"),
    "forget_user_memory": _ids("memory_id"),
    "hard_delete_memory": _ids("memory_id"),
    "correct_user_memory": _correct_memory,
    "promote_user_memory": _promote_memory,
    "erase_user": _ids("user_id", default="member_a"),
    "export_user_data": _ids("user_id", default="member_a"),
    "membership_role": _ids("user_id", default="member_a"),
    "list_members": _ids("tenant_id", default="tenant_a"),
    "current_tenant": _ids("tenant_id", default="tenant_a"),
    "staged_memories": lambda world: st.just({}),
    "heartbeat_ingestion_job": _ids("job_id"),
    "recover_ingestion_jobs": _recover_jobs,
    "knowledge_base_id": _texts(name=mostly(st.just("kb"), TEXT)),
    "tenant_by_slug": _texts(slug=TEXT),
    "normalize_question": _texts(question=TEXT),
    "plain_text": _texts(content=TEXT),
    "memories_without_embedding": _texts(keys=TEXTS),
    "memory_consent": lambda world: st.just({}),
    "set_memory_consent": _texts(granted=st.one_of(st.none(), st.booleans())),
    "set_memory_embeddings": lambda world: st.fixed_dictionaries({"items": ITEMS}),
    "set_message_tokens": _message_tokens,
    "detect_conflicts": _detect_conflicts,
    "effective_config": _config_of,
    "rag_config": _rag_config,
    "list_knowledge_bases": _ids("tenant_id", default="tenant_a"),
    "active_embedding_model": lambda world: st.just({}),
    "list_agent_bindings": _ids("tenant_id", default="tenant_a"),
    "delete_agent_binding": _texts(name=mostly(st.sampled_from(["portaria", "sac.v2"]), TEXT)),
    "memory_quota_use": _ids("tenant_id", default="tenant_a"),
    "tenant_embedding_queue": _ids("tenant_id", default="tenant_a"),
    "requeue_tenant_embeddings": lambda world: st.fixed_dictionaries(
        {
            "kind": mostly(st.sampled_from([None, "chunks", "memories", "memory_staging", "messages"]), TEXT),
            "tenant_id": mostly(st.just("tenant_a"), UUID).map(lambda k: an_id(world, k)),
        }
    ),
}

# The service_role RPCs (the backfill, the model switch, tenancy, maintenance), called as
# service_role: as an admin they stop at 42501.
SERVICE_SPECS: dict[str, Callable[[World], st.SearchStrategy[dict[str, Any]]]] = {
    "rows_to_embed": _rows_to_embed,
    "set_row_embeddings": _row_embeddings,
    "record_embedding_failure": _embedding_failure,
    "requeue_embedding_failures": lambda world: st.fixed_dictionaries({"kind": KIND}),
    "chunks_without_sentences": _without("after_chunk_id"),
    "set_chunk_sentences": lambda world: st.fixed_dictionaries({"items": ITEMS}),
    "messages_without_tokens": _without("after_message_id"),
    "register_embedding_model": _register_model,
    "set_model_calibration": _model_calibration,
    "activate_embedding_model": _texts(name=MODEL_NAME),
    "drop_embedding_model": _texts(name=MODEL_NAME),
    "build_model_index": _texts(embedding_model=MODEL_NAME),
    "defer_model_index": _texts(embedding_model=MODEL_NAME),
    "build_tenant_graphs": lambda world: st.just({}),
    "create_tenant": _create_tenant,
    "add_member": _add_member,
    "remove_member": _ids("tenant_id", "user_id", default="member_a"),
    "delete_tenant": _ids("tenant_id", default="tenant_b"),
    "list_tenants": lambda world: st.just({}),
    "purge_expired": _texts(now=NOW),
    "purge_sessions": _texts(now=NOW),
    "purge_transient_state": _texts(now=NOW),
    "run_memory_maintenance": _texts(now=NOW),
    "take_ip_rate_limit": _texts(ip=IP),
    "cache_put": _cache_put,
    "drain_read_queue": _texts(max_rows=INT),
    "tenant_digest": _ids("tenant_id", default="tenant_a"),
}

# A parameter whose type differs between RPCs of the same name.
RPC_CASTS = {
    "cache_put": {"answer": "::jsonb"},
    "record_answer": {"confidence": "::real", "latency_ms": "::real"},
    "judge_feedback": {"document_ids": "::uuid[]"},
}

# Documented beyond ALLOWED: a config value out of its declared range (_check_config_patch), a
# document's trust_score outside [0, 1]; promote_memory's null intensity (22004).
ALSO_ALLOWED = {
    rpc: {"22003"}
    for rpc in (
        "set_knowledge_base_config",
        "set_knowledge_base_tuning",
        "set_tenant_config",
        "set_tenant_tuning",
        "set_agent_binding",
        "create_knowledge_base",
        "set_document_metadata",
    )
} | {
    "promote_memory": {"22004"},
    "promote_user_memory": {"22004"},
    # add_member's unknown tenant (a foreign key), set_model_calibration's out-of-range values.
    "add_member": {"23503"},
    "set_model_calibration": {"22003"},
}


def call(db: Conn, rpc: str, args: dict[str, Any]) -> str:
    """Run the RPC with named arguments in a savepoint; the outcome: 'ok' or the SQLSTATE."""
    casts = CASTS | RPC_CASTS.get(rpc, {})
    named = ", ".join(f"{k} => %({k})s{casts.get(k, '')}" for k in args)
    sql = f"select * from hipocampo.{rpc}({named})"
    try:
        with db.transaction():
            db.execute(sql, args).fetchall()
        return "ok"
    except psycopg.Error as err:
        return err.sqlstate or "?"


@pytest.fixture
def member(db: Conn, world: World) -> World:
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    session = db.execute("select hipocampo.open_session() as v").fetchone()
    assert session is not None
    world.session = session["v"]["session_id"]  # type: ignore[attr-defined]
    return world


def fuzz(db: Conn, world: World, rpc: str, spec: Callable[[World], st.SearchStrategy[dict[str, Any]]]) -> None:
    """Call ``rpc`` EXAMPLES times with arguments drawn from ``spec``, as the role acting now; fails
    listing up to 5 calls whose SQLSTATE is not documented."""
    seen: Counter[str] = Counter()
    failures: list[str] = []

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(args=spec(world))
    def run(args: dict[str, Any]) -> None:
        outcome = call(db, rpc, args)
        seen[outcome] += 1
        if outcome != "ok" and outcome not in ALLOWED | ALSO_ALLOWED.get(rpc, set()) and len(failures) < 5:
            shown = {k: (v[:80] + "…" if isinstance(v, str) and len(v) > 80 else v) for k, v in args.items()}
            failures.append(f"{outcome}: {shown}")

    run()
    OUTCOMES.update({f"{rpc}:{k}": v for k, v in seen.items()})
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("rpc", sorted(SPECS))
def test_every_outcome_is_a_result_or_a_documented_sqlstate(db: Conn, member: World, rpc: str) -> None:
    fuzz(db, member, rpc, SPECS[rpc])


@pytest.mark.parametrize("rpc", sorted(SERVICE_SPECS))
def test_every_service_outcome_is_a_result_or_a_documented_sqlstate(db: Conn, world: World, rpc: str) -> None:
    world.act("service_role")
    fuzz(db, world, rpc, SERVICE_SPECS[rpc])


def _fuzzing_counts() -> str | None:
    """The fuzzing totals for the run's summary (the terminal-summary hook calls it after every
    test), or None when no fuzzing ran."""
    total = sum(OUTCOMES.values())
    if not total:
        return None
    states: Counter[str] = Counter()
    for key, n in OUTCOMES.items():
        states[key.split(":", 1)[1]] += n
    shown = ", ".join(f"{n} {s}" for s, n in states.most_common())
    return f"fuzzing: {total} calls of {len(SPECS) + len(SERVICE_SPECS)} RPCs; outcomes: {shown}"


SUMMARY_AT_END.append(_fuzzing_counts)
