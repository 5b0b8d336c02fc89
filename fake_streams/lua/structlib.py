"""``struct.pack`` / ``unpack`` / ``size`` as lua_struct (native = little-endian, 64-bit longs, alignment ``!n``).
"""

from __future__ import annotations

import struct as _struct
from typing import Any, Callable, Iterator, List, Tuple

from .libs import Result, _lua_number, _to_number, fmt_g, lua_typename


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
        value: Any
        for opt, size in self._options(fmt, header, _is_data):
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
        for opt, size in self._options(fmt, header, _is_data):
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
            pos += size
        results.append(pos + 1)
        return tuple(results)

    def size(self, fmt_value: Any = None) -> Result:
        try:
            fmt = self._fmt(fmt_value, "size")
            header: List[Any] = ["little", 1, "size"]
            pos = 0
            for opt, size in self._options(fmt, header, str.isalnum):  # b_size skips unknown letters
                pos += self._toalign(pos, header[1], opt, size)
                if opt == "s":
                    raise _StructError("bad argument #1 to 'size' (option 's' has no fixed size)")
                if opt == "c" and size == 0:
                    raise _StructError("bad argument #1 to 'size' (option 'c0' has no fixed size)")
                pos += size
            return True, pos
        except _StructError as exc:
            return False, str(exc)

    def _options(self, fmt: bytes, header: List[Any], is_data: Callable[[str], bool]) -> Iterator[Tuple[str, int]]:
        """Each data option of ``fmt`` with its size; the others (endianness, ``!`` alignment, spaces, an unknown
        option's error) applied to ``header`` on the way, as ``controloptions`` does. O(len(fmt))."""
        i = 0
        while i < len(fmt):
            opt = chr(fmt[i])
            i += 1
            size, i = self._optsize(opt, fmt, i)
            if is_data(opt):
                yield opt, size
            else:
                i = self._control(opt, fmt, i, header)


def _is_data(opt: str) -> bool:
    return opt in "bBhHlLTiIxfdcs"
