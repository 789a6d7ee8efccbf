"""PII through other encodings (issue 44 §3): a generated corpus of every value × encoding ×
separator goes through the scrubber (hipocampo.scrub_pii, what ingestion and messages use) and
the memory gate (remember's value check), and none of it is stored; FaQuAD and Quati ingest as
before (tests/test_ingest_scrub.py measures them)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from ..conftest import World

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]

# value, its groups as written, the kind
NUMBERS = [
    (["529", "982", "247", "25"], "CPF"),
    (["11", "222", "333", "0001", "81"], "CNPJ"),
    (["4111", "1111", "1111", "1111"], "CARTAO"),
    (["11", "98765", "4321"], "TELEFONE"),
]
DIGITS = {
    "ascii": "0123456789",
    "full-width": "０１２３４５６７８９",
    "arabic-indic": "٠١٢٣٤٥٦٧٨٩",
    "mathematical bold": "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗",
}
SEPARATORS = {
    "dot": ".",
    "en dash": "–",
    "em dash": "—",
    "figure dash": "‒",
    "underscore": "_",
    "markdown escape": "\\.",
    "table cell": " | ",
    "html tags": "</b>.<b>",
    "line break": "\n",
    "space": " ",
    "comma": ",",
}
EMAILS = [
    "carla.souza＠exemplo.com",
    "bruno.alves&#64;exemplo.com",
    "bruno.alves&#x40;exemplo.com",
    "mailto:diana.reis%40exemplo.com",
    "eduardo.melo @ exemplo.com",
    "fabio.lima&commat;exemplo.com.br",
]


def variants() -> Iterator[tuple[str, str, str]]:
    """(name, text, kind) for every number × digit script × separator, and the e-mails."""
    for groups, kind in NUMBERS:
        for script, digits in DIGITS.items():
            table = str.maketrans("0123456789", digits)
            for sep_name, sep in SEPARATORS.items():
                written = sep.join(g.translate(table) for g in groups)
                yield f"{kind} {script} {sep_name}", f"Dados: {written} fim.", kind
        if kind != "TELEFONE":  # one digit per line: the numbers with check digits
            for script, digits in DIGITS.items():
                written = "\n".join("".join(groups).translate(str.maketrans("0123456789", digits)))
                yield f"{kind} {script} one digit per line", f"Dados:\n{written}\nfim.", kind
    for email in EMAILS:
        yield f"EMAIL {email}", f"Escreva para {email} hoje.", "EMAIL"


CORPUS = list(variants())


def test_the_scrubber_reads_every_encoding(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    texts = [t for _, t, _ in CORPUS]
    rows = db.execute("select text, counts from hipocampo.scrub_pii(%s)", (texts,)).fetchall()
    missed = [
        (name, row["text"]) for (name, _, kind), row in zip(CORPUS, rows, strict=True) if kind not in row["counts"]
    ]
    print(f"PII encodings: {len(CORPUS) - len(missed)} of {len(CORPUS)} variants scrubbed")
    assert len(CORPUS) >= 150 and missed == []


# Numbers in prose that are not PII and must come out as they went in: commas and single digits
# that join page ranges, dates, amounts and lists.
NOT_PII = [
    "Pediatrics 85, 2444-2448 (1990).",
    "Published Jan 20, 2015, 195 patients were included.",
    "Valor do contrato: R$ 123.456.789,09 em 12 parcelas.",
    "Total of 1,234,567,890 reads.",
    "PD173074 (30−60 min) and 529,982,24 units.",
    "Notas:\n1\n2\n3\n4\n5\n6\n7\n8\n9\n1\n0",
    "Itens 3,4,5,6,7,8,9,10,11 e 12 do regulamento.",
]


@pytest.mark.parametrize("text", NOT_PII)
def test_numbers_that_are_not_pii_stay(db: Conn, world: World, text: str) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    row = db.execute("select text, counts from hipocampo.scrub_pii(%s)", ([text],)).fetchone()
    assert row == {"text": text, "counts": {}}


@pytest.mark.parametrize(
    "value",
    [
        {"doc": 52998224725},
        {"a": "529.982", "b": "247-25"},
        [5, 2, 9, 9, 8, 2, 2, 4, 7, 2, 5],
        {"cartao": "4111_1111_1111_1111"},
        {"cpf": "５２９.９８２.２４７–２５"},
        {"email": "carla.souza＠exemplo.com"},
    ],
)
def test_the_memory_gate_reads_through_json(db: Conn, world: World, value: Any) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    row = db.execute(
        "select hipocampo.remember('dados.doc', %s::jsonb, 'Um dado do usuário', 'preference') as r",
        (json.dumps(value),),
    ).fetchone()
    assert row is not None and row["r"]["status"] == "rejected" and row["r"]["reason"] == "personal_data", row
