"""Blocking reads on the fake and on real servers: fixtures and helpers.

* ``pair`` (tests/conformance): raw commands on both sides; ``reader = pair.connect()`` sends a blocking
  command on each side, ``pair.wait_blocked(n)`` waits until both servers report n blocked clients.
* ``duo``: one *redis-py client* scenario run against a real server and against a fake with a SystemClock
  (deadlines in real time, as on the real server), for what only shows through a real client:
  socket_timeout, Retry re-sends, close from another thread, task cancellation. ``duo.run(scenario)``
  runs ``scenario(side)`` on both sides at the same time (one thread each) and returns both
  :class:`Outcome` s. Each side counts the commands its connections sent (``side.sent``).

The fake of ``pair`` has a ManualClock set to the real server's TIME before each command it gets:
:func:`let_block_time_out` waits (bounded, real time) until the real server's own BLOCK deadline has
passed and moves the fake's clock there, so both time out.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, List, Optional

import pytest
import redis
import redis.asyncio
import redis.asyncio.client
import redis.client
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

from fake_streams import FakeStreamsConnection, FakeStreamsServer
from fake_streams.connection import FakeStreamsAsyncConnection
from tests.conformance import conftest as _conformance
from tests.conformance.conftest import TARGETS, conformance_target, oracle_pool, pair  # noqa: F401  (fixtures)
from tests.conformance.oracles import Target
from tests.conformance.replies import REPEATED_KEYS

REDIS_PY = tuple(int(p) for p in redis.__version__.split(".")[:2])
#: client kwargs for one send and no re-send (redis-py >= 6 retries by default), sync and asyncio
NO_RETRY = {"retry": Retry(NoBackoff(), 0)}
ASYNC_NO_RETRY = {"retry": AsyncRetry(NoBackoff(), 0)}
#: bound of every real-time wait in this directory (seconds)
WAIT_S = 10.0


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "pair" in names or "duo" in names:
            item.add_marker(pytest.mark.real)


# ------------------------------------------------------------------------------------------ pair
def let_block_time_out(p: Any, blocked: int = 1) -> None:
    """The real side's BLOCK deadline passes in real time; the fake's ManualClock is then moved past the
    fake's own deadline (the latest of the fake's blocked clients), so both answer the timeout."""
    if p.server is None:  # self-check mode: only the real server
        return
    clients = p.server.wait_until_blocked(blocked, WAIT_S)
    deadlines = [c.deadline_ms for c in clients if c.deadline_ms is not None]
    assert deadlines, f"no fake client blocked with a deadline: {clients}"
    target = max(deadlines)
    bound = time.monotonic() + WAIT_S
    while p.oracle.time_ms() < target:
        assert time.monotonic() < bound, "the real server's clock did not reach the BLOCK deadline"
        time.sleep(max(0.001, (target - p.oracle.time_ms()) / 1000))  # real-time: the real server's BLOCK timeout
    p.sync_clock()


def stream_pairs(reply: Any) -> Any:
    """XREAD / XREADGROUP reply as ``[[key, entries], ...]`` in either protocol (RESP3 sends a map)."""
    if isinstance(reply, dict):
        if REPEATED_KEYS in reply:  # a RESP3 map naming a key twice, as captured (tests/conformance/replies.py)
            return reply[REPEATED_KEYS]
        return [[k, v] for k, v in reply.items()]
    return reply


# ------------------------------------------------------------------------------------------- duo
@dataclass
class Outcome:
    """What a scenario gave on one side: its value or ``(exception class name,)``, time taken, commands sent."""

    value: Any
    elapsed: float
    sent: List[bytes]

    def count(self, command: bytes) -> int:
        return sum(1 for name in self.sent if name == command)


def _name(args: tuple) -> bytes:
    first = args[0] if args else b""
    first = first if isinstance(first, bytes) else str(first).encode()
    return first.split(b" ")[0].upper()


@dataclass
class Side:
    """One side of a ``duo``: builds clients whose connections record every command name they send."""

    name: str  # "real" / "fake"
    protocol: int
    server: Optional[FakeStreamsServer]
    port: int
    sent: List[bytes] = field(default_factory=list)
    made: List[Any] = field(default_factory=list)

    def _classes(self) -> tuple:
        sent = self.sent
        if self.server is None:
            sync_base, async_base = redis.Connection, redis.asyncio.Connection
        else:
            sync_base = FakeStreamsConnection.bind(self.server)
            async_base = FakeStreamsAsyncConnection.bind(self.server)

        class Counting(sync_base):  # type: ignore[valid-type, misc]
            def send_command(self, *args: Any, **kwargs: Any) -> None:
                sent.append(_name(args))
                super().send_command(*args, **kwargs)

        class AsyncCounting(async_base):  # type: ignore[valid-type, misc]
            async def send_command(self, *args: Any, **kwargs: Any) -> None:
                sent.append(_name(args))
                await super().send_command(*args, **kwargs)

        return Counting, AsyncCounting

    def _kwargs(self, kwargs: dict) -> dict:
        kwargs.setdefault("host", "127.0.0.1")
        kwargs.setdefault("port", self.port)
        if REDIS_PY >= (5, 0):
            kwargs.setdefault("protocol", self.protocol)
        return kwargs

    def client(self, parser_class: Any = None, **kwargs: Any) -> Any:
        """``redis.Redis(host, port, **kwargs)``: the client builds its own pool and default Retry
        (``parser_class`` goes to the pool, which redis.Redis does not accept)."""
        extra = {"parser_class": parser_class} if parser_class is not None else {}
        with _pool_class(redis.client, self._classes()[0], extra):
            client = redis.Redis(**self._kwargs(kwargs))
        self.made.append(client)
        return client

    def async_client(self, **kwargs: Any) -> Any:
        """``redis.asyncio.Redis(host, port, **kwargs)`` (own pool and default Retry)."""
        with _pool_class(redis.asyncio.client, self._classes()[1], {}):
            client = redis.asyncio.Redis(**self._kwargs(kwargs))
        self.made.append(client)
        return client

    def close(self) -> None:
        for client in self.made:
            if isinstance(client, redis.Redis):
                with contextlib.suppress(Exception):
                    client.close()


_POOL_PATCH = threading.Lock()  # the two sides build clients at the same time


@contextlib.contextmanager
def _pool_class(module: Any, connection_class: type, extra: dict) -> Iterator[None]:
    """While a client is built: its ConnectionPool gets ``connection_class`` (the client's own Retry stays)."""
    with _POOL_PATCH:
        original = module.ConnectionPool

        class Pool(original):  # type: ignore[valid-type, misc]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                kwargs["connection_class"] = connection_class
                kwargs.update(extra)
                super().__init__(*args, **kwargs)

        module.ConnectionPool = Pool
        try:
            yield
        finally:
            module.ConnectionPool = original


def outcome_of(call: Callable[[], Any]) -> Any:
    """``call()``'s value, or ``(exception class name,)`` (messages name hosts and differ by side)."""
    try:
        value = call()
        if inspect.isawaitable(value):
            value = asyncio.run(value)
        return value
    except (redis.RedisError, ValueError, asyncio.CancelledError) as exc:
        return (type(exc).__name__,)


class Duo:
    """A real server and a SystemClock fake, same profile and protocol (see the module docstring)."""

    def __init__(self, target: Target, oracle: Any) -> None:
        self.target = target
        self.oracle = oracle
        self.protocol = target.protocol
        self.profile = target.profile
        self.server = FakeStreamsServer(version=target.profile)
        self.real = Side("real", target.protocol, None, oracle.port)
        self.fake = Side("fake", target.protocol, self.server, 0)

    def blocked(self, side: Side) -> int:
        if side.server is None:
            return self.oracle.blocked_clients()
        return len(side.server.blocked())

    def wait_blocked(self, side: Side, n: int = 1) -> None:
        """Until ``n`` clients are blocked on ``side``'s server (fake: event; real: INFO, bounded)."""
        if side.server is not None:
            side.server.wait_until_blocked(n, WAIT_S)
            return
        bound = time.monotonic() + WAIT_S
        while self.oracle.blocked_clients() < n:
            assert time.monotonic() < bound, f"{n} client(s) never blocked on the real server"
            time.sleep(0.002)  # real-time: polling INFO of another process, bounded above

    async def wait_blocked_async(self, side: Side, n: int = 1) -> None:
        """:meth:`wait_blocked` from a coroutine, then one yield so the reading task reaches its read.

        A real server can report the client blocked before the client's task has resumed from
        redis-py's send; Python < 3.12's ``asyncio.wait_for`` (that send under socket_timeout) swallows
        a cancel that lands then, so let the task step past it first. (The fake needs no such yield:
        its connection sends without wait_for; test_cancellation.py cancels it at once.)
        """
        await asyncio.to_thread(self.wait_blocked, side, n)
        await asyncio.sleep(0)

    def run(self, scenario: Callable[[Side], Any]) -> tuple:
        """``(real, fake)`` :class:`Outcome` s of ``scenario(side)`` run on both sides concurrently."""
        results: dict = {}

        def go(side: Side) -> None:
            start = time.monotonic()
            try:
                value = outcome_of(lambda: scenario(side))
            except BaseException as exc:  # a bug in the scenario or an assertion in it: show it
                value = ("scenario raised", repr(exc))
            results[side.name] = Outcome(value, time.monotonic() - start, list(side.sent))

        threads = [threading.Thread(target=go, args=(side,), daemon=True) for side in (self.real, self.fake)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)  # real-time: a scenario's own waits are bounded; this is the outer bound
        assert not any(t.is_alive() for t in threads), f"a scenario hung: {results}"
        return results["real"], results["fake"]

    def close(self) -> None:
        self.real.close()
        self.fake.close()
        self.server.close()
        assert not self.server.internal_errors, self.server.internal_errors


_DUO_TARGETS = [t for t in TARGETS if t.main]


@pytest.fixture(params=[_conformance.target_param(t) for t in _DUO_TARGETS])
def duo(request, oracle_pool):  # noqa: F811  (oracle_pool is a fixture)
    target = request.param
    oracle = _conformance.oracle_of(oracle_pool, target)
    if target.profile is None:
        _conformance.missing_oracle(target.skip_reason or f"no fake profile for {target.label}")
    oracle.reset()
    d = Duo(target, oracle)
    try:
        yield d
    finally:
        d.close()


def in_thread(fn: Callable[[], Any]) -> tuple:
    """Run ``fn`` in a daemon thread; returns ``(thread, results)`` where results gets its outcome."""
    results: List[Any] = []
    thread = threading.Thread(target=lambda: results.append(outcome_of(fn)), daemon=True)
    thread.start()
    return thread, results
