/**
 * The request cycle every hipocampo edge function shares: CORS preflight, a trace id, the
 * per-address token bucket, JWT -> actor, the route's work in one transaction as that actor, and
 * errors as JSON (`{"error", "sqlstate"?, "trace_id"}`) with the status of their SQLSTATE. One
 * JSON log line per request (function, route, status, ms, trace id).
 */
import { isIP } from "node:net";
import { type Actor, actorOf } from "./auth.ts";
import { inWords } from "./constraints.ts";
import { asActor, readDatabase, takeIpRateLimit, type Tx, writePosition } from "./db.ts";
import {
  corsHeaders,
  HttpError,
  InvalidArgument,
  json,
  readObject,
  Reply,
  statusOfSqlstate,
} from "./http.ts";

/** What a route gets: the verified actor, the JSON body (GET: the query string) and the transaction. */
export interface RouteContext {
  actor: Actor;
  body: Record<string, unknown>;
  tx: Tx;
  /** The request's headers (e.g. X-Chat-Session-ID). */
  headers?: Headers;
  /**
   * Set when the route streams this request (Server-Sent Events, see `Route.stream`): sends one
   * event (its name and JSON data) to the client now.
   */
  emit?: (event: string, data: unknown) => void;
}

/**
 * A route: its method and what it answers (JSON, status 200; a `Reply` sets another status).
 * `reads`: it only reads (search, recall, lookup, history, context pack), so a read replica may
 * serve it (`HIPOCAMPO_READ_DATABASE_URL`); the others run on the primary and, with a replica
 * configured, answer the primary's WAL position in `X-Hipocampo-LSN`, which a client sends back
 * as `X-Hipocampo-After-LSN` to read its own write (the read waits for the replica to replay it,
 * then reads from the primary).
 */
export interface Route {
  method: "GET" | "POST";
  reads?: boolean;
  run: (ctx: RouteContext) => Promise<unknown>;
  /**
   * The route may answer as Server-Sent Events (issue 59 §4: `"stream": true` in the body, or
   * `Accept: text/event-stream`): `run` sends what it has early through `emit`, and once its
   * transaction has committed its result is the last event, named by this function of it.
   */
  stream?: (result: unknown) => string;
}

/**
 * The caller's address for the per-address bucket, from where a proxy writes it, never from what
 * the client wrote:
 * - `HIPOCAMPO_CLIENT_IP_HEADER` set (e.g. `cf-connecting-ip`, `x-real-ip`): that header, which
 *   the proxy in front sets and overwrites;
 * - else the X-Forwarded-For entry `HIPOCAMPO_TRUSTED_PROXY_HOPS` (default 1) from the right: the
 *   one the nearest proxy appended (entries to its left are whatever reached that proxy, the
 *   client's own included);
 * - `HIPOCAMPO_TRUSTED_PROXY_HOPS=0` means no proxy in front: the socket's peer, whatever the
 *   headers say (a client would otherwise pick its own bucket by writing X-Forwarded-For);
 * - else (no such entry, or not an IP address) the socket's peer.
 */
export function clientAddress(
  headers: Headers,
  peer: string,
  env: { header?: string; hops?: string } = {
    header: Deno.env.get("HIPOCAMPO_CLIENT_IP_HEADER"),
    hops: Deno.env.get("HIPOCAMPO_TRUSTED_PROXY_HOPS"),
  },
): string {
  const ipOr = (value: string | null | undefined) => {
    const v = value?.trim() ?? "";
    return isIP(v) ? v : peer;
  };
  if (env.header) return ipOr(headers.get(env.header));
  const parsed = Number.parseInt(env.hops ?? "1", 10);
  if (parsed === 0) return peer; // no proxy: nothing in the headers is trusted
  const hops = Math.max(1, parsed || 1);
  const entries = (headers.get("x-forwarded-for") ?? "").split(",");
  return entries.length >= hops ? ipOr(entries.at(-hops)) : peer;
}

function errorResponse(err: unknown, trace: string): Response {
  if (err instanceof InvalidArgument) {
    return json({ error: err.message, sqlstate: err.sqlstate, trace_id: trace }, err.status, trace);
  }
  if (err instanceof HttpError) {
    return json({ error: err.message, trace_id: trace }, err.status, trace, err.headers);
  }
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e?.code === "string" ? e.code : "";
  if (/^[0-9A-Z]{5}$/.test(code)) {
    return json(
      { error: inWords(String(e.message)), sqlstate: code, trace_id: trace },
      statusOfSqlstate(code, true),
      trace,
    );
  }
  // No SQLSTATE: the connection failed (refused, timed out, closed) or the function is misconfigured.
  console.error(JSON.stringify({ level: "error", trace_id: trace, error: String(e?.message ?? err) }));
  return json({ error: "database unavailable", trace_id: trace }, 503, trace);
}

