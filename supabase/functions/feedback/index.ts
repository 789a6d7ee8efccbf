/**
 * /functions/v1/feedback -> the caller's verdict on one of their replies (issue 59 §5).
 *
 * Route (POST, JSON body; names and types as the RPC's):
 * - ""  -> hipocampo.record_feedback(trace_id, useful, comment?, question?, user_id?, tenant_id?):
 *   {"trace_id": uuid}. trace_id is the reply's (the ask function's "trace_id" / X-Trace-ID);
 *   comment 1..1,000 characters; question, the one asked, kept (scrubbed of PII) only when it is
 *   that reply's; user_id and tenant_id are honoured for service_role only.
 * Errors as every function: 401, 403 (42501), 404 (P0002: no such reply of the caller), 405, 422
 *   (22023: a bad comment, a question that is not the reply's), 429, 503.
 * Example: curl -X POST "$SUPABASE_URL/functions/v1/feedback" -H "Authorization: Bearer $JWT"
 *   -d '{"trace_id": "…", "useful": false, "comment": "citou o artigo errado"}'
 */
import type { Rpc } from "../_shared/rpc.ts";
import { callRpc } from "../_shared/rpc.ts";
import { type Route, serve } from "../_shared/serve.ts";

export const feedbackRpc: Rpc = {
  name: "record_feedback",
  params: {
    trace_id: "uuid",
    useful: "boolean",
    comment: "text",
    question: "text",
    user_id: "uuid",
    tenant_id: "uuid",
  },
  required: ["trace_id", "useful"],
  returns: "value",
};

export const routes: Record<string, Route> = {
  "": {
    method: "POST",
    run: async ({ tx, body }) => ({ trace_id: await callRpc(tx, feedbackRpc, body) }),
  },
};

if (import.meta.main) serve("feedback", routes);
