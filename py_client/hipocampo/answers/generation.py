"""Answer generation over selected evidence.

Two generators share one interface (:class:`Generator`):

- :class:`ExtractiveAnswerer` (offline default, ``rag.provider = "extractive"``): the RPC
  ``hipocampo.extractive_answer`` quotes the best two-sentence window of each supporting evidence
  chunk (chosen in SQL by ``hipocampo.evidence_support``), each followed by its citation marker
  ``[n]``. Deterministic, and the same text the Deno ``ask`` function gets.
- :class:`ChatAnswerer` (``rag.provider = "openai" | "azure"``): chat completions through the
  ``openai`` SDK, prompted with ``rag.context_prompt``, ``rag.answer_format_prompt`` and the
  numbered evidence; the model says whether the sources answer (``{"in_sources": false}``: a
  refusal, :class:`NotInSources`), since in that mode the SQL gate refuses only what has no
  evidence at all.

The post-validation of numbers is SQL's (``hipocampo.numbers_absent``), called by the orchestrator.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field, ValidationError

from ..errors import HipocampoError
from ..memory.vocabulary import CATEGORIES, Category

if TYPE_CHECKING:
    from ..client import Hipocampo

__all__ = [
    "AnswerStream",
    "ChatAnswerer",
    "ExtractiveAnswerer",
    "GenerationError",
    "Generator",
    "MemoryCandidate",
    "NotInSources",
    "answering_model",
    "generator_for",
    "parse_candidates",
    "parse_reply",
]

Evidence = Mapping[str, Any]


class GenerationError(HipocampoError):
    """The generator failed (API error after retries, empty completion)."""


class NotInSources(GenerationError):
    """The chat model said the numbered sources do not answer the question (``{"in_sources":
    false}``, rag.answer_format_prompt): a refusal, ``not_in_sources``."""


def parse_reply(text: str) -> str:
    """The answer of a chat model's reply in rag.answer_format_prompt's shape: ``{"in_sources":
    true, "answer": "…"}`` gives the answer, ``{"in_sources": false}`` raises
    :class:`NotInSources`; a reply that is not such an object (a model that ignored the format) is
    the answer as it is. A code fence around the object is allowed.

    Raises:
        NotInSources: the model said the sources do not answer.
    """
    import json
    import re

    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        obj = json.loads(body)
    except ValueError:
        return text
    if not isinstance(obj, dict) or "in_sources" not in obj:
        return text
    if obj["in_sources"] is False:
        raise NotInSources("the chat model says the sources do not answer the question")
    return str(obj.get("answer") or "").strip()


def answering_parts(config: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """Who writes the answers under this rag config, as a kind ('extractive' | 'openai' | 'azure')
    and its names (chat model, the base URL's secret and its value or "" for OpenAI's API; the
    Azure deployment and API version), for a surface to say in its language."""
    import os

    provider = str(config.get("provider") or "extractive")
    if provider == "openai":
        name = str(config.get("base_url_secret") or "OPENAI_BASE_URL")
        return "openai", {"model": str(config.get("chat_model")), "secret": name, "where": os.environ.get(name) or ""}
    if provider == "azure":
        return "azure", {
            "deployment": str(config.get("azure_deployment")),
            "version": str(config.get("azure_api_version")),
        }
    return "extractive", {}


def answering_model(config: Mapping[str, Any]) -> str:
    """Who writes the answers under this rag config, in words (issue 61 §4; ``config show`` says
    it, the hub in its language from ``answering_parts``): "extractive (offline: quotes the
    passages; no model)"; "openai chat model <rag.chat_model> at $<rag.base_url_secret> (<its
    value>, else OpenAI's API)" for any OpenAI-compatible server (llama.cpp's server, Ollama,
    vLLM); "azure deployment <d>"."""
    kind, names = answering_parts(config)
    if kind == "openai":
        where = names["where"] or "OpenAI's API"
        return f"openai chat model {names['model']} at ${names['secret']} ({where})"
    if kind == "azure":
        return f"azure deployment {names['deployment']} (api {names['version']})"
    return "extractive (offline: quotes the passages; no model)"


class Generator(Protocol):
    """Writes an answer from evidence. ``answer_source`` is ``EXTRACTIVE`` or ``LLM``."""

    answer_source: str

    def generate(self, question: str, evidence: Sequence[Evidence], config: Mapping[str, Any]) -> str:
        """The answer text with citation markers ``[n]`` (n = evidence item's ``n``).

        Raises:
            GenerationError: the generator could not produce an answer.
        """
        ...


class ExtractiveAnswerer:
    """Quotes evidence through ``hipocampo.extractive_answer``: the best window of each chunk whose
    support reaches ``rag.min_confidence`` (at least the first chunk), at most ``max_quotes``
    (default 2), in evidence order, as plain text with its ``[n]``.

    Args:
        client: the caller's :class:`Hipocampo` (the RPC is pure: any member may call it).
        max_quotes: quotes at most (>= 1).
    """

    answer_source = "EXTRACTIVE"

    def __init__(self, client: Hipocampo, max_quotes: int = 2) -> None:
        self.client = client
        self.max_quotes = max_quotes

    def generate(self, question: str, evidence: Sequence[Evidence], config: Mapping[str, Any]) -> str:
        """As :meth:`Generator.generate`; ``config["max_quotes"]`` (the user's style within a
        session: 1 for short answers) overrides ``max_quotes``."""
        quotes = int(config.get("max_quotes") or self.max_quotes)
        text = self.client.rpc(
            "extractive_answer",
            {"evidence": list(evidence), "min_support": float(config["min_confidence"]), "max_quotes": quotes},
        )
        if not text:
            raise GenerationError("no evidence to quote")
        return str(text)


class ChatAnswerer:
    """OpenAI / Azure OpenAI chat completions (``temperature`` 0).

    The API key, endpoint and base URL come from the environment variables NAMED in the rag config
    (``api_key_secret``, ``endpoint_secret``, ``base_url_secret``): the database stores names only.

    Args:
        config: the effective rag config (``hipocampo.rag_config``, complete or 55000): provider,
            chat_model or azure_deployment, azure_api_version, the *_secret names, context_prompt.
        client: an ``openai.OpenAI`` / ``openai.AzureOpenAI`` to use instead (tests).
        max_retries: SDK retries on 429/5xx/connection errors (default 3); timeout in seconds.
    """

    answer_source = "LLM"

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        client: Any | None = None,
        max_retries: int = 3,
        timeout: float = 30.0,
    ) -> None:
        try:
            import openai  # imported on use: ~0.5 s that an extractive answer should not pay
        except ImportError:
            raise GenerationError("an LLM generator needs the OpenAI SDK: pip install 'hipocampo[openai]'") from None

        self.provider = str(config["provider"])
        key = os.environ.get(str(config["api_key_secret"]), "")
        if client is not None:
            self._client = client
        elif self.provider == "azure":
            self._client = openai.AzureOpenAI(
                api_key=key or "missing-key",
                azure_endpoint=os.environ.get(str(config["endpoint_secret"]), ""),
                api_version=str(config["azure_api_version"]),
                max_retries=max_retries,
                timeout=timeout,
            )
        else:
            self._client = openai.OpenAI(
                api_key=key or "missing-key",
                base_url=os.environ.get(str(config["base_url_secret"])) or None,
                max_retries=max_retries,
                timeout=timeout,
            )
        self.model = str(config["azure_deployment"] if self.provider == "azure" else config["chat_model"])

    @staticmethod
    def messages(question: str, evidence: Sequence[Evidence], config: Mapping[str, Any]) -> list[dict[str, str]]:
        """The chat's messages (``[{"role", "content"}]``): the system prompt (rag.context_prompt,
        rag.answer_format_prompt and the numbered evidence), the session's part (style notes, summary,
        recent turns), then the question."""
        context = "\n\n".join(f"[{e['n']}] {e.get('title', '')}\n{e.get('content', '')}" for e in evidence)
        prompt = f"{config['context_prompt']}\n{config['answer_format_prompt']}"
        messages = [{"role": "system", "content": f"{prompt}\n\n{context}"}, *session_messages(config)]
        messages.append({"role": "user", "content": question})
        return messages

    def stream(self, question: str, evidence: Sequence[Evidence], config: Mapping[str, Any]) -> AnswerStream:
        """The answer as the model writes it (issue 59 §4; the chat completion with ``stream``
        true): iterate the returned :class:`AnswerStream` for the answer's text as it grows, then
        read its ``answer``.

        Raises:
            GenerationError: the request failed (when iterating: the stream broke off).
        """
        import openai

        try:
            chunks = self._client.chat.completions.create(
                model=self.model, messages=self.messages(question, evidence, config), temperature=0, stream=True
            )
        except openai.APIStatusError as exc:
            raise GenerationError(f"chat completion failed with HTTP {exc.status_code}: {exc}") from exc
        except openai.APIConnectionError as exc:
            raise GenerationError(f"chat endpoint unreachable: {exc}") from exc

        def pieces() -> Iterator[str]:
            try:
                for chunk in chunks:
                    if chunk.choices and chunk.choices[0].delta.content:
                        yield chunk.choices[0].delta.content
            except (openai.APIError, openai.APIConnectionError) as exc:
                raise GenerationError(f"the chat completion's stream broke off: {exc}") from exc

        return AnswerStream(pieces())

    def generate(self, question: str, evidence: Sequence[Evidence], config: Mapping[str, Any]) -> str:
        messages = self.messages(question, evidence, config)
        import openai

        try:
            resp = self._client.chat.completions.create(model=self.model, messages=messages, temperature=0)
        except openai.APIStatusError as exc:
            raise GenerationError(f"chat completion failed with HTTP {exc.status_code}: {exc}") from exc
        except openai.APIConnectionError as exc:
            raise GenerationError(f"chat endpoint unreachable: {exc}") from exc
        text = (resp.choices[0].message.content or "").strip() if resp.choices else ""
        if not text:
            raise GenerationError("the chat completion was empty")
        answer = parse_reply(text)
        if not answer:
            raise GenerationError("the chat completion held no answer")
        return answer

    def memory_candidates(self, message: str) -> list[MemoryCandidate]:
        """What a user's message says of them that is worth remembering, by the chat model (issue 59
        §6): at most :data:`MAX_CANDIDATES` candidates in :class:`MemoryCandidate`'s shape; a reply
        that is not that JSON, or a candidate out of shape, gives nothing (dropped, not guessed).
        The memory gate judges every candidate afterwards (consent, forbidden kinds, personal data,
        duplicates, the user's own statements win); nothing here decides what is stored.

        Raises:
            GenerationError: the endpoint failed.
        """
        import openai

        messages = [
            {"role": "system", "content": CANDIDATES_PROMPT},
            {"role": "user", "content": message},
        ]
        try:
            resp = self._client.chat.completions.create(model=self.model, messages=messages, temperature=0)
        except (openai.APIStatusError, openai.APIConnectionError) as exc:
            raise GenerationError(f"memory candidates' completion failed: {exc}") from exc
        text = (resp.choices[0].message.content or "").strip() if resp.choices else ""
        return parse_candidates(text)

    def summarize(self, transcript: str, max_chars: int) -> str:
        """A conversation's rolling summary by the chat model (issue 45 §3): ``transcript`` is the
        conversation's lines; the reply is cut to ``max_chars`` characters
        (sessions.summary_max_chars).

        Raises:
            GenerationError: the endpoint failed or replied empty.
        """
        import openai

        messages = [
            {
                "role": "system",
                "content": "Resuma a conversa abaixo em português, em poucas frases: o que o usuário perguntou"
                " e o que foi respondido. Não acrescente fatos.",
            },
            {"role": "user", "content": transcript},
        ]
        try:
            resp = self._client.chat.completions.create(model=self.model, messages=messages, temperature=0)
        except (openai.APIStatusError, openai.APIConnectionError) as exc:
            raise GenerationError(f"summary completion failed: {exc}") from exc
        text = (resp.choices[0].message.content or "").strip() if resp.choices else ""
        if not text:
            raise GenerationError("the summary completion was empty")
        return text[:max_chars]


MAX_CANDIDATES = 5
CANDIDATES_PROMPT = (
    "Você lê uma mensagem que um usuário escreveu a um assistente. Liste o que ela afirma sobre o "
    "próprio usuário e vale lembrar em conversas futuras (nome, unidade ou endereço, preferências, "
    "restrições, projetos), nada sobre outras pessoas e nada que a mensagem não diga. Responda só "
    'com JSON: {"memories": [{"key": "categoria.nome_curto", "value": "…", "description": "uma frase '
    'curta", "category": "' + " | ".join(CATEGORIES) + '", "confidence": 0.0 a 1.0}]}; sem nada a '
    'lembrar, {"memories": []}.'
)


class MemoryCandidate(BaseModel):
    """A memory a chat model proposes from a user's message (issue 59 §6): ``key`` ``a.b``
    snake_case (at most 200 characters), any JSON ``value``, a ``description`` of 3..500
    characters, one of the ten categories, ``confidence`` 0..1."""

    key: str = Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$", max_length=200)
    value: Any
    description: str = Field(min_length=3, max_length=500)
    category: Category
    confidence: float = Field(ge=0, le=1)


def parse_candidates(text: str) -> list[MemoryCandidate]:
    """The candidates of a chat model's reply (``{"memories": [...]}``, a code fence allowed): those
    in :class:`MemoryCandidate`'s shape, at most :data:`MAX_CANDIDATES`; anything else gives none."""
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        obj = json.loads(body)
    except ValueError:
        return []
    items = obj.get("memories") if isinstance(obj, dict) else None
    out: list[MemoryCandidate] = []
    for item in items if isinstance(items, list) else []:
        try:
            out.append(MemoryCandidate.model_validate(item))
        except ValidationError:
            continue
    return out[:MAX_CANDIDATES]


_OBJECT_START = re.compile(r'^\{\s*"in_sources"\s*:\s*true\s*,\s*"answer"\s*:\s*"')
_FENCE = re.compile(r"^```(?:json)?\s*")


class AnswerStream:
    """A chat model's reply as it arrives (issue 59 §4): iterating gives the answer's text in
    pieces, as much of it as can be shown so far: inside rag.answer_format_prompt's object
    (``{"in_sources": true, "answer": "…"}``) the answer string's characters as they come (its
    escapes decoded), a reply that is not such an object as it is, nothing for ``{"in_sources":
    false}``. Once iterated, ``answer`` is the whole reply read by :func:`parse_reply`, which the
    pieces add up to except when a model breaks the format midway (then ``answer`` is what counts).

    Raises (when the iteration ends):
        NotInSources: the model said the sources do not answer.
        GenerationError: the reply was empty or held no answer.
    """

    def __init__(self, chunks: Iterable[str]) -> None:
        self._chunks = chunks
        self.raw = ""
        self.answer = ""
        self._shown = ""

    def __iter__(self) -> Iterator[str]:
        for chunk in self._chunks:
            self.raw += chunk
            visible = self._visible()
            if len(visible) > len(self._shown) and visible.startswith(self._shown):
                piece, self._shown = visible[len(self._shown) :], visible
                yield piece
        if not self.raw.strip():
            raise GenerationError("the chat completion was empty")
        self.answer = parse_reply(self.raw.strip())
        if not self.answer:
            raise GenerationError("the chat completion held no answer")

    def _visible(self) -> str:
        """How much of the answer the reply so far shows."""
        body = _FENCE.sub("", self.raw.lstrip())
        if not body:
            return ""
        if not body.startswith("{"):
            return body if not self.raw.lstrip().startswith("`") or body != self.raw.lstrip() else ""
        found = _OBJECT_START.match(body)
        if found is None:
            return ""
        rest = body[found.end() :]
        end, i = len(rest), 0
        while i < len(rest):  # the string ends at its first unescaped quote
            if rest[i] == "\\":
                i += 2
                continue
            if rest[i] == '"':
                end = i
                break
            i += 1
        content = rest[:end]
        content = re.sub(r"\\(u[0-9a-fA-F]{0,3})?$", "", content)  # an escape cut midway waits
        try:
            return str(json.loads(f'"{content}"'))
        except ValueError:
            return self._shown


def session_messages(config: Mapping[str, Any]) -> list[dict[str, str]]:
    """What a session adds to a chat model's prompt (issue 45 §3, ``hipocampo.session_turn``): the
    user's style notes (their style memories: for the wording, never a fact nor a source), the
    conversation's summary and its recent turns, before the question."""
    out: list[dict[str, str]] = []
    notes = [str(n) for n in config.get("style_notes") or []]
    if notes:
        out.append(
            {
                "role": "system",
                "content": "Preferências de forma do usuário (use-as só para a redação; nunca como fato nem como"
                " fonte): " + "; ".join(notes),
            }
        )
    if config.get("summary"):
        out.append({"role": "system", "content": f"Resumo da conversa até aqui: {config['summary']}"})
    out.extend(
        {"role": str(t["role"]), "content": str(t["content"])}
        for t in config.get("turns") or []
        if t.get("role") in ("user", "assistant")
    )
    return out


def generator_for(config: Mapping[str, Any], client: Hipocampo) -> Generator:
    """The generator the rag config names (``rag.provider``): ``extractive`` (through ``client``),
    ``openai`` or ``azure``."""
    provider = str(config["provider"])
    if provider == "extractive":
        return ExtractiveAnswerer(client)
    if provider in ("openai", "azure"):
        return ChatAnswerer(config)
    raise ValueError(f"unknown rag.provider {provider!r} (extractive | openai | azure)")
