"""Shared fixtures: a fresh server per test, client factories (sync/async × RESP2/RESP3), a real redis-server.

* ``server`` — a fresh :class:`FakeStreamsServer` (profile "7.4", ManualClock at 1_700_000_000_000);
  at teardown it must have recorded no internal error.
* ``make_client(protocol=2, server=None, **kw)`` / ``make_async_client(...)`` — clients on it (closed at teardown).
* ``any_client`` — one client per mode ``sync-2``, ``sync-3``, ``async-2``, ``async-3``; call it with
  ``await aw(any_client.xadd(...))`` in an ``async def`` test so one body covers all four.
* ``real_redis`` — ``redis-server`` (Debian's 7.0.15) on a free loopback port for the session, compared
  with the fake's profile "7.0"; tests using it carry the ``real`` marker and skip without the binary
  (fail instead with FAKE_STREAMS_REQUIRE_REAL=1).

The fast loop and the full run (:mod:`tests.support.budget`): ``--run-slow`` (or FAKE_STREAMS_SLOW=1) runs
the tests marked ``slow`` and gives every ``budget(fast=…, full=…)`` its full value; without it they are
deselected, unless ``-m`` names ``slow`` or the test is named by its node id.
"""

from __future__ import annotations

import inspect
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, List

import pytest
import pytest_asyncio
import redis
import redis.asyncio

from fake_streams import FakeStreamsServer, ManualClock
from tests.support.budget import SLOW_ENV, full_run

REDIS_PY = tuple(int(p) for p in redis.__version__.split(".")[:2])
#: ``protocol=`` exists from redis-py 5.0
PROTOCOLS = (2, 3) if REDIS_PY >= (5, 0) else (2,)
START_MS = 1_700_000_000_000
MODES = [f"{kind}-{p}" for kind in ("sync", "async") for p in PROTOCOLS]


# ------------------------------------------------------------------------------ fast loop / full run
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run the tests marked slow, with the full random-test budgets (what .ci/run "
                          f"does; {SLOW_ENV}=1 is the same)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--run-slow"):
        os.environ[SLOW_ENV] = "1"  # before test modules import: their budget() calls read it


def pytest_report_header(config: pytest.Config) -> str:
    if full_run():
        return "full run: slow tests included, full budgets"
    return "fast loop: slow tests deselected, small budgets (--run-slow runs everything, as CI does)"


def _asked_for(config: pytest.Config, item: pytest.Item) -> bool:
    """The command line asks for this slow test: ``-m`` names slow, or an argument is its node id."""
    if "slow" in (config.option.markexpr or ""):
        return True
    root = str(config.rootpath)
    for arg in config.args:
        if "::" in arg:
            node = os.path.relpath(os.path.abspath(arg.split("::")[0]), root) + "::" + arg.split("::", 1)[1]
            if item.nodeid == node or item.nodeid.startswith(node + "[") or item.nodeid.startswith(node + "::"):
                return True
    return False


CONFORMANCE_DIR = Path(__file__).parent / "conformance"


def _repeats_a_target(item: pytest.Item) -> bool:
    """A ``pair`` parameter of a profile an oracle stands in for, beside the profile emulating that oracle exactly
    (Valkey 9.1.2 as "7.4" / "valkey-8.0" beside "valkey-9.1"), outside tests/conformance: the same commands on
    the same server again. tests/conformance keeps the first stand-in in the fast loop (the raw-reply scenarios
    and every error text, seconds) and leaves the second one (``Target.repeat``) to the full run."""
    callspec = getattr(item, "callspec", None)
    target = callspec.params.get("conformance_target") if callspec is not None else None
    if target is None or getattr(target, "main", True):
        return False
    return getattr(target, "repeat", False) or CONFORMANCE_DIR not in Path(str(item.path)).parents


def _extra_realtime_variant(item: pytest.Item) -> bool:
    """A RESP3 or stand-in variant of a test marked ``realtime`` (it waits on the wall clock, seconds per variant):
    the fast loop keeps its RESP2 variant on each main oracle, the full run every variant."""
    if item.get_closest_marker("realtime") is None:
        return False
    callspec = getattr(item, "callspec", None)
    for value in (callspec.params.values() if callspec is not None else ()):
        if hasattr(value, "protocol") and hasattr(value, "main"):  # a tests.conformance.oracles.Target
            return value.protocol != 2 or not value.main
    return False


def pytest_itemcollected(item: pytest.Item) -> None:
    if _repeats_a_target(item) or _extra_realtime_variant(item):
        item.add_marker(pytest.mark.slow)  # at collection: before ``-m`` selects by markers


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    """The fast loop leaves out what is slow (last: after every conftest has marked its items)."""
    if full_run():
        return
    slow = [item for item in items if item.get_closest_marker("slow") and not _asked_for(config, item)]
    if slow:
        skipped = set(map(id, slow))
        items[:] = [item for item in items if id(item) not in skipped]
        config.hook.pytest_deselected(items=slow)


