"""XDELEX and XACKDEL (Redis 8.2; addendum streams-redis8.md §1.2, §2.1, §2.2; profile feature
``stream_ref_policies``).

``XDELEX key [KEEPREF | DELREF | ACKED] IDS numids id [id ...]``
``XACKDEL key group [KEEPREF | DELREF | ACKED] IDS numids id [id ...]``

Order of checks (measured on Redis 8.2.3): the key's type (WRONGTYPE) first, then the options (one policy
word, case-insensitive, anywhere; ``IDS numids`` anywhere, the last block wins; any other word is a syntax
error), then a missing key (XACKDEL: or group) answers ``-1`` per ID without looking at the IDs, then every
ID is parsed before anything changes. Reply: one integer per requested ID, in order (RESP2 = RESP3).

Events / WATCH: ``xdel`` and a dirtied key only when an entry was deleted (Redis 8.2.3: none for an
XACKDEL that only acknowledged, none for an XDELEX that deleted nothing).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..errors import ReplyError
from ..ids import key_of, parse_i64, parse_strict_id
from ..refs import ACKED, KEEPREF, delete_with_policy, drop_references, policy_word, referenced
from .base import CommandSpec, Context, cstr, spec


def parse_ids_block(args: List[bytes], start: int) -> Tuple[str, int, int]:
    """Options from ``args[start:]``: ``(policy, index of the first ID, numids)``. Raises ReplyError. O(argc)."""
    policy: Optional[str] = None
    first = numids = -1
    i, argc = start, len(args)
    while i < argc:
        word = cstr(args[i])
        named = policy_word(word)
        if named is not None:
            if policy is not None:
                raise ReplyError("SYNTAX")
            policy = named
            i += 1
        elif word.upper() == b"IDS" and i + 1 < argc:
            n = parse_i64(args[i + 1])
            if n is None or n <= 0:
                raise ReplyError("NUMIDS_POSITIVE")
            if argc - (i + 2) < n:
                raise ReplyError("NUMIDS_MISMATCH")
            first, numids = i + 2, n
            i = first + n
        else:
            raise ReplyError("SYNTAX")
    if numids < 0:
        raise ReplyError("SYNTAX")
    return policy or KEEPREF, first, numids


def xdelex(ctx: Context, args: List[bytes]) -> List[int]:
    """XDELEX: delete entries under a reference policy; ``1`` / ``-1`` / ``2`` per ID. O(k (log n + g log p))."""
    key = args[0]
    stream = ctx.lookup(key)
    policy, first, numids = parse_ids_block(args, 1)
    if stream is None:
        return [-1] * numids
    ids = [parse_strict_id(raw) for raw in args[first:first + numids]]
    replies = [delete_with_policy(stream, sid, policy) for sid in ids]
    if 1 in replies:
        ctx.modified(key)
        ctx.notify("xdel", key)
    return replies


def xackdel(ctx: Context, args: List[bytes]) -> List[int]:
    """XACKDEL: acknowledge in ``group``, then delete under the policy. Per ID: ``-1`` not pending in the group,
    ``2`` acknowledged but kept (ACKED, referenced elsewhere), ``1`` acknowledged and deleted (also when the
    entry was already gone). O(k (log n + g log p))."""
    key, name = args[0], args[1]
    stream = ctx.lookup(key)
    policy, first, numids = parse_ids_block(args, 2)
    group = stream.groups.get(name) if stream is not None else None
    if stream is None or group is None:
        return [-1] * numids
    ids = [parse_strict_id(raw) for raw in args[first:first + numids]]
    replies: List[int] = []
    deleted = False
    for sid in ids:
        k = key_of(sid)
        if not group.remove_pending_k(k):
            replies.append(-1)
            continue
        if policy == ACKED and referenced(stream, k):
            replies.append(2)
            continue
        if policy != KEEPREF:
            drop_references(stream, k)
        deleted = stream.delete(sid) or deleted
        replies.append(1)
    if deleted:
        ctx.modified(key)
        ctx.notify("xdel", key)
    return replies


SPECS: Tuple[CommandSpec, ...] = (
    spec(
        "xdelex",
        -5,
        "write fast",
        xdelex,
        since="8.2.0",
        feature="stream_ref_policies",
        summary="Deletes one or multiple entries from the stream.",
        complexity="O(1) for each single item to delete in the stream, regardless of the stream size.",
    ),
    spec(
        "xackdel",
        -6,
        "write fast",
        xackdel,
        since="8.2.0",
        feature="stream_ref_policies",
        summary="Acknowledges and deletes one or multiple messages for a stream consumer group.",
        complexity="O(1) for each entry ID processed.",
    ),
)
