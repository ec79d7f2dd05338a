"""Classic-RL baselines: stable-baselines3 PPO and DQN on the candidate-action env, next to a random policy.

    python -m experiments.tools.sb3_baselines --out runs/sb3-baselines         # curriculum train -> held-out
    python -m experiments.tools.sb3_baselines --timesteps 5000 --seeds 0 --algorithms random ppo

Each algorithm is trained on the train split's scenarios wrapped in `CandidateActions` (a
`Discrete(K)` choice among candidate messages, see its docstring for what that setting leaks),
then played on the held-out split with the official terminal reward, through the one rollout loop
(`tooluse_agents.rollout.loop.run_rollouts`, the policy as its agent: `PolicyAgent`); SB3 owns its
training loop (``learn``), which reads only what ``step`` returns. Episodes are written
as ``episodes.jsonl`` records and summarized by `tooluse_agents.runs.results`, the evaluation harness's
format and aggregation, so the table reads like ``tooluse eval``'s; ``--llm-results`` adds
rows from ``tooluse eval`` ``results.json`` files of text agents on the same split.

The policies score every candidate with one shared network over (context features,
candidate features), so a candidate's score does not depend on its slot; the value
function (PPO) sees the whole observation.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3 import DQN, PPO
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.dqn.policies import DQNPolicy
from torch import nn

import tooluse_gym  # noqa: F401  (registers the env ids)
from tooluse_agents.backends.base import AgentRequest, Generation, SamplingConfig
from tooluse_agents.integrations.chat_episode import task_ids_of
from tooluse_agents.rollout.loop import RolloutJob, run_rollouts
from tooluse_agents.runs.jsonl import JsonlWriter
from tooluse_agents.runs.results import format_table, summarize
from tooluse_gym.envs import SCENARIO_ID
from tooluse_gym.envs.knobs import ENV_DEFAULTS, Knobs
from tooluse_gym.wrappers.candidates import CandidateActions, CandidateConfig
from tooluse_gym.wrappers.features import CANDIDATE_FEATURES, CONTEXT_FEATURES

ALGORITHMS = ("random", "ppo", "dqn")


# --- policies ------------------------------------------------------------------------------


class CandidateScorer(nn.Module):
    """One score per candidate from a shared MLP over (context features, that candidate's features)."""

    def __init__(self, num_candidates: int, hidden: int = 64):
        super().__init__()
        self.k, self.c, self.f = num_candidates, len(CONTEXT_FEATURES), len(CANDIDATE_FEATURES)
        self.net = nn.Sequential(
            nn.Linear(self.c + self.f, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1)
        )

    def forward(self, x: th.Tensor) -> th.Tensor:
        context = x[:, : self.c].unsqueeze(1).expand(-1, self.k, -1)
        candidates = x[:, self.c :].reshape(-1, self.k, self.f)
        return self.net(th.cat([context, candidates], dim=-1)).squeeze(-1)


class _ScorerAndCritic(nn.Module):
    """PPO's `mlp_extractor`: actor latent = candidate scores (K), critic latent = an MLP of the observation."""

    def __init__(self, obs_dim: int, num_candidates: int, hidden: int = 64):
        super().__init__()
        self.policy_net = CandidateScorer(num_candidates, hidden)
        self.value_net = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.latent_dim_pi, self.latent_dim_vf = num_candidates, hidden

    def forward(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return self.policy_net(features), self.value_net(features)

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        return self.policy_net(features)

    def forward_critic(self, features: th.Tensor) -> th.Tensor:
        return self.value_net(features)


class CandidatePPOPolicy(ActorCriticPolicy):
    """Actor-critic whose action logits are the candidate scores (no slot-specific output layer)."""

    def _build_mlp_extractor(self) -> None:
        assert isinstance(self.action_space, spaces.Discrete)
        # SB3 annotates MlpExtractor, but takes any module with its latent dims and forward_actor/critic
        # (its custom-policy guide assigns a plain nn.Module here).
        self.mlp_extractor = _ScorerAndCritic(self.features_dim, int(self.action_space.n))  # type: ignore[assignment]

    def _build(self, lr_schedule: Callable[[float], float]) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()
        extractor: nn.Module = self.mlp_extractor
        assert isinstance(extractor, _ScorerAndCritic)
        last = extractor.policy_net.net[-1]
        assert isinstance(last, nn.Linear)
        nn.init.orthogonal_(last.weight, gain=0.01)  # near-uniform initial policy
        nn.init.zeros_(last.bias)
        # torch types Optimizer.__init__ without lr; SB3's own _build ignores the same error.
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]


class CandidateDQNPolicy(DQNPolicy):
    """DQN whose Q-value for a candidate is its score."""

    def make_q_net(self):
        q_net = super().make_q_net()
        q_net.q_net = CandidateScorer(int(self.action_space.n)).to(self.device)
        return q_net


# --- environments, training, evaluation ----------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BaselineConfig:
    """One baselines run.

    Attributes:
        train: Scenario files (or folders) to train on.
        heldout: Scenario files to evaluate on.
        algorithms: Among ``random``, ``ppo``, ``dqn``.
        timesteps: Environment steps of training per algorithm and seed.
        seeds: One training run and one evaluation pass per seed.
        num_candidates: K of `CandidateActions`.
        group_size: Calls per function group of `CandidateActions`.
        train_reward: ``shaped`` (+-1/D per pick matching the ground truth or not, plus the
            terminal reward) or ``terminal``; evaluation always uses the terminal reward.
        train_end_on_mistake: Truncate training episodes at the first pick that does not match
            the ground truth (evaluation episodes always run to their end).
        protocol: Knobs of the text env under the wrapper (the scenario env's defaults unless changed).
    """

    train: tuple[str, ...] = ("scenarios/curriculum/train.yaml",)
    heldout: tuple[str, ...] = ("scenarios/curriculum/heldout.yaml",)
    algorithms: tuple[str, ...] = ALGORITHMS
    timesteps: int = 30_000
    seeds: tuple[int, ...] = (0, 1)
    num_candidates: int = 7
    group_size: int = 2
    train_reward: str = "shaped"
    train_end_on_mistake: bool = True
    protocol: Knobs = ENV_DEFAULTS[SCENARIO_ID]

    def __post_init__(self) -> None:
        unknown = set(self.algorithms) - set(ALGORITHMS)
        if unknown:
            raise ValueError(f"unknown algorithms {sorted(unknown)}; known: {', '.join(ALGORITHMS)}")

    def candidates(self, *, training: bool = False) -> CandidateConfig:
        return CandidateConfig(
            num_candidates=self.num_candidates,
            group_size=self.group_size,
            reward=self.train_reward if training else "terminal",
            end_on_mistake=training and self.train_end_on_mistake,
        )


def make_candidate_env(
    paths: Sequence[str], candidates: CandidateConfig, *, task_ids: Sequence[str] | None = None, **knobs: Any
) -> CandidateActions:
    """`ToolUse-Scenario-v0` over the scenario files, wrapped in `CandidateActions`."""
    return CandidateActions(gym.make(SCENARIO_ID, path=list(paths), task_ids=task_ids, **knobs), candidates)


SETTINGS: dict[str, dict[str, Any]] = {
    "ppo": {"n_steps": 512, "batch_size": 128, "n_epochs": 4, "learning_rate": 1e-3, "gamma": 0.99, "ent_coef": 0.01},
    "dqn": {
        "learning_rate": 1e-3,
        "buffer_size": 50_000,
        "learning_starts": 1000,
        "batch_size": 64,
        "train_freq": 4,
        "target_update_interval": 500,
        "exploration_fraction": 0.3,
        "exploration_final_eps": 0.05,
        "gamma": 0.99,
    },
}
"""Each algorithm's hyperparameters: small, CPU-friendly settings."""


def train_model(algorithm: str, env: gym.Env, timesteps: int, seed: int) -> Any:
    """Train PPO or DQN (`SETTINGS`) with the candidate-scoring policies."""
    if algorithm not in SETTINGS:
        raise ValueError(f"cannot train {algorithm!r}")
    settings = SETTINGS[algorithm]
    if algorithm == "ppo":
        return PPO(CandidatePPOPolicy, env, seed=seed, device="cpu", **settings).learn(total_timesteps=timesteps)
    return DQN(CandidateDQNPolicy, env, seed=seed, device="cpu", **settings).learn(total_timesteps=timesteps)


Policy = Callable[[np.ndarray], int]


def model_policy(model: Any) -> Policy:
    return lambda obs: int(model.predict(obs, deterministic=True)[0])


def random_policy(num_candidates: int, seed: int) -> Policy:
    rng = np.random.default_rng(seed)
    return lambda obs: int(rng.integers(num_candidates))


class PolicyAgent:
    """A classic-RL policy as an agent of the one rollout loop (`tooluse_agents.rollout.loop.run_rollouts`).

    Each request's observation is `CandidateActions`' feature vector; a generation's text is the
    number of the candidate the policy picks (`CandidateActions.step` takes ``int(action)``), so
    the episode's record holds the candidate message the wrapper sent.
    """

    def __init__(self, policy: Policy, identity: dict[str, Any]):
        self.policy, self.identity, self.name = policy, dict(identity), str(identity["name"])

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig) -> list[Generation]:
        return [Generation(text=str(self.policy(np.asarray(r.observation)))) for r in requests]

    def describe(self) -> dict[str, Any]:
        return dict(self.identity)

    def close(self) -> None:
        pass


