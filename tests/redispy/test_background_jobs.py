"""The job scheduling of tests/redispy (:mod:`tests.redispy.background`, ``_at_once``): which jobs are made at the
same time, and that every outcome (or exception) reaches the test that asks for it. No suite run, no server: the
jobs here are functions that meet each other through events."""

from __future__ import annotations

import threading
from typing import Any, List

import pytest

from tests.redispy import test_redispy_streams as streams
from tests.redispy.background import Jobs, Outcome

#: real-time bound of every wait for the other thread here, seconds (a pass takes microseconds)
BOUND_S = 10.0


def _meeting_jobs(log: List[str]) -> Any:
    """Two jobs that each wait for the other to have started: made one after the other, the first one's wait fails."""
    a_started, b_started = threading.Event(), threading.Event()

    def job_a() -> Outcome:
        log.append("a")
        a_started.set()
        met = b_started.wait(BOUND_S)  # real-time: bounded wait for the companion thread to start
        return Outcome(runs=("a", met))

    def job_b() -> Outcome:
        log.append("b")
        b_started.set()
        met = a_started.wait(BOUND_S)  # real-time: bounded wait for the asking thread's job to start
        return Outcome(runs=("b", met))

    return job_a, job_b


def test_a_pairable_job_is_made_beside_the_next_pairable_one():
    jobs, log = Jobs(), []
    job_a, job_b = _meeting_jobs(log)
    jobs.add("profile a", job_a, pairable=True)
    jobs.add("profile b", job_b, pairable=True)
    assert jobs.result("profile a", job_a, pairable=True).runs == ("a", True)
    assert jobs._futures["profile b"].done()  # joined before result() returned: nothing outlives the asking test
    assert jobs.result("profile b", job_b, pairable=True).runs == ("b", True)
    assert sorted(log) == ["a", "b"]  # each made once


@pytest.mark.parametrize("asked, other", [("oracle x", "profile y"), ("profile y", "oracle x")],
                         ids=["not pairable, then pairable", "pairable, then not pairable"])
def test_a_job_is_made_alone_unless_both_are_pairable(asked, other):
    jobs, made = Jobs(), []
    for key in (asked, other):
        jobs.add(key, lambda key=key: Outcome(runs=(made.append(key),)), pairable=streams.pairable(key))
    jobs.result(asked, lambda: Outcome(), pairable=streams.pairable(asked))
    assert made == [asked] and not jobs._futures[other].done()
    jobs.result(other, lambda: Outcome(), pairable=streams.pairable(other))
    assert made == [asked, other]


def test_the_companion_s_exception_reaches_its_own_test():
    jobs = Jobs()

    def broken() -> Outcome:
        raise RuntimeError("redis-py's tests produced no report (exit -9)")

    jobs.add("profile a", lambda: Outcome(runs=("a",)), pairable=True)
    jobs.add("profile b", broken, pairable=True)
    assert jobs.result("profile a", lambda: Outcome(), pairable=True).runs == ("a",)
    with pytest.raises(RuntimeError, match="exit -9"):
        jobs.result("profile b", broken, pairable=True)


def test_the_module_pairs_the_profiles_only():
    assert streams.pairable("profile 8.10")
    assert not streams.pairable("oracle 7.0") and not streams.pairable("cluster")


def test_at_once_makes_both_at_the_same_time():
    log: List[str] = []
    job_a, job_b = _meeting_jobs(log)
    assert streams._at_once(job_a, job_b) == (Outcome(runs=("a", True)), Outcome(runs=("b", True)))


def test_at_once_raises_either_exception_after_both_ended():
    ended = threading.Event()

    def second() -> str:
        ended.set()
        return "second"

    def failing() -> str:
        raise LookupError("no real cluster")

    with pytest.raises(LookupError, match="no real cluster"):
        streams._at_once(failing, second)
    assert ended.is_set()  # joined before the exception was raised
    with pytest.raises(LookupError, match="no real cluster"):
        streams._at_once(lambda: "first", failing)
    with pytest.raises(LookupError, match="no real cluster"):  # both raise: the first one's
        streams._at_once(failing, lambda: (_ for _ in ()).throw(ValueError("second")))
