"""redis-py's own stream tests on the fake's profiles (see harness.py), with real servers as the reference.

* A profile with an oracle here — "valkey-9.1" (Valkey 9.1.2) and "7.0" (Redis 7.0.15): redis-py's tests run
  against the real server and against the fake; every test must have the same outcome on both (passed,
  failed or skipped: the gates read the same ``redis_version``).
* The other profiles — "7.4" and every Redis 8.x profile the fake has: every test that is not skipped must
  pass, except the ones in :data:`DOCUMENTED`, each with why the fake is right there.

Marked slow: a run of redis-py's suite is seconds per server (the full run, as .ci/run does, has them all). Each
test's runs are one job (:func:`job_of`), made by the test itself, or in the background while the session runs
other tests when ``FAKE_STREAMS_REDISPY_BACKGROUND=1`` asks for it (:mod:`tests.redispy.background`); a comparison's real server is one of its own (a private
:class:`~tests.conformance.oracles.OraclePool`), not the session's shared one, which other tests use meanwhile.
A comparison makes its real and its fake run at the same time (:func:`_at_once`), and a profile's job is made beside
the next profile's (:func:`pairable`): each run keeps about one core of the two busy, and the session waits meanwhile
(on the 2-CPU CI machine, 2026-12-03: the cluster comparison 111 s one after the other, 56 s at once; all of
tests/redispy 218 s, then 114 s).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Optional, Tuple

import pytest

from fake_streams.profiles import PROFILES
from tests.conformance import conftest as _conformance
from tests.conformance.conftest import TARGETS
from tests.conformance.oracles import OraclePool

from . import background
from .conftest import RESULTS
from .harness import FakeServerProcess, SuiteRun, redispy_source, redispy_version, run_suite

pytestmark = [pytest.mark.slow, pytest.mark.real]

#: redis-py tests that fail on a correct server, with the evidence. Each is also checked on the real servers
#: (the oracle runs above fail it the same way).
DOCUMENTED = {
    "tests.test_commands.TestRedisCommands::test_xgroup_create_entriesread": (
        "redis-py 8.1 expects lag 1 after `XADD; XGROUP CREATE stream group 0 ENTRIESREAD 7` on servers before "
        "8.2.2; Redis 7.0.15 and Valkey 9.1.2 answer lag -6 (entries-added 1 - entries-read 7: "
        "streamReplyWithCGLag trusts a valid counter) and so does the fake; 8.2.2 caps ENTRIESREAD (spec "
        "streams-redis8.md §2.4), where the test is skipped"
    ),
}

#: profiles compared with a real server of this machine: profile -> oracle kind
WITH_ORACLE = {"valkey-9.1": "valkey", "7.0": "redis"}
ALONE = ["7.4"] + sorted((p for p in PROFILES if p[:1].isdigit() and int(p.split(".")[0]) >= 8),
                         key=lambda p: tuple(int(x) for x in p.split(".")))


def _oracle_target(kind: str, profile: str):
    for target in TARGETS:
        if target.kind == kind and target.profile == profile and target.protocol == 2:
            return target
    return None


_SOURCE_LOCK = threading.Lock()


def _source() -> Tuple[Optional[Path], str]:
    """redis-py's tests (fetched once, whichever thread asks first), or why they cannot be had."""
    with _SOURCE_LOCK:
        return redispy_source()


def _fake_run(source: Path, profile: str, cluster: int = 0) -> SuiteRun:
    """redis-py's stream tests against ``serve --version profile`` (``--cluster`` when ``cluster``)."""
    with FakeServerProcess(profile, cluster=cluster) as server:
        return run_suite(source, server.url, cluster_nodes=cluster)


def _at_once(first: Callable[[], Any], second: Callable[[], Any]) -> Tuple[Any, Any]:
    """``(first(), second())``, the two made at the same time (``second`` in a thread of its own, always joined
    before this returns); an exception of either is raised (``first``'s if both raise)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="redispy-second-run") as executor:
        later = executor.submit(second)
        value = first()  # leaving the block, even by an exception, waits for `second`
    return value, later.result()


def _oracle_job(profile: str) -> background.Outcome:
    """The real server's run (a server of the job's own) and the fake's run on ``profile``."""
    source, why = _source()
    if source is None:
        return background.Outcome(missing=why)
    kind = WITH_ORACLE[profile]
    target = _oracle_target(kind, profile)
    if target is None:
        return background.Outcome(
            missing=f"no {kind} server whose exact profile is {profile!r} (tests/conformance/oracles.py)")
    pool = OraclePool()
    try:
        oracle = pool.get(target)
    except LookupError as exc:
        pool.stop_all()
        return background.Outcome(missing=str(exc))

    def real_run() -> SuiteRun:
        try:
            return run_suite(source, f"redis://127.0.0.1:{oracle.port}/0")
        finally:
            pool.stop_all()

    real, fake = _at_once(real_run, lambda: _fake_run(source, profile))
    return background.Outcome((real, fake), label=oracle.label,
                              labels={f"{oracle.label} (real {oracle.version})": real.summary(),
                                      f"fake, profile {profile}": fake.summary()})


