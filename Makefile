# Two set-up commands: `make demo` and `make test`. Both create .venv on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_BASE := $(VENV)/.installed-demo
STAMP_TEST := $(VENV)/.installed-test

.PHONY: demo test venv clean bench

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# the demo's install carries the web extra, so `tokenomy web` (the next thing to try) works after `make demo`
$(STAMP_BASE): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[web]'
	touch $@

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev,web,torch,sweep]'
	touch $@ $(STAMP_BASE)

venv: $(STAMP_BASE)

demo: $(STAMP_BASE)
	$(BIN)/tokenomy demo
	@echo ""
	@echo "tokenomy is installed in $(abspath $(BIN)); run it from there, or put it on PATH first:"
	@echo "  source $(BIN)/activate"
	@echo "  tokenomy --help"
	@echo "  tokenomy decode --model llama-3.1-70b --hardware hgx-h100-8 --batch 1,64"
	@echo "  tokenomy web          # then open http://127.0.0.1:8000/"

test: $(STAMP_TEST)
	@# The browser tests drive Debian's chromium (never `playwright install`); install it when missing.
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO="sudo -n"; fi; \
		echo "installing Debian's chromium for the browser tests"; \
		{ $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; } \
			|| echo "warning: could not install chromium (no root/sudo?); the browser tests will fail"; \
	fi
	$(BIN)/lint-imports
	@# Python's own bytecode cache, whatever the shell says: with PYTHONDONTWRITEBYTECODE set, each xdist worker and
	@# every command a test starts compiled the package and rewrote the tests' asserts again (collection alone: 19.5
	@# CPU-s a process, 9.9 with the cache; __pycache__ is git-ignored)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 2 --dist loadgroup

bench: $(STAMP_TEST)
	$(BIN)/python benchmarks/sweep.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
