"""Session-wide embedded PostgreSQL with the shim and every migration applied.

Layout after psycopg's and basejump's suites: one database for the session; ``db`` is a
connection whose test runs inside one transaction that is rolled back; ``act`` switches that
transaction to a role with JWT claims (``set local role …; set_config('request.jwt.claims', …,
true)``), as PostgREST does.
"""

from __future__ import annotations

import json
import os
import shutil
import tomllib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.pop("HIPOCAMPO_DATABASE_URL", None)

from hipocampo import db as hdb
from hipocampo.embeddings.e5 import E5_MODEL as E5
from hipocampo.embeddings.local import MODEL_NAME as MINILM  # noqa: F401  (the tests import it from here)

# Lines a test wants shown after the run (e.g. the security matrix's case count), whatever -q says;
# and functions that compute one once every test has run (the fuzzer's totals), None for no line.
SUMMARY: list[str] = []
SUMMARY_AT_END: list[Callable[[], str | None]] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in [*SUMMARY, *(f() for f in SUMMARY_AT_END)]:
        if line:
            terminalreporter.write_line(line)


DIMS = 384
# The default embedding model: the repository's config.toml's (multilingual-e5-small since issue 61 §2).
_REPO_CONFIG = tomllib.loads((Path(__file__).resolve().parents[1] / "config.toml").read_text("utf-8"))
DEFAULT_MODEL = str(_REPO_CONFIG["embedding"]["model"])
# The configured embedding model the suite runs with: the default, or MiniLM with `make pytest-minilm`
# (HIPOCAMPO_TEST_MODEL and a config.toml whose [embedding] model is MiniLM; issue 22 §6).
MODEL = os.environ.get("HIPOCAMPO_TEST_MODEL", DEFAULT_MODEL)


# Fixtures that embed text with the configured model: a test using one is not any_model.
MODEL_FIXTURES = frozenset({"minilm", "embedder", "counting"})


def _any_model(item: pytest.Item) -> bool:
    """Whether the test is marked ``any_model``: its module's mark, unless the test itself says
    ``@pytest.mark.any_model(False)`` (a test of such a module whose outcome is the model's, e.g.
    a recall through the CLI)."""
    mark = item.get_closest_marker("any_model")
    return mark is not None and (not mark.args or bool(mark.args[0]))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """What make test's phases leave to the default phase (issue 60 §6), so that no phase repeats
    work whose outcome cannot differ from the default phase's: with MiniLM configured
    (HIPOCAMPO_TEST_MODEL), the tests marked ``any_model``; on the other PostgreSQL version's
    scratch server (HIPOCAMPO_TEST_SERVER_URL), the tests that never reach the suite's server
    (no ``database_url`` among their fixtures: they start embedded servers of their own, or none).

    Raises:
        pytest.UsageError: a test marked ``any_model`` uses a fixture that embeds with the model.
    """
    wrong = [i.nodeid for i in items if _any_model(i) and MODEL_FIXTURES & set(i.fixturenames)]
    if wrong:
        raise pytest.UsageError(f"marked any_model but embeds with the configured model: {wrong[:5]}")
    left: list[pytest.Item] = []
    if MODEL != DEFAULT_MODEL:
        left = [i for i in items if _any_model(i)]
        why = f"any_model, with {MODEL} configured"
    elif os.environ.get("HIPOCAMPO_TEST_SERVER_URL"):
        left = [i for i in items if "database_url" not in i.fixturenames]
        why = "never reach the scratch server"
    if left:
        gone = set(left)
        config.hook.pytest_deselected(items=left)
        items[:] = [i for i in items if i not in gone]
        SUMMARY.append(f"{len(left)} tests left to the default phase ({why})")


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """URL of a fresh embedded server (data dir under /tmp, deleted afterwards).

    With ``HIPOCAMPO_TEST_SERVER_URL`` set, the suite runs on that server instead (a scratch
    server of another PostgreSQL version, e.g. 15: ``make test-pg15``); the shim and the
    migrations are applied to it, so it must not be a real Supabase project.
    """
    external = os.environ.get("HIPOCAMPO_TEST_SERVER_URL")
    if external:
        hdb.apply_migrations(external, shim=True)
        os.environ["HIPOCAMPO_DATABASE_URL"] = external  # the CLI and clients under test use it too
        yield external
        os.environ.pop("HIPOCAMPO_DATABASE_URL", None)
        return
    data = Path(f"/tmp/hipocampo-test-{os.getpid()}") / "data"
    data.parent.mkdir(parents=True, exist_ok=True)
    os.environ["HIPOCAMPO_DATA_DIR"] = str(data)
    url = hdb.start(data)
    hdb.apply_migrations(url, shim=True)
    yield url
    hdb.stop(data)
    shutil.rmtree(data.parent, ignore_errors=True)


