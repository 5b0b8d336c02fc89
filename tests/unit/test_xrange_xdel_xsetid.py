"""XRANGE / XREVRANGE / XLEN / XDEL / XSETID handlers (spec §2.3–2.5, §2.8).

Driven through ``DictContext``. Expected replies are what Redis 7.0.15 and Valkey 9.1.2 sent for the
same command sequences (compared side by side when these tests were written).
"""

from __future__ import annotations

import pytest

from fake_streams.errors import ERRORS
from fake_streams.ids import StreamID
from fake_streams.reply import OK
from fake_streams.stream import Stream
from tests.support.context import DictContext
from tests.support.engine import run_checked as run

E = ERRORS
U = 18446744073709551615


@pytest.fixture
def ctx() -> DictContext:
    c = DictContext()
    for sid, f, v in (("1-0", "a", "1"), ("1-5", "b", "2"), ("2-0", "c", "3")):
        run(c, "XADD", "s", sid, f, v)
    c.keyspace[b"str"] = "a string"
    c.modified_keys.clear(), c.events.clear(), c.ready_keys.clear()
    return c


E1, E2, E3 = [b"1-0", [b"a", b"1"]], [b"1-5", [b"b", b"2"]], [b"2-0", [b"c", b"3"]]


# --------------------------------------------------------------------------- XRANGE / XREVRANGE


@pytest.mark.parametrize(
    "argv, reply",
    [
        (("XRANGE", "s", "-", "+"), [E1, E2, E3]),
        (("XREVRANGE", "s", "+", "-"), [E3, E2, E1]),
        (("XRANGE", "s", "1", "1"), [E1, E2]),  # incomplete end = 1-max
        (("XRANGE", "s", "(1-0", "+"), [E2, E3]),
        (("XRANGE", "s", "-", "(2"), [E1, E2, E3]),  # (2 = (2-max → 2-(max-1)
        (("XRANGE", "s", "-", "(2-0"), [E1, E2]),
        (("XRANGE", "s", "2", "1"), []),
        (("XRANGE", "s", "-", "+", "COUNT", "2"), [E1, E2]),
        (("XRANGE", "s", "-", "+", "count", "2", "COUNT", "1"), [E1]),  # last COUNT wins
        (("XREVRANGE", "s", "+", "-", "COUNT", "1"), [E3]),
        (("XRANGE", "s", "-", "+", "COUNT", "0"), None),
        (("XRANGE", "s", "-", "+", "COUNT", "-1"), None),
        (("XREVRANGE", "s", "+", "-", "COUNT", "0"), None),
        (("XREVRANGE", "s", "1234567891245", "-"), [E3, E2, E1]),
        (("XRANGE", "nokey", "-", "+"), []),
        (("XRANGE", "nokey", "-", "+", "COUNT", "0"), []),  # missing key wins over COUNT 0
        (("XREVRANGE", "nokey", "+", "-", "COUNT", "0"), []),
    ],
)
def test_range_replies(ctx, argv, reply):
    assert run(ctx, *argv) == reply


def test_exclusive_bounds_across_ms():
    ctx = DictContext()
    for sid in ("0-1", f"0-{U}", "1-0"):
        run(ctx, "XADD", "e", sid, "a", "1")
    assert run(ctx, "XRANGE", "e", "(0-1", "(1-0") == [[f"0-{U}".encode(), [b"a", b"1"]]]
    assert run(ctx, "XREVRANGE", "e", "(1-0", "(0-1") == [[f"0-{U}".encode(), [b"a", b"1"]]]


