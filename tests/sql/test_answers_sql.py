"""The SQL side of answers: rag config layers and secrets, evidence support, conflicts and their
resolution, the answer decision, cache invalidation, token buckets, the audit row and views."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import MODEL, World, at_cosine, unit_vector, vec_text
from .test_answer_cache import cache_entry, cache_put

Conn = psycopg.Connection[dict[str, Any]]


def one(db: Conn, sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = db.execute(sql, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row["v"]


def test_rag_config_layers_tenant_kb_agent(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert one(db, "select hipocampo.rag_config() ->> 'top_k' as v") == "4"
    one(db, """select hipocampo.set_tenant_config('rag', '{"top_k": 6}') as v""")
    one(db, """select hipocampo.set_knowledge_base_config(%s, 'rag', '{"min_confidence": 0.7}') as v""", (world.kb_a,))
    one(db, """select hipocampo.set_agent_binding('portaria', array[%s]::uuid[], '{"top_k": 3}') as v""", (world.kb_a,))
    cfg = one(db, "select hipocampo.rag_config(%s) as v", (world.kb_a,))
    assert (cfg["top_k"], cfg["min_confidence"]) == (6, 0.7)
    agent = one(db, "select hipocampo.rag_config(null, 'portaria') as v")
    assert (agent["top_k"], agent["min_confidence"], agent["kb_ids"]) == (3, 0.7, [str(world.kb_a)])
    # Members read; tenant B sees neither the binding nor A's overrides.
    world.act("authenticated", world.member_a, world.tenant_a)
    assert one(db, "select hipocampo.rag_config(null, 'portaria') ->> 'top_k' as v") == "3"
    world.act("authenticated", world.admin_b, world.tenant_b)
    assert one(db, "select hipocampo.rag_config() ->> 'top_k' as v") == "4"
    with pytest.raises(psycopg.errors.NoDataFound, match="unknown agent binding: portaria"), db.transaction():
        db.execute("select hipocampo.rag_config(null, 'portaria')")


def test_only_admins_write_rag_config_within_bounds_and_never_secrets(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    for sql in (
        """select hipocampo.set_tenant_config('rag', '{"top_k": 5}')""",
        f"select hipocampo.set_agent_binding('x', array['{world.kb_a}']::uuid[])",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins"), db.transaction():
            db.execute(sql)
    world.act("authenticated", world.admin_a, world.tenant_a)
    cases = [
        ('{"top_k": 50}', psycopg.errors.NumericValueOutOfRange, r"rag.top_k must lie in \[1, 20\]"),
        ('{"api_key": "abc"}', psycopg.errors.InvalidParameterValue, "secrets are never stored"),
        ('{"api_key_secret": "sk-abcdefghijklmnop"}', psycopg.errors.InvalidParameterValue, "secrets are never"),
        ('{"api_key_secret": "my key!"}', psycopg.errors.InvalidParameterValue, "must be the name of a secret"),
        ('{"question_max_chars": 10}', psycopg.errors.InvalidParameterValue, "is fixed and cannot be changed"),
        ('{"nope": 1}', psycopg.errors.InvalidParameterValue, "unknown key rag.nope"),
    ]
    for patch, exc, msg in cases:
        with pytest.raises(exc, match=msg), db.transaction():
            db.execute("select hipocampo.set_tenant_config('rag', %s::jsonb)", (patch,))
    # A secret's name is the operator's: a tenant admin could name
    # another tenant's key or the service key, through the tenant, a knowledge base or an agent.
    refused = "rag.api_key_secret names a secret of the server: only the operator (service_role) sets it"
    patch = '{"api_key_secret": "SUPABASE_SERVICE_ROLE_KEY"}'
    for sql, params in (
        ("select hipocampo.set_tenant_config('rag', %s::jsonb)", (patch,)),
        ("select hipocampo.set_knowledge_base_config(%s, 'rag', %s::jsonb)", (world.kb_a, patch)),
        ("select hipocampo.set_agent_binding('x', array[%s]::uuid[], %s::jsonb)", (world.kb_a, patch)),
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as err, db.transaction():
            db.execute(sql, params)
        assert err.value.diag.message_primary == refused
    # So are the keys of rag.operator_only: which paid service answers on the operator's key.
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as err, db.transaction():
        db.execute("""select hipocampo.set_tenant_config('rag', '{"provider": "openai"}')""")
    assert err.value.diag.message_primary == (
        "rag.provider is the operator's to set (service_role): it is in rag.operator_only"
    )
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"unknown key rag\.operator_only"), db.transaction():
        db.execute("""select hipocampo.set_tenant_config('rag', '{"operator_only": []}')""")
    world.act("service_role")
    set_by_operator = "select hipocampo.set_tenant_config('rag', %s::jsonb, %s) as v"
    patch = '{"api_key_secret": "TENANT_A_OPENAI", "provider": "openai"}'
    assert one(db, set_by_operator, (patch, world.tenant_a)) == {
        "api_key_secret": "TENANT_A_OPENAI",
        "provider": "openai",
    }


def test_evidence_support_measures_question_coverage(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    ids = [r["id"] for r in db.execute("select id from hipocampo_private.chunks order by chunk_index").fetchall()]
    rows = db.execute(
        "select * from hipocampo.evidence_support('Qual o prazo de trancamento de matrícula?', %s)", (ids,)
    ).fetchall()
    by_id = {r["chunk_id"]: r for r in rows}
    assert by_id[ids[0]]["support"] == pytest.approx(1.0)
    assert by_id[ids[0]]["best_window"].startswith("Prazo de trancamento")
    assert by_id[ids[1]]["support"] == pytest.approx(0.0)


POLICY = "O prazo do pedido de reembolso de viagem {scope} é de até {days} dias após o retorno."


def policy_kb(db: Conn, world: World, old: dict[str, Any], new: dict[str, Any]) -> tuple[Any, Any, Any]:
    world.act("service_role")
    kb = one(db, "select hipocampo.create_knowledge_base('politicas', tenant_id => %s) as v", (world.tenant_a,))
    docs = []
    for name, v in (("old", old), ("new", new)):
        texts = [POLICY.format(scope="nacional", days=v["nac"]), POLICY.format(scope="internacional", days=v["int"])]
        docs.append(world.ingest(kb, f"reembolso-{name}", texts, seed=7, source_type="policy"))
        db.execute("update hipocampo_private.documents set trust_score = 0.9 where id = %s", (docs[-1],))
    return kb, docs[0], docs[1]


def test_conflicts_per_scope_and_their_resolution(db: Conn, world: World) -> None:
    kb, old, new = policy_kb(db, world, {"nac": 30, "int": 60}, {"nac": 30, "int": 45})
    ids = [r["id"] for r in db.execute("select id from hipocampo_private.chunks where kb_id = %s", (kb,)).fetchall()]
    q_int = "Qual o prazo do pedido de reembolso de viagem internacional?"
    found = one(db, "select hipocampo.detect_conflicts(%s, %s) as v", (q_int, ids))
    assert [(c["kind"], c["scope"], c["resolved"]) for c in found] == [("deadline_days", "internacional", False)]
    assert sorted(v["value"] for v in found[0]["values"]) == ["45", "60"]
    # The question names "nacional": the documents agree there (30 = 30).
    assert (
        one(db, "select hipocampo.detect_conflicts(%s, %s) as v", (q_int.replace("internacional", "nacional"), ids))
        == []
    )
    # Less trust resolves it in favour of the more trusted document.
    db.execute("update hipocampo_private.documents set trust_score = 0.6 where id = %s", (old,))
    found = one(db, "select hipocampo.detect_conflicts(%s, %s) as v", (q_int, ids))
    assert (found[0]["resolved"], found[0]["winner_document_id"]) == (True, str(new))


def test_values_about_different_subjects_are_not_a_conflict(db: Conn, world: World) -> None:
    """Issue 22 §4: two FAQ entries on different situations, both sharing the question's words,
    gave "conflicting_sources"; values are compared only between sentences on one subject
    (rag.conflict_subject_overlap; these two share 0.4 of their words, versions of a policy 1.0)."""
    world.act("service_role")
    kb = one(db, "select hipocampo.create_knowledge_base('faq', tenant_id => %s) as v", (world.tenant_a,))
    world.ingest(kb, "entrega", ["O prazo para entregar a declaração é de 30 dias após o fim do mês."], seed=7)
    world.ingest(kb, "multa", ["O prazo para pagar a multa por atraso na entrega da declaração é de 60 dias."], seed=8)
    ids = [r["id"] for r in db.execute("select id from hipocampo_private.chunks where kb_id = %s", (kb,)).fetchall()]
    q = "Qual o prazo para entregar a declaração?"
    assert one(db, "select hipocampo.detect_conflicts(%s, %s) as v", (q, ids)) == []
    # Under a looser rule they conflict: as an argument, and as the knowledge base's rag config,
    # which answer_evidence passes on.
    found = one(db, "select hipocampo.detect_conflicts(%s, %s, subject_overlap => 0.3) as v", (q, ids))
    assert [(c["kind"], sorted(v["value"] for v in c["values"])) for c in found] == [("deadline_days", ["30", "60"])]
    world.act("authenticated", world.member_a, world.tenant_a)
    assert answer(db, q, kb)["decision"] == "answer"
    world.act("authenticated", world.admin_a, world.tenant_a)
    looser = json.dumps({"conflict_subject_overlap": 0.3})
    one(db, "select hipocampo.set_knowledge_base_config(%s, 'rag', %s::jsonb) as v", (kb, looser))
    world.act("authenticated", world.member_a, world.tenant_a)
    assert answer(db, q, kb)["reason"] == "conflicting_sources"


def test_sentence_values_and_scopes(db: Conn) -> None:
    rows = db.execute(
        "select kind, value from hipocampo_private._sentence_values("
        "'Prazo de 30 (trinta) dias ou 2 meses, até 05/03/2025, multa de R$ 1.200,50.')"
    ).fetchall()
    assert [(r["kind"], r["value"]) for r in rows] == [
        ("deadline_days", "30"),
        ("deadline_days", "60"),
        ("date", "2025-03-05"),
        ("money", "1200.50"),
    ]


def answer(db: Conn, question: str, kb: Any, seed: int = 7) -> dict[str, Any]:
    v: dict[str, Any] = one(
        db,
        "select hipocampo.answer_evidence(%s, %s::extensions.vector, array[%s]::uuid[]) as v",
        (question, vec_text(unit_vector(seed)), kb),
    )
    return v


def test_cache_keys_keep_words_of_any_script_whatever_the_locale(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    key = "select hipocampo.normalize_question(%s) as v"
    assert one(db, key, ("  Qual é o PRAZO? 👍",)) == "qual e o prazo"
    assert one(db, key, ("東京の天気は？",)) == "東京の天気は"
    assert one(db, key, ("東京の天気は？",)) != one(db, key, ("大阪の天気は？",))
    assert one(db, key, ("Какая погода?",)) == "какая погода"
    # The same words under the C collation, where [[:alnum:]] is ASCII only (the key it gave
    # before); only lower() follows the locale there (ASCII letters alone are lowered).
    world.act("service_role")
    for text in ("東京の天気は？", "Какая погода?", "Qual é o prazo?"):
        plain = one(db, 'select hipocampo_private._plain_words(%s collate "C") as v', (text,))
        assert plain.lower() == one(db, "select hipocampo_private._plain_words(%s) as v", (text,)) != ""
    ascii_only = "select btrim(regexp_replace(%s collate \"C\", '[^[:alnum:]]+', ' ', 'g')) as v"
    assert one(db, ascii_only, ("東京の天気は？",)) == ""


@pytest.mark.parametrize("exact_scan_max_rows", [None, 0], ids=["exact", "hnsw"])
def test_answer_evidence_refuses_conflicts_and_answers_once_resolved(
    db: Conn, world: World, exact_scan_max_rows: int | None
) -> None:
    kb, old, new = policy_kb(db, world, {"nac": 30, "int": 60}, {"nac": 30, "int": 45})
    world.act("authenticated", world.admin_a, world.tenant_a)
    if exact_scan_max_rows is not None:
        # Retrieval and the near-duplicate lookup through the model's HNSW index (iterative scan).
        patch = json.dumps({"exact_scan_max_rows": exact_scan_max_rows, "hnsw_visit_cost": 0})
        one(db, "select hipocampo.set_tenant_config('retrieval', %s::jsonb) as v", (patch,))
    q = "Qual o prazo do pedido de reembolso de viagem internacional?"
    r = answer(db, q, kb)
    assert (r["decision"], r["reason"]) == ("refuse", "conflicting_sources")
    one(db, "select hipocampo.set_document_status(%s, 'superseded') as v", (old,))
    r = answer(db, q, kb)
    assert (r["decision"], r["reason"]) == ("answer", None)
    assert {e["document_id"] for e in r["evidence"]} == {str(new)}
    assert r["confidence"] >= 0.65


def test_answer_evidence_gates(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    r = answer(db, "Qual a cor do cavalo branco de Napoleão?", world.kb_a)
    # Nothing retrieved (no word matches, the vector is far from every chunk): no_evidence, no closest.
    assert (r["decision"], r["reason"], r["candidates"], r["closest"]) == ("refuse", "no_evidence", 0, None)
    # One regulation ingested without a trust: retrieval.default_trust gives it 0.9
    # (>= rag.authoritative_trust), so it answers alone (issue 19 §1.1) ...
    r = answer(db, "Qual o prazo de trancamento de matrícula?", world.kb_a)
    assert (r["decision"], r["reason"]) == ("answer", None)
    world.act("service_role")
    assert one(db, "select trust_score as v from hipocampo_private.documents where id = %s", (world.doc_a,)) == 0.9
    # ... and at trust 0.5 (below it) the cross-check fails.
    db.execute("update hipocampo_private.documents set trust_score = 0.5 where id = %s", (world.doc_a,))
    world.act("authenticated", world.member_a, world.tenant_a)
    r = answer(db, "Qual o prazo de trancamento de matrícula?", world.kb_a)
    assert (r["decision"], r["reason"]) == ("refuse", "cross_check_failed")
    world.act("service_role")
    db.execute("update hipocampo_private.documents set trust_score = 0.9 where id = %s", (world.doc_a,))
    world.act("authenticated", world.member_a, world.tenant_a)
    r = answer(db, "Qual o prazo de trancamento de matrícula?", world.kb_a)
    assert (r["decision"], r["evidence"][0]["best_window"]) == (
        "answer",
        "Prazo de trancamento de matrícula é de 30 dias.",
    )
    world.act("service_role")
    tokens = one(
        db, "select token_count as v from hipocampo_private.chunks where id = %s", (r["evidence"][0]["chunk_id"],)
    )
    assert r["evidence"][0]["token_count"] == tokens > 0
    world.act("authenticated", world.member_a, world.tenant_a)
    # Tenant B's knowledge base does not exist for A (RLS): never B's 45 days.
    with pytest.raises(psycopg.errors.NoDataFound, match="unknown knowledge base"), db.transaction():
        answer(db, "Qual o prazo de trancamento de matrícula?", world.kb_b)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="no knowledge base"), db.transaction():
        db.execute("select hipocampo.answer_evidence('prazo?', %s::extensions.vector)", (vec_text(unit_vector(1)),))


def test_sentence_similarity_adds_to_the_support_by_the_models_calibration(db: Conn, world: World) -> None:
    # A question in other words than its answer: lexical support 0. The chunk's first sentence
    # embedding is the question's vector (cosine 1), its second an unrelated one (~0).
    world.act("service_role")
    kb = one(db, "select hipocampo.create_knowledge_base('parafrase', tenant_id => %s) as v", (world.tenant_a,))
    text = "Prazo de trancamento de matrícula é de 30 dias. Depois disso, só no semestre seguinte."
    doc = {"title": "Regimento", "source_uri": "test://parafrase", "content_hash": "p1", "source_type": "regulation"}
    chunks = [
        {
            "chunk_index": 0,
            "content": text,
            "token_count": 14,
            "content_hash": "p1-0",
            "embedding": unit_vector(7),
            "sentence_embeddings": [unit_vector(7), unit_vector(8)],
        }
    ]
    one(
        db,
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s) as v",
        (kb, json.dumps(doc), json.dumps(chunks), MODEL),
    )
    world.act("authenticated", world.admin_a, world.tenant_a)
    question = "Até quando posso desistir do curso?"
    # The keys are the model's calibration (all-MiniLM-L6-v2: weight 0); a knowledge base may
    # override them. Weight 0: the gate is lexical alone.
    assert set(one(db, "select hipocampo.rag_config(%s) as v", (kb,))) >= {
        "sentence_weight",
        "sentence_cosine_low",
        "sentence_cosine_high",
    }

    def evidence(weight: float, low: float = 0.5, high: float = 0.9) -> dict[str, Any]:
        patch = {"sentence_weight": weight, "sentence_cosine_low": low, "sentence_cosine_high": high}
        one(db, "select hipocampo.set_knowledge_base_config(%s, 'rag', %s::jsonb) as v", (kb, json.dumps(patch)))
        return answer(db, question, kb)

    r = evidence(0.0)
    # Retrieval found the passage, which supports none of the question's words: low_confidence
    # with the closest passage (no_evidence is for a retrieval that found nothing; issue 48 §2);
    # its vector is the question's (above the on-topic floor): passages stand for the answer.
    assert (r["decision"], r["reason"], r["config"]["sentence_weight"]) == ("passages", "low_confidence", 0.0)
    assert r["closest"]["chunk_id"] is not None and r["closest"]["excerpt"]

    # Half the weight: 0.5 of support, evidence (>= min_score 0.35) but below min_confidence 0.65.
    r = evidence(0.5)
    assert (r["decision"], r["reason"]) == ("passages", "low_confidence")
    e = r["evidence"][0]
    assert (e["lexical_support"], e["sentence_similarity"], e["support"]) == (
        0.0,
        pytest.approx(1.0),
        pytest.approx(0.5),
    )
    # The whole weight answers; the cosine rises linearly between low and high.
    assert answer_decision(evidence(1.0)) == ("answer", pytest.approx(1.0))
    # A best sentence at cosine 0.6, between 0.2 and 1.0: half the weight.
    world.act("service_role")
    db.execute(
        "update hipocampo_private.chunks set sentence_embeddings = array[%s::extensions.vector] where kb_id = %s",
        (vec_text(at_cosine(7, 8, 0.6)), kb),
    )
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert answer_decision(evidence(1.0, 0.2, 1.0)) == ("passages", pytest.approx(0.5))
    # A zero sentence vector (cosine NaN, which compares above every number) adds nothing ...
    evidence(1.0)
    world.act("service_role")
    db.execute(
        "update hipocampo_private.chunks set sentence_embeddings = array[%s::extensions.vector] where kb_id = %s",
        (vec_text([0.0] * len(unit_vector(7))), kb),
    )
    world.act("authenticated", world.admin_a, world.tenant_a)
    r = answer(db, question, kb)
    assert (r["reason"], r["confidence"]) == ("low_confidence", 0)
    # ... nor does a chunk without sentence embeddings.
    world.act("service_role")
    db.execute("update hipocampo_private.chunks set sentence_embeddings = null where kb_id = %s", (kb,))
    world.act("authenticated", world.admin_a, world.tenant_a)
    r = answer(db, question, kb)
    assert (r["reason"], r["confidence"]) == ("low_confidence", 0)


def answer_decision(r: dict[str, Any]) -> tuple[str, Any]:
    return r["decision"], r["confidence"]


def test_a_tenant_wide_bucket_caps_all_its_users(db: Conn, world: World) -> None:
    """rag.tenant_rate_limit_per_minute is shared by the tenant's users and
    locked for tenants; a refusal by it gives the user's token back."""
    world.act("authenticated", world.admin_a, world.tenant_a)
    with (
        pytest.raises(psycopg.errors.InvalidParameterValue, match="tenant_rate_limit_per_minute is fixed"),
        db.transaction(),
    ):
        db.execute("""select hipocampo.set_tenant_config('rag', '{"tenant_rate_limit_per_minute": 10000}')""")
    db.execute("reset role")
    db.execute(
        "update hipocampo_private.settings set config = jsonb_set(config, '{rag,tenant_rate_limit_per_minute}', '3')"
        " where tenant_id is null"
    )
    takes = []
    for user in (world.member_a, world.admin_a, world.member_a, world.admin_a):
        world.act("authenticated", user, world.tenant_a)
        takes.append(one(db, "select hipocampo.take_rate_limit() as v"))
    # Allowed calls report the bucket with less left (here the tenant's): 2, 1, 0, then refused.
    assert [(t["allowed"], t["scope"], t["remaining"]) for t in takes] == [
        (True, "tenant", 2),
        (True, "tenant", 1),
        (True, "tenant", 0),
        (False, "tenant", 0),
    ]
    world.act("authenticated", world.member_b, world.tenant_b)  # another tenant has its own
    assert one(db, "select hipocampo.take_rate_limit() as v")["allowed"]
    db.execute("reset role")
    ref = one(db, "select hipocampo_private._user_ref(%s, %s) as v", (world.tenant_a, world.admin_a))
    tokens = one(db, "select tokens as v from hipocampo_private.rate_limit_buckets where bucket like %s", (f"%{ref}",))
    assert tokens > 58  # 60 - 1 taken; the refused call's token was given back


