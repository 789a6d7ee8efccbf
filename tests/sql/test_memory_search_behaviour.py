"""What the memory search's filters and MMR do, shown by an order or a set that changes (issue 45
§1: the one emotion-filter test had a single memory, so it passed with the filter ignored;
filter_life_domain was never tested; memory-search MMR never asserted)."""

from __future__ import annotations

import json
import math
from typing import Any

import psycopg

from ..conftest import DIMS, World, vec_text

Conn = psycopg.Connection[dict[str, Any]]


def vector(*components: float) -> str:
    """A unit vector whose first coordinates are ``components`` (the rest 0)."""
    norm = math.sqrt(sum(c * c for c in components))
    return vec_text([c / norm for c in components] + [0.0] * (DIMS - len(components)))


QUERY = vector(1.0)
CLOSE = vector(0.9, 0.436)  # cosine 0.90 to the query
TWIN = vector(0.88, 0.3165, 0.354)  # cosine 0.88 to the query, 0.93 to CLOSE (not a duplicate)
FAR = vector(0.6, -0.8)  # cosine 0.60 to the query, 0.19 to CLOSE


def store(db: Conn, key: str, description: str, embedding: str, **named: Any) -> None:
    args = {"key": key, "value": json.dumps(key), "description": description, "embedding": embedding, **named}
    sql = ", ".join(f"{k} => %({k})s" + ("::jsonb" if k == "value" else "") for k in args)
    row = db.execute(f"select hipocampo.remember({sql}, category => 'preference') as r", args).fetchone()
    assert row is not None and row["r"]["status"] == "created", row


def keys(db: Conn, **named: Any) -> list[str]:
    args = {"q": QUERY, "min_score": -1.0, **named}
    extra = "".join(f", {k} => %({k})s" for k in named)
    rows = db.execute(
        f"select key from hipocampo.search_memories(%(q)s::extensions.vector, min_score => %(min_score)s{extra})"
        " order by rank",
        args,
    ).fetchall()
    return [r["key"] for r in rows]


def test_the_emotion_and_life_domain_filters_exclude_what_would_rank_first(db: Conn, user_a: World) -> None:
    store(db, "prefs.reunioes", "Fica ansiosa antes de reuniões", CLOSE, emotion="ansiedade", life_domain="trabalho")
    store(db, "prefs.caminhada", "Caminha para se acalmar", FAR, emotion="calma", life_domain="saude")
    assert keys(db)[0] == "prefs.reunioes"
    assert keys(db, filter_emotion="calma") == ["prefs.caminhada"]
    assert keys(db, filter_life_domain="saude") == ["prefs.caminhada"]
    assert keys(db, filter_emotion="ansiedade", filter_life_domain="saude") == []


def test_mmr_puts_a_different_memory_before_a_near_twin(db: Conn, user_a: World) -> None:
    store(db, "prefs.cafe", "Gosta de café forte pela manhã", CLOSE)
    store(db, "prefs.cafe_tarde", "Gosta de café forte à tarde", TWIN)
    store(db, "prefs.leitura", "Lê romances antes de dormir", FAR)
    world = user_a
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("""select hipocampo.set_tenant_config('memory', '{"mmr_lambda": 1}')""")
    world.act("authenticated", world.member_a, world.tenant_a)
    assert keys(db) == ["prefs.cafe", "prefs.cafe_tarde", "prefs.leitura"]  # relevance alone
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("""select hipocampo.set_tenant_config('memory', '{"mmr_lambda": 0.5}')""")
    world.act("authenticated", world.member_a, world.tenant_a)
    assert keys(db) == ["prefs.cafe", "prefs.leitura", "prefs.cafe_tarde"]  # diversity first
