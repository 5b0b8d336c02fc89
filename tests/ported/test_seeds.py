"""The examples and checkable claims of the four seed documents (/work/shared/seeds/), on the fake and each real server.

* ``000`` — XREADGROUP reference (examples + claims about IDs, options, replies and errors);
* ``001`` — lesson "Acknowledging Messages (XACK)" (examples 1–3, common mistakes, practice exercises);
* ``002`` — XAUTOCLAIM reference in Chinese (examples, common errors, best practices, FAQ);
* ``004`` — lesson "Acknowledging Messages" (Redis Streams Tutorial).

Every command is compared raw on both sides (``pair.same``) and the seed's printed output is asserted where
the seed is right. Where a seed disagrees with the real server, the server wins and the test says why:
auto-generated IDs in a seed become the same IDs given explicitly; "1 hour later" becomes an entry aged
with ``XCLAIM … IDLE <ms> JUSTID`` (the fake's clock follows the real server's ``TIME``, and nothing can
move a real server's clock forward an hour).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.replies import times

from .conftest import Err, as_map, error_matching, expect_error, stream_pairs


def _entry(entry_id: str, *fields: str) -> list:
    return [entry_id.encode(), [f.encode() for f in fields]]


def _pending_rows(p: Any, key: str, group: str, *tail: Any) -> list:
    return p.same("XPENDING", key, group, "-", "+", "100", *tail, normalize=times)


# =============================================================================================
# 000 — XREADGROUP reference


def _tasks_example_setup(p: Any) -> None:
    assert p.same("XADD", "tasks", "1700000000000-0", "job", "email") == b"1700000000000-0"
    assert p.same("XADD", "tasks", "1700000000001-0", "job", "sms") == b"1700000000001-0"
    assert p.same("XGROUP", "CREATE", "tasks", "workers", "0") == b"OK"


def test_seed_xreadgroup_example(pair):
    """000 Examples: alice and bob split the stream, alice's history, XACK empties it."""
    _tasks_example_setup(pair)
    reply = pair.same("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "1", "STREAMS", "tasks", ">")
    assert stream_pairs(reply) == [[b"tasks", [_entry("1700000000000-0", "job", "email")]]]
    reply = pair.same("XREADGROUP", "GROUP", "workers", "bob", "STREAMS", "tasks", ">")
    assert stream_pairs(reply) == [[b"tasks", [_entry("1700000000001-0", "job", "sms")]]]
    reply = pair.same("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", "0")
    assert stream_pairs(reply) == [[b"tasks", [_entry("1700000000000-0", "job", "email")]]]
    assert pair.same("XACK", "tasks", "workers", "1700000000000-0") == 1
    reply = pair.same("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", "0")
    assert stream_pairs(reply) == [[b"tasks", []]]  # "(empty array)"


def test_seed_xreadgroup_consumer_created_on_first_use_and_group_must_exist(pair):
    """000: "The consumer is created on first use. The group must already exist (see XGROUP CREATE)." """
    _tasks_example_setup(pair)
    assert pair.same("XINFO", "CONSUMERS", "tasks", "workers") == []
    pair.same("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "1", "STREAMS", "tasks", ">")
    consumers = [as_map(c) for c in pair.same("XINFO", "CONSUMERS", "tasks", "workers", normalize=times)]
    assert [c[b"name"] for c in consumers] == [b"alice"]
    # "NOGROUP No such key 'key' or consumer group 'group' in XREADGROUP with GROUP option"
    expect_error(pair, "XREADGROUP_NOGROUP", "XREADGROUP", "GROUP", "nogroup", "alice", "STREAMS", "tasks", ">",
                 key="tasks", group="nogroup")
    expect_error(pair, "XREADGROUP_NOGROUP", "XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "nokey", ">",
                 key="nokey", group="workers")


def test_seed_xreadgroup_new_entries_move_the_last_delivered_id(pair):
    """000 IDs: ">" delivers entries no consumer has received, adds them to the PEL, moves the last delivered ID;
    each new entry goes to one consumer of the group only."""
    _tasks_example_setup(pair)
    pair.same("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "1", "STREAMS", "tasks", ">")
    group = as_map(pair.same("XINFO", "GROUPS", "tasks")[0])
    assert group[b"last-delivered-id"] == b"1700000000000-0"
    assert group[b"pending"] == 1
    reply = stream_pairs(pair.same("XREADGROUP", "GROUP", "workers", "bob", "STREAMS", "tasks", ">"))
    assert [e[0] for e in reply[0][1]] == [b"1700000000001-0"]  # not alice's entry again
    assert as_map(pair.same("XINFO", "GROUPS", "tasks")[0])[b"last-delivered-id"] == b"1700000000001-0"
    # nothing new left: no BLOCK -> nil
    assert pair.same("XREADGROUP", "GROUP", "workers", "carol", "STREAMS", "tasks", ">") is None


def test_seed_xreadgroup_history_is_only_this_consumers_pending_entries_after_the_id(pair):
    """000 IDs: any other ID reads this consumer's pending entries with an ID greater than it; nothing new."""
    _tasks_example_setup(pair)
    pair.same("XADD", "tasks", "1700000000002-0", "job", "push")
    pair.same("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "2", "STREAMS", "tasks", ">")
    pair.same("XREADGROUP", "GROUP", "workers", "bob", "STREAMS", "tasks", ">")
    reply = stream_pairs(pair.same("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", "1700000000000-0"))
    assert reply == [[b"tasks", [_entry("1700000000001-0", "job", "sms")]]]
    # bob's own history only has his entry; the group's last delivered ID did not move
    reply = stream_pairs(pair.same("XREADGROUP", "GROUP", "workers", "bob", "STREAMS", "tasks", "0"))
    assert reply == [[b"tasks", [_entry("1700000000002-0", "job", "push")]]]
    assert as_map(pair.same("XINFO", "GROUPS", "tasks")[0])[b"last-delivered-id"] == b"1700000000002-0"


def test_seed_xreadgroup_history_read_counts_as_a_delivery(pair):
    """000: "Reading history counts as another delivery: each returned entry's delivery count goes up by one
    and its idle time restarts." """
    _tasks_example_setup(pair)
    pair.same("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "1", "STREAMS", "tasks", ">")
    # age the entry (JUSTID leaves the delivery count alone) so that the restart of its idle time shows
    pair.same("XCLAIM", "tasks", "workers", "alice", "0", "1700000000000-0", "IDLE", "3600000", "JUSTID")
    [row] = _pending_rows(pair, "tasks", "workers")
    assert row[3] == 1 and row[2] >= 3600000
    pair.same("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", "0")
    [row] = _pending_rows(pair, "tasks", "workers")
    assert row[:2] == [b"1700000000000-0", b"alice"]
    assert row[3] == 2
    assert row[2] < 3600000


def test_seed_xreadgroup_deleted_pending_entry_has_a_nil_body(pair):
    """000: "A pending entry that was deleted from the stream is returned as its ID with a nil body." """
    _tasks_example_setup(pair)
    pair.same("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", ">")
    pair.same("XDEL", "tasks", "1700000000000-0")
    reply = stream_pairs(pair.same("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", "0"))
    assert reply == [[b"tasks", [[b"1700000000000-0", None], _entry("1700000000001-0", "job", "sms")]]]


def test_seed_xreadgroup_dollar_is_not_accepted(pair):
    """000: "$ is not accepted." (ERR The $ ID is meaningless in the context of XREADGROUP: ...)"""
    _tasks_example_setup(pair)
    err = expect_error(pair, "XREADGROUP_DOLLAR", "XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", "$")
    assert err.full.startswith("ERR The $ ID is meaningless in the context of XREADGROUP: ")


def test_seed_xreadgroup_count_zero_means_no_limit(pair):
    """000 Options: "COUNT count — At most count entries per stream (0 means no limit)." """
    _tasks_example_setup(pair)
    reply = stream_pairs(pair.same("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "0", "STREAMS", "tasks", ">"))
    assert [e[0] for e in reply[0][1]] == [b"1700000000000-0", b"1700000000001-0"]
    reply = stream_pairs(pair.same("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "1", "STREAMS", "tasks", "0"))
    assert [e[0] for e in reply[0][1]] == [b"1700000000000-0"]


def test_seed_xreadgroup_block_is_ignored_when_reading_history(pair):
    """000 Options: BLOCK "Ignored when reading history." (returns at once, even with BLOCK 0 and nothing pending)"""
    _tasks_example_setup(pair)
    reply = pair.same("XREADGROUP", "GROUP", "workers", "alice", "BLOCK", "0", "STREAMS", "tasks", "0")
    assert stream_pairs(reply) == [[b"tasks", []]]


def test_seed_xreadgroup_noack_does_not_add_to_the_pel(pair):
    """000 Options: "NOACK — Do not add the delivered entries to the PEL: they count as acknowledged at once." """
    _tasks_example_setup(pair)
    reply = stream_pairs(pair.same("XREADGROUP", "GROUP", "workers", "alice", "NOACK", "STREAMS", "tasks", ">"))
    assert len(reply[0][1]) == 2
    assert pair.same("XPENDING", "tasks", "workers") == [0, None, None, None]
    assert as_map(pair.same("XINFO", "GROUPS", "tasks")[0])[b"last-delivered-id"] == b"1700000000001-0"


def test_seed_xreadgroup_reply_shapes(pair):
    """000 Return value: ">" lists only streams with entries; history lists every stream named; nothing new -> nil."""
    _tasks_example_setup(pair)
    pair.same("XGROUP", "CREATE", "other", "workers", "$", "MKSTREAM")
    reply = stream_pairs(pair.same("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", "other", ">", ">"))
    assert [k for k, _ in reply] == [b"tasks"]
    reply = stream_pairs(pair.same("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", "other", "0", "0"))
    assert [k for k, _ in reply] == [b"tasks", b"other"]
    assert reply[1][1] == []
    assert pair.same("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", "other", ">", ">") is None


def test_seed_xreadgroup_error_replies(pair):
    """000 Error replies: Unbalanced, COUNT, invalid ID, syntax error, timeout errors, WRONGTYPE."""
    _tasks_example_setup(pair)
    # The seed says "Same as Redis 7": R7.0 words the Unbalanced error differently (spec §6 row 2); the
    # profile table holds each server's text.
    expect_error(pair, "UNBALANCED_XREADGROUP", "XREADGROUP", "GROUP", "workers", "alice", "COUNT", "1", "STREAMS", "tasks")
    expect_error(pair, "NOT_INTEGER", "XREADGROUP", "GROUP", "workers", "alice", "COUNT", "abc", "STREAMS", "tasks", ">")
    # The seed lists a negative COUNT as an error; the servers take it as 0 = no limit (spec §2.6).
    reply = stream_pairs(pair.same("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "-1", "STREAMS", "tasks", ">"))
    assert len(reply[0][1]) == 2
    expect_error(pair, "INVALID_STREAM_ID", "XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", "x-y")
    expect_error(pair, "SYNTAX", "XREADGROUP", "GROUP", "workers", "alice", "BOGUS", "STREAMS", "tasks", ">")
    expect_error(pair, "TIMEOUT_NOT_INTEGER", "XREADGROUP", "GROUP", "workers", "alice", "BLOCK", "abc", "STREAMS", "tasks", ">")
    expect_error(pair, "TIMEOUT_NEGATIVE", "XREADGROUP", "GROUP", "workers", "alice", "BLOCK", "-1", "STREAMS", "tasks", ">")
    pair.same("SET", "str", "x")
    expect_error(pair, "WRONGTYPE", "XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "str", ">")


@pytest.mark.parametrize("removal", ["DEL", "XGROUP DESTROY"])
def test_seed_xreadgroup_blocked_call_ends_with_nogroup_when_stream_or_group_is_deleted(pair, removal):
    """000: "If the stream or the group is deleted while a call is blocked, the call ends with the NOGROUP error." """
    if pair.server is not None and not hasattr(pair.server, "blocked"):
        pytest.skip("the fake has no blocked-client hook yet (FakeStreamsServer.blocked()), needed to wait for the block")
    _tasks_example_setup(pair)
    pair.same("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "tasks", ">")
    rd = pair.connect()
    rd.send("XREADGROUP", "GROUP", "workers", "alice", "BLOCK", "0", "STREAMS", "tasks", ">")
    pair.wait_blocked(1)
    if removal == "DEL":
        pair.same("DEL", "tasks")
    else:
        pair.same("XGROUP", "DESTROY", "tasks", "workers")
    got = rd.read()
    assert isinstance(got, Err), got
    if pair.profile.has("blocked_reprocess"):
        assert got.full == "NOGROUP No such key 'tasks' or consumer group 'workers' in XREADGROUP with GROUP option"
    elif removal == "DEL":
        # The seed's "Same as Redis 7" does not hold for R7.0 (spec §6 row 5)
        assert got.full == "UNBLOCKED the stream key no longer exists"
    else:
        assert got.full == "NOGROUP the consumer group this client was blocked on no longer exists"  # §6 row 6


# =============================================================================================
# 001 — lesson "Acknowledging Messages (XACK)"
#
# The lesson prints "(integer) 1" for each XADD; XADD replies with the new entry's ID (a bulk string),
# so the tests assert the ID.


def _orders_setup(p: Any, count: int = 2) -> None:
    rows = [("1-1", "1001", "250"), ("2-1", "1002", "75"), ("3-1", "1003", "40")][:count]
    for entry_id, order_id, amount in rows:
        assert p.same("XADD", "orders:stream", entry_id, "order_id", order_id, "amount", amount) == entry_id.encode()
    assert p.same("XGROUP", "CREATE", "orders:stream", "order-processors", "0") == b"OK"


def test_seed_xack_lesson_example_1_reading_populates_the_pel(pair):
    """001 Example 1: reading through a group populates the PEL."""
    _orders_setup(pair)
    reply = pair.same("XREADGROUP", "GROUP", "order-processors", "worker-1", "COUNT", "2", "STREAMS", "orders:stream", ">")
    assert stream_pairs(reply) == [[b"orders:stream", [
        _entry("1-1", "order_id", "1001", "amount", "250"),
        _entry("2-1", "order_id", "1002", "amount", "75"),
    ]]]
    assert pair.same("XPENDING", "orders:stream", "order-processors") == [2, b"1-1", b"2-1", [[b"worker-1", b"2"]]]


def test_seed_xack_lesson_example_2_acknowledging_one_message(pair):
    """001 Example 2: acknowledging one message; the stream is untouched."""
    _orders_setup(pair)
    reply = pair.same("XREADGROUP", "GROUP", "order-processors", "worker-1", "COUNT", "2", "STREAMS", "orders:stream", ">")
    assert [e[0] for e in stream_pairs(reply)[0][1]] == [b"1-1", b"2-1"]
    assert pair.same("XACK", "orders:stream", "order-processors", "1-1") == 1
    assert pair.same("XPENDING", "orders:stream", "order-processors") == [1, b"2-1", b"2-1", [[b"worker-1", b"1"]]]
    assert pair.same("XLEN", "orders:stream") == 2


def test_seed_xack_lesson_example_3_several_ids_and_re_acknowledging(pair):
    """001 Example 3: acknowledging several IDs at once, and re-acknowledging."""
    _orders_setup(pair, count=3)
    reply = pair.same("XREADGROUP", "GROUP", "order-processors", "worker-1", "COUNT", "3", "STREAMS", "orders:stream", ">")
    assert len(stream_pairs(reply)[0][1]) == 3  # "...3 entries..."
    assert pair.same("XACK", "orders:stream", "order-processors", "1-1", "2-1", "3-1") == 3
    assert pair.same("XACK", "orders:stream", "order-processors", "1-1") == 0
    assert pair.same("XPENDING", "orders:stream", "order-processors") == [0, None, None, None]


def test_seed_xack_lesson_unmatched_ids_and_missing_group_reply_0(pair):
    """001: IDs never delivered to this group, already acknowledged or nonexistent are skipped (not an error);
    a missing group is not an error for XACK either ("effectively return 0")."""
    _orders_setup(pair, count=3)
    pair.same("XGROUP", "CREATE", "orders:stream", "audit", "0")
    pair.same("XREADGROUP", "GROUP", "audit", "auditor", "STREAMS", "orders:stream", ">")
    pair.same("XREADGROUP", "GROUP", "order-processors", "worker-1", "COUNT", "1", "STREAMS", "orders:stream", ">")
    assert pair.same("XACK", "orders:stream", "order-processors", "2-1") == 0  # delivered to "audit" only
    assert pair.same("XACK", "orders:stream", "order-processors", "9-1") == 0  # does not exist
    assert pair.same("XACK", "orders:stream", "order-processors", "1-1", "9-1", "2-1") == 1
    assert pair.same("XACK", "orders:stream", "order-processors", "1-1") == 0  # already acknowledged
    assert pair.same("XACK", "orders:stream", "no-such-group", "1-1") == 0
    assert pair.same("XACK", "no-such-stream", "order-processors", "1-1") == 0
    # XACK only affects the named group: "audit" still has its three entries pending
    assert pair.same("XPENDING", "orders:stream", "audit")[0] == 3
    # The lesson's "mistyped" ID lowering the count holds for a well-formed wrong ID only; a malformed one is an
    # error and nothing is acknowledged (spec §2.11)
    pair.same("XREADGROUP", "GROUP", "order-processors", "worker-1", "STREAMS", "orders:stream", ">")
    expect_error(pair, "INVALID_STREAM_ID", "XACK", "orders:stream", "order-processors", "2-1", "2-x")
    assert pair.same("XPENDING", "orders:stream", "order-processors")[0] == 2


def test_seed_xack_lesson_mistake_1_xack_on_a_key_that_is_not_a_stream(pair):
    """001 Mistake 1: calling XACK on a key that isn't a stream -> WRONGTYPE."""
    assert pair.same("SET", "orders:stream", "not-a-stream") == b"OK"
    err = expect_error(pair, "WRONGTYPE", "XACK", "orders:stream", "order-processors", "1-1")
    assert err.full == "WRONGTYPE Operation against a key holding the wrong kind of value"


def test_seed_xack_lesson_mistake_2_forgetting_to_call_xack(pair):
    """001 Mistake 2: the entry read stays pending until acknowledged."""
    assert pair.same("XADD", "notifications:stream", "1-1", "type", "email", "to", "user1@example.com") == b"1-1"
    assert pair.same("XGROUP", "CREATE", "notifications:stream", "mailer", "0") == b"OK"
    reply = pair.same("XREADGROUP", "GROUP", "mailer", "worker-1", "COUNT", "1", "STREAMS", "notifications:stream", ">")
    assert stream_pairs(reply) == [[b"notifications:stream", [_entry("1-1", "type", "email", "to", "user1@example.com")]]]
    assert pair.same("XPENDING", "notifications:stream", "mailer") == [1, b"1-1", b"1-1", [[b"worker-1", b"1"]]]


def test_seed_xack_lesson_mistake_3_xack_is_not_xdel(pair):
    """001 Mistake 3: XACK leaves the entry in the stream (XRANGE, other groups); XDEL removes it for everyone."""
    _orders_setup(pair)
    pair.same("XGROUP", "CREATE", "orders:stream", "audit", "0")
    pair.same("XREADGROUP", "GROUP", "order-processors", "worker-1", "STREAMS", "orders:stream", ">")
    assert pair.same("XACK", "orders:stream", "order-processors", "1-1") == 1
    assert [e[0] for e in pair.same("XRANGE", "orders:stream", "-", "+")] == [b"1-1", b"2-1"]
    reply = stream_pairs(pair.same("XREADGROUP", "GROUP", "audit", "auditor", "STREAMS", "orders:stream", ">"))
    assert [e[0] for e in reply[0][1]] == [b"1-1", b"2-1"]
    assert pair.same("XDEL", "orders:stream", "1-1") == 1
    assert [e[0] for e in pair.same("XRANGE", "orders:stream", "-", "+")] == [b"2-1"]


def test_seed_xack_lesson_practice_exercise_1(pair):
    """001 Practice 1: three entries read by w1, the first two acknowledged, exactly one stays pending."""
    for entry_id in ("1-1", "2-1", "3-1"):
        pair.same("XADD", "tasks:stream", entry_id, "n", entry_id)
    pair.same("XGROUP", "CREATE", "tasks:stream", "workers", "0")
    pair.same("XREADGROUP", "GROUP", "workers", "w1", "STREAMS", "tasks:stream", ">")
    assert pair.same("XACK", "tasks:stream", "workers", "1-1", "2-1") == 2
    assert pair.same("XPENDING", "tasks:stream", "workers") == [1, b"3-1", b"3-1", [[b"w1", b"1"]]]


def test_seed_xack_lesson_practice_exercise_2(pair):
    """001 Practice 2: XACK of an ID that was never added (9-1) returns 0, not an error."""
    for entry_id in ("1-1", "2-1", "3-1"):
        pair.same("XADD", "tasks:stream", entry_id, "n", entry_id)
    pair.same("XGROUP", "CREATE", "tasks:stream", "workers", "0")
    pair.same("XREADGROUP", "GROUP", "workers", "w1", "STREAMS", "tasks:stream", ">")
    assert pair.same("XACK", "tasks:stream", "workers", "9-1") == 0


def test_seed_xack_lesson_practice_exercise_3(pair):
    """001 Practice 3: XLEN is the same before and after XACK (XACK never changes XLEN)."""
    pair.same("XADD", "fresh", "1-1", "f", "v")
    pair.same("XGROUP", "CREATE", "fresh", "g", "0")
    pair.same("XREADGROUP", "GROUP", "g", "c", "STREAMS", "fresh", ">")
    assert pair.same("XLEN", "fresh") == 1
    assert pair.same("XACK", "fresh", "g", "1-1") == 1
    assert pair.same("XLEN", "fresh") == 1
    # to have the entry gone from the stream entirely: XDEL (or a trim)
    assert pair.same("XDEL", "fresh", "1-1") == 1
    assert pair.same("XLEN", "fresh") == 0


# =============================================================================================
# 002 — XAUTOCLAIM reference (Chinese)
#
# The seed's "XADD mystream * field value" printed "1609338752495-0": the tests give that ID explicitly.
# "# 1 小时后 Alice 未确认" (one hour later, Alice has not acknowledged): an hour of idle time is made with
# XCLAIM ... IDLE 3600001 JUSTID (delivery time = now - 3600001 ms; JUSTID keeps the delivery count).

SEED_ID = "1609338752495-0"
HOUR = 3600000


def _age(p: Any, key: str, group: str, owner: str, *entry_ids: str, ms: int = HOUR + 1) -> None:
    """Make ``entry_ids`` look delivered ``ms`` ago, keeping owner and delivery count."""
    assert p.same("XCLAIM", key, group, owner, "0", *entry_ids, "IDLE", ms, "JUSTID") == [i.encode() for i in entry_ids]


def _autoclaim_basic_setup(p: Any) -> None:
    assert p.same("XADD", "mystream", SEED_ID, "field", "value") == SEED_ID.encode()
    assert p.same("XGROUP", "CREATE", "mystream", "mygroup", "0") == b"OK"
    reply = p.same("XREADGROUP", "GROUP", "mygroup", "Alice", "COUNT", "1", "STREAMS", "mystream", ">")
    assert stream_pairs(reply) == [[b"mystream", [_entry(SEED_ID, "field", "value")]]]
    _age(p, "mystream", "mygroup", "Alice", SEED_ID)  # "1 小时后" (one hour later)


def test_seed_xautoclaim_basic_usage(pair):
    """002 基本用法 (basic usage): Bob claims Alice's hour-old entry."""
    _autoclaim_basic_setup(pair)
    reply = pair.same("XAUTOCLAIM", "mystream", "mygroup", "Bob", HOUR, "0-0", "COUNT", "25")
    assert reply == [b"0-0", [_entry(SEED_ID, "field", "value")], []]
    [row] = _pending_rows(pair, "mystream", "mygroup")
    assert row[:2] == [SEED_ID.encode(), b"Bob"] and row[3] == 2


def test_seed_xautoclaim_justid(pair):
    """002 仅返回 ID (JUSTID): IDs only; "注意 retry counter 不会递增" (the delivery counter is not incremented)."""
    _autoclaim_basic_setup(pair)
    reply = pair.same("XAUTOCLAIM", "mystream", "mygroup", "Bob", HOUR, "0-0", "JUSTID")
    assert reply == [b"0-0", [SEED_ID.encode()], []]
    [row] = _pending_rows(pair, "mystream", "mygroup")
    assert row[:2] == [SEED_ID.encode(), b"Bob"]
    assert row[3] == 1  # delivered once by XREADGROUP; the JUSTID claim did not count


def test_seed_xautoclaim_cursor_iteration(pair):
    """002 游标迭代扫描 (cursor iteration): COUNT 10 scans at most 100 PEL entries, so the cursor stops at
    1610000000000-0; continuing from it finishes with 0-0."""
    # The seed shows the outputs without the state behind them. This state produces exactly those outputs:
    # the seed's entry (idle for an hour), 99 entries delivered just now, then 1610000000000-0 (just now).
    _autoclaim_basic_setup(pair)
    for i in range(1, 100):
        pair.same("XADD", "mystream", f"{1609338752495 + i}-0", "field", "value")
    pair.same("XADD", "mystream", "1610000000000-0", "field", "value")
    pair.same("XREADGROUP", "GROUP", "mygroup", "Alice", "STREAMS", "mystream", ">")
    reply = pair.same("XAUTOCLAIM", "mystream", "mygroup", "Charlie", "60000", "0-0", "COUNT", "10")
    assert reply == [b"1610000000000-0", [_entry(SEED_ID, "field", "value")], []]
    # 继续扫描 (continue scanning)
    reply = pair.same("XAUTOCLAIM", "mystream", "mygroup", "Charlie", "60000", "1610000000000-0", "COUNT", "10")
    assert reply == [b"0-0", [], []]


def test_seed_xautoclaim_count_defaults_to_100(pair):
    """002 参数说明: "COUNT count ... 默认 100" (default 100)."""
    ids = [f"{i}-0" for i in range(1, 102)]
    for entry_id in ids:
        pair.same("XADD", "big", entry_id, "f", "v")
    pair.same("XGROUP", "CREATE", "big", "g", "0")
    pair.same("XREADGROUP", "GROUP", "g", "Alice", "STREAMS", "big", ">")
    _age(pair, "big", "g", "Alice", *ids)
    reply = pair.same("XAUTOCLAIM", "big", "g", "Bob", HOUR, "0-0", "JUSTID")
    assert reply == [b"101-0", [i.encode() for i in ids[:100]], []]
    # (the seed's table says COUNT is the number *scanned*; it is the number claimed, FAQ Q2 has it right)
    reply = pair.same("XAUTOCLAIM", "big", "g", "Bob", HOUR, "101-0", "JUSTID")
    assert reply == [b"0-0", [b"101-0"], []]


@pytest.mark.parametrize("fresh_before", [9, 10])
def test_seed_xautoclaim_faq_q2_scan_cap_is_count_times_10(pair, fresh_before):
    """002 FAQ Q2: "实际扫描上限为 COUNT * 10（硬编码）" (at most COUNT*10 PEL entries are examined);
    FAQ Q3: empty claimed entries with a non-0-0 cursor means "continue from the cursor"."""
    ids = [f"{i}-0" for i in range(1, fresh_before + 2)]
    for entry_id in ids:
        pair.same("XADD", "s", entry_id, "f", "v")
    pair.same("XGROUP", "CREATE", "s", "g", "0")
    pair.same("XREADGROUP", "GROUP", "g", "Alice", "STREAMS", "s", ">")
    idle_one = ids[-1]  # after `fresh_before` entries delivered just now
    _age(pair, "s", "g", "Alice", idle_one)
    reply = pair.same("XAUTOCLAIM", "s", "g", "Bob", HOUR, "0-0", "COUNT", "1")
    if fresh_before < 10:  # within the 10 entries examined
        assert reply == [b"0-0", [_entry(idle_one, "f", "v")], []]
        return
    assert reply == [idle_one.encode(), [], []]  # Q3: nothing claimable in this batch, cursor not 0-0
    reply = pair.same("XAUTOCLAIM", "s", "g", "Bob", HOUR, reply[0], "COUNT", "1")
    assert reply == [b"0-0", [_entry(idle_one, "f", "v")], []]


def test_seed_xautoclaim_deleted_ids_are_the_third_element(pair):
    """002 返回值: the third element lists IDs already deleted from the stream (Redis 7.0+)."""
    _autoclaim_basic_setup(pair)
    pair.same("XDEL", "mystream", SEED_ID)
    assert pair.same("XAUTOCLAIM", "mystream", "mygroup", "Bob", HOUR, "0-0") == [b"0-0", [], [SEED_ID.encode()]]
    assert pair.same("XPENDING", "mystream", "mygroup") == [0, None, None, None]


def test_seed_xautoclaim_can_continue_after_a_0_0_cursor(pair):
    """002 最佳实践: "即使 cursor 返回 0-0，仍可继续调用以处理新满足条件的消息" (after a 0-0 cursor, calling
    again from 0-0 picks up messages that became claimable since)."""
    _autoclaim_basic_setup(pair)
    pair.same("XADD", "mystream", "1609338752496-0", "field", "later")
    pair.same("XREADGROUP", "GROUP", "mygroup", "Alice", "STREAMS", "mystream", ">")
    assert pair.same("XAUTOCLAIM", "mystream", "mygroup", "Bob", HOUR, "0-0", "JUSTID") == [b"0-0", [SEED_ID.encode()], []]
    _age(pair, "mystream", "mygroup", "Alice", "1609338752496-0")
    reply = pair.same("XAUTOCLAIM", "mystream", "mygroup", "Bob", HOUR, "0-0", "JUSTID")
    assert reply == [b"0-0", [b"1609338752496-0"], []]


def test_seed_xautoclaim_common_errors(pair):
    """002 常见错误 (common errors) and 返回值 "Error: 参数错误、key 不存在、组不存在等"."""
    _autoclaim_basic_setup(pair)
    # NOGROUP: 消费组不存在 (the group does not exist) — also for a missing key
    expect_error(pair, "NOGROUP", "XAUTOCLAIM", "mystream", "nogroup", "Bob", HOUR, "0-0", key="mystream", group="nogroup")
    expect_error(pair, "NOGROUP", "XAUTOCLAIM", "nokey", "mygroup", "Bob", HOUR, "0-0", key="nokey", group="mygroup")
    # ERR wrong number of arguments: 缺少必填参数 (a required argument is missing)
    error_matching(pair, "ERR wrong number of arguments*", "XAUTOCLAIM", "mystream", "mygroup", "Bob", HOUR)
    expect_error(pair, "WRONG_ARITY", "XAUTOCLAIM", "mystream", "mygroup", "Bob", HOUR, command="xautoclaim")
    # "min-idle-time 为负数 参数非法" (a negative min-idle-time is illegal): the servers accept it and use 0
    # (spec §2.14 step 1), so the entry is claimed; a non-integer is the error.
    reply = pair.same("XAUTOCLAIM", "mystream", "mygroup", "Bob", "-1", "0-0", "JUSTID")
    assert reply == [b"0-0", [SEED_ID.encode()], []]
    expect_error(pair, "XAUTOCLAIM_MIN_IDLE", "XAUTOCLAIM", "mystream", "mygroup", "Bob", "abc", "0-0")


# =============================================================================================
# 004 — lesson "Acknowledging Messages" (Redis Streams Tutorial)
#
# The lesson reads "1691234567890-0" from an existing "orders" stream; the tests create it with explicit IDs.


def _tutorial_setup(p: Any) -> None:
    p.same("XADD", "orders", "1691234567890-0", "status", "pending")
    p.same("XADD", "orders", "1691234567891-0", "status", "pending")
    p.same("XADD", "orders", "1691234567892-0", "status", "pending")
    p.same("XGROUP", "CREATE", "orders", "processors", "0")


def test_seed_tutorial_read_then_acknowledge(pair):
    """004 Code Examples: read one message, acknowledge it -> (integer) 1, check what is still pending."""
    _tutorial_setup(pair)
    reply = pair.same("XREADGROUP", "GROUP", "processors", "worker-1", "COUNT", "1", "STREAMS", "orders", ">")
    assert stream_pairs(reply) == [[b"orders", [_entry("1691234567890-0", "status", "pending")]]]
    assert pair.same("XACK", "orders", "processors", "1691234567890-0") == 1
    assert pair.same("XPENDING", "orders", "processors", "-", "+", "10") == []


def test_seed_tutorial_deep_dive_acknowledge_several_and_check_pending(pair):
    """004 Deep Dive: XACK returns the number acknowledged; several IDs at once; XPENDING - + 10; the entry
    remains in the stream; the PEL tracks consumer, last delivery and delivery count."""
    _tutorial_setup(pair)
    pair.same("XREADGROUP", "GROUP", "processors", "worker-1", "STREAMS", "orders", ">")
    rows = pair.same("XPENDING", "orders", "processors", "-", "+", "10", normalize=times)
    assert [r[0] for r in rows] == [b"1691234567890-0", b"1691234567891-0", b"1691234567892-0"]
    assert all(r[1] == b"worker-1" and r[3] == 1 and isinstance(r[2], int) for r in rows)
    assert pair.same("XACK", "orders", "processors", "1691234567890-0") == 1  # "# => (integer) 1"
    assert pair.same("XACK", "orders", "processors", "1691234567890-0", "1691234567891-0", "1691234567892-0") == 2
    assert pair.same("XPENDING", "orders", "processors", "-", "+", "10") == []
    assert pair.same("XLEN", "orders") == 3  # "remains in the stream itself until trimmed"
    assert pair.same("XTRIM", "orders", "MAXLEN", "0") == 3
    assert pair.same("XLEN", "orders") == 0


def test_seed_tutorial_unacknowledged_message_can_be_reclaimed(pair):
    """004: a crashed consumer's unacknowledged message stays in the PEL, accumulates idle time and can be
    reclaimed (XCLAIM) and processed again (at-least-once)."""
    _tutorial_setup(pair)
    pair.same("XREADGROUP", "GROUP", "processors", "worker-1", "COUNT", "1", "STREAMS", "orders", ">")
    _age(pair, "orders", "processors", "worker-1", "1691234567890-0", ms=60000)
    reply = pair.same("XCLAIM", "orders", "processors", "worker-2", "30000", "1691234567890-0")
    assert reply == [_entry("1691234567890-0", "status", "pending")]
    [row] = pair.same("XPENDING", "orders", "processors", "-", "+", "10", normalize=times)
    assert row[0] == b"1691234567890-0" and row[1] == b"worker-2" and row[3] == 2
    assert pair.same("XACK", "orders", "processors", "1691234567890-0") == 1