@pytest.fixture
def db(database_url: str) -> Iterator[psycopg.Connection[dict[str, Any]]]:
    """A connection whose whole test is one transaction, rolled back at the end."""
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        try:
            yield conn
        finally:
            conn.rollback()


Act = Callable[..., None]


@pytest.fixture
def act(db: psycopg.Connection[dict[str, Any]]) -> Act:
    """``act(role, sub=None, tenant=None, **claims)``: run what follows as that role and claims."""

    def _act(
        role: str,
        sub: uuid.UUID | str | None = None,
        tenant: uuid.UUID | str | None = None,
        **extra: Any,
    ) -> None:
        claims: dict[str, Any] = {"role": role, **extra}
        if sub:
            claims["sub"] = str(sub)
        if tenant:
            claims["app_metadata"] = {"tenant_id": str(tenant)}
        db.execute("reset role")
        db.execute(f"set local role {role}")
        db.execute("select set_config('request.jwt.claims', %s, true)", (json.dumps(claims),))

    return _act


def unit_vector(seed: int, dims: int = DIMS) -> list[float]:
    """A deterministic unit vector (not a real embedding) for SQL-level tests."""
    import random

    rnd = random.Random(seed)
    v = [rnd.gauss(0, 1) for _ in range(dims)]
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


def at_cosine(seed: int, other: int, cosine: float) -> list[float]:
    """A unit vector at ``cosine`` to ``unit_vector(seed)``, in the plane of it and
    ``unit_vector(other)`` (for tests of thresholds on a known cosine)."""
    v, w = unit_vector(seed), unit_vector(other)
    dot = sum(a * b for a, b in zip(v, w, strict=True))
    ortho = [b - dot * a for a, b in zip(v, w, strict=True)]
    norm = sum(x * x for x in ortho) ** 0.5
    sine = (1 - cosine * cosine) ** 0.5
    return [cosine * a + sine * b / norm for a, b in zip(v, ortho, strict=True)]


def model_calibration(model: str = MODEL) -> dict[str, dict[str, float]]:
    """A model's calibration as config.toml holds it ([calibration."<model>"]): what a test gives a
    model of its own (``set_model_calibration``) so that it may be activated or searched with."""
    from hipocampo.config import load_config

    return dict(load_config()["calibration"][model])


def calibrate(db: psycopg.Connection[Any], model: str, like: str = MODEL) -> None:
    """Give ``model`` the calibration of ``like`` (as the caller; service_role or the owner)."""
    db.execute("select hipocampo.set_model_calibration(%s, %s::jsonb)", (model, json.dumps(model_calibration(like))))


def vec_text(v: list[float]) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


