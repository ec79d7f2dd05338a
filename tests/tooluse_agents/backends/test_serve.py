"""`tooluse-serve`: the vLLM server command it builds for a CPU and for a GPU (no server started here)."""

from __future__ import annotations

import json
import sys

from tooluse_agents.backends.serve import GiB, Machine, ServeConfig, cpu_kv_cache_gib, cpu_ranges, main, server_command

CPU = Machine(device="cpu", available_bytes=22 * GiB, cpus=(0, 1, 2, 3, 6), native_bf16=False)
GPU = Machine(device="gpu")


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_cpu_command_turns_chunked_prefill_off_and_sizes_the_kv_cache_from_free_memory():
    command = server_command(ServeConfig(model="smollm2-135m"), "/models/smol", CPU, context_len=8192, environ={})
    argv = command.argv
    assert argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert _flag(argv, "--model") == "/models/smol" and _flag(argv, "--served-model-name") == "smollm2-135m"
    assert _flag(argv, "--host") == "127.0.0.1" and _flag(argv, "--port") == "8000" and _flag(argv, "--seed") == "0"
    assert "--no-enable-chunked-prefill" in argv and "--enforce-eager" in argv
    assert _flag(argv, "--max-model-len") == _flag(argv, "--max-num-batched-tokens") == "8192"
    assert _flag(argv, "--dtype") == "float32"  # no native bf16 on this machine
    assert "--enable-auto-tool-choice" in argv and _flag(argv, "--tool-call-parser") == "hermes"
    assert command.env == {
        "VLLM_NO_USAGE_STATS": "1",
        "VLLM_CPU_KVCACHE_SPACE": "5",  # a quarter of 22 GiB
        "VLLM_CPU_OMP_THREADS_BIND": "0-3,6",
    }


def test_cpu_context_length_budget_dtype_and_what_the_user_set():
    def argv_of(config, context_len, machine=CPU):
        return server_command(config, "/m", machine, context_len=context_len, environ={}).argv

    short = argv_of(ServeConfig(model="m"), 4096)
    assert _flag(short, "--max-model-len") == _flag(short, "--max-num-batched-tokens") == "4096"
    long = argv_of(ServeConfig(model="m"), 40960)  # capped on a CPU
    assert _flag(long, "--max-model-len") == _flag(long, "--max-num-batched-tokens") == "8192"
    given = argv_of(ServeConfig(model="m", max_model_len=2048, dtype="bfloat16"), 8192)
    assert _flag(given, "--max-model-len") == _flag(given, "--max-num-batched-tokens") == "2048"
    assert _flag(given, "--dtype") == "bfloat16"
    bf16 = Machine(device="cpu", available_bytes=GiB, cpus=(0,), native_bf16=True)
    assert _flag(argv_of(ServeConfig(model="m"), None, bf16), "--dtype") == "bfloat16"
    env = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "0"}  # explicit settings win
    assert server_command(ServeConfig(model="m"), "/m", CPU, environ=env).env == {"VLLM_NO_USAGE_STATS": "1"}


def test_gpu_command_keeps_vllm_defaults():
    config = ServeConfig(model="Qwen/Qwen3-0.6B", port=8011, extra=("--tensor-parallel-size", "2"))
    command = server_command(config, "Qwen/Qwen3-0.6B", GPU, context_len=40960, environ={})
    argv = command.argv
    for flag in ("--enforce-eager", "--no-enable-chunked-prefill", "--max-num-batched-tokens", "--max-model-len"):
        assert flag not in argv
    assert "--dtype" not in argv and _flag(argv, "--port") == "8011"
    assert argv[-2:] == ["--tensor-parallel-size", "2"]  # passed through, last
    assert command.env == {"VLLM_NO_USAGE_STATS": "1"}
    argv = server_command(ServeConfig(model="m", dtype="float16", max_model_len=4096), "m", GPU, environ={}).argv
    assert _flag(argv, "--dtype") == "float16" and _flag(argv, "--max-model-len") == "4096"
    no_tools = server_command(ServeConfig(model="m", tool_call_parser=None), "m", GPU, environ={}).argv
    assert "--enable-auto-tool-choice" not in no_tools and "--tool-call-parser" not in no_tools


def test_kv_cache_size_and_core_ranges():
    assert cpu_kv_cache_gib(0) == 1 and cpu_kv_cache_gib(3 * GiB) == 1
    assert cpu_kv_cache_gib(10 * GiB) == 2 and cpu_kv_cache_gib(500 * GiB) == 8
    assert cpu_ranges([0]) == "0" and cpu_ranges([1, 0]) == "0-1"
    assert cpu_ranges([0, 1, 2, 3, 6, 8, 9]) == "0-3,6,8-9"


def test_dry_run_prints_the_command_for_a_model_folder(tmp_path, capsys, monkeypatch):
    for name in ("VLLM_CPU_KVCACHE_SPACE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 2048}))
    args = [str(tmp_path), "--device", "cpu", "--port", "8123", "--dry-run", "--", "--max-num-seqs", "4"]
    assert main(args) == 0
    line = capsys.readouterr().out.strip()
    assert "VLLM_CPU_KVCACHE_SPACE=" in line and "HF_HUB_OFFLINE=1" in line  # a local folder: offline
    assert "--max-model-len 2048" in line and "--max-num-batched-tokens 2048" in line
    assert f"--served-model-name {tmp_path}" in line and "--port 8123" in line
    assert line.endswith("--max-num-seqs 4")
