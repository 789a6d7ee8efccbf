"""Thresholds that depend on an embedding model's cosine scale, chosen from the bundled datasets
by the rules behind all-MiniLM-L6-v2's configured values (issue 22 §2; docs/BENCHMARKS.md,
"Thresholds per embedding model").

- ``retrieval.min_similarity``: the largest grid value that drops at most 0.5 % of the relevant
  (question, passage) pairs of each of FaQuAD, Quati, the regulation and the contract asked in
  people's words (cosine floor of the dense leg; for the last two, each question's best cosine
  over the chunks of the article or clause that answers it: a floor fitted on questions in the
  documents' words alone cut a tenth of the contract's, issue 61 §3).
- ``memory.context_threshold``: the highest grid value that keeps at least 75 % of LoCoMo's
  (question, evidence turn) pairs; ``memory.answer_threshold``: the lowest that keeps at most
  1.5 % of (question, other turn) pairs. Chosen on conversations 1-5; 6-10 reported as held out.
- ``memory.duplicate_cosine``: the lowest multiple of 0.005 above which at most 0.1 % of LoCoMo's
  observations (short facts about a speaker, as memories are) have a neighbour of the same
  speaker that is not a copy of them: a false "duplicate" loses the user's new fact, a missed
  one stores a near-copy beside it (both kept, both correctable). Chosen on conversations 1-5,
  6-10 held out.
- ``retrieval.dedupe_threshold``: the lowest multiple of 0.005 above which at most 0.5 % of the
  passages of FaQuAD and of Quati have a neighbour in their corpus that is not a copy of them
  (hiding such a neighbour hides a different passage, e.g. the distance-learning version of a
  rule beside the in-person one). A copy: the shorter text's word 5-grams are >= 90 % inside the
  longer one's (case and spacing ignored), e.g. the same paragraph filed in two documents.

The grid step of the first three follows the model's spread: 0.05 when the middle 80 % of
LoCoMo's evidence cosines spans more than 0.2 (MiniLM: 0.36), else 0.01 (e5: 0.08, its cosines
crowd into 0.75-0.9). With MiniLM they give 0.25 / 0.35 / 0.55, the configured values. The
duplicate rules use 0.005 (their values sit near 1 for every model: e5's at 0.985 and 0.995).

Rules that run the real searches (``hipocampo calibrate --weights``, in a scratch database; the
five above need only the model's vectors). Each writes its data into a tenant it creates in the
database it is given and deletes afterwards, whatever happens:

- ``retrieval.dense_weight`` (``fusion_weight``): of 0.3 / 0.5 / 1.0 / 1.5 / 2.0 (the lexical
  leg's weight 1.0), the one with the best mean nDCG@10 over FaQuAD, Quati and SciFact through
  ``hybrid_search``, the dense leg floored at the model's ``retrieval.min_similarity``
  (docs/BENCHMARKS.md, "Retrieval with each offline model").
- ``conversations.dense_weight`` (``history_weight``): LoCoMo recall@10 of search_history on
  conversations 1-5 for 0.7 / 1.0 / 1.5 / 2.0; the seed's 1.0 unless another beats it by more
  than 0.005; 6-10 held out.
- ``rag.sentence_weight``, ``sentence_cosine_low``, ``sentence_cosine_high`` (``sentence_gate``):
  the answer gate's grid point with the best J on FaQuAD's train split, switched on only when it
  raises J by at least 0.02 (benchmarks/calibrate_sentences.py reports it with the held-out sets).

- ``rag.passages_floor`` (the on-topic floor of issue 61 §1): the rule of
  :mod:`hipocampo.evaluation.on_topic` over FaQuAD, Quati, SciFact, the regulation and the
  contract.

A model's whole calibration (``[calibration."<model>"]`` in config.toml, stored per model in the
database: docs/design.md §thresholds) holds all twelve.
``retrieval.coverage_dense_boost`` is chosen by ``benchmarks/fusion_coverage.py --model <m>``
(leave-one-dataset-out over five sets), not here: a model keeps its own value, and a model without
a calibration of its own gets 1 (no lean: e5 chose 12, MiniLM 1, so the lean is not carried from
one model to another). Without ``--weights`` the five that need the searches are not computed:
:func:`model_calibration` keeps the model's own values of those, or carries the default model's
over and says so.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomlkit

from ..embeddings import EmbeddingProvider
from .datasets import load_beir, load_locomo, locomo_turns

if TYPE_CHECKING:
    from ..client import Hipocampo

__all__ = [
    "FUSION_SETS",
    "FUSION_WEIGHTS",
    "GATE_READING",
    "HISTORY_WEIGHTS",
    "SENTENCES_READ",
    "SENTENCE_LOWS",
    "SENTENCE_MIN_GAIN",
    "SENTENCE_OFF",
    "SENTENCE_SPANS",
    "SENTENCE_WEIGHTS",
    "Finding",
    "GateReading",
    "GateReplay",
    "SentenceChoice",
    "SentencePoint",
    "answer_threshold",
    "calibrate",
    "context_threshold",
    "distinct_neighbours",
    "duplicate_threshold",
    "fusion_weight",
    "gate_reading",
    "grid",
    "grid_step",
    "history_weight",
    "is_copy",
    "locomo_observations",
    "locomo_pairs",
    "memory_neighbours",
    "model_calibration",
    "passage_neighbours",
    "relevant_pairs",
    "sentence_gate",
    "sentence_point",
    "similarity_floor",
    "write_calibration",
]

SIMILARITY_SETS = ("faquad", "quati", "regulation", "contract")
DUPLICATE_SETS = ("faquad", "quati")  # retrieval.dedupe_threshold: passages of these
NO_LEAN = 1.0  # retrieval.coverage_dense_boost of a model not measured by benchmarks/fusion_coverage.py
PARAPHRASE_SETS = ("regulation", "contract")  # examples/: questions in people's words
MAX_DROPPED = 0.005  # share of relevant pairs a similarity floor may drop
MIN_EVIDENCE_KEPT = 0.75  # memory.context_threshold keeps at least this share of evidence pairs
MAX_OTHERS_KEPT = 0.015  # memory.answer_threshold keeps at most this share of other pairs
WIDE_SPREAD = 0.2  # p90 - p10 of evidence cosines above this: grid step 0.05, else 0.01
DUPLICATE_STEP = 0.005  # grid step of the duplicate rules (e5 needs 0.995)
MAX_FACTS_MERGED = 0.001  # memory.duplicate_cosine: share of distinct facts it may call duplicates
MAX_PASSAGES_HIDDEN = 0.005  # retrieval.dedupe_threshold: share of passages with a distinct neighbour above it
HISTORY_WEIGHTS = (0.7, 1.0, 1.5, 2.0)  # conversations.dense_weight tried (the lexical leg's: 1.0)
HISTORY_SEED = 1.0  # ... the seed's value, kept unless another beats it by more than HISTORY_MARGIN
HISTORY_MARGIN = 0.005  # recall@10, the noise between reruns
SENTENCE_WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0)  # rag.sentence_weight tried
SENTENCE_LOWS = tuple(round(0.50 + 0.01 * i, 2) for i in range(46))  # rag.sentence_cosine_low: 0.50..0.95
SENTENCE_SPANS = (0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.16, 0.20)  # sentence_cosine_high - low
SENTENCE_MIN_GAIN = 0.02  # J the sentences must add on FaQuAD's train split to be switched on
FUSION_SETS = ("faquad", "quati", "scifact")  # retrieval.dense_weight: the best mean nDCG@10 over these
FUSION_WEIGHTS = (0.3, 0.5, 1.0, 1.5, 2.0)  # ... of these dense weights (the lexical leg's: 1.0)
COPY_CONTAINMENT = 0.9  # share of the shorter text's word 5-grams inside the longer: a copy
SHINGLE = 5  # words per shingle of the copy test


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


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = text.lower().split()
    return {tuple(words[i : i + SHINGLE]) for i in range(max(1, len(words) - SHINGLE + 1))}


def is_copy(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are copies: at least COPY_CONTAINMENT of the shorter one's word
    5-grams (case and spacing ignored) occur in the other (one paragraph filed twice, or inside a
    longer version of itself)."""
    sa, sb = _shingles(a), _shingles(b)
    return len(sa & sb) >= COPY_CONTAINMENT * min(len(sa), len(sb))


