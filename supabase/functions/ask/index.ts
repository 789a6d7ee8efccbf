/**
 * POST /functions/v1/ask -> an answer that cites its sources, or a refusal with its reason: the
 * pipeline of the Python Orchestrator (`hipocampo ask`, POST /ask) over HTTP, calling the same RPCs
 * in the same order, so the same question gets the same answer from either surface (issue 20 §3):
 * guardrails (hipocampo.question_refusal) -> rate limit (take_rate_limit) -> answer cache
 * (cache_get) -> the question's embedding (sent, or computed through the active model's OpenAI /
 * Azure endpoint) -> evidence, conflicts and the confidence gates (answer_evidence) -> generation
 * (rag.provider extractive: hipocampo.extractive_answer; openai / azure: a chat completion through
 * the `openai` SDK, temperature 0, prompted with rag.context_prompt and the numbered evidence) ->
 * post-validation of numbers (numbers_absent) -> cited sources (answer_sources) -> cache_put (as
 * service_role, for the tenant rag_config resolved: no user writes the tenant's cache) ->
 * one audit row (record_answer; a failed audit is logged and the answer stands). Refusal texts
 * come from refusal_text. Every threshold is the effective rag config's (hipocampo.rag_config).
 *
 * Body: {"question": text (rag.question_min_chars..question_max_chars), "kb_ids"?: uuid[]
 * (default: the agent binding's), "agent"?: text, "query_embedding"?: number[] (required when the
 * active model runs offline), "use_cache"?: boolean (default true), "rate_limit"?: boolean
 * (service_role only; default true), "session_id"?: uuid (or the X-Chat-Session-ID header: the
 * retrieval hierarchy of issue 45 §3 - session_turn resolves a follow-up against the previous turn
 * and reuses the session's earlier answer, answer_source SESSION; session_record_turn records the
 * turn), "tenant_id"?: uuid (service_role only), "stream"?: boolean (or Accept: text/event-stream:
 * Server-Sent Events, issue 59 §4: with a chat model that answers, a "decision" event (trace_id,
 * decision, answer_source, confidence, the numbered evidence), "delta" events ({"text"}: the
 * answer as the model writes it), then the post-validated reply as "answer", or "refusal" when it
 * fails validation (the client shows that instead); any other reply is one such event)}.
 * Returns: {"question", "answer", "refused", "reason", "confidence", "sources": [{"n", "document",
 * "document_id", "source_uri", "chunk_id", "excerpt", "score", "support"}], "conflicts",
 * "answer_source": CACHE | SESSION | LLM | EXTRACTIVE | PASSAGES (no exact answer: cited passages on the
 * question's topic, refused false) | REFUSAL, "resolved_question", "trace_id", "retry_after_ms", "timings_ms", and for a
 * refusal after retrieval found passages "closest": {"document", "document_id", "source_uri", "chunk_id",
 * "excerpt", "article", "section", "score", "support"}}
 * (a refusal is a 200 with refused true). Errors: 401; 403 (42501); 404 (P0002) unknown knowledge
 * base or agent; 422 no knowledge base, bad body, or no query_embedding with the offline model;
 * 429 (per address); 503.
 * Example: curl -X POST "$SUPABASE_URL/functions/v1/ask" -H "Authorization: Bearer $JWT"
 *   -d '{"question": "Qual a carga horária mínima do estágio?", "kb_ids": ["…"]}'
 */
import { asActor, type Tx } from "../_shared/db.ts";
import { embedQuery } from "../_shared/embed.ts";
import { HttpError } from "../_shared/http.ts";
import { openaiClient } from "../_shared/openai.ts";
import { callRpc, type Rpc } from "../_shared/rpc.ts";
import { type RouteContext, serve } from "../_shared/serve.ts";

type Json = Record<string, unknown>;

