"""The consumer-group model (fake_streams.groups): PEL ownership, consumers, groups of a stream, lag arithmetic.

Model-only tests (no handlers) plus the lag examples of spec §4.2 run through the commands.
"""

from __future__ import annotations

import pytest

from fake_streams.groups import (
    INVALID_ENTRIES_READ,
    NEVER_ACTIVE,
    Consumer,
    ConsumerGroup,
    PendingEntry,
    advance_entries_read,
    create_group,
    destroy_group,
    estimate_distance,
    group_lag,
    has_tombstones,
    lag_of,
)
from fake_streams.ids import MIN_ID, key_of
from fake_streams.stream import Stream
from tests.support.context import DictContext
from tests.support.engine import ALL, sid
from tests.support.groupstate import pel as owners


# --------------------------------------------------------------------------------------- PendingEntry
def test_pending_entry_idle_is_never_negative():
    nack = PendingEntry(1_000, 1, Consumer(b"c", 0))
    assert nack.idle(1_250) == 250
    assert nack.idle(900) == 0


def test_pending_entry_redeliver_counts_and_restarts_the_clock():
    nack = PendingEntry(1_000, 1, Consumer(b"c", 0))
    nack.redeliver(5_000)
    assert (nack.delivery_time, nack.delivery_count) == (5_000, 2)


# ------------------------------------------------------------------------------------------ consumers
def test_new_consumer_is_seen_now_and_never_active():
    consumer = Consumer(b"alice", 42)
    assert (consumer.seen_time, consumer.active_time, len(consumer.pel)) == (42, NEVER_ACTIVE, 0)


def test_lookup_or_create_and_seen():
    group = ConsumerGroup(b"g", MIN_ID)
    alice, created = group.lookup_or_create(b"alice", 10)
    assert created and alice.seen_time == 10
    again, created = group.lookup_or_create(b"alice", 20)
    assert again is alice and not created and alice.seen_time == 10  # a plain lookup does not touch seen_time
    seen, created = group.seen(b"alice", 30)
    assert seen is alice and not created and alice.seen_time == 30
    bob, created = group.seen(b"bob", 40)
    assert created and bob.seen_time == 40 and bob.active_time == NEVER_ACTIVE
    group._check()


def test_consumers_are_ordered_bytewise_prefix_first():
    group = ConsumerGroup(b"g", MIN_ID)
    for name in (b"b", b"ab", b"a", b"B", b"\xff", b"a\x00"):
        group.create_consumer(name, 0)
    assert list(group.consumers) == [b"B", b"a", b"a\x00", b"ab", b"b", b"\xff"]


def test_delete_consumer_drops_its_pending_entries_only():
    group = ConsumerGroup(b"g", MIN_ID)
    alice, _ = group.lookup_or_create(b"alice", 0)
    bob, _ = group.lookup_or_create(b"bob", 0)
    for i in (1, 2, 3):
        group.deliver(sid(i), alice, 100)
    group.deliver(sid(4), bob, 100)
    assert group.delete_consumer(b"alice") == 3
    assert list(group.pel) == [sid(4)] and list(group.consumers) == [b"bob"]
    assert group.delete_consumer(b"alice") == 0
    group._check()


# ------------------------------------------------------------------------------------------------ PEL
def test_deliver_creates_one_shared_nack():
    group = ConsumerGroup(b"g", MIN_ID)
    alice, _ = group.lookup_or_create(b"alice", 0)
    nack = group.deliver(sid(5), alice, 100)
    assert group.pel[sid(5)] is nack is alice.pel[sid(5)]
    assert (nack.consumer, nack.delivery_time, nack.delivery_count) == (alice, 100, 1)
    group._check()


