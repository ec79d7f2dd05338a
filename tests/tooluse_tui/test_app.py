"""Pilot tests: each mode driven with the keyboard on the fixture files; assertions on what is shown."""

from __future__ import annotations

import json
import shutil
import time

from tests.tooluse_tui.conftest import drive, make_app, settle, shown, wait_for
from tooluse_tui.app import main
from tooluse_tui.live import LiveScreen, MetricPanel
from tooluse_tui.picker import RunListScreen
from tooluse_tui.replay import ReplayScreen
from tooluse_tui.table import RowTable
from tooluse_tui.transcript_view import TranscriptView


def _rows(app) -> list:
    return app.screen.query_one(RowTable).items


def _view(app) -> TranscriptView | None:
    """The episode shown on the current screen, if any."""
    view = app.screen.query_one(TranscriptView)
    return view if view.display else None


async def search(pilot, text: str) -> None:
    """Type `text` into the table's search box and let the table update."""
    await pilot.press("slash", *text, "enter")
    await settle(pilot)


def test_replay_filters_sorts_and_searches(data):
    app = make_app(data / "run_a")

    async def script(pilot):
        assert isinstance(app.screen, ReplayScreen)
        await shown(
            pilot, "16 episodes · 9 failed · 16 shown", "multi_turn_long_context_100", "instance_state_mismatch"
        )
        await pilot.press("x")  # failed only
        assert len(_rows(app)) == 9 and all(s.failed for s in _rows(app))
        await shown(pilot, "failed only on")
        await pilot.press("c")  # first category: base
        assert {s.category for s in _rows(app)} == {"base"} and len(_rows(app)) == 2
        await pilot.press("c", "c", "c", "c")  # back to all categories
        assert len(_rows(app)) == 9
        await pilot.press("e")  # first error type in sorted order
        assert {s.error_type for s in _rows(app)} == {"context_length_exceeded"}
        await pilot.press("e", "e", "e", "e", "x")  # no error filter, no failed filter
        assert len(_rows(app)) == 16
        await pilot.press("s", "s", "s", "s")  # sort by reward (file order, task id, category, seed, reward)
        assert [s.reward for s in _rows(app)] == sorted(s.reward for s in _rows(app))
        await shown(pilot, "sort reward ↑")
        await pilot.press("d")
        assert _rows(app)[0].reward == 1.0
        await search(pilot, "document_old")
        (hit,) = _rows(app)
        assert (hit.task_id, hit.seed) == ("multi_turn_base_0", 1)
        await shown(pilot, "1 shown")

    drive(app, script)


def test_replay_opens_an_episode_and_steps_through_it(data):
    app = make_app(data / "run_a")

    async def script(pilot):
        await search(pilot, "document_old")
        await pilot.press("enter")
        screen = _view(app)
        assert screen is not None
        assert screen.cursor == 7  # opens on the whole transcript
        await shown(pilot, "run_a/episodes.jsonl line 10", "step 8/8", "■ episode failed")
        await pilot.press("home")
        await shown(
            pilot,
            "multi_turn_base_0  category base  seed 1  reward 0",
            "step 1/8 · turn 0",
            "step 1 · assistant",
            "Move 'final_report.pdf'",
            'cd(folder="document_old")',
            "▸ reasoning (70 chars, r to unfold)",
            absent=("step 2 · assistant",),
        )
        await pilot.press("n")
        assert screen.cursor == 1
        await shown(pilot, "step 2/8")
        await pilot.press("p", "p")
        assert screen.cursor == 0
        await pilot.press("f")  # first failing turn: its last step, then the verdict with the state diff
        assert screen.cursor == 1
        await shown(
            pilot,
            "✗ turn 0 · multi_turn:instance_state_mismatch",
            "GorillaFileSystem.root.contents.document.contents.temp",
            "ground truth:",
            absent=("turn 1 · user",),
        )
        await pilot.press("r")
        await shown(pilot, "▾ reasoning", "The user wants turn 1", "reasoning shown")
        await pilot.press("x")  # the table's keys are off while an episode is shown
        assert not app.screen.where.failed_only
        await pilot.press("escape")
        assert _view(app) is None and isinstance(app.screen, ReplayScreen)
        assert app.screen.focused is app.screen.query_one(RowTable)
        await shown(pilot, "16 episodes")

    drive(app, script)


