"""XINFO: stream, group and consumer introspection (``xinfoCommand``, spec §2.15).

``XINFO STREAM key [FULL [COUNT count]]`` · ``XINFO GROUPS key`` · ``XINFO CONSUMERS key group`` · ``XINFO HELP``

The transport dispatches ``xinfo|<sub>`` and checks arity; each handler gets the arguments after the
subcommand name. Every subcommand except HELP looks the key up *before* reading its options
(``ERR no such key`` / WRONGTYPE first). Maps go through :func:`~fake_streams.reply.map_reply`
(RESP3 map, RESP2 flat array); "nil" values are nil-bulk (``None``). Times come from ``ctx.now_ms``.

Profiles: without ``consumer_active_time`` (R7.0) consumers have no ``active-time`` / ``inactive``
field (XINFO CONSUMERS map(3), FULL consumer map(4)); the HELP footer is ``profile.help_footer``; with ``xnack``
(Redis 8.8) each FULL group map has ``nacked-count``.
"""

from __future__ import annotations

from itertools import islice
from typing import Iterable, List, Optional, Tuple, TypeVar

from ..errors import ReplyError
from ..groups import INVALID_ENTRIES_READ, NEVER_ACTIVE, ConsumerGroup, lag_of
from ..idmp import IdmpState, state_of
from ..ids import MAX_ID, MIN_ID, parse_i64
from ..reply import Reply, Status, as_i64, entries, entry, help_reply, map_reply
from ..stream import Stream
from .base import Context, cstr, spec

T = TypeVar("T")

#: ``XINFO STREAM key FULL`` without COUNT (or with a negative COUNT) reports this many items per list.
FULL_DEFAULT_COUNT = 10

_HELP = (
    b"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"CONSUMERS <key> <groupname>",
    b"    Show consumers of <groupname>.",
    b"GROUPS <key>",
    b"    Show the stream consumer groups.",
    b"STREAM <key> [FULL [COUNT <count>]",  # unbalanced bracket: verbatim from the server
    b"    Show information about the stream.",
    b"HELP",
)


def require_stream(ctx: Context, key: bytes) -> Stream:
    """``lookupKeyReadOrReply(..., shared.nokeyerr)`` + ``checkType``: ``ERR no such key`` / WRONGTYPE. O(1)."""
    stream = ctx.lookup(key)
    if stream is None:
        raise ReplyError("NO_SUCH_KEY")
    return stream


def _typed_subcommand(ctx: Context) -> bytes:
    """argv[1] exactly as the client typed it (``addReplySubcommandSyntaxError`` echoes it).

    The Context contract does not carry it yet: a transport that knows it exposes the full argv as
    ``ctx.argv``; otherwise the upper-case name that redis-py sends is used.
    """
    argv = getattr(ctx, "argv", None)
    if argv is not None and len(argv) > 1:
        return bytes(argv[1])
    return b"STREAM"


def _i64(value: Optional[int]) -> Optional[int]:
    """A counter as ``addReplyLongLong`` sends it: ``entries_added`` is a uint64 and the lag/read counters
    are long long in the server, so values past 2^63 - 1 (reachable after ``XSETID … ENTRIESADDED
    9223372036854775807`` and one XADD) come out wrapped to negative. O(1)."""
    return None if value is None else as_i64(value)


def _entries_read(group: ConsumerGroup) -> Optional[int]:
    return None if group.entries_read == INVALID_ENTRIES_READ else _i64(group.entries_read)


def _head(stream: Stream) -> List[Tuple[bytes, Reply]]:
    """The seven fields XINFO STREAM and XINFO STREAM FULL share, in the server's order.

    O(1), plus O(#nodes) for ``radix-tree-nodes`` after the node set changed.
    """
    return [
        (b"length", len(stream)),
        (b"radix-tree-keys", stream.radix_tree_keys),  # listpack nodes (spec §5.1)
        (b"radix-tree-nodes", stream.radix_tree_nodes),  # rax nodes (spec §5.3)
        (b"last-generated-id", stream.last_id.encode()),
        (b"max-deleted-entry-id", stream.max_deleted_entry_id.encode()),
        (b"entries-added", _i64(stream.entries_added)),
        (b"recorded-first-entry-id", stream.first_id.encode()),
    ]


def _first(items: Iterable[T], count: int) -> Iterable[T]:
    """The first ``count`` items (all of them when ``count`` is 0)."""
    return items if count == 0 else islice(items, count)


def parse_xinfo_stream_options(ctx: Context, opts: List[bytes]) -> Optional[int]:
    """None for the summary form, else the FULL COUNT (0 = everything). O(1).

    Accepted shapes: nothing, ``FULL``, ``FULL COUNT n`` (case-insensitive); anything else is the
    subcommand syntax error. ``n`` must be an integer; a negative ``n`` means the default 10.
    """
    if not opts:
        return None
    if len(opts) not in (1, 3) or cstr(opts[0]).upper() != b"FULL":  # strcasecmp
        raise ReplyError("SUBCOMMAND_SYNTAX", subcommand=_typed_subcommand(ctx), container="XINFO")
    if len(opts) == 1:
        return FULL_DEFAULT_COUNT
    if cstr(opts[1]).upper() != b"COUNT":
        raise ReplyError("SUBCOMMAND_SYNTAX", subcommand=_typed_subcommand(ctx), container="XINFO")
    count = parse_i64(opts[2])
    if count is None:
        raise ReplyError("NOT_INTEGER")
    return FULL_DEFAULT_COUNT if count < 0 else count


