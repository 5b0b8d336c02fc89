"""XREAD / XREADGROUP (spec §2.6, §2.9, §2.10, §3): parse order, every error text, serving rules,
group bookkeeping, history reads, the BlockRequest handed to the blocking layer, the R7.0 saved-state
server, profile differences and the XREADGROUP seed document.

Replies are compared exactly (RESP2 lists, RESP3 dicts); times come from ``ctx.now_ms``.
"""

from __future__ import annotations

import pytest

from fake_streams.commands.base import BlockRequest
from fake_streams.commands.xread import BLOCKED_DEFAULT_COUNT_R70, SavedRead, serve_blocked_r70
from fake_streams.errors import ReplyError
from fake_streams.groups import INVALID_ENTRIES_READ, NEVER_ACTIVE
from fake_streams.ids import MAX_ID, MIN_ID
from fake_streams.profiles import get_profile
from fake_streams.reply import OK
from tests.support.context import DictContext
from tests.support.engine import ALL, EAGER, PLUS, T0, sid
from tests.support.engine import check_all as check
from tests.support.engine import profile_err as err
from tests.support.redis_compat import NO_RESP3


def E(i, field=b"f", value=None):
    """The entry ``i-0`` as added by :func:`setup`."""
    return [b"%d-0" % i, [field, value if value is not None else b"%d" % i]]


def setup(version="7.4", n=3, protocol=2, group=None, key="s"):
    """``key`` with entries 1-0..n-0 (``f <i>``) and optionally a group at 0."""
    ctx = DictContext(version, protocol=protocol, now_ms=T0)
    for i in range(1, n + 1):
        ctx.run("XADD", key, f"{i}-0", "f", str(i))
    if group:
        assert ctx.run("XGROUP", "CREATE", key, group, "0") == OK
    ctx.clear_effects()
    return ctx


def pel(ctx, key="s", group="g"):
    g = ctx.keyspace[key.encode()].groups[group.encode()]
    return {str(s): (n.consumer.name, n.delivery_time, n.delivery_count) for s, n in g.pel.items()}


def grp(ctx, key="s", group="g"):
    return ctx.keyspace[key.encode()].groups[group.encode()]


