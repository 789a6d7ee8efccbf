"""The knowledge-base hub (issue 21): web pages for a tenant's admins, served by ``hipocampo
serve`` at ``/hub`` (see :mod:`hipocampo.hub.app`)."""

from .app import Hub, mount_hub
from .security import DevUser

__all__ = ["DevUser", "Hub", "mount_hub"]
