"""XSETID (spec §2.8).

``XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]``

Parse order: last-id, then the options left to right (repeatable, each needs a value), then the key
(missing → ``ERR no such key``), then (R7.2+, feature ``xsetid_checks_max_deleted``) last-id against
the current ``max_deleted_entry_id``, then — only if the stream has live entries — last-id against the
last live entry and ENTRIESADDED against the length.

On the server XSETID notifies ``xsetid`` but does not call ``signalModifiedKey``: a WATCHed key is
not dirtied (checked on Redis 7.0.15 and Valkey 9.1.2).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..errors import ReplyError
from ..ids import MIN_ID, StreamID, parse_strict_id
from ..reply import OK, Status
from .base import CommandSpec, Context, cstr, parse_count, spec


def xsetid(ctx: Context, args: List[bytes]) -> Status:
    """XSETID: set ``last_id`` (and optionally ``entries_added`` / ``max_deleted_entry_id``). Reply ``+OK``. O(log n)."""
    key = args[0]
    last_id = parse_strict_id(args[1])
    entries_added: Optional[int] = None
    max_deleted: StreamID = MIN_ID
    argc = len(args)
    i = 2
    while i < argc:
        moreargs = argc - 1 - i
        name = cstr(args[i]).lower()
        if name == b"entriesadded" and moreargs:
            entries_added = parse_count(args[i + 1])
            if entries_added < 0:
                raise ReplyError("ENTRIES_ADDED_NEGATIVE")
        elif name == b"maxdeletedid" and moreargs:
            max_deleted = parse_strict_id(args[i + 1])
            if last_id < max_deleted:
                raise ReplyError("XSETID_BELOW_GIVEN_MAX_DELETED")
        else:
            raise ReplyError("SYNTAX")
        i += 2
    stream = ctx.lookup(key)
    if stream is None:
        raise ReplyError("NO_SUCH_KEY")
    if ctx.profile.has("xsetid_checks_max_deleted") and last_id < stream.max_deleted_entry_id:
        raise ReplyError("XSETID_BELOW_MAX_DELETED")
    top = stream.last_valid_id()
    if top is not None:  # the stream has live entries
        if last_id < top:
            raise ReplyError("XSETID_BELOW_TOP")
        if entries_added is not None and len(stream) > entries_added:
            raise ReplyError("XSETID_ENTRIES_ADDED_SMALL")
    stream.last_id = last_id
    if entries_added is not None:
        stream.entries_added = entries_added
    if max_deleted != MIN_ID:
        stream.max_deleted_entry_id = max_deleted
    ctx.notify("xsetid", key)
    return OK


SPECS: Tuple[CommandSpec, ...] = (
    spec(
        "xsetid",
        -3,
        "write denyoom fast",
        xsetid,
        summary="An internal command for replicating stream values.",
        complexity="O(1)",
    ),
)
