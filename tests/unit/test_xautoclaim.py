"""XAUTOCLAIM (spec §2.14) and every example of the XAUTOCLAIM seed document (seeds/002_3f1eb436fefa0333.txt).

State is built on the model directly (no XADD / XGROUP / XREADGROUP needed); times are explicit ``ctx.now_ms``.
"""

from __future__ import annotations

import pytest

from fake_streams.groups import NEVER_ACTIVE, ConsumerGroup
from fake_streams.ids import MIN_ID, StreamID
from tests.support.context import DictContext
from tests.support.engine import ALL, EAGER, T0, F
from tests.support.groupstate import check, deliver, err, pel, sid

MAX_COUNT = "576460752303423487"  # LONG_MAX / 16


def setup(version="7.4", n=3, now=T0, protocol=2, key=b"s"):
    ctx = DictContext(version, protocol=protocol, now_ms=now)
    stream = ctx.create(key)
    for ms in range(1, n + 1):
        stream.append(sid(ms), F)
    group = ConsumerGroup(b"g", MIN_ID)
    stream.groups[b"g"] = group
    return ctx, stream, group


# ----------------------------------------------------------------------------------- argument errors


@pytest.mark.parametrize(
    "tail, expected",
    [
        (["x", "0"], err("XAUTOCLAIM_MIN_IDLE")),
        (["+1", "0"], err("XAUTOCLAIM_MIN_IDLE")),
        (["0", "x"], err("INVALID_STREAM_ID")),
        (["0", "("], err("INVALID_STREAM_ID")),
        (["0", "(-"], err("INVALID_STREAM_ID")),
        (["0", "(18446744073709551615-18446744073709551615"], err("INVALID_START_ID")),
        (["0", "0", "COUNT", "0"], err("XAUTOCLAIM_COUNT")),
        (["0", "0", "COUNT", "-1"], err("XAUTOCLAIM_COUNT")),
        (["0", "0", "COUNT", "abc"], err("XAUTOCLAIM_COUNT")),
        (["0", "0", "COUNT", "+1"], err("XAUTOCLAIM_COUNT")),
        (["0", "0", "COUNT", "01"], err("XAUTOCLAIM_COUNT")),
        (["0", "0", "COUNT", "576460752303423488"], err("XAUTOCLAIM_COUNT")),
        (["0", "0", "COUNT", "8070450532247928833"], err("XAUTOCLAIM_COUNT")),  # "XAUTOCLAIM with out of range count"
        (["0", "0", "COUNT", "99999999999999999999"], err("XAUTOCLAIM_COUNT")),
        (["0", "0", "COUNT"], err("SYNTAX")),
        (["0", "0", "JUSTID", "foo"], err("SYNTAX")),
        (["0", "0", "FOO"], err("SYNTAX")),
        (["0", "0", "COUNT", "5", "COUNT", "0"], err("XAUTOCLAIM_COUNT")),
        # argument errors come before the key lookup: this key does not exist
        (["0", "0", "COUNT", MAX_COUNT], err("NOGROUP", key="nokey", group="g")),
        (["0", "0", "count", "1", "justid"], err("NOGROUP", key="nokey", group="g")),
    ],
)
def test_argument_errors_come_before_the_key(tail, expected):
    ctx = DictContext()
    assert ctx.run("XAUTOCLAIM", "nokey", "g", "c", *tail) == expected


def test_option_names_stop_at_a_nul():
    """strcasecmp: ``COUNT\\0x`` is COUNT and ``justid\\0`` is JUSTID; a NUL first (``\\0COUNT``) names nothing."""
    ctx, stream, group = setup()
    deliver(stream, group, b"c1", [sid(1), sid(2), sid(3)], T0 - 10)
    assert ctx.run("XAUTOCLAIM", "s", "g", "c2", "0", "0", b"COUNT\x00x", "1", b"justid\x00") == [b"2-0", [b"1-0"], []]
    assert ctx.run("XAUTOCLAIM", "s", "g", "c2", "0", "0", b"\x00COUNT", "1") == err("SYNTAX")
    assert ctx.run("XAUTOCLAIM", "s", "g", "c2", "0", "0", b"COUNT\x00", "0") == err("XAUTOCLAIM_COUNT")


