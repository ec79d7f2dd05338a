"""Task data on the protocol card: the data files' digests, the checkers' version, a copy of the data read instead."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym

import tooluse_gym  # noqa: F401  (registers the env ids)
from tooluse_gym.checking import CHECKER_VERSION
from tooluse_gym.envs.tool_env import protocol_card
from tooluse_gym.protocol import DATA_UNKNOWN, ProtocolCard, sha256_text
from tooluse_gym.tasks import bfcl, bfcl_data

DOCS = {f"multi_turn_func_doc/{n}" for n in ("gorilla_file_system.json", "math_api.json", "message_api.json")} | {
    f"multi_turn_func_doc/{n}"
    for n in ("posting_api.json", "ticket_api.json", "trading_bot.json", "travel_booking.json", "vehicle_control.json")
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _card(env_id: str, **kwargs) -> ProtocolCard:
    env = gym.make(env_id, **kwargs)
    try:
        return protocol_card(env)
    finally:
        env.close()


def test_every_bfcl_env_card_lists_its_data_files_with_their_sha256():
    data = bfcl_data.package_data_folder()
    expected = {
        ("ToolUse-MultiTurn-v0", "base"): {
            "BFCL_v4_multi_turn_base.json",
            "possible_answer/BFCL_v4_multi_turn_base.json",
        }
        | DOCS,
        ("ToolUse-SingleTurn-v0", "simple_python"): {
            "BFCL_v4_simple_python.json",
            "possible_answer/BFCL_v4_simple_python.json",
        },
        ("ToolUse-SingleTurn-v0", "live_irrelevance"): {"BFCL_v4_live_irrelevance.json"},  # no possible answers
        ("ToolUse-Memory-v0", "memory_kv"): {
            "BFCL_v4_memory.json",
            "possible_answer/BFCL_v4_memory.json",
            "multi_turn_func_doc/memory_kv.json",
            *(f"memory_prereq_conversation/memory_{s}.json" for s in ("customer", "finance", "healthcare")),
            *(f"memory_prereq_conversation/memory_{s}.json" for s in ("notetaker", "student")),
        },
    }
    for (env_id, category), files in expected.items():
        card = _card(env_id, category=category)
        assert card.checker_version == CHECKER_VERSION
        assert dict(card.task_data) == {name: _sha(data / name) for name in files}, (env_id, category)
        assert card.to_dict()["task_data"] == dict(card.task_data)
        assert ProtocolCard.from_dict(card.to_dict()) == card


def test_a_task_subset_names_the_files_of_its_categories_only():
    card = _card(
        "ToolUse-SingleTurn-v0", category="single_turn", task_ids=["simple_python_0", "live_irrelevance_0-0-0"]
    )
    assert {n for n, _ in card.task_data} == {
        "BFCL_v4_simple_python.json",
        "possible_answer/BFCL_v4_simple_python.json",
        "BFCL_v4_live_irrelevance.json",
    }


def test_scenario_and_task_source_cards_list_their_files(tmp_path):
    root = Path(__file__).resolve().parents[3]
    file = root / "scenarios" / "checks" / "tiny_math.yaml"
    assert dict(_card("ToolUse-Scenario-v0", path=str(file)).task_data) == {"tiny_math.yaml": _sha(file)}
    folder = tmp_path / "set"
    (folder / "sub").mkdir(parents=True)
    shutil.copy(file, folder / "sub" / "a.yaml")
    assert dict(_card("ToolUse-Scenario-v0", path=str(folder)).task_data) == {"set/sub/a.yaml": _sha(file)}
    source = _card("ToolUse-Tasks-v0", source={"kind": "bfcl", "category": "base", "limit": 2})
    assert source.task_data == _card("ToolUse-MultiTurn-v0", category="base").task_data


def test_the_file_names_use_bfcl_evals_prefix():
    assert bfcl_data._PREFIX == bfcl._import("bfcl_eval.constants.category_mapping").VERSION_PREFIX


def test_old_cards_read_as_data_version_unknown_and_keep_their_fingerprints():
    card = _card("ToolUse-MultiTurn-v0", category="base", task_ids=["multi_turn_base_0"])
    old = card.to_dict()
    del old["task_data"], old["checker_version"]
    legacy = ProtocolCard.from_dict(old)
    assert legacy.data_version == DATA_UNKNOWN and card.data_version != DATA_UNKNOWN
    # the fingerprint as it was computed before the fields existed
    before = {k: v for k, v in old.items() if k not in ("seed", "known_issues")}
    assert legacy.fingerprint() == sha256_text(json.dumps(before, sort_keys=True))[:12]
    assert card.fingerprint() != legacy.fingerprint()
    assert set(legacy.differences(card)) == {"task_data", "checker_version"}
    assert legacy.data_differences(card) == {}  # unknown: nothing to name


def test_other_data_is_another_protocol():
    card = _card("ToolUse-MultiTurn-v0", category="base", task_ids=["multi_turn_base_0"])
    name = "possible_answer/BFCL_v4_multi_turn_base.json"
    edited = card.replace(task_data=tuple((n, "0" * 64 if n == name else d) for n, d in card.task_data))
    assert edited.fingerprint() != card.fingerprint() and edited.data_version != card.data_version
    assert card.data_differences(edited) == {name: (dict(card.task_data)[name], "0" * 64)}
    assert set(card.differences(edited)) == {"task_data"}


def test_a_copy_of_the_data_is_read_instead_when_named(tmp_path):
    package = bfcl_data.package_data_folder()
    copy = tmp_path / "data"
    shutil.copytree(package, copy)
    answers = copy / "possible_answer" / "BFCL_v4_simple_python.json"
    lines = answers.read_text().splitlines()
    first = json.loads(lines[0])
    first["ground_truth"][0]["calculate_triangle_area"]["base"] = [11]
    answers.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    truth = copy / "possible_answer" / "BFCL_v4_multi_turn_base.json"
    truth.write_text(truth.read_text().replace("mkdir(dir_name='temp')", "mkdir(dir_name='temp2')", 1))
    before = {p: _sha(p) for p in copy.rglob("*") if p.is_file()}
    code = (
        "import json, gymnasium as gym, tooluse_gym\n"
        "from tooluse_gym.envs.tool_env import protocol_card\n"
        "from tooluse_gym.tasks import bfcl, bfcl_single_turn\n"
        "t = bfcl_single_turn.load_single_turn_tasks('simple_python', ['simple_python_0'])[0]\n"
        "m = bfcl.load_bfcl_tasks('base', ['multi_turn_base_0'])[0]\n"
        "cards = [protocol_card(gym.make(e, category=c)).to_dict()['task_data'] for e, c in "
        "(('ToolUse-SingleTurn-v0', 'simple_python'), ('ToolUse-MultiTurn-v0', 'base'))]\n"
        "truth = [[c.name, dict(c.arguments)] for c in m.ground_truth[0]]\n"
        "print(json.dumps({'answer': t.answer[0], 'truth': truth, 'cards': cards}))\n"
    )
    env = {**os.environ, bfcl_data.DATA_ENV: str(copy)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["answer"]["calculate_triangle_area"]["base"] == [11]
    assert ["mkdir", {"dir_name": "temp2"}] in got["truth"]
    single, multi = got["cards"]
    assert single["possible_answer/BFCL_v4_simple_python.json"] == _sha(answers)
    assert single["BFCL_v4_simple_python.json"] == _sha(package / "BFCL_v4_simple_python.json")
    assert (
        multi["possible_answer/BFCL_v4_multi_turn_base.json"]
        == _sha(truth)
        != _sha(package / "possible_answer" / "BFCL_v4_multi_turn_base.json")
    )
    assert {p: _sha(p) for p in copy.rglob("*") if p.is_file()} == before  # nothing written into the copy
