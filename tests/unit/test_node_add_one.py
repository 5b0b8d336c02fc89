"""``Node.add_one`` (an XADD sent alone) against ``Node.add_entries`` with a run of one: the same full verdict, byte
size, counters, last ID, stored tuple (the master's own name objects under SAMEFIELDS) and the same change to the
caller's list, whatever the node's state and limits."""

from __future__ import annotations

import copy
import random

import pytest

from fake_streams.ids import U64_MAX, StreamID
from fake_streams.nodes import LISTPACK_MAX_SIZE, Node


def _fields(rnd: random.Random, master_names):
    names = rnd.choice([list(master_names), list(master_names), [b"fa"], [b"fa", b"ga"], [b"other"], [b"x" * 70]])
    names = [bytes(bytearray(name)) for name in names]  # equal, never the master's objects (none is one byte long)
    values = [rnd.choice([b"", b"v", b"12", b"-7", b"007", b"0x", b"y" * 63, b"y" * 64, b"z" * 5000,
                          b"%d" % rnd.randrange(-10**19, 10**19)]) for _ in names]
    return [item for pair in zip(names, values) for item in pair]


def _state(node: Node):
    return node.count, node.deleted, node.base_bytes, tuple(node.last_id), node.lp_bytes


def _sid(rnd: random.Random, master) -> StreamID:
    ms = rnd.choice([master[0], master[0] + 1, master[0] + 127, master[0] + 128, master[0] + 5000,
                     master[0] + 2**31, U64_MAX])
    seq = rnd.choice([0, 1, 127, 128, 4095, 4096, 2**40, U64_MAX]) if ms != master[0] else \
        master[1] + rnd.choice([1, 127, 128, 4096, 2**40])
    return StreamID(ms, min(seq, U64_MAX))


@pytest.mark.parametrize("seed", range(12))
def test_add_one_equals_a_run_of_one(seed):
    rnd = random.Random(seed)
    for _ in range(300):
        master = (rnd.choice([1, 10**12]), rnd.choice([0, 5]))
        master_names = rnd.choice([[b"fa"], [b"fa", b"ga"], [b"field", b"payload", b"nn"]])
        node = Node(master, [item for name in master_names for item in (name, b"1")], {})
        node.count = rnd.choice([1, 5, 127, 128, 300, 40000])
        node.deleted = rnd.choice([0, 0, 3, 127, 128, 200])
        node.base_bytes += rnd.choice([0, 100, 4000])
        sid = _sid(rnd, master)
        fields = _fields(rnd, master_names)
        payload = sum(map(len, fields))
        max_bytes = rnd.choice([0, -1, 4096, node.lp_bytes + payload + rnd.choice([-3, -1, 0, 1, 2, 40]),
                                LISTPACK_MAX_SIZE + 1])
        max_entries = rnd.choice([0, 100, node.count + node.deleted, node.count + node.deleted + 1])
        run, one = copy.copy(node), copy.copy(node)
        run_fields, one_fields = list(fields), list(fields)
        stored: list = []
        taken = run.add_entries((sid,), (run_fields,), (payload,), 0, max_bytes, max_entries, stored)
        got = one.add_one(sid, one_fields, payload, max_bytes, max_entries)
        assert (got is None) == (taken == 0)
        if got is not None:
            assert got == stored[0]
            assert [a is b for a, b in zip(got, stored[0])] == [True] * len(got)  # the same (master's) objects
        assert one_fields == run_fields and [a is b for a, b in zip(one_fields, run_fields)] == [True] * len(fields)
        assert _state(one) == _state(run)


def test_a_full_node_is_left_as_it_was():
    node = Node((1, 0), [b"f", b"v"], {})
    before = _state(node)
    fields = [b"f", b"value"]
    assert node.add_one(StreamID(2, 0), fields, 6, 10, 0) is None  # max-bytes reached
    assert node.add_one(StreamID(2, 0), fields, 6, 0, 1) is None  # max-entries reached
    assert _state(node) == before and fields == [b"f", b"value"]
