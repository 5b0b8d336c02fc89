"""XADD and XTRIM (spec §2.1, §2.2).

``XADD key [NOMKSTREAM] [KEEPREF | DELREF | ACKED] [IDMPAUTO pid | IDMP pid iid] [(MAXLEN | MINID) [= | ~] threshold [LIMIT count]] (* | id) field value [field value ...]``
``XTRIM key (MAXLEN | MINID) [= | ~] threshold [LIMIT count] [KEEPREF | DELREF | ACKED]``

The reference-policy words exist on profiles with ``stream_ref_policies`` (Redis 8.2+, :mod:`fake_streams.refs`).

Both share ``streamParseAddOrTrimArgsOrReply``: options are scanned left to right from the argument
after the key, in any order and any number of times, until XADD finds its ID. Option names compare
like C ``strcasecmp`` and ``*`` / ``~`` / ``=`` like C string compares, so text after a NUL byte is
ignored (``b"maxlen\\0x"`` is MAXLEN), as on the server.

WATCH / notifications: XADD always dirties the key (``modified``), notifies ``xadd`` (then ``xtrim``
if its trimming removed something) and signals blocked readers; XADD NOMKSTREAM on a missing key
touches nothing. XTRIM dirties and notifies ``xtrim`` only when it removed something.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence, Tuple

from ..errors import ReplyError
from ..idmp import auto_iid, state_of
from ..ids import MAX_ID, MIN_ID, U64_MAX, StreamID, key_of, next_id, parse_strict_id, parse_xadd_id
from ..nodes import LISTPACK_MAX_SIZE
from ..refs import KEEPREF, policy_word, trim_with_policy
from ..stream import Stream
from .base import CommandSpec, Context, cstr, parse_count, spec


class TrimArgs(NamedTuple):
    """Result of the shared XADD/XTRIM option scan (``streamAddTrimArgs``)."""

    maxlen: Optional[int]
    minid: Optional[StreamID]
    approx: bool
    #: explicit LIMIT (already validated against ``~``) or ``None`` for the server default
    limit: Optional[int]
    nomkstream: bool
    #: XADD: index into ``args`` of the ID argument (``len(args)`` if none was found)
    id_pos: int
    #: XADD: the explicit ID (``None`` for ``*``), and whether its sequence was given (False for ``ms-*``)
    sid: Optional[StreamID]
    seq_given: bool
    #: reference policy of the trimming (Redis 8.2 KEEPREF / DELREF / ACKED; :mod:`fake_streams.refs`)
    policy: str = KEEPREF
    #: Redis 8.6 ``IDMP pid iid`` → ``(pid, iid)``, ``IDMPAUTO pid`` → ``(pid, None)`` (:mod:`fake_streams.idmp`)
    idmp: Optional[Tuple[bytes, Optional[bytes]]] = None

    @property
    def has_strategy(self) -> bool:
        return self.maxlen is not None or self.minid is not None


#: option names as clients usually spell them → the lower-case name (others go through cstr().lower())
_TOKENS = {t.upper(): t for t in (b"maxlen", b"minid", b"limit", b"nomkstream")}
_TOKENS.update({t: t for t in (b"maxlen", b"minid", b"limit", b"nomkstream", b"*")})
_new_trim_args = tuple.__new__


def parse_add_trim_args(args: List[bytes], xadd: bool, policies: bool = False, idmp_ok: bool = False) -> TrimArgs:
    """``streamParseAddOrTrimArgsOrReply``: scan ``args[1:]`` (``args[0]`` is the key). Raises ReplyError.

    ``policies`` (profile feature ``stream_ref_policies``): one KEEPREF / DELREF / ACKED word is an option;
    a second one is XADD's ID (``Invalid stream ID``) or XTRIM's ``syntax error`` (Redis 8.2.3).
    ``idmp_ok`` (``stream_idmp``, XADD only): ``IDMP pid iid`` / ``IDMPAUTO pid``, once, with the ``*`` ID.
    """
    policy: Optional[str] = None
    idmp: Optional[Tuple[bytes, Optional[bytes]]] = None
    maxlen: Optional[int] = None
    minid: Optional[StreamID] = None
    approx = False
    limit = 0
    limit_given = False
    nomkstream = False
    sid: Optional[StreamID] = None
    seq_given = True
    argc = len(args)
    i = 1
    while i < argc:
        moreargs = argc - 1 - i
        opt = args[i]
        name = _TOKENS.get(opt) or cstr(opt).lower()
        if xadd and name == b"*":
            break
        if name in (b"maxlen", b"minid") and moreargs:
            if maxlen is not None or minid is not None:
                raise ReplyError("STRATEGY_TWICE")
            approx = False
            nxt = args[i + 1]
            if 0 in nxt:  # (a byte test: far cheaper than b"\0" in)
                nxt = cstr(nxt)
            if moreargs >= 2 and nxt == b"~":
                approx = True
                i += 1
            elif moreargs >= 2 and nxt == b"=":
                i += 1
            if name == b"maxlen":
                maxlen = parse_count(args[i + 1])
                if maxlen < 0:
                    raise ReplyError("MAXLEN_NEGATIVE")
            else:
                minid = parse_strict_id(args[i + 1])
            i += 1
        elif name == b"limit" and moreargs:
            limit = parse_count(args[i + 1])
            if limit < 0:
                raise ReplyError("LIMIT_NEGATIVE")
            limit_given = True
            i += 1
        elif xadd and name == b"nomkstream":
            nomkstream = True
        elif policies and policy is None and policy_word(name) is not None:
            policy = policy_word(name)
        elif idmp_ok and xadd and name in (b"idmp", b"idmpauto") and moreargs >= (2 if name == b"idmp" else 1):
            if idmp is not None:
                raise ReplyError("IDMP_TWICE")
            pid = args[i + 1]
            if name == b"idmp":
                if not pid:
                    raise ReplyError("IDMP_EMPTY_PID")
                if not args[i + 2]:
                    raise ReplyError("IDMP_EMPTY_IID")
                idmp = (pid, args[i + 2])
                i += 2
            else:
                if not pid:
                    raise ReplyError("IDMPAUTO_EMPTY_PID")
                idmp = (pid, None)
                i += 1
        elif xadd:
            sid, seq_given = parse_xadd_id(opt)
            break
        else:
            raise ReplyError("SYNTAX")
        i += 1
    if idmp is not None and sid is not None:
        raise ReplyError("IDMP_EXPLICIT_ID")
    has_strategy = maxlen is not None or minid is not None
    if limit and not has_strategy:
        raise ReplyError("LIMIT_WITHOUT_STRATEGY")
    if not xadd and not has_strategy:
        raise ReplyError("XTRIM_NO_STRATEGY")
    if limit_given and not approx:
        raise ReplyError("LIMIT_WITHOUT_APPROX")
    return _new_trim_args(  # TrimArgs(...) without the NamedTuple's Python-level __new__
        TrimArgs, (maxlen, minid, approx, limit if limit_given else None, nomkstream, i, sid, seq_given,
                   policy or KEEPREF, idmp)
    )


def _trim(stream: Stream, targs: TrimArgs, approx_honoured: bool = True) -> int:
    """The trimming ``targs`` ask for, under their reference policy. ``approx_honoured``: the profile's
    ``approx_trim_ref_policies`` (``~`` with DELREF/ACKED removes nothing without it)."""
    if targs.policy == KEEPREF:
        return stream.trim(maxlen=targs.maxlen, minid=targs.minid, approx=targs.approx, limit=targs.limit)
    return trim_with_policy(stream, targs.maxlen, targs.minid, targs.approx, targs.limit, targs.policy,
                            approx_honoured)


def _resolve_id(last: StreamID, targs: TrimArgs, now_ms: int) -> StreamID:
    """The ID the new entry gets (``streamAppendItem``), or ReplyError. ``last`` is not the maximum ID."""
    sid = targs.sid
    if sid is None:
        new = next_id(last, now_ms)
        assert new is not None
        return new
    if not targs.seq_given:  # <ms>-*
        if last.ms == sid.ms:
            if last.seq == U64_MAX:
                raise ReplyError("XADD_PARTIAL_ID_OVERFLOW")
            return StreamID(last.ms, last.seq + 1)
    if sid <= last:
        raise ReplyError("XADD_ID_TOO_SMALL")
    return sid


def xadd(ctx: Context, args: List[bytes]) -> Optional[bytes]:
    """XADD: append an entry (creating the stream unless NOMKSTREAM), then trim if asked.

    Reply: the new ID (bulk), or nil with NOMKSTREAM on a missing key.
    O(log n + fields), plus the trimming work (proportional to what is removed).
    """
    key = args[0]
    if is_plain_xadd(args):  # `XADD key * field value ...`: no option to scan
        return _xadd_now(ctx, key, args)
    profile = ctx.profile
    targs = parse_xadd_args(args, profile.has("stream_ref_policies"), profile.has("stream_idmp"))
    stream = ctx.lookup(key)
    if stream is None:
        if targs.nomkstream:
            return None
        stream = ctx.create(key)
    idmp = None
    if targs.idmp is not None:
        pid, iid = targs.idmp
        idmp = (pid, iid if iid is not None else auto_iid(args[targs.id_pos + 1:]))
        state = state_of(stream, create=True)
        assert state is not None
        original = state.lookup(idmp[0], idmp[1], ctx.now_ms)
        if original is not None:  # a duplicate: nothing added, trimmed, dirtied or notified (choice)
            state.iids_duplicates += 1
            return original
    if stream.last_id == MAX_ID:
        raise ReplyError("XADD_ID_EXHAUSTED")
    enc, trimmed = append_parsed(stream, args, targs, ctx.now_ms,
                                 approx_honoured=profile.has("approx_trim_ref_policies"))
    if idmp is not None:
        state = state_of(stream)
        assert state is not None
        state.record(idmp[0], idmp[1], enc)
    ctx.modified(key)
    ctx.notify("xadd", key)
    if trimmed:
        ctx.notify("xtrim", key)
    ctx.signal_ready(key)
    return enc


#: how clients spell MAXLEN (others go through the option scan)
MAXLEN_SPELLINGS = (b"MAXLEN", b"maxlen")


def parse_xadd_args(args: List[bytes], policies: bool = False, idmp_ok: bool = False) -> TrimArgs:
    """XADD's argument checks that need no key: options, ID, field/value count, ``0-0``. Raises ReplyError.

    ``key MAXLEN ~ n * field value ...`` (:func:`is_trimming_xadd`) needs no option scan.
    """
    if is_trimming_xadd(args):
        return _new_trim_args(TrimArgs, (_approx_maxlen(args), None, True, None, False, 4, None, True, KEEPREF, None))
    targs = parse_add_trim_args(args, xadd=True, policies=policies, idmp_ok=idmp_ok)
    nitems = len(args) - targs.id_pos - 1
    if nitems < 2 or nitems % 2:
        raise ReplyError("WRONG_ARITY", command="xadd")
    if targs.sid == MIN_ID and targs.seq_given:
        raise ReplyError("XADD_ID_ZERO")
    return targs


def append_parsed(stream: Stream, args: List[bytes], targs: TrimArgs, now: int,
                  limits: Optional[Tuple[int, int]] = None, approx_honoured: bool = True) -> Tuple[bytes, int]:
    """The stream part of an XADD whose ``args`` passed :func:`parse_xadd_args`: the ID (``streamAppendItem``),
    the entry appended, then the trimming asked for. Returns ``(ID wire form, entries trimmed)``; raises
    ReplyError with nothing changed (ID exhausted / too small, entry too large). ``limits``: the stream's
    ``node_limits()`` if the caller has them. O(log n + fields) plus the trimming work.
    """
    last = stream.last_id
    if last == MAX_ID:
        raise ReplyError("XADD_ID_EXHAUSTED")
    maxlen, minid, approx, limit, _, id_pos, sid, _, policy, _ = targs
    if sid is None:  # `*`: streamNextID + the append, as append_now
        enc = stream.add_next(args[id_pos + 1:], now, limits)
    else:
        sid = _resolve_id(last, targs, now)
        fields = args[id_pos + 1:]
        total = sum(map(len, fields))
        if total > LISTPACK_MAX_SIZE:
            raise ReplyError("ELEMENTS_TOO_LARGE")
        enc = b"%d-%d" % sid
        stream.add(sid, key_of(sid), enc, fields, total, limits)
    if maxlen is None and minid is None:
        return enc, 0
    if policy != KEEPREF:
        return enc, _trim(stream, targs, approx_honoured)
    return enc, stream.trim(maxlen, minid, approx, limit)


def _xadd_now(ctx: Context, key: bytes, args: List[bytes]) -> bytes:
    """``XADD key * field value [field value ...]`` (an even number >= 2 of fields and values): the same
    steps as :func:`xadd` without the option scan. O(fields) (+ O(log n) when a node is opened).
    """
    stream = ctx.lookup(key)
    if stream is None:
        stream = ctx.create(key)
    if stream.last_id == MAX_ID:
        raise ReplyError("XADD_ID_EXHAUSTED")
    enc = append_now(stream, args, ctx.now_ms)
    ctx.modified(key)
    ctx.notify("xadd", key)
    ctx.signal_ready(key)
    return enc


def is_plain_xadd(args: List[bytes]) -> bool:
    """Whether XADD ``args`` are ``key * field value [field value ...]`` (no option to scan). O(1)."""
    return len(args) > 3 and args[1] == b"*" and len(args) % 2 == 0


def is_trimming_xadd(args: Sequence[bytes]) -> bool:
    """Whether XADD ``args`` are ``key MAXLEN ~ n * field value [field value ...]`` (what redis-py sends for
    ``maxlen=n`` with ``approximate=True``, its default; ``n`` not checked yet): no option scan needed, the
    entry is added as a plain XADD's and then trimmed with ``MAXLEN ~ n`` and the default LIMIT. O(1)."""
    return len(args) > 6 and len(args) % 2 == 1 and args[4] == b"*" and args[2] == b"~" and args[1] in MAXLEN_SPELLINGS


