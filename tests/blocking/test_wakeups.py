"""Who is woken, when, in which order, with what reply (spec §3), fake vs real, raw replies, RESP2 and RESP3.

Complements the Tcl ports (test_blocking_tcl.py): FIFO order of several blocked clients, writes inside
MULTI and EVAL served at EXEC / script end, the R7.0 model's single-key replies, releases by expiry /
MOVE, CLIENT UNBLOCK, timeouts, BLOCK inside MULTI and scripts, INFO blocked_clients.
"""

from __future__ import annotations

import time
from typing import Any

from tests.conformance.oracles import parse_info
from tests.conformance.replies import Err

from .conftest import WAIT_S, let_block_time_out, stream_pairs
from .test_blocking_tcl import read_released


def _group(p: Any, key: str = "s", group: str = "g") -> None:
    p.same("XGROUP", "CREATE", key, group, "$", "MKSTREAM")


def _xreadgroup(rd: Any, consumer: str, count: str = "1", block: str = "0", key: str = "s") -> None:
    rd.send("XREADGROUP", "GROUP", "g", consumer, "COUNT", count, "BLOCK", block, "STREAMS", key, ">")


# ----------------------------------------------------------------------------------------- order
def test_xreadgroup_clients_of_one_group_are_served_in_blocking_order_each_up_to_its_count(pair):
    """Three clients COUNT 1, three XADDs in one EXEC: each gets one entry, in the order they blocked."""
    _group(pair)
    readers = [pair.connect() for _ in range(3)]
    for i, rd in enumerate(readers):
        _xreadgroup(rd, f"c{i}")
        pair.wait_blocked(i + 1)
    pair.same("MULTI")
    for i in range(1, 4):
        pair.same("XADD", "s", f"{i}-1", "n", str(i))
    pair.same("EXEC")
    for i, rd in enumerate(readers):
        assert stream_pairs(rd.read()) == [[b"s", [[f"{i + 1}-1".encode(), [b"n", str(i + 1).encode()]]]]]


def test_a_served_xreadgroup_client_leaves_the_others_blocked_until_more_data(pair):
    """Two clients COUNT 1, one XADD: the first takes it, the second re-blocks; the next XADD is its."""
    _group(pair)
    first, second = pair.connect(), pair.connect()
    _xreadgroup(first, "c1")
    pair.wait_blocked(1)
    _xreadgroup(second, "c2")
    pair.wait_blocked(2)
    pair.same("XADD", "s", "1-1", "n", "1")
    assert stream_pairs(first.read()) == [[b"s", [[b"1-1", [b"n", b"1"]]]]]
    pair.wait_blocked(1)
    pair.same("XADD", "s", "2-1", "n", "2")
    assert stream_pairs(second.read()) == [[b"s", [[b"2-1", [b"n", b"2"]]]]]


def test_several_xread_clients_each_get_their_own_copy(pair):
    readers = [pair.connect() for _ in range(3)]
    for i, rd in enumerate(readers):
        rd.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
        pair.wait_blocked(i + 1)
    pair.same("XADD", "s", "5-1", "f", "v")
    for rd in readers:
        assert stream_pairs(rd.read()) == [[b"s", [[b"5-1", [b"f", b"v"]]]]]


# ------------------------------------------------------------------------------ execution units
def test_two_keys_written_in_one_exec_give_one_reply(pair):
    """R7.2+: the re-run reply names both keys; R7.0: only the key visited first (spec §3.2, §3.4)."""
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "0", "STREAMS", "a", "b", "$", "$")
    pair.wait_blocked(1)
    pair.same("MULTI")
    pair.same("XADD", "a", "1-1", "f", "a")
    pair.same("XADD", "b", "1-1", "f", "b")
    pair.same("EXEC")
    got = stream_pairs(rd.read())
    keys = [k for k, _ in got]
    assert keys == ([b"a", b"b"] if pair.profile.has("blocked_reprocess") else [b"a"])


def test_xadd_plus_xdel_in_one_exec(pair):
    """R7.0 serves ``[[s, []]]`` (last_id moved); R7.2+ re-runs, finds nothing live and blocks again."""
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    pair.wait_blocked(1)
    pair.same("MULTI")
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same("XDEL", "s", "1-1")
    pair.same("EXEC")
    if pair.profile.has("blocked_reprocess"):
        pair.wait_blocked(1)
        pair.same("XADD", "s", "2-1", "f", "w")
        assert stream_pairs(rd.read()) == [[b"s", [[b"2-1", [b"f", b"w"]]]]]
    else:
        assert stream_pairs(rd.read()) == [[b"s", []]]


def test_xadd_inside_a_script_wakes_the_reader_when_the_script_ends(pair):
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    pair.wait_blocked(1)
    script = "redis.call('XADD', KEYS[1], '1-1', 'f', 'one'); redis.call('XADD', KEYS[1], '1-2', 'f', 'two'); return 1"
    assert pair.same("EVAL", script, "1", "s") == 1
    # both entries: the script is one execution unit (R7.0: served from saved state with COUNT 1000)
    assert stream_pairs(rd.read()) == [[b"s", [[b"1-1", [b"f", b"one"]], [b"1-2", [b"f", b"two"]]]]]


def test_block_inside_multi_answers_nil_at_once(pair):
    pair.same("MULTI")
    pair.same("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    pair.same("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "nokey", ">")
    pair.same("EXEC")


