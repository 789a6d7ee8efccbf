# hipocampo: two commands on a fresh machine.
#   make demo  - start the embedded Postgres, ingest FaQuAD, search it, print the evaluation summary
#   make test  - lint (ruff, sqlfluff, mypy --strict, deno check/lint/fmt) and the whole pytest suite against the
#                real embedded Postgres (edge functions served by real Deno, the pgTAP suite by pg_prove)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Deno for the edge functions (supabase/functions): the npm package, pinned, into .deno/; its npm:
# imports (postgres.js, jose) are cached in .deno/cache.
DENO_VERSION := 2.9.6
DENO := .deno/node_modules/.bin/deno
PGTAP := .pgtap/stamp
PGTAP_PACKAGES := postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl
export DENO_DIR := $(CURDIR)/.deno/cache
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: venv demo test lint pytest bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

$(DENO):
	npm install --prefix .deno --no-audit --no-fund --loglevel=error deno@$(DENO_VERSION)

# pgTAP (SQL) and pg_prove (Perl) for supabase/tests/database: Debian's packages, downloaded and
# unpacked into .pgtap/ without installing them (no root); tests/sql/test_pgtap.py runs them.
$(PGTAP):
	rm -rf .pgtap && mkdir -p .pgtap/debs
	cd .pgtap/debs && apt-get download $(PGTAP_PACKAGES)
	for deb in .pgtap/debs/*.deb; do dpkg-deb -x "$$deb" .pgtap; done
	touch $(PGTAP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/hipocampo demo

lint: $(STAMP) $(DENO)
	$(BIN)/ruff check py_client tests benchmarks
	$(BIN)/ruff format --check py_client tests benchmarks
	$(BIN)/sqlfluff lint supabase/migrations supabase/tests
	$(BIN)/mypy --strict --ignore-missing-imports py_client/hipocampo
	$(DENO) fmt --check supabase/functions
	$(DENO) lint supabase/functions
	$(DENO) check supabase/functions/*/index.ts

pytest: $(STAMP) $(DENO) $(PGTAP)
	$(BIN)/python -m pytest -q

test: lint pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/retrieval.py
	$(BIN)/python benchmarks/latency.py

clean:
	rm -rf $(VENV) .hipocampo .deno .pgtap