# =========================================================================================== parsing
@pytest.mark.parametrize(
    "argv, name",
    [
        (["XREAD", "FOO", "STREAMS", "s", "0"], "SYNTAX"),
        (["XREAD", "COUNT", "1", "BLOCK"], "SYNTAX"),  # BLOCK without a value is an unknown token
        (["XREAD", "COUNT", "1", "STREAMS"], "SYNTAX"),  # STREAMS without anything after it
        (["XREAD", "COUNT", "1", "COUNT"], "SYNTAX"),
        (["XREAD", "COUNT", "1", "NOSTREAMS"], "SYNTAX"),
        (["XREAD", "COUNT", "x", "STREAMS", "s", "0"], "NOT_INTEGER"),
        (["XREAD", "COUNT", "05", "STREAMS", "s", "0"], "NOT_INTEGER"),
        (["XREAD", "COUNT", "+5", "STREAMS", "s", "0"], "NOT_INTEGER"),
        (["XREAD", "COUNT", "99999999999999999999", "STREAMS", "s", "0"], "NOT_INTEGER"),
        (["XREAD", "BLOCK", "x", "STREAMS", "s", "0"], "TIMEOUT_NOT_INTEGER"),
        (["XREAD", "BLOCK", "1.5", "STREAMS", "s", "0"], "TIMEOUT_NOT_INTEGER"),
        (["XREAD", "BLOCK", "-1", "STREAMS", "s", "0"], "TIMEOUT_NEGATIVE"),
        (["XREAD", "GROUP", "g", "c", "STREAMS", "s", "0"], "XREAD_GROUP_OPTION"),
        (["XREAD", "NOACK", "STREAMS", "s", "0"], "XREAD_NOACK_OPTION"),
        (["XREAD", "COUNT", "1", "GROUP", "g"], "SYNTAX"),  # GROUP needs 2 more args, else unknown token
        (["XREAD", "GROUP", "g", "STREAMS", "s"], "XREAD_GROUP_OPTION"),
        (["XREAD", "STREAMS", "s", "0", "x"], "UNBALANCED_XREAD"),
        (["XREAD", "STREAMS", "s", ">"], "XREAD_GT_ID"),
        (["XREAD", "STREAMS", "s", "-"], "INVALID_STREAM_ID"),
        (["XREAD", "STREAMS", "s", "1-x"], "INVALID_STREAM_ID"),
        (["XREAD", "STREAMS", "s", "*"], "INVALID_STREAM_ID"),
        (["XREADGROUP", "NOACK", "NOACK", "NOACK", "STREAMS", "s", ">"], "XREADGROUP_MISSING_GROUP"),
        (["XREADGROUP", "COUNT", "1", "NOACK", "STREAMS", "s", ">"], "XREADGROUP_MISSING_GROUP"),
        (["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "t", "u"], "UNBALANCED_XREADGROUP"),
        (["XREADGROUP", "GROUP", "g", "c", "FOO", "STREAMS", "s", ">"], "SYNTAX"),
        (["XREADGROUP", "GROUP", "g", "c", "COUNT", "x", "STREAMS", "s", ">"], "NOT_INTEGER"),
        (["XREADGROUP", "GROUP", "g", "c", "BLOCK", "-5", "STREAMS", "s", ">"], "TIMEOUT_NEGATIVE"),
    ],
)
@pytest.mark.parametrize("version", ALL)
def test_option_errors(version, argv, name):
    ctx = setup(version)
    assert ctx.run(*argv) == err(ctx, name)


@pytest.mark.parametrize("version", ALL)
def test_options_are_scanned_left_to_right(version):
    ctx = setup(version)
    # the first bad option wins, whatever comes later
    assert ctx.run("XREAD", "COUNT", "x", "BLOCK", "-1", "STREAMS", "s") == err(ctx, "NOT_INTEGER")
    assert ctx.run("XREAD", "BLOCK", "-1", "COUNT", "x", "STREAMS", "s") == err(ctx, "TIMEOUT_NEGATIVE")
    assert ctx.run("XREAD", "NOACK", "GROUP", "g", "c", "STREAMS", "s", "0") == err(ctx, "XREAD_NOACK_OPTION")
    # option errors come before the unbalanced check, which comes before key checks
    assert ctx.run("XREAD", "COUNT", "x", "STREAMS", "s") == err(ctx, "NOT_INTEGER")
    assert ctx.run("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", "t", ">") == err(ctx, "UNBALANCED_XREADGROUP")
    # STREAMS ends the scan: everything after it is keys and IDs
    assert ctx.run("XREAD", "STREAMS", "COUNT", "0") is None  # a key named COUNT
    assert ctx.run("XREAD", "STREAMS", "BLOCK", "s", "0", "0") == [[b"s", [E(1), E(2), E(3)]]]
    # case-insensitive option names, repeated options: the last one wins
    assert ctx.run("xread", "count", "5", "CoUnT", "1", "streams", "s", "0") == [[b"s", [E(1)]]]


@pytest.mark.parametrize("version", ALL)
def test_missing_group_checked_after_the_scan(version):
    ctx = setup(version)
    assert ctx.run("XREADGROUP", "COUNT", "1", "STREAMS", "s", "0", "x") == err(ctx, "UNBALANCED_XREADGROUP")
    assert ctx.run("XREADGROUP", "NOACK", "COUNT", "1", "STREAMS", "s", ">") == err(ctx, "XREADGROUP_MISSING_GROUP")


def test_unbalanced_texts_per_profile():
    r70 = "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
    for version in ALL:
        ctx = setup(version)
        xread = ctx.run("XREAD", "STREAMS", "a", "b", "c")
        xreadgroup = ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", "c")
        if version == "7.0":
            assert xread == xreadgroup == r70
        else:
            # Redis 8.0+ names '+' too (measured on Redis 8.2.3)
            plus = ", '+', or" if version.startswith("8.") else " or"
            assert xread == f"ERR Unbalanced 'xread' list of streams: for each stream key an ID{plus} '$' must be specified."
            assert xreadgroup == (
                "ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified."
            )


@pytest.mark.parametrize("version", ALL)
def test_block_timeout_out_of_range(version):
    ctx = setup(version)
    big = str((1 << 63) - 1)
    reply = ctx.run("XREAD", "BLOCK", big, "STREAMS", "s", "$")
    if version == "7.0":  # no overflow check: the client blocks (effectively forever)
        assert isinstance(reply, BlockRequest) and reply.timeout_ms == (1 << 63) - 1
    else:
        assert reply == "ERR timeout is out of range"
    limit = (1 << 63) - 1 - T0
    assert isinstance(ctx.run("XREAD", "BLOCK", str(limit), "STREAMS", "s", "$"), BlockRequest)
    if version != "7.0":
        assert ctx.run("XREAD", "BLOCK", str(limit + 1), "STREAMS", "s", "$") == "ERR timeout is out of range"
    # BLOCK 0 = forever, never "out of range"
    assert ctx.run("XREAD", "BLOCK", "0", "STREAMS", "s", "$").timeout_ms == 0


@pytest.mark.parametrize("version", ALL)
def test_block_from_a_script(version):
    ctx = setup(version)
    ctx.from_script = True
    xread = ctx.run("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    xreadgroup = ctx.run("XREADGROUP", "GROUP", "g", "c", "BLOCK", "x", "STREAMS", "s", ">")
    if version in PLUS:  # allowed, never blocks
        assert xread is None
        assert xreadgroup == err(ctx, "TIMEOUT_NOT_INTEGER")
    else:  # refused before the value is parsed; argv[0] as typed
        assert xread == "ERR XREAD command is not allowed with BLOCK option from scripts"
        assert xreadgroup == "ERR XREADGROUP command is not allowed with BLOCK option from scripts"
        assert ctx.run("xread", "BLOCK", "0", "STREAMS", "s", "$") == (
            "ERR xread command is not allowed with BLOCK option from scripts"
        )
    # without BLOCK a script reads normally
    assert ctx.run("XREAD", "STREAMS", "s", "2") == [[b"s", [E(3)]]]


# ======================================================================================== resolution
@pytest.mark.parametrize("version", ALL)
def test_wrongtype_and_id_errors_in_key_order(version):
    ctx = setup(version)
    ctx.keyspace[b"str"] = "a string"
    wrongtype = err(ctx, "WRONGTYPE")
    assert ctx.run("XREAD", "STREAMS", "s", "str", "0", "0") == wrongtype
    assert ctx.run("XREAD", "STREAMS", "str", "s", "0", "x") == wrongtype  # key1 type before key2's ID
    assert ctx.run("XREAD", "STREAMS", "s", "str", "x", "0") == err(ctx, "INVALID_STREAM_ID")  # key1 ID first
    assert ctx.run("XREAD", "STREAMS", "s", "str", "0", "$") == wrongtype
    assert ctx.run("XREAD", "STREAMS", "nokey", "s", ">", "0") == err(ctx, "XREAD_GT_ID")


@pytest.mark.parametrize("version", ALL)
def test_xreadgroup_resolution_order(version):
    ctx = setup(version, group="g")
    ctx.keyspace[b"str"] = "a string"
    nogroup_s = err(ctx, "XREADGROUP_NOGROUP", key=b"s", group=b"nog")
    assert nogroup_s == "NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option"
    assert ctx.run("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", "x") == nogroup_s  # group before ID
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "nokey", ">") == err(
        ctx, "XREADGROUP_NOGROUP", key=b"nokey", group=b"g"
    )
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">") == err(ctx, "WRONGTYPE")
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "nokey", "x", ">") == err(ctx, "INVALID_STREAM_ID")
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "nokey", ">", "x") == err(
        ctx, "XREADGROUP_NOGROUP", key=b"nokey", group=b"g"
    )
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$") == err(ctx, "XREADGROUP_DOLLAR")
    plus = ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+")
    assert plus == (err(ctx, "XREADGROUP_PLUS") if version in PLUS else err(ctx, "INVALID_STREAM_ID"))
    # an error leaves no trace: no consumer, no PEL entry, cursor unmoved
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "s", ">", "$") == err(ctx, "XREADGROUP_DOLLAR")
    assert len(grp(ctx).consumers) == 0 and grp(ctx).last_id == MIN_ID and ctx.events == []


