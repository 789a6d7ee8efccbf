"""``hipocampo.Memory`` and ``hipocampo memory …`` against the real database and the real
offline model (data committed; each test on its own tenant and user)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from hipocampo import Actor, Hipocampo, InvalidInputError, Memory, MemoryRejected, NotFoundError, PermissionDeniedError
from hipocampo.cli import app


@pytest.fixture
def mem(database_url: str, embedder: Any) -> Iterator[Memory]:
    """A member of a fresh tenant, acting as themselves, with consent given."""
    with Hipocampo(database_url) as root:
        user = uuid.uuid4()
        tid = root.create_tenant("T", f"m-{uuid.uuid4().hex[:10]}", uuid.uuid4())
        root.add_member(tid, user, "member")
        m = Memory(root.as_actor(Actor.user(user, tid)), embedder)
        m.consent()
        yield m


def test_remember_recall_correct_forget(mem: Memory) -> None:
    r = mem.remember("prefs.short_answers", True, "Prefere respostas curtas e diretas", "preference")
    assert r.status == "created" and r.memory_id
    mem.remember("user.city", "Recife", "Mora em Recife, Pernambuco", "identity_profile")
    hits = mem.recall("o usuário gosta de respostas curtas?", min_score=0.3).hits
    assert hits[0].key == "prefs.short_answers" and hits[0].tier == "long_term"
    corrected = mem.correct(r.memory_id, False, "Prefere respostas detalhadas")
    assert (corrected.status, corrected.superseded) == ("corrected", r.memory_id)
    history = mem.lookup("prefs.short_answers", include_history=True)
    assert [(m.value, m.status) for m in history] == [(False, "active"), (True, "deprecated")]
    assert mem.forget(corrected.memory_id) is True
    assert mem.forget(corrected.memory_id) is False
    assert [m.key for m in mem.list()] == ["user.city"]


def test_refusals_are_typed(mem: Memory) -> None:
    with pytest.raises(MemoryRejected) as info:
        mem.remember("prefs.x", 1, "valeu", "preference")
    assert (info.value.reason, info.value.sqlstate) == ("noise", "22023")
    with pytest.raises(MemoryRejected, match="personal data"):
        mem.remember("user.cpf", "x", "Meu CPF é 529.982.247-25", "identity_profile")
    with pytest.raises(InvalidInputError, match="invalid memory"):
        mem.remember("prefs.y", 1, "Gosta de jazz", "hobbies")
    with pytest.raises(NotFoundError, match="unknown memory"):
        mem.correct(uuid.uuid4(), 1, "x y z")


def test_a_write_without_consent_embeds_nothing(database_url: str, counting: Any) -> None:
    # The gate refuses before it reads the vector; the client asks hipocampo.memory_consent first,
    # so a refusal loads no model (issue 18 §2) and the attempt is still recorded.
    with Hipocampo(database_url) as root:
        user = uuid.uuid4()
        tid = root.create_tenant("T", f"m-{uuid.uuid4().hex[:10]}", uuid.uuid4())
        root.add_member(tid, user, "member")
        m = Memory(root.as_actor(Actor.user(user, tid)), counting)
        assert m.client.rpc("memory_consent") is False
        with pytest.raises(MemoryRejected) as info:
            m.remember("prefs.short_answers", True, "Prefere respostas curtas e diretas", "preference")
        assert (info.value.reason, counting.calls) == ("no_consent", 0)
        with root.transaction() as cur:
            cur.execute(
                "select reason from hipocampo_private.memory_events where tenant_id = %s and user_id = %s",
                (tid, user),
            )
            assert [r["reason"] for r in cur.fetchall()] == ["no_consent"]
        m.consent()
        assert m.client.rpc("memory_consent") is True
        assert m.remember("prefs.short_answers", True, "Prefere respostas curtas e diretas", "preference").status == (
            "created"
        )
        assert counting.calls == 1


def test_staging_and_promotion(mem: Memory) -> None:
    staged = mem.remember("projects.horta", "tomates", "Começou uma horta de tomates", "projects", intensity=4)
    assert staged.status == "staged" and staged.expires_at is not None
    assert [(m.key, m.tier) for m in mem.list()] == [("projects.horta", "staging")]
    assert mem.recall("horta", min_score=0.2).hits[0].tier == "staging"
    assert staged.memory_id is not None
    assert mem.promote(staged.memory_id, 5).status == "kept"
    promoted = mem.promote(staged.memory_id, 2, override=True)
    assert promoted.status == "created" and promoted.promoted_from == staged.memory_id
    assert [(m.key, m.tier, m.pinned) for m in mem.list()] == [("projects.horta", "long_term", True)]


def test_seed_profile_history_export_erase(mem: Memory) -> None:
    seeded = mem.seed_profile({"user.name": "Ana", "prefs.no_emojis": True, "tenant.segment": "condominios"})
    assert set(seeded.values()) == {"created"}
    # Seeded in SQL without vectors, embedded by the client afterwards: findable by meaning.
    assert mem.recall("Qual é o nome da usuária?", k=3, min_score=0.2).hits[0].key == "user.name"
    assert mem.embed_missing() == 0
    assert set(mem.seed_profile({"user.name": "Ana"}).values()) == {"unchanged"}
    with pytest.raises(InvalidInputError, match="unknown profile keys: conversa"):
        mem.seed_profile({"conversa": "oi tudo bem"})
    conv = uuid.uuid4()
    ids = mem.add_messages(
        conv,
        [
            {"role": "user", "content": "O elevador do bloco B está parado"},
            {"role": "assistant", "content": "Vou abrir um chamado para a manutenção", "modality": "voice"},
        ],
    )
    assert len(ids) == 2
    hits = mem.search_history("elevador quebrado", conversation_id=conv)
    assert hits[0].message_id == ids[0] and hits[0].lexical_score and hits[0].dense_score
    context = mem.context(conv)
    assert [m.id for m in context.messages] == ids and context.messages[1].modality == "voice"
    data = mem.export()  # typed (issue 60 §4)
    assert data.format == "hipocampo.user_export.v1" and data.tenant_id and data.user_id
    assert len(data.memories) == 3 and len(data.messages) == 2
    erased = mem.erase()
    assert (erased.memories, erased.messages, erased.memberships) == (3, 2, 1) and erased.user_ref
    # The erased user is no member any more: their token no longer opens the tenant.
    with pytest.raises(PermissionDeniedError, match="no tenant"):
        mem.list()


def test_history_tokens_are_read_after_the_previous_messages(mem: Memory, embedder: Any) -> None:
    # The local model stores each message's tokens, read after the
    # conversation's previous token_context_messages (2) messages, stored ones included.
    conv = uuid.uuid4()
    texts = ["Oi! O que você pintou ontem?", "Um pôr do sol na praia", "Que lindo!", "Obrigada"]
    first = mem.add_messages(conv, [{"role": "user", "content": t} for t in texts[:2]])
    rest = [mem.add_message(conv, "user", t) for t in texts[2:]]
    with mem.client.transaction() as cur:
        cur.execute(
            "select token_ids, token_bits::text[] as bits from hipocampo_private.messages "
            "where conversation_id = %s order by id",
            (conv,),
        )
        stored = [(r["token_ids"], r["bits"]) for r in cur.fetchall()]
    expected = embedder.embed_tokens(texts, [[], texts[:1], texts[:2], texts[1:3]])
    assert stored == [(t.ids, t.bits) for t in expected]
    assert len(first + rest) == 4 and all(len(b) == 384 for _, bits in stored for b in bits)
    hits = mem.search_history("o que ela pintou?", conversation_id=conv)
    assert hits[0].message_id in first and all(h.token_score is not None for h in hits)
    # Derived from the content like the embeddings, the tokens stay out of the user's export.
    exported = mem.export().messages[0]
    assert exported["content"] == texts[0] and not {"token_ids", "token_bits", "embedding"} & exported.keys()


def test_cli_memory_commands(database_url: str) -> None:
    runner = CliRunner()
    slug = f"cli-m-{uuid.uuid4().hex[:8]}"
    user = str(uuid.uuid4())
    assert runner.invoke(app, ["tenant", "create", "Mem", "--slug", slug]).exit_code == 0
    assert runner.invoke(app, ["member", "add", user, "--tenant", slug]).exit_code == 0
    base = ["--tenant", slug, "--user", user]
    res = runner.invoke(
        app, ["memory", "remember", "prefs.tone", '"formal"', "Prefere tom formal", "-c", "preference", *base]
    )
    assert res.exit_code == 1 and "refused (no_consent)" in res.output and "[42501]" in res.output
    assert runner.invoke(app, ["memory", "consent", *base]).exit_code == 0
    res = runner.invoke(
        app, ["memory", "remember", "prefs.tone", '"formal"', "Prefere tom formal", "-c", "preference", "--json", *base]
    )
    assert res.exit_code == 0, res.output
    mid = json.loads(res.stdout)["memory_id"]
    res = runner.invoke(app, ["memory", "recall", "tom de voz formal", "--min-score", "0.2", "--json", *base])
    assert res.exit_code == 0 and json.loads(res.output)["hits"][0]["memory_id"] == mid
    res = runner.invoke(app, ["memory", "correct", mid, '"informal"', "Prefere tom informal", *base])
    assert res.exit_code == 0 and res.stdout.startswith("corrected ")
    res = runner.invoke(app, ["memory", "list", "--json", *base])
    assert [m["value"] for m in json.loads(res.output)] == ["informal"]
    res = runner.invoke(app, ["memory", "seed-profile", '{"user.name": "Ana"}', *base])
    assert json.loads(res.output) == {"user.name": "created"}
    res = runner.invoke(app, ["memory", "export", *base])
    assert res.exit_code == 0 and json.loads(res.output)["format"] == "hipocampo.user_export.v1"
    res = runner.invoke(app, ["memory", "erase", "--yes", *base])
    assert res.exit_code == 0 and json.loads(res.output)["memories"] == 3


def test_a_malformed_id_is_named_not_a_driver_error(mem: Memory) -> None:
    """Issue 19 §1.5: a truncated id gave a raw 'invalid input syntax for type uuid'."""
    with pytest.raises(InvalidInputError, match="memory_id is not a uuid: '1f2e3d4c'"):
        mem.forget("1f2e3d4c")


def test_memory_list_prints_whole_ids(database_url: str) -> None:
    runner = CliRunner()
    slug = f"ids-{uuid.uuid4().hex[:8]}"
    assert runner.invoke(app, ["tenant", "create", "Ids", "--slug", slug]).exit_code == 0
    user = str(uuid.uuid4())
    assert runner.invoke(app, ["member", "add", user, "--tenant", slug]).exit_code == 0
    assert runner.invoke(app, ["memory", "consent", "--tenant", slug, "--user", user]).exit_code == 0
    res = runner.invoke(
        app,
        [
            "memory",
            "remember",
            "prefs.cafe",
            '"preto"',
            "Gosta de café preto",
            "-c",
            "preference",
            "--tenant",
            slug,
            "--user",
            user,
        ],
    )
    assert res.exit_code == 0, res.output
    listed = runner.invoke(app, ["memory", "list", "--tenant", slug, "--user", user], env={"COLUMNS": "80"})
    ids = re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", listed.output)
    assert len(ids) == 1, listed.output
