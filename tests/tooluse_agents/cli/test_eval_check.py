"""`tooluse eval estimate` and `tooluse eval check`: named estimators and the reference band on oracle runs."""

from __future__ import annotations

import json

import pytest

from tooluse_agents.backends.base import AgentRequest
from tooluse_agents.backends.oracle import OracleAgent
from tooluse_agents.cli.eval import main
from tooluse_agents.eval.run import EvalConfig, run_eval

TASKS = ("--categories", "base", "miss_func", "--limit", "2", "--seeds", "0", "1")
"""Four tasks (base_0, base_100, miss_func_0, miss_func_100) under two seeds: 8 episodes."""


class WrongOn(OracleAgent):
    """The oracle, except that it answers the tasks in `wrong` without a call (which fails them)."""

    def __init__(self, *wrong: str) -> None:
        super().__init__()
        self.wrong = set(wrong)

    def message(self, request: AgentRequest) -> str:
        assert request.task is not None
        return "I cannot help with that." if request.task.task_id in self.wrong else super().message(request)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Oracle runs: ``oracle`` (100%), ``one_wrong`` (base_0 failed: 75%), ``context`` (another template),
    ``fewer`` (other tasks), ``one_seed`` (seed 0 only)."""
    root = tmp_path_factory.mktemp("check")
    assert main(["run", "--agent", "oracle", *TASKS, "--out", str(root / "oracle"), "--no-progress"]) == 0
    config = EvalConfig(agent="oracle", categories=("base", "miss_func"), limit=2, seeds=(0, 1))
    run_eval(config, root / "one_wrong", agent=WrongOn("multi_turn_base_0"), progress=False)
    context = [*TASKS, "--template", "context", "--out", str(root / "context"), "--no-progress"]
    assert main(["run", "--agent", "oracle", *context]) == 0
    fewer = ["--categories", "base", "--limit", "2", "--seeds", "0", "1", "--out", str(root / "fewer")]
    assert main(["run", "--agent", "oracle", *fewer, "--no-progress"]) == 0
    one_seed = [*TASKS[:-3], "--seeds", "0", "--out", str(root / "one_seed"), "--no-progress"]
    assert main(["run", "--agent", "oracle", *one_seed]) == 0
    return root


def test_a_run_checked_against_its_own_reference_passes(runs, tmp_path, capsys):
    ref = tmp_path / "ref.json"
    assert main(["check", str(runs / "oracle"), "--write-reference", str(ref)]) == 0
    assert f"reference: {ref}: pass@1 (mean over 2 seeds) = 100.00% over 4 tasks" in capsys.readouterr().out
    data = json.loads(ref.read_text())
    results = json.loads((runs / "oracle" / "results.json").read_text())
    assert data["score"] == results["summary"]["overall"]["mean"] == 1.0
    assert data["protocols"] == {"ToolUse-MultiTurn-v0": results["protocol"]}
    assert data["fingerprint"] == results["fingerprint"] and data["tasks"] == 4
    assert (data["estimator"], data["k"], data["seeds"]) == ("pass@1", 1, [0, 1])
    assert main(["check", str(runs / "oracle"), "--reference", str(ref)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PASS: ") and "within the band" in out and "score >= 0.97 x reference = 97.00%" in out


def test_a_run_below_the_band_fails_with_one_paragraph_and_passes_at_a_wider_band(runs, tmp_path, capsys):
    ref = tmp_path / "ref.json"
    assert main(["check", str(runs / "oracle"), "--write-reference", str(ref)]) == 0
    capsys.readouterr()
    # base: base_0 fails under both seeds, base_100 passes: 50%; miss_func 100%; overall (50 + 100) / 2 = 75%
    assert main(["check", str(runs / "one_wrong"), "--reference", str(ref), "--band", "0.97"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL: ") and out.count("\n") == 1
    assert "scores 75.00%" in out and "below the band" in out and "falls short by 22.00 points" in out
    assert main(["check", str(runs / "one_wrong"), "--reference", str(ref), "--band", "0.75"]) == 0  # 75 >= 0.75 x 100
    assert main(["check", str(runs / "one_wrong"), "--reference", str(ref), "--band", "0.76"]) == 1


def test_the_reference_estimator_scores_the_run(runs, tmp_path, capsys):
    ref = tmp_path / "pass_hat.json"
    assert main(["check", str(runs / "one_wrong"), "--write-reference", str(ref), "--estimator", "pass^k"]) == 0
    assert json.loads(ref.read_text())["k"] == 2  # the default k: the two seeds every task was played with
    assert main(["check", str(runs / "oracle"), "--reference", str(ref)]) == 0  # 100% >= 0.97 x 75%
    assert "pass^2 (all 2 succeed" in capsys.readouterr().out
    # the run has one sample per task, the reference asks for two: refused, not scored
    assert main(["check", str(runs / "one_seed"), "--reference", str(ref)]) == 2
    assert "k=2 needs at least 2 samples (seeds) of every task" in capsys.readouterr().err


def test_another_protocol_or_other_tasks_are_refused_naming_the_differences(runs, tmp_path, capsys):
    ref = tmp_path / "ref.json"
    assert main(["check", str(runs / "oracle"), "--write-reference", str(ref)]) == 0
    capsys.readouterr()
    assert main(["check", str(runs / "context"), "--reference", str(ref)]) == 2
    err = capsys.readouterr().err
    assert "the run is not comparable with the reference, so no band applies" in err
    assert "protocol fingerprint:" in err and "template: 'context' (run) vs 'native' (reference)" in err
    assert main(["check", str(runs / "fewer"), "--reference", str(ref)]) == 2
    assert "tasks: the run played 2, the reference 4, not the same ones" in capsys.readouterr().err


def test_a_card_field_only_one_side_has_is_named_and_refuses_only_with_another_fingerprint(runs, tmp_path, capsys):
    """A reference written by a version whose cards carry a field this run's card lacks (task-data digests, say)."""
    ref = tmp_path / "ref.json"
    assert main(["check", str(runs / "oracle"), "--write-reference", str(ref)]) == 0
    data = json.loads(ref.read_text())
    data["protocols"]["ToolUse-MultiTurn-v0"]["data_digests"] = {"base": "0123abcd"}
    ref.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["check", str(runs / "oracle"), "--reference", str(ref)]) == 0
    out = capsys.readouterr().out
    assert "data_digests (only the reference's card has it: unknown on the other side)" in out
    data["fingerprint"] = "ffffffffffff"
    ref.write_text(json.dumps(data))
    assert main(["check", str(runs / "oracle"), "--reference", str(ref)]) == 2
    err = capsys.readouterr().err
    assert "protocol fingerprint:" in err and "data_digests (only the reference's card has it" in err