def test_deliver_of_a_pending_id_moves_it_and_resets_the_count():
    group = ConsumerGroup(b"g", MIN_ID)
    alice, _ = group.lookup_or_create(b"alice", 0)
    bob, _ = group.lookup_or_create(b"bob", 0)
    nack = group.deliver(sid(1), alice, 100)
    nack.delivery_count = 7
    moved = group.deliver(sid(1), bob, 200)
    assert moved is nack
    assert owners(group) == {sid(1): (b"bob", 200, 1)}
    assert len(alice.pel) == 0 and list(bob.pel) == [sid(1)]
    group._check()
    again = group.deliver(sid(1), bob, 300)  # same owner: still one entry, count reset
    assert again is nack and owners(group) == {sid(1): (b"bob", 300, 1)}
    group._check()


def test_pel_is_in_numeric_id_order():
    group = ConsumerGroup(b"g", MIN_ID)
    alice, _ = group.lookup_or_create(b"alice", 0)
    for s in (sid(10), sid(9, 99), sid(10, 1), sid(2**64 - 1, 0), sid(0, 1)):
        group.deliver(s, alice, 0)
    assert list(group.pel) == [sid(0, 1), sid(9, 99), sid(10), sid(10, 1), sid(2**64 - 1, 0)]
    assert list(alice.pel) == list(group.pel)


def test_assign_moves_a_nack_between_consumers():
    group = ConsumerGroup(b"g", MIN_ID)
    alice, _ = group.lookup_or_create(b"alice", 0)
    bob, _ = group.lookup_or_create(b"bob", 0)
    nack = group.deliver(sid(3), alice, 50)
    group.assign_k(key_of(sid(3)), nack, bob)
    assert nack.consumer is bob and bob.pel[sid(3)] is nack and sid(3) not in alice.pel
    assert (nack.delivery_time, nack.delivery_count) == (50, 1)
    group._check()


def _batch_and_one_by_one(seed, entries, fill, steps):
    """``steps(group, consumers, rnd, batch)`` on two equal random groups (consumers a, b, c; IDs 1..entries pending,
    each with probability ``fill``, owned by a, or by a or b for an odd seed), once with ``batch`` True and once
    False, from the same random state: both results, and every invariant checked after."""
    import random

    results = []
    for batch in (True, False):
        rnd = random.Random(seed)
        group = ConsumerGroup(b"g", MIN_ID)
        consumers = [group.lookup_or_create(name, 0)[0] for name in (b"a", b"b", b"c")]
        for ms in range(1, entries + 1):
            if rnd.random() < fill:
                group.deliver(sid(ms), rnd.choice(consumers[:2] if seed % 2 else consumers[:1]), ms)
        outcome = steps(group, consumers, rnd, batch)
        group._check()
        results.append((outcome, owners(group), [list(c.pel.iter_keys()) for c in consumers]))
    return results


@pytest.mark.parametrize("claim", [False, True], ids=["assign_batch", "claim_batch"])
@pytest.mark.parametrize("seed", range(40))
def test_batch_moves_equal_assign_k_one_by_one(seed, claim):
    # assign_batch's one-owner pass sets the new owner while it checks; a second owner found midway undoes that
    # prefix for the general case: either way the PELs end as assign_k of each entry leaves them. claim_batch also
    # sets delivery time and count (+ 0 with JUSTID) in that pass, and hands a second owner over to the updates +
    # assign_batch: the NACKs end as the per-entry updates leave them
    def steps(group, consumers, rnd, batch):
        for step in range(8):
            lo, size = rnd.randrange(1, 60), rnd.randrange(1, 12)
            keys, nacks = group.pel.slice_k(key_of(sid(lo)), size)
            claimer, counted, now = rnd.choice(consumers), rnd.choice([0, 1]), 1000 + step
            if batch and claim:
                group.claim_batch(keys, nacks, claimer, now, counted)
            elif batch:
                group.assign_batch(keys, nacks, claimer)
            else:
                for k, nack in zip(keys, nacks):
                    if claim:
                        nack.delivery_time = now
                        nack.delivery_count += counted
                    group.assign_k(k, nack, claimer)
            group._check()

    batched, one_by_one = _batch_and_one_by_one(seed, 60, 1.0, steps)
    assert batched == one_by_one


