# One virtual environment in .venv; every target installs what it needs first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The main job works on a copy of this sample project; the default PROMPT is a real task on it,
# checked by the test that fails until it is done.
EXAMPLE := examples/inventory
PROMPT ?= Add the missing function low_stock(inventory, threshold) to report.py: it returns the names of the items with fewer than threshold units, sorted by name. The failing test in test_inventory.py checks it.
# Exported, so the recipe passes it as "$$PROMPT" and quotes inside it survive.
export PROMPT

.PHONY: install run test test-local fuzz bench

# The install says what it brings and, on a terminal, shows pip's own lines and progress bars:
# the first one takes a minute or two. Off a terminal (CI, a log) pip stays quiet, so the log
# holds the tests' output rather than hundreds of download lines.
$(STAMP): pyproject.toml
	@echo "Installing Totem (this checkout, editable) into $(VENV) with its dependencies and the test tools"
	@echo "(pyproject.toml's dependencies and [dev] extra: pygls, httpx, pydantic, ..., pytest, ruff, Neovim)"
	$(PYTHON) -m venv $(VENV)
	@if [ -t 1 ]; then quiet=; else quiet=--quiet; fi; \
	echo "$(BIN)/pip install $$quiet -e '.[dev]'"; $(BIN)/pip install $$quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The main job: one agent turn on a fresh copy of $(EXAMPLE) (the committed one stays as it is),
# then what it changed. The configured model when there is one (docs/config.md; --model or
# --config in ARGS count as one); otherwise Totem's own local model, set up here the first time
# (its build takes minutes to half an hour by cores and load, docs/local.md). The venv comes first on PATH so the agent's `python -m
# pytest` finds pytest; the venv's pytest plugins are Totem's test tools, not the sample's, so they
# stay off (their warnings would only distract the model).
run: $(STAMP)
	@if [ -z "$(findstring --model,$(ARGS))$(findstring --config,$(ARGS))" ] \
	  && ! $(BIN)/totem local status | grep -q '^installed  local/' \
	  && $(BIN)/python -c 'import sys; from totem_engine.config import load_config; sys.exit(load_config(None).config.model is not None)'; \
	then echo "No model configured: setting up Totem's own local model (totem local setup)."; $(BIN)/totem local setup || exit $$?; fi
	@copy=$$(mktemp -d "$${TMPDIR:-/tmp}/totem-$(notdir $(EXAMPLE)).XXXXXX") && cp -R $(EXAMPLE)/. "$$copy" && \
	echo "Working on a copy of $(EXAMPLE): $$copy" && \
	PATH="$(CURDIR)/$(BIN):$$PATH" PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(BIN)/totem run --yes --cwd "$$copy" $(ARGS) "$$PROMPT"; code=$$?; \
	echo; echo "What changed (diff -ru $(EXAMPLE) $$copy):"; \
	diff -ru -x __pycache__ -x .pytest_cache -x .totem -x .ruff_cache $(EXAMPLE) "$$copy" && echo "(nothing)"; \
	echo "The changed copy stays in $$copy"; exit $$code

# pytest exits 5 when it collects nothing: say so instead of failing obscurely.
test: $(STAMP)
	@$(BIN)/python -m pytest -q $(PYTEST_ARGS); code=$$?; \
	if [ $$code -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$code

# The fuzz suite (tests/fuzz/, also in `make test` with a few seconds per property) with the long
# hypothesis profile: minutes of search over the wire parsers, framing, text tool calls and the
# JSON-RPC payloads. Examples that failed once are kept in .hypothesis/ and tried first next time.
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q tests/fuzz $(PYTEST_ARGS)

# The tests on Totem's own local model (tests/local/; slow, minutes): not part of `make test`
# (pyproject's norecursedirs), so CI needs no model. Setup is resumable and returns in seconds
# when it is done; the tests fail with a clear message when it is not.
test-local: $(STAMP)
	$(BIN)/totem local setup
	$(BIN)/python -m pytest -v tests/local $(PYTEST_ARGS)