def test_error_texts_for_dollar_and_plus_in_xreadgroup():
    ctx = setup("7.4", group="g")
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$") == (
        "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer "
        "by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."
    )
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+") == (
        "ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer "
        "by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set."
    )
    assert ctx.run("XREAD", "STREAMS", "s", ">") == (
        "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
    )


# ============================================================================================ XREAD
@pytest.mark.parametrize("version", ALL)
def test_xread_basic_count_and_incomplete_ids(version):
    ctx = setup(version)
    assert ctx.run("XREAD", "STREAMS", "s", "0") == [[b"s", [E(1), E(2), E(3)]]]
    assert ctx.run("XREAD", "STREAMS", "s", "1") == [[b"s", [E(2), E(3)]]]  # 1 → 1-0
    assert ctx.run("XREAD", "STREAMS", "s", "1-0") == [[b"s", [E(2), E(3)]]]
    assert ctx.run("XREAD", "COUNT", "2", "STREAMS", "s", "0") == [[b"s", [E(1), E(2)]]]
    assert ctx.run("XREAD", "COUNT", "0", "STREAMS", "s", "0") == [[b"s", [E(1), E(2), E(3)]]]
    assert ctx.run("XREAD", "COUNT", "-7", "STREAMS", "s", "0") == [[b"s", [E(1), E(2), E(3)]]]  # negative → 0
    assert ctx.run("XREAD", "STREAMS", "s", "3") is None
    assert ctx.run("XREAD", "STREAMS", "s", "$") is None
    assert ctx.run("XREAD", "STREAMS", "nokey", "$") is None
    assert ctx.run("XREAD", "STREAMS", "nokey", "0") is None
    assert ctx.run("XREAD", "STREAMS", "s", "18446744073709551615-18446744073709551615") is None


@pytest.mark.parametrize("version", ALL)
def test_xread_several_streams_in_argument_order(version):
    ctx = setup(version)
    ctx.run("XADD", "t", "7-0", "g", "h")
    reply = ctx.run("XREAD", "COUNT", "1", "STREAMS", "t", "nokey", "s", "0", "0", "1")
    assert reply == [[b"t", [[b"7-0", [b"g", b"h"]]]], [b"s", [E(2)]]]
    # a stream with nothing new is left out
    assert ctx.run("XREAD", "STREAMS", "t", "s", "$", "0") == [[b"s", [E(1), E(2), E(3)]]]


@pytest.mark.parametrize("version", ALL)
def test_xread_same_key_twice_is_served_twice(version):
    ctx = setup(version)
    assert ctx.run("XREAD", "STREAMS", "s", "s", "0", "2-0") == [[b"s", [E(1), E(2), E(3)]], [b"s", [E(3)]]]


@pytest.mark.parametrize("version", ALL)
def test_xread_resp3_is_a_map(version):
    ctx = setup(version, protocol=3)
    ctx.run("XADD", "t", "7-0", "g", "h")
    assert ctx.run("XREAD", "STREAMS", "s", "t", "2", "0") == {b"s": [E(3)], b"t": [[b"7-0", [b"g", b"h"]]]}
    assert ctx.run("XREAD", "STREAMS", "s", "3") is None


@pytest.mark.parametrize("version", ALL)
def test_xread_serves_only_if_the_last_live_entry_is_newer(version):
    """'Blocking XREAD will not reply with an empty array': deleted newest entries are not served."""
    ctx = setup(version)
    ctx.run("XDEL", "s", "3-0")
    assert ctx.run("XREAD", "STREAMS", "s", "2-0") is None  # last_id 3-0 > 2-0 but 3-0 is deleted
    assert ctx.run("XREAD", "STREAMS", "s", "1-0") == [[b"s", [E(2)]]]
    ctx.run("XDEL", "s", "1-0", "2-0")
    assert ctx.run("XREAD", "STREAMS", "s", "0") is None  # empty stream, key still there


@pytest.mark.parametrize("version", ALL)
def test_xread_plus(version):
    ctx = setup(version)
    reply = ctx.run("XREAD", "COUNT", "5", "STREAMS", "s", "+")
    if version not in PLUS:
        assert reply == err(ctx, "INVALID_STREAM_ID")
        return
    assert reply == [[b"s", [E(3)]]]  # COUNT > 1 still gives just the last entry
    assert ctx.run("XREAD", "STREAMS", "nokey", "+") is None
    assert ctx.run("XREAD", "STREAMS", "nokey", "s", "+", "+") == [[b"s", [E(3)]]]
    ctx.run("XDEL", "s", "3-0")
    assert ctx.run("XREAD", "STREAMS", "s", "+") is None  # last entry deleted: nothing, even though 1, 2 exist
    # 18446744073709551615-0 as last ID: '+' resolves to 18446744073709551614-18446744073709551615
    ctx.run("XADD", "big", "18446744073709551615-0", "a", "b")
    assert ctx.run("XREAD", "STREAMS", "big", "+") == [[b"big", [[b"18446744073709551615-0", [b"a", b"b"]]]]]


