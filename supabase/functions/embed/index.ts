/**
 * POST /functions/v1/embed -> drains the embedding queue for a model served by OpenAI / Azure
 * OpenAI (issue 20 §4): rows without a vector of the active model (hipocampo.rows_to_embed:
 * chunks after a model switch, active and staged memories, messages) are claimed in batches (for update skip locked: parallel
 * calls take different rows), embedded in one request each through the model's endpoint
 * (_shared/embed.ts; the key / endpoint / base URL variables the global rag config names) and stored
 * (hipocampo.set_row_embeddings). A batch the endpoint fails on is recorded
 * (hipocampo.record_embedding_failure: retried after a backoff, dead-lettered after
 * maintenance.embedding_max_attempts) and the run goes on. Then the sentence embeddings of
 * chunks whose answer gate reads them (hipocampo.chunks_without_sentences: knowledge bases with
 * rag.sentence_weight above 0), each chunk split as the Python client splits it
 * (_shared/sentences.ts), stored by hipocampo.set_chunk_sentences; a batch the endpoint fails on
 * is counted in "failed" and listed again by the next call (what `hipocampo db embed-missing`
 * does). One transaction per call: a call that dies leaves its rows to the next. Schedule it
 * (pg_cron + pg_net) or call it from a worker.
 *
 * Body: {"kinds"?: ["chunks" | "chunk_sentences" | "memories" | "memory_staging" | "messages"],
 * "batch_size"?: 1..100 rows or chunks (default 50), "max_batches"?: 1..100 per kind (default 10)}.
 * service_role only.
 * Returns: {"embedded": {kind: n}, "failed": {kind: n}}.
 * Errors: 401 token; 403 not service_role; 422 bad body, or the active model runs offline
 * (provider local: `hipocampo worker --embed-missing` embeds with it); 503 database down.
 * Example: curl -X POST "$SUPABASE_URL/functions/v1/embed" -H "Authorization: Bearer $SERVICE_ROLE_KEY" -d '{}'
 */
import type { Tx } from "../_shared/db.ts";
import type { Rpc } from "../_shared/rpc.ts";
import { callRpc } from "../_shared/rpc.ts";
import { embedTexts } from "../_shared/embed.ts";
import { chunkSentences } from "../_shared/sentences.ts";
import { HttpError } from "../_shared/http.ts";
import { type RouteContext, serve } from "../_shared/serve.ts";

/** What this function says when the active model is the offline one: it embeds through an
 * OpenAI-compatible endpoint only, and the Python worker does the offline model's backfill. */
const OFFLINE = "the embed function cannot compute these vectors (run `hipocampo worker --embed-missing`)";

const KINDS = ["chunks", "chunk_sentences", "memories", "memory_staging", "messages"];
// OpenAI's embeddings endpoint takes at most 2,048 inputs a request; a batch of chunks may hold
// more sentences (up to 64 each).
const MAX_INPUTS = 2048;

export const rowsToEmbed: Rpc = {
  name: "rows_to_embed",
  params: { kind: "text", batch_size: "integer", after_id: "text" },
  required: ["kind"],
  returns: "rows",
};
export const setRowEmbeddings: Rpc = {
  name: "set_row_embeddings",
  params: { kind: "text", items: "jsonb" },
  required: ["kind", "items"],
  returns: "value",
};
export const chunksWithoutSentences: Rpc = {
  name: "chunks_without_sentences",
  params: { batch_size: "integer", after_chunk_id: "bigint" },
  required: [],
  returns: "rows",
};
export const setChunkSentences: Rpc = {
  name: "set_chunk_sentences",
  params: { items: "jsonb" },
  required: ["items"],
  returns: "value",
};
export const recordEmbeddingFailure: Rpc = {
  name: "record_embedding_failure",
  params: { kind: "text", row_ids: "text[]", error: "text" },
  required: ["kind", "row_ids", "error"],
  returns: "value",
};

function bounded(value: unknown, name: string, fallback: number, max: number): number {
  if (value === undefined || value === null) return fallback;
  if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > max) {
    throw new HttpError(422, `${name} must be an integer 1..${max}`);
  }
  return value as number;
}

