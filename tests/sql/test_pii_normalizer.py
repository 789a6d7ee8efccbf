"""PII found by a mechanism, not a list (issue 57 §5): one generated set of encodings goes through
the three write paths, ingestion (ingest_document's chunks and document title), the memory gate
(remember's value and description) and messages (add_message), and none of it is stored. The
encodings are the attacks that got through: invisible characters between digits, other spaces,
superscript / subscript / circled / keycap digits, HTML entities, other scripts' digits, any
separator, an HTML comment, single digits, O and l for 0 and 1, numbers spelled out, base64, hex,
percent-encoding, the alphanumeric CNPJ and e-mails written with spaces or words."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from ..conftest import MODEL, World, unit_vector
from .test_conversations import add

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]

# kind, the value as usually written (its digit groups split by "." "-" "/" or " ")
NUMBERS = [
    ("CPF", "529.982.247-25"),
    ("CPF", "123.456.789-09"),
    ("CNPJ", "11.222.333/0001-81"),
    ("CARTAO", "4111 1111 1111 1111"),
]
SUPERSCRIPT = "⁰¹²³⁴⁵⁶⁷⁸⁹"
SUBSCRIPT = "₀₁₂₃₄₅₆₇₈₉"
CIRCLED = "⓪①②③④⑤⑥⑦⑧⑨"
BENGALI = "০১২৩৪৫৬৭৮৯"
THAI = "๐๑๒๓๔๕๖๗๘๙"
WORDS_PT = ["zero", "um", "dois", "três", "quatro", "cinco", "seis", "sete", "oito", "nove"]
WORDS_EN = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def groups_of(value: str) -> list[str]:
    return [g for g in value.replace(".", " ").replace("-", " ").replace("/", " ").split()]


def digits_in(table: str) -> Callable[[str], str]:
    return lambda value: value.translate(str.maketrans("0123456789", table))


def between_digits(mark: str) -> Callable[[str], str]:
    return lambda value: mark.join("".join(groups_of(value)))


def between_groups(sep: str) -> Callable[[str], str]:
    return lambda value: sep.join(groups_of(value))


def after_each_digit(mark: str) -> Callable[[str], str]:
    return lambda value: "".join(c + mark if c.isdigit() else c for c in value)


def with_comment(value: str) -> str:
    g = groups_of(value)
    return ".".join(g[:2]) + "<!-- revisar -->." + ".".join(g[2:])


def letters_for_digits(value: str) -> str:
    return value.replace("0", "O").replace("1", "l")


def spelled(words: list[str]) -> Callable[[str], str]:
    return lambda value: " ".join(words[int(c)] for c in value if c.isdigit())


ENCODINGS: dict[str, Callable[[str], str]] = {
    "LRM between digits": between_digits("\u200e"),
    "RLM between digits": between_digits("\u200f"),
    "U+2063 between digits": between_digits("\u2063"),
    "U+034F after each digit": after_each_digit("\u034f"),
    "U+180E between groups": between_groups("\u180e"),
    "zero-width space between digits": between_digits("\u200b"),
    "hair space": between_groups("\u200a"),
    "em space": between_groups("\u2003"),
    "superscript": digits_in(SUPERSCRIPT),
    "subscript": digits_in(SUBSCRIPT),
    "circled": digits_in(CIRCLED),
    "keycap emoji": after_each_digit("\ufe0f\u20e3"),
    "decimal entities": lambda v: "".join(f"&#{ord(c)};" if c.isdigit() else c for c in v),
    "hex entities": lambda v: "".join(f"&#x{ord(c):x};" if c.isdigit() else c for c in v),
    "entity separators": lambda v: v.replace(".", "&period;").replace("-", "&hyphen;").replace("/", "&sol;"),
    "Bengali digits": digits_in(BENGALI),
    "Thai digits": digits_in(THAI),
    "apostrophes": between_groups("'"),
    "colons": between_groups(":"),
    "middle dots": between_groups("·"),
    "asterisks": between_groups("*"),
    "HTML comment": with_comment,
    "a space between every digit": between_digits(" "),
    "O and l for 0 and 1": letters_for_digits,
    "spelled in Portuguese": spelled(WORDS_PT),
    "spelled in English": spelled(WORDS_EN),
    "base64": lambda v: base64.b64encode(v.encode()).decode(),
    "hex": lambda v: v.encode().hex(),
    "percent-encoded separators": lambda v: v.replace(".", "%2E").replace("-", "%2D").replace("/", "%2F"),
    "percent-encoded": lambda v: "".join(f"%{ord(c):02X}" for c in v),
}
# A mobile number has no check digit: it counts with the separators phone numbers are written with.
PHONE = ("TELEFONE", "(11) 98765-4321")
PHONE_ENCODINGS = [
    "LRM between digits",
    "U+2063 between digits",
    "zero-width space between digits",
    "hair space",
    "superscript",
    "circled",
    "keycap emoji",
    "decimal entities",
    "Bengali digits",
    "Thai digits",
    "spelled in Portuguese",
    "percent-encoded",
]
# The alphanumeric CNPJ (from July 2026): twelve digits or capitals, two check digits.
ALPHANUMERIC_CNPJS = ["12.ABC.345/01DE-35", "10.MMQ.004/0BCL-40", "81.RZX.845/0QUY-84"]
CNPJ_WRITINGS: dict[str, Callable[[str], str]] = {
    "formatted": lambda v: v,
    "bare": lambda v: "".join(groups_of(v)),
    "bare, lower case": lambda v: "".join(groups_of(v)).lower(),
    "full-width": lambda v: v.translate({c: c + 0xFEE0 for c in range(0x21, 0x7F)}),
    "spaces between groups": between_groups(" "),
    "zero-width spaces": lambda v: "\u200b".join(v),
    "percent-encoded separators": lambda v: v.replace(".", "%2E").replace("-", "%2D").replace("/", "%2F"),
}
EMAILS = [
    "nome at exemplo dot com",
    "nome @ exemplo . com",
    "nome arroba exemplo ponto com ponto br",
    "nome&#64;exemplo.com",
    "nome%40exemplo.com",
    "ｎｏｍｅ＠ｅｘｅｍｐｌｏ．ｃｏｍ",
    "nome\u200b@\u200bexemplo.com",
    "nome@exemplo\u2063.com",
    base64.b64encode(b"nome@exemplo.com").decode(),
]


def variants() -> Iterator[tuple[str, str, str]]:
    """(name, text, kind) for every number × encoding, the phone's, the alphanumeric CNPJs' and
    the e-mails'."""
    for kind, value in NUMBERS:
        for name, encode in ENCODINGS.items():
            if name == "O and l for 0 and 1" and not any(c in value for c in "01"):
                continue
            yield f"{kind} {value} {name}", f"Dados: {encode(value)} fim.", kind
    kind, value = PHONE
    for name in PHONE_ENCODINGS:
        yield f"{kind} {name}", f"Ligue {ENCODINGS[name](value)} hoje.", kind
    for value in ALPHANUMERIC_CNPJS:
        for name, write in CNPJ_WRITINGS.items():
            yield f"CNPJ {value} {name}", f"Empresa {write(value)} ativa.", "CNPJ"
    for email in EMAILS:
        yield f"EMAIL {email}", f"Escreva para {email} hoje.", "EMAIL"


