"""OBJECT IDLETIME / FREQ on the ManualClock (fake_streams.keyaccess): idle times move only when the server's
clock does; the LFU counter decays by one per ``lfu-decay-time`` minutes and grows logarithmically
(``lfu-log-factor``); the wraps of the LRU clock (2^24 s) and of the LFU minutes (2^16). The comparisons with
the real servers are tests/conformance/test_object.py."""

from __future__ import annotations

import pytest

from fake_streams import FakeStreamsServer, ManualClock
from fake_streams.keyaccess import LRU_CLOCK_MAX, KeyAccess


@pytest.fixture
def clocked():
    clock = ManualClock(1_700_000_000_000)
    server = FakeStreamsServer("7.4", clock=clock)
    yield server.client(), clock
    server.close()


def test_idletime_follows_the_manual_clock(clocked):
    r, clock = clocked
    r.set("k", "v")
    r.xadd("s", {"f": "v"})
    r.rpush("l", "a")
    clock.advance(7_500)
    assert [r.object("idletime", k) for k in ("k", "s", "l")] == [7, 7, 7]
    r.get("k")
    r.xlen("s")
    r.type("l")
    r.exists("l")
    r.ttl("l")
    clock.advance(3_000)
    assert [r.object("idletime", k) for k in ("k", "s", "l")] == [3, 3, 10]
    r.eval("return redis.call('LLEN', KEYS[1])", 1, "l")
    assert r.object("idletime", "l") == 0
    clock.advance(2_000)
    pipe = r.pipeline()
    pipe.get("k")
    pipe.xlen("s")
    pipe.execute()
    assert [r.object("idletime", k) for k in ("k", "s", "l")] == [0, 0, 2]


def test_swapdb_move_and_flush_keep_the_tables_with_the_keys(clocked):
    r, clock = clocked
    r.set("k", "v")
    clock.advance(4_000)
    r.swapdb(0, 1)
    assert r.object("idletime", "k") is None
    r.swapdb(0, 1)
    assert r.object("idletime", "k") == 4
    r.flushall()
    r.set("k", "v")
    assert r.object("idletime", "k") == 0


def test_lfu_counter_decays_per_decay_time_and_grows_logarithmically(clocked):
    r, clock = clocked
    r.config_set("maxmemory-policy", "allkeys-lfu")
    r.set("k", "v")
    assert r.object("freq", "k") == 5
    r.get("k")
    assert r.object("freq", "k") == 6  # at most LFU_INIT_VAL the increment is certain
    for _ in range(200):
        r.get("k")
    grown = r.object("freq", "k")
    assert 6 < grown < 20  # p = 1 / ((counter - 5) * 10 + 1): about 200 touches reach ~11
    clock.advance(3 * 60_000)
    assert r.object("freq", "k") == grown - 3  # lfu-decay-time 1: one per minute
    r.config_set("lfu-decay-time", "0")
    clock.advance(60 * 60_000)
    assert r.object("freq", "k") == grown  # 0: no decay (the decay is computed when read, nothing was stored)
    r.config_set("lfu-decay-time", "1")
    assert r.object("freq", "k") == 0
    r.config_set("lfu-log-factor", "0")
    for _ in range(300):
        r.get("k")
    assert r.object("freq", "k") == 255


def test_the_clocks_wrap_as_the_servers():
    now = [LRU_CLOCK_MAX * 1000]  # the LRU clock's last tick before the wrap
    access = KeyAccess(lambda: now[0], {})
    table: dict = {}
    access.touch(table, b"k")
    now[0] += 5_000
    assert access.lru_clock() == 4
    assert access.idle_seconds(table, b"k") == 4  # estimateObjectIdleTime's wrap: (now + MAX - stamp) ticks
    lfu = KeyAccess(lambda: now[0], {b"maxmemory-policy": b"allkeys-lfu"})
    now[0] = 65535 * 60_000  # LFU minutes' last value before the wrap
    lfu.touch(table, b"f")
    now[0] += 2 * 60_000
    assert lfu.frequency(table, b"f") == 6 - 1  # LFUTimeElapsed: 65535 - ldt + now = 1 minute