@pytest.mark.parametrize("version", PLUS)
def test_xread_plus_on_a_stream_whose_last_id_is_zero(version):
    ctx = setup(version, n=0)
    ctx.run("XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    # Valkey 9.1.2 and Redis 8 (8.2.3) serve nothing there (observed); Redis 7.4.1 and Valkey 8.0.1 answer the error
    empty = get_profile(version).has("xread_plus_empty_nil")
    assert ctx.run("XREAD", "STREAMS", "e", "+") == (None if empty else "ERR the stream last element ID is 0-0")
    assert ctx.run("XREAD", "STREAMS", "e", "$") is None
    assert ctx.run("XREAD", "STREAMS", "e", "0") is None


@pytest.mark.parametrize("version", ALL)
def test_xread_changes_nothing(version):
    ctx = setup(version, group="g")
    before = (grp(ctx).last_id, grp(ctx).entries_read)
    ctx.run("XREAD", "STREAMS", "s", "0")
    assert (grp(ctx).last_id, grp(ctx).entries_read) == before
    assert ctx.modified_keys == [] and ctx.events == [] and ctx.ready_keys == []


# ================================================================================ XREADGROUP '>' (§2.9)
@pytest.mark.parametrize("version", ALL)
def test_new_entries_go_to_one_consumer_and_into_the_pel(version):
    ctx = setup(version, n=4, group="g")
    assert ctx.run("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">") == [[b"s", [E(1), E(2)]]]
    ctx.now_ms = T0 + 5
    assert ctx.run("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">") == [[b"s", [E(3), E(4)]]]
    assert ctx.run("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">") is None
    assert pel(ctx) == {
        "1-0": (b"alice", T0, 1),
        "2-0": (b"alice", T0, 1),
        "3-0": (b"bob", T0 + 5, 1),
        "4-0": (b"bob", T0 + 5, 1),
    }
    g = grp(ctx)
    assert (g.last_id, g.entries_read) == (sid(4), 4)
    check(ctx)


@pytest.mark.parametrize("version", ALL)
def test_noack_moves_the_cursor_without_pel(version):
    ctx = setup(version, group="g")
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">") == [[b"s", [E(1), E(2), E(3)]]]
    g = grp(ctx)
    assert (g.last_id, g.entries_read, len(g.pel)) == (sid(3), 3, 0)
    consumer = g.consumers[b"c"]
    assert (consumer.seen_time, consumer.active_time) == (T0, NEVER_ACTIVE)  # NOACK: not "active"
    check(ctx)


@pytest.mark.parametrize("version", ALL)
def test_active_and_seen_time(version):
    ctx = setup(version, group="g")
    ctx.now_ms = T0 + 10
    ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    consumer = grp(ctx).consumers[b"c"]
    assert consumer.seen_time == T0 + 10
    assert consumer.active_time == (T0 + 10 if version in EAGER else NEVER_ACTIVE)
    ctx.now_ms = T0 + 20
    ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")  # history: seen, not active
    assert consumer.seen_time == T0 + 20
    assert consumer.active_time == (T0 + 10 if version in EAGER else NEVER_ACTIVE)
    ctx.now_ms = T0 + 30
    ctx.run("XGROUP", "SETID", "s", "g", "$")
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">") is None  # nothing to serve
    assert consumer.seen_time == (T0 + 30 if version in EAGER else T0 + 20)  # R7.0: only when served


@pytest.mark.parametrize("version", ALL)
def test_consumer_creation_per_profile(version):
    ctx = setup(version, group="g")
    ctx.run("XGROUP", "SETID", "s", "g", "$")
    ctx.events.clear()
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">") is None
    if version in EAGER:
        assert list(grp(ctx).consumers) == [b"c"] and ctx.events == [("xgroup-createconsumer", b"s")]
        assert grp(ctx).consumers[b"c"].seen_time == T0
    else:
        assert list(grp(ctx).consumers) == [] and ctx.events == []
    ctx.run("XADD", "s", "4-0", "f", "4")
    ctx.events.clear()
    ctx.modified_keys.clear()
    ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert list(grp(ctx).consumers) == [b"c"]
    assert ctx.events == ([] if version in EAGER else [("xgroup-createconsumer", b"s")])
    assert ctx.modified_keys == []  # XREADGROUP never dirties WATCH
    check(ctx)


@pytest.mark.parametrize("version", ALL)
def test_consumer_created_on_every_stream_of_the_command(version):
    ctx = setup(version, group="g")
    ctx.run("XADD", "t", "1-0", "a", "b")
    ctx.run("XGROUP", "CREATE", "t", "g", "$")
    ctx.events.clear()
    reply = ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "t", "s", ">", ">")
    assert reply == [[b"s", [E(1)]]]
    t_consumers = list(ctx.keyspace[b"t"].groups[b"g"].consumers)
    if version in EAGER:
        assert t_consumers == [b"c"]
        assert ctx.events == [("xgroup-createconsumer", b"t"), ("xgroup-createconsumer", b"s")]
    else:
        assert t_consumers == []
        assert ctx.events == [("xgroup-createconsumer", b"s")]


@pytest.mark.parametrize("version", ALL)
def test_same_key_twice_with_count_reads_two_batches(version):
    ctx = setup(version, n=4, group="g")
    reply = ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "s", ">", ">")
    assert reply == [[b"s", [E(1)]], [b"s", [E(2)]]]
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "s", ">", ">") == [[b"s", [E(3), E(4)]]]
    # RESP3: a dict cannot repeat a key; redis-py keeps the last value the same way
    ctx.protocol = 3
    ctx.run("XADD", "s", "5-0", "f", "5")
    ctx.run("XADD", "s", "6-0", "f", "6")
    reply = ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "s", ">", ">")
    assert reply == {b"s": [E(6)]}
    assert list(pel(ctx)) == ["1-0", "2-0", "3-0", "4-0", "5-0", "6-0"]


