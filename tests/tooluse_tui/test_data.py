"""The TUI's file readers, path resolution, comparison and formatting (no app running)."""

from __future__ import annotations

import doctest
import json
import shutil
import subprocess
import sys

import pytest

from tooluse_agents.eval.run import compare_runs
from tooluse_agents.runs.records import EpisodeRecord
from tooluse_tui import plots, transcript, widgets
from tooluse_tui.data import EpisodeFilter, EpisodeStore, EpisodeSummary, JsonlFile, MetricsLog, select
from tooluse_tui.runs import TargetError, compare, find_runs, load_results, resolve


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _episodes(path):
    return [EpisodeRecord.from_dict(r) for r in _records(path)]


def test_jsonl_file_indexes_lines_and_skips_bad_ones(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"a": 2\n[1, 2]\n{"a": 3}\n{"a": 4')
    f = JsonlFile(path)
    assert list(f.refresh()) == [0, 1, 2, 3]  # the blank line is not a line; the torn tail is not indexed
    assert [f.read(i) for i in range(4)] == [{"a": 1}, None, None, {"a": 3}]
    assert f.health.corrupt_lines == 2 and f.health.torn_last_line
    assert f.health.describe() == "2 corrupt lines skipped, torn last line skipped"
    with path.open("ab") as out:  # the writer finishes the torn line and adds one
        out.write(b'}\n{"a": 5}\n')
    assert list(f.refresh()) == [4, 5]
    assert [f.read(4), f.read(5)] == [{"a": 4}, {"a": 5}]
    assert not f.health.torn_last_line


def test_jsonl_file_takes_a_whole_last_object_without_newline(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}')
    f = JsonlFile(path)
    assert len(f.refresh()) == 2 and f.read(1) == {"a": 2} and not f.health.torn_last_line
    path.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a": 3}\n')
    assert list(f.refresh()) == [2] and f.read(2) == {"a": 3}


def test_jsonl_file_that_does_not_exist_yet(tmp_path):
    f = JsonlFile(tmp_path / "later.jsonl")
    assert len(f.refresh()) == 0 and len(f) == 0
    (tmp_path / "later.jsonl").write_text('{"a": 1}\n')
    assert len(f.refresh()) == 1


def test_store_summaries_match_the_records(data):
    store = EpisodeStore(data / "run_a" / "episodes.jsonl")
    batches = list(store.scan(batch=5))
    assert [len(b) for b in batches] == [5, 5, 5, 1]
    records = _records(data / "run_a" / "episodes.jsonl")
    assert len(store.summaries) == len(records) == 16
    for s, r in zip(store.summaries, records, strict=True):
        assert (s.task_id, s.category, s.seed, s.reward) == (r["task_id"], r["category"], r["seed"], r["reward"])
        assert s.steps == sum(len(t["steps"]) for t in r["turns"])
        assert s.tokens == r["tokens"]["prompt"] + r["tokens"]["completion"]
        expected = (r["error"] or {}).get("type") or (r["checker"] or {}).get("error_type")
        assert s.error_type == expected
        assert store.record(s.line) == r
    assert {s.error_type for s in store.summaries} >= {
        "context_length_exceeded",
        "multi_turn:instance_state_mismatch",
        "multi_turn:empty_turn_model_response",
    }


def test_store_counts_the_damaged_lines(data):
    store = EpisodeStore(data / "damaged" / "episodes.jsonl")
    list(store.scan())
    assert len(store.summaries) == 6
    assert store.health.corrupt_lines == 1 and store.health.torn_last_line


def test_filter_sort_and_search(data):
    store = EpisodeStore(data / "run_a" / "episodes.jsonl")
    list(store.scan())
    rows = store.summaries
    failed = select(rows, EpisodeFilter(failed_only=True))
    assert failed and all(s.reward < 1 for s in failed) and len(failed) == sum(s.reward < 1 for s in rows)
    base = select(rows, EpisodeFilter(category="base"), sort="seed", reverse=True)
    assert {s.category for s in base} == {"base"}
    assert [s.seed for s in base] == sorted((s.seed for s in base), reverse=True)
    by_task = select(rows, EpisodeFilter(), sort="task id")
    ids = [s.task_id for s in by_task]
    assert ids.index("multi_turn_base_0") < ids.index("multi_turn_base_100")  # natural order of the numbers
    hits = store.search("DOCUMENT_OLD", [s.line for s in rows])  # the bent argument of one episode
    assert len(hits) == 1
    (hit,) = select(rows, EpisodeFilter(lines=frozenset(hits)))
    assert (hit.task_id, hit.seed) == ("multi_turn_base_0", 1)


def test_summary_of_something_else_is_none():
    assert EpisodeSummary.of({"step": 3}, 0) is None
    assert EpisodeSummary.of({"task_id": "t", "reward": "x"}, 0) is None


def test_metrics_log_follows_appends(tmp_path, data):
    path = tmp_path / "metrics.jsonl"
    lines = (data / "train_run" / "metrics.jsonl").read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]))
    log = MetricsLog(path)
    assert log.poll() == 3
    with path.open("a") as f:
        f.write("".join(lines[3:5]) + '{"step": 6, "rollout/rew')
    assert log.poll() == 2 and log.health.torn_last_line
    series = log.series("rollout/reward_mean")
    assert [step for step, _ in series] == [1, 2, 3, 4, 5]
    assert series[-1][1] == json.loads(lines[4])["rollout/reward_mean"]
    assert log.series("eval/heldout_reward") == [(4.0, json.loads(lines[3])["eval/heldout_reward"])]
    assert log.series("missing/key") == []