def test_token_bucket_per_user_and_ip(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    one(db, """select hipocampo.set_tenant_config('rag', '{"rate_limit_per_minute": 2}') as v""")
    world.act("authenticated", world.member_a, world.tenant_a)
    results = [one(db, "select hipocampo.take_rate_limit() as v") for _ in range(3)]
    assert [r["allowed"] for r in results] == [True, True, False]
    assert results[2]["retry_after_ms"] > 0
    # Another user of the tenant has a bucket of their own.
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert one(db, "select hipocampo.take_rate_limit() as v")["allowed"]
    for cost in ("0", "'nan'", "1e308"):  # 1e308 once overflowed the bucket's arithmetic (22003)
        refused = pytest.raises(psycopg.errors.InvalidParameterValue, match=r"cost must lie in \(0, 1000000\]")
        with refused, db.transaction():
            db.execute(f"select hipocampo.take_rate_limit({cost})")  # type: ignore[arg-type]
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
        db.execute("select hipocampo.take_ip_rate_limit('203.0.113.9')")
    world.act("service_role")
    ip = f"198.51.100.{uuid.uuid4().int % 250}"
    assert one(db, "select hipocampo.take_ip_rate_limit(%s::inet) as v", (ip,))["allowed"]


def test_transient_state_is_purged(db: Conn, world: World) -> None:
    """Expired cached answers and rate-limit buckets idle for a minute (full again) are deleted."""
    world.act("authenticated", world.member_a, world.tenant_a)
    assert one(db, "select hipocampo.take_rate_limit() as v")["allowed"]
    assert cache_put(db, world, "Qual é o prazo?", world.kb_a, cache_entry(db, world.kb_a))
    ttl = one(
        db,
        "select (hipocampo.rag_config(%s, null, %s) ->> 'cache_ttl_seconds')::integer as v",
        (world.kb_a, world.tenant_a),
    )
    state = (
        "select (select count(*) from hipocampo_private.rate_limit_buckets where bucket like %(u)s) as buckets,"
        " (select count(*) from hipocampo_private.answer_cache where tenant_id = %(t)s) as cached"
    )
    args = {"u": f"user:{world.tenant_a}:%", "t": world.tenant_a}  # keyed by the user's pseudonym
    purge = "select hipocampo.purge_transient_state(now() + make_interval(secs => %s)) as v"
    one(db, purge, (30,))
    assert db.execute(state, args).fetchone() == {"buckets": 1, "cached": 1}
    assert one(db, purge, (120,))["rate_limit_buckets"] >= 1
    assert db.execute(state, args).fetchone() == {"buckets": 0, "cached": 1}
    assert one(db, purge, (ttl + 1,))["answer_cache"] >= 1
    assert db.execute(state, args).fetchone() == {"buckets": 0, "cached": 0}


def test_audit_rows_are_pseudonymous_and_feed_the_views(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    trace = uuid.uuid4()
    one(
        db,
        "select hipocampo.record_answer(%s, 'Qual o prazo?', 'REFUSAL', 'low_confidence', 0.3::real, 4, 3,"
        " '{}'::bigint[], '{}'::jsonb, 12.5::real, array[%s]::uuid[]) as v",
        (trace, world.kb_a),
    )
    # Members cannot read the audit; admins read their tenant's; the user is a pseudonym.
    assert db.execute("select * from hipocampo_private.answer_audit").fetchall() == []
    world.act("authenticated", world.admin_a, world.tenant_a)
    row = db.execute("select * from hipocampo_private.answer_audit where trace_id = %s", (trace,)).fetchone()
    assert row is not None and row["user_ref"] != str(world.member_a) and len(row["question_sha256"]) == 64
    stats = db.execute("select * from hipocampo.rag_answer_stats").fetchall()
    assert [(s["query_count"], s["refusals"], float(s["filtered_rate"])) for s in stats] == [(1, 1, 0.75)]
    assert [(r["reason"], r["refusals"]) for r in db.execute("select * from hipocampo.rag_refusals").fetchall()] == [
        ("low_confidence", 1)
    ]
    emb = db.execute("select * from hipocampo.embedding_stats where kb_id = %s", (world.kb_a,)).fetchone()
    assert emb is not None and (emb["embeddings_total"], emb["embeddings_stale"]) == (2, 0)
    world.act("authenticated", world.admin_b, world.tenant_b)
    assert db.execute("select * from hipocampo.rag_answer_stats").fetchall() == []


def test_an_extractive_quote_names_its_article(db: Conn) -> None:
    """Issue 48 §1: the quote of an article starts with the article's number and heading path."""
    quote = "select hipocampo.extractive_answer(%s::jsonb, 0.5) as v"
    item = {"n": 1, "support": 0.9, "content": "Art. 6º É permitida a permanência de animais domésticos."}
    meta = {"article": "Art. 6º", "section": "Capítulo III – Dos animais"}
    assert one(db, quote, (json.dumps([{**item, "metadata": meta}]),)) == (
        "Art. 6º (Capítulo III – Dos animais): É permitida a permanência de animais domésticos. [1]"
    )
    window = {**item, "best_window": "§ 2º Cães de grande porte devem usar focinheira.", "metadata": meta}
    assert one(db, quote, (json.dumps([window]),)) == (
        "Art. 6º (Capítulo III – Dos animais): § 2º Cães de grande porte devem usar focinheira. [1]"
    )
    # A chunk that is no article (a FAQ, a paragraph) is quoted as it is.
    assert one(db, quote, (json.dumps([{**item, "metadata": {}}]),)) == f"{item['content']} [1]"


def test_an_ipv6_client_counts_by_its_slash_64(db: Conn, world: World) -> None:
    """Issue 44 §5: rotating addresses inside one /64 shares one bucket; an IPv4-mapped address
    shares its IPv4 form's."""
    world.act("service_role")
    network = {
        ip: one(db, "select hipocampo_private._client_network(%s::inet) as v", (ip,))
        for ip in ("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:3::1", "::ffff:203.0.113.7")
    }
    assert network == {
        "2001:db8:1:2::1": "2001:db8:1:2::/64",
        "2001:db8:1:2:ffff:ffff:ffff:ffff": "2001:db8:1:2::/64",
        "2001:db8:1:3::1": "2001:db8:1:3::/64",
        "::ffff:203.0.113.7": "203.0.113.7",
    }
    db.execute(
        "update hipocampo_private.settings set config = jsonb_set(config, '{rag,ip_rate_limit_per_minute}', '2')"
        " where tenant_id is null"
    )
    prefix = f"2001:db8:{uuid.uuid4().int % 65000:x}:9"
    taken = [one(db, "select hipocampo.take_ip_rate_limit(%s::inet) as v", (f"{prefix}::{i}",)) for i in (1, 2, 3)]
    assert [t["allowed"] for t in taken] == [True, True, False]
    v4 = f"198.51.100.{uuid.uuid4().int % 250}"
    both = [one(db, "select hipocampo.take_ip_rate_limit(%s::inet) as v", (ip,)) for ip in (v4, f"::ffff:{v4}", v4)]
    assert [t["allowed"] for t in both] == [True, True, False]


def _on_topic(db: Conn, world: World, question: str, vector: str | None = None) -> dict[str, Any]:
    """answer_evidence over A's knowledge base with ``vector`` (default: the vector of A's first
    chunk, dense 1.0)."""
    world.act("service_role")
    vector = vector or one(
        db,
        "select embedding::text as v from hipocampo_private.chunks where document_id = %s and chunk_index = 0",
        (world.doc_a,),
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    v: dict[str, Any] = one(
        db,
        "select hipocampo.answer_evidence(%s, %s::extensions.vector, array[%s]::uuid[]) as v",
        (question, vector, world.kb_a),
    )
    return v


def test_a_question_the_gate_cannot_confirm_gets_the_passages_on_its_topic(db: Conn, world: World) -> None:
    """Issue 61 §1: not an answer, not a refusal: the passages above the model's on-topic floor
    (rag.passages_floor), quoted and cited after rag.passages_message; below the floor, refused."""
    world.act("service_role")
    db.execute("update hipocampo_private.documents set trust_score = 0.5 where id = %s", (world.doc_a,))
    question = "Qual o prazo de trancamento de matrícula?"
    r = _on_topic(db, world, question)
    assert (r["decision"], r["reason"], r["top_similarity"]) == ("passages", "cross_check_failed", pytest.approx(1.0))
    first = r["passages"][0]
    assert (first["n"], first["document_id"], first["excerpt"]) == (
        1, str(world.doc_a), "Prazo de trancamento de matrícula é de 30 dias.",
    )  # fmt: skip
    assert len(r["passages"]) <= 3 and all(len(p["excerpt"]) <= 200 for p in r["passages"])
    message = one(db, "select hipocampo.rag_config(%s) ->> 'passages_message' as v", (world.kb_a,))
    lines = r["reply"].split("\n")
    assert lines[0] == message == "Não encontrei uma resposta exata; estes trechos tratam do assunto:"
    assert lines[1].startswith("[1] ") and lines[1].endswith(": “Prazo de trancamento de matrícula é de 30 dias.”")
    assert not any(mark in r["reply"] for mark in ("**", "##", "](", "`"))
    # Above every candidate's similarity: off-topic, refused.
    world.act("authenticated", world.admin_a, world.tenant_a)
    one(db, "select hipocampo.set_knowledge_base_config(%s, 'rag', '{\"passages_floor\": 1}'::jsonb) as v",
        (world.kb_a,))  # fmt: skip
    world.act("service_role")
    db.execute(
        "update hipocampo_private.chunks set embedding = %s::extensions.vector where document_id = %s",
        (vec_text(unit_vector(1)), world.doc_a),
    )
    r = _on_topic(db, world, question, vec_text(at_cosine(1, 2, 0.99)))
    assert (r["decision"], r["reason"], r["passages"], r["reply"]) == ("refuse", "cross_check_failed", [], None)
    # A chat model judges for itself: no passages stand for its answer.
    world.act("authenticated", world.admin_a, world.tenant_a)
    one(db, "select hipocampo.set_knowledge_base_config(%s, 'rag', '{\"passages_floor\": -1}'::jsonb) as v",
        (world.kb_a,))  # fmt: skip
    world.act("service_role")
    one(
        db, "select hipocampo.set_tenant_config('rag', '{\"provider\": \"openai\"}'::jsonb, %s) as v", (world.tenant_a,)
    )
    assert _on_topic(db, world, question)["decision"] == "answer"


def test_passages_leave_out_text_that_is_not_language(db: Conn, world: World) -> None:
    """Word salad found by search is never quoted, nor shown as the closest passage (issue 61 §5)."""
    world.act("service_role")
    db.execute(
        "update hipocampo_private.documents set trust_score = 0.5, text_measures = jsonb_build_object('words', 5000,"
        " 'word_order', 0.2) where id = %s",
        (world.doc_a,),
    )
    r = _on_topic(db, world, "Qual o prazo de trancamento de matrícula?")
    assert r["decision"] == "refuse" and r["passages"] == [] and r["top_similarity"] is None
    assert r["closest"] is None  # never shown as the closest passage either
