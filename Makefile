# pbem: `make run` installs and starts the server on the embedded defaults;
# `make test` installs everything and runs the whole suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
HOST   ?= 127.0.0.1
PORT   ?= 5000

LOCK   := requirements.lock
UV_VERSION := 0.13.8

.PHONY: install test screens browser-deps run simulate lint bench clean i18n translations lock wheel typecheck
# Compiled catalogs (.mo) are built here, not committed: they follow from the .po files.
CATALOGS := $(wildcard pbem/translations/*/LC_MESSAGES/messages.po)
COMPILED := $(CATALOGS:.po=.mo)

# Exactly the versions of the lock file (hashes checked), then pbem itself, editable,
# built with the locked setuptools.
$(STAMP): pyproject.toml setup.py $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r $(LOCK)
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# Pin every requirement (runtime, the test extra, the build's, pip) for every platform.
# After changing the requirements in pyproject.toml: make lock (other pins stay); to move
# to the newest releases: make lock LOCK_ARGS=--upgrade (or --upgrade-package NAME).
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet "uv==$(UV_VERSION)"
	$(BIN)/python -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))\
	  ["build-system"]["requires"], "pip", sep="\n")' \
	| $(BIN)/uv pip compile pyproject.toml - --extra test --universal --python-version 3.11 \
	  --generate-hashes --custom-compile-command "make lock" --quiet $(LOCK_ARGS) -o $(LOCK)

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

# One worker more than cores: the browser and end-to-end tests spend part of their time
# waiting on Chromium, the servers and the mail loop (two-core machine, pytest wall time:
# 2 workers 8 min 43 s, 3 workers 8 min 08 s, 4 workers 8 min 09 s).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))

test: $(STAMP) translations
	bash .ci/system-deps
	$(MAKE) --no-print-directory browser-deps
	$(BIN)/ruff check .
	$(MAKE) --no-print-directory typecheck
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile  # one file per worker: its fixtures stay together

# Full-page screenshots of every page and email of both games, in English and German, at
# 390 and 1280 px, with the overflow and axe-core checks (tests/browser/test_screens.py).
screens: $(STAMP) translations
	bash .ci/system-deps
	$(MAKE) --no-print-directory browser-deps
	PBEM_SCREENS=1 $(BIN)/pytest -q tests/browser/test_screens.py; status=$$?; \
	  echo ""; echo "  screenshots and report: $(CURDIR)/tests/browser/screens/"; exit $$status

# Web server, clock and the inbound receiver (replies by email) on SQLite + the dev
# mailbox, whose reply box answers an email through that receiver, all under one
# supervisor (`pbem serve`: one log stream, a child that dies is started again, Ctrl-C
# stops all three). PORT moves every port: web on PORT, the receiver on 2525 + (PORT -
# 5000); so two checkouts run side by side with PORT=5000 and PORT=5100. The dev mailbox
# shows everyone's secret links, so it is opt-in (PBEM_MAIL_BACKEND=dev) and answers only
# to this machine; a server started without mail configuration refuses to run.
run: export PBEM_MAIL_BACKEND ?= dev
run: $(STAMP) translations
	@$(BIN)/flask --app pbem pbem migrate
	@$(BIN)/flask --app pbem pbem serve --host $(HOST) --port $(PORT)

# The wheel, built from scratch with the locked setuptools (setup.py adds templates,
# migrations and the compiled catalogs): dist/pbem-<version>-py3-none-any.whl.
wheel: $(STAMP)
	rm -rf build dist
	$(BIN)/pip wheel --quiet --no-deps --no-build-isolation --wheel-dir dist .
	@ls -l dist/*.whl

simulate: $(STAMP)
	$(BIN)/python -m engine simulate cavemen --players 4 --games 200 --bot heuristic --seed 1

lint: $(STAMP)
	$(BIN)/ruff check .

# Static types, before the tests: the engine strictly (engine/conformance.py checks each
# game module against the Game protocol), the server strictly too (the settings in
# pyproject.toml), and the modules of the server that take no explicit Any (STRICT_PBEM:
# strictly, with no explicit Any; the modules they import are checked but not reported).
STRICT_PBEM = pbem/view.py pbem/services/viewing.py pbem/services/api.py
typecheck: $(STAMP)
	$(BIN)/mypy --strict engine tests/toygame
	$(BIN)/mypy --strict pbem
	$(BIN)/mypy --strict --disallow-any-explicit --follow-imports=silent $(STRICT_PBEM)

bench: $(STAMP)
	$(BIN)/python bench/engine_speed.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache .mypy_cache tests/browser/node_modules tests/browser/screens
