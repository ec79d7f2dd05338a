"""The result tables of the README and the pages, from ``benchmarks/results/*.json`` (`gen_pages` fills them)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from typing import Any

from pages_common import ROOT, _load, _not_measured, _table
from single_turn_tables import format_grid_rows, seed_stability_rows, single_turn_speed_line
from study_tables import ARM_LABELS, headline_rows


def _min(seconds: float) -> str:
    return f"{seconds / 60:.1f}"


def _curve(arm: dict[str, Any]) -> str:
    return ", ".join(f"{p['train_s']:.0f}: {p['reward']:.3f}".replace("0.", ".", 1) for p in arm["curve"])


def efficiency_table(name: str) -> str:
    data = _load(name)
    if data is None:
        return _not_measured(name, "python -m experiments.grpo_efficiency --plot")
    arms = ("vanilla", "efficient")
    v, e = (data[a] for a in arms)

    def skipped(arm: dict[str, Any]) -> str:
        per = arm.get("prompts_per_epoch") or {}
        if not per:
            return str(arm["prompts_skipped"])
        return (
            " / ".join(str(per[k]["skipped"]) for k in sorted(per, key=int))
            + f" of {next(iter(per.values()))['active'] + next(iter(per.values()))['skipped']}"
        )

    def row(label: str, fn: Callable[[dict[str, Any]], str]) -> list[str]:
        return [label, fn(v), fn(e)]

    target = data["target"]
    rows = [
        row("steps (epochs started)", lambda a: f"{a['steps']} ({a['epochs']})"),
        row(
            "training time: rollout / update / sync (min)",
            lambda a: " / ".join(_min(a["time_split_s"][k]) for k in ("rollout", "update", "sync")),
        ),
        row("rollouts generated / used in updates", lambda a: f"{a['rollouts_generated']:,} / {a['rollouts_used']:,}"),
        row("prompts skipped by the filter, per epoch", skipped),
        row("update tokens with zero advantage", lambda a: f"{a['zero_advantage_update_frac']:.0%}"),
        row("train reward (mean over steps)", lambda a: f"{a['train_reward_mean']:.3f}"),
        row(
            "held-out reward, start -> final (binomial SE)",
            lambda a: f"{a['heldout_start']:.3f} -> **{a['heldout_final']:.3f}** ({a['heldout_se']:.3f})",
        ),
        row(
            "held-out prompts gained / lost",
            lambda a: f"{a['heldout_paired']['gained']} / {a['heldout_paired']['lost']}",
        ),
        row("held-out curve (training s: reward)", _curve),
        row(
            f"training time to the target ({target:.3f})",
            lambda a: "not reached" if a.get("time_to_target_s") is None else f"{a['time_to_target_s']:,.0f} s",
        ),
    ]
    checks = ", ".join(f"`{k}`: {'met' if ok else 'not met'}" for k, ok in data["checks"].items())
    speedup = data["speedup_to_target"]
    return (
        _table(["", data["labels"]["vanilla"], data["labels"]["efficient"]], rows)
        + f"\nFrom `benchmarks/results/{name}`: {data['heldout_prompts']} held-out prompts, "
        + f"budget {data['budget_s']:,.0f} s of training per arm, evaluations every {data['eval_every_s']:.0f} s. "
        + f"Vanilla's gain {data['vanilla_gain']:+.3f} (unpaired SE {data['vanilla_gain_se']:.3f}, "
        + f"paired SE {data['vanilla_gain_paired_se']:.3f}); "
        + f"speed-up to target: {'null (the gate was not passed)' if speedup is None else f'{speedup:.2f}x'}. "
        + f"Checks: {checks}.\n"
    )


def status_lines() -> str:
    """The docs home page's "where things stand": the pre-registered study's verdicts, one line each."""
    name = "grpo_efficiency_v2.json"
    data = _load(name)
    if data is None:
        command = "python -m experiments.efficiency_v2 report"
        return "- GRPO efficiency v2 (pre-registered): " + _not_measured(name, command)
    seeds, verdicts, targets = data["seeds"], data["verdicts"], data["targets"]
    learned = verdicts["learned"]
    gains = ", ".join(f"{v['gain']:+.3f} (p = {v['p']:.2g})" for v in learned["per_seed"].values())
    lines = [
        f"- GRPO from the weak warm-start learns (pre-registered study v2, {len(seeds['preregistered'])} seeds, "
        f"{data['budget_s'] / 60:.0f} min of training per run): vanilla GRPO's held-out reward from "
        f"{targets['start']:.3f}, gain per seed {gains} (seeds {', '.join(map(str, seeds['complete'])) or 'none'} "
        f"complete); verdict: {learned['status']} (`{name}`)."
    ]
    for arm, v in verdicts["speedup"].items():
        target, label = v["target"], ARM_LABELS.get(arm, arm)
        no_loss = verdicts["no_loss"][arm]
        per_seed = ", ".join(v["per_seed"].values())
        lines.append(
            f"- {label[0].upper()}{label[1:]}: reached {target} "
            f"(held-out {targets[target]:.3f}) {v['geometric_mean']} as fast as vanilla (geometric mean; per seed "
            f"{per_seed}), final minus vanilla's {no_loss['mean_delta']:+.3f} (mean over seeds); "
            f"faster: {v['status']}, no loss: {no_loss['status']}."
        )
    return "\n".join(lines) + "\n"


def headline_table() -> str:
    """The README's results at a glance; superseded studies are on the history page, not here."""
    rows = headline_rows() + seed_stability_rows() + format_grid_rows()
    return _table(["what", "result", "verdict", "file"], rows)


