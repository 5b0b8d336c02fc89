"""The C libraries Redis links into its Lua: ``cjson``, ``cmsgpack``, ``bit`` and ``struct``, written in Python.

Each function here takes Lua values as lupa hands them over (bytes, int/float, bool, None, lupa tables) and
returns ``(True, result)`` or ``(False, message)``; it never raises. The Lua wrappers of :mod:`.prelude` raise
the message as a Lua error (with no position, as a C library's ``luaL_error`` does), so no Python exception
ever crosses into a script.

Tables are read in ``lua_next`` order (lupa's ``items()``), so encodings list keys in the order the real
libraries do; tables are built one ``rawset`` at a time in document order, so a later ``pairs`` sees the
same order as on the server.

Behaviour follows the libraries as Redis builds them: lua_cjson 2.1 (sparse arrays refused with ratio 2 /
safe 10, ``%.14g`` numbers, ``/`` escaped, empty table ``{}``, depth 1000), lua_cmsgpack 0.4 (integral
numbers as the smallest integer type, other numbers float32 when exact else float64, tables with keys
1..n as arrays, nesting capped at 16), LuaBitOp 1.0 (32-bit, arguments rounded to nearest) and lua_struct.
"""

from __future__ import annotations

import contextlib
import math
import re
import struct as _struct
import sys
from typing import Any, Callable, Iterator, List, Tuple

Result = Tuple[bool, Any]


class Null:
    """``cjson.null``: a light userdata holding NULL on the server."""

    __slots__ = ()

    def __str__(self) -> str:
        return "userdata: (nil)"

    __repr__ = __str__


NULL = Null()


