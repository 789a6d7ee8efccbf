"""Thresholds that depend on an embedding model's cosine scale, chosen from the bundled datasets
by the rules behind all-MiniLM-L6-v2's configured values (issue 22 §2; docs/BENCHMARKS.md,
"Thresholds per embedding model").

- ``retrieval.min_similarity``: the largest grid value that drops at most 0.5 % of the relevant
  (question, passage) pairs of FaQuAD and of Quati (cosine floor of the dense leg).
- ``memory.context_threshold``: the highest grid value that keeps at least 75 % of LoCoMo's
  (question, evidence turn) pairs; ``memory.answer_threshold``: the lowest that keeps at most
  1.5 % of (question, other turn) pairs. Chosen on conversations 1-5; 6-10 reported as held out.

The grid step follows the model's spread: 0.05 when the middle 80 % of LoCoMo's evidence cosines
spans more than 0.2 (MiniLM: 0.36), else 0.01 (e5: 0.08, its cosines crowd into 0.75-0.9). With
MiniLM the rules give 0.25 / 0.35 / 0.55, the configured values.

A model's whole calibration (``[calibration."<model>"]`` in config.toml, stored per model in the
database: docs/design.md §thresholds) also holds keys these rules do not give yet (the dense
weights, the duplicate cosines): :func:`model_calibration` keeps the model's own values of those,
or carries the default model's over and says so.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit

from .datasets import load_beir, load_locomo, locomo_turns
from .embeddings import EmbeddingProvider

__all__ = [
    "Finding",
    "answer_threshold",
    "calibrate",
    "context_threshold",
    "grid",
    "grid_step",
    "locomo_pairs",
    "model_calibration",
    "relevant_pairs",
    "similarity_floor",
    "write_calibration",
]

SIMILARITY_SETS = ("faquad", "quati")
MAX_DROPPED = 0.005  # share of relevant pairs a similarity floor may drop
MIN_EVIDENCE_KEPT = 0.75  # memory.context_threshold keeps at least this share of evidence pairs
MAX_OTHERS_KEPT = 0.015  # memory.answer_threshold keeps at most this share of other pairs
WIDE_SPREAD = 0.2  # p90 - p10 of evidence cosines above this: grid step 0.05, else 0.01


@dataclass(frozen=True)
class Finding:
    """One chosen value: its config key, the value, and what it keeps (in words)."""

    key: str
    value: float
    evidence: str


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * q / 100))]


def grid_step(evidence: list[float]) -> float:
    """0.05 for a model whose evidence cosines spread wide, 0.01 for one whose crowd together."""
    return 0.05 if _pct(evidence, 90) - _pct(evidence, 10) > WIDE_SPREAD else 0.01


def grid(step: float) -> list[float]:
    """The candidate thresholds: multiples of ``step`` strictly between 0 and 1."""
    return [round(step * i, 4) for i in range(1, round(1 / step))]


def _kept(xs: list[float], t: float) -> float:
    return sum(x >= t for x in xs) / len(xs)


def similarity_floor(relevant: list[list[float]], candidates: list[float]) -> float:
    """The largest candidate that drops at most MAX_DROPPED of the relevant pairs of every set
    (``relevant``: one list of cosines per set); 0.0 when none does."""
    ok = [f for f in candidates if all(sum(x < f for x in sims) / len(sims) <= MAX_DROPPED for sims in relevant)]
    return max(ok, default=0.0)


def context_threshold(evidence: list[float], candidates: list[float]) -> float:
    """The highest candidate that keeps at least MIN_EVIDENCE_KEPT of the evidence pairs."""
    return max((t for t in candidates if _kept(evidence, t) >= MIN_EVIDENCE_KEPT), default=min(candidates))


def answer_threshold(others: list[float], candidates: list[float]) -> float:
    """The lowest candidate that keeps at most MAX_OTHERS_KEPT of the other pairs."""
    return min((t for t in candidates if _kept(others, t) <= MAX_OTHERS_KEPT), default=max(candidates))


def locomo_pairs(embedder: EmbeddingProvider, samples: list[dict[str, object]]) -> tuple[list[float], list[float]]:
    """Cosines of each question with evidence to its evidence turns and to its other turns."""
    pos: list[float] = []
    neg: list[float] = []
    for sample in samples:
        turns = locomo_turns(sample["conversation"])  # type: ignore[arg-type]
        vecs = dict(
            zip(
                [t["metadata"]["dia_id"] for t in turns],
                embedder.embed_documents([t["content"] for t in turns]),
                strict=True,
            )
        )
        for q in sample["qa"]:  # type: ignore[attr-defined]
            gold = {e.strip() for e in q.get("evidence") or [] if e.strip() in vecs}
            if gold:
                qv = embedder.embed_query(q["question"])
                for d, v in vecs.items():
                    (pos if d in gold else neg).append(_dot(qv, v))
    return pos, neg


def relevant_pairs(embedder: EmbeddingProvider, name: str) -> list[float]:
    """Cosines of each question of the BEIR set ``name`` to its relevant passages (title + text)."""
    ds = load_beir(name)
    docs = sorted({d for rel in ds.qrels.values() for d in rel})
    texts = [f"{ds.corpus[d][0]}\n{ds.corpus[d][1]}" if ds.corpus[d][0] else ds.corpus[d][1] for d in docs]
    dv = dict(zip(docs, embedder.embed_documents(texts), strict=True))
    return [_dot(embedder.embed_query(ds.queries[q]), dv[d]) for q in ds.queries for d in ds.qrels[q] if d in dv]


def calibrate(embedder: EmbeddingProvider) -> list[Finding]:
    """The model's ``retrieval.min_similarity``, ``memory.context_threshold`` and
    ``memory.answer_threshold`` by the rules above (embeds FaQuAD's and Quati's relevant passages
    and questions, and LoCoMo's turns and questions: minutes on 2 cores for e5).

    Raises:
        FileNotFoundError: the shared datasets are missing.
    """
    data = load_locomo()
    chosen_pos, chosen_neg = locomo_pairs(embedder, data[:5])
    held_pos, held_neg = locomo_pairs(embedder, data[5:])
    step = grid_step(chosen_pos)
    candidates = grid(step)
    floor = similarity_floor([relevant_pairs(embedder, name) for name in SIMILARITY_SETS], candidates)
    context = context_threshold(chosen_pos, candidates)
    answer = answer_threshold(chosen_neg, candidates)
    kept = _kept
    return [
        Finding(
            "retrieval.min_similarity",
            floor,
            f"drops at most {MAX_DROPPED:.1%} of the relevant pairs of {' and '.join(SIMILARITY_SETS)} (step {step})",
        ),
        Finding(
            "memory.context_threshold",
            context,
            f"keeps {kept(chosen_pos, context):.1%} of LoCoMo evidence pairs (conversations 1-5), "
            f"{kept(held_pos, context):.1%} held out (6-10)",
        ),
        Finding(
            "memory.answer_threshold",
            answer,
            f"keeps {kept(chosen_neg, answer):.2%} of other turns (1-5), {kept(held_neg, answer):.2%} held out",
        ),
    ]


Calibration = dict[str, dict[str, float]]


def model_calibration(
    model: str, findings: list[Finding], calibrations: dict[str, Calibration], default_model: str
) -> tuple[Calibration, list[str]]:
    """``model``'s whole calibration with ``findings`` applied: its own calibration from
    ``calibrations`` (config.toml's ``[calibration]``: {model: {section: {key: value}}}) where it
    has one, else ``default_model``'s, whose values of the keys no finding gives are carried over.

    Returns:
        ``(calibration, carried)``: {section: {key: value}}, and the ``section.key`` names carried
        over from ``default_model`` (empty when the model had a calibration of its own).

    Raises:
        KeyError: neither ``model`` nor ``default_model`` has a calibration in ``calibrations``.
    """
    own = model in calibrations
    out: Calibration = copy.deepcopy(calibrations[model if own else default_model])
    found = {f.key for f in findings}
    for f in findings:
        section, key = f.key.split(".", 1)
        out.setdefault(section, {})[key] = f.value
    carried = [] if own else sorted(f"{s}.{k}" for s, keys in out.items() for k in keys if f"{s}.{k}" not in found)
    return out, carried


def write_calibration(path: Path, model: str, calibration: Calibration, note: str) -> None:
    """Write ``calibration`` as ``[calibration."<model>".<section>]`` tables into the TOML file at
    ``path`` (created when missing), keeping every other table, key and comment as it is; ``note``
    becomes a comment above a table the file did not have.

    Raises:
        OSError: the file cannot be read or written.
        tomlkit.exceptions.ParseError: the file is not valid TOML.
    """
    doc = tomlkit.parse(path.read_text("utf-8")) if path.is_file() else tomlkit.document()
    root: Any = doc.setdefault("calibration", tomlkit.table(is_super_table=True))
    tables: Any = root.setdefault(model, tomlkit.table(is_super_table=True))
    for section, keys in calibration.items():
        if section not in tables:
            table = tomlkit.table()
            table.comment(note)
            tables[section] = table
        for key, value in keys.items():
            tables[section][key] = value
    path.write_text(tomlkit.dumps(doc), "utf-8")