def test_playback_advances_at_the_chosen_speed(data):
    app = make_app(data / "run_a")

    async def script(pilot):
        await pilot.press("down", "down", "enter")  # multi_turn_base_0 seed 0: 8 steps, valid
        view = _view(app)
        assert view is not None and len(view.frames) == 8 and view.cursor == 7
        await pilot.press("plus", "plus")  # 8 steps/s
        await shown(pilot, "paused at 8 steps/s")
        view.action_play()  # at the end: playback restarts from the first step
        assert view.playing and view.cursor == 0
        start = time.perf_counter()
        await wait_for(pilot, lambda: view.cursor == 7 and not view.playing)
        assert time.perf_counter() - start >= 7 / 8 - 0.05  # seven ticks at 8 steps/s
        await shown(pilot, "■ episode valid")
        await pilot.press("home", "minus", "minus", "minus", "minus")  # 0.5 steps/s
        view.action_play()
        await pilot.pause(0.5)
        assert view.cursor <= 1  # at most one tick in half a second
        await pilot.press("space")  # pause
        stopped = view.cursor
        assert not view.playing
        await pilot.pause(2.2)
        assert view.cursor == stopped

    drive(app, script)


def test_long_results_fold_and_unfold(data):
    app = make_app(data / "run_a")

    async def script(pilot):
        await search(pilot, "long_context_100")
        seed0 = next(i for i, s in enumerate(_rows(app)) if s.seed == 0)
        app.screen.query_one(RowTable).cursor = seed0
        await pilot.press("enter", "home")
        await shown(pilot, "chars, o to unfold)")
        await pilot.press("o")
        await shown(pilot, "long results shown", absent=("o to unfold",))

    drive(app, script, size=(120, 80))


def test_damaged_file_is_read_with_its_bad_lines_counted(data):
    app = make_app(data / "damaged" / "episodes.jsonl")

    async def script(pilot):
        await shown(pilot, "6 episodes", "1 corrupt line skipped, torn last line skipped")

    drive(app, script)


def test_empty_episodes_file_in_a_run_folder(tmp_path):
    (tmp_path / "episodes.jsonl").write_text("")
    app = make_app(tmp_path)

    async def script(pilot):
        await shown(pilot, f"no episodes in {tmp_path.name}/episodes.jsonl (the file is empty)")

    drive(app, script)


