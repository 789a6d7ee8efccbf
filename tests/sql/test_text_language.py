"""Text that is not language never answers (issue 48 §3): a document's text is measured when its
chunks are written (documents.text_measures), and answer_evidence never takes a candidate of a
document that does not read as language as evidence; search still finds it."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import psycopg

from ..conftest import MODEL, World, unit_vector, vec_text

Conn = psycopg.Connection[dict[str, Any]]

REAL = (
    "Art. 23 O condômino pode recorrer da multa ao conselho consultivo, por escrito, no prazo de 15 dias "
    "contados do recebimento da notificação. O conselho decide o recurso em até 30 dias, e a cobrança da "
    "multa fica suspensa até a decisão. "
)


def salad(words: int, seed: int = 1) -> str:
    """Words drawn at random from the regulation's own text (its vocabulary at its frequencies)."""
    vocab = (REAL * 3).replace(",", "").replace(".", "").split()
    rnd = random.Random(seed)
    return " ".join(rnd.choice(vocab) for _ in range(words))


def one(db: Conn, sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = db.execute(sql, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row["v"]


def ingest(db: Conn, kb: Any, name: str, pieces: list[str], seed: int = 7) -> Any:
    """One document whose chunks all carry unit_vector(seed), the question's vector below."""
    chunks = [
        {
            "chunk_index": i,
            "content": p,
            "token_count": len(p.split()),
            "content_hash": f"{name}-{i}-{uuid.uuid4().hex[:6]}",
            "embedding": unit_vector(seed),
        }
        for i, p in enumerate(pieces)
    ]
    doc = {"title": name, "source_uri": f"test://{name}", "content_hash": name, "source_type": "regulation"}
    return one(
        db,
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s) ->> 'document_id' as v",
        (kb, json.dumps(doc), json.dumps(chunks), MODEL),
    )


def test_prose_and_word_salad_measure_apart(db: Conn) -> None:
    measure = "select hipocampo_private._text_measures(%s) as v"
    prose = one(db, measure, (REAL * 8,))
    assert prose["words"] >= 300 and prose["function_share"] >= 0.3 and prose["odd_transitions"] < 0.1
    drawn = one(db, measure, (salad(2000),))
    assert drawn["words"] > 1500 and drawn["odd_transitions"] >= 0.24, drawn  # numbers are not words
    vocabulary = sorted(set(salad(2000).split()))
    types = one(db, measure, (" ".join(random.Random(2).choice(vocabulary) for _ in range(2000)),))
    assert types["function_share"] < 0.15
    assert one(db, measure, ("",)) == {"words": 0, "function_share": 0, "odd_transitions": None}


def test_word_salad_of_the_kbs_vocabulary_never_answers(db: Conn, world: World) -> None:
    world.act("service_role")
    kb = one(db, "select hipocampo.create_knowledge_base('regras', tenant_id => %s) as v", (world.tenant_a,))
    real = ingest(db, kb, "regulamento", [REAL])
    # A 'minutes' file of the regulation's own words, chunked as ingestion would (~200 words a chunk).
    words = salad(3000).split()
    babble = ingest(db, kb, "ata", [" ".join(words[i : i + 200]) for i in range(0, len(words), 200)])
    measures = {
        r["id"]: r["text_measures"]
        for r in db.execute(
            "select id, text_measures from hipocampo_private.documents where id = any(%s)", ([real, babble],)
        ).fetchall()
    }
    assert measures[uuid.UUID(babble)]["words"] > 2500 and measures[uuid.UUID(babble)]["odd_transitions"] >= 0.24
    world.act("authenticated", world.member_a, world.tenant_a)
    q = "Qual o prazo para recorrer da multa ao conselho consultivo?"
    found = db.execute(
        "select document_id from hipocampo.hybrid_search(%s, %s::extensions.vector, array[%s]::uuid[],"
        " match_count => 10)",
        (q, vec_text(unit_vector(7)), kb),
    ).fetchall()
    assert str(babble) in {str(r["document_id"]) for r in found}  # search still finds it
    ev = one(
        db,
        "select hipocampo.answer_evidence(%s, %s::extensions.vector, array[%s]::uuid[]) as v",
        (q, vec_text(unit_vector(7)), kb),
    )
    assert ev["decision"] == "answer"
    assert {e["document_id"] for e in ev["evidence"]} == {real}
    answer = one(db, "select hipocampo.extractive_answer(%s::jsonb, 0.3) as v", (json.dumps(ev["evidence"]),))
    assert answer.startswith("Art. 23") or "15 dias" in answer


def test_the_rules_are_the_rag_configs(db: Conn, world: World) -> None:
    """A tenant that sets the rules apart gets the salad back as evidence (and the switch is
    what the gate reads, not a constant)."""
    world.act("service_role")
    kb = one(db, "select hipocampo.create_knowledge_base('regras2', tenant_id => %s) as v", (world.tenant_a,))
    ingest(db, kb, "regulamento", [REAL])
    words = salad(3000, seed=3).split()
    babble = ingest(db, kb, "ata", [" ".join(words[i : i + 200]) for i in range(0, len(words), 200)])
    world.act("authenticated", world.admin_a, world.tenant_a)
    one(
        db,
        """select hipocampo.set_knowledge_base_config(%s, 'rag', '{"language_max_odd_transitions": 1.0}') as v""",
        (kb,),
    )
    ev = one(
        db,
        "select hipocampo.answer_evidence(%s, %s::extensions.vector, array[%s]::uuid[]) as v",
        ("Qual o prazo para recorrer da multa ao conselho consultivo?", vec_text(unit_vector(7)), kb),
    )
    assert babble in {e["document_id"] for e in ev["evidence"]}
