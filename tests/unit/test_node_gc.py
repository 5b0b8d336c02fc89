"""A stream's macro nodes stay out of the cyclic collector's way (``nodes.Node``'s class doc): once the collector has
looked, a node's ``master`` and a closed node's ``last_id`` are untracked plain tuples, nodes with the same field names
share one names list, so each node is one tracked object; the names table a stream keeps is bounded. Beside it, what the
nodes decide is unchanged: the same layout (masters, counts, sizes, last IDs) whatever way the entries came (one at a
time, in runs, by RESTORE), compared with ``StreamID`` values."""

from __future__ import annotations

import gc

from fake_streams.ids import StreamID
from fake_streams.nodes import NAMES_KEPT
from fake_streams.stream import Stream


def _filled(n: int, names=(b"user", b"action")) -> Stream:
    stream = Stream()
    for i in range(n):
        fields = []
        for name in names:
            fields += [name, b"%d" % i]
        stream.add_next(fields, 1_000 + i // 3)
    return stream


def test_a_node_is_one_tracked_object_once_collected():
    stream = _filled(1_000)
    nodes = list(stream._nodes.values())
    assert len(nodes) == 10
    gc.collect()
    for node in nodes:
        assert type(node.master) is tuple and not gc.is_tracked(node.master)
    for node in nodes[:-1]:  # closed: the tail's last_id is the StreamID the last append gave it
        assert type(node.last_id) is tuple and not gc.is_tracked(node.last_id)
    assert type(nodes[-1].last_id) is StreamID and nodes[-1].last_id == stream.last_id
    assert len({id(node._names) for node in nodes}) == 1  # one shared list
    assert [n.master for n in nodes] == [StreamID(1_000 + i * 100 // 3, i * 100 % 3) for i in range(10)]
    assert [n.last_id for n in nodes[:-1]] == [StreamID(1_000 + (i * 100 + 99) // 3, (i * 100 + 99) % 3)
                                               for i in range(9)]


def test_nodes_of_other_names_get_their_own_list_and_the_table_is_bounded():
    stream = Stream(node_max_entries=1)  # every entry opens a node
    for i in range(NAMES_KEPT + 10):
        stream.add_next([b"f%d" % i, b"v"], 5 + i)
    stream.add_next([b"f0", b"again"], 10_000)
    nodes = list(stream._nodes.values())
    assert len(stream._names) <= NAMES_KEPT
    assert [node._names for node in nodes] == [[b"f%d" % i] for i in range(NAMES_KEPT + 10)] + [[b"f0"]]
    stream._check()


def test_the_layout_is_the_same_one_at_a_time_in_runs_and_restored():
    one = _filled(450)
    run = Stream()
    batch = [[b"user", b"%d" % i, b"action", b"%d" % i] for i in range(450)]
    for start in range(0, 450, 16):
        run.add_next_run(batch[start:start + 16], [1_000 + i // 3 for i in range(start, min(450, start + 16))])
    restored = Stream()
    for _node, rows in one.node_contents():
        restored.load_node([(StreamID(k >> 64, k & (2**64 - 1)), list(fields), dead) for k, fields, dead in rows])
    restored.last_id, restored.first_id, restored.entries_added = one.last_id, one.first_id, one.entries_added
    for stream in (one, run, restored):
        stream._check()
    assert one.node_layout() == run.node_layout()
    assert [row[:4] for row in one.node_layout()] == [row[:4] for row in restored.node_layout()]
