"""hipocampo.delete_tenant: a tenant and everything it holds, in one transaction, for service_role
only; the other tenant untouched."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from ..conftest import World
from .memory_helpers import remember

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]


def _rows_per_table(db: Conn, tenant: Any, kb: Any) -> dict[str, int]:
    """Rows of ``tenant`` (or of its knowledge base ``kb``) in every table of hipocampo_private
    that has a tenant_id or a kb_id column, as the owner."""
    tables = db.execute(
        "select c.relname, bool_or(a.attname = 'tenant_id') as by_tenant from pg_catalog.pg_class as c "
        "join pg_catalog.pg_namespace as n on n.oid = c.relnamespace "
        "join pg_catalog.pg_attribute as a on a.attrelid = c.oid and a.attname in ('tenant_id', 'kb_id') "
        "and not a.attisdropped where n.nspname = 'hipocampo_private' and c.relkind in ('r', 'p') "
        "group by c.relname order by c.relname"
    ).fetchall()
    out = {}
    for t in tables:
        column, value = ("tenant_id", tenant) if t["by_tenant"] else ("kb_id", kb)
        row = db.execute(
            f"select count(*) as n from hipocampo_private.{t['relname']} where {column} = %s",
            (value,),
        ).fetchone()
        assert row is not None
        out[t["relname"]] = row["n"]
    return out


def test_service_role_deletes_the_tenant_and_everything_it_holds(db: Conn, user_a: World) -> None:
    w = user_a
    remember(db, "prefs.coffee", 1, "Gosta de café sem açúcar", seed=3)
    db.execute("reset role")
    before_a = _rows_per_table(db, w.tenant_a, w.kb_a)
    before_b = _rows_per_table(db, w.tenant_b, w.kb_b)
    assert before_a["chunks"] == 2 and before_a["kb_postings"] > 0 and before_a["memories"] == 1
    w.act("service_role")
    out = db.execute("select hipocampo.delete_tenant(%s) as r", (w.tenant_a,)).fetchone()
    assert out is not None
    r = out["r"]
    assert {k: r[k] for k in ("knowledge_bases", "documents", "chunks", "memories", "members")} == {
        "knowledge_bases": 1,
        "documents": 1,
        "chunks": 2,
        "memories": 1,
        "members": 2,
    }
    assert r["tenant_id"] == str(w.tenant_a) and r["messages"] == 0
    assert r["audit_rows"] == before_a["memory_events"] + before_a["data_access_log"] > 0
    db.execute("reset role")
    assert {t: n for t, n in _rows_per_table(db, w.tenant_a, w.kb_a).items() if n} == {}
    assert _rows_per_table(db, w.tenant_b, w.kb_b) == before_b
    assert db.execute(
        "select count(*) as n from hipocampo_private.tenants where id = %s", (w.tenant_a,)
    ).fetchone() == {"n": 0}


@pytest.mark.parametrize("who", ["admin", "member"])
def test_no_tenant_user_may_delete_a_tenant_not_even_its_admin(db: Conn, world: World, who: str) -> None:
    user = world.admin_a if who == "admin" else world.member_a
    world.act("authenticated", user, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute("select hipocampo.delete_tenant(%s)", (world.tenant_a,))


def test_an_unknown_tenant_is_not_found(db: Conn, world: World) -> None:
    world.act("service_role")
    missing = "00000000-0000-4000-8000-000000000001"
    with pytest.raises(psycopg.errors.NoDataFound, match=f"unknown tenant: {missing}"):
        db.execute("select hipocampo.delete_tenant(%s)", (missing,))
