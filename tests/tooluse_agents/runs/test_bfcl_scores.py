"""BFCL's summary scores: equal to bfcl-eval's own score tables on the same per-category accuracies."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tooluse_agents.eval.run import results_table
from tooluse_agents.runs.bfcl_scores import (
    CATEGORIES,
    ENTRIES,
    FORMULAS,
    MEMORY_ENV_ID,
    MULTI_TURN_ENV_ID,
    SINGLE_TURN_ENV_ID,
    WEB_SEARCH_ENV_ID,
    bfcl_scores,
    format_bfcl_table,
    shown_scores,
)
from tooluse_agents.runs.report import bfcl_scores_section
from tooluse_agents.runs.results import summarize

# Our score -> the columns of BFCL's CSVs that hold it (file stem, column header).
COLUMNS = {
    "non_live_simple": [("data_non_live", "Simple AST"), ("data_overall", "Non-Live Simple AST")],
    "non_live": [
        ("data_non_live", "Non-Live Overall Acc"),
        ("data_non_live", "AST Summary"),
        ("data_overall", "Non-Live AST Acc"),
    ],
    "live": [("data_live", "Live Overall Acc"), ("data_live", "AST Summary"), ("data_overall", "Live Acc")],
    "multi_turn": [("data_multi_turn", "Multi Turn Overall Acc"), ("data_overall", "Multi Turn Acc")],
    "web_search": [("data_agentic", "Web Search Summary"), ("data_overall", "Web Search Acc")],
    "memory": [("data_agentic", "Memory Summary"), ("data_overall", "Memory Acc")],
    "agentic": [("data_agentic", "Agentic Overall Acc")],
    "irrelevance_detection": [("data_overall", "Irrelevance Detection")],
    "relevance_detection": [("data_overall", "Relevance Detection"), ("data_live", "Relevance Detection")],
    "overall": [("data_overall", "Overall Acc")],
}
MODEL = "gorilla-openfunctions-v2"  # any model BFCL knows whose name has no "_"


@pytest.fixture(scope="module")
def bfcl_tables():
    """A function: BFCL's score-table rows (exact floats, before formatting) for per-category (accuracy, count)."""
    helper = pytest.importorskip("bfcl_eval.eval_checker.eval_runner_helper")

    def tables(accuracies, tmp: Path):
        captured = {}

        def capture(data, file_path, header, sort_column_index, no_conversion_numeric_column_index=()):
            (row,) = data
            captured[Path(file_path).stem] = dict(zip(header, row, strict=True))

        table = {MODEL: {c: {"accuracy": a, "total_count": n} for c, (a, n) in accuracies.items()}}
        mp = pytest.MonkeyPatch()
        mp.setattr(helper, "write_score_csv_file", capture)
        mp.delenv("WANDB_BFCL_PROJECT", raising=False)
        try:
            helper.generate_leaderboard_csv(table, tmp)
        finally:
            mp.undo()
        return captured

    return tables


def random_accuracies(rng: random.Random) -> dict[str, tuple[float, int]]:
    out = {}
    for c in CATEGORIES:
        n = rng.randint(1, 400)
        out[c] = (rng.randint(0, n) / n, n)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_every_score_equals_bfcl_evals_own_tables(bfcl_tables, tmp_path, seed):
    accuracies = random_accuracies(random.Random(seed))
    theirs = bfcl_tables(accuracies, tmp_path)
    ours = bfcl_scores(accuracies)
    assert set(COLUMNS) == {f.name for f in FORMULAS}
    for name, columns in COLUMNS.items():
        assert ours[name].missing == ()
        for stem, column in columns:
            assert theirs[stem][column] == ours[name].value, (name, stem, column)  # exact, not approximate
    assert ours["live"].entries == sum(accuracies[c][1] for c in CATEGORIES if c.startswith("live_") and "rel" not in c)


