"""Answers that cite or refuse: the orchestrator (guardrails → rate limit → cache → SQL evidence
→ generation → post-validation → audit) and the generators. Every decision is an RPC
(``question_refusal``, ``answer_evidence``, ``numbers_absent``, ``answer_sources``,
``refusal_text``), shared with the Deno ``ask`` function."""

from .generation import ChatAnswerer, ExtractiveAnswerer, GenerationError, Generator, generator_for
from .orchestrator import Orchestrator, question_refusal

__all__ = [
    "ChatAnswerer",
    "ExtractiveAnswerer",
    "GenerationError",
    "Generator",
    "Orchestrator",
    "generator_for",
    "question_refusal",
]
