"""Named estimators against hand-computed values: pass@k (unbiased), pass^k, avg@k, and pass@1 of a run."""

from __future__ import annotations

import json
from itertools import combinations

import pytest

from tooluse_agents.eval.estimators import avg_at_k, estimate, estimate_table, pass_at_k, pass_hat_k, run_episodes

# (n, c, k): pass@k = 1 - C(n-c, k) / C(n, k), pass^k = C(c, k) / C(n, k), avg@k = c / n, worked by hand
HAND = [
    (5, 2, 2, 1 - 3 / 10, 1 / 10, 2 / 5),  # C(3,2) = 3, C(5,2) = 10, C(2,2) = 1
    (4, 2, 2, 1 - 1 / 6, 1 / 6, 1 / 2),  # C(2,2) = 1, C(4,2) = 6
    (3, 2, 2, 1.0, 1 / 3, 2 / 3),  # C(1,2) = 0, C(3,2) = 3
    (4, 1, 1, 1 / 4, 1 / 4, 1 / 4),  # k = 1: all three are c / n
    (3, 0, 2, 0.0, 0.0, 0.0),  # c = 0: nothing solves it
    (3, 3, 2, 1.0, 1.0, 1.0),  # c = n: every sample solves it
    (3, 1, 3, 1.0, 0.0, 1 / 3),  # k = n: pass@n = any solved, pass^n = all solved
    (3, 3, 3, 1.0, 1.0, 1.0),
    (6, 3, 4, 1.0, 0.0, 1 / 2),  # C(3,4) = 0 on both sides
    (6, 4, 3, 1 - 0 / 20, 4 / 20, 2 / 3),  # C(2,3) = 0, C(4,3) = 4, C(6,3) = 20
    (7, 2, 3, 1 - 10 / 35, 0.0, 2 / 7),  # C(5,3) = 10, C(7,3) = 35
]


@pytest.mark.parametrize(("n", "c", "k", "at_k", "hat_k", "avg"), HAND)
def test_per_task_estimators_equal_the_hand_computed_values(n, c, k, at_k, hat_k, avg):
    assert pass_at_k(n, c, k) == pytest.approx(at_k)
    assert pass_hat_k(n, c, k) == pytest.approx(hat_k)
    assert avg_at_k(n, c, k) == pytest.approx(avg)


@pytest.mark.parametrize(
    ("n", "c", "k"), [(n, c, k) for n in range(1, 7) for c in range(n + 1) for k in range(1, n + 1)]
)
def test_pass_at_k_and_pass_hat_k_are_the_mean_over_every_k_subset_of_the_samples(n, c, k):
    """The unbiased estimators are the exact averages over all k of the n samples: any solved, all solved."""
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(combinations(outcomes, k))
    assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))
    assert pass_hat_k(n, c, k) == pytest.approx(sum(all(s) for s in subsets) / len(subsets))
    assert avg_at_k(n, c, k) == pytest.approx(sum(sum(s) / k for s in subsets) / len(subsets))


@pytest.mark.parametrize("estimator", [pass_at_k, pass_hat_k, avg_at_k])
def test_k_above_n_and_impossible_counts_are_refused(estimator):
    with pytest.raises(ValueError, match="k=4 is more than the n=3 samples"):
        estimator(3, 1, 4)
    with pytest.raises(ValueError, match="k must be at least 1"):
        estimator(3, 1, 0)
    with pytest.raises(ValueError, match="0 <= c <= n"):
        estimator(3, 4, 1)


