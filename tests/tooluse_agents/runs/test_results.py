from __future__ import annotations

import math

import pytest

from tooluse_agents.backends.base import FAILURE_CODES
from tooluse_agents.runs.failures import failure_banner, run_failed
from tooluse_agents.runs.records import UNSCORED_ERRORS
from tooluse_agents.runs.results import format_table, spread, summarize


def ep(category, seed, reward, error=None, checker_error=None, task_id="t0"):
    return {
        "task_id": task_id,
        "category": category,
        "seed": seed,
        "reward": reward,
        "tokens": {"prompt": 10, "completion": 2},
        "error": {"type": error, "message": ""} if error else None,
        "checker": {"valid": reward == 1.0, "error_type": checker_error},
    }


def test_spread_uses_student_t():
    s = spread([0.2, 0.4, 0.6])
    assert s["mean"] == pytest.approx(0.4) and s["std"] == pytest.approx(0.2)
    assert s["ci95"] == pytest.approx(4.303 * 0.2 / math.sqrt(3))
    assert spread([0.5])["ci95"] is None and spread([])["mean"] is None


def test_summarize_per_category_per_seed_and_unweighted_overall():
    episodes = (
        [ep("base", 0, 1.0), ep("base", 0, 0.0, checker_error="multi_turn:instance_state_mismatch")]
        + [ep("base", 1, 1.0), ep("base", 1, 1.0)]
        + [ep("miss_func", 0, 0.0, error="context_length_exceeded")] * 3
        + [ep("miss_func", 0, 1.0)]
        + [ep("miss_func", 1, 0.0, error="context_length_exceeded")] * 4
    )
    s = summarize(episodes)
    assert s["categories"]["base"]["per_seed"] == {"0": 0.5, "1": 1.0}
    assert s["categories"]["miss_func"]["per_seed"] == {"0": 0.25, "1": 0.0}
    # overall per seed = mean of the category accuracies (not of all episodes)
    assert s["overall"]["per_seed"] == {"0": pytest.approx(0.375), "1": pytest.approx(0.5)}
    assert s["agent_errors"] == {"context_length_exceeded": 7}
    assert s["checker_errors"] == {"multi_turn:instance_state_mismatch": 1}
    assert s["tokens"] == {"prompt": 120, "completion": 24}
    table = format_table(s)
    assert "| base | 4 | 50.0 | 100.0 | 75.0 |" in table and "**overall**" in table


def test_pass_at_k_counts_tasks_solved_by_all_none_or_some_samples():
    episodes = [
        *(ep("a", s, 1.0, task_id="always") for s in range(4)),
        *(ep("a", s, 0.0, task_id="never") for s in range(4)),
        *(ep("a", s, float(s == 2), task_id="once") for s in range(4)),
        *(ep("a", s, float(s < 3), task_id="thrice") for s in range(4)),
    ]
    row = summarize(episodes)["pass_at_k"]["a"]
    assert row["tasks"] == 4 and row["k"] == 4
    assert row["pass_at_1"] == pytest.approx((1 + 0 + 0.25 + 0.75) / 4)
    assert row["pass_at_k"] == 0.75
    assert (row["all_correct"], row["all_wrong"], row["mixed"]) == (0.25, 0.25, 0.5)


def test_the_printed_table_adds_pass_at_k_only_with_several_seeds():
    from tooluse_agents.eval.run import results_table

    many = summarize([ep("a", s, float(s == 0), task_id="t") for s in range(3)])
    text = results_table({"summary": many})
    assert "| a | 1 | 3 | 33.3 | 100.0 | 0.0 | 0.0 | 100.0 |" in text
    one = summarize([ep("a", 0, 1.0, task_id="t")])
    assert "pass@k" not in results_table({"summary": one})


def _registry(*task_ids):
    from tooluse_gym.tasks.known_issues import KnownIssues

    entries = [
        {"task_id": t, "kind": "time_dependent", "summary": "s", "evidence": "e", "source": "u"} for t in task_ids
    ]
    return KnownIssues.from_dict({"version": "2026.12.1", "bfcl_version": "2026.3.23", "entries": entries})


def _clean_episodes():
    rewards = {
        ("base", "t1"): (1.0, 1.0),
        ("base", "t2"): (0.0, 1.0),
        ("base", "x1"): (0.0, 0.0),
        ("miss_func", "m1"): (0.0, 1.0),
        ("miss_func", "x2"): (1.0, 1.0),
        ("long_context", "x3"): (1.0, 0.0),  # every task of the category is listed
    }
    return [ep(c, s, r[s], task_id=t) for (c, t), r in rewards.items() for s in (0, 1)]


