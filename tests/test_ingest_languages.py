"""Knowledge bases in any language (issue 59 §2): each document's language detected at ingestion
(lingua), its chunks stemmed in it, the question read in every language of the knowledge base; the
dense leg multilingual. On the real database with the real offline model."""

from __future__ import annotations

from pathlib import Path

from hipocampo import Hipocampo, Orchestrator
from hipocampo.embeddings import count_tokens
from hipocampo.ingest import ingest_paths
from hipocampo.ingest.language import detect_language

from .conftest import CountingEmbedder

DOCS = {
    "regimento.md": "# Regimento interno\n\nArt. 1º A piscina funciona de terça a domingo, das 8h às 22h. "
    "Às segundas-feiras ela fica fechada para limpeza e manutenção das bombas.\n\n"
    "Art. 2º Os moradores podem levar no máximo dois convidados por unidade.",
    "reglamento.md": "# Reglamento del condominio\n\nArtículo 1. Los residentes pueden usar el gimnasio "
    "todos los días, de las 6 a las 23 horas. Las mascotas deben circular con correa en las áreas comunes.\n\n"
    "Artículo 2. Está prohibido fumar en los ascensores y en los pasillos del edificio.",
    "house-rules.md": "# House rules\n\nRule 1. Bicycles must be parked in the basement storage room, never in "
    "the hallways. Residents who leave bicycles elsewhere will receive a written warning.\n\n"
    "Rule 2. Quiet hours run from ten at night until seven in the morning.",
    "hausordnung.md": "# Hausordnung\n\nRegel 1. Der Müll muss getrennt und in die richtigen Tonnen im Hof gebracht "
    "werden. Sperrmüll wird einmal im Monat abgeholt.\n\nRegel 2. Die Waschküche steht allen Bewohnern "
    "von Montag bis Samstag zur Verfügung.",
}


def test_detect_language() -> None:
    assert [detect_language(t) for t in DOCS.values()] == ["portuguese", "spanish", "english", "german"]
    assert detect_language("12345 --- 678") is None


def test_each_document_is_stemmed_in_its_language(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    for name, text in DOCS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    summary = ingest_paths(service_client, "multi", [tmp_path], counting, count_tokens, source_type="regulation")
    assert summary.documents_ingested == 4
    kb = service_client.kb_id("multi")
    with service_client.transaction() as cur:
        cur.execute(
            "select d.title, d.language, c.ts_config::text as cfg, c.fts::text as fts"
            " from hipocampo_private.documents d join hipocampo_private.chunks c on c.document_id = d.id"
            " where d.kb_id = %s order by d.title, c.chunk_index",
            (kb,),
        )
        rows = cur.fetchall()
        cur.execute("select document_languages from hipocampo_private.knowledge_bases where id = %s", (kb,))
        kb_row = cur.fetchone()
    langs = {r["title"]: (r["language"], r["cfg"]) for r in rows}
    assert langs == {
        "Regimento interno": ("portuguese", "hipocampo_private.portuguese_unaccent"),
        "Reglamento del condominio": ("spanish", "hipocampo_private.spanish_unaccent"),
        "House rules": ("english", "hipocampo_private.english_unaccent"),
        "Hausordnung": ("german", "hipocampo_private.german_unaccent"),
    }
    assert kb_row is not None and kb_row["document_languages"] == ["english", "german", "spanish"]
    spanish = " ".join(r["fts"] for r in rows if r["title"] == "Reglamento del condominio")
    assert "'pued'" in spanish and "'las'" not in spanish  # Spanish stems and stop words, not Portuguese ones

    # The question is read in each language: "puedo" (Spanish stem pued) meets "pueden"; the
    # Portuguese stemmer alone would make them pued / pueden and miss.
    q = "¿puedo usar el gimnasio?"
    hits = service_client.search(q, counting.embed_query(q), kb_ids=[kb], match_count=3)
    assert hits[0].title.startswith("Reglamento del condominio") and hits[0].lexical_score is not None
    q = "Where do I leave my bicycle?"
    hits = service_client.search(q, counting.embed_query(q), kb_ids=[kb], match_count=3)
    assert hits[0].title.startswith("House rules") and hits[0].lexical_score is not None

    # Answers in the question's language, citing the document in it.
    orch = Orchestrator(service_client, counting)
    es = orch.ask("¿Está prohibido fumar en los ascensores?", kb_ids=[kb], use_cache=False)
    en = orch.ask("When are the quiet hours?", kb_ids=[kb], use_cache=False)
    assert not es.refused and es.sources[0].document == "Reglamento del condominio", es
    assert not en.refused and en.sources[0].document == "House rules", en
