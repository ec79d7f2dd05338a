"""Generate the graded curriculum (train, heldout, warmup) over the BFCL simulators. Seeded: same seed, same files.

    python scenarios/curriculum/generate.py            # writes next to this script
    python scenarios/curriculum/generate.py --seed 1 --per-tier 30 --out runs/curriculum-s1

Tiers (the scenario `category`):
- ``literal``: one call whose arguments the request states literally.
- ``from_state``: one action that needs a value held in the initial state, so a lookup call comes first.
- ``two_calls``: two independent calls asked for in one turn.
- ``two_turns``: two user turns with one call each.
- ``recover``: the obvious call fails on the initial state (not logged in, file in another folder); the
  error message and the request say how to fix it, and the fixed call must follow.

Every task offers 3-4 functions so prompts stay short. Tasks are dealt round-robin into the splits
(two train, one held-out), and no task appears in both. A third split, ``warmup``, holds further
distinct tasks for a supervised warm-start (``python -m tooluse_agents.train.sft``), so that neither RL split is
seen during the warm-start.

Single-turn tasks over the same tool classes (one request, BFCL's possible answers; `single_turn.py`
beside this script) come from their own seeded stream into ``single_turn_train.yaml`` and
``single_turn_heldout.yaml`` (2:1, no request in both); the multi-turn files do not change with them.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from single_turn import single_turn_tasks

WORDS = [
    "alpha",
    "budget",
    "cedar",
    "delta",
    "ember",
    "falcon",
    "garnet",
    "harbor",
    "iris",
    "juniper",
    "kestrel",
    "lumen",
    "maple",
    "nectar",
    "onyx",
    "pebble",
    "quartz",
    "raven",
    "sierra",
    "tundra",
    "umber",
    "violet",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
]
NAMES = {"Alice": "USR001", "Bob": "USR002", "Catherine": "USR003", "Daniel": "USR004"}
COMPANIES = {
    "Apple": "AAPL",
    "Google": "GOOG",
    "Tesla": "TSLA",
    "Microsoft": "MSFT",
    "Amazon": "AMZN",
    "Zeta Corp": "ZETA",
    "Alpha Tech": "ALPH",
    "Omega Industries": "OMEG",
    "Quasar Ltd.": "QUAS",
    "Neptune Systems": "NEPT",
    "Synex Solutions": "SYNX",
}
DOORS = ("driver", "passenger", "rear_left", "rear_right")
PHRASES = (
    "see you at noon",
    "the report is ready",
    "lunch is on me today",
    "meeting moved to 3pm",
    "thanks for the help",
    "happy friday everyone",
    "the build is green",
    "call me when you land",
    "the demo starts at ten",
    "coffee is in the kitchen",
    "please review my draft",
    "the server is back up",
    "dinner at seven works",
    "I pushed the fix",
    "tickets are booked",
    "welcome to the team",
)
MATH = {
    "add": ("Add {a} and {b}.", "What is {a} plus {b}?"),
    "subtract": ("Subtract {b} from {a}.", "What is {a} minus {b}?"),
    "multiply": ("Multiply {a} by {b}.", "What is {a} times {b}?"),
    "divide": ("Divide {a} by {b}.", "What is {a} divided by {b}?"),
}
MATH_FUNCTIONS = ["add", "subtract", "multiply", "divide"]


def call(function: str, /, **arguments: Any) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return f"{function}({args})"


def fs_state(files: dict[str, str], folders: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    contents: dict[str, Any] = {name: {"type": "file", "content": text} for name, text in files.items()}
    for folder, inner in (folders or {}).items():
        contents[folder] = {
            "type": "directory",
            "contents": {n: {"type": "file", "content": t} for n, t in inner.items()},
        }
    return {"GorillaFileSystem": {"root": {"workspace": {"type": "directory", "contents": contents}}}}


def twitter_state(authenticated: bool) -> dict[str, Any]:
    return {
        "TwitterAPI": {
            "username": "sam_writes",
            "password": "Quill42",
            "authenticated": authenticated,
            "tweets": {},
            "tweet_counter": 0,
        }
    }


def message_state(logged_in: bool) -> dict[str, Any]:
    return {"MessageAPI": {"current_user": "USR001" if logged_in else None, "inbox": []}}


def tweet_text(rng: random.Random) -> str:
    text = rng.choice(PHRASES)
    return text if rng.random() < 0.5 else f"{text} #{rng.choice(WORDS)}"


def vehicle_state(doors: str) -> dict[str, Any]:
    return {"VehicleControlAPI": {"doorStatus": dict.fromkeys(DOORS, doors)}}


def turn(user: str, *calls: str) -> dict[str, Any]:
    return {"user": user, "ground_truth": list(calls)}


def scenario(tools: dict[str, Any], functions: list[str], *turns: dict[str, Any]) -> dict[str, Any]:
    return {"tools": tools, "functions": list(functions), "turns": list(turns)}


# --- families: rng -> scenario (without id/category) ------------------------------------------------


def literal_math(rng: random.Random) -> dict[str, Any]:
    op = rng.choice(MATH_FUNCTIONS)
    a, b = rng.randint(2, 99), rng.randint(2, 20)
    return scenario({"MathAPI": {}}, MATH_FUNCTIONS, turn(rng.choice(MATH[op]).format(a=a, b=b), call(op, a=a, b=b)))


def literal_fs(rng: random.Random) -> dict[str, Any]:
    word = rng.choice(WORDS)
    if rng.random() < 0.5:
        request, gt = f"Create a new folder called {word}.", call("mkdir", dir_name=word)
    else:
        name = f"{word}.txt"
        request, gt = f"Create an empty file named {name}.", call("touch", file_name=name)
    return scenario(fs_state({"readme.md": "hello"}), ["ls", "mkdir", "touch"], turn(request, gt))


def literal_message(rng: random.Random) -> dict[str, Any]:
    receiver, text = rng.choice(list(NAMES.values())[1:]), rng.choice(PHRASES)
    request = f"Send the message '{text}' to user {receiver}."
    gt = call("send_message", receiver_id=receiver, message=text)
    return scenario(message_state(True), ["send_message", "view_messages_sent", "list_users"], turn(request, gt))


def literal_twitter(rng: random.Random) -> dict[str, Any]:
    text = tweet_text(rng)
    return scenario(
        twitter_state(True),
        ["post_tweet", "follow_user", "get_user_tweets"],
        turn(f"Post a tweet saying '{text}'.", call("post_tweet", content=text)),
    )


def literal_vehicle(rng: random.Random) -> dict[str, Any]:
    functions = ["setHeadlights", "lockDoors", "displayCarStatus"]
    if rng.random() < 0.4:
        mode = rng.choice(["on", "off", "auto"])
        request = rng.choice([f"Turn the headlights {mode}.", f"Set the headlights to {mode}."])
        return scenario(vehicle_state("unlocked"), functions, turn(request, call("setHeadlights", mode=mode)))
    unlock, door = rng.random() < 0.5, rng.choice(DOORS)
    request = f"{'Unlock' if unlock else 'Lock'} the {door.replace('_', ' ')} door."
    state = vehicle_state("locked" if unlock else "unlocked")
    return scenario(state, functions, turn(request, call("lockDoors", unlock=unlock, door=[door])))


def state_message(rng: random.Random) -> dict[str, Any]:
    name, text = rng.choice(list(NAMES)[1:]), rng.choice(PHRASES)
    return scenario(
        message_state(True),
        ["get_user_id", "send_message", "list_users"],
        turn(
            f"Send the message '{text}' to {name}.",
            call("get_user_id", user=name),
            call("send_message", receiver_id=NAMES[name], message=text),
        ),
    )


def state_fs(rng: random.Random) -> dict[str, Any]:
    name = f"{rng.choice(WORDS)}.txt"
    text = f"{rng.choice(PHRASES)}."
    return scenario(
        fs_state({name: text}),
        ["ls", "cat", "cd"],
        turn("Show me the contents of the only file in the current folder.", call("ls"), call("cat", file_name=name)),
    )


def state_trading(rng: random.Random) -> dict[str, Any]:
    company = rng.choice(list(COMPANIES))
    request = rng.choice(
        [f"Add {company} to my watchlist.", f"Put {company} on my stock watchlist.", f"Watch {company} for me."]
    )
    return scenario(
        {"TradingBot": {}},
        ["get_symbol_by_name", "add_to_watchlist", "get_watchlist"],
        turn(
            request,
            call("get_symbol_by_name", name=company),
            call("add_to_watchlist", stock=COMPANIES[company]),
        ),
    )


def two_math(rng: random.Random) -> dict[str, Any]:
    op1, op2 = rng.sample(MATH_FUNCTIONS, 2)
    a, b, c, d = rng.randint(2, 99), rng.randint(2, 20), rng.randint(2, 99), rng.randint(2, 20)
    request = f"{MATH[op1][0].format(a=a, b=b)[:-1]}, and also {MATH[op2][0].format(a=c, b=d)[0].lower()}"
    request += f"{MATH[op2][0].format(a=c, b=d)[1:]}"
    return scenario({"MathAPI": {}}, MATH_FUNCTIONS, turn(request, call(op1, a=a, b=b), call(op2, a=c, b=d)))


def two_fs(rng: random.Random) -> dict[str, Any]:
    folder, file = rng.sample(WORDS, 2)
    return scenario(
        fs_state({"readme.md": "hello"}),
        ["ls", "mkdir", "touch"],
        turn(
            f"Create a folder called {folder} and an empty file named {file}.txt.",
            call("mkdir", dir_name=folder),
            call("touch", file_name=f"{file}.txt"),
        ),
    )


def two_vehicle(rng: random.Random) -> dict[str, Any]:
    mode, door, unlock = rng.choice(["on", "off", "auto"]), rng.choice(DOORS), rng.random() < 0.5
    return scenario(
        vehicle_state("locked" if unlock else "unlocked"),
        ["setHeadlights", "lockDoors", "displayCarStatus"],
        turn(
            f"Turn the headlights {mode} and {'unlock' if unlock else 'lock'} the {door.replace('_', ' ')} door.",
            call("setHeadlights", mode=mode),
            call("lockDoors", unlock=unlock, door=[door]),
        ),
    )


def two_message(rng: random.Random) -> dict[str, Any]:
    (r1, r2), (t1, t2) = rng.sample(list(NAMES.values())[1:], 2), rng.sample(PHRASES, 2)
    return scenario(
        message_state(True),
        ["send_message", "view_messages_sent", "list_users"],
        turn(
            f"Send '{t1}' to user {r1} and '{t2}' to user {r2}.",
            call("send_message", receiver_id=r1, message=t1),
            call("send_message", receiver_id=r2, message=t2),
        ),
    )


def turns_math(rng: random.Random) -> dict[str, Any]:
    op1, op2 = rng.choice(MATH_FUNCTIONS), rng.choice(MATH_FUNCTIONS)
    a, b, c, d = rng.randint(2, 99), rng.randint(2, 20), rng.randint(2, 99), rng.randint(2, 20)
    return scenario(
        {"MathAPI": {}},
        MATH_FUNCTIONS,
        turn(rng.choice(MATH[op1]).format(a=a, b=b), call(op1, a=a, b=b)),
        turn("Next: " + rng.choice(MATH[op2]).format(a=c, b=d), call(op2, a=c, b=d)),
    )


def turns_fs(rng: random.Random) -> dict[str, Any]:
    folder, file = rng.sample(WORDS, 2)
    return scenario(
        fs_state({"readme.md": "hello"}),
        ["ls", "mkdir", "touch"],
        turn(f"Create a folder called {folder}.", call("mkdir", dir_name=folder)),
        turn(f"Now create an empty file named {file}.txt here.", call("touch", file_name=f"{file}.txt")),
    )


def turns_twitter(rng: random.Random) -> dict[str, Any]:
    t1, t2 = rng.sample(PHRASES, 2)
    return scenario(
        twitter_state(True),
        ["post_tweet", "follow_user", "get_user_tweets"],
        turn(f"Post a tweet saying '{t1}'.", call("post_tweet", content=t1)),
        turn(f"Post another one: '{t2}'.", call("post_tweet", content=t2)),
    )


def turns_message(rng: random.Random) -> dict[str, Any]:
    receiver, (t1, t2) = rng.choice(list(NAMES.values())[1:]), rng.sample(PHRASES, 2)
    return scenario(
        message_state(True),
        ["send_message", "view_messages_sent", "list_users"],
        turn(f"Send '{t1}' to user {receiver}.", call("send_message", receiver_id=receiver, message=t1)),
        turn(f"Also send them '{t2}'.", call("send_message", receiver_id=receiver, message=t2)),
    )


def recover_message(rng: random.Random) -> dict[str, Any]:
    receiver, text = rng.choice(list(NAMES.values())[1:]), rng.choice(PHRASES)
    return scenario(
        message_state(False),
        ["message_login", "send_message", "list_users"],
        turn(
            f"Send the message '{text}' to user {receiver}. If you need to log in, my user id is USR001.",
            call("message_login", user_id="USR001"),
            call("send_message", receiver_id=receiver, message=text),
        ),
    )


def recover_twitter(rng: random.Random) -> dict[str, Any]:
    text = tweet_text(rng)
    return scenario(
        twitter_state(False),
        ["authenticate_twitter", "post_tweet", "get_user_tweets"],
        turn(
            f"Post a tweet saying '{text}'. If it asks for a login, I am sam_writes with password Quill42.",
            call("authenticate_twitter", username="sam_writes", password="Quill42"),
            call("post_tweet", content=text),
        ),
    )


def recover_fs(rng: random.Random) -> dict[str, Any]:
    folder, stem = rng.sample(WORDS, 2)
    name, text = f"{stem}.txt", f"{rng.choice(PHRASES)}."
    return scenario(
        fs_state({"readme.md": "hello"}, {folder: {name: text}}),
        ["cd", "cat", "ls"],
        turn(
            f"Show me the contents of {name}. If it is not here, look in the {folder} folder.",
            call("cd", folder=folder),
            call("cat", file_name=name),
        ),
    )


def recover_ticket(rng: random.Random) -> dict[str, Any]:
    title = f"{rng.choice(WORDS)} {rng.choice(['outage', 'bug', 'request', 'question'])}"
    return scenario(
        {"TicketAPI": {}},
        ["ticket_login", "create_ticket", "get_user_tickets"],
        turn(
            f"Create a support ticket titled '{title}'. If you have to log in, use username sam and password Quill42.",
            call("ticket_login", username="sam", password="Quill42"),
            call("create_ticket", title=title),
        ),
    )


TIERS: dict[str, list[Callable[[random.Random], dict[str, Any]]]] = {
    "literal": [literal_math, literal_fs, literal_message, literal_twitter, literal_vehicle],
    "from_state": [state_message, state_fs, state_trading],
    "two_calls": [two_math, two_fs, two_vehicle, two_message],
    "two_turns": [turns_math, turns_fs, turns_twitter, turns_message],
    "recover": [recover_message, recover_twitter, recover_fs, recover_ticket],
}


def tier_tasks(
    rng: random.Random, tier: str, count: int, seen: set[str], prefix: str = "", skip_on_duplicate: bool = False
) -> list[dict[str, Any]]:
    """`count` tasks of `tier` not in `seen` (which grows), with ids ``{prefix}{tier}_{i:03d}``.

    Families take turns; after a duplicate the same family draws again, or, with
    `skip_on_duplicate`, the next family does (so a family with few distinct tasks cannot stall).
    """
    families = TIERS[tier]
    tasks: list[dict[str, Any]] = []
    attempts = skips = 0
    while len(tasks) < count:
        attempts += 1
        if attempts > 100 * count:
            raise RuntimeError(f"tier {tier}: cannot find {count} distinct tasks")
        spec = families[(len(tasks) + skips) % len(families)](rng)
        key = repr((spec["tools"], spec["turns"]))
        if key in seen:
            skips += skip_on_duplicate
            continue
        seen.add(key)
        tasks.append({"id": f"{prefix}{tier}_{len(tasks):03d}", "category": tier, **spec})
    return tasks


def generate(
    seed: int, per_tier: int, warmup_per_tier: int = 0
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(train, heldout, warmup) scenario lists.

    `per_tier` distinct tasks per tier are dealt 2:1 into train and held-out. The warm-up split
    (supervised warm-start data) comes from a second stream seeded from `seed`, after the other two,
    so adding it leaves train and held-out unchanged; it shares no task with them.
    """
    rng = random.Random(seed)
    train, heldout = [], []
    seen: dict[str, set[str]] = {tier: set() for tier in TIERS}
    for tier in TIERS:
        for i, task in enumerate(tier_tasks(rng, tier, per_tier, seen[tier])):
            (heldout if i % 3 == 2 else train).append(task)
    warm_rng = random.Random(f"warmup/{seed}")
    warmup = [t for tier in TIERS for t in tier_tasks(warm_rng, tier, warmup_per_tier, seen[tier], "warmup_", True)]
    return train, heldout, warmup


