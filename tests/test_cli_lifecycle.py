"""The CLI's lifecycle commands and its manners (issue 19 §1.5-§1.8): tenants, members, KB and
document deletion, config, memory options, one-line errors with documented exit codes, help
texts filled."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from hipocampo.cli import app
from hipocampo.cli.memory import LOCAL_USER

from .conftest import MODEL

pytestmark = pytest.mark.any_model

runner = CliRunner()
HIPOCAMPO = str(Path(sys.executable).with_name("hipocampo"))


def ok(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, (args, res.output)
    return res.output


def tenant_with_kb(tmp_path: Path) -> str:
    slug = f"life-{uuid.uuid4().hex[:8]}"
    ok("tenant", "create", "Condomínio", "--slug", slug)
    (tmp_path / "regimento.txt").write_text("Art. 1º O salão de festas fecha à meia-noite.", encoding="utf-8")
    ok("ingest", str(tmp_path), "--kb", "regras", "--create-kb", "--tenant", slug, "--source-type", "regulation")
    return slug


def test_tenants_and_members(database_url: str) -> None:
    slug = f"life-{uuid.uuid4().hex[:8]}"
    ok("tenant", "create", "Condomínio Lua", "--slug", slug)
    rows = json.loads(ok("tenant", "list", "--json"))
    mine = [r for r in rows if r["slug"] == slug]
    assert mine and mine[0]["name"] == "Condomínio Lua" and mine[0]["members"] == 0
    user = str(uuid.uuid4())
    assert f"{user} is now admin of {slug}" in ok("member", "add", user, "--tenant", slug, "--role", "admin")
    members = json.loads(ok("member", "list", "--tenant", slug, "--json"))
    assert [(m["user_id"], m["role"]) for m in members] == [(user, "admin")]
    assert user in ok("member", "list", "--tenant", slug)  # the whole id in the table
    ok("member", "remove", user, "--tenant", slug)
    res = runner.invoke(app, ["member", "remove", user, "--tenant", slug])
    assert res.exit_code == 1 and f"error [P0002]: {user} is not a member of {slug}" in res.output
    res = runner.invoke(app, ["member", "add", "bob", "--tenant", slug])
    assert res.exit_code == 1 and "error [22023]: user is not a uuid: 'bob'" in res.output


def test_documents_list_update_delete(database_url: str, tmp_path: Path) -> None:
    slug = tenant_with_kb(tmp_path)
    docs = json.loads(ok("doc", "list", "--kb", "regras", "--tenant", slug, "--json"))
    assert [(d["title"], d["source_type"], d["trust_score"]) for d in docs] == [("regimento", "regulation", 0.9)]
    doc = docs[0]["id"]
    table = ok("doc", "list", "--kb", "regras", "--tenant", slug)
    assert doc in table and "0.90" in table
    assert json.loads(ok("doc", "show", doc, "--tenant", slug))["kb"] == "regras"
    out = json.loads(ok("doc", "update", doc, "--tenant", slug, "--trust", "0.6", "--status", "archived"))
    assert (out["trust_score"], out["status"]) == (0.6, "archived")
    res = runner.invoke(app, ["doc", "update", doc, "--tenant", slug, "--trust", "1.5"])
    assert res.exit_code == 1 and "error [22023]: trust_score must lie in [0, 1] (got 1.5)" in res.output
    res = runner.invoke(app, ["doc", "delete", doc, "--tenant", slug], input="n\n")
    assert res.exit_code == 1 and "Delete 'regimento' from regras?" in res.output
    assert "deleted regimento (1 chunks) from regras" in ok("doc", "delete", doc, "--tenant", slug, "--yes")
    res = runner.invoke(app, ["doc", "show", doc, "--tenant", slug])
    assert res.exit_code == 1 and f"error [P0002]: unknown document: {doc}" in res.output


def test_documents_list_a_page_at_a_time(database_url: str, tmp_path: Path) -> None:
    """``doc list --limit/--after``: keyset pages by source URI; stderr names the next page."""
    slug = tenant_with_kb(tmp_path)
    for name in ("salao", "vagas"):
        (tmp_path / f"{name}.txt").write_text(f"Regra sobre {name}.", encoding="utf-8")
    ok("ingest", str(tmp_path), "--kb", "regras", "--tenant", slug)
    every = json.loads(ok("doc", "list", "--kb", "regras", "--tenant", slug, "--json"))
    uris = [d["source_uri"] for d in every]
    assert len(uris) == 3 and uris == sorted(uris)
    res = runner.invoke(app, ["doc", "list", "--kb", "regras", "--tenant", slug, "--json", "--limit", "2"])
    assert res.exit_code == 0 and "2 documents shown, more follow: --after" in res.stderr
    assert [d["source_uri"] for d in json.loads(res.stdout)] == uris[:2]
    res = runner.invoke(app, ["doc", "list", "--kb", "regras", "--tenant", slug, "--json", "--after", uris[1]])
    assert res.exit_code == 0 and res.stderr == ""
    assert [d["source_uri"] for d in json.loads(res.stdout)] == uris[2:]
    res = runner.invoke(app, ["doc", "list", "--kb", "regras", "--tenant", slug, "--limit", "0"])
    assert res.exit_code == 2


def test_kb_delete_asks_and_deletes(database_url: str, tmp_path: Path) -> None:
    slug = tenant_with_kb(tmp_path)
    res = runner.invoke(app, ["kb", "delete", "regras", "--tenant", slug], input="n\n")
    assert res.exit_code == 1 and "its 1 documents?" in res.output
    assert json.loads(ok("kb", "list", "--tenant", slug, "--json"))[0]["name"] == "regras"
    assert "deleted regras: 1 documents, 1 chunks" in ok("kb", "delete", "regras", "--tenant", slug, "--yes")
    assert json.loads(ok("kb", "list", "--tenant", slug, "--json")) == []
    res = runner.invoke(app, ["kb", "delete", "regras", "--tenant", slug, "--yes"])
    assert res.exit_code == 1 and "error [P0002]: unknown knowledge base" in res.output


def test_tenant_delete_asks_and_deletes_everything(database_url: str, tmp_path: Path) -> None:
    slug = tenant_with_kb(tmp_path)
    res = runner.invoke(app, ["tenant", "delete", slug], input="n\n")
    assert res.exit_code == 1 and f"Delete tenant {slug!r}, its 1 knowledge bases" in res.output
    out = json.loads(ok("tenant", "delete", slug, "--yes", "--json"))
    assert (out["slug"], out["knowledge_bases"], out["documents"], out["chunks"]) == (slug, 1, 1, 1)
    assert slug not in {r["slug"] for r in json.loads(ok("tenant", "list", "--json"))}
    res = runner.invoke(app, ["tenant", "delete", slug, "--yes"])
    assert res.exit_code == 1 and f"error [P0002]: unknown tenant {slug!r}" in res.output


def test_config_show_and_set(database_url: str) -> None:
    slug = f"life-{uuid.uuid4().hex[:8]}"
    ok("tenant", "create", "Condomínio", "--slug", slug)
    assert json.loads(ok("config", "show", "rag", "--tenant", slug, "--json"))["top_k"] == 4
    assert json.loads(ok("config", "set", "rag", '{"top_k": 6}', "--tenant", slug)) == {"top_k": 6}
    assert json.loads(ok("config", "show", "rag", "--tenant", slug, "--json"))["top_k"] == 6
    assert (
        json.loads(ok("config", "show", "retrieval", "--tenant", slug, "--json"))["default_trust"]["regulation"] == 0.9
    )
    for patch, said in [
        ('{"top_k": 99}', "error [22003]: rag.top_k must lie in [1, 20]"),
        ('{"nope": 1}', "error [22023]: unknown key rag.nope"),
        ("{top_k: 6", "error [22023]: patch is not JSON"),
    ]:
        res = runner.invoke(app, ["config", "set", "rag", patch, "--tenant", slug])
        assert res.exit_code == 1 and said in res.output, res.output
    res = runner.invoke(app, ["config", "show", "nope", "--tenant", slug])
    assert res.exit_code == 1 and "error [22023]: unknown section 'nope'" in res.output


def test_config_set_for_one_model_of_a_knowledge_base(database_url: str, tmp_path: Path) -> None:
    """--kb with --model stores the knowledge base's tuning for that embedding model, --model alone
    the tenant's: in force while it is the active model (shown by config show), refused for keys
    that do not depend on the model."""
    slug = tenant_with_kb(tmp_path)

    out = ok(
        "config", "set", "retrieval", '{"dense_weight": 1.3}', "--tenant", slug, "--kb", "regras", "--model", MODEL
    )
    assert json.loads(out) == {"dense_weight": 1.3}
    assert (
        json.loads(ok("config", "show", "retrieval", "--tenant", slug, "--kb", "regras", "--json"))["dense_weight"]
        == 1.3
    )
    assert json.loads(ok("config", "show", "retrieval", "--tenant", slug, "--json"))["dense_weight"] != 1.3
    for args, said in [
        (
            ["rag", '{"top_k": 3}', "--kb", "regras", "--model", MODEL],
            "error [22023]: rag.top_k is not tuned per model",
        ),
        (["rag", '{"top_k": 3}', "--model", MODEL], "error [22023]: rag.top_k is not tuned per model"),
        (["rag", "{}", "--kb", "regras", "--model", "nope"], "error [P0002]: unknown embedding model: nope"),
    ]:
        res = runner.invoke(app, ["config", "set", *args, "--tenant", slug])
        assert res.exit_code == 1 and said in " ".join(res.output.split()), res.output
    # The tenant's tuning: every model-dependent key, the memory ones too; a knowledge base's own
    # tuning still wins for that knowledge base.
    out = ok("config", "set", "memory", '{"answer_threshold": 0.61}', "--tenant", slug, "--model", MODEL)
    assert json.loads(out) == {"answer_threshold": 0.61}
    assert json.loads(ok("config", "show", "memory", "--tenant", slug, "--json"))["answer_threshold"] == 0.61
    ok("config", "set", "retrieval", '{"dense_weight": 0.7}', "--tenant", slug, "--model", MODEL)
    assert json.loads(ok("config", "show", "retrieval", "--tenant", slug, "--json"))["dense_weight"] == 0.7
    assert (
        json.loads(ok("config", "show", "retrieval", "--tenant", slug, "--kb", "regras", "--json"))["dense_weight"]
        == 1.3
    )


def test_memory_user_is_checked_and_said(database_url: str) -> None:
    """Before: --user bob printed a traceback; without --user a hidden user was used silently."""
    slug = f"life-{uuid.uuid4().hex[:8]}"
    ok("tenant", "create", "Condomínio", "--slug", slug)
    res = runner.invoke(app, ["memory", "list", "--tenant", slug, "--user", "bob"])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "error [22023]: --user must be a uuid (the auth user's id, the JWT's sub): 'bob'" in res.output
    res = runner.invoke(app, ["memory", "consent", "--tenant", slug], env={"HIPOCAMPO_USER": ""})
    assert res.exit_code == 0
    assert f"acting as the local user {LOCAL_USER}" in res.output and f"added {LOCAL_USER} to tenant" in res.output
    # Naming a uuid never makes it a member (issue 44 §5): a read or a write is refused until added.
    stranger = str(uuid.uuid4())
    for command in (["memory", "list"], ["memory", "consent"]):
        res = runner.invoke(app, [*command, "--tenant", slug, "--user", stranger])
        assert res.exit_code == 1 and f"error [P0002]: user {stranger} is not a member of tenant {slug}" in res.output
    members = json.loads(ok("member", "list", "--tenant", slug, "--json"))
    assert stranger not in {m["user_id"] for m in members}


def test_a_read_never_writes(database_url: str) -> None:
    """Issue 58 §1: `kb list` without --tenant created a tenant "default", and `memory recall`
    without --user added the local user as a member. A read creates nothing and names the flag
    to pass, with the values that exist."""
    slug = f"life-{uuid.uuid4().hex[:8]}"
    ok("tenant", "create", "Condomínio", "--slug", slug)
    with psycopg.connect(database_url) as conn:
        had_default = conn.execute("select 1 from hipocampo_private.tenants where slug = 'default'").fetchone()
    for command in (["kb", "list"], ["agent", "list"], ["doc", "list", "--kb", "x"], ["config", "show", "rag"]):
        res = runner.invoke(app, command, env={"HIPOCAMPO_USER": ""})
        if had_default is None:
            assert res.exit_code == 1, (command, res.output)
            assert "error [P0002]: unknown tenant 'default'; pass --tenant with one of:" in res.output
            assert slug in res.output
    for command in (["memory", "recall", "prazo"], ["memory", "list"], ["memory", "lookup", "--key", "a.b"]):
        res = runner.invoke(app, [*command, "--tenant", slug], env={"HIPOCAMPO_USER": ""})
        assert res.exit_code == 1, (command, res.output)
        hint = f"the local user is not a member of tenant {slug}: `hipocampo memory consent --tenant {slug}`"
        assert hint in res.output
    with psycopg.connect(database_url) as conn:
        has_default = conn.execute("select 1 from hipocampo_private.tenants where slug = 'default'").fetchone()
        members = conn.execute(
            "select count(*) from hipocampo_private.memberships as m join hipocampo_private.tenants as t"
            " on t.id = m.tenant_id where t.slug = %s",
            (slug,),
        ).fetchone()
    assert (has_default is None) == (had_default is None) and members == (0,)


def test_the_hubs_local_user_is_an_admin_of_the_tenant_named(database_url: str) -> None:
    """Issue 58 §2: `serve --dev-user` signed in as admin of a silently created tenant demo;
    `--tenant sol` makes the local user an admin of sol, and an unknown slug names the ones there."""
    from hipocampo.cli.answers import _dev_user

    slug = f"life-{uuid.uuid4().hex[:8]}"
    ok("tenant", "create", "Condomínio", "--slug", slug)
    user = _dev_user(database_url, "s" * 48, slug)
    members = json.loads(ok("member", "list", "--tenant", slug, "--json"))
    assert {(m["user_id"], m["role"]) for m in members} == {(str(user.user_id), "admin")}
    with pytest.raises(typer.Exit):
        _dev_user(database_url, "s" * 48, "nao-existe-" + slug)


@pytest.mark.any_model(False)  # the recall's hit is the configured model's
def test_memory_commands_print_tables_and_take_emotion(database_url: str) -> None:
    slug = f"life-{uuid.uuid4().hex[:8]}"
    ok("tenant", "create", "Condomínio", "--slug", slug)
    user = str(uuid.uuid4())
    base = ["--tenant", slug, "--user", user]
    ok("member", "add", user, "--tenant", slug)
    ok("memory", "consent", *base)
    out = ok(
        "memory", "remember", "prefs.tom", "formal", "Prefere tom formal no trabalho", "-c", "preference",
        "--emotion", "calma", "--life-domain", "trabalho", *base,
    )  # fmt: skip
    assert out.startswith("created ") and len(out.split()[1]) == 36
    res = runner.invoke(
        app, ["memory", "remember", "prefs.x", "y", "Algo sobre x", "-c", "preference", "--emotion", "feliz", *base]
    )
    assert res.exit_code == 1 and "error [23514]" in res.output
    table = ok("memory", "lookup", "--key", "prefs.tom", *base)
    assert "prefs.tom" in table and '"formal"' in table
    rows: list[dict[str, Any]] = json.loads(ok("memory", "lookup", "--key", "prefs.tom", "--json", *base))
    assert rows[0]["emotion"] == "calma" and rows[0]["life_domain"] == "trabalho"
    hits = json.loads(ok("memory", "recall", "tom no trabalho", "--emotion", "calma", "--json", *base))
    assert [h["key"] for h in hits["hits"]] == ["prefs.tom"]


def test_exit_codes_are_documented_and_kept(database_url: str) -> None:
    res = runner.invoke(app, ["search"])
    assert res.exit_code == 2  # usage
    res = runner.invoke(app, ["kb", "list", "--tenant", "nobody-here"])
    assert res.exit_code == 1
    env = {**os.environ, "HIPOCAMPO_DATABASE_URL": "postgresql://nobody@/postgres?host=/nonexistent&connect_timeout=1"}
    proc = subprocess.run([HIPOCAMPO, "kb", "list"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3 and proc.stderr.startswith("error [08") and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def _commands(group: Any, path: list[str]) -> list[tuple[list[str], Any]]:
    out: list[tuple[list[str], Any]] = []
    for name, sub in getattr(group, "commands", {}).items():
        out.extend(_commands(sub, [*path, name]) if hasattr(sub, "commands") else [([*path, name], sub)])
    return out


@pytest.mark.parametrize("path", [p for p, _ in _commands(typer.main.get_command(app), [])], ids=" ".join)
def test_every_help_text_is_filled(path: list[str]) -> None:
    """Before: options without help (recall -k/--tag, lookup --key/--category, list --history),
    placeholders eaten by the markup ('default  host', 'named by  jwt_secret_env') and literal
    double backticks."""
    command = dict((tuple(p), c) for p, c in _commands(typer.main.get_command(app), []))[tuple(path)]
    assert command.help, path
    for param in command.params:
        if param.name != "help":
            assert getattr(param, "help", None), (path, param.name)
    res = runner.invoke(app, [*path, "--help"], terminal_width=200)
    assert res.exit_code == 0
    assert "``" not in res.output and "  host" not in res.output and "by  " not in res.output
    # A placeholder outside backticks is an HTML tag to the markdown markup, which drops it
    # (calibrate printed '[calibration.""]').
    helps = [command.help, *(getattr(param, "help", None) or "" for param in command.params)]
    for placeholder in {m for text in helps for m in re.findall(r"<[a-z][\w-]*>", text)}:
        assert placeholder in res.output, (path, placeholder)


# Commands that print JSON whatever the flag (results that are documents), or nothing to parse.
ALWAYS_JSON_OR_NO_RESULT = {
    "worker", "demo", "serve", "mcp", "db start", "db stop", "db url", "db reset", "db embed-missing",
    "memory seed-profile", "memory export", "memory erase", "doc show", "doc update", "config show", "config set",
}  # fmt: skip


def test_every_command_with_a_result_takes_json() -> None:
    """Issue 19 §2: a consistent --json on every command."""
    lacking = [
        " ".join(p)
        for p, c in _commands(typer.main.get_command(app), [])
        if " ".join(p) not in ALWAYS_JSON_OR_NO_RESULT and not any(x.name == "as_json" for x in c.params)
    ]
    assert lacking == []
    slug = f"life-{uuid.uuid4().hex[:8]}"
    created = json.loads(runner.invoke(app, ["tenant", "create", "Json", "--slug", slug, "--json"]).stdout)
    assert created["slug"] == slug and uuid.UUID(created["id"])


def test_a_stopped_embedded_server_is_started_again_out_loud(tmp_path: Path) -> None:
    """Issue 19 §1.7: a stopped server was restarted silently by the next command. A throwaway
    embedded server of its own (not the session's), started, stopped, then used."""
    data = Path(f"/tmp/hipocampo-test-restart-{os.getpid()}") / "data"
    data.parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("HIPOCAMPO_DATABASE_URL", "HIPOCAMPO_TEST_SERVER_URL")}
    env["HIPOCAMPO_DATA_DIR"] = str(data)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([HIPOCAMPO, *args], env=env, capture_output=True, text=True, timeout=300)

    try:
        fresh = run("kb", "list", "--json")  # issue 45 §6: a new, empty database is said, not silent
        assert f"creating a new, empty embedded database in {data}" in fresh.stderr, fresh.stderr
        # issue 58 §1: a read creates no tenant; it says how to make one
        assert fresh.returncode == 1 and "no tenant exists yet" in fresh.stderr, fresh.stderr
        first = run("db", "start")
        assert first.returncode == 0, first.stderr
        assert run("db", "status").returncode == 0
        assert run("db", "stop").stdout.strip() == "stopped"
        stopped = run("db", "status")
        assert stopped.returncode == 1 and "running: False" in stopped.stdout
        again = run("kb", "list", "--json")
        assert again.returncode == 1 and "no tenant exists yet" in again.stderr, again.stderr
        assert f"starting the embedded PostgreSQL server ({data})" in again.stderr
        assert "starting" not in run("kb", "list").stderr  # running now: nothing said
    finally:
        run("db", "stop")
        import shutil

        shutil.rmtree(data.parent, ignore_errors=True)