def test_block_inside_a_script_per_profile(pair):
    """R7.4+: nil at once; R7.0 / R7.2: the 'not allowed with BLOCK option from scripts' error."""
    got = pair.same("EVAL", "return redis.pcall('XREAD', 'BLOCK', '0', 'STREAMS', KEYS[1], '$')", "1", "s")
    if pair.profile.has("block_allowed_in_scripts"):
        assert got is None
    else:
        assert isinstance(got, Err) and "not allowed with BLOCK option from scripts" in got.full


# -------------------------------------------------------------------------------------- releases
def test_expiry_of_the_key_releases_a_blocked_xreadgroup(pair):
    _group(pair, key="mystream", group="mygroup")
    rd = pair.connect()
    rd.send("XREADGROUP", "GROUP", "mygroup", "Alice", "BLOCK", "0", "STREAMS", "mystream", ">")
    pair.wait_blocked(1)
    pair.same("PEXPIRE", "mystream", "30")
    read_released(pair, rd, "XREADGROUP_NOGROUP")


def test_move_of_the_key_to_another_db_releases_a_blocked_xreadgroup(pair):
    _group(pair, key="mystream", group="mygroup")
    rd = pair.connect()
    rd.send("XREADGROUP", "GROUP", "mygroup", "Alice", "BLOCK", "0", "STREAMS", "mystream", ">")
    pair.wait_blocked(1)
    assert pair.same("MOVE", "mystream", "3") == 1
    read_released(pair, rd, "XREADGROUP_NOGROUP")


def test_del_does_not_wake_an_xread_client_and_a_new_stream_serves_it(pair):
    pair.same("XADD", "s", "5-1", "f", "v")
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    pair.wait_blocked(1)
    pair.same("DEL", "s")
    pair.wait_blocked(1)
    pair.same("XADD", "s", "1-1", "f", "old")  # below the ID $ resolved to: not served
    pair.wait_blocked(1)
    pair.same("XADD", "s", "6-1", "f", "new")
    assert stream_pairs(rd.read()) == [[b"s", [[b"6-1", [b"f", b"new"]]]]]


def test_client_unblock_timeout_and_error(pair):
    rd = pair.connect()
    who = rd.client_id()
    rd.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    pair.wait_blocked(1)
    assert pair.same("CLIENT", "UNBLOCK", who) == 1
    assert rd.read() is None
    rd.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    pair.wait_blocked(1)
    assert pair.same("CLIENT", "UNBLOCK", who, "ERROR") == 1
    rd.read_error("UNBLOCKED_BY_CLIENT")
    assert pair.same("CLIENT", "UNBLOCK", who) == 0  # no longer blocked


def test_timeout_answers_nil_and_unregisters(pair):
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "100", "STREAMS", "s", "$")
    let_block_time_out(pair)
    assert rd.read() is None
    pair.same("XADD", "s", "1-1", "f", "v")  # nobody is blocked any more
    assert _blocked_clients(pair) == (0, 0)


def test_info_blocked_clients_counts_stream_readers(pair):
    readers = [pair.connect() for _ in range(2)]
    for i, rd in enumerate(readers):
        rd.send("XREAD", "BLOCK", "0", "STREAMS", f"k{i}", "$")
        pair.wait_blocked(i + 1)
    assert _blocked_clients(pair) == (2, 2)
    pair.same("XADD", "k0", "1-1", "f", "v")
    readers[0].read()
    assert _blocked_clients(pair) == (1, 1)
    readers[1].close()
    _wait_blocked_clients(pair, 0)


def _wait_blocked_clients(p: Any, n: int) -> None:
    bound = time.monotonic() + WAIT_S
    while _blocked_clients(p) != (n, n):
        assert time.monotonic() < bound, f"blocked clients {_blocked_clients(p)}, want {n} on both sides"
        time.sleep(0.005)  # real-time: polling INFO on both sides (a closing client is freed asynchronously)


def _blocked_clients(p: Any) -> tuple:
    real = p.oracle.blocked_clients()
    if p.server is None:
        return real, real
    return real, int(parse_info(p.fake("INFO", "clients")).get("blocked_clients", "0"))


def test_rename_away_releases_a_blocked_xreadgroup_of_the_source_key(pair):
    _group(pair, key="mystream", group="mygroup")
    rd = pair.connect()
    rd.send("XREADGROUP", "GROUP", "mygroup", "Alice", "BLOCK", "0", "STREAMS", "mystream", ">")
    pair.wait_blocked(1)
    pair.same("RENAME", "mystream", "elsewhere")
    read_released(pair, rd, "XREADGROUP_NOGROUP")


def test_copy_onto_the_key_serves_a_blocked_xread(pair):
    pair.same("XADD", "src", "7-1", "f", "v")
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "0", "STREAMS", "dst", "$")
    pair.wait_blocked(1)
    assert pair.same("COPY", "src", "dst") == 1
    assert stream_pairs(rd.read()) == [[b"dst", [[b"7-1", [b"f", b"v"]]]]]


def test_swapdb_bringing_a_stream_in_serves_a_blocked_xread(pair):
    pair.same("SELECT", "5")
    pair.same("XADD", "s", "3-1", "f", "v")
    pair.same("SELECT", "0")
    rd = pair.connect()
    rd.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    pair.wait_blocked(1)
    pair.same("SWAPDB", "0", "5")
    assert stream_pairs(rd.read()) == [[b"s", [[b"3-1", [b"f", b"v"]]]]]
