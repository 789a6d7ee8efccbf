// The path a Supabase web or mobile app takes (issue 20 §2): @supabase/supabase-js invoking
// hipocampo's edge functions as a signed-in user. Run by tests/test_supabase_clients.py:
//   deno run --allow-net --allow-env tests/deno/supabase_js_client.ts
// with SUPABASE_URL, SUPABASE_ANON_KEY, USER_JWT, BODY (the search request, JSON) and ASK (the ask
// request) set, and optionally ASK_STREAM (a streamed ask request); prints one JSON line:
// {"search": …, "lookup": …, "ask": …, "streamed": the event stream's text or null, "error": …}.
import { createClient } from "npm:@supabase/supabase-js@2.119.1";

const supabase = createClient(
  Deno.env.get("SUPABASE_URL")!,
  Deno.env.get("SUPABASE_ANON_KEY")!,
  {
    global: {
      headers: { Authorization: `Bearer ${Deno.env.get("USER_JWT")}` },
    },
    auth: { persistSession: false, autoRefreshToken: false },
  },
);
const search = await supabase.functions.invoke("search", {
  body: JSON.parse(Deno.env.get("BODY")!),
});
const lookup = await supabase.functions.invoke("memory/lookup", {
  body: { key: "prefs.short_answers" },
});
const ask = await supabase.functions.invoke("ask", {
  body: JSON.parse(Deno.env.get("ASK")!),
});
// A streamed ask (issue 59 §4; ASK_STREAM, optional): supabase-js hands an event stream over as the
// Response (or its text); its Server-Sent Events are printed as they came.
let streamed: string | null = null;
if (Deno.env.get("ASK_STREAM")) {
  const reply = await supabase.functions.invoke("ask", { body: JSON.parse(Deno.env.get("ASK_STREAM")!) });
  const data = reply.data as unknown;
  streamed = data instanceof Response || data instanceof Blob ? await data.text() : String(data);
}
// A refused call: the function's JSON error reaches the app as FunctionsHttpError with the response.
const refused = await supabase.functions.invoke("memory/forget", {
  body: { memory_id: "not-a-uuid" },
});
let error: unknown = null;
if (refused.error) {
  const response = (refused.error as { context?: Response }).context;
  error = {
    name: refused.error.name,
    status: response?.status,
    body: await response?.json(),
  };
}
console.log(
  JSON.stringify({
    search: search.data,
    searchError: search.error?.message ?? null,
    lookup: lookup.data,
    ask: ask.data,
    streamed,
    error,
  }),
);
