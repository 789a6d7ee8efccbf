"""The one PII scrubber (hipocampo.scrub_pii / _pii_scrub) on a table of
Brazilian PII variants and of ordinary numbers it must leave alone (issue 16 §1.5).

The rows marked "missed before" are the 27 of the 58 PII rows in which hipocampo.ingest.pii (the
Python scrubber it replaced) left PII in place (two more differ only in that it kept the NBSP
and the state prefix of an RG it replaced). Every row runs as a signed-in member, as the RPC is
called.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from ..conftest import World

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]

NBSP = "\u00a0"

# (text as written, scrubbed text, counts)
PII: list[tuple[str, str, dict[str, int]]] = [
    # CPF
    ("CPF 529.982.247-25 do morador", "CPF [CPF] do morador", {"CPF": 1}),
    ("cpf 52998224725.", "cpf [CPF].", {"CPF": 1}),
    ("CPF 529 982 247 25", "CPF [CPF]", {"CPF": 1}),  # missed before: spaces
    ("CPF 529.982.247.25", "CPF [CPF]", {"CPF": 1}),  # missed before: dots only
    ("CPF 529982247-25", "CPF [CPF]", {"CPF": 1}),  # missed before: dash only
    (f"CPF 529{NBSP}982{NBSP}247{NBSP}25", "CPF [CPF]", {"CPF": 1}),  # missed before: NBSP
    (f"CPF 529.982.247-25{NBSP}ok", "CPF [CPF] ok", {"CPF": 1}),
    ("CPF 529.982.\n247-25", "CPF [CPF]", {"CPF": 1}),  # missed before: broken across a line
    ("CPF 529.982.247-\n25", "CPF [CPF]", {"CPF": 1}),  # missed before: broken across a line
    ("nascido em 1990 529.982.247-25", "nascido em 1990 [CPF]", {"CPF": 1}),
    ("CPF: 111.444.777-35; outro 52998224725", "CPF: [CPF]; outro [CPF]", {"CPF": 2}),
    # CNPJ
    ("CNPJ 11.222.333/0001-81", "CNPJ [CNPJ]", {"CNPJ": 1}),
    ("cnpj 11222333000181", "cnpj [CNPJ]", {"CNPJ": 1}),
    ("CNPJ 11 222 333 0001 81", "CNPJ [CNPJ]", {"CNPJ": 1}),  # missed before: spaces
    ("CNPJ 11.222.333/\n0001-81", "CNPJ [CNPJ]", {"CNPJ": 1}),  # missed before: broken across a line
    ("CNPJ 11.222.333/0001-\n81 ativo", "CNPJ [CNPJ] ativo", {"CNPJ": 1}),  # missed before
    # RG
    ("RG 12.345.678-9 emitido", "[RG] emitido", {"RG": 1}),
    ("documento 12.345.678-9 emitido", "documento [RG] emitido", {"RG": 1}),
    ("RG nº 1234567 SSP", "[RG] SSP", {"RG": 1}),
    ("RG: 12.345.678-X", "[RG]", {"RG": 1}),
    ("identidade MG-12.345.678 emitida", "identidade [RG] emitida", {"RG": 1}),  # missed before: state prefix
    ("identidade SP 12.345.678-X", "identidade [RG]", {"RG": 1}),
    ("identidade RJ-12345678-9", "identidade [RG]", {"RG": 1}),  # missed before: state prefix
    # e-mail
    ("escreva para joao.silva+condo@exemplo.com.br hoje", "escreva para [EMAIL] hoje", {"EMAIL": 1}),
    ("MARIA_S@EXEMPLO.ORG", "[EMAIL]", {"EMAIL": 1}),
    ("joao.silva@exem-\nplo.com.br hoje", "[EMAIL] hoje", {"EMAIL": 1}),  # missed before: broken across a line
    ("joao.silva@\nexemplo.com.br hoje", "[EMAIL] hoje", {"EMAIL": 1}),  # missed before: broken across a line
    ("joao.silva\n@exemplo.com.br hoje", "[EMAIL] hoje", {"EMAIL": 1}),  # missed before: broken across a line
    ("joao.\nsilva@exemplo.com hoje", "[EMAIL] hoje", {"EMAIL": 1}),  # missed before: broken across a line
    ("joao[at]exemplo[dot]com", "[EMAIL]", {"EMAIL": 1}),  # missed before: spelled out
    ("joao (at) exemplo (dot) com (dot) br", "[EMAIL]", {"EMAIL": 1}),  # missed before: spelled out
    ("joao arroba exemplo ponto com", "[EMAIL]", {"EMAIL": 1}),  # missed before: spelled out
    ("joao [arroba] exemplo.com.br", "[EMAIL]", {"EMAIL": 1}),  # missed before: spelled out
    ("root@[192.168.0.1] ok", "[EMAIL] ok", {"EMAIL": 1}),  # missed before: user@[ip]
    # phone
    ("ligue (11) 98765-4321", "ligue [TELEFONE]", {"TELEFONE": 1}),
    ("ligue +55 11 98765-4321", "ligue [TELEFONE]", {"TELEFONE": 1}),
    ("ou 11 98765-4321", "ou [TELEFONE]", {"TELEFONE": 1}),
    ("fixo (21) 3456-7890", "fixo [TELEFONE]", {"TELEFONE": 1}),
    ("fixo 21 3456-7890", "fixo [TELEFONE]", {"TELEFONE": 1}),  # missed before: no parenthesis
    ("cel 98765-4321", "cel [TELEFONE]", {"TELEFONE": 1}),
    ("tel 11987658888", "tel [TELEFONE]", {"TELEFONE": 1}),  # missed before: bare
    ("tel 55 11 987655555", "tel [TELEFONE]", {"TELEFONE": 1}),  # missed before: country code, no +
    ("tel +55 11 9 8765 4444", "tel [TELEFONE]", {"TELEFONE": 1}),  # missed before: spaced
    ("tel 011 98765 3333", "tel [TELEFONE]", {"TELEFONE": 1}),  # missed before: trunk prefix
    ("tel +5511987652222", "tel [TELEFONE]", {"TELEFONE": 1}),
    ("tel (11)\n98765-1111", "tel [TELEFONE]", {"TELEFONE": 1}),
    # card
    ("cartão 4111 1111 1111 1111 ok", "cartão [CARTAO] ok", {"CARTAO": 1}),
    ("cartão 5555-5555-5555-4444", "cartão [CARTAO]", {"CARTAO": 1}),
    ("cartão 4111111111111111", "cartão [CARTAO]", {"CARTAO": 1}),
    ("cartão 4111.1111.1111.1111", "cartão [CARTAO]", {"CARTAO": 1}),  # missed before: dots
    ("cartão 4111 1111\n1111 1111", "cartão [CARTAO]", {"CARTAO": 1}),  # missed before: broken across a line
    ("amex 3782 822463 10005", "amex [CARTAO]", {"CARTAO": 1}),
    # file names and URIs
    ("contrato_529.982.247-25.pdf", "contrato_[CPF].pdf", {"CPF": 1}),
    ("file:///docs/contrato_52998224725_joao@exemplo.com.txt", "file:///docs/[EMAIL]", {"EMAIL": 1}),
    ("https://x.example/u/52998224725/extrato", "https://x.example/u/[CPF]/extrato", {"CPF": 1}),
    # several kinds
    ("a@b.com, c@d.org e CPF 529.982.247-25", "[EMAIL], [EMAIL] e CPF [CPF]", {"EMAIL": 2, "CPF": 1}),
    ("CPF 529.982.247-25 tel (11) 98765-4321", "CPF [CPF] tel [TELEFONE]", {"CPF": 1, "TELEFONE": 1}),
    # already scrubbed: idempotent
    ("CPF [CPF] e [EMAIL]", "CPF [CPF] e [EMAIL]", {}),
]

ORDINARY = [
    "Art. 1234 do Regulamento, de 2019-2020.",
    "Processo 12345678901 com dígito inválido",  # 11 digits, bad CPF check digits, no phone shape
    "número 4111 1111 1111 1112 falha no Luhn",
    "prazo de 30 (trinta) dias, multa de R$ 1.500,00",
    "Decreto 2208 de 17 de abril de 1997",
    "em 12/03/2024 às 10:30",
    "ata de 15.03.2024, versão 2.3.1 de 2024-03-12",
    "CEP 01310-100",
    "Lei nº 13.709/2018 (LGPD), art. 5º, inciso X",
    "R$ 1.234.567,89 e R$ 12.345,00",
    "ISBN 978-85-7522-408-3",
    "processo 0001234-56.2020.8.26.0100",
    "de 1990 a 2000, 2010 e 2020",
    "tabela 1 2 3 4 5 6 7 8 9 10 11 12 13",
    "matrícula 2024001234 no semestre 2024.1",
    "código 12345-678",
    "siga @fulano.silva no aplicativo",
    "1.000.000 de habitantes em 2.500 km²",
    "11 de setembro de 2001 às 9h",
]


@pytest.fixture
def member(db: Conn, world: World) -> Conn:
    world.act("authenticated", world.member_a, world.tenant_a)
    return db


@pytest.mark.parametrize(("text", "expected", "counts"), PII, ids=[r[0][:40] for r in PII])
def test_replaces_pii(member: Conn, text: str, expected: str, counts: dict[str, int]) -> None:
    row = member.execute("select text, counts from hipocampo.scrub_pii(array[%s])", (text,)).fetchone()
    assert row == {"text": expected, "counts": counts}


@pytest.mark.parametrize("text", ORDINARY)
def test_leaves_ordinary_numbers_alone(member: Conn, text: str) -> None:
    row = member.execute("select text, counts from hipocampo.scrub_pii(array[%s])", (text,)).fetchone()
    assert row == {"text": text, "counts": {}}


def test_keeps_order_and_nulls(member: Conn) -> None:
    rows = member.execute("select text, counts from hipocampo.scrub_pii(array['a@b.com', null, 'ok'])").fetchall()
    assert rows == [
        {"text": "[EMAIL]", "counts": {"EMAIL": 1}},
        {"text": None, "counts": {}},
        {"text": "ok", "counts": {}},
    ]


def test_checksums(member: Conn) -> None:
    checks = [
        ("cpf", "52998224725", True),
        ("cpf", "11111111111", False),
        ("cnpj", "11222333000181", True),
        ("cnpj", "11222333000180", False),
        ("luhn", "4111111111111111", True),
        ("luhn", "4111111111111112", False),
    ]
    for kind, digits, valid in checks:
        row = member.execute(f"select hipocampo_private.{kind}_is_valid(%s) as v", (digits,)).fetchone()
        assert row == {"v": valid}, (kind, digits)


def test_stored_documents_and_chunks_are_scrubbed_whoever_writes_them(db: Conn, world: World) -> None:
    """A direct INSERT (no RPC, no Python scrub) still stores and indexes scrubbed text."""
    db.execute(
        "insert into hipocampo_private.documents (tenant_id, kb_id, title, source_uri, content_hash)"
        " values (%s, %s, 'contrato 529.982.247-25', 'file:///contrato_52998224725.txt', 'h') returning id",
        (world.tenant_a, world.kb_a),
    )
    row = db.execute(
        "select title, source_uri from hipocampo_private.documents where kb_id = %s and content_hash = 'h'",
        (world.kb_a,),
    ).fetchone()
    assert row == {"title": "contrato [CPF]", "source_uri": "file:///contrato_[CPF].txt"}
    world.act("service_role")
    doc = world.ingest(
        world.kb_a,
        "pii",
        ["Falar com joao@exemplo.com, CPF 529 982 247 25, tel 11987658888."],
        metadata={"title": "contrato 529.982.247-25", "page": 1},
    )
    db.execute("reset role")
    row = db.execute(
        "select content, metadata, fts::text as fts from hipocampo_private.chunks where document_id = %s", (doc,)
    ).fetchone()
    assert row is not None
    assert row["content"] == "Falar com [EMAIL], CPF [CPF], tel [TELEFONE]."
    assert row["metadata"] == {"title": "contrato [CPF]", "page": 1}
    for raw in ("529", "982", "52998224725", "joao", "11987658888"):
        assert raw not in row["fts"]
    db.execute(
        "insert into hipocampo_private.ingestion_jobs (tenant_id, kb_id, status, errors)"
        """ values (%s, %s, 'failed', '[{"source_uri": "file:///cpf_52998224725.pdf"}]')""",
        (world.tenant_a, world.kb_a),
    )
    errors = db.execute(
        "select errors from hipocampo_private.ingestion_jobs where kb_id = %s and status = 'failed'", (world.kb_a,)
    ).fetchone()
    assert errors == {"errors": [{"source_uri": "file:///cpf_[CPF].pdf"}]}
