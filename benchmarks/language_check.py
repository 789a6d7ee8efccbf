"""Text that reads as language, in any language (issue 61 §5): rag.language_min_word_order chosen
leave-one-language-out.

Usage:  .venv/bin/python benchmarks/language_check.py [--words 300 500 1000] [--write]

Real text in nine languages: Portuguese (FaQuAD's documents), English (SciFact's abstracts),
Spanish, French, German and Italian (the Debian Reference's paragraphs, packages
debian-reference-{es,fr,de,it}), Dutch, Polish and Russian (the section-1 manual pages of
manpages-{nl,pl,ru}), fetched with ``apt-get download`` into .cache/language-docs/ (Debian's
registry only), plus tests/data/languages/. Each language's text is cut into pieces of --words
words. Against each piece: the same words shuffled; words drawn from the language's whole
vocabulary at its frequencies and uniformly (word salad of a knowledge base's own words); OCR
garbage (tokens of 1-7 characters drawn from the letters and marks OCR confuses). Every piece is
measured by the database's own ``hipocampo_private._text_measures`` (the local embedded server).

For each language held out, the threshold is chosen on the other eight: the lowest 0.1 step
under which at least 99.5 % of their random orders of 500 words fall (a real text kept out of
answers costs more than a babble ranked below the language); on the held-out language, the share
of its real pieces kept and of its random orders caught is reported at each length, with the
curve over all nine. The default is the highest of the folds' thresholds.
"""

from __future__ import annotations

import argparse
import glob
import math
import random
import re
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import psycopg

from hipocampo import db as hdb
from hipocampo.config import repo_root
from hipocampo.evaluation.datasets import load_beir
from report import write_section

BEGIN, END = "<!-- language-check:begin -->", "<!-- language-check:end -->"
CACHE = repo_root() / ".cache" / "language-docs"
PACKAGES = [f"debian-reference-{x}" for x in ("es", "fr", "de", "it")] + [f"manpages-{x}" for x in ("nl", "pl", "ru")]
KINDS = ("shuffled", "salad", "salad_types", "ocr")
OCR_MARKS = "Il1|;:.,'`~rnmvw0Oeaoc-_=ii!"
CAUGHT = 0.995


def _fetch() -> Path:
    """The Debian packages unpacked under .cache/language-docs/x (once)."""
    root = CACHE / "x"
    if not root.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", *PACKAGES], cwd=CACHE, check=True, capture_output=True)
        for deb in CACHE.glob("*.deb"):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return root


def _html_text(lang: str, root: Path) -> str:
    from bs4 import BeautifulSoup

    out = []
    for f in sorted(glob.glob(str(root / f"usr/share/debian-reference/ch*.{lang}.html"))):
        soup = BeautifulSoup(Path(f).read_text(encoding="utf-8"), "html.parser")
        out += [" ".join(p.get_text(" ").split()) for p in soup.find_all("p")]
    return "\n".join(p for p in out if len(p.split()) > 15)


def _man_text(lang: str, root: Path, pages: int = 200) -> str:
    out = []
    for f in sorted(glob.glob(str(root / f"usr/share/man/{lang}/man1/*.gz")))[:pages]:
        env = {"MANWIDTH": "2000", "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"}
        run = subprocess.run(["man", "-l", "-Tutf8", f], capture_output=True, text=True, env=env)
        text = re.sub(r".\x08", "", run.stdout)
        out += [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if len(p.split()) > 15]
    return "\n".join(out)


def corpora() -> dict[str, str]:
    """{language: its real text}."""
    root = _fetch()
    faquad = load_beir("faquad")
    scifact = load_beir("scifact")
    texts = {
        "pt": "\n".join(t for _, t in faquad.corpus.values()),
        "en": "\n".join(t for _, t in list(scifact.corpus.values())[:1500]),
    }
    for lang in ("es", "fr", "de", "it"):
        own = (repo_root() / "tests" / "data" / "languages" / f"{lang}.txt").read_text(encoding="utf-8")
        texts[lang] = own + "\n" + _html_text(lang, root)
    for lang in ("nl", "pl", "ru"):
        texts[lang] = _man_text(lang, root)
    return texts


Conn = psycopg.Connection[Any]


def _words(conn: Conn, text: str) -> list[str]:
    row = conn.execute("select hipocampo_private._plain_words(%s)", (text,)).fetchone()
    return [w for w in (row[0] if row else "").split() if not w.isdigit()]


def _measure(conn: Conn, pieces: list[str]) -> list[float]:
    rows = conn.execute(
        "select (hipocampo_private._text_measures(u.x) ->> 'word_order')::float8"
        " from unnest(%s::text[]) with ordinality as u (x, n) order by u.n",
        (pieces,),
    ).fetchall()
    return [r[0] for r in rows]


def measure(conn: Conn, texts: dict[str, str], words: int, per_language: int = 40) -> dict[str, dict[str, list[float]]]:
    """{language: {"real" | "shuffled" | "salad" | "salad_types" | "ocr": word_order of each piece}}."""
    rnd = random.Random(words)
    out: dict[str, dict[str, list[float]]] = {}
    for lang, text in texts.items():
        ws = _words(conn, text)
        vocab = sorted(set(ws))
        pieces = [ws[i : i + words] for i in range(0, len(ws) - words + 1, words)][:per_language]
        kinds: dict[str, list[str]] = {"real": [], "shuffled": [], "salad": [], "salad_types": [], "ocr": []}
        for p in pieces:
            kinds["real"].append(" ".join(p))
            s = p[:]
            rnd.shuffle(s)
            kinds["shuffled"].append(" ".join(s))
            kinds["salad"].append(" ".join(rnd.choice(ws) for _ in p))
            kinds["salad_types"].append(" ".join(rnd.choice(vocab) for _ in p))
            kinds["ocr"].append(
                " ".join("".join(rnd.choice(OCR_MARKS) for _ in range(rnd.randint(1, 7))) for _ in range(2 * words))
            )
        out[lang] = {k: _measure(conn, v) for k, v in kinds.items()}
    return out