def play(
    make_env: Callable[[], gym.Env], policy: Policy, task_ids: Sequence[str], seed: int, agent: dict[str, Any]
) -> list[dict[str, Any]]:
    """One episode per task with the official terminal reward; episode records plus ``candidate_accuracy``.

    The episodes are played one at a time in task order (a random policy draws its picks in that order).
    """
    picks: dict[int, list[bool]] = {}

    def on_step(number: int, info: Any) -> None:
        picks.setdefault(number, []).append(bool(info["candidate_correct"]))

    episodes = run_rollouts(
        make_env,
        PolicyAgent(policy, agent),
        [RolloutJob(task_id, seed) for task_id in task_ids],
        sampling=SamplingConfig(),
        num_envs=1,
        schedule="lockstep",
        on_step=on_step,
    )
    records = []
    for episode in episodes:
        record = episode.record.to_dict()
        chosen = picks.get(episode.number, [])
        record["candidate_accuracy"] = sum(chosen) / len(chosen) if chosen else 0.0
        records.append(record)
    return records


def evaluate_algorithm(config: BaselineConfig, algorithm: str, out: Path, log: Callable[[str], None] = print):
    """Train (unless random) and evaluate one algorithm over the configured seeds; writes ``out/<algorithm>``."""
    folder = out / algorithm
    folder.mkdir(parents=True, exist_ok=True)
    heldout = make_candidate_env(config.heldout, config.candidates(), **config.protocol.to_dict())
    task_ids = task_ids_of(heldout)

    def make_heldout() -> gym.Env:
        return make_candidate_env(config.heldout, config.candidates(), **config.protocol.to_dict())

    records, train_s = [], []
    for seed in config.seeds:
        agent: dict[str, Any] = {"name": algorithm, "seed": seed}
        if algorithm == "random":
            policy = random_policy(config.num_candidates, seed)
        else:
            train_env = make_candidate_env(config.train, config.candidates(training=True), **config.protocol.to_dict())
            start = time.perf_counter()
            model = train_model(algorithm, train_env, config.timesteps, seed)
            train_s.append(time.perf_counter() - start)
            agent.update(
                timesteps=config.timesteps,
                train_reward=config.train_reward,
                train_end_on_mistake=config.train_end_on_mistake,
            )
            log(f"{algorithm} seed {seed}: trained {config.timesteps} steps in {train_s[-1]:.0f} s")
            policy = model_policy(model)
        records += play(make_heldout, policy, task_ids, seed, agent)
    with JsonlWriter(folder / "episodes.jsonl") as writer:
        for record in records:
            writer.write(record)
    summary = summarize(records)
    accuracy = statistics.fmean(r["candidate_accuracy"] for r in records)
    results = {
        "algorithm": algorithm,
        "config": {**asdict(config), "algorithms": list(config.algorithms)},
        "protocol": heldout.protocol.to_dict(),
        "fingerprint": heldout.protocol.fingerprint(),
        "summary": summary,
        "candidate_accuracy": accuracy,
        "train_seconds": train_s,
    }
    (folder / "results.json").write_text(json.dumps(results, indent=2))
    (folder / "report.md").write_text(f"# {algorithm}\n\n{format_table(summary)}\n")
    return results


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def results_markdown(runs: Sequence[dict[str, Any]], llm: Sequence[dict[str, Any]] = ()) -> str:
    """One row per policy: held-out success (mean ± std over seeds) per category and overall."""
    categories = sorted({c for r in [*runs, *llm] for c in r["summary"]["categories"]})
    head = "| policy | " + " | ".join(categories) + " | overall (± std) | candidate accuracy | train time |"
    lines = [head, "|" + "---|" * (len(categories) + 4)]
    for r in runs:
        s = r["summary"]
        cells = [_pct(s["categories"].get(c, {}).get("mean")) for c in categories]
        train = f"{statistics.fmean(r['train_seconds']):.0f} s" if r["train_seconds"] else "-"
        overall = f"{_pct(s['overall']['mean'])} ± {_pct(s['overall']['std'])}"
        accuracy = _pct(r["candidate_accuracy"])
        lines.append(f"| {r['algorithm']} | " + " | ".join(cells) + f" | {overall} | {accuracy} | {train} |")
    for r in llm:
        s = r["summary"]
        cells = [_pct(s["categories"].get(c, {}).get("mean")) for c in categories]
        name = r.get("agent", {}).get("model") or r.get("agent", {}).get("name", "llm")
        overall = f"{_pct(s['overall']['mean'])} ± {_pct(s['overall']['std'])}"
        lines.append(f"| {name} (text, tooluse eval) | " + " | ".join(cells) + f" | {overall} | n/a | - |")
    return "\n".join(lines) + "\n"