@pytest.mark.parametrize("seed", range(40))
def test_remove_pending_many_equals_remove_pending_k_one_by_one(seed):
    # remove_pending_many tries one run in the group PEL and one in the single owner's before the general
    # removals: the same count and PELs as removing each distinct key alone, for unsorted keys with repeats and
    # absent ones, one or several owners, and the ascending form XACK uses after a delivery
    def steps(group, consumers, rnd, batch):
        counts = []
        for _ in range(6):
            lo = rnd.randrange(1, 80)
            if rnd.random() < 0.5:
                keys = [key_of(sid(ms)) for ms in range(lo, min(81, lo + rnd.randrange(1, 12)))]
                ascending = True
            else:
                keys = [key_of(sid(rnd.randrange(1, 90))) for _ in range(rnd.randrange(1, 12))]
                ascending = False
            if batch:
                counts.append(group.remove_pending_many(keys, ascending=ascending))
            else:
                counts.append(sum(group.remove_pending_k(k) for k in sorted(set(keys))))
            group._check()
        return counts

    batched, one_by_one = _batch_and_one_by_one(seed, 80, 0.9, steps)
    assert batched == one_by_one
    assert any(batched[0])


def test_remove_pending():
    group = ConsumerGroup(b"g", MIN_ID)
    alice, _ = group.lookup_or_create(b"alice", 0)
    group.deliver(sid(1), alice, 0)
    assert group.remove_pending_k(key_of(sid(1))) is True
    assert group.remove_pending_k(key_of(sid(1))) is False
    assert len(group.pel) == 0 and len(alice.pel) == 0
    group._check()


def test_check_catches_a_broken_invariant():
    group = ConsumerGroup(b"g", MIN_ID)
    alice, _ = group.lookup_or_create(b"alice", 0)
    group.deliver(sid(1), alice, 0)
    del alice.pel[sid(1)]
    with pytest.raises(AssertionError):
        group._check()


# ------------------------------------------------------------------------------------ groups of a stream
def test_create_and_destroy_group():
    stream = Stream()
    group = create_group(stream, b"g", sid(5), 3)
    assert group is stream.groups[b"g"]
    assert (group.name, group.last_id, group.entries_read) == (b"g", sid(5), 3)
    assert create_group(stream, b"g", MIN_ID) is None
    assert stream.groups[b"g"] is group
    assert create_group(stream, b"a", MIN_ID).entries_read == INVALID_ENTRIES_READ
    assert list(stream.groups) == [b"a", b"g"]
    assert destroy_group(stream, b"g") is True
    assert destroy_group(stream, b"g") is False
    assert list(stream.groups) == [b"a"]


def test_repr_reads_like_the_state():
    group = ConsumerGroup(b"g", sid(1, 2), 4)
    assert repr(group) == "ConsumerGroup(name=b'g', last_id=1-2, entries_read=4, pending=0, nacked=0, consumers=0)"


# ---------------------------------------------------------------------------------- lag arithmetic (§4)
def _xinfo_group(ctx, key="s"):
    fields = ctx.run("XINFO", "GROUPS", key)[0]
    info = dict(zip(fields[::2], fields[1::2]))
    return info[b"entries-read"], info[b"lag"]


def stream_of(n):
    stream = Stream()
    for i in range(1, n + 1):
        stream.append(sid(i), [b"f", b"v"])
    return stream


def test_tombstone_and_estimate_helpers():
    stream = stream_of(5)
    assert has_tombstones(stream, MIN_ID) is False
    assert estimate_distance(stream, sid(5)) == 5  # the last ID
    assert estimate_distance(stream, sid(6)) == INVALID_ENTRIES_READ  # beyond last_id
    assert estimate_distance(stream, MIN_ID) == 0  # before the first entry
    assert estimate_distance(stream, sid(1)) == 1  # the first entry
    assert estimate_distance(stream, sid(3)) == INVALID_ENTRIES_READ  # in the middle: unknown
    stream.delete(sid(3))
    assert has_tombstones(stream, sid(2)) is True
    assert has_tombstones(stream, sid(3)) is True
    assert has_tombstones(stream, sid(4)) is False
    assert estimate_distance(stream, MIN_ID) == INVALID_ENTRIES_READ  # a tombstone inside the stream
    assert estimate_distance(Stream(), sid(9)) == 0  # nothing ever added


