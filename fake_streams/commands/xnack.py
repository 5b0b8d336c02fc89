"""XNACK (Redis 8.8; addendum streams-redis8.md §2.11; profile feature ``xnack``): release pending entries of a
consumer group without acknowledging them.

``XNACK key group <SILENT | FAIL | FATAL> IDS numids id [id ...] [RETRYCOUNT count] [FORCE]``

``RETRYCOUNT`` and ``FORCE`` may come before or after the ``IDS`` block, in any order. Order of checks (chosen,
docs/redis8-choices.md; the Tcl tests check each error with every other argument valid): the key's type
(WRONGTYPE), the mode word, the options left to right, a missing ``IDS`` block, then a missing key or group
(NOGROUP), then every ID is parsed before anything changes.

Per ID, in argument order (duplicates are processed and counted again): an entry pending in the group (owned or
already NACKed) becomes owner-less — out of its owner's PEL, delivery time 0, at the tail of the group's NACK
zone (:meth:`~fake_streams.groups.ConsumerGroup.nack_k`) — with delivery count SILENT ``max(0, c - 1)``, FAIL
``c``, FATAL ``LLONG_MAX``, or the RETRYCOUNT; with FORCE an ID not pending whose stream entry exists gets a new
owner-less entry (count RETRYCOUNT, else LLONG_MAX for FATAL, else 0); other IDs are skipped. Reply: how many
were NACKed (an integer, RESP2 = RESP3). Consumers are neither created nor deleted.

Effects: clients blocked in ``XREADGROUP … CLAIM`` on the key are woken (the entries are claimable at once);
no keyspace event and WATCH stays clean (as for XACK and XCLAIM, the other commands that only change a PEL:
chosen). O(k (log n + L)) for k IDs.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..errors import ReplyError
from ..ids import key_of, parse_i64, parse_strict_id
from .base import CommandSpec, Context, cstr, spec

#: FATAL's delivery count (``LLONG_MAX``)
LLONG_MAX = (1 << 63) - 1
SILENT, FAIL, FATAL = "silent", "fail", "fatal"
_MODES = {b"SILENT": SILENT, b"FAIL": FAIL, b"FATAL": FATAL}


class NackOptions:
    __slots__ = ("mode", "first", "numids", "retry_count", "force")

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.first = -1  # index in args of the first ID
        self.numids = 0
        self.retry_count: Optional[int] = None
        self.force = False


def parse_xnack(args: List[bytes]) -> NackOptions:
    """Mode, IDS block and options of XNACK (``args`` after the command name; at least 6). Raises ReplyError. O(argc)."""
    mode = _MODES.get(cstr(args[2]).upper())
    if mode is None:
        raise ReplyError("XNACK_MODE")
    opts = NackOptions(mode)
    i, argc = 3, len(args)
    while i < argc:
        word = cstr(args[i]).upper()
        more = argc - 1 - i
        if word == b"IDS" and more and opts.first < 0:
            n = parse_i64(args[i + 1])
            if n is None or n <= 0:
                raise ReplyError("XNACK_NUMIDS")
            if argc - (i + 2) < n:
                raise ReplyError("XNACK_NUMIDS_MISMATCH")
            opts.first, opts.numids = i + 2, n
            i += 2 + n
            continue
        if word == b"RETRYCOUNT" and more:
            value = parse_i64(args[i + 1])
            if value is None:
                raise ReplyError("NOT_INTEGER")
            if value < 0:
                raise ReplyError("XNACK_RETRYCOUNT_NEGATIVE")
            opts.retry_count = value
            i += 2
            continue
        if word == b"FORCE":
            opts.force = True
            i += 1
            continue
        raise ReplyError("XNACK_UNKNOWN_OPTION", option=args[i])
    if opts.first < 0:
        raise ReplyError("XNACK_NO_IDS")
    return opts


def nacked_count(mode: str, count: int, retry_count: Optional[int]) -> int:
    """The delivery count an XNACK leaves on an entry that had ``count``. O(1)."""
    if retry_count is not None:
        return retry_count
    if mode == SILENT:
        return max(0, count - 1)
    if mode == FATAL:
        return LLONG_MAX
    return count


def forced_count(mode: str, retry_count: Optional[int]) -> int:
    """The delivery count of an entry XNACK … FORCE creates: RETRYCOUNT, else LLONG_MAX for FATAL, else 0. O(1)."""
    if retry_count is not None:
        return retry_count
    return LLONG_MAX if mode == FATAL else 0


def xnack(ctx: Context, args: List[bytes]) -> int:
    """XNACK: the number of IDs NACKed (see the module docstring)."""
    key, name = args[0], args[1]
    stream = ctx.lookup(key)  # WRONGTYPE first
    opts = parse_xnack(args)
    group = stream.groups.get(name) if stream is not None else None
    if stream is None or group is None:
        raise ReplyError("NOGROUP", key=key, group=name)
    ids = [parse_strict_id(raw) for raw in args[opts.first:opts.first + opts.numids]]
    pel = group.pel
    done = 0
    for sid in ids:
        k = key_of(sid)
        nack = pel.get_k(k)
        if nack is not None:
            group.nack_k(k, nack)
            nack.delivery_count = nacked_count(opts.mode, nack.delivery_count, opts.retry_count)
            done += 1
            continue
        if not opts.force:
            continue
        found = stream.entry_k(k)
        if found is None:
            continue
        group.nack_new_k(k, found[0], forced_count(opts.mode, opts.retry_count))
        done += 1
    if done:
        ctx.signal_ready(key)  # XREADGROUP … CLAIM readers: NACKed entries are claimable at once
    return done


SPECS: Tuple[CommandSpec, ...] = (
    spec(
        "xnack",
        -7,
        "write fast",
        xnack,
        since="8.8.0",
        feature="xnack",
        summary="Releases pending messages of a stream consumer group back to the group without acknowledging them.",
        complexity="O(1) for each message ID processed.",
    ),
)