def distinct_neighbours(
    texts: list[str], vectors: list[list[float]], groups: Sequence[object] | None = None
) -> list[float]:
    """For each text, the cosine to its nearest neighbour (in the same group, when ``groups`` is
    given: one label per text) that is not a copy of it (:func:`is_copy`); texts without one are
    left out. ``vectors``: unit-length embeddings, one per text."""
    import numpy as np

    labels = list(groups) if groups is not None else [0] * len(texts)
    out: list[float] = []
    for label in dict.fromkeys(labels):
        ix = [i for i, x in enumerate(labels) if x == label]
        v = np.asarray([vectors[i] for i in ix], dtype=np.float32)
        sims = v @ v.T
        np.fill_diagonal(sims, -np.inf)
        for a, row in enumerate(sims):
            for b in np.argsort(-row)[: len(ix) - 1]:
                if not is_copy(texts[ix[a]], texts[ix[int(b)]]):
                    out.append(float(row[b]))
                    break
    return out


def duplicate_threshold(distinct: list[list[float]], max_above: float, candidates: list[float]) -> float:
    """The lowest candidate above which (strictly, as the duplicate tests compare) at most
    ``max_above`` of every set's distinct-neighbour cosines lie (``distinct``: one list per set);
    the highest candidate when none does."""
    ok = [t for t in candidates if all(sum(x > t for x in xs) / len(xs) <= max_above for xs in distinct if xs)]
    return min(ok, default=max(candidates))