export const ragConfig: Rpc = {
  name: "rag_config",
  params: { kb_id: "uuid", agent: "text", tenant_id: "uuid" },
  returns: "value",
};
export const questionRefusal: Rpc = {
  name: "question_refusal",
  params: {
    question: "text",
    min_chars: "integer",
    max_chars: "integer",
  },
  returns: "value",
};
export const takeRateLimit: Rpc = {
  name: "take_rate_limit",
  params: { tenant_id: "uuid" },
  returns: "value",
};
export const cacheGet: Rpc = {
  name: "cache_get",
  params: { question: "text", kb_ids: "uuid[]", agent: "text", tenant_id: "uuid" },
  returns: "value",
};
export const cachePut: Rpc = {
  name: "cache_put",
  params: {
    question: "text",
    kb_ids: "uuid[]",
    answer: "jsonb",
    agent: "text",
    tenant_id: "uuid",
  },
  returns: "value",
};
export const answerEvidence: Rpc = {
  name: "answer_evidence",
  params: {
    query_text: "text",
    query_embedding: "vector",
    kb_ids: "uuid[]",
    agent: "text",
    tenant_id: "uuid",
  },
  returns: "value",
};
export const extractiveAnswer: Rpc = {
  name: "extractive_answer",
  params: { evidence: "jsonb", min_support: "double precision", max_quotes: "integer" },
  returns: "value",
};
export const sessionTurn: Rpc = {
  name: "session_turn",
  params: { session_id: "uuid", question: "text", query_embedding: "vector" },
  returns: "value",
};
export const sessionRecordTurn: Rpc = {
  name: "session_record_turn",
  params: { session_id: "uuid", question: "text", resolved_question: "text", answer: "jsonb" },
  returns: "value",
};
export const memoryConsent: Rpc = { name: "memory_consent", params: {}, returns: "value" };
export const remember: Rpc = {
  name: "remember",
  params: {
    key: "text",
    value: "jsonb",
    description: "text",
    category: "text",
    confidence: "double precision",
    source: "text",
    source_ref: "text",
    conversation_id: "uuid",
    tags: "text[]",
  },
  returns: "value",
};
export const numbersAbsent: Rpc = {
  name: "numbers_absent",
  params: { answer: "text", evidence: "jsonb" },
  returns: "value",
};
export const answerSources: Rpc = {
  name: "answer_sources",
  params: { answer: "text", evidence: "jsonb" },
  returns: "value",
};
export const refusalText: Rpc = {
  name: "refusal_text",
  params: { reason: "text", conflicts: "jsonb", refusal_message: "text" },
  returns: "value",
};
export const recordAnswer: Rpc = {
  name: "record_answer",
  params: {
    trace_id: "uuid",
    question: "text",
    answer_source: "text",
    reason: "text",
    confidence: "real",
    candidates: "integer",
    filtered: "integer",
    evidence_chunk_ids: "bigint[]",
    timings_ms: "jsonb",
    latency_ms: "real",
    kb_ids: "uuid[]",
    agent: "text",
    tenant_id: "uuid",
  },
  returns: "value",
};

const FIELDS = [
  "question",
  "kb_ids",
  "agent",
  "query_embedding",
  "use_cache",
  "rate_limit",
  "session_id",
  "tenant_id",
  "stream",
];

/**
 * What a session adds to a chat model's prompt (as Python's generation.session_messages): the
 * user's style notes (wording only, never a fact or a source), the conversation's summary and its
 * recent turns, before the question.
 */
export function sessionMessages(context: Json): { role: "system" | "user" | "assistant"; content: string }[] {
  const out: { role: "system" | "user" | "assistant"; content: string }[] = [];
  const notes = Array.isArray(context.style_notes) ? context.style_notes.map(String) : [];
  if (notes.length) {
    out.push({
      role: "system",
      content:
        "Preferências de forma do usuário (use-as só para a redação; nunca como fato nem como fonte): " +
        notes.join("; "),
    });
  }
  if (context.summary) {
    out.push({ role: "system", content: `Resumo da conversa até aqui: ${context.summary}` });
  }
  for (const t of Array.isArray(context.turns) ? context.turns as Json[] : []) {
    if (t.role === "user" || t.role === "assistant") out.push({ role: t.role, content: String(t.content) });
  }
  return out;
}

/** What a chat model replies when the numbered sources do not answer (rag.answer_format_prompt). */
export const NOT_IN_SOURCES = Symbol("not_in_sources");

/**
 * A reply in rag.answer_format_prompt's shape, as Python's generation.parse_reply reads it:
 * {"in_sources": true, "answer"} gives the answer, {"in_sources": false} NOT_IN_SOURCES, anything
 * else (a model that ignored the format) is the answer as it is; a code fence around it is allowed.
 */
