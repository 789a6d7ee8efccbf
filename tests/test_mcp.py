"""The MCP server (issue 20 §1): the real ``hipocampo mcp`` process driven by the official
SDK's own client over stdio, against the session's database, acting as a user of a tenant.
Tools listed with their input schemas, each tool's happy path, a gate refusal, a non-member
refused (42501) and another tenant's knowledge base invisible; then the same tools over streamable
HTTP in ``hipocampo serve`` (POST /mcp), each request acting as its bearer JWT, and 401 without
a valid one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from hipocampo import Actor, Hipocampo

from .asgi_server import serving

HIPOCAMPO = str(Path(sys.executable).with_name("hipocampo"))
TOOLS = {
    "search_knowledge_base",
    "ask",
    "remember",
    "recall",
    "forget",
    "correct",
    "list_memories",
    "context_pack",
    "memory_consent",
    "feedback",
}


@pytest.fixture(scope="module")
def tenants(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Tenant A with a knowledge base and a member with consent; tenant B with its own KB."""
    from typer.testing import CliRunner

    from hipocampo.cli import app

    runner = CliRunner()
    out: dict[str, Any] = {}
    for name, text in (
        ("a", "Art. 1º A piscina do condomínio fecha às 22 horas aos domingos."),
        ("b", "Art. 9º O segredo do tenant B: a garagem abre com o código azul."),
    ):
        slug = f"mcp-{name}-{uuid.uuid4().hex[:6]}"
        folder = tmp_path_factory.mktemp(f"docs-{name}")
        (folder / "regimento.txt").write_text(text, encoding="utf-8")
        for args in (
            ["tenant", "create", f"Tenant {name}", "--slug", slug],
            [
                "ingest",
                str(folder),
                "--kb",
                f"regras-{name}",
                "--create-kb",
                "--tenant",
                slug,
                "--source-type",
                "regulation",
            ],
        ):
            res = runner.invoke(app, args)
            assert res.exit_code == 0, res.output
        out[name] = slug
    user = uuid.uuid4()
    with Hipocampo(database_url) as root:
        tid = root.tenant_id(out["a"])
        assert tid is not None
        root.add_member(tid, user, "member")
        from hipocampo.memory import Memory

        Memory(root.as_actor(Actor.user(user, tid))).consent()
    out["user"] = str(user)
    yield out


def call(slug: str, user: str, steps: Any) -> Any:
    """Start ``hipocampo mcp`` for (slug, user), run ``await steps(client)``, return its result."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=HIPOCAMPO, args=["mcp", "--tenant", slug, "--user", user], env=dict(os.environ)
    )

    async def main() -> Any:
        async with Client(params) as client:
            return await steps(client)

    return anyio.run(main)


def data(result: Any) -> Any:
    """A tool result's value: its structured content, or its text parsed as JSON."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        value = result.structured_content
        return value.get("result", value) if isinstance(value, dict) and set(value) == {"result"} else value
    return json.loads(result.content[0].text)


def error_text(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


def test_tools_are_listed_with_input_schemas(tenants: dict[str, Any]) -> None:
    async def steps(client: Any) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in call(tenants["a"], tenants["user"], steps)}
    assert set(tools) == TOOLS
    search = tools["search_knowledge_base"]
    assert search.input_schema["required"] == ["query"]
    (top_k,) = [b for b in search.input_schema["properties"]["top_k"]["anyOf"] if b.get("type") == "integer"]
    assert top_k["maximum"] == 100  # hybrid_search's match_count range; left out: retrieval.match_count
    assert all(t.description and len(t.description) > 40 for t in tools.values())
    # Issue 60 §4: every tool says what it returns (a pydantic model's JSON schema), so a client
    # reads typed fields, not a bare object.
    assert all(t.output_schema for t in tools.values()), [n for n, t in tools.items() if not t.output_schema]
    hit = search.output_schema["properties"]["result"]["items"]
    assert {"final_score", "excerpt", "chunk_id"} <= set(
        search.output_schema["$defs"][hit["$ref"].split("/")[-1]]["properties"]
    )
    assert {"answer_source", "refused", "sources"} <= set(tools["ask"].output_schema["properties"])
    assert {"tokens_used", "window", "chunks"} <= set(tools["context_pack"].output_schema["properties"])
    assert tools["memory_consent"].output_schema["properties"]["granted"]["type"] == "boolean"


