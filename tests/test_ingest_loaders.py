"""Loaders for .txt .md .pdf .docx .json .html, and clear errors for bad files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hipocampo.errors import LoaderError
from hipocampo.ingest.loaders import load_path

pytestmark = pytest.mark.any_model

TEXT = "Art. 1º O horário de silêncio vai das 22h às 8h."


def test_txt_and_md(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(TEXT + "\r\n\r\n\r\n\r\nFim.", encoding="utf-8")
    (tmp_path / "b.md").write_text(f"# Regimento Interno\n\n{TEXT}\n", encoding="utf-8")
    a = load_path(tmp_path / "a.txt")[0]
    assert a.title == "a" and a.text == TEXT + "\n\nFim."
    b = load_path(tmp_path / "b.md")[0]
    assert b.title == "Regimento Interno" and TEXT in b.text


def test_latin1_text(tmp_path: Path) -> None:
    (tmp_path / "l.txt").write_bytes("Seção de matrícula".encode("latin-1"))
    assert load_path(tmp_path / "l.txt")[0].text == "Seção de matrícula"


def test_pdf(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.set_title("Regulamento PDF")
    pdf.multi_cell(0, 10, "Art. 1 O horario de silencio vai das 22h as 8h.")
    pdf.output(str(tmp_path / "r.pdf"))
    doc = load_path(tmp_path / "r.pdf")[0]
    assert doc.title == "Regulamento PDF" and "horario de silencio" in doc.text


def test_docx(tmp_path: Path) -> None:
    import docx

    d = docx.Document()
    d.core_properties.title = "Regimento DOCX"
    d.add_heading("Capítulo I", level=1)
    d.add_paragraph(TEXT)
    d.save(str(tmp_path / "r.docx"))
    doc = load_path(tmp_path / "r.docx")[0]
    assert doc.title == "Regimento DOCX" and "# Capítulo I" in doc.text and TEXT in doc.text


def test_docx_tables_keep_each_rows_header_in_reading_order(tmp_path: Path) -> None:
    """Issue 59 §1: a condominium fee table vanished without a warning (paragraphs only)."""
    import docx

    d = docx.Document()
    d.add_paragraph("Taxas de condomínio de 2026:")
    table = d.add_table(rows=3, cols=2)
    for r, (unit, fee) in enumerate([("Unidade", "Taxa"), ("302", "R$ 850,00"), ("401", "R$ 920,00")]):
        table.cell(r, 0).text, table.cell(r, 1).text = unit, fee
    d.add_paragraph("Vencimento no dia 10.")
    plain = d.add_table(rows=1, cols=3)
    plain.cell(0, 0).merge(plain.cell(0, 1)).text = "Síndico"
    plain.cell(0, 2).text = "Ana"
    d.save(str(tmp_path / "taxas.docx"))
    text = load_path(tmp_path / "taxas.docx")[0].text
    assert text == (
        "Taxas de condomínio de 2026:\n\nUnidade: 302 · Taxa: R$ 850,00\nUnidade: 401 · Taxa: R$ 920,00"
        "\n\nVencimento no dia 10.\n\nSíndico · Ana"
    )


def test_pdf_tables_keep_each_rows_header_in_reading_order(tmp_path: Path) -> None:
    """Issue 59 §1: a PDF's table came out as loose words ("302 R$ 850,00", headers lost)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.multi_cell(0, 8, "Taxas de condominio de 2026.")
    with pdf.table() as table:
        for unit, fee in [("Unidade", "Taxa"), ("302", "R$ 850,00"), ("401", "R$ 920,00")]:
            row = table.row()
            row.cell(unit)
            row.cell(fee)
    pdf.multi_cell(0, 8, "Multa por atraso: 2% ao mes.")
    pdf.output(str(tmp_path / "taxas.pdf"))
    text = load_path(tmp_path / "taxas.pdf")[0].text
    assert text == (
        "Taxas de condominio de 2026.\nUnidade: 302 · Taxa: R$ 850,00\nUnidade: 401 · Taxa: R$ 920,00\n"
        "Multa por atraso: 2% ao mes."
    )