def test_clean_subset_leaves_out_listed_tasks():
    episodes = _clean_episodes()
    plain = summarize(episodes)
    s = summarize(episodes, _registry("x1", "x2", "x3", "not_in_this_run"))
    assert "clean" not in plain and {k: v for k, v in s.items() if k != "clean"} == plain  # official unchanged
    clean = s["clean"]
    assert clean["registry_version"] == "2026.12.1" and clean["registry_bfcl_version"] == "2026.3.23"
    assert clean["excluded_tasks"] == ["x1", "x2", "x3"]
    assert (clean["episodes"], clean["excluded_episodes"]) == (6, 6)
    base, miss, long = (clean["categories"][c] for c in ("base", "miss_func", "long_context"))
    assert base["per_seed"] == {"0": 0.5, "1": 1.0} and base["mean"] == 0.75
    assert (base["tasks"], base["excluded_tasks"], base["episodes"]) == (2, 1, 4)
    assert miss["per_seed"] == {"0": 0.0, "1": 1.0} and (miss["tasks"], miss["excluded_tasks"]) == (1, 1)
    assert long["mean"] is None and (long["tasks"], long["excluded_tasks"], long["episodes"]) == (0, 1, 0)
    # overall = unweighted mean of the categories that keep tasks: seed 0 (0.5 + 0) / 2, seed 1 (1 + 1) / 2
    assert clean["overall"]["per_seed"] == {"0": 0.25, "1": 1.0} and clean["overall"]["mean"] == 0.625
    # the official overall still averages all three categories
    assert s["overall"]["per_seed"] == {"0": pytest.approx((1 / 3 + 0.5 + 1) / 3), "1": pytest.approx((2 / 3 + 1) / 3)}


def test_clean_table_and_caption_show_both_scores():
    from tooluse_agents.eval.run import results_table
    from tooluse_agents.runs.results import clean_caption, format_clean_table

    s = summarize(_clean_episodes(), _registry("x1", "x2", "x3"))
    table = format_clean_table(s)
    assert "| base | 6 | 50.0 | 2 | 4 | 75.0 | ±317.6 | 1 |" in table
    assert "| long_context | 2 | 50.0 | 0 | 0 | - | n/a | 1 |" in table
    assert "| **overall** | 12 | 58.3 | 3 | 6 | 62.5 |" in table
    caption = clean_caption(s)
    assert "registry 2026.12.1" in caption and "leaves out 3 of this run's 6 tasks (6 episodes)" in caption
    printed = results_table({"summary": s})
    assert format_table(s) in printed and table in printed
    assert "clean" not in results_table({"summary": summarize(_clean_episodes())}).lower()


def test_compare_results_by_hand():
    from tooluse_agents.runs.results import compare_results
    from tooluse_gym.tasks.known_issues import load_known_issues

    def run(rewards):
        return [ep(c, s, r, task_id=t) for (t, c), per_seed in rewards.items() for s, r in enumerate(per_seed)]

    a = run(
        {("multi_turn_base_0", "base"): (1, 1), ("multi_turn_base_4", "base"): (0, 0), ("mf_1", "miss_func"): (0, 1)}
    )
    b = run(
        {("multi_turn_base_0", "base"): (0, 0), ("multi_turn_base_4", "base"): (1, 1), ("mf_1", "miss_func"): (1, 1)}
    )
    registry = load_known_issues()
    c = compare_results((a, b), registry)
    rows = {r.category: r for r in c.categories}
    assert [r.category for r in c.categories] == ["base", "miss_func", "overall"]
    assert (rows["base"].a, rows["base"].b, rows["base"].diff) == (0.5, 0.5, 0.0)
    assert (rows["miss_func"].a, rows["miss_func"].b) == (0.5, 1.0)
    # per seed the overall is the mean of the categories: A (0.25, 0.75), B (0.75, 0.75)
    assert rows["overall"].a == 0.5 and rows["overall"].diff == 0.25
    # two seeds: t = 12.706, std of (0, 1) = 0.707, so A's miss_func CI is 12.706 * 0.707 / sqrt(2); B's is 0
    assert rows["miss_func"].diff_ci == pytest.approx(12.706 * 0.5)
    assert [(d.task_id, d.a, d.b, d.known_issue) for d in c.disagreements] == [
        ("multi_turn_base_0", 1.0, 0.0, None),
        ("multi_turn_base_4", 0.0, 1.0, "wrong_ground_truth"),
    ]
    assert c.shared_tasks == 3 and c.excluded_tasks == ("multi_turn_base_4",)
    clean = {r.category: r for r in c.clean}
    assert (clean["base"].a, clean["base"].b) == (1.0, 0.0) and (clean["overall"].a, clean["overall"].b) == (0.75, 0.5)
    assert c.registry_version == registry.version
    without = compare_results((a, b))
    assert without.clean == () and without.registry_version is None and without.disagreements[1].known_issue is None


