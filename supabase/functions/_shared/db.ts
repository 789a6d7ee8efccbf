/**
 * The database side of hipocampo's edge functions: one postgres.js pool over `SUPABASE_DB_URL`
 * (the URL Supabase gives every edge function), and transactions that run as the caller's role
 * with its JWT claims (`set local role …; set_config('request.jwt.claims', …, true)`), exactly
 * as PostgREST runs an RPC, so RLS and the RPCs' own checks apply unchanged.
 */
import postgres from "npm:postgres@3.4.9";
import type { Actor } from "./auth.ts";

export type Sql = postgres.Sql;
export type Tx = postgres.TransactionSql;

/**
 * A pool for a libpq URL. A Unix-socket URL (`postgresql://user@/db?host=/dir&port=5432`, the
 * embedded server's) becomes postgres.js's `path` option; TCP URLs pass as they are. Statements
 * are not prepared (Supavisor's transaction mode does not keep them).
 */
export function connect(url: string, max = 3): Sql {
  const parsed = new URL(url.replace(/^postgres(?:ql)?:\/\/([^@/]*@)?\//, "postgres://$1localhost/"));
  const socketDir = parsed.searchParams.get("host");
  const port = parsed.searchParams.get("port") ?? (parsed.port || "5432");
  parsed.searchParams.delete("host");
  parsed.searchParams.delete("port");
  return postgres(parsed.toString(), {
    max,
    prepare: false,
    connect_timeout: 5,
    idle_timeout: 20,
    onnotice: () => {},
    // bigint ids (chunk_id, message_id) as JSON numbers, as PostgREST returns them (exact below 2^53).
    types: {
      int8: { to: 20, from: [20], serialize: (x: unknown) => String(x), parse: (x: string) => Number(x) },
    },
    ...(socketDir?.startsWith("/") ? { path: `${socketDir}/.s.PGSQL.${port}` } : {}),
  });
}

let shared: Sql | undefined;

/** The function's pool (created on first use from `SUPABASE_DB_URL`). */
export function database(): Sql {
  if (!shared) {
    const url = Deno.env.get("SUPABASE_DB_URL");
    if (!url) throw new Error("SUPABASE_DB_URL is not set");
    shared = connect(url);
  }
  return shared;
}

/** Runs `work` in one transaction as `actor` (role + JWT claims); rolled back if it throws. */
export async function asActor<T>(actor: Actor, work: (tx: Tx) => Promise<T>): Promise<T> {
  const role = actor.role === "service_role" ? "service_role" : "authenticated";
  return await database().begin(async (tx) => {
    await tx.unsafe(`set local role ${role}`);
    await tx.unsafe("select set_config('request.jwt.claims', $1, true)", [JSON.stringify(actor.claims)]);
    return await work(tx);
  }) as T;
}

/**
 * The per-address token bucket (`hipocampo.take_ip_rate_limit`, rag.ip_rate_limit_per_minute).
 * Returns `{allowed, retry_after_ms}`; when the database cannot be reached it allows, and the
 * request itself then answers 503.
 */
export async function takeIpRateLimit(ip: string): Promise<{ allowed: boolean; retry_after_ms: number }> {
  try {
    const rows = await asActor(
      { role: "service_role", claims: { role: "service_role" } },
      (tx) => tx.unsafe("select hipocampo.take_ip_rate_limit($1::inet) as v", [ip]),
    );
    const v = (rows[0]?.v ?? {}) as { allowed?: boolean; retry_after_ms?: number };
    return { allowed: v.allowed !== false, retry_after_ms: v.retry_after_ms ?? 1000 };
  } catch {
    return { allowed: true, retry_after_ms: 0 };
  }
}
