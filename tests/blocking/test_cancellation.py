"""Ending a blocked call from outside: task cancellation under socket_timeout, CLIENT KILL, cancelled
fakeredis-served blocking commands (issue 13).

The client-visible outcomes are compared with a real server (duo, see conftest.py); what only the fake
has (fakeredis's wake-up callbacks, its registrations) is checked on the fake. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from typing import Any, List

import pytest
import redis

from fake_streams import FakeStreamsServer
from tests.support.redis_compat import aclose

from .conftest import ASYNC_NO_RETRY, NO_RETRY, WAIT_S, outcome_of


# ------------------------------------------------------------------- cancellation under socket_timeout
@pytest.mark.parametrize("path", ["direct", "dispatch"])
def test_cancelling_a_task_blocked_in_xreadgroup_with_socket_timeout_ends_it_at_once(duo, path):
    """Five tries each: the cancel reaches the blocked read at once (no TimeoutError after socket_timeout).
    ``dispatch``: the direct path off, as when a fault rule is armed (the command goes through fakeredis).

    The fake is cancelled the moment it reports the client blocked. A real server reports it once the
    command has arrived, which can be before the sending task has resumed from redis-py's send (an
    ``asyncio.wait_for`` under socket_timeout; Python < 3.12's loses a cancel that lands then, and the task
    ends socket_timeout later with TimeoutError): the real side lets its task reach its read first."""
    duo.server.fast_path = path == "direct"

    async def scenario(side):
        setup = side.async_client(**ASYNC_NO_RETRY)
        await setup.xgroup_create("jobs", "g", id="$", mkstream=True)
        await aclose(setup)
        outcomes: List[Any] = []
        for i in range(5):
            r = side.async_client(socket_timeout=5, **ASYNC_NO_RETRY)
            try:
                await r.ping()
                task = asyncio.ensure_future(r.xreadgroup("g", f"c{i}", {"jobs": ">"}, block=0))
                await asyncio.to_thread(duo.wait_blocked, side, 1)
                if side.server is None:  # real: let the task step past its send (see the comment below)
                    for _ in range(3):
                        await asyncio.sleep(0)
                start = time.monotonic()
                task.cancel()
                try:
                    await asyncio.wait_for(task, WAIT_S)
                    outcome = "returned"
                except asyncio.CancelledError:
                    outcome = "cancelled"
                except Exception as exc:
                    outcome = type(exc).__name__
                outcomes.append((outcome, time.monotonic() - start < 1.0))
                await asyncio.to_thread(_wait_unblocked, duo, side)
            finally:
                await aclose(r)
        return outcomes

    real, fake = duo.run(scenario)
    assert real.value == fake.value, f"real {real.value!r} vs fake {fake.value!r}"
    assert fake.value == [("cancelled", True)] * 5


# --------------------------------------------------------------------------------------- CLIENT KILL
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("command", ["xread", "xreadgroup", "blpop"])
def test_client_kill_of_a_client_blocked_in_block_0_releases_it_at_once(duo, mode, command):
    """The killed client's blocked call ends at once with the real server's client-visible outcome (a
    stream read parked in the engine, or BLPOP served by fakeredis); the killer gets 1 (``CLIENT KILL ID``);
    the client's next command reconnects."""

    def read(r: Any) -> Any:
        if command == "xread":
            return r.xread({"s": "$"}, block=0)
        if command == "blpop":
            return r.blpop(["l"], timeout=0)
        return r.xreadgroup("g", "c", {"s": ">"}, block=0)

    def sync_scenario(side):
        admin = side.client(**NO_RETRY)
        admin.xgroup_create("s", "g", id="$", mkstream=True)
        reader = side.client(**NO_RETRY)
        reader_id = reader.client_id()
        results: List[Any] = []
        thread = threading.Thread(target=lambda: results.append(outcome_of(lambda: read(reader))), daemon=True)
        thread.start()
        _wait_info_blocked(side, 1)
        start = time.monotonic()
        killed = admin.client_kill_filter(_id=reader_id)
        thread.join(WAIT_S)  # real-time: the killed reader's thread returns, bounded
        assert not thread.is_alive(), "the killed client stayed blocked"
        quick = time.monotonic() - start < 1.0
        after = reader.xlen("s")
        _wait_info_blocked(side, 0)
        return killed, results[0], quick, after

    async def async_scenario(side):
        admin = side.async_client(**ASYNC_NO_RETRY)
        reader = side.async_client(**ASYNC_NO_RETRY)
        try:
            await admin.xgroup_create("s", "g", id="$", mkstream=True)
            reader_id = await reader.client_id()
            task = asyncio.ensure_future(read(reader))
            await asyncio.to_thread(_wait_info_blocked, side, 1)
            start = time.monotonic()
            killed = await admin.client_kill_filter(_id=reader_id)
            outcome = await asyncio.wait_for(outcome_async(task), WAIT_S)
            quick = time.monotonic() - start < 1.0
            after = await reader.xlen("s")
            await asyncio.to_thread(_wait_info_blocked, side, 0)
            return killed, outcome, quick, after
        finally:
            await aclose(admin)
            await aclose(reader)

    real, fake = duo.run(sync_scenario if mode == "sync" else async_scenario)
    assert real.value == fake.value, f"real {real.value!r} vs fake {fake.value!r}"
    assert fake.value[2] is True
    assert duo.server.blocked() == []