export function parseReply(text: string): string | typeof NOT_IN_SOURCES {
  const body = text.trim().replace(/^```(?:json)?\s*|\s*```$/g, "");
  let obj: unknown;
  try {
    obj = JSON.parse(body);
  } catch {
    return text;
  }
  if (typeof obj !== "object" || obj === null || Array.isArray(obj) || !("in_sources" in obj)) return text;
  const reply = obj as Json;
  if (reply.in_sources === false) return NOT_IN_SOURCES;
  return String(reply.answer ?? "").trim();
}

/** The chat completion's request: the model, the prompts with the numbered evidence, the session, the question. */
function chatRequest(question: string, evidence: Json[], cfg: Json, context: Json) {
  const azure = cfg.provider === "azure";
  const sources = evidence.map((e) => `[${e.n}] ${e.title ?? ""}\n${e.content ?? ""}`).join("\n\n");
  return {
    client: openaiClient(cfg, azure ? { apiVersion: String(cfg.azure_api_version) } : null),
    model: String(azure ? cfg.azure_deployment : cfg.chat_model),
    messages: [
      {
        role: "system" as const,
        content: `${cfg.context_prompt}\n${cfg.answer_format_prompt}\n\n${sources}`,
      },
      ...sessionMessages(context),
      { role: "user" as const, content: question },
    ],
  };
}

/**
 * How much of the answer a chat model's reply so far shows, as Python's generation.AnswerStream
 * reads it: inside rag.answer_format_prompt's object the answer string's characters (escapes
 * decoded; one cut midway waits), a reply that is not such an object as it is, nothing for
 * {"in_sources": false}. `shown`: what was shown already (kept while the text cannot be read).
 */
