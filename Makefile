# AgenticOS — two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
TEST_DATA_DIR := $(CURDIR)/.agenticos-test

.PHONY: install workbench run dev test lint services-start services-stop browser vendor bench fuzz clean sandbox-token

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 is required ($(PYTHON) not found)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The coding agent's CLIs, pinned as the catalog says, from the npm registry into the folder sandboxd mounts
# read-only as the workbench runtime's /opt/workbench (sandboxd/config.py). Skipped, with a note, without npm.
WORKBENCH := .agenticos/workbench
WORKBENCH_CLIS := @anthropic-ai/claude-code@2.1.288 @openai/codex@0.160.0
WORKBENCH_STAMP := $(WORKBENCH)/.installed-claude-code-2.1.288-codex-0.160.0
$(WORKBENCH_STAMP):
	@if command -v npm >/dev/null 2>&1; then \
		mkdir -p $(WORKBENCH) && npm install --prefix $(WORKBENCH) --no-audit --no-fund --loglevel=error $(WORKBENCH_CLIS) \
		&& touch $@; \
	else echo "npm is missing: the coding agent's CLIs are not installed (apt-get install nodejs npm)"; fi

workbench: $(WORKBENCH_STAMP)

# eslint for the console's browser code (package.json devDependencies, eslint.config.js), installed by npm ci.
NODE_STAMP := node_modules/.installed-stamp
$(NODE_STAMP): package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm is required for make lint (apt-get install nodejs npm)"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(STAMP) $(WORKBENCH_STAMP)

# `make run` serves as a self-hosted machine does, DEBUG off; `make dev` is the same with DEBUG on (Django's
# technical error pages: every URL pattern on a 404, the traceback and settings on a 500).
run: install
	$(PY) -m config.launcher

dev: install
	DEBUG=true $(PY) -m config.launcher

services-start: install
	$(PY) -m config.devservices start

services-stop: install
	$(PY) -m config.devservices stop

# The token sandboxd and the platform share (kept in the vault; printed once for docker-compose's .env).
sandbox-token: install
	$(PY) manage.py sandbox_token --print

# Debian packages the tests need: chromium for the browser service and the Playwright browser tests (a test
# tool's own browser download cannot work here) — its headless shell for the tests' pages, a third less CPU
# (tests/browser_servers.py) —, tesseract for OCR of images in knowledge collections, and bubblewrap, the
# isolation sandboxd runs every command under.
SYSTEM_PACKAGES := chromium tesseract-ocr tesseract-ocr-eng bubblewrap
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/tesseract ] || [ ! -x /usr/bin/bwrap ]; then \
		if [ "$$(id -u)" = "0" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_PACKAGES) >/dev/null; \
		else echo "missing: run 'sudo apt-get install $(SYSTEM_PACKAGES)' (browser, OCR and sandbox tests will be skipped)"; fi; \
	fi
	@# The headless shell only makes the tests cheaper: where it cannot be installed they use chromium.
	@if [ ! -x /usr/bin/chromium-headless-shell ]; then \
		if [ "$$(id -u)" = "0" ] && { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null 2>&1 || \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null; }; }; then :; \
		else echo "no chromium-headless-shell (sudo apt-get install chromium-headless-shell): the browser tests use chromium"; fi; \
	fi

test: install browser
	AGENTICOS_DATA_DIR=$(TEST_DATA_DIR) AGENTICOS_TESTING=true $(PY) -m config.devservices start >/dev/null
	rm -f test-artifacts/runs-diagnosis.txt
	# The migrated template the test databases are copied from (tests/template_db.py), built in the background
	# while the migrations are checked and pytest starts and collects; the workers wait for it (a lock) if they
	# ask before it is done. Nothing to build where it exists already.
	AGENTICOS_DATA_DIR=$(TEST_DATA_DIR) AGENTICOS_TESTING=true $(PY) -m tests.template_db >/dev/null &
	# A model change without its migration fails here, before the suite (which would build it into its databases).
	AGENTICOS_DATA_DIR=$(TEST_DATA_DIR) AGENTICOS_TESTING=true $(PY) manage.py makemigrations --check --dry-run >/dev/null
	# --durations: the slowest tests, printed on every run, so a slow one is seen where it is added.
	# PYTHONDONTWRITEBYTECODE= : bytecode and pytest's rewritten test modules are written and reused (under
	# __pycache__, ignored by git) even where the shell sets it; collecting the suite is then about half its CPU.
	PYTHONDONTWRITEBYTECODE= AGENTICOS_DATA_DIR=$(TEST_DATA_DIR) AGENTICOS_TESTING=true $(PY) -m pytest -n 2 --durations=30 $(PYTEST_ARGS) || { \
		status=$$?; if [ -f test-artifacts/runs-diagnosis.txt ]; then \
		echo "--- where the runs stood when a test failed (test-artifacts/runs-diagnosis.txt):"; \
		tail -c 12000 test-artifacts/runs-diagnosis.txt; fi; exit $$status; }

# Schemathesis over /api/schema/, in process through the WSGI app (tests/api/test_fuzz.py), as an owner whose
# organization has a published agent: many examples per operation and mode, a fresh seed (FUZZ_SEED=n replays one).
FUZZ_EXAMPLES ?= 40
fuzz: install
	AGENTICOS_DATA_DIR=$(TEST_DATA_DIR) AGENTICOS_TESTING=true $(PY) -m config.devservices start >/dev/null
	AGENTICOS_DATA_DIR=$(TEST_DATA_DIR) AGENTICOS_TESTING=true FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
		FUZZ_SEED=$${FUZZ_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')} \
		$(PY) -m pytest tests/api/test_fuzz.py -p no:xdist -q -p no:logging --show-capture=no --timeout=0 $(PYTEST_ARGS)

lint: install $(NODE_STAMP)
	$(VENV)/bin/ruff check .
	npm run --silent lint
	$(VENV)/bin/lint-imports
	# django-stubs loads the settings, which only parse these URLs (no server is needed to type-check).
	DATABASE_URL=$${DATABASE_URL:-postgres://lint@localhost/lint} REDIS_URL=$${REDIS_URL:-redis://localhost:6379/0} \
		$(VENV)/bin/mypy config console agenticos agents capabilities governance knowledge embeds channelbots triggers interop evals notifications media workspaces identity sandboxd calls

# Third-party JS for the console, from the npm registry, committed under static/vendor/ (no CDN, no build step).
vendor:
	npm ci --no-audit --no-fund
	mkdir -p static/vendor
	cp node_modules/marked/lib/marked.umd.js static/vendor/marked.umd.js
	cp node_modules/dompurify/dist/purify.min.js static/vendor/purify.min.js
	mkdir -p static/vendor/katex/fonts
	cp node_modules/katex/dist/katex.min.js node_modules/katex/dist/katex.min.css node_modules/katex/LICENSE static/vendor/katex/
	cp node_modules/katex/dist/fonts/*.woff2 static/vendor/katex/fonts/
	# axe-core runs only in the browser tests (tests/console/test_accessibility_browser.py), never served.
	cp node_modules/axe-core/axe.min.js tests/console/vendor/axe.min.js

bench: install
	$(PY) bench/turn_overhead.py

clean:
	-AGENTICOS_DATA_DIR=$(TEST_DATA_DIR) $(PY) -m config.devservices stop
	rm -rf $(TEST_DATA_DIR)
