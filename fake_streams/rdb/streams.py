"""The stream type (rdb.c ``OBJ_STREAM``; listpack node layout of t_stream.c), both directions.

Body: ``<#nodes>`` then per node ``<16-byte big-endian master ID> <node listpack>`` (both as RDB
strings, so a listpack over 20 bytes is LZF-compressed under ``rdbcompression``); ``<length>
<last_id.ms> <last_id.seq>``; since RDB_TYPE_STREAM_LISTPACKS_2 ``<first_id> <max_deleted_entry_id>
<entries_added>``; ``<#groups>`` and per group (name order) ``<name> <last_id>`` [``<entries_read>``]
``<#pel>`` (``<16-byte id> <delivery ms: i64 LE> <count>``)* ``<#consumers>`` and per consumer (name
order) ``<name> <seen ms>`` [``<active ms>`` since _3] ``<#pel>`` ``<16-byte id>``*; since
RDB_TYPE_STREAM_LISTPACKS_5 (27, Redis 8.8, RDB 14) the group's NACK zone follows its consumers: ``<#nacked>``
``<16-byte id>``* in NACK order, each a row of the group PEL that no consumer lists (the count-and-IDs shape librdb
names for type 27; its place after the consumers is a choice, docs/redis8-choices.md). Since
RDB_TYPE_STREAM_LISTPACKS_4 (26, Redis 8.6, RDB 13; also in 27) the IDMP state follows the groups:
``<IDMP-DURATION s> <IDMP-MAXSIZE> <#producers>`` and per producer (ascending IDs, the rax order) ``<pid> <#iids>``
and per iid, oldest first, ``<iid> <entry id ms> <entry id seq>``; then ``<iids-added> <iids-duplicates>`` (all
lengths / RDB strings; the layout as redis/librdb's RDB-13 parser reads it, checked against the Redis 8.6 file of
its tests).

Node listpack: the master entry ``count deleted #fields field_1..field_N 0``, then per entry ``flags
ms-delta seq-delta`` (deltas from the master ID, int64), ``#fields f1 v1 ...`` or only the values when
the names equal the master's (flag SAMEFIELDS = 2; DELETED = 1), and ``lp-count`` (the entry's element
count before it: N+3 with SAMEFIELDS, 2N+4 without).

The decoder checks what the engine relies on (IDs ascending over the whole stream, node counters, the
stream length, every PEL entry owned by exactly one consumer; IDMP-DURATION / IDMP-MAXSIZE in XCFGSET's ranges,
as the server's "out of range" load errors; no producer or iid twice) and raises PayloadFormatError. O(size).
"""

from __future__ import annotations

from typing import Dict, List, Set, Tuple

from . import listpack
from .errors import PayloadFormatError
from .rdbio import Reader, Writer
from .values import ConsumerData, EntryData, GroupData, IdmpData, NodeData, PendingData, StreamData

TYPE_STREAM_LISTPACKS = 15
TYPE_STREAM_LISTPACKS_2 = 19
TYPE_STREAM_LISTPACKS_3 = 21
TYPE_STREAM_LISTPACKS_4 = 26
TYPE_STREAM_LISTPACKS_5 = 27
#: the ranges of IDMP-DURATION / IDMP-MAXSIZE a payload may carry (XCFGSET's)
IDMP_DURATION_RANGE = (1, 86400)
IDMP_MAXSIZE_RANGE = (1, 10000)
_DEFAULT_IDMP = IdmpData(100, 100, [])
FLAG_DELETED = 1
FLAG_SAMEFIELDS = 2
_U64 = 1 << 64


def _delta(a: int, b: int) -> int:
    d = (a - b) % _U64
    return d - _U64 if d >= 1 << 63 else d


def _id_bytes(sid: Tuple[int, int]) -> bytes:
    return sid[0].to_bytes(8, "big") + sid[1].to_bytes(8, "big")


