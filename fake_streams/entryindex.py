"""A stream's live entries: an :class:`~fake_streams.idindex.IdIndex` with two value columns.

Per entry: the 128-bit key (``ms << 64 | seq``), the wire-form ID ``b"<ms>-<seq>"`` (encoded once, at
XADD, and shared by every reply and PEL entry that shows it) and the field tuple. Replies are built from
contiguous chunk slices (:func:`~fake_streams.reply.entries_of`, one list comprehension step per entry). Lookups
remember the position of their last hit (a *finger*) and try the next position first, so walking IDs in
order costs no bisect.

Every chunk the appends fill is *frozen* when the next one opens: its three columns become tuples, which the
garbage collector untracks (ints, bytes, and field tuples it has untracked already), so a full collection no
longer walks every entry of every stream alive in the process (three streams of 1e6 entries: 0.43 → 0.16 s per
``gc.collect()``); the last chunk stays a list. Slices handed out to be kept or changed
(:meth:`EntryIndex.slice_after`, :meth:`EntryIndex.fields_sorted`) are lists whatever the chunk.

Costs as in :mod:`fake_streams.idindex` (n entries, L = chunk size): append O(1) (+ O(L) once per L, the
freeze); lookup O(log n), O(1) after a hit on the previous entry; delete O(log n + L); range replies
O(log n + k).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, List, Optional, Sequence, Tuple

from .idindex import LOAD, IdIndex
from .ids import encode_key
from .reply import EntryReply, entries_of

#: an entry's fields as the stream keeps them: ``(f1, v1, f2, v2, ...)``
Fields = Tuple[bytes, ...]


class EntryIndex(IdIndex[Fields]):
    """A stream's live entries: key → encoded ID (``_encs``) and field tuple (``_vals``). Keys are only ever
    added at the end (:meth:`append_entry`: IDs grow); removal and scans are :class:`IdIndex`'s."""

    __slots__ = ("_encs", "_finger_c", "_finger_p")

    def __init__(self) -> None:
        super().__init__()
        self._encs: List[List[bytes]] = []  # (a frozen chunk is a tuple: see the idindex module docstring)
        # finger: (chunk, position) of the last lookup hit. A lookup first tries the next position, so
        # walking IDs in order (XAUTOCLAIM, history reads, XCLAIM of consecutive IDs) costs no bisect. It is
        # only a guess, checked against the key found there: a stale finger just misses.
        self._finger_c = 0
        self._finger_p = -1

    def _locate(self, k: int) -> Optional[Tuple[int, int]]:
        """``(chunk, position)`` of key ``k`` (moving the finger there), or ``None``.

        O(1) right after a hit on the previous key, else O(log n).
        """
        keys = self._keys
        c = self._finger_c
        if c < len(keys):
            ks = keys[c]
            p = self._finger_p + 1
            if p < len(ks) and ks[p] == k:
                self._finger_p = p
                return c, p
        maxes = self._maxes
        i = bisect_left(maxes, k)
        if i != len(maxes):
            ks = keys[i]
            j = bisect_left(ks, k)
            if ks[j] == k:
                self._finger_c = i
                self._finger_p = j
                return i, j
        return None

    def get_k(self, k: int) -> Optional[Fields]:
        """The fields at key ``k`` or ``None``. O(1) right after a hit on the previous key, else O(log n)."""
        at = self._locate(k)
        return None if at is None else self._vals[at[0]][at[1]]

    def _columns(self) -> Tuple[List[Any], ...]:
        return (self._keys, self._vals, self._encs)

    def append_entry(self, k: int, enc: bytes, fields: Fields) -> int:
        """Add an entry whose key is greater than every key present; returns the entry count after it. O(1) amortized."""
        keys = self._keys
        if keys:
            ks = keys[-1]
            if len(ks) < LOAD:
                ks.append(k)
                self._vals[-1].append(fields)
                self._encs[-1].append(enc)
                self._maxes[-1] = k
                self._len += 1
                return self._len
            self._freeze_last()
        keys.append([k])
        self._vals.append([fields])
        self._encs.append([enc])
        self._maxes.append(k)
        self._len += 1
        return self._len

    def extend_entries(self, keys: Sequence[int], encs: Sequence[bytes], vals: Sequence[Fields]) -> int:
        """Add entries with ascending ``keys``, all greater than every key present, with their encoded IDs and
        fields: the last chunk filled up to ``LOAD``, then new chunks; returns the entry count after them.
        O(len(keys)) in a few list extends."""
        n = len(keys)
        if not n:
            return self._len
        chunks = self._keys
        at = 0
        if chunks:
            room = LOAD - len(chunks[-1])
            if room > 0:
                at = room if room < n else n
                chunks[-1] += keys[:at]
                self._vals[-1] += vals[:at]
                self._encs[-1] += encs[:at]
                self._maxes[-1] = keys[at - 1]
            if at < n:
                self._freeze_last()
        while at < n:
            stop = at + LOAD
            last = stop >= n  # the last chunk stays a list (appends); the ones before it are frozen at once
            chunks.append(list(keys[at:stop]) if last else tuple(keys[at:stop]))  # type: ignore[arg-type]  # frozen
            self._vals.append(list(vals[at:stop]) if last else tuple(vals[at:stop]))  # type: ignore[arg-type]
            self._encs.append(list(encs[at:stop]) if last else tuple(encs[at:stop]))  # type: ignore[arg-type]
            self._maxes.append(keys[min(stop, n) - 1])
            at = stop
        self._len += n
        return self._len

    def _freeze_last(self) -> None:
        """The last chunk becomes a tuple in every column, before a new last chunk opens (see the module
        docstring). O(L)."""
        for outer in (self._keys, self._vals, self._encs):
            outer[-1] = tuple(outer[-1])  # type: ignore[call-overload]  # (chunks are typed as lists)

    def entry_k(self, k: int) -> Optional[Tuple[bytes, Fields]]:
        """``(encoded id, fields)`` of entry ``k`` or ``None``. O(1) right after a hit on the previous key, else O(log n)."""
        at = self._locate(k)
        return None if at is None else (self._encs[at[0]][at[1]], self._vals[at[0]][at[1]])

    def fields_sorted(self, keys: List[int]) -> List[Optional[Fields]]:
        """The fields of each of the ascending, distinct ``keys``, ``None`` where there is no such entry (a fresh
        list, aligned with ``keys``). One C slice compare when the keys are neighbours in one chunk (a PEL of
        consecutive deliveries), else a merge walk: O(log n + k) either way, no per-key method call."""
        if not keys:
            return []
        maxes, chunks = self._maxes, self._keys
        n = len(maxes)
        first = keys[0]
        i = bisect_left(maxes, first)
        if i == n:
            return [None] * len(keys)
        ks = chunks[i]
        j = bisect_left(ks, first)
        stop = j + len(keys)
        if type(ks) is list:
            if ks[j:stop] == keys:
                return self._vals[i][j:stop]  # type: ignore[return-value]
        elif list(ks[j:stop]) == keys:  # a frozen chunk: a fresh list of its slice
            return list(self._vals[i][j:stop])
        out: List[Optional[Fields]] = []
        append = out.append
        vals = self._vals
        vs = vals[i]
        top = maxes[i]
        for k in keys:
            if k > top:  # past chunk i: find the chunk of k (chunks only ever move forward)
                i = bisect_left(maxes, k, i + 1)
                if i == n:
                    out += [None] * (len(keys) - len(out))
                    return out
                ks, vs, top, j = chunks[i], vals[i], maxes[i], 0
            j = bisect_left(ks, k, j)  # j < len(ks): k <= the chunk's last key
            if ks[j] == k:
                append(vs[j])
                j += 1
            else:
                append(None)
        return out

    def last_entry(self) -> Optional[Tuple[int, bytes, Fields]]:
        """``(key, encoded id, fields)`` of the greatest entry or ``None``. O(1)."""
        if not self._keys:
            return None
        return self._keys[-1][-1], self._encs[-1][-1], self._vals[-1][-1]

    def first_entry(self) -> Optional[Tuple[int, bytes, Fields]]:
        """``(key, encoded id, fields)`` of the smallest entry or ``None``. O(1)."""
        if not self._keys:
            return None
        return self._keys[0][0], self._encs[0][0], self._vals[0][0]

    # ---------------------------------------------------------------------------------- scans
    def reply_range(self, lo: int, hi: int, count: int = 0) -> List[EntryReply]:
        """Reply entries ``[[id, [f1, v1, ...]], ...]`` for ``lo <= key <= hi`` ascending, at most ``count`` (0 = all).

        Fresh lists (redis-py callbacks and users may mutate replies). O(log n + k).
        """
        maxes = self._maxes
        i = bisect_left(maxes, lo)
        if i == len(maxes):
            return []
        keys, encs, vals = self._keys, self._encs, self._vals
        ks = keys[i]
        j = bisect_left(ks, lo)
        if count and j + count <= len(ks) and ks[j + count - 1] <= hi:  # one chunk holds the whole reply
            stop = j + count
            return entries_of(encs[i][j:stop], vals[i][j:stop])
        out: List[EntryReply] = []
        while i < len(keys):
            ks = keys[i]
            stop = len(ks)
            if count:
                want = j + count - len(out)
                if want < stop:
                    stop = want
            if ks[stop - 1] > hi:
                stop = bisect_right(ks, hi, j, stop)
                out += entries_of(encs[i][j:stop], vals[i][j:stop])
                return out
            out += entries_of(encs[i][j:stop], vals[i][j:stop])
            if count and len(out) >= count:
                return out
            i += 1
            j = 0
        return out

    def reply_range_rev(self, lo: int, hi: int, count: int = 0) -> List[EntryReply]:
        """As :meth:`reply_range`, descending from ``hi``. O(log n + k)."""
        out: List[EntryReply] = []
        maxes = self._maxes
        i = bisect_left(maxes, hi)
        keys, encs, vals = self._keys, self._encs, self._vals
        if i == len(maxes):
            i -= 1
            if i < 0:
                return out
            stop = len(keys[i])
        else:
            stop = bisect_right(keys[i], hi)
        while i >= 0:
            ks = keys[i]
            start = 0
            if count:
                want = stop - (count - len(out))
                if want > start:
                    start = want
            if stop > start and ks[start] < lo:
                start = bisect_left(ks, lo, start, stop)
                out += entries_of(encs[i][start:stop][::-1], vals[i][start:stop][::-1])
                return out
            out += entries_of(encs[i][start:stop][::-1], vals[i][start:stop][::-1])
            if count and len(out) >= count:
                return out
            i -= 1
            if i >= 0:
                stop = len(keys[i])
        return out

    def slice_after(self, k: int, count: int = 0) -> Tuple[List[int], List[bytes], List[Fields]]:
        """``(keys, encoded ids, field tuples)`` of the entries with key ``> k``, ascending, at most ``count`` (0 = all).

        O(log n + k).
        """
        maxes = self._maxes
        i = bisect_right(maxes, k)
        keys, encs, vals = self._keys, self._encs, self._vals
        if i == len(maxes):
            return [], [], []
        ks = keys[i]
        j = bisect_right(ks, k)
        stop = len(ks)
        if count and j + count <= stop:  # the usual COUNT read: one chunk holds it all
            stop = j + count
            if type(ks) is not list:  # a frozen chunk: fresh lists (the caller keeps them, e.g. in a PEL)
                return list(ks[j:stop]), list(encs[i][j:stop]), list(vals[i][j:stop])
            return ks[j:stop], encs[i][j:stop], vals[i][j:stop]
        if i + 1 == len(maxes):  # the last chunk: all of its tail
            return ks[j:], encs[i][j:], vals[i][j:]
        out_k: List[int] = []
        out_e: List[bytes] = []
        out_v: List[Fields] = []
        while i < len(keys):
            stop = len(keys[i])
            if count:
                want = j + count - len(out_k)
                if want < stop:
                    stop = want
            out_k += keys[i][j:stop]
            out_e += encs[i][j:stop]
            out_v += vals[i][j:stop]
            if count and len(out_k) >= count:
                break
            i += 1
            j = 0
        return out_k, out_e, out_v

    def _check(self) -> None:
        super()._check()
        for ks, es in zip(self._keys, self._encs):
            for k, e in zip(ks, es):
                assert e == encode_key(k), (k, e)
