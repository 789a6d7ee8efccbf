"""Every constraint in words (issue 58 §4): a violation's message names no constraint, it says
what the value must be. The catalog's check, unique, primary-key and foreign-key constraints each
have their words in hipocampo.constraints, and a real violation comes out of the client in them."""

from __future__ import annotations

import re
import uuid
from typing import Any

import psycopg
import pytest

from hipocampo.constraints import CONSTRAINTS, in_words
from hipocampo.errors import InvalidInputError, from_db_error

from ..conftest import World

Conn = psycopg.Connection[dict[str, Any]]


def catalog(db: Conn) -> set[str]:
    rows = db.execute(
        "select conname from pg_constraint where contype in ('c', 'u', 'p', 'f')"
        " and connamespace in ('hipocampo_private'::regnamespace, 'hipocampo'::regnamespace)"
    ).fetchall()
    return {r["conname"] for r in rows}


def test_every_constraint_has_words_and_no_words_name_one(db: Conn) -> None:
    names = catalog(db)
    assert sorted(names - set(CONSTRAINTS)) == []
    assert sorted(set(CONSTRAINTS) - names) == []  # words of a constraint that is gone go too
    named = [(k, v) for k, v in CONSTRAINTS.items() if any(re.search(rf"\b{n}\b", v) for n in names)]
    assert named == []


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        (
            "insert into hipocampo_private.tenants (name, slug) values ('X', 'Bad Slug!')",
            CONSTRAINTS["tenants_slug_format"],
        ),
        (
            "insert into hipocampo_private.knowledge_bases (tenant_id, name, language)"
            " values ((select id from hipocampo_private.tenants limit 1), 'k', 'klingon')",
            CONSTRAINTS["knowledge_bases_language_check"],
        ),
        (
            "insert into hipocampo_private.memberships (tenant_id, user_id, role)"
            " values ((select id from hipocampo_private.tenants limit 1), gen_random_uuid(), 'owner')",
            CONSTRAINTS["memberships_role_check"],
        ),
    ],
)
def test_a_violation_comes_out_in_words(db: Conn, world: World, sql: str, words: str) -> None:
    with pytest.raises(psycopg.errors.CheckViolation) as raised:
        db.execute(sql)
    err = from_db_error(raised.value)
    assert isinstance(err, InvalidInputError) and err.sqlstate == "23514"
    assert err.message == words and "constraint" not in err.message


def test_a_duplicate_slug_and_an_rpcs_wrapped_violation_come_out_in_words(db: Conn, world: World) -> None:
    slug = db.execute("select slug from hipocampo_private.tenants where id = %s", (world.tenant_a,)).fetchone()
    assert slug is not None
    with pytest.raises(psycopg.errors.UniqueViolation) as raised:
        db.execute("insert into hipocampo_private.tenants (name, slug) values ('Y', %s)", (slug["slug"],))
    assert from_db_error(raised.value).message == "a tenant with that slug exists already"
    wrapped = 'invalid document: new row for relation "documents" violates check constraint "documents_status_check"'
    assert in_words(wrapped) == "invalid document: " + CONSTRAINTS["documents_status_check"]
    assert in_words("unknown knowledge base: x") == "unknown knowledge base: x"
    assert uuid.UUID(str(world.tenant_a))


def test_the_edge_functions_say_them_in_the_same_words() -> None:
    """`_shared/serve.ts` answers a violation through `_shared/constraints.ts`, whose words are
    the client's (constraints.json, written by `python -m tools.constraint_words`)."""
    import os
    import subprocess
    from pathlib import Path

    from tools.constraint_words import TARGET, text

    assert TARGET.read_text() == text()
    repo = Path(__file__).resolve().parents[2]
    deno = repo / ".deno" / "node_modules" / ".bin" / "deno"
    if not deno.exists():
        pytest.fail("deno not found: `make test` installs it from npm into .deno/")
    script = (
        'import { inWords } from "./supabase/functions/_shared/constraints.ts";'
        ' console.log(inWords(\'new row for relation "tenants" violates check constraint "tenants_slug_format"\'));'
    )
    env = {**os.environ, "NO_COLOR": "1", "DENO_DIR": os.environ.get("DENO_DIR", str(repo / ".deno" / "cache"))}
    out = subprocess.run([str(deno), "eval", script], cwd=repo, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == CONSTRAINTS["tenants_slug_format"]