def node_elements(node: NodeData) -> List[listpack.Element]:
    """The listpack elements of one node, as ``streamAppendItem`` / XDEL / trimming left them."""
    master_fields = list(node.master_fields)
    live = sum(1 for e in node.entries if not e.deleted)
    items: List[listpack.Element] = [live, len(node.entries) - live, len(master_fields), *master_fields, 0]
    mms, mseq = node.master
    for entry in node.entries:
        names = entry.fields[0::2]
        same = names == master_fields
        items.append((FLAG_DELETED if entry.deleted else 0) | (FLAG_SAMEFIELDS if same else 0))
        items.append(_delta(entry.id[0], mms))
        items.append(_delta(entry.id[1], mseq))
        n = len(names)
        if same:
            items.extend(entry.fields[1::2])
            items.append(n + 3)
        else:
            items.append(n)
            items.extend(entry.fields)
            items.append(2 * n + 4)
    return items


def encode(w: Writer, s: StreamData, rdbtype: int) -> None:
    """``rdbSaveObject`` of a stream into ``w`` (``rdbtype`` 19, 21 or 26 decides the optional fields; a stream
    without IDMP state written as 26 carries the defaults)."""
    w.length(len(s.nodes))
    for node in s.nodes:
        w.string(_id_bytes(node.master))
        w.string(listpack.encode(node_elements(node)))
    w.length(s.length)
    w.length(s.last_id[0])
    w.length(s.last_id[1])
    if rdbtype >= TYPE_STREAM_LISTPACKS_2:
        w.length(s.first_id[0])
        w.length(s.first_id[1])
        w.length(s.max_deleted_entry_id[0])
        w.length(s.max_deleted_entry_id[1])
        w.length(s.entries_added)
    w.length(len(s.groups))
    for group in s.groups:
        w.string(group.name)
        w.length(group.last_id[0])
        w.length(group.last_id[1])
        if rdbtype >= TYPE_STREAM_LISTPACKS_2:
            w.length(group.entries_read)
        w.length(len(group.pending))
        owned: Dict[bytes, List[bytes]] = {}
        for row in group.pending:
            raw = _id_bytes(row.id)
            w.raw(raw)
            w.ms_time(row.delivery_time)
            w.length(row.delivery_count)
            if row.consumer is not None:  # None: a NACKed row (type 27 lists it in the NACK zone)
                owned.setdefault(row.consumer, []).append(raw)
        w.length(len(group.consumers))
        for consumer in group.consumers:
            w.string(consumer.name)
            w.ms_time(consumer.seen_time)
            if rdbtype >= TYPE_STREAM_LISTPACKS_3:
                w.ms_time(consumer.active_time)
            ids = owned.get(consumer.name, [])
            w.length(len(ids))
            for raw in ids:
                w.raw(raw)
        if rdbtype >= TYPE_STREAM_LISTPACKS_5:
            w.length(len(group.nacked))
            for sid in group.nacked:
                w.raw(_id_bytes(sid))
    if rdbtype >= TYPE_STREAM_LISTPACKS_4:
        _encode_idmp(w, s.idmp or _DEFAULT_IDMP)


def _encode_idmp(w: Writer, idmp: IdmpData) -> None:
    w.length(idmp.duration)
    w.length(idmp.maxsize)
    w.length(len(idmp.producers))
    for pid, iids in idmp.producers:
        w.string(pid)
        w.length(len(iids))
        for iid, (ms, seq) in iids:
            w.string(iid)
            w.length(ms)
            w.length(seq)
    w.length(idmp.iids_added)
    w.length(idmp.iids_duplicates)


def _decode_idmp(r: Reader) -> IdmpData:
    duration = r.length()
    if not IDMP_DURATION_RANGE[0] <= duration <= IDMP_DURATION_RANGE[1]:
        raise PayloadFormatError("stream IDMP duration out of range")
    maxsize = r.length()
    if not IDMP_MAXSIZE_RANGE[0] <= maxsize <= IDMP_MAXSIZE_RANGE[1]:
        raise PayloadFormatError("stream IDMP max entries out of range")
    producers: List[Tuple[bytes, List[Tuple[bytes, Tuple[int, int]]]]] = []
    pids: Set[bytes] = set()
    for _ in range(r.length()):
        pid = _unique_name(r, pids, "IDMP producer")
        iids: List[Tuple[bytes, Tuple[int, int]]] = []
        seen: Set[bytes] = set()
        for _ in range(r.length()):
            iids.append((_unique_name(r, seen, "IDMP iid"), _sid(r)))
        producers.append((pid, iids))
    producers.sort(key=lambda p: p[0])
    return IdmpData(duration, maxsize, producers, r.length(), r.length())


