"""Text from images and scanned pages by OCR (issue 59 §1): Tesseract, through pytesseract, with
its Portuguese and English data (Debian's ``tesseract-ocr``, ``tesseract-ocr-por`` and
``tesseract-ocr-eng``; ``make`` unpacks them into ``.tesseract/`` as it does Chromium).

The binary is ``$HIPOCAMPO_TESSERACT``, else ``tesseract`` on the PATH, else the checkout's
``.tesseract/usr/bin/tesseract``; a binary unpacked that way gets its libraries and language data
from beside it. Without one, a scanned page or an image fails with the command that installs it.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LoaderError

__all__ = ["OcrText", "ocr_image", "tesseract"]

_LANGUAGES = "por+eng"
_INSTALL = "OCR needs Tesseract: `apt install tesseract-ocr tesseract-ocr-por tesseract-ocr-eng`"


@dataclass(frozen=True)
class OcrText:
    """What OCR read of one image: ``text`` (words in reading order, a line per line) and the
    mean word ``confidence`` (0-100, Tesseract's), ``None`` when no word was read."""

    text: str
    confidence: float | None


def tesseract() -> str | None:
    """The Tesseract binary to use, with its environment set when it was unpacked beside its
    libraries (``<root>/usr/bin/tesseract``), or None when there is none."""
    found = os.environ.get("HIPOCAMPO_TESSERACT") or shutil.which("tesseract")
    if not found:
        local = Path(__file__).resolve().parents[3] / ".tesseract" / "usr" / "bin" / "tesseract"
        found = str(local) if local.exists() else None
    if found is None:
        return None
    root = Path(found).resolve().parent.parent.parent  # <root>/usr/bin/tesseract
    libs = root / "usr" / "lib" / "x86_64-linux-gnu"
    data = root / "usr" / "share" / "tesseract-ocr" / "5" / "tessdata"
    if (libs / "libtesseract.so.5").exists():
        paths = [str(libs), *filter(None, os.environ.get("LD_LIBRARY_PATH", "").split(":"))]
        os.environ["LD_LIBRARY_PATH"] = ":".join(dict.fromkeys(paths))
    if data.is_dir():
        os.environ.setdefault("TESSDATA_PREFIX", str(data))
    return found


def ocr_image(image: Any, where: str) -> OcrText:
    """The text of a PIL image by OCR (Portuguese and English), with its mean word confidence.

    Args:
        image: a ``PIL.Image.Image`` (a page rendered at 300 dpi, a photo of a notice).
        where: how an error names it ("aviso.png", "scan.pdf page 2").

    Raises:
        LoaderError: no Tesseract (with the command that installs it), or Tesseract failed.
    """
    import pytesseract

    binary = tesseract()
    if binary is None:
        raise LoaderError(f"{where}: no text layer; {_INSTALL}")
    pytesseract.pytesseract.tesseract_cmd = binary
    try:
        data = pytesseract.image_to_data(image, lang=_LANGUAGES, output_type=pytesseract.Output.DICT)
    except (pytesseract.TesseractError, OSError) as exc:
        raise LoaderError(f"{where}: OCR failed ({exc})") from exc
    paragraphs: dict[tuple[int, int], dict[int, list[str]]] = {}
    confidences: list[float] = []
    for i, word in enumerate(data["text"]):
        conf = float(data["conf"][i])
        if not word.strip() or conf < 0:
            continue
        paragraph = (int(data["block_num"][i]), int(data["par_num"][i]))
        paragraphs.setdefault(paragraph, {}).setdefault(int(data["line_num"][i]), []).append(word.strip())
        confidences.append(conf)
    text = "\n\n".join(
        "\n".join(" ".join(words) for _, words in sorted(lines.items())) for _, lines in sorted(paragraphs.items())
    )
    return OcrText(text, round(sum(confidences) / len(confidences), 1) if confidences else None)
