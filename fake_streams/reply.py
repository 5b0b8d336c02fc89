"""Reply builders: the only place that knows RESP2 from RESP3 shapes.

Handlers return plain Python values that the transport sends as they are:

* ``bytes`` → bulk string; ``int`` → integer; ``list`` → array (always a *list*, never a tuple:
  redis-py's callbacks mutate some replies in place);
* ``None`` → nil (nil-bulk or nil-array; redis-py cannot tell them apart);
* :class:`Status` → simple string (``+OK``);
* :class:`ErrorReply` → an error reply (the TCP encoder's; handlers raise ``ReplyError`` instead);
* ``dict`` → RESP3 map (only ever built by :func:`map_reply` under protocol 3);
* :class:`RepeatedKeyMap` → a RESP3 map whose key repeats (XREAD/XREADGROUP naming a stream twice);
* :class:`VerbatimText` → bulk string in RESP2, RESP3 verbatim string ``=…txt:…`` (CLIENT INFO/LIST, INFO).
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, Sequence, Tuple, Union

from .ids import StreamID

#: the largest value of the server's int64 counters (delivery count, entries-read, entries-added, lag)
I64_MAX = (1 << 63) - 1


def as_i64(value: int) -> int:
    """A counter as ``addReplyLongLong`` sends it: the server keeps it in an int64 that wraps past 2^63 - 1
    (``XCLAIM … RETRYCOUNT 9223372036854775807`` then one more delivery is ``-9223372036854775808``); the
    engine keeps the unbounded count and wraps it here. O(1)."""
    return value if -I64_MAX - 1 <= value <= I64_MAX else (value + (1 << 63)) % (1 << 64) - (1 << 63)


class Status:
    """A RESP simple string (``+OK``), as opposed to a bulk string."""

    __slots__ = ("value",)

    def __init__(self, value: bytes) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Status) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Status({self.value!r})"


OK = Status(b"OK")


class ErrorReply:
    """An error reply; ``value`` is the full text with its code, without the leading ``-``."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value if isinstance(value, bytes) else str(value).encode()

    def __repr__(self) -> str:
        return f"ErrorReply({self.value!r})"


class VerbatimText(bytes):
    """Text the server sends with ``addReplyVerbatim``: a bulk string in RESP2, ``=<len>\\r\\ntxt:…`` in RESP3.
    It is ``bytes`` to everything else (in-process clients get the text)."""

    __slots__ = ()


#: what a handler returns and the transport sends (see the module docstring); arrays are lists in practice
Reply = Union[None, int, bytes, Status, ErrorReply, Sequence["Reply"], Mapping[bytes, "Reply"]]
#: one stream entry ``[id, [field, value, ...]]``
EntryReply = List[Union[bytes, List[bytes]]]


class RepeatedKeyMap(Dict[bytes, "Reply"]):
    """A RESP3 map that names a key more than once, as ``XREAD … STREAMS s1 s2 s1`` gets from the servers.

    As a ``dict`` it holds what redis-py's parser builds of such a map (the key at its first position, the
    value of its last pair), so a client in the same process sees exactly that; :attr:`pairs` keeps every
    pair in wire order for the encoders that write bytes (``tcp.encode``: ``%3`` with the key twice).
    """

    __slots__ = ("pairs",)

    def __init__(self, pairs: Sequence[Tuple[bytes, Reply]]) -> None:
        super().__init__(pairs)
        self.pairs: List[Tuple[bytes, Reply]] = list(pairs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RepeatedKeyMap):
            return self.pairs == other.pairs
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # a dict: not hashable

    def __repr__(self) -> str:
        return f"RepeatedKeyMap({self.pairs!r})"


def entry(sid: StreamID, fields: Sequence[bytes]) -> EntryReply:
    """One stream entry: ``[id, [field, value, ...]]`` (the field list is an array in both protocols)."""
    return [sid.encode(), list(fields)]


def entries(items: Iterable[Tuple[StreamID, Sequence[bytes]]]) -> List[EntryReply]:
    """A list of entries in iteration order."""
    return [[sid.encode(), list(fields)] for sid, fields in items]


def entries_of(encs: Iterable[bytes], fields: Iterable[Sequence[bytes]]) -> List[EntryReply]:
    """Entries ``[[id, [f, v, ...]], ...]`` from parallel encoded IDs and field sequences (fresh lists). O(k)."""
    return [[e, [*f]] for e, f in zip(encs, fields)]


def map_reply(protocol: int, pairs: Iterable[Tuple[bytes, Reply]]) -> Reply:
    """``addReplyMapLen``: a RESP3 map (dict) or, under RESP2, a flat ``[k1, v1, k2, v2, ...]`` array."""
    if protocol == 3:
        return dict(pairs)
    flat: List[Reply] = []
    for k, v in pairs:
        flat.append(k)
        flat.append(v)
    return flat


def keyed_reply(protocol: int, pairs: Sequence[Tuple[bytes, Reply]]) -> Reply:
    """XREAD/XREADGROUP top level: RESP2 ``[[key, value], ...]``, RESP3 ``{key: value}``; nothing → nil.

    RESP3 with a key served twice (named twice after STREAMS): a :class:`RepeatedKeyMap`, one pair per
    served stream as the servers send it.
    """
    if not pairs:
        return None
    if protocol == 3:
        reply: Dict[bytes, Reply] = dict(pairs)
        return reply if len(reply) == len(pairs) else RepeatedKeyMap(pairs)
    return [[k, v] for k, v in pairs]


def help_reply(lines: Sequence[bytes]) -> List[Status]:
    """``addReplyHelp``: an array of status lines."""
    return [Status(line) for line in lines]
