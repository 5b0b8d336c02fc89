"""XCLAIM (spec §2.13): parse order, every error text, options, profile differences, exact replies.

State is built directly on the model (``Stream.append``, ``ConsumerGroup``, ``group.deliver``) so these
tests do not depend on XADD / XGROUP / XREADGROUP; times are explicit ``ctx.now_ms`` values.
"""

from __future__ import annotations

import pytest

from fake_streams.groups import NEVER_ACTIVE, ConsumerGroup
from fake_streams.ids import MIN_ID
from tests.support.context import DictContext
from tests.support.engine import ALL, EAGER, T0, F
from tests.support.groupstate import check, deliver, err, pel, sid


def setup(version="7.4", n=3, now=T0, protocol=2):
    """Stream ``s`` with entries 1-0..n-0 (fields ``f v``) and an empty group ``g`` at 0-0."""
    ctx = DictContext(version, protocol=protocol, now_ms=now)
    stream = ctx.create(b"s")
    for ms in range(1, n + 1):
        stream.append(sid(ms), F)
    group = ConsumerGroup(b"g", MIN_ID)
    stream.groups[b"g"] = group
    return ctx, stream, group


# ------------------------------------------------------------------------------------- errors / order


@pytest.mark.parametrize("version", ALL)
def test_missing_key_is_nogroup_before_argument_validation(version):
    ctx = DictContext(version)
    assert ctx.run("XCLAIM", "nokey", "g", "c", "abc", "1-0") == err("NOGROUP", key="nokey", group="g")
    assert ctx.run("XCLAIM", "nokey", "g", "c", "0", "1-0", "IDLE", "x") == err("NOGROUP", key="nokey", group="g")


def test_missing_group_is_nogroup_before_argument_validation():
    ctx, stream, group = setup()
    assert ctx.run("XCLAIM", "s", "nog", "c", "abc", "1-0") == "NOGROUP No such key 's' or consumer group 'nog'"


def test_wrong_type_comes_first():
    ctx = DictContext()
    ctx.keyspace[b"str"] = b"x"
    assert ctx.run("XCLAIM", "str", "g", "c", "abc", "1-0") == err("WRONGTYPE")


def test_nogroup_names_are_sanitised():
    ctx = DictContext()
    assert ctx.run("XCLAIM", "a\r\nb", "g\0x", "c", "0", "1-0") == "NOGROUP No such key 'a  b' or consumer group 'g'"


@pytest.mark.parametrize("raw", ["abc", "+5", "05", "1.5", "", "99999999999999999999"])
def test_min_idle_time_must_be_an_integer(raw):
    ctx, stream, group = setup()
    assert ctx.run("XCLAIM", "s", "g", "c", raw, "1-0") == err("XCLAIM_MIN_IDLE")


def test_arity():
    ctx, stream, group = setup()
    assert ctx.run("XCLAIM", "s", "g", "c", "0") == "ERR wrong number of arguments for 'xclaim' command"


@pytest.mark.parametrize(
    "tail, expected",
    [
        (["1-0", "IDLE"], err("XCLAIM_UNKNOWN_OPTION", option="IDLE")),
        (["1-0", "TIME"], err("XCLAIM_UNKNOWN_OPTION", option="TIME")),
        (["1-0", "RETRYCOUNT"], err("XCLAIM_UNKNOWN_OPTION", option="RETRYCOUNT")),
        (["1-0", "lastid"], err("XCLAIM_UNKNOWN_OPTION", option="lastid")),
        (["1-0", "JUSTID", "2-0"], err("XCLAIM_UNKNOWN_OPTION", option="2-0")),
        (["1-0", "FOO"], err("XCLAIM_UNKNOWN_OPTION", option="FOO")),
        (["+"], err("XCLAIM_UNKNOWN_OPTION", option="+")),  # strict ID: '+' starts the options
        (["-"], err("XCLAIM_UNKNOWN_OPTION", option="-")),
        (["1-0", "foo\r\nbar"], "ERR Unrecognized XCLAIM option 'foo  bar'"),
        (["1-0", "IDLE", "x"], err("XCLAIM_IDLE")),
        (["1-0", "idle", "1.5"], err("XCLAIM_IDLE")),
        (["1-0", "TIME", "x"], err("XCLAIM_TIME")),
        (["1-0", "RETRYCOUNT", "x"], err("XCLAIM_RETRYCOUNT")),
        (["1-0", "LASTID", "x"], err("INVALID_STREAM_ID")),
        (["1-0", "LASTID", "+"], err("INVALID_STREAM_ID")),
        (["1-0", "IDLE", "10", "TIME", "+5"], err("XCLAIM_TIME")),
    ],
)
def test_option_errors(tail, expected):
    ctx, stream, group = setup()
    assert ctx.run("XCLAIM", "s", "g", "c", "0", *tail) == expected


