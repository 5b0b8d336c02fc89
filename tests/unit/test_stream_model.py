"""The Stream model and its node layout (spec §1.4, §2.2 streamTrim, §5.1 listpack sizes, §5.3 rax count).

``_check()`` runs after every mutation. Expected node numbers come from the Redis test suite (spec §2.2,
§7) or from the server (byte sizes read back from DUMP payloads of Redis 7.0.15 / Valkey 9.1.2).
"""

from __future__ import annotations

import random

import pytest

from fake_streams.ids import MAX_ID, MIN_ID, U64_MAX, StreamID
from fake_streams.ids import key_of as rax_key  # a master ID's rax key is its 128-bit key
from fake_streams.nodes import (
    LISTPACK_MAX_SIZE,
    Node,
    backlen_size,
    delta,
    int_size,
    rax_node_count,
    str_size,
)
from fake_streams.stream import Stream


def S(ms: int, seq: int = 0) -> StreamID:
    return StreamID(ms, seq)


def add(stream: Stream, sid: StreamID, *fields: bytes) -> None:
    stream.append(sid, list(fields) or [b"a", b"1"])
    stream._check()


def filled(n: int, **config) -> Stream:
    stream = Stream(**config)
    for i in range(1, n + 1):
        add(stream, S(i))
    return stream


# --------------------------------------------------------------------------- listpack sizes


@pytest.mark.parametrize(
    "value, size",
    [(0, 2), (127, 2), (128, 3), (-1, 3), (4095, 3), (-4096, 3), (4096, 4), (-4097, 4), (32767, 4),
     (32768, 5), (8388607, 5), (8388608, 6), (2**31 - 1, 6), (-(2**31), 6), (2**31, 10), (-(2**63), 10)],
)
def test_int_element_sizes(value, size):
    assert int_size(value) == size


@pytest.mark.parametrize(
    "raw, size",
    [
        (b"1", 2),  # integer-encoded
        (b"-1", 3),
        (b"9223372036854775807", 10),
        (b"9223372036854775808", 1 + 19 + 1),  # not int64: a string
        (b"007", 1 + 3 + 1),
        (b"-0", 1 + 2 + 1),
        (b"+5", 1 + 2 + 1),
        (b"", 2),
        (b"a", 3),
        (b"x" * 63, 1 + 63 + 1),
        (b"x" * 64, 2 + 64 + 1),
        (b"x" * 125, 2 + 125 + 1),
        (b"x" * 126, 2 + 126 + 2),  # encoding 128 bytes → 2-byte backlen
        (b"x" * 4095, 2 + 4095 + 2),
        (b"x" * 4096, 5 + 4096 + 2),
    ],
)
def test_string_element_sizes(raw, size):
    assert str_size(raw) == size


def test_backlen_sizes():
    assert [backlen_size(n) for n in (1, 127, 128, 16382, 16383, 2097150, 2097151, 268435454, 268435455)] == [
        1, 1, 2, 2, 3, 3, 4, 4, 5]


def test_delta_is_int64_of_the_wrapped_difference():
    assert delta(5, 3) == 2
    assert delta(3, 5) == -2
    assert delta(U64_MAX, 0) == -1
    assert delta(2**63, 0) == -(2**63)


def test_node_bytes_match_the_server():
    # DUMP of `XADD s 1-0 a 1; XADD s 2-0 a hello` shows one 43-byte listpack (Redis 7.0.15, Valkey 9.1.2)
    node = Node(S(1), [b"a", b"1"])
    assert (node.count, node.deleted, node.lp_bytes) == (1, 0, 28)
    node.add_entry(S(2), [b"a", b"hello"])
    assert (node.count, node.deleted, node.lp_bytes, node.last_id) == (2, 0, 43, S(2))
    node.mark_deleted()
    assert (node.count, node.deleted, node.lp_bytes) == (1, 1, 43)
    # server: tombstoned node of `XADD t 1-0 a 1; XADD t 2-0 a 1; XDEL t 2-0; XTRIM t MINID 2-0` is 38 bytes
    other = Node(S(1), [b"a", b"1"])
    other.add_entry(S(2), [b"a", b"1"])
    other.mark_deleted(2)
    assert (other.count, other.deleted, other.lp_bytes) == (0, 2, 38)


