# The two commands: `make serve` starts Signoff on the embedded default (SQLite,
# in-process worker and event hub); `make test` runs the tests. Both create .venv on
# first use from the lock files in requirements/ (every package pinned, with hashes):
# `make serve` installs what serving needs, `make test` (and lint, typecheck) adds the
# test tools. `make lock` regenerates the lock files after pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --quiet --disable-pip-version-check
# Every lock is resolved for any platform on Python 3.11+ and carries the hashes of
# every file of every release it names.
UV_COMPILE := .venv-lock/bin/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes
UV_VERSION := 0.13.9

.PHONY: serve test lint typecheck check lock clean

# Serving: pip and the build backend, then the locked dependencies, then Signoff itself
# (editable, without resolving anything more).
$(BIN)/signoff: requirements/build.txt requirements/serve.txt pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --require-hashes -r requirements/build.txt
	$(PIP) install --require-hashes -r requirements/serve.txt
	$(PIP) install --no-deps --no-build-isolation -e .
	touch $@

# The test tools (pytest, ruff, mypy, Playwright's client, ...) on top of serving's.
$(VENV)/.test-tools: $(BIN)/signoff requirements/test.txt
	$(PIP) install --require-hashes -r requirements/test.txt
	touch $@

serve: $(BIN)/signoff
	$(BIN)/signoff serve

# The tests run in TEST_WORKERS pytest-xdist processes (each its own databases, Redis
# prefix and ports; `make test TEST_WORKERS=0` runs them in this one), handed out as
# workers come free. Most tests wait on sockets and child processes, so a 2-core machine
# keeps more workers than cores busy: 4 took 3 min 10 s where 3 took 5 min 16 s (SQLite,
# one after the other, with other work on the cores). On PostgreSQL 3, as each worker
# and its servers hold up to ~25 connections and PostgreSQL allows 100 by default.
# pytest prints a line of dots per batch of tests with the share done; PYTEST_ARGS adds
# to pytest's own (`-x`, `-k NAME`, a file, ...).
TEST_WORKERS ?= $(if $(SIGNOFF_TEST_DATABASE_URL),3,4)

test: $(VENV)/.test-tools
	@if [ -z "$$SIGNOFF_TEST_DATABASE_URL" ]; then \
		echo "make test: SQLite only, $(TEST_WORKERS) workers: about 3 min on 2 cores, longer when other work shares them (set SIGNOFF_TEST_DATABASE_URL and SIGNOFF_TEST_REDIS_URL for PostgreSQL and Redis)"; \
	else \
		echo "make test: PostgreSQL at $$SIGNOFF_TEST_DATABASE_URL, Redis at $${SIGNOFF_TEST_REDIS_URL:-none}, $(TEST_WORKERS) workers: about 4 min on 2 cores, longer when other work shares them"; \
	fi
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

lint: $(VENV)/.test-tools
	$(BIN)/ruff check signoff tests $(wildcard bench) $(wildcard examples)
	$(BIN)/ruff format --check signoff tests $(wildcard bench) $(wildcard examples)

typecheck: $(VENV)/.test-tools
	$(BIN)/mypy signoff $(wildcard examples)

check: lint typecheck test

# Regenerate requirements/*.txt from requirements/build.in and pyproject.toml (uv, in a
# venv of its own). Pins stay where they are unless pyproject.toml asks for another
# release; `make lock LOCK_ARGS=--upgrade` moves every unpinned transitive dependency
# to its newest release.
lock:
	test -x .venv-lock/bin/uv || { $(PYTHON) -m venv .venv-lock && \
		.venv-lock/bin/python -m pip install --quiet uv==$(UV_VERSION); }
	$(UV_COMPILE) $(LOCK_ARGS) requirements/build.in -o requirements/build.txt
	$(UV_COMPILE) $(LOCK_ARGS) pyproject.toml -c requirements/build.txt -o requirements/serve.txt
	$(UV_COMPILE) $(LOCK_ARGS) pyproject.toml --extra test -c requirements/serve.txt \
		-o requirements/test.txt

clean:
	rm -rf $(VENV) .venv-lock *.egg-info .pytest_cache .mypy_cache .ruff_cache
