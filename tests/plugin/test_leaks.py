"""No per-test leak (issue 13): once a test ended, its fake servers, their streams and the connection
classes made for it are collectable, whichever way its clients were built; the plugin costs nothing
at start-up for a suite that never asks for the fixture."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]

ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: a subprocess imports this checkout's fake_streams and pytest_plugin (not an installed copy)
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))

#: each test writes entries through one way of building a client and records weak references to
#: everything it made; the last test collects and lists what is still alive
LEAK_SUITE = """
import asyncio, gc, weakref

import pytest
import redis
import redis.asyncio

from fake_streams import FakeStreamsConnection, FakeStreamsServer

REFS = []
BEFORE = []  # what existed before these tests (e.g. an outer session's fixtures, when run in-process)
WAYS = ["client", "async_client", "from_url", "pool_from_url", "asyncio_from_url", "bind", "server_client",
        "connection_class"]


def _write(r):
    pipe = r.pipeline(transaction=False)
    for _ in range(200):
        pipe.xadd("s", {"f": "v"})
    pipe.execute()
    r.xgroup_create("s", "g", id="0")
    r.xreadgroup("g", "c", {"s": ">"}, count=10)


async def _write_async(r):
    await r.xadd("s", {"f": "v"})
    await r.xgroup_create("s", "g", id="0")
    await r.xreadgroup("g", "c", {"s": ">"}, count=10)
    await r.aclose() if hasattr(r, "aclose") else await r.close()


def _ours():
    from fake_streams.connection import FakeStreamsAsyncConnection, FakeStreamsConnection
    from fake_streams.patching import FakeNetwork
    from fake_streams.stream import Stream

    bases = (FakeStreamsConnection, FakeStreamsAsyncConnection)
    return [obj for obj in gc.get_objects()
            if isinstance(obj, (FakeStreamsServer, Stream, FakeNetwork))
            or (isinstance(obj, type) and issubclass(obj, bases) and obj not in bases)]


def test_aa_baseline():
    gc.collect()
    BEFORE.extend(_ours())  # held, so their ids stay theirs


@pytest.mark.parametrize("round", range(4))
@pytest.mark.parametrize("way", WAYS)
def test_writes(fake_redis_streams, way, round):
    if way == "client":
        _write(fake_redis_streams.client)
    elif way == "async_client":
        asyncio.run(_write_async(fake_redis_streams.async_client()))
    elif way == "from_url":
        _write(redis.Redis.from_url("redis://localhost:6379/0"))
    elif way == "pool_from_url":
        _write(redis.Redis(connection_pool=redis.ConnectionPool.from_url("redis://cache:6380/1")))
    elif way == "asyncio_from_url":
        asyncio.run(_write_async(redis.asyncio.Redis.from_url("redis://queue:6379/0")))
    elif way == "bind":
        server = FakeStreamsServer()
        REFS.append(("bound server", weakref.ref(server)))
        _write(redis.Redis(connection_pool=redis.ConnectionPool(connection_class=FakeStreamsConnection.bind(server))))
        server.close()
    elif way == "server_client":
        _write(fake_redis_streams.server.client())
    else:
        pool = redis.ConnectionPool(connection_class=fake_redis_streams.connection_class, host="other")
        _write(redis.Redis(connection_pool=pool))
    for address, server in fake_redis_streams.servers().items():
        REFS.append((f"server {address} of {way}", weakref.ref(server)))
    REFS.append((f"connection class of {way}", weakref.ref(fake_redis_streams.connection_class)))
    REFS.append((f"async connection class of {way}", weakref.ref(fake_redis_streams.async_connection_class)))
    REFS.append((f"network of {way}", weakref.ref(fake_redis_streams.network)))


def test_zz_nothing_of_the_ended_tests_is_alive():
    gc.collect()
    alive = sorted({what for what, ref in REFS if ref() is not None})
    assert len(REFS) > 3 * len(WAYS) * 4
    assert alive == []
    before = {id(obj) for obj in BEFORE}
    left = sorted(f"class {obj.__name__}" if isinstance(obj, type) else type(obj).__name__
                  for obj in _ours() if id(obj) not in before)
    assert left == []  # no server, stream, network or per-test connection class of ours anywhere
"""


def test_servers_streams_and_classes_of_ended_tests_are_collectable(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_leak=LEAK_SUITE)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(passed=8 * 4 + 2)


PLAIN_SUITE = """
import sys

def test_plain():
    assert 1 + 1 == 2

def test_zz_nothing_heavy_was_imported():
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("redis", "fakeredis")
                   or m.startswith(("fake_streams.server", "fake_streams.connection", "fake_streams.stream")))
    assert heavy == []
