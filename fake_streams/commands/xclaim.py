"""XCLAIM and XAUTOCLAIM: move pending entries to another consumer (spec §2.13–2.14).

``XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds]
[RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]``

``XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]``

Neither command calls ``signalModifiedKey`` (a WATCHed key stays clean) nor sends a keyspace event
of its own; the only event is ``xgroup-createconsumer`` when the claiming consumer is created.

Profiles: with ``eager_consumer_creation`` (R7.2+, Valkey) the consumer is looked up or created, and
its ``seen_time`` set, as soon as the group is found; without it (R7.0) that happens only when the
first entry is actually claimed, so a call that claims nothing creates no consumer and leaves
``seen_time`` alone. ``consumer_active_time`` profiles set ``active_time = now`` on every claim.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from ..entryindex import Fields
from ..errors import ReplyError
from ..groups import Consumer, ConsumerGroup, PendingEntry
from ..ids import MIN_ID, StreamID, key_of, parse_i64, parse_range_start_key, parse_strict_id
from ..reply import Reply
from ..stream import Stream
from .base import Context, cstr, seen_consumer, spec

#: ``LONG_MAX / max(sizeof(streamID), attempts_factor)``: the largest COUNT XAUTOCLAIM accepts.
XAUTOCLAIM_MAX_COUNT = ((1 << 63) - 1) // 16
#: XAUTOCLAIM examines at most COUNT * this many PEL entries.
ATTEMPTS_FACTOR = 10
#: The server allocates ``COUNT * 16`` bytes up front (``ztrymalloc``) and fails with
#: "Insufficient memory…" when it cannot. Whether that happens depends on the host; the fake fails
#: exactly when the request exceeds the 47-bit user address space of x86-64/arm64 Linux, which no
#: server could ever satisfy (e.g. ``COUNT 576460752303423487``, the largest valid COUNT).
_ALLOC_LIMIT_BYTES = 1 << 47
#: the last cursor an XAUTOCLAIM answered (its bytes object, its 128-bit key, its position in that group's PEL): a loop
#: that passes it back (the way XAUTOCLAIM is used) sends that same object, whose key then needs no parsing (the key
#: is a function of the bytes, so whichever server or thread answered it does not matter; one tuple, replaced whole)
#: and whose place in the PEL is checked before it is sought (IdIndex.slice_near: a stale one is sought)
_last_cursor: Tuple[bytes, int, Tuple[int, int]] = (b"0-0", 0, (-1, 0))
#: the last min-idle-time and options XAUTOCLAIM parsed without error (their bytes, their values): a loop sends equal
#: bytes every time, which then need no parsing (the values are a function of the bytes, whatever server, profile or
#: thread sent them; one tuple, replaced whole). It starts as the parse of ``0`` with no options.
_last_options: Tuple[bytes, List[bytes], int, int, bool] = (b"0", [], 0, 100, False)


def require_group(ctx: Context, key: bytes, name: bytes) -> Tuple[Stream, ConsumerGroup]:
    """The stream and group for XCLAIM/XAUTOCLAIM: WRONGTYPE, or NOGROUP when either is missing. O(log g)."""
    stream = ctx.lookup(key)
    group = stream.groups.get(name) if stream is not None else None
    if stream is None or group is None:
        raise ReplyError("NOGROUP", key=key, group=name)
    return stream, group


def _parse_min_idle(raw: bytes, error: str) -> int:
    value = parse_i64(raw)
    if value is None:
        raise ReplyError(error)
    return max(0, value)


# --------------------------------------------------------------------------------------------- XCLAIM


class _ClaimOptions:
    __slots__ = ("delivery_time", "retry_count", "force", "justid", "last_id")

    def __init__(self) -> None:
        self.delivery_time: Optional[int] = None  # None: neither IDLE nor TIME given
        self.retry_count = -1  # -1: RETRYCOUNT not given (a negative value behaves the same)
        self.force = False
        self.justid = False
        self.last_id = MIN_ID


def parse_xclaim(args: List[bytes], now_ms: int) -> Tuple[int, List[StreamID], _ClaimOptions]:
    """min-idle-time, the IDs and the options of XCLAIM (``args`` from ``min-idle-time`` on). O(k).

    IDs are read silently until the first argument that is not a strict ID; everything from there on
    is an option. Options are case-insensitive and repeatable (the last one wins).
    """
    min_idle = _parse_min_idle(args[0], "XCLAIM_MIN_IDLE")
    ids: List[StreamID] = []
    j = 1
    while j < len(args):
        try:
            ids.append(parse_strict_id(args[j]))
        except ReplyError:
            break
        j += 1
    opts = _ClaimOptions()
    while j < len(args):
        more = len(args) - 1 - j
        opt = cstr(args[j]).upper()  # strcasecmp: text after a NUL is ignored
        if opt == b"FORCE":
            opts.force = True
        elif opt == b"JUSTID":
            opts.justid = True
        elif opt == b"IDLE" and more:
            j += 1
            idle = parse_i64(args[j])
            if idle is None:
                raise ReplyError("XCLAIM_IDLE")
            opts.delivery_time = now_ms - idle
        elif opt == b"TIME" and more:
            j += 1
            opts.delivery_time = parse_i64(args[j])
            if opts.delivery_time is None:
                raise ReplyError("XCLAIM_TIME")
        elif opt == b"RETRYCOUNT" and more:
            j += 1
            retry = parse_i64(args[j])
            if retry is None:
                raise ReplyError("XCLAIM_RETRYCOUNT")
            opts.retry_count = retry
        elif opt == b"LASTID" and more:
            j += 1
            opts.last_id = parse_strict_id(args[j])
        else:
            raise ReplyError("XCLAIM_UNKNOWN_OPTION", option=args[j])
        j += 1
    return min_idle, ids, opts


def xclaim(ctx: Context, args: List[bytes]) -> List[Reply]:
    """XCLAIM. O(k (log n + L)) for k IDs (n = group PEL size, L = PEL chunk size).

    Reply: the claimed entries (or IDs with JUSTID) in argument order; duplicates are processed again.
    IDs whose entry no longer exists are dropped from the PEL and left out of the reply.
    """
    key, group_name, consumer_name = args[0], args[1], args[2]
    stream, group = require_group(ctx, key, group_name)
    now = ctx.now_ms
    min_idle, ids, opts = parse_xclaim(args[3:], now)

    if opts.last_id > group.last_id:
        group.last_id = opts.last_id  # entries_read is left alone
    delivery_time = opts.delivery_time
    if delivery_time is None or delivery_time < 0 or delivery_time > now:
        delivery_time = now

    profile = ctx.profile
    consumer: Optional[Consumer] = None
    if profile.has("eager_consumer_creation"):
        consumer = seen_consumer(ctx, key, group, consumer_name)
    track_active = profile.has("consumer_active_time")

    reply: List[Reply] = []
    pel = group.pel
    for sid in ids:
        k = key_of(sid)
        nack = pel.get_k(k)
        found = stream.entry_k(k)
        if found is None:  # deleted, trimmed or never existed
            if nack is not None:
                group.remove_pending_k(k)
            continue
        if nack is None:
            if not opts.force:
                continue  # FORCE: the min-idle check does not apply to a new NACK
        elif min_idle and now - nack.delivery_time < min_idle:
            continue
        if consumer is None:  # R7.0: looked up / created on the first claim only
            consumer = seen_consumer(ctx, key, group, consumer_name)
        if nack is None:
            nack = group.deliver_k(k, found[0], consumer, now)  # a new NACK, count 1
        else:
            group.assign_k(k, nack, consumer)
        nack.delivery_time = delivery_time
        if opts.retry_count >= 0:
            nack.delivery_count = opts.retry_count
        elif not opts.justid:
            nack.delivery_count += 1
        reply.append(found[0] if opts.justid else [found[0], list(found[1])])
        if track_active:
            consumer.active_time = now
    return reply


# ----------------------------------------------------------------------------------------- XAUTOCLAIM


def parse_xautoclaim(args: List[bytes]) -> Tuple[int, int, int, bool]:
    """min-idle-time, start (as a 128-bit key), COUNT (default 100) and JUSTID of XAUTOCLAIM (``args``: the whole
    command after its name), or its error reply. O(k); what a claim loop sends every time is not parsed again: a
    cursor that XAUTOCLAIM just answered, a min-idle-time and options equal to the last ones parsed."""
    global _last_options
    options = args[5:]
    last = _last_options
    raw = args[4]
    cached = _last_cursor
    if args[3] == last[0] and options == last[1]:  # (bytes and short lists: compared in C)
        return last[2], cached[1] if raw is cached[0] else parse_range_start_key(raw), last[3], last[4]
    min_idle, count, justid = _parse_min_idle_and_options(args[3], raw, options)
    _last_options = (args[3], options, min_idle, count, justid)
    return min_idle, cached[1] if raw is cached[0] else parse_range_start_key(raw), count, justid


def _parse_min_idle_and_options(raw: bytes, start: bytes, options: List[bytes]) -> Tuple[int, int, bool]:
    """min-idle-time (``raw``), COUNT and JUSTID (``options``) of XAUTOCLAIM; the errors in the server's order:
    min-idle-time's, ``start``'s (parsed here for its error only), the options'. O(k)."""
    if raw.isdigit() and len(raw) < 19 and (raw[0] != 0x30 or len(raw) == 1):  # canonical: parse_i64's own fast path
        min_idle = int(raw)
    else:
        min_idle = _parse_min_idle(raw, "XAUTOCLAIM_MIN_IDLE")
    if start is not _last_cursor[0]:
        parse_range_start_key(start)
    count = 100
    justid = False
    j = 0
    n = len(options)
    while j < n:
        more = n - 1 - j
        opt = options[j].upper()
        if 0 in opt:  # (a byte test: far cheaper than b"\0" in)
            opt = cstr(opt)  # strcasecmp: text after a NUL is ignored
        if opt == b"COUNT" and more:
            raw = options[j + 1]
            value = int(raw) if raw.isdigit() and len(raw) < 19 and raw[0] != 0x30 else parse_i64(raw)
            if value is None or not 1 <= value <= XAUTOCLAIM_MAX_COUNT:
                raise ReplyError("XAUTOCLAIM_COUNT")
            count = value
            j += 1
        elif opt == b"JUSTID":
            justid = True
        else:
            raise ReplyError("SYNTAX")
        j += 1
    return min_idle, count, justid


