/**
 * JWT -> the role and claims a request runs under, as PostgREST maps them, so RLS applies
 * unchanged. Tokens are Supabase-style JWTs: HS256 signed with the secret in
 * `HIPOCAMPO_JWT_SECRET` (or `SUPABASE_JWT_SECRET`, the name `[http] jwt_secret_env` of
 * config.toml uses for `hipocampo serve`), or ES256 / RS256 signed with the project's asymmetric
 * signing keys, read from its JWKS: `HIPOCAMPO_JWKS_URL`, default
 * `$SUPABASE_URL/auth/v1/.well-known/jwks.json` (the edge runtime sets `SUPABASE_URL`).
 */
import { createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify } from "npm:jose@6.2.17";
import { HttpError } from "./http.ts";

/** Signing algorithms of Supabase's asymmetric JWT signing keys. */
const ASYMMETRIC = ["ES256", "RS256"];

let remote: { url: string; keys: ReturnType<typeof createRemoteJWKSet> } | undefined;

/** The project's key set, fetched on first use and cached by jose (a key id it lacks refetches, at most every 30 s). */
function remoteKeys(url: string): ReturnType<typeof createRemoteJWKSet> {
  if (remote?.url !== url) {
    remote = { url, keys: createRemoteJWKSet(new URL(url), { timeoutDuration: 5000 }) };
  }
  return remote.keys;
}

function jwksUrl(): string {
  const explicit = Deno.env.get("HIPOCAMPO_JWKS_URL");
  if (explicit) return explicit;
  const project = Deno.env.get("SUPABASE_URL");
  return project ? `${project.replace(/\/+$/, "")}/auth/v1/.well-known/jwks.json` : "";
}

/** True when the key set could not be read (network, timeout, a status other than 200, not JSON). */
function keysUnreadable(err: unknown): boolean {
  return err instanceof errors.JWKSTimeout || err instanceof TypeError ||
    (err instanceof errors.JOSEError && err.code === "ERR_JOSE_GENERIC");
}

/** Who a request acts as: `authenticated` (a user; claims carry `sub` and the tenant) or `service_role`. */
export interface Actor {
  role: "authenticated" | "service_role";
  claims: Record<string, unknown>;
}

/**
 * Verifies `Authorization: Bearer <JWT>` (`exp` and `role` required; `aud` must be
 * `HIPOCAMPO_JWT_AUDIENCE`, default `authenticated`, for user tokens). The token's `alg` picks the
 * key: HS256 the secret, ES256 / RS256 the JWKS key named by its `kid`.
 *
 * Errors: HttpError 401 (missing or invalid token, an algorithm with no key configured, another
 * role: `anon` gets nothing here), 503 (the key set cannot be read), 500 (neither a secret nor a
 * JWKS URL configured).
 */
export async function actorOf(req: Request): Promise<Actor> {
  const secret = Deno.env.get("HIPOCAMPO_JWT_SECRET") ?? Deno.env.get("SUPABASE_JWT_SECRET") ?? "";
  const jwks = jwksUrl();
  if (!secret && !jwks) {
    throw new HttpError(500, "no JWT key configured: set HIPOCAMPO_JWT_SECRET or HIPOCAMPO_JWKS_URL");
  }
  const audience = Deno.env.get("HIPOCAMPO_JWT_AUDIENCE") ?? "authenticated";
  const header = req.headers.get("authorization") ?? "";
  if (!header.toLowerCase().startsWith("bearer ")) throw new HttpError(401, "missing bearer token");
  const token = header.slice(7).trim();
  let alg: string;
  try {
    alg = decodeProtectedHeader(token).alg ?? "";
  } catch (err) {
    throw new HttpError(401, `invalid token: ${err instanceof Error ? err.message : String(err)}`);
  }
  const options = { algorithms: [alg], requiredClaims: ["exp", "role"] };
  let claims: Record<string, unknown>;
  try {
    if (alg === "HS256" && secret) {
      claims = (await jwtVerify(token, new TextEncoder().encode(secret), options)).payload;
    } else if (ASYMMETRIC.includes(alg) && jwks) {
      claims = (await jwtVerify(token, remoteKeys(jwks), options)).payload;
    } else {
      throw new HttpError(401, `invalid token: signing algorithm '${alg}' is not configured here`);
    }
  } catch (err) {
    if (err instanceof HttpError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    if (keysUnreadable(err)) throw new HttpError(503, `cannot read the signing keys: ${message}`);
    throw new HttpError(401, `invalid token: ${message}`);
  }
  if (claims.role === "service_role") return { role: "service_role", claims };
  const aud = claims.aud;
  const audOk = aud === audience || (Array.isArray(aud) && aud.includes(audience));
  if (claims.role === "authenticated" && typeof claims.sub === "string" && audOk) {
    return { role: "authenticated", claims };
  }
  throw new HttpError(401, "token role must be authenticated (with sub and aud) or service_role");
}
