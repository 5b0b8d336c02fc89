"""Port of Redis 7.4.1 ``tests/unit/type/stream-cgroups.tcl`` (spec §7.2), run on the fake and each real server.

One test per Tcl test, named after it; the docstring is the Tcl test name. Codes P and CONFIG
(value-irrelevant) of the catalogue are ported here, plus "Blocking XREADGROUP will ignore BLOCK if ID is
not >" (it never blocks) and the RDB ones (DUMP/RESTORE in the server's format). The blocking
(PB) tests live with the blocking suite; INFO/AOF/replication ones are listed in
:func:`test_not_portable` with the reason.

Tcl's server block carries state from test to test; each Python test starts from an empty keyspace and
first repeats the commands of the earlier tests it depends on (the ``_state_*`` helpers).

Idle-time tests wait on the wall clock for the real server's sake only (:func:`let_time_pass`); the fake's
ManualClock is set to the real server's ``TIME`` before each command by ``pair``.
"""

from __future__ import annotations

import fnmatch
from typing import Any

import pytest

from tests.conformance.replies import times

from .conftest import (
    Err,
    as_map,
    error_matching,
    expect_error,
    flat_len,
    stream_pairs,
    xadd_auto,
)
from .conftest import let_time_pass as _sleep_ms

#: Tcl waits ``after 200`` before claiming with min-idle-time 10 ms; 50 ms keeps a 5x margin over the
#: min-idle-time at a quarter of the wait (the comparison itself does not depend on the exact wait).
CLAIM_WAIT_MS = 50


def _glob(err: Any, pattern: str) -> bool:
    return isinstance(err, Err) and fnmatch.fnmatchcase(err.full, pattern)


def _groups(p: Any, key: str) -> list:
    return [as_map(g) for g in p.same("XINFO", "GROUPS", key)]


def _consumers(p: Any, key: str, group: str) -> list:
    return [as_map(c) for c in p.same("XINFO", "CONSUMERS", key, group, normalize=times)]


def _full(p: Any, key: str, *extra: Any) -> dict:
    return as_map(p.same("XINFO", "STREAM", key, "FULL", *extra, normalize=times))


def _full_group(p: Any, key: str, index: int) -> dict:
    return as_map(_full(p, key)[b"groups"][index])


# ---------------------------------------------------------------------------------------------
# XGROUP CREATE


def test_xgroup_create_creation_and_duplicate_group_name_detection(pair):
    """XGROUP CREATE: creation and duplicate group name detection"""
    pair.same("DEL", "mystream")
    xadd_auto(pair, "mystream", "*", "foo", "bar")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$")
    err = pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$")
    assert _glob(err, "BUSYGROUP*"), err


def test_xgroup_create_with_entriesread_parameter(pair):
    """XGROUP CREATE: with ENTRIESREAD parameter"""
    pair.same("DEL", "mystream")
    for seq, (f, v) in enumerate([("a", 1), ("b", 2), ("c", 3), ("d", 4)], start=1):
        pair.same("XADD", "mystream", f"1-{seq}", f, v)
    error_matching(pair, "*value for ENTRIESREAD must be positive or -1*",
                   "XGROUP", "CREATE", "mystream", "mygroup", "$", "ENTRIESREAD", "-3")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup1", "$", "ENTRIESREAD", "0")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup2", "$", "ENTRIESREAD", "3")
    for group_info in _groups(pair, "mystream"):
        if group_info[b"name"] == b"mygroup1":
            assert group_info[b"entries-read"] == 0
        else:
            assert group_info[b"entries-read"] == 3


def test_xgroup_create_automatic_stream_creation_fails_without_mkstream(pair):
    """XGROUP CREATE: automatic stream creation fails without MKSTREAM"""
    pair.same("DEL", "mystream")
    err = pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$")
    assert _glob(err, "ERR*"), err


def test_xgroup_create_automatic_stream_creation_works_with_mkstream(pair):
    """XGROUP CREATE: automatic stream creation works with MKSTREAM"""
    pair.same("DEL", "mystream")
    assert pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM") == b"OK"


# ---------------------------------------------------------------------------------------------
# XREADGROUP / XPENDING / XACK on the server block's shared "mystream"


