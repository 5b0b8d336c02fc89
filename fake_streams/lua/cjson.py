"""``cjson.encode`` / ``cjson.decode`` as Redis links lua_cjson 2.1: sparse arrays refused (ratio 2, safe 10),
``%.14g`` numbers, ``/`` escaped, an empty table is ``{}``, 1000 levels of nesting, the parser's error texts.
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
from typing import Any, Callable, Iterator, List, Tuple

from .libs import NULL, Result, TableLibrary, fmt_g, lua_typename

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


class CJson(TableLibrary):
    """``cjson.encode`` / ``cjson.decode`` for one runtime."""

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
        return self._container("T_OBJ_END", "object", self._object_member)

    def _array(self) -> Any:
        return self._container("T_ARR_END", "array", self._array_member)

    def _object_member(self, table: Any, token: Tuple[str, int, Any], index: int) -> None:
        if token[0] != "T_STRING":
            self.fail("object key string", token)
        colon = self.token()
        if colon[0] != "T_COLON":
            self.fail("colon", colon)
        table[token[2]] = self.value(self.token())

    def _array_member(self, table: Any, token: Tuple[str, int, Any], index: int) -> None:
        table[index] = self.value(token)

    def _container(self, end: str, what: str, member: Callable[[Any, Tuple[str, int, Any], int], None]) -> Any:
        """An object or array (its opening token read): a new table, one rawset per member in document order."""
        self._descend()
        table = self._new_table()
        token = self.token()
        index = 1
        if token[0] != end:
            while True:
                member(table, token, index)
                index += 1
                token = self.token()
                if token[0] == end:
                    break
                if token[0] != "T_COMMA":
                    self.fail(f"comma or {what} end", token)
                token = self.token()
        self.depth -= 1
        return table


def _utf8(code: int) -> bytes:
    if code <= 0x7F:
        return bytes([code])
    if code <= 0x7FF:
        return bytes([0xC0 | (code >> 6), 0x80 | (code & 0x3F)])
    if code <= 0xFFFF:
        return bytes([0xE0 | (code >> 12), 0x80 | ((code >> 6) & 0x3F), 0x80 | (code & 0x3F)])
    return bytes([0xF0 | (code >> 18), 0x80 | ((code >> 12) & 0x3F), 0x80 | ((code >> 6) & 0x3F), 0x80 | (code & 0x3F)])