def test_live_view_follows_a_growing_metrics_file(tmp_path, data):
    lines = (data / "train_run" / "metrics.jsonl").read_text().splitlines(keepends=True)
    episodes = (data / "train_run" / "episodes.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "metrics.jsonl").write_text("".join(lines[:4]))
    (tmp_path / "episodes.jsonl").write_text("".join(episodes[:3]))
    app = make_app(tmp_path, poll_s=0.05)

    def panel(title):
        return next(p for p in app.screen.query(MetricPanel) if p.spec.title == title)

    async def script(pilot):
        await wait_for(pilot, lambda: len(app.screen.metrics.rows) == 4 and len(app.screen.store.summaries) == 3)
        assert isinstance(app.screen, LiveScreen)
        await shown(pilot, "step 4 · epoch 0 · 4 rows · 3 rollouts")
        before = panel("reward").render().plain
        assert f"{json.loads(lines[3])['rollout/reward_mean']:.3g}" in before
        with (tmp_path / "metrics.jsonl").open("a") as f:
            f.write("".join(lines[4:12]) + '{"step": 13, "rollout/rew')
        with (tmp_path / "episodes.jsonl").open("a") as f:
            f.write("".join(episodes[3:5]))
        await wait_for(pilot, lambda: len(app.screen.metrics.rows) == 12 and len(app.screen.store.summaries) == 5)
        await shown(pilot, "step 12 · epoch 2 · 12 rows · 5 rollouts", "metrics: torn last line skipped")
        after = panel("reward").render().plain
        assert after != before and f"{json.loads(lines[11])['rollout/reward_mean']:.3g}" in after
        assert "steps 1–12" in after
        assert "%" in panel("time split (s)").render().plain
        newest = json.loads(episodes[4])
        assert _rows(app)[0].task_id == newest["task_id"]
        assert app.screen.query_one(RowTable).cursor == 2  # the cursor stayed on the rollout it was on
        await pilot.press("home", "enter")
        assert _view(app) is not None and _view(app).record.to_dict() == newest
        await pilot.press("escape")
        assert _view(app) is None
        await shown(pilot, "latest rollouts")

    drive(app, script, loaded=False)


def test_compare_view_shows_differences_and_opens_episodes(data):
    app = make_app(data / "run_a", data / "run_b")

    async def script(pilot):
        await shown(
            pilot,
            "the protocol cards differ in system_prompt, system_prompt_sha256, tool_format",
            "≠ tool_format",
            "python",
            "json",
            "overall",
            "43.8",
            "62.5",
            "+18.8",
            "2 of 8 shared tasks disagree",
        )
        rows = _rows(app)
        assert [d.task_id for d in rows] == ["multi_turn_miss_param_0", "multi_turn_miss_param_100"]
        await pilot.press("down", "b")  # miss_param_100: B solved it
        record = _view(app).record
        assert record.task_id == "multi_turn_miss_param_100" and record.reward == 1.0
        assert record.protocol["tool_format"] == "json"
        await shown(pilot, "run B run_b line")
        await pilot.press("escape", "enter")  # Enter opens A's (failed) episode
        record = _view(app).record
        assert record.task_id == "multi_turn_miss_param_100" and record.reward == 0.0

    drive(app, script)


def test_compare_view_scores_what_both_runs_played_and_says_what_it_left_out(tmp_path):
    """Issue 43: the runs of `tests/tooluse_agents/eval/differing_runs.py` (different categories, tasks and seeds)."""
    from tests.tooluse_agents.eval.differing_runs import write_runs

    app = make_app(*write_runs(tmp_path))

    async def script(pilot):
        text = await shown(
            pilot,
            "⚠ The runs played different tasks or seeds. Compared: the 8 (task, seed) pairs",
            "1 of 4 shared tasks disagree",
            absent=("the protocol cards differ",),
        )
        compact = " ".join(text.split())
        assert "Only in A, left out: 2 episodes: 1 task that B did not play." in compact
        assert "2 categories with no episode compared (long_context, miss_param)" in compact
        c = app.screen.comparison
        rows = {r.category: (r.a, r.b) for r in c.categories}
        assert rows == {"base": (0.75, 0.75), "miss_func": (0.25, 0.75), "overall": (0.5, 0.75)}
        assert [d.task_id for d in _rows(app)] == ["multi_turn_miss_func_0"]

    drive(app, script)


def test_main_reports_bad_paths(tmp_path, capsys):
    assert main([str(tmp_path / "nope")]) == 2
    assert "tooluse tui:" in capsys.readouterr().err
    (tmp_path / "episodes.jsonl").write_text("")
    assert main([str(tmp_path / "episodes.jsonl")]) == 2
    assert "the file is empty" in capsys.readouterr().err


def test_run_folder_copy_replays_like_the_file(tmp_path, data):
    shutil.copy(data / "run_a" / "episodes.jsonl", tmp_path / "episodes.jsonl")
    app = make_app(tmp_path / "episodes.jsonl")

    async def script(pilot):
        assert len(_rows(app)) == 16

    drive(app, script)


def test_a_record_with_a_broken_transcript_is_reported_not_shown(tmp_path, data):
    good = (data / "run_a" / "episodes.jsonl").read_text().splitlines()[0]
    broken = json.loads(good) | {"turns": [{"turn": 0, "steps": "not a list of steps"}]}
    (tmp_path / "episodes.jsonl").write_text(json.dumps(broken) + "\n" + good + "\n")
    app = make_app(tmp_path)

    async def script(pilot):
        await pilot.press("enter")
        await shown(pilot, "cannot show this")
        assert _view(app) is None
        await pilot.press("down", "enter")
        assert _view(app) is not None

    drive(app, script)


def test_live_view_of_a_run_that_has_not_written_yet(tmp_path):
    (tmp_path / "metrics.jsonl").write_text("")
    app = make_app(tmp_path / "metrics.jsonl", poll_s=0.05)

    async def script(pilot):
        await shown(pilot, "waiting for the first metrics row · 0 rollouts", "waiting for data", "no rollouts yet")
        (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 1, "rollout/reward_mean": 0.25}) + "\n")
        await wait_for(pilot, lambda: len(app.screen.metrics.rows) == 1)
        await shown(pilot, "step 1 · 1 row · 0 rollouts")
        await pilot.press("question_mark")  # the key panel opens and closes
        await pilot.press("question_mark")
        assert isinstance(app.screen, LiveScreen)

    drive(app, script, loaded=False)