@pytest.mark.parametrize("version", ALL)
def test_reassignment_after_setid_resets_the_count(version):
    """'PEL NACK reassignment after XGROUP SETID event'."""
    ctx = setup(version, n=5, group="g")
    ctx.run("XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", ">")
    ctx.run("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "0")  # history: count 2
    assert pel(ctx) == {"1-0": (b"c1", T0, 2)}
    ctx.run("XGROUP", "SETID", "s", "g", "-")
    ctx.now_ms = T0 + 7
    reply = ctx.run("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">")
    assert reply == [[b"s", [E(1), E(2), E(3), E(4), E(5)]]]
    assert pel(ctx) == {f"{i}-0": (b"c2", T0 + 7, 1) for i in range(1, 6)}
    assert len(grp(ctx).consumers[b"c1"].pel) == 0
    assert grp(ctx).entries_read == 5
    check(ctx)


@pytest.mark.parametrize("version", ALL)
def test_deleted_entries_are_skipped_and_not_served(version):
    ctx = setup(version, n=4, group="g")
    ctx.run("XDEL", "s", "2-0", "4-0")
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">") == [[b"s", [E(1), E(3)]]]
    g = grp(ctx)
    assert g.last_id == sid(3)  # the cursor stops at the last delivered entry
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">") is None  # 4-0 deleted
    assert list(pel(ctx)) == ["1-0", "3-0"]


@pytest.mark.parametrize("version", ALL)
def test_entries_read_follows_the_reads(version):
    ctx = setup(version, n=5, group="g")
    g = grp(ctx)
    assert g.entries_read == INVALID_ENTRIES_READ
    ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    assert (g.last_id, g.entries_read) == (sid(1), 1)
    ctx.run("XREADGROUP", "GROUP", "g", "c", "NOACK", "COUNT", "2", "STREAMS", "s", ">")
    assert (g.last_id, g.entries_read) == (sid(3), 3)


@pytest.mark.parametrize("version", ALL)
def test_explicit_max_id_means_new_entries(version):
    ctx = setup(version, group="g")
    reply = ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "18446744073709551615-18446744073709551615")
    assert reply == [[b"s", [E(1)]]]
    assert list(pel(ctx)) == ["1-0"]


@pytest.mark.parametrize("version", ALL)
def test_empty_stream_is_not_served(version):
    ctx = setup(version, n=0)
    ctx.run("XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "e", ">") is None


# ============================================================================== history reads (§2.10)
@pytest.mark.parametrize("version", ALL)
def test_history_reads_count_as_deliveries(version):
    ctx = setup(version, group="g")
    ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    ctx.now_ms = T0 + 100
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0") == [[b"s", [E(1), E(2), E(3)]]]
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "1-0") == [[b"s", [E(2)]]]
    assert pel(ctx) == {"1-0": (b"c", T0 + 100, 2), "2-0": (b"c", T0 + 100, 3), "3-0": (b"c", T0 + 100, 2)}
    g = grp(ctx)
    assert (g.last_id, g.entries_read) == (sid(3), 3)  # untouched by history reads
    check(ctx)


@pytest.mark.parametrize("version", ALL)
def test_history_is_per_consumer_and_after_the_id(version):
    ctx = setup(version, n=4, group="g")
    ctx.run("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    ctx.run("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    assert ctx.run("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0") == [[b"s", [E(1), E(2)]]]
    assert ctx.run("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0-0") == [[b"s", [E(3), E(4)]]]
    assert ctx.run("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "3") == [[b"s", [E(4)]]]
    assert ctx.run("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "4") == [[b"s", []]]


@pytest.mark.parametrize("version", ALL)
@pytest.mark.parametrize("protocol", (2, 3))
def test_history_of_deleted_entries(version, protocol):
    """'XREADGROUP history reporting of deleted entries. Bug #5570'."""
    ctx = setup(version, n=0, protocol=protocol)
    ctx.run("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    ctx.run("XADD", "mystream", "1", "field1", "A")
    ctx.run("XREADGROUP", "GROUP", "mygroup", "myconsumer", "STREAMS", "mystream", ">")
    ctx.run("XADD", "mystream", "MAXLEN", "1", "2", "field1", "B")
    ctx.run("XREADGROUP", "GROUP", "mygroup", "myconsumer", "STREAMS", "mystream", ">")
    ctx.now_ms = T0 + 50
    reply = ctx.run("XREADGROUP", "GROUP", "mygroup", "myconsumer", "STREAMS", "mystream", "0-1")
    body = [[b"1-0", None], [b"2-0", [b"field1", b"B"]]]
    assert reply == ({b"mystream": body} if protocol == 3 else [[b"mystream", body]])
    assert pel(ctx, "mystream", "mygroup") == {"1-0": (b"myconsumer", T0, 1), "2-0": (b"myconsumer", T0 + 50, 2)}
    check(ctx)


@pytest.mark.parametrize("version", ALL)
def test_history_count_counts_deleted_placeholders(version):
    ctx = setup(version, group="g")
    ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    ctx.run("XDEL", "s", "1-0")
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", "0") == [[b"s", [[b"1-0", None], E(2)]]]


@pytest.mark.parametrize("version", ALL)
def test_empty_history_lists_every_stream(version):
    """'XREADGROUP will not report data on empty history. Bug #5577'."""
    ctx = setup(version, n=3, group="g")
    ctx.run("XADD", "t", "1-0", "a", "b")
    ctx.run("XGROUP", "CREATE", "t", "g", "0")
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "t", "0", "0") == [[b"s", []], [b"t", []]]
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "s", ">") == [[b"s", [E(1), E(2), E(3)]]]
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0") == [[b"s", [E(1), E(2), E(3)]]]
    ctx.protocol = 3
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "t", "0") == {b"t": []}


@pytest.mark.parametrize("version", ALL)
def test_history_ignores_noack_and_block(version):
    """'Blocking XREADGROUP will ignore BLOCK if ID is not >'."""
    ctx = setup(version, group="g")
    ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    reply = ctx.run("XREADGROUP", "GROUP", "g", "c", "NOACK", "BLOCK", "0", "STREAMS", "s", "0")
    assert reply == [[b"s", [E(1)]]]
    assert pel(ctx) == {"1-0": (b"c", T0, 2)}
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "600") == [[b"s", []]]
    ctx.run("XACK", "s", "g", "1-0")
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "0") == [[b"s", []]]


