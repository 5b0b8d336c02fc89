"""The TCP server's reply side: RESP2/RESP3 encoding of reply values, and the nil-array shapes.

The adapter hands the TCP connection each reply before fakeredis flattens it (:class:`Reply`), so simple
vs bulk strings (:class:`~fake_streams.reply.Status`), errors (:class:`ErrorReply`), nil-bulk (``None``)
vs nil-array (:data:`NIL_ARRAY`: ``*-1`` for XREAD, EXEC aborted …), RESP3 maps, sets, doubles and pushes
(pub/sub under RESP3) go out as a real server writes them. :func:`encode` is O(size of the reply).
"""

from __future__ import annotations

from typing import Any, List, Sequence

from ..reply import ErrorReply, RepeatedKeyMap, Status, VerbatimText

__all__ = ["NIL_ARRAY", "ErrorReply", "Reply", "encode", "shape_nil_arrays"]


class _NilArray:
    """``addReplyNullArray``: ``*-1`` in RESP2 (``_`` in RESP3); a bare ``None`` is the nil-bulk ``$-1``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NIL_ARRAY"


NIL_ARRAY = _NilArray()


class Reply:
    """The reply to one command: the command as typed, the value (wire types kept) and its RESP version."""

    __slots__ = ("command", "value", "protocol")

    def __init__(self, command: Sequence[bytes], value: Any, protocol: int) -> None:
        self.command = command
        self.value = value
        self.protocol = protocol


# ------------------------------------------------------------------------------------------ encoding
def _line(value: bytes) -> bytes:
    """A simple string / error line: CR and LF become spaces, as the server does (addReplyErrorLength)."""
    return value.replace(b"\r", b" ").replace(b"\n", b" ")


def _double(value: float) -> bytes:
    if value != value:
        return b"nan"
    if value in (float("inf"), float("-inf")):
        return b"inf" if value > 0 else b"-inf"
    text = repr(value)
    return (text[:-2] if text.endswith(".0") else text).encode()


def encode(value: Any, protocol: int, push: bool = False) -> bytes:
    """RESP bytes of ``value`` for a client speaking ``protocol`` (2 or 3). O(size of the reply).

    ``bytes``/``str`` → bulk string; :class:`~fake_streams.reply.Status` → simple string; :class:`ErrorReply` → error; ``None`` → nil-bulk;
    :data:`NIL_ARRAY` → nil-array; ``dict`` → map (flat array in RESP2), :class:`~fake_streams.reply.RepeatedKeyMap` → a map of all its pairs; ``set`` → set (array in
    RESP2); ``bool`` → boolean (integer in RESP2); ``float`` → double (bulk in RESP2). ``push`` makes a
    top-level array a RESP3 push (``>``), as pub/sub messages are.
    """
    out: List[bytes] = []
    _encode(value, protocol == 3, out, push)
    return b"".join(out)


def _encode(value: Any, resp3: bool, out: List[bytes], push: bool = False) -> None:
    kind = type(value)
    if kind is bytes:
        out.append(b"$%d\r\n%s\r\n" % (len(value), value))
    elif kind is Status:
        out.append(b"+%s\r\n" % _line(value.value))
    elif kind is list or kind is tuple:
        out.append(b"%s%d\r\n" % (b">" if push and resp3 else b"*", len(value)))
        for item in value:
            _encode(item, resp3, out)
    elif kind is int:
        if -(2**63) <= value < 2**63:
            out.append(b":%d\r\n" % value)
        elif resp3:
            out.append(b"(%d\r\n" % value)
        else:
            _encode(b"%d" % value, resp3, out)
    elif value is None:
        out.append(b"_\r\n" if resp3 else b"$-1\r\n")
    elif value is NIL_ARRAY:
        out.append(b"_\r\n" if resp3 else b"*-1\r\n")
    elif kind is ErrorReply:
        out.append(b"-%s\r\n" % _line(value.value))
    elif kind is dict or kind is RepeatedKeyMap:
        items = value.pairs if kind is RepeatedKeyMap else value.items()
        out.append(b"%%%d\r\n" % len(items) if resp3 else b"*%d\r\n" % (2 * len(items)))
        for key, item in items:
            _encode(key, resp3, out)
            _encode(item, resp3, out)
    elif kind is bool:
        out.append((b"#t\r\n" if value else b"#f\r\n") if resp3 else (b":1\r\n" if value else b":0\r\n"))
    elif kind is float:
        if resp3:
            out.append(b",%s\r\n" % _double(value))
        else:
            _encode(_double(value), resp3, out)
    elif kind is set or kind is frozenset:
        out.append(b"%s%d\r\n" % (b"~" if resp3 else b"*", len(value)))
        for item in value:
            _encode(item, resp3, out)
    elif kind is str:
        _encode(value.encode(), resp3, out)
    elif kind is VerbatimText:
        if resp3:
            out.append(b"=%d\r\ntxt:%s\r\n" % (len(value) + 4, value))
        else:
            _encode(bytes(value), resp3, out)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        _encode(bytes(value), resp3, out)
    elif isinstance(value, BaseException):
        out.append(b"-%s\r\n" % _line(f"ERR {value}".encode()))
    elif isinstance(value, list):
        _encode(list(value), resp3, out, push)
    else:
        _encode(str(value).encode(), resp3, out)


# ---------------------------------------------------------------------------------------- nil arrays
#: commands whose nil reply is a nil-array (``*-1`` in RESP2): stream reads, EXEC aborted by WATCH,
#: blocking pops (timeout), LMPOP/ZMPOP
_NIL_ARRAY_COMMANDS = frozenset(
    b"xread xreadgroup xrange xrevrange exec blpop brpop brpoplpush blmove blmpop bzpopmin bzpopmax bzmpop "
    b"lmpop zmpop".split()
)


def _all_nil_arrays(value: Any) -> Any:
    if value is None:
        return NIL_ARRAY
    if type(value) is list:
        return [_all_nil_arrays(item) for item in value]
    return value


def shape_nil_arrays(command: Sequence[bytes], value: Any, queued: Sequence[Sequence[bytes]] = ()) -> Any:
    """``value`` with :data:`NIL_ARRAY` where the server writes a nil-array (RESP2 only differs).

    XREAD/XREADGROUP (every nil: the reply and a deleted history entry ``[id, nil]``), XRANGE/XREVRANGE
    ``COUNT 0``, the empty XPENDING summary's 4th element, GEOPOS's missing members, LPOP/RPOP with a
    count, the commands of :data:`_NIL_ARRAY_COMMANDS`; EXEC's elements follow their ``queued`` commands.
    """
    name = bytes(command[0]).lower() if command else b""
    if value is None:
        if name in _NIL_ARRAY_COMMANDS or (name in (b"lpop", b"rpop") and len(command) > 2) or name == b"sentinel":
            return NIL_ARRAY
        return None
    if type(value) is not list:
        return value
    if name in (b"xread", b"xreadgroup"):
        return _all_nil_arrays(value)
    if name == b"exec" and len(queued) == len(value):
        return [shape_nil_arrays(cmd, item) for cmd, item in zip(queued, value)]
    if name == b"xpending" and len(value) == 4 and value[3] is None:
        return value[:3] + [NIL_ARRAY]
    if name == b"geopos":
        return [NIL_ARRAY if item is None else item for item in value]
    return value


class ReplyShaper:
    """Per connection: wraps each reply to the command being run in a :class:`Reply` with its nil shapes.

    Tracks MULTI … EXEC so that EXEC's elements get the shapes of the commands queued: a MULTI or a
    DISCARD refused with an error (``MULTI calls can not be nested``) leaves the queue as it is. RESET
    and an answered EXEC end it.
    """

    __slots__ = ("_queued",)

    def __init__(self) -> None:
        self._queued: List[Sequence[bytes]] = []

    @property
    def queued(self) -> List[Sequence[bytes]]:
        """The commands queued since MULTI (until EXEC's reply)."""
        return self._queued

    def reply(self, command: Sequence[bytes], value: Any, protocol: int) -> Reply:
        name = bytes(command[0]).lower() if command else b""
        queued: Sequence[Sequence[bytes]] = ()
        if name == b"exec":
            queued, self._queued = self._queued, []
        elif name in (b"multi", b"discard", b"reset"):
            if type(value) is Status:
                self._queued = []
        elif type(value) is Status and value.value == b"QUEUED":
            self._queued.append(command)
        if protocol == 2:
            value = shape_nil_arrays(command, value, queued)
        return Reply(command, value, protocol)