def test_compare_results_pairs_episodes_by_task_and_seed_and_counts_what_only_one_run_holds():
    """Issue 43: runs with different categories, tasks and seeds are scored on what both played."""
    from tests.tooluse_agents.eval.differing_runs import A, B, episodes
    from tooluse_agents.runs.results import LeftOut, compare_results, coverage_lines

    c = compare_results((episodes(A), episodes(B)))
    assert (c.pairs, c.seeds, c.shared_tasks) == (8, (0, 1), 4) and not c.same_episodes
    assert c.left_out == (
        LeftOut(episodes=2, tasks=("multi_turn_base_2",)),
        LeftOut(
            episodes=10,  # seed 2 of the 6 tasks, and miss_param_0 and long_context_0 under seeds 0 and 1
            tasks=("multi_turn_long_context_0", "multi_turn_miss_param_0"),
            seeds=(2,),
            categories=("long_context", "miss_param"),
        ),
    )
    rows = {r.category: r for r in c.categories}
    assert list(rows) == ["base", "miss_func", "overall"]  # no row, and no overall, over tasks one run lacks
    # base, on base_0 and base_4: A seed 0 (1 + 0) / 2, seed 1 (1 + 1) / 2; B seed 0 (1 + 1) / 2, seed 1 (0 + 1) / 2
    base = rows["base"]
    assert (base.a, base.b, base.diff, base.episodes) == (0.75, 0.75, 0.0, 4)
    # per-seed differences (+0.5, -0.5): std sqrt(0.5), t(1 df) 12.706, so 12.706 * sqrt(0.5) / sqrt(2)
    assert base.diff_ci == pytest.approx(12.706 * 0.5)
    assert base.a_ci == pytest.approx(12.706 * 0.25)  # A's seeds (0.5, 1.0)
    # miss_func: A (0.5, 0.0), B (1.0, 0.5): the same +0.5 under both seeds
    mf = rows["miss_func"]
    assert (mf.a, mf.b, mf.diff, mf.diff_ci) == (0.25, 0.75, 0.5, 0.0)
    # overall per seed = mean of the categories: A (0.5, 0.5), B (1.0, 0.5); differences (+0.5, 0.0)
    overall = rows["overall"]
    assert (overall.a, overall.b, overall.diff, overall.episodes) == (0.5, 0.75, 0.25, 8)
    assert overall.diff_ci == pytest.approx(12.706 * 0.25)
    # on the seeds both played, only miss_func_0 is solved by one run (base_0: A 1.0, B 0.5 over seeds 0 and 1)
    assert [(d.task_id, d.a, d.b) for d in c.disagreements] == [("multi_turn_miss_func_0", 0.0, 1.0)]
    assert coverage_lines(c) == [
        "The runs played different tasks or seeds. Compared: the 8 (task, seed) pairs (4 tasks; seeds 0, 1; "
        "2 categories) both played; every score below is over these only.",
        "Only in A, left out: 2 episodes: 1 task that B did not play.",
        "Only in B, left out: 10 episodes: 2 tasks and 1 seed (2) that A did not play; "
        "2 categories with no episode compared (long_context, miss_param).",
    ]


def test_compare_results_of_runs_with_the_same_episodes_gives_their_summaries_numbers():
    from tooluse_agents.runs.results import LeftOut, compare_results, coverage_lines

    a = _clean_episodes()
    b = [{**e, "reward": 1.0 - e["reward"]} if e["task_id"] in ("t2", "x3") else e for e in a]
    c = compare_results((a, b))
    assert c.same_episodes and c.left_out == (LeftOut(), LeftOut()) and (c.pairs, c.seeds) == (12, (0, 1))
    sa, sb = summarize(a), summarize(b)
    for row in c.categories:
        x = sa["overall"] if row.category == "overall" else sa["categories"][row.category]
        y = sb["overall"] if row.category == "overall" else sb["categories"][row.category]
        assert (row.a, row.a_ci, row.b, row.b_ci) == (x["mean"], x["ci95"], y["mean"], y["ci95"])
        diffs = [y["per_seed"][s] - x["per_seed"][s] for s in ("0", "1")]
        assert row.diff_ci == spread(diffs)["ci95"]
    assert coverage_lines(c) == ["Both runs played the same 12 (task, seed) pairs (6 tasks; seeds 0, 1; 3 categories)."]


