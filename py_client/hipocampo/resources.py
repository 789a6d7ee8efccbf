"""Where hipocampo's SQL and default config live: the built package's ``_resources/`` (a wheel,
issue 17 §4), else the checkout it is imported from (``supabase/``, ``config.toml``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["default_config_file", "sql_dir"]

_PACKAGED = Path(__file__).resolve().parent / "_resources"
_CHECKOUT = Path(__file__).resolve().parents[2]


def sql_dir(name: str) -> Path:
    """``migrations`` | ``data`` | ``schemas``: the directory of those SQL files."""
    packaged = _PACKAGED / name
    return packaged if packaged.is_dir() else _CHECKOUT / "supabase" / name


def default_config_file() -> Path:
    """The versioned defaults: the package's ``config.default.toml``, or the checkout's ``config.toml``."""
    packaged = _PACKAGED / "config.default.toml"
    return packaged if packaged.is_file() else _CHECKOUT / "config.toml"