def run(config: BaselineConfig, out: Path, llm_results: Sequence[Path] = ()) -> str:
    """Every configured algorithm, then ``out/baselines.md`` (returned) and ``out/baselines.json``."""
    out.mkdir(parents=True, exist_ok=True)
    runs = [evaluate_algorithm(config, a, out) for a in config.algorithms]
    llm = [json.loads(Path(p).read_text()) for p in llm_results]
    table = results_markdown(runs, llm)
    k = config.num_candidates
    text = (
        f"# Classic-RL baselines (CandidateActions, K={k}; diagnostic setting, not comparable to text agents)\n\n"
        f"Trained on {', '.join(config.train)} for {config.timesteps} steps ({config.train_reward} reward, "
        f"end on mistake: {config.train_end_on_mistake}), "
        f"evaluated on {', '.join(config.heldout)} with the terminal reward, seeds {list(config.seeds)}. "
        f"Success rate (%) per category; candidate accuracy = share of picks matching the ground truth "
        f"(chance {100 / k:.1f}).\n\n{table}"
    )
    (out / "baselines.md").write_text(text)
    (out / "baselines.json").write_text(json.dumps({"runs": runs, "llm": llm}, indent=2))
    return text


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train", nargs="+", default=list(BaselineConfig.train))
    p.add_argument("--heldout", nargs="+", default=list(BaselineConfig.heldout))
    p.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=ALGORITHMS)
    p.add_argument("--timesteps", type=int, default=BaselineConfig.timesteps)
    p.add_argument("--seeds", nargs="+", type=int, default=list(BaselineConfig.seeds))
    p.add_argument("--num-candidates", type=int, default=BaselineConfig.num_candidates)
    p.add_argument("--train-reward", choices=("shaped", "terminal"), default=BaselineConfig.train_reward)
    p.add_argument("--no-end-on-mistake", action="store_true", help="train on whole episodes")
    p.add_argument("--llm-results", nargs="*", default=[], help="tooluse eval results.json files on the same split")
    p.add_argument("--threads", type=int, default=1, help="torch threads (small networks run fastest on one)")
    p.add_argument("--out", type=Path, default=Path("runs/sb3-baselines"))
    args = p.parse_args(argv)
    th.set_num_threads(args.threads)
    config = BaselineConfig(
        train=tuple(args.train),
        heldout=tuple(args.heldout),
        algorithms=tuple(args.algorithms),
        timesteps=args.timesteps,
        seeds=tuple(args.seeds),
        num_candidates=args.num_candidates,
        train_reward=args.train_reward,
        train_end_on_mistake=not args.no_end_on_mistake,
    )
    print(run(config, args.out, [Path(p) for p in args.llm_results]))


if __name__ == "__main__":
    main()
