/**
 * JWT -> the role and claims a request runs under, as PostgREST maps them, so RLS applies
 * unchanged. Tokens are Supabase-style HS256 JWTs signed with the secret in
 * `HIPOCAMPO_JWT_SECRET` (or `SUPABASE_JWT_SECRET`, the name `[http] jwt_secret_env` of
 * config.toml uses for `hipocampo serve`).
 */
import { jwtVerify } from "npm:jose@6.2.17";
import { HttpError } from "./http.ts";

/** Who a request acts as: `authenticated` (a user; claims carry `sub` and the tenant) or `service_role`. */
export interface Actor {
  role: "authenticated" | "service_role";
  claims: Record<string, unknown>;
}

/**
 * Verifies `Authorization: Bearer <JWT>` (HS256, `exp` and `role` required; `aud` must be
 * `HIPOCAMPO_JWT_AUDIENCE`, default `authenticated`, for user tokens).
 *
 * Errors: HttpError 401 (missing or invalid token, another role: `anon` gets nothing here),
 * 500 (no secret configured).
 */
export async function actorOf(req: Request): Promise<Actor> {
  const secret = Deno.env.get("HIPOCAMPO_JWT_SECRET") ?? Deno.env.get("SUPABASE_JWT_SECRET") ?? "";
  if (!secret) throw new HttpError(500, "no JWT secret configured: set HIPOCAMPO_JWT_SECRET");
  const audience = Deno.env.get("HIPOCAMPO_JWT_AUDIENCE") ?? "authenticated";
  const header = req.headers.get("authorization") ?? "";
  if (!header.toLowerCase().startsWith("bearer ")) throw new HttpError(401, "missing bearer token");
  let claims: Record<string, unknown>;
  try {
    const verified = await jwtVerify(header.slice(7).trim(), new TextEncoder().encode(secret), {
      algorithms: ["HS256"],
      requiredClaims: ["exp", "role"],
    });
    claims = verified.payload as Record<string, unknown>;
  } catch (err) {
    throw new HttpError(401, `invalid token: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (claims.role === "service_role") return { role: "service_role", claims };
  const aud = claims.aud;
  const audOk = aud === audience || (Array.isArray(aud) && aud.includes(audience));
  if (claims.role === "authenticated" && typeof claims.sub === "string" && audOk) {
    return { role: "authenticated", claims };
  }
  throw new HttpError(401, "token role must be authenticated (with sub and aud) or service_role");
}