def pool_kwargs(protocol: int, **kwargs: Any) -> dict:
    if REDIS_PY >= (5, 0):
        kwargs["protocol"] = protocol
    return kwargs


def get_connection(client: Any) -> Any:
    """A connection out of ``client``'s pool (redis-py < 5.3 requires a command name)."""
    pool = client.connection_pool
    return pool.get_connection() if REDIS_PY >= (5, 3) else pool.get_connection("_")


def raw_reply(client: Any, *argv: Any) -> Any:
    """``argv`` sent on one of ``client``'s connections, its reply undecoded; an error reply as ``"-<text>"``."""
    conn = get_connection(client)
    try:
        conn.send_command(*argv)
        try:
            return conn.read_response(disable_decoding=True)
        except redis.ResponseError as exc:
            return f"-{exc}"
    finally:
        client.connection_pool.release(conn)


async def aw(value: Any) -> Any:
    """``await`` an async client's result; pass a sync client's through."""
    return await value if inspect.isawaitable(value) else value


@pytest.fixture(autouse=True)
def _fresh_registry():
    """Servers shared by address must not leak from one test into the next."""
    yield
    FakeStreamsServer.reset_registry()


@pytest.fixture
def server():
    srv = FakeStreamsServer(version="7.4", clock=ManualClock(START_MS))
    yield srv
    errors = list(srv.internal_errors)
    srv.close()
    assert not errors, "handlers raised unexpected exceptions:\n" + "\n".join(tb for _, _, tb in errors)


@pytest.fixture
def make_client(server) -> Callable[..., Any]:
    made: List[Any] = []

    def make(protocol: int = 2, srv: FakeStreamsServer = None, **kwargs: Any) -> Any:
        client = (srv or server).client(**pool_kwargs(protocol, **kwargs))
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest_asyncio.fixture
async def make_async_client(server) -> Callable[..., Any]:
    made: List[Any] = []

    def make(protocol: int = 2, srv: FakeStreamsServer = None, **kwargs: Any) -> Any:
        client = (srv or server).async_client(**pool_kwargs(protocol, **kwargs))
        made.append(client)
        return client

    yield make
    for client in made:
        await (client.aclose() if hasattr(client, "aclose") else client.close())


@pytest_asyncio.fixture(params=MODES)
async def any_client(request, make_client, make_async_client):
    kind, protocol = request.param.split("-")
    factory = make_client if kind == "sync" else make_async_client
    return factory(int(protocol))


# ---------------------------------------------------------------------------------------- real server
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _missing(reason: str) -> None:
    if os.environ.get("FAKE_STREAMS_REQUIRE_REAL", "").strip() not in ("", "0", "false", "no"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def real_redis():
    """``make(protocol=2, **kw)`` → a client of a real redis-server (flushed before each use by the caller)."""
    binary = os.environ.get("FAKE_STREAMS_REDIS_SERVER") or shutil.which("redis-server")
    if not binary:
        _missing("redis-server not found")
    port, workdir = _free_port(), tempfile.mkdtemp(prefix="fake-streams-real-")
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    probe = redis.Redis(port=port)
    deadline = time.monotonic() + 15  # real-time: waiting for a subprocess to accept connections
    while True:
        try:
            probe.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                _missing("redis-server did not start")
            time.sleep(0.05)  # real-time: bounded wait for redis-server to accept connections
    made: List[Any] = []

    def make(protocol: int = 2, **kwargs: Any) -> Any:
        client = redis.Redis(connection_pool=redis.ConnectionPool(port=port, **pool_kwargs(protocol, **kwargs)))
        made.append(client)
        return client

    make.version = probe.info("server")["redis_version"]
    probe.close()
    probe.connection_pool.disconnect()  # redis-py 4.x's close() leaves the pool's connection open (CLIENT LIST)
    yield make
    for client in made:
        client.close()
    proc.terminate()
    proc.wait(10)
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def real_pair(real_redis):
    """``(fake_make, real_make)`` for profile "7.0" vs the real server, both flushed."""
    fake = FakeStreamsServer(version="7.0")
    made: List[Any] = []

    def fake_make(protocol: int = 2, **kwargs: Any) -> Any:
        client = fake.client(**pool_kwargs(protocol, **kwargs))
        made.append(client)
        return client

    real_redis().flushall()
    yield fake_make, real_redis
    for client in made:
        client.close()
    fake.close()
    assert not fake.internal_errors


def outcome(call: Callable[[], Any]) -> Any:
    """The reply of ``call()``, or ``(exception class name, message)``: comparable between fake and real."""
    try:
        return call()
    except redis.RedisError as exc:
        return type(exc).__name__, str(exc)
