"""Port of the blocking (PB) tests of Redis 7.4.1 ``stream.tcl`` / ``stream-cgroups.tcl`` (spec §7), fake vs real.

One test per Tcl test, named after it; the docstring is the Tcl test name (the catalogue number in
brackets). Tcl's deferring client ``$rd`` is ``rd = pair.connect()``; ``wait_for_blocked_client(s_count)``
is ``pair.wait_blocked(n)``; a Tcl ``after`` that lets a BLOCK time out is :func:`let_block_time_out`
(the real server's deadline passes in real time, the fake's ManualClock is then moved past the fake's).
Every test runs in RESP2 and RESP3 on each oracle, with the profile's error texts (R7.0: spec §6 rows
5–6). The two partially portable tests (#31 and #34 of stream-cgroups.tcl) keep their blocking part.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.conformance.oracles import parse_info
from tests.conformance.replies import Err, ids

from .conftest import WAIT_S, let_block_time_out, stream_pairs


def xadd_auto(p: Any, *argv: Any) -> Any:
    """``XADD`` with a clock-made ID (``*``): the two sides' IDs are paired (replies.ids)."""
    return p.same("XADD", *argv, normalize=ids)


def first_entry_fields(reply: Any) -> Any:
    """Tcl ``lindex $res 0 1 0 1``: the fields of the first entry of the first stream."""
    return stream_pairs(reply)[0][1][0][1]


def read_released(p: Any, rd: Any, r72_key: str, key: bytes = b"mystream", group: bytes = b"mygroup",
                  r70_key: str = "BLOCKED_KEY_GONE_R70") -> Err:
    """The error a released XREADGROUP gets: ``r72_key`` on re-running profiles, ``r70_key`` on R7.0."""
    if p.profile.has("blocked_reprocess"):
        if r72_key == "XREADGROUP_NOGROUP":
            return rd.read_error("XREADGROUP_NOGROUP", key=key, group=group)
        return rd.read_error(r72_key)
    return rd.read_error(r70_key)


# =============================================================================================
# stream.tcl


def test_blocking_xread_waiting_new_data(pair):
    """Blocking XREAD waiting new data (#29)"""
    xadd_auto(pair, "s2{t}", "*", "old", "abcd1234")
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "20000", "STREAMS", "s1{t}", "s2{t}", "s3{t}", "$", "$", "$")
    pair.wait_blocked(1)
    xadd_auto(pair, "s2{t}", "*", "new", "abcd1234")
    res = stream_pairs(rd.read(normalize=ids))
    assert res[0][0] == b"s2{t}"
    assert res[0][1][0][1] == [b"new", b"abcd1234"]


def test_blocking_xread_waiting_old_data(pair):
    """Blocking XREAD waiting old data (#30)"""
    xadd_auto(pair, "s2{t}", "*", "old", "abcd1234")
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "20000", "STREAMS", "s1{t}", "s2{t}", "s3{t}", "$", "0-0", "$")
    res = stream_pairs(rd.read(normalize=ids))  # served at once: nothing blocks
    xadd_auto(pair, "s2{t}", "*", "foo", "abcd1234")
    assert res[0][0] == b"s2{t}"
    assert res[0][1][0][1] == [b"old", b"abcd1234"]


def test_blocking_xread_will_not_reply_with_an_empty_array(pair):
    """Blocking XREAD will not reply with an empty array (#31)"""
    pair.same("DEL", "s1")
    pair.same("XADD", "s1", "666", "f", "v")
    pair.same("XADD", "s1", "667", "f2", "v2")
    pair.same("XDEL", "s1", "667")
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "10", "STREAMS", "s1", "666")
    let_block_time_out(pair)  # Tcl: after 20
    assert rd.read() is None  # before the fix the client was served synchronously with {s1 {}}


