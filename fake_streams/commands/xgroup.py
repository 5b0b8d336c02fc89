"""XGROUP CREATE / SETID / DESTROY / CREATECONSUMER / DELCONSUMER / HELP (spec §2.7; ``xgroupCommand``).

``XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD entries-read]``
``XGROUP SETID key group id|$ [ENTRIESREAD entries-read]``
``XGROUP DESTROY key group`` · ``XGROUP CREATECONSUMER key group consumer`` ·
``XGROUP DELCONSUMER key group consumer`` · ``XGROUP HELP``

Handlers receive the arguments after the subcommand name (``args[0]`` = key = argv[2]); the
transport has checked each subcommand's arity. Order, as in the server:

1. options from argv[5] (CREATE: ``MKSTREAM``, ``ENTRIESREAD n``; SETID: ``ENTRIESREAD n``);
2. key: WRONGTYPE; unless MKSTREAM, a missing key is an error for every subcommand;
3. unless MKSTREAM, SETID / CREATECONSUMER / DELCONSUMER need the group (NOGROUP);
4. the subcommand's own argc rule (CREATE 5–8, SETID 5 or 7) and ID parsing.

Side effects (checked on Redis 7.0.15 and Valkey 9.1.2): only MKSTREAM dirties WATCH
(``ctx.modified``) and signals the key ready (a new stream key); DESTROY signals the key ready so
blocked XREADGROUP clients get NOGROUP. Events: ``xgroup-create``, ``xgroup-setid``,
``xgroup-destroy`` / ``xgroup-createconsumer`` / ``xgroup-delconsumer`` only when something changed.

Error texts that quote the subcommand use argv[1] as typed (``ctx.argv``).

Costs: O(log g) group lookup; CREATECONSUMER O(log c); DELCONSUMER O(k log p) for k pending entries
of the consumer; DESTROY O(log g).
"""

from __future__ import annotations

from typing import List, Tuple

from ..errors import ReplyError
from ..groups import INVALID_ENTRIES_READ, ConsumerGroup, create_group, destroy_group
from ..ids import MIN_ID, parse_id, parse_strict_id
from ..reply import OK, Status, help_reply
from ..stream import Stream
from .base import Context, cstr, parse_count, spec

_HELP = (
    b"CREATE <key> <groupname> <id|$> [option]",
    b"    Create a new consumer group. Options are:",
    b"    * MKSTREAM",
    b"      Create the empty stream if it does not exist.",
    b"    * ENTRIESREAD entries_read",
    b"      Set the group's entries_read counter (internal use).",
    b"CREATECONSUMER <key> <groupname> <consumer>",
    b"    Create a new consumer in the specified group.",
    b"DELCONSUMER <key> <groupname> <consumer>",
    b"    Remove the specified consumer.",
    b"DESTROY <key> <groupname>",
    b"    Remove the specified group.",
    b"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    b"    Set the current group ID and entries_read counter.",
)


def _syntax_error(ctx: Context) -> ReplyError:
    """``addReplySubcommandSyntaxError``: quotes argv[1] as typed (%.128s)."""
    return ReplyError("SUBCOMMAND_SYNTAX", subcommand=ctx.argv[1][:128], container="XGROUP")


def _parse_options(ctx: Context, args: List[bytes], subcommand: bytes) -> Tuple[bool, int]:
    """Options from argv[5] on: ``(mkstream, entries_read)``. O(argc)."""
    mkstream = False
    entries_read = INVALID_ENTRIES_READ
    i = 3
    while i < len(args):
        token = cstr(args[i]).upper()  # strcasecmp: text after a NUL is ignored
        if subcommand == b"CREATE" and token == b"MKSTREAM":
            mkstream = True
            i += 1
        elif token == b"ENTRIESREAD" and i + 1 < len(args):
            entries_read = parse_count(args[i + 1])
            if entries_read < 0 and entries_read != INVALID_ENTRIES_READ:
                raise ReplyError("ENTRIESREAD_INVALID")
            i += 2
        else:
            raise _syntax_error(ctx)
    return mkstream, entries_read


def _require_stream(ctx: Context, args: List[bytes]) -> Stream:
    """Step 2 without MKSTREAM: the stream at ``args[0]`` (WRONGTYPE; a missing key is an error). O(1)."""
    stream = ctx.lookup(args[0])
    if stream is None:
        raise ReplyError("XGROUP_KEY_MISSING")
    return stream


def _require_group(ctx: Context, args: List[bytes]) -> Tuple[Stream, ConsumerGroup]:
    """Steps 2–3 of SETID / CREATECONSUMER / DELCONSUMER: the stream and its group ``args[1]`` (NOGROUP). O(log g)."""
    stream = _require_stream(ctx, args)
    group = stream.groups.get(args[1])
    if group is None:
        raise ReplyError("NOGROUP_FOR_KEY", group=args[1], key=args[0])
    return stream, group


