"""A tenant exported to a file and imported into another database (issue 46 §3, the offline case):
the same rows (the digest of every table, the derived BM25 tables rebuilt by the triggers), the
same answers to the same reads, identity sequences past the source's, and an import that would
collide, or does not check out, leaves nothing behind. An import trusts nothing of its file (issue
57 §2): each crafted file below got its rows into the target before, and is refused now with
nothing written."""

from __future__ import annotations

import io
import json
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from hipocampo import db as hdb
from hipocampo.db.tenant_copy import SIGNATURE, TenantCopyError, export_tenant, import_tenant

from .conftest import World
from .reads import READS, TIMELESS, act_on, reader

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]
# Tables that hold a tenant's rows but are not copied: a copy starts with an empty answer cache;
# tenant_moves is the source's record of where its tenants went.
NOT_COPIED = {"answer_cache", "tenant_moves"}
KEY = b"the operators' shared key, 32 b."


_act = act_on


@pytest.fixture(scope="module")
def source(database_url: str) -> Iterator[dict[str, Any]]:
    """Tenant A of a World committed in the session database, with reads queued and drained (the
    access log, chunk_access), a memory, a conversation and a session; deleted afterwards."""
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        world = World(conn, lambda *a: _act(conn, *a))
        args = reader(conn, world)
        conn.execute(READS["hybrid_search"], args)
        _act(conn, "service_role")
        conn.execute("select hipocampo.drain_read_queue()")
        _act(conn, "authenticated", world.member_a, world.tenant_a)
        conn.execute(READS["search_memories"], args)  # one read still queued
        # A reply marked not useful and judged (issue 59 §5): feedback and a judged question.
        trace = uuid.uuid4()
        conn.execute(
            "select hipocampo.record_answer(%s, 'qual o prazo?', 'PASSAGES', null, 0.4, 1, 1, null, '{}', 5,"
            " array[%s]::uuid[])",
            (trace, world.kb_a),
        )
        conn.execute("select hipocampo.record_feedback(%s, false, 'não era isso', 'qual o prazo?')", (trace,))
        _act(conn, "authenticated", world.admin_a, world.tenant_a)
        conn.execute("select hipocampo.judge_feedback(%s, array[%s]::uuid[])", (trace, world.doc_a))
        _act(conn, "authenticated", world.member_a, world.tenant_a)
        conn.commit()
    yield {"world": world, "args": args}
    with psycopg.connect(database_url, autocommit=True) as conn:
        for tenant in (world.tenant_a, world.tenant_b):
            conn.execute("select hipocampo.delete_tenant(%s)", (tenant,))


@pytest.fixture
def target() -> Iterator[str]:
    with hdb.scratch_database("hipocampo_tenant_copy") as url:
        yield url