@pytest.mark.parametrize(
    "argv, key",
    [
        (("XRANGE", "s", "-", "(0-0"), "INVALID_END_ID"),
        (("XRANGE", "s", f"({U}-{U}", "+"), "INVALID_START_ID"),
        (("XREVRANGE", "s", "(0-0", f"({U}-{U}"), "INVALID_START_ID"),  # argv[3] (start) first
        (("XREVRANGE", "s", "(0-0", "+"), "INVALID_END_ID"),
        (("XREVRANGE", "s", "+", f"({U}-{U}"), "INVALID_START_ID"),
        (("XRANGE", "s", "-", "+", "COUNT"), "SYNTAX"),
        (("XRANGE", "s", "-", "+", "COUNT", "x"), "NOT_INTEGER"),
        (("XRANGE", "s", "-", "+", "COUNT", "+1"), "NOT_INTEGER"),
        (("XRANGE", "s", "-", "+", "FOO", "1"), "SYNTAX"),
        (("XRANGE", "s", "-", "+", "COUNT", "1", "FOO"), "SYNTAX"),
        (("XRANGE", "s", "x", "+"), "INVALID_STREAM_ID"),
        (("XRANGE", "s", "-", "x"), "INVALID_STREAM_ID"),
        (("XRANGE", "s", "x", "y", "COUNT", "z"), "INVALID_STREAM_ID"),
        (("XRANGE", "s", "(-", "+"), "INVALID_STREAM_ID"),
        (("XRANGE", "s", "-", "(+"), "INVALID_STREAM_ID"),
        (("XRANGE", "s", "(", "+"), "INVALID_STREAM_ID"),
        (("XRANGE", "s", "1-*", "+"), "INVALID_STREAM_ID"),
        (("XRANGE", "nokey", "x", "+"), "INVALID_STREAM_ID"),  # argument errors before the key
        (("XRANGE", "nokey", "-", "+", "FOO"), "SYNTAX"),
        (("XRANGE", "str", "x", "+"), "INVALID_STREAM_ID"),
        (("XRANGE", "str", "-", "+"), "WRONGTYPE"),
        (("XRANGE", "str", "-", "+", "COUNT", "0"), "WRONGTYPE"),
        (("XREVRANGE", "str", "+", "-"), "WRONGTYPE"),
    ],
)
def test_range_errors(ctx, argv, key):
    assert run(ctx, *argv) == E[key]


def test_range_option_name_is_a_c_string(ctx):
    assert run(ctx, "XRANGE", "s", "-", "+", b"COUNT\x00junk", "1") == [E1]


def test_range_sees_only_live_entries(ctx):
    run(ctx, "XDEL", "s", "1-5")
    assert run(ctx, "XRANGE", "s", "-", "+") == [E1, E3]
    assert run(ctx, "XREVRANGE", "s", "+", "-", "COUNT", "1") == [E3]


def test_range_reads_touch_nothing(ctx):
    run(ctx, "XRANGE", "s", "-", "+")
    run(ctx, "XLEN", "s")
    assert (ctx.modified_keys, ctx.events, ctx.ready_keys) == ([], [], [])


# --------------------------------------------------------------------------- XLEN


def test_xlen(ctx):
    assert run(ctx, "XLEN", "s") == 3
    assert run(ctx, "XLEN", "nokey") == 0
    assert run(ctx, "XLEN", "str") == E["WRONGTYPE"]
    run(ctx, "XDEL", "s", "1-0", "1-5", "2-0")
    assert run(ctx, "XLEN", "s") == 0


# --------------------------------------------------------------------------- XDEL


def test_xdel_looks_the_key_up_first(ctx):
    assert run(ctx, "XDEL", "nokey", "x") == 0
    assert run(ctx, "XDEL", "str", "1-0") == E["WRONGTYPE"]
    assert run(ctx, "XDEL", "str", "x") == E["WRONGTYPE"]


def test_xdel_parses_every_id_before_deleting(ctx):
    assert run(ctx, "XDEL", "s", "1-0", "x") == E["INVALID_STREAM_ID"]
    assert run(ctx, "XDEL", "s", "-") == E["INVALID_STREAM_ID"]
    assert run(ctx, "XDEL", "s", "+") == E["INVALID_STREAM_ID"]
    assert run(ctx, "XLEN", "s") == 3
    assert (ctx.modified_keys, ctx.events) == ([], [])


