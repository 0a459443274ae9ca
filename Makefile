# Two commands: `make run` installs and starts the app; `make test` installs everything and runs every test.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8501

.PHONY: run test lint screenshots system-deps clean i18n

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.run-deps: requirements.txt requirements-ray.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt -r requirements-ray.txt
	touch $@

$(VENV)/.dev-deps: requirements.txt requirements-ray.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-dev.txt -r requirements-ray.txt
	touch $(VENV)/.run-deps $@

## run: install what the app needs and start it on http://localhost:$(PORT) (SQLite under ./data/)
run: $(VENV)/.run-deps
	mkdir -p data
	$(BIN)/streamlit run app.py --server.port $(PORT)

## system-deps: Debian packages the tests drive (Chromium for the browser tests)
system-deps:
	bash scripts/install-system-deps.sh

## test: install everything (browser included), check lint, format and types, and run every test
test: $(VENV)/.dev-deps system-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest

## screenshots: refresh the README's screenshots from the browser tests
screenshots: $(VENV)/.dev-deps system-deps
	UPDATE_SCREENSHOTS=1 $(BIN)/python -m pytest -m e2e -q

## i18n: extract the marked strings, update the Chinese catalogs (i18n/locale/zh) and compile them; see README
i18n: $(VENV)/.run-deps
	$(BIN)/python -m i18n.catalogs update
	$(BIN)/python -m i18n.catalogs check

## lint: ruff (lint and format) and mypy, the checks make test runs before the tests
lint: $(VENV)/.dev-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

## bench: client fidelity (probe vs handbook SDK loop vs aiperf), then the probe's send lag at 100 req/s; see docs/bench.md
BENCH_VENV := bench/.venv
.PHONY: bench
$(BENCH_VENV)/.deps: bench/requirements.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet -r bench/requirements.txt
	touch $@

bench: $(VENV)/.run-deps $(BENCH_VENV)/.deps
	$(BIN)/python bench/probe_fidelity.py
	$(BIN)/python bench/schedule_lag.py

## busy-e2e: the browser tests BUSY_RUNS (3) times in a row, every core kept busy; see docs/reliability.md
BUSY_RUNS ?= 3
.PHONY: busy-e2e
busy-e2e: $(VENV)/.dev-deps system-deps
	$(BIN)/python bench/busy_e2e.py --runs $(BUSY_RUNS)

## advise-speed: time advise() over every option of a full comparison grid (p50/p95/p99); see docs/performance.md
.PHONY: advise-speed
advise-speed: $(VENV)/.run-deps
	$(BIN)/python bench/advise_speed.py

## compare-speed: time the /compare ranking cold and warm in fresh processes (a few minutes); see docs/performance.md
.PHONY: compare-speed
compare-speed: $(VENV)/.run-deps
	$(BIN)/python bench/compare_speed.py

## engine-flags: check every launch-command shape against the engines' real parsers (~28 GB of venvs; not in make test)
.PHONY: engine-flags
engine-flags: $(VENV)/.run-deps
	python3 scripts/engine_flags.py install
	python3 scripts/engine_flags.py specs --engines vllm sglang lmdeploy llama.cpp
	$(BIN)/python scripts/engine_flags.py check

## estimate-speed: time perf.estimate() over about 3,000 configurations (p50/p95/p99); see docs/performance.md
.PHONY: estimate-speed
estimate-speed: $(VENV)/.run-deps
	$(BIN)/python bench/estimate_speed.py

## perf-model: refit the performance model, validate it held out, rewrite docs/performance-model.md (about a minute)
.PHONY: perf-model
perf-model: $(VENV)/.run-deps
	$(BIN)/python bench/perf_model.py

## page-speed: seconds from a shared link to each page's headline in headless Chromium, against a one-metric floor
.PHONY: page-speed
page-speed: $(VENV)/.dev-deps system-deps
	$(BIN)/python bench/page_speed.py