def test_wrong_type_after_arguments():
    ctx = DictContext()
    ctx.keyspace[b"str"] = b"x"
    assert ctx.run("XAUTOCLAIM", "str", "g", "c", "0", "0", "COUNT", "x") == err("XAUTOCLAIM_COUNT")
    assert ctx.run("XAUTOCLAIM", "str", "g", "c", "0", "0") == err("WRONGTYPE")


def test_missing_group():
    ctx, stream, group = setup()
    assert ctx.run("XAUTOCLAIM", "s", "nog", "c", "0", "0") == "NOGROUP No such key 's' or consumer group 'nog'"


def test_arity():
    ctx, stream, group = setup()
    assert ctx.run("XAUTOCLAIM", "s", "g", "c", "0") == "ERR wrong number of arguments for 'xautoclaim' command"


@pytest.mark.parametrize("version", ALL)
def test_count_too_high_for_the_transient_allocation(version):
    ctx, stream, group = setup(version)
    deliver(stream, group, b"alice", [sid(1)], T0 - 10)
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", MAX_COUNT) == err("XAUTOCLAIM_COUNT_MEMORY")
    assert list(group.consumers) == [b"alice"]  # checked before the consumer is created
    assert ctx.events == []


def test_large_but_allocatable_count_is_fine():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1)], T0 - 10)
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", str(2**43)) == [b"0-0", [[b"1-0", F]], []]


# ---------------------------------------------------------------------------------------- claiming


@pytest.mark.parametrize("protocol", [2, 3])
def test_claims_idle_entries_and_bumps_count(protocol):
    ctx, stream, group = setup(protocol=protocol)
    deliver(stream, group, b"alice", [sid(1), sid(2)], T0 - 5000)
    deliver(stream, group, b"alice", [sid(3)], T0 - 10)
    reply = ctx.run("XAUTOCLAIM", "s", "g", "bob", "1000", "0-0")
    assert reply == [b"0-0", [[b"1-0", F], [b"2-0", F]], []]
    assert type(reply) is list and type(reply[1]) is list and type(reply[2]) is list  # redis-py mutates it
    assert pel(group) == {sid(1): (b"bob", T0, 2), sid(2): (b"bob", T0, 2), sid(3): (b"alice", T0 - 10, 1)}
    assert ctx.modified_keys == []
    check(stream)


def test_idle_boundary_and_negative_min_idle():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1)], T0 - 1000)
    deliver(stream, group, b"alice", [sid(2)], T0 - 999)
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "1000", "-", "JUSTID") == [b"0-0", [b"1-0"], []]
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "-7", "-", "JUSTID") == [b"0-0", [b"1-0", b"2-0"], []]


def test_justid_does_not_bump_the_count_and_resets_idle():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1)], T0 - 10)
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "0", "0", "justid") == [b"0-0", [b"1-0"], []]
    assert pel(group) == {sid(1): (b"bob", T0, 1)}


def test_reclaim_by_the_owner():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1)], T0 - 10)
    assert ctx.run("XAUTOCLAIM", "s", "g", "alice", "0", "0") == [b"0-0", [[b"1-0", F]], []]
    assert pel(group) == {sid(1): (b"alice", T0, 2)}
    check(stream)


@pytest.mark.parametrize(
    "start, claimed",
    [
        ("-", [b"1-0", b"2-0", b"3-0"]),
        ("0", [b"1-0", b"2-0", b"3-0"]),
        ("2", [b"2-0", b"3-0"]),  # incomplete ID: seq 0
        ("2-0", [b"2-0", b"3-0"]),
        ("(2-0", [b"3-0"]),  # exclusive start
        ("(2", [b"3-0"]),
        ("+", []),
        ("(1", [b"2-0", b"3-0"]),
    ],
)
def test_start_interval(start, claimed):
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1), sid(2), sid(3)], T0 - 10)
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "0", start, "JUSTID") == [b"0-0", claimed, []]


def test_as_an_iterator():
    # test "XAUTOCLAIM as an iterator": the cursor is the next PEL ID, 0-0 at the end
    ctx, stream, group = setup(n=5)
    deliver(stream, group, b"consumer1", [sid(i) for i in range(1, 6)], T0 - 200)
    assert ctx.run("XAUTOCLAIM", "s", "g", "consumer2", "10", "-", "COUNT", "2") == [b"3-0", [[b"1-0", F], [b"2-0", F]], []]
    assert ctx.run("XAUTOCLAIM", "s", "g", "consumer2", "10", "3-0", "COUNT", "2") == [b"5-0", [[b"3-0", F], [b"4-0", F]], []]
    assert ctx.run("XAUTOCLAIM", "s", "g", "consumer2", "10", "5-0", "COUNT", "1") == [b"0-0", [[b"5-0", F]], []]
    check(stream)