CORPUS = list(variants())


def test_the_corpus_has_the_encodings_of_the_issue() -> None:
    assert len(CORPUS) >= 150


def test_the_scrubber_reads_every_encoding(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = db.execute("select text, counts from hipocampo.scrub_pii(%s)", ([t for _, t, _ in CORPUS],)).fetchall()
    missed = [(n, r["text"]) for (n, _, kind), r in zip(CORPUS, rows, strict=True) if kind not in r["counts"]]
    print(f"PII normalizer: {len(CORPUS) - len(missed)} of {len(CORPUS)} variants scrubbed")
    assert missed == []


def test_ingestion_stores_none_of_them(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    chunks = [
        {"chunk_index": i, "content": text, "token_count": 5, "content_hash": f"h{i}", "embedding": unit_vector(i)}
        for i, (_, text, _) in enumerate(CORPUS)
    ]
    doc = {
        "title": "Cadastro de 5\u200b29.982.247-25",
        "source_uri": "file:///importados/5%E2%80%8B29%2E982%2E247%2D25.pdf",
        "content_hash": "normalizer",
        "source_type": "other",
    }
    db.execute(
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
        (world.kb_a, json.dumps(doc), json.dumps(chunks), MODEL),
    )
    stored = db.execute(
        "select c.chunk_index, c.content, c.fts::text as fts, d.title, d.source_uri"
        " from hipocampo_private.chunks as c join hipocampo_private.documents as d on d.id = c.document_id"
        " where d.content_hash = 'normalizer' order by c.chunk_index"
    ).fetchall()
    assert len(stored) == len(CORPUS)
    missed = [n for (n, _, kind), row in zip(CORPUS, stored, strict=True) if f"[{kind}]" not in row["content"]]
    assert missed == []
    assert stored[0]["title"] == "Cadastro de [CPF]"
    assert stored[0]["source_uri"] == "file:///importados/[CPF].pdf"


def test_the_memory_gate_refuses_every_one(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    stored = []
    for name, text, _ in CORPUS:
        for value, description in ((text, "Um dado do usuário"), ("sim", f"O usuário disse: {text}")):
            row = db.execute(
                "select hipocampo.remember('dados.doc', %s::jsonb, %s, 'preference') as r",
                (json.dumps(value), description),
            ).fetchone()
            assert row is not None
            if (row["r"]["status"], row["r"].get("reason")) != ("rejected", "personal_data"):
                stored.append((name, row["r"]))
    assert stored == []


def test_messages_store_none_of_them(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    conversation = uuid.uuid4()
    ids = [add(db, conversation, "user", text) for _, text, _ in CORPUS]
    rows = db.execute(
        "select id, content from hipocampo_private.messages where id = any(%s) order by id", (ids,)
    ).fetchall()
    by_id = {r["id"]: r["content"] for r in rows}
    missed = [n for (n, _, kind), i in zip(CORPUS, ids, strict=True) if f"[{kind}]" not in by_id[i]]
    assert missed == []


# What the normalizer must not take for PII: prose, amounts, identifiers and text of other scripts.
NOT_PII = [
    "This trial was registered at clinicaltrials.gov as NCT00970866.",
    "one SNP in the DBP, rs4588, was associated with 1,25(OH)2D",
    "Ação, coração e ﬁm: o texto volta como veio, com ＠ e ½.",
    "H2O e CO2 a 25 °C; lote l0 e O1.",
    "हिंदी में पाठ १२३ और ภาษาไทย ๑๒๓",
    "Um dois três, quatro cinco seis: a contagem para.",
    "Token de exemplo: QWxhZGRpbjpvcGVuIHNlc2FtZQ== (não é PII).",
    "Hash sha1 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 do arquivo.",
    "50%25 de desconto em https://exemplo.org/a%20b?x=1",
    # UUIDs whose digit runs the phone rule read before (1 % of random ones)
    "Pedido 90e32e82-3945-4353-8cde-ce75921ebce6 e 8d103fa1-5b35-4769-8361-442e82116c71.",
    "ids: 23ec7597-9615-432e-b1b5-ff55819e0387, 419def82-2154-4354-a5f9-672969617062",
]


@pytest.mark.parametrize("text", NOT_PII)
def test_what_is_not_pii_comes_back_as_it_went_in(db: Conn, world: World, text: str) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    row = db.execute("select text, counts from hipocampo.scrub_pii(%s)", ([text],)).fetchone()
    assert row == {"text": text, "counts": {}}


def test_a_text_with_pii_comes_back_normalized_and_scrubbed(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    row = db.execute(
        "select text, counts from hipocampo.scrub_pii(%s)", (["Ｃｌｉｅｎｔｅ ৫২৯.৯৮২.২৪৭-২৫, ﬁm."],)
    ).fetchone()
    assert row == {"text": "Cliente [CPF], fim.", "counts": {"CPF": 1}}


def test_uuids_are_not_phone_numbers(db: Conn, world: World) -> None:
    """A phone number glued to a letter (or by a hyphen to a hexadecimal group with one) is part of
    an identifier, and so is a UUID of digits: none of 2,000 random UUIDs nor of 2,000 made mostly
    of digits is scrubbed (1 % were: a message's cited document id came back as
    3fd33a[TELEFONE]-…), alone, in prose, or as a message's metadata; a phone number written as
    people write it still is."""
    import random

    rnd = random.Random(61)
    ids = [str(uuid.UUID(int=rnd.getrandbits(128), version=4)) for _ in range(2000)]
    # UUIDs made mostly of digits: their phone-shaped runs end at a hyphen before a group with a
    # letter, or at both ends of the UUID ("0e4a5b6c-5512-4345-9123-…" read as +55 12 4345-9123)
    digits = [
        str(uuid.UUID("".join(rnd.choice("0123456789" * 9 + "abcdef") for _ in range(32)), version=4))
        for _ in range(2000)
    ] + ["0e4a5b6c-5512-4345-9123-112345678901", "12345678-5512-4345-9123-112345678901"]
    world.act("authenticated", world.member_a, world.tenant_a)
    for batch in (ids, digits, [f"id {x} ok" for x in digits]):
        rows = db.execute("select text from hipocampo.scrub_pii(%s)", (batch,)).fetchall()
        assert [r["text"] for r in rows] == batch
    row = db.execute(
        "select text from hipocampo.scrub_pii(%s)",
        (["Ligue (11) 98765-4321 ou 11 3456-7890, fone-11 98765-4321."],),
    ).fetchone()
    assert row is not None and row["text"] == "Ligue [TELEFONE] ou [TELEFONE], fone-[TELEFONE]."
    conversation = uuid.uuid4()
    mid = add(
        db,
        conversation,
        "assistant",
        "Resposta.",
        metadata=json.dumps({"sources": [{"document_id": ids[0]}], "ids": ids[:50]}),
    )
    meta = db.execute("select metadata from hipocampo_private.messages where id = %s", (mid,)).fetchone()
    assert (
        meta is not None
        and meta["metadata"]["ids"] == ids[:50]
        and meta["metadata"]["sources"][0]["document_id"] == ids[0]
    )