def test_version() -> None:
    """Issue 45 §6: the CLI had no --version."""
    from hipocampo import __version__

    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.strip() == f"hipocampo {__version__}"


def test_config_show_is_a_table_by_default(database_url: str) -> None:
    """Issue 45 §6: `config show` printed the raw rows (every *_range and list key as JSON); now a
    table of key, value and bound, the raw rows with --json."""
    slug = f"life-{uuid.uuid4().hex[:8]}"
    ok("tenant", "create", "Condomínio", "--slug", slug)
    out = ok("config", "show", "rag", "--tenant", slug)
    top_k = next(line for line in out.splitlines() if " top_k " in f" {line} ")
    assert "4" in top_k and "1..20" in top_k
    assert "top_k_range" not in out and "operator_only" not in out
    assert any("provider" in line and "operator" in line for line in out.splitlines())
    assert json.loads(ok("config", "show", "rag", "--tenant", slug, "--json"))["top_k_range"] == [1, 20]


def test_doc_list_keeps_titles_whole_at_80_columns(database_url: str, tmp_path: Path) -> None:
    """Issue 45 §6: at 80 columns the title column was five characters wide and wrapped its words
    letter by letter; below 100 columns each document is two lines, the title whole on the second."""
    from hipocampo.cli import common

    slug = tenant_with_kb(tmp_path)
    narrow = Console(width=80, soft_wrap=True)
    original = common.console
    try:
        common.console = narrow
        import hipocampo.cli.lifecycle as lifecycle

        lifecycle.console = narrow
        with narrow.capture() as captured:
            ok("doc", "list", "--kb", "regras", "--tenant", slug)
    finally:
        common.console = original
        lifecycle.console = original
    lines = captured.get().splitlines()
    assert len(lines) == 2 and lines[0].endswith("1 chunks") and lines[1].strip() == "regimento"