def _approx_maxlen(args: Sequence[bytes]) -> int:
    """The threshold of :func:`is_trimming_xadd` args, or ReplyError (not an integer, negative). O(len(n))."""
    maxlen = parse_count(args[3])
    if maxlen < 0:
        raise ReplyError("MAXLEN_NEGATIVE")
    return maxlen


def append_trimmed_now(stream: Stream, args: Sequence[bytes], now: int,
                       limits: Optional[Tuple[int, int]] = None) -> bytes:
    """The stream part of ``XADD key MAXLEN ~ n * field value ...`` (:func:`is_trimming_xadd` args) at ``now``, in
    one step: ``n`` checked (the errors :func:`parse_xadd_args` gives, before anything changes), the entry
    appended as :func:`append_now` does, then the approximate trim (O(1) when it removes nothing). Returns the ID's
    wire form; the trimmed count is not returned (the caller sends no ``xtrim`` event: :func:`fastpath._xadd_run`
    runs only while no stream event is subscribed). Raises ReplyError with nothing changed.
    O(fields) (+ O(log n) when a node is opened, + the trimming work)."""
    maxlen = _approx_maxlen(args)
    fields = args[5:]
    enc = stream.add_next(fields if type(fields) is list else list(fields), now, limits)
    stream.trim(maxlen, None, True)
    return enc