def env_speed_table() -> str:
    name = "env_throughput.json"
    data = _load(name)
    if data is None:
        return _not_measured(name, "make bench")
    rows = []
    decoders = data["decoders"]
    official = next(iter(decoders.values()))["official_ms"]
    rows.append(["", "bfcl_eval execute + multi_turn_checker", f"{official:.2f}", "1.00×"])
    for decoder, d in decoders.items():
        rows.append(
            [f"`{decoder}`", "first play of each task", f"{d['first_play_ms']:.2f}", f"{d['first_play_ratio']:.2f}×"]
        )
        rows.append(
            [
                f"`{decoder}`",
                "repeat play (multi-seed evaluation, GRPO groups)",
                f"{d['repeat_play_ms']:.2f}",
                f"{d['repeat_play_ratio']:.2f}×",
            ]
        )
    m = data["machine"]
    return (
        _table(["decoder", "path", "ms / episode", "official / ours"], rows)
        + f"\n{data['episodes']} ground-truth episodes, median of {data['passes']} passes; "
        + f"{m['cpu_model']}, Python {m['python']}, bfcl-eval {m['bfcl_eval']} "
        + f"(`benchmarks/results/{name}`).\n"
    )


def rollout_schedule_table() -> str:
    name = "rollout_schedule.json"
    data = _load(name)
    if data is None:
        return _not_measured(name, "python benchmarks/rollout_schedule.py")

    def in_flight(w: dict[str, Any], schedule: str) -> str:
        values = sorted(
            p["mean_in_flight"]
            for p in w.get("passes", [])
            if p["schedule"] == schedule and p.get("mean_in_flight") is not None
        )
        return f"{statistics.median(values):.1f}" if values else "-"

    rows = []
    for part, label in (("vllm_in_process", "vLLM in process"), ("openai_server", "OpenAI agent -> tooluse-serve")):
        for workload, w in (data.get(part) or {}).items():
            rows.append(
                [
                    label,
                    f"{workload} (max_tokens {w['max_tokens']})",
                    f"{w['median_s']['lockstep']:.1f}",
                    f"{w['median_s']['async']:.1f}",
                    f"**{w['ratio_lockstep_over_async']:.2f}×**",
                    f"{in_flight(w, 'lockstep')} / {in_flight(w, 'async')}",
                    f"{w['identical_episode_fraction_min']:.0%}",
                ]
            )
    s, m = data["settings"], data["machine"]
    header = [
        "backend",
        "workload",
        "lockstep (s, median)",
        "async (s, median)",
        "lockstep / async",
        "requests in flight (lockstep / async)",
        "identical episodes",
    ]
    return (
        _table(header, rows)
        + f"\n{s['episodes']} episodes ({s['tasks']}), {s['num_envs']} envs, {s['reps']} reps, {s['dtype']}, "
        + f"temperature {s['temperature']}; {m['cpu_model']}, Python {m['python']}; `{data['command'].strip()}` "
        + f"at `{data['commit'][:7]}` (`benchmarks/results/{name}`).\n"
    )


