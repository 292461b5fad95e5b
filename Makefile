# Orange — developer entry points.  `make demo` and `make test` work on a fresh clone
# with Python 3.11+, git and tmux installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test test-agents check demo bench clean $(VENV)

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Orange needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# `make .venv`: the virtual environment with Orange and its test tools installed.
$(VENV): $(STAMP)

check: $(STAMP)
	$(BIN)/ruff check orange tests bench
	$(BIN)/ruff format --check orange tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

# The property tests' CI profile (CONTRIBUTING.md), whatever profile the shell names.
test: check
	HYPOTHESIS_PROFILE=ci $(BIN)/pytest -n 2

# The real agent programs, at the versions pinned in tests/agents/programs.py, run by
# Orange against a scripted model on 127.0.0.1 (tests/agents/README.md).  The first
# run downloads them from the npm registry into a cache outside the clone.
test-agents: $(STAMP)
	$(BIN)/python -m tests.agents.programs
	$(BIN)/pytest -n 2 tests/agents

# Kept: its last line says how to look at its tasks in the dashboard (`orange`).
demo: $(STAMP)
	$(BIN)/orange demo --keep

bench: $(STAMP)
	$(BIN)/python bench/store_bench.py
	$(BIN)/python bench/monitor_bench.py
	$(BIN)/python bench/startup_bench.py
	$(BIN)/python bench/dashboard_bench.py
	$(BIN)/python bench/conflicts_bench.py

clean:
	rm -rf $(VENV) build *.egg-info
