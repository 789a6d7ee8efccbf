"""Chunk boundaries: sizes per type, whole sentences, article metadata, overlap."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from hipocampo.config import load_config
from hipocampo.embeddings.local import count_tokens
from hipocampo.ingest.chunking import (
    MAX_SENTENCES,
    ChunkingRule,
    chunk_sentences,
    chunk_text,
    cut_by_articles,
    split_sentences,
)

pytestmark = pytest.mark.any_model

RULES = {k: ChunkingRule.from_config(v) for k, v in load_config()["chunking"].items()}


def regulation(n_articles: int = 30) -> str:
    parts = ["CAPÍTULO I\nDAS DISPOSIÇÕES GERAIS"]
    for i in range(1, n_articles + 1):
        parts.append(
            f"Art. {i}º O condômino deverá observar a regra número {i} sobre o uso das áreas comuns. "
            f"O descumprimento implica advertência escrita e, na reincidência, multa de {i} por cento. "
            "Cabe recurso ao conselho consultivo no prazo de quinze dias contados da notificação."
        )
        if i == 15:
            parts.append("CAPÍTULO II\nDAS PENALIDADES")
    return "\n\n".join(parts)


def test_regulation_chunks_respect_sizes_and_sentences() -> None:
    rule = RULES["regulation"]
    text = regulation()
    chunks = chunk_text(text, rule, count_tokens)
    assert len(chunks) > 1
    sentences = split_sentences(text)
    runs = {" ".join(sentences[i:j]) for i in range(len(sentences)) for j in range(i + 1, len(sentences) + 1)}
    for c in chunks:
        assert c.token_count <= rule.max_tokens
        # Every chunk is a contiguous run of whole sentences of the source.
        assert c.content in runs
    assert all(c.token_count >= rule.min_tokens for c in chunks[:-1])


def test_article_and_section_metadata() -> None:
    chunks = chunk_text(regulation(), RULES["regulation"], count_tokens)
    assert chunks[0].metadata["article"] == "Art. 1º"
    assert chunks[0].metadata["section"] == "CAPÍTULO I – DAS DISPOSIÇÕES GERAIS"
    # An article a chunk: the unit that answers (issue 48 §1), its chapter as its heading path.
    assert [c.metadata["articles"] for c in chunks] == [[f"Art. {i}º"] for i in range(1, 31)]
    assert chunks[19].metadata["section"] == "CAPÍTULO II – DAS PENALIDADES"
    assert all(c.content.startswith(c.metadata["article"]) for c in chunks)


def test_overlap_carries_the_last_sentences() -> None:
    rule = ChunkingRule(500, 800, 100, "article")  # articles packed together, as before issue 48
    chunks = chunk_text(regulation(60), rule, count_tokens)
    assert len(chunks) > 2
    for prev, nxt in pairwise(chunks):
        sents = split_sentences(prev.content)
        suffixes = [" ".join(sents[i:]) for i in range(1, len(sents))]
        carried = [x for x in suffixes if nxt.content.startswith(x + " ")]
        assert carried, nxt.content[:80]
        assert count_tokens(max(carried, key=len)) <= rule.overlap
        # overlap_chars names exactly the carried characters (the document's measures skip them)
        assert nxt.content[: nxt.metadata["overlap_chars"]] == max(carried, key=len) + " "
        # metadata names the articles that start in the chunk, not the carried one
        assert nxt.metadata["article"] not in prev.metadata["articles"]


@pytest.mark.parametrize("kind", ["reservation", "decision", "penalty", "metric"])
def test_no_overlap_types(kind: str) -> None:
    rule = RULES[kind]
    assert rule.overlap == 0
    text = "\n\n".join(f"Reserva {i} do salão de festas para o dia {i} de maio, das 10h às 22h." for i in range(80))
    chunks = chunk_text(text, rule, count_tokens)
    joined = " ".join(c.content for c in chunks)
    assert joined.count("Reserva 5 do salão") == 1
    assert all(c.token_count <= rule.max_tokens for c in chunks)


def test_a_sentence_longer_than_max_is_cut_at_clauses() -> None:
    rule = ChunkingRule(10, 40, 0)
    sentence = ", ".join(f"cláusula número {i} com algum texto" for i in range(30)) + "."
    chunks = chunk_text(sentence, rule, count_tokens)
    assert len(chunks) > 1 and all(c.token_count <= 40 for c in chunks)


def test_seed_table_is_in_config() -> None:
    # Regulations and policies: an article a chunk, never merged with the next (issue 48 §1).
    for kind in ("regulation", "policy"):
        assert (RULES[kind].min_tokens, RULES[kind].max_tokens, RULES[kind].overlap, RULES[kind].split) == (
            1,
            800,
            0,
            "article",
        )
    assert (RULES["assembly_minutes"].min_tokens, RULES["assembly_minutes"].max_tokens) == (300, 500)
    assert RULES["assembly_minutes"].overlap == 50
    assert (RULES["reservation"].min_tokens, RULES["reservation"].max_tokens) == (100, 200)
    assert (RULES["decision"].max_tokens, RULES["penalty"].max_tokens, RULES["metric"].max_tokens) == (400, 400, 300)


def test_chunk_sentences_are_its_sentences_at_most_the_limit() -> None:
    assert chunk_sentences("O prazo é de 30 dias. A multa é de R$ 100.") == [
        "O prazo é de 30 dias.",
        "A multa é de R$ 100.",
    ]
    assert chunk_sentences("sem ponto final") == ["sem ponto final"]
    assert chunk_sentences("Art. 2º A piscina abre às 9h. Sim. Crianças entram acompanhadas.") == [
        "Art. 2º A piscina abre às 9h.",
        "Sim. Crianças entram acompanhadas.",
    ]
    text = " ".join(f"Frase número {i} termina aqui." for i in range(130))
    parts = chunk_sentences(text)
    # 130 sentences in runs of 3 (ceil(130 / 64)): 44 items, every sentence kept in order.
    assert len(parts) == 44 <= MAX_SENTENCES and " ".join(parts) == text
    assert chunk_sentences(text, limit=1) == [text]


def test_markdown_is_structure_not_text() -> None:
    """Issue 48 §1: a markdown regulation (`## Capítulo …`, `**Art. 3º**`) becomes one chunk per
    article, its chapter as the heading path, no `#` or `**` in what is stored."""
    from pathlib import Path

    from hipocampo.ingest.pipeline import context_header

    path = Path(__file__).parent.parent / "examples" / "regulamento-condominio" / "regulamento-interno.md"
    chunks = chunk_text(path.read_text("utf-8"), RULES["regulation"], count_tokens)
    articles = [c.metadata.get("article") for c in chunks]
    assert articles == [None, *(f"Art. {i}º" for i in range(1, 10)), *(f"Art. {i}" for i in range(10, 26))]
    assert not any("#" in c.content or "**" in c.content for c in chunks)
    six = chunks[6]
    assert six.content.startswith("Art. 6º É permitida a permanência de animais domésticos")
    assert "§ 2º Cães de grande porte" in six.content and "Art. 7º" not in six.content
    assert six.metadata["section"] == "Capítulo III – Dos animais"
    title = "Regulamento Interno do Condomínio Residencial Jardim das Acácias"
    assert context_header(title, six) == f"{title} › Capítulo III – Dos animais"
    assert context_header(title, chunks[0]) == title  # the preamble's section is the title itself


def test_a_faq_is_one_question_with_its_answer_a_chunk() -> None:
    """Issue 48 §1: FAQs are cut at their questions (bold, "P:"-prefixed or heading lines ending in
    "?"), each entry its own chunk with its question in the metadata, the "R:" mark dropped, the
    group heading as context; never two entries in one chunk."""
    from pathlib import Path

    path = Path(__file__).parent.parent / "examples" / "faq-aplicativo" / "perguntas-frequentes.md"
    chunks = chunk_text(path.read_text("utf-8"), RULES["faq"], count_tokens)
    questions = [c.metadata.get("question") for c in chunks]
    assert len(chunks) == 9 and all(questions)
    assert all(c.content.startswith(q) and c.content.count("?") == 1 for c, q in zip(chunks, questions, strict=True))
    assert questions[0] == "Como instalo o programa?" and "Windows 10" not in chunks[0].content
    assert chunks[3].content.startswith("Esqueci minha senha, e agora? Na tela de entrada")
    assert [c.metadata["section"] for c in chunks] == ["Instalação"] * 3 + ["Conta e acesso"] * 3 + [
        "Reservas e boletos"
    ] * 3
    # Without blank lines between the entries, and numbered.
    text = "1. Qual o horário da portaria?\nDas 6h às 22h.\n2. Posso receber encomendas à noite?\nNão, só até 22h."
    assert [c.content for c in chunk_text(text, RULES["faq"], count_tokens)] == [
        "Qual o horário da portaria? Das 6h às 22h.",
        "Posso receber encomendas à noite? Não, só até 22h.",
    ]


def test_a_manual_is_a_heading_section_a_chunk() -> None:
    """Issue 48 §1: a manual's sections are not merged (min_tokens 1) nor carried over (overlap 0)."""
    text = "\n\n".join(
        f"## Seção {i}\n\nPara usar o recurso {i}, abra o menu {i} e siga as instruções da tela." for i in range(1, 6)
    )
    chunks = chunk_text(text, RULES["manual"], count_tokens)
    assert [c.metadata["section"] for c in chunks] == [f"Seção {i}" for i in range(1, 6)]
    assert all(c.content.count("Para usar") == 1 for c in chunks)


