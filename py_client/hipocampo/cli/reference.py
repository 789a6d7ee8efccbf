"""The CLI as a click command, for the documentation site's reference (mkdocs-click reads it:
``docs/cli.md``)."""

from __future__ import annotations

import typer

from . import app

command = typer.main.get_command(app)
"""Every ``hipocampo`` command, its options and help, as Typer gives them to click."""
