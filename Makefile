# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean browser

# The browser test drives Debian's Chromium through its ChromeDriver; the emoji font lets the
# page's reaction glyphs show in screenshots. Installed once, with apt (as root, or with sudo).
BROWSER_PACKAGES := chromium chromium-driver fonts-noto-color-emoji

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/c2a replay --manifest manifests/workspaces/local.yaml --pretty manifests/examples/local-trace.jsonl

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy

browser:
	@if [ -x /usr/bin/chromedriver ] && [ -x /usr/bin/chromium ] && fc-list 2>/dev/null | grep -q "Noto Color Emoji"; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo=sudo; \
	else echo "c2a: the browser test needs Debian's $(BROWSER_PACKAGES); install them as root: apt-get install $(BROWSER_PACKAGES)" >&2; exit 1; fi; \
	if ! command -v apt-get >/dev/null; then echo "c2a: no apt-get here; install Chromium and ChromeDriver at /usr/bin/chromium and /usr/bin/chromedriver" >&2; exit 1; fi; \
	echo "Installing $(BROWSER_PACKAGES) for the browser test (Debian packages, about a minute)..."; \
	$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $(BROWSER_PACKAGES) >/dev/null

test: lint browser
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python bench/irc_replay.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
