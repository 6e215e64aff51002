# The two set-up commands of the README, and the pieces they are made of.
VENV ?= .venv
PY := $(VENV)/bin/python
export GRADIO_ANALYTICS_ENABLED := False
export ANONYMIZED_TELEMETRY := False

SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: install install-test install-browser run test lint bench

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

install: $(PY)
	$(PY) -m pip install --quiet -e .

install-test: $(PY) install-browser
	$(PY) -m pip install --quiet -e '.[test]'

# Debian's Chromium and a CJK font for the browser tests (never `playwright install`: no downloads
# here), Pango for the PDF reports, poppler's pdftoppm to check their pages, and PostgreSQL's server
# (the tests start a throwaway one: the store tests run on it as well as on SQLite), espeak-ng
# with sox to speak answers for the speech tests, and ffmpeg for Gradio's streaming audio (the
# interviewer's voice).
DEBIAN_PACKAGES := chromium fonts-wqy-microhei libpango-1.0-0 libpangoft2-1.0-0 poppler-utils postgresql espeak-ng sox ffmpeg
install-browser:
	@dpkg -s $(DEBIAN_PACKAGES) >/dev/null 2>&1 || \
		($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $(DEBIAN_PACKAGES))

# The offline default: the web app on 127.0.0.1 (builds the index first if needed).
run: install
	$(PY) app.py

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
	$(PY) benchmarks/bench_history.py
	$(PY) benchmarks/bench_llm.py
	$(PY) benchmarks/bench_deploy.py
	$(PY) benchmarks/recorded_model.py replay ../shared/eval/dev-answers.jsonl --name dev
	$(PY) benchmarks/recorded_model.py replay benchmarks/holdout-answers.jsonl --name holdout
	$(PY) benchmarks/recorded_model.py replay benchmarks/blind-answers.jsonl --name blind
