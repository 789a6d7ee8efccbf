"""Long-term memory for one user: consent, the gate, writes, recall, history, sessions' messages,
data-subject rights (:class:`Memory`, over the RPCs of supabase/schemas/06-09)."""

from .api import Memory

__all__ = ["Memory"]