def test_returned_cursor_passed_back_answers_as_a_parsed_one():
    # the handler keeps the key of the last cursor it answered and its place in the PEL and reuses them when that
    # very bytes object comes back (xclaim._last_cursor): the same replies and PEL as a loop sending equal bytes that
    # must be parsed and sought, also with cursors of another stream answered in between (the cache is one slot,
    # shared) and entries acknowledged or claimed by XCLAIM … FORCE in between (the place is stale then)
    from fake_streams.commands import xclaim

    runs = []
    for copy in (False, True):
        ctx, stream, group = setup(n=25)
        other, other_stream, other_group = setup(n=25)
        deliver(stream, group, b"c1", [sid(i) for i in range(1, 26)], T0 - 200)
        deliver(other_stream, other_group, b"c1", [sid(i) for i in range(3, 26, 2)], T0 - 200)
        replies, cursor, other_cursor, hits = [], b"0-0", b"0-0", 0
        for turn in range(12):
            sent = bytes(bytearray(cursor)) if copy else cursor
            hits += sent is xclaim._last_cursor[0]
            reply = ctx.run("XAUTOCLAIM", "s", "g", b"c%d" % (2 + turn % 2), "0", sent, "COUNT", "3")
            replies.append(reply)
            cursor = reply[0]
            if turn % 2:  # another stream's XAUTOCLAIM takes the cache's slot
                other_cursor = other.run("XAUTOCLAIM", "s", "g", "c9", "0", other_cursor, "COUNT", "2")[0]
            elif turn % 4 == 2:  # the PEL changes before the cursor comes back: its place moves
                assert ctx.run("XACK", "s", "g", b"%d-0" % (turn // 2)) == 1
            elif turn == 4:
                ctx.run("XCLAIM", "s", "g", "c5", "0", "26-0", "FORCE")  # (no such entry: nothing pending added)
                stream.append(sid(26), F)
                ctx.run("XCLAIM", "s", "g", "c5", "0", "26-0", "FORCE")
        runs.append((replies, pel(group)))
        assert (hits > 0) != copy, hits  # the shortcut was taken (only) where the object came back
        check(stream)
    assert runs[0] == runs[1]
    assert runs[0][0][0][0] == b"4-0"


def test_options_equal_to_the_last_parsed_answer_as_parsed_ones(monkeypatch):
    # the handler keeps the min-idle-time and options it last parsed without error with their values
    # (xclaim._last_options) and skips their parse when equal bytes come again: the same replies, errors (in the
    # server's order: min-idle-time, start, options) and PEL as parsing every call, for repeated, changed, NUL-cut,
    # case-changed and invalid tails, with the error of a bad start before a tail's (also a remembered one)
    from fake_streams.commands import xclaim

    calls = [
        ("0", "-", "COUNT", "2"), ("0", "-", "COUNT", "2"), ("0", "3-0", "COUNT", "2"), ("0", "x", "COUNT", "2"),
        ("0", "-", "count", "2"), ("0", "-", "COUNT", "2", "JUSTID"), ("0", "-", "COUNT", "2", "JUSTID"),
        ("0", "-", "COUNT", "0"), ("0", "x", "COUNT", "0"), ("0", "-", "COUNT", "0"), ("x", "-", "COUNT", "2"),
        ("x", "-", "COUNT", "2"), ("0", "-"), ("0", "-"), ("0", "-", "COUNT\0junk", "1"), ("0", "-", "COUNT"),
        ("0", "(", "COUNT"), ("0", "-", "COUNT", MAX_COUNT), ("1000", "-", "COUNT", "3"), ("1000", "-", "COUNT", "3"),
        ("0", "-", "JUSTID", "COUNT", "4"), ("0", "-", "NOPE"), ("0", "-", "NOPE"), ("0", "x", "NOPE"),
        ("00", "-", "COUNT", "2"), ("-5", "-", "COUNT", "2"), ("0", "-", "COUNT", "2"),
    ]
    runs = []
    for remembered in (True, False):
        ctx, stream, group = setup(n=12)
        deliver(stream, group, b"c1", [sid(i) for i in range(1, 13)], T0 - 200)
        replies, hits = [], 0
        for turn, tail in enumerate(calls):
            if not remembered:  # never equal: every call parses
                monkeypatch.setattr(xclaim, "_last_options", (b"\0", [b"\0"], 0, 1, False))
            last = xclaim._last_options
            args = [arg.encode() for arg in tail]
            hits += args[0] == last[0] and args[2:] == last[1]
            replies.append(ctx.run("XAUTOCLAIM", "s", "g", b"c%d" % (2 + turn % 2), *args))
        runs.append((replies, pel(group)))
        assert (hits > 0) == remembered, hits  # the shortcut was taken (only) where equal options came again
        check(stream)
    assert runs[0] == runs[1]
    assert runs[0][0][3] == err("INVALID_STREAM_ID") and runs[0][0][8] == err("INVALID_STREAM_ID")
    assert runs[0][0][7] == runs[0][0][9] == err("XAUTOCLAIM_COUNT") and runs[0][0][10] == err("XAUTOCLAIM_MIN_IDLE")


def test_options_are_repeatable_last_count_wins():
    ctx, stream, group = setup(n=5)
    deliver(stream, group, b"alice", [sid(i) for i in range(1, 6)], T0 - 10)
    reply = ctx.run("XAUTOCLAIM", "s", "g", "bob", "0", "-", "justid", "count", "5", "COUNT", "1", "JUSTID")
    assert reply == [b"2-0", [b"1-0"], []]


def test_default_count_is_100():
    ctx, stream, group = setup(n=150)
    deliver(stream, group, b"alice", [sid(i) for i in range(1, 151)], T0 - 10)
    cursor, claimed, deleted = ctx.run("XAUTOCLAIM", "s", "g", "bob", "0", "-", "JUSTID")
    assert (cursor, len(claimed), claimed[-1], deleted) == (b"101-0", 100, b"100-0", [])


def test_attempts_are_count_times_ten(monkeypatch):
    ctx, stream, group = setup(n=30)
    deliver(stream, group, b"alice", [sid(i) for i in range(1, 31)], T0 - 10)
    calls = []
    real_fields = type(stream).fields_sorted
    monkeypatch.setattr(type(stream), "fields_sorted",  # count the entries looked up
                        lambda self, keys: calls.extend(keys) or real_fields(self, keys))
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "1000", "-", "COUNT", "2") == [b"21-0", [], []]
    assert len(calls) == 20  # 20 examined, never the whole PEL
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "1000", "21-0", "COUNT", "2") == [b"0-0", [], []]
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "1000", "-", "COUNT", "1") == [b"11-0", [], []]


