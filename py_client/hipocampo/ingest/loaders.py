"""File loaders: .txt, .md, .pdf (pypdf; pdfplumber for pages with tables; OCR for pages without
a text layer), .docx (python-docx, tables included), .json, .html (BeautifulSoup), .png / .jpg
(OCR: Tesseract, :mod:`hipocampo.ingest.ocr`).

Each returns :class:`LoadedDocument` objects; a JSON file may hold several documents (SQuAD
format like FaQuAD's ``dataset.json``, a list of objects, or one object). An object's text is its
``text`` / ``content`` / ``body`` (or SQuAD ``paragraphs``); any other object becomes readable
``key: value`` lines (nested keys dotted, ``horario.abre: 9h``; lists of values joined by "; ";
lists of objects numbered, ``salas[2].nome: Salão``), and a list of plain values one document with
a line per value.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LoaderError

__all__ = ["SUPPORTED_SUFFIXES", "LoadedDocument", "load_path", "normalize_text"]

SUPPORTED_SUFFIXES = (".txt", ".md", ".pdf", ".docx", ".json", ".html", ".htm", ".png", ".jpg", ".jpeg")
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
_OCR_DPI = 300
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass
class LoadedDocument:
    """One document: ``title``, plain ``text`` and where it came from (``source_uri``)."""

    title: str
    text: str
    source_uri: str
    metadata: dict[str, Any] = field(default_factory=dict)


def normalize_text(text: str) -> str:
    """NFC, no control characters, ``\\n`` line ends, single spaces, at most one blank line."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub(" ", text).replace("\u00a0", " ")
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in text.split("\n")]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


_TEXT_SUFFIXES = (".txt", ".md", ".json", ".html", ".htm")


