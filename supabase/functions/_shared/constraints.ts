// A violated constraint in words (issue 58 §4): the same words as the Python client's
// (py_client/hipocampo/constraints.py, written to constraints.json by `python -m tools.constraint_words`).
import words from "./constraints.json" with { type: "json" };

const WORDS: Record<string, string> = words;

// PostgreSQL's wording of a violation, wherever it sits in a message.
const VIOLATION =
  /(?:new row for relation "[^"]+" |duplicate key value |(?:insert or update|update or delete) on table "[^"]+" )?violates (?:check|unique|foreign key|exclusion) constraint "(\w+)"(?: on table "[^"]+")?/;

/** `message` with the constraint it names said in words; a message naming none comes back as it was. */
export function inWords(message: string): string {
  const found = VIOLATION.exec(message);
  const said = found ? WORDS[found[1]] : undefined;
  if (!found || said === undefined) return message;
  return message.slice(0, found.index) + said + message.slice(found.index + found[0].length);
}