/**
 * The sentence embeddings of up to `maxBatches` batches of chunks (one embedding request per
 * batch, per 2,048 sentences): [chunks stored, chunks of the batches the endpoint failed on].
 */
async function drainSentences(tx: Tx, batchSize: number, maxBatches: number): Promise<[number, number]> {
  let stored = 0;
  let failed = 0;
  let after: string | null = null;
  for (let batch = 0; batch < maxBatches; batch++) {
    const rows = await callRpc(tx, chunksWithoutSentences, {
      batch_size: batchSize,
      after_chunk_id: after,
    }) as {
      chunk_id: string;
      content: string;
    }[];
    if (!rows.length) break;
    after = String(rows.at(-1)?.chunk_id);
    const sentences = rows.map((r) => chunkSentences(r.content));
    const texts = sentences.flat();
    const vectors: number[][] = [];
    try {
      for (let i = 0; i < texts.length; i += MAX_INPUTS) {
        vectors.push(
          ...await embedTexts(tx, texts.slice(i, i + MAX_INPUTS), { global: true }, "passage", OFFLINE),
        );
      }
    } catch (err) {
      if (err instanceof HttpError && err.status === 422) throw err;
      failed += rows.length;
      continue;
    }
    let next = 0;
    const items = rows.map((r, i) => ({
      id: String(r.chunk_id),
      sentence_embeddings: sentences[i].map(() => vectors[next++]),
    }));
    stored += Number(await callRpc(tx, setChunkSentences, { items }) ?? 0);
  }
  return [stored, failed];
}

/** Claims, embeds and stores the queued rows of each kind; records the batches that fail. */
export async function drain({ actor, body, tx }: RouteContext): Promise<unknown> {
  if (actor.role !== "service_role") throw new HttpError(403, "the embed function is for service_role");
  const unknown = Object.keys(body).filter((k) => !["kinds", "batch_size", "max_batches"].includes(k));
  if (unknown.length) throw new HttpError(422, `unknown parameter(s) ${unknown.join(", ")}`);
  const kinds = body.kinds ?? KINDS;
  if (!Array.isArray(kinds) || kinds.some((k) => !KINDS.includes(String(k)))) {
    throw new HttpError(422, `kinds must be a subset of ${KINDS.join(", ")}`);
  }
  const batchSize = bounded(body.batch_size, "batch_size", 50, 100);
  const maxBatches = bounded(body.max_batches, "max_batches", 10, 100);
  const embedded: Record<string, number> = {};
  const failed: Record<string, number> = {};
  for (const kind of kinds as string[]) {
    embedded[kind] = 0;
    failed[kind] = 0;
    if (kind === "chunk_sentences") {
      [embedded[kind], failed[kind]] = await drainSentences(tx, batchSize, maxBatches);
      continue;
    }
    let after: string | null = null;
    for (let batch = 0; batch < maxBatches; batch++) {
      const rows = await callRpc(tx, rowsToEmbed, { kind, batch_size: batchSize, after_id: after }) as {
        row_id: string;
        content: string;
      }[];
      if (!rows.length) break;
      const ids = rows.map((r) => r.row_id);
      after = ids.at(-1) ?? null;
      let vectors: number[][];
      try {
        // The model is the project's, so are its endpoint and key: the global rag config.
        vectors = await embedTexts(tx, rows.map((r) => r.content), { global: true }, "passage", OFFLINE);
      } catch (err) {
        if (err instanceof HttpError && err.status === 422) throw err; // offline model: nothing to do here
        const error = err instanceof Error ? err.message : String(err);
        await callRpc(tx, recordEmbeddingFailure, { kind, row_ids: ids, error });
        failed[kind] += ids.length;
        continue;
      }
      const items = ids.map((id, i) => ({ id, embedding: vectors[i] }));
      embedded[kind] += Number(await callRpc(tx, setRowEmbeddings, { kind, items }) ?? 0);
    }
  }
  return { embedded, failed };
}

if (import.meta.main) serve("embed", { "": { method: "POST", run: drain } });
