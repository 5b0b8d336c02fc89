"""Raw replies as compared by the conformance layer, and the normalisers for values that differ by nature.

A *raw reply* is what redis-py's parser returns with no response callbacks
(``conn.read_response(disable_decoding=True)``): bytes, int, float, bool, None, list, and dict for RESP3
maps. An error reply is returned as :class:`Err` (never raised) so it can be compared like any value.

Comparison is strict: types must match (``1`` is not ``True``, bytes are not str), and RESP3 maps are
compared *in wire order* (a dict's equality would ignore it). A RESP3 map that names a key twice
(``XREAD … STREAMS s t s``) keeps every pair: the real side is read with :class:`WireMapParser`, the
fake side gives a :class:`~fake_streams.reply.RepeatedKeyMap`, and :func:`capture` turns both into
``{REPEATED_KEYS: [[k, v], ...]}``, which every walker below handles as an ordinary map.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, List, NamedTuple, Optional, Sequence, Tuple

try:
    from redis._parsers.base import BaseParser
except ImportError:  # redis-py 4.x
    from redis.connection import BaseParser  # type: ignore[attr-defined,no-redef]
from redis.exceptions import ResponseError

from fake_streams.reply import RepeatedKeyMap, VerbatimText

try:
    from redis._parsers.resp3 import _RESP3Parser
except ImportError:  # redis-py 4.x: no RESP3 connections, so no RESP3 maps to read
    _RESP3Parser = None  # type: ignore[assignment,misc]

#: The one key of the stand-in map :func:`capture` makes of a RESP3 map with a repeated key (a str key
#: cannot clash with a real map's keys, which are bytes in raw replies).
REPEATED_KEYS = "RESP3 map with a repeated key"

if _RESP3Parser is not None:

    class WireMapParser(_RESP3Parser):  # type: ignore[misc,valid-type]
        """redis-py's Python RESP3 parser, except that a map naming a key twice is read as a
        :class:`RepeatedKeyMap` (every pair in wire order) instead of a dict that keeps one pair per key.
        Everything else is the Python parser's own reading (hiredis would lose such pairs differently)."""

        def _read_response(self, *args: Any, **kwargs: Any) -> Any:
            buf = self._buffer
            start = buf.get_pos()
            line = buf.readline(**({"timeout": kwargs["timeout"]} if "timeout" in kwargs else {}))
            if line[:1] != b"%":
                buf.rewind(start)  # the bytes stay in the buffer until the whole reply is read
                return super()._read_response(*args, **kwargs)
            pairs = [(self._read_response(*args, **kwargs), self._read_response(*args, **kwargs))
                     for _ in range(int(line[1:]))]
            as_dict = dict(pairs)
            return as_dict if len(as_dict) == len(pairs) else RepeatedKeyMap(pairs)
else:
    WireMapParser = None  # type: ignore[assignment,misc]


class Err(NamedTuple):
    """An error reply as redis-py delivers it: exception class, status code it stripped, remaining text.

    redis-py's ``parse_error`` removes a known code (``ERR ``) and keeps unknown ones (``WRONGTYPE …``,
    ``NOGROUP …``) in the text, so ``code`` tells ``-ERR syntax error`` from ``-syntax error``.
    """

    kind: str
    code: Optional[str]
    text: str

    @property
    def full(self) -> str:
        """The wire line without ``-`` and CRLF, as rebuilt from what redis-py kept."""
        return f"{self.code} {self.text}" if self.code else self.text

    def __repr__(self) -> str:
        return f"Err({self.full!r})"


def err_from_exception(exc: BaseException) -> Err:
    return Err(type(exc).__name__, getattr(exc, "status_code", None), str(exc))


def expected_err(full_text: str) -> Err:
    """What redis-py makes of the wire error line ``full_text`` (e.g. ``"ERR syntax error"``): same parse_error."""
    return err_from_exception(BaseParser.parse_error(full_text))