def test_not_idle_entries_do_not_consume_count():
    ctx, stream, group = setup(n=6)
    deliver(stream, group, b"alice", [sid(1), sid(3), sid(5)], T0 - 10)
    deliver(stream, group, b"alice", [sid(2), sid(4), sid(6)], T0 - 5000)
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "1000", "-", "COUNT", "2", "JUSTID") == [b"5-0", [b"2-0", b"4-0"], []]


# ----------------------------------------------------------------------------------------- deletions


def test_with_xdel():
    # test "XAUTOCLAIM with XDEL" -> {0-0 {{1-0 {f v}} {3-0 {f v}}} 2-0}
    ctx, stream, group = setup()
    deliver(stream, group, b"Alice", [sid(1), sid(2), sid(3)], T0)
    stream.delete(sid(2))
    assert ctx.run("XAUTOCLAIM", "s", "g", "Bob", "0", "0-0") == [b"0-0", [[b"1-0", F], [b"3-0", F]], [b"2-0"]]
    assert list(group.pel) == [sid(1), sid(3)]
    check(stream)


def test_with_xdel_and_count():
    # test "XAUTOCLAIM with XDEL and count": deleted IDs consume COUNT
    ctx, stream, group = setup()
    deliver(stream, group, b"Alice", [sid(1), sid(2), sid(3)], T0)
    stream.delete(sid(1))
    stream.delete(sid(2))
    assert ctx.run("XAUTOCLAIM", "s", "g", "Bob", "0", "0-0", "COUNT", "1") == [b"2-0", [], [b"1-0"]]
    assert ctx.run("XAUTOCLAIM", "s", "g", "Bob", "0", "2-0", "COUNT", "1") == [b"3-0", [], [b"2-0"]]
    assert ctx.run("XAUTOCLAIM", "s", "g", "Bob", "0", "3-0", "COUNT", "1") == [b"0-0", [[b"3-0", F]], []]
    assert len(group.consumers[b"Alice"].pel) == 0  # XPENDING x grp - + 10 Alice -> {}
    check(stream)