def locomo_observations(samples: list[dict[str, object]]) -> tuple[list[str], list[tuple[int, str]]]:
    """LoCoMo's observations (one fact about a speaker each) of ``samples``, each text once per
    speaker, with its (conversation, speaker) label."""
    texts: list[str] = []
    labels: list[tuple[int, str]] = []
    for n, sample in enumerate(samples):
        seen: set[tuple[str, str]] = set()
        for session in sample.get("observation", {}).values():  # type: ignore[attr-defined]
            for speaker, items in session.items():
                for item in items:
                    text = str(item[0])
                    if (speaker, text) not in seen:
                        seen.add((speaker, text))
                        texts.append(text)
                        labels.append((n, speaker))
    return texts, labels


def memory_neighbours(embedder: EmbeddingProvider, samples: list[dict[str, object]]) -> list[float]:
    """Each LoCoMo observation's cosine to the nearest other fact of its speaker (not a copy)."""
    texts, labels = locomo_observations(samples)
    return distinct_neighbours(texts, embedder.embed_documents(texts), labels)


def passage_neighbours(embedder: EmbeddingProvider, name: str) -> list[float]:
    """Each passage of the BEIR set ``name`` (title + text): its cosine to the nearest passage of
    the corpus that is not a copy of it (copies judged on the text)."""
    ds = load_beir(name)
    ids = sorted(ds.corpus)
    texts = [f"{ds.corpus[d][0]}\n{ds.corpus[d][1]}" if ds.corpus[d][0] else ds.corpus[d][1] for d in ids]
    return distinct_neighbours([ds.corpus[d][1] for d in ids], embedder.embed_documents(texts))


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
    """Cosines of each question of the BEIR set ``name`` to its relevant passages (title + text);
    of a paraphrase set (regulation, contract), each answerable question's best cosine over the
    chunks of its article or clause."""
    if name in PARAPHRASE_SETS:
        from .on_topic import load_sets

        (qs,) = load_sets([name])
        vectors = embedder.embed_documents(qs.texts)
        asked = [(q, unit) for q, unit in zip(qs.on_topic, qs.answers, strict=True) if unit is not None]
        return [
            max(_dot(qv, v) for v, u in zip(vectors, qs.units, strict=True) if u == unit)
            for qv, unit in ((embedder.embed_query(q), unit) for q, unit in asked)
        ]
    ds = load_beir(name)
    docs = sorted({d for rel in ds.qrels.values() for d in rel})
    texts = [f"{ds.corpus[d][0]}\n{ds.corpus[d][1]}" if ds.corpus[d][0] else ds.corpus[d][1] for d in docs]
    dv = dict(zip(docs, embedder.embed_documents(texts), strict=True))
    return [_dot(embedder.embed_query(ds.queries[q]), dv[d]) for q in ds.queries for d in ds.qrels[q] if d in dv]


