/**
 * The `openai` SDK client of a rag config: OpenAI (or an OpenAI-compatible server) or Azure OpenAI,
 * its key, endpoint and base URL read from the environment variables the config NAMES
 * (`api_key_secret`, `endpoint_secret`, `base_url_secret`: secrets are never stored), 3 retries,
 * 30 s timeout. Used for embeddings (embed.ts) and chat answers (ask).
 */
import OpenAI, { AzureOpenAI } from "npm:openai@7.55.0";

/** What an Azure client needs besides the key and endpoint. */
export interface AzureTarget {
  apiVersion: string;
  /** Fixes the deployment in the client; without it the request's `model` names it. */
  deployment?: string;
}

/** The value of the environment variable a config key names, if set and not empty. */
export function secret(name: unknown): string | undefined {
  return (typeof name === "string" && name ? Deno.env.get(name) : undefined) || undefined;
}

/** An OpenAI client for `cfg` (the effective rag config); Azure when `azure` is given. */
export function openaiClient(cfg: Record<string, unknown>, azure: AzureTarget | null): OpenAI {
  const apiKey = secret(cfg.api_key_secret) ?? "missing-key";
  return azure
    ? new AzureOpenAI({
      apiKey,
      endpoint: secret(cfg.endpoint_secret) ?? "",
      apiVersion: azure.apiVersion,
      deployment: azure.deployment,
      maxRetries: 3,
      timeout: 30_000,
    })
    : new OpenAI({ apiKey, baseURL: secret(cfg.base_url_secret), maxRetries: 3, timeout: 30_000 });
}