def test_blocking_xread_for_stream_that_ran_dry_issue_5299(pair):
    """Blocking XREAD for stream that ran dry (issue #5299) (#32)"""
    rd = pair.connect()
    # Add a entry then delete it, now stream's last_id is 666.
    pair.same("DEL", "mystream")
    pair.same("XADD", "mystream", "666", "key", "value")
    pair.same("XDEL", "mystream", "666")
    # Pass a ID smaller than stream's last_id, released on timeout.
    rd.send("XREAD", "BLOCK", "10", "STREAMS", "mystream", "665")
    let_block_time_out(pair)
    assert rd.read() is None
    # Throw an error if the ID equal or smaller than the last_id.
    pair.same_error("XADD_ID_TOO_SMALL", "XADD", "mystream", "665", "key", "value")
    pair.same_error("XADD_ID_TOO_SMALL", "XADD", "mystream", "666", "key", "value")
    # Entered blocking state and then release because of the new entry.
    rd.send("XREAD", "BLOCK", "0", "STREAMS", "mystream", "665")
    pair.wait_blocked(1)
    pair.same("XADD", "mystream", "667", "key", "value")
    assert stream_pairs(rd.read()) == [[b"mystream", [[b"667-0", [b"key", b"value"]]]]]


def test_xread_last_element_blocking_from_empty_stream(pair):
    """XREAD last element blocking from empty stream (#35, R7.4+)"""
    pair.require("xread_plus_id", "XREAD '+' is R7.4+ (spec §6 row 1)")
    pair.same("DEL", "lestream")
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "20000", "STREAMS", "lestream", "+")
    pair.wait_blocked(1)
    pair.same("XADD", "lestream", "1-0", "k1", "v1")
    assert stream_pairs(rd.read()) == [[b"lestream", [[b"1-0", [b"k1", b"v1"]]]]]


def test_xread_xadd_plus_del_should_not_awake_client(pair):
    """XREAD: XADD + DEL should not awake client (#39)"""
    rd = pair.connect()
    pair.same("DEL", "s1")
    rd.send("XREAD", "BLOCK", "20000", "STREAMS", "s1", "$")
    pair.wait_blocked(1)
    pair.same("MULTI")
    pair.same("XADD", "s1", "*", "old", "abcd1234")
    pair.same("DEL", "s1")
    pair.same("EXEC", normalize=ids)
    xadd_auto(pair, "s1", "*", "new", "abcd1234")
    res = stream_pairs(rd.read(normalize=ids))
    assert res[0][0] == b"s1"
    assert res[0][1][0][1] == [b"new", b"abcd1234"]


def test_xread_xadd_plus_del_plus_lpush_should_not_awake_client(pair):
    """XREAD: XADD + DEL + LPUSH should not awake client (#40)"""
    rd = pair.connect()
    pair.same("DEL", "s1")
    rd.send("XREAD", "BLOCK", "20000", "STREAMS", "s1", "$")
    pair.wait_blocked(1)
    pair.same("MULTI")
    pair.same("XADD", "s1", "*", "old", "abcd1234")
    pair.same("DEL", "s1")
    pair.same("LPUSH", "s1", "foo", "bar")
    pair.same("EXEC", normalize=ids)
    pair.same("DEL", "s1")
    xadd_auto(pair, "s1", "*", "new", "abcd1234")
    res = stream_pairs(rd.read(normalize=ids))
    assert res[0][0] == b"s1"
    assert res[0][1][0][1] == [b"new", b"abcd1234"]


def test_xread_with_same_stream_name_multiple_times_should_work(pair):
    """XREAD with same stream name multiple times should work (#41)"""
    xadd_auto(pair, "s2", "*", "old", "abcd1234")
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "20000", "STREAMS", "s2", "s2", "s2", "$", "$", "$")
    pair.wait_blocked(1)
    xadd_auto(pair, "s2", "*", "new", "abcd1234")
    res = rd.read(normalize=ids)
    assert stream_pairs(res)[0][0] == b"s2"
    assert first_entry_fields(res) == [b"new", b"abcd1234"]


