"""Write the TUI's fixture files under ``tests/tooluse_tui/data/`` (run once; the outputs are committed).

    python tests/tooluse_tui/make_fixtures.py

Episodes are played through the real environment on real BFCL tasks by `ScriptedAgent`: the
oracle's ground truth, bent per episode into the failures the TUI must show (a wrong argument,
which the checker reports with a state diff; a turn without any call; a malformed call; a
prompt past the model's context: an agent error that counts 0). Token counts and latencies are
scripted numbers, not measured ones.

- ``run_a/``, ``run_b/``: two evaluation runs (``results.json``, ``run.json``, ``episodes.jsonl``)
  with different protocol cards and different failures, for the compare view;
- ``train_run/``: a training run folder with a scripted ``metrics.jsonl``, an ``episodes.jsonl``
  and a ``config.yaml``, for the live view;
- ``damaged/episodes.jsonl``: run A's episodes with a corrupt line and a torn last line.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tooluse_agents.backends.base import AgentError, AgentRequest, Generation, SamplingConfig  # noqa: E402
from tooluse_agents.backends.oracle import OracleAgent  # noqa: E402
from tooluse_agents.eval.run import EvalConfig, eval_task_ids, run_eval  # noqa: E402
from tooluse_agents.rollout.seeding import derive_seed  # noqa: E402
from tooluse_gym.envs.knobs import Knobs  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
CATEGORIES = ("base", "miss_func", "miss_param", "long_context")


def _pick(*parts: Any) -> int:
    """A stable pseudo-random number for a tuple of values (the same on every machine)."""
    return zlib.crc32("/".join(map(str, parts)).encode())


class ScriptedAgent:
    """The oracle, with a scripted failure in some episodes.

    Args:
        plan: (task id, seed) -> ``correct`` | ``wrong_arg`` | ``silent`` | ``malformed`` | ``timeout``.
        think: Prefix every message with a short ``<think>`` block (folded by the replay view).
    """

    name = "scripted"

    def __init__(self, plan: dict[tuple[str, int], str], think: bool):
        self.plan = plan
        self.think = think
        self.oracle = OracleAgent()

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig | None = None) -> list[Generation]:
        return [self._one(r) for r in requests]

    def _one(self, request: AgentRequest) -> Generation:
        assert request.task is not None
        task = request.task
        seed = next(s for (t, s) in self.plan if t == task.task_id and _matches(request, t, s))  # the run seed
        behaviour = self.plan[(task.task_id, seed)]
        calls = task.ground_truth[request.turn]
        fail_turn = next((t for t, c in enumerate(task.ground_truth) if c), 0)
        text = self.oracle.message(request)
        if request.turn == fail_turn and calls:
            if behaviour == "timeout" and request.steps_in_turn == 0:
                return Generation(
                    error=AgentError("context_length_exceeded", "the prompt no longer fits the model's context")
                )
            if behaviour == "silent":
                text = "I am not able to do that with the tools I have."
            elif behaviour == "malformed" and request.steps_in_turn == 0:
                text = f"[{calls[0].name}(" + ", ".join(f"{k}=" for k in calls[0].arguments) + "]"
            elif behaviour == "malformed" and request.steps_in_turn == 1:
                text = self.oracle.message(dataclasses.replace(request, steps_in_turn=0))
            elif behaviour == "wrong_arg" and request.steps_in_turn == 0:
                text = _render(request.tool_format, [_bend(calls[0]), *calls[1:]])
        prompt = 900 + _pick(task.task_id, request.turn, request.steps_in_turn) % 400
        completion = 12 + len(text) // 4
        if self.think:
            thought = f"The user wants turn {request.turn + 1}; I check which functions apply before answering."
            text = f"<think>{thought}</think>\n{text}"
        latency = round(0.2 + (_pick(task.task_id, seed, request.turn) % 100) / 100, 2)
        return Generation(text=text, prompt_tokens=prompt, completion_tokens=completion, latency_s=latency)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": "oracle-with-scripted-failures"}

    def close(self) -> None:
        pass


def _matches(request: AgentRequest, task_id: str, seed: int) -> bool:
    """Whether `request` belongs to the episode of `task_id` played with run seed `seed`."""
    return request.seed == derive_seed(seed, task_id, request.turn, request.steps_in_turn)


def _bend(call: Any) -> Any:
    """The call with its first string argument changed (or a made-up argument when it has none)."""
    arguments = dict(call.arguments)
    for key, value in arguments.items():
        if isinstance(value, str):
            arguments[key] = value + "_old"
            break
    else:
        arguments["unexpected"] = 1
    return dataclasses.replace(call, arguments=arguments)


def _render(tool_format: str, calls: Sequence[Any]) -> str:
    if tool_format == "python":
        return "[" + ", ".join(c.render() for c in calls) + "]"
    return "\n".join(
        "<tool_call>" + json.dumps({"name": c.name, "arguments": dict(c.arguments)}) + "</tool_call>" for c in calls
    )


def write_run(name: str, behaviours: Sequence[str], protocol: dict[str, Any], think: bool) -> Path:
    """One evaluation run of 2 tasks per category and 2 seeds; `behaviours` cycles over the episodes."""
    out = DATA / name
    if out.exists():
        shutil.rmtree(out)
    config = EvalConfig(
        agent="oracle", categories=CATEGORIES, limit=2, seeds=(0, 1), protocol=Knobs(**protocol), num_envs=4
    )
    episodes = [(t, s) for s in config.seeds for t in eval_task_ids(CATEGORIES, 2)]
    plan = {key: behaviours[i % len(behaviours)] for i, key in enumerate(episodes)}
    run_eval(config, out, agent=ScriptedAgent(plan, think), progress=False)
    for extra in ("report.md", "accuracy.png"):
        (out / extra).unlink(missing_ok=True)
    return out


def metrics_rows(steps: int) -> list[dict[str, Any]]:
    """Scripted training metrics: reward rising, more all-correct groups, more prompts skipped, fewer
    screened, the GRESO rates drifting."""
    rows = []
    for step in range(1, steps + 1):
        wobble = (_pick("metrics", step) % 100) / 1000
        correct = min(0.05 + 0.05 * step + wobble, 0.9)
        wrong = max(0.6 - 0.05 * step, 0.02)
        row = {
            "step": step,
            "epoch": (step - 1) // 4,
            "rollout/reward_mean": round(0.1 + 0.05 * step + wobble, 4),
            "groups/all_correct_frac": round(correct, 4),
            "groups/all_wrong_frac": round(wrong, 4),
            "groups/mixed_frac": round(max(1 - correct - wrong, 0.0), 4),
            "filter/skipped_prompts": max(0, step - 3),
            "filter/skipped_all_correct": max(0, step - 3) - max(0, step - 3) // 3,
            "filter/skipped_all_wrong": max(0, step - 3) // 3,
            "filter/p_correct": round(0.5 - 0.01 * max(0, step - 4), 2),
            "filter/p_wrong": round(0.5 + 0.01 * max(0, step - 4), 2),
            "screen/screened_prompts": max(0, 6 - step // 2),
            "screen/rollouts_saved": 4 * max(0, 6 - step // 2),
            "subsample/generated": 64 - 4 * max(0, 6 - step // 2),
            "subsample/used": 32,
            "time/rollout_s": round(20 + 3 * wobble * 10, 2),
            "time/update_s": round(35 + step % 3, 2),
            "time/sync_s": 0.4,
            "perf/tokens_per_s": round(180 + 4 * step + 50 * wobble, 1),
        }
        if step % 4 == 0:
            row["eval/heldout_reward"] = round(0.1 + 0.04 * step, 4)
        rows.append(row)
    return rows


def main() -> None:
    run_a = write_run(
        "run_a", ("correct", "wrong_arg", "correct", "silent", "correct", "malformed", "timeout"), {}, think=True
    )
    write_run(
        "run_b",
        ("correct", "correct", "wrong_arg", "correct", "silent"),
        {"system_prompt": "strong", "tool_format": "json"},
        think=False,
    )
    lines = (run_a / "episodes.jsonl").read_bytes().splitlines(keepends=True)

    train = DATA / "train_run"
    train.mkdir(exist_ok=True)
    with (train / "metrics.jsonl").open("w") as f:
        for row in metrics_rows(12):
            f.write(json.dumps(row) + "\n")
    (train / "episodes.jsonl").write_bytes(b"".join(lines[:10]))
    (train / "config.yaml").write_text("model: smollm2-135m\ngroup_size: 8\nsubsample: 4\nlearning_rate: 1.0e-6\n")

    damaged = DATA / "damaged"
    damaged.mkdir(exist_ok=True)
    body = [*lines[:3], b'{"task_id": "multi_turn_base_9", "reward": \n', *lines[3:6], lines[6][: len(lines[6]) // 2]]
    (damaged / "episodes.jsonl").write_bytes(b"".join(body))
    for path in sorted(DATA.rglob("*")):
        if path.is_file():
            print(f"{path.relative_to(ROOT)}  {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