def calibrate(embedder: EmbeddingProvider) -> list[Finding]:
    """The model's ``rag.passages_floor`` (hipocampo.evaluation.on_topic), ``retrieval.min_similarity``,
    ``retrieval.dedupe_threshold``, ``memory.context_threshold``, ``memory.answer_threshold`` and
    ``memory.duplicate_cosine`` by the rules above (embeds FaQuAD's, Quati's, SciFact's and the
    regulation's passages and questions, and LoCoMo's turns, observations and questions: minutes
    on 2 cores for e5).

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
    fine = grid(DUPLICATE_STEP)
    passages = [passage_neighbours(embedder, name) for name in DUPLICATE_SETS]
    dedupe = duplicate_threshold(passages, MAX_PASSAGES_HIDDEN, fine)
    facts, held_facts = memory_neighbours(embedder, data[:5]), memory_neighbours(embedder, data[5:])
    duplicate = duplicate_threshold([facts], MAX_FACTS_MERGED, fine)
    kept = _kept

    def above(xs: list[float], t: float) -> float:
        return sum(x > t for x in xs) / max(len(xs), 1)

    from .on_topic import best_cosines, fit_floor, load_sets, refused_share

    on_topic = load_sets()
    cosines = best_cosines(embedder, on_topic)
    names = [t.name for t in on_topic]
    passages_floor = fit_floor(cosines, names)
    return [
        Finding(
            "rag.passages_floor",
            passages_floor,
            "refuses as off-topic "
            + ", ".join(f"{n} {refused_share(cosines[n]['off'], passages_floor):.1%}" for n in names)
            + " of the other sets' questions; keeps "
            + ", ".join(f"{n} {1 - refused_share(cosines[n]['on'], passages_floor):.1%}" for n in names)
            + " of their own (hipocampo.evaluation.on_topic)",
        ),
        Finding(
            "retrieval.min_similarity",
            floor,
            f"drops at most {MAX_DROPPED:.1%} of the relevant pairs of {' and '.join(SIMILARITY_SETS)} (step {step})",
        ),
        Finding(
            "retrieval.dedupe_threshold",
            dedupe,
            "passages with a distinct neighbour above it: "
            + ", ".join(f"{n} {above(xs, dedupe):.1%}" for n, xs in zip(DUPLICATE_SETS, passages, strict=True))
            + f" (at most {MAX_PASSAGES_HIDDEN:.1%})",
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
        Finding(
            "memory.duplicate_cosine",
            duplicate,
            f"LoCoMo facts with a distinct fact of their speaker above it: {above(facts, duplicate):.2%} (1-5), "
            f"{above(held_facts, duplicate):.2%} held out (at most {MAX_FACTS_MERGED:.1%})",
        ),
    ]


@contextmanager
def _scratch_tenant(client: Hipocampo) -> Iterator[tuple[uuid.UUID, Hipocampo]]:
    """A tenant created for one rule's run in ``client``'s database, and ``client`` acting as its
    service_role; deleted on exit whatever happens (its knowledge bases, chunks, messages)."""
    from ..client import Actor

    tid = client.create_tenant("Calibration (scratch)", f"calibration-{uuid.uuid4().hex[:12]}")
    try:
        yield tid, client.as_actor(Actor.service(tid))
    finally:
        client.delete_tenant(tid)


def fusion_weight(
    client: Hipocampo,
    embedder: EmbeddingProvider,
    floor: float,
    sets: Sequence[str] = FUSION_SETS,
    weights: Sequence[float] = FUSION_WEIGHTS,
) -> Finding:
    """``retrieval.dense_weight``: of ``weights`` (the lexical leg's weight 1.0), the one with the
    best mean nDCG@10 (BEIR's: first 10 distinct documents, gain = the qrels grade) over ``sets``,
    every question searched through ``hipocampo.hybrid_search`` with the dense leg floored at
    ``floor`` (the model's ``retrieval.min_similarity``, cosine). A tie keeps the lower weight.

    Each set's passages are ingested with ``embedder`` (as FAQ entries, one chunk each) into a
    tenant created for the run in ``client``'s database and deleted afterwards, whatever happens.
    The model must be registered there with a calibration (``hybrid_search`` refuses a model
    without one: 55000); it need not be active. Minutes: SciFact's 5,183 abstracts take ~25 min
    with e5 on 2 cores unless ``embedder`` caches them.

    Args:
        client: the database owner or service_role without a tenant (it creates and deletes one).
        embedder: the model calibrated (its ``model_name`` is searched).
        floor: ``retrieval.min_similarity`` in [-1, 1].
        sets: BEIR sets of ``../shared/datasets`` (default FaQuAD, Quati, SciFact).
        weights: dense weights to try.

    Returns:
        The Finding; its evidence lists every weight's mean nDCG@10.

    Raises:
        FileNotFoundError: the shared datasets are missing.
        HipocampoError: the database refused a step (e.g. 55000, the model has no calibration).
    """
    from ..embeddings import count_tokens
    from . import evaluate, index_beir

    data = [load_beir(name) for name in sets]  # missing datasets fail before any write
    with _scratch_tenant(client) as (_, scratch):
        modes = {f"{w}": {"dense_weight": w, "lexical_weight": 1.0, "min_similarity": floor} for w in weights}
        by_weight: dict[float, list[float]] = {w: [] for w in weights}
        for ds in data:
            kb = index_beir(scratch, ds, embedder, count_tokens)
            for w, result in zip(
                weights, evaluate(scratch, ds, embedder, kb, modes, embedding_model=embedder.model_name), strict=True
            ):
                by_weight[w].append(result.ndcg10)
    means = {w: sum(xs) / len(xs) for w, xs in by_weight.items()}
    best = max(weights, key=lambda w: (means[w], -w))
    return Finding(
        "retrieval.dense_weight",
        best,
        f"mean nDCG@10 over {', '.join(sets)}: "
        + ", ".join(f"{w:g} {means[w]:.3f}" for w in weights)
        + f" (each: {', '.join(f'{v:.3f}' for v in by_weight[best])})",
    )


class _DenseOnly:
    """``embedder`` without token vectors: history search then skips its late-interaction re-rank,
    whose tokens come from MiniLM whatever the model (the weight rule reads the two legs)."""

    tokens_supported = False

    def __init__(self, embedder: EmbeddingProvider) -> None:
        self.inner = embedder
        self.model_name, self.provider = embedder.model_name, embedder.provider
        self.dims, self.model_version = embedder.dims, embedder.model_version

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def history_weight(
    client: Hipocampo,
    embedder: EmbeddingProvider,
    weights: Sequence[float] = HISTORY_WEIGHTS,
    chosen_on: int = 5,
) -> Finding:
    """``conversations.dense_weight``: LoCoMo recall@10 of ``search_history`` (the share of a
    question's evidence turns among the 10 messages found in its conversation, averaged over the
    questions) on conversations 1..``chosen_on``, for each of ``weights``; the seed's 1.0
    (HISTORY_SEED) is kept unless another weight beats it by more than 0.005 (HISTORY_MARGIN, the
    noise between reruns). The other conversations are reported as held out. Searched without the
    late-interaction re-rank (its tokens are MiniLM's whatever the model); the other
    ``conversations`` keys as configured, time zone UTC (LoCoMo's dates are naive).

    Every turn is stored as a message of one user of a tenant created for the run in
    ``client``'s database (``locomo_turns``: "Speaker: text", the session's date), deleted
    afterwards whatever happens. ``search_history`` reads the active model, so ``embedder``'s model
    must be the active one there (a scratch database: ``hipocampo calibrate --weights``).

    Args:
        client: the database owner or service_role without a tenant (it creates and deletes one).
        embedder: the active model (turns embedded as passages, questions as queries).
        weights: dense weights to try (the lexical leg's weight 1.0).
        chosen_on: how many of LoCoMo's conversations, from the first, choose the weight.

    Returns:
        The Finding; its evidence lists every weight's recall@10 on both parts.

    Raises:
        FileNotFoundError: the shared datasets are missing.
        HipocampoError: the database refused a step (e.g. 22000, the embedder is not the active model).
    """
    from ..client import Actor
    from ..memory import Memory

    data = load_locomo()  # missing datasets fail before any write
    dense = _DenseOnly(embedder)
    with _scratch_tenant(client) as (tid, scoped):
        user = uuid.uuid4()
        client.add_member(tid, user, "member")
        mem = Memory(client.as_actor(Actor.user(user, tid)), dense)
        questions: list[tuple[int, uuid.UUID, str, set[str]]] = []
        for ci, sample in enumerate(data):
            conv = uuid.uuid4()
            turns = locomo_turns(sample["conversation"])
            for i in range(0, len(turns), 256):
                mem.add_messages(conv, turns[i : i + 256], language="english")
            ids = {str(t["metadata"]["dia_id"]) for t in turns}
            for q in sample["qa"]:
                gold = {str(e).strip() for e in q.get("evidence") or []} & ids
                if gold:
                    questions.append((ci, conv, str(q["question"]), gold))
        recall: dict[float, tuple[float, float]] = {}
        for w in weights:
            scoped.set_tenant_config("conversations", {"dense_weight": w, "time_zone": "UTC"})
            parts: tuple[list[float], list[float]] = ([], [])
            for ci, conv, question, gold in questions:
                hits = mem.search_history(question, conversation_id=conv, k=10)
                found = {str(h.metadata.get("dia_id")) for h in hits}
                parts[0 if ci < chosen_on else 1].append(len(gold & found) / len(gold))
            recall[w] = (sum(parts[0]) / max(len(parts[0]), 1), sum(parts[1]) / max(len(parts[1]), 1))
    seed = HISTORY_SEED if HISTORY_SEED in recall else weights[0]
    challenger = max(weights, key=lambda w: (recall[w][0], -abs(w - seed)))
    best = challenger if recall[challenger][0] > recall[seed][0] + HISTORY_MARGIN else seed
    return Finding(
        "conversations.dense_weight",
        best,
        f"LoCoMo recall@10, conversations 1-{chosen_on} / held out: "
        + ", ".join(f"{w:g} {a:.3f} / {b:.3f}" for w, (a, b) in recall.items())
        + f" (another weight must beat {seed:g} by > {HISTORY_MARGIN})",
    )


#: The sentence keys of GATE_READING: a weight > 0, so that ingestion embeds the sentences and
#: answer_evidence returns their cosine c.
SENTENCES_READ: dict[str, Any] = {"sentence_weight": 1.0, "sentence_cosine_low": 0.0, "sentence_cosine_high": 1.0}
#: The rag override under which ``answer_evidence`` is read once for GateReplay: every candidate
#: kept (min_score 0, a token budget of 8,000), the floor of rag.min_confidence, and the sentence
#: cosine read (SENTENCES_READ).
GATE_READING: dict[str, Any] = {
    "min_score": 0.0,
    "min_confidence": 0.30,
    "evidence_token_budget": 8000,
    **SENTENCES_READ,
}


#: ``read(question, query vector, knowledge base id)`` → answer_evidence's result under GATE_READING.
GateReading = Callable[[str, Sequence[float], uuid.UUID], dict[str, Any]]


class _Rollback(Exception):
    """Leaves gate_reading's transaction, which undoes its temporary overrides."""


@contextmanager
def gate_reading(client: Hipocampo, kbs: Sequence[uuid.UUID]) -> Iterator[GateReading]:
    """answer_evidence read under GATE_READING in the knowledge bases ``kbs``: yields ``read``,
    whose calls all run in one transaction in which GATE_READING is each knowledge base's rag
    override; the transaction is rolled back on leaving, so the overrides are never seen by anyone
    else nor left behind.

    Raises:
        PermissionDeniedError (42501): the caller may not change the knowledge bases' settings.
        HipocampoError: as answer_evidence.
    """
    try:
        with client.transaction() as cur:
            for kb in kbs:
                client.rpc_in(cur, "set_knowledge_base_config", {"kb_id": kb, "section": "rag", "patch": GATE_READING})

            def read(question: str, vector: Sequence[float], kb: uuid.UUID) -> dict[str, Any]:
                args = {"query_text": question, "query_embedding": list(vector), "kb_ids": [kb]}
                return dict(client.rpc_in(cur, "answer_evidence", args | {"tenant_id": client._tenant()}))

            yield read
            raise _Rollback
    except _Rollback:
        pass


@dataclass
class GateReplay:
    """One question's candidates as answer_evidence scored them under GATE_READING, for replaying
    the gate at other points: ``other_refusal`` (a refusal the replay does not redo: a conflict
    in the reading, or rag disabled), the ``good`` source_uris, the evidence ``items`` (in
    answer_evidence's order, the combined score) and the ``rag`` config the replay applies (its
    min_score, min_confidence, evidence_token_budget and cross-check keys). tests/test_gate_replay.py
    holds it to answer_evidence's decisions."""

    other_refusal: bool
    good: set[str]
    items: list[dict[str, Any]]
    rag: dict[str, Any]

    @classmethod
    def from_reading(cls, reading: Mapping[str, Any], good: set[str], rag: Mapping[str, Any]) -> GateReplay:
        """The replay of ``reading`` (answer_evidence's result under GATE_READING) at the configured
        ``rag`` (a rag config: rag_config's, or answer_evidence's ``config``). A conflict in the
        reading counts as a refusal: detect_conflicts runs over the chunks above min_score, so
        fewer chunks may hold none, and the replay cannot redo it (it refuses where answer_evidence
        might answer, never the reverse)."""
        other = bool(reading["conflicts"]) or reading["reason"] == "rag_disabled"
        return cls(other, good, list(reading["evidence"]), dict(rag))

    def at(self, **rag: Any) -> GateReplay:
        """The same reading replayed with these rag keys changed (e.g. ``min_confidence=0.5``)."""
        return replace(self, rag={**self.rag, **rag})

    def decides(self, citing: bool) -> bool:
        """``answered`` at the sentence point of the replay's own rag config (its sentence_weight,
        sentence_cosine_low and sentence_cosine_high)."""
        r = self.rag
        low, high = float(r["sentence_cosine_low"]), float(r["sentence_cosine_high"])
        return self.answered(float(r["sentence_weight"]), low, high, citing)

    def answered(self, weight: float, low: float, high: float, citing: bool) -> bool:
        """The gate replayed at this point: support = lexical support + weight * clip((c - low) /
        (high - low)); evidence = the chunks with support >= rag.min_score, in order, while they
        fit rag.evidence_token_budget (the first always); answered when one reaches
        rag.min_confidence and the cross-check passes over those (and, with ``citing``, the first
        two such chunks, the extractive answer's two quotes, include a good source)."""
        from ..answers.cross_check import cross_checked

        if self.other_refusal:
            return False
        span = max(high - low, 1e-6)
        budget, used = int(self.rag["evidence_token_budget"]), 0
        good = []
        for e in self.items:
            c = e["sentence_similarity"]
            bonus = weight * min(1.0, max(0.0, (float(c) - low) / span)) if weight and c is not None else 0.0
            support = float(e["lexical_support"]) + bonus
            if support < self.rag["min_score"]:
                continue
            if used > 0 and used + int(e["token_count"]) > budget:
                break
            used += int(e["token_count"])
            if support >= self.rag["min_confidence"]:
                good.append(e)
        if not good or not cross_checked(good, self.rag):
            return False
        return not citing or any(e["source_uri"] in self.good for e in good[:2])


SentencePoint = tuple[float, float, float]  # (rag.sentence_weight, sentence_cosine_low, sentence_cosine_high)
SENTENCE_OFF: SentencePoint = (0.0, 0.0, 1.0)  # weight 0: lexical support alone


@dataclass(frozen=True)
class SentenceChoice:
    """The sentence rule's outcome: the grid's ``points``, the ``best`` one and its J
    (``best_j``), J at weight 0 (``j_off``), and whether the gain switches the sentences ``on``."""

    points: list[SentencePoint]
    best: SentencePoint
    best_j: float
    j_off: float
    on: bool


def sentence_point(j_train: Callable[[SentencePoint], float]) -> SentenceChoice:
    """The sentence rule on a J function of the train split: the grid point (SENTENCE_WEIGHTS x
    SENTENCE_LOWS x SENTENCE_SPANS, high <= 1) with the best J (rounded to 6 decimals; a tie keeps
    the smallest point), switched on when it beats weight 0 by at least SENTENCE_MIN_GAIN."""
    points = [(w, lo, round(lo + sp, 2)) for w in SENTENCE_WEIGHTS for lo in SENTENCE_LOWS for sp in SENTENCE_SPANS]
    points = [p for p in points if p[2] <= 1.0]
    neg_j, best = min((-round(j_train(p), 6), p) for p in points)
    j_off = j_train(SENTENCE_OFF)
    return SentenceChoice(points, best, -neg_j, j_off, -neg_j - j_off >= SENTENCE_MIN_GAIN - 1e-9)


def sentence_gate(client: Hipocampo, embedder: EmbeddingProvider) -> list[Finding]:
    """``rag.sentence_weight``, ``rag.sentence_cosine_low`` and ``rag.sentence_cosine_high``: the
    answer gate's sentence similarity (docs/design.md §answers). The grid point (weight 0.1-1.0,
    low 0.50-0.95, high - low 0.02-0.20) with the best J = answered citing the gold paragraph +
    unanswerable refused - 1 on FaQuAD's train split (``hipocampo.evaluation.answer_sets``), at the
    configured ``rag.min_score`` and ``rag.min_confidence``; the weight stays 0 unless that point
    raises J by at least 0.02 over weight 0 (SENTENCE_MIN_GAIN: each sentence costs an embedding
    at ingestion). FaQuAD's dev split is reported as held out.

    FaQuAD's two knowledge bases are ingested with their sentence embeddings into a tenant created
    for the run in ``client``'s database and deleted afterwards whatever happens; every question
    is asked once through ``answer_evidence`` with every candidate kept (GATE_READING), and the
    gate is replayed for each point (GateReplay) at the configured min_score, min_confidence and
    token budget.
    ``embedder``'s model must be the active one there (a scratch database: ``hipocampo calibrate
    --weights``). Minutes: e5 embeds ~3,000 paragraphs and sentences.

    Args:
        client: the database owner or service_role without a tenant (it creates and deletes one).
        embedder: the active model.

    Returns:
        Three Findings (weight, low, high); the weight's evidence gives J at weight 0 and at the
        best point, on the train and the dev split.

    Raises:
        FileNotFoundError: the shared datasets are missing.
        HipocampoError: the database refused a step.
    """
    from .answer_sets import faquad_kbs, faquad_sets

    fq = load_beir("faquad")
    with _scratch_tenant(client) as (_, scoped):
        configured = scoped.effective_config_json()["rag"]
        # While ingesting: a weight > 0, so that sentences are embedded.
        scoped.set_tenant_config("rag", SENTENCES_READ)
        kb_full, kept, kb_held = faquad_kbs(scoped, fq, embedder)
        with gate_reading(scoped, [kb_full, kb_held]) as read:

            def ask(question: str, kb: uuid.UUID, good: set[str]) -> GateReplay:
                return GateReplay.from_reading(read(question, embedder.embed_query(question), kb), good, configured)

            sets = faquad_sets(ask, fq, kept, kb_full, kb_held)

    def j(split: str, point: tuple[float, float, float]) -> float:
        found = sets[f"{split}: answerable"]
        gone = sets[f"{split}: unanswerable"]
        answered = sum(x.answered(*point, citing=True) for x in found) / max(len(found), 1)
        refused = sum(not x.answered(*point, citing=False) for x in gone) / max(len(gone), 1)
        return answered + refused - 1

    choice = sentence_point(lambda point: j("train", point))
    best, best_j, j_off, on = choice.best, choice.best_j, choice.j_off, choice.on
    weight = best[0] if on else 0.0
    verdict = (
        f"J on FaQuAD train {j_off:.3f} at weight 0, {best_j:.3f} at weight {best[0]:g}, low {best[1]:.2f}, high "
        f"{best[2]:.2f} ({'on' if on else f'off: the gain is below {SENTENCE_MIN_GAIN}'}); held out (dev) "
        f"{j('dev', SENTENCE_OFF):.3f} / {j('dev', best):.3f}"
    )
    return [
        Finding("rag.sentence_weight", weight, verdict),
        Finding("rag.sentence_cosine_low", best[1], "the best point's (read only with a weight above 0)"),
        Finding("rag.sentence_cosine_high", best[2], "the best point's (read only with a weight above 0)"),
    ]


Calibration = dict[str, dict[str, float]]


def model_calibration(
    model: str, findings: list[Finding], calibrations: dict[str, Calibration], default_model: str
) -> tuple[Calibration, list[str]]:
    """``model``'s whole calibration with ``findings`` applied: its own calibration from
    ``calibrations`` (config.toml's ``[calibration]``: {model: {section: {key: value}}}) where it
    has one, else ``default_model``'s, whose values of the keys no finding gives are carried over
    (but ``retrieval.coverage_dense_boost``, which is NO_LEAN, 1, until measured).

    Returns:
        ``(calibration, carried)``: {section: {key: value}}, and the ``section.key`` names carried
        over from ``default_model`` (empty when the model had a calibration of its own).

    Raises:
        KeyError: neither ``model`` nor ``default_model`` has a calibration in ``calibrations``.
    """
    own = model in calibrations
    out: Calibration = copy.deepcopy(calibrations[model if own else default_model])
    if not own:  # the lean is the model's own (benchmarks/fusion_coverage.py): none until measured
        out.setdefault("retrieval", {})["coverage_dense_boost"] = NO_LEAN
    found = {f.key for f in findings} | (set() if own else {"retrieval.coverage_dense_boost"})
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
