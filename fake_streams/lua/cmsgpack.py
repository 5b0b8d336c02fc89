"""``cmsgpack.pack`` / ``unpack`` / ``unpack_one`` / ``unpack_limit`` as lua_cmsgpack 0.4: integral numbers as the
smallest integer type, other numbers float32 when exact else float64, tables with keys 1..n as arrays, nesting
capped at 16 (deeper tables pack as nil).
"""

from __future__ import annotations

import math
import struct as _struct
from typing import Any, Callable, List

from .libs import NULL, Result, TableLibrary, _lua_number, fmt_g, lua_typename

MSGPACK_MAX_NESTING = 16


class _MsgpackError(Exception):
    pass


class CMsgpack(TableLibrary):
    """``cmsgpack.pack`` / ``unpack`` / ``unpack_one`` / ``unpack_limit``."""

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
