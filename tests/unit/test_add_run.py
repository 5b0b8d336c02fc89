"""``Stream.add_next_run`` (a pipeline's run of ``XADD key * …``) against ``Stream.add_next`` one entry at a time:
the same IDs, entries, node layout (``Node.add_entries`` filling a node in one call), counters and failures."""

from __future__ import annotations

import random

import pytest

from fake_streams import stream as stream_module
from fake_streams.ids import U64_MAX, StreamID
from fake_streams.stream import Stream

from .test_stream_model import S, add


def _state(stream: Stream):
    return (stream.node_layout(), stream.range(S(0), StreamID(U64_MAX, U64_MAX)), stream.last_id, stream.first_id,
            stream.entries_added, stream.radix_tree_nodes, len(stream))


def _random_fields(rnd: random.Random):
    names = rnd.choice([[b"f"], [b"f"], [b"f", b"g"], [b"g"], [b"x" * 70]])
    values = [rnd.choice([b"", b"v", b"12", b"-7", b"0x", b"y" * 64, b"z" * 5000, b"%d" % rnd.randrange(10**12)])
              for _ in names]
    return [item for pair in zip(names, values) for item in pair]


@pytest.mark.parametrize("seed", range(8))
def test_a_run_equals_appends_one_by_one(seed):
    rnd = random.Random(seed)
    config = rnd.choice([{}, {"node_max_entries": 3}, {"node_max_bytes": 120}, {"node_max_entries": 0,
                                                                                "node_max_bytes": 0}])
    one, run = Stream(**config), Stream(**config)
    now = 1000
    for _ in range(40):
        batch = [_random_fields(rnd) for _ in range(rnd.choice([1, 2, 16, 50]))]
        nows = []
        for _ in batch:
            now += rnd.choice([0, 0, 0, 1, 200])  # the same ms, the next, a ms-delta past 127
            nows.append(now if rnd.random() > 0.05 else now - 500)  # a clock behind last_id
        expected = [one.add_next(list(fields), t) for fields, t in zip(batch, nows)]
        assert run.add_next_run([list(fields) for fields in batch], nows) == (expected, None)
        assert _state(run) == _state(one)
    one._check()
    run._check()


def test_a_run_stops_at_an_exhausted_id_space():
    stream = Stream()
    add(stream, StreamID(U64_MAX, U64_MAX - 2), b"f", b"v")
    ids, failure = stream.add_next_run([[b"f", b"1"], [b"f", b"2"], [b"f", b"3"]], [5, 5, 5])
    assert ids == [b"%d-%d" % (U64_MAX, U64_MAX - 1), b"%d-%d" % (U64_MAX, U64_MAX)]
    assert failure is not None and failure.key == "XADD_ID_EXHAUSTED"
    assert len(stream) == 3 and stream.entries_added == 3 and stream.last_id == StreamID(U64_MAX, U64_MAX)


def test_a_run_stops_before_a_too_large_entry(monkeypatch):
    monkeypatch.setattr(stream_module, "LISTPACK_MAX_SIZE", 10)
    stream, one = Stream(), Stream()
    ids, failure = stream.add_next_run([[b"f", b"1"], [b"f", b"v" * 10], [b"f", b"3"]], [7, 7, 7])
    assert ids == [b"7-0"] and failure is not None and failure.key == "ELEMENTS_TOO_LARGE"
    one.add_next([b"f", b"1"], 7)
    assert _state(stream) == _state(one)


def test_a_run_below_a_tombstone_only_tail_node():
    """After XSETID moved last_id below the last node's master (test_append_below_a_tombstone_only_tail_node)."""
    streams = []
    for _ in range(2):
        stream = Stream(node_max_entries=2)
        for ms in (1, 2, 3):
            add(stream, S(ms), b"f", b"v")
        stream.delete(S(3))
        stream.last_id = S(2)
        streams.append(stream)
    one, run = streams
    expected = [one.add_next([b"f", b"%d" % i], 2) for i in range(4)]
    assert run.add_next_run([[b"f", b"%d" % i] for i in range(4)], [2] * 4) == (expected, None)
    assert _state(run) == _state(one)
