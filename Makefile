# pbem: `make test` installs everything and runs the whole suite; `make run` starts it.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test run lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/pytest

run: $(STAMP)
	$(BIN)/python -m engine simulate cavemen --players 4 --games 200 --bot heuristic --seed 1

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python bench/engine_speed.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
