"""The closed vocabularies of a memory, as the schema's check constraints hold them
(supabase/schemas/06_memory_1_records_and_writes.sql: memories_category_check,
memories_emotion_check, memories_life_domain_check); tests/sql/test_contracts.py keeps them
equal. The CLI's help and the MCP tools' JSON schemas take their values from here, so an agent is
never told of a value the database refuses."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["CATEGORIES", "EMOTIONS", "LIFE_DOMAINS", "Category", "Emotion", "LifeDomain"]

Category = Literal[
    "identity_profile",
    "tenant_business",
    "operating_model",
    "goals_kpis",
    "tools_integrations",
    "people_contacts",
    "projects",
    "preference",
    "pattern",
    "style",
]
Emotion = Literal[
    "alegria",
    "tristeza",
    "ansiedade",
    "raiva",
    "medo",
    "surpresa",
    "calma",
    "nojo",
    "frustracao",
    "gratidao",
    "esperanca",
    "orgulho",
    "vergonha",
    "culpa",
    "neutro",
]
LifeDomain = Literal["trabalho", "relacionamentos", "saude", "financas", "outros"]

CATEGORIES: tuple[str, ...] = get_args(Category)
EMOTIONS: tuple[str, ...] = get_args(Emotion)
LIFE_DOMAINS: tuple[str, ...] = get_args(LifeDomain)
