"""The retrieval hierarchy in one answer (issue 45 §3): asked within a session, a follow-up is
resolved against the previous turn, a question the session already answered is answered again
without a search, the user's style memories shape the wording and are never a source, every turn
is recorded, and the conversation gets a rolling summary no caller writes. Each behaviour is
switched off once through the config to show that the test reads it."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from hipocampo import Actor, Hipocampo, Orchestrator
from hipocampo.embeddings import count_tokens
from hipocampo.errors import NotFoundError
from hipocampo.ingest import DocumentInput, ingest_documents
from hipocampo.ingest.loaders import LoadedDocument

REGULAMENTO = """# Regulamento das áreas comuns

Art. 1º O horário da piscina é de terça-feira a sábado, das 8h às 22h.

Art. 2º Aos domingos e feriados, o horário da piscina é das 9h às 18h.

Art. 3º O horário da academia é de segunda-feira a sábado, das 6h às 23h.

Art. 4º Aos domingos e feriados, a academia fica fechada para limpeza.

Art. 5º O salão de festas deve ser reservado com 15 dias de antecedência.
"""


class World:
    def __init__(self, url: str, embedder: Any) -> None:
        self.root = Hipocampo(url)
        self.user = uuid.uuid4()
        self.tenant = self.root.create_tenant("Sessões", f"sessoes-{uuid.uuid4().hex[:8]}", uuid.uuid4())
        self.root.add_member(self.tenant, self.user, "member")
        self.service = self.root.as_actor(Actor.service(self.tenant))
        doc = DocumentInput(LoadedDocument("Regulamento", REGULAMENTO, "test://areas"), "regulation", 0.95)
        ingest_documents(self.service, "areas", [doc], embedder, count_tokens)
        self.kb = self.service.kb_id("areas")
        self.client = self.root.as_actor(Actor.user(self.user, self.tenant))
        self.orchestrator = Orchestrator(self.client, embedder)
        # Every question here is answered by one document: one supporting document suffices.
        self.service.set_tenant_config("rag", {"cross_check_min_documents": 1})

    def session(self) -> str:
        return str(self.client.rpc("open_session", {})["session_id"])

    def ask(self, question: str, session: str | None, **kw: Any) -> Any:
        return self.orchestrator.ask(question, kb_ids=[self.kb], use_cache=False, session_id=session, **kw)

    def article(self, answer: Any) -> list[str]:
        """The article numbers the answer cites, in order."""
        return [re.sub(r"\D", "", s.excerpt.split("º")[0])[-1:] for s in answer.sources]


@pytest.fixture(scope="module")
def world(database_url: str, embedder: Any) -> Iterator[World]:
    w = World(database_url, embedder)
    yield w
    w.root.close()


def test_a_follow_up_is_resolved_against_the_previous_turn(world: World) -> None:
    session = world.session()
    first = world.ask("Qual o horário da piscina?", session)
    assert not first.refused and first.resolved_question is None
    follow = world.ask("E aos domingos?", session)
    assert follow.question == "E aos domingos?"
    assert follow.resolved_question == "Qual o horário da piscina? E aos domingos?"
    assert not follow.refused, follow
    assert "9h às 18h" in follow.sources[0].excerpt  # the pool's Sundays, not the gym's
    assert "academia" not in follow.answer
    alone = world.ask("E aos domingos?", None)  # the same words outside the session: both Sundays
    assert "academia" in alone.answer


def test_with_follow_ups_off_the_question_stands_alone(world: World) -> None:
    world.service.set_tenant_config("sessions", {"follow_up_max_words": 0})
    try:
        session = world.session()
        world.ask("Qual o horário da piscina?", session)
        assert world.ask("E aos domingos?", session).resolved_question is None
    finally:
        world.service.set_tenant_config("sessions", {"follow_up_max_words": None})


def test_a_question_the_session_answered_is_answered_again_without_a_search(world: World) -> None:
    session = world.session()
    first = world.ask("Qual o horário da piscina?", session)
    again = world.ask("qual o horário da piscina", session)  # the same question, normalised
    assert again.answer_source == "SESSION" and "evidence" not in again.timings_ms
    assert (again.answer, [s.chunk_id for s in again.sources]) == (first.answer, [s.chunk_id for s in first.sources])
    other = world.session()  # another session searches
    assert world.ask("Qual o horário da piscina?", other).answer_source == "EXTRACTIVE"
    world.service.set_tenant_config("sessions", {"reuse_answers": False})
    try:
        assert world.ask("Qual o horário da piscina?", session).answer_source == "EXTRACTIVE"
    finally:
        world.service.set_tenant_config("sessions", {"reuse_answers": None})


def test_a_removed_source_is_searched_again(world: World) -> None:
    """An earlier answer is reused only while every passage it cited is still stored."""
    session = world.session()
    first = world.ask("Com quanto tempo de antecedência reservo o salão de festas?", session)
    assert not first.refused
    with world.root.transaction() as cur:  # as the owner: the chunk disappears (a re-ingest would)
        cur.execute(
            "update hipocampo_private.documents set status = 'archived' where id = %s", (first.sources[0].document_id,)
        )
    try:
        again = world.ask("Com quanto tempo de antecedência reservo o salão de festas?", session)
        assert again.answer_source != "SESSION"
    finally:
        with world.root.transaction() as cur:
            cur.execute(
                "update hipocampo_private.documents set status = 'active' where id = %s",
                (first.sources[0].document_id,),
            )


def test_a_style_memory_shapes_the_wording_never_the_facts(world: World, embedder: Any) -> None:
    from hipocampo.memory import Memory

    plain = world.ask("Qual o horário da piscina?", world.session())
    assert len(plain.sources) >= 2 and plain.answer.count("[") >= 2
    memory = Memory(world.client, embedder)
    memory.consent()
    memory.remember("style.answer_length", "short", "Prefere respostas curtas", "style")
    memory.remember("prefs.piscina", "5h", "Acha que a piscina abre às 5h", "preference")
    try:
        short = world.ask("Qual o horário da piscina?", world.session())
        assert short.answer.count("[") == 1 and short.sources[0].chunk_id == plain.sources[0].chunk_id
        assert "5h" not in short.answer  # the memory's "fact" is not an answer
        document_chunks = {s.chunk_id for s in plain.sources} | {s.chunk_id for s in short.sources}
        assert all(s.document == "Regulamento" for s in short.sources) and document_chunks  # never a memory
        assert world.ask("Qual o horário da piscina?", None).answer == plain.answer  # outside a session: as before
    finally:
        for row in memory.lookup():
            memory.forget(row.id)


def test_a_person_s_style_never_decides_the_shared_cached_answer(world: World, embedder: Any) -> None:
    """Issue 57 §7: one member's style.answer_length short answered, and the tenant's cache then
    gave every other member the one-quote answer."""
    from hipocampo.memory import Memory

    question = "Qual o horário da piscina?"
    other = uuid.uuid4()
    world.root.add_member(world.tenant, other, "member")
    plain = Orchestrator(world.root.as_actor(Actor.user(other, world.tenant)), embedder)
    memory = Memory(world.client, embedder)
    memory.consent()
    memory.remember("style.answer_length", "short", "Prefere respostas curtas", "style")
    try:
        short = world.orchestrator.ask(question, kb_ids=[world.kb], session_id=world.session())  # cache on
        assert short.answer.count("[") == 1 and short.answer_source != "CACHE"
        got = plain.ask(question, kb_ids=[world.kb])  # cache on: nothing of the short answer cached
        assert got.answer_source != "CACHE" and got.answer != short.answer and got.answer.count("[") >= 2
    finally:
        for row in memory.lookup():
            memory.forget(row.id)


def test_every_turn_is_recorded_and_the_summary_rolls(world: World) -> None:
    world.service.set_tenant_config("sessions", {"summary_every_messages": 4})
    try:
        session = world.session()
        world.ask("Qual o horário da piscina?", session)
        state = world.client.rpc("get_session", {"session_id": session})
        assert [m["role"] for m in state["messages"]] == ["user", "assistant"]
        assert state["messages"][0]["content"] == "Qual o horário da piscina?"
        conversation = state["conversation_id"]
        assert world.client.rpc("session_turn", {"session_id": session, "question": "oi"})["summary"] is None
        world.ask("E aos domingos?", session)  # the fourth message: a summary
        summary = world.client.rpc("session_turn", {"session_id": session, "question": "oi"})["summary"]
        assert summary.startswith("Usuário: Qual o horário da piscina?\nAssistente: ")
        assert "Usuário: E aos domingos?" in summary
        assert conversation
    finally:
        world.service.set_tenant_config("sessions", {"summary_every_messages": None})


def test_another_user_s_session_is_unknown(world: World, embedder: Any) -> None:
    session = world.session()
    stranger = uuid.uuid4()
    world.root.add_member(world.tenant, stranger, "member")
    other = Orchestrator(world.root.as_actor(Actor.user(stranger, world.tenant)), embedder)
    with pytest.raises(NotFoundError, match="unknown or expired session"):
        other.ask("Qual o horário da piscina?", kb_ids=[world.kb], session_id=session)


def test_with_a_chat_model_the_summary_is_the_model_s(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from .openai_endpoint import LocalOpenAI

    chat = LocalOpenAI()
    monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    world.service.set_tenant_config("rag", {"provider": "openai"})  # the operator's (operator_only)
    world.service.set_tenant_config("sessions", {"summary_every_messages": 2})
    try:
        chat.reply = "O horário da piscina é das 8h às 22h [1]."
        session = world.session()
        answer = world.ask("Qual o horário da piscina?", session)
        assert answer.answer_source == "LLM", answer
        summary = world.client.rpc("session_turn", {"session_id": session, "question": "oi"})["summary"]
        assert summary == chat.reply  # the model's reply to the summary request (the fake answers alike)
        (prompt,) = [r["messages"] for r in chat.requests if r["messages"][0]["content"].startswith("Resuma")]
        assert "Usuário: Qual o horário" in prompt[1]["content"]
    finally:
        world.service.set_tenant_config("rag", {"provider": None})
        world.service.set_tenant_config("sessions", {"summary_every_messages": None})
        chat.close()


def test_with_a_chat_model_the_turn_proposes_memories_to_the_gate(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 59 §6: after a session turn the chat model proposes what the user's message says of
    them; each candidate goes through the memory gate (the health one is refused), with the
    message it came from; a user without consent costs no model call."""
    from .openai_endpoint import LocalOpenAI

    chat = LocalOpenAI()
    monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    world.service.set_tenant_config("rag", {"provider": "openai"})
    user = uuid.uuid4()
    world.root.add_member(world.tenant, user, "member")
    client = world.root.as_actor(Actor.user(user, world.tenant))
    orchestrator = Orchestrator(client, world.orchestrator.embedder)
    candidates = {
        "memories": [
            {
                "key": "routine.swim",
                "value": "manhã",
                "description": "Nada de manhã, antes do trabalho",
                "category": "pattern",
                "confidence": 0.95,
            },
            {
                "key": "health.condition",
                "value": "asma",
                "description": "Tem asma e evita cloro forte",
                "category": "identity_profile",
                "confidence": 0.8,
            },
            {"key": "Not A Key", "value": 1, "description": "fora do formato", "category": "x", "confidence": 2},
        ]
    }
    question = "Qual o horário da piscina? Eu nado de manhã, antes do trabalho, e tenho asma."
    try:
        session = str(client.rpc("open_session", {})["session_id"])
        chat.replies = ["A piscina abre às 8h [1].", json.dumps(candidates)]
        orchestrator.ask(question, kb_ids=[world.kb], use_cache=False, session_id=session)
        assert len(chat.requests) == 1  # no consent: no candidates asked for
        client.rpc("set_memory_consent", {"granted": True}, "none")
        session = str(client.rpc("open_session", {})["session_id"])  # else the session's answer is reused
        chat.replies = ["A piscina abre às 8h [1].", json.dumps(candidates)]
        orchestrator.ask(question, kb_ids=[world.kb], use_cache=False, session_id=session)
        asked = chat.requests[-1]["messages"]
        assert asked[0]["content"].startswith("Você lê uma mensagem") and asked[1]["content"] == question
        seen = client.rpc("inspect_user_memory", {})
        (memory,) = seen["memories"]
        assert (memory["key"], memory["source"], memory["confidence"]) == ("routine.swim", "conversation", 0.9)
        assert memory["source_message"]["content"] == question
        # Embedded when written, as Memory.remember does: recall finds it by meaning at once.
        from hipocampo.memory import Memory

        recall = Memory(client, world.orchestrator.embedder).recall("quando eu costumo nadar?", min_score=0.0)
        assert [h.key for h in recall.hits][:1] == ["routine.swim"]
        refused = [e for e in seen["events"] if e["event"] == "memory.write_rejected"]
        assert [(e["reason"], e["detail"]["key"]) for e in refused] == [("health_data", "health.condition")]
    finally:
        world.service.set_tenant_config("rag", {"provider": None})
        chat.close()
