# hipocampo: two commands on a fresh machine.
#   make demo  - start the embedded Postgres, ingest FaQuAD, search it, print the evaluation summary
#   make test  - lint (ruff, sqlfluff, mypy --strict) and the whole pytest suite against the real embedded Postgres
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: venv demo test lint pytest bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/hipocampo demo

lint: $(STAMP)
	$(BIN)/ruff check py_client tests benchmarks
	$(BIN)/ruff format --check py_client tests benchmarks
	$(BIN)/sqlfluff lint supabase/migrations
	$(BIN)/mypy --strict --ignore-missing-imports py_client/hipocampo

pytest: $(STAMP)
	$(BIN)/python -m pytest -q

test: lint pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/retrieval.py
	$(BIN)/python benchmarks/latency.py

clean:
	rm -rf $(VENV) .hipocampo