def _state_only_new(p: Any) -> list:
    """Tcl state after "XREADGROUP will return only new elements" (from "... works with MKSTREAM")."""
    p.same("DEL", "mystream")
    p.same("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    xadd_auto(p, "mystream", "*", "a", "1")
    xadd_auto(p, "mystream", "*", "b", "2")
    return stream_pairs(p.same("XREADGROUP", "GROUP", "mygroup", "consumer-1", "STREAMS", "mystream", ">"))


def _state_history(p: Any) -> None:
    """Tcl state after "XREADGROUP can read the history of the elements we own"."""
    _state_only_new(p)
    xadd_auto(p, "mystream", "*", "c", "3")
    xadd_auto(p, "mystream", "*", "d", "4")
    p.same("XREADGROUP", "GROUP", "mygroup", "consumer-2", "STREAMS", "mystream", ">")
    p.same("XREADGROUP", "GROUP", "mygroup", "consumer-1", "COUNT", "10", "STREAMS", "mystream", "0")
    p.same("XREADGROUP", "GROUP", "mygroup", "consumer-2", "COUNT", "10", "STREAMS", "mystream", "0")


def _state_first_ack(p: Any) -> tuple:
    """Tcl state after "XACK is able to remove items from the consumer/group PEL": (id1, id2)."""
    _state_history(p)
    pending = p.same("XPENDING", "mystream", "mygroup", "-", "+", "10", "consumer-1", normalize=times)
    id1, id2 = pending[0][0], pending[1][0]
    p.same("XACK", "mystream", "mygroup", id1)
    return id1, id2


def test_xreadgroup_will_return_only_new_elements(pair):
    """XREADGROUP will return only new elements"""
    reply = _state_only_new(pair)
    assert len(reply[0][1]) == 2
    assert reply[0][1][0][1] == [b"a", b"1"]


def test_xreadgroup_can_read_the_history_of_the_elements_we_own(pair):
    """XREADGROUP can read the history of the elements we own"""
    _state_only_new(pair)
    xadd_auto(pair, "mystream", "*", "c", "3")
    xadd_auto(pair, "mystream", "*", "d", "4")
    reply = stream_pairs(pair.same("XREADGROUP", "GROUP", "mygroup", "consumer-2", "STREAMS", "mystream", ">"))
    assert len(reply[0][1]) == 2
    assert reply[0][1][0][1] == [b"c", b"3"]
    r1 = stream_pairs(pair.same("XREADGROUP", "GROUP", "mygroup", "consumer-1", "COUNT", "10", "STREAMS", "mystream", "0"))
    r2 = stream_pairs(pair.same("XREADGROUP", "GROUP", "mygroup", "consumer-2", "COUNT", "10", "STREAMS", "mystream", "0"))
    assert r1[0][1][0][1] == [b"a", b"1"]
    assert r2[0][1][0][1] == [b"c", b"3"]


def test_xpending_is_able_to_return_pending_items(pair):
    """XPENDING is able to return pending items"""
    _state_history(pair)
    pending = pair.same("XPENDING", "mystream", "mygroup", "-", "+", "10", normalize=times)
    assert len(pending) == 4
    for j, item in enumerate(pending):
        owner = b"consumer-1" if j < 2 else b"consumer-2"
        assert item[1] == owner


def test_xpending_can_return_single_consumer_items(pair):
    """XPENDING can return single consumer items"""
    _state_history(pair)
    pending = pair.same("XPENDING", "mystream", "mygroup", "-", "+", "10", "consumer-1", normalize=times)
    assert len(pending) == 2


def test_xpending_only_group(pair):
    """XPENDING only group"""
    _state_history(pair)
    assert len(pair.same("XPENDING", "mystream", "mygroup")) == 4


def test_xpending_with_idle(pair):
    """XPENDING with IDLE"""
    _state_history(pair)
    _sleep_ms(20)
    key = ("XPENDING", "mystream", "mygroup")
    assert len(pair.same(*key, "IDLE", "99999999", "-", "+", "10", "consumer-1", normalize=times)) == 0
    assert len(pair.same(*key, "IDLE", "1", "-", "+", "10", "consumer-1", normalize=times)) == 2
    assert len(pair.same(*key, "IDLE", "99999999", "-", "+", "10", normalize=times)) == 0
    assert len(pair.same(*key, "IDLE", "1", "-", "+", "10", normalize=times)) == 4


def test_xpending_with_exclusive_range_intervals_works_as_expected(pair):
    """XPENDING with exclusive range intervals works as expected"""
    _state_history(pair)
    pending = pair.same("XPENDING", "mystream", "mygroup", "-", "+", "10", normalize=times)
    assert len(pending) == 4
    startid, endid = pending[0][0], pending[3][0]
    expending = pair.same("XPENDING", "mystream", "mygroup", b"(" + startid, b"(" + endid, "10", normalize=times)
    assert len(expending) == 2
    for item in expending:
        assert item[0] != startid
        assert item[0] != endid


def test_xack_is_able_to_remove_items_from_the_consumer_group_pel(pair):
    """XACK is able to remove items from the consumer/group PEL"""
    _state_history(pair)
    pending = pair.same("XPENDING", "mystream", "mygroup", "-", "+", "10", "consumer-1", normalize=times)
    id1, id2 = pending[0][0], pending[1][0]
    assert pair.same("XACK", "mystream", "mygroup", id1) == 1
    pending = pair.same("XPENDING", "mystream", "mygroup", "-", "+", "10", "consumer-1", normalize=times)
    assert len(pending) == 1
    assert pending[0][0] == id2
    global_pel = pair.same("XPENDING", "mystream", "mygroup", "-", "+", "10", normalize=times)
    assert len(global_pel) == 3


def test_xack_cant_remove_the_same_item_multiple_times(pair):
    """XACK can't remove the same item multiple times"""
    id1, _ = _state_first_ack(pair)
    assert pair.same("XACK", "mystream", "mygroup", id1) == 0


def test_xack_is_able_to_accept_multiple_arguments(pair):
    """XACK is able to accept multiple arguments"""
    id1, id2 = _state_first_ack(pair)
    pair.same("XACK", "mystream", "mygroup", id1)  # "XACK can't remove the same item multiple times"
    # One of the IDs was already removed, so it should ack just ID2.
    assert pair.same("XACK", "mystream", "mygroup", id1, id2) == 1


def test_xack_should_fail_if_got_at_least_one_invalid_id(pair):
    """XACK should fail if got at least one invalid ID"""
    pair.same("DEL", "mystream")
    pair.same("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    xadd_auto(pair, "s", "*", "f1", "v1")
    c = len(stream_pairs(pair.same("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"))[0][1])
    assert c == 1
    pending = pair.same("XPENDING", "s", "g", "-", "+", "10", "c", normalize=times)
    id1 = pending[0][0]
    error_matching(pair, "*Invalid stream ID specified*", "XACK", "s", "g", id1, "invalid-id")
    assert pair.same("XACK", "s", "g", id1) == 1


def test_pel_nack_reassignment_after_xgroup_setid_event(pair):
    """PEL NACK reassignment after XGROUP SETID event"""
    pair.same("DEL", "events")
    for _ in range(4):
        xadd_auto(pair, "events", "*", "f1", "v1")
    pair.same("XGROUP", "CREATE", "events", "g1", "$")
    xadd_auto(pair, "events", "*", "f1", "v1")
    c = len(stream_pairs(pair.same("XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "events", ">"))[0][1])
    assert c == 1
    pair.same("XGROUP", "SETID", "events", "g1", "-")
    c = len(stream_pairs(pair.same("XREADGROUP", "GROUP", "g1", "c2", "STREAMS", "events", ">"))[0][1])
    assert c == 5


def test_xreadgroup_will_not_report_data_on_empty_history_bug_5577(pair):
    """XREADGROUP will not report data on empty history. Bug #5577"""
    pair.same("DEL", "events")
    xadd_auto(pair, "events", "*", "a", "1")
    xadd_auto(pair, "events", "*", "b", "2")
    xadd_auto(pair, "events", "*", "c", "3")
    pair.same("XGROUP", "CREATE", "events", "mygroup", "0")
    # Current local PEL should be empty
    assert len(pair.same("XPENDING", "events", "mygroup", "-", "+", "10")) == 0
    # So XREADGROUP should read an empty history as well
    res = stream_pairs(pair.same("XREADGROUP", "GROUP", "mygroup", "myconsumer", "COUNT", "3", "STREAMS", "events", "0"))
    assert len(res[0][1]) == 0
    # We should fetch all the elements in the stream asking for >
    res = stream_pairs(pair.same("XREADGROUP", "GROUP", "mygroup", "myconsumer", "COUNT", "3", "STREAMS", "events", ">"))
    assert len(res[0][1]) == 3
    # Now the history is populated with three not acked entries
    res = stream_pairs(pair.same("XREADGROUP", "GROUP", "mygroup", "myconsumer", "COUNT", "3", "STREAMS", "events", "0"))
    assert len(res[0][1]) == 3


def test_xreadgroup_history_reporting_of_deleted_entries_bug_5570(pair):
    """XREADGROUP history reporting of deleted entries. Bug #5570"""
    pair.same("DEL", "mystream")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    pair.same("XADD", "mystream", "1", "field1", "A")
    pair.same("XREADGROUP", "GROUP", "mygroup", "myconsumer", "STREAMS", "mystream", ">")
    pair.same("XADD", "mystream", "MAXLEN", "1", "2", "field1", "B")
    pair.same("XREADGROUP", "GROUP", "mygroup", "myconsumer", "STREAMS", "mystream", ">")
    # Now we have two pending entries, however one should be deleted and one should be ok (we should only see "B")
    res = stream_pairs(pair.same("XREADGROUP", "GROUP", "mygroup", "myconsumer", "STREAMS", "mystream", "0-1"))
    assert res[0][1][0] == [b"1-0", None]  # Tcl {1-0 {}}: the deleted entry's body is a nil array
    assert res[0][1][1] == [b"2-0", [b"field1", b"B"]]


def test_xread_and_xreadgroup_against_wrong_parameter(pair):
    """XREAD and XREADGROUP against wrong parameter"""
    pair.same("DEL", "mystream")
    pair.same("XADD", "mystream", "666", "f", "v")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$")
    group_err = expect_error(pair, "UNBALANCED_XREADGROUP",
                             "XREADGROUP", "GROUP", "mygroup", "Alice", "COUNT", "1", "STREAMS", "mystream")
    read_err = expect_error(pair, "UNBALANCED_XREAD", "XREAD", "COUNT", "1", "STREAMS", "mystream")
    if pair.profile.spec_key == "R7.0":
        # R7.0 has one text for both commands (spec §6 row 2); the Tcl test was added in 7.2
        r70 = "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
        assert group_err.full == r70 and read_err.full == r70
        return
    assert group_err.full == ("ERR Unbalanced 'xreadgroup' list of streams: "
                              "for each stream key an ID or '>' must be specified.")
    if pair.profile.spec_key.startswith("R8."):  # Redis 8 names '+' too (measured on Redis 8.2.3)
        assert read_err.full == ("ERR Unbalanced 'xread' list of streams: "
                                 "for each stream key an ID, '+', or '$' must be specified.")
        return
    assert read_err.full == "ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified."


def test_blocking_xreadgroup_will_ignore_block_if_id_is_not_greater_than(pair):
    """Blocking XREADGROUP will ignore BLOCK if ID is not >"""
    rd = pair.connect()  # Tcl's deferring client; every read below returns at once
    # Add a entry then delete it, now stream's last_id is 666.
    pair.same("DEL", "mystream")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    pair.same("XADD", "mystream", "666", "key", "value")
    pair.same("XDEL", "mystream", "666")

    def history(entry_id: str) -> Any:
        return stream_pairs(rd.same("XREADGROUP", "GROUP", "mygroup", "myconsumer", "BLOCK", "0",
                                    "STREAMS", "mystream", entry_id))

    # Return right away instead of blocking, return the stream with an empty list instead of NIL if the ID
    # specified is not the special `>` ID.
    for entry_id in ("0", "600", "666", "700"):
        assert history(entry_id) == [[b"mystream", []]]
    # After adding a new entry, `XREADGROUP BLOCK` still return the stream with an empty list because the
    # pending list is empty.
    pair.same("XADD", "mystream", "667", "key", "value")
    for entry_id in ("0", "600", "666", "667", "700"):
        assert history(entry_id) == [[b"mystream", []]]
    # After we read it once, the pending list is not empty at this time, pass any ID smaller than 667 will
    # return one of the pending entry.
    res = stream_pairs(pair.same("XREADGROUP", "GROUP", "mygroup", "myconsumer", "BLOCK", "0", "STREAMS", "mystream", ">"))
    assert res == [[b"mystream", [[b"667-0", [b"key", b"value"]]]]]
    for entry_id in ("0", "600", "666"):
        assert history(entry_id) == [[b"mystream", [[b"667-0", [b"key", b"value"]]]]]
    # Pass ID equal or greater than 667 will return the stream with an empty list.
    for entry_id in ("667", "700"):
        assert history(entry_id) == [[b"mystream", []]]
    # After we ACK the pending entry, return the stream with an empty list.
    pair.same("XACK", "mystream", "mygroup", "667")
    for entry_id in ("0", "600", "666", "667", "700"):
        assert history(entry_id) == [[b"mystream", []]]


# ---------------------------------------------------------------------------------------------
# XCLAIM / XAUTOCLAIM


def _three_entries_one_read(p: Any) -> tuple:
    """The common start of the XCLAIM tests: a 1, b 2, c 3 (auto IDs), group at 0, consumer1 reads one."""
    p.same("DEL", "mystream")
    id1 = xadd_auto(p, "mystream", "*", "a", "1")
    id2 = xadd_auto(p, "mystream", "*", "b", "2")
    id3 = xadd_auto(p, "mystream", "*", "c", "3")
    p.same("XGROUP", "CREATE", "mystream", "mygroup", "0")
    reply = stream_pairs(p.same("XREADGROUP", "GROUP", "mygroup", "consumer1", "count", "1", "STREAMS", "mystream", ">"))
    assert len(reply[0][1][0][1]) == 2
    assert reply[0][1][0][1] == [b"a", b"1"]
    return id1, id2, id3


def _pel_len(p: Any, *consumer: str) -> int:
    return len(p.same("XPENDING", "mystream", "mygroup", "-", "+", "10", *consumer, normalize=times))


def test_xclaim_can_claim_pel_items_from_another_consumer(pair):
    """XCLAIM can claim PEL items from another consumer"""
    id1, id2, id3 = _three_entries_one_read(pair)
    # make sure the entry is present in both the group, and the right consumer
    assert _pel_len(pair) == 1
    assert _pel_len(pair, "consumer1") == 1
    assert _pel_len(pair, "consumer2") == 0

    _sleep_ms(CLAIM_WAIT_MS)
    reply = pair.same("XCLAIM", "mystream", "mygroup", "consumer2", "10", id1)
    assert len(reply[0][1]) == 2
    assert reply[0][1] == [b"a", b"1"]
    # make sure the entry is present in both the group, and the right consumer
    assert _pel_len(pair) == 1
    assert _pel_len(pair, "consumer1") == 0
    assert _pel_len(pair, "consumer2") == 1

    # Consumer 1 reads another 2 items from stream
    pair.same("XREADGROUP", "GROUP", "mygroup", "consumer1", "count", "2", "STREAMS", "mystream", ">")
    _sleep_ms(CLAIM_WAIT_MS)
    # Delete item 2 from the stream. Now consumer 1 has PEL that contains only item 3. Try to use consumer 2
    # to claim the deleted item 2 from the PEL of consumer 1, this should be NOP
    pair.same("XDEL", "mystream", id2)
    assert len(pair.same("XCLAIM", "mystream", "mygroup", "consumer2", "10", id2)) == 0
    # Delete item 3 from the stream. Now consumer 1 has PEL that is empty. Try to use consumer 2 to claim
    # the deleted item 3 from the PEL of consumer 1, this should be NOP
    _sleep_ms(CLAIM_WAIT_MS)
    pair.same("XDEL", "mystream", id3)
    assert len(pair.same("XCLAIM", "mystream", "mygroup", "consumer2", "10", id3)) == 0


def test_xclaim_without_justid_increments_delivery_count(pair):
    """XCLAIM without JUSTID increments delivery count"""
    id1, _, _ = _three_entries_one_read(pair)
    _sleep_ms(CLAIM_WAIT_MS)
    reply = pair.same("XCLAIM", "mystream", "mygroup", "consumer2", "10", id1)
    assert len(reply[0][1]) == 2
    assert reply[0][1] == [b"a", b"1"]
    reply = pair.same("XPENDING", "mystream", "mygroup", "-", "+", "10", normalize=times)
    assert len(reply[0]) == 4
    assert reply[0][3] == 2

    # Consumer 3 then claims pending item 1 from the PEL of consumer 2 using JUSTID
    _sleep_ms(CLAIM_WAIT_MS)
    reply = pair.same("XCLAIM", "mystream", "mygroup", "consumer3", "10", id1, "JUSTID")
    assert reply == [id1]
    reply = pair.same("XPENDING", "mystream", "mygroup", "-", "+", "10", normalize=times)
    assert len(reply[0]) == 4
    assert reply[0][3] == 2


def test_xclaim_same_consumer(pair):
    """XCLAIM same consumer"""
    id1, _, _ = _three_entries_one_read(pair)
    _sleep_ms(CLAIM_WAIT_MS)
    # re-claim with the same consumer that already has it
    assert len(pair.same("XCLAIM", "mystream", "mygroup", "consumer1", "10", id1)) == 1
    # make sure the entry is still in the PEL
    reply = pair.same("XPENDING", "mystream", "mygroup", "-", "+", "10", normalize=times)
    assert len(reply) == 1
    assert reply[0][1] == b"consumer1"


def test_xautoclaim_can_claim_pel_items_from_another_consumer(pair):
    """XAUTOCLAIM can claim PEL items from another consumer"""
    pair.same("DEL", "mystream")
    id1 = xadd_auto(pair, "mystream", "*", "a", "1")
    id2 = xadd_auto(pair, "mystream", "*", "b", "2")
    id3 = xadd_auto(pair, "mystream", "*", "c", "3")
    id4 = xadd_auto(pair, "mystream", "*", "d", "4")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "0")

    # Consumer 1 reads item 1 from the stream without acknowledgements.
    # Consumer 2 then claims pending item 1 from the PEL of consumer 1
    reply = stream_pairs(pair.same("XREADGROUP", "GROUP", "mygroup", "consumer1", "count", "1", "STREAMS", "mystream", ">"))
    assert len(reply[0][1][0][1]) == 2
    assert reply[0][1][0][1] == [b"a", b"1"]
    _sleep_ms(CLAIM_WAIT_MS)
    reply = pair.same("XAUTOCLAIM", "mystream", "mygroup", "consumer2", "10", "-", "COUNT", "1")
    assert len(reply) == 3
    assert reply[0] == b"0-0"
    assert len(reply[1]) == 1
    assert len(reply[1][0]) == 2
    assert len(reply[1][0][1]) == 2
    assert reply[1][0][1] == [b"a", b"1"]

    # Consumer 1 reads another 2 items from stream
    pair.same("XREADGROUP", "GROUP", "mygroup", "consumer1", "count", "3", "STREAMS", "mystream", ">")
    _sleep_ms(CLAIM_WAIT_MS)  # For min-idle-time
    # Delete item 2 from the stream. Now consumer 1 has PEL that contains only item 3. Try to use consumer 2
    # to claim the deleted item 2 from the PEL of consumer 1, this should return nil
    pair.same("XDEL", "mystream", id2)
    # id1 and id3 are self-claimed here but not id2 ('count' was set to 3)
    # we make sure id2 is indeed skipped (the cursor points to id4)
    reply = pair.same("XAUTOCLAIM", "mystream", "mygroup", "consumer2", "10", "-", "COUNT", "3")
    assert len(reply) == 3
    assert reply[0] == id4
    assert len(reply[1]) == 2
    assert len(reply[1][0]) == 2
    assert len(reply[1][0][1]) == 2
    assert reply[1][0][1] == [b"a", b"1"]
    assert reply[1][1][1] == [b"c", b"3"]
    assert len(reply[2]) == 1
    assert reply[2] == [id2]  # Tcl: llength of [lindex $reply 2 0] is 1 (an ID)

    # Delete item 3 from the stream. Now consumer 1 has PEL that is empty. Try to use consumer 2 to claim
    # the deleted item 3 from the PEL of consumer 1, this should return nil
    _sleep_ms(CLAIM_WAIT_MS)
    pair.same("XDEL", "mystream", id4)
    # id1 and id3 are self-claimed here but not id2 and id4 ('count' is default 100)
    reply = pair.same("XAUTOCLAIM", "mystream", "mygroup", "consumer2", "10", "-", "JUSTID")
    # we also test the JUSTID modifier here. note that, when using JUSTID, deleted entries are returned in
    # reply (consistent with XCLAIM).
    assert len(reply) == 3
    assert reply[0] == b"0-0"
    assert len(reply[1]) == 2
    assert reply[1][0] == id1
    assert reply[1][1] == id3


def test_xautoclaim_as_an_iterator(pair):
    """XAUTOCLAIM as an iterator"""
    pair.same("DEL", "mystream")
    id1 = xadd_auto(pair, "mystream", "*", "a", "1")
    xadd_auto(pair, "mystream", "*", "b", "2")
    id3 = xadd_auto(pair, "mystream", "*", "c", "3")
    xadd_auto(pair, "mystream", "*", "d", "4")
    id5 = xadd_auto(pair, "mystream", "*", "e", "5")
    assert id1  # (kept for symmetry with the Tcl test)
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "0")
    # Read 5 messages into consumer1
    pair.same("XREADGROUP", "GROUP", "mygroup", "consumer1", "count", "90", "STREAMS", "mystream", ">")
    _sleep_ms(CLAIM_WAIT_MS)  # For min-idle-time

    # Claim 2 entries
    reply = pair.same("XAUTOCLAIM", "mystream", "mygroup", "consumer2", "10", "-", "COUNT", "2")
    assert len(reply) == 3
    cursor = reply[0]
    assert cursor == id3
    assert len(reply[1]) == 2
    assert len(reply[1][0][1]) == 2
    assert reply[1][0][1] == [b"a", b"1"]

    # Claim 2 more entries
    reply = pair.same("XAUTOCLAIM", "mystream", "mygroup", "consumer2", "10", cursor, "COUNT", "2")
    assert len(reply) == 3
    cursor = reply[0]
    assert cursor == id5
    assert len(reply[1]) == 2
    assert len(reply[1][0][1]) == 2
    assert reply[1][0][1] == [b"c", b"3"]

    # Claim last entry
    reply = pair.same("XAUTOCLAIM", "mystream", "mygroup", "consumer2", "10", cursor, "COUNT", "1")
    assert len(reply) == 3
    cursor = reply[0]
    assert cursor == b"0-0"
    assert len(reply[1]) == 1
    assert len(reply[1][0][1]) == 2
    assert reply[1][0][1] == [b"e", b"5"]


def test_xautoclaim_count_must_be_greater_than_0(pair):
    """XAUTOCLAIM COUNT must be > 0"""
    error_matching(pair, "ERR COUNT must be > 0", "XAUTOCLAIM", "key", "group", "consumer", "1", "1", "COUNT", "0")
    expect_error(pair, "XAUTOCLAIM_COUNT", "XAUTOCLAIM", "key", "group", "consumer", "1", "1", "COUNT", "0")


_X_READ_BY_ALICE = [[b"x", [[b"1-0", [b"f", b"v"]], [b"2-0", [b"f", b"v"]], [b"3-0", [b"f", b"v"]]]]]


def _x_read_by_alice(p: Any) -> None:
    p.same("DEL", "x")
    p.same("XADD", "x", "1-0", "f", "v")
    p.same("XADD", "x", "2-0", "f", "v")
    p.same("XADD", "x", "3-0", "f", "v")
    p.same("XGROUP", "CREATE", "x", "grp", "0")
    assert stream_pairs(p.same("XREADGROUP", "GROUP", "grp", "Alice", "STREAMS", "x", ">")) == _X_READ_BY_ALICE


def test_xclaim_with_xdel(pair):
    """XCLAIM with XDEL"""
    _x_read_by_alice(pair)
    pair.same("XDEL", "x", "2-0")
    assert pair.same("XCLAIM", "x", "grp", "Bob", "0", "1-0", "2-0", "3-0") == [
        [b"1-0", [b"f", b"v"]],
        [b"3-0", [b"f", b"v"]],
    ]
    assert pair.same("XPENDING", "x", "grp", "-", "+", "10", "Alice") == []


def test_xclaim_with_trimming(pair):
    """XCLAIM with trimming"""
    # Tcl sets stream-node-max-entries 2 first; the exact trim below removes 1-0 and 2-0 whatever the node
    # size (catalogue: CONFIG, value-irrelevant), so this runs with the default.
    _x_read_by_alice(pair)
    pair.same("XTRIM", "x", "MAXLEN", "1")
    assert pair.same("XCLAIM", "x", "grp", "Bob", "0", "1-0", "2-0", "3-0") == [[b"3-0", [b"f", b"v"]]]
    assert pair.same("XPENDING", "x", "grp", "-", "+", "10", "Alice") == []


def test_xautoclaim_with_xdel(pair):
    """XAUTOCLAIM with XDEL"""
    _x_read_by_alice(pair)
    pair.same("XDEL", "x", "2-0")
    assert pair.same("XAUTOCLAIM", "x", "grp", "Bob", "0", "0-0") == [
        b"0-0",
        [[b"1-0", [b"f", b"v"]], [b"3-0", [b"f", b"v"]]],
        [b"2-0"],
    ]
    assert pair.same("XPENDING", "x", "grp", "-", "+", "10", "Alice") == []


def _xautoclaim_with_xdel_and_count(p: Any) -> None:
    _x_read_by_alice(p)
    p.same("XDEL", "x", "1-0")
    p.same("XDEL", "x", "2-0")
    assert p.same("XAUTOCLAIM", "x", "grp", "Bob", "0", "0-0", "COUNT", "1") == [b"2-0", [], [b"1-0"]]
    assert p.same("XAUTOCLAIM", "x", "grp", "Bob", "0", "2-0", "COUNT", "1") == [b"3-0", [], [b"2-0"]]
    assert p.same("XAUTOCLAIM", "x", "grp", "Bob", "0", "3-0", "COUNT", "1") == [b"0-0", [[b"3-0", [b"f", b"v"]]], []]
    assert p.same("XPENDING", "x", "grp", "-", "+", "10", "Alice") == []


def test_xautoclaim_with_xdel_and_count(pair):
    """XAUTOCLAIM with XDEL and count"""
    _xautoclaim_with_xdel_and_count(pair)


def test_xautoclaim_with_out_of_range_count(pair):
    """XAUTOCLAIM with out of range count"""
    _xautoclaim_with_xdel_and_count(pair)  # state of "XAUTOCLAIM with XDEL and count": x and grp exist
    error_matching(pair, "ERR COUNT*", "XAUTOCLAIM", "x", "grp", "Bob", "0", "3-0", "COUNT", "8070450532247928833")


def test_xclaim_with_trimming__second_test_using_xautoclaim(pair):
    """XCLAIM with trimming (the second Tcl test of that name; it uses XAUTOCLAIM)"""
    # Tcl sets stream-node-max-entries 2 first; value-irrelevant for the exact trim (see test_xclaim_with_trimming).
    _x_read_by_alice(pair)
    pair.same("XTRIM", "x", "MAXLEN", "1")
    assert pair.same("XAUTOCLAIM", "x", "grp", "Bob", "0", "0-0") == [
        b"0-0",
        [[b"3-0", [b"f", b"v"]]],
        [b"1-0", b"2-0"],
    ]
    assert pair.same("XPENDING", "x", "grp", "-", "+", "10", "Alice") == []


# ---------------------------------------------------------------------------------------------
# XINFO, consumers, lag


def test_xinfo_full_output(pair):
    """XINFO FULL output"""
    pair.same("DEL", "x")
    for ms, f in ((100, "a"), (101, "b"), (102, "c"), (103, "e"), (104, "f")):
        pair.same("XADD", "x", ms, f, "1")
    pair.same("XGROUP", "CREATE", "x", "g1", "0")
    pair.same("XGROUP", "CREATE", "x", "g2", "0")
    pair.same("XREADGROUP", "GROUP", "g1", "Alice", "COUNT", "1", "STREAMS", "x", ">")
    pair.same("XREADGROUP", "GROUP", "g1", "Bob", "COUNT", "1", "STREAMS", "x", ">")
    pair.same("XREADGROUP", "GROUP", "g1", "Bob", "NOACK", "COUNT", "1", "STREAMS", "x", ">")
    pair.same("XREADGROUP", "GROUP", "g2", "Charlie", "COUNT", "4", "STREAMS", "x", ">")
    pair.same("XDEL", "x", "103")

    raw = pair.same("XINFO", "STREAM", "x", "FULL", normalize=times)
    assert flat_len(raw) == 18
    reply = as_map(raw)
    assert reply[b"length"] == 4
    assert reply[b"entries"] == [
        [b"100-0", [b"a", b"1"]],
        [b"101-0", [b"b", b"1"]],
        [b"102-0", [b"c", b"1"]],
        [b"104-0", [b"f", b"1"]],
    ]
    # First consumer group
    group = as_map(reply[b"groups"][0])
    assert group[b"name"] == b"g1"
    assert group[b"pending"][0][0] == b"100-0"
    consumer = as_map(group[b"consumers"][0])
    assert consumer[b"name"] == b"Alice"
    assert consumer[b"pending"][0][0] == b"100-0"  # first entry in first consumer's PEL
    # Second consumer group
    group = as_map(reply[b"groups"][1])
    assert group[b"name"] == b"g2"
    consumer = as_map(group[b"consumers"][0])
    assert consumer[b"name"] == b"Charlie"
    assert consumer[b"pending"][0][0] == b"100-0"  # first entry in first consumer's PEL
    assert consumer[b"pending"][1][0] == b"101-0"  # second entry in first consumer's PEL

    raw = pair.same("XINFO", "STREAM", "x", "FULL", "COUNT", "1", normalize=times)
    assert flat_len(raw) == 18
    reply = as_map(raw)
    assert reply[b"length"] == 4
    assert reply[b"entries"] == [[b"100-0", [b"a", b"1"]]]


def test_consumer_seen_time_and_active_time(pair):
    """Consumer seen-time and active-time"""
    pair.require("consumer_active_time", "consumer active-time / XINFO 'inactive' are R7.2+ (spec §6 row 9)")
    pair.same("DEL", "mystream")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    pair.same("XREADGROUP", "GROUP", "mygroup", "Alice", "COUNT", "1", "STREAMS", "mystream", ">")
    _sleep_ms(100)
    consumer_info = _consumers(pair, "mystream", "mygroup")[0]
    assert consumer_info[b"idle"] >= 100  # consumer idle (seen-time)
    assert consumer_info[b"inactive"] == -1  # consumer inactive (active-time)

    xadd_auto(pair, "mystream", "*", "f", "v")
    pair.same("XREADGROUP", "GROUP", "mygroup", "Alice", "COUNT", "1", "STREAMS", "mystream", ">")
    consumer_info = _consumers(pair, "mystream", "mygroup")[0]
    assert consumer_info[b"name"] == b"Alice"  # consumer name
    assert consumer_info[b"idle"] < 80  # consumer idle (seen-time)
    assert consumer_info[b"inactive"] < 80  # consumer inactive (active-time)

    _sleep_ms(100)
    pair.same("XREADGROUP", "GROUP", "mygroup", "Alice", "COUNT", "1", "STREAMS", "mystream", ">")
    consumer_info = _consumers(pair, "mystream", "mygroup")[0]
    assert consumer_info[b"idle"] < 80  # consumer idle (seen-time)
    assert consumer_info[b"inactive"] >= 100  # consumer inactive (active-time)

    # Simulate loading from RDB (the Tcl test reads key x here, a leftover of an earlier test: mystream is meant).
    # Each side restores its own DUMP and must show its own seen-time and active-time again.
    def consumer_times(side: Any) -> tuple:
        group = as_map(as_map(side("XINFO", "STREAM", "mystream", "FULL"))[b"groups"][0])
        consumer = as_map(group[b"consumers"][0])
        return consumer[b"seen-time"], consumer[b"active-time"]

    before = {side.name: consumer_times(side) for side in (pair.real, pair.fake)}
    dumps = {side.name: side("DUMP", "mystream") for side in (pair.real, pair.fake)}
    pair.same("DEL", "mystream")
    for side in (pair.real, pair.fake):
        assert side("RESTORE", "mystream", "0", dumps[side.name]) == b"OK"
        assert consumer_times(side) == before[side.name]
    _full(pair, "mystream")


def test_xgroup_createconsumer_create_consumer_if_does_not_exist(pair):
    """XGROUP CREATECONSUMER: create consumer if does not exist"""
    pair.same("DEL", "mystream")
    pair.same("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    xadd_auto(pair, "mystream", "*", "f", "v")
    assert _groups(pair, "mystream")[0][b"consumers"] == 0  # consumers number in cg

    # create consumer using XREADGROUP
    pair.same("XREADGROUP", "GROUP", "mygroup", "Alice", "COUNT", "1", "STREAMS", "mystream", ">")
    assert _groups(pair, "mystream")[0][b"consumers"] == 1  # consumers number in cg
    assert _consumers(pair, "mystream", "mygroup")[0][b"name"] == b"Alice"  # consumer name

    # create group using XGROUP CREATECONSUMER when Alice already exists
    assert pair.same("XGROUP", "CREATECONSUMER", "mystream", "mygroup", "Alice") == 0
    # create group using XGROUP CREATECONSUMER when Bob does not exist
    assert pair.same("XGROUP", "CREATECONSUMER", "mystream", "mygroup", "Bob") == 1

    assert _groups(pair, "mystream")[0][b"consumers"] == 2  # consumers number in cg
    consumers = _consumers(pair, "mystream", "mygroup")
    assert consumers[0][b"name"] == b"Alice"  # consumer name
    assert consumers[1][b"name"] == b"Bob"  # consumer name


def test_xgroup_createconsumer_group_must_exist(pair):
    """XGROUP CREATECONSUMER: group must exist"""
    pair.same("DEL", "mystream")
    xadd_auto(pair, "mystream", "*", "f", "v")
    error_matching(pair, "*NOGROUP*", "XGROUP", "CREATECONSUMER", "mystream", "mygroup", "consumer")


def test_consumer_group_read_counter_and_lag_in_empty_streams(pair):
    """Consumer group read counter and lag in empty streams"""
    pair.same("DEL", "x")
    pair.same("XGROUP", "CREATE", "x", "g1", "0", "MKSTREAM")
    reply = _full(pair, "x")
    group = as_map(reply[b"groups"][0])
    assert reply[b"max-deleted-entry-id"] == b"0-0"
    assert reply[b"entries-added"] == 0
    assert group[b"entries-read"] is None
    assert group[b"lag"] == 0

    pair.same("XADD", "x", "1-0", "data", "a")
    pair.same("XDEL", "x", "1-0")
    reply = _full(pair, "x")
    group = as_map(reply[b"groups"][0])
    assert reply[b"max-deleted-entry-id"] == b"1-0"
    assert reply[b"entries-added"] == 1
    assert group[b"entries-read"] is None
    assert group[b"lag"] == 0


def test_consumer_group_read_counter_and_lag_sanity(pair):
    """Consumer group read counter and lag sanity"""
    pair.same("DEL", "x")
    for i, v in enumerate("abcde", start=1):
        pair.same("XADD", "x", f"{i}-0", "data", v)
    pair.same("XGROUP", "CREATE", "x", "g1", "0")
    group = _full_group(pair, "x", 0)
    assert group[b"entries-read"] is None
    assert group[b"lag"] == 5

    pair.same("XREADGROUP", "GROUP", "g1", "c11", "COUNT", "1", "STREAMS", "x", ">")
    group = _full_group(pair, "x", 0)
    assert group[b"entries-read"] == 1
    assert group[b"lag"] == 4

    pair.same("XREADGROUP", "GROUP", "g1", "c12", "COUNT", "10", "STREAMS", "x", ">")
    group = _full_group(pair, "x", 0)
    assert group[b"entries-read"] == 5
    assert group[b"lag"] == 0

    pair.same("XADD", "x", "6-0", "data", "f")
    group = _full_group(pair, "x", 0)
    assert group[b"entries-read"] == 5
    assert group[b"lag"] == 1


def test_consumer_group_lag_with_xdels(pair):
    """Consumer group lag with XDELs"""
    pair.same("DEL", "x")
    for i, v in enumerate("abcde", start=1):
        pair.same("XADD", "x", f"{i}-0", "data", v)
    pair.same("XDEL", "x", "3-0")
    pair.same("XGROUP", "CREATE", "x", "g1", "0")
    pair.same("XGROUP", "CREATE", "x", "g2", "0")
    group = _full_group(pair, "x", 0)
    assert group[b"entries-read"] is None
    assert group[b"lag"] is None

    for _ in range(3):
        pair.same("XREADGROUP", "GROUP", "g1", "c11", "COUNT", "1", "STREAMS", "x", ">")
        group = _full_group(pair, "x", 0)
        assert group[b"entries-read"] is None
        assert group[b"lag"] is None

    pair.same("XREADGROUP", "GROUP", "g1", "c11", "COUNT", "1", "STREAMS", "x", ">")
    group = _full_group(pair, "x", 0)
    assert group[b"entries-read"] == 5
    assert group[b"lag"] == 0

    pair.same("XADD", "x", "6-0", "data", "f")
    group = _full_group(pair, "x", 0)
    assert group[b"entries-read"] == 5
    assert group[b"lag"] == 1

    pair.same("XTRIM", "x", "MINID", "=", "3-0")
    reply = _full(pair, "x")
    group = as_map(reply[b"groups"][0])
    assert group[b"entries-read"] == 5
    assert group[b"lag"] == 1
    group = as_map(reply[b"groups"][1])
    assert group[b"entries-read"] is None
    assert group[b"lag"] == 3

    pair.same("XTRIM", "x", "MINID", "=", "5-0")
    reply = _full(pair, "x")
    group = as_map(reply[b"groups"][0])
    assert group[b"entries-read"] == 5
    assert group[b"lag"] == 1
    group = as_map(reply[b"groups"][1])
    assert group[b"entries-read"] is None
    assert group[b"lag"] == 2


#: RESTORE payloads of the Tcl tests, DUMPed by Redis 5 (RDB 9, RDB_TYPE_STREAM_LISTPACKS) and Redis 7.0
#: (RDB 11 on the Tcl suite's 7.2+ server: RDB_TYPE_STREAM_LISTPACKS_2) after the commands in each docstring
LEGACY_V5 = bytes.fromhex(
    "0f011000000000000000010000000000000000c3404a405716570000002300020104010101846461746105000103010020010381610204"
    "200a0001400a0062600a0002400a0063600a4022018164200a4039200a0065600a0005400a0066200a00ff020600020267310500040000"
    "00000000000100000000000000003ef783437a01000001000000000000000200000000000000003ef783437a0100000100000000000000"
    "0400000000000000003ef783437a01000001000000000000000500000000000000003ef783437a0100000101036331313ef783437a0100"
    "0004000000000000000100000000000000000000000000000002000000000000000000000000000000040000000000000000000000000000"
    "000500000000000000000267320000000009003d52ef6867521dfa")
LEGACY_V7 = bytes.fromhex(
    "130110000000000000000100000000000000011d1d0000000a0001010001010181660200010201000100018176020401ff010101010100"
    "00010101670101010100000000000000010000000000000001f55a71c784010000010105416c696365f55a71c7840100000100000000"
    "0000000100000000000000010b00a7a914a527ff9b9b")


def test_loading_from_legacy_redis_6_2_persistence(pair):
    """Loading from legacy (Redis <= v6.2.x, rdb_ver < 10) persistence

    XADD x 1-0 … 6-0 data a … f; XDEL x 3-0; XGROUP CREATE x g1 0; XGROUP CREATE x g2 0;
    XREADGROUP GROUP g1 c11 COUNT 4 STREAMS x >; XTRIM x MAXLEN = 2"""
    pair.same("DEL", "x")
    pair.same("RESTORE", "x", "0", LEGACY_V5)
    reply = _full(pair, "x")
    assert reply[b"max-deleted-entry-id"] == b"0-0"
    assert reply[b"entries-added"] == 2
    group = as_map(reply[b"groups"][0])
    assert group[b"entries-read"] == 1
    assert group[b"lag"] == 1
    group = as_map(reply[b"groups"][1])
    assert group[b"entries-read"] == 0
    assert group[b"lag"] == 2


def test_loading_from_legacy_redis_7_0_persistence(pair):
    """Loading from legacy (Redis <= v7.0.x, rdb_ver < 11) persistence

    XGROUP CREATE x g $ MKSTREAM; XADD x 1-1 f v; XREADGROUP GROUP g Alice STREAMS x >"""
    pair.require("consumer_active_time", "the payload's RDB version (11) is newer than Redis 7.0's (10)")
    pair.same("DEL", "x")
    pair.same("RESTORE", "x", "0", LEGACY_V7)
    consumer = as_map(_full_group(pair, "x", 0)[b"consumers"][0])
    assert consumer[b"seen-time"] == consumer[b"active-time"]


# ---------------------------------------------------------------------------------------------
# Not portable; the blocking (PB) tests are ported with the blocking suite.

NOT_PORTABLE = {
    "Blocking XREADGROUP for stream key that has clients blocked on list":
        "NP-INFO: asserts INFO total_blocking_keys / total_blocking_keys_on_nokey (its NOGROUP part is blocking)",
    "XGROUP DESTROY should unblock XREADGROUP with -NOGROUP":
        "NP-INFO: asserts errorstats / commandstats after CONFIG RESETSTAT (its NOGROUP part is blocking)",
    "XREADGROUP of multiple entries changes dirty by one": "NP-INFO: asserts INFO rdb_changes_since_last_save",
    "XREADGROUP from PEL does not change dirty": "NP-INFO: asserts INFO rdb_changes_since_last_save",
    "XREADGROUP with NOACK creates consumer": "NP-AOF: needs appendonly + DEBUG LOADAOF",
    "Consumer without PEL is present in AOF after AOFRW": "NP-AOF: needs BGREWRITEAOF + DEBUG LOADAOF",
    "Empty stream with no lastid can be rewrite into AOF correctly": "NP-AOF: needs BGREWRITEAOF + DEBUG LOADAOF",
    "Consumer group last ID propagation to slave (NOACK=$noack)": "NP-REPL: needs a master/replica pair",
    "Replication tests of XCLAIM with deleted entries (autoclaim=$autoclaim)": "NP-REPL: needs a master/replica pair",
    "XREADGROUP ACK would propagate entries-read": "NP-REPL: needs a master/replica pair",
    "XREADGROUP from PEL inside MULTI": "NP-REPL: needs a master/replica pair",
}


@pytest.mark.parametrize("name", sorted(NOT_PORTABLE))
def test_not_portable(name):
    """Tcl tests of stream-cgroups.tcl that cannot run against an in-memory fake (reason in the skip message)."""
    pytest.skip(f"{name!r}: {NOT_PORTABLE[name]}")
