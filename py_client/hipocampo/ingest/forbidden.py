"""Forbidden sources (issue 45 §4): what must never enter a knowledge base.

The design lists complete conversations with the AI, individual financial data, biometric
documents and credentials or tokens. Each file's text, as loaded and before the PII scrub, is
checked by:

- the database (``hipocampo.forbidden_content``): credentials by
  ``forbidden_sources.credential_patterns``, chat transcripts, individual financial statements
  and biometric records, with the thresholds of the config rows;
- detect-secrets (Yelp's scanner, 1.5), for the credentials its rules know (AWS, GitHub, GitLab,
  Slack, Stripe, OpenAI, JWT, private keys, basic auth in URLs, ``password = …`` in code…), without
  its entropy rules, which flag ordinary words of prose.

What happens to a file found to be of a kind is the config's ``forbidden_sources.<kind>``
(refuse | quarantine | allow), or ``forbidden_sources.by_source_type.<source_type>.<kind>`` when
the file's source type names one (:func:`action_for`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

if TYPE_CHECKING:
    from ..client import Hipocampo

__all__ = ["ACTIONS", "KINDS", "Finding", "action_for", "find_forbidden", "secret_found"]

KINDS = ("credentials", "transcript", "financial_statement", "biometric")
ACTIONS = ("refuse", "quarantine", "allow")

# detect-secrets' rules left out: the entropy rules flag most words of prose (18,676 of FaQuAD's
# 249 paragraphs' lines), and a public IP address is not a credential.
_LEFT_OUT = {"Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector"}
# Per call of hipocampo.forbidden_content (its bounds: 64 texts, 33,554,432 characters).
_CALL_TEXTS = 64
_CALL_CHARS = 33_554_432


@dataclass(frozen=True)
class Finding:
    """A file found to be of a forbidden ``kind`` (one of :data:`KINDS`); ``reason`` says what
    and where (a line number), never the secret itself."""

    kind: str
    reason: str


def action_for(cfg: Mapping[str, Any], source_type: str, kind: str) -> str:
    """What to do with a file of ``source_type`` found to be of ``kind``: refuse | quarantine |
    allow, from the config section ``forbidden_sources`` (``by_source_type`` first; a kind the
    section does not name is refused)."""
    own = (cfg.get("by_source_type") or {}).get(source_type) or {}
    return str(own.get(kind) or cfg.get(kind) or "refuse")


@contextmanager
def _plugins() -> Iterator[None]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.settings import transient_settings

    rules: list[type] = list(get_mapping_from_secret_type_to_class().values())
    names = [rule.__name__ for rule in rules if rule.__name__ not in _LEFT_OUT]
    with transient_settings({"plugins_used": [{"name": n} for n in sorted(names)]}):
        yield


def secret_found(text: str) -> str | None:
    """The first credential detect-secrets' rules find in ``text`` (line by line), as a reason
    ("a credential (AWS Access Key) on line 3"), or None. An Artifactory finding without a digit
    is an all-caps word ("APARTAMENTO 302"), not a key, and does not count."""
    from detect_secrets.core.scan import scan_line

    with _plugins():
        for number, line in enumerate(text.splitlines(), start=1):
            for secret in scan_line(line):
                if secret.type == "Artifactory Credentials" and not any(c.isdigit() for c in secret.secret_value or ""):
                    continue  # an all-caps word such as "APARTAMENTO" has the rule's form, not a key's digits
                return f"a credential ({secret.type}) on line {number}"
    return None


def _batches(texts: Sequence[str]) -> Iterator[tuple[int, list[str]]]:
    start, size = 0, 0
    batch: list[str] = []
    for i, text in enumerate(texts):
        if batch and (len(batch) == _CALL_TEXTS or size + len(text) > _CALL_CHARS):
            yield start, batch
            start, size, batch = i, 0, []
        batch.append(text)
        size += len(text)
    if batch:
        yield start, batch


def find_forbidden(client: Hipocampo, kb_id: UUID, texts: Sequence[str]) -> list[Finding | None]:
    """Each text's forbidden kind under the knowledge base's config, or None: the database's
    checks first (``hipocampo.forbidden_content``, in calls of at most 64 texts and 32 MiB), then
    detect-secrets on the texts they pass.

    Args:
        client: a caller that may read the knowledge base.
        kb_id: whose ``forbidden_sources`` config applies.
        texts: the files' texts as loaded (each at most ``[ingest] max_document_mb``).

    Returns:
        ``list[Finding | None]``, one per text, in order.

    Raises:
        NotFoundError: unknown knowledge base (P0002).
        ConfigError: the config rows lack the forbidden_sources keys (55000).
    """
    found: list[Finding | None] = [None] * len(texts)
    for start, batch in _batches(texts):
        for row in client.rpc("forbidden_content", {"texts": batch, "kb_id": kb_id}, "rows"):
            found[start + int(row["n"]) - 1] = Finding(str(row["kind"]), str(row["reason"]))
    for i, text in enumerate(texts):
        if found[i] is None:
            reason = secret_found(text)
            if reason is not None:
                found[i] = Finding("credentials", reason)
    return found