def _cluster_job() -> background.Outcome:
    """A real 3-master Redis 7.0.15 cluster's run and ``serve --cluster 3 --version 7.0``'s run."""
    from tests.topology.real_cluster import RealCluster

    source, why = _source()
    if source is None:
        return background.Outcome(missing=why)
    try:
        cluster = RealCluster(3)
    except LookupError as exc:
        return background.Outcome(missing=str(exc))

    def real_run() -> SuiteRun:
        try:
            return run_suite(source, f"redis://127.0.0.1:{cluster.nodes[0].port}/0", cluster_nodes=3)
        finally:
            cluster.stop()

    real, fake = _at_once(real_run, lambda: _fake_run(source, "7.0", cluster=3))
    return background.Outcome((real, fake), labels={"real 3-master cluster (redis 7.0.15)": real.summary(),
                                                   "fake, serve --cluster 3, profile 7.0": fake.summary()})


def _profile_job(profile: str) -> background.Outcome:
    source, why = _source()
    if source is None:
        return background.Outcome(missing=why)
    run = _fake_run(source, profile)
    return background.Outcome((run,), labels={f"fake, profile {profile}": run.summary()})


#: jobs made by their own test, not in the background: the real cluster's run was SIGKILLed (exit -9, well inside
#: its 600 s timeout, by nothing of this suite found so far) in one clean-clone CI run of two while made in the
#: background thread beside the rest of the session; made in the foreground, as before, it never was
FOREGROUND_JOBS = frozenset({"cluster"})


def pairable(name: str) -> bool:
    """Whether job ``name`` is one run of the suite (a profile's), which its test may make beside another such job
    (:meth:`tests.redispy.background.Jobs.result`); a comparison makes two runs at once already."""
    return name.startswith("profile ")


def job_of(item: Any) -> Optional[Tuple[str, background.Job]]:
    """The job (name, function) whose runs ``item`` (a test of this module) asserts on."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    name = getattr(item, "originalname", "")
    if name == "test_redispy_stream_tests_same_outcomes_as_the_real_server":
        return f"oracle {params['profile']}", lambda profile=params["profile"]: _oracle_job(profile)
    if name == "test_redispy_stream_tests_on_a_cluster_same_outcomes_as_a_real_cluster":
        return "cluster", _cluster_job
    if name == "test_redispy_stream_tests_pass_on_the_profile":
        return f"profile {params['profile']}", lambda profile=params["profile"]: _profile_job(profile)
    return None


def _outcome(request: Any) -> background.Outcome:
    """This test's job's outcome (a missing server: skipped, or failed with FAKE_STREAMS_REQUIRE_REAL=1)."""
    named = job_of(request.node)
    assert named is not None, request.node.nodeid
    outcome = background.JOBS.result(*named, pairable=pairable(named[0]))
    if outcome.missing:
        _conformance.missing_oracle(outcome.missing)
    RESULTS.update(outcome.labels)
    return outcome


def _same_outcomes(real, fake, label: str) -> None:
    """Every redis-py test has the same outcome on the real server and on the fake, and every failure of the real
    one is in :data:`DOCUMENTED`."""
    assert set(fake.outcomes) == set(real.outcomes), "different tests collected"
    differ = {t: (real.outcomes[t], fake.outcomes[t]) for t in real.outcomes if real.outcomes[t] != fake.outcomes[t]}
    assert not differ, "outcomes differ (real, fake):\n" + "\n".join(
        f"  {t}: {r} / {f}\n    {fake.messages.get(t) or real.messages.get(t, '')}" for t, (r, f) in differ.items())
    assert fake.count("passed") > 0, fake.log
    undocumented = [t for t in real.with_outcome("failed") if t not in DOCUMENTED]
    assert not undocumented, f"the real {label} fails redis-py tests no entry of DOCUMENTED explains: {undocumented}"


@pytest.mark.parametrize("profile", sorted(WITH_ORACLE))
def test_redispy_stream_tests_same_outcomes_as_the_real_server(profile, request):
    outcome = _outcome(request)
    real, fake = outcome.runs
    _same_outcomes(real, fake, outcome.label)


def test_redispy_stream_tests_on_a_cluster_same_outcomes_as_a_real_cluster(request):
    """redis-py's stream tests in cluster mode (its ``RedisCluster`` clients, sync and asyncio) against a real
    3-master Redis 7.0.15 cluster and against ``serve --cluster 3 --version 7.0``: the same outcome per test."""
    real, fake = _outcome(request).runs
    _same_outcomes(real, fake, "cluster")


@pytest.mark.parametrize("profile", ALONE)
def test_redispy_stream_tests_pass_on_the_profile(profile, request):
    (run,) = _outcome(request).runs
    failed = {t: run.messages.get(t, "") for t in run.with_outcome("failed") if t not in DOCUMENTED}
    assert not failed, f"redis-py {redispy_version()}'s stream tests failing on profile {profile}:\n" + "\n".join(
        f"  {t}\n    {m}" for t, m in failed.items())
    assert run.count("passed") > 0, run.log