def test_xread_plus_multiple_xadd_inside_transaction(pair):
    """XREAD + multiple XADD inside transaction (#42)"""
    xadd_auto(pair, "s2", "*", "old", "abcd1234")
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "20000", "STREAMS", "s2", "s2", "s2", "$", "$", "$")
    pair.wait_blocked(1)
    pair.same("MULTI")
    pair.same("XADD", "s2", "*", "field", "one")
    pair.same("XADD", "s2", "*", "field", "two")
    pair.same("XADD", "s2", "*", "field", "three")
    pair.same("EXEC", normalize=ids)
    res = stream_pairs(rd.read(normalize=ids))
    assert res[0][0] == b"s2"
    assert res[0][1][0][1] == [b"field", b"one"]
    assert res[0][1][1][1] == [b"field", b"two"]


def test_xread_streamid_edge_blocking(pair):
    """XREAD streamID edge (blocking) (#49)"""
    pair.same("DEL", "x")
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "0", "STREAMS", "x", "1-18446744073709551615")
    pair.wait_blocked(1)
    pair.same("XADD", "x", "1-1", "f", "v")
    pair.same("XADD", "x", "1-18446744073709551615", "f", "v")
    pair.same("XADD", "x", "2-1", "f", "v")
    assert stream_pairs(rd.read())[0][1][0] == [b"2-1", [b"f", b"v"]]


# =============================================================================================
# stream-cgroups.tcl


def test_blocking_xreadgroup_will_not_reply_with_an_empty_array(pair):
    """Blocking XREADGROUP will not reply with an empty array (#19)"""
    pair.same("DEL", "mystream")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    pair.same("XADD", "mystream", "666", "f", "v")
    res = pair.same("XREADGROUP", "GROUP", "mygroup", "Alice", "BLOCK", "10", "STREAMS", "mystream", ">")
    assert stream_pairs(res)[0][1][0] == [b"666-0", [b"f", b"v"]]
    pair.same("XADD", "mystream", "667", "f2", "v2")
    pair.same("XDEL", "mystream", "667")
    rd = pair.connect()
    rd.send("XREADGROUP", "GROUP", "mygroup", "Alice", "BLOCK", "10", "STREAMS", "mystream", ">")
    let_block_time_out(pair)  # Tcl: wait_for_blocked_clients_count 0
    assert rd.read() is None  # before the fix the client was served synchronously with {mystream {}}


def _blocked_xreadgroup(p: Any, db: str = "") -> Any:
    """The common start of #20–#25: mystream with entry 666 and mygroup at $, one reader blocked on >."""
    p.same("DEL", "mystream")
    p.same("XADD", "mystream", "666", "f", "v")
    p.same("XGROUP", "CREATE", "mystream", "mygroup", "$")
    rd = p.connect()
    if db:
        assert rd.same("SELECT", db) == b"OK"
    rd.send("XREADGROUP", "GROUP", "mygroup", "Alice", "BLOCK", "0", "STREAMS", "mystream", ">")
    p.wait_blocked(1)
    return rd


def test_blocking_xreadgroup_key_deleted(pair):
    """Blocking XREADGROUP: key deleted (#20)"""
    rd = _blocked_xreadgroup(pair)
    pair.same("DEL", "mystream")
    read_released(pair, rd, "XREADGROUP_NOGROUP")


def test_blocking_xreadgroup_key_type_changed_with_set(pair):
    """Blocking XREADGROUP: key type changed with SET (#21)"""
    rd = _blocked_xreadgroup(pair)
    pair.same("SET", "mystream", "val1")
    read_released(pair, rd, "WRONGTYPE")


def test_blocking_xreadgroup_key_type_changed_with_transaction(pair):
    """Blocking XREADGROUP: key type changed with transaction (#22)"""
    rd = _blocked_xreadgroup(pair)
    pair.same("MULTI")
    pair.same("DEL", "mystream")
    pair.same("SADD", "mystream", "e1")
    pair.same("EXEC")
    read_released(pair, rd, "WRONGTYPE")


