"""XACK and XPENDING: acknowledge and inspect a group's pending entries (spec §2.11, §2.12).

``XACK key group id [id ...]``

``XPENDING key group [[IDLE min-idle-time] start end count [consumer]]``

Redis 8.8 owner-less (NACKed) entries: XACK removes them like any other; XPENDING counts them in the summary's
total and range (they have no consumer line), lists them with consumer ``""`` and idle ``-1`` (an IDLE filter
always lets them through: their delivery time is 0), and never under a consumer filter.

Neither command dirties WATCH, sends a keyspace event or touches a consumer's seen/active time
(checked on Redis 7.0.15 and Valkey 9.1.2). Idle times come from ``ctx.now_ms``.

Costs (p = PEL size, L = chunk size of :mod:`~fake_streams.idindex`): XACK O(log p + L) per ID (two
PEL removals). XPENDING summary O(1) for size/min/max plus O(c) over the consumers; extended
O(log p + k) for k entries examined (with IDLE, skipped entries count as examined).
"""

from __future__ import annotations

from typing import List, Optional

from ..errors import ReplyError
from ..ids import encode_key, parse_range_end_key, parse_range_start_key, parse_strict_keys
from ..reply import I64_MAX, Reply, as_i64
from .base import Context, cstr, parse_count, spec

_I64_MIN = -I64_MAX - 1


def xack(ctx: Context, args: List[bytes]) -> int:
    """XACK: how many of the IDs were pending in the group (each counted once) and are now acknowledged.

    A missing key or group answers 0 before the IDs are validated; one invalid ID fails the whole
    call with nothing acknowledged. O(k log k) to sort the k IDs, then one O(log p + L) seek per run of
    neighbouring pending IDs in the group PEL and in each owner's PEL.
    """
    stream = ctx.lookup(args[0])
    group = stream.groups.get(args[1]) if stream is not None else None
    if group is None:
        return 0
    raws = args[2:]
    keys = group.delivered_keys(raws)  # the IDs a delivery just returned: canonical, ascending, distinct
    if keys is not None:
        return group.remove_pending_many(keys, ascending=True)
    keys = parse_strict_keys(raws)  # every ID is valid before anything is acknowledged
    return group.remove_pending_many(keys)


def xpending(ctx: Context, args: List[bytes]) -> List[Reply]:
    """XPENDING: the summary (argc 3) or up to ``count`` pending entries in ``[start, end]``."""
    argc = len(args) + 1
    if argc != 3 and (argc < 6 or argc > 9):
        raise ReplyError("SYNTAX")
    key, name = args[0], args[1]
    extended = argc >= 6
    if extended:
        at = 2  # index of 'start' (argv[3]) in args
        min_idle = 0
        if cstr(args[2]).upper() == b"IDLE":
            min_idle = parse_count(args[3])
            if argc < 8:
                raise ReplyError("SYNTAX")
            at = 4
        count = max(0, parse_count(args[at + 2]))
        lo = parse_range_start_key(args[at])
        hi = parse_range_end_key(args[at + 1])
        consumer_name: Optional[bytes] = args[at + 3] if at + 3 < len(args) else None  # later args are ignored

    stream = ctx.lookup(key)
    group = stream.groups.get(name) if stream is not None else None
    if group is None:
        raise ReplyError("NOGROUP", key=key, group=name)

    if not extended:
        pel = group.pel
        first, last = pel.first_k(), pel.last_k()
        if first is None or last is None:  # nothing pending
            return [0, None, None, None]
        owners = [[c.name, b"%d" % len(c.pel)] for c in group.consumers.values() if c.pel]
        return [len(pel), encode_key(first), encode_key(last), owners]

    if consumer_name is not None:
        consumer = group.get_consumer(consumer_name)
        if consumer is None:
            return []
        pel = consumer.pel
    else:
        pel = group.pel
    now = ctx.now_ms
    out: List[Reply] = []
    if not count:
        return out
    if not min_idle:  # (the common form: reported_idle and as_i64 inlined, no calls per entry)
        append = out.append
        for nack in pel.values_k(lo, hi, count):
            owner = nack.consumer
            if owner.nacked:
                idle = -1
            else:
                idle = now - nack.delivery_time
                if idle < 0:
                    idle = 0
            delivered = nack.delivery_count
            if not _I64_MIN <= delivered <= I64_MAX:
                delivered = as_i64(delivered)
            append([nack.id_bytes, owner.name, idle, delivered])
        return out
    for _, nack in pel.scan_k(lo, hi):
        if now - nack.delivery_time < min_idle:
            continue  # filtered entries do not consume COUNT; a NACKed one (delivery time 0) always passes
        out.append([nack.id_bytes, nack.consumer.name, nack.reported_idle(now), as_i64(nack.delivery_count)])
        if len(out) == count:
            break
    return out


SPECS = (
    spec(
        "xack",
        -4,
        "write fast",
        xack,
        summary="Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.",
        complexity="O(1) for each message ID processed.",
    ),
    spec(
        "xpending",
        -3,
        "readonly",
        xpending,
        summary="Returns the information and entries from a stream consumer group's pending entries list.",
        complexity="O(N) with N being the number of elements returned, so asking for a small fixed number of entries "
        "per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. "
        "When the command returns just the summary and the list of consumers is small, it runs in O(1) time; "
        "otherwise, an additional O(N) time for iterating every consumer.",
    ),
)
