"""ServerPool: session-sticky, least-loaded choice of a model server, failover and the URL checks."""

from __future__ import annotations

import pytest

from tooluse_agents.backends.server_pool import STICKY_SESSIONS, ServerPool, check_urls, server_lines

A, B, C = "http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_episode_starts_on_the_least_loaded_server_and_stays_there():
    pool = ServerPool([A, B, C])
    first = pool.acquire("e1")
    second = pool.acquire("e2")  # A has a request in flight
    third = pool.acquire("e3")
    assert [r.url for r in (first, second, third)] == [A, B, C]
    pool.release(second)
    pool.release(third)
    assert pool.acquire("e4").url == B  # A still busy; B and C idle, B has no more episodes than C
    assert pool.acquire("e1").url == A  # sticky, though A is now the busiest
    report = {s["url"]: s for s in pool.report()}
    assert report[A]["requests"] == 2 and report[A]["episodes"] == 1
    assert report[B]["episodes"] == 2 and report[C]["episodes"] == 1


def test_ties_go_to_the_server_with_fewer_episodes():
    pool = ServerPool([A, B])
    for session in ("e1", "e2", "e3"):
        pool.release(pool.acquire(session))  # nothing stays in flight
    assert [s["episodes"] for s in pool.report()] == [2, 1]


def test_only_the_first_request_to_find_a_server_down_is_told_it_was_up():
    pool = ServerPool([A, B])
    one, two = pool.acquire("e1"), pool.acquire("e3", tried=[1])  # two requests in flight on A
    assert (one.url, two.url) == (A, A)
    assert pool.fail(one, "refused") is True
    assert pool.fail(two, "refused") is False  # the second finds it down already: nothing more to say
    assert pool.report()[0]["failures"] == 2 and pool.report()[0]["requests"] == 2


def test_failover_moves_the_episode_and_counts_it():
    clock = Clock()
    pool = ServerPool([A, B], down_s=30.0, clock=clock)
    route = pool.acquire("e1")
    pool.fail(route, "refused")
    assert pool.is_down(0) and pool.up() == [B]
    moved = pool.acquire("e1", tried=[0])
    assert moved.url == B
    pool.release(moved)
    assert pool.acquire("e1").url == B  # the episode now belongs to B
    assert pool.acquire("e2").url == B  # A is down: new episodes avoid it
    clock.now += 31
    assert not pool.is_down(0) and pool.report()[0]["down"] is True  # due back, but nothing got through yet
    retry = pool.acquire("e3")
    assert retry.url == A  # tried again
    pool.release(retry)
    a = pool.report()[0]
    assert a["moved_out"] == 1 and a["failures"] == 1 and a["last_failure"] == "refused" and a["down"] is False


def test_when_every_server_is_down_the_one_due_back_first_is_tried_and_each_server_once_per_request():
    clock = Clock()
    pool = ServerPool([A, B], down_s=30.0, clock=clock)
    pool.fail(pool.acquire("e1"), "refused")
    clock.now += 5
    pool.fail(pool.acquire("e2"), "refused")
    assert pool.up() == []
    assert pool.acquire("e3").url == A  # A is due back before B
    assert pool.acquire("e3", tried=[0]).url == B
    assert pool.acquire("e3", tried=[0, 1]) is None


def test_an_answer_brings_a_server_back_up():
    clock = Clock()
    pool = ServerPool([A, B], clock=clock)
    pool.fail(pool.acquire("e1"), "refused")
    pool.release(pool.acquire("e9", tried=[1]))  # a request that reached A after all
    assert pool.up() == [A, B]


def test_requests_without_a_session_are_spread_one_by_one():
    pool = ServerPool([A, B])
    assert [pool.acquire(None).url for _ in range(4)] == [A, B, A, B]


def test_the_pool_forgets_the_least_recently_used_sessions_past_its_bound():
    pool = ServerPool([A, B])
    for n in range(STICKY_SESSIONS + 1):
        pool.release(pool.acquire(f"e{n}"))
    assert len(pool._sticky) == STICKY_SESSIONS and "e0" not in pool._sticky


@pytest.mark.parametrize(
    ("urls", "message"),
    [
        ((), "at least one"),
        (("127.0.0.1:8000/v1",), "not an http"),
        (("ftp://host/v1",), "not an http"),
        (("http:///v1",), "host"),
        ((A, B, A), "given twice"),
    ],
)
def test_bad_url_lists_are_refused_with_the_url_at_fault(urls, message):
    with pytest.raises(ValueError, match=message):
        check_urls(urls)


def test_server_lines_say_which_server_failed_and_why():
    pool = ServerPool([A, B])
    pool.fail(pool.acquire("e1"), "APIConnectionError: Connection error.")
    pool.release(pool.acquire("e1", tried=[0]))
    lines = server_lines(pool.report())
    assert lines[0].startswith(f"  {A}: 1 episodes, 1 requests; FAILED 1x (APIConnectionError: Connection error.)")
    assert "1 episodes moved to other servers; down at the end" in lines[0]
    assert lines[1] == f"  {B}: 1 episodes, 1 requests"