def test_bad_references_bands_and_flags_are_refused(runs, tmp_path, capsys):
    ref = tmp_path / "ref.json"
    assert main(["check", str(runs / "oracle"), "--write-reference", str(ref)]) == 0
    assert main(["check", str(runs / "oracle"), "--write-reference", str(ref)]) == 2
    assert "exists: a reference is never overwritten" in capsys.readouterr().err
    assert main(["check", str(runs / "oracle"), "--reference", str(ref), "--band", "1.5"]) == 2
    assert "--band must lie in (0, 1]" in capsys.readouterr().err
    assert main(["check", str(runs / "oracle"), "--reference", str(ref), "--estimator", "pass@k"]) == 2
    assert "a check uses the reference's own" in capsys.readouterr().err
    not_a_reference = runs / "oracle" / "results.json"
    assert main(["check", str(runs / "oracle"), "--reference", str(not_a_reference)]) == 2
    assert "is no reference file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["check", str(runs / "oracle")])  # --reference or --write-reference


def test_estimate_prints_the_named_estimator_and_refuses_k_above_the_seeds(runs, capsys):
    assert main(["estimate", str(runs / "one_wrong")]) == 0
    table = capsys.readouterr().out
    assert "| category | tasks | pass@1 (mean over 2 seeds), % |" in table
    assert "| base | 2 | 50.0 |" in table and "| **overall** | 4 | 75.0 |" in table
    assert main(["estimate", str(runs / "one_wrong"), "--estimator", "pass@k", "--k", "2"]) == 0
    assert "| base | 2 | 50.0 |" in capsys.readouterr().out  # base_0 never solved: pass@2 0, base_100 1
    assert main(["estimate", str(runs / "one_wrong"), "--estimator", "pass@k", "--k", "3"]) == 2
    assert "k=3 needs at least 3 samples (seeds) of every task, but 4 of 4 tasks have fewer (n = 2)" in (
        capsys.readouterr().err
    )


def test_every_table_of_a_run_names_what_it_reports(runs):
    from tooluse_agents.eval.run import results_table

    text = results_table(json.loads((runs / "oracle" / "results.json").read_text()))
    heads = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line and "|---" not in line]
    heads = [h for h in heads if h.split("|")[1].strip() in ("category", "BFCL score")]
    assert len(heads) == 4  # accuracy, BFCL's scores, pass@k, clean subset
    assert "| seed 0 | seed 1 | pass@1 (mean over 2 seeds) | std | 95% CI |" in heads[0]
    assert "| seed 0 | seed 1 | mean over 2 seeds | std | 95% CI |" in heads[1]
    assert "| pass@1 (mean over seeds) | pass@k (solved by any of the k seeds) |" in heads[2]
    assert "| official pass@1 (%) |" in heads[3] and "| clean pass@1 (%) |" in heads[3]
