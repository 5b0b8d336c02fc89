"""Isolation: nothing a test does with ``fake_redis_streams`` survives into the next test.

A pytester run of FAKE_STREAMS_ISOLATION_TESTS (default 200; 50 in the fast loop) generated tests, in a random order (the order
of generation is shuffled with a seed; ``pytest-random-order`` shuffles again when installed). Every
generated test uses the fixture and leaves something behind on purpose: stream data, groups and pending
entries, a reader blocked forever (thread or asyncio task), a patched client of some other address, a
long-lived client built at import time, a manual clock moved forward, an armed optional fault, a TCP
``serve()``. Each test also asserts, at its start, that it sees none of that (empty keyspaces on every
address it touches, the clock at its start value).

A guard fixture in the generated conftest checks around every test, after the fixture's teardown:

* threads: no thread started during the test is still alive (bounded wait for the fixture's own timer);
* patch: ``redis.ConnectionPool`` / ``redis.asyncio.ConnectionPool`` have exactly the ``connection_class``
  they had before (the descriptor is uninstalled);
* servers: every fake server of the test is closed, with no blocked client left; no address-shared server
  was left in ``FakeStreamsServer``'s registry;
* tasks: asyncio tests finish with no task but their own (checked inside their loop).

Then the same file runs under pytest-xdist (``-n 2``) when it is installed (else that test skips with the
reason): the isolation must hold per worker too.
"""

from __future__ import annotations

import importlib.util
import random
import textwrap

import pytest

from tests.support.budget import budget

from .conftest import FIGURES, derandomized, env_int

N_TESTS = env_int("FAKE_STREAMS_ISOLATION_TESTS", budget(fast=50, full=200))

CONFTEST = '''
import threading
import time

import pytest
import redis
import redis.asyncio

from fake_streams import FakeStreamsServer

_MISSING = object()


def _pool_classes():
    return tuple(pool.__dict__.get("connection_class", _MISSING)
                 for pool in (redis.ConnectionPool, redis.asyncio.ConnectionPool))


@pytest.fixture(autouse=True)
def isolation_guard(request):
    """Set up before fake_redis_streams, torn down after it: sees what the fixture left behind."""
    threads = {t.ident for t in threading.enumerate()}
    pools = _pool_classes()
    registry = dict(FakeStreamsServer._registry)
    yield
    handle = request.node.funcargs.get("fake_redis_streams")
    assert handle is not None, "every generated test uses the fixture"
    deadline = time.monotonic() + 5.0
    while True:
        left = [t for t in threading.enumerate() if t.ident not in threads and t.is_alive()]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.01)  # real-time: threads ending after the fixture's teardown; bounded above
    assert not left, f"threads survived the test: {[t.name for t in left]}"
    assert _pool_classes() == pools, "ConnectionPool.connection_class was not restored"
    assert dict(FakeStreamsServer._registry) == registry, "an address-shared server survived"
    for address, server in handle.servers().items():
        assert server.closed, f"server {address} left open"
        assert not server.blocked(), f"blocked clients survived on {address}: {server.blocked()}"
'''

HEADER = '''
import asyncio
import contextlib
import socket
import threading
import time
import urllib.parse

import pytest
import redis
import redis.asyncio
#: built at import time, before any patch: must reach each test's fake, fresh every time
GLOBAL = redis.Redis(host="globalhost", port=6379)
START_MS = 1_700_000_000_000


def fresh(client):
    assert client.dbsize() == 0, f"keys left by an earlier test: {client.keys()}"
'''