async def outcome_async(awaitable: Any) -> Any:
    try:
        return await awaitable
    except (redis.RedisError, ValueError) as exc:
        return (type(exc).__name__,)


# ------------------------------------------------------------- cancelled fakeredis blocking commands
FAKEREDIS_BLOCKING = {
    "bzpopmin": lambda r: r.bzpopmin(["z"], timeout=0),
    "blpop": lambda r: r.blpop(["l"], timeout=0),
    "brpoplpush": lambda r: r.brpoplpush("l", "l2", timeout=0),
    "brpop": lambda r: r.brpop(["l"], timeout=0),
}


def _change_callbacks(server: FakeStreamsServer) -> int:
    """fakeredis's per-database wake-up callbacks (registered by its asyncio blocking commands)."""
    return sum(len(getattr(db, "_change_callbacks", ())) for db in server.backend.fake.dbs.values())


async def _block_cancel_and_close(server: FakeStreamsServer, r: Any, command: str) -> None:
    """``command`` blocks in a task of ``r``'s, the task is cancelled, ``r`` closed; returns once fakeredis's
    own task has had the loop iterations it needs to end its wait."""
    await r.ping()
    task = asyncio.ensure_future(FAKEREDIS_BLOCKING[command](r))
    bound = time.monotonic() + WAIT_S
    while not _change_callbacks(server):
        assert time.monotonic() < bound, "the command never blocked"
        await asyncio.sleep(0.001)  # real-time: fakeredis's blocking task registers, bounded above
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await aclose(r)
    for _ in range(100):  # fakeredis's task ends its wait in a few loop iterations
        if not _change_callbacks(server):
            break
        await asyncio.sleep(0)


@pytest.mark.parametrize("command", sorted(FAKEREDIS_BLOCKING))
def test_a_cancelled_fakeredis_blocking_command_leaves_no_wake_up_callback(command):
    """Cancel a task blocked in a command fakeredis serves: its wake-up callback and its blocked state go
    with it, so a later write (or the fixture's teardown) never calls into a closed loop."""
    server = FakeStreamsServer()

    async def scenario() -> tuple:
        await _block_cancel_and_close(server, server.async_client(**ASYNC_NO_RETRY), command)
        return _change_callbacks(server), await asyncio.to_thread(
            lambda: server.client().info("clients")["blocked_clients"])

    try:
        assert asyncio.run(scenario()) == (0, 0)
        assert _change_callbacks(server) == 0
        writer = server.client()  # the loop is closed now: a write wakes nobody, raises nothing
        writer.zadd("z", {"m": 1})
        writer.rpush("l", "x")
        server.flushall()
        gc.collect()
        assert not server.internal_errors
    finally:
        server.close()


def test_a_cancelled_fakeredis_blocking_command_does_not_take_a_later_write(duo):
    """After the cancel, the pushed element stays in the list (nobody pops it), as on a real server."""

    async def scenario(side):
        r, w = side.async_client(**ASYNC_NO_RETRY), side.async_client(**ASYNC_NO_RETRY)
        try:
            await r.ping()
            task = asyncio.ensure_future(r.blpop(["l"], timeout=0))
            await asyncio.to_thread(_wait_info_blocked, side, 1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.to_thread(_wait_info_blocked, side, 0)
            await w.rpush("l", "x")
            return await w.lrange("l", 0, -1)
        finally:
            await aclose(r)
            await aclose(w)

    real, fake = duo.run(scenario)
    assert real.value == fake.value == [b"x"], (real.value, fake.value)


# ------------------------------------------------------------------------------------------ helpers
def _wait_unblocked(duo, side) -> None:
    bound = time.monotonic() + WAIT_S
    while duo.blocked(side):
        assert time.monotonic() < bound, "the client stayed blocked"
        time.sleep(0.002)  # real-time: polling the servers' blocked-client count, bounded above


def _wait_info_blocked(side, n: int) -> None:
    """Until INFO's ``blocked_clients`` (every blocking command, not only stream reads) is ``n``."""
    probe = side.client(**NO_RETRY)
    bound = time.monotonic() + WAIT_S
    while probe.info("clients")["blocked_clients"] != n:
        assert time.monotonic() < bound, f"blocked_clients never became {n}"
        time.sleep(0.002)  # real-time: polling INFO, bounded above
    probe.close()


# ------------------------------------------------------------------------- through the fixture, as users
@pytest.mark.asyncio
@pytest.mark.parametrize("command", ["bzpopmin", "blpop"])
async def test_through_the_fixture_a_cancelled_fakeredis_blocking_command_leaves_nothing_for_teardown(
        fake_redis_streams, command):
    """The issue's case: a pytest-asyncio test cancels a task blocked in BZPOPMIN / BLPOP and passes; the
    fixture's teardown runs after the test's loop is closed. Nothing of the cancelled command is left for
    that teardown to fire (it used to raise ``RuntimeError: Event loop is closed`` there)."""
    server = fake_redis_streams.server
    await _block_cancel_and_close(server, fake_redis_streams.async_client(), command)
    assert _change_callbacks(server) == 0
