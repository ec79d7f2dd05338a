"""The TUI on BFCL agentic runs: the memory each session left, each question's verdict (memory and web search)."""

from __future__ import annotations

from tooluse_agents.backends.oracle import OracleAgent
from tooluse_agents.eval.run import EvalConfig, run_eval
from tooluse_agents.rollout.episode import read_episodes
from tooluse_tui.transcript import verdict_text


def test_the_tui_shows_each_session_s_memory_and_each_question_s_verdict(tmp_path):
    config = EvalConfig(agent="oracle", categories=("memory_rec_sum",), task_ids=("memory_rec_sum-finance",))
    run_eval(config, tmp_path / "run", agent=OracleAgent(), progress=False)
    (record,) = read_episodes(tmp_path / "run" / "episodes.jsonl")[0]
    shown = [verdict_text(t).plain for t in record.turns if t.verdict]
    sessions = [s for s in shown if "ended; memory now" in s]
    assert len(sessions) == 7 and "answer_55: " in sessions[0]
    assert sum(s.startswith("✓") for s in shown) == 25 == len(record.questions)


def test_the_tui_shows_a_web_search_question_s_verdict(tmp_path):
    config = EvalConfig(
        agent="oracle", categories=("web_search_no_snippet",), task_ids=("web_search_no_snippet_4",), search="gold-hops"
    )
    run_eval(config, tmp_path / "run", agent=OracleAgent(), progress=False)
    (record,) = read_episodes(tmp_path / "run" / "episodes.jsonl")[0]
    (shown,) = [verdict_text(t).plain for t in record.turns if t.verdict]
    assert shown.startswith("✓") and "web_search_no_snippet_4" in shown
