"""How often a reply that lists candidates, written without knowing the answer, passes BFCL's agentic checker.

    python -m experiments.tools.agentic_reward_hacking                 # all questions, the table in benchmarks/results
    python -m experiments.tools.agentic_reward_hacking --limit 10 --draws 2 --out /tmp/x.json   # a slice

BFCL's agentic checker (memory and web search) passes a reply when any gold answer occurs in it, so a
reply naming many candidates passes whenever one of them is right. Over BFCL's gold answers
(``possible_answer/BFCL_v4_memory.json``: 155 questions in 5 scenarios; ``BFCL_v4_web_search.json``:
100 questions), each question gets attack replies built without its answer:

* ``other_gold``: ``k`` candidates drawn (``--draws`` times, seeded) from the gold answers of the
  *other* questions of its group (its memory scenario; all of web search), ``k`` in 1, 5, 10, 20, 50
  and ``all`` (the whole pool). Another question's gold may equal this one's (two questions answered
  ``7``): such hits are part of what the attack earns;
* ``numbers``: ``0, 1, ..., 100``.

Each list is written in BFCL's answer format ``{"answer": "<c1>, <c2>, ...", "context": "..."}``, and
once more with spaces alone between candidates (``space``; JSON written without ``\\u`` escapes, which
would hide a non-ASCII answer from both checkers), the gap `strict_check` documents. A row
gives the fraction of replies BFCL's own ``agentic_checker`` passes (``bfcl``) and the fraction
`tooluse_gym.checking.agentic.strict_check` passes (``strict``); our `agentic_check` is checked to
agree with BFCL's on every reply. ``gold_in_answer_format`` checks that every gold answer itself
passes both in BFCL's answer format (Python and JSON literals).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from tooluse_gym.checking.agentic import agentic_check, strict_check
from tooluse_gym.tasks.bfcl import _import

KS: tuple[int | str, ...] = (1, 5, 10, 20, 50, "all")
SEPARATORS = {"comma": ", ", "space": " "}
DEFAULT_OUT = Path("benchmarks") / "results" / "agentic_reward_hacking.json"
CONTEXT = "one of these"


def load_gold(category: str) -> dict[str, list[str]]:
    """BFCL's id -> gold answers of ``memory`` or ``web_search``, in its file's order."""
    folder = Path(_import("bfcl_eval.constants.eval_config").POSSIBLE_ANSWER_PATH)
    with open(folder / f"BFCL_v4_{category}.json", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {row["id"]: list(row["ground_truth"]) for row in rows}


def group_of(entry_id: str) -> str:
    """A question's group: its scenario for memory (``memory_3-customer-3``), else its category."""
    return entry_id.split("-")[1] if entry_id.startswith("memory_") else "web_search"


def pool(gold: dict[str, list[str]], entry_id: str) -> list[str]:
    """The distinct gold answers of the other questions of `entry_id`'s group, in file order."""
    group = group_of(entry_id)
    seen: dict[str, None] = {}
    for other, answers in gold.items():
        if other != entry_id and group_of(other) == group:
            seen.update(dict.fromkeys(answers))
    return list(seen)


def reply(candidates: Sequence[str], separator: str) -> str:
    """The attack reply: the candidates in BFCL's answer format."""
    return json.dumps({"answer": separator.join(candidates), "context": CONTEXT}, ensure_ascii=False)


def _bfcl_checker() -> Callable[[str, list[str]], dict[str, Any]]:
    return _import("bfcl_eval.eval_checker.agentic_eval.agentic_checker").agentic_checker


