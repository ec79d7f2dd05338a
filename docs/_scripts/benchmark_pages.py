"""The benchmarks' tables and lines of the README and the pages, from ``benchmarks/results/*.json``.

Speed measured as ratios against a reference in the same run (env, rollouts, dtype, the env server,
single-turn), the known-issues registry, and `make run`'s first-run table. The studies' tables are
in `result_tables`.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from pages_common import DOCS, ROOT, _load, _not_measured, _table


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
    for part, label in (("vllm_in_process", "vLLM in process"), ("openai_server", "OpenAI agent -> tooluse serve")):
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
        for part, label in (("vllm_in_process", "vLLM in process"), ("openai_server", "against `tooluse serve`")):
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
    return "\n".join(lines) + "\n" + single_turn_speed_line() + server_load_line()


def server_load_line() -> str:
    """The README's line for `tooluse serve-env` at the load goal's sessions, from the think-time load JSONs."""
    runs = {
        wire: _load(name) for wire, name in (("whole", "env_server_load.json"), ("delta", "env_server_load_delta.json"))
    }
    if runs["whole"] is None:
        return ""
    goal = runs["whole"]["goal"]
    parts = []
    for wire, data in runs.items():
        rows = [r for r in (data or {}).get("levels", []) if r["sessions"] == goal["sessions"] and r["workers"] > 1]
        if rows:
            at = ", ".join(f"{r['step_latency_ms']['p99']:.1f} ms on {r['workers']} workers" for r in rows)
            parts.append(f"{at} ({wire} observations)")
    equal = all(d["all_verdicts_equal"] for d in runs.values() if d is not None)
    return (
        f"- `tooluse serve-env` holding {goal['sessions']:,} sessions that think {goal['think_s']:g} s between steps, "
        f"p99 step latency: {'; '.join(parts)}; "
        f"{'every verdict equal to in-process' if equal else 'SOME VERDICTS DIFFER from in-process'} "
        "(`env_server_load.json`, `env_server_load_delta.json`).\n"
    )


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


def env_server_wire_table() -> str:
    """Bytes a `tooluse serve-env` session sends per step, whole observations against deltas (env_server_wire.json)."""
    name = "env_server_wire.json"
    data = _load(name)
    if data is None:
        return _not_measured(name, "python -m benchmarks.env_server_wire --write")
    rows = []
    for r in data["cases"]:
        step, episode = r["step_bytes_mean"], r["episode_bytes_mean"]
        rows.append(
            [
                r["case"],
                f"{r['reset_bytes_mean']['full']:,}",
                f"{step['full']:,}",
                f"{step['delta']:,}",
                f"**{r['step_ratio_full_over_delta']:.1f}×**",
                f"{episode['full'] / 1024:,.0f} / {episode['delta'] / 1024:,.0f}",
                f"{r['rebuilt_equal']} / {r['observations']}",
            ]
        )
    header = [
        "case",
        "reset (bytes)",
        "step, whole (bytes)",
        "step, delta (bytes)",
        "whole / delta",
        "episode, whole / delta (KiB)",
        "rebuilt equal to whole",
    ]
    prompts = [r for r in data["cases"] if r["prompt_bytes"]]
    prompt_line = "".join(
        f" {r['case']}: the prompts' splices {r['prompt_bytes']['sent'] / 1024:,.0f} KiB in all, where whole prompts "
        f"would have been {r['prompt_bytes']['if_whole'] / 1024:,.0f} KiB ({r['prompt_keeps_all']} of {r['steps']} "
        "steps only appended)."
        for r in prompts
    )
    verdicts = "every verdict equal" if data["all_verdicts_equal"] else "**some verdicts differ**"
    s = data["settings"]
    return (
        _table(header, rows)
        + f"\nMeans over {s['tasks_per_case']} tasks a case, {s['tasks']}; messages: {s['messages']}; {verdicts}. "
        + f"Bytes: {s['bytes']}.{prompt_line} "
        + f"`{data['command'].strip()}` at `{data['commit'][:7]}` (`benchmarks/results/{name}`).\n"
    )


def env_server_load_table(name: str = "env_server_load.json", figure: str = "env-server-load.png") -> str:
    """`tooluse serve-env` with sessions that think between steps (per worker count and sessions), from its JSON."""
    data = _load(name)
    if data is None:
        return _not_measured(name, "python -m benchmarks.env_server_load --write")
    rows = []
    for r in data["levels"]:
        h, lat, v, cpu = r["held"], r["step_latency_ms"], r["verdicts"], r["cpu_cores"]
        failed = h["refused"] + h["never_answered"] + h["dropped_in_window"]
        rows.append(
            [
                str(r["workers"]),
                f"{r['sessions']:,}",
                f"{h['held_at_window_end']:,}" + (f" ({failed:,} refused or dropped)" if failed else ""),
                f"{lat['p50']:.1f} / **{lat['p99']:.1f}** / {lat['max']:.1f}",
                f"{r['steps_per_s']:,.0f}",
                f"{r['episodes_completed_in_window']:,}",
                f"{r['memory']['per_session_kib']:,.0f}",
                f"{cpu['server']:.2f} / {cpu['client']:.2f}",
                f"{v['equal']:,} / {v['episodes']:,} (lost {v['lost']}, crossed {v['crossed']})",
            ]
        )
    header = [
        "workers",
        "sessions",
        "held to the window's end",
        "step latency p50 / p99 / max (ms)",
        "steps/s",
        "episodes in the window",
        "memory per session (KiB)",
        "CPU cores: server / client",
        "verdicts equal to in-process",
    ]
    goal, s, m = data["goal"], data["settings"], data["machine"]
    met = {True: "**met**", False: "**not met**", None: "not tested by this run"}[goal["met"]]
    at_goal = [
        f"{r['workers']} worker{'s' if r['workers'] > 1 else ''}: p99 {r['step_latency_ms']['p99']:,.0f} ms, "
        f"{r['held']['held_at_window_end']:,} of {r['sessions']:,} held ({'met' if r['meets_goal'] else 'not met'})"
        for r in data["levels"]
        if r["meets_goal"] is not None
    ]
    met += f" ({'; '.join(at_goal)})" if at_goal else ""
    busy = [f"{r['sessions']:,} on {r['workers']}" for r in data["levels"] if r["client_busy"]]
    wire = {"full": "whole observations", "delta": "only the new messages (`observation: delta`)"}
    every = s.get("full_gc_every_s")
    collector = (
        "the server's full garbage collections on CPython's own schedule"
        if not every
        else f"the server's full garbage collections every {every:g} s (`--full-gc-every`)"
    )
    return (
        f"Goal: {goal['statement']}: {met}.\n\n"
        + _table(header, rows)
        + f"\nEach step answered with {wire[s.get('observation', 'full')]}; {collector}. "
        + f"Think time {s['think']} before each step; a {s['window_s']:g} s window once every session is open "
        + f"(opened {s['ramp_rate_per_s']:g} a second); {s['episodes']} oracle episodes taken in turn; server and "
        + f"client share the machine's {m['cpu_count']} CPUs"
        + (f" (the client used most of a core at {', '.join(busy)}: it may limit those levels)" if busy else "")
        + f"; {m['cpu_model']}, Python {m['python']}; `{data['command'].strip()}` at `{data['commit'][:7]}` "
        + f"(`benchmarks/results/{name}`).\n"
        + (f"\n![env server with thinking sessions]({figure})\n" if (DOCS / figure).exists() else "")
    )


def _total(data: dict[str, Any]) -> int:
    return max(r["entries"] + r["left_out"] for r in data["formats"].values())


def single_turn_speed_table() -> str:
    """Time per entry: ours (a whole episode, and decode + check alone) against bfcl_eval's functions."""
    name = "single_turn_throughput.json"
    data = _load(name)
    if data is None:
        return _not_measured(name, "python -m benchmarks.single_turn_throughput --write")
    rows = [
        [
            f"`{fmt}`",
            f"{r['entries']:,}",
            f"{r['official_ms']:.3f}",
            f"{r['core_ms']:.3f}",
            f"**{r['core_ratio']:.2f}×**",
            f"{r['ours_ms']:.3f}",
            f"**{r['ratio']:.2f}×**",
        ]
        for fmt, r in data["formats"].items()
    ]
    header = [
        "decoder",
        "entries",
        "bfcl_eval decode + check (ms)",
        "ours, decode + check (ms)",
        "ratio",
        "ours, whole episode (ms)",
        "ratio",
    ]
    m, git = data["machine"], data["git"]
    return (
        _table(header, rows)
        + f"\nEntries: those of BFCL's {_total(data):,} that were timed: the entries no answer can pass are left "
        + "out, and under `python` also those whose answer the Python-text writer could not write at the time. "
        + f"Ratio: bfcl_eval's time / ours, median of {data['passes']} passes; every entry valid on both sides "
        + f"in every pass. {m['cpu_model']}, Python {m['python']}, bfcl-eval {m['bfcl_eval']}, at "
        + f"`{(git['commit'] or '?')[:7]}` (`benchmarks/results/{name}`).\n"
    )