def test_node_full_rules():
    node = Node(S(1), [b"a", b"1"])
    assert not node.is_full(2, 4096, 100)
    assert node.is_full(4096 - node.lp_bytes, 4096, 100)  # lp_bytes + payload >= max
    assert not node.is_full(4095 - node.lp_bytes, 4096, 100)
    assert node.is_full(0, 4096, 1)  # count + deleted >= max entries
    assert not node.is_full(0, 4096, 0)  # 0 = no entry limit
    assert not node.is_full(10**6, 0, 0)  # 0 bytes = 1 GiB
    assert node.is_full(LISTPACK_MAX_SIZE, 0, 0)
    node.mark_deleted()
    assert node.is_full(0, 4096, 1)  # tombstones count too


def test_samefields_compression():
    same = Node(S(1), [b"name", b"x", b"age", b"1"])
    before = same.lp_bytes
    same.add_entry(S(2), [b"name", b"y", b"age", b"2"])
    same_cost = same.lp_bytes - before
    other = Node(S(1), [b"name", b"x", b"age", b"1"])
    other.add_entry(S(2), [b"age", b"2", b"name", b"y"])  # same names, other order: not SAMEFIELDS
    assert other.lp_bytes - before == same_cost + int_size(2) + str_size(b"name") + str_size(b"age") \
        + int_size(8) - int_size(5)


# --------------------------------------------------------------------------- rax node count


def test_rax_examples_from_the_spec():
    assert rax_node_count([]) == 1
    assert rax_node_count([rax_key(S(1))]) == 2
    assert rax_node_count([rax_key(S(i)) for i in range(1, 6)]) == 12


def rax_node_count_reference(keys):
    """rax_node_count straight from the definition (a trie of byte prefixes): O(16·n)."""
    raw = [k.to_bytes(16, "big") for k in keys]
    children = {}
    for key in raw:
        for depth in range(16):
            children.setdefault(key[:depth], set()).add(key[depth])
    prefixes = {key[:depth] for key in raw for depth in range(1, 17)}
    count = 1
    for p in prefixes:
        outdeg = len(children.get(p, ()))
        if len(children[p[:-1]]) >= 2 or outdeg != 1:
            count += 1
    return count


@pytest.mark.parametrize("seed", range(300))
def test_rax_count_matches_the_definition(seed):
    rnd = random.Random(seed)
    keys = set()
    mode = seed % 4
    while len(keys) < rnd.randint(0, 40):
        if mode == 0:
            keys.add(rax_key(S(rnd.randint(0, 30), rnd.randint(0, 3))))
        elif mode == 1:
            keys.add(rax_key(S(rnd.getrandbits(64), rnd.getrandbits(64))))
        elif mode == 2:
            keys.add(rax_key(S(1_700_000_000_000 + rnd.randint(0, 70_000), rnd.choice([0, 1, 255, 256, 65536]))))
        else:
            keys.add(rnd.getrandbits(128) & rnd.choice([0xFF, 0xFFFF, 0xFF00FF << 60, (1 << 128) - 1]))
    ordered = sorted(keys)
    assert rax_node_count(ordered) == rax_node_count_reference(ordered)


# --------------------------------------------------------------------------- the Stream


def test_new_stream_state():
    stream = Stream()
    stream._check()
    assert (len(stream), stream.last_id, stream.first_id, stream.max_deleted_entry_id, stream.entries_added) == (
        0, MIN_ID, MIN_ID, MIN_ID, 0)
    assert (stream.radix_tree_keys, stream.radix_tree_nodes) == (0, 1)
    assert bool(stream) is True  # an empty stream is still a value
    assert (stream.stream_node_max_entries, stream.stream_node_max_bytes) == (100, 4096)


def test_append_read_api():
    stream = Stream()
    add(stream, S(1), b"a", b"1")
    add(stream, S(2), b"b", b"2", b"b", b"3")
    assert stream.get(S(2)) == [b"b", b"2", b"b", b"3"]
    assert S(1) in stream and S(3) not in stream
    assert stream.range(MIN_ID, MAX_ID) == [(S(1), [b"a", b"1"]), (S(2), [b"b", b"2", b"b", b"3"])]
    assert stream.range(MIN_ID, MAX_ID, count=1, rev=True) == [(S(2), [b"b", b"2", b"b", b"3"])]
    assert stream.range(S(2), S(1)) == []
    assert stream.slice_after(rax_key(S(1))) == ([rax_key(S(2))], [b"2-0"], [(b"b", b"2", b"b", b"3")])
    assert stream.first_entry()[0] == S(1) and stream.last_entry()[0] == S(2)
    assert stream.last_valid_id() == S(2)
    assert (stream.first_id, stream.last_id, stream.entries_added) == (S(1), S(2), 2)


