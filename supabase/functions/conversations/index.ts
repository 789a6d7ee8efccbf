/**
 * /functions/v1/conversations/<route> -> conversation history (chat and voice share one
 * conversation_id; history is never promoted to memory by itself).
 *
 * Routes (POST, JSON body; names and types as the RPCs'):
 * - messages -> hipocampo.add_message(conversation_id, role, content, modality?, attachments?,
 *   embedding?, metadata?, language?, user_id? / tenant_id?: service_role only):
 *   {"message_id": number}. role user | assistant | system | tool (23514 otherwise).
 * - summary  -> hipocampo.update_conversation_summary(conversation_id, summary,
 *   through_message_id, …): the rolling summary the ContextPack carries; {"updated": true}.
 * - history  -> hipocampo.search_history(query_text, query_embedding?, filter_conversation_id?,
 *   match_count?, filter_modality?): {"results": [...]}.
 * Errors as every function: 401, 403 (42501), 404, 405, 422 (22023, 23514), 429, 503.
 * Example: curl -X POST "$SUPABASE_URL/functions/v1/conversations/messages"
 *   -H "Authorization: Bearer $JWT" -d '{"conversation_id": "…", "role": "user", "content": "Oi"}'
 */
import type { Rpc } from "../_shared/rpc.ts";
import { callRpc } from "../_shared/rpc.ts";
import { type Route, serve } from "../_shared/serve.ts";

const owner = { user_id: "uuid", tenant_id: "uuid" } as const;

export const conversationRpcs: Record<string, Rpc> = {
  messages: {
    name: "add_message",
    params: {
      conversation_id: "uuid",
      role: "text",
      content: "text",
      modality: "text",
      attachments: "jsonb",
      embedding: "vector",
      metadata: "jsonb",
      language: "text",
      ...owner,
    },
    required: ["conversation_id", "role", "content"],
    returns: "value",
  },
  summary: {
    name: "update_conversation_summary",
    params: { conversation_id: "uuid", summary: "text", through_message_id: "bigint", ...owner },
    required: ["conversation_id", "summary", "through_message_id"],
    returns: "value",
  },
  history: {
    name: "search_history",
    params: {
      query_text: "text",
      query_embedding: "vector",
      filter_conversation_id: "uuid",
      match_count: "integer",
      filter_modality: "text",
      ...owner,
    },
    required: ["query_text"],
    returns: "rows",
  },
};

export const routes: Record<string, Route> = {
  messages: {
    method: "POST",
    run: async ({ tx, body }) => ({ message_id: await callRpc(tx, conversationRpcs.messages, body) }),
  },
  summary: {
    method: "POST",
    run: async ({ tx, body }) => {
      await callRpc(tx, conversationRpcs.summary, body);
      return { updated: true };
    },
  },
  history: {
    method: "POST",
    reads: true,
    run: async ({ tx, body }) => ({ results: await callRpc(tx, conversationRpcs.history, body) }),
  },
};

if (import.meta.main) serve("conversations", routes);