def test_resolve_modes_and_errors(tmp_path, data):
    assert resolve([data / "run_a"]).mode == "replay"
    assert resolve([data / "run_a" / "episodes.jsonl"]).mode == "replay"
    live = resolve([data / "train_run"])
    assert live.mode == "live" and live.metrics == data / "train_run" / "metrics.jsonl"
    assert resolve([data / "train_run" / "metrics.jsonl"]).mode == "live"
    renamed = tmp_path / "m.jsonl"
    shutil.copy(data / "train_run" / "metrics.jsonl", renamed)
    assert resolve([renamed]).mode == "live"  # recognised by its first record
    assert resolve([data / "run_a", data / "run_b"]).mode == "compare"
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "nothing").mkdir()
    for paths, message in [
        ([tmp_path / "missing"], "no such file or folder"),
        ([tmp_path / "empty.jsonl"], "the file is empty"),
        ([tmp_path / "nothing"], "neither episodes.jsonl nor metrics.jsonl, nor a run folder below it"),
        ([], "give a run folder"),
        ([""], "the path is empty"),
        ([data / "run_a", tmp_path / "nothing"], "to compare, give two run folders"),
    ]:
        with pytest.raises(TargetError, match=message):
            resolve(paths)


def test_a_folder_of_runs_resolves_to_the_runs_below_it(tmp_path, data):
    root = tmp_path / "first-run"
    cell = root / "smollm2-135m" / "bfcl" / "template=native"
    cell.mkdir(parents=True)
    shutil.copy(data / "run_a" / "episodes.jsonl", cell / "episodes.jsonl")
    shutil.copytree(data / "train_run", root / "grpo")
    (root / ".hidden" / "run").mkdir(parents=True)
    (root / ".hidden" / "run" / "episodes.jsonl").write_text("")
    target = resolve([root])
    assert target.mode == "pick" and target.root == root and target.episodes == ()
    assert [(r.name, r.kind) for r in target.runs] == [
        ("grpo", "live"),
        ("smollm2-135m/bfcl/template=native", "replay"),
    ]
    assert target.runs[1].target == resolve([cell]) and target.runs[0].target == resolve([root / "grpo"])
    assert [r.name for r in find_runs(root, limit=1)] == ["grpo"]