/**
 * A streamed route's response: `text/event-stream`, each event `event: <name>` and `data: <json>`
 * (what EventSource and the OpenAI SDK's reader take; supabase-js's `functions.invoke` hands the
 * response over as it is). The response starts with the route's first event; an error before it
 * is the JSON error a plain request gets, an error after it ends the stream with a `refusal`
 * event (database unavailable). X-Trace-ID and X-Answer-Source come from the first event.
 */
async function streamed(
  route: Route,
  ctx: Omit<RouteContext, "tx" | "emit">,
  trace: string,
): Promise<Response> {
  const encoder = new TextEncoder();
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  let first: Record<string, unknown> | null = null;
  let begun: (value: true) => void = () => {};
  const begins = new Promise<true>((resolve) => (begun = resolve));
  const emit = (event: string, data: unknown) => {
    if (first === null) {
      first = (typeof data === "object" && data !== null ? data : {}) as Record<string, unknown>;
      begun(true);
    }
    // A client that went away: nothing to tell it.
    writer.write(encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)).catch(() => {});
  };
  const work = asActor(ctx.actor, (tx) => route.run({ ...ctx, tx, emit }))
    .then((result) => emit(route.stream!(result), result))
    .catch((err) => {
      if (first === null) throw err;
      console.error(
        JSON.stringify({ level: "error", trace_id: trace, error: `streamed reply failed: ${err}` }),
      );
      emit("refusal", {
        refused: true,
        reason: "database_unavailable",
        answer_source: "REFUSAL",
        trace_id: trace,
      });
    })
    .finally(() => writer.close().catch(() => {}));
  try {
    await Promise.race([begins, work]);
  } catch (err) {
    return errorResponse(err, trace);
  }
  const opening = (first ?? {}) as Record<string, unknown>;
  return new Response(readable, {
    status: 200,
    headers: {
      ...corsHeaders,
      "Content-Type": "text/event-stream",
      "Cache-Control": "no-cache",
      "X-Trace-ID": String(opening.trace_id ?? trace),
      ...(opening.answer_source ? { "X-Answer-Source": String(opening.answer_source) } : {}),
    },
  });
}

/**
 * A `Deno.serve` handler for `routes`, keyed by the last segment of the path ("" for the
 * function's root: `/functions/v1/memory/recall` -> "recall", `/functions/v1/context-pack` -> "").
 */
export function handler(
  fn: string,
  routes: Record<string, Route>,
): (req: Request, info: Deno.ServeHandlerInfo) => Promise<Response> {
  return async (req, info) => {
    if (req.method === "OPTIONS") return new Response(null, { status: 204, headers: corsHeaders });
    const trace = crypto.randomUUID();
    const started = performance.now();
    const segments = new URL(req.url).pathname.split("/").filter(Boolean);
    const last = segments.at(-1) ?? "";
    const key = last === fn ? "" : last;
    let response: Response;
    try {
      const route = routes[key];
      if (!route) {
        throw new HttpError(
          404,
          `no route ${key || "/"} in ${fn}; routes: ${Object.keys(routes).join(", ")}`,
        );
      }
      if (req.method !== route.method) {
        throw new HttpError(405, `use ${route.method}`, { Allow: route.method });
      }
      const limit = await takeIpRateLimit(
        clientAddress(req.headers, (info.remoteAddr as Deno.NetAddr).hostname ?? "127.0.0.1"),
      );
      if (!limit.allowed) {
        const retry = String(Math.max(1, Math.floor(limit.retry_after_ms / 1000)));
        throw new HttpError(429, "too many requests from this address", { "Retry-After": retry });
      }
      const actor = await actorOf(req);
      const body = route.method === "POST"
        ? await readObject(req)
        : Object.fromEntries(new URL(req.url).searchParams) as Record<string, unknown>;
      if (
        route.stream &&
        (body.stream === true || (req.headers.get("accept") ?? "").includes("text/event-stream"))
      ) {
        response = await streamed(route, { actor, body, headers: req.headers }, trace);
        console.log(
          JSON.stringify({
            level: "debug",
            function: fn,
            route: key,
            status: response.status,
            trace_id: trace,
          }),
        );
        return response;
      }
      const result = await asActor(actor, (tx) => route.run({ actor, body, tx, headers: req.headers }), {
        replica: route.reads === true,
        after: req.headers.get("x-hipocampo-after-lsn"),
      });
      const written = !route.reads && readDatabase()
        ? { "X-Hipocampo-LSN": await writePosition() }
        : undefined;
      response = result instanceof Reply
        ? json({ ...result.body, trace_id: trace }, result.status, trace, written)
        : json(result, 200, trace, written);
    } catch (err) {
      response = errorResponse(err, trace);
    }
    console.log(JSON.stringify({
      level: "debug",
      function: fn,
      route: key,
      status: response.status,
      ms: Math.round(performance.now() - started),
      trace_id: trace,
    }));
    return response;
  };
}

/** Serves `routes` (port `PORT`, default 8000, when run outside Supabase's edge runtime). */
export function serve(fn: string, routes: Record<string, Route>): void {
  Deno.serve({ port: Number(Deno.env.get("PORT") ?? "8000"), onListen: () => {} }, handler(fn, routes));
}
