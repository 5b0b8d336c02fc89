"""redis-py client behaviour around a blocked read, fake vs real (integration doc §3.2 rows a–h).

Each scenario runs the same redis-py code against a real server and against a fake (SystemClock), both at
once, and compares what the caller sees (value or exception class) and how many XREADs were sent (redis-py's
Retry re-sends on TimeoutError / ConnectionError). BLOCK values are small; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import redis

from tests.support.redis_compat import aclose

from .conftest import _DUO_TARGETS, NO_RETRY, REDIS_PY, WAIT_S, outcome_of

try:
    from redis._parsers import _RESP2Parser as PythonParser
except ImportError:  # pragma: no cover - redis-py 4.x
    from redis.connection import PythonParser  # type: ignore[no-redef]

#: redis-py 4.x: no default Retry (one send), and a read released by a close() elsewhere ends differently;
#: the scenarios below still compare fake and real exactly (assert_same), only the expected outcome differs.
REDIS_PY_4 = REDIS_PY < (5, 0)
#: redis-py >= 6 gives every connection a Retry that re-sends after a TimeoutError or ConnectionError; before 6.0
#: the default is no retry, and the client re-sends only the errors named in ``retry_on_error`` (none by default)
DEFAULT_RETRY = REDIS_PY >= (6, 0)
try:
    from redis.utils import HIREDIS_AVAILABLE  # redis-py's default parser is hiredis when it is installed
except ImportError:  # pragma: no cover - very old redis-py
    HIREDIS_AVAILABLE = False


def once(duo) -> None:
    """Slow scenarios (redis-py's default Retry: ~11 sends with backoff) run for one target only."""
    if duo.target is not _DUO_TARGETS[0]:
        pytest.skip("slow scenario: checked on the first oracle/protocol only")


def assert_same(real, fake, command: bytes = b"XREAD") -> None:
    assert real.value == fake.value, f"real {real.value!r} vs fake {fake.value!r}"
    assert real.count(command) == fake.count(command), f"sends: real {real.sent} vs fake {fake.sent}"


# ----------------------------------------------------------------------------- a) socket_timeout
def test_a_socket_timeout_shorter_than_block_raises_timeout_without_retry(duo):
    """Row a': TimeoutError after socket_timeout, one send."""
    real, fake = duo.run(lambda side: side.client(socket_timeout=0.1, **NO_RETRY).xread({"s": "$"}, block=1500))
    assert_same(real, fake)
    assert fake.value == ("TimeoutError",) and fake.count(b"XREAD") == 1
    assert fake.elapsed < 1.0


@pytest.mark.slow  # ~5 s of redis-py backoff between re-sends
def test_a_socket_timeout_with_the_default_retry_resends_like_a_real_server(duo):
    """Row a: redis-py's own default Retry re-sends after each TimeoutError, then gives up."""
    once(duo)
    real, fake = duo.run(lambda side: side.client(socket_timeout=0.05).xread({"s": "$"}, block=1500))
    assert_same(real, fake)
    assert fake.value == ("TimeoutError",)
    if not DEFAULT_RETRY:
        assert fake.count(b"XREAD") == 1
        return
    assert fake.count(b"XREAD") >= 2  # 11 with redis-py 8 (retries=10)


@pytest.mark.realtime
def test_a_block_shorter_than_socket_timeout_returns_nil(duo):
    real, fake = duo.run(lambda side: side.client(socket_timeout=2, **NO_RETRY).xread({"s": "$"}, block=150))
    assert_same(real, fake)
    assert fake.value in ([], {})
    assert 0.1 < fake.elapsed < 1.5


# ------------------------------------------------------------------------ b) close from a thread
@pytest.mark.parametrize("parser", ["default", "python"])
@pytest.mark.parametrize("retry", ["none", "default"])
def test_b_close_from_another_thread_releases_the_blocked_call(duo, parser, retry):
    """Row b (and e14): close() in another thread during BLOCK; outcome per parser and retry policy."""
    kwargs: dict = {"socket_timeout": 5}
    if parser == "python":
        kwargs["parser_class"] = PythonParser
    if retry == "none":
        kwargs.update(NO_RETRY)

    def scenario(side):
        r = side.client(**kwargs)
        r.ping()
        thread, results = _in_thread(lambda: r.xread({"bs": "$"}, block=400))
        duo.wait_blocked(side)
        # real-time: the reader thread must be inside its socket read, which no server state shows (a close
        # that lands between send and read is a redis-py race with its own outcomes); e14 waited 0.2 s
        time.sleep(0.05)  # real-time: see the comment above
        closer = outcome_of(r.close)  # never raises in the closing thread
        thread.join(WAIT_S)  # real-time: the reader thread ends (re-sent reads block 400 ms more)
        assert not thread.is_alive(), "the blocked read was not released"
        return closer, results[0]

    real, fake = duo.run(scenario)
    assert_same(real, fake)
    assert fake.value[0] is None, fake.value
    if REDIS_PY_4:  # the closed connection's read ends with an empty reply, not retried
        assert fake.value[1] in ([], {}) and fake.count(b"XREAD") == 1
    elif parser == "python" or not HIREDIS_AVAILABLE:  # the pure-Python parser (chosen, or the default without
        # hiredis): the closed buffer's ValueError is not retried
        assert fake.value[1] == ("ValueError",) and fake.count(b"XREAD") == 1
    elif retry == "none":
        assert fake.value[1] == ("ConnectionError",) and fake.count(b"XREAD") == 1
    else:  # hiredis: ConnectionError, retried: the XREAD is sent again and blocks for its whole BLOCK
        assert fake.value[1] in ([], {}) and fake.count(b"XREAD") == 2


def test_b_pool_disconnect_from_another_thread_releases_the_blocked_call(duo):
    def scenario(side):
        r = side.client(socket_timeout=5, **NO_RETRY)
        thread, results = _in_thread(lambda: r.xread({"bs": "$"}, block=0))
        duo.wait_blocked(side)
        time.sleep(0.05)  # real-time: the reader must be inside its socket read (see the test above)
        r.connection_pool.disconnect()
        thread.join(WAIT_S)  # real-time: the reader thread ends
        return results[0]

    real, fake = duo.run(scenario)
    assert_same(real, fake)
    assert isinstance(fake.value, tuple)  # an exception (ConnectionError with hiredis, ValueError without)


# ----------------------------------------------------------------------------------- c) wake-up
def test_c_xadd_from_another_thread_wakes_the_reader(duo):
    def scenario(side):
        reader, writer = side.client(**NO_RETRY), side.client(**NO_RETRY)
        thread, results = _in_thread(lambda: reader.xread({"bs": "$"}, block=0))
        duo.wait_blocked(side)
        writer.xadd("bs", {"k": "v"}, id="7-1")
        thread.join(WAIT_S)  # real-time: the woken reader thread returns
        return results[0]

    real, fake = duo.run(scenario)
    assert_same(real, fake)
    assert fake.elapsed < 2


@pytest.mark.realtime
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_block_0_waits_until_data_arrives(duo, mode):
    """BLOCK 0 has no deadline: after a while it is still blocked, then one XADD serves it."""

    def sync_scenario(side):
        reader, writer = side.client(**NO_RETRY), side.client(**NO_RETRY)
        thread, results = _in_thread(lambda: reader.xread({"s": "$"}, block=0))
        duo.wait_blocked(side)
        thread.join(0.3)  # real-time: BLOCK 0 must not end on its own
        still = thread.is_alive()
        writer.xadd("s", {"f": "v"}, id="1-1")
        thread.join(WAIT_S)  # real-time: the woken reader thread returns
        return still, results[0]

    async def async_scenario(side):
        reader, writer = side.async_client(**NO_RETRY), side.async_client(**NO_RETRY)
        try:
            task = asyncio.ensure_future(reader.xread({"s": "$"}, block=0))
            await duo.wait_blocked_async(side)
            await asyncio.sleep(0.3)  # real-time: BLOCK 0 must not end on its own
            still = not task.done()
            await writer.xadd("s", {"f": "v"}, id="1-1")
            return still, await asyncio.wait_for(task, WAIT_S)
        finally:
            await aclose(reader)
            await aclose(writer)

    real, fake = duo.run(sync_scenario if mode == "sync" else async_scenario)
    assert_same(real, fake)
    assert fake.value[0] is True


# --------------------------------------------------------------------------------------- asyncio
def test_d_async_socket_timeout_shorter_than_block_raises_timeout_without_retry(duo):
    async def scenario(side):
        r = side.async_client(socket_timeout=0.1, **NO_RETRY)
        try:
            return await r.xread({"s": "$"}, block=1500)
        finally:
            await aclose(r)

    real, fake = duo.run(scenario)
    assert_same(real, fake)
    assert fake.value == ("TimeoutError",) and fake.elapsed < 1.0


@pytest.mark.slow  # ~5 s of redis-py backoff between re-sends
def test_d_async_socket_timeout_with_the_default_retry_resends_like_a_real_server(duo):
    once(duo)

    async def scenario(side):
        r = side.async_client(socket_timeout=0.05)
        try:
            return await r.xread({"s": "$"}, block=1500)
        finally:
            await aclose(r)

    real, fake = duo.run(scenario)
    assert_same(real, fake)
    assert fake.value == ("TimeoutError",) and fake.count(b"XREAD") >= (2 if DEFAULT_RETRY else 1)


def test_e_async_xadd_from_another_task_wakes_the_reader(duo):
    async def scenario(side):
        reader, writer = side.async_client(**NO_RETRY), side.async_client(**NO_RETRY)
        try:
            task = asyncio.ensure_future(reader.xread({"bs": "$"}, block=0))
            await duo.wait_blocked_async(side)
            await writer.xadd("bs", {"k": "async"}, id="3-1")
            return await asyncio.wait_for(task, WAIT_S)
        finally:
            await aclose(reader)
            await aclose(writer)

    real, fake = duo.run(scenario)
    assert_same(real, fake)


def test_f_cancelled_async_read_unblocks_and_the_client_stays_usable(duo):
    async def scenario(side):
        r = side.async_client(**NO_RETRY)
        try:
            task = asyncio.ensure_future(r.xread({"bs": "$"}, block=0))
            await duo.wait_blocked_async(side)
            task.cancel()
            cancelled = "not cancelled"
            try:
                await task
            except asyncio.CancelledError:
                cancelled = "CancelledError"
            after = await r.xadd("bs", {"k": "v"}, id="1-1")
            await asyncio.to_thread(_wait_unblocked, duo, side)
            return cancelled, after, await r.xlen("bs")
        finally:
            await aclose(r)

    real, fake = duo.run(scenario)
    assert_same(real, fake)
    assert fake.value[0] == "CancelledError"
    assert duo.server.blocked() == []


@pytest.mark.realtime
def test_g_aclose_from_another_task_releases_the_blocked_read(duo):
    """Row g: the read fails with ConnectionError; redis-py's Retry re-sends it (so it blocks again)."""

    async def scenario(side):
        r = side.async_client(socket_timeout=5)
        task = asyncio.ensure_future(r.xread({"bs": "$"}, block=300))
        await duo.wait_blocked_async(side)
        await aclose(r)
        return await asyncio.wait_for(task, WAIT_S)

    real, fake = duo.run(scenario)
    assert_same(real, fake)
    if not DEFAULT_RETRY:  # no default Retry (4.x also closes with close()): the read fails
        assert fake.value == ("ConnectionError",) and fake.count(b"XREAD") == 1
        return
    assert fake.value in ([], {}) and fake.count(b"XREAD") == 2


def test_h_sync_xadd_in_a_thread_wakes_an_async_reader(duo):
    async def scenario(side):
        reader = side.async_client(**NO_RETRY)
        writer = side.client(**NO_RETRY)
        try:
            task = asyncio.ensure_future(reader.xread({"bs": "$"}, block=0))
            await duo.wait_blocked_async(side)
            await asyncio.to_thread(writer.xadd, "bs", {"k": "from-thread"}, id="5-1")
            return await asyncio.wait_for(task, WAIT_S)
        finally:
            await aclose(reader)

    real, fake = duo.run(scenario)
    assert_same(real, fake)


# ----------------------------------------------------------------------- released with an error
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("removal", ["DEL", "XGROUP DESTROY", "SET"])
def test_blocked_xreadgroup_is_released_when_its_key_or_group_goes(duo, mode, removal):
    """DEL / XGROUP DESTROY / SET while an XREADGROUP is blocked: the profile's error, sync and asyncio."""

    def setup(writer):
        writer.xadd("tasks", {"n": "1"}, id="1-1")
        writer.xgroup_create("tasks", "workers", id="$")

    def remove(writer):
        if removal == "DEL":
            writer.delete("tasks")
        elif removal == "SET":
            writer.set("tasks", "x")
        else:
            writer.xgroup_destroy("tasks", "workers")

    def sync_scenario(side):
        reader, writer = side.client(**NO_RETRY), side.client(**NO_RETRY)
        setup(writer)
        results: list = []

        def read():
            try:
                results.append(reader.xreadgroup("workers", "alice", {"tasks": ">"}, block=0))
            except redis.ResponseError as exc:
                results.append(str(exc))

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        duo.wait_blocked(side)
        remove(writer)
        thread.join(WAIT_S)  # real-time: the released reader thread returns
        return results[0], reader.ping()

    async def async_scenario(side):
        reader, writer = side.async_client(**NO_RETRY), side.client(**NO_RETRY)
        try:
            setup(writer)
            task = asyncio.ensure_future(reader.xreadgroup("workers", "alice", {"tasks": ">"}, block=0))
            await duo.wait_blocked_async(side)
            await asyncio.to_thread(remove, writer)
            try:
                got = await asyncio.wait_for(task, WAIT_S)
            except redis.ResponseError as exc:
                got = str(exc)
            return got, await reader.ping()
        finally:
            await aclose(reader)

    real, fake = duo.run(sync_scenario if mode == "sync" else async_scenario)
    assert_same(real, fake)


# ------------------------------------------------------------------------------------------ helpers
def _in_thread(fn):
    results: list = []
    thread = threading.Thread(target=lambda: results.append(outcome_of(fn)), daemon=True)
    thread.start()
    return thread, results


def _wait_unblocked(duo, side) -> None:
    bound = time.monotonic() + WAIT_S
    while duo.blocked(side):
        assert time.monotonic() < bound, "the client stayed blocked"
        time.sleep(0.002)  # real-time: polling the servers' blocked-client count, bounded above
