"""Between the engine's :class:`~fake_streams.stream.Stream` (with its groups) and :class:`~.values.StreamData`.

:func:`stream_data` reads a stream as DUMP writes it: its nodes exactly as the node model has them
(boundaries, master fields, live entries and the tombstones the nodes keep), counters, groups, PELs,
consumers, the NACK zone (Redis 8.8) in NACK order, the IDMP state (Redis 8.6; written under
RDB_TYPE_STREAM_LISTPACKS_4 and later). :func:`build_stream` makes the stream a RESTORE loads: the same nodes (so
later ``~`` trims, XINFO ``radix-tree-keys`` and the next DUMP follow the payload), counters, groups with their
PELs shared between group and consumer as the engine keeps them, and the payload's IDMP state (a payload without
one keeps what ``new_stream`` gave: the CONFIG defaults on 8.6+). Both O(entries + PEL rows + tracked iids).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Dict, List, Optional, Tuple

from ..groups import INVALID_ENTRIES_READ, Consumer, ConsumerGroup, PendingEntry, create_group, estimate_distance
from ..idmp import IdmpState
from ..ids import StreamID, id_of, key_of, make_id
from ..stream import Stream
from .values import ConsumerData, EntryData, GroupData, IdmpData, NodeData, PendingData, StreamData


def _pair(sid: Tuple[int, int]) -> Tuple[int, int]:
    return (sid[0], sid[1])


def stream_data(stream: Stream) -> StreamData:
    """The :class:`StreamData` DUMP writes for ``stream``. O(entries + PEL rows)."""
    nodes: List[NodeData] = []
    for node, rows in stream.node_contents():
        entries = [EntryData(_pair(id_of(k)), list(fields), deleted) for k, fields, deleted in rows]
        nodes.append(NodeData(_pair(node.master), list(node.master_fields), entries))
    groups: List[GroupData] = []
    for name, group in stream.groups.items():
        pending = [PendingData(_pair(sid), nack.delivery_time, nack.delivery_count,
                               None if nack.consumer.nacked else nack.consumer.name)
                   for sid, nack in group.pel.items()]
        consumers = [ConsumerData(c.name, c.seen_time, c.active_time) for c in group.consumers.values()]
        nacked = [_pair(id_of(k)) for k, _ in group.nack_zone.fifo()]
        groups.append(GroupData(name, _pair(group.last_id), group.entries_read, pending, consumers, nacked))
    return StreamData(nodes, len(stream), _pair(stream.last_id), _pair(stream.first_id),
                      _pair(stream.max_deleted_entry_id), stream.entries_added, groups, idmp=_idmp_data(stream.idmp))


def _idmp_data(state: Optional[IdmpState]) -> Optional[IdmpData]:
    """The IDMP state as DUMP writes it (what is still tracked: the caller expired it). O(tracked iids)."""
    if state is None:
        return None
    producers = []
    for pid in sorted(state.producers):
        iids = [(iid, _pair(_wire_id(enc))) for iid, (enc, _) in state.producers[pid].items()]
        producers.append((pid, iids))
    return IdmpData(state.duration_s, state.maxsize, producers, state.iids_added, state.iids_duplicates)


def _wire_id(enc: bytes) -> StreamID:
    ms, seq = enc.split(b"-", 1)
    return make_id(int(ms), int(seq))


def _idmp_state(data: IdmpData) -> IdmpState:
    state = IdmpState(data.duration, data.maxsize)
    for pid, iids in data.producers:
        if iids:
            state.producers[pid] = OrderedDict((iid, (b"%d-%d" % sid, sid[0])) for iid, sid in iids)
    state.iids_added = data.iids_added
    state.iids_duplicates = data.iids_duplicates
    return state


def build_stream(data: StreamData, new_stream: Callable[[], Stream]) -> Stream:
    """The stream of a decoded payload (``new_stream()`` makes the empty value, bound to the server's CONFIG)."""
    stream = new_stream()
    for node in data.nodes:
        stream.load_node([(make_id(*e.id), e.fields, e.deleted) for e in node.entries])
    stream.last_id = make_id(*data.last_id)
    stream.first_id = make_id(*data.first_id)
    stream.max_deleted_entry_id = make_id(*data.max_deleted_entry_id)
    stream.entries_added = data.entries_added
    if data.idmp is not None:
        stream.idmp = _idmp_state(data.idmp)
    for g in data.groups:
        last_id = make_id(*g.last_id)
        entries_read = g.entries_read if data.has_counters else estimate_distance(stream, last_id)
        group = create_group(stream, g.name, last_id, entries_read if entries_read >= -1 else INVALID_ENTRIES_READ)
        assert group is not None  # names are distinct (checked by the decoder)
        _fill_group(group, g)
    return stream


def _fill_group(group: ConsumerGroup, g: GroupData) -> None:
    consumers: Dict[bytes, Consumer] = {}
    for c in g.consumers:
        consumer = group.create_consumer(c.name, c.seen_time)
        consumer.active_time = c.active_time
        consumers[c.name] = consumer
    nacked: Dict[int, PendingEntry] = {}
    for row in g.pending:  # ascending IDs: appends to both PELs
        k = key_of(row.id)
        owner = group.nacked if row.consumer is None else consumers[row.consumer]
        nack = PendingEntry(row.delivery_time, row.delivery_count, owner, b"%d-%d" % row.id)
        group.pel.append_k(k, nack)
        if row.consumer is None:
            nacked[k] = nack  # into the NACK zone below, in NACK order
        else:
            owner.pel.append_k(k, nack)
    for sid in g.nacked:
        k = key_of(sid)
        group.nack_zone.set_k(k, nacked[k])