def xautoclaim(ctx: Context, args: List[bytes]) -> List[Reply]:
    """XAUTOCLAIM. O(log n) to seek + O(1) per examined entry (at most COUNT * 10), their stream entries looked up in
    batches of at most COUNT (O(log s) each batch: one slice compare when they are neighbours in the stream);
    the claimed entries then move between consumer PELs in batch (one O(log n + L) seek per run of
    neighbouring keys in a previous owner's PEL; appended to the claimer's PEL when above its keys).

    Scans the group PEL from ``start``, examining at most ``COUNT * 10`` entries and stopping after
    ``COUNT`` results; an entry that no longer exists in the stream is removed from the PEL, reported
    in the third reply element and consumes COUNT. Reply ``[cursor, claimed, deleted]`` where the
    cursor is the first PEL ID not examined, or ``0-0`` when the scan reached the end.
    """
    key, group_name, consumer_name = args[0], args[1], args[2]
    global _last_cursor
    min_idle, start, count, justid = parse_xautoclaim(args)
    stream, group = require_group(ctx, key, group_name)
    if count * 16 > _ALLOC_LIMIT_BYTES:
        raise ReplyError("XAUTOCLAIM_COUNT_MEMORY")

    now = ctx.now_ms
    features = ctx.profile.features  # (set tests, as XREADGROUP's: no Profile.has call each)
    consumer: Optional[Consumer] = None
    if "eager_consumer_creation" in features:
        consumer = seen_consumer(ctx, key, group, consumer_name, now)
    track_active = "consumer_active_time" in features

    attempts = count * ATTEMPTS_FACTOR
    counted = 0 if justid else 1  # JUSTID leaves the delivery counts alone
    claimed: List[Reply] = []
    deleted: List[bytes] = []
    dead: List[int] = []  # PEL keys of deleted entries, removed after the scan
    cursor = b"0-0"
    pel = group.pel
    lo, inclusive = start, True
    near = _last_cursor[2] if args[4] is _last_cursor[0] else (-1, 0)  # (where the cursor's key was in a PEL)
    # The scan goes in windows of the group PEL (which nothing changes before the scan ends): each window holds the
    # min(COUNT left, attempts left) entries examined next, which cannot overrun either, plus one more, the cursor
    # if they run out there. Their entries are looked up in one batch (a slice compare when the PEL holds
    # consecutive entries); the window's claimed entries move to the consumer before the next window is read.
    while True:
        want = count if count < attempts else attempts  # >= 1 here
        if inclusive:  # the first window: at the start, maybe where the last call ended
            window, nacks, at = pel.slice_near(lo, want + 1, near)
        else:
            window, nacks = pel.slice_k(lo, want + 1, False)
            at = (-1, 0)
        more = len(window) > want
        if more:
            after_k = window.pop()
            after = nacks.pop()  # the PEL entry after the window
        elif not window:
            break
        attempts -= len(window)
        found: Sequence[Optional[Fields]] = stream.fields_sorted(window)  # (Sequence[Fields] when None is not in it)
        if not min_idle and None not in found:  # every entry of the window is claimed: in bulk, same effects
            if consumer is None:  # R7.0: looked up / created on the first claim only
                consumer = seen_consumer(ctx, key, group, consumer_name, now)
            group.claim_batch(window, nacks, consumer, now, counted)  # times, counts and owners in one pass
            if justid:
                part: List[Reply] = [nack.id_bytes for nack in nacks]
            else:
                part = [[nack.id_bytes, [*fields]]  # type: ignore[misc]  # fresh lists (no None: checked above; no
                        # cast(List[Fields], …): the subscription costs 0.3 µs at run time)
                        for nack, fields in zip(nacks, found)]
            if claimed:
                claimed += part
            else:
                claimed = part
            count -= len(window)
        else:
            taken_k: List[int] = []  # the window's claimed PEL keys and their NACKs, moved to the consumer below
            taken_n: List[PendingEntry] = []
            for k, nack, fields in zip(window, nacks, found):
                if fields is None:  # deleted or trimmed: leaves the PEL, reported, consumes COUNT
                    dead.append(k)
                    deleted.append(nack.id_bytes)
                    count -= 1
                    continue
                if min_idle and now - nack.delivery_time < min_idle:
                    continue
                if consumer is None:  # R7.0: looked up / created on the first claim only
                    consumer = seen_consumer(ctx, key, group, consumer_name, now)
                taken_k.append(k)
                taken_n.append(nack)
                nack.delivery_time = now
                if justid:
                    claimed.append(nack.id_bytes)
                else:
                    nack.delivery_count += 1
                    claimed.append([nack.id_bytes, [*fields]])  # a fresh list: the reply's
                count -= 1
            if taken_k:
                group.assign_batch(taken_k, taken_n, consumer)  # type: ignore[arg-type]
        if not more:  # the scan reached the end of the PEL: cursor 0-0
            break
        if not (count and attempts):
            cursor = after.id_bytes  # the first PEL entry not examined
            _last_cursor = (cursor, after_k, at)  # (at: the position of the window's last key, the cursor's)
            break
        lo, inclusive = window[-1], False
    if track_active and claimed:  # (an entry claimed: a claimed reply item)
        consumer.active_time = now  # type: ignore[union-attr]
    if dead:
        group.remove_pending_many(dead)
    return [cursor, claimed, deleted]


SPECS = (
    spec(
        "xclaim",
        -6,
        "write fast",
        xclaim,
        since="5.0.0",
        summary="Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered to a consumer group member.",
        complexity="O(log N) with N being the number of messages in the PEL of the consumer group.",
    ),
    spec(
        "xautoclaim",
        -6,
        "write fast",
        xautoclaim,
        since="6.2.0",
        summary="Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to a consumer group member.",
        complexity="O(1) if COUNT is small.",
    ),
)