def capture(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` (one read); an error reply becomes :class:`Err`, nested ones (EXEC) too."""
    try:
        reply = fn()
    except ResponseError as exc:
        return err_from_exception(exc)
    return _errors_to_values(reply)


def _errors_to_values(reply: Any) -> Any:
    if isinstance(reply, ResponseError):
        return err_from_exception(reply)
    if type(reply) is VerbatimText:  # a bytes to redis-py (its parsers drop RESP3's "txt:" format); tests/tcp checks "="
        return bytes(reply)
    if isinstance(reply, list):
        return [_errors_to_values(x) for x in reply]
    if isinstance(reply, RepeatedKeyMap):
        return {REPEATED_KEYS: [[k, _errors_to_values(v)] for k, v in reply.pairs]}
    if isinstance(reply, dict):
        return {k: _errors_to_values(v) for k, v in reply.items()}
    return reply


class IdAliases:
    """Clock-made IDs paired across the two sides (a bijection): ``fake_to_real`` translates arguments that
    name a fake ID for the real server, ``real_to_fake`` translates real replies back (:func:`translate`)."""

    def __init__(self) -> None:
        self.fake_to_real: dict = {}
        self.real_to_fake: dict = {}

    def add(self, real_id: bytes, fake_id: bytes) -> bool:
        """Record that ``real_id`` and ``fake_id`` name the same entry; False if either is paired elsewhere."""
        if self.fake_to_real.get(fake_id, real_id) != real_id or self.real_to_fake.get(real_id, fake_id) != fake_id:
            return False
        self.fake_to_real[fake_id] = real_id
        self.real_to_fake[real_id] = fake_id
        return True

    def to_real_args(self, args: List[bytes]) -> List[bytes]:
        """``args`` with every aliased fake ID (also as an exclusive ``(`` bound) replaced by the real one."""
        alias = self.fake_to_real
        if not alias:
            return args
        out = []
        for a in args:
            if a in alias:
                a = alias[a]
            elif a[:1] == b"(" and a[1:] in alias:
                a = b"(" + alias[a[1:]]
            out.append(a)
        return out


# ---------------------------------------------------------------------------------------------
# Differences


def first_difference(real: Any, fake: Any, path: str = "") -> Optional[str]:
    """``None`` when equal (types, order, values), else where and how they first differ."""
    here = path or "reply"
    if type(real) is not type(fake):
        return f"at {here}: type {type(real).__name__} != {type(fake).__name__} ({real!r} vs {fake!r})"
    if isinstance(real, list):
        for i, (a, b) in enumerate(zip(real, fake)):
            diff = first_difference(a, b, f"{path}[{i}]")
            if diff:
                return diff
        if len(real) != len(fake):
            return f"at {here}: length {len(real)} != {len(fake)}"
        return None
    if isinstance(real, dict):
        rk, fk = list(real), list(fake)
        for i, (a, b) in enumerate(zip(rk, fk)):
            if a != b or type(a) is not type(b):
                return f"at {here}: map key #{i} {a!r} != {b!r} (keys {rk!r} vs {fk!r})"
            diff = first_difference(real[a], fake[b], f"{path}[{a!r}]")
            if diff:
                return diff
        if len(rk) != len(fk):
            return f"at {here}: map size {len(rk)} != {len(fk)} (keys {rk!r} vs {fk!r})"
        return None
    if real != fake:
        return f"at {here}: {real!r} != {fake!r}"
    return None


def shape(reply: Any) -> Any:
    """Structure only: types and lengths (``pair.loosely``). Errors keep their class, not their text."""
    if isinstance(reply, list):
        return ["array", [shape(x) for x in reply]]
    if isinstance(reply, dict):
        return ["map", [[shape(k), shape(v)] for k, v in reply.items()]]
    if isinstance(reply, Err):
        return ["error", reply.kind]
    return type(reply).__name__


# ---------------------------------------------------------------------------------------------
# Normalisers: (real, fake, pair) -> real rewritten in the fake's terms where the difference is by nature.
# They run after the automatic ID translation and before the exact comparison.

Normalizer = Callable[[Any, Any, Any], Any]

_ID_RE = re.compile(rb"^(\d+)-(\d+)$")
#: An ID whose ms part is below this (2001-09-09) was written by the test, never generated from a clock.
AUTO_ID_MIN_MS = 10**12


def ids(real: Any, fake: Any, pair: Any) -> Any:
    """Auto-generated IDs (``XADD *``): pair each real clock-made ID with the fake's at the same position.

    Only IDs with a clock-sized ms part (>= 1e12) whose ms differ by at most ``pair.tolerance_ms`` are
    paired; the pair is remembered (``pair.alias``), so later replies show the fake's ID and later
    arguments naming the fake's ID reach the real server as the real one. A bijection is enforced.
    """

    def walk(r: Any, f: Any) -> Any:
        if isinstance(r, list) and isinstance(f, list):
            return [walk(a, b) for a, b in zip(r, f)] + r[len(f):]
        if isinstance(r, dict) and isinstance(f, dict):
            fv = list(f.values())
            return {k: (walk(v, fv[i]) if i < len(fv) else v) for i, (k, v) in enumerate(r.items())}
        if isinstance(r, bytes) and isinstance(f, bytes) and r != f:
            mr, mf = _ID_RE.match(r), _ID_RE.match(f)
            if mr and mf:
                rms, fms = int(mr.group(1)), int(mf.group(1))
                if min(rms, fms) >= AUTO_ID_MIN_MS and abs(rms - fms) <= pair.tolerance_ms:
                    if pair.add_alias(real_id=r, fake_id=f):
                        return f
        return r

    return walk(real, fake)


#: Map fields holding a duration or a timestamp from the server clock (XINFO CONSUMERS / STREAM FULL).
TIME_FIELDS = frozenset({b"idle", b"inactive", b"seen-time", b"active-time"})


def times(real: Any, fake: Any, pair: Any) -> Any:
    """Idle times and delivery/seen/active times: equal within ``pair.tolerance_ms``.

    The fake's ManualClock is set to the real server's ``TIME`` before every paired command, so a
    duration or timestamp measured by both differs only by the loopback latency. Recognised places:
    map fields ``idle``, ``inactive``, ``seen-time``, ``active-time`` (RESP3 dict or RESP2 flat array),
    XPENDING extended rows ``[id, consumer, idle, count]``, XINFO STREAM FULL group PEL rows
    ``[id, consumer, delivery_time, count]`` and consumer PEL rows ``[id, delivery_time, count]``.
    Negative values (``inactive`` -1 = never active) must be equal.
    """

    def close(r: Any, f: Any) -> Any:
        if type(r) is int and type(f) is int and r >= 0 and f >= 0 and abs(r - f) <= pair.tolerance_ms:
            return f
        return r

    def is_id(x: Any) -> bool:
        return isinstance(x, bytes) and bool(_ID_RE.match(x))

    def walk(r: Any, f: Any) -> Any:
        if isinstance(r, dict) and isinstance(f, dict):
            fv = dict(f)
            return {k: (close(v, fv[k]) if k in TIME_FIELDS and k in fv else walk(v, fv.get(k))) for k, v in r.items()}
        if not (isinstance(r, list) and isinstance(f, list)):
            return r
        if len(r) == len(f) and len(r) in (3, 4) and is_id(r[0]) and all(type(x) is int for x in r[-2:]):
            out = list(r)
            if len(r) == 4 and isinstance(r[1], bytes):
                out[2] = close(r[2], f[2])
            elif len(r) == 3:
                out[1] = close(r[1], f[1])
            return out
        out = [walk(a, b) for a, b in zip(r, f)] + r[len(f):]
        if len(r) == len(f) and len(r) % 2 == 0:  # RESP2 flat map: [k1, v1, k2, v2, ...]
            for i in range(0, len(r), 2):
                if isinstance(r[i], bytes) and r[i] in TIME_FIELDS and r[i] == f[i]:
                    out[i + 1] = close(r[i + 1], f[i + 1])
        return out

    return walk(real, fake)


def set_field(name: bytes, value: Any) -> Callable[[Any], Any]:
    """A function that sets map field ``name`` to ``value`` everywhere in a reply (RESP3 dicts and RESP2
    flat arrays alike), e.g. to state the spec'd value in ``pair.known_difference(expected=...)``."""

    def apply(reply: Any) -> Any:
        if isinstance(reply, dict):
            return {k: (value if k == name else apply(v)) for k, v in reply.items()}
        if isinstance(reply, list):
            out = [apply(x) for x in reply]
            if len(out) % 2 == 0:
                for i in range(0, len(out), 2):
                    if out[i] == name and isinstance(out[i], bytes):
                        out[i + 1] = value
            return out
        return reply

    return apply


def normalizers(spec: Normalizer | Sequence[Normalizer] | None) -> Tuple[Normalizer, ...]:
    if spec is None:
        return ()
    if callable(spec):
        return (spec,)
    return tuple(spec)


def translate(reply: Any, table: dict) -> Any:
    """Replace every bytes value found in ``table`` (used for real→fake ID aliases)."""
    if not table:
        return reply
    if isinstance(reply, bytes):
        return table.get(reply, reply)
    if isinstance(reply, list):
        return [translate(x, table) for x in reply]
    if isinstance(reply, dict):
        return {translate(k, table): translate(v, table) for k, v in reply.items()}
    return reply


def encode_args(argv: Iterable[Any]) -> List[bytes]:
    """Arguments as the bytes redis-py would send (str → UTF-8, int/float → decimal text)."""
    out: List[bytes] = []
    for a in argv:
        if isinstance(a, bytes):
            out.append(a)
        elif isinstance(a, str):
            out.append(a.encode())
        elif isinstance(a, bool):
            raise TypeError("bool argument: pass b'1'/b'0' explicitly")
        elif isinstance(a, (int, float)):
            out.append(repr(a).encode())
        elif isinstance(a, memoryview):
            out.append(bytes(a))
        else:
            raise TypeError(f"cannot send {type(a).__name__} argument {a!r}")
    return out