def test_search_ask_and_context_pack(tenants: dict[str, Any]) -> None:
    async def steps(client: Any) -> Any:
        hits = await client.call_tool("search_knowledge_base", {"query": "a que horas fecha a piscina?"})
        answer = await client.call_tool("ask", {"question": "A que horas fecha a piscina aos domingos?"})
        pack = await client.call_tool(
            "context_pack", {"conversation_id": str(uuid.uuid4()), "query": "horário da piscina"}
        )
        other = await client.call_tool("search_knowledge_base", {"query": "garagem código", "kb": ["regras-b"]})
        kbs = await client.read_resource("hipocampo://knowledge-bases")
        # issue 58 §4: one name as a string was a raw validation error with a URL
        named = await client.call_tool("search_knowledge_base", {"query": "piscina", "kb": "regras-a"})
        return hits, answer, pack, other, kbs, named

    hits, answer, pack, other, kbs, named = call(tenants["a"], tenants["user"], steps)
    assert data(named)[0]["title"] == "regimento"
    assert [kb["name"] for kb in json.loads(kbs.contents[0].text)] == ["regras-a"]  # tenant B's is not listed
    found = data(hits)
    assert found[0]["title"] == "regimento" and "22 horas" in found[0]["excerpt"]
    ans = data(answer)
    assert ans["refused"] is False and "22" in ans["answer"] and ans["sources"], ans
    assert "memories" in data(pack)
    # Tenant B's knowledge base does not exist for a member of A.
    assert "error [P0002]: unknown knowledge base" in error_text(other)


def test_memory_tools_round_trip_and_the_gate_refuses(tenants: dict[str, Any]) -> None:
    async def steps(client: Any) -> Any:
        out = [
            await client.call_tool(
                "remember",
                {
                    "key": "prefs.short_answers",
                    "value": True,
                    "description": "Prefere respostas curtas",
                    "category": "preference",
                },
            ),
            await client.call_tool(
                "remember",
                {
                    "key": "profile.cpf",
                    "value": "529.982.247-25",
                    "description": "O CPF dela é 529.982.247-25",
                    "category": "preference",
                },
            ),
            await client.call_tool("recall", {"query": "como devo responder?"}),
            await client.call_tool("list_memories", {}),
        ]
        memory_id = data(out[3])[0]["id"]
        out.append(
            await client.call_tool(
                "correct", {"memory_id": memory_id, "value": False, "description": "Prefere respostas detalhadas"}
            )
        )
        out.append(await client.call_tool("forget", {"memory_id": data(out[4])["memory_id"]}))
        out.append(await client.call_tool("forget", {"memory_id": "not-a-uuid"}))
        resource = await client.read_resource("hipocampo://memories")
        return out, resource

    (stored, refused, recalled, listed, corrected, forgotten, bad), resource = call(
        tenants["a"], tenants["user"], steps
    )
    assert data(stored)["status"] == "created"
    assert error_text(refused).startswith("Error executing tool remember: error [22023]:")
    assert data(recalled)[0]["key"] == "prefs.short_answers"
    assert [m["key"] for m in data(listed)] == ["prefs.short_answers"]
    assert data(corrected)["status"] == "corrected" and data(corrected)["superseded"] == data(listed)[0]["id"]
    assert data(forgotten)["forgotten"] is True
    assert "error [22023]: memory_id is not a uuid" in error_text(bad)
    assert isinstance(json.loads(resource.contents[0].text), list)


def test_a_user_who_is_not_a_member_is_refused(tenants: dict[str, Any], database_url: str) -> None:
    """The host chooses the user, but the database decides: a user removed from the tenant after
    the server started is refused on every call (42501), before any work."""
    stranger = str(uuid.uuid4())
    with Hipocampo(database_url) as root:  # a member when the server starts (naming a uuid adds nobody)
        root.add_member(root.tenant_id(tenants["a"]), stranger, "member")

    async def steps(client: Any) -> Any:
        with Hipocampo(database_url) as root:
            tid = root.tenant_id(tenants["a"])
            root.rpc("remove_member", {"tenant_id": tid, "user_id": stranger}, "none")
        return await client.call_tool("search_knowledge_base", {"query": "piscina"}), await client.call_tool(
            "list_memories", {}
        )

    search, memories = call(tenants["a"], stranger, steps)
    assert "error [42501]" in error_text(search) and "error [42501]" in error_text(memories)


# -- streamable HTTP in `hipocampo serve` (POST /mcp, bearer JWT) -------------------------------
SECRET = "test-secret-for-mcp-hs256-tokens-0123456789"