CONTRACT = """CONTRATO DE LOCAÇÃO RESIDENCIAL

As partes abaixo identificadas têm entre si justo e contratado o seguinte.

CLÁUSULA PRIMEIRA – DO OBJETO
O LOCADOR dá em locação ao LOCATÁRIO o apartamento 302 do Edifício Aurora, para uso exclusivamente residencial.
Parágrafo único. É vedada a sublocação, total ou parcial, sem consentimento prévio e por escrito do LOCADOR.
CLÁUSULA SEGUNDA – DO PRAZO
A locação vigora por trinta meses, a contar da entrega das chaves.
CLÁUSULA 3ª – DO ALUGUEL
O aluguel mensal é de R$ 2.400,00, pago até o dia 5 de cada mês.
I - o atraso implica multa de 10% sobre o valor devido;
II - incidem juros de 1% ao mês sobre o valor em atraso.
CLÁUSULA DÉCIMA PRIMEIRA – DA DEVOLUÇÃO
Findo o prazo, o imóvel será devolvido nas condições da vistoria inicial.
"""


def test_a_contract_is_a_clause_a_chunk_whatever_its_type() -> None:
    """Issue 61 §3: CLÁUSULA headings (by ordinal word or number) cut a contract like articles,
    their "Parágrafo único" and items inside, even when it was given another source type."""
    assert cut_by_articles(CONTRACT) and not cut_by_articles("Conforme a Cláusula 3ª, o aluguel é de R$ 2.400,00.")
    chunks = chunk_text(CONTRACT, RULES["regulation"], count_tokens)
    assert [c.metadata.get("article") for c in chunks] == [
        None,
        "CLÁUSULA PRIMEIRA",
        "CLÁUSULA SEGUNDA",
        "CLÁUSULA 3ª",
        "CLÁUSULA DÉCIMA PRIMEIRA",
    ]
    assert "Parágrafo único" in chunks[1].content and "II - incidem juros" in chunks[3].content
    assert chunks[1].metadata.get("section") is None  # the clause's own title stays in its text
    assert chunks[1].content.startswith("CLÁUSULA PRIMEIRA – DO OBJETO")


