"""XRANGE, XREVRANGE, XLEN and XDEL (spec §2.3–2.5).

``XRANGE key start end [COUNT count]`` / ``XREVRANGE key end start [COUNT count]``
``XLEN key``
``XDEL key id [id ...]``

XRANGE/XREVRANGE parse the *start* bound first (for XREVRANGE that is the third argument), then the
end bound, then COUNT options, and only then look the key up. XDEL looks the key up before parsing
any ID. XDEL dirties the key and notifies ``xdel`` only if it removed something; it never wakes
blocked readers.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..errors import ReplyError
from ..ids import parse_range_end_key, parse_range_start_key, parse_strict_id
from ..reply import EntryReply
from .base import CommandSpec, Context, cstr, parse_count, spec


def _range(ctx: Context, args: List[bytes], rev: bool) -> Optional[List[EntryReply]]:
    key = args[0]
    start = parse_range_start_key(args[2] if rev else args[1])
    end = parse_range_end_key(args[1] if rev else args[2])
    count = -1
    j = 3
    argc = len(args)
    while j < argc:
        opt = args[j]
        if (opt == b"COUNT" or cstr(opt).lower() == b"count") and argc - j - 1 >= 1:
            count = max(parse_count(args[j + 1]), 0)
            j += 2
        else:
            raise ReplyError("SYNTAX")
    stream = ctx.lookup(key)
    if stream is None:
        return []
    if count == 0:
        return None
    return stream.reply_range(start, end, count if count > 0 else 0, rev)


_COUNT_T = (b"COUNT", b"count")


def xrange(ctx: Context, args: List[bytes]) -> Optional[List[EntryReply]]:
    """XRANGE: live entries with ``start <= id <= end`` ascending; ``[]`` for a missing key, nil for COUNT <= 0.

    O(log n + k) for k entries returned. ``key start end COUNT n`` (n > 0) takes a shortcut: the same
    parse order (start, end, COUNT), then the lookup.
    """
    if len(args) == 5 and args[3] in _COUNT_T:
        start = parse_range_start_key(args[1])
        end = parse_range_end_key(args[2])
        count = parse_count(args[4])
        if count > 0:  # else the general path answers (nil for an existing key)
            stream = ctx.lookup(args[0])
            return [] if stream is None else stream.reply_range(start, end, count)
    return _range(ctx, args, rev=False)


def xrevrange(ctx: Context, args: List[bytes]) -> Optional[List[EntryReply]]:
    """XREVRANGE: as XRANGE, descending; arguments are ``end start``. O(log n + k)."""
    return _range(ctx, args, rev=True)


def xlen(ctx: Context, args: List[bytes]) -> int:
    """XLEN: number of live entries, 0 for a missing key. O(1)."""
    stream = ctx.lookup(args[0])
    return 0 if stream is None else len(stream)


def xdel(ctx: Context, args: List[bytes]) -> int:
    """XDEL: delete entries by ID; reply how many were live. All IDs are parsed before any deletion.

    O(log n) per ID.
    """
    key = args[0]
    stream = ctx.lookup(key)
    if stream is None:
        return 0
    ids = [parse_strict_id(raw) for raw in args[1:]]
    deleted = 0
    for sid in ids:
        if stream.delete(sid):
            deleted += 1
    if deleted:
        ctx.modified(key)
        ctx.notify("xdel", key)
    return deleted


SPECS: Tuple[CommandSpec, ...] = (
    spec(
        "xrange",
        -4,
        "readonly",
        xrange,
        summary="Returns the messages from a stream within a range of IDs.",
        complexity=(
            "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking "
            "for the first 10 elements with COUNT), you can consider it O(1)."
        ),
    ),
    spec(
        "xrevrange",
        -4,
        "readonly",
        xrevrange,
        summary="Returns the messages from a stream within a range of IDs in reverse order.",
        complexity=(
            "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for "
            "the first 10 elements with COUNT), you can consider it O(1)."
        ),
    ),
    spec("xlen", 2, "readonly fast", xlen, summary="Returns the number of messages in a stream.", complexity="O(1)"),
    spec(
        "xdel",
        -3,
        "write fast",
        xdel,
        summary="Returns the number of messages after removing them from a stream.",
        complexity="O(1) for each single item to delete in the stream, regardless of the stream size.",
    ),
)
