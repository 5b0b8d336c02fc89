"""Server hooks around blocked clients: close / fixture teardown, ``connected``, ``faults`` (fake only)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any, List, Optional

import pytest
import redis
import redis.client
from redis.backoff import ConstantBackoff, NoBackoff
from redis.retry import Retry

from fake_streams import FakeStreamsAsyncConnection, FakeStreamsConnection, FakeStreamsServer, ManualClock
from tests.conftest import START_MS, pool_kwargs
from tests.support.redis_compat import REDIS_PY, aclose

from .conftest import ASYNC_NO_RETRY, NO_RETRY, WAIT_S, in_thread


def _fake_threads() -> List[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("fake-streams")]


def _block_everywhere(server: FakeStreamsServer, n_sync: int, n_async: int) -> tuple:
    """``n_sync`` threads and ``n_async`` asyncio tasks (on a loop in its own thread), all blocked."""
    results: List[Any] = []
    threads = []
    for i in range(n_sync):
        client = server.client(**pool_kwargs(2, **NO_RETRY))
        thread, out = in_thread(lambda c=client, k=f"s{i}": c.xread({k: "$"}, block=0))
        threads.append((thread, out))
    loop_done: List[Any] = []
    tasks_left: List[int] = []

    def run_loop() -> None:
        async def main() -> None:
            clients = [server.async_client(**pool_kwargs(3, **NO_RETRY)) for _ in range(n_async)]
            tasks = [asyncio.ensure_future(c.xreadgroup("g", f"c{i}", {"gs": ">"}, block=0))
                     for i, c in enumerate(clients)]
            done = await asyncio.gather(*tasks, return_exceptions=True)
            loop_done.extend(type(x).__name__ for x in done)
            for c in clients:
                await aclose(c)
            tasks_left.append(len([t for t in asyncio.all_tasks() if t is not asyncio.current_task()]))

        asyncio.run(main())

    server.client().xgroup_create("gs", "g", id="$", mkstream=True)
    loop_thread = threading.Thread(target=run_loop, daemon=True)
    loop_thread.start()
    server.wait_until_blocked(n_sync + n_async, WAIT_S)
    return threads, loop_thread, loop_done, tasks_left, results


@pytest.mark.parametrize("clock", ["manual", "system"])
def test_close_releases_every_blocked_client_within_a_second_and_leaves_no_thread_or_task(clock):
    before = set(_fake_threads())
    server = FakeStreamsServer(clock=ManualClock(START_MS) if clock == "manual" else None)
    threads, loop_thread, loop_done, tasks_left, _ = _block_everywhere(server, 3, 3)
    start = time.monotonic()
    server.close()
    for thread, _ in threads:
        thread.join(1.0)  # real-time: every blocked call must end within 1 s of close()
    loop_thread.join(1.0)  # real-time: idem for the asyncio tasks
    assert time.monotonic() - start < 1.5
    assert all(not t.is_alive() for t, _ in threads) and not loop_thread.is_alive()
    assert [out for _, out in threads] == [[("ConnectionError",)]] * 3
    assert loop_done == ["ConnectionError"] * 3
    assert tasks_left == [0]
    assert set(_fake_threads()) <= before  # the timer thread (system clock, safety net) is gone
    assert server.blocked() == []


def test_fixture_teardown_releases_blocked_clients_within_a_second(fake_redis_streams_factory):
    """The plugin's handle closes its servers at teardown (``handle.close()`` is what the fixture calls)."""
    before = set(_fake_threads())
    handle = fake_redis_streams_factory(patch=False)
    threads, loop_thread, loop_done, tasks_left, _ = _block_everywhere(handle.server, 2, 2)
    start = time.monotonic()
    handle.close()
    for thread, _ in threads:
        thread.join(1.0)  # real-time: every blocked call must end within 1 s of teardown
    loop_thread.join(1.0)  # real-time: idem for the asyncio tasks
    assert time.monotonic() - start < 1.5
    assert all(not t.is_alive() for t, _ in threads) and not loop_thread.is_alive()
    assert loop_done == ["ConnectionError"] * 2 and tasks_left == [0]
    assert set(_fake_threads()) <= before


