"""Text that is not language never answers (issues 48 §3, 61 §5): a document's text is measured when
its chunks are written (documents.text_measures: its word order, the same in every language), and
answer_evidence never takes a candidate of a document that does not read as language as evidence;
search still finds it, ranked after every chunk that reads as language."""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from hipocampo.evaluation.datasets import load_beir

from ..conftest import MODEL, World, unit_vector, vec_text

LANGUAGES = Path(__file__).resolve().parents[1] / "data" / "languages"

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


def near(cosine: float, other: int) -> list[float]:
    """A unit vector at about ``cosine`` to unit_vector(7), the question's (unit_vector(other) is
    nearly orthogonal to it), and not a near-duplicate of another such vector."""
    a, b = unit_vector(7), unit_vector(other)
    v = [cosine * x + (1 - cosine**2) ** 0.5 * y for x, y in zip(a, b, strict=True)]
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


def one(db: Conn, sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = db.execute(sql, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row["v"]


def ingest(
    db: Conn,
    kb: Any,
    name: str,
    pieces: list[str],
    seed: int = 7,
    metadata: list[dict[str, Any]] | None = None,
    vectors: list[list[float]] | None = None,
) -> Any:
    """One document whose chunks all carry unit_vector(seed), the question's vector below (or
    ``vectors``, one per chunk)."""
    chunks = [
        {
            "chunk_index": i,
            "content": p,
            "metadata": (metadata or [{}] * len(pieces))[i],
            "token_count": len(p.split()),
            "content_hash": f"{name}-{i}-{uuid.uuid4().hex[:6]}",
            "embedding": vectors[i] if vectors else unit_vector(seed),
        }
        for i, p in enumerate(pieces)
    ]
    doc = {"title": name, "source_uri": f"test://{name}", "content_hash": name, "source_type": "regulation"}
    return one(
        db,
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s) ->> 'document_id' as v",
        (kb, json.dumps(doc), json.dumps(chunks), MODEL),
    )


def _rules(db: Conn) -> tuple[int, float]:
    """The seeded rules: (rag.language_min_words, rag.language_min_word_order)."""
    rag = one(db, "select config -> 'rag' as v from hipocampo_private.settings where tenant_id is null")
    return int(rag["language_min_words"]), float(rag["language_min_word_order"])


def _plain(db: Conn, text: str) -> list[str]:
    return [w for w in one(db, "select hipocampo_private._plain_words(%s) as v", (text,)).split() if not w.isdigit()]


def _real_texts() -> dict[str, str]:
    """Real text of at least 500 words in six languages: Portuguese (FaQuAD's documents) and
    English (SciFact's abstracts) as published, Spanish, French, German and Italian written for
    this test (tests/data/languages)."""
    texts = {lang: (LANGUAGES / f"{lang}.txt").read_text(encoding="utf-8") for lang in ("es", "fr", "de", "it")}
    for lang, name in (("pt", "faquad"), ("en", "scifact")):
        pieces: list[str] = []
        for _, text in load_beir(name).corpus.values():
            pieces.append(text)
            if len(" ".join(pieces).split()) >= 520:
                break
        texts[lang] = "\n".join(pieces)
    return texts


def test_prose_and_word_salad_measure_apart(db: Conn) -> None:
    _, line = _rules(db)
    measure = "select hipocampo_private._text_measures(%s) as v"
    prose = one(db, measure, (REAL * 12,))
    assert prose["words"] >= 300 and prose["word_order"] > 20, prose
    drawn = one(db, measure, (salad(2000),))
    assert drawn["words"] > 1500 and drawn["word_order"] < line, drawn  # numbers are not words
    vocabulary = sorted(set(salad(2000).split()))
    types = one(db, measure, (" ".join(random.Random(2).choice(vocabulary) for _ in range(2000)),))
    assert types["word_order"] < line, types
    assert one(db, measure, ("",)) == {
        "words": 0,
        "word_order": None,
        "repeated_pairs": None,
        "length_alternation": None,
    }


@pytest.mark.parametrize("lang", ["pt", "en", "es", "fr", "de", "it"])
def test_real_text_reads_as_language_in_any_language(db: Conn, lang: str) -> None:
    """Issue 61 §5: the check knows no language's words; real text of 500+ words in six languages
    reads as language, and the same words in a random order (five shuffles) do not."""
    min_words, line = _rules(db)
    text = _real_texts()[lang]
    m = one(db, "select hipocampo_private._text_measures(%s) as v", (text,))
    assert m["words"] >= min_words and m["word_order"] >= line, m
    rag = {"language_min_words": min_words, "language_min_word_order": line}
    assert one(db, "select hipocampo_private._reads_as_language(%s::jsonb, %s::jsonb) as v",
               (json.dumps(m), json.dumps(rag)))  # fmt: skip
    words = _plain(db, text)
    for seed in range(5):
        shuffled = words[:]
        random.Random(seed).shuffle(shuffled)
        s = one(db, "select hipocampo_private._text_measures(%s) as v", (" ".join(shuffled),))
        assert s["word_order"] < line, (seed, s)


def test_ocr_garbage_and_salad_of_any_language_do_not_read_as_language(db: Conn) -> None:
    _, line = _rules(db)
    rnd = random.Random(4)
    marks = "Il1|;:.,'`~rnmvw0Oeaoc-_=ii!"
    garbage = " ".join("".join(rnd.choice(marks) for _ in range(rnd.randint(1, 7))) for _ in range(1500))
    assert one(db, "select hipocampo_private._text_measures(%s) as v", (garbage,))["word_order"] < line
    for lang, text in _real_texts().items():
        words = _plain(db, text)
        drawn = " ".join(rnd.choice(words) for _ in range(3000))  # its vocabulary at its frequencies
        m = one(db, "select hipocampo_private._text_measures(%s) as v", (drawn,))
        assert m["word_order"] < line, (lang, m)


def test_a_chunks_overlap_is_not_measured_twice(db: Conn, world: World) -> None:
    """Chunks that repeat the previous chunk's end (metadata.overlap_chars, as the chunker writes
    it) would read as repeated word pairs: the document is measured without the repeat."""
    assert one(db, """select hipocampo_private._chunk_own_text('B. C.', '{"overlap_chars": 3}') as v""") == "C."
    assert one(db, """select hipocampo_private._chunk_own_text('B. C.', '{"overlap_chars": "x"}') as v""") == "B. C."
    assert one(db, """select hipocampo_private._chunk_own_text('B. C.', '{"overlap_chars": 1e30}') as v""") == ""
    # a salad of a real text's vocabulary at its frequencies
    vocabulary = _plain(db, (LANGUAGES / "es.txt").read_text(encoding="utf-8"))
    rnd = random.Random(5)
    words = [rnd.choice(vocabulary) for _ in range(3000)]
    pieces, metas, start = [], [], 0
    while start < len(words):
        own = words[start : start + 150]
        carried = words[max(start - 50, 0) : start]
        pieces.append(" ".join(carried + own))
        metas.append({"overlap_chars": len(" ".join(carried)) + 1} if carried else {})
        start += 150
    # measured with the repeats, the same salad would read as language
    doubled = one(db, "select hipocampo_private._text_measures(%s) as v", ("\n".join(pieces),))
    expected = len(_plain(db, " ".join(words)))
    world.act("service_role")
    kb = one(db, "select hipocampo.create_knowledge_base('atas', tenant_id => %s) as v", (world.tenant_a,))
    doc = ingest(db, kb, "ata-sobreposta", pieces, metadata=metas)
    m = one(db, "select text_measures as v from hipocampo_private.documents where id = %s", (doc,))
    _, line = _rules(db)
    assert m["words"] == expected and m["word_order"] < line, m
    assert doubled["word_order"] >= line, doubled


def test_word_salad_of_the_kbs_vocabulary_never_answers(db: Conn, world: World) -> None:
    world.act("service_role")
    kb = one(db, "select hipocampo.create_knowledge_base('regras', tenant_id => %s) as v", (world.tenant_a,))
    real = ingest(db, kb, "regulamento", [REAL])
    # A 'minutes' file of the regulation's own words, chunked as ingestion would (~200 words a chunk).
    words = salad(3000).split()
    pieces = [" ".join(words[i : i + 200]) for i in range(0, len(words), 200)]
    babble = ingest(db, kb, "ata", pieces, vectors=[near(0.9, 100 + i) for i in range(len(pieces))])
    measures = {
        r["id"]: r["text_measures"]
        for r in db.execute(
            "select id, text_measures from hipocampo_private.documents where id = any(%s)", ([real, babble],)
        ).fetchall()
    }
    _, line = _rules(db)
    assert measures[uuid.UUID(babble)]["words"] > 2500 and measures[uuid.UUID(babble)]["word_order"] < line
    world.act("authenticated", world.member_a, world.tenant_a)
    q = "Qual o prazo para recorrer da multa ao conselho consultivo?"
    found = db.execute(
        "select document_id from hipocampo.hybrid_search(%s, %s::extensions.vector, array[%s]::uuid[],"
        " match_count => 10)",
        (q, vec_text(unit_vector(7)), kb),
    ).fetchall()
    assert str(babble) in {str(r["document_id"]) for r in found}  # search still finds it
    # ... after every chunk that reads as language (issue 61 §5), with MMR's diversity too
    for lam in (1.0, 0.3):
        found = db.execute(
            "select document_id, rank from hipocampo.hybrid_search(%s, %s::extensions.vector, array[%s]::uuid[],"
            " match_count => 10, mmr_lambda => %s) order by rank",
            (q, vec_text(unit_vector(7)), kb, lam),
        ).fetchall()
        kinds = [str(r["document_id"]) == str(real) for r in found]
        assert kinds[0] and kinds == sorted(kinds, reverse=True), (lam, kinds)
        assert [r["rank"] for r in found] == list(range(1, len(found) + 1))
    ev = one(
        db,
        "select hipocampo.answer_evidence(%s, %s::extensions.vector, array[%s]::uuid[]) as v",
        (q, vec_text(unit_vector(7)), kb),
    )
    assert ev["decision"] == "answer"
    assert {e["document_id"] for e in ev["evidence"]} == {real}
    answer = one(db, "select hipocampo.extractive_answer(%s::jsonb, 0.3) as v", (json.dumps(ev["evidence"]),))
    assert answer.startswith("Art. 23") or "15 dias" in answer


def test_the_verdicts_of_many_documents_come_in_their_order(db: Conn) -> None:
    """A search judges all its candidates in one call (_language_verdicts): the verdicts come in
    the order of the measures, each the one _reads_as_language gives that document alone."""
    rag = {"language_min_words": 10, "language_min_word_order": 1.0}
    measures = [
        None,
        {"words": 5, "word_order": -3.0},
        {"words": 50, "word_order": 0.2},
        {"words": 50, "word_order": 2.0},
        {"words": 50},
    ]
    as_json = [None if m is None else json.dumps(m) for m in measures]
    verdicts = one(
        db, "select hipocampo_private._language_verdicts(%s::jsonb[], %s::jsonb) as v", (as_json, json.dumps(rag))
    )
    assert verdicts == [True, True, False, True, False]
    alone = [
        one(db, "select hipocampo_private._reads_as_language(%s::jsonb, %s::jsonb) as v", (m, json.dumps(rag)))
        for m in as_json
    ]
    assert alone == verdicts
    assert one(db, "select hipocampo_private._language_verdicts(null, %s::jsonb) as v", (json.dumps(rag),)) is None


def test_search_ranks_text_that_is_not_language_last(db: Conn, world: World) -> None:
    """Issue 61 §5: a salad nearer the question than the real article, in both legs, still comes
    after it; with the rule switched off (a knowledge base's language_min_word_order -100) it
    comes first, as before."""
    world.act("service_role")
    kb = one(db, "select hipocampo.create_knowledge_base('regras3', tenant_id => %s) as v", (world.tenant_a,))
    real = ingest(db, kb, "regulamento", [REAL], vectors=[near(0.86, 300)])
    words = salad(3000, seed=6).split()
    pieces = [" ".join(words[i : i + 200]) for i in range(0, len(words), 200)]
    babble = ingest(db, kb, "ata", pieces, vectors=[near(0.97, 400 + i) for i in range(len(pieces))])
    q = "Qual o prazo para recorrer da multa ao conselho consultivo?"
    world.act("authenticated", world.member_a, world.tenant_a)

    def order() -> list[str]:
        return [
            str(r["document_id"])
            for r in db.execute(
                "select document_id from hipocampo.hybrid_search(%s, %s::extensions.vector, array[%s]::uuid[],"
                " match_count => 8, mmr_lambda => 1) order by rank",
                (q, vec_text(unit_vector(7)), kb),
            ).fetchall()
        ]

    ranked = order()
    assert ranked[0] == str(real) and set(ranked[1:]) == {str(babble)}, ranked
    world.act("authenticated", world.admin_a, world.tenant_a)
    one(db, """select hipocampo.set_knowledge_base_config(%s, 'rag', '{"language_min_word_order": -100}') as v""",
        (kb,))  # fmt: skip
    world.act("authenticated", world.member_a, world.tenant_a)
    assert order()[0] == str(babble)


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
        """select hipocampo.set_knowledge_base_config(%s, 'rag', '{"language_min_word_order": -100}') as v""",
        (kb,),
    )
    ev = one(
        db,
        "select hipocampo.answer_evidence(%s, %s::extensions.vector, array[%s]::uuid[]) as v",
        ("Qual o prazo para recorrer da multa ao conselho consultivo?", vec_text(unit_vector(7)), kb),
    )
    assert babble in {e["document_id"] for e in ev["evidence"]}