def _int(item: listpack.Element) -> int:
    if not isinstance(item, int):
        raise PayloadFormatError("stream listpack: integer expected")
    return item


def decode_node(master: Tuple[int, int], blob: bytes) -> NodeData:
    """One node's listpack (``streamValidateListpackIntegrity``, deep)."""
    items = listpack.decode(blob)
    if not items:
        raise PayloadFormatError("empty listpack inside stream")
    try:
        live, dead, nfields = _int(items[0]), _int(items[1]), _int(items[2])
        if nfields < 0 or live < 0 or dead < 0:
            raise PayloadFormatError("stream master entry")
        pos = 3 + nfields
        master_fields = [listpack.as_bytes(x) for x in items[3:pos]]
        if len(master_fields) != nfields or _int(items[pos]) != 0:
            raise PayloadFormatError("stream master entry")
        pos += 1
        template: List[bytes] = [b""] * (2 * nfields)
        template[0::2] = master_fields
        entries: List[EntryData] = []
        mms, mseq = master
        seen_live = 0
        while pos < len(items):
            flags = _int(items[pos])
            ms = (mms + _int(items[pos + 1])) % _U64
            seq = (mseq + _int(items[pos + 2])) % _U64
            pos += 3
            if flags & FLAG_SAMEFIELDS:
                values = items[pos:pos + nfields]
                if len(values) != nfields:
                    raise PayloadFormatError("stream entry")
                fields: List[bytes] = template[:]
                fields[1::2] = [b"%d" % v if isinstance(v, int) else v for v in values]  # listpack.as_bytes
                pos += nfields
                expected = nfields + 3
            else:
                n = _int(items[pos])
                if n < 0:
                    raise PayloadFormatError("stream entry")
                raw = items[pos + 1:pos + 1 + 2 * n]
                if len(raw) != 2 * n:
                    raise PayloadFormatError("stream entry")
                fields = [listpack.as_bytes(x) for x in raw]
                pos += 1 + 2 * n
                expected = 2 * n + 4
            if flags & ~(FLAG_DELETED | FLAG_SAMEFIELDS) or _int(items[pos]) != expected:
                raise PayloadFormatError("stream entry flags or lp-count")
            pos += 1
            deleted = bool(flags & FLAG_DELETED)
            seen_live += not deleted
            if entries and (ms, seq) <= entries[-1].id:
                raise PayloadFormatError("stream entries out of order")
            entries.append(EntryData((ms, seq), fields, deleted))
    except IndexError:
        raise PayloadFormatError("stream listpack truncated") from None
    if not entries or seen_live != live or len(entries) - live != dead:
        raise PayloadFormatError("stream node counters")
    if entries[0].id != master or entries[0].fields[0::2] != master_fields:
        # the server opens a node with its first entry: that entry's ID is the master ID and its field names
        # are the master fields (streamAppendItem); the node model relies on it
        raise PayloadFormatError("stream node whose first entry is not its master entry")
    return NodeData(master, master_fields, entries)


def _sid(r: Reader) -> Tuple[int, int]:
    return r.length(), r.length()


def _raw_id(r: Reader) -> Tuple[int, int]:
    raw = r.raw(16)
    return int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")


