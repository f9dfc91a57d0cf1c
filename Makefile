# gensolver — the two commands: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed
LOAD_ROUNDS ?= 1

.PHONY: demo test test-load test-slow lint bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@echo "first run: installing gensolver and every extra into $(VENV) (about 1 GB; a few minutes)"
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --progress-bar on -e ".[all]"
	touch $(STAMP)

# the market's story in under a minute (the solver table: `gensolver bench smoke`)
demo: $(STAMP)
	$(VENV)/bin/gensolver demo --out demo-out

# lint first (ruff, mypy, then lint-imports for the layers of docs/contributing.md: about 15 s on
# 2 cores), then every test (--dist loadgroup: the
# tests marked xdist_group("slurm") share one worker, and so one local Slurm).
# The tests write bytecode even where PYTHONDONTWRITEBYTECODE is set: the package is compiled
# once per checkout, not again by each `gensolver` process the tests start.
TEST_ENV = env -u PYTHONDONTWRITEBYTECODE
test: lint
	$(TEST_ENV) $(PY) -m pytest -n 2 --dist loadgroup -q

# the tests that run real processes on a plan's clock, LOAD_ROUNDS times (default 1), while every core runs a busy loop
# (stress-ng when installed, else Python loops): a test that races wall time fails here
test-load: $(STAMP)
	$(TEST_ENV) PY=$(PY) scripts/test_under_load.sh $(LOAD_ROUNDS) -n 2 --dist loadgroup

lint: $(STAMP)
	$(VENV)/bin/ruff check gensolver tests benchmarks scripts
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

test-slow: $(STAMP)
	$(TEST_ENV) $(PY) -m pytest -n 2 -q -m slow

# quick versions of every benchmark (see benchmarks/README.md for the full runs)
bench: $(STAMP)
	$(PY) benchmarks/bench_foundation.py --quick
	$(PY) benchmarks/bench_anytime.py --quick
	$(PY) benchmarks/bench_vcg.py --quick
	$(PY) benchmarks/bench_suites.py --quick
	$(PY) benchmarks/bench_sim_rounds.py
	$(PY) benchmarks/bench_sim_batches.py --batches 20

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache
