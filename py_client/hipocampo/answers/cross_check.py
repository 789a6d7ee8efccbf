"""Whether documents can back an answer alone: answer_evidence's cross-check, read from the
knowledge base's rag config, for what ingestion tells its user (the CLI's ``ingest`` note, the
hub's upload page) and for the replays of the gate (hipocampo.evaluation.calibration's sentence rule,
benchmarks/calibrate_answers.py).

An answer needs rag.cross_check_min_documents distinct documents among its evidence, or one
authoritative document: a type of rag.authoritative_source_types at trust >= rag.authoritative_trust
(docs/design.md §answers; the SQL decides it in ``answer_evidence``, this only forecasts it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CrossCheckGap", "authoritative", "cross_check_gap", "cross_checked"]


def authoritative(source_type: str, trust: float, rag: Mapping[str, Any]) -> bool:
    """Whether a document can back an answer alone under the cross-check: its type is one of
    rag.authoritative_source_types and its trust (0..1) reaches rag.authoritative_trust (as
    answer_evidence decides it)."""
    return source_type in rag["authoritative_source_types"] and float(trust) >= float(rag["authoritative_trust"])


def cross_checked(good: list[dict[str, Any]], rag: Mapping[str, Any]) -> bool:
    """answer_evidence's cross-check over the evidence items at the confidence threshold (each with
    ``document_id``, ``source_type`` and ``trust_score``): at least rag.cross_check_min_documents
    distinct documents, or an authoritative one (the benchmarks' and the calibration's replays)."""
    return len({e["document_id"] for e in good}) >= rag["cross_check_min_documents"] or any(
        authoritative(e["source_type"], float(e["trust_score"]), rag) for e in good
    )


@dataclass(frozen=True)
class CrossCheckGap:
    """Documents of ``source_type`` at ``trust`` (0..1) are not authoritative, and an answer needs
    ``min_documents`` (> 1) of them: ``ask`` refuses what one alone supports (cross_check_failed).
    The ways out: a type of ``authoritative_types`` at trust >= ``authoritative_trust``, or
    rag.cross_check_min_documents 1 for the knowledge base."""

    source_type: str
    trust: float
    min_documents: int
    authoritative_types: tuple[str, ...]
    authoritative_trust: float


def cross_check_gap(client: Any, kb_id: str, source_type: str, trust: float | None) -> CrossCheckGap | None:
    """The gap documents of ``source_type`` ingested into ``kb_id`` at ``trust`` (None: the
    config's retrieval.default_trust for the type, 0.5 for a type it does not name) leave under
    the knowledge base's effective rag config; None when one of them can answer alone.

    Args:
        client: a ``Hipocampo`` acting for someone who can read the knowledge base's config.

    Raises:
        HipocampoError: as ``rag_config`` / ``effective_config`` (e.g. 42501 without access).
    """
    from ..ingest.pipeline import default_trust

    rag = client.rag_config(kb_id)
    need = int(rag["cross_check_min_documents"])
    level = (
        trust
        if trust is not None
        else default_trust(client.effective_config(kb_id)["retrieval"]["default_trust"], source_type)
    )
    if need <= 1 or authoritative(source_type, level, rag):
        return None
    return CrossCheckGap(
        source_type, float(level), need, tuple(rag["authoritative_source_types"]), float(rag["authoritative_trust"])
    )
