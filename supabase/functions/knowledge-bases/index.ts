/**
 * /functions/v1/knowledge-bases/<route> -> the caller's knowledge bases, by name.
 *
 * Routes (POST, JSON body; names and types as the RPCs'):
 * - ""  -> hipocampo.list_knowledge_bases(tenant_id?: service_role only): {"results": [{"id",
 *   "name", "description", "tags", "status", "language", "documents", "chunks", "updated_at",
 *   "overrides"}]}.
 * - id  -> hipocampo.knowledge_base_id(name, tenant_id?): {"kb_id": uuid}; 404 (P0002) when the
 *   tenant has no knowledge base of that name.
 * Errors as every function: 401, 403 (42501), 404, 405, 422, 429, 503.
 * Example: curl -X POST "$SUPABASE_URL/functions/v1/knowledge-bases/id"
 *   -H "Authorization: Bearer $JWT" -d '{"name": "regimento"}'
 */
import type { Rpc } from "../_shared/rpc.ts";
import { callRpc } from "../_shared/rpc.ts";
import { type Route, serve } from "../_shared/serve.ts";

export const knowledgeBaseRpcs: Record<string, Rpc> = {
  list: {
    name: "list_knowledge_bases",
    params: { tenant_id: "uuid" },
    required: [],
    returns: "rows",
  },
  id: {
    name: "knowledge_base_id",
    params: { name: "text", tenant_id: "uuid" },
    required: ["name"],
    returns: "value",
  },
};

export const routes: Record<string, Route> = {
  "": {
    method: "POST",
    reads: true,
    run: async ({ tx, body }) => ({ results: await callRpc(tx, knowledgeBaseRpcs.list, body) }),
  },
  id: {
    method: "POST",
    reads: true,
    run: async ({ tx, body }) => ({ kb_id: await callRpc(tx, knowledgeBaseRpcs.id, body) }),
  },
};

if (import.meta.main) serve("knowledge-bases", routes);
