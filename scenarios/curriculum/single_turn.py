"""Single-turn tasks over the curriculum's tool classes, in BFCL's single-turn shape (used by generate.py).

Each task is one request, the functions offered, and the possible answers
(``{function: {parameter: [acceptable values]}}`` per expected call, ``""`` marking an optional
parameter), in four tiers (the scenario ``category``):

- ``one_call``: one function offered, one call (BFCL's ``simple``).
- ``choose``: 3-4 functions of one tool class offered, one call to the right one (``multiple``).
- ``several_calls``: two or three calls asked for in one request, to one function or to several
  (``parallel`` / ``parallel_multiple``; any order is right).
- ``irrelevant``: a request none of the offered functions can serve (functions of another tool
  class); the right answer holds no call (``irrelevance``).

A request is an *action*: a tool class, a function, an imperative clause ("add 3 and 4") and
the possible answer's parameters. Tasks are drawn from a seeded stream, and no request text is
used twice in the whole output, so the train and held-out splits share no request.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TIERS = ("one_call", "choose", "several_calls", "irrelevant")

WORDS = [
    *("alpha", "budget", "cedar", "delta", "ember", "falcon", "garnet", "harbor", "iris", "juniper", "kestrel"),
    *("lumen", "maple", "nectar", "onyx", "pebble", "quartz", "raven", "sierra", "tundra", "umber", "violet"),
    *("willow", "xenon", "yarrow", "zephyr"),
]
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
    "please review my draft",
    "the server is back up",
    "dinner at seven works",
)
USERS = ("USR002", "USR003", "USR004")
HANDLES = ("alice", "bob_dev", "carol_k", "dan_the_man", "eve_writes", "frank99")
COMPANIES = ("Apple", "Google", "Tesla", "Microsoft", "Amazon", "Nvidia")
SYMBOLS = ("AAPL", "GOOG", "TSLA", "MSFT", "AMZN", "NVDA")
CITIES = ("Paris", "Berlin", "Tokyo", "Chicago", "Toronto", "Madrid", "Oslo", "Denver")
DOORS = ("driver", "passenger", "rear_left", "rear_right")


@dataclass(frozen=True)
class Action:
    """One call a request asks for: its tool class, function, imperative clause and acceptable parameter values."""

    backend: str
    function: str
    clause: str
    params: dict[str, list[Any]]


def _math(rng: random.Random) -> Action:
    kind = rng.randrange(7)
    a, b = rng.randint(2, 99), rng.randint(2, 20)
    if kind < 4:
        function, template = [
            ("add", "add {a} and {b}"),
            ("subtract", "subtract {b} from {a}"),
            ("multiply", "multiply {a} by {b}"),
            ("divide", "divide {a} by {b}"),
        ][kind]
        return Action("MathAPI", function, template.format(a=a, b=b), {"a": [a], "b": [b]})
    if kind == 4:
        return Action(
            "MathAPI", "power", f"raise {b} to the power of {a % 5 + 2}", {"base": [b], "exponent": [a % 5 + 2]}
        )
    if kind == 5:
        value, places = round(a + b / 7, 4), rng.randint(1, 3)
        clause = f"round {value} to {places} decimal places"
        return Action("MathAPI", "round_number", clause, {"number": [value], "decimal_places": [places]})
    numbers = rng.sample(range(1, 60), rng.randint(3, 5))
    function, verb = rng.choice([("mean", "find the average of"), ("max_value", "find the largest of")])
    return Action("MathAPI", function, f"{verb} {', '.join(map(str, numbers))}", {"numbers": [numbers]})


def _files(rng: random.Random) -> Action:
    kind, (w1, w2) = rng.randrange(6), rng.sample(WORDS, 2)
    if kind == 0:
        return Action("GorillaFileSystem", "mkdir", f"create a folder called {w1}", {"dir_name": [w1]})
    if kind == 1:
        return Action(
            "GorillaFileSystem", "touch", f"create an empty file named {w1}.txt", {"file_name": [f"{w1}.txt"]}
        )
    if kind == 2:
        return Action("GorillaFileSystem", "rm", f"delete the file {w1}.log", {"file_name": [f"{w1}.log"]})
    if kind == 3:
        params = {"source": [f"{w1}.txt"], "destination": [f"{w2}.txt"]}
        return Action("GorillaFileSystem", "cp", f"copy {w1}.txt to {w2}.txt", params)
    if kind == 4:
        params = {"file_name": [f"{w1}.md"], "pattern": [w2]}
        return Action("GorillaFileSystem", "grep", f"search {w1}.md for lines containing '{w2}'", params)
    return Action("GorillaFileSystem", "cd", f"go into the {w1} folder", {"folder": [w1]})


def _messages(rng: random.Random) -> Action:
    kind, user, text = rng.randrange(4), rng.choice(USERS), rng.choice(PHRASES)
    if kind < 2:
        params = {"receiver_id": [user], "message": [text]}
        return Action("MessageAPI", "send_message", f"send the message '{text}' to user {user}", params)
    if kind == 2:
        name = rng.choice(HANDLES)
        return Action("MessageAPI", "add_contact", f"add {name} to my message contacts", {"user_name": [name]})
    word = rng.choice(WORDS)
    return Action("MessageAPI", "search_messages", f"find my messages that mention '{word}'", {"keyword": [word]})


def _twitter(rng: random.Random) -> Action:
    kind, handle = rng.randrange(4), rng.choice(HANDLES)
    if kind == 0:
        text, tag = rng.choice(PHRASES), rng.choice(WORDS)
        if rng.random() < 0.5:
            params = {"content": [text], "tags": [""], "mentions": [""]}
            return Action("TwitterAPI", "post_tweet", f"post a tweet saying '{text}'", params)
        params = {"content": [text], "tags": [[f"#{tag}"], [tag]], "mentions": [""]}
        return Action("TwitterAPI", "post_tweet", f"post a tweet saying '{text}' tagged #{tag}", params)
    if kind == 1:
        return Action("TwitterAPI", "follow_user", f"follow {handle} on Twitter", {"username_to_follow": [handle]})
    if kind == 2:
        tweet = rng.randint(1, 400)
        return Action("TwitterAPI", "retweet", f"retweet tweet number {tweet}", {"tweet_id": [tweet]})
    return Action("TwitterAPI", "get_user_tweets", f"show me the tweets of {handle}", {"username": [handle]})


def _tickets(rng: random.Random) -> Action:
    kind, number = rng.randrange(3), rng.randint(1, 900)
    if kind == 0:
        title = f"{rng.choice(WORDS)} {rng.choice(['outage', 'bug', 'request', 'question'])}"
        if rng.random() < 0.5:
            params = {"title": [title], "description": [""], "priority": ["", 1]}
            return Action("TicketAPI", "create_ticket", f"open a support ticket titled '{title}'", params)
        priority = rng.randint(2, 5)
        params = {"title": [title], "description": [""], "priority": [priority]}
        clause = f"open a support ticket titled '{title}' with priority {priority}"
        return Action("TicketAPI", "create_ticket", clause, params)
    if kind == 1:
        return Action("TicketAPI", "get_ticket", f"show me ticket {number}", {"ticket_id": [number]})
    return Action("TicketAPI", "close_ticket", f"close ticket {number}", {"ticket_id": [number]})


def _trading(rng: random.Random) -> Action:
    kind, symbol = rng.randrange(4), rng.choice(SYMBOLS)
    if kind == 0:
        company = rng.choice(COMPANIES)
        return Action(
            "TradingBot", "get_symbol_by_name", f"look up the ticker symbol of {company}", {"name": [company]}
        )
    if kind == 1:
        return Action("TradingBot", "add_to_watchlist", f"add {symbol} to my watchlist", {"stock": [symbol]})
    if kind == 2:
        amount = rng.choice([100, 250, 500, 1000, 2500])
        return Action(
            "TradingBot", "fund_account", f"deposit {amount} dollars into my trading account", {"amount": [amount]}
        )
    shares, price, side = rng.randint(1, 50), rng.randint(20, 400), rng.choice(["Buy", "Sell"])
    params = {"order_type": [side], "symbol": [symbol], "price": [price], "amount": [shares]}
    clause = f"place an order to {side.lower()} {shares} shares of {symbol} at {price} dollars each"
    return Action("TradingBot", "place_order", clause, params)


def _vehicle(rng: random.Random) -> Action:
    kind = rng.randrange(4)
    if kind == 0:
        mode = rng.choice(["on", "off", "auto"])
        return Action("VehicleControlAPI", "setHeadlights", f"set the headlights to {mode}", {"mode": [mode]})
    if kind == 1:
        unlock, door = rng.random() < 0.5, rng.choice(DOORS)
        clause = f"{'unlock' if unlock else 'lock'} the {door.replace('_', ' ')} door"
        return Action("VehicleControlAPI", "lockDoors", clause, {"unlock": [unlock], "door": [[door]]})
    if kind == 2:
        city = rng.choice(CITIES)
        return Action("VehicleControlAPI", "set_navigation", f"navigate to {city}", {"destination": [city]})
    a, b = rng.sample(CITIES, 2)
    params = {"cityA": [a], "cityB": [b]}
    return Action("VehicleControlAPI", "estimate_distance", f"estimate the distance from {a} to {b}", params)


ACTIONS: dict[str, Callable[[random.Random], Action]] = {
    "MathAPI": _math,
    "GorillaFileSystem": _files,
    "MessageAPI": _messages,
    "TwitterAPI": _twitter,
    "TicketAPI": _tickets,
    "TradingBot": _trading,
    "VehicleControlAPI": _vehicle,
}
"""Each tool class's requests."""
DISTRACTORS = {
    "MathAPI": ["add", "subtract", "multiply", "divide", "power", "round_number", "mean", "max_value"],
    "GorillaFileSystem": ["mkdir", "touch", "rm", "cp", "grep", "cd", "ls", "pwd"],
    "MessageAPI": ["send_message", "add_contact", "search_messages", "list_users", "view_messages_sent"],
    "TwitterAPI": ["post_tweet", "follow_user", "retweet", "get_user_tweets", "list_all_following"],
    "TicketAPI": ["create_ticket", "get_ticket", "close_ticket", "get_user_tickets"],
    "TradingBot": ["get_symbol_by_name", "add_to_watchlist", "fund_account", "place_order", "get_watchlist"],
    "VehicleControlAPI": ["setHeadlights", "lockDoors", "set_navigation", "estimate_distance", "displayCarStatus"],
}
"""The functions a class offers beside the right one: none of them serves another's request."""
ONCE = {"setHeadlights", "cd"}
"""Functions a several-calls request calls at most once (twice would contradict itself or depend on order)."""
UNRELATED = {("MessageAPI", "TwitterAPI"), ("TwitterAPI", "MessageAPI")}
"""Pairs of classes too close for an irrelevance task (a message could be sent as a tweet)."""