def test_xdel_counts_live_entries_once(ctx):
    assert run(ctx, "XDEL", "s", "1-0", "1-0", "9-9", "1") == 1
    assert run(ctx, "XDEL", "s", "1-0") == 0
    stream = ctx.keyspace[b"s"]
    assert (stream.first_id, stream.max_deleted_entry_id, stream.last_id, stream.entries_added) == (
        StreamID(1, 5), StreamID(1, 0), StreamID(2, 0), 3)
    assert ctx.modified_keys == [b"s"] and ctx.events == [("xdel", b"s")] and ctx.ready_keys == []


def test_xdel_max_deleted_is_the_highest_id(ctx):
    run(ctx, "XDEL", "s", "2-0", "1-0")
    stream = ctx.keyspace[b"s"]
    assert (stream.max_deleted_entry_id, stream.first_id) == (StreamID(2, 0), StreamID(1, 5))
    run(ctx, "XDEL", "s", "1-5")
    assert (stream.max_deleted_entry_id, stream.first_id, len(stream)) == (StreamID(2, 0), StreamID(0, 0), 0)
    assert b"s" in ctx.keyspace  # an emptied stream stays


def test_xdel_nothing_deleted_touches_nothing(ctx):
    assert run(ctx, "XDEL", "s", "9-9") == 0
    assert (ctx.modified_keys, ctx.events) == ([], [])


def test_xdel_frees_nodes():
    ctx = DictContext()
    stream = ctx.keyspace[b"n"] = Stream(node_max_entries=2)
    for i in range(1, 6):
        run(ctx, "XADD", "n", f"{i}-0", "f", "v")
    assert stream.radix_tree_keys == 3
    assert run(ctx, "XDEL", "n", "1-0", "2-0") == 2
    assert stream.radix_tree_keys == 2
    assert run(ctx, "XDEL", "n", "3-0") == 1
    assert (stream.radix_tree_keys, stream.node_layout()[0][1:3]) == (2, (1, 1))


# --------------------------------------------------------------------------- XSETID


@pytest.mark.parametrize(
    "argv, key",
    [
        (("s", "x"), "INVALID_STREAM_ID"),
        (("s", "-"), "INVALID_STREAM_ID"),
        (("s", "5-0", "FOO"), "SYNTAX"),
        (("s", "5-0", "ENTRIESADDED"), "SYNTAX"),
        (("s", "5-0", "ENTRIESADDED", "x"), "NOT_INTEGER"),
        (("s", "5-0", "ENTRIESADDED", "-1"), "ENTRIES_ADDED_NEGATIVE"),
        (("s", "5-0", "MAXDELETEDID", "x"), "INVALID_STREAM_ID"),
        (("s", "5-0", "MAXDELETEDID", "6-0"), "XSETID_BELOW_GIVEN_MAX_DELETED"),
        (("s", "5-0", "0"), "SYNTAX"),  # "…with an offset but without a maximal tombstone"
        (("s", "5-0", "0-0"), "SYNTAX"),
        (("s", "5-0", "ENTRIESADDED", "1", "0"), "SYNTAX"),
        (("nokey", "5-0"), "NO_SUCH_KEY"),
        (("nokey", "x"), "INVALID_STREAM_ID"),
        (("nokey", "5-0", "ENTRIESADDED", "-1"), "ENTRIES_ADDED_NEGATIVE"),
        (("str", "5-0"), "WRONGTYPE"),
        (("s", "1-0"), "XSETID_BELOW_TOP"),
        (("s", "1-9"), "XSETID_BELOW_TOP"),
        (("s", "2-0", "ENTRIESADDED", "1"), "XSETID_ENTRIES_ADDED_SMALL"),
    ],
)
def test_xsetid_errors(ctx, argv, key):
    assert run(ctx, "XSETID", *argv) == E[key]
    stream = ctx.keyspace[b"s"]
    assert (stream.last_id, stream.entries_added, stream.max_deleted_entry_id) == (StreamID(2, 0), 3, StreamID(0, 0))
    assert ctx.events == []


