"""Debian's Chromium for the hub's browser tests, as the Makefile unpacks it into .chromium/
(no root, no Playwright browser download): its binary and the environment that finds its
libraries."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / ".chromium"
BINARY = ROOT / "usr" / "lib" / "chromium" / "chromium"
# Without the background-networking switches Chromium keeps dialling Google's hosts, which this
# network refuses; --no-sandbox because the tests may run as root.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def chromium_env() -> dict[str, str]:
    """The environment of the browser process: .chromium's library folders on LD_LIBRARY_PATH.

    Raises:
        RuntimeError: .chromium/ is not there (``make .chromium/stamp`` unpacks it).
    """
    if not BINARY.exists():
        raise RuntimeError(f"no Chromium at {BINARY}: run `make .chromium/stamp` (make test does)")
    folders = sorted({str(p.parent) for p in ROOT.glob("usr/lib/x86_64-linux-gnu/**/*.so*")})
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join([*folders, env.get("LD_LIBRARY_PATH", "")]).rstrip(":")
    return env