def _notice_pdf(path: Path, lines: list[str]) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=16)
    for line in lines:
        pdf.multi_cell(0, 10, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def _render(pdf_path: Path, dpi: int = 200) -> Any:
    import pypdfium2

    doc = pypdfium2.PdfDocument(str(pdf_path))
    try:
        return doc[0].render(scale=dpi / 72).to_pil().convert("RGB")
    finally:
        doc.close()


NOTICE = ["AVISO AOS MORADORES", "A piscina estara fechada para limpeza", "na segunda-feira, das 8h as 12h."]


def test_a_scanned_pdf_page_is_read_by_ocr(tmp_path: Path) -> None:
    """Issue 59 §1: a page without a text layer was read as nothing. A page is rendered to an
    image and back into a PDF (a scan), and OCR reads it; the document records the page and the
    confidence."""
    _notice_pdf(tmp_path / "texto.pdf", NOTICE)
    _render(tmp_path / "texto.pdf").save(tmp_path / "digitalizado.pdf")
    doc = load_path(tmp_path / "digitalizado.pdf")[0]
    words = " ".join(doc.text.split()).lower()
    assert "aviso aos moradores" in words and "piscina" in words and "limpeza" in words, doc.text
    assert doc.metadata["ocr"]["pages"] == [1] and doc.metadata["ocr"]["confidence"] > 70


def test_a_photo_of_a_notice_is_read_by_ocr(tmp_path: Path) -> None:
    _notice_pdf(tmp_path / "aviso.pdf", NOTICE)
    _render(tmp_path / "aviso.pdf").save(tmp_path / "foto-do-aviso.jpg", quality=85)
    doc = load_path(tmp_path / "foto-do-aviso.jpg")[0]
    assert doc.title == "foto-do-aviso" and "piscina" in doc.text.lower(), doc.text
    assert doc.metadata["ocr"] == {"pages": [1], "confidence": doc.metadata["ocr"]["confidence"]}
    assert load_path(tmp_path / "aviso.pdf")[0].metadata["ocr"] is None  # a text layer needs no OCR


def test_html(tmp_path: Path) -> None:
    (tmp_path / "r.html").write_text(
        f"<html><head><title>FAQ</title><script>x=1</script></head><body><h1>Regras</h1><p>{TEXT}</p></body></html>",
        encoding="utf-8",
    )
    doc = load_path(tmp_path / "r.html")[0]
    assert doc.title == "FAQ" and TEXT in doc.text and "x=1" not in doc.text


def test_json_list_and_squad(tmp_path: Path) -> None:
    (tmp_path / "l.json").write_text(json.dumps([{"title": "T1", "text": TEXT, "author": "Síndico"}]), "utf-8")
    docs = load_path(tmp_path / "l.json")
    assert docs[0].title == "T1" and docs[0].metadata == {"author": "Síndico"}
    squad = {"data": [{"title": "REG_GERAL", "paragraphs": [{"context": "p1", "qas": []}, {"context": "p2"}]}]}
    (tmp_path / "s.json").write_text(json.dumps(squad), "utf-8")
    doc = load_path(tmp_path / "s.json")[0]
    assert doc.title == "REG GERAL" and doc.text == "p1\n\np2"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("x.xlsx", b"PK", "unsupported file type .xlsx"),
        ("bad.pdf", b"%PDF-1.4 garbage", "not a readable PDF"),
        ("bad.docx", b"not a zip", "not a readable DOCX"),
        ("bad.json", b"{oops", "invalid JSON"),
        ("empty.txt", b"   \n ", "no text found"),
        # issue 58 §3: binary content is not text whatever the extension says
        ("foto.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR binary", r"the content is image/png \(\.png\), not text"),
        ("arquivo.md", b"PK\x03\x04\x14\x00\x06\x00" + b"\x00" * 40, r"the content is application/zip"),
        ("dados.json", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", r"the content is application/pdf"),
        ("dump.txt", b"abc\x00\x01\x02def", r"binary content \(NUL bytes\), not text"),
    ],
)
def test_bad_files(tmp_path: Path, name: str, content: bytes, message: str) -> None:
    (tmp_path / name).write_bytes(content)
    with pytest.raises(LoaderError, match=message):
        load_path(tmp_path / name)


def test_utf16_text_with_its_bom_is_text(tmp_path: Path) -> None:
    (tmp_path / "ata.txt").write_bytes("Ata da assembleia: aprovado.".encode("utf-16"))
    assert load_path(tmp_path / "ata.txt")[0].text == "Ata da assembleia: aprovado."


def test_ordinary_json_becomes_readable_lines(tmp_path: Path) -> None:
    """Issue 19 §1.3: objects without text/content/body were refused ("no text found")."""
    data = {
        "title": "Áreas comuns",
        "piscina": {"abre": "9h", "fecha": "21h"},
        "regras": ["sem vidro", "touca obrigatória"],
        "salas": [{"nome": "Salão", "capacidade": 80}],
    }
    (tmp_path / "areas.json").write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    doc = load_path(tmp_path / "areas.json")[0]
    assert doc.title == "Áreas comuns"
    assert doc.text.splitlines() == [
        "piscina.abre: 9h",
        "piscina.fecha: 21h",
        "regras: sem vidro; touca obrigatória",
        "salas[1].nome: Salão",
        "salas[1].capacidade: 80",
    ]
    (tmp_path / "lista.json").write_text(json.dumps(["primeira regra", "segunda regra"]), "utf-8")
    assert load_path(tmp_path / "lista.json")[0].text == "primeira regra\nsegunda regra"
