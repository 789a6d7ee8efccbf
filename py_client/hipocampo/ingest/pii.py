"""PII scrub for Brazilian documents, applied before anything is embedded or stored.

Replaces CPF, CNPJ, RG, e-mail, Brazilian phone numbers and card numbers (Luhn-checked) with
typed placeholders: ``[CPF]``, ``[CNPJ]``, ``[RG]``, ``[EMAIL]``, ``[TELEFONE]``, ``[CARTAO]``.
Bare digit runs count as CPF/CNPJ only when their check digits are valid, so article numbers,
years and amounts are left alone.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["ScrubResult", "cnpj_is_valid", "cpf_is_valid", "luhn_is_valid", "scrub"]

_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_CPF_FMT = re.compile(r"(?<![\d.])\d{3}\.\d{3}\.\d{3}-\d{2}(?![\d])")
_CNPJ_FMT = re.compile(r"(?<![\d.])\d{2}\.\d{3}\.\d{3}/\d{4}-\d{2}(?![\d])")
_RG = re.compile(
    r"(?:(?<![\d.])\d{1,2}\.\d{3}\.\d{3}-[\dXx](?![\d])"
    r"|\bRG\b\s*(?:n[º°o.]*\s*)?[:\-]?\s*[\dXx][\d.\-Xx]{4,13}[\dXx])"
)
_PHONE = re.compile(
    r"(?:\+55\s?)?\(\d{2}\)\s?9?\s?\d{4}[-\s.]?\d{4}(?!\d)"
    r"|\+55\s?\d{2}\s?9?\d{4}[-\s.]?\d{4}(?!\d)"
    r"|(?<![\d/.-])\d{2}\s9\d{4}-\d{4}(?!\d)"
    r"|(?<![\d/.-])9\d{4}-\d{4}(?!\d)"
)
_CARD = re.compile(r"(?<![\d])(?:\d[ -]?){12,18}\d(?![\d])")
_BARE_DIGITS = re.compile(r"(?<!\d)(?<!\d[.,/-])\d{11}(?:\d{3})?(?!\d)(?![.,/-]\d)")


def luhn_is_valid(digits: str) -> bool:
    """Luhn checksum of a digit string (card numbers)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def cpf_is_valid(digits: str) -> bool:
    """CPF check digits (11 digits, not all equal)."""
    if len(digits) != 11 or len(set(digits)) == 1:
        return False
    for n in (9, 10):
        s = sum(int(digits[i]) * (n + 1 - i) for i in range(n))
        if (s * 10 % 11) % 10 != int(digits[n]):
            return False
    return True


def cnpj_is_valid(digits: str) -> bool:
    """CNPJ check digits (14 digits, not all equal)."""
    if len(digits) != 14 or len(set(digits)) == 1:
        return False
    weights = [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]
    for n in (12, 13):
        w = weights if n == 12 else [6, *weights]
        s = sum(int(digits[i]) * w[i] for i in range(n))
        r = s % 11
        if (0 if r < 2 else 11 - r) != int(digits[n]):
            return False
    return True


@dataclass
class ScrubResult:
    """The scrubbed ``text`` and how many of each kind were replaced (``counts``)."""

    text: str
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        """Number of replacements."""
        return sum(self.counts.values())


def scrub(text: str) -> ScrubResult:
    """Replace PII in ``text`` by typed placeholders; returns the new text and counts per kind."""
    counts: Counter[str] = Counter()

    def sub(pattern: re.Pattern[str], label: str, s: str, check: object = None) -> str:
        def repl(m: re.Match[str]) -> str:
            raw = m.group(0)
            if callable(check) and not check(re.sub(r"\D", "", raw)):
                return raw
            counts[label] += 1
            return f"[{label}]"

        return pattern.sub(repl, s)

    out = sub(_EMAIL, "EMAIL", text)
    out = sub(_CNPJ_FMT, "CNPJ", out)
    out = sub(_CPF_FMT, "CPF", out)
    out = sub(_RG, "RG", out)
    out = sub(_PHONE, "TELEFONE", out)
    out = sub(_CARD, "CARTAO", out, lambda d: 13 <= len(d) <= 19 and luhn_is_valid(d))

    def bare(m: re.Match[str]) -> str:
        d = m.group(0)
        if len(d) == 11 and cpf_is_valid(d):
            counts["CPF"] += 1
            return "[CPF]"
        if len(d) == 14 and cnpj_is_valid(d):
            counts["CNPJ"] += 1
            return "[CNPJ]"
        return d

    out = _BARE_DIGITS.sub(bare, out)
    return ScrubResult(out, counts)