def test_connected_false_fails_blocked_and_next_commands_then_true_recovers(server, make_client):
    reader, other = make_client(**NO_RETRY), make_client(**NO_RETRY)
    other.ping()
    thread, results = in_thread(lambda: reader.xread({"s": "$"}, block=0))
    server.wait_until_blocked(1, WAIT_S)
    server.connected = False
    assert server.connected is False
    thread.join(WAIT_S)  # real-time: the released reader thread returns
    assert results == [("ConnectionError",)]
    with pytest.raises(redis.ConnectionError):
        other.ping()
    with pytest.raises(redis.ConnectionError):
        make_client(**NO_RETRY).ping()  # new connections are refused too
    server.connected = True
    assert other.ping() is True and reader.xadd("s", {"f": "v"}, id="1-1") == b"1-1"


class _Recorder:
    """A ``faults`` object: records every command; answers or drops the ones it is told to."""

    def __init__(self) -> None:
        self.seen: List[tuple] = []
        self.error_for: Optional[bytes] = None
        self.drop_for: Optional[bytes] = None
        self.thread_holds_lock: List[bool] = []
        self.lock: Any = None

    def on_command(self, client_id: int, argv: List[bytes]) -> Optional[str]:
        self.seen.append((client_id, argv[0].upper()))
        if self.lock is not None:  # called outside the server lock
            free = self.lock.acquire(blocking=False)
            if free:
                self.lock.release()
            self.thread_holds_lock.append(not free)
        name = argv[0].upper()
        if name == self.drop_for:
            self.drop_for = None
            raise redis.exceptions.ConnectionError("dropped by the test")
        if name == self.error_for:
            self.error_for = None
            return "ERR injected failure"
        return None


def test_faults_hook_sees_every_command_and_can_answer_or_drop(server, make_client):
    faults = server.faults = _Recorder()
    faults.lock = server.backend.lock
    r = make_client(**NO_RETRY)
    my_id = r.client_id()
    r.set("k", "v")
    r.xadd("s", {"f": "v"}, id="1-1")
    assert (my_id, b"SET") in faults.seen and (my_id, b"XADD") in faults.seen
    assert not any(faults.thread_holds_lock)
    faults.error_for = b"XLEN"
    with pytest.raises(redis.ResponseError, match="injected failure"):
        r.xlen("s")
    faults.drop_for = b"XADD"
    with pytest.raises(redis.ConnectionError, match="dropped by the test"):
        r.xadd("s", {"f": "w"}, id="2-1")
    assert r.xlen("s") == 1  # reconnected; the dropped XADD never ran
    assert r.client_id() != my_id


def test_faults_hook_drop_with_redis_py_retry_reconnects_and_resends(server, make_client):
    faults = server.faults = _Recorder()
    # redis-py < 6 retries only the errors named in retry_on_error (none by default)
    legacy = {"retry_on_error": [redis.ConnectionError]} if REDIS_PY < (6, 0) else {}
    r = make_client(retry=Retry(NoBackoff(), 1), **legacy)
    r.ping()
    faults.drop_for = b"XADD"
    assert r.xadd("s", {"f": "v"}, id="1-1") == b"1-1"
    assert [name for _, name in faults.seen].count(b"XADD") == 2


@pytest.mark.asyncio
async def test_faults_hook_for_asyncio_clients(server, make_async_client):
    faults = server.faults = _Recorder()
    r = make_async_client(3, **NO_RETRY)
    faults.error_for = b"XADD"
    with pytest.raises(redis.ResponseError, match="injected failure"):
        await r.xadd("s", {"f": "v"}, id="1-1")
    faults.drop_for = b"XLEN"
    with pytest.raises(redis.ConnectionError):
        await r.xlen("s")
    assert await r.xlen("s") == 0


