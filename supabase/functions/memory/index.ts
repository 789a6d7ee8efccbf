/**
 * /functions/v1/memory/<route> -> the memory RPCs (curated long-term memory; the gate, dedupe,
 * one-active-per-key, decay and RLS all live in SQL, docs/design.md §memory).
 *
 * Routes (POST with a JSON body unless noted; names and types as the RPCs'):
 * - remember  -> hipocampo.remember(key, value, description, category, embedding?, scope?, …):
 *   the stored / existing memory; refused by the gate with 403 (42501 no consent), 422 (22023
 *   noise / personal or sensitive data / too short, 22003 low confidence, 23502 no category,
 *   22001 too long) or 409 (53400 quota of 50 active memories, 55000 inferred over explicit).
 * - recall    -> hipocampo.search_memories(query_embedding | "query" text, mode?, match_count?, filter_*?):
 *   {"results": [...]} ranked with scores (thresholds: memory.context / memory.direct).
 * - lookup    -> hipocampo.lookup_memories(key?, category?, include_history?): {"results": [...]}
 *   (embeddings left out).
 * - correct   -> hipocampo.correct_memory(memory_id, value, description, embedding?).
 * - forget    -> hipocampo.forget_memory(memory_id): soft delete; {"forgotten": bool}.
 * - consent   -> hipocampo.set_memory_consent(granted, user_id?, tenant_id?).
 * - consent-status -> hipocampo.memory_consent(user_id?, tenant_id?): {"granted": bool} (read
 *   before computing a memory's embedding, so a refused write loads no model).
 * - seed-profile -> hipocampo.seed_profile(profile, source_ref?, user_id?, tenant_id?).
 * - export (GET; ?user_id=&tenant_id= for service_role) -> hipocampo.export_user_data.
 * - erase     -> hipocampo.erase_user(user_id?, tenant_id?): LGPD erasure, pseudonymous audit kept.
 * Vectors left out are computed from the text ("description", "query") through the active
 *   model's OpenAI / Azure endpoint (_shared/embed.ts); with the offline model they must be sent.
 * Errors as every function: 401 token, 404 unknown route or memory (P0002), 405, 429, 503.
 * Example: curl -X POST "$SUPABASE_URL/functions/v1/memory/forget" -H "Authorization: Bearer $JWT"
 *   -d '{"memory_id": "…"}'
 */
import type { Rpc } from "../_shared/rpc.ts";
import { Reply, statusOfSqlstate } from "../_shared/http.ts";
import { callRpc } from "../_shared/rpc.ts";
import type { Tx } from "../_shared/db.ts";
import { type Route, serve } from "../_shared/serve.ts";

const owner = { user_id: "uuid", tenant_id: "uuid" } as const;

export const memoryRpcs: Record<string, Rpc> = {
  remember: {
    name: "remember",
    params: {
      key: "text",
      value: "jsonb",
      description: "text",
      category: "text",
      embedding: "vector",
      scope: "text",
      confidence: "double precision",
      source: "text",
      source_ref: "text",
      conversation_id: "uuid",
      tags: "text[]",
      emotion: "text",
      intensity: "numeric",
      life_domain: "text",
      pinned: "boolean",
      token_count: "integer",
      expires_at: "timestamptz",
      ...owner,
    },
    required: ["key", "value", "description"],
    returns: "value",
    embed: { from: "description", into: "embedding", required: false, side: "passage" },
  },
  recall: {
    name: "search_memories",
    params: {
      query_embedding: "vector",
      mode: "text",
      match_count: "integer",
      filter_tags: "text[]",
      filter_emotion: "text",
      filter_life_domain: "text",
      filter_category: "text",
      filter_scope: "text",
      min_score: "double precision",
      include_staging: "boolean",
    },
    required: ["query_embedding"],
    returns: "rows",
    embed: { from: "query", into: "query_embedding", required: true },
    extra: ["query"],
  },
  lookup: {
    name: "lookup_memories",
    params: { key: "text", category: "text", include_history: "boolean" },
    returns: "rows",
  },
  correct: {
    name: "correct_memory",
    params: { memory_id: "uuid", value: "jsonb", description: "text", embedding: "vector" },
    required: ["memory_id", "value", "description"],
    returns: "value",
    embed: { from: "description", into: "embedding", required: false, side: "passage" },
  },
  forget: { name: "forget_memory", params: { memory_id: "uuid" }, required: ["memory_id"], returns: "value" },
  consent: {
    name: "set_memory_consent",
    params: { granted: "boolean", ...owner },
    required: ["granted"],
    returns: "value",
  },
  "consent-status": {
    name: "memory_consent",
    params: { ...owner },
    returns: "value",
  },
  "seed-profile": {
    name: "seed_profile",
    params: { profile: "jsonb", source_ref: "text", ...owner },
    required: ["profile"],
    returns: "value",
  },
  export: { name: "export_user_data", params: { ...owner }, returns: "value" },
  erase: { name: "erase_user", params: { ...owner }, returns: "value" },
};

/**
 * remember's result, or the gate's refusal with the status of its SQLSTATE. The RPC returns
 * `{"status": "rejected", "reason", "sqlstate", "message"}` rather than raising, so that the
 * attempt stays recorded (memory.write_rejected): the refusal is a `Reply`, and the transaction
 * commits.
 */
async function remember(tx: Tx, body: Record<string, unknown>): Promise<unknown> {
  const result = await callRpc(tx, memoryRpcs.remember, body) as Record<string, unknown>;
  if (result?.status !== "rejected") return result;
  const sqlstate = String(result.sqlstate);
  return new Reply(statusOfSqlstate(sqlstate), { error: result.message, sqlstate, reason: result.reason });
}

function withoutEmbeddings(rows: unknown): unknown[] {
  return (rows as Record<string, unknown>[]).map(({ embedding: _e, ...rest }) => rest);
}

export const routes: Record<string, Route> = {
  remember: { method: "POST", run: ({ tx, body }) => remember(tx, body) },
  recall: {
    method: "POST",
    reads: true,
    run: async ({ tx, body }) => ({ results: await callRpc(tx, memoryRpcs.recall, body) }),
  },
  lookup: {
    method: "POST",
    reads: true,
    run: async ({ tx, body }) => ({ results: withoutEmbeddings(await callRpc(tx, memoryRpcs.lookup, body)) }),
  },
  correct: { method: "POST", run: ({ tx, body }) => callRpc(tx, memoryRpcs.correct, body) },
  forget: {
    method: "POST",
    run: async ({ tx, body }) => ({ forgotten: await callRpc(tx, memoryRpcs.forget, body) }),
  },
  consent: {
    method: "POST",
    run: async ({ tx, body }) => {
      await callRpc(tx, memoryRpcs.consent, body);
      return { granted: body.granted };
    },
  },
  "consent-status": {
    method: "POST",
    run: async ({ tx, body }) => ({ granted: await callRpc(tx, memoryRpcs["consent-status"], body) }),
  },
  "seed-profile": { method: "POST", run: ({ tx, body }) => callRpc(tx, memoryRpcs["seed-profile"], body) },
  export: { method: "GET", run: ({ tx, body }) => callRpc(tx, memoryRpcs.export, body) },
  erase: { method: "POST", run: ({ tx, body }) => callRpc(tx, memoryRpcs.erase, body) },
};

if (import.meta.main) serve("memory", routes);
