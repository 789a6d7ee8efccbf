"""Read replicas: the primary's link for reads recorded on a hot standby (and, re-exported from
:mod:`hipocampo.replication`, the replication lag).

A read RPC on a hot standby (a Supabase read replica, or a streaming standby of the embedded
server) cannot write; it records itself on the primary through dblink, on the foreign server
``hipocampo_primary`` that :func:`link_primary` creates on the primary (physical replication copies
it to every standby). The link logs in as ``hipocampo_read_recorder``, a role that may execute
``hipocampo_private._enqueue_standby_read`` and nothing else, with a password made here and kept
in the server's user mapping only; each read opens and closes its own connection (issue 57 §1).
See supabase/schemas/11_read_recording.sql.
"""

from __future__ import annotations

import secrets
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from ..replication import ReplicaStatus, replica_status

__all__ = ["LINK_ROLE", "LINK_SERVER", "ReplicaStatus", "link_primary", "replica_status", "unlink_primary"]


LINK_SERVER = "hipocampo_primary"
# The login role of the link (created without login by the migrations).
LINK_ROLE = "hipocampo_read_recorder"
# libpq options a dblink_fdw server takes (user and password belong to the user mapping).
_SERVER_OPTIONS = ("host", "hostaddr", "port", "dbname", "sslmode", "sslrootcert", "connect_timeout", "options")


def link_primary(conn: psycopg.Connection[Any], primary_url: str) -> None:
    """Create (or replace) the foreign server ``hipocampo_primary`` pointing at ``primary_url``'s
    host, port and database, give the role ``hipocampo_read_recorder`` login with a new random
    password (32 bytes), and map the connection's user (the functions' owner, who runs the dblink
    call) to that role. ``primary_url``'s user and password are not kept: the link never logs in
    as the owner.

    Run on the primary, as the database owner; the standbys receive it by replication. On
    Supabase, ``primary_url`` is the project's direct connection string (a dblink connection by a
    role that is not a superuser must authenticate with a password, which the mapping holds).

    Raises:
        psycopg.Error: the owner may not create servers (needs usage on dblink_fdw) or alter the
            role (needs CREATEROLE), or the migrations have not run (no role, no dblink).
    """
    parts = {k: v for k, v in conninfo_to_dict(primary_url).items() if v not in (None, "")}
    server = {k: str(v) for k, v in parts.items() if k in _SERVER_OPTIONS}
    password = secrets.token_urlsafe(32)
    with conn.transaction():
        conn.execute(sql.SQL("drop server if exists {} cascade").format(sql.Identifier(LINK_SERVER)))
        conn.execute(
            sql.SQL("alter role {} login password {}").format(sql.Identifier(LINK_ROLE), sql.Literal(password))
        )
        conn.execute(
            sql.SQL("create server {} foreign data wrapper dblink_fdw options ({})").format(
                sql.Identifier(LINK_SERVER), _options(server)
            )
        )
        conn.execute(
            sql.SQL("create user mapping for current_user server {} options ({})").format(
                sql.Identifier(LINK_SERVER), _options({"user": LINK_ROLE, "password": password})
            )
        )


def unlink_primary(conn: psycopg.Connection[Any]) -> None:
    """Drop the foreign server ``hipocampo_primary`` and take login and password from
    ``hipocampo_read_recorder`` (reads in read-only transactions then fail with 25006 instead of
    going unrecorded)."""
    conn.execute(sql.SQL("drop server if exists {} cascade").format(sql.Identifier(LINK_SERVER)))
    conn.execute(sql.SQL("alter role {} nologin password null").format(sql.Identifier(LINK_ROLE)))


def _options(values: dict[str, str]) -> sql.Composed:
    return sql.SQL(", ").join(sql.SQL("{} {}").format(sql.Identifier(k), sql.Literal(v)) for k, v in values.items())
