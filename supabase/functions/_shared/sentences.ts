/**
 * A chunk's sentences as the answer gate reads them (rag.sentence_weight, docs/design.md
 * §answers): the port of the Python client's `hipocampo.ingest.chunking.split_sentences` and
 * `chunk_sentences`, so that the embed function stores the same sentence embeddings as
 * `hipocampo db embed-missing`. tests/test_edge_functions.py holds the two to the same output
 * on the shared datasets' passages.
 */

/** Sentence embeddings a chunk may carry (ingest_document's and set_chunk_sentences' limit). */
export const MAX_SENTENCES = 64;

// Whitespace as Python's `\s` and str.isspace() see it (JavaScript's `\s` lacks \x1c-\x1f and
// \x85 and has \ufeff, so the characters are listed).
const WS = "[\\t\\n\\v\\f\\r \\x1c-\\x1f\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";
// A sentence ends at . ! ? ; followed by whitespace and a capital, a digit or §, perhaps after
// an opening quote or bracket.
const SENTENCE_END = new RegExp(`(?<=[.!?;])${WS}+(?=["“(\\[]?[A-ZÁÉÍÓÚÂÊÔÃÕÇ0-9§])`, "u");
const LINES = /\n+/;
// Python's str.strip() and str.split(): whitespace as str.isspace() sees it.
const TRIM = new RegExp(`^${WS}+|${WS}+$`, "gu");
const WORDS = new RegExp(`${WS}+`, "u");

function strip(text: string): string {
  return text.replace(TRIM, "");
}

function words(text: string): number {
  return strip(text).split(WORDS).filter((w) => w).length;
}

/** The sentences of a text, paragraph by paragraph (split_sentences). */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(LINES)) {
    const para = strip(line);
    if (!para) continue;
    for (const piece of para.split(SENTENCE_END)) {
      const s = strip(piece);
      if (s) out.push(s);
    }
  }
  return out;
}

/**
 * The sentences whose embeddings the answer gate reads (chunk_sentences): a piece of fewer than
 * 3 words joined to the next (an abbreviation's split: "Art." before "1º …"), at most `limit`
 * (>= 1) of them, consecutive sentences joined in equal runs when there are more; `[text]` when
 * it has none.
 */
export function chunkSentences(text: string, limit = MAX_SENTENCES): string[] {
  let parts: string[] = [];
  for (const piece of splitSentences(text)) {
    if (parts.length && words(parts[parts.length - 1]) < 3) {
      parts[parts.length - 1] += " " + piece;
    } else {
      parts.push(piece);
    }
  }
  if (!parts.length) parts = [text];
  if (parts.length <= limit) return parts;
  const size = Math.ceil(parts.length / limit);
  const runs: string[] = [];
  for (let i = 0; i < parts.length; i += size) runs.push(parts.slice(i, i + size).join(" "));
  return runs;
}
