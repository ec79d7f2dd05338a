"""The token-sequence loop that trainer adapters share, on real BFCL tasks and SmolLM2's tokenizer.

The loop must never change a verdict. The same seeded episode is played twice: once with the
messages sent straight into the env, once through `play`, the loop the TRL adapter runs. Both
give the same reward and the same checker verdicts. The sequence must spell the env's rendering,
with a mask that tells the policy's tokens from the env's.
"""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import pytest

from tooluse_agents.backends.base import Generation
from tooluse_agents.backends.oracle import END_OF_TURN, OracleAgent
from tooluse_agents.integrations.token_sequences import PrefixBreak, play
from tooluse_agents.rollout.loop import RolloutJob, request_for
from tooluse_agents.train.grpo.rollouts import before_last_turn
from tooluse_agents.train.grpo.tasks import env_factory, next_turn_task
from tooluse_gym.envs.knobs import Knobs
from tooluse_gym.envs.multi_turn import bfcl_pool
from tooluse_gym.tasks import bfcl
from tooluse_gym.wrappers.rendered_prompt import load_tokenizer

SEED = 7
END = "<|im_end|>"  # SmolLM2's end of message, its stop token


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("smollm2-135m")


def oracle(request):
    return OracleAgent().message(request)


def silent(request):
    """Never calls a function: every checked turn fails."""
    return END_OF_TURN


class Writer:
    """An agent whose messages come from `write`, as if a model had sampled them: their tokens, then the stop token."""

    name = "policy"

    def __init__(self, tokenizer, write):
        self.tokenizer, self.write = tokenizer, write

    def generate(self, requests, sampling):
        out = []
        for request in requests:
            ids = self.tokenizer(self.write(request), add_special_tokens=False)["input_ids"]
            ids = [*ids, self.tokenizer.eos_token_id][: request.max_tokens or sampling.max_tokens]
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            out.append(Generation(text=text, token_ids=tuple(ids), logprobs=(-0.5,) * len(ids)))
        return out

    def describe(self):
        return {"name": self.name}

    def close(self):
        pass


def as_policy(tokenizer, write):
    return Writer(tokenizer, write)


def direct(env, write, task_id, seed):
    """The same messages sent straight into the env: reward, checker verdict, messages, last observation."""
    obs, start = env.reset(seed=seed, options={"task_id": task_id})
    info, sent = start, []
    while True:
        text = write(request_for(obs, start, info, seed))
        sent.append(text)
        obs, reward, terminated, truncated, info = env.step(text)
        if terminated or truncated:
            return reward, info["checker"], sent, obs


def spans(episode, keep):
    return [t for t, m in zip(episode.completion_ids, episode.env_mask, strict=True) if m == keep]


@pytest.mark.parametrize("write", [oracle, silent], ids=["oracle", "silent"])
@pytest.mark.parametrize(
    ("category", "task_id"), [("base", "multi_turn_base_0"), ("miss_func", "multi_turn_miss_func_47")]
)
def test_the_verdict_is_the_envs_whoever_drives_it(tokenizer, category, task_id, write):
    def make():
        return gym.make("ToolUse-MultiTurn-v0", category=category, task_ids=[task_id])

    reward, checker, sent, last = direct(make(), write, task_id, SEED)
    [episode] = play([make()], [RolloutJob(task_id, SEED)], tokenizer, as_policy(tokenizer, write))

    assert (episode.reward, episode.checker) == (reward, checker)
    assert reward == (1.0 if write is oracle else 0.0)
    assert episode.error is None and episode.untrained == 0
    assert episode.record.seed == SEED and episode.record.task_id == task_id
    # the policy's tokens are its messages, each closed by the stop token; the env wrote everything else
    assert len(episode.completion_ids) == len(episode.env_mask) == len(episode.logprobs)
    assert tokenizer.decode(spans(episode, 1)) == "".join(text + END for text in sent)
    assert all(lp == 0.0 for lp, m in zip(episode.logprobs, episode.env_mask, strict=True) if m == 0)
    env_text = tokenizer.decode(spans(episode, 0))
    results = [r for step in episode.record.steps for r in step.results]
    assert all(r in env_text for r in results)
    assert "<|im_start|>user" in env_text  # the next user turns are env text too
    # the whole sequence spells the env's own rendering of the finished conversation
    rendered = tokenizer.apply_chat_template(last["messages"], tools=last["tools"] or None, tokenize=False)
    assert tokenizer.decode([*episode.prompt_ids, *episode.completion_ids]) + "\n" == rendered


