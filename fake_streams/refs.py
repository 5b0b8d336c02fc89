"""Reference policies KEEPREF / DELREF / ACKED (Redis 8.2; addendum streams-redis8.md §1.1, §2.3).

An entry is *referenced* by a consumer group when it is in the group's PEL or its ID is greater than the
group's last-delivered-id (not yet delivered). With no groups nothing is referenced.

* ``KEEPREF`` (default): delete the entry, leave every PEL alone (XDEL's behaviour).
* ``DELREF``: delete the entry and drop it from every group's PEL (group and owner).
* ``ACKED``: delete the entry only if no group references it.

This module owns the policy words (:func:`policy_word`), the reference test and the deletion / trimming
that honour a policy; the commands (XDELEX, XACKDEL, XADD, XTRIM) call it. Trimming never raises
``max-deleted-entry-id`` (as Redis 8.2.3 shows), XDELEX / XACKDEL deletions do (as XDEL).
"""

from __future__ import annotations

from typing import List, Optional

from .ids import MAX_ID, MIN_ID, StreamID, key_of
from .stream import Stream

KEEPREF = "keepref"
DELREF = "delref"
ACKED = "acked"
_WORDS = {b"keepref": KEEPREF, b"delref": DELREF, b"acked": ACKED}


def policy_word(word: bytes) -> Optional[str]:
    """The policy a (case-insensitive) argument names, or ``None``. O(len)."""
    return _WORDS.get(word.lower()) if len(word) in (5, 6, 7) else None


def referenced(stream: Stream, key: int) -> bool:
    """Whether any group of ``stream`` references the entry with 128-bit key ``key``. O(g log p)."""
    for group in stream.groups.values():
        if key > key_of(group.last_id) or group.pel.has_k(key):
            return True
    return False


def drop_references(stream: Stream, key: int) -> bool:
    """DELREF's PEL part: remove ``key`` from every group's PEL (and its owner's); whether any held it."""
    dropped = False
    for group in stream.groups.values():
        if group.remove_pending_k(key):
            dropped = True
    return dropped


def delete_with_policy(stream: Stream, sid: StreamID, policy: str) -> int:
    """One ID of XDELEX / XACKDEL: ``1`` deleted, ``-1`` no such entry, ``2`` kept because referenced (ACKED).

    ACKED answers ``2`` for a referenced ID even when the entry does not exist (an ID above a group's
    last-delivered-id is referenced; Redis 8.2.3). DELREF drops the PEL references also of an ID whose
    entry is already gone (its reply stays ``-1``). O(log n + g log p).
    """
    key = key_of(sid)
    if policy == ACKED and referenced(stream, key):
        return 2
    if policy == DELREF:
        drop_references(stream, key)
    return 1 if stream.delete(sid) else -1


def _candidates(stream: Stream, maxlen: Optional[int], minid: Optional[StreamID]) -> List[StreamID]:
    """The live IDs a strategy would remove, oldest first (MAXLEN: the oldest ``len - maxlen``). O(k)."""
    if maxlen is not None:
        excess = len(stream) - maxlen
        if excess <= 0:
            return []
        return [sid for sid, _ in stream.range(MIN_ID, MAX_ID, excess)]
    assert minid is not None
    if minid == MIN_ID:
        return []
    below = StreamID(minid.ms, minid.seq - 1) if minid.seq else StreamID(minid.ms - 1, (1 << 64) - 1)
    return [sid for sid, _ in stream.range(MIN_ID, below)]


def _remove(stream: Stream, sid: StreamID) -> None:
    """Trim one entry: delete it without raising ``max-deleted-entry-id``."""
    kept = stream.max_deleted_entry_id
    stream.delete(sid)
    stream.max_deleted_entry_id = kept


def trim_with_policy(stream: Stream, maxlen: Optional[int], minid: Optional[StreamID], approx: bool,
                     limit: Optional[int], policy: str, approx_honoured: bool) -> int:
    """XADD/XTRIM trimming under ``policy``; returns the number of entries removed.

    KEEPREF is :meth:`Stream.trim`. DELREF removes what KEEPREF would and drops those IDs from every PEL.
    ACKED exact: every candidate (the oldest ``len - maxlen`` / everything below MINID) that no group
    references is removed, the referenced ones are skipped. With ``~`` the work goes node by node: a node
    the strategy would drop whole loses its unreferenced entries and the walk goes on; a node it would
    keep ends it (``limit`` as for KEEPREF). ``approx_honoured`` False (Redis 8.2.0–8.2.6, 8.4.0–8.4.3):
    ``~`` with DELREF/ACKED removes nothing. O(k log n · g log p) for k candidates.
    """
    if policy == KEEPREF:
        return stream.trim(maxlen, minid, approx, limit)
    if approx and not approx_honoured:
        return 0
    if policy == DELREF:
        doomed = _candidates(stream, maxlen, minid)
        removed = stream.trim(maxlen, minid, approx, limit)
        for sid in doomed[:removed]:
            drop_references(stream, key_of(sid))
        return removed
    if not approx:
        removed = 0
        for sid in _candidates(stream, maxlen, minid):
            if not referenced(stream, key_of(sid)):
                _remove(stream, sid)
                removed += 1
        return removed
    return _approx_acked(stream, maxlen, minid, limit)


def _approx_acked(stream: Stream, maxlen: Optional[int], minid: Optional[StreamID], limit: Optional[int]) -> int:
    """``~`` trimming with ACKED (Redis 8.2.7+ / 8.4.4+ / 8.6): see :func:`trim_with_policy`."""
    if limit is None:
        limit = stream.default_trim_limit()
    removed = 0
    for master, live, _deleted, _lp, last in stream.node_layout():
        if not live:
            continue
        if maxlen is not None:
            if len(stream) - live < maxlen:
                break
        else:
            assert minid is not None
            if not last < minid:
                break
        if limit and removed + live > limit:
            break
        for sid, _ in stream.range(master, last):
            if not referenced(stream, key_of(sid)):
                _remove(stream, sid)
                removed += 1
    return removed
