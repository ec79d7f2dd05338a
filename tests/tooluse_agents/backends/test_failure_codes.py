"""Every failure code the agents package can write into an episode record is listed once, in FAILURE_CODES."""

from __future__ import annotations

import re
from pathlib import Path

from tooluse_agents.backends.base import FAILURE_CODES

ROOT = Path(__file__).resolve().parents[3]
_LITERAL = re.compile(r'AgentError\(\s*"([a-z_]+)"')
_OPENAI_KINDS = re.compile(r'\(openai\.\w+, "([a-z_]+)"\)')


def test_every_code_written_is_listed():
    written = set()
    for path in (ROOT / "agents").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        written |= set(_LITERAL.findall(text)) | set(_OPENAI_KINDS.findall(text))
    assert written, "the scan found no failure code: the pattern no longer matches the code"
    assert written <= set(FAILURE_CODES), sorted(written - set(FAILURE_CODES))


def test_every_listed_code_is_written_somewhere():
    text = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "agents").rglob("*.py"))
    unused = [code for code in FAILURE_CODES if text.count(f'"{code}"') < 2]  # the listing itself is one
    assert not unused, unused