def test_results_computed_from_episodes_when_results_json_is_missing(tmp_path, data):
    shutil.copy(data / "run_a" / "episodes.jsonl", tmp_path / "episodes.jsonl")
    store = EpisodeStore(tmp_path / "episodes.jsonl")
    list(store.scan())
    computed = load_results(tmp_path, store.summaries, store)
    written = json.loads((data / "run_a" / "results.json").read_text())
    assert computed["summary"]["categories"] == written["summary"]["categories"]
    assert computed["protocol"]["system_prompt"] == written["protocol"]["system_prompt"]


def test_transcript_frames_failures_and_folds(data):
    records = _episodes(data / "run_a" / "episodes.jsonl")
    bent = next(r for r in records if r.task_id == "multi_turn_base_0" and r.seed == 1)
    frames = transcript.frames(bent)
    assert len(frames) == 8 and frames[0].first_in_turn and frames[1].last_in_turn
    assert transcript.first_failing_frame(bent) == 1  # turn 0 fails; its verdict follows step 1
    passed = next(r for r in records if r.reward == 1.0)
    assert transcript.first_failing_frame(passed) is None
    reasoning, answer = transcript.split_reasoning(frames[0].step.assistant)
    assert reasoning.startswith("The user wants") and answer.startswith("[cd(")
    folded = transcript.step_text(frames[0], show_reasoning=False, show_full=False).plain
    assert "▸ reasoning" in folded and "The user wants" not in folded and 'cd(folder="document_old")' in folded
    shown = transcript.step_text(frames[0], show_reasoning=True, show_full=False).plain
    assert "The user wants" in shown
    verdict = transcript.verdict_text(bent.turns[0]).plain
    assert "instance_state_mismatch" in verdict
    paths = [p for p, _, _ in transcript.diff_rows(bent.turns[0].verdict["state_diff"])]
    assert "GorillaFileSystem.root.contents.document.contents.temp" in paths
    long = "x" * (transcript.FOLD_CHARS + 10)
    assert transcript.fold(long, False).endswith("(+10 chars, o to unfold)") and transcript.fold(long, True) == long


def test_a_message_without_calls_is_shown_closing_its_turn_not_as_a_parse_failure(tmp_path, data):
    """Issue 43: the oracle's valid episode under the bfcl decoder showed "⚠ parse failure" on each "Done."."""
    from tooluse_agents.eval.run import EvalConfig, run_eval

    run_eval(EvalConfig(agent="oracle", task_ids=("multi_turn_base_0",)), tmp_path / "run", progress=False)
    record = _episodes(tmp_path / "run" / "episodes.jsonl")[0]
    assert record.reward == 1.0 and record.protocol["decoder"] == "bfcl"
    closing = [f for f in transcript.frames(record) if not f.step.calls]
    assert closing and all(f.last_in_turn for f in closing)  # the oracle ends each turn with "Done."
    for frame in closing:
        # BFCL's decoder fails on any text reply, and that is how a turn ends: the record keeps its reason
        assert frame.step.assistant == "Done." and frame.step.parse_failure == "not a Python call list (SyntaxError)"
        text = transcript.step_text(frame, show_reasoning=False, show_full=False).plain
        assert text.endswith("Done.\n↵ ends the turn  no calls: not a Python call list (SyntaxError)")
        assert "parse failure" not in text
    calling = next(f for f in transcript.frames(record) if f.step.calls)
    assert "ends the turn" not in transcript.step_text(calling, show_reasoning=False, show_full=False).plain
    # a malformed call list (lenient decoder: a reason only for an attempted call) ends its turn too
    runs = _episodes(data / "run_a" / "episodes.jsonl")
    bent = next(r for r in runs if (r.task_id, r.seed) == ("multi_turn_miss_param_0", 1))
    malformed = transcript.step_text(transcript.frames(bent)[0], show_reasoning=False, show_full=False).plain
    assert malformed.endswith("[cd(folder=]\n↵ ends the turn  no calls: not a Python call list (SyntaxError)")


def test_transcript_of_an_episode_without_steps(data):
    records = _episodes(data / "run_a" / "episodes.jsonl")
    timed_out = next(r for r in records if r.error and not r.turns)
    assert transcript.frames(timed_out) == []
    assert "agent error context_length_exceeded" in transcript.ending_text(timed_out).plain