def test_blocking_xreadgroup_flushed_db(pair):
    """Blocking XREADGROUP: flushed DB (#23)"""
    rd = _blocked_xreadgroup(pair)
    pair.same("FLUSHALL")
    read_released(pair, rd, "XREADGROUP_NOGROUP")


def test_blocking_xreadgroup_swapped_db_key_doesnt_exist(pair):
    """Blocking XREADGROUP: swapped DB, key doesn't exist (#24)"""
    pair.same("SELECT", "4")
    pair.same("FLUSHDB")
    pair.same("SELECT", "9")
    rd = _blocked_xreadgroup(pair, db="9")
    pair.same("SWAPDB", "4", "9")
    read_released(pair, rd, "XREADGROUP_NOGROUP")


def test_blocking_xreadgroup_swapped_db_key_is_not_a_stream(pair):
    """Blocking XREADGROUP: swapped DB, key is not a stream (#25)"""
    pair.same("SELECT", "4")
    pair.same("FLUSHDB")
    pair.same("LPUSH", "mystream", "e1")
    pair.same("SELECT", "9")
    rd = _blocked_xreadgroup(pair, db="9")
    pair.same("SWAPDB", "4", "9")
    read_released(pair, rd, "WRONGTYPE")


def test_blocking_xread_key_deleted(pair):
    """Blocking XREAD: key deleted (#27)"""
    pair.same("DEL", "mystream")
    pair.same("XADD", "mystream", "666", "f", "v")
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "0", "STREAMS", "mystream", "$")
    pair.wait_blocked(1)
    pair.same("DEL", "mystream")
    pair.same("XADD", "mystream", "667", "f", "v")
    assert stream_pairs(rd.read())[0][1][0] == [b"667-0", [b"f", b"v"]]


def test_blocking_xread_key_type_changed_with_set(pair):
    """Blocking XREAD: key type changed with SET (#28)"""
    pair.same("DEL", "mystream")
    pair.same("XADD", "mystream", "666", "f", "v")
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "0", "STREAMS", "mystream", "$")
    pair.wait_blocked(1)
    pair.same("SET", "mystream", "val1")
    pair.same("DEL", "mystream")
    pair.same("XADD", "mystream", "667", "f", "v")
    assert stream_pairs(rd.read())[0][1][0] == [b"667-0", [b"f", b"v"]]


def test_blocking_xreadgroup_for_stream_that_ran_dry_issue_5299(pair):
    """Blocking XREADGROUP for stream that ran dry (issue #5299) (#29)"""
    rd = pair.connect()
    # Add a entry then delete it, now stream's last_id is 666.
    pair.same("DEL", "mystream")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    pair.same("XADD", "mystream", "666", "key", "value")
    pair.same("XDEL", "mystream", "666")
    # Pass a special `>` ID but without new entry, released on timeout.
    rd.send("XREADGROUP", "GROUP", "mygroup", "myconsumer", "BLOCK", "10", "STREAMS", "mystream", ">")
    let_block_time_out(pair)
    assert rd.read() is None
    # Throw an error if the ID equal or smaller than the last_id.
    pair.same_error("XADD_ID_TOO_SMALL", "XADD", "mystream", "665", "key", "value")
    pair.same_error("XADD_ID_TOO_SMALL", "XADD", "mystream", "666", "key", "value")
    # Entered blocking state and then release because of the new entry.
    rd.send("XREADGROUP", "GROUP", "mygroup", "myconsumer", "BLOCK", "0", "STREAMS", "mystream", ">")
    pair.wait_blocked(1)
    pair.same("XADD", "mystream", "667", "key", "value")
    assert stream_pairs(rd.read()) == [[b"mystream", [[b"667-0", [b"key", b"value"]]]]]


