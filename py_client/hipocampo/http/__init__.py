"""The HTTP surface: ``hipocampo serve`` (FastAPI: /ask, /context-pack, health) over the RPCs."""

from .app import create_app

__all__ = ["create_app"]
