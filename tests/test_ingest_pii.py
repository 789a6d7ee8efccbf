"""PII scrub: typed placeholders, checksums, and no false positives on regulation text."""

from __future__ import annotations

import pytest

from hipocampo.ingest.pii import cnpj_is_valid, cpf_is_valid, luhn_is_valid, scrub


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CPF 529.982.247-25 do morador", "CPF [CPF] do morador"),
        ("cpf 52998224725.", "cpf [CPF]."),
        ("CNPJ 11.222.333/0001-81", "CNPJ [CNPJ]"),
        ("cnpj 11222333000181", "cnpj [CNPJ]"),
        ("RG 12.345.678-9 emitido", "[RG] emitido"),
        ("documento 12.345.678-9 emitido", "documento [RG] emitido"),
        ("RG nº 1234567 SSP", "[RG] SSP"),
        ("escreva para joao.silva+condo@exemplo.com.br hoje", "escreva para [EMAIL] hoje"),
        ("ligue (11) 98765-4321", "ligue [TELEFONE]"),
        ("ligue +55 11 98765-4321", "ligue [TELEFONE]"),
        ("ou 11 98765-4321", "ou [TELEFONE]"),
        ("fixo (21) 3456-7890", "fixo [TELEFONE]"),
        ("cartão 4111 1111 1111 1111 ok", "cartão [CARTAO] ok"),
        ("cartão 5555-5555-5555-4444", "cartão [CARTAO]"),
    ],
)
def test_replaces_pii(text: str, expected: str) -> None:
    assert scrub(text).text == expected


@pytest.mark.parametrize(
    "text",
    [
        "Art. 1234 do Regulamento, de 2019-2020.",
        "Processo 12345678901 com dígito inválido",  # 11 digits, bad CPF check digits
        "número 4111 1111 1111 1112 falha no Luhn",
        "prazo de 30 (trinta) dias, multa de R$ 1.500,00",
        "Decreto 2208 de 17 de abril de 1997",
    ],
)
def test_leaves_ordinary_numbers_alone(text: str) -> None:
    assert scrub(text).text == text


def test_counts_by_kind() -> None:
    res = scrub("a@b.com, c@d.org e CPF 529.982.247-25")
    assert dict(res.counts) == {"EMAIL": 2, "CPF": 1}
    assert res.total == 3


def test_checksums() -> None:
    assert cpf_is_valid("52998224725") and not cpf_is_valid("11111111111")
    assert cnpj_is_valid("11222333000181") and not cnpj_is_valid("11222333000180")
    assert luhn_is_valid("4111111111111111") and not luhn_is_valid("4111111111111112")