def test_a_missing_category_gives_no_score_where_bfcl_prints_na_or_counts_it_as_zero(bfcl_tables, tmp_path):
    accuracies = random_accuracies(random.Random(7))
    del accuracies["simple_java"]
    theirs = bfcl_tables(accuracies, tmp_path)
    ours = bfcl_scores(accuracies)
    assert theirs["data_non_live"]["AST Summary"] == "N/A" and theirs["data_non_live"]["Simple AST"] == "N/A"
    # BFCL's overall columns count the absent category as 0: a number over another set, never given here
    assert isinstance(theirs["data_non_live"]["Non-Live Overall Acc"], float)
    assert isinstance(theirs["data_overall"]["Overall Acc"], float)
    for name in ("non_live_simple", "non_live", "overall"):
        assert ours[name].value is None and ours[name].missing == ("simple_java",)
    for name in ("live", "multi_turn", "irrelevance_detection", "relevance_detection", "agentic"):  # still equal
        stem, column = COLUMNS[name][-1]
        assert ours[name].value == theirs[stem][column], name


# The column of BFCL's leaderboard table (data_overall; agentic: data_agentic) a score's ``as_bfcl`` is.
SHOWN = {name: next((c for c in cols if c[0] == "data_overall"), cols[0]) for name, cols in COLUMNS.items()}


@pytest.mark.parametrize("seed", range(8))
def test_with_categories_missing_as_bfcl_is_the_number_bfcl_prints(bfcl_tables, tmp_path, seed):
    """BFCL counts a category not run as 0 (weighted by its full entry count) in its overall columns, N/A elsewhere."""
    rng = random.Random(100 + seed)
    accuracies = random_accuracies(rng)
    for c in rng.sample(CATEGORIES, rng.randint(1, len(CATEGORIES) - 1)):
        del accuracies[c]
    theirs = bfcl_tables(accuracies, tmp_path)
    ours = bfcl_scores(accuracies)
    for name, (stem, column) in SHOWN.items():
        expected = theirs[stem][column]
        assert ours[name].as_bfcl == (None if expected == "N/A" else expected), (name, column, sorted(accuracies))
        if ours[name].missing:
            assert ours[name].value is None
        else:
            assert ours[name].value == ours[name].as_bfcl


def test_entry_counts_are_bfcl_evals():
    utils = pytest.importorskip("bfcl_eval.utils")
    counts = {
        c: len(utils.load_dataset_entry(c, include_prereq=False, include_language_specific_hint=False))
        for c in CATEGORIES
    }
    assert counts == dict(ENTRIES)


def test_formulas_by_hand():
    s = bfcl_scores({"live_simple": (1.0, 3), "live_multiple": (0.0, 1), "live_parallel": (0.5, 2)})
    assert s["live"].value is None and s["live"].missing == ("live_parallel_multiple",)
    s = bfcl_scores(
        {
            "live_simple": (1.0, 3),
            "live_multiple": (0.0, 1),
            "live_parallel": (0.5, 2),
            "live_parallel_multiple": (0, 4),
        }
    )
    assert s["live"].value == pytest.approx(4 / 10) and s["live"].entries == 10  # weighted by entries
    s = bfcl_scores({"irrelevance": (1.0, 240), "live_irrelevance": (0.5, 10), "live_relevance": (0.25, 16)})
    assert s["irrelevance_detection"].value == 0.75 and s["relevance_detection"].value == 0.25  # unweighted
    mt = {
        f"multi_turn_{c}": (v, 200)
        for c, v in zip(("base", "miss_func", "miss_param", "long_context"), (1, 0, 0, 0), strict=True)
    }
    s = bfcl_scores(mt)
    assert s["multi_turn"].value == 0.25
    assert s["overall"].value is None and "multi_turn_base" not in s["overall"].missing
    assert s["overall"].missing[:3] == ("simple_python", "simple_java", "simple_javascript")
    every = bfcl_scores({c: (1.0, 1) for c in CATEGORIES})
    assert every["overall"].value == pytest.approx(1.0)
    with pytest.raises(ValueError, match="positive"):
        bfcl_scores({"irrelevance": (1.0, 0)})


