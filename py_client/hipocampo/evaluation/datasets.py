"""Readers for the shared evaluation data in ``../shared/datasets`` (never copied into the repo).

BEIR layout: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``, ``text``),
``qrels/test.tsv`` (query-id, corpus-id, score, with a header line). LoCoMo: ``locomo/locomo10.json``
(10 conversations with sessions of turns and questions with evidence turn ids).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..config import repo_root

__all__ = [
    "OWN_BEIR_SETS",
    "BeirSet",
    "datasets_dir",
    "load_beir",
    "load_faquad_questions",
    "load_locomo",
    "locomo_turns",
]

BEIR_SETS = {
    "faquad": ("faquad/beir_derived", "portuguese"),
    "quati": ("quati/beir_derived_human", "portuguese"),
    "scifact": ("scifact", "english"),
}
# Sets of our own making in the BEIR layout, shipped under examples/ (their README says how they
# were written): ``web``, 40 English passages in the style of web pages on everyday subjects,
# with 80 queries (for each passage a search engine's keywords and a question in the asker's
# own words), the English web-passage set of issue 61 §3.
OWN_BEIR_SETS = {
    "web": ("web-passages-en", "english"),
}


def datasets_dir() -> Path:
    """``$HIPOCAMPO_DATASETS`` or ``<repo>/../shared/datasets``."""
    env = os.environ.get("HIPOCAMPO_DATASETS")
    return Path(env) if env else repo_root().parent / "shared" / "datasets"


@dataclass
class BeirSet:
    """A BEIR-style set: corpus ``{id: (title, text)}``, queries ``{id: text}``,
    qrels ``{query_id: {doc_id: grade}}`` (grade > 0 = relevant), and the text language."""

    name: str
    language: str
    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def _jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_beir(name: str, split: str = "test") -> BeirSet:
    """Load ``faquad``, ``quati`` or ``scifact`` (the shared datasets) or ``web`` (examples/,
    :data:`OWN_BEIR_SETS`); only queries with qrels are kept.

    Raises:
        KeyError: unknown set. FileNotFoundError: the shared data is missing.
    """
    if name in OWN_BEIR_SETS:
        rel, language = OWN_BEIR_SETS[name]
        base = repo_root() / "examples" / rel
    else:
        rel, language = BEIR_SETS[name]
        base = datasets_dir() / rel
    corpus = {str(d["_id"]): (str(d.get("title") or ""), str(d["text"])) for d in _jsonl(base / "corpus.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    with (base / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if i == 0 and not parts[-1].lstrip("-").isdigit():
                continue
            if len(parts) >= 3 and int(parts[2]) > 0:
                qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    queries = {str(q["_id"]): str(q["text"]) for q in _jsonl(base / "queries.jsonl") if str(q["_id"]) in qrels}
    return BeirSet(name, language, corpus, queries, qrels)


def load_faquad_questions(limit: int | None = None) -> list[tuple[str, str, str]]:
    """FaQuAD questions from ``dataset.json`` as ``(question, answer, document title)``."""
    data = json.loads((datasets_dir() / "faquad" / "dataset.json").read_text("utf-8"))
    out: list[tuple[str, str, str]] = []
    for art in data["data"]:
        for para in art["paragraphs"]:
            for qa in para["qas"]:
                answer = qa["answers"][0]["text"] if qa.get("answers") else ""
                out.append((qa["question"], answer, art["title"]))
    return out[:limit] if limit else out


def load_locomo() -> list[dict[str, Any]]:
    """The 10 LoCoMo conversations (``locomo/locomo10.json``), as the file holds them.

    Raises:
        FileNotFoundError: the shared data is missing.
    """
    return list(json.loads((datasets_dir() / "locomo" / "locomo10.json").read_text("utf-8")))


def _session_start(text: str) -> datetime:
    """LoCoMo's session date ("1:56 pm on 8 May, 2023") as a UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def locomo_turns(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    """Every turn of a LoCoMo conversation as a message: ``content`` "Speaker: text" (+ a shared
    photo's caption), ``created_at`` the session's date and time plus one second per turn (ISO),
    ``metadata`` {dia_id, session_date}."""
    out = []
    n = 1
    while f"session_{n}" in conversation:
        date = conversation.get(f"session_{n}_date_time", "")
        start = _session_start(date)
        for i, t in enumerate(conversation[f"session_{n}"]):
            text = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                text += f" [shares a photo: {t['blip_caption']}]"
            out.append(
                {
                    "role": "user",
                    "content": text,
                    "created_at": (start + timedelta(seconds=i)).isoformat(),
                    "metadata": {"dia_id": t["dia_id"], "session_date": date},
                }
            )
        n += 1
    return out