def _read_text(path: Path) -> str:
    """The file's text: UTF-16 when it starts with its byte-order mark, else UTF-8, else Latin-1.

    Raises:
        LoaderError: the content is binary whatever the extension says: a type ``filetype``
            recognises by its magic bytes (an image, an archive, a PDF, an office file, audio…)
            or NUL bytes in its first 8 KiB (issue 58 §3: a PNG renamed .txt was stored as text).
    """
    import filetype

    data = path.read_bytes()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    kind = filetype.guess(data[:8192])
    if kind is not None:
        raise LoaderError(
            f"{path}: the content is {kind.mime} (.{kind.extension}), not text; name the file by its type or convert it"
        )
    if b"\x00" in data[:8192]:
        raise LoaderError(f"{path}: binary content (NUL bytes), not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _load_pdf(path: Path) -> list[LoadedDocument]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    # pypdf logs what it repairs ("EOF marker not found", …) as warnings on stderr; a file it
    # cannot read raises, and that is the one line the caller reports (issue 19 §1.8).
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    try:
        reader = PdfReader(str(path))
        pages = [page.extract_text() or "" for page in reader.pages]
        meta = reader.metadata
    except (PdfReadError, ValueError, KeyError, OSError) as exc:
        raise LoaderError(f"{path}: not a readable PDF ({exc})") from exc
    pages = _pdf_pages_with_tables(path, pages)
    ocr = _ocr_scanned_pages(path, pages)
    title = (meta.title if meta and meta.title else None) or path.stem
    author = meta.author if meta and meta.author else None
    return [LoadedDocument(title, "\n\n".join(pages), path.resolve().as_uri(), {"author": author, "ocr": ocr})]


def _ocr_scanned_pages(path: Path, pages: list[str]) -> dict[str, Any] | None:
    """Every page of ``pages`` with no text layer (fewer than 20 letters) read by OCR from its
    image at 300 dpi (pypdfium2 renders it; :func:`hipocampo.ingest.ocr.ocr_image`), in place.
    Returns {"pages": [1-based numbers], "confidence": mean word confidence 0-100}, or None when
    no page needed it.

    Raises:
        LoaderError: a page needs OCR and there is no Tesseract (the message says how to install it).
    """
    scanned = [n for n, text in enumerate(pages) if len(re.findall(r"[^\W\d_]", text)) < 20]
    if not scanned:
        return None
    import pypdfium2

    from .ocr import ocr_image

    confidences: list[float] = []
    pdf = pypdfium2.PdfDocument(str(path))
    try:
        for n in scanned:
            image = pdf[n].render(scale=_OCR_DPI / 72).to_pil()
            read = ocr_image(image, f"{path} page {n + 1}")
            pages[n] = read.text
            if read.confidence is not None:
                confidences.append(read.confidence)
    finally:
        pdf.close()
    return {
        "pages": [n + 1 for n in scanned],
        "confidence": round(sum(confidences) / len(confidences), 1) if confidences else None,
    }


def _load_image(path: Path) -> list[LoadedDocument]:
    """A photo or scan (.png, .jpg) read by OCR: one document, its OCR confidence recorded."""
    from PIL import Image, UnidentifiedImageError

    from .ocr import ocr_image

    try:
        with Image.open(path) as img:
            img.load()
            read = ocr_image(img.convert("RGB"), str(path))
    except (UnidentifiedImageError, OSError) as exc:
        raise LoaderError(f"{path}: not a readable image ({exc})") from exc
    return [
        LoadedDocument(
            path.stem.replace("_", " "),
            read.text,
            path.resolve().as_uri(),
            {"ocr": {"pages": [1], "confidence": read.confidence}},
        )
    ]


def _pdf_pages_with_tables(path: Path, pages: list[str]) -> list[str]:
    """``pages`` (pypdf's text of each page) with every page that holds a table read again by
    pdfplumber (issue 59 §1): its lines outside the tables and each table as rows that keep their
    header (:func:`_grid_rows`), by their place on the page. A page without tables, or a file
    pdfplumber cannot read, keeps pypdf's text."""
    import pdfplumber

    logging.getLogger("pdfminer").setLevel(logging.ERROR)
    try:
        with pdfplumber.open(str(path)) as pdf:
            for n, page in enumerate(pdf.pages[: len(pages)]):
                tables = page.find_tables()
                if not tables:
                    continue
                boxes = [t.bbox for t in tables]
                placed: list[tuple[float, str]] = [
                    (line["top"], line["text"])
                    for line in page.extract_text_lines()
                    if not any(x0 - 1 <= line["x0"] and line["top"] >= top - 1 and line["bottom"] <= bottom + 1
                               and line["x1"] <= x1 + 1 for x0, top, x1, bottom in boxes)
                ]  # fmt: skip
                for t in tables:
                    grid = [[" ".join((c or "").split()) for c in row] for row in t.extract()]
                    rows = _grid_rows(grid)
                    if rows:
                        placed.append((t.bbox[1], "\n".join(rows)))
                pages[n] = "\n".join(text for _, text in sorted(placed, key=lambda p: p[0]))
    except Exception:  # pdfminer's errors have no common base; pypdf's text stands
        return pages
    return pages


def _grid_rows(grid: list[list[str]]) -> list[str]:
    """A table's cells (rows of strings) as lines of text that keep each row's header: with a
    header row (the first, every cell filled, no two alike), each later row is "Unidade: 302 ·
    Taxa: R$ 850,00"; without one, a row's cells joined by " · ". Empty cells and rows are left
    out."""
    grid = [row for row in grid if any(row)]
    if not grid:
        return []
    header = grid[0]
    if len(grid) > 1 and all(header) and len(set(header)) == len(header):
        return [" · ".join(f"{h}: {v}" for h, v in zip(header, row, strict=False) if v) for row in grid[1:]]
    return [" · ".join(c for c in row if c) for row in grid]


def _table_rows(table: Any) -> list[str]:
    """A DOCX table as lines of text that keep each row's header (issue 59 §1: tables were
    dropped; :func:`_grid_rows`); a merged cell counts once."""
    grid: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        seen: list[Any] = []
        for cell in row.cells:
            if any(cell._tc is s for s in seen):  # a merged cell repeats its object
                continue
            seen.append(cell._tc)
            cells.append(" ".join(cell.text.split()))
        grid.append(cells)
    return _grid_rows(grid)


def _load_docx(path: Path) -> list[LoadedDocument]:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        d = docx.Document(str(path))
    except (PackageNotFoundError, ValueError, KeyError, OSError) as exc:
        raise LoaderError(f"{path}: not a readable DOCX ({exc})") from exc
    from docx.table import Table

    parts: list[str] = []
    for block in d.iter_inner_content():  # paragraphs and tables, in reading order
        if isinstance(block, Table):
            rows = _table_rows(block)
            if rows:
                parts.append("\n".join(rows))
            continue
        style = (block.style.name if block.style is not None else "") or ""
        text = block.text.strip()
        if not text:
            continue
        parts.append(f"# {text}" if style.lower().startswith(("heading", "título", "title")) else text)
    props = d.core_properties
    return [
        LoadedDocument(
            props.title or path.stem,
            "\n\n".join(parts),
            path.resolve().as_uri(),
            {"author": props.author or None},
        )
    ]


def _load_html(path: Path) -> list[LoadedDocument]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(_read_text(path), "html.parser")
    for tag in soup(["script", "style", "noscript"]):
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else path.stem
    for h in soup.find_all(re.compile(r"^h[1-6]$")):
        h.insert_before("\n\n# ")
        h.insert_after("\n\n")
    for block in soup.find_all(["p", "li", "tr", "div", "br"]):
        block.insert_after("\n\n")
    return [LoadedDocument(title or path.stem, soup.get_text(), path.resolve().as_uri())]


def _flatten(value: Any, key: str = "") -> list[str]:
    """Readable ``key: value`` lines of any JSON value: nested keys dotted (``horario.abre: 9h``),
    a list of scalars joined by "; ", a list of objects numbered (``salas[2].nome: …``)."""
    if isinstance(value, dict):
        return [line for k, v in value.items() for line in _flatten(v, f"{key}.{k}" if key else str(k))]
    if isinstance(value, list):
        if all(not isinstance(v, dict | list) for v in value):
            joined = "; ".join(str(v) for v in value if v is not None)
            return [f"{key}: {joined}" if key else joined] if joined else []
        return [line for i, v in enumerate(value, 1) for line in _flatten(v, f"{key}[{i}]")]
    if value is None or value == "":
        return []
    return [f"{key}: {value}" if key else str(value)]


def _json_docs(data: Any, path: Path) -> list[LoadedDocument]:
    uri = path.resolve().as_uri()
    if isinstance(data, dict) and isinstance(data.get("data"), list):  # SQuAD / FaQuAD
        data = data["data"]
    if isinstance(data, list) and not all(isinstance(item, dict) for item in data):
        # A list of values: one document, a line per value.
        return [LoadedDocument(path.stem, "\n".join(line for v in data for line in _flatten(v)), uri)]
    items = data if isinstance(data, list) else [data]
    docs: list[LoadedDocument] = []
    for i, item in enumerate(items):
        title = str(item.get("title") or f"{path.stem} #{i + 1}")
        if isinstance(item.get("paragraphs"), list):
            text = "\n\n".join(str(p.get("context", "")) for p in item["paragraphs"])
        else:
            text = str(item.get("text") or item.get("content") or item.get("body") or "")
        if not text.strip():  # an ordinary object: its fields as readable lines
            text = "\n".join(_flatten({k: v for k, v in item.items() if k != "title"}))
        meta = {k: item[k] for k in ("author", "published_at", "version", "source_uri") if item.get(k)}
        source = str(meta.pop("source_uri", "") or f"{uri}#{item.get('id') or i}")
        docs.append(LoadedDocument(title.replace("_", " "), text, source, meta))
    return docs


def load_path(path: Path) -> list[LoadedDocument]:
    """Load one file into documents (text normalised, not yet scrubbed).

    Raises:
        LoaderError: unsupported suffix, unreadable or corrupt file, or no text in it.
    """
    if not path.is_file():
        raise LoaderError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise LoaderError(
            f"{path}: unsupported file type {suffix or '(none)'}; supported: " + ", ".join(SUPPORTED_SUFFIXES)
        )
    if suffix == ".pdf":
        docs = _load_pdf(path)
    elif suffix in _IMAGE_SUFFIXES:
        docs = _load_image(path)
    elif suffix == ".docx":
        docs = _load_docx(path)
    elif suffix in (".html", ".htm"):
        docs = _load_html(path)
    elif suffix == ".json":
        try:
            docs = _json_docs(json.loads(_read_text(path)), path)
        except json.JSONDecodeError as exc:
            raise LoaderError(f"{path}: invalid JSON ({exc})") from exc
    else:
        text = _read_text(path)
        heading = re.search(r"^#\s+(.+)$", text, flags=re.M) if suffix == ".md" else None
        docs = [LoadedDocument(heading.group(1).strip() if heading else path.stem, text, path.resolve().as_uri())]
    out = []
    for d in docs:
        d.text = normalize_text(d.text)
        d.title = normalize_text(d.title)[:500] or path.stem
        if d.text:
            out.append(d)
    if not out:
        raise LoaderError(f"{path}: no text found")
    return out
