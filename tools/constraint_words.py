"""The constraints' words for the edge functions (issue 58 §4).

``python -m tools.constraint_words`` writes ``supabase/functions/_shared/constraints.json`` from
``hipocampo.constraints.CONSTRAINTS`` (the Python client's), so that an edge function says a
violated constraint in the same words (``_shared/constraints.ts``); ``--check`` exits 1 when the
file differs (``tests/sql/test_constraint_words.py`` compares them too).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "supabase" / "functions" / "_shared" / "constraints.json"


def text() -> str:
    """The JSON file's text: the words by constraint name, sorted, as deno fmt writes JSON."""
    sys.path.insert(0, str(ROOT / "py_client"))
    from hipocampo.constraints import CONSTRAINTS

    return json.dumps(dict(sorted(CONSTRAINTS.items())), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs")
    args = parser.parse_args()
    if args.check:
        same = TARGET.exists() and TARGET.read_text() == text()
        print("constraints.json holds the client's words" if same else "constraints.json differs: regenerate it")
        return 0 if same else 1
    TARGET.write_text(text())
    print(f"written {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
