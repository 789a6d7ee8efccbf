"""Writes examples/condominio/ (one file per format the loaders read) and examples/broken/ (files
they must refuse, each with one clear line): the folder the README's "Using it" ingests and
tests/test_readme.py runs. The files are committed; run this only to change them
(`.venv/bin/python examples/generate.py`; needs the dev extras: fpdf2, python-docx)."""

from __future__ import annotations

import json
from pathlib import Path

import docx
from fpdf import FPDF

HERE = Path(__file__).parent
GOOD = HERE / "condominio"
BAD = HERE / "broken"

REGIMENTO = """# Regimento Interno do Condomínio Sol

## Capítulo I - Do silêncio

Art. 1º O horário de silêncio vai das 22 horas às 8 horas, todos os dias.

Art. 2º Obras e mudanças só podem ser feitas de segunda a sábado, das 8 às 18 horas.

## Capítulo II - Das multas

Art. 11º A infração a este regimento é punida com advertência por escrito e, na reincidência,
com multa de 10% da taxa condominial.

Art. 12º O prazo de recurso contra multa é de 15 dias corridos, contados da notificação, e o
recurso é dirigido ao conselho consultivo, que decide em até 30 dias.
"""

FAQ = """<!doctype html><html lang="pt-BR"><head><title>Perguntas frequentes</title></head><body>
<h1>Perguntas frequentes</h1>
<h2>Piscina</h2><p>A piscina abre às 9 horas e fecha às 21 horas, de terça a domingo.</p>
<h2>Salão de festas</h2><p>O salão de festas é reservado pelo aplicativo com 7 dias de
antecedência e fecha à meia-noite.</p>
</body></html>
"""

ATA = """Ata da assembleia geral ordinária de 10 de março de 2026

Presentes 42 unidades. Aprovada por maioria a troca do portão da garagem, com orçamento de
R$ 38.000,00 dividido em 4 parcelas. Aprovada a contratação de vigilância noturna.
"""

CONTATOS = {
    "administradora": {"nome": "Administradora Horizonte", "atendimento": "segunda a sexta, 9h às 17h"},
    "portaria": {"ramal": "9", "turnos": ["diurno", "noturno"]},
    "zelador": {"nome": "Seu Raimundo", "folga": "domingo"},
}

MANUAL = [
    "Manual do morador",
    "Coleta de lixo: o lixo reciclável é recolhido às terças e sextas; o orgânico, todos os dias às 19 horas.",
    "Garagem: cada unidade tem uma vaga; visitantes estacionam nas vagas marcadas em amarelo por até 4 horas.",
]

POLITICA = [
    ("Política de animais de estimação", "Title"),
    ("Animais circulam nas áreas comuns apenas na coleira e pelo elevador de serviço.", None),
    ("Cães de grande porte usam focinheira nas áreas comuns.", None),
]


def main() -> None:
    GOOD.mkdir(exist_ok=True)
    BAD.mkdir(exist_ok=True)
    (GOOD / "regimento.md").write_text(REGIMENTO, encoding="utf-8")
    (GOOD / "faq.html").write_text(FAQ, encoding="utf-8")
    (GOOD / "ata-assembleia-2026-03.txt").write_text(ATA, encoding="utf-8")
    (GOOD / "contatos.json").write_text(json.dumps(CONTATOS, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    pdf = FPDF()
    pdf.set_title(MANUAL[0])
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    for line in MANUAL:
        pdf.multi_cell(0, 8, line)
        pdf.ln(2)
    pdf.output(str(GOOD / "manual-do-morador.pdf"))
    d = docx.Document()
    for text, style in POLITICA:
        d.add_paragraph(text, style=style)
    d.save(str(GOOD / "politica-animais.docx"))
    (BAD / "corrompido.pdf").write_bytes(b"%PDF-1.4\n1 0 obj <<>> endobj\n")
    (BAD / "vazio.txt").write_text("", encoding="utf-8")
    (BAD / "planilha.xlsx").write_bytes(b"PK\x03\x04 not a spreadsheet this loader reads")


if __name__ == "__main__":
    main()
