"""Golden outputs of the episode paths, recorded before the "one house" restructuring.

Each case plays real episodes through one public path and returns plain JSON with what may
change between runs removed (timings, versions, paths). `tests/golden/test_golden.py` plays the
cases again and compares with the files under `tests/golden/data/`; a restructuring must leave
them equal. Record (only when behaviour is meant to change, with the reason in the commit):

    python -m tests.golden.record [CASE ...]

Cases: ``oracle_eval`` (the evaluation CLI with the oracle agent), ``vllm_eval`` (SmolLM2 on vLLM,
seeded), ``grpo_smoke`` (the ``cpu_smoke`` GRPO run's ``metrics.jsonl``), ``token_rollout`` (the
token-sequence loop the TRL adapter runs) and ``chat_episode`` (the glue the verifiers adapter runs).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]

# values that differ between two runs of the same code on the same inputs
_VOLATILE_KEYS = {
    "duration_s",
    "latency_s",
    "wall_s",
    "elapsed_s",
    "started",
    "finished",
    "created",
    "bfcl_version",
    "tooluse_gym_version",
    "versions",
    "python",
    "platform",
    "host",
    "out",
    "run_dir",
    "path",
}


def machine() -> str:
    """The CPU model and its flags' digest: sampled tokens and float metrics are equal only on the same kind of CPU."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    lines = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    name = " ".join(lines.get("model name\t", "unknown").split())
    flags = sorted(lines.get("flags\t\t", "").split())
    return f"{name} / flags {digest(flags)}"


MACHINE_DEPENDENT = ("vllm_eval", "grpo_smoke")
"""Cases whose model samples, losses and gradients are compared only on the CPU they were recorded on."""

_HOME = str(Path.home())


def normalize(value: Any) -> Any:
    """`value` with timings, versions and paths removed (recursively), as JSON types."""
    if isinstance(value, str) and value.startswith(_HOME):
        return "~" + value[len(_HOME) :]
    if isinstance(value, dict):
        return {
            k: normalize(v)
            for k, v in value.items()
            if k not in _VOLATILE_KEYS and not k.startswith("time/") and not k.endswith("_per_s")
        }
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    return value


