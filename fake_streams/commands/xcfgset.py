"""XCFGSET (Redis 8.6; addendum streams-redis8.md §2.7; profile feature ``stream_idmp``).

``XCFGSET key [IDMP-DURATION idmp-duration] [IDMP-MAXSIZE idmp-maxsize]``

Order of checks (choice where the sources are silent, docs/redis8-choices.md): the key (WRONGTYPE, then
``no such key``), then the parameters left to right — each value is parsed (``string2ll``) and range-checked
where it stands, so ``IDMP-DURATION INVALID IDMP-MAXSIZE`` is the integer error; a name without a value or an
unknown word is a syntax error; no parameter at all is its own error. Nothing changes on an error. A changed
value clears the stream's tracked iids (:meth:`fake_streams.idmp.IdmpState.configure`). Reply ``+OK``;
the key is dirtied (WATCH), no keyspace event (none documented).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..errors import ReplyError
from ..idmp import DURATION_RANGE, MAXSIZE_RANGE, state_of
from ..reply import OK, Status
from .base import CommandSpec, Context, cstr, parse_count, spec


def xcfgset(ctx: Context, args: List[bytes]) -> Status:
    """XCFGSET: set the stream's IDMP-DURATION / IDMP-MAXSIZE. O(1) (+ O(pids) when the map is cleared)."""
    key = args[0]
    stream = ctx.lookup(key)
    if stream is None:
        raise ReplyError("NO_SUCH_KEY")
    duration: Optional[int] = None
    maxsize: Optional[int] = None
    i = 1
    while i < len(args):
        name = cstr(args[i]).upper()
        if name not in (b"IDMP-DURATION", b"IDMP-MAXSIZE") or i + 1 >= len(args):
            raise ReplyError("SYNTAX")
        value = parse_count(args[i + 1])
        if name == b"IDMP-DURATION":
            if not DURATION_RANGE[0] <= value <= DURATION_RANGE[1]:
                raise ReplyError("IDMP_DURATION_RANGE")
            duration = value
        else:
            if not MAXSIZE_RANGE[0] <= value <= MAXSIZE_RANGE[1]:
                raise ReplyError("IDMP_MAXSIZE_RANGE")
            maxsize = value
        i += 2
    if duration is None and maxsize is None:
        raise ReplyError("XCFGSET_NO_PARAMETER")
    state = state_of(stream, create=True)
    assert state is not None
    state.configure(duration, maxsize)
    ctx.modified(key)
    return OK


SPECS: Tuple[CommandSpec, ...] = (
    spec(
        "xcfgset",
        -2,
        "write fast",
        xcfgset,
        since="8.6.0",
        feature="stream_idmp",
        summary="Sets the IDMP configuration parameters for a stream.",
        complexity="O(1)",
    ),
)
