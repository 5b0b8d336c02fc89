"""The stream's macro-node layout (spec §5.1, §5.3): listpack byte sizes, node records, rax node count.

The server stores a stream as a rax (radix tree) keyed by the 16-byte big-endian *master ID* of each
listpack ("macro node"). Nothing of that is visible except through

* ``~`` trimming and LIMIT, which remove whole nodes only (``streamTrim``);
* XDEL, which frees a node when its last live entry goes;
* XINFO STREAM ``radix-tree-keys`` (number of nodes) and ``radix-tree-nodes`` (rax internal nodes).

To reproduce those exactly we track, per node, what decides its boundaries: live/deleted counts,
the listpack byte size (``lpBytes``), the master field names (for the SAMEFIELDS compression) and the
ID of the last entry written into it (tombstone or not, used by MINID trimming). Entry payloads are
not kept here (the :class:`~fake_streams.stream.Stream` keeps live entries in its own index).

Listpack element sizes (listpack.c): an element is ``encoding + backlen``. Strings that are canonical
int64 text (``lpStringToInt64``, the same rule as ``string2ll``) are stored as integers.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from .ids import StreamID, parse_i64

#: ``STREAM_LISTPACK_MAX_SIZE``: the cap of ``stream-node-max-bytes`` (0 or more → this) and of one XADD payload.
LISTPACK_MAX_SIZE = 1 << 30
#: listpack header (total bytes u32 + element count u16) plus the 0xFF terminator.
LP_EMPTY_BYTES = 6 + 1
#: the flags of an entry whose field names are the master's (only its values are stored)
FLAG_SAMEFIELDS = 2
_NO_LIMIT = 1 << 62  # stream-node-max-entries 0: no entry count fills a node

_U64 = 1 << 64
_I64_MIN = -(1 << 63)


def backlen_size(enc_len: int) -> int:
    """``lpEncodeBacklen`` size for an element whose encoding takes ``enc_len`` bytes."""
    if enc_len <= 127:
        return 1
    if enc_len < 16383:
        return 2
    if enc_len < 2097151:
        return 3
    if enc_len < 268435455:
        return 4
    return 5


def int_size(value: int) -> int:
    """Bytes of an integer listpack element (encoding + 1-byte backlen). ``value`` is an int64. O(1)."""
    if 0 <= value <= 127:
        return 2
    if -4096 <= value <= 4095:
        return 3
    if -32768 <= value <= 32767:
        return 4
    if -8388608 <= value <= 8388607:
        return 5
    if -2147483648 <= value <= 2147483647:
        return 6
    return 10


#: first bytes that can start canonical int64 text (``-`` or a digit): only these can be integer-encoded
_INT_START = frozenset(b"-0123456789")


def listpack_int(raw: bytes) -> Optional[int]:
    """The integer ``lpAppend`` stores ``raw`` as (canonical int64 text), or None (stored as a string). O(len)."""
    if len(raw) <= 20 and raw and raw[0] in _INT_START:
        return parse_i64(raw)
    return None


def str_size(raw: bytes) -> int:
    """Bytes of a string listpack element as ``lpAppend`` stores it (integer-encoded when canonical int64 text). O(len)."""
    value = listpack_int(raw)
    if value is not None:
        return int_size(value)
    n = len(raw)
    if n < 64:
        return n + 2  # 1-byte header + backlen 1
    if n < 4096:
        enc = 2 + n
    else:
        enc = 5 + n
    return enc + backlen_size(enc)


def delta(a: int, b: int) -> int:
    """``a - b`` of two uint64 ID parts as the int64 the listpack stores."""
    d = (a - b) % _U64
    return d - _U64 if d >= (1 << 63) else d


#: most distinct field-name tuples a stream's :func:`names_list` table keeps (then it starts again)
NAMES_KEPT = 64


def names_list(table: Optional[Dict[Tuple[bytes, ...], List[bytes]]], names: Tuple[bytes, ...]) -> List[bytes]:
    """The list of ``names`` nodes of one stream share (``table``: the stream's, None: a list of its own). Nodes
    never change it. O(len(names))."""
    if table is None:
        return list(names)
    shared = table.get(names)
    if shared is None:
        if len(table) >= NAMES_KEPT:
            table.clear()
        shared = table[names] = list(names)
    return shared


def _flags_ms_size(ms: int, master_ms: int) -> int:
    """Bytes of an entry's flags (0 or 2) and ms-delta elements against its node's master (``int_size(delta(…))``
    inlined for 0 <= delta < 2**31). O(1)."""
    d = ms - master_ms
    if 0 <= d <= 127:
        return 4
    if 0 < d <= 2147483647:
        return 5 if d <= 4095 else 6 if d <= 32767 else 7 if d <= 8388607 else 8
    return 2 + int_size(delta(ms, master_ms))


def _values_size(fields: List[bytes]) -> int:
    """Bytes of the value elements of ``fields`` (``[f1, v1, ...]``), as a SAMEFIELDS entry stores them. O(fields)."""
    size = 0
    for value in fields[1::2]:
        m = len(value)
        size += m + 2 if m < 64 and (not m or value[0] not in _INT_START) else str_size(value)
    return size


def _own_fields_size(fields: List[bytes]) -> int:
    """Bytes of an entry with field names of its own past its ID deltas: num-fields, every field and value, and
    the lp-count element. O(fields)."""
    numfields = len(fields) >> 1
    size = int_size(numfields)
    for item in fields:
        size += str_size(item)
    return size + int_size(2 * numfields + 4)


class Node:
    """One listpack macro node (a value of the stream rax).

    ``count`` live entries, ``deleted`` tombstones (never compacted), ``last_id`` the ID of the last
    entry written to it (tombstone or not), ``master_fields`` the field names of its master entry.
    ``master`` and, once the node is no longer the stream's last (:meth:`close`), ``last_id`` are plain
    ``(ms, seq)`` tuples, not ``StreamID`` objects: the cyclic GC stops tracking a plain tuple of ints at its first
    look, never a ``StreamID`` (a tuple subclass), and every full collection walks what stays tracked — with
    the names list shared by the stream's nodes (``names``), a node is one tracked object instead of four
    (benchmarks/loads.py: a full collection after three loads of 1e6 entries 0.18 → 0.06 s; findings §14).
    ``lp_bytes`` is the listpack size in bytes; it is ``base_bytes`` plus the two master counters,
    whose encoded size changes as they grow. ``buried`` keeps the fields of its tombstones (128-bit key →
    field tuple, ``None`` until the first): the server's listpack keeps them until the node is freed, and
    DUMP writes them (:meth:`bury`).
    """

    __slots__ = ("master", "master_fields", "count", "deleted", "base_bytes", "last_id", "buried", "_names",
                 "_same_tail")

    def __init__(self, sid: Tuple[int, int], fields: Sequence[bytes],
                 names: Optional[Dict[Tuple[bytes, ...], List[bytes]]] = None) -> None:
        """A new node holding its first entry ``sid`` (flags SAMEFIELDS). ``fields`` is ``[f1, v1, f2, v2, ...]``.
        ``names``: the stream's field-name tuple → list table (:func:`names_list`), if it keeps one."""
        master_fields = tuple(fields[0::2])
        numfields = len(master_fields)
        self.master: Tuple[int, int] = (sid[0], sid[1])
        self.master_fields = master_fields
        self._names = names_list(names, master_fields)  # for a list == list test of an added entry's names
        self._same_tail = int_size(numfields + 3)  # lp-count element of a SAMEFIELDS entry
        self.count = 1
        self.deleted = 0
        # master entry: count | deleted | num-fields | field_1..N | 0 ; count/deleted are in lp_bytes.
        base = LP_EMPTY_BYTES + int_size(numfields) + int_size(0)
        for name in master_fields:
            base += str_size(name)
        # first entry: flags | ms-delta (0) | seq-delta (0) | value_1..N | lp-count
        base += int_size(FLAG_SAMEFIELDS) + 2 * int_size(0) + int_size(numfields + 3)
        for value in fields[1::2]:
            base += str_size(value)
        self.base_bytes = base
        self.last_id: Tuple[int, int] = self.master
        self.buried: Optional[Dict[int, Tuple[bytes, ...]]] = None

    @property
    def lp_bytes(self) -> int:
        """``lpBytes`` of this node's listpack. O(1)."""
        count, deleted = self.count, self.deleted  # both >= 0: up to 127 they take int_size's 2 bytes
        return self.base_bytes + (2 if count <= 127 else int_size(count)) + (2 if deleted <= 127 else int_size(deleted))

    def is_full(self, payload_len: int, max_bytes: int, max_entries: int) -> bool:
        """Whether an XADD of ``payload_len`` field+value bytes must open a new node (``streamAppendItem``):
        ``lp_bytes + payload_len >= max_bytes`` (``stream-node-max-bytes``; 0 or more than the listpack cap
        means the cap) or ``count + deleted >= max_entries`` (``stream-node-max-entries``; 0 = no limit). O(1).
        """
        if max_entries and self.count + self.deleted >= max_entries:
            return True
        if max_bytes <= 0 or max_bytes > LISTPACK_MAX_SIZE:
            max_bytes = LISTPACK_MAX_SIZE
        return self.lp_bytes + payload_len >= max_bytes

    def add_entry(self, sid: StreamID, fields: List[bytes]) -> Tuple[bytes, ...]:
        """Append entry ``sid`` (``fields`` = ``[f1, v1, ...]``, the caller's fresh list) whatever the node's limits;
        returns the field tuple the stream stores (:meth:`add_entries`). O(number of fields)."""
        stored: List[Tuple[bytes, ...]] = []
        self.add_entries((sid,), (fields,), (0,), 0, LISTPACK_MAX_SIZE, 0, stored)
        return stored[0]

    def add_entries(self, sids: Sequence[StreamID], batch: Sequence[List[bytes]], payloads: Sequence[int], start: int,
                    max_bytes: int, max_entries: int, stored: List[Tuple[bytes, ...]]) -> int:
        """Append the entries ``sids[i]`` / ``batch[i]`` (``[f1, v1, ...]``, the caller's fresh lists; ``payloads[i]``
        the sum of their lengths) for ``i`` from ``start`` on while the node takes them — until :meth:`is_full`
        would answer True for the next one (``streamAppendItem`` opens a new node there) — each one's stored field
        tuple appended to ``stored``; returns the index of the first entry not taken (``len(sids)``: all).

        With the master's field names (SAMEFIELDS) only the values are sized and the names are replaced by the
        master's own (equal) bytes objects, so entries of a node share them. O(fields of the entries taken); the
        node's counters are read and written once per call (a pipeline's run of XADDs is one call).
        """
        if max_bytes <= 0 or max_bytes > LISTPACK_MAX_SIZE:
            max_bytes = LISTPACK_MAX_SIZE
        count, base = self.count, self.base_bytes
        deleted = self.deleted
        # is_full, with what does not change in the loop taken out: full at `count` entries (`max_entries` counts
        # the tombstones too), or once base + count's element + payload reaches `room` (deleted's element is in it)
        full_count = max_entries - deleted if max_entries else _NO_LIMIT
        room = max_bytes - (2 if deleted <= 127 else int_size(deleted))
        names_now, master_fields, same_tail = self._names, self.master_fields, self._same_tail
        name = master_fields[0] if len(master_fields) == 1 else None  # the one-field master's (the common case)
        master_ms, master_seq = self.master
        last_ms, ms_size = -1, 0  # the flags + ms-delta elements' size of the entry before (entries share an ms)
        append = stored.append
        end = len(sids)
        for i in range(start, end):
            if count >= full_count or base + payloads[i] + (2 if count <= 127 else int_size(count)) >= room:
                end = i
                break
            ms, seq = sids[i]
            fields = batch[i]
            if ms != last_ms:
                ms_size = _flags_ms_size(ms, master_ms)
                last_ms = ms
            d = seq - master_seq
            size = ms_size + (2 if 0 <= d <= 127 else 3 if -4096 <= d <= 4095 else int_size(delta(seq, master_seq)))
            if name is not None and len(fields) == 2 and fields[0] == name:  # SAMEFIELDS, one field
                value = fields[1]
                m = len(value)
                base += size + same_tail + (m + 2 if m < 64 and (not m or value[0] not in _INT_START)
                                            else str_size(value))
                append((name, value))
            elif fields[0::2] == names_now:  # SAMEFIELDS: only the values are stored
                base += size + same_tail + _values_size(fields)
                fields[0::2] = master_fields
                append(tuple(fields))
            else:
                base += size + _own_fields_size(fields)
                append(tuple(fields))
            count += 1
        if end > start:
            self.count, self.base_bytes, self.last_id = count, base, sids[end - 1]
        return end

    def add_one(self, sid: StreamID, fields: List[bytes], payload: int, max_bytes: int,
                max_entries: int) -> Optional[Tuple[bytes, ...]]:
        """:meth:`add_entries` for one entry (an XADD sent alone): entry ``sid`` / ``fields`` (the caller's fresh list,
        ``payload`` the sum of its lengths) appended unless the node is full for it; returns the field tuple the
        stream stores, or None (full: nothing changed, the stream opens a new node). The same sizes, counters and
        stored tuple as ``add_entries((sid,), (fields,), (payload,), 0, …)`` without a run's set-up (the loop, the
        three one-item sequences, the ``stored`` list): ≈ 2–5 % of a whole ``r.xadd`` through the fixture
        (benchmarks/findings.md §18; ``tests/unit/test_node_add_one.py`` compares the two). O(fields)."""
        if self.is_full(payload, max_bytes, max_entries):  # = add_entries' test for its first entry
            return None
        ms, seq = sid
        master_ms, master_seq = self.master
        d = seq - master_seq  # flags + ms-delta + seq-delta, as add_entries sizes them
        size = _flags_ms_size(ms, master_ms) + (2 if 0 <= d <= 127 else 3 if -4096 <= d <= 4095
                                                else int_size(delta(seq, master_seq)))
        master_fields = self.master_fields
        stored: Tuple[bytes, ...]
        if len(fields) == 2 and len(master_fields) == 1 and fields[0] == master_fields[0]:  # SAMEFIELDS, one field
            value = fields[1]
            m = len(value)
            size += self._same_tail + (m + 2 if m < 64 and (not m or value[0] not in _INT_START) else str_size(value))
            stored = (master_fields[0], value)
        elif fields[0::2] == self._names:  # SAMEFIELDS: only the values are stored
            size += self._same_tail + _values_size(fields)
            fields[0::2] = master_fields
            stored = tuple(fields)
        else:
            size += _own_fields_size(fields)
            stored = tuple(fields)
        self.count += 1
        self.base_bytes += size
        self.last_id = sid
        return stored

    def close(self) -> None:
        """The stream opened a node after this one: ``last_id`` becomes a plain tuple (see the class doc). O(1)."""
        last = self.last_id
        if type(last) is not tuple:
            self.last_id = (last[0], last[1])

    def mark_deleted(self, n: int = 1) -> None:
        """Turn ``n`` live entries into tombstones (flags rewritten in place; same size)."""
        self.count -= n
        self.deleted += n

    def bury(self, key: int, fields: Tuple[bytes, ...]) -> None:
        """The live entry with 128-bit ``key`` and stored ``fields`` becomes a tombstone (:meth:`mark_deleted`),
        its fields kept for DUMP. O(1)."""
        self.count -= 1
        self.deleted += 1
        buried = self.buried
        if buried is None:
            buried = self.buried = {}
        buried[key] = fields

    def __repr__(self) -> str:
        return (
            f"Node(master={self.master}, count={self.count}, deleted={self.deleted}, "
            f"lp_bytes={self.lp_bytes}, last_id={self.last_id})"
        )


def _common_prefix(a: int, b: int) -> int:
    """Number of leading bytes two distinct 16-byte keys share."""
    return (128 - (a ^ b).bit_length()) // 8


def rax_node_count(keys: Sequence[int]) -> int:
    """``rax->numnodes`` for the set of 16-byte keys ``keys`` (sorted ascending, distinct). O(len(keys)).

    rax keeps single-child chains of non-key nodes compressed, so its node count is (spec §5.3)
    ``1 (head) + #{prefix p, 1 <= |p| <= 16 : outdeg(parent(p)) >= 2 or outdeg(p) != 1}``.
    In terms of the compacted trie (branch points + leaves), every non-head node counts once, plus
    once more when it hangs below a branch point through a compressed chain (depth > parent + 1).
    Branch points and their parents come from the LCP array of adjacent keys with the usual stack
    walk over lcp-intervals.
    """
    n = len(keys)
    if n == 0:
        return 1
    if n == 1:
        return 2
    lcps: List[int] = [_common_prefix(keys[i], keys[i + 1]) for i in range(n - 1)]
    total = 1
    # leaves: parent branch depth = deepest lcp next to the key
    prev = -1
    for h in lcps:
        parent = h if h > prev else prev
        total += 2 if parent < 15 else 1
        prev = h
    total += 2 if prev < 15 else 1  # the last key
    # branch points (lcp-intervals); a top-level one at depth 0 is the head itself
    stack: List[int] = []
    for h in lcps + [-1]:
        while stack and stack[-1] > h:
            depth = stack.pop()
            top: Optional[int] = stack[-1] if stack else None
            if top is not None and top >= h:
                parent_depth: Optional[int] = top
            elif h >= 0:
                parent_depth = h
            else:
                parent_depth = None
            if parent_depth is None:
                total += 1 if depth >= 1 else 0
            else:
                total += 2 if depth > parent_depth + 1 else 1
        if h >= 0 and (not stack or stack[-1] < h):
            stack.append(h)
    return total


def node_layout(nodes: Sequence[Node]) -> List[Tuple[Tuple[int, int], int, int, int, Tuple[int, int]]]:
    """``[(master, count, deleted, lp_bytes, last_id), ...]`` for debugging and tests."""
    return [(nd.master, nd.count, nd.deleted, nd.lp_bytes, nd.last_id) for nd in nodes]