# Run B of `differing_runs` (three seeds), rewards per task by seed:
#   base: base_0 (1 0 0) c=1, base_4 (1 1 1) c=3;  miss_func: mf_0 (1 1 1) c=3, mf_1 (1 0 1) c=2;
#   miss_param: mp_0 (0 0 0) c=0;  long_context: lc_0 (0 0 0) c=0.  n = 3 everywhere.
RUN_B = {
    # estimator, k: base, miss_func, overall (miss_param and long_context are 0 under every estimator)
    ("pass@1", None): (2 / 3, 5 / 6, (2 / 3 + 5 / 6) / 4),
    ("pass@k", 2): ((2 / 3 + 1) / 2, 1.0, ((2 / 3 + 1) / 2 + 1) / 4),  # c=1: 1 - C(2,2)/C(3,2) = 2/3
    ("pass^k", 2): ((0 + 1) / 2, (1 + 1 / 3) / 2, (1 / 2 + 2 / 3) / 4),  # c=2: C(2,2)/C(3,2) = 1/3
    ("avg@k", 2): (2 / 3, 5 / 6, (2 / 3 + 5 / 6) / 4),
    ("pass@k", None): (1.0, 1.0, 0.5),  # k = n = 3: solved by any of the three seeds
    ("pass^k", None): (0.5, 0.5, 0.25),  # k = 3: solved by all three
}


@pytest.fixture
def run_b(tmp_path):
    from tests.tooluse_agents.eval.differing_runs import write_runs

    return write_runs(tmp_path)[1]


@pytest.mark.parametrize(("estimator", "k"), list(RUN_B))
def test_a_runs_estimates_per_category_and_overall_equal_the_hand_computed_ones(run_b, estimator, k):
    result = estimate(run_episodes(run_b), estimator, k)
    base, miss_func, overall = RUN_B[(estimator, k)]
    assert result.k == (3 if k is None and estimator != "pass@1" else k or 1)
    assert result.categories["base"]["value"] == pytest.approx(base)
    assert result.categories["miss_func"]["value"] == pytest.approx(miss_func)
    assert result.categories["miss_param"]["value"] == 0.0 and result.categories["long_context"]["value"] == 0.0
    assert result.overall["value"] == pytest.approx(overall)
    assert result.categories["miss_param"]["ci95"] == [0.0, 0.0]  # one task, always 0
    for row in (*result.categories.values(), result.overall):
        low, high = row["ci95"]
        assert low <= row["value"] + 1e-12 and row["value"] <= high + 1e-12
    assert result.seeds == (0, 1, 2)


def test_pass_at_1_is_exactly_the_run_tables_mean_and_the_intervals_are_seeded(run_b):
    summary = json.loads((run_b / "results.json").read_text())["summary"]
    result = estimate(run_episodes(run_b))
    assert result.overall["value"] == summary["overall"]["mean"]
    assert {c: r["value"] for c, r in result.categories.items()} == {
        c: r["mean"] for c, r in summary["categories"].items()
    }
    assert result.label == "pass@1 (mean over 3 seeds)"
    assert estimate(run_episodes(run_b)).overall["ci95"] == result.overall["ci95"]
    low, high = result.overall["ci95"]
    assert low < result.overall["value"] < high  # the tasks disagree: a real interval


def test_the_table_heading_names_the_estimator_and_its_samples(run_b):
    table = estimate_table(estimate(run_episodes(run_b), "pass@k", 2))
    assert table.splitlines()[0] == (
        "| category | tasks | pass@2 (unbiased, 1 - C(n-c,2)/C(n,2), n = 3 samples per task), % | "
        "95% CI (bootstrap over tasks) |"
    )
    assert "| **overall** | 6 | 45.8 |" in table  # 11/24
    assert "| base | 2 | 83.3 |" in table
    assert (
        estimate_table(estimate(run_episodes(run_b), "pass^k", 2))
        .splitlines()[0]
        .startswith("| category | tasks | pass^2 (all 2 succeed")
    )
    assert "avg@2 (mean accuracy of 2 samples" in estimate_table(estimate(run_episodes(run_b), "avg@k", 2))


def test_k_above_the_seeds_played_an_unknown_estimator_and_k_with_pass_at_1_are_refused(run_b):
    episodes = run_episodes(run_b)
    with pytest.raises(ValueError, match=r"k=4 needs at least 4 samples \(seeds\) of every task, but 6 of 6 tasks"):
        estimate(episodes, "pass@k", 4)
    with pytest.raises(ValueError, match="unknown estimator 'best@k'"):
        estimate(episodes, "best@k", 2)
    with pytest.raises(ValueError, match="pass@1 is one sample"):
        estimate(episodes, "pass@1", 2)
