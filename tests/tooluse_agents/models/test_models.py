"""Named models: the shipped LoRA warm-start, its card, and how `tooluse sft` makes such an adapter."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tooluse_agents.models.resolve import ADAPTERS, WARMSTART, adapter_digest, resolve_model

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ADAPTERS / WARMSTART


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_shipped_adapters_card_matches_its_files_and_data():
    card = json.loads((SHIPPED / "card.json").read_text())
    for name, entry in card["files"].items():
        assert (SHIPPED / name).stat().st_size == entry["bytes"]
        assert _sha256(SHIPPED / name) == entry["sha256"], f"{name} changed without its card"
    assert _sha256(ROOT / card["data"]["scenarios"]) == card["data"]["sha256"]
    assert card["base"] == "smollm2-135m" and card["config"]["lora"]["r"] > 0
    config = json.loads((SHIPPED / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "smollm2-135m"  # a name, not the trainer's cache folder
    assert card["protocol"]["card"]["tool_format"] == card["config"]["protocol"]["tool_format"] == "json"


def test_the_adapter_digest_names_the_bytes(tmp_path):
    copy = tmp_path / WARMSTART
    copy.mkdir()
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        (copy / name).write_bytes((SHIPPED / name).read_bytes())
    assert adapter_digest(copy) == adapter_digest(SHIPPED)
    (copy / "adapter_config.json").write_text((SHIPPED / "adapter_config.json").read_text() + " ")
    assert adapter_digest(copy) != adapter_digest(SHIPPED)  # a new adapter gets a new cache folder
    (copy / "adapter_model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match=r"adapter_model\.safetensors is missing"):
        adapter_digest(copy)


def test_the_warm_start_loads_as_the_base_plus_its_lora_update():
    """The merged folder every backend loads: each adapted weight is W + (alpha / r) B A, the rest the base's."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from safetensors.torch import load_file

    path = resolve_model(WARMSTART)
    assert Path(path).name == f"{WARMSTART}-{adapter_digest(SHIPPED)}"
    assert resolve_model(WARMSTART) == path  # built once, then found in the cache
    merged = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).state_dict()
    base = transformers.AutoModelForCausalLM.from_pretrained(resolve_model("smollm2-135m"), dtype=torch.float32)
    base_state = base.state_dict()
    adapter = load_file(str(SHIPPED / "adapter_model.safetensors"))
    config = json.loads((SHIPPED / "adapter_config.json").read_text())
    scale = config["lora_alpha"] / config["r"]
    checked = 0
    for layer, module in ((0, "self_attn.q_proj"), (7, "mlp.down_proj"), (29, "self_attn.v_proj")):
        prefix = f"base_model.model.model.layers.{layer}.{module}"
        a, b = adapter[f"{prefix}.lora_A.weight"].float(), adapter[f"{prefix}.lora_B.weight"].float()
        key = f"model.layers.{layer}.{module}.weight"
        expected = (base_state[key] + scale * b @ a).to(torch.bfloat16).float()
        assert torch.count_nonzero(b @ a) > 0  # a trained adapter changes the weight
        torch.testing.assert_close(merged[key], expected, rtol=0, atol=0)
        checked += 1
    assert checked == 3
    norm = "model.layers.3.input_layernorm.weight"  # not adapted: the base's own
    torch.testing.assert_close(merged[norm], base_state[norm].to(torch.bfloat16).float())


def test_sft_with_lora_saves_only_the_adapter_in_bf16(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    from safetensors.torch import load_file

    from tooluse_agents.train.sft import main

    out = tmp_path / "sft"
    argv = ["--model", "tiny-random", "--limit", "2", "--out", str(out), "--lr", "1e-2", "lora.r=4", "lora.alpha=8"]
    assert main(argv) == 0
    files = {p.name for p in (out / "model").iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors"} <= files
    assert "model.safetensors" not in files and "README.md" not in files
    config = json.loads((out / "model" / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "tiny-random" and config["r"] == 4
    weights = load_file(str(out / "model" / "adapter_model.safetensors"))
    assert weights and all("lora_" in k for k in weights)
    assert {str(t.dtype) for t in weights.values()} == {"torch.bfloat16"}
    assert any(k.endswith("lora_B.weight") and t.abs().sum() > 0 for k, t in weights.items())  # B starts at 0


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An offline Hugging Face cache holding one model, ``org/tiny-model``; any Hub call fails the test."""
    import huggingface_hub

    cache = tmp_path / "hub"
    (cache / "models--org--tiny-model" / "snapshots" / "0123abc").mkdir(parents=True)
    (cache / "models--org--tiny-model" / "snapshots" / "0123abc" / "config.json").write_text("{}")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def no_hub(*args, **kwargs):
        raise AssertionError("the Hugging Face Hub was asked")

    for name in ("hf_hub_download", "snapshot_download", "model_info"):
        monkeypatch.setattr(huggingface_hub, name, no_hub)
    return cache


def test_a_model_name_resolves_offline_and_an_unknown_one_names_close_matches(hub_cache, tmp_path):
    """Issue 60: a mistyped model spent 35-54 s retrying the Hub, then printed a ~95-line OSError."""
    from tooluse_agents.models.resolve import UnknownModel, cached_models, check_model

    assert cached_models() == ["org/tiny-model"]
    assert resolve_model("org/tiny-model") == "org/tiny-model"  # a cached hub id loads as before
    assert resolve_model(str(tmp_path)) == str(tmp_path)  # so does an existing folder
    with pytest.raises(UnknownModel, match=r"^model 'smollm2-13m' is not a named model .*did you mean 'smollm2-135m'"):
        resolve_model("smollm2-13m")
    with pytest.raises(UnknownModel, match=r"did you mean 'org/tiny-model'\?$"):
        check_model("org/tiny-modle")
    with pytest.raises(UnknownModel, match=r"download it first \(hf download someone/else\) or give its local folder$"):
        check_model("someone/else")


@pytest.mark.parametrize("agent", ["hf", "vllm"])
def test_eval_with_a_mistyped_model_fails_at_once_in_one_line_and_leaves_no_run_folder(
    agent, hub_cache, tmp_path, capsys, monkeypatch
):
    import time

    from tooluse_agents.cli.eval import main

    out = tmp_path / "run"
    start = time.perf_counter()
    argv = ["run", "--agent", agent, "--model", "smollm2-13m", "--task-ids", "multi_turn_base_0"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    assert time.perf_counter() - start < 30
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("tooluse eval: error: model 'smollm2-13m' is not a named")
    assert "did you mean 'smollm2-135m' or" in err and not out.exists()
