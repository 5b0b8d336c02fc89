"""XADD and XTRIM handlers (spec §2.1, §2.2): parse order, errors, replies, side effects.

Driven through ``DictContext`` (a dict keyspace, no transport). Error expectations are the exact texts
the servers sent for the same commands (Redis 7.0.15 and Valkey 9.1.2, compared side by side when
these tests were written); node-dependent numbers are the Redis test suite's (spec §7).
"""

from __future__ import annotations

import pytest

from fake_streams.commands.xadd_xtrim import parse_add_trim_args
from fake_streams.errors import ERRORS, ReplyError
from fake_streams.ids import MAX_ID, StreamID
from fake_streams.stream import Stream
from tests.support.context import DictContext
from tests.support.engine import run_checked as run

E = ERRORS


@pytest.fixture
def ctx() -> DictContext:
    return DictContext()


def fill(ctx: DictContext, key: bytes, n: int, **config) -> Stream:
    stream = ctx.keyspace[key] = Stream(**config)
    for i in range(1, n + 1):
        assert run(ctx, "XADD", key, f"{i}-0", "xitem", "v") == b"%d-0" % i
    return stream


# --------------------------------------------------------------------------- XADD replies


def test_xadd_auto_id_uses_ctx_now(ctx):
    ctx.now_ms = 1_700_000_000_000
    assert run(ctx, "XADD", "s", "*", "a", "1") == b"1700000000000-0"
    assert run(ctx, "XADD", "s", "*", "a", "2") == b"1700000000000-1"
    ctx.now_ms -= 5000  # clock going backwards: last_id + 1
    assert run(ctx, "XADD", "s", "*", "a", "3") == b"1700000000000-2"
    ctx.now_ms += 10000
    assert run(ctx, "XADD", "s", "*", "a", "4") == b"1700000005000-0"


def test_xadd_explicit_and_partial_ids(ctx):
    assert run(ctx, "XADD", "s", "0-*", "a", "1") == b"0-1"  # "0-* should succeed"
    assert run(ctx, "XADD", "s", "123-456", "a", "1") == b"123-456"
    assert run(ctx, "XADD", "s", "123-*", "a", "1") == b"123-457"
    assert run(ctx, "XADD", "s", "789-*", "a", "1") == b"789-0"
    assert run(ctx, "XADD", "s", "789-*", "a", "1") == b"789-1"
    assert run(ctx, "XADD", "s", "700-*", "a", "1") == E["XADD_ID_TOO_SMALL"]
    assert run(ctx, "XADD", "s", "789-1", "a", "1") == E["XADD_ID_TOO_SMALL"]
    assert run(ctx, "XADD", "s", "800", "a", "1") == b"800-0"


def test_xadd_keeps_duplicate_fields_and_bytes(ctx):
    assert run(ctx, "XADD", "d", "1-0", "a", "1", "a", "2") == b"1-0"
    assert run(ctx, "XRANGE", "d", "-", "+") == [[b"1-0", [b"a", b"1", b"a", b"2"]]]
    raw = bytes(range(256))
    run(ctx, "XADD", "d", "2-0", raw, b"\x00\r\n")
    assert run(ctx, "XRANGE", "d", "2", "2") == [[b"2-0", [raw, b"\x00\r\n"]]]


def test_xadd_side_effects(ctx):
    run(ctx, "XADD", "s", "1-0", "a", "1")
    assert ctx.modified_keys == [b"s"] and ctx.ready_keys == [b"s"]
    assert ctx.events == [("xadd", b"s")]
    run(ctx, "XADD", "s", "MAXLEN", "0", "2-0", "a", "1")
    assert ctx.events[1:] == [("xadd", b"s"), ("xtrim", b"s")]
    run(ctx, "XADD", "s", "MAXLEN", "5", "3-0", "a", "1")  # nothing trimmed: no xtrim event
    assert ctx.events[3:] == [("xadd", b"s")]
    assert ctx.ready_keys == [b"s"] * 3


def test_xadd_errors_touch_nothing(ctx):
    run(ctx, "XADD", "s", "5-0", "a", "1")
    ctx.modified_keys.clear(), ctx.events.clear(), ctx.ready_keys.clear()
    assert run(ctx, "XADD", "s", "5-0", "a", "1") == E["XADD_ID_TOO_SMALL"]
    assert (ctx.modified_keys, ctx.events, ctx.ready_keys) == ([], [], [])


