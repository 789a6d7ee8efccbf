"""Guardrails before retrieval (issue: answers §3): a question is refused with no retrieval and no
model call when its length is out of bounds or it has control characters, when it looks like a
prompt injection (Portuguese and English patterns), or when it carries a CPF, a card number or a
secret. Length bounds come from the rag config (rag.question_min_chars / question_max_chars)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping

__all__ = ["check_question"]

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

# Matched on the lower-case, unaccented question.
_INJECTION = [
    re.compile(p)
    for p in (
        r"\b(ignore|disregard|forget|override)\b.{0,30}\b(previous|prior|above|earlier|all|your)\b.{0,20}"
        r"\b(instructions?|rules|prompts?|directions)\b",
        r"\b(ignore|ignora|esqueca|desconsidere|desconsiderar|ignorar|esquecer)\b.{0,30}\b(as |todas as |suas )?"
        r"(instrucoes|regras|ordens|diretrizes)\b",
        r"\b(reveal|show|print|display|repeat|leak|tell me)\b.{0,30}\b(system|hidden|initial|developer)\s+"
        r"(prompt|instructions?|message)",
        r"\b(revele|mostre|exiba|imprima|repita|diga|mostrar|revelar)\b.{0,30}\b(prompt|instrucoes)\b.{0,20}"
        r"\b(sistema|ocultas?|iniciais|secretas?)\b",
        r"\b(prompt|instrucoes) (do|de) sistema\b",
        r"\bjailbreak\b|\bdo anything now\b|\bdan mode\b|\bdeveloper mode\b",
        r"\bmodo (dan|desenvolvedor|sem restricoes)\b",
        r"\b(act|pretend|finja|aja)\b.{0,40}\b(without|no|sem)\b.{0,15}\b(restrictions|rules|filters|limits|"
        r"restricoes|regras|filtros|limites)\b",
        r"\byou are now\b|\bvoce agora e\b.{0,30}\b(sem|livre)\b",
    )
]

_SECRET = [
    re.compile(p)
    for p in (
        r"\bsk-[A-Za-z0-9_-]{16,}",
        r"\bAKIA[0-9A-Z]{16}\b",
        r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
        r"(?i)\b(senha|password|passwd|api[_ -]?key|secret|token)\s*[:=]\s*\S{4,}",
    )
]


def _plain(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in folded if not unicodedata.combining(c))


def check_question(
    question: str, min_chars: int, max_chars: int, pii_counts: Callable[[str], Mapping[str, int]]
) -> str | None:
    """The refusal reason for ``question``, or None when it may go on to retrieval.

    Args:
        question: the user's question as typed.
        min_chars / max_chars: length bounds in characters (rag.question_min_chars = 3,
            rag.question_max_chars = 2,000; config.toml [rag]).
        pii_counts: a text's PII counts per kind from the database's scrubber (e.g.
            ``lambda q: client.scrub_pii([q])[0].counts``, ``{"CPF": 1}``); called last, only for
            a question that passed the other checks.

    Returns:
        ``invalid_question`` (length, control characters), ``prompt_injection``,
        ``sensitive_data`` (a valid CPF or card number), ``secret`` (API keys, JWTs, private
        keys, "senha: …"), or None.
    """
    text = question.strip()
    if not (min_chars <= len(text) <= max_chars) or _CONTROL.search(question):
        return "invalid_question"
    plain = _plain(text)
    if any(p.search(plain) for p in _INJECTION):
        return "prompt_injection"
    if any(p.search(text) for p in _SECRET):
        return "secret"
    found = pii_counts(text)
    if found.get("CPF") or found.get("CARTAO"):
        return "sensitive_data"
    return None