export function visibleAnswer(raw: string, shown = ""): string {
  const trimmed = raw.trimStart();
  const body = trimmed.replace(/^```(?:json)?\s*/, "");
  if (!body) return "";
  if (!body.startsWith("{")) return trimmed.startsWith("`") && body === trimmed ? "" : body;
  const start = /^\{\s*"in_sources"\s*:\s*true\s*,\s*"answer"\s*:\s*"/.exec(body);
  if (!start) return "";
  const rest = body.slice(start[0].length);
  let end = rest.length;
  for (let i = 0; i < rest.length; i++) { // the string ends at its first unescaped quote
    if (rest[i] === "\\") {
      i++;
      continue;
    }
    if (rest[i] === '"') {
      end = i;
      break;
    }
  }
  const content = rest.slice(0, end).replace(/\\(u[0-9a-fA-F]{0,3})?$/, "");
  try {
    return String(JSON.parse(`"${content}"`));
  } catch {
    return shown;
  }
}

/**
 * The chat completion streamed (issue 59 §4): `opening` (the decision) is sent first, then the
 * answer's text as the model writes it (`delta` events); returns the whole reply as `chat` does.
 */
async function chatStream(
  question: string,
  evidence: Json[],
  cfg: Json,
  context: Json,
  emit: (event: string, data: unknown) => void,
  opening: Json,
): Promise<string | typeof NOT_IN_SOURCES | null> {
  const { client, model, messages } = chatRequest(question, evidence, cfg, context);
  emit("decision", opening);
  let raw = "";
  let shown = "";
  try {
    const stream = await client.chat.completions.create({ model, messages, temperature: 0, stream: true });
    for await (const chunk of stream) {
      const piece = chunk.choices?.[0]?.delta?.content ?? "";
      if (!piece) continue;
      raw += piece;
      const visible = visibleAnswer(raw, shown);
      if (visible.length > shown.length && visible.startsWith(shown)) {
        emit("delta", { text: visible.slice(shown.length) });
        shown = visible;
      }
    }
  } catch (err) {
    console.error(JSON.stringify({ level: "warning", error: `chat completion failed: ${err}` }));
    return null;
  }
  const text = raw.trim();
  if (!text) return null;
  const reply = parseReply(text);
  return reply === NOT_IN_SOURCES ? reply : reply || null;
}

/** The chat completion of rag.provider openai / azure; null when it failed or came back empty. */
async function chat(
  question: string,
  evidence: Json[],
  cfg: Json,
  context: Json = {},
): Promise<string | typeof NOT_IN_SOURCES | null> {
  const { client, model, messages } = chatRequest(question, evidence, cfg, context);
  try {
    const resp = await client.chat.completions.create({ model, messages, temperature: 0 });
    const text = resp.choices?.[0]?.message?.content?.trim();
    if (!text) return null;
    const reply = parseReply(text);
    return reply === NOT_IN_SOURCES ? reply : reply || null;
  } catch (err) {
    console.error(JSON.stringify({ level: "warning", error: `chat completion failed: ${err}` }));
    return null;
  }
}

/** What the chat model is asked of a user's message (Python's generation.CANDIDATES_PROMPT, the same text). */
export const CANDIDATES_PROMPT =
  'Você lê uma mensagem que um usuário escreveu a um assistente. Liste o que ela afirma sobre o próprio usuário e vale lembrar em conversas futuras (nome, unidade ou endereço, preferências, restrições, projetos), nada sobre outras pessoas e nada que a mensagem não diga. Responda só com JSON: {"memories": [{"key": "categoria.nome_curto", "value": "…", "description": "uma frase curta", "category": "identity_profile | tenant_business | operating_model | goals_kpis | tools_integrations | people_contacts | projects | preference | pattern | style", "confidence": 0.0 a 1.0}]}; sem nada a lembrar, {"memories": []}.';
const CATEGORIES = [
  "identity_profile",
  "tenant_business",
  "operating_model",
  "goals_kpis",
  "tools_integrations",
  "people_contacts",
  "projects",
  "preference",
  "pattern",
  "style",
];

/**
 * The memory candidates of a chat model's reply (as Python's generation.parse_candidates):
 * {"memories": [...]} (a code fence allowed), each with a snake_case "a.b" key of at most 200
 * characters, a value, a description of 3..500 characters, one of the ten categories and a
 * confidence 0..1; the others are dropped; at most 5.
 */
export function parseCandidates(text: string): Json[] {
  let obj: unknown;
  try {
    obj = JSON.parse(text.trim().replace(/^```(?:json)?\s*|\s*```$/g, ""));
  } catch {
    return [];
  }
  const items = typeof obj === "object" && obj !== null ? (obj as Json).memories : null;
  return (Array.isArray(items) ? items as Json[] : []).filter((c) =>
    typeof c === "object" && c !== null && typeof c.key === "string" && c.key.length <= 200 &&
    /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/.test(c.key) && "value" in c && typeof c.description === "string" &&
    c.description.length >= 3 && c.description.length <= 500 && CATEGORIES.includes(String(c.category)) &&
    typeof c.confidence === "number" && c.confidence >= 0 && c.confidence <= 1
  ).slice(0, 5);
}

/**
 * With a chat model, the memories it proposes from the user's message after a session turn (issue
 * 59 §6, as Python's orchestrator._chat_memories): only for a signed-in user who consented (no
 * model call otherwise), each through the memory gate (remember, source conversation, the message
 * as source_ref, confidence at most 0.9) in a savepoint; a failure is logged, the answer stands.
 */
async function proposeMemories(
  tx: Tx,
  cfg: Json,
  question: string,
  messageId: unknown,
  conversationId: unknown,
): Promise<void> {
  try {
    if (!await callRpc(tx, memoryConsent, {})) return;
    const { client, model } = chatRequest(question, [], cfg, {});
    const resp = await client.chat.completions.create({
      model,
      messages: [{ role: "system", content: CANDIDATES_PROMPT }, { role: "user", content: question }],
      temperature: 0,
    });
    for (const c of parseCandidates(resp.choices?.[0]?.message?.content ?? "")) {
      await tx.savepoint((sp) =>
        callRpc(sp as unknown as Tx, remember, {
          key: c.key,
          value: c.value,
          description: c.description,
          category: c.category,
          confidence: Math.min(Number(c.confidence), 0.9),
          source: "conversation",
          source_ref: `message:${messageId}`,
          conversation_id: conversationId ?? null,
          tags: [c.category, "from_conversation"],
        })
      );
    }
  } catch (err) {
    console.error(JSON.stringify({ level: "warning", error: `memory candidates not proposed: ${err}` }));
  }
}

/** One question, answered or refused; the audit row written in a savepoint. */
export async function ask({ actor, body, tx, headers, emit }: RouteContext): Promise<Json> {
  const started = performance.now();
  let mark = started;
  const timings: Record<string, number> = {};
  const lap = (step: string) => {
    const now = performance.now();
    timings[step] = Math.round((now - mark) * 100) / 100;
    mark = now;
  };
  const unknown = Object.keys(body).filter((k) => !FIELDS.includes(k));
  if (unknown.length) throw new HttpError(422, `unknown parameter(s) ${unknown.join(", ")}`);
  const question = body.question;
  if (typeof question !== "string") throw new HttpError(422, "question is required (text)");
  if (body.rate_limit === false && actor.role !== "service_role") {
    throw new HttpError(403, "rate_limit false is for service_role");
  }
  const agent = (body.agent ?? null) as string | null;
  const tenant = (body.tenant_id ?? null) as string | null;
  const named = Array.isArray(body.kb_ids) ? body.kb_ids.map(String) : null;
  const cfg = await callRpc(tx, ragConfig, {
    kb_id: named?.length === 1 ? named[0] : null,
    agent,
    tenant_id: tenant,
  }) as Json;
  const kbs = named ?? (Array.isArray(cfg.kb_ids) ? cfg.kb_ids.map(String) : []);
  if (!kbs.length) {
    throw new HttpError(422, "no knowledge base: pass kb_ids or an agent bound to knowledge bases");
  }
  const trace = crypto.randomUUID();
  const session = (body.session_id ?? headers?.get("x-chat-session-id") ?? null) as string | null;
  let searched = question; // within a session, the resolved question (session_turn)
  let context: Json = {}; // the session's style and turns, for the generator
  let inSession = false;
  let conversation: unknown = null; // the session's conversation (session_turn)
  lap("config");

  const refuse = async (reason: string, extra: Json = {}): Promise<Json> => ({
    answer: await callRpc(tx, refusalText, {
      reason,
      conflicts: extra.conflicts ?? [],
      refusal_message: cfg.refusal_message,
    }),
    refused: true,
    reason,
    answer_source: "REFUSAL",
    ...extra,
  });
  const finish = async (ans: Json, candidates = 0, filtered = 0): Promise<Json> => {
    const total = performance.now() - started;
    timings.total = Math.round(total * 100) / 100;
    const result: Json = {
      question,
      confidence: 0,
      sources: [],
      conflicts: [],
      retry_after_ms: null,
      ...ans,
      resolved_question: searched !== question ? searched : null,
      trace_id: trace,
      timings_ms: timings,
    };
    if (inSession) {
      const recorded = await recordTurn(tx, String(session), question, searched, result);
      const chatModel = cfg.provider === "openai" || cfg.provider === "azure";
      if (recorded?.question_message_id && chatModel && actor.role === "authenticated") {
        await proposeMemories(tx, cfg, question, recorded.question_message_id, conversation);
      }
    }
    await audit(tx, result, kbs, agent, tenant, candidates, filtered, total);
    return result;
  };

  const reason = question.includes("\u0000") ? "invalid_question" : await callRpc(tx, questionRefusal, {
    question,
    min_chars: cfg.question_min_chars,
    max_chars: cfg.question_max_chars,
  }) as string | null;
  lap("guardrails");
  if (reason) return finish(await refuse(reason));
  let vector = Array.isArray(body.query_embedding) ? body.query_embedding : null;
  const embed = () =>
    embedQuery(tx, question, { kb_id: kbs.length === 1 ? kbs[0] : null, agent, tenant_id: tenant });
  if (session) { // the retrieval hierarchy (issue 45 §3): what the session holds comes first
    vector ??= await embed();
    const turn = await callRpc(tx, sessionTurn, {
      session_id: session,
      question,
      query_embedding: vector,
    }) as Json;
    lap("session");
    inSession = true;
    conversation = turn.conversation_id ?? null;
    searched = String(turn.question);
    if (Array.isArray(turn.query_embedding)) vector = turn.query_embedding as number[];
    const style = (turn.style ?? {}) as Json;
    context = {
      max_quotes: style.max_quotes ?? null,
      style_notes: style.notes ?? [],
      turns: turn.turns ?? [],
      summary: turn.summary ?? null,
    };
    if (turn.reused) return finish({ ...(turn.reused as Json), answer_source: "SESSION" });
  }
  if (body.rate_limit !== false) {
    const limit = (await callRpc(tx, takeRateLimit, { tenant_id: tenant }) ?? { allowed: true }) as Json;
    lap("rate_limit");
    if (!limit.allowed) {
      return finish(await refuse("rate_limited", { retry_after_ms: Number(limit.retry_after_ms ?? 0) }));
    }
  }
  // The shared cache holds answers every member may get: never one a person's style or (with a chat
  // model) their session's turns and summary shaped (issue 57 §7; as Python's orchestrator._personal).
  const useCache = body.use_cache !== false && !personal(context, cfg);
  if (useCache) {
    const cached = await callRpc(tx, cacheGet, {
      question: searched,
      kb_ids: kbs,
      agent,
      tenant_id: tenant,
    }) as
      | Json
      | null;
    lap("cache");
    if (cached && cacheEntryParses(cached)) {
      return finish({ ...cached, refused: false, reason: null, answer_source: "CACHE" });
    }
  }
  vector ??= await embed();
  lap("embed");
  const decision = await callRpc(tx, answerEvidence, {
    query_text: searched,
    query_embedding: vector,
    kb_ids: kbs,
    agent,
    tenant_id: tenant,
  }) as Json;
  lap("evidence");
  const evidence = decision.evidence as Json[];
  const counts = [Number(decision.candidates), Number(decision.filtered)] as const;
  const confidence = Number(decision.confidence);
  const conflicts = decision.conflicts as Json[];
  if (decision.decision === "passages") {
    // No exact answer, but passages on the question's topic (issue 61 §1): cited, not a refusal.
    return finish(passagesReply(decision, confidence, conflicts), ...counts);
  }
  if (decision.decision !== "answer") {
    const closest = decision.closest ?? null;
    return finish(await refuse(String(decision.reason), { confidence, conflicts, closest }), ...counts);
  }
  const extractive = cfg.provider === "extractive";
  const text = extractive
    ? await callRpc(tx, extractiveAnswer, {
      evidence,
      min_support: cfg.min_confidence,
      max_quotes: context.max_quotes ?? 2,
    }) as string | null
    : emit
    ? await chatStream(searched, evidence, cfg, context, emit, {
      trace_id: trace,
      decision: "answer",
      answer_source: "LLM",
      confidence,
      evidence: evidence.map((e) => ({
        n: e.n,
        document: e.title,
        source_uri: e.source_uri,
        chunk_id: e.chunk_id,
      })),
    })
    : await chat(searched, evidence, cfg, context);
  if (text === NOT_IN_SOURCES) {
    return finish(
      await refuse("not_in_sources", { confidence, closest: decision.closest ?? null }),
      ...counts,
    );
  }
  if (!text) return finish(await refuse("generation_failed", { confidence }), ...counts);
  lap("generate");
  const absent = await callRpc(tx, numbersAbsent, { answer: text, evidence }) as string[];
  if (absent.length) return finish(await refuse("number_not_in_evidence", { confidence }), ...counts);
  const answer: Json = {
    answer: text,
    refused: false,
    reason: null,
    confidence,
    sources: await callRpc(tx, answerSources, { answer: text, evidence }),
    conflicts,
    answer_source: extractive ? "EXTRACTIVE" : "LLM",
  };
  if (useCache) {
    await cacheAnswer(searched, kbs, answer, agent, String(cfg.tenant_id ?? tenant ?? ""));
    lap("cache_put");
  }
  return finish(answer, ...counts);
}

/** Whether the session's context shapes this answer for the person (see `useCache`). */
export function personal(context: Json, cfg: Json): boolean {
  if (context.max_quotes) return true;
  const chat = cfg.provider === "openai" || cfg.provider === "azure";
  const notes = Array.isArray(context.style_notes) ? context.style_notes.length : 0;
  const turns = Array.isArray(context.turns) ? context.turns.length : 0;
  return chat && (notes > 0 || turns > 0 || Boolean(context.summary));
}

const SOURCE_KEYS = ["n", "document", "document_id", "source_uri", "chunk_id", "excerpt", "score", "support"];

/**
 * The reply when the gate cannot confirm an answer but retrieval found passages above the model's
 * on-topic floor (answer_evidence's decision passages): its text and cited passages, answer_source
 * PASSAGES, refused false, the reason why there is no exact answer kept (as Python's
 * orchestrator._passages). Not cached.
 */
export function passagesReply(decision: Json, confidence: number, conflicts: Json[]): Json {
  const passages = Array.isArray(decision.passages) ? decision.passages as Json[] : [];
  return {
    answer: String(decision.reply),
    refused: false,
    reason: decision.reason ?? null,
    confidence,
    sources: passages.map((p) => Object.fromEntries(SOURCE_KEYS.map((k) => [k, p[k]]))),
    conflicts,
    answer_source: "PASSAGES",
  };
}

/**
 * Whether a cached entry has the shape an answer is served with (hipocampo_private._cache_entry_problem
 * keeps what is stored so): a text and sources with their fields. Anything else is a miss.
 */
export function cacheEntryParses(entry: Json): boolean {
  const sources = entry.sources;
  return typeof entry.answer === "string" && entry.answer.length > 0 && Array.isArray(sources) &&
    sources.every((s) =>
      typeof s === "object" && s !== null && typeof (s as Json).chunk_id === "number" &&
      typeof (s as Json).n === "number" && typeof (s as Json).excerpt === "string"
    );
}

/**
 * Caches the answer this request computed, as service_role for the tenant rag_config resolved
 * (`cache_put` is no user's: every member of the tenant reads the entry), in a transaction of
 * its own; a failed write is logged and the answer stands.
 */
async function cacheAnswer(
  question: string,
  kbs: string[],
  answer: Json,
  agent: string | null,
  tenant: string,
): Promise<void> {
  try {
    await asActor(
      { role: "service_role", claims: { role: "service_role" } },
      (sp) => callRpc(sp, cachePut, { question, kb_ids: kbs, answer, agent, tenant_id: tenant || null }),
    );
  } catch (err) {
    console.error(JSON.stringify({ level: "warning", error: `answer not cached: ${err}` }));
  }
}

/**
 * Records the turn in its session (session_record_turn: the question, the answer and its cited
 * chunks; the rolling summary when due) in a savepoint and returns what it recorded (its message
 * ids); a failure is logged, the answer stands and null is returned.
 */
async function recordTurn(
  tx: Tx,
  session: string,
  question: string,
  resolved: string,
  ans: Json,
): Promise<Json | null> {
  try {
    return await tx.savepoint((sp) =>
      callRpc(sp as unknown as Tx, sessionRecordTurn, {
        session_id: session,
        question,
        resolved_question: resolved,
        answer: ans,
      })
    ) as Json | null;
  } catch (err) {
    console.error(
      JSON.stringify({
        level: "warning",
        trace_id: ans.trace_id,
        error: `turn not recorded in its session: ${err}`,
      }),
    );
    return null;
  }
}

async function audit(
  tx: Tx,
  ans: Json,
  kbs: string[],
  agent: string | null,
  tenant: string | null,
  candidates: number,
  filtered: number,
  total: number,
): Promise<void> {
  try {
    await tx.savepoint((sp) =>
      callRpc(sp as unknown as Tx, recordAnswer, {
        trace_id: ans.trace_id,
        question: ans.question,
        answer_source: ans.answer_source,
        reason: ans.reason ?? null,
        confidence: ans.confidence,
        candidates,
        filtered,
        evidence_chunk_ids: (ans.sources as Json[]).map((s) => s.chunk_id),
        timings_ms: ans.timings_ms,
        latency_ms: total,
        kb_ids: kbs,
        agent,
        tenant_id: tenant,
      })
    );
  } catch (err) { // the answer stands; a lost audit row is logged loudly
    console.error(
      JSON.stringify({ level: "error", trace_id: ans.trace_id, error: `audit row not written: ${err}` }),
    );
  }
}

/** The last event of a streamed ask: its reply, `answer` or `refusal`. */
export const lastEvent = (result: unknown): string => (result as Json).refused ? "refusal" : "answer";

if (import.meta.main) serve("ask", { "": { method: "POST", run: ask, stream: lastEvent } });