def decode(r: Reader, rdbtype: int) -> StreamData:
    """``rdbLoadObject`` of a stream, checked (see the module docstring)."""
    count = r.length()
    nodes: List[NodeData] = []
    masters: Set[Tuple[int, int]] = set()
    for _ in range(count):
        key = r.string()
        if len(key) != 16:
            raise PayloadFormatError("stream node key is not the size of a stream ID")
        master = (int.from_bytes(key[:8], "big"), int.from_bytes(key[8:], "big"))
        if master in masters:
            raise PayloadFormatError("listpack re-added with existing key")
        masters.add(master)
        nodes.append(decode_node(master, r.string()))
    nodes.sort(key=lambda n: n.master)
    last = None
    for node in nodes:
        if last is not None and node.entries[0].id <= last:
            raise PayloadFormatError("stream nodes overlap")
        last = node.entries[-1].id
    length = r.length()
    last_id = _sid(r)
    live = sum(1 for n in nodes for e in n.entries if not e.deleted)
    if length != live or (last is not None and last > last_id):
        raise PayloadFormatError("stream length or last ID inconsistent with its entries")
    has_counters = rdbtype >= TYPE_STREAM_LISTPACKS_2
    if has_counters:
        _sid(r)  # recorded-first-entry-id: the first live entry's ID, taken from the entries below
        max_deleted = _sid(r)
        entries_added = r.length()
    else:
        max_deleted, entries_added = (0, 0), length
    first_id = next((e.id for n in nodes for e in n.entries if not e.deleted), (0, 0))
    groups: List[GroupData] = []
    names: Set[bytes] = set()
    for _ in range(r.length()):
        groups.append(_decode_group(r, rdbtype, _unique_name(r, names, "consumer group")))
    groups.sort(key=lambda g: g.name)
    idmp = _decode_idmp(r) if rdbtype >= TYPE_STREAM_LISTPACKS_4 else None
    return StreamData(nodes, length, last_id, first_id, max_deleted, entries_added, groups, has_counters, idmp)



def _unique_name(r: Reader, seen: Set[bytes], what: str) -> bytes:
    """A group / consumer name, refused when it repeats one in ``seen`` (which it joins)."""
    name = r.string()
    if name in seen:
        raise PayloadFormatError(f"duplicated {what} name")
    seen.add(name)
    return name


def _decode_group(r: Reader, rdbtype: int, name: bytes) -> GroupData:
    """One consumer group after its name: last ID, entries_read, the global PEL, the consumers and their PELs."""
    group_last = _sid(r)
    entries_read = r.length() if rdbtype >= TYPE_STREAM_LISTPACKS_2 else -1
    if entries_read >= 1 << 63:
        entries_read -= _U64
    pending: Dict[Tuple[int, int], PendingData] = {}
    for _ in range(r.length()):
        sid = _raw_id(r)
        delivery_time = r.ms_time()
        delivery_count = r.length()
        if sid in pending:
            raise PayloadFormatError("duplicated global PEL entry")
        pending[sid] = PendingData(sid, delivery_time, delivery_count, None)
    consumers: List[ConsumerData] = []
    consumer_names: Set[bytes] = set()
    for _ in range(r.length()):
        cname = _unique_name(r, consumer_names, "stream consumer")
        seen = r.ms_time()
        active = r.ms_time() if rdbtype >= TYPE_STREAM_LISTPACKS_3 else seen
        for _ in range(r.length()):
            row = pending.get(_raw_id(r))
            if row is None:
                raise PayloadFormatError("consumer entry not found in group global PEL")
            if row.consumer is not None:
                raise PayloadFormatError("duplicated consumer PEL entry")
            row.consumer = cname
        consumers.append(ConsumerData(cname, seen, active))
    nacked: List[Tuple[int, int]] = []
    if rdbtype >= TYPE_STREAM_LISTPACKS_5:
        zone: Set[Tuple[int, int]] = set()
        for _ in range(r.length()):
            sid = _raw_id(r)
            row = pending.get(sid)
            if row is None or row.consumer is not None or sid in zone:
                raise PayloadFormatError("stream NACK zone entry not an owner-less entry of the group PEL")
            zone.add(sid)
            nacked.append(sid)
        if len(zone) != sum(1 for row in pending.values() if row.consumer is None):
            raise PayloadFormatError("stream group PEL entry without consumer")
    elif any(row.consumer is None for row in pending.values()):
        raise PayloadFormatError("stream group PEL entry without consumer")
    consumers.sort(key=lambda c: c.name)
    return GroupData(name, group_last, entries_read, sorted(pending.values(), key=lambda p: p.id), consumers, nacked)