@pytest.mark.parametrize("version", ALL)
def test_error_changes_nothing(version):
    ctx, stream, group = setup(version)
    deliver(stream, group, b"a", [sid(1)], T0 - 100)
    before = pel(group)
    reply = ctx.run("XCLAIM", "s", "g", "newbie", "0", "1-0", "LASTID", "9-0", "FORCE", "IDLE", "x")
    assert reply == err("XCLAIM_IDLE")
    assert pel(group) == before
    assert group.last_id == sid(1)
    assert list(group.consumers) == [b"a"]
    assert ctx.events == []
    check(stream)


def test_ids_are_parsed_silently_until_the_first_non_id():
    # a malformed ID simply starts the option list
    ctx, stream, group = setup()
    deliver(stream, group, b"a", [sid(1)], T0)
    assert ctx.run("XCLAIM", "s", "g", "c", "0", "1-0", "1-x") == err("XCLAIM_UNKNOWN_OPTION", option="1-x")
    # incomplete IDs are strict IDs with seq 0
    assert ctx.run("XCLAIM", "s", "g", "c", "0", "1", "JUSTID") == [b"1-0"]


# ------------------------------------------------------------------------------------------ claiming


@pytest.mark.parametrize("protocol", [2, 3])
def test_claim_moves_entry_and_bumps_count(protocol):
    ctx, stream, group = setup(protocol=protocol)
    deliver(stream, group, b"alice", [sid(1), sid(2)], T0 - 5000)
    reply = ctx.run("XCLAIM", "s", "g", "bob", "1000", "1-0")
    assert reply == [[b"1-0", [b"f", b"v"]]]
    assert isinstance(reply, list)
    assert pel(group) == {sid(1): (b"bob", T0, 2), sid(2): (b"alice", T0 - 5000, 1)}
    assert list(group.consumers[b"bob"].pel) == [sid(1)]
    assert list(group.consumers[b"alice"].pel) == [sid(2)]
    assert ctx.modified_keys == []  # XCLAIM does not signalModifiedKey (a WATCH stays clean)
    check(stream)


def test_reply_order_is_argument_order_and_duplicates_are_processed_again():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1), sid(2), sid(3)], T0 - 5000)
    reply = ctx.run("XCLAIM", "s", "g", "bob", "0", "3-0", "1-0", "3-0")
    assert reply == [[b"3-0", F], [b"1-0", F], [b"3-0", F]]
    assert pel(group)[sid(3)] == (b"bob", T0, 3)
    assert pel(group)[sid(1)] == (b"bob", T0, 2)
    check(stream)


def test_duplicate_is_subject_to_min_idle_again():
    # the first occurrence resets delivery_time to now, so the second one is no longer idle enough
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1)], T0 - 5000)
    assert ctx.run("XCLAIM", "s", "g", "bob", "1000", "1-0", "1-0") == [[b"1-0", F]]
    assert pel(group)[sid(1)] == (b"bob", T0, 2)


def test_min_idle_time_filter_and_boundary():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1)], T0 - 1000)
    deliver(stream, group, b"alice", [sid(2)], T0 - 999)
    assert ctx.run("XCLAIM", "s", "g", "bob", "1000", "1-0", "2-0", "JUSTID") == [b"1-0"]  # idle == min: claimed
    assert pel(group)[sid(2)] == (b"alice", T0 - 999, 1)
    check(stream)


def test_negative_min_idle_time_means_zero():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1)], T0)
    assert ctx.run("XCLAIM", "s", "g", "bob", "-5", "1-0", "JUSTID") == [b"1-0"]


def test_same_consumer_can_reclaim():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1)], T0 - 10)
    assert ctx.run("XCLAIM", "s", "g", "alice", "0", "1-0") == [[b"1-0", F]]
    assert pel(group) == {sid(1): (b"alice", T0, 2)}
    check(stream)


def test_id_not_pending_is_skipped_without_force():
    ctx, stream, group = setup()
    assert ctx.run("XCLAIM", "s", "g", "bob", "0", "1-0", "2-0") == []
    assert pel(group) == {}


