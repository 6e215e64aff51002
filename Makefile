# The two set-up commands of the README, and the pieces they are made of.
VENV ?= .venv
PY := $(VENV)/bin/python
export GRADIO_ANALYTICS_ENABLED := False
export ANONYMIZED_TELEMETRY := False

.PHONY: install install-test run test lint bench

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

install: $(PY)
	$(PY) -m pip install --quiet -e .

install-test: $(PY)
	$(PY) -m pip install --quiet -e '.[test]'

# The offline default: builds the index if needed, then a mock interview in the terminal.
run: install
	$(VENV)/bin/interviewer index
	$(VENV)/bin/interviewer interview

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: install-test lint
	$(VENV)/bin/pytest

bench: install-test
	$(PY) benchmarks/bench_index.py
	$(PY) benchmarks/bench_retrieval.py
	$(PY) benchmarks/bench_grader.py
	$(PY) benchmarks/bench_session.py
