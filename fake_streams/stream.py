"""The stream value (``stream`` in stream.h): entries, counters and consumer groups. No RESP, no keys, no clock.

Entries are kept in a :class:`sortedcontainers.SortedDict` keyed by :class:`StreamID`:
append/lookup/delete O(log n), range O(log n + k).

Invariants (checked by :meth:`Stream._check`):

* ``len(self)`` is the number of live entries; every live ID is ``<= last_id``;
* ``first_id`` ("recorded-first-entry-id") is the first live ID, or ``0-0`` when empty;
* ``max_deleted_entry_id`` only grows through XDEL (trimming never moves it) or is set by XSETID;
* ``entries_added`` counts every successful XADD (or what XSETID set).
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from sortedcontainers import SortedDict

from .ids import MIN_ID, StreamID

Entry = Tuple[StreamID, List[bytes]]


class Stream:
    """One stream. ``groups`` maps group name (bytes) → group object, iterated in name order."""

    def __init__(self) -> None:
        self._entries: SortedDict = SortedDict()
        self.last_id: StreamID = MIN_ID
        self.first_id: StreamID = MIN_ID
        self.max_deleted_entry_id: StreamID = MIN_ID
        self.entries_added: int = 0
        self.groups: SortedDict = SortedDict()

    # fakeredis drops "empty" values on writeback unless truthy: an empty stream still exists.
    def __bool__(self) -> bool:
        return True

    def __len__(self) -> int:
        return len(self._entries)

    # ----------------------------------------------------------------- adding
    def append(self, sid: StreamID, fields: Sequence[bytes]) -> None:
        """Add an entry; the caller has checked ``sid > last_id``. O(log n)."""
        self._entries[sid] = list(fields)
        self.last_id = sid
        self.entries_added += 1
        if len(self._entries) == 1:
            self.first_id = sid

    # ---------------------------------------------------------------- reading
    def get(self, sid: StreamID) -> Optional[List[bytes]]:
        """The fields of the live entry ``sid``, or ``None``. O(1)."""
        return self._entries.get(sid)

    def __contains__(self, sid: object) -> bool:
        return sid in self._entries

    def range(self, start: StreamID, end: StreamID, count: int = 0, rev: bool = False) -> List[Entry]:
        """Live entries with ``start <= id <= end``, ascending (or descending if ``rev``), at most ``count`` (0 = all).

        O(log n + k) for k returned.
        """
        out: List[Entry] = []
        if start > end:
            return out
        entries = self._entries
        for sid in entries.irange(start, end, reverse=rev):
            out.append((sid, entries[sid]))
            if count and len(out) >= count:
                break
        return out

    def iter_after(self, after: StreamID) -> Iterator[Entry]:
        """Live entries with ID > ``after``, ascending. O(log n) to start, O(1) per step."""
        entries = self._entries
        for sid in entries.irange(after, None, inclusive=(False, True)):
            yield sid, entries[sid]

    def first_entry(self) -> Optional[Entry]:
        if not self._entries:
            return None
        sid = self._entries.keys()[0]
        return sid, self._entries[sid]

    def last_entry(self) -> Optional[Entry]:
        if not self._entries:
            return None
        sid = self._entries.keys()[-1]
        return sid, self._entries[sid]

    def last_valid_id(self) -> Optional[StreamID]:
        """``streamLastValidID``: the ID of the last live entry, or ``None`` when empty."""
        return self._entries.keys()[-1] if self._entries else None

    # --------------------------------------------------------------- deleting
    def delete(self, sid: StreamID) -> bool:
        """XDEL of one ID: True if a live entry was removed. Raises ``max_deleted_entry_id``. O(log n)."""
        if sid not in self._entries:
            return False
        del self._entries[sid]
        if sid > self.max_deleted_entry_id:
            self.max_deleted_entry_id = sid
        if not self._entries:
            self.first_id = MIN_ID
        elif sid == self.first_id:
            self.first_id = self._entries.keys()[0]
        return True

    # ---------------------------------------------------------------- checks
    def _check(self) -> None:
        """Assert every invariant. O(n)."""
        keys = list(self._entries.keys())
        assert keys == sorted(keys)
        if keys:
            assert keys[-1] <= self.last_id
            assert self.first_id == keys[0], (self.first_id, keys[0])
        else:
            assert self.first_id == MIN_ID
        assert self.entries_added >= len(keys)

    def __repr__(self) -> str:
        return f"<Stream length={len(self)} last_id={self.last_id} groups={len(self.groups)}>"