#: one template per way of leaving something behind ({i} = the test's number)
TEMPLATES = {
    "data": '''
def test_{i:03d}_data_groups_pending(fake_redis_streams):
    r = fake_redis_streams.client
    fresh(r)
    assert fake_redis_streams.streams() == []
    r.xadd("s", {{"n": "{i}"}})
    r.xgroup_create("s", "g", "0")
    r.xreadgroup("g", "c", {{"s": ">"}})
    assert r.xpending("s", "g")["pending"] == 1
''',
    "blocked_thread": '''
def test_{i:03d}_reader_blocked_forever_in_a_thread(fake_redis_streams):
    r = redis.Redis(host="blockhost{m}", port=6379)
    fresh(r)
    r.xadd("s", {{"a": "1"}})
    errors = []

    def reader():
        try:
            # redis-py's default Retry (backoff): the released reader must still end at once (FINDINGS.md F6)
            redis.Redis(host="blockhost{m}", port=6379).xread({{"s": "$"}}, block=0)
        except Exception as exc:  # released by the fixture's teardown
            errors.append(exc)

    threading.Thread(target=reader, name="isolation-reader-{i}", daemon=True).start()
    fake_redis_streams.server_for("redis://blockhost{m}:6379").wait_until_blocked(1)
''',
    "blocked_group_thread": '''
def test_{i:03d}_group_reader_blocked_in_a_thread(fake_redis_streams):
    r = fake_redis_streams.client
    fresh(r)
    r.xgroup_create("jobs", "workers", "$", mkstream=True)

    def reader():
        with contextlib.suppress(Exception):
            fake_redis_streams.server.client().xreadgroup("workers", "w{i}", {{"jobs": ">"}}, block=0)

    threading.Thread(target=reader, name="isolation-group-reader-{i}", daemon=True).start()
    fake_redis_streams.wait_until_blocked(1)
''',
    "async_task": '''
def test_{i:03d}_asyncio_reader_left_pending(fake_redis_streams):
    async def main():
        r = fake_redis_streams.async_client()
        assert await r.dbsize() == 0
        await r.xadd("s", {{"a": "1"}})
        task = asyncio.ensure_future(r.xread({{"s": "$"}}, block=0))
        for _ in range(1000):
            if fake_redis_streams.server.blocked():
                break
            await asyncio.sleep(0.002)  # real-time: polling the server for the parked read; bounded
        assert fake_redis_streams.server.blocked()
        if {i} % 2:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            await r.aclose() if hasattr(r, "aclose") else await r.close()
            assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
        # else: asyncio.run() cancels the pending read; the fixture closes the client

    asyncio.run(main())
''',
    "patched_address": '''
def test_{i:03d}_patched_client_of_another_address(fake_redis_streams):
    r = redis.Redis(host="svc{m}", port=6379, decode_responses=True)
    fresh(r)
    r.xadd("events", {{"i": "{i}"}})
    assert fake_redis_streams.server_for("redis://svc{m}:6379").closed is False
''',
    "global_client": '''
def test_{i:03d}_client_built_at_import(fake_redis_streams):
    fresh(GLOBAL)
    GLOBAL.xadd("g", {{"i": "{i}"}})
    GLOBAL.xgroup_create("g", "grp", "0")
''',
    "manual_clock": '''
@pytest.mark.fake_redis_streams(clock="manual", start_ms=START_MS)
def test_{i:03d}_manual_clock_moved(fake_redis_streams):
    assert fake_redis_streams.clock.now_ms() == START_MS
    fresh(fake_redis_streams.client)
    fake_redis_streams.clock.advance({i} * 1000)
    assert fake_redis_streams.client.xadd("s", {{"a": "1"}}) == b"%d-0" % (START_MS + {i} * 1000)
''',
    "fault": '''
def test_{i:03d}_optional_fault_left_armed(fake_redis_streams):
    r = fake_redis_streams.client
    fresh(r)
    fake_redis_streams.faults.fail_next("XACK", error="ERR injected", optional=True)
    r.xadd("s", {{"a": "1"}})
''',
    "tcp_serve": '''
def test_{i:03d}_served_over_tcp(fake_redis_streams):
    fresh(fake_redis_streams.client)
    url = urllib.parse.urlparse(fake_redis_streams.serve())
    with socket.create_connection((url.hostname, url.port), timeout=5) as sock:
        sock.sendall(b"*1\\r\\n$4\\r\\nPING\\r\\n")
        assert sock.recv(64).startswith(b"+PONG")
''',
}


def generate(n: int, seed: int) -> str:
    """``n`` tests cycling through the templates, in an order shuffled by ``seed``."""
    kinds = list(TEMPLATES)
    tests = [TEMPLATES[kinds[i % len(kinds)]].format(i=i, m=i % 3) for i in range(n)]
    random.Random(seed).shuffle(tests)
    return textwrap.dedent(HEADER) + "\n".join(textwrap.dedent(t) for t in tests)


def _order_args() -> list:
    if importlib.util.find_spec("random_order") is not None:
        return ["-p", "random_order", "--random-order"]
    return []


def _seed() -> int:
    return 6 if derandomized() else random.randrange(1 << 16)


def _run(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    seed = _seed()
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_generated=generate(N_TESTS, seed))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", *_order_args(), *extra, timeout=300)
    if result.ret != 0:
        print(f"isolation seed {seed}")
    return result


@pytest.mark.slow  # a pytest subprocess of generated tests (~3 s); tests/plugin/test_leaks.py checks per-test release in the fast loop
def test_isolation_random_order(pytester: pytest.Pytester) -> None:
    result = _run(pytester)
    result.assert_outcomes(passed=N_TESTS)
    FIGURES["isolation: generated tests passed (random order)"] += N_TESTS


@pytest.mark.slow  # two xdist workers start in a subprocess (~4 s); the random-order run stays in the fast loop
def test_isolation_under_xdist(pytester: pytest.Pytester) -> None:
    if importlib.util.find_spec("xdist") is None:
        pytest.skip("pytest-xdist is not installed (pip install pytest-xdist to run the isolation suite on 2 workers)")
    result = _run(pytester, "-n", "2")
    result.assert_outcomes(passed=N_TESTS)
    FIGURES["isolation: generated tests passed (xdist -n 2)"] += N_TESTS