@pytest.mark.parametrize("version", ALL)
def test_mixed_history_and_new(version):
    ctx = setup(version, group="g")
    ctx.run("XADD", "t", "1-0", "a", "b")
    ctx.run("XGROUP", "CREATE", "t", "g", "0")
    reply = ctx.run("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "t", "s", "0", ">")
    assert reply == [[b"t", []], [b"s", [E(1), E(2), E(3)]]]


# ========================================================================================= blocking
@pytest.mark.parametrize("version", ALL)
def test_nothing_served_without_block_is_nil(version):
    ctx = setup(version, group="g")
    ctx.run("XGROUP", "SETID", "s", "g", "$")
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">") is None
    assert ctx.run("XREAD", "STREAMS", "s", "$") is None


@pytest.mark.parametrize("version", ALL)
def test_block_in_multi_is_nil(version):
    ctx = setup(version, group="g")
    ctx.in_multi = True
    assert ctx.run("XREAD", "BLOCK", "0", "STREAMS", "s", "$") is None
    assert ctx.run("XREAD", "BLOCK", "10", "STREAMS", "nokey", "0") is None
    ctx.run("XGROUP", "SETID", "s", "g", "$")
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">") is None
    assert ctx.run("XREAD", "BLOCK", "0", "STREAMS", "s", "0") == [[b"s", [E(1), E(2), E(3)]]]


@pytest.mark.parametrize("version", ALL)
def test_block_request_for_xread(version):
    ctx = setup(version)
    reply = ctx.run("XREAD", "COUNT", "2", "BLOCK", "1500", "STREAMS", "s", "nokey", "s", "$", "$", "3-0")
    assert isinstance(reply, BlockRequest)
    assert reply.keys == [b"s", b"nokey"]  # each key once, argument order
    assert reply.timeout_ms == 1500
    assert reply.args == [b"COUNT", b"2", b"BLOCK", b"1500", b"STREAMS", b"s", b"nokey", b"s", b"3-0", b"0-0", b"3-0"]
    assert reply.unblock_on_nokey is False
    if version == "7.0":
        assert reply.saved == SavedRead({b"s": sid(3), b"nokey": MIN_ID}, 2, None, b"", False)  # XREAD: no group, no consumer
    else:
        assert reply.saved is None
    assert ctx.events == [] and ctx.modified_keys == []


