"""Differential test: our env's verdicts equal bfcl_eval's, trajectory by trajectory.

Every ground-truth trajectory of the 800 tasks, and perturbed versions of each (dropped
call, wrong argument value, extra call, repeated call, calls moved to the next turn, calls
in swapped order, one call per step, a held-out function called before its turn, an
unknown function, and 21 steps in one turn), are played through `gym.make(...)` as
``[...]`` assistant text, under both decoders:

* ``decoder="bfcl"``: the same raw text goes through bfcl_eval's own handler, decoder,
  inference-loop turn rules, executor and checker (`tests._reference.bfcl_reference.official_run`).
  The trajectories are built from the ground truth with positional arguments bound to
  their names (BFCL's decoder drops positional arguments), plus the ground truth exactly
  as written (``ground_truth_verbatim``: its positional calls lose their arguments on both
  sides). The env's per-step call strings and tool results must equal BFCL's executor's.
* ``decoder="lenient"``: our parser binds positional arguments; bfcl_eval's checker gets
  the call strings as written (with its runner's force-quit and drop-empty rules).

`valid` and `error_type` must be identical on every trajectory.
"""

from __future__ import annotations

import random
from collections import Counter

import gymnasium as gym
import pytest

from tests._reference.bfcl_reference import ground_truth_strings, official_run, official_verdict, play_env
from tooluse_gym.decoding.lenient import parse_call_string
from tooluse_gym.tasks import bfcl

END = "Nothing more to do."


def _perturb_value(value, rng):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice([1, 2, 7])
    if isinstance(value, float):
        return value + 1.5
    if isinstance(value, str):
        return value + "_x"
    if isinstance(value, list):
        return value[:-1] if value else [*value, "x"]
    return value


def _wrong_value(call: str, rng) -> str | None:
    parsed = parse_call_string(call)
    if parsed.arguments:
        key = rng.choice(sorted(parsed.arguments))
        args = dict(parsed.arguments)
        args[key] = _perturb_value(args[key], rng)
        return type(parsed)(name=parsed.name, arguments=args, positional=parsed.positional).render()
    if parsed.positional:
        pos = list(parsed.positional)
        pos[0] = _perturb_value(pos[0], rng)
        return type(parsed)(name=parsed.name, positional=tuple(pos)).render()
    return None


def perturbations(task, truth: list[list[str]], rng: random.Random) -> dict[str, list[list[list[str]]]]:
    """Trajectories (turn -> steps -> calls) derived from the ground truth."""
    base = [[list(turn)] if turn else [] for turn in truth]
    full = [t for t, turn in enumerate(truth) if turn]
    out: dict[str, list[list[list[str]]]] = {"ground_truth": base}
    t = rng.choice(full)
    i = rng.randrange(len(truth[t]))

    traj = [[list(s) for s in turn] for turn in base]
    del traj[t][0][i]
    traj[t] = [s for s in traj[t] if s]
    out["dropped_call"] = traj

    for j in rng.sample(range(len(truth[t])), len(truth[t])):
        wrong = _wrong_value(truth[t][j], rng)
        if wrong is not None:
            traj = [[list(s) for s in turn] for turn in base]
            traj[t][0][j] = wrong
            out["wrong_value"] = traj
            break

    traj = [[list(s) for s in turn] for turn in base]
    donor = rng.choice([c for turn in truth for c in turn])
    target = rng.randrange(len(truth))
    traj[target] = [*traj[target], [donor]] if traj[target] else [[donor]]
    out["extra_call"] = traj

    traj = [[list(s) for s in turn] for turn in base]
    traj[t][0].insert(i + 1, truth[t][i])
    out["repeated_call"] = traj

    if t + 1 < len(truth):
        traj = [[list(s) for s in turn] for turn in base]
        moved = traj[t]
        traj[t] = []
        traj[t + 1] = moved + traj[t + 1]
        out["moved_to_next_turn"] = traj

    if len(truth[t]) > 1:
        traj = [[list(s) for s in turn] for turn in base]
        traj[t] = [list(reversed(truth[t]))]
        out["swapped_order"] = traj

    out["one_call_per_step"] = [[[c] for c in turn] for turn in truth]

    if task.held_out:
        (hold,) = task.held_out
        if truth[hold] and hold > 0:
            traj = [[list(s) for s in turn] for turn in base]
            traj[hold - 1] = [*traj[hold - 1], [truth[hold][0]]]
            out["held_out_called_early"] = traj

    traj = [[list(s) for s in turn] for turn in base]
    traj[t] = [*traj[t], ["definitely_not_a_function(x=1)"]]
    out["unknown_function"] = traj

    traj = [[list(s) for s in turn] for turn in base]
    reader = truth[t][0]
    traj[0] = [*traj[0], *[[reader]] * 21]  # more than 20 executing steps in the first turn
    out["step_limit"] = traj
    return out