def test_nodes_split_by_entries_and_bytes():
    stream = filled(250)
    assert stream.radix_tree_keys == 3
    assert [n[1] for n in stream.node_layout()] == [100, 100, 50]
    small = filled(10, node_max_entries=0, node_max_bytes=60)
    assert small.radix_tree_keys > 1
    one_each = filled(5, node_max_entries=1)
    assert (one_each.radix_tree_keys, one_each.radix_tree_nodes) == (5, 12)


def test_config_change_applies_to_later_appends():
    stream = filled(3)
    stream.stream_node_max_entries = 2
    add(stream, S(4))
    assert [n[1] for n in stream.node_layout()] == [3, 1]


def test_delete_makes_tombstones_and_frees_empty_nodes():
    stream = filled(4, node_max_entries=2)
    assert stream.delete(S(1)) is True
    stream._check()
    assert stream.node_layout()[0][:3] == (S(1), 1, 1)
    assert (stream.first_id, stream.max_deleted_entry_id) == (S(2), S(1))
    assert stream.delete(S(1)) is False
    assert stream.delete(S(2)) is True  # last live entry of the node: node freed
    stream._check()
    assert stream.radix_tree_keys == 1 and stream.first_id == S(3)
    assert stream.delete(S(4)) is True
    assert stream.delete(S(3)) is True
    stream._check()
    assert (len(stream), stream.first_id, stream.max_deleted_entry_id, stream.radix_tree_keys) == (0, MIN_ID, S(4), 0)
    assert stream.last_id == S(4) and stream.entries_added == 4


def test_delete_lower_id_keeps_max_deleted():
    stream = filled(3)
    stream.delete(S(3))
    stream.delete(S(1))
    stream._check()
    assert stream.max_deleted_entry_id == S(3)


# --------------------------------------------------------------------------- streamTrim (spec §2.2 examples)


def test_trim_maxlen_approx_removes_whole_nodes_only():
    stream = Stream()  # "XTRIM with MAXLEN option basic test"
    rnd = random.Random(1)
    for j in range(1000):
        add(stream, S(j + 1), b"xitem" if rnd.random() < 0.9 else b"yitem", b"%d" % j)
    stream.trim(maxlen=666)
    stream._check()
    assert len(stream) == 666
    stream.trim(maxlen=555)
    assert len(stream) == 555
    stream.trim(maxlen=444, approx=True)
    assert len(stream) == 500
    stream.trim(maxlen=400, approx=True)
    assert len(stream) == 400
    stream._check()


def test_trim_approx_default_limit():
    stream = filled(102, node_max_entries=1)  # "XTRIM with ~ is limited"
    assert stream.default_trim_limit() == 100
    assert stream.trim(maxlen=1, approx=True) == 100
    stream._check()
    assert len(stream) == 2
    exact = filled(102, node_max_entries=1)  # "XTRIM without ~ is not limited"
    assert exact.trim(maxlen=1) == 101
    assert len(exact) == 1


def test_trim_limit_counts_whole_nodes():
    stream = filled(3, node_max_entries=2)  # "XTRIM with LIMIT delete entries no more than limit"
    assert stream.trim(maxlen=0, approx=True, limit=1) == 0
    assert stream.trim(maxlen=0, approx=True, limit=2) == 2
    stream._check()
    consecutive = filled(101, node_max_entries=10)  # "XADD with LIMIT consecutive calls"
    consecutive.trim(maxlen=55, approx=True, limit=30)
    assert len(consecutive) == 71
    add(consecutive, S(102))
    consecutive.trim(maxlen=55, approx=True, limit=30)
    assert len(consecutive) == 62
    consecutive._check()


def test_trim_limit_zero_means_unlimited():
    stream = filled(102, node_max_entries=1)
    assert stream.trim(maxlen=1, approx=True, limit=0) == 101


