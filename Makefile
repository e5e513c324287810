# The two commands: `make serve` starts Signoff on the embedded default (SQLite,
# in-process worker and event hub); `make test` runs the tests. Both create .venv on
# first use from the lock files in requirements/ (every package pinned, with hashes):
# `make serve` installs what serving needs, `make test` (and lint, typecheck) adds the
# test tools. `make lock` regenerates the lock files after pyproject.toml changes.
# `make docs` builds the documentation site (MkDocs, from docs/) into site/.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --quiet --disable-pip-version-check
# Every lock is resolved for any platform on Python 3.11+ and carries the hashes of
# every file of every release it names.
UV_COMPILE := .venv-lock/bin/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes
UV_VERSION := 0.13.9

.PHONY: serve test test-deps lint typecheck docs docs-copies check lock clean client-models

# Serving: pip and the build backend, then the locked dependencies, then Signoff itself
# (editable, without resolving anything more).
$(BIN)/signoff: requirements/build.txt requirements/serve.txt pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --require-hashes -r requirements/build.txt
	$(PIP) install --require-hashes -r requirements/serve.txt
	$(PIP) install --no-deps --no-build-isolation -e .
	touch $@

# The test tools (pytest, ruff, mypy, Playwright's client, ...) on top of serving's, the
# documentation site's (MkDocs: the suite builds the site too), and the agent side's: the
# signoff-client package (clients/python, editable) with its MCP server and the agent
# frameworks the recipes in examples/agents use.
$(VENV)/.test-tools: $(BIN)/signoff requirements/test.txt requirements/docs.txt \
		requirements/agents.txt clients/python/pyproject.toml
	$(PIP) install --require-hashes -r requirements/test.txt
	$(PIP) install --require-hashes -r requirements/docs.txt
	$(PIP) install --require-hashes -r requirements/agents.txt
	$(PIP) install --no-deps --no-build-isolation -e clients/python
	@# The agents' package was named signoff-client before: a .venv made then keeps it,
	@# with its signoff-mcp command, unless it goes.
	$(PIP) uninstall --yes signoff-client 2>/dev/null || true
	touch $@

# The OpenAI Agents SDK recipe's venv (examples/agents/openai_agents): openai-agents pins an
# older websockets than Signoff serves with, so it gets a venv of its own from its own
# hashed lock, with signoff-client installed into it (its dependencies are in that lock).
# After .venv's (order only): both install clients/python editable, which writes its
# egg-info in the tree, so under `make -j` they must not run at once.
.venv-openai-agents/.installed: requirements/build.txt requirements/openai-agents.txt \
		clients/python/pyproject.toml | $(VENV)/.test-tools
	test -d .venv-openai-agents || $(PYTHON) -m venv .venv-openai-agents
	.venv-openai-agents/bin/python -m pip --quiet --disable-pip-version-check install \
		--require-hashes -r requirements/build.txt
	.venv-openai-agents/bin/python -m pip --quiet --disable-pip-version-check install \
		--require-hashes -r requirements/openai-agents.txt
	.venv-openai-agents/bin/python -m pip --quiet --disable-pip-version-check install \
		--no-deps --no-build-isolation -e clients/python
	touch $@

# The Node packages the tests run, each folder installed from its package-lock.json with
# npm ci (tests/oidc_provider: the OpenID provider the sign-in tests use;
# tests/graphql_clients: graphql-http's audit and graphql-sse's client; clients/typescript:
# the TypeScript client, run under Node by tests/client/test_typescript.py;
# tests/axe: axe-core, which the console's accessibility tests put into pages;
# examples/agents/vercel_ai: the Vercel AI SDK recipe, which links the TypeScript client
# as a file: dependency, so that folder's own packages come first). Without npm the
# recipe says what to install and the tests that need the folder skip (fail under CI).
NODE_PACKAGES := tests/oidc_provider tests/graphql_clients tests/axe clients/typescript examples/agents/vercel_ai
NODE_STAMPS := $(NODE_PACKAGES:%=%/node_modules/.installed)

examples/agents/vercel_ai/node_modules/.installed: clients/typescript/node_modules/.installed

%/node_modules/.installed: %/package.json %/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		echo "make: npm ci in $*"; \
		(cd $* && npm ci --no-audit --no-fund --loglevel=error) && mkdir -p $(@D) && touch $@; \
	else \
		echo "make test: no npm, so the tests that need $* skip: install Node.js 18 or later and npm (apt-get install nodejs npm)"; \
	fi

# Chromium is a system package the page tests drive; without it they skip (fail under CI).
CHROMIUM ?= $(or $(SIGNOFF_TEST_CHROMIUM),$(shell command -v chromium 2>/dev/null))

serve: $(BIN)/signoff
	$(BIN)/signoff serve

# The tests run in TEST_WORKERS pytest-xdist processes (each its own databases, Redis
# prefix and ports; `make test TEST_WORKERS=0` runs them in this one), handed out as
# workers come free. Most tests wait on sockets and child processes, so a 2-core machine
# keeps more workers than cores busy: on SQLite 4 and 3 take about as long, 6
# longer (the cores are then the limit). On PostgreSQL 3, as each worker and its servers
# hold up to ~25 connections and PostgreSQL allows 100 by default. The servers and
# commands the tests start are forks of a warm process (tests/zygote.py).
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: without it every worker
# and every process it starts compiles Signoff and rewrites each test module's asserts
# again, which took twice as long to collect the suite.
# pytest prints a line of dots per batch of tests with the share done; PYTEST_ARGS adds
# to pytest's own (`-x`, `-k NAME`, a file, ...).
TEST_WORKERS ?= $(if $(SIGNOFF_TEST_DATABASE_URL),3,4)

