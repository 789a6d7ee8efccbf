/**
 * HTTP helpers shared by hipocampo's edge functions: JSON responses with CORS and X-Trace-ID,
 * typed HTTP errors, and the HTTP status of a database error's SQLSTATE (the same mapping as the
 * Python client's typed exceptions, py_client/hipocampo/errors.py).
 */

export const corsHeaders: Record<string, string> = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Headers":
    "authorization, x-client-info, apikey, content-type, x-hipocampo-after-lsn, x-chat-session-id",
  "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
  "Access-Control-Expose-Headers": "x-trace-id, retry-after, x-hipocampo-lsn",
};

/** An error that becomes an HTTP response `{"error", "trace_id"}` with `status` and `headers`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * An argument refused before SQL as the Python client refuses it: 422 with SQLSTATE 22023 and the
 * same message (e.g. "memory_id is not a uuid: 'x'").
 */
export class InvalidArgument extends HttpError {
  readonly sqlstate = "22023";
  constructor(message: string) {
    super(422, message);
  }
}

/**
 * A non-200 answer a route returns rather than throws: the transaction still commits (e.g. the
 * memory gate's refusal, whose attempt stays recorded).
 */
export class Reply {
  constructor(readonly status: number, readonly body: Record<string, unknown>) {}
}

/** A JSON response with the CORS headers and `X-Trace-ID`. */
export function json(
  body: unknown,
  status: number,
  trace: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { ...corsHeaders, "Content-Type": "application/json", "X-Trace-ID": trace, ...headers },
  });
}

/**
 * HTTP status of a SQLSTATE: 42501 (no tenant, not a member, no consent) -> 403; P0002 / 23503
 * (unknown knowledge base, memory, conversation) -> 404; 53400 (memory quota) and 55000 (an
 * inferred write over an explicit one) -> 409; other classes 22 / 23 (bad input: 22023, 22P02,
 * 22000 dimensions, 23514 …) -> 422; 08 / 53 / 57 (connection, resources, shutdown) -> 503;
 * anything else -> 500. `raised`: the database raised it; a raised 55000 is a state the server
 * must fix ("… config is incomplete: seed it from config.toml"), not a conflict -> 503.
 */
export function statusOfSqlstate(code: string, raised = false): number {
  if (code === "42501") return 403;
  if (code === "P0002" || code === "23503") return 404;
  if (code === "55000" && raised) return 503;
  if (code === "53400" || code === "55000") return 409;
  if (code.startsWith("22") || code.startsWith("23")) return 422;
  if (code.startsWith("08") || code.startsWith("53") || code.startsWith("57")) return 503;
  return 500;
}

/**
 * The largest request body a function reads, in bytes: `HIPOCAMPO_MAX_BODY_BYTES`, default 1 MiB
 * (a message's content is at most 100,000 characters; issue 44 §4: bodies were read whole).
 */
export function maxBodyBytes(): number {
  const set = Number(Deno.env.get("HIPOCAMPO_MAX_BODY_BYTES") ?? "");
  return Number.isInteger(set) && set > 0 ? set : 1_048_576;
}

/** The body as text, read until maxBodyBytes(): 413 past it (a larger Content-Length is refused unread). */
async function readCapped(req: Request): Promise<string> {
  const max = maxBodyBytes();
  const declared = Number(req.headers.get("content-length") ?? "0");
  const tooLarge = () => new HttpError(413, `the request body is over ${max} bytes`);
  if (declared > max) throw tooLarge();
  if (!req.body) return "";
  const reader = req.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw tooLarge();
    }
    parts.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.byteLength;
  }
  return new TextDecoder().decode(all);
}

/** The request body as a JSON object; 400 when it is not one (an empty body reads as `{}`), 413 past maxBodyBytes(). */
export async function readObject(req: Request): Promise<Record<string, unknown>> {
  const text = await readCapped(req);
  if (text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(400, "the body is not valid JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new HttpError(400, "the body must be a JSON object");
  }
  return value as Record<string, unknown>;
}