def test_plots_doctests():
    assert doctest.testmod(plots).failed == 0


def test_plots_scale_and_width():
    assert plots.sparkline([5, 5, 5], 5) == "▁▁▁  "
    assert plots.sparkline(range(100), 10) == plots.sparkline(range(90, 100), 10)
    assert plots.sparkline([0.5], 1, lo=0, hi=1) == "▅"
    assert sum(plots.split_bar([20.0, 35.0, 0.4], 30)) == 30
    assert plots.split_bar([0.0, 0.0], 10) == [0, 0]


def test_the_tui_imports_no_model_or_agent_backend():
    code = (
        "import sys, tooluse_tui.app, tooluse_tui.data, tooluse_tui.runs\n"
        "heavy = ['torch', 'vllm', 'transformers', 'tooluse_agents.backends.base', 'tooluse_agents.rollout.loop']\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _flagged_runs(tmp_path, data):
    """Copies of runs A and B with miss_param_0 (a disagreeing task) renamed to a task the registry lists."""
    runs = []
    for name in ("run_a", "run_b"):
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(data / name / "results.json", folder / "results.json")
        text = (data / name / "episodes.jsonl").read_text()
        (folder / "episodes.jsonl").write_text(text.replace('"multi_turn_miss_param_0"', '"multi_turn_miss_param_4"'))
        runs.append(folder)
    return runs


def test_summaries_mark_tasks_the_known_issues_registry_lists(tmp_path, data):
    run_a, _ = _flagged_runs(tmp_path, data)
    store = EpisodeStore(run_a / "episodes.jsonl")
    list(store.scan())
    flagged = {s.task_id: s.known_issue for s in store.summaries if s.known_issue}
    assert flagged == {"multi_turn_miss_param_4": "wrong_ground_truth"}
    cells = widgets.episode_cells(next(s for s in store.summaries if s.known_issue))
    assert str(cells[-1]) == "⚑ wrong gt"
    assert str(widgets.episode_cells(store.summaries[0])[-1]) == ""
    flagged_line = next(s.line for s in store.summaries if s.known_issue)
    reason = transcript.header(EpisodeRecord.from_dict(store.record(flagged_line))).plain
    assert "known BFCL issue (wrong ground truth)" in reason and "issues/1367" in reason


def _both_compares(runs):
    """The TUI's comparison of two run folders, and `tooluse eval compare`'s (its JSON) of the same."""
    stores = [EpisodeStore(r / "episodes.jsonl") for r in runs]
    for s in stores:
        list(s.scan())
    results = tuple(load_results(r, s.summaries, s) for r, s in zip(runs, stores, strict=True))
    return compare(("run_a", "run_b"), results, (stores[0].summaries, stores[1].summaries)), compare_runs(*runs)[1]


def test_compare_clean_subset_agrees_with_the_eval_harness(tmp_path, data):
    runs = _flagged_runs(tmp_path, data)
    c, reference = _both_compares(runs)
    assert c.registry_version == reference["clean"]["registry_version"]
    assert list(c.excluded_tasks) == reference["clean"]["excluded_tasks"] == ["multi_turn_miss_param_4"]
    by_name = {r.category: r for r in c.clean}
    for row in reference["clean"]["categories"]:
        mine = by_name[row["category"]]
        assert mine.a == pytest.approx(row["a"]) and mine.b == pytest.approx(row["b"])
    assert by_name["miss_param"].a == 0.0 and by_name["miss_param"].b == 1.0
    marked = {d.task_id: d.known_issue for d in c.disagreements}
    assert marked == {"multi_turn_miss_param_4": "wrong_ground_truth", "multi_turn_miss_param_100": None}
    assert {d["task_id"]: d["known_issue"] for d in reference["disagreements"]} == marked


def test_a_non_bfcl_comparison_has_no_clean_subset(data):
    stores = [EpisodeStore(data / r / "episodes.jsonl") for r in ("run_a", "run_b")]
    for s in stores:
        list(s.scan())
    results = ({"protocol": {"env_id": "ToolUse-Scenario-v0"}, "summary": {}},) * 2
    c = compare(("a", "b"), results, (stores[0].summaries, stores[1].summaries))
    assert c.registry_version is None and c.clean == ()


def test_episode_header_shows_the_decoder_and_calls_show_the_call_string_that_ran():
    record = {"task_id": "multi_turn_base_0", "reward": 0.0, "protocol": {"decoder": "bfcl", "tool_format": "json"}}
    assert "protocol decoder bfcl  tool_format json" in transcript.header(EpisodeRecord.from_dict(record)).plain
    old = {"task_id": "multi_turn_base_0", "reward": 0.0, "protocol": {"tool_format": "python"}}
    assert (
        "decoder lenient" in transcript.header(EpisodeRecord.from_dict(old)).plain
    )  # files written before the knob existed
    call = {"name": "cd", "arguments": {}, "source": "cd(folder='docs')"}
    assert transcript.render_call(call) == "cd(folder='docs')"
    assert transcript.render_call({"name": "cd", "arguments": {"folder": "x"}}) == 'cd(folder="x")'


def test_the_seed_column_holds_every_derived_seed():
    """A training rollout's seed is derived (31 bits: up to 10 digits); the column must not cut it to '391...'."""
    from tooluse_tui.widgets import EPISODE_COLUMNS

    (seed,) = (c for c in EPISODE_COLUMNS if c.title == "seed")
    assert seed.width >= len(str(2**31 - 1))


def test_runs_of_blank_lines_in_a_message_fold_to_one_line_that_counts_them():
    """A rollout whose message starts with 23 newlines opened under 23 blank lines (issue 43)."""
    from rich.text import Text

    from tooluse_tui.transcript import append_folding_blank_lines

    def shown(message: str) -> str:
        text = Text()
        append_folding_blank_lines(text, message)
        return text.plain

    assert shown("\n" * 23 + "[f()]") == "⋯ 23 blank lines ⋯\n[f()]"
    assert shown("a\n\n\n\nb") == "a\n⋯ 3 blank lines ⋯\nb"
    assert shown("a\n\nb") == "a\n\nb" and shown("a\n") == "a\n" and shown("plain") == "plain"  # kept as written


def test_a_near_zero_value_keeps_to_its_seven_cells():
    """The time split's sync of 1.06e-06 s printed as a loose e-notation label one cell too wide (issue 43)."""
    line = plots.series_line("sync", [0.5, 1.06e-06], 12, "yellow").plain
    assert line.endswith("  <0.001") and "e-" not in line
    assert plots.series_line("reward", [0.25, 0.767], 12, "green").plain.endswith("  0.767")


def test_a_short_series_is_drawn_on_a_dotted_baseline_to_the_plot_width():
    line = plots.series_line("reward", [0.5, 0.5], 8, "green", lo=0.0, hi=1.0)
    assert line.plain == "reward     ▅▅······     0.5"
    assert len(plots.series_line("reward", list(range(20)), 8, "green").plain) == len(line.plain)
    assert plots.series_line("reward", [], 4, "green").plain == "reward     ····       -"


def test_compare_leaves_out_a_failed_servers_episodes_as_the_harness_does(tmp_path, data):
    """A timeout (the model server failed) is no score: the TUI's compare pairs what `tooluse eval compare` pairs."""
    runs = []
    for name in ("run_a", "run_b"):
        folder = tmp_path / name
        folder.mkdir()
        text = (data / name / "episodes.jsonl").read_text()
        (folder / "episodes.jsonl").write_text(text.replace('"type": "context_length_exceeded"', '"type": "timeout"'))
        shutil.copy(data / name / "results.json", folder / "results.json")
        runs.append(folder)
    c, reference = _both_compares(runs)
    assert c.left_out[0].unscored == reference["left_out"]["a"]["unscored"] == 2
    assert c.pairs == reference["compared"]["pairs"] == 14
    rows = {r.category: r for r in c.categories}
    for row in reference["categories"]:
        assert rows[row["category"]].a == pytest.approx(row["a"]) and rows[row["category"]].b == pytest.approx(row["b"])