def write(path: Path, description: str, scenarios: list[dict[str, Any]]) -> None:
    data = {"version": 1, "description": description, "scenarios": scenarios}
    header = "# Generated by scenarios/curriculum/generate.py; edit the generator, not this file.\n"
    path.write_text(header + yaml.safe_dump(data, sort_keys=False, width=200, allow_unicode=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-tier", type=int, default=72, help="tasks per tier before the 2:1 split")
    parser.add_argument("--warmup-per-tier", type=int, default=40, help="tasks per tier in the warm-up split")
    parser.add_argument(
        "--single-turn-per-tier", type=int, default=100, help="single-turn tasks per tier before the 2:1 split"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    args = parser.parse_args()
    train, heldout, warmup = generate(args.seed, args.per_tier, args.warmup_per_tier)
    args.out.mkdir(parents=True, exist_ok=True)
    write(args.out / "train.yaml", f"Curriculum train split (seed {args.seed}).", train)
    write(args.out / "heldout.yaml", f"Curriculum held-out split (seed {args.seed}).", heldout)
    write(args.out / "warmup.yaml", f"Curriculum warm-up split for supervised warm-starts (seed {args.seed}).", warmup)
    st_train, st_heldout = single_turn_tasks(args.seed, args.single_turn_per_tier)
    write(args.out / "single_turn_train.yaml", f"Curriculum single-turn train split (seed {args.seed}).", st_train)
    write(
        args.out / "single_turn_heldout.yaml", f"Curriculum single-turn held-out split (seed {args.seed}).", st_heldout
    )
    print(f"wrote {len(train)} train, {len(heldout)} held-out and {len(warmup)} warm-up scenarios to {args.out}")
    print(f"wrote {len(st_train)} train and {len(st_heldout)} held-out single-turn tasks to {args.out}")


if __name__ == "__main__":
    main()
