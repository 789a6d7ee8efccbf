"""Shared by the benchmarks that compare the offline embedding models (issue 22 §3).

``offline_embedder(name)``: all-MiniLM-L6-v2 or multilingual-e5-small, behind the corpus cache
(.hipocampo/cache/embeddings.sqlite), so reruns do not re-embed.

``model_database(name)``: where a benchmark runs with that model active. The configured default
model (multilingual-e5-small unless config.toml says otherwise) uses the usual database
(``db.ensure_database``); any other model gets a database of its own on the same server
(``hipocampo_bench_<model>``), migrated and seeded like `hipocampo db migrate`, with the model
registered and activated there. Activating a model is global (every tenant's default and
thresholds change), so a benchmark never switches the model of the database the demo uses.
"""

from __future__ import annotations

import os
import re

import psycopg
from psycopg.conninfo import make_conninfo

from hipocampo import Hipocampo, db
from hipocampo.config import load_config, repo_root
from hipocampo.embeddings import CachingEmbedder, EmbeddingProvider, LocalE5, LocalMiniLM
from hipocampo.embeddings.local import MODEL_NAME as MINILM

__all__ = ["E5", "MINILM", "default_model", "model_database", "offline_embedder", "with_model"]

E5 = "multilingual-e5-small"


def default_model() -> str:
    """config.toml's ``[embedding] model``: the model a new database starts with (e5 unless
    config.toml says otherwise)."""
    return str(load_config().get("embedding", {}).get("model") or E5)


def with_model(name: str | None) -> tuple[str, EmbeddingProvider]:
    """The database where ``name`` (default :func:`default_model`) is the active model
    (:func:`model_database`) and that model's offline embedder: what a benchmark that searches
    with the default model's vectors runs on, so its vectors are the ones the database searches."""
    embedder = offline_embedder(name or default_model())
    return model_database(embedder.model_name, embedder.dims), embedder


def offline_embedder(name: str) -> EmbeddingProvider:
    """The offline model registered as ``name``, with the corpus cache.

    Raises ``SystemExit`` naming the two offline models for any other name."""
    inner: EmbeddingProvider = LocalMiniLM() if name == MINILM else LocalE5()
    if inner.model_name != name:
        raise SystemExit(f"unknown offline model {name!r}: {MINILM} or {LocalE5().model_name}")
    return CachingEmbedder(inner, repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite")


def fixed_schema() -> bool:
    """Whether the harness gave this step a database migrated as one commit defines it (an A/B,
    or --fresh: ``HIPOCAMPO_BENCH_FIXED_SCHEMA=1``), which must be used as it is."""
    return os.environ.get("HIPOCAMPO_BENCH_FIXED_SCHEMA") == "1"


def model_database(name: str, dims: int) -> str:
    """The URL of a migrated database whose active embedding model is ``name`` (``dims`` wide).

    The usual database when ``name`` is already active there; else ``hipocampo_bench_<name>`` on
    the same server, created on first use. Raises ``psycopg.errors.ObjectNotInPrerequisiteState``
    (55000) when the model has no calibration (config.toml's ``[calibration."<name>"]``)."""
    url = db.ensure_database()
    with Hipocampo(url) as root:
        active = root.rpc("active_embedding_model", None, "rows")
    if active and active[0]["name"] == name:
        return url
    if fixed_schema():
        # The harness gave a database migrated as one commit defines it (an A/B, or --fresh): a
        # database of its own for another model would be migrated as this checkout defines it.
        have = active[0]["name"] if active else "none"
        raise SystemExit(f"{name} is not the active model of the harness's database ({have}): pass --model {have}")
    dbname = "hipocampo_bench_" + re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    with psycopg.connect(url, autocommit=True) as conn:
        if not conn.execute("select 1 from pg_database where datname = %s", (dbname,)).fetchone():
            conn.execute(f'create database "{dbname}"')  # type: ignore[arg-type]
    bench = make_conninfo(url, dbname=dbname)
    db.apply_migrations(bench, shim=db.external_url() is None)
    with Hipocampo(bench) as root:
        root.rpc("register_embedding_model", {"name": name, "provider": "local", "dims": dims, "activate": True})
    return bench