def single_turn_counts() -> dict[str, int]:
    """Entries per BFCL single-turn category in the installed bfcl-eval's data (the one place the docs count them)."""
    from tooluse_gym.tasks.bfcl_single_turn import CATEGORIES, load_single_turn_tasks

    return {c: len(load_single_turn_tasks(c)) for c in CATEGORIES}


def single_turn_catalog() -> str:
    """The environments page's single-turn catalogue: entries per category, per language, and how many can pass."""
    from tooluse_gym.tasks.bfcl import bfcl_version
    from tooluse_gym.tasks.bfcl_single_turn import LANGUAGE_CATEGORIES, UNSATISFIABLE

    counts = single_turn_counts()
    total = sum(counts.values())
    python = sum(n for c, n in counts.items() if c not in LANGUAGE_CATEGORIES)
    languages = " and ".join(f"{counts[c]:,} in `{c}`" for c in LANGUAGE_CATEGORIES)
    listed = ", ".join(f"`{c}` ({n:,})" for c, n in counts.items())
    return (
        f"What is there (bfcl-eval {bfcl_version()} data): **{total:,} entries** in {len(counts)} categories, "
        f"{python:,} of them in the {len(counts) - len(LANGUAGE_CATEGORIES)} Python categories, {languages}; "
        f"{total - len(UNSATISFIABLE):,} can be passed: the possible answers of {len(UNSATISFIABLE)} entries reject "
        "every response under BFCL's own checker (`tooluse_gym.tasks.bfcl_single_turn.UNSATISFIABLE`).\n\n"
        f"- **Categories**: {listed}; groups `non_live`, `live`, `single_turn` (each the categories it holds).\n"
    )