def append_now(stream: Stream, args: Sequence[bytes], now: int, limits: Optional[Tuple[int, int]] = None) -> bytes:
    """The stream part of ``XADD key * field value ...`` (:func:`is_plain_xadd` args) at ``now``: the new ID
    (``streamNextID``), the entry appended; returns the ID's wire form. Raises ReplyError with nothing
    changed (ID space exhausted, entry too large). ``limits``: the stream's ``node_limits()`` if the caller
    has them. O(fields) (+ O(log n) when a node is opened).

    ``args`` may be a tuple (a pipeline's encoded arguments, ``fastpath.pack_commands``): the fields go to the
    stream as the fresh list ``Stream.add_next`` takes (a tuple would never match the node's master field
    names, so the entry would be sized and stored as one with its own names, unlike the same XADD sent alone).
    The caller does the rest of the command: WATCH (``modified``), the ``xadd`` event, ``signal_ready``.
    """
    fields = args[2:]
    return stream.add_next(fields if type(fields) is list else list(fields), now, limits)


def xtrim(ctx: Context, args: List[bytes]) -> int:
    """XTRIM: remove old entries; reply the number removed (0 for a missing key).

    Argument errors win over a missing key. O(entries removed), whole nodes O(log n) each.
    """
    key = args[0]
    profile = ctx.profile
    targs = parse_add_trim_args(args, xadd=False, policies=profile.has("stream_ref_policies"))
    stream = ctx.lookup(key)
    if stream is None:
        return 0
    deleted = _trim(stream, targs, profile.has("approx_trim_ref_policies"))
    if deleted:
        ctx.modified(key)
        ctx.notify("xtrim", key)
    return deleted


SPECS: Tuple[CommandSpec, ...] = (
    spec(
        "xadd",
        -5,
        "write denyoom fast",
        xadd,
        summary="Appends a new message to a stream. Creates the key if it doesn't exist.",
        complexity="O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.",
    ),
    spec(
        "xtrim",
        -4,
        "write",
        xtrim,
        since="5.0.0",
        summary="Deletes messages from the beginning of a stream.",
        complexity=(
            "O(N), with N being the number of evicted entries. Constant times are very small however, since "
            "entries are organized in macro nodes containing multiple entries that can be released with a "
            "single deallocation."
        ),
    ),
)