def test_a_run_shows_the_scores_it_has_an_input_of_and_overall():
    assert shown_scores(["multi_turn_base"]) == ("multi_turn", "overall")
    assert shown_scores(["simple_python", "irrelevance"]) == (
        "non_live_simple",
        "non_live",
        "irrelevance_detection",
        "overall",
    )
    assert shown_scores(["live_relevance"]) == ("relevance_detection", "overall")


def test_env_ids_are_the_envs():
    from tooluse_gym.envs.ids import MEMORY_ID, MULTI_TURN_ID, SINGLE_TURN_ID, WEB_SEARCH_ID

    ours = (MULTI_TURN_ENV_ID, SINGLE_TURN_ENV_ID, MEMORY_ENV_ID, WEB_SEARCH_ENV_ID)
    assert ours == (MULTI_TURN_ID, SINGLE_TURN_ID, MEMORY_ID, WEB_SEARCH_ID)


def ep(category, seed, reward, env_id, task_id="t"):
    return {"task_id": task_id, "category": category, "seed": seed, "reward": reward, "protocol": {"env_id": env_id}}


def test_summary_of_a_multi_turn_run_has_bfcls_multi_turn_score_per_seed():
    rewards = {"base": (1, 0), "miss_func": (1, 1), "miss_param": (0, 0), "long_context": (1, 0)}
    episodes = [
        ep(c, seed, float(r), MULTI_TURN_ENV_ID, f"{c}_{i}")
        for c, rs in rewards.items()
        for seed in (0, 1)
        for i, r in enumerate(rs if seed == 0 else rs[::-1][:1])
    ]
    s = summarize(episodes)
    block = s["bfcl_scores"]
    assert list(block) == ["multi_turn", "overall"]
    assert block["multi_turn"]["per_seed"] == s["overall"]["per_seed"]  # BFCL's multi-turn = unweighted mean
    assert block["multi_turn"]["column"] == "Multi Turn Acc" and block["multi_turn"]["missing"] == []
    assert block["overall"]["mean"] is None and block["overall"]["per_seed"] == {}
    assert "multi_turn_base" not in block["overall"]["missing"] and "live_simple" in block["overall"]["missing"]
    table = format_bfcl_table(s)
    assert "| multi_turn | Multi Turn Acc |" in table and "overall lacks simple_python" in table
    # BFCL's own Overall for the run: the multi-turn score x 30 %, every category not run counted as 0
    assert block["overall"]["as_bfcl"]["per_seed"]["0"] == pytest.approx(0.3 * block["multi_turn"]["per_seed"]["0"])
    assert "| **overall** | Overall Acc |" in table and "count as 0" in table
    assert "BFCL summary scores" in "\n".join(bfcl_scores_section(s))
    assert "BFCL's summary scores" in results_table({"summary": s})


def test_summary_of_a_single_turn_run_weights_live_by_entries_and_skips_seeds_missing_a_category():
    episodes = (
        [ep("live_simple", 0, 1.0, SINGLE_TURN_ENV_ID, f"s{i}") for i in range(3)]
        + [ep("live_multiple", 0, 0.0, SINGLE_TURN_ENV_ID)]
        + [ep("live_parallel", 0, 0.0, SINGLE_TURN_ENV_ID)]
        + [ep("live_parallel_multiple", 0, 1.0, SINGLE_TURN_ENV_ID)]
        + [ep("live_simple", 1, 1.0, SINGLE_TURN_ENV_ID)]  # seed 1 lacks the other live categories
    )
    s = summarize(episodes)
    block = s["bfcl_scores"]
    assert list(block) == ["live", "overall"]
    assert block["live"]["per_seed"] == {"0": pytest.approx(4 / 6)} and block["live"]["n"] == 1
    assert s["overall"]["per_seed"]["0"] == pytest.approx((1 + 0 + 0 + 1) / 4)  # the existing field, unchanged


def test_no_bfcl_scores_outside_bfcls_envs():
    assert "bfcl_scores" not in summarize([ep("base", 0, 1.0, "ToolUse-Scenario-v0")])
    assert "bfcl_scores" not in summarize([{"task_id": "t", "category": "base", "seed": 0, "reward": 1.0}])
