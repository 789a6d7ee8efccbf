/**
 * POST /functions/v1/search -> hipocampo.hybrid_search: dense (HNSW / exact cosine) + BM25 over
 * the caller's knowledge bases, fused (z-score or RRF), optional MMR; every hit carries its
 * citation (title, source_uri, chunk_id) and scores.
 *
 * Body: {"query_text": text (1..2,000 characters), "query_embedding": number[] (the active
 * model's dimensions; left out, it is computed through the model's OpenAI / Azure endpoint, and
 * required when the model is the offline one), "kb_ids"?: uuid[], "source_types"?: text[], "metadata_filter"?: object,
 * "match_count"?: 1..100, "min_similarity"?: -1..1, "fusion"?: "score" | "rrf", "dense_weight"?: 0..100,
 * "lexical_weight"?: 0..100, "rerank"?: "none" | "trust_recency", "mmr_lambda"?: 0..1, "embedding_model"?, "tenant_id"?:
 * service_role only}. Defaults: the tenant's retrieval config.
 * Returns {"results": [...]} in rank order. Errors: 401; 403 (42501); 404 (P0002) unknown
 * knowledge base; 422 (22023 query length, 22000 dimensions); 429; 503.
 * Example: curl -X POST "$SUPABASE_URL/functions/v1/search" -H "Authorization: Bearer $JWT"
 *   -d '{"query_text": "trancamento de matrícula", "query_embedding": [...]}'
 */
import type { Rpc } from "../_shared/rpc.ts";
import { callRpc } from "../_shared/rpc.ts";
import { serve } from "../_shared/serve.ts";

export const hybridSearch: Rpc = {
  name: "hybrid_search",
  params: {
    query_text: "text",
    query_embedding: "vector",
    kb_ids: "uuid[]",
    source_types: "text[]",
    metadata_filter: "jsonb",
    match_count: "integer",
    min_similarity: "double precision",
    fusion: "text",
    dense_weight: "double precision",
    lexical_weight: "double precision",
    rerank: "text",
    mmr_lambda: "double precision",
    embedding_model: "text",
    tenant_id: "uuid",
  },
  required: ["query_text", "query_embedding"],
  returns: "rows",
  embed: { from: "query_text", into: "query_embedding", required: true },
};

if (import.meta.main) {
  serve("search", {
    "": {
      method: "POST",
      reads: true,
      run: async ({ tx, body }) => ({ results: await callRpc(tx, hybridSearch, body) }),
    },
  });
}