def test_blocking_xreadgroup_for_stream_key_that_has_clients_blocked_on_list(pair):
    """Blocking XREADGROUP for stream key that has clients blocked on list (#31, its blocking part)

    The INFO ``total_blocking_keys*`` assertions are not portable (NP-INFO); the rest is: a BLPOP and an
    XREADGROUP blocked on one key, DEL releases the XREADGROUP with NOGROUP and leaves the BLPOP blocked.
    """
    rd, rd2 = pair.connect(), pair.connect()
    pair.same("DEL", "mystream")
    rd2.send("BLPOP", "mystream", "0")
    _wait_blocked_info(pair, 1)  # the fake's blocked() lists stream reads only; INFO counts the BLPOP too
    pair.same("XADD", "mystream", "666", "key", "value")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    rd.send("XREADGROUP", "GROUP", "mygroup", "myconsumer", "BLOCK", "0", "STREAMS", "mystream", ">")
    _wait_blocked_info(pair, 2)
    pair.same("DEL", "mystream")
    read_released(pair, rd, "XREADGROUP_NOGROUP", group=b"mygroup")
    assert _blocked_info(pair) == (1, 1)  # the BLPOP still waits
    rd2.close()
    _wait_blocked_info(pair, 0, at_most=True)


def test_blocking_xreadgroup_for_stream_key_that_has_clients_blocked_on_stream_avoid_endless_loop(pair):
    """Blocking XREADGROUP for stream key that has clients blocked on stream - avoid endless loop (#32)"""
    pair.same("DEL", "mystream")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    readers = [pair.connect() for _ in range(3)]
    for n, rd in enumerate(readers, 1):
        rd.send("XREADGROUP", "GROUP", "mygroup", "myuser", "COUNT", "10", "BLOCK", "10000", "STREAMS", "mystream", ">")
        # each blocked before the next is sent: the real server serves its sockets in the order epoll reports them,
        # so on a loaded machine readers[1] blocked first once, took the entry, and readers[0] timed out (nil)
        pair.wait_blocked(n)
    xadd_auto(pair, "mystream", "MAXLEN", "5000", "*", "field1", "value1", "field2", "value2", "field3", "value3")
    res = stream_pairs(readers[0].read(normalize=ids))  # the first blocked client takes the entry
    assert res[0][1][0][1] == [b"field1", b"value1", b"field2", b"value2", b"field3", b"value3"]
    for rd in readers:
        rd.close()
    assert pair.same("PING") == b"PONG"
    if pair.server is not None:
        assert pair.server.blocked() == []


@pytest.mark.realtime
def test_blocking_xreadgroup_for_stream_key_that_has_clients_blocked_on_stream_reprocessing_command(pair):
    """Blocking XREADGROUP for stream key that has clients blocked on stream - reprocessing command (#33)

    rd2 (BLOCK 1000) is woken by an XADD that rd1 takes, re-blocks, and keeps its first deadline
    (R7.2.5+, spec §6 row 7; R7.0 never unblocks it). The fake's deadline is checked exactly; the real
    server must release rd2 within 150 ms (Valkey's bound is 199) of that deadline, as the Tcl asserts.
    """
    pair.same("DEL", "mystream")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    rd1, rd2 = pair.connect(), pair.connect()
    rd1.send("XREADGROUP", "GROUP", "mygroup", "myuser", "BLOCK", "0", "STREAMS", "mystream", ">")
    pair.wait_blocked(1)
    rd2.send("XREADGROUP", "GROUP", "mygroup", "myuser", "BLOCK", "1000", "STREAMS", "mystream", ">")
    pair.wait_blocked(2)
    deadline = pair.server.blocked()[1].deadline_ms if pair.server is not None else None
    time.sleep(0.2)  # real-time: Tcl's "after 200" before the XADD (the deadline must survive the wake-up)
    xadd_auto(pair, "mystream", "*", "field", "value")
    rd1.read(normalize=ids)
    if pair.server is not None:
        assert [c.deadline_ms for c in pair.server.wait_until_blocked(1, WAIT_S)] == [deadline]
    let_block_time_out(pair)
    bound = time.monotonic() + 0.3  # real-time: the real server releases rd2 at its (kept) deadline
    while pair.oracle.blocked_clients():
        assert time.monotonic() < bound, "the real server did not release rd2 at its first deadline"
        time.sleep(0.005)  # real-time: polling INFO of the real server, bounded above
    assert rd2.read() is None