def test_deleted_ids_reported_with_justid_and_regardless_of_idle():
    ctx, stream, group = setup(n=4)
    deliver(stream, group, b"alice", [sid(1), sid(2), sid(3), sid(4)], T0)
    stream.delete(sid(2))
    stream.delete(sid(4))
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "999999", "-", "JUSTID") == [b"0-0", [], [b"2-0", b"4-0"]]
    assert list(group.pel) == [sid(1), sid(3)]
    check(stream)


def test_deleted_last_in_batch_cursor_is_the_next_pel_id():
    ctx, stream, group = setup(n=4)
    deliver(stream, group, b"alice", [sid(1), sid(2), sid(3), sid(4)], T0 - 10)
    stream.delete(sid(2))
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "0", "-", "COUNT", "2", "JUSTID") == [b"3-0", [b"1-0"], [b"2-0"]]
    check(stream)


# ------------------------------------------------------------------------------ consumers per profile


@pytest.mark.parametrize("version", EAGER)
def test_consumer_created_even_if_nothing_is_claimed(version):
    ctx, stream, group = setup(version)
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "0", "0") == [b"0-0", [], []]
    bob = group.consumers[b"bob"]
    assert (bob.seen_time, bob.active_time) == (T0, NEVER_ACTIVE)
    assert ctx.events == [("xgroup-createconsumer", b"s")]
    check(stream)


def test_r70_consumer_created_only_on_first_claim():
    ctx, stream, group = setup("7.0")
    deliver(stream, group, b"alice", [sid(1)], T0 - 10)
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "1000", "0") == [b"0-0", [], []]
    assert list(group.consumers) == [b"alice"]
    stream.delete(sid(1))
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "0", "0") == [b"0-0", [], [b"1-0"]]  # a deletion is no claim
    assert list(group.consumers) == [b"alice"]
    assert ctx.events == []
    deliver(stream, group, b"alice", [sid(2)], T0 - 10)
    ctx.now_ms = T0 + 5
    assert ctx.run("XAUTOCLAIM", "s", "g", "bob", "0", "0", "JUSTID") == [b"0-0", [b"2-0"], []]
    bob = group.consumers[b"bob"]
    assert (bob.seen_time, bob.active_time) == (T0 + 5, NEVER_ACTIVE)
    assert ctx.events == [("xgroup-createconsumer", b"s")]
    check(stream)


@pytest.mark.parametrize("version", EAGER)
def test_seen_time_every_call_active_time_on_claims(version):
    ctx, stream, group = setup(version)
    deliver(stream, group, b"alice", [sid(1)], T0 - 5000)
    alice = group.consumers[b"alice"]
    ctx.now_ms = T0 + 10
    assert ctx.run("XAUTOCLAIM", "s", "g", "alice", "999999", "0") == [b"0-0", [], []]
    assert (alice.seen_time, alice.active_time) == (T0 + 10, T0 - 5000)
    ctx.now_ms = T0 + 20
    assert ctx.run("XAUTOCLAIM", "s", "g", "alice", "0", "0", "JUSTID") == [b"0-0", [b"1-0"], []]
    assert (alice.seen_time, alice.active_time) == (T0 + 20, T0 + 20)


def test_r70_seen_time_only_when_claiming():
    ctx, stream, group = setup("7.0")
    deliver(stream, group, b"alice", [sid(1)], T0 - 5000)
    alice = group.consumers[b"alice"]
    ctx.now_ms = T0 + 10
    assert ctx.run("XAUTOCLAIM", "s", "g", "alice", "999999", "0") == [b"0-0", [], []]
    assert alice.seen_time == T0 - 5000


# -------------------------------------------------------------------------------- the seed document
# seeds/002_3f1eb436fefa0333.txt (Chinese XAUTOCLAIM page). Its entry ID 1609338752495-0 is an XADD *
# at that millisecond; "1 hour later" is now + 3600000 ms.

SEED_ID = StreamID(1609338752495, 0)
SEED_T = 1609338752495
HOUR = 3_600_000


