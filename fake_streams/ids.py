"""Stream IDs: the one place that turns ID bytes into ``StreamID`` values and back.

Mirrors ``streamGenericParseIDOrReply`` and the ID helpers at the top of Redis's ``t_stream.c``
(spec §1.2–1.3). Every parser here raises :class:`~fake_streams.errors.ReplyError` with the
server's exact error; no other module parses ID bytes.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Tuple

from .errors import ReplyError

U64_MAX = (1 << 64) - 1
_INT64_MAX = (1 << 63) - 1


class StreamID(NamedTuple):
    """A stream entry ID ``<ms>-<seq>``; both parts are unsigned 64-bit. Ordered like the server orders them."""

    ms: int
    seq: int

    def encode(self) -> bytes:
        """The wire form ``b"<ms>-<seq>"`` (``streamEncodeID`` / ``addReplyStreamID``). O(1)."""
        return b"%d-%d" % self

    def incr(self) -> Optional[StreamID]:
        """Successor ID; ``None`` when this is the maximum ID (``streamIncrID`` reports C_ERR)."""
        if self.seq < U64_MAX:
            return _new(StreamID, (self.ms, self.seq + 1))
        if self.ms < U64_MAX:
            return _new(StreamID, (self.ms + 1, 0))
        return None

    def decr(self) -> Optional[StreamID]:
        """Predecessor ID; ``None`` when this is ``0-0`` (``streamDecrID`` reports C_ERR)."""
        if self.seq > 0:
            return _new(StreamID, (self.ms, self.seq - 1))
        if self.ms > 0:
            return _new(StreamID, (self.ms - 1, U64_MAX))
        return None

    def __repr__(self) -> str:
        return f"StreamID({self.ms}, {self.seq})"

    def __str__(self) -> str:
        return f"{self.ms}-{self.seq}"


MIN_ID = StreamID(0, 0)
MAX_ID = StreamID(U64_MAX, U64_MAX)

#: ``StreamID`` from a ``(ms, seq)`` tuple without the NamedTuple's Python-level ``__new__`` (hot paths).
_new = tuple.__new__


def make_id(ms: int, seq: int) -> StreamID:
    """``StreamID(ms, seq)`` on hot paths (no argument checking). O(1)."""
    return _new(StreamID, (ms, seq))


# -------------------------------------------------------------------------------------- 128-bit keys
# The engine's indexes (stream entries, PELs, macro nodes) are keyed by the ID as one int, ``ms << 64 | seq``:
# the same order as ``StreamID`` and as the server's 128-bit big-endian rax keys, cheaper to compare
# and to store than a tuple. ``StreamID`` stays the type of every public value. This section is the only
# code that knows the layout: every other module converts with key_of / id_of / encode_key.

#: key of ``MIN_ID`` / ``MAX_ID``
MIN_KEY = 0
MAX_KEY = (1 << 128) - 1


def key_of(sid: Tuple[int, int]) -> int:
    """The 128-bit key of ``sid`` (a ``StreamID`` or an ``(ms, seq)`` pair). O(1)."""
    return (sid[0] << 64) | sid[1]


def keys_of(sids: List[StreamID]) -> List[int]:
    """The 128-bit keys of ``sids`` (a run of appends). O(len(sids)), no call per ID."""
    return [(ms << 64) | seq for ms, seq in sids]


def id_of(key: int) -> StreamID:
    """The ``StreamID`` of a 128-bit key. O(1)."""
    return _new(StreamID, (key >> 64, key & U64_MAX))


def encode_key(key: int) -> bytes:
    """The wire form of a 128-bit key (``b"<ms>-<seq>"``). O(1)."""
    return b"%d-%d" % (key >> 64, key & U64_MAX)


def next_id(last: StreamID, now_ms: int) -> Optional[StreamID]:
    """ID for ``XADD *`` (``streamNextID``): ``now-0`` if the clock is ahead of ``last``, else ``last`` + 1.

    Never goes backwards; ``None`` when ``last`` is the maximum ID.
    """
    ms, seq = last
    if now_ms > ms:
        return _new(StreamID, (now_ms, 0))
    if seq < U64_MAX:
        return _new(StreamID, (ms, seq + 1))
    if ms < U64_MAX:
        return _new(StreamID, (ms + 1, 0))
    return None


def parse_u64(raw: bytes) -> Optional[int]:
    """``string2ull``: an unsigned 64-bit decimal, as the server accepts it, or ``None``.

    ``string2ll`` first (canonical int64 text; a negative value is rejected), then C ``strtoull``:
    leading white space and a ``+`` or ``-`` sign are accepted, ``-`` negates modulo 2**64,
    leading zeros are fine, the whole non-empty string must be consumed and fit in 64 bits.
    """
    if not raw:
        return None
    ll = parse_i64(raw)
    if ll is not None:
        return ll if ll >= 0 else None
    # strtoull fallback
    i, n = 0, len(raw)
    while i < n and raw[i] in b" \t\n\v\f\r":
        i += 1
    neg = False
    if i < n and raw[i] in b"+-":
        neg = raw[i] == 0x2D
        i += 1
    digits = raw[i:]
    if not digits or not digits.isdigit():
        return None
    value = int(digits)
    if value > U64_MAX:
        return None  # ERANGE
    return (-value) & U64_MAX if neg else value


def parse_i64(raw: bytes) -> Optional[int]:
    """``string2ll``: optional single ``-``, no ``+``, no leading zeros (except ``0``), no spaces, fits int64. O(len)."""
    if raw.isdigit() and len(raw) < 19 and (raw[0] != 0x30 or len(raw) == 1):  # bytes.isdigit: ASCII only
        return int(raw)
    n = len(raw)
    if n == 0 or n > 20:
        return None
    if raw == b"0":
        return 0
    body = raw[1:] if raw[0] == 0x2D else raw
    if not body or not body.isdigit() or body[0] == 0x30 or not body.isascii():
        return None
    value = int(raw)
    if value > _INT64_MAX or value < -_INT64_MAX - 1:
        return None
    return value


def _parse(raw: bytes, missing_seq: int, strict: bool, allow_ms_star: bool) -> Tuple[StreamID, bool]:
    """Core of ``streamGenericParseIDOrReply``. Returns ``(id, seq_given)``; raises INVALID_STREAM_ID."""
    if len(raw) > 127:
        raise ReplyError("INVALID_STREAM_ID")
    nul = raw.find(b"\0")
    if nul >= 0:  # the server copies the argument into a C buffer: text after a NUL is ignored
        raw = raw[:nul]
    if raw == b"-":
        if strict:
            raise ReplyError("INVALID_STREAM_ID")
        return MIN_ID, True
    if raw == b"+":
        if strict:
            raise ReplyError("INVALID_STREAM_ID")
        return MAX_ID, True
    dash = raw.find(b"-")
    if dash < 0:
        ms = parse_u64(raw)
        if ms is None:
            raise ReplyError("INVALID_STREAM_ID")
        return StreamID(ms, missing_seq), True
    ms = parse_u64(raw[:dash])
    if ms is None:
        raise ReplyError("INVALID_STREAM_ID")
    right = raw[dash + 1 :]
    if allow_ms_star and right == b"*":
        return StreamID(ms, 0), False
    seq = parse_u64(right)
    if seq is None:
        raise ReplyError("INVALID_STREAM_ID")
    return StreamID(ms, seq), True


def _canonical(raw: bytes, missing_seq: int) -> Optional[StreamID]:
    """Fast path of every ID parser: ``<digits>[-<digits>]`` with at most 19 digits per part. O(len).

    Such text means the same to every parser here (no sign, no ``-``/``+``, no NUL, fits in 64 bits,
    leading zeros allowed as ``strtoull`` allows them); anything else returns ``None`` and takes the
    exact parser.
    """
    ms, dash, seq = raw.partition(b"-")
    if ms.isdigit() and len(ms) < 20:  # bytes.isdigit: ASCII digits only, False when empty
        if not dash:
            return _new(StreamID, (int(ms), missing_seq))
        if seq.isdigit() and len(seq) < 20:
            return _new(StreamID, (int(ms), int(seq)))
    return None


def parse_id(raw: bytes, missing_seq: int = 0) -> StreamID:
    """``streamParseIDOrReply``: non-strict (``-`` and ``+`` accepted). O(len)."""
    sid = _canonical(raw, missing_seq)
    if sid is not None:
        return sid
    return _parse(raw, missing_seq, strict=False, allow_ms_star=False)[0]


def parse_strict_id(raw: bytes, missing_seq: int = 0) -> StreamID:
    """``streamParseStrictIDOrReply(..., NULL)``: ``-`` and ``+`` are invalid. O(len)."""
    sid = _canonical(raw, missing_seq)
    if sid is not None:
        return sid
    return _parse(raw, missing_seq, strict=True, allow_ms_star=False)[0]


def parse_strict_key(raw: bytes) -> int:
    """:func:`parse_strict_id` as a 128-bit key (missing seq 0). O(len)."""
    ms, dash, seq = raw.partition(b"-")
    if dash and ms.isdigit() and seq.isdigit() and len(ms) < 20 and len(seq) < 20:
        return (int(ms) << 64) | int(seq)
    return key_of(parse_strict_id(raw))


def parse_strict_keys(raws: List[bytes]) -> List[int]:
    """:func:`parse_strict_key` of each argument, in order (the first invalid one raises). O(total length)."""
    out: List[int] = []
    for raw in raws:
        ms, dash, seq = raw.partition(b"-")
        if dash and ms.isdigit() and seq.isdigit() and len(ms) < 20 and len(seq) < 20:
            out.append((int(ms) << 64) | int(seq))
        else:
            out.append(parse_strict_key(raw))
    return out


def parse_xadd_id(raw: bytes) -> Tuple[StreamID, bool]:
    """The XADD ID argument (strict, with ``<ms>-*``). Returns ``(id, seq_given)``; ``seq_given`` is False for ``ms-*``.

    ``*`` itself is handled by the caller before this is reached. O(len).
    """
    sid = _canonical(raw, 0)
    if sid is not None:
        return sid, True
    return _parse(raw, 0, strict=True, allow_ms_star=True)


def parse_interval_id(raw: bytes, missing_seq: int) -> Tuple[StreamID, bool]:
    """``streamParseIntervalIDOrReply``: returns ``(id, exclusive)``; ``(`` prefix makes it exclusive and strict.

    The caller increments an exclusive start / decrements an exclusive end and reports
    ``INVALID_START_ID`` / ``INVALID_END_ID`` on wrap-around (see :func:`parse_range_start` / :func:`parse_range_end`).
    """
    if len(raw) > 1 and raw[0] == 0x28:  # '('
        return _parse(raw[1:], missing_seq, strict=True, allow_ms_star=False)[0], True
    return _parse(raw, missing_seq, strict=False, allow_ms_star=False)[0], False


def parse_range_start(raw: bytes) -> StreamID:
    """An inclusive lower bound from a start argument (missing seq 0; ``(x`` → x+1). O(len)."""
    sid = _canonical(raw, 0)
    if sid is not None:
        return sid
    if raw == b"-":
        return MIN_ID
    sid, exclusive = parse_interval_id(raw, 0)
    if exclusive:
        nxt = sid.incr()
        if nxt is None:
            raise ReplyError("INVALID_START_ID")
        return nxt
    return sid


def parse_range_start_key(raw: bytes) -> int:
    """:func:`parse_range_start` as a 128-bit key. O(len)."""
    ms, dash, seq = raw.partition(b"-")
    if ms.isdigit() and len(ms) < 20:
        if not dash:
            return int(ms) << 64
        if seq.isdigit() and len(seq) < 20:
            return (int(ms) << 64) | int(seq)
    if raw == b"-":
        return MIN_KEY
    return key_of(parse_range_start(raw))


def parse_range_end_key(raw: bytes) -> int:
    """:func:`parse_range_end` as a 128-bit key. O(len)."""
    if raw == b"+":
        return MAX_KEY
    ms, dash, seq = raw.partition(b"-")
    if ms.isdigit() and len(ms) < 20:
        if not dash:
            return (int(ms) << 64) | U64_MAX
        if seq.isdigit() and len(seq) < 20:
            return (int(ms) << 64) | int(seq)
    return key_of(parse_range_end(raw))


def parse_range_end(raw: bytes) -> StreamID:
    """An inclusive upper bound from an end argument (missing seq max; ``(x`` → x-1). O(len)."""
    sid = _canonical(raw, U64_MAX)
    if sid is not None:
        return sid
    if raw == b"+":
        return MAX_ID
    sid, exclusive = parse_interval_id(raw, U64_MAX)
    if exclusive:
        prv = sid.decr()
        if prv is None:
            raise ReplyError("INVALID_END_ID")
        return prv
    return sid