def test_xgroup_destroy_should_unblock_xreadgroup_with_nogroup(pair):
    """XGROUP DESTROY should unblock XREADGROUP with -NOGROUP (#34, its blocking part)

    The errorstats / commandstats assertions after CONFIG RESETSTAT are not portable (NP-INFO).
    """
    pair.same("DEL", "mystream")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    rd = pair.connect()
    rd.send("XREADGROUP", "GROUP", "mygroup", "Alice", "BLOCK", "0", "STREAMS", "mystream", ">")
    pair.wait_blocked(1)
    pair.same("XGROUP", "DESTROY", "mystream", "mygroup")
    read_released(pair, rd, "XREADGROUP_NOGROUP", r70_key="BLOCKED_NOGROUP_R70")


def test_rename_can_unblock_xreadgroup_with_data(pair):
    """RENAME can unblock XREADGROUP with data (#35)"""
    pair.same("DEL", "mystream{t}")
    pair.same("XGROUP", "CREATE", "mystream{t}", "mygroup", "$", "MKSTREAM")
    rd = pair.connect()
    rd.send("XREADGROUP", "GROUP", "mygroup", "Alice", "BLOCK", "0", "STREAMS", "mystream{t}", ">")
    pair.wait_blocked(1)
    pair.same("XGROUP", "CREATE", "mystream2{t}", "mygroup", "$", "MKSTREAM")
    pair.same("XADD", "mystream2{t}", "100", "f1", "v1")
    pair.same("RENAME", "mystream2{t}", "mystream{t}")
    # mystream2{t} had mygroup before RENAME
    assert stream_pairs(rd.read()) == [[b"mystream{t}", [[b"100-0", [b"f1", b"v1"]]]]]


def test_rename_can_unblock_xreadgroup_with_nogroup(pair):
    """RENAME can unblock XREADGROUP with -NOGROUP (#36)"""
    pair.same("DEL", "mystream{t}")
    pair.same("XGROUP", "CREATE", "mystream{t}", "mygroup", "$", "MKSTREAM")
    rd = pair.connect()
    rd.send("XREADGROUP", "GROUP", "mygroup", "Alice", "BLOCK", "0", "STREAMS", "mystream{t}", ">")
    pair.wait_blocked(1)
    pair.same("XADD", "mystream2{t}", "100", "f1", "v1")
    pair.same("RENAME", "mystream2{t}", "mystream{t}")
    # mystream2{t} didn't have mygroup before RENAME
    read_released(pair, rd, "XREADGROUP_NOGROUP", key=b"mystream{t}", r70_key="BLOCKED_NOGROUP_R70")


# ----------------------------------------------------------------------------------------- helpers
def _blocked_info(p: Any) -> tuple:
    """INFO ``blocked_clients`` on (real, fake): the fake's INFO counts fakeredis's BLPOP clients too."""
    fake = 0
    if p.server is not None:
        reply = p.fake("INFO", "clients")
        fake = int(parse_info(reply).get("blocked_clients", "0"))
    return p.oracle.blocked_clients(), fake if p.server is not None else p.oracle.blocked_clients()


def _wait_blocked_info(p: Any, n: int, at_most: bool = False) -> None:
    bound = time.monotonic() + WAIT_S
    while True:
        real, fake = _blocked_info(p)
        if (real <= n and fake <= n) if at_most else (real >= n and fake >= n):
            return
        if time.monotonic() > bound:
            pytest.fail(f"blocked clients: real {real}, fake {fake}; waited for {n}")
        time.sleep(0.005)  # real-time: polling INFO on both sides (other threads / a process), bounded above
