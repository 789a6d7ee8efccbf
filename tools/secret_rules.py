"""detect-secrets' token rules as the database's credential rules (issue 57 §6).

The database checks every write of a knowledge base for credentials
(``hipocampo_private._secret_rules``, read by ``_credential_found``), with the rules of the
scanner the Python client runs: detect-secrets' plugins that recognise a token by its form (AWS,
GitHub, GitLab, Slack, Stripe, OpenAI, JWT, private keys, basic auth in URLs, …). Its entropy
rules (which flag ordinary words of prose), its keyword rule (code, not a pattern: the database has
``forbidden_sources.credential_patterns`` and its own phrases for that) and its public-IP rule (an
address is not a credential) are left out, as in ``hipocampo.ingest.forbidden``.

``python -m tools.secret_rules`` prints the SQL ``values`` rows of ``_secret_rules`` from the
installed detect-secrets; ``--check`` exits 1 when ``supabase/schemas/03_quarantine.sql`` holds
other rows (``tests/sql/test_forbidden_rewrites.py`` runs the same comparison).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "supabase" / "schemas" / "03_quarantine.sql"
BEGIN = "-- detect-secrets rules: begin (python -m tools.secret_rules)"
END = "-- detect-secrets rules: end"
# (Artifactory's rule takes all-caps words such as "APARTAMENTO" for a key; the database has it,
# with a digit required, among its own rules)
LEFT_OUT = {
    "ArtifactoryDetector",
    "Base64HighEntropyString",
    "HexHighEntropyString",
    "IPPublicDetector",
    "KeywordDetector",
}


def to_postgres(pattern: str) -> str:
    """A Python regular expression of these rules as PostgreSQL's (ARE) reads it the same: a
    hyphen written after a range in a class (``[A-Za-z0-9-_]``, a literal hyphen in Python, an
    invalid range in ARE) moves to the class's end; a repetition bound over ARE's 255
    (``{50,1024}``) becomes open (``{50,}``); the lookbehind "after a non-word character or the
    start" (``(?:(?<=\\W)|(?<=^))``) becomes that character or the start (``(?:^|\\W)``), which
    matches the same texts eighteen times faster in PostgreSQL. Classes, groups, lookahead and
    escaped punctuation read the same in both."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
        elif c == "[":
            j = i + 1
            body: list[str] = []
            hyphen = False
            while j < len(pattern) and (pattern[j] != "]" or j == i + 1):
                if pattern[j] == "\\":
                    body.append(pattern[j : j + 2])
                    j += 2
                    continue
                after_range = len(body) >= 3 and body[-2] == "-"
                if pattern[j] == "-" and after_range and pattern[j + 1] != "]":
                    hyphen = True
                else:
                    body.append(pattern[j])
                j += 1
            out.append("[" + "".join(body) + ("-" if hyphen else "") + "]")
            i = j + 1
        else:
            out.append(c)
            i += 1
    bounded = re.sub(r"\{(\d+),(\d+)\}", lambda m: m[0] if int(m[2]) <= 255 else "{" + m[1] + ",}", "".join(out))
    return bounded.replace("(?:(?<=\\W)|(?<=^))", "(?:^|\\W)")


def denylist() -> list[tuple[str, re.Pattern[str]]]:
    """``(plugin name, Python pattern)`` for every denylist pattern of detect-secrets' plugins but
    the ones left out, in the plugins' and their patterns' order."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    found: list[tuple[str, re.Pattern[str]]] = []
    plugins: list[Any] = list(get_mapping_from_secret_type_to_class().values())
    for plugin in sorted(plugins, key=lambda p: str(p.__name__)):
        if plugin.__name__ in LEFT_OUT:
            continue
        patterns: list[re.Pattern[str]] = list(plugin().denylist)
        found += [(plugin.__name__, pattern) for pattern in patterns]
    return found


def rules() -> list[tuple[str, str, bool]]:
    """``(plugin name, pattern, ignore case)`` for every pattern of :func:`denylist`, each as
    PostgreSQL reads it (:func:`to_postgres`)."""
    return [(name, to_postgres(p.pattern), bool(p.flags & re.IGNORECASE)) for name, p in denylist()]


def sql_rows() -> str:
    """The rows as the schema file writes them: one ``(name, pattern, ignore_case)`` a line."""

    def literal(s: str) -> str:
        return "'" + s.replace("'", "''") + "'"

    lines = [f"        ({literal(n)}, {literal(p)}, {'true' if i else 'false'})" for n, p, i in rules()]
    return ",\n".join(lines)


def in_schema() -> str:
    text = SCHEMA.read_text()
    start = text.index(BEGIN) + len(BEGIN) + 1
    return text[start : text.index(END, start)].rstrip("\n").removesuffix("\n    ) as r (name, pattern, ignore_case)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the schema holds other rows")
    args = parser.parse_args()
    if args.check:
        same = sql_rows() in SCHEMA.read_text()
        print("the schema holds detect-secrets' rules" if same else "the schema's rules differ: regenerate them")
        return 0 if same else 1
    print(sql_rows())
    return 0


if __name__ == "__main__":
    sys.exit(main())
