"""A knowledge base measured on its own judged questions (``hipocampo kb eval``): retrieval
nDCG@10 / recall@10 per mode, the answers ``Orchestrator.ask`` gives, and the knowledge base's
own ``retrieval.dense_weight`` and answer gate (``rag.min_confidence``) chosen on half of the
questions.

The questions file is JSON Lines, one question per line::

    {"question": "Qual o prazo de reembolso?", "relevant": ["kb://manual#3"]}
    {"question": "…", "relevant": {"kb://faq/12": 2, "kb://faq/13": 1}}
    {"question": "Qual a capital da Austrália?", "relevant": []}

``relevant`` names the documents that answer the question by their ``source_uri`` (what
``hipocampo ingest`` stores: the file's ``file://`` URI, or a JSON item's ``source_uri``), or by
its end after a ``/`` (``"regimento.md"`` names ``file:///…/regimento.md`` and its items
``…/regimento.md#3``), a list (grade 1) or an object of grades (> 0; BEIR's gain). An empty
list marks an off-topic question: ``ask`` should refuse it. nDCG@10 is BEIR's: the first 10
distinct documents of 20 hits, gain = grade, discount log2(rank + 1) (docs/design.md §retrieval).

Why the dense weight is per knowledge base (issue 22 §5, docs/BENCHMARKS.md §Fusion rules
replayed): on some sets the lexical leg's outliers are the answers (FAQs written from their
passages), on others they are look-alikes (web passages); no per-query signal measured told the
two apart, a few judged questions of the knowledge base do.

Why the gate's confidence is per knowledge base too (issue 22 §4, docs/BENCHMARKS.md §Answers):
rag.min_confidence was chosen on FaQuAD's train split, and a question's best support (how much
of it the evidence covers) runs lower on other text: open questions over web passages (Quati)
are covered 0.5-0.6 where FaQuAD's are covered 0.65 or more, so the default refuses them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

from ..client import Hipocampo
from ..embeddings.base import EmbeddingProvider
from ..errors import InvalidInputError
from . import MODES, ndcg_at_k, recall_at_k
from .calibration import FUSION_WEIGHTS, GateReplay, gate_reading

__all__ = [
    "GATE_CONFIDENCES",
    "AnswerRates",
    "GateChoice",
    "Judged",
    "KbEvaluation",
    "ModeScore",
    "Outcome",
    "WeightChoice",
    "evaluate_kb",
    "load_judged",
    "outcome",
    "parse_judged",
    "store_confirmed",
]


@dataclass(frozen=True)
class Judged:
    """One judged question: ``relevant`` maps source_uri → grade (> 0); empty = off-topic."""

    question: str
    relevant: dict[str, int]


def load_judged(path: Path) -> list[Judged]:
    """The questions of a JSON Lines file (format in the module docstring): ``parse_judged`` of
    its text.

    Raises:
        InvalidInputError (22023): as parse_judged.
        OSError: the file cannot be read.
    """
    return parse_judged(path.read_text("utf-8"), str(path))


def stored_judged(client: Hipocampo, kb_id: UUID) -> list[Judged]:
    """The knowledge base's judged questions stored from feedback (``judged_questions``: each
    relevant document at grade 1), oldest first.

    Raises:
        PermissionDeniedError: not a tenant admin. NotFoundError: unknown knowledge base.
    """
    return [Judged(j.question, dict.fromkeys(j.relevant_uris, 1)) for j in client.judged_questions(kb_id)]


def parse_judged(text: str, source: str) -> list[Judged]:
    """The questions of JSON Lines ``text`` (format in the module docstring) read from ``source``
    (named in errors); blank lines skipped.

    Raises:
        InvalidInputError (22023): a line that is not such an object (``<source>:<line>: …``), or
            no questions.
    """
    out: list[Judged] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            question, rel = row["question"], row.get("relevant", [])
            grades = {str(u): 1 for u in rel} if isinstance(rel, list) else {str(u): int(g) for u, g in rel.items()}
            if not isinstance(question, str) or not question.strip() or any(g < 1 for g in grades.values()):
                raise ValueError
        except (ValueError, KeyError, TypeError, AttributeError):
            raise InvalidInputError(
                f'{source}:{n}: expected {{"question": "<text>", "relevant": [<source_uri>, …] or '
                "{<source_uri>: <grade ≥ 1>}}",
                "22023",
            ) from None
        out.append(Judged(question.strip(), grades))
    if not out:
        raise InvalidInputError(f"{source}: no questions", "22023")
    return out


@dataclass(frozen=True)
class ModeScore:
    """Mean nDCG@10 / recall@10 of one search mode over ``questions`` answerable questions."""

    mode: str
    ndcg10: float
    recall10: float
    questions: int


def _judged_as(uri: str, names: Iterable[str]) -> str:
    """The name of ``names`` that ``uri`` answers to (itself, or its end after a ``/``, its
    ``#fragment`` aside), else ``uri``."""
    base = uri.split("#", 1)[0]
    return next((n for n in names if n in (uri, base) or base.endswith("/" + n) or uri.endswith("/" + n)), uri)


def _ranked(client: Hipocampo, kb: UUID, j: Judged, vector: list[float], opts: dict[str, Any]) -> list[str]:
    """The distinct documents of 20 hits, in rank order, as ``j`` names them (a document's rank is
    its best chunk's)."""
    ranked: list[str] = []
    for h in client.search(j.question, vector, kb_ids=[kb], match_count=20, **opts):
        key = _judged_as(h.source_uri, j.relevant)
        if key not in ranked:
            ranked.append(key)
    return ranked


def _scores(
    client: Hipocampo, kb: UUID, answerable: Sequence[Judged], vectors: Sequence[list[float]], opts: dict[str, Any]
) -> list[tuple[float, float]]:
    """(nDCG@10, recall@10) of each answerable question (its query vector beside it) under the
    search options ``opts``."""
    out = []
    for j, v in zip(answerable, vectors, strict=True):
        ranked = _ranked(client, kb, j, v, opts)
        out.append((ndcg_at_k(ranked, j.relevant), recall_at_k(ranked, j.relevant)))
    return out


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _retrieval(
    client: Hipocampo, kb: UUID, answerable: Sequence[Judged], vectors: Sequence[list[float]]
) -> list[ModeScore]:
    """hybrid_search over ``kb`` in each mode (dense, lexical, hybrid as configured)."""
    rows = []
    for mode, opts in MODES.items():
        s = _scores(client, kb, answerable, vectors, opts)
        rows.append(ModeScore(mode, _mean([a for a, _ in s]), _mean([b for _, b in s]), len(s)))
    return rows


Outcome = Literal["stays", "not_confirmed", "confirmed"]


def outcome(chosen: float, current: float, confirmed: bool) -> Outcome:
    """What becomes of a value chosen on half the questions: the one in force ``stays`` the best,
    the chosen one is ``not_confirmed`` by the held-out half (the one in force is kept), or it is
    ``confirmed`` (worth storing)."""
    return "stays" if chosen == current else "confirmed" if confirmed else "not_confirmed"


@dataclass(frozen=True)
class WeightChoice:
    """The knowledge base's dense weight chosen on the ``chosen_on`` half (the odd-numbered
    answerable questions: 1st, 3rd, …), with each weight's nDCG@10 on both halves (``by_weight``:
    weight → (choosing half, held-out half)); ``current`` = the weight in force before;
    ``confirmed``: the chosen weight differs from it and is at least as good on the held-out half
    (only then is it worth storing)."""

    weight: float
    current: float
    by_weight: dict[float, tuple[float, float]]
    chosen_on: int
    held_out: int
    confirmed: bool

    @property
    def outcome(self) -> Outcome:
        """kb_eval.outcome of this choice."""
        return outcome(self.weight, self.current, self.confirmed)


def _choose(halves: Mapping[float, Sequence[float]], current: float, ties_to_higher: bool) -> tuple[float, bool]:
    """The value of ``halves`` (value → (score on the choosing half, on the held-out half, …))
    with the best choosing score (rounded to 6 decimals; a tie keeps ``current``, then the higher
    or the lower value), and whether the held-out half confirms it: another value than ``current``
    whose held-out score is not lower."""
    best = max(halves, key=lambda v: (round(halves[v][0], 6), v == current, v if ties_to_higher else -v))
    return best, best != current and halves[best][1] >= halves[current][1]


def _tune(client: Hipocampo, kb: UUID, answerable: Sequence[Judged], vectors: Sequence[list[float]]) -> WeightChoice:
    """``retrieval.dense_weight`` for ``kb``: the weight of calibration.FUSION_WEIGHTS (and the one
    in force) with the best mean nDCG@10 on the odd-numbered answerable questions (a tie keeps the
    one in force, then the lower), confirmed when it is not worse than the one in force on the
    others."""
    current = float(client.effective_config(kb)["retrieval"]["dense_weight"])
    by_weight: dict[float, tuple[float, float]] = {}
    for w in sorted({*FUSION_WEIGHTS, current}):
        s = [a for a, _ in _scores(client, kb, answerable, vectors, {"dense_weight": w})]
        by_weight[w] = (_mean(s[0::2]), _mean(s[1::2]))
    best, confirmed = _choose(by_weight, current, ties_to_higher=False)
    return WeightChoice(best, current, by_weight, len(answerable[0::2]), len(answerable[1::2]), confirmed)


@dataclass(frozen=True)
class AnswerRates:
    """``Orchestrator.ask`` on the judged questions, each outcome counted apart (issue 61 §1):
    answerable ones answered citing a relevant document (``answered_relevant``), answered citing
    none (``answered_other``: a wrong answer, never counted as answered), answered with passages
    of which one is a relevant document (``passages_relevant``) or none (``passages_other``),
    refused (``refused``); off-topic ones refused (``offtopic_refused``) or answered with passages
    (``offtopic_passages``); the refusal reasons counted; ``misses``: each question not handled as
    judged (``question``, ``expected`` "answer" | "refuse", ``got``: the refusal reason, "passages"
    or "answered", ``cited``: the documents it cited)."""

    answerable: int
    answered_relevant: int
    answered_other: int
    refused: int
    offtopic: int
    offtopic_refused: int
    reasons: dict[str, int] = field(default_factory=dict)
    misses: list[dict[str, Any]] = field(default_factory=list)
    passages_relevant: int = 0
    passages_other: int = 0
    offtopic_passages: int = 0


def _answers(client: Hipocampo, kb: UUID, judged: Sequence[Judged], embedder: EmbeddingProvider) -> AnswerRates:
    """Ask every question of ``judged`` over ``kb`` as ``hipocampo ask`` does (the configured
    generator: the extractive answer by default), without the answer cache or the rate limit."""
    from ..answers import Orchestrator

    orch = Orchestrator(client, embedder)
    counts: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    misses: list[dict[str, Any]] = []
    for j in judged:
        ans = orch.ask(j.question, kb_ids=[kb], use_cache=False, rate_limit=False)
        cited = list(dict.fromkeys(_judged_as(s.source_uri, j.relevant) for s in ans.sources))
        right = bool(set(cited) & j.relevant.keys())
        passages = ans.answer_source == "PASSAGES"
        if ans.refused:
            reasons[ans.reason or "refused"] += 1
            counts["refused" if j.relevant else "offtopic_refused"] += 1
        elif passages:
            counts[("passages_relevant" if right else "passages_other") if j.relevant else "offtopic_passages"] += 1
        elif j.relevant:
            counts["answered_relevant" if right else "answered_other"] += 1
        if bool(j.relevant) != (not ans.refused and not passages and right):
            got = (ans.reason or "refused") if ans.refused else ("passages" if passages else "answered")
            misses.append(
                {"question": j.question, "expected": "answer" if j.relevant else "refuse", "got": got, "cited": cited}
            )
    answerable = sum(1 for j in judged if j.relevant)
    return AnswerRates(
        answerable,
        counts["answered_relevant"],
        counts["answered_other"],
        counts["refused"],
        len(judged) - answerable,
        counts["offtopic_refused"],
        dict(reasons),
        misses,
        counts["passages_relevant"],
        counts["passages_other"],
        counts["offtopic_passages"],
    )


#: rag.min_confidence values a knowledge base's gate is tried at: 0.30-0.90 by 0.05 (within
#: config.toml's min_confidence_range; GATE_READING reads every candidate down to 0.30).
GATE_CONFIDENCES: tuple[float, ...] = tuple(round(0.30 + 0.05 * i, 2) for i in range(13))


@dataclass(frozen=True)
class GateChoice:
    """The knowledge base's ``rag.min_confidence`` chosen on the odd-numbered answerable and the
    odd-numbered off-topic questions by J = answerable answered citing a relevant document +
    off-topic refused − 1 (Youden's J, the rule the default was chosen by on FaQuAD's train split:
    docs/design.md §answers). ``by_value``: value → (J choosing half, J held-out half, answered
    citing a relevant document over all answerable, off-topic refused over all); ``current`` = the
    value in force; ``confirmed``: the chosen value differs from it, its held-out J is not
    lower, and it answers no more judged questions wrongly than the value in force (issue 61 §1:
    ``wrong`` = value → answerable questions answered citing no relevant document + off-topic
    questions answered, over every judged question; a wrong answer is worse than a refusal or
    passages). The decisions are calibration.GateReplay's over one reading of answer_evidence per
    question, which tests/test_gate_replay.py holds to the SQL gate's."""

    value: float
    current: float
    by_value: dict[float, tuple[float, float, float, float]]
    chosen_on: int
    held_out: int
    confirmed: bool
    wrong: dict[float, int] = field(default_factory=dict)

    @property
    def outcome(self) -> Outcome:
        """kb_eval.outcome of this choice."""
        return outcome(self.value, self.current, self.confirmed)


def _gate_readings(
    client: Hipocampo, kb: UUID, judged: Sequence[Judged], vectors: Sequence[list[float]]
) -> list[GateReplay]:
    """answer_evidence of every question (its query vector beside it) read once with every
    candidate kept (calibration.gate_reading: GATE_READING as the knowledge base's override in a
    transaction that is rolled back, so nothing changes for anyone else), to replay at the
    configured rag keys."""
    rag = client.rag_config_json(kb)
    out: list[GateReplay] = []
    with gate_reading(client, [kb]) as read:
        for j, v in zip(judged, vectors, strict=True):
            ev = read(j.question, v, kb)
            good = {e["source_uri"] for e in ev["evidence"] if _judged_as(e["source_uri"], j.relevant) in j.relevant}
            out.append(GateReplay.from_reading(ev, good, rag))
    return out


def _tune_gate(
    client: Hipocampo, kb: UUID, judged: Sequence[Judged], vectors: Sequence[list[float]]
) -> GateChoice | None:
    """``rag.min_confidence`` for ``kb`` (GateChoice): the value of GATE_CONFIDENCES (and the one in
    force) with the best J on the odd-numbered questions of each kind (a tie keeps the one in
    force, then the higher: fewer answers), confirmed when its J on the others is not lower than
    the one in force and it answers no more judged questions wrongly (gate_choice). None when
    either kind has fewer than 4 questions (two per half)."""
    answerable = [i for i, j in enumerate(judged) if j.relevant]
    offtopic = [i for i, j in enumerate(judged) if not j.relevant]
    if len(answerable) < 4 or len(offtopic) < 4:
        return None
    return gate_choice(_gate_readings(client, kb, judged, vectors), judged)


def gate_choice(readings: Sequence[GateReplay], judged: Sequence[Judged]) -> GateChoice:
    """_tune_gate's choice over one replayable reading per judged question (``readings[i]`` of
    ``judged[i]``, the rag config in force in each): every value of GATE_CONFIDENCES at or above
    rag.min_score, and the one in force, replayed (GateChoice says how it is chosen and confirmed)."""
    answerable = [i for i, j in enumerate(judged) if j.relevant]
    offtopic = [i for i, j in enumerate(judged) if not j.relevant]
    current = float(readings[0].rag["min_confidence"])
    floor = float(readings[0].rag["min_score"])

    def rate(ok: Sequence[bool], idx: Sequence[int]) -> float:
        return _mean([float(ok[i]) for i in idx])

    by_value: dict[float, tuple[float, float, float, float]] = {}
    wrong: dict[float, int] = {}
    for value in sorted({*(v for v in GATE_CONFIDENCES if v >= floor), current}):
        # Each question as judged: answerable ones answered citing a relevant document, off-topic
        # ones refused.
        ok = [
            r.at(min_confidence=value).decides(citing=bool(q.relevant)) == bool(q.relevant)
            for r, q in zip(readings, judged, strict=True)
        ]
        by_value[value] = (
            rate(ok, answerable[0::2]) + rate(ok, offtopic[0::2]) - 1,
            rate(ok, answerable[1::2]) + rate(ok, offtopic[1::2]) - 1,
            rate(ok, answerable),
            rate(ok, offtopic),
        )
        # Answered, but citing no relevant document (or answering an off-topic question).
        wrong[value] = sum(
            r.at(min_confidence=value).decides(citing=False)
            and not (q.relevant and r.at(min_confidence=value).decides(citing=True))
            for r, q in zip(readings, judged, strict=True)
        )
    best, confirmed = _choose(by_value, current, ties_to_higher=True)
    halves = len(answerable[0::2]) + len(offtopic[0::2]), len(answerable[1::2]) + len(offtopic[1::2])
    confirmed = confirmed and wrong[best] <= wrong[current]
    return GateChoice(best, current, by_value, *halves, confirmed, wrong)


@dataclass(frozen=True)
class KbEvaluation:
    """What ``evaluate_kb`` measured: the ``questions`` read, the embedding ``model`` they were
    searched with (a choice belongs to it), ``retrieval`` per mode, and when asked for,
    ``answers``, the ``dense_weight`` choice and the ``min_confidence`` choice (None otherwise;
    ``min_confidence`` also when the questions have fewer than 4 answerable or 4 off-topic ones)."""

    questions: int
    model: str
    retrieval: list[ModeScore]
    answers: AnswerRates | None = None
    dense_weight: WeightChoice | None = None
    min_confidence: GateChoice | None = None


def evaluate_kb(
    client: Hipocampo,
    kb: UUID,
    judged: Sequence[Judged],
    embedder: EmbeddingProvider,
    *,
    answers: bool = False,
    tune: bool = False,
) -> KbEvaluation:
    """``kb`` measured on ``judged`` as ``client`` sees it (RLS applies): hybrid_search in each mode
    (dense, lexical, hybrid as configured) for the answerable questions, every question embedded
    once as a query by ``embedder`` (the active model); with ``answers`` every question asked
    (AnswerRates); with ``tune`` the knowledge base's dense weight chosen and confirmed
    (WeightChoice), and its answer gate's rag.min_confidence when there are at least 4 answerable
    and 4 off-topic questions (GateChoice). Nothing is written: storing a confirmed value is the
    caller's (``store_confirmed``).

    Raises:
        InvalidInputError (22023): ``tune`` with fewer than 4 answerable questions (two per
            half), before any search.
        PermissionDeniedError (42501): ``tune`` with off-topic questions by a caller who may not
            change the knowledge base's settings (the gate is read under a temporary override,
            rolled back).
        HipocampoError: as hybrid_search / answer_evidence (e.g. 42501 without access to the
            knowledge base).
    """
    answerable = [i for i, j in enumerate(judged) if j.relevant]
    if tune and len(answerable) < 4:
        raise InvalidInputError("choosing a dense weight needs at least 4 answerable questions", "22023")
    vectors = [embedder.embed_query(j.question) for j in judged]
    questions, qvectors = [judged[i] for i in answerable], [vectors[i] for i in answerable]
    return KbEvaluation(
        len(judged),
        embedder.model_name,
        _retrieval(client, kb, questions, qvectors),
        _answers(client, kb, judged, embedder) if answers else None,
        _tune(client, kb, questions, qvectors) if tune else None,
        _tune_gate(client, kb, judged, vectors) if tune else None,
    )


def store_confirmed(client: Hipocampo, kb: UUID, result: KbEvaluation) -> dict[str, float]:
    """Store the confirmed choices of ``result`` as ``kb``'s tuning for ``result.model``
    (``set_kb_tuning``): retrieval.dense_weight and rag.min_confidence, each only when its
    held-out half confirmed it, in force while that model is searched (a model switch falls back
    to the new model's calibration; docs/design.md §calibration). The knowledge base's plain
    override of the same key, which would hide the tuned value, is removed. Returns
    ``{"<section>.<key>": value}`` for what was written (empty when nothing was).

    Raises:
        PermissionDeniedError (42501): the caller may not change the knowledge base's settings.
        NotFoundError (P0002): ``result.model`` is not a registered embedding model.
    """
    written: dict[str, float] = {}
    if result.dense_weight and result.dense_weight.confirmed:
        written["retrieval.dense_weight"] = result.dense_weight.weight
    if result.min_confidence and result.min_confidence.confirmed:
        written["rag.min_confidence"] = result.min_confidence.value
    with client.transaction() as cur:  # all or nothing
        for name, value in written.items():
            section, key = name.split(".")
            args = {"kb_id": kb, "section": section}
            client.rpc_in(cur, "set_knowledge_base_tuning", args | {"model": result.model, "patch": {key: value}})
            client.rpc_in(cur, "set_knowledge_base_config", args | {"patch": {key: None}})
    return written
