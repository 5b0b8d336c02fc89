"""XREAD and XREADGROUP: one implementation, like ``xreadCommand`` (spec §2.6, §2.9, §2.10, §3).

``XREAD [COUNT count] [MAXCOUNT maxcount] [MAXSIZE maxsize] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]``

``XREADGROUP GROUP group consumer [COUNT count] [MAXCOUNT maxcount] [MAXSIZE maxsize] [BLOCK milliseconds] [CLAIM min-idle-time] [NOACK] STREAMS key [key ...] id [id ...]``

``MAXCOUNT`` / ``MAXSIZE`` (profiles with ``read_caps``, Redis 8.10+): one budget for the whole reply, see
:mod:`fake_streams.readcaps`; what does not fit is neither sent nor delivered/claimed (a woken client's re-run
applies them again).

``CLAIM`` (profiles with ``xreadgroup_claim``, Redis 8.4+): see :func:`_claim_then_deliver`; a client blocked
with it is also re-run when a pending entry reaches ``min-idle-time`` (``BlockRequest.recheck_ms``).

Three passes, in the server's order; nothing changes before the third, so an error leaves no trace:

1. :func:`parse_read_options` — options left to right (repeats allowed, the last wins);
2. :func:`_resolve` — per stream, in key order: type, group, then the ID token (``$``, ``+``, ``>``, ID);
3. :func:`_serve` — a stream is served iff its last *live* entry is newer than the resolved ID
   (XREAD) or than the group's ``last_id`` (XREADGROUP ``>``); XREADGROUP with any other ID reads
   the consumer's own PEL and is always served. A key named twice is served twice.

Nothing served: nil without BLOCK, inside MULTI/EXEC, or from a script (R7.4+; R7.0/R7.2 refuse
BLOCK in scripts while parsing). Otherwise the handler returns a
:class:`~fake_streams.commands.base.BlockRequest`: ``keys`` (each once, argument order),
``timeout_ms`` (relative ms as given, 0 = forever), ``args`` with every ``$`` rewritten to the ID it
resolved to (R7.2+ re-run the command with these args through this same handler, which re-blocks by
returning a new BlockRequest), ``unblock_on_nokey`` for XREADGROUP, and, for profiles without
``blocked_reprocess`` (R7.0), ``saved`` = a :class:`SavedRead`.

R7.0 blocking model — :func:`serve_blocked_r70` contract. The blocking layer calls
``serve_blocked_r70(ctx, key, saved)`` for each client blocked on a signalled ``key`` (FIFO order),
after the signalling command / EXEC / script has finished. It must also call it when the key was
deleted or replaced by another type, if the client was blocked with ``unblock_on_nokey``.
``ctx`` is the *blocked* client's context (its RESP protocol; ``now_ms`` = now). Outcomes:

* returns ``None`` — not served, the client stays blocked (same deadline);
* returns a reply — a single-key reply for ``key`` only (RESP2 ``[[key, entries]]``, RESP3
  ``{key: entries}``); send it and unblock the client;
* raises :class:`~fake_streams.errors.ReplyError` — ``BLOCKED_KEY_GONE_R70`` (XREADGROUP, key
  missing or not a stream) or ``BLOCKED_NOGROUP_R70`` (group destroyed); send it and unblock.

A client is served iff ``stream.last_id`` (not the last live entry) is greater than the saved ID
(for XREADGROUP: the group's current ``last_id``), with COUNT as given or 1000 when it was 0/absent;
so an XADD+XDEL in one EXEC serves ``[[key, []]]``. The consumer is created only then.

Side effects: no ``signalModifiedKey`` (a WATCHed key is not dirtied by XREADGROUP — checked on
Redis 7.0.15 and Valkey 9.1.2); event ``xgroup-createconsumer`` when a consumer is created. Consumers
are created for every stream of the command on ``eager_consumer_creation`` profiles (R7.2+), else
only for served streams; ``seen_time = now`` whenever the consumer is looked up.

Costs: per stream O(log n) to decide and to start iterating, O(1) per entry returned; XREADGROUP
``>`` appends each delivered entry to the group and consumer PELs (O(1) each when the IDs are above
every pending one, else O(log p + L)); history reads are O(log p + k) over the consumer PEL plus one
O(log n) stream lookup per entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple, Union

from ..errors import ReplyError
from ..groups import (
    INVALID_ENTRIES_READ,
    Consumer,
    ConsumerGroup,
    PendingEntry,
    advance_entries_read,
    counter_usable,
    has_tombstones,
)
from ..ids import MAX_ID, MIN_ID, MIN_KEY, StreamID, id_of, key_of, parse_i64, parse_strict_id
from ..readcaps import ReadBudget
from ..reply import EntryReply, Reply, as_i64, entries_of, keyed_reply
from ..stream import Stream
from .base import BlockRequest, Context, cstr, parse_count, seen_consumer, spec

#: ``XREAD_BLOCKED_DEFAULT_COUNT``: R7.0 serves a woken client at most this many entries when COUNT is 0.
BLOCKED_DEFAULT_COUNT_R70 = 1000
#: Internal form of ``>``; an explicit ``18446744073709551615-18446744073709551615`` means the same.
NEW_ENTRIES = MAX_ID
_INT64_MAX = (1 << 63) - 1

Resolved = Tuple[Optional[Stream], Optional[ConsumerGroup], StreamID]


class ReadOptions:
    """The parsed options of one XREAD / XREADGROUP call."""

    __slots__ = ("is_group", "count", "timeout_ms", "group", "consumer", "noack", "streams_at", "claim", "maxcount",
                 "maxsize")

    def __init__(self, is_group: bool) -> None:
        self.is_group = is_group
        self.count = 0  # 0 = unlimited
        self.timeout_ms: Optional[int] = None  # None = no BLOCK; 0 = forever
        self.group: Optional[bytes] = None  # set iff XREADGROUP (checked after the scan)
        self.consumer = b""
        self.noack = False
        self.streams_at = -1  # index in args of the first key
        self.claim: Optional[int] = None  # CLAIM min-idle-time (Redis 8.4+), None = not given
        self.maxcount: Optional[int] = None  # MAXCOUNT (Redis 8.10+), None = not given
        self.maxsize: Optional[int] = None  # MAXSIZE in bytes (Redis 8.10+), None = not given

    def budget(self, protocol: int) -> Optional[ReadBudget]:
        """The MAXCOUNT / MAXSIZE budget of this read, or None without them."""
        if self.maxcount is None and self.maxsize is None:
            return None
        return ReadBudget(self.maxcount, self.maxsize, protocol)

    def keys(self, args: List[bytes]) -> List[bytes]:
        half = (len(args) - self.streams_at) // 2
        return args[self.streams_at : self.streams_at + half]

    def id_args(self, args: List[bytes]) -> List[bytes]:
        half = (len(args) - self.streams_at) // 2
        return args[self.streams_at + half :]

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"ReadOptions({fields})"


#: option tokens as clients usually spell them → the upper-case token (others go through cstr().upper())
_TOKENS = {t: t for t in (b"BLOCK", b"COUNT", b"STREAMS", b"GROUP", b"NOACK", b"CLAIM", b"MAXCOUNT", b"MAXSIZE")}
_TOKENS.update({t.lower(): t for t in list(_TOKENS)})


@dataclass
class SavedRead:
    """What an R7.0 blocked client remembers (``c->bpop``): see :func:`serve_blocked_r70`."""

    ids: Dict[bytes, StreamID]  # per key, the first occurrence's resolved ID
    count: int  # COUNT, or BLOCKED_DEFAULT_COUNT_R70
    group: Optional[bytes]  # None for XREAD
    consumer: bytes
    noack: bool


# ------------------------------------------------------------------------------------------- parsing
def parse_block_timeout(ctx: Context, raw: bytes) -> int:
    """``getTimeoutFromObjectOrReply(…, UNIT_MILLISECONDS)``: the BLOCK value in ms (0 = forever). O(1)."""
    value = parse_i64(raw)
    if value is None:
        raise ReplyError("TIMEOUT_NOT_INTEGER")
    if value < 0:
        raise ReplyError("TIMEOUT_NEGATIVE")
    if value > 0 and ctx.profile.has("block_timeout_range_check") and value > _INT64_MAX - ctx.now_ms:
        raise ReplyError("TIMEOUT_OUT_OF_RANGE")
    return value


def parse_read_options(ctx: Context, args: List[bytes], is_group: bool) -> ReadOptions:
    """Scan the options left to right, stopping at STREAMS. Reads no keys. O(argc)."""
    opts = ReadOptions(is_group)
    n = len(args)
    i = 0
    while i < n:
        more = n - i - 1
        raw = args[i]
        token = _TOKENS.get(raw) or cstr(raw).upper()  # strcasecmp: text after a NUL is ignored
        if token == b"BLOCK" and more:
            if ctx.from_script and not ctx.profile.has("block_allowed_in_scripts"):
                raise ReplyError("BLOCK_IN_SCRIPT", command=ctx.argv[0])  # argv[0] as typed
            i += 1
            opts.timeout_ms = parse_block_timeout(ctx, args[i])
        elif token == b"COUNT" and more:
            i += 1
            opts.count = max(0, parse_count(args[i]))
        elif token == b"STREAMS" and more:
            opts.streams_at = i + 1
            if (n - opts.streams_at) % 2:
                raise ReplyError("UNBALANCED_XREADGROUP" if is_group else "UNBALANCED_XREAD")
            break
        elif token == b"GROUP" and more >= 2:
            if not is_group:
                raise ReplyError("XREAD_GROUP_OPTION")
            opts.group, opts.consumer = args[i + 1], args[i + 2]
            i += 2
        elif token == b"NOACK":
            if not is_group:
                raise ReplyError("XREAD_NOACK_OPTION")
            opts.noack = True
        elif token == b"CLAIM" and more and ctx.profile.has("xreadgroup_claim"):
            if not is_group:
                raise ReplyError("XREAD_CLAIM_OPTION")
            i += 1
            min_idle = parse_i64(args[i])
            if min_idle is None:
                raise ReplyError("CLAIM_NOT_INTEGER")
            if min_idle < 0:
                raise ReplyError("CLAIM_NEGATIVE")
            opts.claim = min_idle  # repeated: the last one counts
        elif token in (b"MAXCOUNT", b"MAXSIZE") and more and ctx.profile.has("read_caps"):
            i += 1
            cap = parse_count(args[i])
            if cap <= 0:
                raise ReplyError("MAXCOUNT_NOT_POSITIVE" if token == b"MAXCOUNT" else "MAXSIZE_NOT_POSITIVE")
            if token == b"MAXCOUNT":
                opts.maxcount = cap  # repeated: the last one counts
            else:
                opts.maxsize = cap
        else:
            raise ReplyError("SYNTAX")
        i += 1
    if opts.streams_at < 0:
        raise ReplyError("SYNTAX")
    if is_group and opts.group is None:
        raise ReplyError("XREADGROUP_MISSING_GROUP")
    if opts.maxcount is not None and opts.count and opts.maxcount < opts.count:
        raise ReplyError("MAXCOUNT_BELOW_COUNT")
    return opts


def _resolve(ctx: Context, opts: ReadOptions, args: List[bytes]) -> List[Resolved]:
    """Per stream, in key order: WRONGTYPE, NOGROUP, then the ID token. Changes nothing. O(N log g)."""
    resolved: List[Resolved] = []
    for key, arg in zip(opts.keys(args), opts.id_args(args)):
        raw = cstr(arg) if 0 in arg else arg  # the special tokens compare with strcmp
        stream = ctx.lookup(key)
        if stream is not None:  # xreadCommand looks each key up again to serve it (OBJECT FREQ counts both)
            ctx.lookup(key)
        group = None
        if opts.group is not None:  # XREADGROUP
            group = stream.groups.get(opts.group) if stream is not None else None
            if group is None:
                raise ReplyError("XREADGROUP_NOGROUP", key=key, group=opts.group)
        if raw == b"$":
            if opts.is_group:
                raise ReplyError("XREADGROUP_DOLLAR")
            gt = stream.last_id if stream is not None else MIN_ID
        elif raw == b"+" and ctx.profile.has("xread_plus_id"):
            if opts.is_group:
                raise ReplyError("XREADGROUP_PLUS")
            if stream is None:
                gt = MIN_ID
            else:
                before_last = stream.last_id.decr()
                if before_last is not None:
                    gt = before_last
                elif ctx.profile.has("xread_plus_empty_nil"):
                    gt = MIN_ID  # nothing is newer: nil, or BLOCK waits for the first entry
                else:
                    raise ReplyError("XREAD_LAST_ID_ZERO")
        elif raw == b">":
            if not opts.is_group:
                raise ReplyError("XREAD_GT_ID")
            gt = NEW_ENTRIES
        else:
            gt = parse_strict_id(arg)
        resolved.append((stream, group, gt))
    return resolved


# ------------------------------------------------------------------------------------------- serving
def _has_newer(stream: Stream, gt: StreamID) -> bool:
    """Whether the last live entry is newer than ``gt`` (``streamLastValidID`` > gt). O(1)."""
    last = stream.last_valid_key()
    return last is not None and last > key_of(gt)


def _entries_after(stream: Stream, gt: StreamID, count: int) -> List[EntryReply]:
    """Reply entries after ``gt``, at most ``count`` (0 = all). O(log n + k)."""
    _, encs, fields = stream.slice_after(key_of(gt), count)
    return entries_of(encs, fields)


def _deliver_new(ctx: Context, stream: Stream, group: ConsumerGroup, consumer: Consumer, count: int, noack: bool,
                 now_ms: Optional[int] = None) -> List[EntryReply]:
    """``>`` delivery (spec §2.9): entries after the group's ``last_id``, at most ``count`` (0 = all).

    Each entry advances ``entries_read``/``last_id`` and, unless NOACK, is recorded in the PEL (an ID
    already pending moves to this consumer with its count reset) and marks the consumer active.
    O(log n + k) for k entries when they are newer than every pending ID (the usual case: PEL appends),
    else O(log n + k (log p + L)). ``now_ms``: the handler's ``ctx.now_ms`` if it has read it already.
    """
    now = ctx.now_ms if now_ms is None else now_ms
    keys, encs, fields = stream.slice_after(key_of(group.last_id), count)
    if not keys:
        return []
    behind_first = "lag_behind_first_estimated" in ctx.profile.features  # Redis 8.0+
    reestimate = "reestimating_read_counter" in ctx.profile.features  # Valkey 9.1
    if reestimate:
        counted = (group.entries_read != INVALID_ENTRIES_READ and stream.max_deleted_entry_id == MIN_ID
                   and group.last_id >= stream.first_id)
    else:
        counted = counter_usable(stream, group, behind_first) and (
            stream.max_deleted_entry_id == MIN_ID
            or not has_tombstones(stream, group.last_id if behind_first else id_of(keys[0])))
    if counted:
        group.entries_read += len(keys)  # no tombstone at/after the first ID: none after the later ones either
    else:
        for k in keys:
            sid = id_of(k)
            advance_entries_read(stream, group, sid, behind_first, reestimate)
            group.last_id = sid  # the next entry's check sees this one as the group's last ID
    group.last_id = id_of(keys[-1])
    if not noack:
        group.deliver_batch(keys, encs, consumer, now)
        if "consumer_active_time" in ctx.profile.features:
            consumer.active_time = now
    return entries_of(encs, fields)


def _read_new_one(ctx: Context, key: bytes, name: bytes, consumer_name: bytes, count: int) -> Reply:
    """``XREADGROUP GROUP name consumer [COUNT count] STREAMS key >``: the steps of :func:`_resolve`,
    :func:`_serve` and :func:`keyed_reply` for this one stream, in the same order (WRONGTYPE, NOGROUP,
    eager consumer creation, the newer-entry test, delivery). Nil when nothing is new (no BLOCK here).
    O(log n + k) for k entries delivered above every pending ID.
    """
    stream = ctx.lookup(key)
    if stream is not None:  # xreadCommand's second lookup, to serve (OBJECT FREQ counts both)
        ctx.lookup(key)
    group = stream.groups.get(name) if stream is not None else None
    if stream is None or group is None:
        raise ReplyError("XREADGROUP_NOGROUP", key=key, group=name)
    last_k = stream.last_valid_key()
    newer = last_k is not None and last_k > key_of(group.last_id)
    profile = ctx.profile
    if not newer and "eager_consumer_creation" not in profile.features:
        return None
    now = ctx.now_ms  # (read once: the consumer's seen time and the delivery's)
    consumer = seen_consumer(ctx, key, group, consumer_name, now)
    if not newer:
        return None
    items = _deliver_new(ctx, stream, group, consumer, count, False, now)
    if ctx.protocol == 3:
        return {key: items}
    return [[key, items]]


def _read_history(ctx: Context, stream: Stream, consumer: Consumer, gt: StreamID, count: int,
                  budget: Optional[ReadBudget] = None) -> List[Reply]:
    """The consumer's own PEL after ``gt`` (spec §2.10), at most ``count`` PEL entries (0 = all), and only those
    the ``budget`` takes (MAXCOUNT / MAXSIZE: an entry it refuses is not redelivered).

    A live entry counts as one more delivery; a deleted one is ``[id, nil]`` and its NACK is left as is.
    O(log p + k) plus one O(log n) stream lookup per entry.
    """
    now = ctx.now_ms
    out: List[Reply] = []
    entry_k = stream.entry_k
    for k, nack in consumer.pel.scan_k(key_of(gt), None, False, count):
        found = entry_k(k)
        item: Reply = [nack.id_bytes, None] if found is None else [found[0], list(found[1])]
        if budget is not None and not budget.take(item):
            break
        if found is not None:
            nack.redeliver(now)
        out.append(item)
        if len(out) == count:
            break
    return out


def _fitting(budget: ReadBudget, stream: Stream, after: StreamID, count: int, extra: Tuple[int, ...] = ()) -> int:
    """How many of the entries after ``after`` (at most ``count``, 0 = all) the budget takes, each as its reply
    with ``extra`` elements appended (CLAIM's ``0, 0``): looked at before anything is delivered. O(log n + k)."""
    _, encs, fields = stream.slice_after(key_of(after), count)
    taken = 0
    for item in entries_of(encs, fields):
        if not budget.take([*item, *extra] if extra else item):
            break
        taken += 1
    return taken


def _serve(ctx: Context, opts: ReadOptions, args: List[bytes], resolved: List[Resolved]) -> List[Tuple[bytes, Reply]]:
    """Second pass: the ``(key, entries)`` pairs of every served stream, in argument order. With MAXCOUNT /
    MAXSIZE every stream gets what is left of one :class:`~fake_streams.readcaps.ReadBudget`; once it is
    spent the later streams serve nothing and are not in the reply (their consumers are looked up as before)."""
    eager = ctx.profile.has("eager_consumer_creation")
    budget = opts.budget(ctx.protocol)
    count = opts.count
    served: List[Tuple[bytes, Reply]] = []
    for key, (stream, group, gt) in zip(opts.keys(args), resolved):
        if stream is None:
            continue
        if budget is not None:
            count = budget.limit(opts.count)
            budget.open(key)
        if group is None:  # XREAD
            if (budget is None or not budget.spent) and _has_newer(stream, gt):
                items = _entries_after(stream, gt, count)
                if budget is not None:
                    items = [item for item in items if budget.take(item)]
                    if not items:
                        continue
                    budget.close()
                served.append((key, items))
            continue
        history = gt != NEW_ENTRIES
        consumer = seen_consumer(ctx, key, group, opts.consumer) if eager else None
        if budget is not None and budget.spent:
            continue
        if not history and opts.claim is not None:
            if consumer is None:
                consumer = seen_consumer(ctx, key, group, opts.consumer)
            claimed = _claim_then_deliver(ctx, stream, group, consumer, opts, count, budget)
            if claimed:
                served.append((key, claimed))
                if budget is not None:
                    budget.close()
            continue
        if not history and not _has_newer(stream, group.last_id):
            continue
        if consumer is None:
            consumer = seen_consumer(ctx, key, group, opts.consumer)
        if history:
            served.append((key, _read_history(ctx, stream, consumer, gt, count, budget)))
        else:
            if budget is not None:
                count = _fitting(budget, stream, group.last_id, count)
                if not count:
                    continue
            served.append((key, _deliver_new(ctx, stream, group, consumer, count, opts.noack)))
        if budget is not None:
            budget.close()
    return served


def _claimable(ctx: Context, stream: Stream, group: ConsumerGroup, min_idle: int) -> List[Tuple[int, int, PendingEntry]]:
    """The group's pending entries idle for at least ``min_idle`` ms whose stream entry still exists, longest
    idle first (ties: ID order): ``(delivery_time, key, nack)``. Owner-less (NACKed, Redis 8.8) entries come
    first, in NACK order (the head of the server's time-ordered PEL; they satisfy every ``min_idle``). O(p log p)."""
    now = ctx.now_ms
    entry_k = stream.entry_k
    zone = group.nack_zone
    found = [(nack.delivery_time, k, nack) for k, nack in group.pel.scan_k(MIN_KEY)
             if not nack.consumer.nacked and nack.idle(now) >= min_idle and entry_k(k) is not None]
    found.sort(key=lambda item: (item[0], item[1]))
    if zone:
        found[:0] = [(0, k, nack) for k, nack in zone.fifo() if entry_k(k) is not None]
    return found


def _claim_then_deliver(ctx: Context, stream: Stream, group: ConsumerGroup, consumer: Consumer,
                        opts: ReadOptions, count: int, budget: Optional[ReadBudget] = None) -> List[Reply]:
    """``XREADGROUP … CLAIM min-idle-time … >`` for one stream (addendum §2.5): first the group's pending entries
    idle for ``min-idle-time`` (:func:`_claimable`), claimed for ``consumer`` (owner, delivery time = now,
    delivery count + 1; they stay pending under NOACK), then new entries as usual, COUNT bounding the total.
    Every entry has 4 elements: ``[id, fields, idle ms, deliveries before this one]``; new ones ``0, 0``.
    ``count`` is COUNT, or what MAXCOUNT leaves (``budget``: an entry it refuses is neither claimed nor
    delivered). Pending entries whose stream entry is gone are skipped and left in the PEL. O(p log p + k)."""
    assert opts.claim is not None
    now = ctx.now_ms
    out: List[Reply] = []
    for _, k, nack in _claimable(ctx, stream, group, opts.claim):
        if count and len(out) == count:
            break
        found = stream.entry_k(k)
        assert found is not None
        item: Reply = [found[0], list(found[1]), nack.reported_idle(now), as_i64(nack.delivery_count)]
        if budget is not None and not budget.take(item):
            break
        out.append(item)
        group.assign_k(k, nack, consumer)
        nack.delivery_time = now
        nack.delivery_count += 1
    if out and "consumer_active_time" in ctx.profile.features:
        consumer.active_time = now
    left = count - len(out) if count else 0
    if (left or not count) and (budget is None or not budget.spent) and _has_newer(stream, group.last_id):
        if budget is not None:
            left = _fitting(budget, stream, group.last_id, left, (0, 0))
            if not left:
                return out
        for entry in _deliver_new(ctx, stream, group, consumer, left, opts.noack):
            out.append([*entry, 0, 0])
    return out


def claim_recheck_ms(ctx: Context, opts: ReadOptions, resolved: List[Resolved]) -> Optional[int]:
    """Blocked with CLAIM: ms until the first pending entry of a read group reaches ``min-idle-time`` (the
    command must then run again), or ``None``. O(p) per stream."""
    if opts.claim is None:
        return None
    now = ctx.now_ms
    soonest: Optional[int] = None
    for stream, group, gt in resolved:
        if stream is None or group is None or gt != NEW_ENTRIES:
            continue
        for k, nack in group.pel.scan_k(MIN_KEY):
            if stream.entry_k(k) is None:
                continue
            wait = max(1, nack.delivery_time + opts.claim - now)
            soonest = wait if soonest is None else min(soonest, wait)
    return soonest


def _block_request(ctx: Context, opts: ReadOptions, args: List[bytes], resolved: List[Resolved]) -> BlockRequest:
    keys = opts.keys(args)
    rerun = list(args)
    first_id = opts.streams_at + len(keys)
    for i, raw in enumerate(opts.id_args(args)):
        if cstr(raw) == b"$":
            rerun[first_id + i] = resolved[i][2].encode()
    saved = None
    if not ctx.profile.has("blocked_reprocess"):
        ids: Dict[bytes, StreamID] = {}
        for key, (_, _, gt) in zip(keys, resolved):
            ids.setdefault(key, gt)
        saved = SavedRead(ids, opts.count or BLOCKED_DEFAULT_COUNT_R70, opts.group, opts.consumer, opts.noack)
    return BlockRequest(
        keys=list(dict.fromkeys(keys)),
        timeout_ms=opts.timeout_ms or 0,
        args=rerun,
        unblock_on_nokey=opts.is_group,
        saved=saved,
        recheck_ms=claim_recheck_ms(ctx, opts, resolved),
    )


def _xread_generic(ctx: Context, args: List[bytes], is_group: bool) -> Union[Reply, BlockRequest]:
    opts = parse_read_options(ctx, args, is_group)
    resolved = _resolve(ctx, opts, args)
    served = _serve(ctx, opts, args, resolved)
    if served:
        return keyed_reply(ctx.protocol, served)
    if opts.timeout_ms is None or ctx.in_multi or ctx.from_script:
        return None
    return _block_request(ctx, opts, args, resolved)


def xread(ctx: Context, args: List[bytes]) -> Union[Reply, BlockRequest]:
    """XREAD: entries newer than the given IDs; ``None`` (nil) or a BlockRequest when there are none."""
    return _xread_generic(ctx, args, is_group=False)


_GROUP_T = (b"GROUP", b"group")
_COUNT_T = (b"COUNT", b"count")
_STREAMS_T = (b"STREAMS", b"streams")


def xreadgroup(ctx: Context, args: List[bytes]) -> Union[Reply, BlockRequest]:
    """XREADGROUP: new entries for the group (``>``) or the consumer's pending history (any other ID).

    ``GROUP g c [COUNT n] STREAMS key >`` (a consumer loop's read) takes :func:`_read_new_one`, which
    parses nothing else and answers exactly as the general path does.
    """
    n = len(args)
    if n == 8:
        if args[7] == b">" and args[5] in _STREAMS_T and args[3] in _COUNT_T and args[0] in _GROUP_T:
            return _read_new_one(ctx, args[6], args[1], args[2], max(0, parse_count(args[4])))
    elif n == 6 and args[5] == b">" and args[3] in _STREAMS_T and args[0] in _GROUP_T:
        return _read_new_one(ctx, args[4], args[1], args[2], 0)
    return _xread_generic(ctx, args, is_group=True)


# ------------------------------------------------------------------------------ R7.0 blocking model
def serve_blocked_r70(ctx: Context, key: bytes, saved: SavedRead) -> Reply:
    """Serve an R7.0 client blocked on ``key`` from its saved state (module docstring has the contract).

    O(log n) to decide; serving costs as for a synchronous read.
    """
    try:
        stream = ctx.lookup(key)
    except ReplyError:  # WRONGTYPE: the key now holds another type
        stream = None
    if saved.group is None:
        if stream is None or not stream.last_id > saved.ids[key]:
            return None
        items = _entries_after(stream, saved.ids[key], saved.count)
        return keyed_reply(ctx.protocol, [(key, items)])
    if stream is None:
        raise ReplyError("BLOCKED_KEY_GONE_R70")
    group = stream.groups.get(saved.group)
    if group is None:
        raise ReplyError("BLOCKED_NOGROUP_R70")
    if not stream.last_id > group.last_id:
        return None
    consumer = seen_consumer(ctx, key, group, saved.consumer)
    items = _deliver_new(ctx, stream, group, consumer, saved.count, saved.noack)
    return keyed_reply(ctx.protocol, [(key, items)])


SPECS = (
    spec(
        "xread",
        -4,
        "blocking readonly",
        xread,
        summary="Returns messages from multiple streams with IDs greater than the ones requested. "
        "Blocks until a message is available otherwise.",
    ),
    spec(
        "xreadgroup",
        -7,
        "blocking write",
        xreadgroup,
        summary="Returns new or historical messages from a stream for a consumer in a group. "
        "Blocks until a message is available otherwise.",
        complexity="For each stream mentioned: O(M) with M being the number of elements returned. If M is constant "
        "(e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side "
        "when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the "
        "stream getting new data.",
    ),
)
