"""Per-episode (async) scheduling against lockstep batches: same jobs, same seeds, same num_envs, one run.

    python benchmarks/rollout_schedule.py [--parts vllm openai] [--episodes 24] [--num-envs 8] [--reps 2]

Two backends, each in two workloads:

* ``vllm``: the in-process engine driven step by step (`VLLMAgent`), and
* ``openai``: `OpenAIAgent` against a real `tooluse serve smollm2-135m` on loopback;
* workload ``capped`` (``max_tokens`` 24: nearly every message hits the cap, so every request of a
  lockstep batch takes as long as the longest; the research predicts ~1.0-1.1x) and ``varied``
  (``max_tokens`` 192: messages end where the model stops, so lengths differ).

The episodes are the curriculum's train split under the ``strong`` prompt with JSON calls
(~800-1,500-token prompts; tasks have 1-4 turns, so episodes differ in length too). Passes run
in ABAB order (lockstep, async, ...) after one warm-up pass; each pass reports wall time, completion
tokens per second and how full the engine was: requests in flight per engine step (vllm, counted
by the agent) or ``vllm:num_requests_running`` polled at 5 Hz from the server's /metrics (openai).
The ratio is the median lockstep time / the median async time. Both schedules must play the same
episodes (float32; per-request seeds): the fraction that are identical is reported.

Timed: run it with the CPU to itself. Writes ``benchmarks/results/rollout_schedule.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import gymnasium as gym

import tooluse_gym  # noqa: F401
from tooluse_agents.backends.base import SamplingConfig
from tooluse_agents.backends.dtypes import machine
from tooluse_agents.backends.factory import BackendSpec, make_agent
from tooluse_agents.eval.run import eval_task_ids
from tooluse_agents.rollout.loop import RolloutJob, run_rollouts
from tooluse_agents.runs.portable import portable
from tooluse_agents.runs.records import EpisodeRecord
from tooluse_gym.envs import SCENARIO_ID

ROOT = Path(__file__).resolve().parents[1]
CURRICULUM = str(ROOT / "scenarios" / "curriculum" / "train.yaml")
OUT = ROOT / "benchmarks" / "results" / "rollout_schedule.json"
WORKLOADS = {"capped": 24, "varied": 192}


def _make_env_factory(tasks):
    def make_env():
        return gym.make(SCENARIO_ID, path=CURRICULUM, task_ids=tasks, system_prompt="strong", tool_format="json")

    return make_env


def _fingerprint(record: EpisodeRecord) -> str:
    return json.dumps([[s.assistant for s in t.steps] for t in record.turns]) + f"/{record.reward}"


class _MetricsPoller:
    """Polls a vLLM server's ``vllm:num_requests_running`` gauge at 5 Hz (the engine's batch size)."""

    def __init__(self, url: str):
        self.url, self.samples, self._stop = url + "/metrics", [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            try:
                with urllib.request.urlopen(self.url, timeout=1) as r:
                    text = r.read().decode()
            except OSError:
                continue
            values = [
                float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith("vllm:num_requests_running")
            ]
            if values:
                self.samples.append(sum(values))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def mean_busy(self) -> float | None:
        busy = [s for s in self.samples if s > 0]
        return statistics.fmean(busy) if busy else None


def _pass(agent, make_env, jobs, sampling, num_envs, schedule, poller_url=None):
    stats = getattr(agent, "stats", None)
    before = dict(stats) if stats is not None else None
    poller = _MetricsPoller(poller_url) if poller_url else None
    start = time.perf_counter()
    if poller:
        with poller:
            episodes = run_rollouts(make_env, agent, jobs, sampling=sampling, num_envs=num_envs, schedule=schedule)
    else:
        episodes = run_rollouts(make_env, agent, jobs, sampling=sampling, num_envs=num_envs, schedule=schedule)
    seconds = time.perf_counter() - start
    records = [e.record for e in episodes]
    steps = [s for r in records for s in r.steps]
    tokens = sum(s.completion_tokens for s in steps)
    result = {
        "schedule": schedule,
        "seconds": round(seconds, 2),
        "completion_tokens": tokens,
        "tok_per_s": round(tokens / seconds, 2),
        "messages": len(steps),
        "messages_at_cap": sum(s.completion_tokens >= sampling.max_tokens for s in steps),
        "errors": sum(r.error is not None for r in records),
    }
    if stats is not None:
        engine_steps = stats["engine_steps"] - before["engine_steps"]
        result["engine_steps"] = engine_steps
        result["mean_in_flight"] = round((stats["in_flight_sum"] - before["in_flight_sum"]) / max(engine_steps, 1), 2)
    if poller:
        result["mean_running"] = poller.mean_busy()
    return result, {(r.task_id, r.seed): _fingerprint(r) for r in records}


def _study(agent, tasks, args, poller_url=None):
    make_env = _make_env_factory(tasks)
    jobs = [RolloutJob(t, 0) for t in tasks]
    out = {}
    for workload, max_tokens in WORKLOADS.items():
        sampling = SamplingConfig(temperature=1.0, max_tokens=max_tokens)
        run_rollouts(make_env, agent, jobs[:2], sampling=sampling, num_envs=2, schedule="lockstep")  # warm-up
        passes, seen = [], {}
        for rep in range(args.reps):
            for schedule in ("lockstep", "async"):
                result, prints = _pass(agent, make_env, jobs, sampling, args.num_envs, schedule, poller_url)
                result["rep"] = rep
                passes.append(result)
                seen.setdefault(schedule, []).append(prints)
                print(f"  {workload:<7} {schedule:<8} rep {rep}: {json.dumps(result)}", flush=True)
        median = {
            s: statistics.median(p["seconds"] for p in passes if p["schedule"] == s) for s in ("lockstep", "async")
        }
        reference = seen["lockstep"][0]
        same = [sum(p[k] == reference[k] for k in reference) / len(reference) for runs in seen.values() for p in runs]
        out[workload] = {
            "max_tokens": max_tokens,
            "passes": passes,
            "median_s": median,
            "ratio_lockstep_over_async": round(median["lockstep"] / median["async"], 3),
            "identical_episode_fraction_min": round(min(same), 3),
        }
        print(f"{workload}: lockstep/async = {out[workload]['ratio_lockstep_over_async']:.2f}x", flush=True)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(dtype: str, num_envs: int):
    port = _free_port()
    script = Path(sys.executable).with_name("tooluse-serve")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "tooluse_agents.backends.serve"]
    command += [
        "smollm2-135m",
        "--served-model-name",
        "smollm2",
        "--port",
        str(port),
        "--dtype",
        dtype,
        "--max-model-len",
        "4096",
        "--",
        "--max-num-seqs",
        str(max(num_envs, 8)),
    ]
    log = open(ROOT / "runs" / "bench-serve.log", "w")  # noqa: SIM115 (closed with the server)
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"tooluse-serve exited with {process.returncode}; see runs/bench-serve.log")
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=2):
                break
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("tooluse-serve not ready after 600 s") from None
            time.sleep(2)

    def stop():
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()

    return url, stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", nargs="+", choices=("vllm", "openai"), default=["vllm", "openai"])
    parser.add_argument("--episodes", type=int, default=24)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--dtype", default="float32", help="float32: both schedules must give identical episodes")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    (ROOT / "runs").mkdir(exist_ok=True)
    tasks = eval_task_ids(None, args.episodes // 5 + 1, [CURRICULUM])[: args.episodes]
    report = json.loads(args.out.read_text()) if args.out.exists() else {}
    report.update(
        {
            "command": "python benchmarks/rollout_schedule.py " + " ".join(sys.argv[1:]),
            "settings": {
                "episodes": len(tasks),
                "num_envs": args.num_envs,
                "reps": args.reps,
                "dtype": args.dtype,
                "workloads_max_tokens": WORKLOADS,
                "temperature": 1.0,
                "tasks": "curriculum train split",
            },
            "machine": {**machine(), "python": platform.python_version()},
            "commit": subprocess.run(
                ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT
            ).stdout.strip(),
        }
    )
    if "vllm" in args.parts:
        print("in-process vLLM", flush=True)
        options = {"max_model_len": 4096, "in_process": True}
        agent = make_agent(BackendSpec(backend="vllm", model="smollm2-135m", dtype=args.dtype, options=options))
        report["vllm_in_process"] = _study(agent, tasks, args)
        agent.close()
        args.out.write_text(json.dumps(portable(report, ROOT), indent=2) + "\n")
    if "openai" in args.parts:
        print("OpenAI agent against tooluse serve", flush=True)
        url, stop = _serve(args.dtype, args.num_envs)
        try:
            spec = BackendSpec(backend="openai", model="smollm2", base_url=url + "/v1", options={"timeout_s": 600})
            agent = make_agent(spec)
            report["openai_server"] = _study(agent, tasks, args, poller_url=url)
            agent.close()
        finally:
            stop()
        args.out.write_text(json.dumps(portable(report, ROOT), indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
