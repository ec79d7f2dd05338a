"""What `tooluse eval run` draws on stderr: no model-loading bar under --no-progress, no token rate it does not have."""

from __future__ import annotations

import pytest

from tooluse_agents.backends.base import Generation
from tooluse_agents.backends.load_progress import load_bars
from tooluse_agents.cli.eval import QUIET_ENV, main
from tooluse_agents.eval.run import _Progress
from tooluse_agents.runs.records import EpisodeRecord

ONE_TASK = ["--categories", "base", "--limit", "1", "--seeds", "0"]


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch):
    for name in QUIET_ENV:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_the_oracle_shows_no_token_rate(tmp_path, capfd):
    assert main(["run", "--agent", "oracle", *ONE_TASK, "--out", str(tmp_path / "run")]) == 0
    err = capfd.readouterr().err
    assert "acc 100.0%" in err and "tok/s" not in err


def test_an_agent_that_counts_tokens_shows_its_rate():
    bar = _Progress(1, [], enabled=False)
    bar.batch([Generation(text="x", completion_tokens=0)])
    assert bar.bar.postfix == "acc 0.0%"
    bar.batch([Generation(text="x", completion_tokens=12)])
    bar.episode(EpisodeRecord(task_id="multi_turn_base_0", reward=1.0))
    assert bar.bar.postfix.startswith("acc 100.0% | ") and bar.bar.postfix.endswith(" tok/s")
    bar.close()


def test_no_loading_bar_under_no_progress(tmp_path, capfd):
    pytest.importorskip("transformers")
    hf = ["run", "--agent", "hf", "--model", "tiny-random", "--max-tokens", "2", "--system-prompt", "none", *ONE_TASK]
    assert main([*hf, "--out", str(tmp_path / "quiet"), "--no-progress"]) == 0
    assert "Loading weights" not in capfd.readouterr().err
    assert main([*hf, "--out", str(tmp_path / "shown")]) == 0
    assert "Loading weights" in capfd.readouterr().err  # the check above can see the bar


def test_load_bars_puts_the_setting_back():
    logging = pytest.importorskip("transformers.utils.logging")
    assert logging.is_progress_bar_enabled()
    with load_bars(False):
        assert not logging.is_progress_bar_enabled()
    assert logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        with load_bars(False):
            pass
        assert not logging.is_progress_bar_enabled()  # hidden before: still hidden
    finally:
        logging.enable_progress_bar()


def test_a_log_gets_whole_lines_not_one_per_item():
    """Not a terminal: the bar writes whole lines (no carriage returns), the first and the last, not one per item."""
    import io

    from tooluse_agents.progress import progress_bar

    stream = io.StringIO()
    bar = progress_bar(total=1000, stream=stream, unit="ep")
    for _ in range(1000):
        bar.update(1)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert 2 <= len(lines) <= 4, lines
    assert "1000/1000" in lines[-1]
