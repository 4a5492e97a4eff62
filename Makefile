# One virtual environment in .venv; every target installs what it needs first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PROMPT ?= Say hello and list the files of this project.

.PHONY: install run test bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The main job: one agent turn on the configured model (see docs/config.md).
run: $(STAMP)
	$(BIN)/totem run $(ARGS) "$(PROMPT)"

# pytest exits 5 when it collects nothing: say so instead of failing obscurely.
test: $(STAMP)
	@$(BIN)/python -m pytest -q $(PYTEST_ARGS); code=$$?; \
	if [ $$code -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$code
