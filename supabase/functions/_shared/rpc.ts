/**
 * Thin HTTP over one RPC: a JSON body's keys become the RPC's named arguments, each cast in SQL to
 * its declared type. Only the names listed in an `Rpc` reach SQL (never a key of the request), and
 * every value travels inside one JSON parameter, so the SQL text is fixed per RPC and call shape.
 */
import { HttpError, InvalidArgument } from "./http.ts";
import type { Tx } from "./db.ts";
import { embedTexts, type Side } from "./embed.ts";

/** SQL types an argument may have. `vector` is `extensions.vector` (a JSON array of numbers). */
export type SqlType =
  | "text"
  | "uuid"
  | "integer"
  | "bigint"
  | "real"
  | "double precision"
  | "numeric"
  | "boolean"
  | "timestamptz"
  | "jsonb"
  | "vector"
  | "text[]"
  | "uuid[]"
  | "bigint[]";

/** One RPC of the `hipocampo` schema: its name, typed arguments, required ones, result shape. */
export interface Rpc {
  name: string;
  params: Record<string, SqlType>;
  required?: string[];
  /** `rows`: a set-returning function (result: array of rows); `value`: one value. */
  returns: "rows" | "value";
  /**
   * Embed the text of `from` into the vector argument `into` when the body has no `into`
   * (embed.ts: the active model through its OpenAI / Azure endpoint). With the offline model
   * (provider local) that fails with 422 when `required`, else the RPC runs without the vector.
   * `side`: the text is a search input ("query", the default) or stored content ("passage").
   */
  embed?: { from: string; into: string; required: boolean; side?: Side };
  /** Body keys accepted for `embed.from` that are not arguments of the RPC. */
  extra?: string[];
}

function argument(name: string, type: SqlType): string {
  const field = `($1::text)::jsonb -> '${name}'`;
  const text = `($1::text)::jsonb ->> '${name}'`;
  switch (type) {
    case "jsonb":
      return field;
    case "vector":
      return `(${text})::extensions.vector`;
    case "text[]":
    case "uuid[]":
    case "bigint[]":
      return `array(select jsonb_array_elements_text(${field}))::${type}`;
    default:
      return `(${text})::${type}`;
  }
}

/** A uuid in any form PostgreSQL and Python's UUID() read (hyphens, braces, urn:uuid: prefix). */
function isUuid(text: string): boolean {
  const bare = text.trim().replace(/^urn:uuid:/i, "").replace(/^\{(.*)\}$/, "$1").replaceAll("-", "");
  return /^[0-9a-f]{32}$/i.test(bare);
}

/** Checks `body` against `rpc` (unknown keys, missing required ones, JSON shapes): HttpError 422. */
export function checkArguments(rpc: Rpc, body: Record<string, unknown>): void {
  const unknown = Object.keys(body).filter((k) => !(k in rpc.params) && !rpc.extra?.includes(k));
  if (unknown.length) {
    throw new HttpError(
      422,
      `unknown parameter(s) ${unknown.join(", ")}; ${rpc.name} takes ${Object.keys(rpc.params).join(", ")}`,
    );
  }
  for (const name of rpc.required ?? []) {
    if (body[name] === undefined || body[name] === null) {
      throw new HttpError(422, `${name} is required`);
    }
  }
  for (const [name, value] of Object.entries(body)) {
    const type = rpc.params[name];
    if (value === null || type === undefined) continue;
    if (type.endsWith("[]") && !Array.isArray(value)) {
      throw new HttpError(422, `${name} must be a JSON array`);
    }
    if (type === "vector" && !(Array.isArray(value) && value.every((x) => typeof x === "number"))) {
      throw new HttpError(422, `${name} must be a JSON array of numbers (the embedding)`);
    }
    if (type === "uuid" && typeof value === "string" && !isUuid(value)) {
      throw new InvalidArgument(`${name} is not a uuid: '${value}'`);
    }
  }
}

/** The SQL text calling `rpc` with the arguments present in `body` (named notation). */
export function rpcSql(rpc: Rpc, body: Record<string, unknown>): string {
  const args = Object.keys(rpc.params)
    .filter((name) => body[name] !== undefined)
    .map((name) => `${name} => ${argument(name, rpc.params[name])}`)
    .join(", ");
  return rpc.returns === "rows"
    ? `select * from hipocampo.${rpc.name}(${args})`
    : `select hipocampo.${rpc.name}(${args}) as result`;
}

/** Calls `rpc` inside `tx` with `body`'s arguments (embedding the query text if needed): rows, or the value. */
export async function callRpc(tx: Tx, rpc: Rpc, request: Record<string, unknown>): Promise<unknown> {
  let body = request;
  const embed = rpc.embed;
  if (embed && (body[embed.into] === undefined || body[embed.into] === null)) {
    const text = body[embed.from];
    if (typeof text === "string" && text.trim() !== "") {
      checkArguments({ ...rpc, required: [] }, body);
      const kbIds = Array.isArray(body.kb_ids) && body.kb_ids.length === 1 ? String(body.kb_ids[0]) : null;
      const scope = {
        kb_id: kbIds,
        agent: body.agent as string | null,
        tenant_id: body.tenant_id as string | null,
      };
      try {
        const [vector] = await embedTexts(tx, [text], scope, embed.side ?? "query");
        body = { ...body, [embed.into]: vector };
      } catch (err) {
        if (embed.required || !(err instanceof HttpError && err.status === 422)) throw err;
      }
    }
  }
  checkArguments(rpc, body);
  const used = Object.keys(rpc.params).some((name) => body[name] !== undefined);
  const rows = await tx.unsafe(rpcSql(rpc, body), used ? [JSON.stringify(body)] : []);
  return rpc.returns === "rows" ? [...rows] : rows[0]?.result ?? null;
}
