# Aula: make help lists the targets.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
INDEX   ?= data/index
TEST_WORKERS ?= 2
export HF_HUB_OFFLINE := 1
export AULA_INDEX_DIR ?= $(INDEX)

.DEFAULT_GOAL := help
.PHONY: help install demo serve test test-fast check lint bench browser-deps db-deps media-deps

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(BIN)/aula: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --no-cache-dir torch==2.13.0
	$(BIN)/pip install -q --no-cache-dir -e '.[dev]'
	@touch $@

install: $(BIN)/aula ## set up .venv/ with the project and its dependencies

browser-deps: ## Debian's chromium for the page tests (needs root)
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

db-deps: ## PostgreSQL binaries for the database tests (needs root; they start their own server)
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq postgresql >/dev/null)

media-deps: ## espeak-ng, the speech of the recorded-lecture tests and bench (needs root)
	@command -v espeak-ng >/dev/null || (apt-get update -qq && apt-get install -y -qq espeak-ng >/dev/null)

demo: install ## index the sample lectures, search, and answer a question with the embedded LLM
	$(BIN)/aula ingest samples/lectures
	$(BIN)/aula search "Qual função de ativação é mais usada hoje e por quê?" -k 3
	$(BIN)/aula ask "Qual função de ativação é mais usada hoje e por quê?" -k 4

serve: install ## run the service and the student page on http://127.0.0.1:8000
	$(BIN)/aula serve

test: install browser-deps db-deps media-deps ## run every test, as CI does (TEST_WORKERS processes)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

test-fast: install ## the tests without the slow ones
	$(BIN)/python -m pytest -q -m "not slow"

lint: install ## ruff and mypy
	$(BIN)/ruff check app answer corpus eval tests bench
	$(BIN)/mypy

check: lint test ## what CI runs

bench: install ## print the benchmark figures (medians over runs)
	$(BIN)/python -m bench