def seed_state(version="7.4"):
    """> XADD mystream * field value / XGROUP CREATE mystream mygroup 0 / XREADGROUP GROUP mygroup Alice COUNT 1 ..."""
    ctx = DictContext(version, now_ms=SEED_T)
    stream = ctx.create(b"mystream")
    stream.append(SEED_ID, [b"field", b"value"])
    group = ConsumerGroup(b"mygroup", MIN_ID)
    stream.groups[b"mygroup"] = group
    deliver(stream, group, b"Alice", [SEED_ID], SEED_T)
    return ctx, stream, group


@pytest.mark.parametrize("version", ALL)
def test_seed_basic_usage(version):
    ctx, stream, group = seed_state(version)
    ctx.now_ms = SEED_T + HOUR  # Alice has not acknowledged for an hour; Bob claims
    reply = ctx.run("XAUTOCLAIM", "mystream", "mygroup", "Bob", "3600000", "0-0", "COUNT", "25")
    assert reply == [b"0-0", [[b"1609338752495-0", [b"field", b"value"]]], []]
    assert pel(group) == {SEED_ID: (b"Bob", SEED_T + HOUR, 2)}
    check(stream)


@pytest.mark.parametrize("version", ALL)
def test_seed_justid(version):
    # The seed shows this as its own example; run right after the previous one it would claim nothing
    # (Bob's claim reset the idle time), so it starts from the same "one hour later" state.
    ctx, stream, group = seed_state(version)
    ctx.now_ms = SEED_T + HOUR
    reply = ctx.run("XAUTOCLAIM", "mystream", "mygroup", "Bob", "3600000", "0-0", "JUSTID")
    assert reply == [b"0-0", [b"1609338752495-0"], []]
    assert pel(group) == {SEED_ID: (b"Bob", SEED_T + HOUR, 1)}  # "retry counter 不会递增" with JUSTID
    check(stream)


@pytest.mark.parametrize("version", ALL)
def test_seed_cursor_iteration(version):
    # The seed's cursor example returns cursor 1610000000000-0 after claiming one entry with COUNT 10.
    # That only happens when the scan used up its COUNT*10 = 100 attempts: the seed leaves out 99 other
    # pending entries (not idle for 60 s) between the two IDs. They are built here so the replies are exact.
    ctx, stream, group = seed_state(version)
    recent = [StreamID(1609999999901 + i, 0) for i in range(99)] + [StreamID(1610000000000, 0), StreamID(1610000000001, 0)]
    for s in recent:
        stream.append(s, [b"field", b"value"])
    now = 1610000030000
    deliver(stream, group, b"Alice", recent, now - 30_000)
    ctx.now_ms = now
    reply = ctx.run("XAUTOCLAIM", "mystream", "mygroup", "Charlie", "60000", "0-0", "COUNT", "10")
    assert reply == [b"1610000000000-0", [[b"1609338752495-0", [b"field", b"value"]]], []]
    # continue the scan from the cursor
    reply = ctx.run("XAUTOCLAIM", "mystream", "mygroup", "Charlie", "60000", "1610000000000-0", "COUNT", "10")
    assert reply == [b"0-0", [], []]
    assert list(group.consumers[b"Charlie"].pel) == [SEED_ID]
    check(stream)


def test_seed_common_errors():
    ctx, stream, group = seed_state()
    ctx.now_ms = SEED_T + HOUR
    # NOGROUP: the group does not exist
    assert ctx.run("XAUTOCLAIM", "mystream", "nogroup", "Bob", "3600000", "0-0") == (
        "NOGROUP No such key 'mystream' or consumer group 'nogroup'"
    )
    # missing required arguments
    assert ctx.run("XAUTOCLAIM", "mystream", "mygroup", "Bob", "3600000") == (
        "ERR wrong number of arguments for 'xautoclaim' command"
    )
    # The seed lists a negative min-idle-time as an invalid argument. The server accepts it and treats
    # it as 0 (t_stream.c: `if (minidle < 0) minidle = 0;`), so the server behaviour is tested: it claims.
    assert ctx.run("XAUTOCLAIM", "mystream", "mygroup", "Bob", "-1", "0-0", "JUSTID") == [b"0-0", [b"1609338752495-0"], []]
    # only a non-integer min-idle-time is an error
    assert ctx.run("XAUTOCLAIM", "mystream", "mygroup", "Bob", "soon", "0-0") == err("XAUTOCLAIM_MIN_IDLE")