def test_lag_sanity_example():
    """spec §4.2: nil/5 → 1/4 → 5/0 → (XADD) 5/1."""
    stream = stream_of(5)
    group = create_group(stream, b"g", MIN_ID)
    assert (group.entries_read, group_lag(stream, group)) == (INVALID_ENTRIES_READ, 5)
    advance_entries_read(stream, group, sid(1))
    group.last_id = sid(1)
    assert (group.entries_read, group_lag(stream, group)) == (1, 4)
    for i in (2, 3, 4, 5):
        advance_entries_read(stream, group, sid(i))
        group.last_id = sid(i)
    assert (group.entries_read, group_lag(stream, group)) == (5, 0)
    stream.append(sid(6), [b"f", b"v"])
    assert (group.entries_read, group_lag(stream, group)) == (5, 1)


@pytest.mark.parametrize("version", ALL)
def test_lag_with_xdel_through_commands(version):
    """'Consumer group lag with XDELs': lag nil until the group reaches the last ID, then 5/0."""
    ctx = DictContext(version)
    for i in range(1, 6):
        ctx.run("XADD", "x", f"{i}-0", "data", f"{i}")
    ctx.run("XDEL", "x", "3-0")
    ctx.run("XGROUP", "CREATE", "x", "g1", "0")
    stream = ctx.keyspace[b"x"]
    group = stream.groups[b"g1"]
    assert (group.entries_read, group_lag(stream, group)) == (INVALID_ENTRIES_READ, None)
    ctx.run("XREADGROUP", "GROUP", "g1", "c", "COUNT", "1", "STREAMS", "x", ">")
    assert (group.entries_read, group_lag(stream, group)) == (INVALID_ENTRIES_READ, None)
    ctx.run("XREADGROUP", "GROUP", "g1", "c", "COUNT", "1", "STREAMS", "x", ">")
    assert group_lag(stream, group) is None
    ctx.run("XREADGROUP", "GROUP", "g1", "c", "COUNT", "1", "STREAMS", "x", ">")
    assert group_lag(stream, group) is None
    ctx.run("XREADGROUP", "GROUP", "g1", "c", "COUNT", "1", "STREAMS", "x", ">")
    assert (group.entries_read, group_lag(stream, group)) == (5, 0)
    ctx.run("XADD", "x", "6-0", "data", "6")
    assert (group.entries_read, group_lag(stream, group)) == (5, 1)
    group._check()


def test_lag_in_empty_streams():
    """'…lag in empty streams': MKSTREAM group nil/0; after XADD 1-0 + XDEL 1-0 still nil/0."""
    ctx = DictContext()
    ctx.run("XGROUP", "CREATE", "x", "g1", "$", "MKSTREAM")
    stream = ctx.keyspace[b"x"]
    group = stream.groups[b"g1"]
    assert (group.entries_read, group_lag(stream, group)) == (INVALID_ENTRIES_READ, 0)
    ctx.run("XADD", "x", "1-0", "data", "a")
    ctx.run("XDEL", "x", "1-0")
    assert (group.entries_read, group_lag(stream, group)) == (INVALID_ENTRIES_READ, 0)


