"""Committed results name no machine's folders, and the result writers keep it so (`tooluse_agents.runs.portable`)."""

from __future__ import annotations

import json
import sys
import tempfile

from experiments.framework.provenance import ROOT
from experiments.framework.run import write_json
from experiments.tools.portable_results import result_files, rewritten
from tooluse_agents.runs.portable import machine_paths, portable


def test_committed_results_hold_no_absolute_machine_paths():
    """benchmarks/results/**/*.json and experiments/**/results*.json: no /tmp/, /home/, /root/, /work/, /Users/ ..."""
    files = result_files()
    assert len(files) > 30
    found = {str(p.relative_to(ROOT)): machine_paths(json.loads(p.read_text(encoding="utf-8"))) for p in files}
    assert {name: paths[:3] for name, paths in found.items() if paths} == {}


def test_portable_makes_paths_relative_to_the_checkout():
    root = "/home/me/tooluse-gym"
    data = {
        "command": ["python", "-m", "x", f"run_dir={root}/runs/a", "--out", "/tmp/abc"],
        "config": {"run_dir": f"{root}/runs/a", "output_dir": "/work/other/runs/a/trl"},
        "log_tail": f'File "{root}/.venv/lib/python3.11/site-packages/trl/x.py", line 3',
        "kept": ["https://example.org/tmp/x", "runs/b", "a/tmp/b", 3, None],
        "interpreter": sys.executable,
    }
    got = portable(data, root, tmp="/tmp", home="/root")
    assert got["command"][3:] == ["run_dir=runs/a", "--out", "<tmp>/abc"]
    assert got["config"] == {"run_dir": "runs/a", "output_dir": "<abs>/runs/a/trl"}
    assert got["log_tail"] == 'File ".venv/lib/python3.11/site-packages/trl/x.py", line 3'
    assert got["kept"] == data["kept"] and got["interpreter"] == "python"
    assert machine_paths(got) == [] and machine_paths(data)


def test_the_result_writer_records_paths_relative_to_the_checkout(tmp_path):
    path = tmp_path / "seed0_vanilla.json"
    write_json(path, {"run_dir": str(ROOT / "runs" / "x"), "command": [sys.executable, f"{tempfile.gettempdir()}/y"]})
    assert json.loads(path.read_text()) == {"run_dir": "runs/x", "command": ["python", "<tmp>/y"]}


def test_the_one_off_rewrite_keeps_the_json_otherwise_byte_for_byte():
    text = '{\n "run_dir": "/work/main/runs/x",\n "n": 1.50,\n "tail": "File \\"/work/main/a.py\\""\n}\n'
    assert rewritten(text) == '{\n "run_dir": "runs/x",\n "n": 1.50,\n "tail": "File \\"a.py\\""\n}\n'


def test_a_checkout_outside_the_machine_folders_is_still_made_relative():
    root = "/check/out/tooluse-gym"
    data = {"run_dir": f"{root}/runs/x", "cmd": f"cd {root} && ls {root}-other/y", "same": root}
    got = portable(data, root, tmp="/tmp", home="/root")
    assert got == {"run_dir": "runs/x", "cmd": f"cd . && ls {root}-other/y", "same": "."}
