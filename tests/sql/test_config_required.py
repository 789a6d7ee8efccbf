"""Functions read thresholds from the config rows only: a section missing a key
is an error (55000), never a silent built-in value."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from ..conftest import World, unit_vector, vec_text
from .memory_helpers import remember

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]


def _drop_global_key(db: Conn, section: str, key: str) -> None:
    db.execute("reset role")
    db.execute(
        "update hipocampo_private.settings set config = config #- %s::text[] where tenant_id is null",
        ([section, key],),
    )


def _incomplete(db: Conn, sql: str, section: str) -> None:
    """``sql`` fails with the incomplete-config error; the transaction goes on."""
    db.execute("savepoint s")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as exc:
        db.execute(sql)
    db.execute("rollback to savepoint s")
    assert exc.value.sqlstate == "55000"
    assert exc.value.diag.message_primary == (
        f"{section} config is incomplete: seed it from config.toml (hipocampo db migrate)"
    )


@pytest.mark.parametrize(
    ("value", "keys"),
    [(None, ["a"]), ("[1]", ["a"]), ('{"b": 1}', ["a"]), ('{"a": null}', ["a"])],
)
def test_require_config(db: Conn, value: str | None, keys: list[str]) -> None:
    _incomplete(
        db,
        f"select hipocampo_private._require_config({'null' if value is None else repr(value)}::jsonb, 'x', "
        f"array{keys!r}::text[])",
        "x",
    )
    row = db.execute("""select hipocampo_private._require_config('{"a": 0}', 'x', array['a']) as v""").fetchone()
    assert row == {"v": {"a": 0}}


def test_memory_functions_need_their_config(db: Conn, user_a: World) -> None:
    remember(db, "prefs.tea", "verde", "Prefere chá verde", seed=5)
    _drop_global_key(db, "memory", "pinned_bonus")
    user_a.act("authenticated", user_a.member_a, user_a.tenant_a)
    q = vec_text(unit_vector(5))
    for sql in (
        f"select * from hipocampo.search_memories(query_embedding => '{q}'::extensions.vector)",
        "select hipocampo.remember('prefs.cafe', '\"forte\"', 'Gosta de café forte', 'preference')",
    ):
        _incomplete(db, sql, "memory")
    db.execute("reset role")
    _incomplete(db, "select hipocampo.run_memory_maintenance()", "memory")


def test_session_functions_need_their_config(db: Conn, world: World) -> None:
    _drop_global_key(db, "sessions", "last_messages")
    world.act("authenticated", world.member_a, world.tenant_a)
    _incomplete(db, "select hipocampo.open_session()", "sessions")


@pytest.mark.parametrize(
    "key", ["time_zone", "bm25_k1", "context_weights_after", "token_rerank_weight", "token_idf_sample"]
)
def test_history_search_needs_its_config(db: Conn, world: World, key: str) -> None:
    _drop_global_key(db, "conversations", key)
    world.act("authenticated", world.member_a, world.tenant_a)
    _incomplete(db, "select * from hipocampo.search_history('oi')", "conversations")


@pytest.mark.parametrize("key", ["enabled", "top_k", "min_confidence"])
def test_rag_readers_need_the_whole_section(db: Conn, world: World, key: str) -> None:
    # rag_config checks the merged section; every reader goes through it.
    _drop_global_key(db, "rag", key)
    world.act("authenticated", world.member_a, world.tenant_a)
    q = vec_text(unit_vector(7))
    for sql in (
        "select hipocampo.rag_config()",
        f"select hipocampo.answer_evidence('Qual o prazo?', '{q}'::extensions.vector, array['{world.kb_a}']::uuid[])",
        f"select hipocampo.context_pack(gen_random_uuid(), 'Qual o prazo?', '{q}'::extensions.vector, "
        f"kb_ids => array['{world.kb_a}']::uuid[])",
        "select hipocampo.take_rate_limit()",
    ):
        _incomplete(db, sql, "rag")


def test_token_backfill_needs_the_token_context(db: Conn, world: World) -> None:
    # messages_without_tokens reads each listed message's tenant's token_context_messages.
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute(
        "select hipocampo.add_message(gen_random_uuid(), 'user', 'oi, tudo bem?', embedding => %s::extensions.vector)",
        (vec_text(unit_vector(5)),),
    )
    _drop_global_key(db, "conversations", "token_context_messages")
    world.act("service_role", None, world.tenant_a)
    _incomplete(db, f"select * from hipocampo.messages_without_tokens(10, '{world.tenant_a}')", "conversations")


def test_every_number_a_tenant_may_change_has_a_range(db: Conn) -> None:
    """A tenant admin changes a number of the global row only within its `<key>_range`
    (_check_config_patch): without one, retrieval.candidate_multiplier of 1e6 or a negative
    memory.max_tokens was stored. Every number (or array of numbers) of a section a tenant may
    override declares one, unless it is tenant_locked; the default lies inside it."""
    row = db.execute("select config from hipocampo_private.settings where tenant_id is null").fetchone()
    assert row is not None
    missing, outside = [], []
    for section, keys in row["config"].items():
        if not isinstance(keys, dict):
            continue
        locked = set(keys.get("tenant_locked", []))
        for key, value in keys.items():
            values = value if isinstance(value, list) else [value]
            numeric = values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
            if not numeric or key in locked or key.endswith(("_range", "_max_items", "_max_length")):
                continue
            bounds = keys.get(f"{key}_range")
            if bounds is None:
                missing.append(f"{section}.{key}")
            elif not all(bounds[0] <= v <= bounds[1] for v in values):
                outside.append(f"{section}.{key} = {value} outside {bounds}")
    assert (missing, outside) == ([], [])


def test_every_text_a_tenant_may_change_has_a_bound(db: Conn) -> None:
    """Issue 44 §4: every text (or list of texts) of a section a tenant may override declares
    `<key>_max_length` (and a list `<key>_max_items`), or `<key>_values` (the texts it may be),
    unless it is tenant_locked; its default lies
    inside them. A tenant admin stored 300 regexes of 5 KB as memory.sensitive_patterns and a
    10 MB rag.context_prompt."""
    row = db.execute("select config from hipocampo_private.settings where tenant_id is null").fetchone()
    assert row is not None
    missing, outside = [], []
    for section, keys in row["config"].items():
        if not isinstance(keys, dict) or section == "chunking":
            continue
        locked = set(keys.get("tenant_locked", [])) | {"tenant_locked", "operator_only"}
        for key, value in keys.items():
            texts = [value] if isinstance(value, str) else value if isinstance(value, list) else None
            if texts is None or key in locked or not all(isinstance(t, str) for t in texts):
                continue
            if key.endswith(("_values", "_keys")) or f"{key}_values" in keys:
                continue  # the bounds themselves, and a text that must be one of the listed values
            limit = keys.get(f"{key}_max_length")
            if limit is None or (isinstance(value, list) and f"{key}_max_items" not in keys):
                missing.append(f"{section}.{key}")
            elif any(len(t) > limit for t in texts) or len(texts) > keys.get(f"{key}_max_items", len(texts)):
                outside.append(f"{section}.{key}")
    assert (missing, outside) == ([], [])


def test_texts_are_bounded_and_patterns_compile(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    cases = [
        (
            "memory",
            {"sensitive_patterns": ["\\mx\\M"] * 21},
            "22023",
            "memory.sensitive_patterns must have at most 20 items",
        ),
        (
            "memory",
            {"sensitive_patterns": ["a" * 501]},
            "22001",
            "memory.sensitive_patterns must be at most 500 characters",
        ),
        (
            "memory",
            {"sensitive_patterns": ["(unclosed"]},
            "22023",
            "memory.sensitive_patterns: (unclosed is not a valid regular expression",
        ),
        ("rag", {"context_prompt": "x" * 4001}, "22001", "rag.context_prompt must be at most 4000 characters"),
        ("rag", {"question_stopwords": ["a" * 51]}, "22001", "rag.question_stopwords must be at most 50 characters"),
        ("memory", {"sensitive_patterns_regex": False}, "22023", "unknown key memory.sensitive_patterns_regex"),
    ]
    for section, patch, state, message in cases:
        db.execute("savepoint s")
        with pytest.raises(psycopg.Error) as exc:
            db.execute("select hipocampo.set_tenant_config(%s, %s::jsonb)", (section, json.dumps(patch)))
        db.execute("rollback to savepoint s")
        assert exc.value.sqlstate == state and str(exc.value.diag.message_primary).startswith(message), (
            patch,
            exc.value,
        )
    # Within the bounds, and compiling: stored.
    ok = {"sensitive_patterns": ["\\m(plano de saude|convenio)\\M"]}
    db.execute("select hipocampo.set_tenant_config('memory', %s::jsonb)", (json.dumps(ok),))


def test_a_range_bounds_each_value_of_a_table_of_numbers(db: Conn, world: World) -> None:
    """retrieval.default_trust_range bounds each trust of a tenant's table: "high" or
    5 was once stored, and ingestion failed on it later."""
    world.act("authenticated", world.admin_a, world.tenant_a)
    for table in ('{"regulation": "high"}', '{"regulation": 5}'):
        db.execute("savepoint s")
        with pytest.raises(psycopg.errors.NumericValueOutOfRange) as exc:
            db.execute("select hipocampo.set_tenant_config('retrieval', %s::jsonb)", (f'{{"default_trust": {table}}}',))
        db.execute("rollback to savepoint s")
        assert exc.value.diag.message_primary == f"retrieval.default_trust must lie in [0, 1] (got {table})"
    set_ = "select hipocampo.set_tenant_config('retrieval', %s::jsonb) as v"
    row = db.execute(set_, ('{"default_trust": {"regulation": 1, "faq": 0.4}}',)).fetchone()
    assert row is not None and row["v"]["default_trust"] == {"regulation": 1, "faq": 0.4}