def _read(url: str, who: tuple[Any, ...], sql: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        _act(conn, *who)
        rows = conn.execute(sql, args).fetchall()
        conn.rollback()
    return rows


def test_the_table_list_covers_every_table_that_holds_a_tenant(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        listed = {r[0] for r in conn.execute("select name from hipocampo_private._tenant_tables()")}
        holding = {
            r[0]
            for r in conn.execute(
                "select c.relname from pg_class as c join pg_namespace as n on n.oid = c.relnamespace"
                " join pg_attribute as a on a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped"
                " where n.nspname = 'hipocampo_private' and c.relkind = 'r'"
            )
        }
    assert listed == (holding - NOT_COPIED) | {"tenants"}


def test_a_tenant_copied_to_another_database_holds_and_answers_the_same(
    database_url: str, source: dict[str, Any], target: str, tmp_path: Path
) -> None:
    world: World = source["world"]
    path = tmp_path / "a.tar.gz"
    manifest = export_tenant(database_url, world.tenant_a, path, key=KEY)
    assert manifest["digest"]["chunks"]["rows"] == 2 and manifest["digest"]["read_queue"]["rows"] == 1
    assert manifest["digest"]["kb_postings"]["rows"] > 0 and manifest["digest"]["data_access_log"]["rows"] == 1
    assert manifest["digest"]["answer_feedback"]["rows"] == 1 and manifest["digest"]["judged_questions"]["rows"] == 1
    digest = import_tenant(target, path, key=KEY)
    assert digest == manifest["digest"]  # every table, the derived ones rebuilt by the triggers
    member = ("authenticated", world.member_a, world.tenant_a)
    for read in TIMELESS:
        assert _read(target, member, READS[read], source["args"]) == _read(
            database_url, member, READS[read], source["args"]
        ), read
    # The target's sequences are past the source's: its next rows take new ids.
    with psycopg.connect(target, row_factory=dict_row) as conn:
        _act(conn, *member)
        row = conn.execute("select hipocampo.add_message(%s, 'user', 'E a multa?') as v", (source["args"]["conv"],))
        new_id = row.fetchone()
        conn.commit()
    with psycopg.connect(database_url) as conn:
        top = conn.execute("select max(id) from hipocampo_private.messages").fetchone()
    assert new_id is not None and top is not None and new_id["v"] > top[0]


def test_an_import_that_would_collide_or_differs_keeps_nothing(
    database_url: str, source: dict[str, Any], target: str, tmp_path: Path
) -> None:
    world: World = source["world"]
    path = tmp_path / "a.tar.gz"
    export_tenant(database_url, world.tenant_a, path)
    # A copy whose chunk text was changed on the way: the digest differs, nothing stays.
    tampered = tmp_path / "tampered.tar.gz"
    with tarfile.open(path, "r:gz") as src, tarfile.open(tampered, "w:gz") as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read()  # type: ignore[union-attr]
            if m.name.endswith("_chunks.copy"):
                data = data.replace(b"30 dias", b"90 dias")
            m.size = len(data)
            dst.addfile(m, io.BytesIO(data))
    with pytest.raises(TenantCopyError, match=r"the copy differs from the source in .*chunks") as exc:
        import_tenant(target, tampered, trust_unsigned=True)
    assert exc.value.sqlstate == "XX000"
    with psycopg.connect(target) as conn:
        assert conn.execute("select count(*) from hipocampo_private.tenants").fetchone() == (0,)
    import_tenant(target, path, trust_unsigned=True)
    with pytest.raises(TenantCopyError, match="is already in the target") as exc:
        import_tenant(target, path, trust_unsigned=True)
    assert exc.value.sqlstate == "23505"
    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute("select hipocampo.delete_tenant(%s)", (world.tenant_a,))
        conn.execute("delete from supabase_migrations.schema_migrations where version = (select max(version)"
                     " from supabase_migrations.schema_migrations)")  # fmt: skip
    with pytest.raises(TenantCopyError, match="migrate both to the same version first") as exc:
        import_tenant(target, path, trust_unsigned=True)
    assert exc.value.sqlstate == "55000"
    (tmp_path / "junk.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(TenantCopyError, match="not a tenant export") as exc:
        import_tenant(target, tmp_path / "junk.tar.gz")
    assert exc.value.sqlstate == "22023"


def test_an_unknown_tenant_is_not_exported(database_url: str, tmp_path: Path) -> None:
    with pytest.raises(TenantCopyError, match="unknown tenant") as exc:
        export_tenant(database_url, uuid.uuid4(), tmp_path / "x.tar.gz")
    assert exc.value.sqlstate == "P0002"


def test_the_cli_exports_and_imports(source: dict[str, Any], target: str, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hipocampo.cli import app

    world: World = source["world"]
    runner = CliRunner()
    path = tmp_path / "cli.tar.gz"
    key = tmp_path / "key"
    key.write_bytes(KEY + b"\n")
    out = runner.invoke(app, ["tenant", "export", str(world.tenant_a), str(path), "--key-file", str(key), "--json"])
    assert out.exit_code == 0, out.output
    exported = json.loads(out.stdout)
    assert exported["tenant"]["id"] == str(world.tenant_a) and exported["rows"]["chunks"] == 2 and exported["signed"]
    unsigned = runner.invoke(app, ["tenant", "import", str(path), "--to", target])
    assert unsigned.exit_code == 1 and "no key was given to check it" in unsigned.output
    back = runner.invoke(
        app, ["tenant", "import", str(path), "--to", target, "--json"], env={"HIPOCAMPO_TENANT_COPY_KEY": KEY.decode()}
    )
    assert back.exit_code == 0, back.output
    assert json.loads(back.stdout)["rows"] == exported["rows"]
    again = runner.invoke(app, ["tenant", "import", str(path), "--to", target, "--key-file", str(key)])
    assert again.exit_code == 1 and "is already in the target" in again.output


# --- An import trusts nothing of its file (issue 57 §2) ---------------------------------------


def _craft(src: Path, dst: Path, edit: Any, key: bytes | None = None) -> None:
    """``src`` rewritten to ``dst`` by ``edit(manifest, members)`` (both mutable), signed with
    ``key`` when given (the attacker's own file, or an operator's key in the wrong hands)."""
    with tarfile.open(src, "r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    members.pop(SIGNATURE, None)
    manifest = json.loads(members["manifest.json"])
    edit(manifest, members)
    members["manifest.json"] = json.dumps(manifest).encode()
    if key is not None:
        from hipocampo.db.tenant_copy import _mac

        members[SIGNATURE] = json.dumps({"alg": "HMAC-SHA256", "mac": _mac(key, members)}).encode()
    with tarfile.open(dst, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _entry(manifest: dict[str, Any], table: str) -> dict[str, Any]:
    return next(t for t in manifest["tables"] if t["name"] == table)


def _append(manifest: dict[str, Any], members: dict[str, bytes], table: str, values: dict[str, str]) -> None:
    """One more COPY row in ``table``'s member: ``values`` over the first row's (or \\N)."""
    entry = _entry(manifest, table)
    lines = members[entry["file"]].decode().splitlines()
    template = dict(zip(entry["columns"], lines[0].split("\t"), strict=True)) if lines else {}
    row = [values.get(c, template.get(c, "\\N")) for c in entry["columns"]]
    members[entry["file"]] = "\n".join([*lines, "\t".join(row)]).encode() + b"\n"


def _rewrite(manifest: dict[str, Any], members: dict[str, bytes], table: str, column: str, value: str) -> None:
    """Every row of ``table`` with ``column`` set to ``value``."""
    entry = _entry(manifest, table)
    i = entry["columns"].index(column)
    rows = [line.split("\t") for line in members[entry["file"]].decode().splitlines()]
    for r in rows:
        r[i] = value
    members[entry["file"]] = "".join("\t".join(r) + "\n" for r in rows).encode()


@pytest.fixture
def victim(database_url: str, source: dict[str, Any], target: str, tmp_path: Path) -> dict[str, Any]:
    """The target holds tenant B (imported, trusted); A's export is the attacker's starting file."""
    world: World = source["world"]
    export_tenant(database_url, world.tenant_b, tmp_path / "b.tar.gz", key=KEY)
    import_tenant(target, tmp_path / "b.tar.gz", key=KEY)
    export_tenant(database_url, world.tenant_a, tmp_path / "a.tar.gz")
    return {"world": world, "file": tmp_path / "a.tar.gz", "state": _state(target)}


def _state(url: str) -> dict[str, Any]:
    """What an import must leave alone when refused: every tenant, membership, model, secret name
    and binding of the target, its chunks and queued reads (a sequence's nextval is never rolled
    back, so positions are not compared)."""
    with psycopg.connect(url) as conn:
        return {
            q: conn.execute(q).fetchall()
            for q in (
                "select id, slug from hipocampo_private.tenants order by 1",
                "select tenant_id, user_id, role from hipocampo_private.memberships order by 1, 2",
                "select name from hipocampo_private.embedding_models order by 1",
                "select * from hipocampo_private.project_secrets order by 1",
                "select id, kb_ids, rag_overrides from hipocampo_private.agent_bindings order by 1",
                "select count(*) from hipocampo_private.chunks",
                "select count(*) from hipocampo_private.read_queue",
            )
        }


def _attack(victim: dict[str, Any], target: str, tmp_path: Path, edit: Any, sqlstate: str, match: str) -> None:
    crafted = tmp_path / "crafted.tar.gz"
    _craft(victim["file"], crafted, edit, key=KEY)
    with pytest.raises(TenantCopyError, match=match) as exc:
        import_tenant(target, crafted, key=KEY)
    assert exc.value.sqlstate == sqlstate
    assert _state(target) == victim["state"]


def test_a_membership_in_another_tenant_is_refused(victim: dict[str, Any], target: str, tmp_path: Path) -> None:
    w: World = victim["world"]
    _attack(
        victim, target, tmp_path,
        lambda m, f: _append(m, f, "memberships", {"tenant_id": str(w.tenant_b), "user_id": str(w.member_a),
                                                    "role": "admin"}),
        "42501", "imported memberships: 1 rows name another tenant",
    )  # fmt: skip


def test_a_chunk_in_another_tenant_s_knowledge_base_is_refused(
    victim: dict[str, Any], target: str, tmp_path: Path
) -> None:
    w: World = victim["world"]
    # A chunk of B's own (B's tenant, document and knowledge base): outside A's digest.
    planted = {"id": "987654321012", "tenant_id": str(w.tenant_b), "kb_id": str(w.kb_b), "document_id": str(w.doc_b),
               "content_hash": "planted"}  # fmt: skip
    _attack(
        victim, target, tmp_path, lambda m, f: _append(m, f, "chunks", planted),
        "42501", "imported chunks: 1 rows name another tenant",
    )  # fmt: skip
    # A's chunks moved into B's knowledge base.
    _attack(
        victim, target, tmp_path, lambda m, f: _rewrite(m, f, "chunks", "kb_id", str(w.kb_b)),
        "42501", r"imported rows leave the tenant: chunks: chunk \d+ names knowledge base",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("table", "columns", "row"),
    [
        ("project_secrets", ["name", "value"], "OPENAI_API_KEY\tsk-attacker"),
        ("embedding_models", ["name", "dims"], "evil-model\t3"),
        ("kb_postings", ["tenant_id"], "x"),  # derived: rebuilt by the target, never written from a file
    ],
)
def test_a_table_an_import_does_not_write_is_refused(
    victim: dict[str, Any], target: str, tmp_path: Path, table: str, columns: list[str], row: str
) -> None:
    def edit(manifest: dict[str, Any], members: dict[str, bytes]) -> None:
        manifest["tables"].append({"name": table, "file": f"99_{table}.copy", "columns": columns})
        members[f"99_{table}.copy"] = row.encode() + b"\n"

    _attack(victim, target, tmp_path, edit, "22023", f"names table '{table}', which an import does not write")


def test_columns_other_than_the_target_s_are_refused(victim: dict[str, Any], target: str, tmp_path: Path) -> None:
    def edit(manifest: dict[str, Any], members: dict[str, bytes]) -> None:
        _entry(manifest, "memberships")["columns"] = ["tenant_id", "user_id"]

    _attack(victim, target, tmp_path, edit, "22023", "the export's columns of memberships are not the target's")


def test_a_binding_to_another_tenant_s_knowledge_base_is_refused(
    victim: dict[str, Any], target: str, tmp_path: Path
) -> None:
    w: World = victim["world"]
    binding = {"id": str(uuid.uuid4()), "tenant_id": str(w.tenant_a), "name": "portaria", "kb_ids": f"{{{w.kb_b}}}",
               "rag_overrides": "{}", "created_at": "2026-11-28 00:00:00+00",
               "updated_at": "2026-11-28 00:00:00+00"}  # fmt: skip
    _attack(
        victim, target, tmp_path, lambda m, f: _append(m, f, "agent_bindings", binding),
        "42501", f"agent_bindings: portaria names knowledge base {w.kb_b}, not the tenant's",
    )  # fmt: skip


def test_a_binding_naming_the_service_role_key_is_refused(victim: dict[str, Any], target: str, tmp_path: Path) -> None:
    w: World = victim["world"]
    binding = {"id": str(uuid.uuid4()), "tenant_id": str(w.tenant_a), "name": "portaria", "kb_ids": f"{{{w.kb_a}}}",
               "rag_overrides": '{"api_key_secret": "SUPABASE_SERVICE_ROLE_KEY"}',
               "created_at": "2026-11-28 00:00:00+00", "updated_at": "2026-11-28 00:00:00+00"}  # fmt: skip
    _attack(
        victim, target, tmp_path, lambda m, f: _append(m, f, "agent_bindings", binding),
        "42501", r"imported agent binding portaria: rag.api_key_secret is the operator's to set",
    )  # fmt: skip


def test_a_secret_in_an_imported_chunk_is_refused(victim: dict[str, Any], target: str, tmp_path: Path) -> None:
    """Issue 57 §6: the forbidden-sources check holds on every write path, an import's too."""
    token = "token ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    _attack(
        victim, target, tmp_path, lambda m, f: _rewrite(m, f, "chunks", "content", token),
        "22023", r"imported document \S+ is of a forbidden kind \(credentials\): a credential \(GitHubTokenDetector\)",
    )  # fmt: skip


def test_a_sequence_entry_moves_nothing_the_import_does_not_copy(
    victim: dict[str, Any], target: str, tmp_path: Path
) -> None:
    """Before: ``read_queue.id`` at its maximum, and every tenant's reads failed with 2200H."""
    world: World = victim["world"]

    def edit(manifest: dict[str, Any], members: dict[str, bytes]) -> None:
        manifest["sequences"]["read_queue.id"] = 9223372036854775807

    crafted = tmp_path / "seq.tar.gz"
    _craft(victim["file"], crafted, edit, key=KEY)
    import_tenant(target, crafted, key=KEY)
    with psycopg.connect(target) as conn:
        last = conn.execute("select last_value from hipocampo_private.read_queue_id_seq").fetchone()
        assert last is not None and last[0] < 1000
    member_b = ("authenticated", world.member_b, world.tenant_b)
    assert _read(target, member_b, READS["lookup_memories"], {}) == []  # a recorded read: no 2200H


def test_an_unsigned_or_forged_file_is_refused(victim: dict[str, Any], target: str, tmp_path: Path) -> None:
    with pytest.raises(TenantCopyError, match="is not signed: import only files you exported yourself") as exc:
        import_tenant(target, victim["file"])
    assert exc.value.sqlstate == "42501"
    forged = tmp_path / "forged.tar.gz"
    _craft(victim["file"], forged, lambda m, f: None, key=b"the attacker's own key, 32 bytes")
    with pytest.raises(TenantCopyError, match="the signature does not match the key") as exc:
        import_tenant(target, forged, key=KEY)
    assert exc.value.sqlstate == "42501"
    assert _state(target) == victim["state"]