def test_xadd_nomkstream(ctx):
    assert run(ctx, "XADD", "n", "NOMKSTREAM", "*", "a", "1") is None
    assert b"n" not in ctx.keyspace and ctx.events == [] and ctx.modified_keys == []
    run(ctx, "XADD", "n", "1-0", "a", "1")
    assert run(ctx, "XADD", "n", "nomkstream", "maxlen", "1", "NoMkStream", "2-0", "a", "1") == b"2-0"
    assert len(ctx.keyspace[b"n"]) == 1


def test_xadd_maxlen_zero_leaves_an_empty_stream(ctx):
    assert run(ctx, "XADD", "m", "MAXLEN", "0", "5-0", "a", "1") == b"5-0"  # "XADD can CREATE an empty stream"
    stream = ctx.keyspace[b"m"]
    assert (len(stream), stream.last_id, stream.entries_added, stream.first_id) == (0, StreamID(5, 0), 1, StreamID(0, 0))
    assert run(ctx, "XLEN", "m") == 0


def test_xadd_minid_trims_after_adding(ctx):
    assert run(ctx, "XADD", "m2", "MINID", "5", "3-0", "a", "1") == b"3-0"
    assert run(ctx, "XLEN", "m2") == 0
    assert run(ctx, "XADD", "m2", "MINID", "5", "7-0", "a", "1") == b"7-0"
    assert run(ctx, "XLEN", "m2") == 1