def play_ours(env, task_id: str, trajectory) -> tuple[bool, str | None, list[list[list[str]]]]:
    """Play a trajectory as assistant text; returns our verdict and what the official runner would see."""
    env.reset(seed=0, options={"task_id": task_id})
    seen: list[list[list[str]]] = []
    for steps in trajectory:
        seen.append([])
        for step in steps:
            _, _, terminated, _, info = env.step("[" + ", ".join(step) + "]")
            seen[-1].append(step)
            if terminated:
                return info["checker"]["valid"], info["checker"]["error_type"], seen
        _, _, terminated, _, info = env.step(END)
        if terminated:
            return info["checker"]["valid"], info["checker"]["error_type"], seen
    raise AssertionError("episode did not terminate after the last turn")


def _as_text(trajectory) -> list[list[str]]:
    return [["[" + ", ".join(step) + "]" for step in steps] for steps in trajectory]


@pytest.mark.parametrize("decoder", ["bfcl", "lenient"])
@pytest.mark.parametrize("category", bfcl.CATEGORIES)
def test_verdicts_identical_to_official_checker(category, decoder, all_tasks):
    env = gym.make("ToolUse-MultiTurn-v0", category=category, decoder=decoder)
    rng = random.Random(f"parity-{category}-{decoder}")
    kinds: Counter = Counter()
    outcomes: Counter = Counter()
    mismatches = []
    steps_compared = 0
    for task in [t for t in all_tasks if t.category == category]:
        verbatim = ground_truth_strings(task.task_id)
        if decoder == "bfcl":
            keyword = [[c.render() for c in turn] for turn in task.ground_truth]
            trajectories = perturbations(task, keyword, rng)
            trajectories["ground_truth_verbatim"] = [[list(turn)] if turn else [] for turn in verbatim]
        else:
            trajectories = perturbations(task, verbatim, rng)
        for kind, trajectory in trajectories.items():
            if decoder == "bfcl":
                text = _as_text(trajectory)
                ours = play_env(env, task.task_id, text, "python")
                run = official_run(task.task_id, text, "python")
                official = run.verdict
                if ours.executed != run.executed:
                    mismatches.append((task.task_id, kind, "step results", ours.executed, run.executed))
                steps_compared += len(run.executed)
                ours_verdict = ours.verdict
            else:
                ours_valid, ours_error, seen = play_ours(env, task.task_id, trajectory)
                official = official_verdict(task.task_id, seen)
                ours_verdict = (ours_valid, ours_error)
            kinds[kind] += 1
            outcomes[(kind, official[1])] += 1
            if ours_verdict != official:
                mismatches.append((task.task_id, kind, ours_verdict, official))
    env.close()
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:5]}"
    assert kinds["ground_truth"] == 200
    assert outcomes[("ground_truth", None)] == 200
    # the perturbations must exercise every failure mode, or this test could not catch a bug
    errors = Counter(error for (_, error), n in outcomes.items() for _ in range(n))
    for error_type in ("multi_turn:instance_state_mismatch", "multi_turn:force_terminated"):
        assert errors[error_type] > 0, errors
    assert errors["multi_turn:execution_response_mismatch"] + errors["multi_turn:empty_turn_model_response"] > 0
    failing = sum(n for (kind, error), n in outcomes.items() if not kind.startswith("ground_truth") and error)
    assert failing > 200
    if decoder == "bfcl":
        assert steps_compared > 2000, steps_compared
        verbatim_failing = sum(n for (kind, error), n in outcomes.items() if kind == "ground_truth_verbatim" and error)
        assert verbatim_failing > 0  # BFCL's decoder drops the positional arguments of the ground truth
        print(f"{category}: {verbatim_failing} verbatim ground truths fail; {steps_compared} steps compared; {errors}")
    else:
        print(f"{category} (lenient): {errors}")
