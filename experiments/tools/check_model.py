"""The model of the distributed training check: the tiny random Llama, taught the check's answers a little.

    python -m experiments.tools.check_model runs/check-model      # ~30 s on 2 cores; then
    tooluse train --nproc 2 agents/train/grpo/configs/cpu_distributed_check.yaml

GRPO moves the weights only on groups whose rewards differ, and the tiny random model's
output is noise, never a tool call. A few Adam steps on the check tasks' answers
(`scenarios/checks/tiny_math.yaml`, each prompt rendered by the environment exactly as the
agents see it, `tooluse_agents.train.sft.build_examples`), stopped once every answer's sequence probability
reaches `TARGET`, make groups sampled at temperature 1 come out mixed about half the time.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

CHECK_SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios" / "checks" / "tiny_math.yaml"
TARGET = 0.15
"""Each answer's probability to stop at: a group of 4 is then mixed about half the time (1 - 0.85^4 - 0.15^4)."""


def teach(
    model: torch.nn.Module, pairs: Sequence[tuple[Sequence[int], Sequence[int]]], target: float, max_steps: int = 100
) -> list[float]:
    """Adam steps on (prompt ids, completion ids) pairs until each completion's probability is >= `target`.

    Returns the probabilities the last step measured.
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    probs: list[float] = []
    for _ in range(max_steps):
        loss, probs = torch.zeros(()), []
        for prompt, completion in pairs:
            logits = model(torch.tensor([[*prompt, *completion]])).logits[0, len(prompt) - 1 : -1]
            logprob = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(completion)[:, None]).sum()
            probs.append(float(logprob.detach().exp()))
            loss = loss - logprob
        if min(probs) >= target:
            break
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return probs


def build(folder: str | Path, scenarios: str | Path = CHECK_SCENARIOS, target: float = TARGET) -> Path:
    """Save the taught model and its tokenizer to `folder` (seeded: the same weights every time)."""
    from transformers import AutoTokenizer

    from tooluse_agents.models.resolve import SMOLLM2, resolve_model, tiny_llama
    from tooluse_agents.train.grpo.tasks import TRAIN_PROTOCOL
    from tooluse_agents.train.sft import SFTConfig, build_examples

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(SMOLLM2))
    protocol = TRAIN_PROTOCOL.with_defaults(system_prompt="none", tool_format="python")
    config = SFTConfig(scenarios=str(scenarios), protocol=protocol)
    # step 0 closes the greeting turn; step 1 is the call that GRPO's next-turn prompt asks for
    everything = build_examples(config, tokenizer)
    examples = [e for e in everything if e.step == 1]
    texts = [tokenizer.decode(list(e.completion_ids)) for e in examples]
    if len(examples) != len({e.task_id for e in everything}) or not all(
        isinstance(t, str) and t.startswith("[") for t in texts
    ):
        raise ValueError(f"{scenarios}: every task needs a greeting turn, then a turn with one call")
    model = tiny_llama(tokenizer)
    # ~120 Adam steps reach the target from this init (transformers 5.19); 100 stopped at 0.01-0.02
    probs = teach(model, [(e.prompt_ids, e.completion_ids) for e in examples], target, max_steps=300)
    folder = Path(folder)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    print(f"{folder}: answer probabilities {', '.join(f'{p:.2f}' for p in probs)}", file=sys.stderr)
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    """Teach the tiny check model its answers; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m experiments.tools.check_model", description=__doc__.splitlines()[0]
    )
    parser.add_argument("folder", nargs="?", default="runs/check-model")
    parser.add_argument("--scenarios", default=str(CHECK_SCENARIOS))
    parser.add_argument("--target", type=float, default=TARGET)
    args = parser.parse_args(argv)
    build(args.folder, args.scenarios, args.target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
