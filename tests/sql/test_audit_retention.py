"""Nothing kept forever by accident (issue 44 §6): the retention job (purge_expired) deletes the
audit trail past its retention: the data access log after maintenance.access_log_retention_days
(180), answer audit rows after answer_audit_retention_days (365), memory events after
memory_events_retention_days (730); younger rows stay. Tested with a frozen clock."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import World

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]


def test_the_audit_trail_is_kept_for_its_retention_and_no_longer(db: Conn, world: World) -> None:
    db.execute("reset role")
    t = world.tenant_a
    # Two rows of each table, written 100 and 800 days before "now" (the clock passed below).
    now = "2030-06-01T00:00:00Z"
    for days in (100, 800):
        at = f"'{now}'::timestamptz - interval '{days} days'"
        db.execute(
            "insert into hipocampo_private.data_access_log (tenant_id, caller, caller_role, rpc, rows_returned,"
            f" latency_ms, at) values (%s, %s, 'authenticated', 'retention-test', 1, 1, {at})",
            (t, world.member_a),
        )
        db.execute(
            "insert into hipocampo_private.answer_audit (trace_id, tenant_id, question_sha256, answer_source,"
            f" latency_ms, created_at) values (%s, %s, 'x', 'REFUSAL', 1, {at})",
            (uuid.uuid4(), t),
        )
        db.execute(
            f"insert into hipocampo_private.memory_events (tenant_id, event, at) values (%s, 'memory.consent', {at})",
            (t,),
        )
    count = (
        "select (select count(*) from hipocampo_private.data_access_log where tenant_id = %(t)s"
        "        and rpc = 'retention-test') as access,"
        " (select count(*) from hipocampo_private.answer_audit where tenant_id = %(t)s"
        "        and question_sha256 = 'x') as audit,"
        " (select count(*) from hipocampo_private.memory_events where tenant_id = %(t)s"
        "        and at < %(now)s::timestamptz - interval '50 days') as events"
    )
    assert db.execute(count, {"t": t, "now": now}).fetchone() == {"access": 2, "audit": 2, "events": 2}
    world.act("service_role")
    out = db.execute("select hipocampo.purge_expired(%s::timestamptz) as v", (now,)).fetchone()
    assert out is not None and out["v"]["data_access_log"] >= 1 and out["v"]["memory_events"] >= 1
    db.execute("reset role")
    # 800 days is past all three retentions; 100 days is within all three.
    assert db.execute(count, {"t": t, "now": now}).fetchone() == {"access": 1, "audit": 1, "events": 1}