class World:
    """Two tenants (A, B), each with an admin and a member, one KB and two documents."""

    def __init__(self, conn: psycopg.Connection[dict[str, Any]], act: Act) -> None:
        self.conn = conn
        self.act = act
        self.admin_a, self.member_a, self.admin_b, self.member_b, self.outsider = (uuid.uuid4() for _ in range(5))
        act("service_role")
        suffix = uuid.uuid4().hex[:8]
        self.tenant_a = self.one("select hipocampo.create_tenant('A', %s, %s) as v", (f"a-{suffix}", self.admin_a))
        self.tenant_b = self.one("select hipocampo.create_tenant('B', %s, %s) as v", (f"b-{suffix}", self.admin_b))
        self.one("select hipocampo.add_member(%s, %s, 'member') as v", (self.tenant_a, self.member_a))
        self.one("select hipocampo.add_member(%s, %s, 'member') as v", (self.tenant_b, self.member_b))
        self.kb_a = self.one("select hipocampo.create_knowledge_base('kb', tenant_id => %s) as v", (self.tenant_a,))
        self.kb_b = self.one("select hipocampo.create_knowledge_base('kb', tenant_id => %s) as v", (self.tenant_b,))
        self.doc_a = self.ingest(
            self.kb_a,
            "a1",
            ["Prazo de trancamento de matrícula é de 30 dias.", "A biblioteca abre às oito horas."],
        )
        self.doc_b = self.ingest(
            self.kb_b,
            "b1",
            [
                "Prazo de trancamento de matrícula é de 45 dias.",
                "O refeitório fecha às vinte horas.",
            ],
        )
        conn.execute("reset role")

    def one(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        row = self.conn.execute(sql, params).fetchone()  # type: ignore[arg-type]
        assert row is not None
        return row["v"]

    def ingest(
        self,
        kb: Any,
        name: str,
        texts: list[str],
        seed: int = 0,
        source_type: str = "regulation",
        metadata: dict[str, Any] | None = None,
    ) -> Any:
        chunks = [
            {
                "chunk_index": i,
                "content": t,
                "token_count": len(t.split()),
                "content_hash": f"{name}-{i}-{seed}",
                "metadata": metadata or {},
                "embedding": unit_vector(hash((name, i, seed)) % 100000),
            }
            for i, t in enumerate(texts)
        ]
        doc = {
            "title": name,
            "source_uri": f"test://{name}",
            "content_hash": f"{name}-{seed}",
            "source_type": source_type,
        }
        r = self.one(
            "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s) as v",
            (kb, json.dumps(doc), json.dumps(chunks), MODEL),
        )
        return r["document_id"]


@pytest.fixture
def world(db: psycopg.Connection[dict[str, Any]], act: Act) -> World:
    """Two isolated tenants with data, inside the test's transaction."""
    return World(db, act)


@pytest.fixture(scope="session")
def minilm() -> Any:
    """all-MiniLM-L6-v2, whatever the suite's model (tests of a switch between the two)."""
    from hipocampo.embeddings import LocalMiniLM

    return LocalMiniLM()


@pytest.fixture(scope="session")
def embedder(minilm: Any) -> Any:
    """The real offline model of the suite (MODEL), loaded once."""
    from hipocampo.embeddings import LocalE5

    return LocalE5() if MODEL == E5 else minilm


class CountingEmbedder:
    """Wraps a provider and counts calls and texts (to prove dedupe makes zero calls)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.provider = inner.provider
        self.dims = inner.dims
        self.model_version = inner.model_version
        self.calls = 0
        self.texts = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        return list(self.inner.embed_documents(texts))

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return list(self.inner.embed_query(text))


@pytest.fixture
def counting(embedder: Any) -> CountingEmbedder:
    return CountingEmbedder(embedder)


@pytest.fixture
def service_client(database_url: str) -> Iterator[Any]:
    """A client acting as service_role on a fresh tenant (data is committed; tenants isolate tests)."""
    from hipocampo import Actor, Hipocampo

    with Hipocampo(database_url) as root:
        tid = root.create_tenant("T", f"t-{uuid.uuid4().hex[:10]}", uuid.uuid4())
        yield root.as_actor(Actor.service(tid))


@pytest.fixture
def unseeded_rag_key(database_url: str) -> Iterator[str]:
    """Commit the global config row without ``rag.top_k`` (a database whose config was seeded by an
    older release, or never), restore the row afterwards; yields the key removed. For clients
    that use their own connections (HTTP apps, edge functions), which a rolled-back test
    transaction cannot reach."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute("select config from hipocampo_private.settings where tenant_id is null").fetchone()
        assert row is not None
        conn.execute("update hipocampo_private.settings set config = config #- '{rag,top_k}' where tenant_id is null")
        try:
            yield "rag.top_k"
        finally:
            conn.execute(
                "update hipocampo_private.settings set config = %s where tenant_id is null",
                (psycopg.types.json.Jsonb(row[0]),),
            )