def test_compare_results_without_a_shared_task_and_seed_scores_nothing():
    from tooluse_agents.runs.results import compare_results, coverage_lines

    c = compare_results(([ep("base", 0, 1.0, task_id="t1")], [ep("base", 1, 0.0, task_id="t1")]))
    assert c.categories == () and c.pairs == 0 and c.disagreements == ()
    assert c.left_out[0].episodes == 1 and c.left_out[0].seeds == (0,) and c.left_out[0].tasks == ()
    assert coverage_lines(c)[0].startswith("No episode of A has the task and seed of an episode of B")


def test_failure_banner_says_a_run_failed_or_how_many_episodes_did():
    ok = summarize([ep("base", 0, 1.0), ep("base", 0, 0.0, checker_error="multi_turn:empty_turn_model_response")])
    assert failure_banner(ok) is None and not run_failed(ok)
    some = summarize([ep("base", 0, 1.0), *[ep("base", s, 0.0, error="context_length_exceeded") for s in (1, 2)]])
    assert failure_banner(some).startswith("WARNING: 2 of 3 episodes ended in an agent error (context_length_")
    assert failure_banner(some).endswith("They count as 0 in the table below.") and not run_failed(some)
    mixed = summarize(
        [ep("base", 0, 1.0), ep("base", 1, 0.0, error="timeout"), ep("base", 2, 0.0, error="bad_request")]
    )
    banner = failure_banner(mixed)
    assert banner.startswith("WARNING: 1 of 3 episodes were not scored: the model server failed (timeout: 1)")
    assert "left out of the table below; the same command again plays them" in banner
    assert banner.endswith(
        "1 of 3 episodes ended in an agent error (bad_request: 1): the endpoint rejected the "
        "requests (400: the served model name? a prompt too long?). They count as 0 in the table below."
    )
    dead = summarize([ep("base", 0, 0.0, error="connection_error"), ep("base", 1, 0.0, error="agent_exception")] * 2)
    banner = failure_banner(dead)
    assert banner.startswith("ERROR: all 4 episodes ended in an agent error (connection_error: 2, agent_exception: 2)")
    assert banner.endswith("The run failed; this is not a score of 0.") and run_failed(dead)


def test_a_failed_model_server_leaves_its_episodes_unscored_not_zero():
    """connection_error / timeout / rate_limited / server_error: the server failed, not the model (issue 58)."""
    for kind in sorted(UNSCORED_ERRORS):
        s = summarize(
            [ep("base", 0, 1.0), ep("base", 0, 0.0, error=kind, task_id="t1"), ep("miss_func", 0, 0.0, error=kind)]
        )
        assert s["categories"]["base"]["per_seed"] == {"0": 1.0}  # not 0.5: the failed episode is left out
        assert "miss_func" not in s["categories"] and s["overall"]["mean"] == 1.0
        assert s["agent_errors"] == {kind: 2} and s["unscored"] == {kind: 2}
    counted = summarize([ep("base", 0, 1.0), ep("base", 0, 0.0, error="context_length_exceeded", task_id="t1")])
    assert counted["categories"]["base"]["per_seed"] == {"0": 0.5} and counted["unscored"] == {}
    assert UNSCORED_ERRORS.issubset(FAILURE_CODES)


def test_a_later_record_takes_the_place_of_an_unscored_one_and_only_of_it():
    from tooluse_agents.runs.records import as_records, unique_episodes

    first = as_records([ep("base", 0, 0.0, error="connection_error"), ep("base", 0, 1.0, task_id="t1")])
    again = as_records([ep("base", 0, 1.0), ep("base", 0, 0.0, task_id="t1")])
    with pytest.warns(UserWarning, match="left out 1 repeated episode"):
        kept = unique_episodes([*first, *again])
    assert [(r.task_id, r.reward, r.unscored) for r in kept] == [("t0", 1.0, False), ("t1", 1.0, False)]