"""


def test_a_suite_without_the_fixture_imports_neither_redis_nor_the_engine(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What makes the plugin's start-up cheap (benchmarks/startup.py measures it): the plugin is loaded
    (its options are there) but redis, fakeredis and the engine are imported only by the fixture."""
    monkeypatch.setenv("PYTHONPATH", ENV["PYTHONPATH"])
    pytester.makepyfile(test_plain=PLAIN_SUITE)
    result = pytester.runpytest_subprocess(*ARGS, "--fake-redis-streams-version=7.2")
    result.assert_outcomes(passed=2)


def test_the_plugin_module_imports_no_redis() -> None:
    code = textwrap.dedent("""
        import sys
        import pytest_plugin
        assert pytest_plugin.FakeRedisStreams.__name__ == "FakeRedisStreams"  # lazily, for type hints
        import fake_streams
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("redis", "fakeredis")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=ENV).stdout
    assert out.strip() != "[]"  # the type-hint access did import the handle (and redis)
    code_plain = "import sys, pytest_plugin, fake_streams.profiles; " \
                 "print(sorted(m for m in sys.modules if m.split('.')[0] in ('redis', 'fakeredis')))"
    out = subprocess.run([sys.executable, "-c", code_plain], capture_output=True, text=True, check=True, cwd=ROOT, env=ENV).stdout
    assert out.strip() == "[]"


def _freed_without_the_collector(make):
    """Run ``make()`` (which returns an object to watch) with the cyclic GC off; whether reference counting alone
    frees what it returned once dropped."""
    import gc
    import weakref

    gc.collect()
    gc.disable()
    try:
        ref = weakref.ref(make())
        return ref() is None
    finally:
        gc.enable()


def test_a_closed_server_is_freed_by_reference_counting() -> None:
    """Issue 13: a closed server is no reference cycle (its blocking registry and Faults hold it weakly, its
    databases let go of the registry and their factory at close), so it and its data go at once, not at the
    cyclic collector's next full pass."""
    from fake_streams.faults import Faults
    from fake_streams.server import FakeStreamsServer

    def make() -> FakeStreamsServer:
        server = FakeStreamsServer()
        Faults.install(server).fail_next("XADD", optional=True)
        server.close()
        return server

    assert _freed_without_the_collector(make)


def test_a_fixture_handle_and_its_server_are_freed_by_reference_counting() -> None:
    """The handle does not form a cycle with its network (its server factory holds no handle), nor the patch."""
    from pytest_plugin._fixture import FakeRedisStreams
    from pytest_plugin._options import Options

    servers = []

    def make() -> object:
        handle = FakeRedisStreams(Options())
        handle.faults.fail_next("XADD", optional=True)
        servers.append(__import__("weakref").ref(handle.server))
        handle._shutdown()
        return handle

    assert _freed_without_the_collector(make)
    assert servers[0]() is None


def test_a_used_client_socket_and_session_are_freed_by_reference_counting() -> None:
    """A closed connection's socket and session form no cycle (the session holds a closed socket weakly), so a test
    that used ``.client`` leaves no cyclic garbage behind: its server, socket, session and stream go by reference
    counting when the handle is dropped, and a collection then finds nothing of ours."""
    import gc
    import weakref

    from fake_streams._fakeredis.sessions import Session
    from fake_streams.server import FakeStreamsServer
    from pytest_plugin._fixture import FakeRedisStreams
    from pytest_plugin._options import Options

    refs = []

    def make() -> object:
        handle = FakeRedisStreams(Options())
        client = handle.client
        client.xadd("s", {"f": "v"})
        assert client.xlen("s") == 1
        sock = client.connection_pool._available_connections[0]._sock
        refs.extend([weakref.ref(sock), weakref.ref(sock._sf_session), weakref.ref(handle.server)])
        handle._shutdown()
        with pytest.raises(redis.exceptions.ConnectionError):  # a use after close: the server's ConnectionError
            client.xadd("s", {"f": "v"})
        return handle

    import redis.exceptions

    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        assert _freed_without_the_collector(make)
        assert [ref() for ref in refs] == [None, None, None]
        gc.collect()
        ours = [o for o in gc.garbage if isinstance(o, (Session, FakeStreamsServer)) or type(o).__name__.startswith("Streams")]
        assert ours == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_an_asyncio_client_socket_and_session_are_freed_by_reference_counting() -> None:
    """The same for ``.async_client()``: closed at teardown, nothing of it waits for the cyclic collector."""
    import asyncio
    import gc
    import weakref

    from pytest_plugin._fixture import FakeRedisStreams
    from pytest_plugin._options import Options

    refs = []

    def make() -> object:
        handle = FakeRedisStreams(Options())

        async def use() -> None:
            client = handle.async_client()
            await client.xadd("s", {"f": "v"})
            assert await client.xlen("s") == 1
            conn = client.connection_pool._available_connections[0]
            refs.extend([weakref.ref(conn._sock._sf_session), weakref.ref(handle.server)])

        asyncio.run(use())
        handle._shutdown()
        return handle

    gc.collect()
    gc.disable()
    try:
        make()
        assert [ref() for ref in refs] == [None, None]
    finally:
        gc.enable()
