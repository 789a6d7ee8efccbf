// The path a Supabase web or mobile app takes (issue 20 §2): @supabase/supabase-js invoking
// hipocampo's edge functions as a signed-in user. Run by tests/test_supabase_clients.py:
//   deno run --allow-net --allow-env tests/deno/supabase_js_client.ts
// with SUPABASE_URL, SUPABASE_ANON_KEY, USER_JWT, BODY (the search request, JSON) and ASK (the ask
// request) set; prints one JSON line: {"search": …, "lookup": …, "ask": …, "error": …}.
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
    error,
  }),
);