def test_default_limit_bounds():
    stream = Stream()
    stream.stream_node_max_entries = 0
    assert stream.default_trim_limit() == 10000
    stream.stream_node_max_entries = 20000
    assert stream.default_trim_limit() == 1000000


def test_trim_exact_marks_inside_one_node():
    stream = filled(250)
    assert stream.trim(maxlen=180) == 70
    stream._check()
    assert stream.node_layout()[0][:3] == (S(1), 30, 70)
    assert (stream.first_id, len(stream), stream.max_deleted_entry_id) == (S(71), 180, MIN_ID)


def test_trim_minid():
    stream = filled(250)
    assert stream.trim(minid=S(150), approx=True) == 100  # node 1..100 goes, 101..200 stays
    assert stream.trim(minid=S(150)) == 49
    stream._check()
    assert stream.first_id == S(150)
    assert stream.trim(minid=S(150)) == 0


def test_minid_uses_the_last_written_id_even_if_deleted():
    stream = filled(3)
    stream.delete(S(3))
    # node last ID 3-0 (a tombstone) >= minid 3-0: not removed whole; exact trimming empties it
    assert stream.trim(minid=S(3)) == 2
    stream._check()
    assert (len(stream), stream.radix_tree_keys, stream.node_layout()[0][1:3]) == (0, 1, (0, 3))
    add(stream, S(4))  # appended into the tombstone-only node
    assert stream.node_layout()[0][1:3] == (1, 3)
    assert stream.trim(maxlen=0) == 1
    assert stream.radix_tree_keys == 0


def test_empty_tombstone_node_is_removed_by_maxlen():
    stream = Stream()
    add(stream, S(1))
    add(stream, S(2))
    stream.delete(S(2))
    stream.trim(minid=S(2))  # node: 0 live, 2 tombstones
    assert stream.trim(maxlen=0, approx=True) == 0
    stream._check()
    assert stream.radix_tree_keys == 1  # length 0 <= maxlen: nothing to do


def test_trim_to_zero_keeps_counters():
    stream = filled(10)
    stream.delete(S(5))
    assert stream.trim(maxlen=0) == 9
    stream._check()
    assert (len(stream), stream.first_id, stream.last_id, stream.max_deleted_entry_id, stream.entries_added) == (
        0, MIN_ID, S(10), S(5), 10)


def test_trim_needs_one_strategy():
    with pytest.raises(ValueError):
        Stream().trim()
    with pytest.raises(ValueError):
        Stream().trim(maxlen=1, minid=S(1))


def test_append_below_a_tombstone_only_tail_node():
    # XSETID may move last_id below such a node's master (R7.0, or 7.2+ via MAXDELETEDID); the server
    # then appends into that node: (1-0, count 1, deleted 2, last 1-6) on Redis 7.0.15.
    stream = Stream()
    add(stream, S(1))
    add(stream, S(2))
    stream.delete(S(2))
    stream.trim(minid=S(2))
    stream.last_id = S(1, 5)
    add(stream, S(1, 6))
    assert stream.node_layout() == [(S(1), 1, 2, 48, S(1, 6))]


@pytest.mark.parametrize("seed", range(20))
def test_random_operations_keep_invariants(seed):
    rnd = random.Random(seed)
    stream = Stream(node_max_entries=rnd.choice([0, 1, 3, 10, 100]), node_max_bytes=rnd.choice([0, 60, 300, 4096]))
    ms = 1
    for _ in range(400):
        r = rnd.random()
        if r < 0.6:
            ms += rnd.choice([0, 1, 1, 200])
            sid = S(ms, rnd.randint(0, 5)) if S(ms, 5) > stream.last_id else stream.last_id.incr()
            if sid > stream.last_id:
                stream.append(sid, [b"f", b"%d" % rnd.randint(0, 300)] * rnd.randint(1, 3))
        elif r < 0.8 and len(stream):
            stream.delete(stream._entries.keys()[rnd.randrange(len(stream))])
        elif r < 0.9:
            stream.trim(maxlen=max(0, len(stream) - rnd.randint(0, 20)), approx=rnd.random() < 0.5)
        elif len(stream):
            stream.trim(minid=stream._entries.keys()[rnd.randrange(len(stream))], approx=rnd.random() < 0.5,
                        limit=rnd.choice([None, 0, 5, 50]) if rnd.random() < 0.5 else None)
        stream._check()
