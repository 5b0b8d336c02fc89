"""The stream value (``stream`` in stream.h): entries, macro nodes, counters and consumer groups.

No RESP, no keys, no clock. Two indexes are kept side by side:

* ``_entries`` — an :class:`~fake_streams.entryindex.EntryIndex` of the *live* entries keyed by the 128-bit
  ID (:func:`~fake_streams.ids.key_of`), each with its wire-form ID (encoded once, at XADD) and its field tuple
  (SAMEFIELDS entries share the node master's name objects): append O(1), lookup O(log n) (O(1) when
  walking IDs in order), delete O(log n + L), range O(log n + k) over contiguous chunk slices, with
  replies built without per-entry Python code (:meth:`reply_range`, :meth:`slice_after`);
* ``_nodes`` — an :class:`~fake_streams.idindex.IdMap` of the listpack macro nodes keyed by their master
  ID's 128-bit key (the rax key; :class:`~fake_streams.nodes.Node`: live/deleted counts, byte size,
  master fields, last written ID), reproducing the server's node boundaries (spec §5.1). The live
  entries of a node are exactly the live IDs in ``[node.master, next node's master)``; a node is found
  by bisection, O(log #nodes); the first and last nodes in O(1).

Public API (method names and semantics shared with the XREAD / group / XINFO modules):

* adding: :meth:`append` (caller checked ``sid > last_id``); :meth:`add` (the same with the key and
  wire-form ID precomputed by the caller); :meth:`add_next` (``XADD *``: the next ID, then :meth:`add`);
* reading: :meth:`get`, ``in``, :meth:`range`, :meth:`first_entry`,
  :meth:`last_entry`, :meth:`last_valid_id`, ``len()`` (public values: ``StreamID`` and fresh field
  lists); engine paths by 128-bit key: :meth:`entry_k`, :meth:`reply_range`,
  :meth:`slice_after`, :meth:`last_valid_key`;
* removing: :meth:`delete` (one XDEL ID), :meth:`trim` (``streamTrim``: MAXLEN/MINID, ``~``, LIMIT);
* counters (attributes): ``last_id``, ``first_id``, ``max_deleted_entry_id``, ``entries_added``;
  XSETID assigns ``last_id`` / ``entries_added`` / ``max_deleted_entry_id`` directly;
* node model (additions): ``radix_tree_keys`` (number of nodes, O(1)), ``radix_tree_nodes``
  (rax node count: O(#nodes) when the node set changed since the last call, else O(1)),
  :meth:`node_layout` (debug view), :meth:`default_trim_limit`;
* config (additions): ``stream_node_max_entries`` (default 100) and ``stream_node_max_bytes``
  (default 4096) are read at every append / approximate trim. They are class attributes that an
  instance may override (``Stream(node_max_entries=..)`` or plain assignment); a subclass may turn them
  into properties that read a server-level CONFIG.
* ``groups``: group name (bytes) → group object, iterated in name order (owned by the group modules).

Invariants (checked by :meth:`Stream._check`, O(n)):

* ``len(self)`` is the number of live entries; every live ID is ``<= last_id``;
* ``first_id`` ("recorded-first-entry-id") is the first live ID, or ``0-0`` when empty;
* ``max_deleted_entry_id`` only grows through XDEL (trimming never moves it) or is set by XSETID;
* ``entries_added`` counts every successful XADD (or what XSETID set);
* node counts: the sum of ``node.count`` is ``len(self)``, each node's count equals the live IDs in
  its key range, ``count + deleted >= 1``; the cached rax node count matches a fresh computation.

Known gap: the server appends to its *last* node even when XSETID moved ``last_id`` below that
node's master (only possible over a node left with tombstones only by exact MINID trimming); this
model then appends to the node that owns the ID by order, or opens a new node.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Sequence, Tuple

from sortedcontainers import SortedDict

from .entryindex import EntryIndex, Fields
from .errors import ReplyError
from .idindex import IdMap
from .ids import MIN_ID, U64_MAX, StreamID, id_of, key_of, keys_of, next_id
from .nodes import LISTPACK_MAX_SIZE, Node, node_layout, rax_node_count
from .reply import EntryReply

if TYPE_CHECKING:
    from .groups import ConsumerGroup
    from .idmp import IdmpState

_new_id = tuple.__new__  # StreamID((ms, seq)) without NamedTuple's __new__ (a call per appended entry)

#: a stream entry as the public methods give it: ``(id, [f1, v1, ...])`` (a fresh list)
Entry = Tuple[StreamID, List[bytes]]


class Stream:
    """One stream. ``groups`` maps group name (bytes) → group object, iterated in name order."""

    #: ``stream-node-max-entries``: a node takes at most this many entries (live + tombstones); 0 = no limit.
    stream_node_max_entries: int = 100
    #: ``stream-node-max-bytes``: a node stops growing near this listpack size; 0 = 1 GiB.
    stream_node_max_bytes: int = 4096

    def __init__(self, node_max_entries: Optional[int] = None, node_max_bytes: Optional[int] = None) -> None:
        self._entries = EntryIndex()
        self._nodes: IdMap[Node] = IdMap()
        self._tail: Optional[Node] = None  # the node with the greatest master (the server's last node)
        self._rax_nodes: Optional[int] = 1
        self._names: Dict[Tuple[bytes, ...], List[bytes]] = {}  # the nodes' shared field-name lists (nodes.names_list)
        self.last_id: StreamID = MIN_ID
        self.first_id: StreamID = MIN_ID
        self.max_deleted_entry_id: StreamID = MIN_ID
        self.entries_added: int = 0
        self.groups: SortedDict[bytes, ConsumerGroup] = SortedDict()
        #: Redis 8.6 idempotent-XADD state (:mod:`fake_streams.idmp`), created on first use
        self.idmp: Optional[IdmpState] = None
        if node_max_entries is not None:
            self.stream_node_max_entries = node_max_entries
        if node_max_bytes is not None:
            self.stream_node_max_bytes = node_max_bytes

    def node_limits(self) -> Tuple[int, int]:
        """``(stream-node-max-bytes, stream-node-max-entries)`` in force now (read at every append). O(1)."""
        return self.stream_node_max_bytes, self.stream_node_max_entries

    # fakeredis drops "empty" values on writeback unless truthy: an empty stream still exists.
    def __bool__(self) -> bool:
        return True

    def __len__(self) -> int:
        return len(self._entries)

    # ----------------------------------------------------------------- adding
    def append(self, sid: StreamID, fields: Sequence[bytes]) -> None:
        """Add an entry ``[f1, v1, ...]``; the caller has checked ``sid > last_id``. O(log #nodes + fields)."""
        self.add(sid, key_of(sid), sid.encode(), list(fields))

    def add(self, sid: StreamID, key: int, enc: bytes, fields: List[bytes], payload: int = -1,
            limits: Optional[Tuple[int, int]] = None) -> None:
        """:meth:`append` for the engine: ``key``/``enc`` are ``sid``'s 128-bit key and wire form; ``fields`` is a
        fresh list the stream keeps (as a tuple; names may be swapped for the node's equal master names);
        ``payload`` is the sum of their lengths when the caller knows it; ``limits`` is :meth:`node_limits`
        when the caller read it already (several appends in a row).

        The entry goes to the last node unless that node is full (``stream-node-max-bytes`` /
        ``-entries``: :meth:`Node.add_one` takes nothing), else a new node starts with ``sid`` as its
        master. O(fields) (+ O(log #nodes) when a node is opened, or after XSETID moved ``last_id`` below the
        last node's master).
        """
        node = self._tail
        stored: Optional[Fields] = None
        if node is not None:
            if node.master > sid:  # only after XSETID moved last_id below a tombstone-only tail node
                node = self._nodes.floor_value(key)
            if node is not None and node.master != sid:
                max_bytes, max_entries = limits or self.node_limits()
                stored = node.add_one(sid, fields, sum(map(len, fields)) if payload < 0 else payload, max_bytes,
                                      max_entries)
        if self._entries.append_entry(key, enc, stored if stored is not None else self._open_node(sid, key, fields)) == 1:
            self.first_id = sid
        self.last_id = sid
        self.entries_added += 1

    def _open_node(self, sid: StreamID, key: int, fields: List[bytes]) -> Fields:
        """A new node with entry ``sid`` as its master; returns the stored field tuple. O(log #nodes + fields)."""
        node = Node(sid, fields, self._names)
        self._nodes.set_k(key, node)
        tail = self._tail
        if tail is None or tail.master < sid:
            if tail is not None:
                tail.close()
            self._tail = node
        self._rax_nodes = None
        return tuple(fields)

    def add_next(self, fields: List[bytes], now: int, limits: Optional[Tuple[int, int]] = None) -> bytes:
        """``XADD key * f v …``'s append (``streamAppendItem`` with a new ID): the ID after ``last_id`` at
        ``now`` (``streamNextID``), the entry ``fields`` (a fresh list, kept) added with :meth:`add`; returns
        the ID's wire form. Raises ReplyError with nothing changed (ID space exhausted, entry too large).
        O(fields) (+ O(log #nodes) when a node is opened).
        """
        sid = next_id(self.last_id, now)
        if sid is None:
            raise ReplyError("XADD_ID_EXHAUSTED")
        payload = sum(map(len, fields))
        if payload > LISTPACK_MAX_SIZE:
            raise ReplyError("ELEMENTS_TOO_LARGE")
        enc = b"%d-%d" % sid
        self.add(sid, key_of(sid), enc, fields, payload, limits)
        return enc

    def add_next_run(self, batch: Sequence[List[bytes]], nows: Sequence[int],
                     limits: Optional[Tuple[int, int]] = None) -> Tuple[List[bytes], Optional[ReplyError]]:
        """A run of ``XADD key * f v …`` appends in a row (a pipeline's): entry ``batch[i]`` (a fresh list, kept) gets
        the ID after the previous one at ``nows[i]`` (``streamNextID``). Returns ``(ids, failure)``: the wire forms of
        the IDs of the entries added, in order, and None — or, at the first entry refused (ID space exhausted,
        entry too large), the entries before it added and its ReplyError (nothing of it or after it changed).
        O(fields) per entry (+ O(log #nodes) per node opened); one ID loop, one node call per node filled, one
        extend of the entry index (:meth:`_add_all`); one entry alone is :meth:`add_next`'s (less set-up).
        """
        if len(batch) == 1:
            try:
                return [self.add_next(batch[0], nows[0], limits)], None
            except ReplyError as exc:
                return [], exc
        ms, seq = self.last_id
        sids: List[StreamID] = []
        encs: List[bytes] = []
        payloads: List[int] = []
        failure: Optional[ReplyError] = None
        for fields, now in zip(batch, nows):  # next_id and the wire form inlined (a loop per entry)
            if now > ms:
                ms, seq = now, 0
            elif seq < U64_MAX:
                seq += 1
            elif ms < U64_MAX:
                ms, seq = ms + 1, 0
            else:
                failure = ReplyError("XADD_ID_EXHAUSTED")
                break
            payload = sum(map(len, fields))
            if payload > LISTPACK_MAX_SIZE:
                failure = ReplyError("ELEMENTS_TOO_LARGE")
                break
            sids.append(_new_id(StreamID, (ms, seq)))
            encs.append(b"%d-%d" % (ms, seq))
            payloads.append(payload)
        if sids:
            self._add_all(sids, keys_of(sids), encs, batch, payloads, limits)
        return encs, failure

    def _add_all(self, sids: Sequence[StreamID], keys: Sequence[int], encs: Sequence[bytes],
                 batch: Sequence[List[bytes]], payloads: Sequence[int], limits: Optional[Tuple[int, int]]) -> None:
        """Append entries with ascending IDs ``sids`` (all above ``last_id``; ``keys``/``encs`` their 128-bit keys and
        wire forms, ``payloads`` the sums of their field lengths). Each goes to the last node unless that node is
        full (``stream-node-max-bytes`` / ``-entries``: :meth:`Node.add_entries` stops there), else a new node starts
        with its ID as the master. O(fields) (+ O(log #nodes) per node opened, or after XSETID moved ``last_id``
        below the last node's master)."""
        max_bytes, max_entries = limits or self.node_limits()
        stored: List[Fields] = []
        i, n = 0, len(sids)
        while i < n:
            sid = sids[i]
            node = self._tail
            if node is not None and node.master > sid:  # only after XSETID moved last_id below a tombstone-only tail
                node = self._nodes.floor_value(keys[i])
            if node is not None and node.master != sid:
                taken = node.add_entries(sids, batch, payloads, i, max_bytes, max_entries, stored)
                if taken > i:
                    i = taken
                    continue
            stored.append(self._open_node(sid, keys[i], batch[i]))
            i += 1
        if self._entries.extend_entries(keys, encs, stored) == n:
            self.first_id = sids[0]
        self.last_id = sids[-1]
        self.entries_added += n

    # ---------------------------------------------------------------- reading
    def get(self, sid: StreamID) -> Optional[List[bytes]]:
        """A copy of the fields of the live entry ``sid``, or ``None``. O(log n); O(1) right after a lookup of
        the previous entry."""
        fields = self._entries.get_k(key_of(sid))
        return None if fields is None else list(fields)

    def entry_k(self, key: int) -> Optional[Tuple[bytes, Fields]]:
        """``(encoded id, field tuple)`` of the live entry with 128-bit ``key``, or ``None``. O(log n); O(1) right
        after a lookup of the previous entry."""
        return self._entries.entry_k(key)

    def fields_sorted(self, keys: List[int]) -> List[Optional[Fields]]:
        """The field tuples of the live entries with the ascending 128-bit ``keys`` (``None`` where absent), aligned
        with ``keys``. O(log n + k) (:meth:`EntryIndex.fields_sorted`)."""
        return self._entries.fields_sorted(keys)

    def __contains__(self, sid: object) -> bool:
        return sid in self._entries

    def range(self, start: Tuple[int, int], end: Tuple[int, int], count: int = 0, rev: bool = False) -> List[Entry]:
        """Live entries with ``start <= id <= end``, ascending (or descending if ``rev``), at most ``count`` (0 = all).

        O(log n + k) for k returned.
        """
        if start > end:
            return []
        lo, hi = key_of(start), key_of(end)
        entries = self._entries
        scan = entries.rscan_k(hi, lo) if rev else entries.scan_k(lo, hi)
        out: List[Entry] = []
        for k, fields in scan:
            out.append((id_of(k), list(fields)))
            if count and len(out) >= count:
                break
        return out

    def reply_range(self, lo: int, hi: int, count: int = 0, rev: bool = False) -> List[EntryReply]:
        """XRANGE/XREVRANGE reply entries ``[[id, [f, v, ...]], ...]`` for 128-bit keys ``lo..hi``. O(log n + k)."""
        if lo > hi:
            return []
        if rev:
            return self._entries.reply_range_rev(lo, hi, count)
        return self._entries.reply_range(lo, hi, count)

    def slice_after(self, key: int, count: int = 0) -> Tuple[List[int], List[bytes], List[Fields]]:
        """``(keys, encoded ids, field tuples)`` of the live entries after 128-bit ``key``, at most ``count`` (0 = all).

        O(log n + k).
        """
        return self._entries.slice_after(key, count)

    def first_entry(self) -> Optional[Entry]:
        """The first live entry or ``None``. O(1)."""
        first = self._entries.first_entry()
        return None if first is None else (id_of(first[0]), list(first[2]))

    def last_entry(self) -> Optional[Entry]:
        """The last live entry or ``None``. O(1)."""
        last = self._entries.last_entry()
        return None if last is None else (id_of(last[0]), list(last[2]))

    def last_valid_key(self) -> Optional[int]:
        """The 128-bit key of the last live entry, or ``None`` when empty. O(1)."""
        return self._entries.last_k()

    def last_valid_id(self) -> Optional[StreamID]:
        """``streamLastValidID``: the ID of the last live entry, or ``None`` when empty. O(1)."""
        last = self._entries.last_k()
        return None if last is None else id_of(last)

    def _first_live_id(self) -> StreamID:
        """``first_id`` as it must be after a removal: the first live ID, ``0-0`` when empty. O(1)."""
        first = self._entries.first_k()
        return MIN_ID if first is None else id_of(first)

    # --------------------------------------------------------------- deleting
    def delete(self, sid: StreamID) -> bool:
        """XDEL of one ID: True if a live entry was removed. Raises ``max_deleted_entry_id``. O(log n).

        The entry becomes a tombstone in its node; a node whose last live entry goes is freed.
        """
        key = key_of(sid)
        fields = self._entries.pop_k(key)
        if fields is None:
            return False
        nodes = self._nodes
        node = nodes.floor_value(key)  # the node owning sid: the last one whose master is <= sid
        assert node is not None  # a live entry always has its node
        if node.count == 1:
            nodes.pop_k(key_of(node.master))
            if node is self._tail:
                self._tail = nodes.last_value() if nodes else None
            self._rax_nodes = None
        else:
            node.bury(key, fields)
        if sid > self.max_deleted_entry_id:
            self.max_deleted_entry_id = sid
        if sid == self.first_id or not self._entries:
            self.first_id = self._first_live_id()
        return True

    def default_trim_limit(self) -> int:
        """The LIMIT of a ``~`` trim given without LIMIT: ``100 * stream-node-max-entries``, 0 → 10000, capped at 1e6."""
        limit = 100 * self.node_limits()[1]
        if limit <= 0:
            limit = 10000
        return min(limit, 1000000)

    def trim(
        self,
        maxlen: Optional[int] = None,
        minid: Optional[StreamID] = None,
        approx: bool = False,
        limit: Optional[int] = None,
    ) -> int:
        """``streamTrim``: remove old entries by MAXLEN or MINID (exactly one given); returns how many.

        Walks the nodes oldest first. A node goes whole if what remains still satisfies the strategy
        (MAXLEN: ``length - node.count >= maxlen``; MINID: the node's last written ID ``< minid``).
        Otherwise ``approx`` stops there, and exact trimming tombstones the node's oldest live entries
        (never going past that node). ``limit`` (0 = none) stops before a node whose live count would
        take the total over it; ``None`` means the server default (:meth:`default_trim_limit` for
        ``~``, unlimited for exact). Never changes ``last_id``, ``max_deleted_entry_id`` or
        ``entries_added``. O(#nodes removed · log n + entries removed).
        """
        if (maxlen is None) == (minid is None):
            raise ValueError("trim() needs exactly one of maxlen or minid")
        length = len(self._entries)
        if approx and maxlen is not None and length:  # XADD MAXLEN ~: usually nothing to do, in O(1)
            if length <= maxlen or length - self._nodes.first_value().count < maxlen:
                return 0  # the walk would stop at once (approx: only whole nodes go)
        return self._trim_walk(maxlen, minid, approx, limit)

    def _trim_walk(self, maxlen: Optional[int], minid: Optional[StreamID], approx: bool, limit: Optional[int]) -> int:
        """:meth:`trim`'s node walk, oldest node first (the general path; ``trim`` checks the arguments)."""
        entries, nodes = self._entries, self._nodes
        if limit is None:
            limit = self.default_trim_limit() if approx else 0
        deleted = 0
        while nodes:
            length = len(entries)
            if maxlen is not None and length <= maxlen:
                break
            node = nodes.first_value()
            live = node.count
            if limit and deleted + live > limit:
                break
            if maxlen is not None:
                remove_node = length - live >= maxlen
            else:
                assert minid is not None
                remove_node = node.last_id < minid
            if remove_node:
                nodes.pop_front(1)
                if node is self._tail:
                    self._tail = None  # it was the only node left
                self._rax_nodes = None
                if live:
                    entries.pop_front(live)
                deleted += live
                continue
            if approx:
                break
            if maxlen is not None:
                k = min(length - maxlen, live)
            else:
                assert minid is not None
                k = entries.count_below(key_of(minid), live)
            if k > 0:
                for key, fields in list(entries.scan_k(entries.first_k(), limit=k)):  # type: ignore[arg-type]
                    node.bury(key, fields)
                entries.pop_front(k)
                deleted += k
            break
        if deleted or not entries:
            self.first_id = self._first_live_id()
        return deleted

    # ------------------------------------------------------------ node model
    @property
    def radix_tree_keys(self) -> int:
        """XINFO ``radix-tree-keys``: the number of listpack nodes. O(1)."""
        return len(self._nodes)

    @property
    def radix_tree_nodes(self) -> int:
        """XINFO ``radix-tree-nodes``: rax internal nodes. O(#nodes) after a node was added/freed, else O(1)."""
        if self._rax_nodes is None:
            self._rax_nodes = rax_node_count(list(self._nodes.iter_keys()))  # the keys are the rax keys
        return self._rax_nodes

    def node_layout(self) -> List[Tuple[Tuple[int, int], int, int, int, Tuple[int, int]]]:
        """``[(master, count, deleted, lp_bytes, last_id), ...]`` oldest first (debugging / tests). O(#nodes)."""
        return node_layout(list(self._nodes.values()))

    # ------------------------------------------------------------- DUMP/RESTORE
    def node_contents(self) -> Iterator[Tuple[Node, List[Tuple[int, Tuple[bytes, ...], bool]]]]:
        """Each node (oldest first) with every entry its listpack holds, in ID order: ``(key, fields, deleted)``
        (live entries from the index, tombstones from ``Node.buried``). O(n + tombstones · log)."""
        nodes = list(self._nodes.values())
        entries = self._entries
        for i, node in enumerate(nodes):
            lo = key_of(node.master)
            live = []
            if node.count:
                hi = key_of(nodes[i + 1].master) - 1 if i + 1 < len(nodes) else None
                live = [(k, fields, False) for k, fields in entries.scan_k(lo, hi)]
            if node.buried:
                live += [(k, fields, True) for k, fields in node.buried.items()]
                live.sort(key=lambda row: row[0])
            yield node, live

    def load_node(self, rows: Sequence[Tuple[StreamID, List[bytes], bool]]) -> None:
        """Append a node as a RESTORE payload has it: ``rows`` = ``(id, [f1, v1, ...], deleted)`` in ID order,
        above every entry present, the first one's ID being the node's master. The counters (``last_id`` …) are
        the caller's to set. O(len(rows))."""
        first_sid, first_fields, _ = rows[0]
        node = Node(first_sid, list(first_fields), self._names)
        stored = [tuple(first_fields)]
        for sid, fields, _ in rows[1:]:
            stored.append(node.add_entry(sid, list(fields)))
        entries = self._entries
        for (sid, _, deleted), kept in zip(rows, stored):
            key = key_of(sid)
            if deleted:
                node.bury(key, kept)
            else:
                entries.append_entry(key, b"%d-%d" % sid, kept)
        self._nodes.set_k(key_of(first_sid), node)
        if self._tail is not None:
            self._tail.close()
        self._tail = node
        self._rax_nodes = None

    # ---------------------------------------------------------------- checks
    def _check(self) -> None:
        """Assert every invariant. O(n)."""
        entries = self._entries
        entries._check()
        ints = list(entries.iter_keys())
        keys = [id_of(k) for k in ints]
        if keys:
            assert keys[-1] <= self.last_id
            assert self.first_id == keys[0], (self.first_id, keys[0])
        else:
            assert self.first_id == MIN_ID
        assert self.entries_added >= len(keys)
        self._nodes._check()
        masters = list(self._nodes.keys())
        total = 0
        for i, master in enumerate(masters):
            node = self._nodes[master]
            assert node.master == master
            assert node.count >= 0 and node.deleted >= 0 and node.count + node.deleted >= 1, node
            lo = bisect_left(keys, master)
            hi = bisect_left(keys, masters[i + 1]) if i + 1 < len(masters) else len(entries)
            assert hi - lo == node.count, (node, hi - lo)
            assert node.lp_bytes > 0
            assert len(node.buried or ()) == node.deleted, node  # every tombstone keeps its fields (DUMP)
            total += node.count
        assert total == len(entries), (total, len(entries))
        if keys:
            assert masters and masters[0] <= keys[0]
        assert self._tail is (self._nodes.last_value() if masters else None), self._tail
        fresh = rax_node_count([key_of(m) for m in masters])
        assert self._rax_nodes is None or self._rax_nodes == fresh, (self._rax_nodes, fresh)

    def __repr__(self) -> str:
        return (
            f"<Stream length={len(self)} last_id={self.last_id} nodes={len(self._nodes)} groups={len(self.groups)}>"
        )