def test_the_held_out_functions_reach_the_policy_as_env_text(tokenizer):
    task_id = "multi_turn_miss_func_47"
    env = gym.make("ToolUse-MultiTurn-v0", category="miss_func", task_ids=[task_id])
    [episode] = play([env], [RolloutJob(task_id, SEED)], tokenizer, as_policy(tokenizer, oracle))
    task = bfcl.load_bfcl_tasks("miss_func", [task_id])[0]
    revealed = [doc["name"] for docs in task.held_out.values() for doc in docs]
    assert revealed == ["mean"]
    # the system prompt lists the functions as JSON; BFCL's notice shows the new ones' docs as a Python repr
    prompt = tokenizer.decode(episode.prompt_ids)
    env_text = tokenizer.decode(spans(episode, 0))
    assert '"name": "mean"' not in prompt and "'name': 'mean'" in env_text
    assert episode.reward == 1.0 and episode.untrained == 0


def test_scripted_turns_fold_into_the_prompt(tokenizer):
    full = bfcl.load_bfcl_tasks("base", ["multi_turn_base_0"])[0]
    turn = max(i for i in range(full.num_turns) if full.ground_truth[i])
    assert turn >= 1
    task = next_turn_task(full, turn)
    make = env_factory(bfcl_pool([task]), Knobs())

    def write(request):
        return oracle(request) if before_last_turn(request) else END_OF_TURN

    reward, checker, sent, _ = direct(make(), write, task.task_id, SEED)
    policy = as_policy(tokenizer, silent)
    [episode] = play([make()], [RolloutJob(task.task_id, SEED)], tokenizer, policy, scripted=before_last_turn)

    assert (episode.reward, episode.checker) == (reward, checker)
    # the oracle's turns are part of the prompt; the policy wrote the one message of the last turn
    assert tokenizer.decode(episode.completion_ids) == END_OF_TURN + END
    assert episode.env_mask == (1,) * len(episode.completion_ids)
    prompt = tokenizer.decode(episode.prompt_ids)
    assert all(text in prompt for text in sent[:-1]) and prompt.endswith("<|im_start|>assistant\n")


def test_a_prefix_break_cuts_the_sequence_and_keeps_the_verdict(tokenizer):
    task_id = "multi_turn_base_0"

    def make():  # the context template re-renders the whole history at every step: it breaks every time
        return gym.make("ToolUse-MultiTurn-v0", category="base", task_ids=[task_id], template="context")

    reward, checker, sent, _ = direct(make(), oracle, task_id, SEED)
    [episode] = play([make()], [RolloutJob(task_id, SEED)], tokenizer, as_policy(tokenizer, oracle))
    assert (episode.reward, episode.checker) == (reward, checker) and reward == 1.0
    assert len(sent) > 2 and episode.untrained == len(sent) - 1  # only the first message extends its prompt
    assert tokenizer.decode(episode.completion_ids) == sent[0] + END
    assert episode.env_mask == (1,) * len(episode.completion_ids)
    with pytest.raises(PrefixBreak, match=task_id):
        play([make()], [RolloutJob(task_id, SEED)], tokenizer, as_policy(tokenizer, oracle), on_prefix_break="raise")


def test_an_episode_out_of_room_is_a_recorded_failure(tokenizer):
    task_id = "multi_turn_base_0"
    env = gym.make("ToolUse-MultiTurn-v0", category="base", task_ids=[task_id])
    limit = 40
    [episode] = play(
        [env], [RolloutJob(task_id, SEED)], tokenizer, as_policy(tokenizer, oracle), max_completion_length=limit
    )
    assert episode.reward == 0.0 and episode.checker is None
    assert episode.error["type"] == "max_completion_length" and episode.record.error == episode.error
    assert 0 < len(episode.completion_ids) <= limit
    [roomy] = play([env], [RolloutJob(task_id, SEED)], tokenizer, as_policy(tokenizer, oracle), max_context=10**6)
    assert roomy.reward == 1.0 and len(roomy.completion_ids) > limit


def test_importing_the_adapter_loads_no_backend():
    code = (
        "import sys, tooluse_agents.integrations.trl; "
        "print([m for m in ('torch', 'transformers', 'trl', 'datasets', 'vllm') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