def _offer(rng: random.Random, backend: str, needed: list[str], total: int) -> list[str]:
    others = [f for f in DISTRACTORS[backend] if f not in needed]
    offered = needed + rng.sample(others, max(0, total - len(needed)))
    rng.shuffle(offered)
    return offered


def _request(clauses: list[str], rng: random.Random) -> str:
    if len(clauses) == 1:
        return clauses[0][0].upper() + clauses[0][1:] + "."
    if rng.random() < 0.5:
        return "Please do these: " + "; ".join(clauses) + "."
    return " ".join(f"{'Also' if i else 'First,'} {c}." for i, c in enumerate(clauses))


def _task(rng: random.Random, tier: str) -> dict[str, Any]:
    backend = rng.choice(sorted(ACTIONS))
    draw = ACTIONS[backend]
    if tier == "several_calls":
        actions = [draw(rng)]
        same = rng.random() < 0.4  # one function called several times (BFCL's parallel), else several functions
        while same and actions[0].function in ONCE:
            actions = [draw(rng)]
        wanted, tries = rng.choice([2, 2, 3]), 0
        while len(actions) < wanted and tries < 200:  # distinct requests; a setting or a folder change asked once
            tries += 1
            action = draw(rng)
            if any(a.clause == action.clause for a in actions) or (same and action.function != actions[0].function):
                continue
            if action.function in ONCE and any(a.function == action.function for a in actions):
                continue
            actions.append(action)
        if len(actions) < 2:
            return _task(rng, tier)
        needed = sorted({a.function for a in actions})
        functions = needed if same else _offer(rng, backend, needed, len(needed) + rng.randint(0, 1))
        answer = [{a.function: a.params} for a in actions]
        return _scenario(backend, functions, _request([a.clause for a in actions], rng), answer)
    action = draw(rng)
    request = _request([action.clause], rng)
    if tier == "one_call":
        return _scenario(backend, [action.function], request, [{action.function: action.params}])
    if tier == "choose":
        functions = _offer(rng, backend, [action.function], rng.randint(3, 4))
        return _scenario(backend, functions, request, [{action.function: action.params}])
    other = rng.choice([b for b in sorted(ACTIONS) if b != backend and (backend, b) not in UNRELATED])
    return _scenario(other, _offer(rng, other, [], rng.randint(2, 4)), request, [])


def _scenario(backend: str, functions: list[str], request: str, answer: list[Any]) -> dict[str, Any]:
    return {
        "tools": {backend: {}},
        "functions": functions,
        "single_turn": {"request": request, "possible_answer": answer},
    }


def single_turn_tasks(seed: int, per_tier: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(train, heldout): `per_tier` tasks per tier, dealt 2:1; no request text appears twice in either or across."""
    rng = random.Random(f"single_turn/{seed}")
    train: list[dict[str, Any]] = []
    heldout: list[dict[str, Any]] = []
    seen: set[str] = set()
    for tier in TIERS:
        count = attempts = 0
        while count < per_tier:
            attempts += 1
            if attempts > 100 * per_tier:
                raise RuntimeError(f"single-turn tier {tier}: cannot find {per_tier} distinct requests")
            spec = _task(rng, tier)
            request = spec["single_turn"]["request"]
            if request in seen:
                continue
            seen.add(request)
            task = {"id": f"st_{tier}_{count:03d}", "category": tier, **spec}
            (heldout if count % 3 == 2 else train).append(task)
            count += 1
    return train, heldout