def test_justid_does_not_bump_the_count():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1)], T0 - 10)
    assert ctx.run("XCLAIM", "s", "g", "bob", "0", "1-0", "JUSTID") == [b"1-0"]
    assert pel(group)[sid(1)] == (b"bob", T0, 1)
    assert ctx.run("XCLAIM", "s", "g", "carol", "0", "1-0") == [[b"1-0", F]]
    assert pel(group)[sid(1)] == (b"carol", T0, 2)


@pytest.mark.parametrize(
    "opts, count",
    [
        (["RETRYCOUNT", "7"], 7),
        (["RETRYCOUNT", "0"], 0),
        (["RETRYCOUNT", "7", "JUSTID"], 7),
        (["RETRYCOUNT", "-3"], 5),  # negative: as if not given (+1)
        (["RETRYCOUNT", "-3", "JUSTID"], 4),
        (["retrycount", "2", "RETRYCOUNT", "9"], 9),  # last one wins
    ],
)
def test_retrycount(opts, count):
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1)], T0 - 10)
    group.pel[sid(1)].delivery_count = 4
    assert len(ctx.run("XCLAIM", "s", "g", "bob", "0", "1-0", *opts)) == 1
    assert pel(group)[sid(1)][2] == count


@pytest.mark.parametrize(
    "opts, delivery_time",
    [
        ([], T0),
        (["IDLE", "300"], T0 - 300),
        (["IDLE", "0"], T0),
        (["IDLE", str(T0)], 0),
        (["IDLE", str(T0 + 1)], T0),  # would be negative: now
        (["IDLE", "-5"], T0),  # would be in the future: now
        (["IDLE", "-9223372036854775808"], T0),
        (["IDLE", "9223372036854775807"], T0),
        (["TIME", str(T0 - 42)], T0 - 42),
        (["TIME", "0"], 0),
        (["TIME", str(T0 + 1)], T0),  # future: now
        (["TIME", "-1"], T0),
        (["IDLE", "300", "TIME", str(T0 - 7)], T0 - 7),  # last one wins
        (["TIME", str(T0 - 7), "idle", "300"], T0 - 300),
    ],
)
def test_idle_and_time_set_the_delivery_time(opts, delivery_time):
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1)], T0 - 10)
    assert ctx.run("XCLAIM", "s", "g", "bob", "0", "1-0", "JUSTID", *opts) == [b"1-0"]
    assert pel(group)[sid(1)] == (b"bob", delivery_time, 1)


def test_idle_is_measured_against_the_explicit_now():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1)], T0)
    ctx.now_ms = T0 + 59_999
    assert ctx.run("XCLAIM", "s", "g", "bob", "60000", "1-0") == []
    ctx.now_ms = T0 + 60_000
    assert ctx.run("XCLAIM", "s", "g", "bob", "60000", "1-0") == [[b"1-0", F]]
    assert pel(group)[sid(1)] == (b"bob", T0 + 60_000, 2)


# ----------------------------------------------------------------------------------- FORCE / deleted


@pytest.mark.parametrize("justid, count", [(False, 2), (True, 1)])
def test_force_creates_a_pending_entry(justid, count):
    ctx, stream, group = setup()
    extra = ["JUSTID"] if justid else []
    reply = ctx.run("XCLAIM", "s", "g", "bob", "3600000", "2-0", "FORCE", *extra)
    assert reply == ([b"2-0"] if justid else [[b"2-0", F]])  # min-idle does not apply to the new NACK
    assert pel(group) == {sid(2): (b"bob", T0, count)}
    check(stream)


def test_force_with_idle_and_retrycount():
    ctx, stream, group = setup()
    assert ctx.run("XCLAIM", "s", "g", "bob", "0", "2-0", "force", "IDLE", "500", "RETRYCOUNT", "3") == [[b"2-0", F]]
    assert pel(group) == {sid(2): (b"bob", T0 - 500, 3)}


def test_force_does_not_skip_min_idle_for_existing_entries():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1)], T0 - 10)
    assert ctx.run("XCLAIM", "s", "g", "bob", "1000", "1-0", "2-0", "FORCE", "JUSTID") == [b"2-0"]
    assert pel(group)[sid(1)] == (b"alice", T0 - 10, 1)
    check(stream)


def test_force_on_a_missing_entry_does_nothing():
    ctx, stream, group = setup()
    assert ctx.run("XCLAIM", "s", "g", "bob", "0", "9-0", "FORCE") == []
    assert pel(group) == {}
    check(stream)