def digest(value: Any) -> str:
    """A short sha256 of `value` as canonical JSON (for long token lists and chats)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _cli(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-c", "import sys; from tooluse_agents.cli.eval import main; sys.exit(main())", *args],
        check=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def _eval_case(*args: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        _cli("run", *args, "--out", str(out), "--no-progress")
        episodes = sorted(_jsonl(out / "episodes.jsonl"), key=lambda r: (r["task_id"], r["seed"]))
        results = json.loads((out / "results.json").read_text())
    return {"episodes": normalize(episodes), "summary": normalize(results["summary"])}


def oracle_eval() -> dict[str, Any]:
    """The oracle through the evaluation CLI: 2 tasks of each BFCL category, 2 seeds, python and json calls."""
    return {
        "python": _eval_case("--agent", "oracle", "--limit", "2", "--seeds", "0", "1"),
        "json": _eval_case(
            "--agent",
            "oracle",
            "--categories",
            "base",
            "miss_func",
            "--limit",
            "1",
            "--tool-format",
            "json",
            "--template",
            "context",
        ),
    }


def vllm_eval() -> dict[str, Any]:
    """SmolLM2-135M on vLLM (CPU), seeded sampling, one short task slice."""
    return _eval_case(
        "--agent",
        "vllm",
        "--model",
        "smollm2-135m",
        "--categories",
        "base",
        "--limit",
        "2",
        "--seeds",
        "0",
        "--system-prompt",
        "strong",
        "--tool-format",
        "json",
        "--temperature",
        "0.7",
        "--max-tokens",
        "48",
        "--dtype",
        "float32",
    )


def grpo_smoke() -> dict[str, Any]:
    """The ``cpu_smoke`` GRPO run (tiny random model, HF engine): its metrics rows and its rollouts."""
    import tooluse_agents.train.grpo

    config = Path(tooluse_agents.train.grpo.__file__).parent / "configs" / "cpu_smoke.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "grpo"
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from tooluse_agents.cli.train import main; sys.exit(main())",
                str(config),
                f"run_dir={run}",
                "--no-progress",
            ],
            check=True,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        metrics = _jsonl(run / "metrics.jsonl")
        episodes = sorted(
            _jsonl(run / "episodes.jsonl"),
            key=lambda r: json.dumps(r.get("train", r.get("eval")), sort_keys=True) + r["task_id"],
        )
    return {"metrics": normalize(metrics), "episodes": normalize(episodes)}


def token_rollout() -> dict[str, Any]:
    """The token-sequence loop (what the TRL adapter's rollout function runs) with scripted writers."""
    from tooluse_agents.backends.oracle import END_OF_TURN, OracleAgent
    from tooluse_agents.integrations.token_sequences import play
    from tooluse_agents.rollout.loop import RolloutJob
    from tooluse_agents.train.grpo.rollouts import before_last_turn
    from tooluse_agents.train.grpo.tasks import env_factory, prompts_for
    from tooluse_gym.envs.knobs import Knobs
    from tooluse_gym.envs.multi_turn import bfcl_pool
    from tooluse_gym.tasks import bfcl
    from tooluse_gym.wrappers.rendered_prompt import load_tokenizer

    tokenizer = load_tokenizer("smollm2-135m")

    def as_policy(write: Callable[[Any], str]) -> Any:
        from tests.tooluse_agents.integrations.test_sequence import Writer

        return Writer(tokenizer, write)

    def oracle(request: Any) -> str:
        return OracleAgent().message(request)

    def silent(request: Any) -> str:
        return END_OF_TURN

    def show(episodes: list[Any]) -> list[dict[str, Any]]:
        return [
            normalize(
                {
                    "prompt_ids": [len(e.prompt_ids), digest(e.prompt_ids)],
                    "completion_ids": [len(e.completion_ids), digest(e.completion_ids)],
                    "logprobs": digest(e.logprobs),
                    "env_mask": [sum(e.env_mask), digest(e.env_mask)],
                    "record": e.record.to_dict(),
                    "checker": e.checker,
                    "untrained": e.untrained,
                }
            )
            for e in episodes
        ]

    import gymnasium as gym

    out: dict[str, Any] = {}
    ids = ["multi_turn_base_0", "multi_turn_miss_func_47"]
    for name, write in (("oracle", oracle), ("silent", silent)):
        envs = [gym.make("ToolUse-MultiTurn-v0", category="all", task_ids=ids, system_prompt="none") for _ in ids]
        jobs = [RolloutJob(t, 7) for t in ids]
        out[name] = show(play(envs, jobs, tokenizer, as_policy(write), max_new_tokens=64))
        for env in envs:
            env.close()
    # a prefix break (context template) and an episode out of room
    envs = [gym.make("ToolUse-MultiTurn-v0", category="all", task_ids=ids, template="context") for _ in ids]
    out["context_cut"] = show(play(envs, [RolloutJob(t, 3) for t in ids], tokenizer, as_policy(oracle)))
    out["out_of_room"] = show(
        play(envs, [RolloutJob(ids[0], 3)], tokenizer, as_policy(oracle), max_completion_length=60)
    )
    for env in envs:
        env.close()
    # next-turn prompts: the oracle plays the turns before the last, the policy the last
    protocol = Knobs(system_prompt="strong", tool_format="json")
    pool = prompts_for(bfcl_pool(bfcl.load_bfcl_tasks("base")[:2]), "next_turn")
    make = env_factory(pool, protocol)
    envs = [make() for _ in pool.tasks[:4]]
    jobs = [RolloutJob(t.task_id, 11) for t in pool.tasks[:4]]
    out["next_turn"] = show(
        play(envs, jobs, tokenizer, as_policy(silent), scripted=before_last_turn, max_new_tokens=32)
    )
    for env in envs:
        env.close()
    return out


def chat_episode() -> dict[str, Any]:
    """The oracle's episodes through `ChatEpisode` (the verifiers adapter's glue): every view and the outcome."""
    from tooluse_agents.backends.oracle import END_OF_TURN, OracleAgent
    from tooluse_agents.integrations.chat_episode import ChatEpisode
    from tooluse_agents.rollout.loop import request_for
    from tooluse_gym.envs.settings import make_env

    out: dict[str, Any] = {}
    cases = [
        ("multi_turn_base_0", {}),
        ("multi_turn_miss_func_0", {"system_prompt": "none"}),
        ("multi_turn_miss_param_0", {"template": "context", "tool_format": "json", "decoder": "lenient"}),
    ]
    for task_id, knobs in cases:
        for structured in (False, True):
            env = make_env(task_ids=[task_id], **knobs)
            episode = ChatEpisode(env, task_id, seed=0)
            view = episode.reset()
            views = []
            while view is not None:
                views.append(
                    {
                        "messages": digest(view.messages),
                        "tools": digest(view.tools),
                        "new": view.new_messages,
                        "seed": view.seed,
                    }
                )
                request = request_for(episode.observation, episode.reset_info, episode.last_info, 0)
                if structured and request.steps_in_turn == 0 and request.task.ground_truth[request.turn]:
                    calls = request.task.ground_truth[request.turn]
                    reply = {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {
                                "id": f"call_{request.turn}_{i}",
                                "type": "function",
                                "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
                            }
                            for i, c in enumerate(calls)
                        ],
                    }
                elif structured:
                    reply = {"role": "assistant", "content": END_OF_TURN}
                else:
                    reply = {"role": "assistant", "content": OracleAgent().message(request)}
                view = episode.step(reply)
            env.close()
            key = f"{task_id}/{'tool_calls' if structured else 'text'}"
            outcome = episode.outcome()
            outcome["protocol"] = normalize(outcome["protocol"])
            out[key] = {"views": views, "outcome": outcome}
    return out


CASES: dict[str, Callable[[], dict[str, Any]]] = {
    "oracle_eval": oracle_eval,
    "vllm_eval": vllm_eval,
    "grpo_smoke": grpo_smoke,
    "token_rollout": token_rollout,
    "chat_episode": chat_episode,
}


def main(names: list[str]) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    for name in names or list(CASES):
        data = CASES[name]()
        if name in MACHINE_DEPENDENT:
            data = {"machine": machine(), "data": data}
        (DATA / f"{name}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"wrote {DATA / (name + '.json')}")


if __name__ == "__main__":
    main(sys.argv[1:])