def measure(gold: dict[str, list[str]], ids: Sequence[str], draws: int, seed: int = 0) -> dict[str, Any]:
    """The rows of one category over the questions `ids` (see the module)."""
    checker = _bfcl_checker()
    attacks: list[tuple[str, int | str, list[list[list[str]]]]] = []  # (attack, k, per question: candidate lists)
    for k in KS:
        lists = []
        for n, entry_id in enumerate(ids):
            candidates = pool(gold, entry_id)
            if k == "all":
                lists.append([candidates])
                continue
            rng = random.Random(f"{seed}:{entry_id}:{k}:{n}")
            size = min(int(k), len(candidates))
            lists.append([rng.sample(candidates, size) for _ in range(draws)])
        attacks.append(("other_gold", k, lists))
    numbers = [str(i) for i in range(101)]
    attacks.append(("numbers", 101, [[numbers] for _ in ids]))
    rows, disagreements = [], 0
    for attack, k, lists in attacks:
        for name, separator in SEPARATORS.items():
            passed = {"bfcl": 0, "strict": 0}
            total = 0
            for entry_id, candidate_lists in zip(ids, lists, strict=True):
                answers = gold[entry_id]
                for candidates in candidate_lists:
                    text = reply(candidates, separator)
                    theirs = bool(checker(text, list(answers))["valid"])
                    disagreements += theirs != agentic_check(text, answers).valid
                    passed["bfcl"] += theirs
                    passed["strict"] += strict_check(text, answers).valid
                    total += 1
            rows.append(
                {
                    "attack": attack,
                    "k": k,
                    "separator": name,
                    "replies": total,
                    "bfcl": round(passed["bfcl"] / total, 4),
                    "strict": round(passed["strict"] / total, 4),
                }
            )
    return {"rows": rows, "bfcl_vs_agentic_check_disagreements": disagreements}


def gold_in_answer_format(gold: dict[str, list[str]], ids: Sequence[str]) -> dict[str, Any]:
    """Every gold answer of `ids` as ``{'answer': <gold>, 'context': ...}`` (Python, JSON): how many pass each check."""
    checker = _bfcl_checker()
    counts = {"replies": 0, "bfcl": 0, "strict": 0}
    failing: list[str] = []
    for entry_id in ids:
        answers = gold[entry_id]
        for answer in answers:
            data = {"answer": answer, "context": "c"}
            for text in (str(data), json.dumps(data, ensure_ascii=False)):
                counts["replies"] += 1
                counts["bfcl"] += bool(checker(text, list(answers))["valid"])
                ok = strict_check(text, answers).valid
                counts["strict"] += ok
                if not ok:
                    failing.append(entry_id)
    return {**counts, "strict_failing": sorted(set(failing))}


def run(limit: int | None, draws: int, seed: int = 0) -> dict[str, Any]:
    """The whole measurement (`limit`: the first questions of each category only)."""
    categories = {}
    for category in ("memory", "web_search"):
        gold = load_gold(category)
        ids = list(gold)[:limit] if limit else list(gold)
        sizes = [len(pool(gold, i)) for i in ids]
        categories[category] = {
            "questions": len(ids),
            "groups": sorted({group_of(i) for i in ids}),
            "pool_sizes": {"min": min(sizes), "max": max(sizes)},
            **measure(gold, ids, draws, seed),
            "gold_in_answer_format": gold_in_answer_format(gold, ids),
        }
    return {
        "description": (__doc__ or "").splitlines()[0],
        "bfcl_eval": metadata.version("bfcl-eval"),
        "draws": draws,
        "seed": seed,
        "ks": list(KS),
        "fields": {
            "rows": "attack, k (candidates per reply, at most the pool), separator, replies (questions x draws)",
            "pool_sizes": "distinct gold answers of a question's other questions (its scenario; all of web search)",
            "bfcl": "fraction of replies bfcl_eval's agentic_checker passes",
            "strict": "fraction of replies tooluse_gym.checking.agentic.strict_check passes",
            "gold_in_answer_format": "each gold answer as a Python and a JSON (unescaped) answer-format reply",
        },
        "categories": categories,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="the first N questions of each category")
    parser.add_argument("--draws", type=int, default=5, help="candidate draws per question and k")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    result = run(args.limit, args.draws, args.seed)
    command = ["python", "-m", "experiments.tools.agentic_reward_hacking"]
    if args.limit:
        command += ["--limit", str(args.limit)]
    if args.draws != 5:
        command += ["--draws", str(args.draws)]
    if args.seed:
        command += ["--seed", str(args.seed)]
    result["command"] = " ".join(command)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for category, data in result["categories"].items():
        print(f"{category}: {data['questions']} questions")
        for row in data["rows"]:
            name = f"{row['attack']:10} k={row['k']!s:4} {row['separator']:5}"
            print(f"  {name} bfcl={row['bfcl']:.3f} strict={row['strict']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
