"""Typed exceptions. SQL errors keep their SQLSTATE and message."""

from __future__ import annotations

import psycopg

__all__ = [
    "ConnectionLostError",
    "DimensionMismatchError",
    "EmbeddingError",
    "HipocampoError",
    "InvalidInputError",
    "LoaderError",
    "MemoryRejected",
    "NotFoundError",
    "PermissionDeniedError",
    "PreconditionError",
    "from_db_error",
    "from_sqlstate",
]


class HipocampoError(Exception):
    """Base of every hipocampo error. ``sqlstate`` is set when the database raised it."""

    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate


class InvalidInputError(HipocampoError):
    """Bad arguments (SQLSTATE 22023, 23514, 22P02 …)."""


class DimensionMismatchError(InvalidInputError):
    """A vector's dimensions differ from the model's (SQLSTATE 22000)."""


class NotFoundError(HipocampoError):
    """Unknown knowledge base, document, model … (SQLSTATE P0002)."""


class PermissionDeniedError(HipocampoError):
    """No tenant in the JWT claims, not a member, not an admin (SQLSTATE 42501)."""


class PreconditionError(HipocampoError):
    """The database is not in the state the call needs (SQLSTATE 55000): its config rows were never
    seeded from config.toml ("rag config is incomplete: seed it from config.toml (hipocampo db
    migrate)"), an embedding model to drop is still in use, the maintenance jobs need
    rescheduling. Not the caller's input: retrying the same call fails the same way until an
    operator acts. (The memory gate's 55000, explicit_user_wins, is a :class:`MemoryRejected`.)
    """


class EmbeddingError(HipocampoError):
    """The embedding provider failed (after retries) or returned a malformed answer."""


class LoaderError(HipocampoError):
    """A file cannot be loaded: unsupported type, corrupt or empty."""


class ConnectionLostError(HipocampoError):
    """The database cannot be reached, or the connection went away mid-call (server stopped or
    crashed, network cut): SQLSTATE class 08, 57P01-57P03, or no SQLSTATE from the driver. A
    multi-step write in flight was rolled back with its transaction; nothing half-written stays."""


class MemoryRejected(HipocampoError):
    """The memory gate refused a write (recorded in memory_events with its reason).

    ``reason`` is one of no_consent (42501), missing_category (23502), low_confidence (22003),
    too_short / noise / personal_data / sensitive_data (22023), too_long (22001), quota (53400),
    explicit_user_wins (55000); see docs/design.md §memory.
    """

    def __init__(self, message: str, sqlstate: str | None = None, reason: str = "") -> None:
        super().__init__(message, sqlstate)
        self.reason = reason


_BY_STATE: dict[str, type[HipocampoError]] = {
    "22000": DimensionMismatchError,
    "22023": InvalidInputError,
    "22003": InvalidInputError,
    "22004": InvalidInputError,
    "23502": InvalidInputError,
    "22P02": InvalidInputError,
    "23514": InvalidInputError,
    "23505": InvalidInputError,
    "23503": NotFoundError,
    "P0002": NotFoundError,
    "42501": PermissionDeniedError,
    "55000": PreconditionError,
}


def from_db_error(err: psycopg.Error) -> HipocampoError:
    """Map a psycopg error to the typed exception of its SQLSTATE, its message kept but for a
    constraint's name, said in words (:func:`hipocampo.constraints.in_words`); a lost or
    refused connection to :class:`ConnectionLostError` with the driver's first line."""
    state = err.sqlstate or ""
    diag = err.diag.message_primary if err.diag else None
    if isinstance(err, psycopg.OperationalError) and (not state or state.startswith("08") or state[:4] == "57P0"):
        first = (diag or str(err)).strip().splitlines()[0] if (diag or str(err)).strip() else type(err).__name__
        return ConnectionLostError(f"lost the database connection: {first}", state or "08006")
    from .constraints import in_words  # a constraint's name never reaches a person (issue 58 §4)

    constraint = err.diag.constraint_name if err.diag else None
    return from_sqlstate(state, in_words(diag or str(err), constraint))


def from_sqlstate(state: str | None, message: str) -> HipocampoError:
    """The typed exception of a SQLSTATE (e.g. one an edge function answered with)."""
    return _BY_STATE.get(state or "", HipocampoError)(message, state or None)
