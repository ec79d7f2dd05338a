"""A tiny random Llama with SmolLM2's tokenizer, briefly taught two MathAPI answers, and the tasks it plays.

The teaching (a few supervised steps until the answer's sequence probability is near one
half) exists so that groups sampled at temperature 1 have mixed rewards, which is what a
GRPO step needs to move parameters; the checker and the simulators are the real ones.
"""

from __future__ import annotations

from pathlib import Path

from tooluse_agents.train.grpo.tasks import TRAIN_PROTOCOL
from tooluse_gym.envs.multi_turn import bfcl_pool
from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.task import Task
from tooluse_gym.types import ToolCall

PROTOCOL = TRAIN_PROTOCOL.with_defaults(system_prompt="none", tool_format="python", max_steps_per_turn=1)
ANSWERS = {
    "add_2_3": ("Add 2 and 3.", "add", {"a": 2, "b": 3}),
    "mul_4_5": ("Multiply 4 by 5.", "multiply", {"a": 4, "b": 5}),
}


def math_task(task_id: str) -> Task:
    text, name, args = ANSWERS[task_id]
    docs = bfcl.function_docs()["MathAPI"]
    return Task(
        task_id=task_id,
        category="tiny",
        turns=(({"role": "user", "content": "Hello."},), ({"role": "user", "content": text},)),
        ground_truth=((), (ToolCall(name, args),)),
        functions=tuple(d for d in docs if d["name"] in ("add", "multiply")),
        backends=("MathAPI",),
        initial_config={},
        source="test",
    )


def pool():
    return bfcl_pool([math_task(t) for t in ANSWERS], label="tiny")


def build_tiny_model(folder: Path, target_prob: float = 0.4) -> Path:
    """Save the taught tiny model and the tokenizer to `folder`; returns it."""
    from transformers import AutoTokenizer

    from experiments.tools.check_model import teach
    from tooluse_agents.models.resolve import resolve_model, tiny_llama

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m"))
    model = tiny_llama(tokenizer)
    pairs = []
    for text, name, args in ANSWERS.values():
        # the observation of turn 1 after the oracle closed turn 0 ("Done.") with system prompt "none"
        messages = [
            {"role": "user", "content": "Hello."},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": text},
        ]
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        answer = "[" + ToolCall(name, args).render() + "]"
        p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        c = tokenizer(answer, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        pairs.append((p, c))
    teach(model, pairs, target_prob)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