def test_lag_after_trim_keeps_the_old_algorithm():
    """R7.0–R7.4 / Valkey 8: after XTRIM MAXLEN 1 the lag stays 4 (R8m would say 1)."""
    ctx = DictContext()
    for i in range(1, 6):
        ctx.run("XADD", "x", f"{i}-0", "data", "a")
    ctx.run("XGROUP", "CREATE", "x", "g1", "0")
    ctx.run("XREADGROUP", "GROUP", "g1", "c", "COUNT", "1", "STREAMS", "x", ">")
    stream = ctx.keyspace[b"x"]
    group = stream.groups[b"g1"]
    ctx.run("XTRIM", "x", "MAXLEN", "1")
    assert (group.entries_read, group_lag(stream, group)) == (1, 4)
    ctx.run("XTRIM", "x", "MAXLEN", "0")
    assert group_lag(stream, group) == 4


@pytest.mark.parametrize("version, lag", [("valkey-8.0", 3), ("valkey-9.1", None)])
def test_lag_when_the_tombstone_after_the_group_was_trimmed(version, lag):
    """spec §9 item 1: Valkey 8 / Redis 7.4 answer 3, Valkey 9.1.2 answers nil (its rules: the tombstone before
    the first entry still counts)."""
    ctx = DictContext(version)
    for i in range(1, 7):
        ctx.run("XADD", "s", f"{i}-0", "f", "v")
    ctx.run("XGROUP", "CREATE", "s", "g", "0")
    ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "s", ">")
    ctx.run("XDEL", "s", "4-0")
    ctx.run("XTRIM", "s", "MAXLEN", "2")
    stream = ctx.keyspace[b"s"]
    group = stream.groups[b"g"]
    assert (group.last_id, group.entries_read, stream.max_deleted_entry_id) == (sid(3), 3, sid(4))
    assert lag_of(stream, group, ctx.profile.features) == lag
    assert _xinfo_group(ctx) == (3, lag)


def test_advance_entries_read_estimates_when_unknown():
    stream = stream_of(3)
    group = create_group(stream, b"g", MIN_ID)
    advance_entries_read(stream, group, sid(3))  # unknown counter, cursor jumps to the last ID
    assert group.entries_read == 3
    empty = Stream()
    group = create_group(empty, b"g", MIN_ID)
    advance_entries_read(empty, group, sid(1))  # nothing ever added: left unknown
    assert group.entries_read == INVALID_ENTRIES_READ


# ------------------------------------------------------------------------- Valkey 9.1's read counter
@pytest.mark.parametrize("version, after_3, after_4", [
    ("7.4", (2, 2), (3, 1)),  # Redis 7.0.15 (observed) and 7.4: the counter counts on past the tombstone
    ("valkey-9.1", (None, None), (4, 0)),  # Valkey 9.1.2 (observed): unknown, then re-estimated at the last ID
])
def test_tombstone_between_two_reads(version, after_3, after_4):
    ctx = DictContext(version)
    for i in (1, 2, 3):
        ctx.run("XADD", "s", f"{i}-0", "f", "v")
    ctx.run("XGROUP", "CREATE", "s", "g", "0")
    ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    ctx.run("XDEL", "s", "2-0")
    ctx.run("XADD", "s", "4-0", "f", "v")
    ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")  # 3-0
    assert _xinfo_group(ctx) == after_3
    ctx.run("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")  # 4-0
    assert _xinfo_group(ctx) == after_4


def test_valkey_9_tombstones_and_estimates():
    """Valkey 9.1: a deleted ID before the first entry still counts as a tombstone; an ID below
    max-deleted-entry-id has no estimate (0-0 and the last ID keep theirs)."""
    stream = stream_of(5)
    stream.delete(sid(1))
    assert stream.first_id == sid(2) and stream.max_deleted_entry_id == sid(1)
    assert not has_tombstones(stream, MIN_ID)
    assert has_tombstones(stream, MIN_ID, reestimate=True)
    assert estimate_distance(stream, MIN_ID, reestimate=True) == 1  # entries_added - length
    stream.delete(sid(3))
    assert estimate_distance(stream, sid(2), reestimate=True) == INVALID_ENTRIES_READ
    assert estimate_distance(stream, sid(5), reestimate=True) == 5

