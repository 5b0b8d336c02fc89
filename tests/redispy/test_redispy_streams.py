"""redis-py's own stream tests on the fake's profiles (see harness.py), with real servers as the reference.

* A profile with an oracle here — "valkey-9.1" (Valkey 9.1.2) and "7.0" (Redis 7.0.15): redis-py's tests run
  against the real server and against the fake; every test must have the same outcome on both (passed,
  failed or skipped: the gates read the same ``redis_version``).
* The other profiles — "7.4" and every Redis 8.x profile the fake has: every test that is not skipped must
  pass, except the ones in :data:`DOCUMENTED`, each with why the fake is right there.

Marked slow: a run of redis-py's suite is seconds per server (the full run, as .ci/run does, has them all). The
real server's run and the fake's run of a comparison go at once, and so do the profile runs
(:func:`~tests.redispy.harness.run_suites`: each is a subprocess of its own, with a server of its own).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Dict, Iterator

import pytest

from fake_streams.profiles import PROFILES
from tests.conformance import conftest as _conformance
from tests.conformance.conftest import TARGETS

from .conftest import RESULTS
from .harness import PARALLEL_RUNS, FakeServerProcess, SuiteRun, redispy_version, run_suite, run_suites

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
def test_redispy_stream_tests_same_outcomes_as_the_real_server(profile, redispy_source, oracle_pool):
    kind = WITH_ORACLE[profile]
    target = _oracle_target(kind, profile)
    if target is None:
        _conformance.missing_oracle(f"no {kind} server whose exact profile is {profile!r} (tests/conformance/oracles.py)")
    oracle = _conformance.oracle_of(oracle_pool, target)
    oracle.reset()
    real, fake = run_suites(lambda: run_suite(redispy_source, f"redis://127.0.0.1:{oracle.port}/0"),
                            lambda: _fake_run(redispy_source, profile))
    oracle.reset()
    RESULTS[f"{oracle.label} (real {oracle.version})"] = real.summary()
    RESULTS[f"fake, profile {profile}"] = fake.summary()
    _same_outcomes(real, fake, oracle.label)


def test_redispy_stream_tests_on_a_cluster_same_outcomes_as_a_real_cluster(redispy_source):
    """redis-py's stream tests in cluster mode (its ``RedisCluster`` clients, sync and asyncio) against a real
    3-master Redis 7.0.15 cluster and against ``serve --cluster 3 --version 7.0``: the same outcome per test."""
    from tests.topology.real_cluster import RealCluster

    try:
        cluster = RealCluster(3)
    except LookupError as exc:
        _conformance.missing_oracle(str(exc))
    try:
        real, fake = run_suites(
            lambda: run_suite(redispy_source, f"redis://127.0.0.1:{cluster.nodes[0].port}/0", cluster_nodes=3),
            lambda: _fake_run(redispy_source, "7.0", cluster=3))
    finally:
        cluster.stop()
    RESULTS["real 3-master cluster (redis 7.0.15)"] = real.summary()
    RESULTS["fake, serve --cluster 3, profile 7.0"] = fake.summary()
    _same_outcomes(real, fake, "cluster")


def _fake_run(source: Any, profile: str, cluster: int = 0) -> SuiteRun:
    """redis-py's stream tests against ``serve --version profile`` (``--cluster`` when ``cluster``)."""
    with FakeServerProcess(profile, cluster=cluster) as server:
        return run_suite(source, server.url, cluster_nodes=cluster)


@pytest.fixture(scope="module")
def profile_runs(request: Any, redispy_source: Any) -> Iterator[Dict[str, Future[SuiteRun]]]:
    """The run on each profile of ALONE this session selected, started together (PARALLEL_RUNS at a time) when
    the first of those tests asks: profile -> its run (a future)."""
    selected = [item.callspec.params["profile"] for item in request.session.items
                if getattr(item, "originalname", "") == "test_redispy_stream_tests_pass_on_the_profile"
                and hasattr(item, "callspec")]
    pool = ThreadPoolExecutor(max_workers=PARALLEL_RUNS, thread_name_prefix="redispy-profile")
    try:
        yield {profile: pool.submit(_fake_run, redispy_source, profile) for profile in selected}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("profile", ALONE)
def test_redispy_stream_tests_pass_on_the_profile(profile, profile_runs):
    run = profile_runs[profile].result()
    RESULTS[f"fake, profile {profile}"] = run.summary()
    failed = {t: run.messages.get(t, "") for t in run.with_outcome("failed") if t not in DOCUMENTED}
    assert not failed, f"redis-py {redispy_version()}'s stream tests failing on profile {profile}:\n" + "\n".join(
        f"  {t}\n    {m}" for t, m in failed.items())
    assert run.count("passed") > 0, run.log