def xinfo_stream(ctx: Context, args: List[bytes]) -> Reply:
    """XINFO STREAM key [FULL [COUNT count]].

    Summary: map(10), O(log n). FULL: map(9), O(count) entries + per group O(count) PEL entries and
    O(c + c * count) for its c consumers (COUNT 0 = everything).
    """
    stream = require_stream(ctx, args[0])
    count = parse_xinfo_stream_options(ctx, args[1:])
    protocol = ctx.protocol
    pairs = _head(stream)
    if ctx.profile.has("stream_idmp"):  # Redis 8.6: after recorded-first-entry-id (FULL: same place, a choice)
        pairs += list((state_of(stream) or IdmpState()).info_fields(ctx.now_ms))
    if count is None:
        first = stream.first_entry()
        last = stream.last_entry()
        pairs += [
            (b"groups", len(stream.groups)),
            (b"first-entry", entry(*first) if first is not None else None),
            (b"last-entry", entry(*last) if last is not None else None),
        ]
        return map_reply(protocol, pairs)
    pairs += [
        (b"entries", entries(stream.range(MIN_ID, MAX_ID, count))),
        (b"groups", [_full_group(ctx, stream, group, count) for group in stream.groups.values()]),
    ]
    return map_reply(protocol, pairs)


def _full_group(ctx: Context, stream: Stream, group: ConsumerGroup, count: int) -> Reply:
    """One group of XINFO STREAM FULL: map(7), map(8) with Redis 8.8's ``nacked-count``. An owner-less (NACKed)
    entry is listed with consumer ``""`` and delivery time 0; it is in no consumer's list."""
    pending: List[Reply] = [
        [sid.encode(), nack.consumer.name, nack.delivery_time, as_i64(nack.delivery_count)]
        for sid, nack in _first(group.pel.items(), count)
    ]
    with_active = ctx.profile.has("consumer_active_time")
    consumers = []
    for consumer in group.consumers.values():
        fields: List[Tuple[bytes, Reply]] = [(b"name", consumer.name), (b"seen-time", consumer.seen_time)]
        if with_active:
            fields.append((b"active-time", consumer.active_time))
        fields += [
            (b"pel-count", len(consumer.pel)),
            (
                b"pending",
                [[sid.encode(), nack.delivery_time, as_i64(nack.delivery_count)]
                 for sid, nack in _first(consumer.pel.items(), count)],
            ),
        ]
        consumers.append(map_reply(ctx.protocol, fields))
    fields = [
        (b"name", group.name),
        (b"last-delivered-id", group.last_id.encode()),
        (b"entries-read", _entries_read(group)),
        (b"lag", _i64(lag_of(stream, group, ctx.profile.features))),
        (b"pel-count", len(group.pel)),
    ]
    if ctx.profile.has("xnack"):  # Redis 8.8: the NACK zone's size, right after pel-count (a choice: redis8-choices.md)
        fields.append((b"nacked-count", len(group.nacked.pel)))
    fields += [(b"pending", pending), (b"consumers", consumers)]
    return map_reply(ctx.protocol, fields)


def xinfo_groups(ctx: Context, args: List[bytes]) -> List[Reply]:
    """XINFO GROUPS key: map(6) per group, in name order. O(g)."""
    stream = require_stream(ctx, args[0])
    return [
        map_reply(
            ctx.protocol,
            [
                (b"name", group.name),
                (b"consumers", len(group.consumers)),
                (b"pending", len(group.pel)),
                (b"last-delivered-id", group.last_id.encode()),
                (b"entries-read", _entries_read(group)),
                (b"lag", _i64(lag_of(stream, group, ctx.profile.features))),
            ],
        )
        for group in stream.groups.values()
    ]


def xinfo_consumers(ctx: Context, args: List[bytes]) -> List[Reply]:
    """XINFO CONSUMERS key group: map(4) per consumer (map(3) on R7.0), in name order. O(c)."""
    key, name = args[0], args[1]
    stream = require_stream(ctx, key)
    group = stream.groups.get(name)
    if group is None:
        raise ReplyError("NOGROUP_FOR_KEY", group=name, key=key)
    now = ctx.now_ms
    with_active = ctx.profile.has("consumer_active_time")
    reply = []
    for consumer in group.consumers.values():
        fields: List[Tuple[bytes, Reply]] = [
            (b"name", consumer.name),
            (b"pending", len(consumer.pel)),
            (b"idle", max(0, now - consumer.seen_time)),
        ]
        if with_active:
            active = consumer.active_time
            fields.append((b"inactive", NEVER_ACTIVE if active == NEVER_ACTIVE else now - active))
        reply.append(map_reply(ctx.protocol, fields))
    return reply


def xinfo_help(ctx: Context, args: List[bytes]) -> List[Status]:
    """XINFO HELP: nine status lines; the footer differs by profile. O(1)."""
    return help_reply(_HELP + (ctx.profile.help_footer,))


SPECS = (
    spec(
        "xinfo",
        -2,
        "",
        None,
        since="5.0.0",
        summary="A container for stream introspection commands.",
        complexity="Depends on subcommand.",
    ),
    spec(
        "xinfo|consumers",
        4,
        "readonly",
        xinfo_consumers,
        since="5.0.0",
        summary="Returns a list of the consumers in a consumer group.",
        complexity="O(1)",
    ),
    spec(
        "xinfo|groups",
        3,
        "readonly",
        xinfo_groups,
        since="5.0.0",
        summary="Returns a list of the consumer groups of a stream.",
        complexity="O(1)",
    ),
    spec(
        "xinfo|help",
        2,
        "loading stale",
        xinfo_help,
        since="5.0.0",
        summary="Returns helpful text about the different subcommands.",
        complexity="O(1)",
    ),
    spec(
        "xinfo|stream",
        -3,
        "readonly",
        xinfo_stream,
        since="5.0.0",
        summary="Returns information about a stream.",
        complexity="O(1)",
    ),
)
