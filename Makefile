# The two commands: `make serve` starts Signoff on the embedded default (SQLite,
# in-process worker and event hub); `make test` runs the tests. Both create .venv
# from the pinned dependencies on first use.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: serve test lint typecheck check clean

$(BIN)/signoff: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

serve: $(BIN)/signoff
	$(BIN)/signoff serve

test: $(BIN)/signoff
	@if [ -z "$$SIGNOFF_TEST_DATABASE_URL" ]; then \
		echo "make test: SQLite only (set SIGNOFF_TEST_DATABASE_URL and SIGNOFF_TEST_REDIS_URL for PostgreSQL and Redis)"; \
	else \
		echo "make test: PostgreSQL at $$SIGNOFF_TEST_DATABASE_URL, Redis at $${SIGNOFF_TEST_REDIS_URL:-none}"; \
	fi
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(BIN)/signoff
	$(BIN)/ruff check signoff tests $(wildcard bench) $(wildcard examples)
	$(BIN)/ruff format --check signoff tests $(wildcard bench) $(wildcard examples)

typecheck: $(BIN)/signoff
	$(BIN)/mypy signoff $(wildcard examples)

check: lint typecheck test

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .mypy_cache .ruff_cache