def test_deleted_entries_leave_the_pel_and_the_reply():
    # tests "XCLAIM with XDEL" / "XCLAIM with trimming"
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1), sid(2), sid(3)], T0 - 10)
    stream.delete(sid(2))
    reply = ctx.run("XCLAIM", "s", "g", "bob", "0", "1-0", "2-0", "3-0")
    assert reply == [[b"1-0", F], [b"3-0", F]]
    assert sid(2) not in group.pel
    assert list(group.consumers[b"alice"].pel) == []
    check(stream)


def test_deleted_entry_is_dropped_even_when_not_idle_enough():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(2)], T0)
    stream.delete(sid(2))
    assert ctx.run("XCLAIM", "s", "g", "bob", "999999", "2-0", "FORCE") == []
    assert group.pel == {}
    check(stream)


# -------------------------------------------------------------------------------------------- LASTID


def test_lastid_moves_the_group_forward_only():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1), sid(2)], T0 - 10)
    entries_read = group.entries_read
    assert ctx.run("XCLAIM", "s", "g", "bob", "0", "9-0", "LASTID", "5-0") == []
    assert group.last_id == sid(5)
    assert group.entries_read == entries_read  # unchanged
    assert ctx.run("XCLAIM", "s", "g", "bob", "0", "9-0", "LASTID", "3") == []
    assert group.last_id == sid(5)
    assert ctx.run("XCLAIM", "s", "g", "bob", "0", "9-0", "LASTID", "7-1", "lastid", "6-0") == []
    assert group.last_id == sid(6)  # last one wins


def test_lastid_applies_even_when_nothing_is_claimed():
    ctx, stream, group = setup("7.0")
    assert ctx.run("XCLAIM", "s", "g", "bob", "0", "1-0", "LASTID", "2-5") == []
    assert group.last_id == sid(2, 5)


# ----------------------------------------------------------------------------- consumers per profile


@pytest.mark.parametrize("version", EAGER)
def test_consumer_created_even_if_nothing_is_claimed(version):
    ctx, stream, group = setup(version)
    assert ctx.run("XCLAIM", "s", "g", "bob", "0", "1-0") == []
    bob = group.consumers[b"bob"]
    assert (bob.seen_time, bob.active_time, len(bob.pel)) == (T0, NEVER_ACTIVE, 0)
    assert ctx.events == [("xgroup-createconsumer", b"s")]
    check(stream)


def test_r70_consumer_not_created_when_nothing_is_claimed():
    ctx, stream, group = setup("7.0")
    deliver(stream, group, b"alice", [sid(1)], T0 - 10)
    assert ctx.run("XCLAIM", "s", "g", "bob", "1000", "1-0", "2-0") == []
    assert list(group.consumers) == [b"alice"]
    assert ctx.events == []


def test_r70_consumer_created_on_first_claim():
    ctx, stream, group = setup("7.0")
    deliver(stream, group, b"alice", [sid(1)], T0 - 10)
    assert ctx.run("XCLAIM", "s", "g", "bob", "0", "1-0") == [[b"1-0", F]]
    bob = group.consumers[b"bob"]
    assert (bob.seen_time, bob.active_time) == (T0, NEVER_ACTIVE)  # R7.0 has no active-time
    assert ctx.events == [("xgroup-createconsumer", b"s")]
    check(stream)


@pytest.mark.parametrize("version", EAGER)
def test_seen_time_refreshed_on_every_call_active_time_on_claims(version):
    ctx, stream, group = setup(version)
    deliver(stream, group, b"alice", [sid(1)], T0 - 5000)
    alice = group.consumers[b"alice"]
    ctx.now_ms = T0 + 10
    assert ctx.run("XCLAIM", "s", "g", "alice", "999999", "1-0") == []
    assert (alice.seen_time, alice.active_time) == (T0 + 10, T0 - 5000)
    ctx.now_ms = T0 + 20
    assert ctx.run("XCLAIM", "s", "g", "alice", "0", "1-0", "JUSTID") == [b"1-0"]
    assert (alice.seen_time, alice.active_time) == (T0 + 20, T0 + 20)
    assert ctx.events == []  # existing consumer: no event


