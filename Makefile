# pbem: `make run` installs and starts the server on the embedded defaults;
# `make test` installs everything and runs the whole suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
HOST   ?= 127.0.0.1
PORT   ?= 5000

.PHONY: install test screens browser-deps run simulate lint bench clean i18n translations
# Compiled catalogs (.mo) are built here, not committed: they follow from the .po files.
CATALOGS := $(wildcard pbem/translations/*/LC_MESSAGES/messages.po)
COMPILED := $(CATALOGS:.po=.mo)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP) translations

translations: $(COMPILED)

%.mo: %.po $(STAMP)
	$(BIN)/pybabel compile --statistics -i $< -o $@

# Extract every msgid from pbem/ and templates/, merge into each catalog, compile.
i18n: $(STAMP)
	$(BIN)/pybabel extract -F babel.cfg -k lazy_gettext -k mark --no-location --sort-output \
	  --project pbem -o pbem/translations/messages.pot .
	$(BIN)/pybabel update -i pbem/translations/messages.pot -d pbem/translations \
	  --no-fuzzy-matching --ignore-obsolete
	$(MAKE) translations

# axe-core for the accessibility checks of the browser tests, from npm at the locked version
# (node and npm come from .ci/system-deps, so this runs after it).
AXE_STAMP := tests/browser/node_modules/.installed

$(AXE_STAMP): tests/browser/package.json tests/browser/package-lock.json
	@if command -v npm >/dev/null; then \
	  npm ci --prefix tests/browser --no-audit --no-fund && touch $(AXE_STAMP); \
	elif [ "$${CI:-}" = true ]; then echo "npm is missing (apt-get install npm)" >&2; exit 1; \
	else echo "npm is missing: the browser tests' axe-core checks are skipped" >&2; fi

browser-deps: $(AXE_STAMP)

test: $(STAMP) translations
	bash .ci/system-deps
	$(MAKE) --no-print-directory browser-deps
	$(BIN)/ruff check .
	$(BIN)/pytest

# Full-page screenshots of every page and email of both games, in English and German, at
# 390 and 1280 px, with the overflow and axe-core checks (tests/browser/test_screens.py).
screens: $(STAMP) translations
	bash .ci/system-deps
	$(MAKE) --no-print-directory browser-deps
	PBEM_SCREENS=1 $(BIN)/pytest -q tests/browser/test_screens.py; status=$$?; \
	  echo ""; echo "  screenshots and report: $(CURDIR)/tests/browser/screens/"; exit $$status

# Web server and clock on SQLite + the dev mailbox; Ctrl-C stops both. The dev mailbox
# shows everyone's secret links, so it is opt-in (PBEM_MAIL_BACKEND=dev) and answers only
# to this machine; a server started without mail configuration refuses to run.
run: export PBEM_MAIL_BACKEND ?= dev
run: $(STAMP) translations
	$(BIN)/flask --app pbem pbem migrate
	@echo ""
	@echo "  pbem is running at http://$(HOST):$(PORT)/"
	@echo "  dev mailbox:       http://$(HOST):$(PORT)/dev/mail"
	@echo ""
	@PBEM_BASE_URL=$${PBEM_BASE_URL:-http://$(HOST):$(PORT)} bash -c '\
	  $(BIN)/flask --app pbem pbem clock & clock=$$!; \
	  trap "kill $$clock 2>/dev/null" EXIT INT TERM; \
	  $(BIN)/gunicorn --workers 2 --bind $(HOST):$(PORT) --config python:pbem.gunicorn_conf \
	    "pbem:create_app()"'

simulate: $(STAMP)
	$(BIN)/python -m engine simulate cavemen --players 4 --games 200 --bot heuristic --seed 1

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python bench/engine_speed.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache tests/browser/node_modules tests/browser/screens
