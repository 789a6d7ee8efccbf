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

let replica: Sql | null | undefined;

/**
 * The read replica's pool (`HIPOCAMPO_READ_DATABASE_URL`: a Supabase read replica's connection
 * string, or a streaming standby), or null when none is configured (issue 46 §2).
 */
export function readDatabase(): Sql | null {
  if (replica === undefined) {
    const url = Deno.env.get("HIPOCAMPO_READ_DATABASE_URL");
    replica = url ? connect(url) : null;
  }
  return replica;
}

/** A WAL position (`0/3A1B2C8`), as PostgreSQL prints a pg_lsn. */
const LSN = /^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/i;

/**
 * Whether the replica has replayed the write at `lsn` (read-your-writes), waiting up to
 * `HIPOCAMPO_READ_YOUR_WRITES_WAIT_MS` (default 200, as `[database] read_your_writes_wait_ms`).
 * No lsn (or not a WAL position): nothing to wait for.
 */
export async function replayed(sql: Sql, lsn: string | null): Promise<boolean> {
  if (!lsn || !LSN.test(lsn)) return true;
  const waitMs = Math.max(0, Number(Deno.env.get("HIPOCAMPO_READ_YOUR_WRITES_WAIT_MS") ?? "200") || 0);
  const deadline = performance.now() + waitMs;
  for (;;) {
    const rows = await sql.unsafe(
      "select coalesce(pg_catalog.pg_last_wal_replay_lsn() >= $1::pg_lsn, true) as done",
      [lsn],
    );
    if (rows[0]?.done) return true;
    if (performance.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The primary's WAL position after a committed write: the token a later read waits for. */
export async function writePosition(): Promise<string> {
  const rows = await database().unsafe("select pg_catalog.pg_current_wal_lsn()::text as lsn");
  return String(rows[0].lsn);
}

/**
 * Runs `work` in one transaction as `actor` (role + JWT claims); rolled back if it throws. With
 * `read.replica` the transaction runs on the read replica when one is configured and has replayed
 * `read.after` (the caller's last write, `X-Hipocampo-After-LSN`); else on the primary.
 */
export async function asActor<T>(
  actor: Actor,
  work: (tx: Tx) => Promise<T>,
  read: { replica: boolean; after: string | null } = { replica: false, after: null },
): Promise<T> {
  const role = actor.role === "service_role" ? "service_role" : "authenticated";
  const standby = read.replica ? readDatabase() : null;
  const sql = standby && await replayed(standby, read.after) ? standby : database();
  return await sql.begin(async (tx) => {
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