def _with_known_issue(tmp_path, data, *names):
    """Copies of fixture runs where multi_turn_base_0 is renamed to multi_turn_base_4, a task the
    known-issues registry lists (and miss_param_0, which the runs disagree on, to miss_param_4)."""
    folders = []
    for name in names:
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(data / name / "results.json", folder / "results.json")
        text = (data / name / "episodes.jsonl").read_text()
        text = text.replace('"multi_turn_base_0"', '"multi_turn_base_4"')
        text = text.replace('"multi_turn_miss_param_0"', '"multi_turn_miss_param_4"')
        (folder / "episodes.jsonl").write_text(text)
        folders.append(folder)
    return folders


def test_replay_marks_known_issue_tasks_and_the_episode_says_why(tmp_path, data):
    (run,) = _with_known_issue(tmp_path, data, "run_a")
    app = make_app(run)

    async def script(pilot):
        await shown(pilot, "known issue", "⚑ wrong gt", "4 on known-issue tasks (⚑)")
        rows = _rows(app)
        pilot.app.screen.query_one(RowTable).cursor = next(
            i for i, s in enumerate(rows) if s.task_id == "multi_turn_base_4"
        )
        await pilot.press("enter", "home")
        assert _view(app).record.task_id == "multi_turn_base_4"
        await shown(pilot, "⚑ known BFCL issue (wrong ground truth):", "issues/1367")
        await pilot.press("escape")
        await shown(pilot, "4 on known-issue tasks (⚑)")

    drive(app, script)


def test_compare_marks_known_issue_tasks_and_shows_the_clean_subset(tmp_path, data):
    app = make_app(*_with_known_issue(tmp_path, data, "run_a", "run_b"))

    async def script(pilot):
        await shown(pilot, "clean subset", "known-issues registry", "2 tasks out", "⚑ wrong gt")
        marked = {d.task_id: d.known_issue for d in _rows(app)}
        assert marked["multi_turn_miss_param_4"] == "wrong_ground_truth"

    drive(app, script)


def _runs_folder(tmp_path, data):
    """A folder laid out as `make run` writes it: runs three folders down, none at the top."""
    root = tmp_path / "first-run"
    for model in ("smollm2-135m", "smollm2-135m-warmstart"):
        cell = root / model / "bfcl" / "template=native"
        cell.mkdir(parents=True)
        shutil.copy(data / "run_a" / "episodes.jsonl", cell / "episodes.jsonl")
    shutil.copytree(data / "train_run", root / "grpo")
    return root


def test_a_folder_of_runs_opens_as_a_list_to_choose_from(tmp_path, data):
    app = make_app(_runs_folder(tmp_path, data))

    async def script(pilot):
        assert isinstance(app.screen, RunListScreen)
        assert [r.name for r in _rows(app)] == [
            "grpo",
            "smollm2-135m-warmstart/bfcl/template=native",
            "smollm2-135m/bfcl/template=native",
        ]
        await shown(pilot, "3 runs · 2 with episodes · 1 training", "smollm2-135m/bfcl/template=native", "training")
        await pilot.press("down", "down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ReplayScreen)
        await shown(pilot, "16 episodes", "⌫ runs")
        await pilot.press("backspace")
        assert isinstance(app.screen, RunListScreen)
        assert app.screen.focused is app.screen.query_one(RowTable)

    drive(app, script)


def test_the_back_key_is_off_outside_a_run_list(data):
    app = make_app(data / "run_a")

    async def script(pilot):
        await shown(pilot, "16 episodes", absent=("⌫ runs",))
        await pilot.press("backspace")
        assert isinstance(app.screen, ReplayScreen)

    drive(app, script)