def test_seed_zero_cursor_can_be_called_again_for_new_idle_entries():
    ctx, stream, group = seed_state()
    ctx.now_ms = SEED_T + 1000
    assert ctx.run("XAUTOCLAIM", "mystream", "mygroup", "Bob", "3600000", "0-0") == [b"0-0", [], []]
    ctx.now_ms = SEED_T + HOUR
    assert ctx.run("XAUTOCLAIM", "mystream", "mygroup", "Bob", "3600000", "0-0", "JUSTID") == [b"0-0", [b"1609338752495-0"], []]


@pytest.mark.parametrize("version", ALL)
def test_seed_basic_usage_through_the_command_path(version):
    ctx = DictContext(version, now_ms=SEED_T)
    assert ctx.run("XADD", "mystream", "*", "field", "value") == b"1609338752495-0"
    assert ctx.run("XGROUP", "CREATE", "mystream", "mygroup", "0") == ctx.run("XGROUP", "SETID", "mystream", "mygroup", "0")
    assert ctx.run("XREADGROUP", "GROUP", "mygroup", "Alice", "COUNT", "1", "STREAMS", "mystream", ">") == [
        [b"mystream", [[b"1609338752495-0", [b"field", b"value"]]]]
    ]
    ctx.now_ms += HOUR
    assert ctx.run("XAUTOCLAIM", "mystream", "mygroup", "Bob", "3600000", "0-0", "COUNT", "25") == [
        b"0-0", [[b"1609338752495-0", [b"field", b"value"]]], []
    ]
    assert ctx.run("XPENDING", "mystream", "mygroup", "-", "+", "10") == [[b"1609338752495-0", b"Bob", 0, 2]]
    check(ctx.keyspace[b"mystream"])


# ------------------------------------------------------------- the windowed scan against the per-entry rule


def _reference(stream, group, consumer, min_idle, start, count, justid, now):
    """What XAUTOCLAIM answers and leaves, computed entry by entry from the rule (spec §2.14) on a copy of the
    model's state: the PEL walked from ``start``, at most COUNT * 10 examined, COUNT results."""
    state = pel(group)
    attempts, claimed, deleted, cursor = count * 10, [], [], b"0-0"
    for s in sorted(k for k in state if k >= start):
        if not attempts or not count:
            cursor = s.encode()
            break
        attempts -= 1
        fields = stream.get(s)
        if fields is None:
            deleted.append(s.encode())
            del state[s]
            count -= 1
            continue
        owner, delivered, times = state[s]
        if min_idle and now - delivered < min_idle:
            continue
        state[s] = (consumer, now, times if justid else times + 1)
        claimed.append(s.encode() if justid else [s.encode(), fields])
        count -= 1
    return [cursor, claimed, deleted], state


@pytest.mark.parametrize("seed", range(16))
def test_windowed_scan_matches_the_per_entry_rule(seed):
    """The scan's batches (whole windows claimed at once, entry lookups in one slice) answer and leave exactly what
    the per-entry rule does: random PELs with several owners, deleted entries, idle times, chunk boundaries."""
    import random

    rnd = random.Random(seed)
    n = rnd.choice([5, 40, 1500, 2600])  # beyond LOAD (1000): PEL and stream chunks split
    ctx, stream, group = setup(n=n)
    owners = [b"alice", b"bob", b"carol"]
    for ms in range(1, n + 1):
        if rnd.random() < 0.8:
            deliver(stream, group, rnd.choice(owners), [sid(ms)], T0 - rnd.randrange(0, 5000))
    for ms in rnd.sample(range(1, n + 1), k=rnd.randrange(0, max(1, n // 4))):
        stream.delete(sid(ms))
    for _ in range(6):
        consumer = rnd.choice(owners + [b"dave"])
        min_idle = rnd.choice([0, 0, 1000, 4000, 10_000])
        start = sid(rnd.randrange(0, n + 2))
        count = rnd.choice([1, 2, 10, 100, 3000])
        justid = rnd.random() < 0.3
        expected, after = _reference(stream, group, consumer, min_idle, start, count, justid, T0)
        argv = ["XAUTOCLAIM", "s", "g", consumer, str(min_idle), start.encode(), "COUNT", str(count)]
        assert ctx.run(*argv, *(["JUSTID"] if justid else [])) == expected
        assert pel(group) == after
        for c in group.consumers.values():  # each consumer's own PEL holds exactly the entries it owns
            assert sorted(c.pel.keys()) == sorted(s for s, (o, _, _) in after.items() if o == c.name)