# Everything the tests install from the project's own files (`make test` does it first).
test-deps: $(VENV)/.test-tools .venv-openai-agents/.installed $(NODE_STAMPS)

test: test-deps
	@if [ -z "$(CHROMIUM)" ]; then \
		echo "make test: no Chromium, so the page tests skip: install it (apt-get install chromium)"; \
	fi
	@if [ -z "$$SIGNOFF_TEST_DATABASE_URL" ]; then \
		echo "make test: SQLite only, $(TEST_WORKERS) workers: about 4 min on 2 cores, longer when other work shares them (set SIGNOFF_TEST_DATABASE_URL and SIGNOFF_TEST_REDIS_URL for PostgreSQL and Redis)"; \
	else \
		echo "make test: PostgreSQL at $$SIGNOFF_TEST_DATABASE_URL, Redis at $${SIGNOFF_TEST_REDIS_URL:-none}, $(TEST_WORKERS) workers: about 3 min on 2 cores (the tests checked once run on SQLite), longer when other work shares them"; \
	fi
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

lint: $(VENV)/.test-tools
	$(BIN)/ruff check signoff tests clients tools $(wildcard bench) $(wildcard examples)
	$(BIN)/ruff format --check signoff tests clients tools $(wildcard bench) $(wildcard examples)

# The OpenAI Agents SDK recipe is checked against its own venv's packages.
typecheck: $(VENV)/.test-tools .venv-openai-agents/.installed
	$(BIN)/mypy signoff tools $(wildcard bench) $(wildcard examples)
	$(BIN)/mypy --python-executable .venv-openai-agents/bin/python \
		examples/agents/openai_agents/agent.py
	$(BIN)/mypy clients/python/signoff_client

# signoff-client's typed layer (clients/python/signoff_client/generated/) and the
# typed_client example's, generated by ariadne-codegen from schema.graphql and their
# operations. ariadne-codegen pins
# an older graphql-core and ruff than Signoff, so it runs in a venv of its own, from its
# own hashed lock. CI regenerates it and fails if the result differs from what is checked in.
CODEGEN := .venv-codegen/bin
$(CODEGEN)/ariadne-codegen: requirements/codegen.txt
	test -d .venv-codegen || $(PYTHON) -m venv .venv-codegen
	$(CODEGEN)/python -m pip --quiet --disable-pip-version-check install --require-hashes \
		-r requirements/codegen.txt
	touch $@

client-models: $(CODEGEN)/ariadne-codegen
	cd clients/python && ../../$(CODEGEN)/ariadne-codegen --config codegen.toml >/dev/null
	cd examples/typed_client && ../../$(CODEGEN)/ariadne-codegen --config codegen.toml >/dev/null

# The documentation site, built offline with --strict: a broken link or anchor, or a page
# left out of the nav, fails the build. NO_MKDOCS_2_WARNING quiets the Material theme's
# notice about MkDocs 2, which is not a warning about these pages.
# Pages that show a README section or BENCHMARKS.md hold a copy of it, so they read the
# same on GitHub as on the site: `make docs-copies` copies them again, `make docs` fails
# on a stale one.
docs: $(VENV)/.test-tools
	$(BIN)/python tools/copy_docs.py --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

docs-copies: $(VENV)/.test-tools
	$(BIN)/python tools/copy_docs.py

check: lint typecheck docs test

# Regenerate requirements/*.txt from requirements/build.in, pyproject.toml and
# requirements/docs.in (uv, in a venv of its own). Pins stay where they are unless pyproject.toml asks for another
# release; `make lock LOCK_ARGS=--upgrade` moves every unpinned transitive dependency
# to its newest release.
lock:
	test -x .venv-lock/bin/uv || { $(PYTHON) -m venv .venv-lock && \
		.venv-lock/bin/python -m pip install --quiet uv==$(UV_VERSION); }
	$(UV_COMPILE) $(LOCK_ARGS) requirements/build.in -o requirements/build.txt
	$(UV_COMPILE) $(LOCK_ARGS) pyproject.toml -c requirements/build.txt -o requirements/serve.txt
	$(UV_COMPILE) $(LOCK_ARGS) pyproject.toml --extra test -c requirements/serve.txt \
		-o requirements/test.txt
	$(UV_COMPILE) $(LOCK_ARGS) requirements/docs.in -c requirements/test.txt -o requirements/docs.txt
	$(UV_COMPILE) $(LOCK_ARGS) requirements/agents.in -c requirements/test.txt -c requirements/docs.txt \
		-o requirements/agents.txt
	$(UV_COMPILE) $(LOCK_ARGS) requirements/openai-agents.in clients/python/pyproject.toml \
		-o requirements/openai-agents.txt
	$(UV_COMPILE) $(LOCK_ARGS) requirements/codegen.in -o requirements/codegen.txt

clean:
	rm -rf $(VENV) .venv-lock .venv-codegen .venv-openai-agents *.egg-info .pytest_cache .mypy_cache .ruff_cache site
