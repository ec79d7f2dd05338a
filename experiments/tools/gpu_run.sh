#!/usr/bin/env bash
# GRPO on one GPU: Qwen3-4B, vLLM rollouts in the trainer's process, the paper's recipe
# (agents/train/grpo/configs/gpu_qwen3_4b.yaml). Extra arguments are config overrides, e.g.
#   experiments/tools/gpu_run.sh run_dir=runs/q4b-lora policy.lora='{r: 64, alpha: 128}'
# Setup (once): pip install -e '.[hf,gpu,rl]' and pip install --no-deps bfcl-eval==2026.3.23,
# with the model in the local Hugging Face cache (or set policy.model to a local folder).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-python}"
if ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "gpu_run.sh: no CUDA device visible to torch" >&2
    exit 1
fi
export VLLM_ENABLE_V1_MULTIPROCESSING=0   # engine in this process: weights are pushed into it directly
export TOKENIZERS_PARALLELISM=false
exec "$PYTHON" -m tooluse_agents.cli.train agents/train/grpo/configs/gpu_qwen3_4b.yaml "$@"
