"""XIDMPRECORD (Redis 8.6.2, #14794; addendum streams-redis8.md §2.10; profile feature ``xidmprecord``).

``XIDMPRECORD key pid iid stream-id`` — the command an AOF rewrite (and librdb's RESP output for 8.6+ targets)
writes after ``XCFGSET`` to rebuild a stream's IDMP map: ``(pid, iid)`` becomes the producer's newest tracked iid,
mapping to the entry ``stream-id``. Reply ``+OK``, also when the pair already maps to that ID (nothing changes).

Version: the release notes put it in 8.6.2, the command page says ``since 8.8.0``; the profiles follow the notes
(8.6.2 is the release that fixed IDMP under ``aof-use-rdb-preamble no``, which needs this command) — the choice
and its reason are in docs/redis8-choices.md ("XIDMPRECORD").

Errors, in this order (the texts are not in the sources; choices): the key (``WRONGTYPE``; ``ERR no such key``, as
XCFGSET), an empty pid / iid (XADD IDMP's texts), the ID (``Invalid stream ID …``, strict: ``-`` / ``+`` refused),
an ID with no entry in the stream, a pair already mapping to another ID. Nothing changes on an error. The
pair is not counted in ``iids-added`` (it restores state, it adds no entry); it ages from the entry ID's ms and
evicts the producer's oldest iid at IDMP-MAXSIZE like an XADD. The key is dirtied (WATCH); no keyspace event.
"""

from __future__ import annotations

from typing import List, Tuple

from ..errors import ReplyError
from ..idmp import state_of
from ..ids import key_of, parse_strict_id
from ..reply import OK, Status
from .base import CommandSpec, Context, spec


def xidmprecord(ctx: Context, args: List[bytes]) -> Status:
    """XIDMPRECORD: track one ``(pid, iid) -> stream-id`` pair. O(log n) (the entry lookup)."""
    key, pid, iid, raw_id = args
    stream = ctx.lookup(key)
    if stream is None:
        raise ReplyError("NO_SUCH_KEY")
    if not pid:
        raise ReplyError("IDMP_EMPTY_PID")
    if not iid:
        raise ReplyError("IDMP_EMPTY_IID")
    sid = parse_strict_id(raw_id)
    if stream.entry_k(key_of(sid)) is None:
        raise ReplyError("XIDMPRECORD_NO_ENTRY")
    enc = sid.encode()
    state = state_of(stream, create=True)
    assert state is not None
    state.expire(ctx.now_ms)
    iids = state.producers.get(pid)
    tracked = iids.get(iid) if iids is not None else None
    if tracked is not None:
        if tracked[0] != enc:
            raise ReplyError("XIDMPRECORD_OTHER_ID")
        return OK
    state.record(pid, iid, enc, counted=False)
    ctx.modified(key)
    return OK


SPECS: Tuple[CommandSpec, ...] = (
    spec(
        "xidmprecord",
        5,
        "write denyoom fast",
        xidmprecord,
        since="8.6.2",
        feature="xidmprecord",
        summary="Records an idempotent producer / idempotent ID pair for a stream entry (used by AOF rewrite).",
        complexity="O(1)",
    ),
)