def _capped(ctx: Context, stream: Stream, entries_read: int) -> int:
    """ENTRIESREAD as stored: capped at the stream's entries-added on ``entriesread_capped`` profiles (Redis 8.2.2+,
    #14259), else as given (the lag can then be negative). O(1)."""
    if ctx.profile.has("entriesread_capped") and entries_read > stream.entries_added:
        return stream.entries_added
    return entries_read


def xgroup_create(ctx: Context, args: List[bytes]) -> Status:
    """XGROUP CREATE: a group at ``id`` (``$`` = the stream's last ID), optionally creating the stream. O(log g)."""
    mkstream, entries_read = _parse_options(ctx, args, b"CREATE")
    stream = ctx.lookup(args[0]) if mkstream else _require_stream(ctx, args)
    if len(args) > 6:
        raise _syntax_error(ctx)
    key, name, raw_id = args[0], args[1], args[2]
    if cstr(raw_id) == b"$":
        last_id = stream.last_id if stream is not None else MIN_ID
    else:
        last_id = parse_strict_id(raw_id)
    if stream is None:  # MKSTREAM: the command can no longer fail
        stream = ctx.create(key)
        ctx.signal_ready(key)
        ctx.modified(key)
    if create_group(stream, name, last_id, _capped(ctx, stream, entries_read)) is None:
        raise ReplyError("BUSYGROUP")
    ctx.notify("xgroup-create", key)
    return OK


def xgroup_setid(ctx: Context, args: List[bytes]) -> Status:
    """XGROUP SETID: move the group's ``last_id`` (non-strict ID; ``$`` = last ID); ``entries_read`` = n or -1. O(log g)."""
    _, entries_read = _parse_options(ctx, args, b"SETID")
    stream, group = _require_group(ctx, args)
    if len(args) not in (3, 5):
        raise _syntax_error(ctx)
    raw_id = args[2]
    group.last_id = stream.last_id if cstr(raw_id) == b"$" else parse_id(raw_id)
    group.entries_read = _capped(ctx, stream, entries_read)
    ctx.notify("xgroup-setid", args[0])
    return OK


def xgroup_destroy(ctx: Context, args: List[bytes]) -> int:
    """XGROUP DESTROY: 1 if the group existed (blocked XREADGROUPs on the key are woken), else 0. O(log g)."""
    stream = _require_stream(ctx, args)
    if args[1] not in stream.groups:
        return 0
    destroy_group(stream, args[1])
    ctx.notify("xgroup-destroy", args[0])
    ctx.signal_ready(args[0])
    return 1


def xgroup_createconsumer(ctx: Context, args: List[bytes]) -> int:
    """XGROUP CREATECONSUMER: 1 if created (``seen_time = now``, never active), 0 if it existed. O(log c)."""
    _, group = _require_group(ctx, args)
    name = args[2]
    if group.get_consumer(name) is not None:
        return 0
    group.create_consumer(name, ctx.now_ms)
    ctx.notify("xgroup-createconsumer", args[0])
    return 1


def xgroup_delconsumer(ctx: Context, args: List[bytes]) -> int:
    """XGROUP DELCONSUMER: drop the consumer and its pending entries; returns how many it had. O(k log p)."""
    _, group = _require_group(ctx, args)
    if group.get_consumer(args[2]) is None:
        return 0
    pending = group.delete_consumer(args[2])
    ctx.notify("xgroup-delconsumer", args[0])
    return pending


def xgroup_help(ctx: Context, args: List[bytes]) -> List[Status]:
    """XGROUP HELP: the help lines (the footer differs in R7.0). O(1)."""
    header = b"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    return help_reply((header, *_HELP, b"HELP", ctx.profile.help_footer))


SPECS = (
    spec(
        "xgroup",
        -2,
        "",
        None,
        summary="A container for consumer groups commands.",
        complexity="Depends on subcommand.",
    ),
    spec("xgroup|create", -5, "write denyoom", xgroup_create, summary="Creates a consumer group.", complexity="O(1)"),
    spec(
        "xgroup|setid",
        -5,
        "write",
        xgroup_setid,
        summary="Sets the last-delivered ID of a consumer group.",
        complexity="O(1)",
    ),
    spec(
        "xgroup|destroy",
        4,
        "write",
        xgroup_destroy,
        summary="Destroys a consumer group.",
        complexity="O(N) where N is the number of entries in the group's pending entries list (PEL).",
    ),
    spec(
        "xgroup|createconsumer",
        5,
        "write denyoom",
        xgroup_createconsumer,
        since="6.2.0",
        summary="Creates a consumer in a consumer group.",
        complexity="O(1)",
    ),
    spec(
        "xgroup|delconsumer",
        5,
        "write",
        xgroup_delconsumer,
        summary="Deletes a consumer from a consumer group.",
        complexity="O(1)",
    ),
    spec(
        "xgroup|help",
        2,
        "loading stale",
        xgroup_help,
        summary="Returns helpful text about the different subcommands.",
        complexity="O(1)",
    ),
)