def dtype_cpu_table() -> str:
    name = "dtype_cpu.json"
    data = _load(name)
    if data is None:
        return _not_measured(name, "python benchmarks/dtype_cpu.py")
    r, u, ratio = data["rollouts"], data["update_1000_tokens"], data["bf16_over_fp32"]
    rows = []
    for dtype in ("float32", "bfloat16"):
        rows.append(
            [
                f"`{dtype}`",
                f"{r[dtype]['one_at_a_time']['tok_per_s']:.1f}",
                f"{r[dtype]['batched']['tok_per_s']:.1f}",
                f"{u[dtype]['forward_s']:.2f} + {u[dtype]['backward_s']:.2f}",
            ]
        )
    rows.append(
        [
            "bf16 / fp32 (speed)",
            f"{ratio['rollouts_one_at_a_time']:.2f}×",
            f"{ratio['rollouts_batched']:.2f}×",
            f"{ratio['update_speed']:.2f}×",
        ]
    )
    m = data["machine"]
    flags = ", ".join(m["bf16_flags"]) or "none"
    return (
        _table(
            [
                "dtype",
                "rollouts one at a time (tok/s)",
                f"rollouts batched, {r['float32']['batched']['num_envs']} envs (tok/s)",
                "update of 1,000 tokens: forward + backward (s)",
            ],
            rows,
        )
        + f"\n{m['cpu_model']} (bf16 flags: {flags}); `dtype: auto` resolved to `{data['auto_resolves_to']}` when this "
        + "was measured. "
        + f"`{data['command'].strip()}` at `{data['commit'][:7]}` (`benchmarks/results/{name}`).\n"
    )


def known_issues_table() -> str:
    path = ROOT / "tooluse_gym" / "tasks" / "bfcl_known_issues.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    entries, left_out = data.get("entries", []), data.get("left_out", [])
    by_summary: dict[tuple[str, str], list[str]] = {}
    for entry in entries:
        by_summary.setdefault((entry["kind"], entry["summary"]), []).append(entry["task_id"])
    rows = [[", ".join(f"`{t}`" for t in ids), f"`{kind}`", summary] for (kind, summary), ids in by_summary.items()]
    return (
        f"Registry version `{data.get('version')}` (for bfcl-eval `{data.get('bfcl_version')}`): "
        f"{len(entries)} entries, {len(left_out)} reports checked and left out "
        f"(`tooluse_gym/tasks/bfcl_known_issues.json`).\n\n"
        + _table(["tasks", "kind", "why"], rows)
        + "\nLeft out:\n\n"
        + _table(["task", "why not"], [[f"`{e['task_id']}`", e["reason"]] for e in left_out])
    )