def lua_typename(value: Any, lua_type: Callable[[Any], Any]) -> str:
    """``lua_typename(lua_type(v))`` for a value lupa handed over."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, bytes):
        return "string"
    kind = lua_type(value)
    return "userdata" if kind is None else (kind.decode() if isinstance(kind, bytes) else str(kind))


def fmt_g(value: float, precision: int) -> bytes:
    """C's ``%.<precision>g`` (the libraries' number format)."""
    return (("%." + str(precision) + "g") % value).encode()


# -------------------------------------------------------------------------------------------- cjson
_ESCAPES = {i: b"\\u%04x" % i for i in range(32)}
_ESCAPES.update({8: b"\\b", 9: b"\\t", 10: b"\\n", 12: b"\\f", 13: b"\\r", 34: b'\\"', 47: b"\\/", 92: b"\\\\",
                 127: b"\\u007f"})
_NEEDS_ESCAPE = re.compile(rb'[\x00-\x1f"/\\\x7f]')
ENCODE_MAX_DEPTH = 1000
DECODE_MAX_DEPTH = 1000


@contextlib.contextmanager
def _deep_recursion() -> Iterator[None]:
    """Room for lua_cjson's 1000 levels of nesting (two Python frames per level, plus lupa's)."""
    limit = sys.getrecursionlimit()
    if limit < 5000:
        sys.setrecursionlimit(5000)
    try:
        yield
    finally:
        if limit < 5000:
            sys.setrecursionlimit(limit)


class _CJsonError(Exception):
    pass


class CJson:
    """``cjson.encode`` / ``cjson.decode`` for one runtime (``new_table`` makes an empty Lua table)."""

    def __init__(self, new_table: Callable[[], Any], lua_type: Callable[[Any], Any]) -> None:
        self._new_table = new_table
        self._lua_type = lua_type

    # -- encode ------------------------------------------------------------------------------------
    def encode(self, value: Any) -> Result:
        out: List[bytes] = []
        try:
            with _deep_recursion():
                self._append(value, 0, out)
        except _CJsonError as exc:
            return False, str(exc)
        return True, b"".join(out)

    def _fail(self, value: Any, reason: str) -> _CJsonError:
        return _CJsonError(f"Cannot serialise {lua_typename(value, self._lua_type)}: {reason}")

    @staticmethod
    def _string(raw: bytes, out: List[bytes]) -> None:
        out.append(b'"' + _NEEDS_ESCAPE.sub(lambda m: _ESCAPES[m.group()[0]], raw) + b'"')

    def _number(self, value: Any, out: List[bytes]) -> None:
        if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
            raise self._fail(value, "must not be NaN or Inf")
        out.append(fmt_g(value, 14))

    def _append(self, value: Any, depth: int, out: List[bytes]) -> None:
        if isinstance(value, bytes):
            self._string(value, out)
        elif isinstance(value, bool):
            out.append(b"true" if value else b"false")
        elif isinstance(value, (int, float)):
            self._number(value, out)
        elif value is None or value is NULL:
            out.append(b"null")
        elif self._lua_type(value) == "table":
            depth += 1
            if depth > ENCODE_MAX_DEPTH:
                raise _CJsonError(f"Cannot serialise, excessive nesting ({depth})")
            length = self._array_length(value)
            if length > 0:
                out.append(b"[")
                for i in range(1, length + 1):
                    if i > 1:
                        out.append(b",")
                    self._append(value[i], depth, out)
                out.append(b"]")
            else:
                self._object(value, depth, out)
        else:
            raise self._fail(value, "type not supported")

    def _array_length(self, table: Any) -> int:
        """-1 for an object, else the array length (0 for an empty table); refuses excessively sparse arrays."""
        top = items = 0
        for key, _ in table.items():
            if isinstance(key, (int, float)) and not isinstance(key, bool) and key and math.floor(key) == key \
                    and key >= 1:
                top = max(top, int(key))
                items += 1
                continue
            return -1
        if top > items * 2 and top > 10:
            raise self._fail(table, "excessively sparse array")
        return top

    def _object(self, table: Any, depth: int, out: List[bytes]) -> None:
        out.append(b"{")
        first = True
        for key, item in table.items():
            if not first:
                out.append(b",")
            first = False
            if isinstance(key, bytes):
                self._string(key, out)
                out.append(b":")
            elif isinstance(key, (int, float)) and not isinstance(key, bool):
                out.append(b'"')
                self._number(key, out)
                out.append(b'":')
            else:
                raise self._fail(key, "table key must be a number or string")
            self._append(item, depth, out)
        out.append(b"}")

    # -- decode ------------------------------------------------------------------------------------
    def decode(self, text: Any) -> Result:
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            text = fmt_g(text, 14)
        if not isinstance(text, bytes):
            got = lua_typename(text, self._lua_type)
            return False, f"bad argument #1 to 'decode' (string expected, got {'no value' if got == 'nil' else got})"
        if len(text) >= 2 and (text[0] == 0 or text[1] == 0):
            return False, "JSON parser does not support UTF-16 or UTF-32"
        parser = _JsonParser(text.split(b"\0", 1)[0], self._new_table)
        try:
            with _deep_recursion():
                value = parser.value(parser.token())
            end = parser.token()
            if end[0] != "T_END":
                parser.fail("the end", end)
        except _CJsonError as exc:
            return False, str(exc)
        return True, value


_NUMBER = re.compile(rb"[-+]?(?:0[xX][0-9a-fA-F]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|inf(?:inity)?|nan)",
                     re.IGNORECASE)
_SIMPLE_TOKENS = {ord("{"): "T_OBJ_BEGIN", ord("}"): "T_OBJ_END", ord("["): "T_ARR_BEGIN", ord("]"): "T_ARR_END",
                  ord(","): "T_COMMA", ord(":"): "T_COLON"}
_UNESCAPE = {ord('"'): b'"', ord("\\"): b"\\", ord("/"): b"/", ord("b"): b"\b", ord("t"): b"\t", ord("n"): b"\n",
             ord("f"): b"\f", ord("r"): b"\r"}


class _JsonParser:
    """lua_cjson's tokenizer and recursive descent (tokens are ``(type, index, value)``)."""

    def __init__(self, data: bytes, new_table: Callable[[], Any]) -> None:
        self.data = data
        self.pos = 0
        self.depth = 0
        self._new_table = new_table

    def fail(self, expected: str, token: Tuple[str, int, Any]) -> None:
        found = token[2] if token[0] == "T_ERROR" else token[0]
        raise _CJsonError(f"Expected {expected} but found {found} at character {token[1] + 1}")

    def _error(self, what: str) -> Tuple[str, int, Any]:
        return ("T_ERROR", self.pos, what)

    def token(self) -> Tuple[str, int, Any]:
        data = self.data
        while self.pos < len(data) and data[self.pos] in b" \t\n\r":
            self.pos += 1
        start = self.pos
        if start >= len(data):
            return ("T_END", start, None)
        ch = data[start]
        simple = _SIMPLE_TOKENS.get(ch)
        if simple is not None:
            self.pos += 1
            return (simple, start, None)
        if ch == 0x22:
            return self._string(start)
        if ch == 0x2D or 0x30 <= ch <= 0x39:
            return self._number(start)
        for word, kind, value in ((b"true", "T_BOOLEAN", True), (b"false", "T_BOOLEAN", False), (b"null", "T_NULL", NULL)):
            if data.startswith(word, start):
                self.pos += len(word)
                return (kind, start, value)
        if ch in b"iInN+":
            return self._number(start)
        return self._error("invalid token")

    def _number(self, start: int) -> Tuple[str, int, Any]:
        match = _NUMBER.match(self.data, start)
        if match is None:
            return self._error("invalid number")
        raw = match.group()
        self.pos = match.end()
        body = raw.lstrip(b"+-").lower()
        if body.startswith(b"0x"):
            value = float(int(body, 16)) * (-1 if raw.startswith(b"-") else 1)
        else:
            value = float(raw)
        return ("T_NUMBER", start, int(value) if value.is_integer() and abs(value) < 2**63 else value)

    def _string(self, start: int) -> Tuple[str, int, Any]:
        data = self.data
        self.pos += 1
        out = bytearray()
        while True:
            if self.pos >= len(data):
                return self._error("unexpected end of string")
            ch = data[self.pos]
            if ch == 0x22:
                break
            if ch == 0x5C:
                nxt = data[self.pos + 1] if self.pos + 1 < len(data) else 0
                if nxt == ord("u"):
                    decoded = self._unicode_escape()
                    if decoded is None:
                        return self._error("invalid unicode escape code")
                    out += decoded
                    continue
                plain = _UNESCAPE.get(nxt)
                if plain is None:
                    return self._error("invalid escape code")
                out += plain
                self.pos += 2
                continue
            out.append(ch)
            self.pos += 1
        self.pos += 1
        return ("T_STRING", start, bytes(out))

    def _hex4(self, at: int) -> int:
        chunk = self.data[at:at + 4]
        if len(chunk) < 4 or not all(c in b"0123456789abcdefABCDEF" for c in chunk):
            return -1
        return int(chunk, 16)

    def _unicode_escape(self) -> Any:
        code = self._hex4(self.pos + 2)
        if code < 0:
            return None
        length = 6
        if code & 0xF800 == 0xD800:
            if code & 0x400 or self.data[self.pos + 6:self.pos + 8] != b"\\u":
                return None
            low = self._hex4(self.pos + 8)
            if low < 0 or low & 0xFC00 != 0xDC00:
                return None
            code = (((code & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000
            length = 12
        self.pos += length
        return _utf8(code)

    def _descend(self) -> None:
        self.depth += 1
        if self.depth > DECODE_MAX_DEPTH:
            raise _CJsonError(f"Found too many nested data structures ({self.depth}) at character {self.pos}")

    def value(self, token: Tuple[str, int, Any]) -> Any:
        kind = token[0]
        if kind in ("T_STRING", "T_NUMBER", "T_BOOLEAN", "T_NULL"):
            return token[2]
        if kind == "T_OBJ_BEGIN":
            return self._object()
        if kind == "T_ARR_BEGIN":
            return self._array()
        self.fail("value", token)

    def _object(self) -> Any:
        self._descend()
        table = self._new_table()
        token = self.token()
        if token[0] == "T_OBJ_END":
            self.depth -= 1
            return table
        while True:
            if token[0] != "T_STRING":
                self.fail("object key string", token)
            key = token[2]
            token = self.token()
            if token[0] != "T_COLON":
                self.fail("colon", token)
            table[key] = self.value(self.token())
            token = self.token()
            if token[0] == "T_OBJ_END":
                self.depth -= 1
                return table
            if token[0] != "T_COMMA":
                self.fail("comma or object end", token)
            token = self.token()

    def _array(self) -> Any:
        self._descend()
        table = self._new_table()
        token = self.token()
        if token[0] == "T_ARR_END":
            self.depth -= 1
            return table
        index = 1
        while True:
            table[index] = self.value(token)
            index += 1
            token = self.token()
            if token[0] == "T_ARR_END":
                self.depth -= 1
                return table
            if token[0] != "T_COMMA":
                self.fail("comma or array end", token)
            token = self.token()


def _utf8(code: int) -> bytes:
    if code <= 0x7F:
        return bytes([code])
    if code <= 0x7FF:
        return bytes([0xC0 | (code >> 6), 0x80 | (code & 0x3F)])
    if code <= 0xFFFF:
        return bytes([0xE0 | (code >> 12), 0x80 | ((code >> 6) & 0x3F), 0x80 | (code & 0x3F)])
    return bytes([0xF0 | (code >> 18), 0x80 | ((code >> 12) & 0x3F), 0x80 | ((code >> 6) & 0x3F), 0x80 | (code & 0x3F)])


# ----------------------------------------------------------------------------------------- cmsgpack
MSGPACK_MAX_NESTING = 16


class _MsgpackError(Exception):
    pass


class CMsgpack:
    """``cmsgpack.pack`` / ``unpack`` / ``unpack_one`` / ``unpack_limit``."""

    def __init__(self, new_table: Callable[[], Any], lua_type: Callable[[Any], Any]) -> None:
        self._new_table = new_table
        self._lua_type = lua_type

    def pack(self, *values: Any) -> Result:
        if not values:
            return False, "bad argument #0 to 'pack' (MessagePack pack needs input.)"
        out: List[bytes] = []
        for value in values:
            self._encode(value, 0, out)
        return True, b"".join(out)

    def _encode(self, value: Any, level: int, out: List[bytes]) -> None:
        if isinstance(value, bytes):
            n = len(value)
            if n < 32:
                out.append(bytes([0xA0 | n]))
            elif n <= 0xFF:
                out.append(b"\xd9" + bytes([n]))
            elif n <= 0xFFFF:
                out.append(b"\xda" + n.to_bytes(2, "big"))
            else:
                out.append(b"\xdb" + n.to_bytes(4, "big"))
            out.append(value)
        elif isinstance(value, bool):
            out.append(b"\xc3" if value else b"\xc2")
        elif isinstance(value, (int, float)):
            self._number(value, out)
        elif value is not None and value is not NULL and self._lua_type(value) == "table" \
                and level < MSGPACK_MAX_NESTING:
            self._table(value, level, out)
        else:
            out.append(b"\xc0")

    @staticmethod
    def _number(value: Any, out: List[bytes]) -> None:
        as_float = float(value)
        if not math.isinf(as_float) and not math.isnan(as_float) and as_float == int(as_float) \
                and -(2**63) <= int(as_float) < 2**63:
            out.append(_msgpack_int(int(as_float)))
            return
        single = _struct.unpack(">f", _struct.pack(">f", as_float))[0] if abs(as_float) < 3.5e38 or \
            math.isinf(as_float) or math.isnan(as_float) else None
        if single is not None and (single == as_float or (math.isnan(single) and math.isnan(as_float))):
            out.append(b"\xca" + _struct.pack(">f", as_float))
        else:
            out.append(b"\xcb" + _struct.pack(">d", as_float))

    def _table(self, table: Any, level: int, out: List[bytes]) -> None:
        count = top = 0
        is_array = True
        for key, _ in table.items():
            if isinstance(key, bool) or not isinstance(key, (int, float)) or key <= 0 or int(key) != key \
                    or key >= 2**31:
                is_array = False
                break
            top = max(top, int(key))
            count += 1
        if is_array and top == count:
            n = len(table)
            out.append(bytes([0x90 | n]) if n < 16 else (b"\xdc" + n.to_bytes(2, "big") if n <= 0xFFFF
                                                          else b"\xdd" + n.to_bytes(4, "big")))
            for i in range(1, n + 1):
                self._encode(table[i], level + 1, out)
            return
        pairs = list(table.items())
        n = len(pairs)
        out.append(bytes([0x80 | n]) if n < 16 else (b"\xde" + n.to_bytes(2, "big") if n <= 0xFFFF
                                                      else b"\xdf" + n.to_bytes(4, "big")))
        for key, item in pairs:
            self._encode(key, level + 1, out)
            self._encode(item, level + 1, out)

    def unpack(self, data: Any, limit: int = 0, offset: int = 0, full: bool = True) -> Result:
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            data = fmt_g(data, 14)
        if not isinstance(data, bytes):
            return False, f"bad argument #1 to 'unpack' (string expected, got {lua_typename(data, self._lua_type)})"
        if offset < 0 or limit < 0:
            return False, f"Invalid request to unpack with offset of {offset} and limit of {len(data)}."
        if offset > len(data):
            return False, f"Start offset {offset} greater than input length {len(data)}."
        decode_all = full or (not limit and not offset)
        if decode_all:
            limit = 2**31 - 1
        values: List[Any] = []
        reader = _MsgpackReader(data, offset, self._new_table)
        try:
            while reader.pos < len(data) and len(values) < limit:
                values.append(reader.value())
        except _MsgpackError as exc:
            return False, str(exc)
        if not decode_all:
            values.insert(0, -1 if reader.pos >= len(data) else reader.pos)
        return True, tuple(values)


def _msgpack_int(n: int) -> bytes:
    if n >= 0:
        if n <= 127:
            return bytes([n])
        if n <= 0xFF:
            return b"\xcc" + bytes([n])
        if n <= 0xFFFF:
            return b"\xcd" + n.to_bytes(2, "big")
        if n <= 0xFFFFFFFF:
            return b"\xce" + n.to_bytes(4, "big")
        return b"\xcf" + n.to_bytes(8, "big")
    if n >= -32:
        return bytes([n & 0xFF])
    if n >= -128:
        return b"\xd0" + n.to_bytes(1, "big", signed=True)
    if n >= -32768:
        return b"\xd1" + n.to_bytes(2, "big", signed=True)
    if n >= -(2**31):
        return b"\xd2" + n.to_bytes(4, "big", signed=True)
    return b"\xd3" + n.to_bytes(8, "big", signed=True)


_FIXED_INTS = {0xCC: (1, False), 0xCD: (2, False), 0xCE: (4, False), 0xCF: (8, False),
               0xD0: (1, True), 0xD1: (2, True), 0xD2: (4, True), 0xD3: (8, True)}


class _MsgpackReader:
    def __init__(self, data: bytes, pos: int, new_table: Callable[[], Any]) -> None:
        self.data = data
        self.pos = pos
        self._new_table = new_table

    def _take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise _MsgpackError("Missing bytes in input.")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def _length(self, n: int) -> int:
        return int.from_bytes(self._take(n), "big")

    def value(self) -> Any:
        tag = self._take(1)[0]
        fixed = _FIXED_INTS.get(tag)
        if fixed is not None:
            return int.from_bytes(self._take(fixed[0]), "big", signed=fixed[1])
        if tag == 0xC0:
            return None
        if tag in (0xC2, 0xC3):
            return tag == 0xC3
        if tag == 0xCA:
            return _lua_number(_struct.unpack(">f", self._take(4))[0])
        if tag == 0xCB:
            return _lua_number(_struct.unpack(">d", self._take(8))[0])
        if tag in (0xD9, 0xDA, 0xDB):
            return self._take(self._length({0xD9: 1, 0xDA: 2, 0xDB: 4}[tag]))
        if tag in (0xDC, 0xDD):
            return self._array(self._length(2 if tag == 0xDC else 4))
        if tag in (0xDE, 0xDF):
            return self._map(self._length(2 if tag == 0xDE else 4))
        if tag & 0x80 == 0:
            return tag
        if tag & 0xE0 == 0xE0:
            return tag - 256
        if tag & 0xE0 == 0xA0:
            return self._take(tag & 0x1F)
        if tag & 0xF0 == 0x90:
            return self._array(tag & 0x0F)
        if tag & 0xF0 == 0x80:
            return self._map(tag & 0x0F)
        raise _MsgpackError("Bad data format in input.")

    def _array(self, n: int) -> Any:
        table = self._new_table()
        for i in range(1, n + 1):
            item = self.value()
            if item is not None:
                table[i] = item
        return table

    def _map(self, n: int) -> Any:
        table = self._new_table()
        for _ in range(n):
            key = self.value()
            item = self.value()
            if key is not None and item is not None:
                table[key] = item
        return table


def _lua_number(value: float) -> Any:
    return int(value) if value.is_integer() and abs(value) < 2**63 else value


# ---------------------------------------------------------------------------------------------- bit
def _to_number(value: Any) -> Any:
    """``lua_tonumber``: numbers, and strings that read as numbers; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, bytes):
        text = value.strip()
        try:
            return int(text, 16) if text.lower().startswith((b"0x", b"-0x")) else float(text)
        except ValueError:
            return None
    return None


def _bit_arg(value: Any, index: int, name: str, lua_type: Callable[[Any], Any]) -> int:
    number = _to_number(value)
    if number is None or (isinstance(number, float) and (math.isnan(number) or math.isinf(number))):
        if number is None:
            got = lua_typename(value, lua_type)
            raise _BitError(f"bad argument #{index} to '{name}' (number expected, got {'no value' if got == 'nil' else got})")
        return 0
    return int(round(number)) & 0xFFFFFFFF  # the 2^52+2^51 trick: round half to even, low 32 bits


class _BitError(Exception):
    pass


def _signed(b: int) -> int:
    b &= 0xFFFFFFFF
    return b - 2**32 if b & 0x80000000 else b


class Bit:
    """LuaBitOp: every result is a signed 32-bit number."""

    def __init__(self, lua_type: Callable[[Any], Any]) -> None:
        self._lua_type = lua_type

    def call(self, name: bytes, *args: Any) -> Result:
        op = name.decode()
        try:
            return True, self._run(op, args)
        except _BitError as exc:
            return False, str(exc)

    def _arg(self, args: Tuple[Any, ...], i: int, op: str) -> int:
        return _bit_arg(args[i] if i < len(args) else None, i + 1, op, self._lua_type)

    def _run(self, op: str, args: Tuple[Any, ...]) -> Any:
        b = self._arg(args, 0, op)
        if op == "tobit":
            return _signed(b)
        if op == "bnot":
            return _signed(~b)
        if op in ("band", "bor", "bxor"):
            for i in range(1, len(args)):
                other = self._arg(args, i, op)
                b = b & other if op == "band" else (b | other if op == "bor" else b ^ other)
            return _signed(b)
        if op == "bswap":
            return _signed(int.from_bytes(b.to_bytes(4, "big"), "little"))
        if op == "tohex":
            n = 8 if len(args) < 2 else _signed(self._arg(args, 1, op))
            digits = "0123456789abcdef"
            if n < 0:
                n, digits = -n, "0123456789ABCDEF"
            n = min(n, 8)
            out = ""
            for _ in range(n):
                out = digits[b & 15] + out
                b >>= 4
            return out.encode()
        n = self._arg(args, 1, op) & 31
        if op == "lshift":
            return _signed(b << n)
        if op == "rshift":
            return _signed(b >> n)
        if op == "arshift":
            return _signed(_signed(b) >> n)
        if op == "rol":
            return _signed((b << n) | (b >> (32 - n)))
        return _signed((b << (32 - n)) | (b >> n))  # ror


# ------------------------------------------------------------------------------------------- struct
class _StructError(Exception):
    pass


_INT_SIZES = {"b": 1, "B": 1, "h": 2, "H": 2, "l": 8, "L": 8, "T": 8}
_MAXINTSIZE = 32
_MAXALIGN = 8


class Struct:
    """lua_struct's ``pack`` / ``unpack`` / ``size`` (native = little-endian, 64-bit longs)."""

    def __init__(self, lua_type: Callable[[Any], Any]) -> None:
        self._lua_type = lua_type

    @staticmethod
    def _getnum(fmt: bytes, i: int, default: int) -> Tuple[int, int]:
        if i >= len(fmt) or not chr(fmt[i]).isdigit():
            return default, i
        a = 0
        while i < len(fmt) and chr(fmt[i]).isdigit():
            if a > (2**31 - 1) // 10 or a * 10 > (2**31 - 1) - (fmt[i] - 48):
                raise _StructError("integral size overflow")
            a = a * 10 + fmt[i] - 48
            i += 1
        return a, i

    def _optsize(self, opt: str, fmt: bytes, i: int) -> Tuple[int, int]:
        if opt in _INT_SIZES:
            return _INT_SIZES[opt], i
        if opt == "f":
            return 4, i
        if opt == "d":
            return 8, i
        if opt == "x":
            return 1, i
        if opt == "c":
            return self._getnum(fmt, i, 1)
        if opt in "iI":
            size, i = self._getnum(fmt, i, 4)
            if size > _MAXINTSIZE:
                raise _StructError(f"integral size {size} is larger than limit of {_MAXINTSIZE}")
            return size, i
        return 0, i

    @staticmethod
    def _toalign(length: int, align: int, opt: str, size: int) -> int:
        if size == 0 or opt == "c":
            return 0
        size = min(size, align)
        return (size - (length & (size - 1))) & (size - 1)

    def _control(self, opt: str, fmt: bytes, i: int, header: List[Any]) -> int:
        if opt == " ":
            return i
        if opt == ">":
            header[0] = "big"
        elif opt == "<":
            header[0] = "little"
        elif opt == "!":
            a, i = self._getnum(fmt, i, _MAXALIGN)
            if not (a > 0 and a & (a - 1) == 0):
                raise _StructError(f"alignment {a} is not a power of 2")
            header[1] = a
        else:
            raise _StructError(f"bad argument #1 to '{header[2]}' (invalid format option '{opt}')")
        return i

    def _fmt(self, value: Any, name: str) -> bytes:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return fmt_g(value, 14)
        if not isinstance(value, bytes):
            raise _StructError(f"bad argument #1 to '{name}' (string expected, got {self._got(value)})")
        return value.split(b"\0", 1)[0]

    def _got(self, value: Any) -> str:
        got = lua_typename(value, self._lua_type)
        return "no value" if got == "nil" else got

    def pack(self, fmt_value: Any = None, *args: Any) -> Result:
        try:
            return True, self._pack(self._fmt(fmt_value, "pack"), args)
        except _StructError as exc:
            return False, str(exc)

    def _number_arg(self, args: Tuple[Any, ...], arg: int) -> float:
        value = args[arg - 2] if arg - 2 < len(args) else None
        number = _to_number(value)
        if number is None:
            raise _StructError(f"bad argument #{arg} to 'pack' (number expected, got {self._got(value)})")
        return number

    def _pack(self, fmt: bytes, args: Tuple[Any, ...]) -> bytes:
        header: List[Any] = ["little", 1, "pack"]
        out = bytearray()
        arg = 2
        i = 0
        while i < len(fmt):
            opt = chr(fmt[i])
            i += 1
            size, i = self._optsize(opt, fmt, i)
            pad = self._toalign(len(out), header[1], opt, size)
            out += b"\0" * pad
            if opt in "bBhHlLTiI":
                n = self._number_arg(args, arg)
                arg += 1
                value = int(n) & ((1 << 64) - 1) if abs(n) < 2**64 else 0  # (Uinttype)(Inttype)n
                raw = (value.to_bytes(8, "little") + b"\0" * max(0, size - 8))[:size]
                out += raw if header[0] == "little" else raw[::-1]
            elif opt == "x":
                out += b"\0"
            elif opt in "fd":
                n = self._number_arg(args, arg)
                arg += 1
                out += _struct.pack(("<" if header[0] == "little" else ">") + opt, n)
            elif opt in "cs":
                value = args[arg - 2] if arg - 2 < len(args) else None
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    value = fmt_g(value, 14)
                if not isinstance(value, bytes):
                    raise _StructError(f"bad argument #{arg} to 'pack' (string expected, got {self._got(value)})")
                arg += 1
                if size == 0:
                    size = len(value)
                if len(value) < size:
                    raise _StructError(f"bad argument #{arg} to 'pack' (string too short)")
                out += value[:size]
                if opt == "s":
                    out += b"\0"
            else:
                i = self._control(opt, fmt, i, header)
        return bytes(out)

    def unpack(self, fmt_value: Any = None, data: Any = None, pos: Any = None) -> Result:
        try:
            fmt = self._fmt(fmt_value, "unpack")
            if isinstance(data, (int, float)) and not isinstance(data, bool):
                data = fmt_g(data, 14)
            if not isinstance(data, bytes):
                raise _StructError(f"bad argument #2 to 'unpack' (string expected, got {self._got(data)})")
            start = 1 if pos is None else _to_number(pos)
            if start is None:
                raise _StructError(f"bad argument #3 to 'unpack' (number expected, got {self._got(pos)})")
            if int(start) <= 0:
                raise _StructError("bad argument #3 to 'unpack' (offset must be 1 or greater)")
            return True, self._unpack(fmt, data, int(start) - 1)
        except _StructError as exc:
            return False, str(exc)

    def _unpack(self, fmt: bytes, data: bytes, pos: int) -> Tuple[Any, ...]:
        header: List[Any] = ["little", 1, "unpack"]
        results: List[Any] = []
        i = 0
        while i < len(fmt):
            opt = chr(fmt[i])
            i += 1
            size, i = self._optsize(opt, fmt, i)
            pos += self._toalign(pos, header[1], opt, size)
            if not (size <= len(data) and pos <= len(data) - size):
                raise _StructError("bad argument #2 to 'unpack' (data string too short)")
            chunk = data[pos:pos + size]
            if opt in "bBhHlLTiI":
                raw = chunk if header[0] == "little" else chunk[::-1]
                value = int.from_bytes(raw, "little", signed=opt.islower())
                results.append(_lua_number(float(value)))
            elif opt in "fd":
                results.append(_lua_number(_struct.unpack(("<" if header[0] == "little" else ">") + opt, chunk)[0]))
            elif opt == "c":
                if size == 0:
                    if not results or not isinstance(results[-1], (int, float)):
                        raise _StructError("format 'c0' needs a previous size")
                    size = int(results.pop())
                    if not (size <= len(data) and pos <= len(data) - size):
                        raise _StructError("bad argument #2 to 'unpack' (data string too short)")
                results.append(data[pos:pos + size])
            elif opt == "s":
                end = data.find(b"\0", pos)
                if end < 0:
                    raise _StructError("unfinished string in data")
                size = end - pos + 1
                results.append(data[pos:end])
            elif opt != "x":
                i = self._control(opt, fmt, i, header)
            pos += size
        results.append(pos + 1)
        return tuple(results)

    def size(self, fmt_value: Any = None) -> Result:
        try:
            fmt = self._fmt(fmt_value, "size")
            header: List[Any] = ["little", 1, "size"]
            pos = 0
            i = 0
            while i < len(fmt):
                opt = chr(fmt[i])
                i += 1
                size, i = self._optsize(opt, fmt, i)
                pos += self._toalign(pos, header[1], opt, size)
                if opt == "s":
                    raise _StructError("bad argument #1 to 'size' (option 's' has no fixed size)")
                if opt == "c" and size == 0:
                    raise _StructError("bad argument #1 to 'size' (option 'c0' has no fixed size)")
                if not opt.isalnum():
                    i = self._control(opt, fmt, i, header)
                pos += size
            return True, pos
        except _StructError as exc:
            return False, str(exc)
