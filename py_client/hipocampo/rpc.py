"""The one path from Python to SQL: a call of an RPC of the exposed schema ``hipocampo`` by name
with named arguments (issue 17 §2).

The argument types come from the catalog (read once per connection pool), so every argument is
cast to its declared type (``extensions.vector``, ``jsonb``, ``uuid[]`` …) and a name the RPC
does not have is an :class:`~hipocampo.errors.InvalidInputError` before anything is sent. Values
are adapted: ``dict`` / ``list`` for ``json``/``jsonb`` arguments are sent as JSON, sequences of
floats for vectors in pgvector's binary format (a 384-d query vector as a text literal cost ~0.18
ms more per call, formatting and parsing; docs/BENCHMARKS.md §hybrid search on a small knowledge
base), a vector given as a string as that literal, UUIDs as text. The call runs in the caller's
transaction (role and JWT claims set by :meth:`hipocampo.client.Hipocampo.transaction`);
database errors become the typed exception of their SQLSTATE.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from uuid import UUID

import psycopg
from pgvector import Vector
from psycopg.adapt import Buffer, Dumper
from psycopg.pq import Format

from .errors import InvalidInputError, NotFoundError

__all__ = ["BinaryVector", "Shape", "Signatures", "call", "load_signatures"]

Shape = Literal["value", "row", "rows", "none"]
# rpc name -> {argument name: its type as format_type() writes it}
Signatures = dict[str, dict[str, str]]


def load_signatures(cur: psycopg.Cursor[dict[str, Any]]) -> Signatures:
    """The input arguments of every function in the schema ``hipocampo``, from the catalog."""
    cur.execute(
        "select p.proname as rpc, a.name, format_type(a.type, null) as type"
        " from pg_catalog.pg_proc as p"
        " cross join lateral unnest(p.proargnames, p.proargtypes::oid[]) as a (name, type)"
        " where p.pronamespace = 'hipocampo'::regnamespace and p.proargmodes is null"
        " union all"
        " select p.proname, a.name, format_type(a.type, null)"
        " from pg_catalog.pg_proc as p"
        " cross join lateral unnest(p.proargnames, p.proallargtypes, p.proargmodes) as a (name, type, mode)"
        " where p.pronamespace = 'hipocampo'::regnamespace and p.proargmodes is not null"
        "   and a.mode in ('i', 'b')"
    )
    out: Signatures = {}
    for r in cur.fetchall():
        out.setdefault(r["rpc"], {})[r["name"]] = r["type"]
    cur.execute("select proname from pg_catalog.pg_proc where pronamespace = 'hipocampo'::regnamespace")
    for r in cur.fetchall():
        out.setdefault(r["proname"], {})
    return out


class BinaryVector:
    """A vector argument in pgvector's binary format (``vector_recv``: dims, unused, float32s,
    big-endian), sent with an unspecified type so that the call's ``::<vector type>`` cast types
    it: no OID lookup, and nothing registered for :class:`pgvector.Vector` itself.

    ``value``: the embedding, ``list[float]`` (or a numpy array) of any width (384 for the
    offline models); stored as float32. Raises ``ValueError`` when it is not one-dimensional
    (pgvector's ``Vector``)."""

    __slots__ = ("data",)

    def __init__(self, value: Any) -> None:
        self.data = Vector(value).to_binary()


class _BinaryVectorDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: BinaryVector) -> Buffer:
        return obj.data


psycopg.adapters.register_dumper(BinaryVector, _BinaryVectorDumper)


def _adapt(value: Any, type_: str, rpc: str = "", name: str = "") -> Any:
    if value is None:
        return None
    if type_ == "uuid" and isinstance(value, str):
        try:
            return str(UUID(value))
        except ValueError:
            raise InvalidInputError(f"{name} is not a uuid: {value!r}", "22023") from None
    if type_ in ("json", "jsonb"):
        return value if isinstance(value, str) else json.dumps(value)
    if type_.endswith("vector") and not isinstance(value, str):
        return BinaryVector(list(value))
    if isinstance(value, UUID):
        return str(value)
    if type_.endswith("[]") and isinstance(value, Sequence) and not isinstance(value, str):
        return [str(v) if isinstance(v, UUID) else v for v in value]
    return value


def call(
    cur: psycopg.Cursor[dict[str, Any]],
    signatures: Signatures,
    rpc: str,
    args: Mapping[str, Any] | None = None,
    shape: Shape = "value",
) -> Any:
    """Call ``hipocampo.<rpc>`` with named ``args`` in the cursor's transaction.

    Args:
        shape: ``value`` - the single value the RPC returns (a scalar or jsonb); ``row`` - its
            first row as a dict (None when none); ``rows`` - every row (``list[dict]``);
            ``none`` - nothing.

    Raises:
        NotFoundError: no RPC of that name in the exposed schema.
        InvalidInputError: an argument the RPC does not have.
        HipocampoError subclasses: from the database, by SQLSTATE (through the transaction).
    """
    if rpc not in signatures:
        raise NotFoundError(f"no RPC hipocampo.{rpc}")
    declared = signatures[rpc]
    args = dict(args or {})
    unknown = sorted(set(args) - set(declared))
    if unknown:
        raise InvalidInputError(f"hipocampo.{rpc} has no argument {', '.join(unknown)}")
    named = ", ".join(f"{k} => %({k})s::{declared[k]}" for k in args)
    params = {k: _adapt(v, declared[k], rpc, k) for k, v in args.items()}
    if shape == "value":
        cur.execute(f"select hipocampo.{rpc}({named}) as value", params)  # type: ignore[arg-type,unused-ignore]
        row = cur.fetchone()
        return row["value"] if row else None
    cur.execute(f"select * from hipocampo.{rpc}({named})", params)  # type: ignore[arg-type,unused-ignore]
    if shape == "rows":
        return cur.fetchall()
    if shape == "row":
        return cur.fetchone()
    return None