def test_xsetid_sets_counters(ctx):
    stream = ctx.keyspace[b"s"]
    assert run(ctx, "XSETID", "s", "2-0", "ENTRIESADDED", "3") == OK
    assert run(ctx, "XSETID", "s", "3-0", "ENTRIESADDED", "3", "MAXDELETEDID", "2-5") == OK
    assert (stream.last_id, stream.entries_added, stream.max_deleted_entry_id) == (StreamID(3, 0), 3, StreamID(2, 5))
    assert run(ctx, "XSETID", "s", "2-1") == E["XSETID_BELOW_MAX_DELETED"]
    assert run(ctx, "XSETID", "s", "2-5", "MAXDELETEDID", "0-0") == OK  # 0-0 leaves it alone
    assert (stream.last_id, stream.max_deleted_entry_id) == (StreamID(2, 5), StreamID(2, 5))
    assert run(ctx, "XADD", "s", "2-5", "a", "1") == E["XADD_ID_TOO_SMALL"]
    assert run(ctx, "XADD", "s", "2-6", "a", "1") == b"2-6"
    assert stream.first_id == StreamID(1, 0)  # XSETID never touches it


def test_xsetid_notifies_but_does_not_dirty_watch(ctx):
    run(ctx, "XSETID", "s", "9-0")
    assert ctx.events == [("xsetid", b"s")]
    assert ctx.modified_keys == [] and ctx.ready_keys == []  # no signalModifiedKey on the server


def test_xsetid_options_repeat_last_wins():
    ctx = DictContext()
    run(ctx, "XADD", "t", "1-0", "a", "1")
    run(ctx, "XDEL", "t", "1-0")
    assert run(ctx, "XSETID", "t", "1-0", "entriesadded", "0", "maxdeletedid", "1-0", "ENTRIESADDED", "7") == OK
    stream = ctx.keyspace[b"t"]
    assert (stream.last_id, stream.entries_added, stream.max_deleted_entry_id) == (StreamID(1, 0), 7, StreamID(1, 0))


@pytest.mark.parametrize("version, checks", [("7.4", True), ("7.2", True), ("valkey-8.0", True), ("7.0", False)])
def test_xsetid_below_max_deleted_on_an_empty_stream(version, checks):
    ctx = DictContext(version=version)
    run(ctx, "XADD", "t", "1-0", "a", "1")
    run(ctx, "XDEL", "t", "1-0")
    expected = E["XSETID_BELOW_MAX_DELETED"] if checks else OK
    assert run(ctx, "XSETID", "t", "0-5") == expected
    assert run(ctx, "XSETID", "t", "1-0", "MAXDELETEDID", "0-9") == OK
    assert run(ctx, "XSETID", "t", "0-9") == OK  # empty: only the max-deleted check applies
    stream = ctx.keyspace[b"t"]
    assert (stream.last_id, stream.max_deleted_entry_id, stream.entries_added) == (StreamID(0, 9), StreamID(0, 9), 1)


def test_specs():
    from fake_streams.commands import COMMANDS

    expected = {"xrange": (-4, {"readonly"}), "xrevrange": (-4, {"readonly"}), "xlen": (2, {"readonly", "fast"}),
                "xdel": (-3, {"write", "fast"}), "xsetid": (-3, {"write", "denyoom", "fast"})}
    for name, (arity, flags) in expected.items():
        assert (COMMANDS[name].arity, COMMANDS[name].flags) == (arity, frozenset(flags))
    assert run(DictContext(), "XRANGE", "s", "-") == E["WRONG_ARITY"].format(command="xrange")
    assert run(DictContext(), "XDEL", "s") == E["WRONG_ARITY"].format(command="xdel")
    assert run(DictContext(), "XSETID", "s") == E["WRONG_ARITY"].format(command="xsetid")