def test_the_example_contract_is_a_clause_a_chunk() -> None:
    """The second paraphrase set's contract (examples/contrato-locacao): its preamble, then each of
    its 22 clauses a chunk, named as benchmarks/regulation.py --set contract judges them."""
    path = Path(__file__).parent.parent / "examples" / "contrato-locacao" / "contrato-de-locacao.txt"
    text = path.read_text(encoding="utf-8")
    assert cut_by_articles(text)
    named = [c.metadata.get("article") for c in chunk_text(text, RULES["regulation"], count_tokens)]
    rows = [json.loads(x) for x in (path.parent.parent / "perguntas-contrato.jsonl").read_text().splitlines()]
    judged = {r["article"] for r in rows if "article" in r}
    assert named[0] is None and len(named) == 23 and set(named[1:]) == judged


SPANISH_CONTRACT = """CONTRATO DE ARRENDAMIENTO DE VIVIENDA

CLÁUSULA PRIMERA – OBJETO
El arrendador cede en arrendamiento al arrendatario la vivienda situada en la calle Mayor 12.
CLÁUSULA SEGUNDA – DURACIÓN
El contrato tiene una duración de un año. ¿Se prorroga? Sí, por años hasta cinco.
CLÁUSULA TERCERA – RENTA
La renta mensual es de 900 euros, pagaderos en los cinco primeros días de cada mes.
CLÁUSULA SÉPTIMA – FIANZA
El arrendatario entrega una mensualidad de fianza.
"""


