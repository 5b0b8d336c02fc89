"""Sorted indexes keyed by stream IDs as 128-bit ints: a stream's live entries and the PELs.

Keys are ``ms << 64 | seq`` (:func:`fake_streams.ids.key_of`): the order of ``StreamID`` and of the
server's big-endian rax keys, but one int per key (cheaper to compare, to bisect and to store than a
tuple). Layout, as sortedcontainers' ``SortedList`` but with parallel value columns: the keys live in
chunks (Python lists) of at most ``2 * LOAD`` keys, ``_maxes[i]`` is the last key of chunk ``i``, and
every value column keeps a chunk list parallel to the keys. Appends (IDs grow: XADD, ``>`` delivery)
fill the last chunk up to ``LOAD`` and then open a new one.

Costs (n keys, L = ``LOAD``), sortedcontainers style:

* lookup / membership: O(log n) — two C bisects;
* append of a key greater than every key: O(1) amortized; a sorted batch of k such keys: O(k);
* insert elsewhere: O(log n + L) (a chunk over ``2 * L`` splits);
* delete: O(log n + L) (an emptied chunk goes: O(n / L) pointer moves; small neighbours merge);
* scans: O(log n) to seek, then O(1) per item over contiguous chunk slices;
* positional access (``keys()[i]``): O(n / L), for tests and debugging only.

A chunk other than the last may be a *tuple* in every column (:class:`~fake_streams.entryindex.EntryIndex`
freezes each chunk it fills: a tuple of ints, bytes or untracked tuples is untracked by the garbage collector,
so full collections no longer walk every entry of every stream in the process); the last chunk is always a
list (appends). The removals :class:`IdIndex` has (:meth:`IdIndex.pop_k`, :meth:`IdIndex.pop_front`, chunk
drops and merges) accept either; :class:`IdMap` never freezes, its own inserts and removals work on lists.

:class:`IdIndex` is the layout itself with everything that reads, scans or removes, for any number of
value columns; it never adds a key, because what a key is added *with* depends on the columns.
Two indexes build on it:

* :class:`IdMap` — key → one value (PELs: the ``PendingEntry``; a stream's macro nodes): appends,
  inserts, batch appends and batch removals;
* :class:`~fake_streams.entryindex.EntryIndex` — a stream's entries with a second column, the encoded ID
  (``b"<ms>-<seq>"``, made once per entry): appends only.

The ``StreamID``-keyed mapping methods (``pel[sid]``, ``get``, ``in``, ``items()``, ``keys()``, ...) are
the public face used by tests, XINFO and the inspection views; the engine's hot paths use the ``*_k``
methods and the scans with int keys.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, Generic, Iterator, List, Optional, Tuple, TypeVar

from .ids import StreamID, id_of, key_of

#: chunk fill for appends; a chunk splits above ``2 * LOAD`` and merges with a neighbour below ``LOAD // 2``.
LOAD = 1000

V = TypeVar("V")


class IdIndex(Generic[V]):
    """Sorted 128-bit keys in chunks with a parallel value column ``_vals`` (subclasses may add columns:
    :meth:`_columns`). Reads, scans and removals; adding keys is the subclasses' business. Values are never
    ``None`` (``None`` means "absent" in the ``*_k`` lookups). See the module docstring for the costs.
    """

    __slots__ = ("_maxes", "_keys", "_vals", "_len")

    def __init__(self) -> None:
        self._maxes: List[int] = []
        # chunks typed as lists: a frozen one (module docstring) is a tuple, read the same way; the few places that
        # tell them apart say so
        self._keys: List[List[int]] = []
        self._vals: List[List[V]] = []
        self._len = 0

    def _columns(self) -> Tuple[List[Any], ...]:
        """The outer lists (lists of chunk lists) of every column, keys first: what the structural operations
        (chunk removal, split, merge) apply to alike, whatever a column holds."""
        return (self._keys, self._vals)

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    # ------------------------------------------------------------------------- int-key access
    def get_k(self, k: int) -> Optional[V]:
        """The value at key ``k`` or ``None``. O(log n)."""
        maxes = self._maxes
        i = bisect_left(maxes, k)
        if i != len(maxes):
            ks = self._keys[i]
            j = bisect_left(ks, k)
            if ks[j] == k:
                return self._vals[i][j]
        return None

    def has_k(self, k: int) -> bool:
        """Whether key ``k`` is present. O(log n)."""
        maxes = self._maxes
        i = bisect_left(maxes, k)
        if i == len(maxes):
            return False
        ks = self._keys[i]
        return ks[bisect_left(ks, k)] == k

    def pop_k(self, k: int) -> Optional[V]:
        """Remove key ``k`` and return its value, or ``None`` when absent. O(log n + L)."""
        maxes = self._maxes
        i = bisect_left(maxes, k)
        if i == len(maxes):
            return None
        ks = self._keys[i]
        j = bisect_left(ks, k)
        if ks[j] != k:
            return None
        value = self._vals[i][j]
        if type(ks) is list:
            for column in self._columns():  # keys, values and any column a subclass adds
                del column[i][j]
        else:  # a frozen chunk (see the module docstring): it stays a tuple, one entry shorter
            for column in self._columns():
                chunk = column[i]
                column[i] = chunk[:j] + chunk[j + 1:]
            ks = self._keys[i]
        self._len -= 1
        if not ks:
            self._drop_chunk(i)
        else:
            if j == len(ks):
                maxes[i] = ks[-1]
            if len(ks) < LOAD // 2 and not len(ks) % 64:
                self._merge(i)
        return value

    def first_value(self) -> V:
        """The value of the smallest key (the index must not be empty). O(1)."""
        return self._vals[0][0]

    def last_value(self) -> V:
        """The value of the greatest key (the index must not be empty). O(1)."""
        return self._vals[-1][-1]

    def floor_value(self, k: int) -> Optional[V]:
        """The value of the greatest key ``<= k``, or ``None`` when every key is above ``k``. O(log n)."""
        maxes = self._maxes
        i = bisect_right(maxes, k)
        if i == len(maxes):
            return self._vals[-1][-1] if maxes else None
        j = bisect_right(self._keys[i], k)
        if j:
            return self._vals[i][j - 1]
        return self._vals[i - 1][-1] if i else None

    def first_k(self) -> Optional[int]:
        """The smallest key or ``None``. O(1)."""
        return self._keys[0][0] if self._keys else None

    def last_k(self) -> Optional[int]:
        """The greatest key or ``None``. O(1)."""
        return self._maxes[-1] if self._maxes else None

    # ------------------------------------------------------------------------------- scanning
    def seek(self, k: int, inclusive: bool = True) -> Tuple[int, int]:
        """``(chunk, position)`` of the first key ``>= k`` (``> k`` when not ``inclusive``); ``(len(chunks), 0)`` past the end. O(log n)."""
        maxes = self._maxes
        if inclusive:
            i = bisect_left(maxes, k)
            if i == len(maxes):
                return i, 0
            return i, bisect_left(self._keys[i], k)
        i = bisect_right(maxes, k)
        if i == len(maxes):
            return i, 0
        return i, bisect_right(self._keys[i], k)

    def scan_k(
        self, lo: int, hi: Optional[int] = None, inclusive: bool = True, limit: int = 0
    ) -> Iterator[Tuple[int, V]]:
        """``(key, value)`` for ``lo <= key <= hi`` ascending (``lo < key`` when not ``inclusive``; ``hi`` None = no
        bound), at most ``limit`` pairs (0 = all).

        O(log n) to start, O(1) per step. The index must not change while the iterator is in use.
        """
        i, j = self.seek(lo, inclusive)
        keys, vals = self._keys, self._vals
        left = limit
        while i < len(keys):
            ks = keys[i]
            stop = len(ks)
            if limit and j + left < stop:
                stop = j + left
            if hi is not None and ks[stop - 1] > hi:
                stop = bisect_right(ks, hi, j, stop)
                yield from zip(ks[j:stop], vals[i][j:stop])
                return
            yield from zip(ks[j:stop], vals[i][j:stop])
            if limit:
                left -= stop - j
                if left <= 0:
                    return
            i += 1
            j = 0

    def slice_k(self, lo: int, limit: int, inclusive: bool = True) -> Tuple[List[int], List[V]]:
        """The first ``limit`` keys ``>= lo`` (``> lo`` when not ``inclusive``) and their values, as two fresh lists
        (fewer at the end of the index). O(log n + limit): C slices of each chunk, no per-item step."""
        i, j = self.seek(lo, inclusive)
        keys, vals = self._keys, self._vals
        if i < len(keys) and j + limit <= len(keys[i]):  # one chunk holds them all
            return keys[i][j:j + limit], vals[i][j:j + limit]
        out_k: List[int] = []
        out_v: List[V] = []
        while i < len(keys) and len(out_k) < limit:
            stop = j + limit - len(out_k)
            out_k += keys[i][j:stop]
            out_v += vals[i][j:stop]
            i += 1
            j = 0
        return out_k, out_v

    def slice_near(self, lo: int, limit: int, near: Tuple[int, int]) -> Tuple[List[int], List[V], Tuple[int, int]]:
        """:meth:`slice_k` from ``lo`` inclusive, ``near`` being a position (chunk, index) where key ``lo`` was seen
        before: used when ``lo`` is still there (checked, O(1): no seek), else the seek finds it. Also returns the
        position of the last key returned, the ``near`` of a next call starting there (``(-1, 0)``: not known). A
        cursor loop (XAUTOCLAIM) starts each call where the last one ended: O(limit) then."""
        keys = self._keys
        i, j = near
        if not (0 <= i < len(keys) and j < len(keys[i]) and keys[i][j] == lo):
            i, j = self.seek(lo)
        if i < len(keys):
            ks = keys[i]
            stop = j + limit
            if stop <= len(ks):  # one chunk holds them all
                return ks[j:stop], self._vals[i][j:stop], (i, stop - 1)
        out_k, out_v = self.slice_k(lo, limit)
        return out_k, out_v, (-1, 0)

    def rscan_k(self, hi: int, lo: int) -> Iterator[Tuple[int, V]]:
        """``(key, value)`` for ``hi >= key >= lo`` descending. O(log n) to start, O(1) per step (index unchanged meanwhile)."""
        maxes = self._maxes
        i = bisect_left(maxes, hi)
        keys, vals = self._keys, self._vals
        if i == len(maxes):
            i -= 1
            stop = len(keys[i]) if i >= 0 else 0
        else:
            stop = bisect_right(keys[i], hi)
        while i >= 0:
            ks = keys[i]
            if stop and ks[0] < lo:
                start = bisect_left(ks, lo, 0, stop)
                yield from zip(ks[start:stop][::-1], vals[i][start:stop][::-1])
                return
            if stop:
                yield from zip(ks[stop - 1 :: -1], vals[i][stop - 1 :: -1])
            i -= 1
            if i >= 0:
                stop = len(keys[i])

    def values_k(self, lo: int, hi: int, limit: int) -> List[V]:
        """The values of ``lo <= key <= hi`` ascending, at most ``limit`` of them (0 = all). O(log n + k)."""
        out: List[V] = []
        i, j = self.seek(lo)
        keys, vals = self._keys, self._vals
        while i < len(keys):
            ks = keys[i]
            stop = len(ks)
            if limit:
                want = j + limit - len(out)
                if want < stop:
                    stop = want
            if ks[stop - 1] > hi:
                out += vals[i][j : bisect_right(ks, hi, j, stop)]
                return out
            out += vals[i][j:stop]
            if limit and len(out) >= limit:
                return out
            i += 1
            j = 0
        return out

    def count_below(self, k: int, limit: int) -> int:
        """``min(limit, number of keys < k)``. O(limit / L + log L)."""
        total = 0
        for ks in self._keys:
            if ks[-1] < k:
                total += len(ks)
                if total >= limit:
                    return limit
            else:
                total += bisect_left(ks, k)
                break
        return min(total, limit)

    def key_at(self, index: int) -> int:
        """The key at position ``index`` (negative from the end). O(n / L); tests and debugging."""
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("index out of range")
        for ks in self._keys:
            if index < len(ks):
                return ks[index]
            index -= len(ks)
        raise IndexError("index out of range")  # pragma: no cover

    def iter_keys(self) -> Iterator[int]:
        """Every key ascending. O(n)."""
        for ks in self._keys:
            yield from ks

    # ------------------------------------------------------------------------ structure upkeep
    def pop_front(self, n: int) -> None:
        """Remove the ``n`` smallest keys (``n <= len``). O(n / L + L)."""
        self._len -= n
        columns = self._columns()
        keys, maxes = self._keys, self._maxes
        while n:
            size = len(keys[0])
            if size <= n:
                n -= size
                del maxes[0]
                for outer in columns:
                    del outer[0]
            else:
                frozen = type(keys[0]) is not list  # a tuple (see the module docstring)
                for outer in columns:
                    if frozen:
                        outer[0] = outer[0][n:]
                    else:
                        del outer[0][:n]
                n = 0

    def _drop_chunk(self, i: int) -> None:
        del self._maxes[i]
        columns = self._columns()
        for outer in columns:
            del outer[i]
        keys = self._keys
        if i == len(keys) and keys and type(keys[-1]) is not list:  # the last chunk went: the new last one takes appends
            for outer in columns:
                outer[-1] = list(outer[-1])

    def _split(self, i: int) -> None:
        """Split chunk ``i`` in two halves. O(L + n / L)."""
        half = len(self._keys[i]) // 2
        for outer in self._columns():
            chunk = outer[i]
            outer.insert(i + 1, chunk[half:])
            del chunk[half:]
        self._maxes.insert(i, self._keys[i][-1])

    def _merge(self, i: int) -> None:
        """Merge the small chunk ``i`` into a neighbour when both fit in ``LOAD``. O(L + n / L)."""
        keys = self._keys
        size = len(keys[i])
        if i + 1 < len(keys) and size + len(keys[i + 1]) <= LOAD:
            a = i
        elif i > 0 and size + len(keys[i - 1]) <= LOAD:
            a = i - 1
        else:
            return
        for outer in self._columns():
            left, right = outer[a], outer[a + 1]
            if type(left) is list:
                left += right  # (a list takes a frozen chunk's tuple too)
            else:  # frozen: stays a tuple unless the last chunk (a list) joins it
                outer[a] = left + right if type(right) is tuple else [*left, *right]
            del outer[a + 1]
        maxes = self._maxes
        maxes[a] = maxes[a + 1]
        del maxes[a + 1]

    # -------------------------------------------------------------- StreamID mapping (public face)
    def __getitem__(self, sid: StreamID) -> V:
        value = self.get_k(key_of(sid))
        if value is None:
            raise KeyError(sid)
        return value

    def get(self, sid: StreamID) -> Optional[V]:
        return self.get_k(key_of(sid))

    def __contains__(self, sid: object) -> bool:
        if not isinstance(sid, tuple) or len(sid) != 2:
            return False
        return self.has_k(key_of(sid))

    def __delitem__(self, sid: StreamID) -> None:
        if self.pop_k(key_of(sid)) is None:
            raise KeyError(sid)

    def __iter__(self) -> Iterator[StreamID]:
        return map(id_of, self.iter_keys())

    def keys(self) -> KeysView[V]:
        return KeysView(self)

    def values(self) -> Iterator[V]:
        for vs in self._vals:
            yield from vs

    def items(self) -> Iterator[Tuple[StreamID, V]]:
        for ks, vs in zip(self._keys, self._vals):
            for k, v in zip(ks, vs):
                yield id_of(k), v

    def __eq__(self, other: object) -> bool:
        """Equal to another index (or a dict) with the same ``StreamID → value`` items. O(n)."""
        if isinstance(other, IdIndex):
            return list(self.items()) == list(other.items())
        if isinstance(other, dict):
            return len(other) == self._len and all(sid in other and other[sid] == v for sid, v in self.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    def _check(self) -> None:
        """Assert the layout invariants. O(n)."""
        columns = self._columns()
        assert all(len(outer) == len(self._maxes) for outer in columns)
        total = 0
        prev = -1
        for i, ks in enumerate(self._keys):
            assert ks and len(ks) <= 2 * LOAD, len(ks)
            assert self._maxes[i] == ks[-1]
            for outer in columns:
                assert len(outer[i]) == len(ks) and type(outer[i]) is type(ks)
            assert type(ks) is list or i + 1 < len(self._keys), i  # only chunks before the last may be frozen
            for k in ks:
                assert k > prev
                prev = k
            total += len(ks)
        assert total == self._len

    def __repr__(self) -> str:
        return f"<{type(self).__name__} len={self._len} chunks={len(self._keys)}>"


class IdMap(IdIndex[V]):
    """A sorted map ``key (128-bit int) → value``: :class:`IdIndex` with appends, inserts and batch removals."""

    __slots__ = ()

    def append_k(self, k: int, value: V) -> None:
        """Add ``k`` greater than every key present (the caller guarantees it). O(1) amortized."""
        keys = self._keys
        if keys:
            ks = keys[-1]
            if len(ks) < LOAD:
                ks.append(k)
                self._vals[-1].append(value)
                self._maxes[-1] = k
                self._len += 1
                return
        keys.append([k])
        self._vals.append([value])
        self._maxes.append(k)
        self._len += 1

    def set_k(self, k: int, value: V) -> None:
        """Insert or replace key ``k``. O(1) amortized at the end, else O(log n + L)."""
        maxes = self._maxes
        if not maxes or k > maxes[-1]:
            self.append_k(k, value)
            return
        i = bisect_left(maxes, k)
        ks = self._keys[i]
        j = bisect_left(ks, k)
        if ks[j] == k:
            self._vals[i][j] = value
            return
        ks.insert(j, k)
        self._vals[i].insert(j, value)
        self._len += 1
        if len(ks) > 2 * LOAD:
            self._split(i)

    def extend_k(self, keys: List[int], values: List[V]) -> None:
        """Append sorted ``keys`` (all greater than every key present) with their ``values``. O(len(keys))."""
        n = len(keys)
        if not n:
            return
        outer_k, outer_v, maxes = self._keys, self._vals, self._maxes
        at = 0
        if outer_k:
            ks = outer_k[-1]
            room = LOAD - len(ks)
            if room >= n:  # the usual case (a delivery into a PEL): all into the last chunk, no slice copies
                ks += keys
                outer_v[-1] += values
                maxes[-1] = keys[-1]
                self._len += n
                return
            if room > 0:
                at = room
                ks += keys[:at]
                outer_v[-1] += values[:at]
                maxes[-1] = ks[-1]
        while at < n:
            nxt = at + LOAD
            ks = keys[at:nxt]
            outer_k.append(ks)
            outer_v.append(values[at:nxt])
            maxes.append(ks[-1])
            at = nxt
        self._len += n

    def pop_sorted(self, keys: List[int]) -> Tuple[List[int], List[V]]:
        """Remove every present key of the ascending ``keys`` (repeats allowed, each key removed once).

        Returns ``(removed keys, their values)`` in key order. One seek per run of neighbouring keys:
        O(k + r (log n + L)) for k keys forming r runs.
        """
        n = len(keys)
        if n > 1:  # the usual XACK: keys that sit side by side in one chunk (compared in C, removed at once)
            out = self.pop_run(keys)
            if out is not None:
                return list(keys), out
        maxes, outer_k, outer_v = self._maxes, self._keys, self._vals
        out_k: List[int] = []
        out_v: List[V] = []
        idx = 0
        while idx < n:
            k = keys[idx]
            i = bisect_left(maxes, k)
            if i == len(maxes):
                break  # every remaining key is above the greatest key
            ks = outer_k[i]
            size = len(ks)
            j = start = bisect_left(ks, k)
            while idx < n:
                k = keys[idx]
                if j < size and ks[j] == k:
                    j += 1
                elif not (j > start and ks[j - 1] == k):  # a repeat of the key just matched is skipped
                    break
                idx += 1
            if j == start:
                idx += 1  # keys[idx] is absent
                continue
            vs = outer_v[i]
            out_k += ks[start:j]
            out_v += vs[start:j]
            del ks[start:j]
            del vs[start:j]
            self._len -= j - start
            self._removed_at(i, start)
        return out_k, out_v

    def pop_run(self, keys: List[int]) -> Optional[List[V]]:
        """If the ascending ``keys`` (at least one) are neighbours in one chunk, remove them and return their
        values; else ``None`` with nothing changed. O(log n + L) (a C slice compare, two slice deletions)."""
        maxes = self._maxes
        first = keys[0]
        i = bisect_left(maxes, first)
        if i == len(maxes):
            return None
        ks = self._keys[i]
        start = bisect_left(ks, first)
        stop = start + len(keys)
        if ks[start:stop] != keys:
            return None
        vs = self._vals[i]
        out = vs[start:stop]
        del ks[start:stop]
        del vs[start:stop]
        self._len -= len(keys)
        if not ks or start == len(ks) or len(ks) < LOAD // 2 and len(maxes) > 1:
            self._removed_at(i, start)  # emptied, lost its tail or mergeable
        return out

    def drop_run(self, keys: List[int]) -> bool:
        """Remove the ascending, distinct ``keys`` (at least one), *all present* (the caller knows it: a PEL's entries of
        one owner), when they are neighbours in one chunk: then a run from the first to the last of them holds exactly
        them (it holds ``len(keys)`` keys, each present key between the two is among them), found from its two ends —
        no slice compared, no values copied. False, nothing changed, when they are not. O(log n + L); no seek when
        they are the smallest keys."""
        maxes = self._maxes
        first = keys[0]
        ks = self._keys[0]
        if ks[0] == first:  # the smallest keys (a claim loop's sweep of an owner's PEL): no seek
            i = start = 0
        else:
            i = bisect_left(maxes, first)
            ks = self._keys[i]  # (present: i < len(maxes))
            start = bisect_left(ks, first)
        stop = start + len(keys)
        if stop > len(ks) or ks[stop - 1] != keys[-1]:
            return False
        del ks[start:stop]
        del self._vals[i][start:stop]
        n = len(keys)
        self._len -= n
        if not ks or start == len(ks):
            self._removed_at(i, start)  # emptied or lost its tail
        elif len(ks) < LOAD // 2 and len(maxes) > 1 and len(ks) // 64 != (len(ks) + n) // 64:
            self._merge(i)  # under half a load: a merge tried each 64 keys fewer (as pop_k), not at every removal
        return True

    def _removed_at(self, i: int, start: int) -> None:
        """Chunk ``i`` just lost keys from position ``start`` on: drop it if empty, else fix its max (when the
        tail went) and merge it into a neighbour when it fell under half a load. O(L) at most (a merge)."""
        ks = self._keys[i]
        if not ks:
            self._drop_chunk(i)
            return
        if start == len(ks):
            self._maxes[i] = ks[-1]
        if len(ks) < LOAD // 2:
            self._merge(i)

    def __setitem__(self, sid: StreamID, value: V) -> None:
        self.set_k(key_of(sid), value)

    def pop(self, sid: StreamID, *default: V) -> V:
        """``dict.pop``: the value of ``sid``, removed; ``default`` (if given) when absent, else KeyError."""
        value = self.pop_k(key_of(sid))
        if value is None:
            if default:
                return default[0]
            raise KeyError(sid)
        return value


class KeysView(Generic[V]):
    """``keys()`` of an :class:`IdIndex`: StreamIDs ascending; ``len``, iteration and positional access (O(n / L))."""

    __slots__ = ("_index",)

    def __init__(self, index: IdIndex[V]) -> None:
        self._index = index

    def __len__(self) -> int:
        return len(self._index)

    def __iter__(self) -> Iterator[StreamID]:
        return iter(self._index)

    def __getitem__(self, index: int) -> StreamID:
        return id_of(self._index.key_at(index))

    def __contains__(self, sid: object) -> bool:
        return sid in self._index
