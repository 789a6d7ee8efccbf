"""Answers that cite or refuse: the orchestrator (guardrails → rate limit → cache → SQL evidence
→ generation → audit), the guardrails and the generators."""

from .generation import ChatAnswerer, ExtractiveAnswerer, GenerationError, Generator, generator_for, numbers_absent
from .guardrails import check_question
from .orchestrator import Orchestrator

__all__ = [
    "ChatAnswerer",
    "ExtractiveAnswerer",
    "GenerationError",
    "Generator",
    "Orchestrator",
    "check_question",
    "generator_for",
    "numbers_absent",
]
