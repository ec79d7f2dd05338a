"""``tiny-random``: a 2-layer random Llama with SmolLM2's tokenizer, for smoke runs and tests.

It is built once (seeded, so always the same weights) into the model cache and loads in a
fraction of a second. It produces noise, not tool calls: it exercises the pipeline, not learning.
"""

from __future__ import annotations

from pathlib import Path

TINY = "tiny-random"


def tiny_llama(tokenizer, seed: int = 0):
    """The random tiny model (hidden 64, 2 layers, tied embeddings) over `tokenizer`'s vocabulary."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config)


def resolve_tiny(name: str) -> str:
    """The cached folder of ``tiny-random`` (built on first use); any other name is returned as is."""
    if name != TINY:
        return name
    from filelock import FileLock
    from transformers import AutoTokenizer

    from tooluse_gym.models import models_dir, resolve_model

    target = models_dir() / TINY
    if (target / "config.json").is_file():
        return str(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if not (target / "config.json").is_file():
            tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m"))
            scratch = Path(str(target) + ".partial")
            tiny_llama(tokenizer).save_pretrained(scratch)
            tokenizer.save_pretrained(scratch)
            scratch.rename(target)
    return str(target)