@pytest.mark.parametrize("version", PLUS)
def test_plus_and_gt_are_not_rewritten(version):
    ctx = setup(version, group="g")
    ctx.run("XDEL", "s", "3-0")
    reply = ctx.run("XREAD", "BLOCK", "0", "STREAMS", "s", "+")
    assert reply.args == [b"BLOCK", b"0", b"STREAMS", b"s", b"+"]
    ctx.run("XGROUP", "SETID", "s", "g", "$")
    reply = ctx.run("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    assert reply.args == [b"GROUP", b"g", b"c", b"BLOCK", b"0", b"STREAMS", b"s", b">"]


@pytest.mark.parametrize("version", ALL)
def test_block_request_for_xreadgroup(version):
    ctx = setup(version, group="g")
    ctx.run("XGROUP", "SETID", "s", "g", "$")
    reply = ctx.run("XREADGROUP", "GROUP", "g", "c", "NOACK", "BLOCK", "0", "STREAMS", "s", ">")
    assert isinstance(reply, BlockRequest)
    assert (reply.keys, reply.timeout_ms, reply.unblock_on_nokey) == ([b"s"], 0, True)
    assert reply.args == [b"GROUP", b"g", b"c", b"NOACK", b"BLOCK", b"0", b"STREAMS", b"s", b">"]
    if version == "7.0":
        assert reply.saved == SavedRead({b"s": MAX_ID}, BLOCKED_DEFAULT_COUNT_R70, b"g", b"c", True)
    else:
        assert reply.saved is None


@pytest.mark.parametrize("version", EAGER)
def test_rerun_of_the_block_request_is_the_normal_path(version):
    """R7.2+: the blocking layer re-runs ``req.args``; ``$`` keeps its original meaning."""
    ctx = setup(version)
    req = ctx.run("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    rerun = req.args
    assert isinstance(ctx.run("XREAD", *rerun), BlockRequest)  # nothing yet: blocks again
    ctx.run("XADD", "s", "4-0", "f", "4")
    ctx.run("XADD", "s", "5-0", "f", "5")
    assert ctx.run("XREAD", *rerun) == [[b"s", [E(4), E(5)]]]  # no implicit COUNT
    # a group reader re-resolves its group and sees NOGROUP once the group is gone
    ctx.run("XGROUP", "CREATE", "s", "g", "$")
    req = ctx.run("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    ctx.run("XGROUP", "DESTROY", "s", "g")
    assert ctx.run("XREADGROUP", *req.args) == err(ctx, "XREADGROUP_NOGROUP", key=b"s", group=b"g")
    ctx.keyspace[b"s"] = "now a string"
    assert ctx.run("XREADGROUP", *req.args) == err(ctx, "WRONGTYPE")


@pytest.mark.parametrize("version", EAGER)
def test_rerun_serves_every_stream_with_data(version):
    ctx = setup(version)
    req = ctx.run("XREAD", "BLOCK", "0", "STREAMS", "s", "t", "s", "$", "$", "$")
    ctx.run("XADD", "t", "1-0", "a", "b")
    ctx.run("XADD", "s", "4-0", "f", "4")
    assert ctx.run("XREAD", *req.args) == [[b"s", [E(4)]], [b"t", [[b"1-0", [b"a", b"b"]]]], [b"s", [E(4)]]]


# ====================================================================== R7.0 serve-from-saved-state
def blocked_r70(ctx, *args):
    req = ctx.run(*args)
    assert isinstance(req, BlockRequest) and req.saved is not None
    return req.saved


def test_r70_xread_is_served_from_saved_state_one_key_only():
    ctx = setup("7.0")
    saved = blocked_r70(ctx, "XREAD", "BLOCK", "0", "STREAMS", "s", "t", "$", "$")
    assert saved.count == BLOCKED_DEFAULT_COUNT_R70
    assert serve_blocked_r70(ctx, b"s", saved) is None  # nothing new
    assert serve_blocked_r70(ctx, b"t", saved) is None  # missing key: stays blocked
    ctx.run("XADD", "t", "1-0", "a", "b")
    ctx.run("XADD", "s", "4-0", "f", "4")
    assert serve_blocked_r70(ctx, b"t", saved) == [[b"t", [[b"1-0", [b"a", b"b"]]]]]
    ctx.protocol = 3
    assert serve_blocked_r70(ctx, b"s", saved) == {b"s": [E(4)]}


def test_r70_xread_serves_on_last_id_even_if_the_entry_is_gone():
    ctx = setup("7.0")
    saved = blocked_r70(ctx, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    ctx.run("XADD", "s", "4-0", "f", "4")
    ctx.run("XDEL", "s", "4-0")
    assert serve_blocked_r70(ctx, b"s", saved) == [[b"s", []]]


def test_r70_xread_implicit_count_and_other_types():
    ctx = setup("7.0", n=0)
    ctx.run("XADD", "s", "1-0", "f", "1")
    ctx.run("XADD", "s", "2-0", "f", "2")
    ctx.run("XDEL", "s", "2-0")
    saved = blocked_r70(ctx, "XREAD", "BLOCK", "0", "STREAMS", "s", "s", "$", "1-0")
    assert saved.ids == {b"s": sid(2)}  # first occurrence wins
    for i in range(3, 1103):
        ctx.keyspace[b"s"].append(sid(i), [b"f", b"v"])
    reply = serve_blocked_r70(ctx, b"s", saved)
    assert len(reply) == 1 and len(reply[0][1]) == 1000 and reply[0][1][0][0] == b"3-0"
    counted = blocked_r70(ctx, "XREAD", "COUNT", "3", "BLOCK", "0", "STREAMS", "s", "$")
    ctx.keyspace[b"str"] = "x"
    ctx.keyspace[b"s"] = "x"
    assert serve_blocked_r70(ctx, b"s", counted) is None  # XREAD: another type keeps it blocked


def test_r70_xreadgroup_served_from_the_groups_current_cursor():
    ctx = setup("7.0", group="g")
    ctx.run("XGROUP", "SETID", "s", "g", "$")
    saved1 = blocked_r70(ctx, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">")
    saved2 = blocked_r70(ctx, "XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "STREAMS", "s", ">")
    assert list(grp(ctx).consumers) == []  # R7.0: not created while blocking
    ctx.run("XADD", "s", "4-0", "f", "4")
    ctx.run("XADD", "s", "5-0", "f", "5")
    ctx.events.clear()
    assert serve_blocked_r70(ctx, b"s", saved1) == [[b"s", [E(4)]]]
    assert serve_blocked_r70(ctx, b"s", saved2) == [[b"s", [E(5)]]]
    assert ctx.events == [("xgroup-createconsumer", b"s")] * 2
    assert pel(ctx) == {"4-0": (b"c1", T0, 1), "5-0": (b"c2", T0, 1)}
    saved3 = blocked_r70(ctx, "XREADGROUP", "GROUP", "g", "c3", "BLOCK", "0", "STREAMS", "s", ">")
    assert serve_blocked_r70(ctx, b"s", saved3) is None
    check(ctx)


def test_r70_xreadgroup_noack_and_errors():
    ctx = setup("7.0", group="g")
    ctx.run("XGROUP", "SETID", "s", "g", "$")
    saved = blocked_r70(ctx, "XREADGROUP", "GROUP", "g", "c", "NOACK", "BLOCK", "0", "STREAMS", "s", ">")
    ctx.run("XADD", "s", "4-0", "f", "4")
    assert serve_blocked_r70(ctx, b"s", saved) == [[b"s", [E(4)]]]
    assert pel(ctx) == {} and grp(ctx).last_id == sid(4)
    ctx.run("XGROUP", "DESTROY", "s", "g")
    with pytest.raises(ReplyError) as gone:
        serve_blocked_r70(ctx, b"s", saved)
    assert gone.value.render(ctx.profile.errors) == "NOGROUP the consumer group this client was blocked on no longer exists"
    del ctx.keyspace[b"s"]
    with pytest.raises(ReplyError) as deleted:
        serve_blocked_r70(ctx, b"s", saved)
    assert deleted.value.render(ctx.profile.errors) == "UNBLOCKED the stream key no longer exists"
    ctx.keyspace[b"s"] = "a string"
    with pytest.raises(ReplyError) as replaced:
        serve_blocked_r70(ctx, b"s", saved)
    assert replaced.value.key == "BLOCKED_KEY_GONE_R70"


# ========================================================================================= seed doc
@pytest.mark.parametrize("version", ALL)
def test_seed_xreadgroup_reference_examples(version):
    """Every example of the XREADGROUP reference page, with the exact replies."""
    ctx = DictContext(version, now_ms=T0)
    assert ctx.run("XADD", "tasks", "1700000000000-0", "job", "email") == b"1700000000000-0"
    assert ctx.run("XADD", "tasks", "1700000000001-0", "job", "sms") == b"1700000000001-0"
    assert ctx.run("XGROUP", "CREATE", "tasks", "workers", "0") == OK
    email = [b"1700000000000-0", [b"job", b"email"]]
    sms = [b"1700000000001-0", [b"job", b"sms"]]
    assert ctx.run("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "1", "STREAMS", "tasks", ">") == [[b"tasks", [email]]]
    assert ctx.run("XREADGROUP", "GROUP", "workers", "bob", "STREAMS", "tasks", ">") == [[b"tasks", [sms]]]
    assert ctx.run("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", "0") == [[b"tasks", [email]]]
    assert ctx.run("XACK", "tasks", "workers", "1700000000000-0") == 1
    assert ctx.run("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", "0") == [[b"tasks", []]]
    # the claims of the page: history counts as a delivery; '$' is refused; missing group → NOGROUP
    assert pel(ctx, "tasks", "workers") == {"1700000000001-0": (b"bob", T0, 1)}
    assert ctx.run("XREADGROUP", "GROUP", "workers", "bob", "STREAMS", "tasks", "0") == [[b"tasks", [sms]]]
    assert pel(ctx, "tasks", "workers") == {"1700000000001-0": (b"bob", T0, 2)}
    assert ctx.run("XREADGROUP", "GROUP", "workers", "bob", "STREAMS", "tasks", "$") == err(ctx, "XREADGROUP_DOLLAR")
    assert ctx.run("XREADGROUP", "GROUP", "nope", "bob", "STREAMS", "tasks", ">") == (
        "NOGROUP No such key 'tasks' or consumer group 'nope' in XREADGROUP with GROUP option"
    )
    assert ctx.run("XREADGROUP", "GROUP", "workers", "bob", "STREAMS", "tasks", ">") is None
    check(ctx)


# ======================================================================================= C strings
@pytest.mark.parametrize("version", ALL)
def test_tokens_compare_as_c_strings(version):
    """Option names (strcasecmp) and the special IDs (strcmp) ignore text after a NUL byte."""
    ctx = setup(version, group="g")
    assert ctx.run("XREAD", b"COUNT\x00x", "1", "STREAMS", "s", "0") == [[b"s", [E(1)]]]
    assert ctx.run("XREAD", "STREAMS", "s", b"$\x00x") is None
    assert ctx.run("XREADGROUP", b"group\x00", "g", "c", "COUNT", "1", "STREAMS", "s", b">\x00x") == [[b"s", [E(1)]]]
    assert ctx.run("XREADGROUP", "GROUP", "g", "c", b"NOACK\x00", "STREAMS", "s", "0") == [[b"s", [E(1)]]]
    req = ctx.run("XREAD", "BLOCK", "0", "STREAMS", "s", b"$\x00")
    assert req.args[-1] == b"3-0"  # rewritten like a plain '$'
    assert ctx.run("XREAD", "STREAMS", "s", b"1" * 126 + b"\x00" + b"1") == err(ctx, "INVALID_STREAM_ID")  # > 127 bytes


# ------------------------------------------------------------------- a key named twice (was F7)
def test_resp3_key_named_twice__a_map_with_every_pair_that_reads_as_the_parser_reads_it():
    from fake_streams.reply import RepeatedKeyMap
    from fake_streams.tcp import encode

    ctx = setup("7.4", n=2, protocol=3)
    ctx.run("XADD", "t", "1-0", "g", "x")
    got = ctx.run("XREAD", "STREAMS", "s", "t", "s", "0", "0", "1-0")
    s_all, s_after1, t_all = [E(1), E(2)], [E(2)], [[b"1-0", [b"g", b"x"]]]
    assert type(got) is RepeatedKeyMap
    assert got.pairs == [(b"s", s_all), (b"t", t_all), (b"s", s_after1)]
    # as a dict: what redis-py's Python parser builds of %3 (first key position, last value)
    assert dict(got) == {b"s": s_after1, b"t": t_all} and list(got) == [b"s", b"t"]
    assert encode(got, 3).startswith(b"%3\r\n$1\r\ns\r\n") and encode(got, 3).count(b"$1\r\ns\r\n") == 2
    # without a repeat, or in RESP2, nothing changes
    assert type(ctx.run("XREAD", "STREAMS", "s", "t", "0", "0")) is dict
    ctx2 = setup("7.4", n=2, protocol=2)
    assert ctx2.run("XREAD", "STREAMS", "s", "s", "0", "1-0") == [[b"s", s_all], [b"s", s_after1]]


@pytest.mark.skipif(bool(NO_RESP3), reason=NO_RESP3)
def test_resp3_key_named_twice__in_process_client_gets_a_plain_reading():
    import redis

    from fake_streams import FakeStreamsConnection, FakeStreamsServer

    server = FakeStreamsServer()
    try:
        pool = redis.ConnectionPool(connection_class=FakeStreamsConnection, server=server, protocol=3)
        client = redis.Redis(connection_pool=pool)
        client.xadd("s", {"f": "1"}, id="1-0")
        client.xadd("s", {"f": "2"}, id="2-0")
        got = client.execute_command("XREAD", "STREAMS", "s", "s", "0", "1-0")
        assert got == {b"s": [[(b"2-0", {b"f": b"2"})]]}
        pool.disconnect()
    finally:
        server.close()