def fit(random_orders: list[float]) -> float:
    """The lowest 0.1 step under which at least CAUGHT of ``random_orders`` fall (a real text kept
    out of answers costs more than a babble ranked below the language, so the line sits as low as
    the babble allows)."""
    xs = sorted(random_orders)
    return float(math.ceil(xs[math.ceil(CAUGHT * len(xs)) - 1] * 10 + 1e-9) / 10)


def _share(xs: list[float], keep: bool, t: float) -> float:
    """The share of ``xs`` at or above ``t`` (keep) or under it (caught)."""
    return sum((x >= t) == keep for x in xs) / len(xs)


def _cost(conn: Conn, text: str) -> dict[int, float]:
    """Milliseconds to measure 1k, 10k and 100k words (median of 3)."""
    many = _words(conn, text) * 4
    cost = {}
    for n in (1_000, 10_000, 100_000):
        piece = " ".join(many[:n])
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            conn.execute("select hipocampo_private._text_measures(%s)", (piece,)).fetchone()
            runs.append((time.perf_counter() - t0) * 1000)
        cost[n] = statistics.median(runs)
    return cost


def report(by_len: dict[int, dict[str, dict[str, list[float]]]], fit_len: int, cost: dict[int, float]) -> list[str]:
    langs = list(by_len[fit_len])
    folds = {
        held: fit([x for lang in langs if lang != held for k in KINDS for x in by_len[fit_len][lang][k]])
        for held in langs
    }
    default = max(folds.values())
    lines = [
        BEGIN,
        "## Text that reads as language (benchmarks/language_check.py, issue 61 §5)",
        "",
        "`.venv/bin/python benchmarks/language_check.py --write`. `_text_measures`' word_order (standard",
        "deviations) of real text and of the same words in a random order, by the database itself. Each",
        f"language held out: the threshold fitted on the other eight (the lowest 0.1 step under which {CAUGHT:.1%}",
        f"of their random orders of {fit_len} words fall), then on the held-out language the share of its real",
        "pieces kept (read as language) and of its random orders caught (shuffled, word salad at the",
        "vocabulary's frequencies and uniform, OCR garbage), per piece length.",
        "",
        "| held out | threshold | words | pieces | real kept | shuffled caught | salad caught"
        " | uniform salad caught | OCR caught | real median | random max |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for held in langs:
        t = folds[held]
        for n, by_lang in by_len.items():
            m = by_lang[held]
            cells = [f"{_share(m[k], False, t):.3f}" for k in KINDS]
            lines.append(
                f"| {held} | {t:.1f} | {n} | {len(m['real'])} | {_share(m['real'], True, t):.3f} | "
                + " | ".join(cells)
                + f" | {statistics.median(m['real']):.1f} | {max(x for k in KINDS for x in m[k]):.1f} |"
            )
    lines += [
        "",
        "The curve over all nine languages (real pieces kept / random orders caught):",
        "",
        "| threshold | " + " | ".join(f"{n} words" for n in by_len) + " |",
        "|---|" + "---|" * len(by_len),
    ]

    def pooled(n: int, kinds: tuple[str, ...]) -> list[float]:
        return [x for lang in langs for k in kinds for x in by_len[n][lang][k]]

    for step in range(10, 61, 5):
        t = step / 10
        cells = [
            f"{_share(pooled(n, ('real',)), True, t):.3f} / {_share(pooled(n, KINDS), False, t):.3f}" for n in by_len
        ]
        lines.append(f"| {t:.1f} | " + " | ".join(cells) + " |")
    at_default = "; ".join(
        f"at {n} words {_share(pooled(n, ('real',)), True, default):.3f} of real pieces kept, "
        f"{_share(pooled(n, KINDS), False, default):.3f} of random orders caught"
        for n in by_len
    )
    lines += [
        "",
        f"Folds' thresholds: {', '.join(f'{k} {v:.1f}' for k, v in folds.items())}; the default "
        f"(`rag.language_min_word_order`) is their highest, {default:.1f}, with `rag.language_min_words` = 500"
        f" (shorter texts are not judged): {at_default}.",
        "",
        "Cost of measuring a document (once, when its chunks are written), median of 3: "
        + ", ".join(f"{n:,} words {ms:.0f} ms" for n, ms in cost.items())
        + " (linear: the words are rows, not an array subscripted in a loop).",
        END,
    ]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--words", type=int, nargs="+", default=[300, 500, 1000])
    ap.add_argument("--write", action="store_true", help="into docs/BENCHMARKS.md")
    args = ap.parse_args()
    texts = corpora()
    with psycopg.connect(hdb.ensure_database()) as conn:
        by_len = {n: measure(conn, texts, n) for n in args.words}
        cost = _cost(conn, texts["pt"])
    text = "\n".join(report(by_len, 500 if 500 in by_len else args.words[0], cost))
    print(text)
    if args.write:
        print("wrote", write_section(BEGIN, END, text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
