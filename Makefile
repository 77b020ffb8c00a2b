# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
# Every step is guarded by a stamp file, so a second run is fast and quiet.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
PEERS := .peers
STAMP := $(VENV)/.stamp-install
PEER_STAMP := $(PEERS)/.stamp-npm
SYS_STAMP := $(VENV)/.stamp-system
# Every Python package, pinned with hashes (`make lock` writes it from pyproject.toml); npm peers: package-lock.json.
LOCK := requirements/test.lock
CONFIG ?= config/default.yaml
PYTEST_ARGS ?=

.PHONY: run test lint setup peers system clean bench lock lock-upgrade conformance

run: $(STAMP) $(SYS_STAMP)
	@$(VENV)/bin/ava-console --config $(CONFIG)

test: $(STAMP) $(PEER_STAMP) $(SYS_STAMP)
	@$(VENV)/bin/ruff check --quiet engine console tests bench
	@$(VENV)/bin/ruff format --check --quiet engine console tests bench || { echo "run: $(VENV)/bin/ruff format engine console tests bench"; exit 1; }
	@$(VENV)/bin/lint-imports --no-cache --no-logo >$(VENV)/lint-imports.log || { cat $(VENV)/lint-imports.log; exit 1; }
	@$(VENV)/bin/mypy --no-error-summary
	@$(VENV)/bin/deptry engine console >$(VENV)/deptry.log 2>&1 || { cat $(VENV)/deptry.log; exit 1; }
	@site=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir $$site; rc=$$?; rm -rf $$site; exit $$rc
	@$(VENV)/bin/pytest -n 3 --dist worksteal -q --durations=25 $(PYTEST_ARGS)

# Every client scenario of the MCP conformance suite (make test runs one of each family: tests/conformance/).
conformance: $(STAMP) $(PEER_STAMP)
	@AVA_CONFORMANCE_CLIENT=all $(VENV)/bin/pytest -q -s tests/conformance

lint: $(STAMP)
	@$(VENV)/bin/ruff check engine console tests bench
	@$(VENV)/bin/ruff format --check engine console tests bench
	@$(VENV)/bin/lint-imports --no-cache --no-logo
	@$(VENV)/bin/mypy
	@$(VENV)/bin/deptry engine console

setup: $(STAMP) $(PEER_STAMP) $(SYS_STAMP)

$(VENV)/bin/python:
	@python3 -m venv $(VENV)
	@$(PIP) install --upgrade pip >/dev/null 2>&1 || true

# Exactly the locked versions (hashes checked), then the project itself on top with no dependency resolution;
# `pip check` fails when pyproject.toml asks for something the lock lacks (then run `make lock`).
$(STAMP): pyproject.toml $(LOCK) | $(VENV)/bin/python
	@echo "setting up .venv (one time)…"
	@{ $(PIP) install --require-hashes -r $(LOCK) && $(PIP) install --no-deps --no-build-isolation -e . \
	   && $(PIP) check; } > $(VENV)/install.log 2>&1 \
	   || { tail -40 $(VENV)/install.log; echo "if pyproject.toml changed: make lock"; exit 1; }
	@$(PY) -c "import engine, console, mcp, textual"
	@touch $@

# Re-resolve the lock after editing dependencies in pyproject.toml, keeping every pin that still fits;
# `make lock-upgrade` moves every package to its newest allowed version. Commit requirements/test.lock.
lock: | $(VENV)/bin/python
	@$(PIP) install uv
	@$(VENV)/bin/uv pip compile --quiet pyproject.toml requirements/build.in --extra test --universal \
	   --generate-hashes --python-version 3.11 -o $(LOCK) $(LOCK_ARGS)

lock-upgrade: LOCK_ARGS := --upgrade
lock-upgrade: lock

# Test peers from npm, installed into a project-local folder (never global).
$(PEER_STAMP): tests/peers/package.json tests/peers/package-lock.json
	@echo "installing npm test peers into $(PEERS)/ (one time)…"
	@mkdir -p $(PEERS)
	@cp tests/peers/package.json tests/peers/package-lock.json $(PEERS)/
	@cd $(PEERS) && npm ci --no-audit --no-fund --loglevel=error > npm-install.log 2>&1 || { tail -40 npm-install.log; exit 1; }
	@touch $@

# System libraries: PortAudio (and a PulseAudio null sink for the audio tests), only what is missing, as root or
# through passwordless sudo. Under CI=true a package it cannot install stops the run.
$(SYS_STAMP): tests/peers/system-deps.sh | $(VENV)/bin/python
	@bash tests/peers/system-deps.sh
	@touch $@

# The benches run in their own venv: the locked test set plus the peer frameworks (the `bench` extra), so the
# peers' dependencies never change what the tests run on.
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.stamp-install

$(BENCH_STAMP): pyproject.toml $(LOCK)
	@echo "setting up $(BENCH_VENV) with the peer frameworks (one time)…"
	@python3 -m venv $(BENCH_VENV)
	@{ $(BENCH_VENV)/bin/pip install -q --upgrade pip \
	   && $(BENCH_VENV)/bin/pip install -q --require-hashes -r $(LOCK) \
	   && $(BENCH_VENV)/bin/pip install -q --no-build-isolation -e '.[bench]'; } > $(BENCH_VENV)/install.log 2>&1 \
	   || { tail -40 $(BENCH_VENV)/install.log; exit 1; }
	@touch $@

bench: $(BENCH_STAMP)
	@for b in bench/*.py; do echo "== $$b"; $(BENCH_VENV)/bin/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(PEERS) $(BENCH_VENV)