def single_turn_speed_line() -> str:
    """The README's speed line for single-turn scoring."""
    data = _load("single_turn_throughput.json")
    if data is None:
        return ""
    parts = [
        f"`{fmt}` decoder {r['core_ratio']:.2f}× decode + check, {r['ratio']:.2f}× a whole episode"
        for fmt, r in data["formats"].items()
    ]
    row = max(data["formats"].values(), key=lambda r: r["entries"])
    entries, total = row["entries"], row["entries"] + row["left_out"]
    return (
        f"- Single-turn scoring against bfcl_eval's `decode_ast` + `ast_checker` (the {entries:,} of {total:,} "
        "entries an answer can pass): "
        f"{', '.join(parts)} (`single_turn_throughput.json`).\n"
    )


def first_run_table() -> str:
    """`make run`'s table (model x benchmark x template), from first_run.json: the run's results.json as recorded.

    With what its rows say (`table_findings`: generated, so the prose cannot claim what the data does not show).
    """
    from tooluse_agents.eval.table import table_findings, table_markdown

    name = "first_run.json"
    data = _load(name)
    if data is None:
        return _not_measured(name, "python -m experiments.tools.record_first_run")
    run = data["recorded"]
    return (
        table_markdown(data)
        + f"\n`make run` from a fresh clone: {run['wall_s'] / 60:.1f} min, setup included "
        + f"({run['setup_s'] / 60:.1f} min of it); {run['machine']['cpu_model']}, {run['machine']['cpu_count']} CPUs; "
        + f"commit `{run['commit'][:7]}` (`benchmarks/results/{name}`).\n"
        + "\n"
        + table_findings(data)
    )
