"""Versioned defaults (``config.toml``) and the user's overrides.

The defaults ship with hipocampo (the checkout's ``config.toml``, or ``config.default.toml`` in a
wheel); the user's file is ``$HIPOCAMPO_CONFIG``, else ``config.toml`` in the working directory,
and overrides them key by key. The merged config seeds the global config row in the database
(``hipocampo db migrate``); SQL and Python read thresholds from there
(``hipocampo.effective_config``), never from this module. Only what is needed before a database
exists (connection, data directory, embedding provider) is read here directly.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from .resources import default_config_file

__all__ = ["config_path", "load_config", "repo_root"]


def repo_root() -> Path:
    """The repository root (parent of ``py_client/``), where ``config.toml`` and ``supabase/`` live."""
    return Path(__file__).resolve().parents[2]


def config_path() -> Path | None:
    """The user's config file: ``$HIPOCAMPO_CONFIG``, else ``./config.toml`` when it exists, else
    None (the defaults alone)."""
    env = os.environ.get("HIPOCAMPO_CONFIG")
    if env:
        return Path(env)
    local = Path.cwd() / "config.toml"
    return local if local.is_file() else None


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def load_config(path: Path | None = None) -> dict[str, Any]:
    """The defaults (:func:`hipocampo.resources.default_config_file`) with the user's file
    (``path``, else :func:`config_path`) merged over them, table by table.

    Raises:
        FileNotFoundError: ``$HIPOCAMPO_CONFIG`` (or ``path``) names a file that does not exist.
        tomllib.TOMLDecodeError: a file is not valid TOML.
    """
    with default_config_file().open("rb") as fh:
        config = tomllib.load(fh)
    user = path or config_path()
    if user is not None and user.resolve() != default_config_file().resolve():
        with user.open("rb") as fh:
            config = _merge(config, tomllib.load(fh))
    return config