def test_xadd_with_limit_consecutive_calls(ctx):
    fill(ctx, b"s", 100, node_max_entries=10)
    run(ctx, "XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "101-0", "xitem", "v")
    assert run(ctx, "XLEN", "s") == 71
    run(ctx, "XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "102-0", "xitem", "v")
    assert run(ctx, "XLEN", "s") == 62


def test_xadd_maxlen_approx_keeps_whole_nodes(ctx):
    fill(ctx, b"s", 250)
    run(ctx, "XADD", "s", "MAXLEN", "~", "100", "251-0", "xitem", "v")
    assert run(ctx, "XLEN", "s") == 151
    run(ctx, "XADD", "s", "MAXLEN", "=", "100", "252-0", "xitem", "v")
    assert run(ctx, "XLEN", "s") == 100


# --------------------------------------------------------------------------- XADD ID edge cases


def test_xadd_zero_id_is_refused_before_the_key_is_touched(ctx):
    for form in ("0-0", "0"):
        assert run(ctx, "XADD", "z", form, "a", "1") == E["XADD_ID_ZERO"]
    assert b"z" not in ctx.keyspace  # "XADD with ID 0-0"
    ctx.keyspace[b"str"] = "a string"
    assert run(ctx, "XADD", "str", "0-0", "a", "1") == E["XADD_ID_ZERO"]  # before WRONGTYPE
    assert run(ctx, "XADD", "str", "*", "a", "1") == E["WRONGTYPE"]
    assert run(ctx, "XADD", "str", "NOMKSTREAM", "*", "a", "1") == E["WRONGTYPE"]


def test_xadd_exhausted_stream(ctx):
    assert run(ctx, "XADD", "s", "18446744073709551615-18446744073709551614", "a", "1") == (
        b"18446744073709551615-18446744073709551614")
    assert run(ctx, "XADD", "s", "*", "a", "1") == b"18446744073709551615-18446744073709551615"
    for form in ("*", "18446744073709551615-*", "1-1"):
        assert run(ctx, "XADD", "s", form, "a", "1") == E["XADD_ID_EXHAUSTED"]
    assert run(ctx, "XDEL", "s", "18446744073709551615-18446744073709551615") == 1
    assert run(ctx, "XADD", "s", "*", "a", "1") == E["XADD_ID_EXHAUSTED"]  # last_id, not the top entry


def test_xadd_seq_overflow_rolls_into_next_ms(ctx):
    run(ctx, "XADD", "s", "5-18446744073709551615", "a", "1")
    ctx.now_ms = 1  # "XADD streamID edge"
    assert run(ctx, "XADD", "s", "*", "a", "1") == b"6-0"


@pytest.mark.parametrize("version, key", [("7.4", "XADD_ID_TOO_SMALL"), ("7.2", "XADD_ID_TOO_SMALL"),
                                          ("valkey-8.0", "XADD_ID_TOO_SMALL"), ("7.0", "ELEMENTS_TOO_LARGE")])
def test_xadd_partial_id_with_maximal_seq(version, key):
    ctx = DictContext(version=version)
    run(ctx, "XADD", "s", "5-18446744073709551615", "a", "1")
    assert run(ctx, "XADD", "s", "5-*", "a", "1") == E[key]  # 7.0: stale errno text (spec §6 row 12)
    assert run(ctx, "XADD", "s", "6-*", "a", "1") == b"6-0"


def test_xadd_id_of_deleted_top_cannot_be_reused(ctx):
    run(ctx, "XADD", "s", "5-0", "a", "1")
    run(ctx, "XDEL", "s", "5-0")
    assert run(ctx, "XADD", "s", "5-0", "a", "1") == E["XADD_ID_TOO_SMALL"]
    assert run(ctx, "XADD", "s", "5-*", "a", "1") == b"5-1"


class _Huge(bytes):
    """A value that claims to be 1 GiB long (the ERANGE check only sums lengths)."""

    def __len__(self) -> int:
        return 1 << 30


def test_xadd_elements_too_large_keeps_the_new_key(ctx):
    assert ctx.run("XADD", "big", "*", "a", _Huge(b"x")) == E["ELEMENTS_TOO_LARGE"]
    assert len(ctx.keyspace[b"big"]) == 0  # the server created the key before appending
    assert ctx.events == [] and ctx.modified_keys == []
    assert ctx.run("XADD", "big", "*", _Huge(b"x")[:0], "b") == b"1000000-0"


# --------------------------------------------------------------------------- XADD parse order


@pytest.mark.parametrize(
    "argv, key",
    [
        (("MAXLEN", "5", "MINID", "1", "*", "a", "1"), "STRATEGY_TWICE"),
        (("MAXLEN", "5", "MAXLEN", "1", "*", "a", "1"), "STRATEGY_TWICE"),
        (("MINID", "5", "MINID", "1", "*", "a", "1"), "STRATEGY_TWICE"),
        (("MAXLEN", "x", "*", "a", "1"), "NOT_INTEGER"),
        (("MAXLEN", "+5", "*", "a", "1"), "NOT_INTEGER"),
        (("MAXLEN", "-1", "*", "a", "1"), "MAXLEN_NEGATIVE"),
        (("MAXLEN", "~", "-1", "*", "a", "1"), "MAXLEN_NEGATIVE"),
        (("MINID", "-", "*", "a", "1"), "INVALID_STREAM_ID"),
        (("MINID", "+", "*", "a", "1"), "INVALID_STREAM_ID"),
        (("MINID", "x", "*", "a", "1"), "INVALID_STREAM_ID"),
        (("LIMIT", "x", "*", "a", "1"), "NOT_INTEGER"),
        (("LIMIT", "-1", "*", "a", "1"), "LIMIT_NEGATIVE"),
        (("LIMIT", "5", "*", "a", "1"), "LIMIT_WITHOUT_STRATEGY"),
        (("LIMIT", "0", "*", "a", "1"), "LIMIT_WITHOUT_APPROX"),
        (("MAXLEN", "5", "LIMIT", "5", "*", "a", "1"), "LIMIT_WITHOUT_APPROX"),
        (("MAXLEN", "=", "5", "LIMIT", "5", "*", "a", "1"), "LIMIT_WITHOUT_APPROX"),
        (("MAXLEN", "~", "5", "LIMIT", "5", "LIMIT", "-1", "*", "a", "1"), "LIMIT_NEGATIVE"),
        (("MAXLEN", "5", "*", "a"), "WRONG_ARITY"),
        (("MAXLEN", "5", "*", "a", "1", "b"), "WRONG_ARITY"),
        (("MAXLEN", "5", "MAXLEN"), "INVALID_STREAM_ID"),  # a trailing MAXLEN is read as the ID
        (("MAXLEN", "~", "5"), "WRONG_ARITY"),  # options only: no ID found
        (("NOMKSTREAM", "NOMKSTREAM", "x"), "INVALID_STREAM_ID"),
        (("0-0", "a"), "WRONG_ARITY"),  # arity before the 0-0 check
        (("-", "a", "1"), "INVALID_STREAM_ID"),
        (("NOMKSTREAM", "MAXLEN", "x", "*", "a", "1"), "NOT_INTEGER"),
        (("foo", "*", "a", "1"), "INVALID_STREAM_ID"),
    ],
)
def test_xadd_parse_errors(ctx, argv, key):
    expected = ReplyError(key, command="xadd").render(ctx.profile.errors)
    assert run(ctx, "XADD", "s", *argv) == expected
    assert b"s" not in ctx.keyspace


def test_xadd_options_in_any_order(ctx):
    fill(ctx, b"s", 10, node_max_entries=2)
    assert run(ctx, "XADD", "s", "LIMIT", "4", "MAXLEN", "~", "1", "11-0", "a", "1") == b"11-0"
    assert run(ctx, "XLEN", "s") == 7  # two 2-entry nodes removed
    assert run(ctx, "XADD", "s", "maxlen", "~", "1", "LIMIT", "4", "LIMIT", "0", "12-0", "a", "1") == b"12-0"
    assert run(ctx, "XLEN", "s") == 2  # LIMIT 0 = unlimited; the 2-entry tail node stays


def test_option_names_are_c_strings(ctx):
    # strcasecmp / one-character compares stop at a NUL (verified on Redis 7.0.15 and Valkey 9.1.2)
    fill(ctx, b"s", 3)
    assert run(ctx, "XADD", "s", b"maxlen\x00x", b"~\x00", "1", b"*\x00zz", "a", "1") == b"1000000-0"
    assert run(ctx, "XLEN", "s") == 4  # ~: one partial node, nothing removed


def test_parse_add_trim_args_result():
    args = parse_add_trim_args([b"k", b"NOMKSTREAM", b"MINID", b"~", b"5", b"LIMIT", b"3", b"7-*", b"f", b"v"], True)
    assert (args.minid, args.maxlen, args.approx, args.limit, args.nomkstream) == (StreamID(5, 0), None, True, 3, True)
    assert (args.id_pos, args.sid, args.seq_given) == (7, StreamID(7, 0), False)
    args = parse_add_trim_args([b"k", b"MAXLEN", b"9"], False)
    assert (args.maxlen, args.approx, args.limit, args.has_strategy) == (9, False, None, True)


# --------------------------------------------------------------------------- XTRIM


@pytest.mark.parametrize(
    "argv, key",
    [
        (("MAXLEN", "x"), "NOT_INTEGER"),
        (("NOMKSTREAM", "MAXLEN", "1"), "SYNTAX"),
        (("*", "MAXLEN", "1"), "SYNTAX"),
        (("MAXLEN", "1", "foo"), "SYNTAX"),
        (("maXlen", "1", "limit"), "SYNTAX"),
        (("LIMIT", "1"), "LIMIT_WITHOUT_STRATEGY"),
        (("LIMIT", "0"), "XTRIM_NO_STRATEGY"),
        (("MAXLEN", "1", "LIMIT", "0"), "LIMIT_WITHOUT_APPROX"),
        (("MAXLEN", "=", "1", "LIMIT", "1"), "LIMIT_WITHOUT_APPROX"),
        (("MINID", "~", "1", "MAXLEN", "1"), "STRATEGY_TWICE"),
        (("MAXLEN", "~"), "NOT_INTEGER"),
        (("MAXLEN", "="), "NOT_INTEGER"),
        (("MAXLEN", "~", "~"), "NOT_INTEGER"),
        (("LIMIT", "~", "1"), "NOT_INTEGER"),
        (("MINID", "-"), "INVALID_STREAM_ID"),
        (("MAXLEN", "-5"), "MAXLEN_NEGATIVE"),
    ],
)
def test_xtrim_parse_errors_win_over_a_missing_key(ctx, argv, key):
    assert run(ctx, "XTRIM", "nokey", *argv) == E[key]
    ctx.keyspace[b"str"] = "a string"
    assert run(ctx, "XTRIM", "str", *argv) == E[key]


def test_xtrim_missing_and_wrong_type(ctx):
    assert run(ctx, "XTRIM", "nokey", "MAXLEN", "1") == 0
    assert run(ctx, "XTRIM", "nokey", "MAXLEN", "~", "1", "LIMIT", "1") == 0
    assert run(ctx, "XTRIM", "nokey", "MINID", "~", "1", "LIMIT", "1") == 0
    ctx.keyspace[b"str"] = "a string"
    assert run(ctx, "XTRIM", "str", "MAXLEN", "1") == E["WRONGTYPE"]


def test_xtrim_maxlen_basic(ctx):
    fill(ctx, b"s", 1000)  # "XTRIM with MAXLEN option basic test"
    assert run(ctx, "XTRIM", "s", "MAXLEN", "666") == 334
    assert run(ctx, "XTRIM", "s", "MAXLEN", "=", "555") == 111
    assert run(ctx, "XTRIM", "s", "MAXLEN", "~", "444") == 55
    assert run(ctx, "XLEN", "s") == 500
    assert run(ctx, "XTRIM", "s", "MAXLEN", "~", "400") == 100
    assert run(ctx, "XLEN", "s") == 400


def test_xtrim_approx_is_limited_exact_is_not(ctx):
    fill(ctx, b"s", 102, node_max_entries=1)  # "XTRIM with ~ is limited"
    assert run(ctx, "XTRIM", "s", "MAXLEN", "~", "1") == 100
    assert run(ctx, "XLEN", "s") == 2
    fill(ctx, b"t", 102, node_max_entries=1)  # "XTRIM without ~ is not limited"
    assert run(ctx, "XTRIM", "t", "MAXLEN", "1") == 101
    fill(ctx, b"u", 102, node_max_entries=1)  # "XTRIM without ~ and with LIMIT"
    assert run(ctx, "XTRIM", "u", "MAXLEN", "1", "LIMIT", "30") == E["LIMIT_WITHOUT_APPROX"]


def test_xtrim_limit(ctx):
    fill(ctx, b"s", 3, node_max_entries=2)  # "XTRIM with LIMIT delete entries no more than limit"
    assert run(ctx, "XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "1") == 0
    assert run(ctx, "XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "2") == 2


def test_xtrim_minid(ctx):
    fill(ctx, b"s", 5)
    run(ctx, "XDEL", "s", "2-0")
    assert run(ctx, "XTRIM", "s", "MINID", "4") == 2
    assert run(ctx, "XRANGE", "s", "-", "+") == [[b"4-0", [b"xitem", b"v"]], [b"5-0", [b"xitem", b"v"]]]
    stream = ctx.keyspace[b"s"]
    assert (stream.first_id, stream.max_deleted_entry_id, stream.last_id) == (StreamID(4, 0), StreamID(2, 0),
                                                                             StreamID(5, 0))


def test_xtrim_side_effects_only_when_something_went(ctx):
    fill(ctx, b"s", 5)
    ctx.modified_keys.clear(), ctx.events.clear(), ctx.ready_keys.clear()
    assert run(ctx, "XTRIM", "s", "MAXLEN", "10") == 0
    assert (ctx.modified_keys, ctx.events) == ([], [])
    assert run(ctx, "XTRIM", "s", "MAXLEN", "0") == 5
    assert (ctx.modified_keys, ctx.events, ctx.ready_keys) == ([b"s"], [("xtrim", b"s")], [])
    assert b"s" in ctx.keyspace and run(ctx, "XLEN", "s") == 0  # an emptied stream stays


def test_xtrim_never_moves_last_id_or_counters(ctx):
    fill(ctx, b"s", 5)
    run(ctx, "XTRIM", "s", "MAXLEN", "0")
    stream = ctx.keyspace[b"s"]
    assert (stream.last_id, stream.entries_added, stream.max_deleted_entry_id) == (StreamID(5, 0), 5, StreamID(0, 0))
    assert run(ctx, "XADD", "s", "5-0", "a", "1") == E["XADD_ID_TOO_SMALL"]


def test_specs():
    from fake_streams.commands import COMMANDS

    assert (COMMANDS["xadd"].arity, COMMANDS["xadd"].flags) == (-5, frozenset({"write", "denyoom", "fast"}))
    assert (COMMANDS["xtrim"].arity, COMMANDS["xtrim"].flags) == (-4, frozenset({"write"}))
    assert run(DictContext(), "XADD", "s", "*", "a") == E["WRONG_ARITY"].format(command="xadd")
    assert run(DictContext(), "XTRIM", "s", "MAXLEN") == E["WRONG_ARITY"].format(command="xtrim")
    assert MAX_ID.encode() == b"18446744073709551615-18446744073709551615"
