"""The fake alongside time-freezing libraries (freezegun, time-machine) with the default SystemClock.

What is supported:

* auto IDs, idle times and seen/active times follow ``time.time``, so both libraries steer them;
* ``BLOCK n`` timeouts are measured on the real monotonic clock (as a real server measures them), so a
  frozen or travelled ``time.time`` never hangs a blocked read — sync or asyncio, even under
  freezegun's default freeze, which also freezes the event loop's clock;
* for virtual time in BLOCK deadlines, use the ManualClock instead.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time

import pytest

from fake_streams import FakeStreamsServer
from tests.support.redis_compat import aclose

freezegun = pytest.importorskip("freezegun")
time_machine = pytest.importorskip("time_machine")

FROZEN = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
FROZEN_MS = int(FROZEN.timestamp() * 1000)


@pytest.fixture
def server():
    server = FakeStreamsServer(version="7.4")
    yield server
    server.close()


def test_freezegun_steers_auto_ids_and_a_blocked_read_still_times_out(server):
    client = server.client()
    with freezegun.freeze_time(FROZEN):
        assert client.xadd("s", {"f": "v"}) == f"{FROZEN_MS}-0".encode()
        assert client.xadd("s", {"f": "v"}) == f"{FROZEN_MS}-1".encode()
        started = time.perf_counter()
        assert client.xread({"s": "$"}, block=100) == []
        # real-time: a real 100 ms BLOCK timeout; bounded well below the 60 s safety net
        assert time.perf_counter() - started < 10
    client.close()


def test_freezegun_default_freeze_does_not_hang_an_asyncio_blocked_read(server):
    async def scenario():
        client = server.async_client()
        try:
            await client.xadd("s", {"f": "v"})
            return await client.xread({"s": "$"}, block=100)
        finally:
            await aclose(client)

    with freezegun.freeze_time(FROZEN):  # real_asyncio=False: the loop's clock is frozen too
        started = time.perf_counter()
        assert asyncio.run(scenario()) == []
        # real-time: a real 100 ms BLOCK timeout must end although loop.time() stands still
        assert time.perf_counter() - started < 10


def test_freezegun_idle_time_follows_the_frozen_clock(server):
    client = server.client()
    with freezegun.freeze_time(FROZEN) as frozen:
        client.xadd("s", {"f": "v"}, id="1-0")
        client.xgroup_create("s", "g", id="0")
        client.xreadgroup("g", "alice", {"s": ">"})
        frozen.tick(dt.timedelta(seconds=90))
        [pending] = client.xpending_range("s", "g", "-", "+", 10)
        assert pending["time_since_delivered"] == 90_000
        claimed = client.xautoclaim("s", "g", "bob", min_idle_time=60_000, justid=True)
        assert claimed == [b"1-0"]  # redis-py returns only the IDs with justid
    client.close()


def test_time_machine_travel_steers_ids_and_blocking_still_times_out(server):
    client = server.client()
    with time_machine.travel(FROZEN, tick=False):
        assert client.xadd("s", {"f": "v"}) == f"{FROZEN_MS}-0".encode()
        started = time.perf_counter()
        assert client.xread({"s": "$"}, block=100) == []
        # real-time: a real 100 ms BLOCK timeout under a stopped time.time
        assert time.perf_counter() - started < 10
    client.close()


def test_time_machine_shift_moves_idle_time(server):
    client = server.client()
    with time_machine.travel(FROZEN, tick=False) as traveller:
        client.xadd("s", {"f": "v"}, id="1-0")
        client.xgroup_create("s", "g", id="0")
        client.xreadgroup("g", "alice", {"s": ">"})
        traveller.shift(dt.timedelta(minutes=5))
        [pending] = client.xpending_range("s", "g", "-", "+", 10)
        assert pending["time_since_delivered"] == 300_000
    client.close()
