"""Deadlines and idle times on a ManualClock: no real waiting (fake only; the pair tests cover real servers).

A ManualClock expires BLOCK deadlines inside ``advance()`` / ``set()``: when it returns, a client whose
deadline has passed has its nil reply already, and one whose deadline has not is still registered
(``server.blocked()``), so these tests never sleep. Real-time waits below only bound a thread's join.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time

import pytest
import redis

from fake_streams import FakeStreamsServer, ManualClock
from fake_streams.blocking import BlockSafetyError
from fake_streams.profiles import R7_4
from tests.conftest import START_MS, pool_kwargs
from tests.support.redis_compat import aclose

from .conftest import WAIT_S, in_thread


def _timer_threads() -> list:
    return [t for t in threading.enumerate() if t.name == "fake-streams-timer"]


def test_block_5000_returns_nil_when_the_clock_passes_the_deadline(server, make_client):
    reader = make_client()
    start = time.monotonic()
    thread, results = in_thread(lambda: reader.xread({"s": "$"}, block=5000))
    [blocked] = server.wait_until_blocked(1, WAIT_S)
    assert blocked.deadline_ms == START_MS + 5000
    server.clock.advance(4999)
    assert len(server.blocked()) == 1 and not results  # not yet
    server.clock.advance(1)
    thread.join(WAIT_S)  # real-time: the released reader thread returns
    assert results == [[]]
    assert server.blocked() == []
    assert time.monotonic() - start < 2  # no real waiting for the 5 s


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", [2, 3])
async def test_async_block_5000_returns_nil_when_the_clock_passes_the_deadline(server, make_async_client, protocol):
    reader = make_async_client(protocol)
    task = asyncio.ensure_future(reader.xread({"s": "$"}, block=5000))
    await asyncio.to_thread(server.wait_until_blocked, 1, WAIT_S)
    server.clock.advance(4999)
    await asyncio.sleep(0)
    assert not task.done()
    server.clock.advance(1)
    assert await asyncio.wait_for(task, WAIT_S) in ([], {})
    assert await reader.ping() is True


def test_set_backwards_never_expires_and_block_0_has_no_deadline(server, make_client):
    reader = make_client()
    thread, results = in_thread(lambda: reader.xread({"s": "$"}, block=0))
    [blocked] = server.wait_until_blocked(1, WAIT_S)
    assert blocked.deadline_ms is None
    server.clock.advance(10**9)
    server.clock.set(0)
    assert len(server.blocked()) == 1
    make_client().xadd("s", {"f": "v"}, id="1-1")
    thread.join(WAIT_S)  # real-time: the woken reader thread returns
    assert results == [[[b"s", [(b"1-1", {b"f": b"v"})]]]]


@pytest.mark.parametrize("kept", [True, False])
def test_a_reblocked_client_keeps_or_restarts_its_deadline_per_profile(make_client, kept):
    """Spec §6 row 7: 7.2.5+ keep the first deadline across a wake-up that re-blocks; 7.2.0–7.2.4 restart it."""
    profile = R7_4 if kept else dataclasses.replace(R7_4, name="7.2.0", features=R7_4.features - {"blocked_deadline_kept"})
    server = FakeStreamsServer(version=profile, clock=ManualClock(START_MS), block_safety_s=None)
    try:
        writer = make_client(srv=server)
        writer.xgroup_create("s", "g", id="$", mkstream=True)
        first, second = make_client(srv=server), make_client(srv=server)
        t1, r1 = in_thread(lambda: first.xreadgroup("g", "c1", {"s": ">"}, block=0))
        server.wait_until_blocked(1, WAIT_S)
        t2, r2 = in_thread(lambda: second.xreadgroup("g", "c2", {"s": ">"}, block=1000))
        server.wait_until_blocked(2, WAIT_S)
        server.clock.advance(400)
        writer.xadd("s", {"f": "v"}, id="1-1")
        t1.join(WAIT_S)  # real-time: the first reader is served
        [again] = server.blocked()
        assert again.deadline_ms == (START_MS + 1000 if kept else START_MS + 400 + 1000)
        server.clock.advance(600)
        assert (server.blocked() == []) is kept
        server.clock.advance(400)
        t2.join(WAIT_S)  # real-time: the second reader times out
        assert r2 == [[]]
    finally:
        server.close()


def test_reexecution_refreshes_seen_time_and_a_delivery_sets_active_time(server, make_client):
    """Spec §4.4 on the manual clock: idle / inactive in exact milliseconds, no sleep."""
    writer = make_client()
    writer.xgroup_create("s", "g", id="$", mkstream=True)
    first, second = make_client(), make_client()
    t1, _ = in_thread(lambda: first.xreadgroup("g", "c1", {"s": ">"}, block=0))
    server.wait_until_blocked(1, WAIT_S)
    t2, r2 = in_thread(lambda: second.xreadgroup("g", "c2", {"s": ">"}, block=0))
    server.wait_until_blocked(2, WAIT_S)
    server.clock.advance(3000)
    info = {c["name"]: c for c in writer.xinfo_consumers("s", "g")}
    assert (info[b"c1"]["idle"], info[b"c1"]["inactive"]) == (3000, -1)
    writer.xadd("s", {"f": "v"}, id="1-1")  # c1 takes it; c2 is run again (seen now) and blocks again
    t1.join(WAIT_S)  # real-time: the served reader thread returns
    server.clock.advance(250)
    info = {c["name"]: c for c in writer.xinfo_consumers("s", "g")}
    assert (info[b"c1"]["idle"], info[b"c1"]["inactive"]) == (250, 250)
    assert (info[b"c2"]["idle"], info[b"c2"]["inactive"]) == (250, -1)
    writer.xadd("s", {"f": "w"}, id="2-1")
    t2.join(WAIT_S)  # real-time: the second reader is served
    assert r2 == [[[b"s", [(b"2-1", {b"f": b"w"})]]]]


def test_auto_ids_of_a_waking_xadd_come_from_the_manual_clock(server, make_client):
    reader = make_client()
    thread, results = in_thread(lambda: reader.xread({"s": "$"}, block=0))
    server.wait_until_blocked(1, WAIT_S)
    server.clock.advance(42)
    new_id = make_client().xadd("s", {"f": "v"})
    thread.join(WAIT_S)  # real-time: the woken reader thread returns
    assert new_id == f"{START_MS + 42}-0".encode()
    assert results == [[[b"s", [(new_id, {b"f": b"v"})]]]]


def test_a_non_transactional_pipeline_behind_a_blocked_read_waits_for_it(server, make_client):
    """Commands sent after a blocking read on the same connection run only once it is answered."""
    reader, other = make_client(), make_client()
    pipe = reader.pipeline(transaction=False)
    pipe.xread({"s": "$"}, block=1000)
    pipe.set("k", "v")
    pipe.get("k")
    thread, results = in_thread(pipe.execute)
    server.wait_until_blocked(1, WAIT_S)
    assert other.get("k") is None  # the SET waits behind the blocked XREAD
    server.clock.advance(1000)
    thread.join(WAIT_S)  # real-time: the pipeline's reads return
    assert results == [[[], True, b"v"]]


# ---------------------------------------------------------------------------------- safety net
@pytest.mark.parametrize("block", [5000, 0])
def test_safety_net_fails_a_call_that_the_manual_clock_never_releases(make_client, block):
    server = FakeStreamsServer(clock=ManualClock(START_MS), block_safety_s=0.2)
    try:
        reader = make_client(srv=server, socket_timeout=WAIT_S)
        start = time.monotonic()
        with pytest.raises(BlockSafetyError) as info:
            reader.xread({"s": "$"}, block=block)  # real-time: the 0.2 s safety limit elapses
        assert 0.15 < time.monotonic() - start < 3
        text = str(info.value)
        assert "fake_streams: a blocked call waited 0.2 s of real time" in text
        assert "XREAD BLOCK" in text and "block_safety_s" in text
        if block:
            assert "ManualClock that was never advanced" in text and f"deadline: {START_MS + 5000} ms" in text
        else:
            assert "BLOCK 0 waits forever" in text
        assert server.blocked() == [] and reader.ping() is True
    finally:
        server.close()


@pytest.mark.asyncio
async def test_safety_net_fails_an_async_call_too():
    server = FakeStreamsServer(clock=ManualClock(START_MS), block_safety_s=0.2)
    reader = server.async_client(**pool_kwargs(3, socket_timeout=WAIT_S))
    try:
        with pytest.raises(BlockSafetyError, match="never advanced"):
            await reader.xread({"s": "$"}, block=5000)  # real-time: the 0.2 s safety limit elapses
    finally:
        await aclose(reader)
        server.close()


def test_no_timer_thread_while_a_manual_clock_client_waits_without_safety_net(make_client):
    server = FakeStreamsServer(clock=ManualClock(START_MS), block_safety_s=None)
    try:
        before = len(_timer_threads())
        reader = make_client(srv=server)
        thread, results = in_thread(lambda: reader.xread({"s": "$"}, block=60_000))
        server.wait_until_blocked(1, WAIT_S)
        assert len(_timer_threads()) == before  # a ManualClock deadline needs no thread
        server.clock.advance(60_000)
        thread.join(WAIT_S)  # real-time: the released reader thread returns
        assert results == [[]]
    finally:
        server.close()


def test_system_clock_deadline_arms_the_timer_until_the_wait_ends(make_client):
    server = FakeStreamsServer(block_safety_s=None)
    try:
        reader = make_client(srv=server)
        start = time.monotonic()
        assert reader.xread({"s": "$"}, block=150) == []  # real-time: a SystemClock BLOCK 150
        assert 0.1 < time.monotonic() - start < 2
        bound = time.monotonic() + WAIT_S
        while server.blocking._timer.armed_at() is not None:  # disarmed right after its last due item
            assert time.monotonic() < bound
            time.sleep(0.005)  # real-time: the timer fires on the timer thread, bounded above
    finally:
        server.close()


def test_blocked_records_and_wait_until_blocked(server, make_client):
    reader = make_client(db=2)
    reader_id = reader.client_id()
    thread, _ = in_thread(lambda: reader.execute_command("xread", "block", "700", "streams", "a", "b", "a", "$", "$", "$"))
    [record] = server.wait_until_blocked(1, WAIT_S)
    assert record.client_id == reader_id
    assert record.argv == (b"xread", b"block", b"700", b"streams", b"a", b"b", b"a", b"$", b"$", b"$")
    assert record.keys == (b"a", b"b")  # each key once
    assert record.deadline_ms == START_MS + 700
    assert record.db == 2
    with pytest.raises(TimeoutError, match="waited for 2"):
        server.wait_until_blocked(2, 0.05)  # real-time: the bound itself is what is tested
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.db = 0  # type: ignore[misc]
    server.clock.advance(700)
    thread.join(WAIT_S)  # real-time: the released reader thread returns


def test_python_flushall_releases_blocked_xreadgroup(server, make_client):
    writer, reader = make_client(), make_client()
    writer.xgroup_create("s", "g", id="$", mkstream=True)
    thread, results = in_thread(lambda: reader.xreadgroup("g", "c", {"s": ">"}, block=0))
    server.wait_until_blocked(1, WAIT_S)
    server.flushall()
    thread.join(WAIT_S)  # real-time: the released reader thread returns
    assert results == [("ResponseError",)]
    assert server.blocked() == []


def test_wait_until_blocked_is_woken_not_polling(server, make_client):
    reader = make_client()
    waited: list = []
    waiter = threading.Thread(target=lambda: waited.append(server.wait_until_blocked(1, WAIT_S)), daemon=True)
    waiter.start()
    thread, _ = in_thread(lambda: reader.xread({"s": "$"}, block=0))
    waiter.join(WAIT_S)  # real-time: woken by the registration
    assert len(waited) == 1 and len(waited[0]) == 1
    make_client().xadd("s", {"f": "v"}, id="1-1")
    thread.join(WAIT_S)  # real-time: the woken reader thread returns


def test_pool_disconnect_removes_the_registration(server, make_client):
    reader = make_client(retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0))
    thread, results = in_thread(lambda: reader.xread({"s": "$"}, block=0))
    server.wait_until_blocked(1, WAIT_S)
    time.sleep(0.02)  # real-time: let the reader thread enter its read (not observable)
    reader.connection_pool.disconnect()
    thread.join(WAIT_S)  # real-time: the released reader thread returns
    assert results and results[0] in (("ConnectionError",), ("ValueError",))
    assert server.blocked() == []
    info = make_client().info("clients")
    assert info["blocked_clients"] == 0