def _token(claims: dict[str, Any]) -> str:
    import time

    import jwt

    return jwt.encode({"exp": int(time.time()) + 600, **claims}, SECRET, algorithm="HS256")


@pytest.fixture(scope="module")
def http_server(database_url: str, embedder: Any) -> Iterator[str]:
    """``create_app`` served by uvicorn on a free loopback port, in a thread; yields /mcp's URL."""
    from hipocampo.http import create_app

    with serving(create_app(database_url, embedder, jwt_secret=SECRET)) as url:
        yield f"{url}/mcp"


def call_http(url: str, token: str | None, steps: Any) -> Any:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def main() -> Any:
        async with (
            create_mcp_http_client(headers=headers) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await steps(client)

    return anyio.run(main)


def test_over_http_each_request_acts_as_its_token(tenants: dict[str, Any], http_server: str, database_url: str) -> None:
    with Hipocampo(database_url) as root:
        tid_a = root.tenant_id(tenants["a"])
    member = _token(
        {
            "sub": tenants["user"],
            "role": "authenticated",
            "aud": "authenticated",
            "app_metadata": {"tenant_id": str(tid_a)},
        }
    )

    async def steps(client: Any) -> Any:
        tools = (await client.list_tools()).tools
        hits = await client.call_tool("search_knowledge_base", {"query": "a que horas fecha a piscina?"})
        other = await client.call_tool("search_knowledge_base", {"query": "garagem", "kb": ["regras-b"]})
        listed = await client.call_tool("list_memories", {})
        return tools, hits, other, listed

    tools, hits, other, listed = call_http(http_server, member, steps)
    assert {t.name for t in tools} == TOOLS
    assert "22 horas" in data(hits)[0]["excerpt"]
    assert "error [P0002]: unknown knowledge base" in error_text(other)
    assert isinstance(data(listed), list)

    # A signed-in user of no tenant: the database refuses every call (42501), before any work.
    stranger = _token({"sub": str(uuid.uuid4()), "role": "authenticated", "aud": "authenticated"})
    refused = call_http(http_server, stranger, lambda c: c.call_tool("search_knowledge_base", {"query": "piscina"}))
    assert "error [42501]" in error_text(refused)


def test_over_http_no_or_a_forged_token_is_401(http_server: str) -> None:
    import httpx
    import jwt

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    forged = jwt.encode({"role": "service_role", "exp": 9999999999}, "a-forged-secret-of-the-right-length-0123456")
    for auth in (None, f"Bearer {forged}", "Bearer not-a-jwt"):
        h = headers | ({"Authorization": auth} if auth else {})
        assert httpx.post(http_server, json=body, headers=h).status_code == 401


def test_the_server_refuses_to_start_for_a_user_who_is_not_a_member(tenants: dict[str, Any]) -> None:
    """Issue 44 §5: `hipocampo mcp --user <uuid>` made that uuid a tenant member."""
    stranger = str(uuid.uuid4())
    proc = subprocess.run(
        [HIPOCAMPO, "mcp", "--tenant", tenants["a"], "--user", stranger],
        capture_output=True, text=True, timeout=120, env=dict(os.environ), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 1 and f"user {stranger} is not a member of tenant {tenants['a']}" in proc.stderr


def test_an_agent_records_a_new_user_s_consent_before_remembering(tenants: dict[str, Any], database_url: str) -> None:
    """Issue 45 §5: an agent could not store memories for a new user (no consent tool); the
    memory_consent tool records the user's answer, and remember then works."""
    user = uuid.uuid4()
    with Hipocampo(database_url) as root:
        tid = root.tenant_id(tenants["a"])
        assert tid is not None
        root.add_member(tid, user, "member")

    async def steps(client: Any) -> Any:
        fact = {"key": "prefs.tea", "value": "verde", "description": "Prefere chá verde", "category": "preference"}
        before = await client.call_tool("remember", fact)
        state = await client.call_tool("memory_consent", {})
        granted = await client.call_tool("memory_consent", {"granted": True})
        after = await client.call_tool("remember", fact)
        withdrawn = await client.call_tool("memory_consent", {"granted": False})
        return before, state, granted, after, withdrawn

    before, state, granted, after, withdrawn = call(tenants["a"], str(user), steps)
    assert "42501" in error_text(before) and "consent" in error_text(before)
    assert data(state) == {"granted": False} and data(granted) == {"granted": True}
    assert data(after)["status"] == "created" and data(withdrawn) == {"granted": False}