@pytest.mark.parametrize("kind", ["sync", "asyncio"])
def test_close_ends_a_blocked_call_before_the_retry_backoff(kind):
    """A read failing because the server closed gives up the connection's retries at once: redis-py sleeps its
    backoff *before* the reconnect that would refuse, so with a 1.5 s backoff the call would otherwise end only
    after 1.5 s (redis-py 6–7's default backoff sleeps up to 2 s before its first retry)."""
    legacy = {"retry_on_error": [redis.ConnectionError]} if REDIS_PY < (6, 0) else {}
    server = FakeStreamsServer(clock=ManualClock(START_MS))
    retry = Retry(ConstantBackoff(1.5), 3)
    if kind == "sync":
        client = server.client(retry=retry, **legacy)
        call = lambda: client.xread({"s": "$"}, block=0)  # noqa: E731
    else:
        async_client = server.async_client(retry=retry, **legacy)

        def call():
            async def read():
                try:
                    return await async_client.xread({"s": "$"}, block=0)
                finally:
                    await aclose(async_client)
            return asyncio.run(read())
    thread, results = in_thread(call)
    server.wait_until_blocked(1, WAIT_S)
    start = time.monotonic()
    server.close()
    thread.join(WAIT_S)  # real-time: the call ends; the assertion below bounds how soon
    assert not thread.is_alive() and time.monotonic() - start < 1.0
    assert results == [("ConnectionError",)]


def test_close_ends_a_call_that_redis_py_default_retry_would_keep_retrying():
    """redis.Redis(...) retries ConnectionError (with a nested connect retry and backoff); reconnecting to a
    closed fake gives up at once, so the blocked call still ends within a second of close()."""
    from fake_streams import FakeStreamsConnection

    from .conftest import _pool_class

    server = FakeStreamsServer(clock=ManualClock(START_MS))
    with _pool_class(redis.client, FakeStreamsConnection.bind(server), {}):
        client = redis.Redis(host="gone", port=1)
    thread, results = in_thread(lambda: client.xread({"s": "$"}, block=0))
    server.wait_until_blocked(1, WAIT_S)
    start = time.monotonic()
    server.close()
    thread.join(1.0)  # real-time: the call must end within 1 s of close()
    assert not thread.is_alive() and time.monotonic() - start < 1.0
    assert results == [("ConnectionError",)]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_down_server_refuses_connections_with_the_os_text_as_a_real_address():
    """``connected = False`` is a server that is down: a new connection is refused as the OS refuses one where
    nothing listens (redis-py's own text, ``Error 111 connecting to host:port. Connection refused.``), sync and
    asyncio, compared with a real connection attempt to a port nobody listens on."""
    port = _free_port()
    texts = []
    for connection_class, async_class in ((None, None), (FakeStreamsConnection, FakeStreamsAsyncConnection)):
        server = FakeStreamsServer()
        server.connected = False
        sync_kwargs = {} if connection_class is None else {"connection_class": connection_class.bind(server)}
        async_kwargs = {} if async_class is None else {"connection_class": async_class.bind(server)}
        client = redis.Redis(connection_pool=redis.ConnectionPool(host="127.0.0.1", port=port, **sync_kwargs,
                                                                  **NO_RETRY))
        with pytest.raises(redis.ConnectionError) as sync_error:
            client.ping()
        client.close()

        async def attempt(async_kwargs=async_kwargs):
            aclient = redis.asyncio.Redis(connection_pool=redis.asyncio.ConnectionPool(
                host="127.0.0.1", port=port, **async_kwargs, **ASYNC_NO_RETRY))
            try:
                with pytest.raises(redis.ConnectionError) as async_error:
                    await aclient.ping()
                return str(async_error.value)
            finally:
                await aclose(aclient)

        texts.append((str(sync_error.value), asyncio.run(attempt())))
        server.close()
    real, fake = texts
    assert fake == real and "Connection refused" in real[0]
