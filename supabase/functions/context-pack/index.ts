/**
 * POST /functions/v1/context-pack -> hipocampo.context_pack: the ContextPack of one turn in one
 * round trip (summary + recent messages by the window policy, memories with preferences first,
 * cited chunks, session state, modality; fits token_budget).
 *
 * Body: {"conversation_id": uuid, "query": text, "query_embedding"?: number[] (the active
 * model's dimensions; left out, computed through the model's OpenAI / Azure endpoint, or - with
 * the offline model - memories and chunks are skipped), "modality"?: "chat" | "voice",
 * "token_budget"?: tokens, "kb_ids"?: uuid[], "agent"?: text, "session_id"?: uuid,
 * "user_id"? / "tenant_id"?: service_role only}.
 * Returns the pack (jsonb). Errors: 401 token; 403 (42501) not a member; 404 (P0002) unknown
 * agent; 422 (22023 / 22000) bad input or dimensions; 429 per-address limit; 503 database down.
 * Example: curl -X POST "$SUPABASE_URL/functions/v1/context-pack" -H "Authorization: Bearer $JWT"
 *   -d '{"conversation_id": "…", "query": "Qual o prazo do estágio?", "query_embedding": [...]}'
 */
import type { Rpc } from "../_shared/rpc.ts";
import { callRpc } from "../_shared/rpc.ts";
import { serve } from "../_shared/serve.ts";

export const contextPack: Rpc = {
  name: "context_pack",
  params: {
    conversation_id: "uuid",
    query: "text",
    query_embedding: "vector",
    modality: "text",
    token_budget: "integer",
    kb_ids: "uuid[]",
    agent: "text",
    session_id: "uuid",
    user_id: "uuid",
    tenant_id: "uuid",
  },
  required: ["conversation_id", "query"],
  returns: "value",
  embed: { from: "query", into: "query_embedding", required: false },
};

if (import.meta.main) {
  serve("context-pack", {
    "": { method: "POST", reads: true, run: ({ tx, body }) => callRpc(tx, contextPack, body) },
  });
}
