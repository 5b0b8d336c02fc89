"""Idempotent XADD (Redis 8.6: ``XADD … IDMP pid iid`` / ``IDMPAUTO pid``, XCFGSET, the XINFO IDMP fields;
addendum streams-redis8.md §2.6–2.8).

Each stream may carry an :class:`IdmpState`: per producer ID the recent idempotent IDs, oldest first, each
with the entry ID it added. An iid is forgotten ``duration_s`` seconds after its entry ID's time (the server keeps
no other time per iid: stream.h's ``idmpEntry`` holds the ID and the iid; an XADD ``*`` ID is the clock's ms), or
when its producer already holds ``maxsize`` iids (the oldest goes first). Expiry is lazy, on the server clock:
every use first drops what has expired. Streams made on Redis 8.6+ profiles get their state at creation, with the
``stream-idmp-duration`` / ``stream-idmp-maxsize`` CONFIG values of that moment (``Backend.new_stream``); DUMP /
RESTORE carry it (:mod:`fake_streams.rdb.streams`, RDB_TYPE_STREAM_LISTPACKS_4); XIDMPRECORD adds one pair. ``IDMPAUTO`` derives the iid from the entry's field/value pairs in
order (the server's hash is not documented: any digest that gives the same iid for the same content
answers the same; docs/redis8-choices.md).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    from .stream import Stream

#: ``stream-idmp-duration`` / ``stream-idmp-maxsize`` defaults, and XCFGSET's ranges
DEFAULT_DURATION_S = 100
DEFAULT_MAXSIZE = 100
DURATION_RANGE = (1, 86400)
MAXSIZE_RANGE = (1, 10000)


def auto_iid(fields: List[bytes]) -> bytes:
    """IDMPAUTO's idempotent ID of ``[f1, v1, …]``: a digest of the length-prefixed pairs, in order. O(bytes)."""
    digest = hashlib.sha256()
    for part in fields:
        digest.update(b"%d:" % len(part))
        digest.update(part)
    return digest.digest()[:16]


class IdmpState:
    """The IDMP map and counters of one stream."""

    __slots__ = ("duration_s", "maxsize", "producers", "iids_added", "iids_duplicates")

    def __init__(self, duration_s: int = DEFAULT_DURATION_S, maxsize: int = DEFAULT_MAXSIZE) -> None:
        self.duration_s = duration_s
        self.maxsize = maxsize
        #: pid -> iid -> (entry ID wire form, its ms: the iid's age counts from it), oldest first
        self.producers: Dict[bytes, OrderedDict[bytes, Tuple[bytes, int]]] = {}
        self.iids_added = 0
        self.iids_duplicates = 0

    def expire(self, now_ms: int) -> None:
        """Forget every iid added ``duration_s`` or more ago; a producer left with none goes. O(expired + pids)."""
        horizon = now_ms - self.duration_s * 1000
        for pid in list(self.producers):
            iids = self.producers[pid]
            while iids:
                _, (_, added) = next(iter(iids.items()))
                if added > horizon:
                    break
                iids.popitem(last=False)
            if not iids:
                del self.producers[pid]

    def lookup(self, pid: bytes, iid: bytes, now_ms: int) -> Optional[bytes]:
        """The entry ID ``(pid, iid)`` added while still tracked, else ``None``. O(1) amortized."""
        self.expire(now_ms)
        iids = self.producers.get(pid)
        found = None if iids is None else iids.get(iid)
        return None if found is None else found[0]

    def record(self, pid: bytes, iid: bytes, entry_id: bytes, counted: bool = True) -> None:
        """Track ``(pid, iid)`` → ``entry_id`` (wire form ``ms-seq``) as the producer's newest iid; evicts its oldest
        when it holds ``maxsize``. ``counted``: an XADD that added an entry (``iids-added`` + 1), not a restored
        pair (XIDMPRECORD, RESTORE). O(1)."""
        iids = self.producers.setdefault(pid, OrderedDict())
        iids.pop(iid, None)
        while len(iids) >= self.maxsize:
            iids.popitem(last=False)
        iids[iid] = (entry_id, int(entry_id.split(b"-", 1)[0]))
        if counted:
            self.iids_added += 1

    def configure(self, duration_s: Optional[int], maxsize: Optional[int]) -> None:
        """XCFGSET: set the given values; a changed value clears every tracked iid (counters stay). O(1)."""
        changed = (duration_s is not None and duration_s != self.duration_s) or (
            maxsize is not None and maxsize != self.maxsize)
        if duration_s is not None:
            self.duration_s = duration_s
        if maxsize is not None:
            self.maxsize = maxsize
        if changed:
            self.producers.clear()

    def info_fields(self, now_ms: int) -> List[Tuple[bytes, int]]:
        """XINFO STREAM's six IDMP fields, in the server's order. O(pids)."""
        self.expire(now_ms)
        return [
            (b"idmp-duration", self.duration_s),
            (b"idmp-maxsize", self.maxsize),
            (b"pids-tracked", len(self.producers)),
            (b"iids-tracked", sum(len(iids) for iids in self.producers.values())),
            (b"iids-added", self.iids_added),
            (b"iids-duplicates", self.iids_duplicates),
        ]


def state_of(stream: Stream, create: bool = False) -> Optional[IdmpState]:
    """The stream's IDMP state (``stream.idmp``); created with the defaults when ``create``. O(1)."""
    if stream.idmp is None and create:
        stream.idmp = IdmpState()
    return stream.idmp
