"""Versioned defaults from the root ``config.toml``.

The file seeds the global config row in the database (``hipocampo db migrate``); SQL and
Python read thresholds from there (``hipocampo.effective_config``), never from this module. Only
what is needed before a database exists (connection, data directory, embedding provider) is read
here directly.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["config_path", "load_config", "repo_root"]


def repo_root() -> Path:
    """The repository root (parent of ``py_client/``), where ``config.toml`` and ``supabase/`` live."""
    return Path(__file__).resolve().parents[2]


def config_path() -> Path:
    """Path of the config file: ``$HIPOCAMPO_CONFIG`` or the repository's ``config.toml``."""
    env = os.environ.get("HIPOCAMPO_CONFIG")
    return Path(env) if env else repo_root() / "config.toml"


def load_config(path: Path | None = None) -> dict[str, Any]:
    """Parse ``config.toml``.

    Raises:
        FileNotFoundError: when the file does not exist.
        tomllib.TOMLDecodeError: when it is not valid TOML.
    """
    with (path or config_path()).open("rb") as fh:
        return tomllib.load(fh)