def test_documents_in_other_languages_are_cut_by_their_own_units() -> None:
    """Issue 59 §2: a Spanish regulation ("Artículo 5."), a Spanish contract ("CLÁUSULA TERCERA",
    "SÉPTIMA") and a Spanish FAQ ("¿…?", "Respuesta:") are cut as the Portuguese ones are; English,
    Italian and German articles count as articles; a sentence opening with "¿" is a sentence."""
    path = Path(__file__).parent.parent / "examples" / "reglamento-condominio" / "reglamento-interno.md"
    text = path.read_text(encoding="utf-8")
    assert cut_by_articles(text)
    named = [c.metadata.get("article") for c in chunk_text(text, RULES["regulation"], count_tokens)]
    rows = [json.loads(x) for x in (path.parent.parent / "preguntas-reglamento.jsonl").read_text().splitlines()]
    assert named[0] is None and named[1:] == [f"Artículo {i}" for i in range(1, 26)]
    assert {r["article"] for r in rows if "article" in r} <= set(named[1:])
    chunks = chunk_text(SPANISH_CONTRACT, RULES["regulation"], count_tokens)
    assert [c.metadata.get("article") for c in chunks] == [
        None,
        "CLÁUSULA PRIMERA",
        "CLÁUSULA SEGUNDA",
        "CLÁUSULA TERCERA",
        "CLÁUSULA SÉPTIMA",
    ]
    for article in ("Article 1", "Articolo 1", "Artikel 1"):
        doc = "\n\n".join(f"{article[:-1]}{i}. Text of rule {i}." for i in range(1, 4))
        assert cut_by_articles(doc), article
    faq = (
        "¿Cuál es el horario de la conserjería?\nRespuesta: De 6 a 22 h.\n\n"
        "Pregunta: ¿Puedo recibir paquetes de noche?\nNo."
    )
    assert [c.content for c in chunk_text(faq, RULES["faq"], count_tokens)] == [
        "¿Cuál es el horario de la conserjería? De 6 a 22 h.",
        "¿Puedo recibir paquetes de noche? No.",
    ]
    assert split_sentences("Está cerrado. ¿Abre mañana? ¡Sí! Ñandú llegó.") == [
        "Está cerrado.",
        "¿Abre mañana?",
        "¡Sí!",
        "Ñandú llegó.",
    ]


def test_the_example_faq_is_an_entry_a_chunk() -> None:
    """The FAQ paraphrase set (examples/faq-prefeitura, benchmarks/regulation.py --set faq): its 26
    entries, each a chunk named by its question, as the judged questions name them."""
    path = Path(__file__).parent.parent / "examples" / "faq-prefeitura" / "perguntas-frequentes.md"
    chunks = chunk_text(path.read_text(encoding="utf-8"), RULES["faq"], count_tokens)
    named = [c.metadata.get("question") for c in chunks]
    rows = [json.loads(x) for x in (path.parent.parent / "perguntas-faq-prefeitura.jsonl").read_text().splitlines()]
    assert len(named) == 26 and all(named) and {r["article"] for r in rows if "article" in r} == set(named)
    assert sum("article" in r for r in rows) == 78 and sum(r.get("kind") == "absent" for r in rows) == 12


def test_the_english_regulation_is_an_article_a_chunk() -> None:
    """The regulation written in English (examples/regulation-condominium, benchmarks/regulation.py
    --set english): "Article N." cuts it as "Art. Nº" cuts the Portuguese one."""
    path = Path(__file__).parent.parent / "examples" / "regulation-condominium" / "house-rules.md"
    named = [c.metadata.get("article") for c in chunk_text(path.read_text("utf-8"), RULES["regulation"], count_tokens)]
    rows = [json.loads(x) for x in (path.parent.parent / "questions-house-rules.jsonl").read_text().splitlines()]
    assert named[0] is None and named[1:] == [f"Article {i}" for i in range(1, 26)]
    assert {r["article"] for r in rows if "article" in r} <= set(named[1:])
