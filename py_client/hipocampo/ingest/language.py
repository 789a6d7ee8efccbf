"""Which language a document is written in (issue 59 §2), by lingua-language-detector (the
``languages`` extra: its models ship in the wheel), among the languages PostgreSQL stems (the
knowledge bases' languages, docs/design.md §Retrieval). The document's chunks then use that language's
text-search configuration for the lexical leg; the dense leg is multilingual whatever it says.
Without the extra, or when lingua is not sure, the knowledge base's language is used.
"""

from __future__ import annotations

from functools import cache
from typing import Any

__all__ = ["detect_language"]

# lingua's names of the languages a document may have (documents_language_check, but simple; Norwegian
# is two written standards there, one stemmer here).
_LINGUA = {
    "PORTUGUESE": "portuguese",
    "ENGLISH": "english",
    "SPANISH": "spanish",
    "FRENCH": "french",
    "GERMAN": "german",
    "ITALIAN": "italian",
    "DUTCH": "dutch",
    "DANISH": "danish",
    "FINNISH": "finnish",
    "HUNGARIAN": "hungarian",
    "BOKMAL": "norwegian",
    "NYNORSK": "norwegian",
    "RUSSIAN": "russian",
    "SWEDISH": "swedish",
    "TURKISH": "turkish",
}
# Characters read: the opening of a long document says its language as well as the whole.
SAMPLE_CHARS = 4000
# lingua's confidence (0..1) the detected language must reach, else None (too short, mixed).
MIN_CONFIDENCE = 0.5


@cache
def _detector() -> Any | None:
    try:
        from lingua import Language, LanguageDetectorBuilder
    except ImportError:
        return None
    # Low accuracy mode (trigram models only): 0.3 s and ~90 MB to load against 3-8 s and ~350 MB
    # for every model, and lingua's own advice for texts over ~120 characters, which documents are
    # (FaQuAD's and Quati's passages are detected alike either way).
    languages = (getattr(Language, name) for name in _LINGUA)
    return LanguageDetectorBuilder.from_languages(*languages).with_low_accuracy_mode().build()


def detect_language(text: str) -> str | None:
    """The language of ``text`` as a text-search language name (``spanish``), or None: lingua is
    not installed (``pip install 'hipocampo[languages]'``), the text has no letters, or the best
    language's confidence is under :data:`MIN_CONFIDENCE` (0.5) on its first
    :data:`SAMPLE_CHARS` (4,000) characters."""
    detector = _detector()
    sample = text[:SAMPLE_CHARS]
    if detector is None or not any(ch.isalpha() for ch in sample):
        return None
    values = detector.compute_language_confidence_values(sample)
    if not values or values[0].value < MIN_CONFIDENCE:
        return None
    return _LINGUA.get(values[0].language.name)