def test_r70_seen_time_only_refreshed_when_claiming():
    ctx, stream, group = setup("7.0")
    deliver(stream, group, b"alice", [sid(1)], T0 - 5000)
    alice = group.consumers[b"alice"]
    ctx.now_ms = T0 + 10
    assert ctx.run("XCLAIM", "s", "g", "alice", "999999", "1-0") == []
    assert alice.seen_time == T0 - 5000
    ctx.now_ms = T0 + 20
    assert ctx.run("XCLAIM", "s", "g", "alice", "0", "1-0", "JUSTID") == [b"1-0"]
    assert alice.seen_time == T0 + 20


def test_claim_from_a_deleted_consumer_state_keeps_invariants():
    ctx, stream, group = setup()
    deliver(stream, group, b"alice", [sid(1), sid(2)], T0 - 10)
    deliver(stream, group, b"bob", [sid(3)], T0 - 10)
    assert ctx.run("XCLAIM", "s", "g", "bob", "0", "1-0", "2-0", "3-0", "JUSTID") == [b"1-0", b"2-0", b"3-0"]
    assert list(group.consumers[b"bob"].pel) == [sid(1), sid(2), sid(3)]
    assert len(group.consumers[b"alice"].pel) == 0
    check(stream)


# ------------------------------------------------------------------- through the full command path


@pytest.mark.parametrize("version", ALL)
def test_ported_xclaim_can_claim_pel_items_from_another_consumer(version):
    # stream-cgroups.tcl "XCLAIM can claim PEL items from another consumer" (the `after 200` waits are now_ms steps)
    ctx = DictContext(version, now_ms=T0)
    id1 = ctx.run("XADD", "mystream", "*", "a", "1")
    id2 = ctx.run("XADD", "mystream", "*", "b", "2")
    id3 = ctx.run("XADD", "mystream", "*", "c", "3")
    assert (id1, id2, id3) == (b"%d-0" % T0, b"%d-1" % T0, b"%d-2" % T0)
    ctx.run("XGROUP", "CREATE", "mystream", "mygroup", "0")
    reply = ctx.run("XREADGROUP", "GROUP", "mygroup", "consumer1", "count", "1", "STREAMS", "mystream", ">")
    assert reply == [[b"mystream", [[id1, [b"a", b"1"]]]]]
    assert len(ctx.run("XPENDING", "mystream", "mygroup", "-", "+", "10", "consumer1")) == 1
    ctx.now_ms += 200
    assert ctx.run("XCLAIM", "mystream", "mygroup", "consumer2", "10", id1) == [[id1, [b"a", b"1"]]]
    assert ctx.run("XPENDING", "mystream", "mygroup", "-", "+", "10") == [[id1, b"consumer2", 0, 2]]
    assert ctx.run("XPENDING", "mystream", "mygroup", "-", "+", "10", "consumer1") == []
    ctx.run("XREADGROUP", "GROUP", "mygroup", "consumer1", "count", "2", "STREAMS", "mystream", ">")
    ctx.now_ms += 200
    ctx.run("XDEL", "mystream", id2)
    assert ctx.run("XCLAIM", "mystream", "mygroup", "consumer2", "10", id2) == []
    ctx.now_ms += 200
    ctx.run("XDEL", "mystream", id3)
    assert ctx.run("XCLAIM", "mystream", "mygroup", "consumer2", "10", id3) == []
    assert ctx.run("XPENDING", "mystream", "mygroup", "-", "+", "10", "consumer1") == []
    check(ctx.keyspace[b"mystream"])


def test_ported_xclaim_without_justid_increments_delivery_count():
    ctx = DictContext(now_ms=T0)
    ctx.run("XADD", "mystream", "1-0", "a", "1")
    ctx.run("XGROUP", "CREATE", "mystream", "mygroup", "0")
    ctx.run("XREADGROUP", "GROUP", "mygroup", "consumer1", "count", "1", "STREAMS", "mystream", ">")
    ctx.now_ms += 200
    assert ctx.run("XCLAIM", "mystream", "mygroup", "consumer2", "10", "1-0") == [[b"1-0", [b"a", b"1"]]]
    assert ctx.run("XPENDING", "mystream", "mygroup", "-", "+", "10") == [[b"1-0", b"consumer2", 0, 2]]
    ctx.now_ms += 200
    assert ctx.run("XCLAIM", "mystream", "mygroup", "consumer3", "10", "1-0", "JUSTID") == [b"1-0"]
    assert ctx.run("XPENDING", "mystream", "mygroup", "-", "+", "10") == [[b"1-0", b"consumer3", 0, 2]]
    check(ctx.keyspace[b"mystream"])