def speed_summary() -> str:
    """One line per speed measurement, for the README (the tables are on the results page)."""
    lines = []
    env = _load("env_throughput.json")
    if env is None:
        lines.append("- Env speed against bfcl_eval: " + _not_measured("env_throughput.json", "make bench").strip())
    else:
        official = next(iter(env["decoders"].values()))["official_ms"]
        parts = [
            f"`{name}` decoder {d['first_play_ratio']:.2f}× first play / {d['repeat_play_ratio']:.2f}× repeat play"
            for name, d in env["decoders"].items()
        ]
        lines.append(
            f"- Env speed against bfcl_eval's executor + `multi_turn_checker` ({official:.2f} ms an episode, same "
            f"process, all {env['episodes']} ground-truth episodes): {', '.join(parts)} (`env_throughput.json`)."
        )
    schedule = _load("rollout_schedule.json")
    if schedule is None:
        lines.append(
            "- Async against lockstep rollouts: "
            + _not_measured("rollout_schedule.json", "python benchmarks/rollout_schedule.py").strip()
        )
    else:
        parts = []
        for part, label in (("vllm_in_process", "vLLM in process"), ("openai_server", "against `tooluse-serve`")):
            workloads = schedule.get(part) or {}
            if workloads:
                ratios = " / ".join(f"{w['ratio_lockstep_over_async']:.2f}×" for w in workloads.values())
                parts.append(f"{ratios} {label}")
        names = " / ".join(next((schedule.get(p) for p in ("vllm_in_process", "openai_server") if schedule.get(p)), {}))
        same = min(
            w["identical_episode_fraction_min"]
            for p in ("vllm_in_process", "openai_server")
            for w in (schedule.get(p) or {}).values()
        )
        lines.append(
            f"- Async against lockstep rollouts (lockstep time / async time, {names} messages): {', '.join(parts)}; "
            f"{same:.0%} of episodes identical under both (`rollout_schedule.json`)."
        )
    dtype = _load("dtype_cpu.json")
    if dtype is None:
        lines.append(
            "- bf16 against fp32 on a CPU: " + _not_measured("dtype_cpu.json", "python benchmarks/dtype_cpu.py").strip()
        )
    else:
        r = dtype["bf16_over_fp32"]
        flags = ", ".join(dtype["machine"]["bf16_flags"]) or "no bf16 flags"
        lines.append(
            f"- bf16 against fp32 on this CPU ({dtype['machine']['cpu_model']}, {flags}): "
            f"{r['rollouts_one_at_a_time']:.2f}× vLLM rollouts one at a time, {r['rollouts_batched']:.2f}× batched, "
            f"{r['update_speed']:.2f}× a 1,000-token update (`dtype_cpu.json`)."
        )
    return "\n".join(lines) + "\n" + single_turn_speed_line()


def env_server_table() -> str:
    """`tooluse serve-env` under load (per number of sessions) and the fault checks, from env_server.json."""
    name = "env_server.json"
    data = _load(name)
    if data is None:
        return _not_measured(name, "python -m benchmarks.env_server --write")
    rows = []
    for r in data["levels"]:
        v = r["verdicts"]
        rows.append(
            [
                str(r["sessions"]),
                f"{r['wire_episodes_per_s']:,.1f}",
                f"{r['in_process_episodes_per_s']:,.1f}",
                f"**{r['ratio_wire_over_in_process']:.2f}×**",
                f"{r['step_latency_ms']['p50']:.2f} / {r['step_latency_ms']['p99']:.2f}",
                f"{r['memory']['per_session_kib']:,.0f}",
                f"{v['equal']} / {v['episodes']} (lost {v['lost']}, crossed {v['crossed']})",
            ]
        )
    header = [
        "sessions",
        "episodes/s over the wire",
        "episodes/s in-process",
        "wire / in-process",
        "step latency p50 / p99 (ms)",
        "memory per session (KiB)",
        "verdicts equal to in-process",
    ]
    checks = data["fault_checks"]
    d = data["faults"]["disconnects"]
    failed = [k for k, ok in checks.items() if not ok]
    s, m = data["settings"], data["machine"]
    return (
        _table(header, rows)
        + f"\nFaults: {len(checks) - len(failed)} of {len(checks)} checks pass"
        + (f" (failed: {', '.join(f'`{k}`' for k in failed)})" if failed else "")
        + f"; {d['clients']:,} clients that left mid-episode were all freed (open sessions after each wave: "
        + f"{', '.join(map(str, d['open_sessions_after_each_wave']))}, the bystander); memory growth over the "
        + f"last third of them {d['growth_kib_per_client_last_third']:.2f} KiB a client. "
        + f"{s['episodes_per_level']} oracle episodes a level; {m['cpu_model']}, {m['cpu_count']} CPUs, "
        + f"Python {m['python']}; `{data['command'].strip()}` at `{data['commit'][:7]}` "
        + f"(`benchmarks/results/{name}`).\n"
    )
