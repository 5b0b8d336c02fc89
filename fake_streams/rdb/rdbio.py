"""The RDB primitives (rdb.c): lengths, strings with their integer / LZF encodings, doubles, times.

* length (``rdbSaveLen``): ``00xxxxxx`` 6 bits; ``01xxxxxx xxxxxxxx`` 14 bits (big endian);
  ``0x80`` + u32 BE; ``0x81`` + u64 BE. ``11xxxxxx`` announces a special string encoding instead.
* string (``rdbSaveRawString``): text of an int32 (``string2ll`` canonical, at most 11 bytes) as
  ``0xC0`` int8 / ``0xC1`` int16 / ``0xC2`` int32 (LE); strings over 20 bytes LZF-compressed when
  ``rdbcompression`` is on and the result saves at least 4 bytes (``0xC3`` <clen> <len> <data>);
  otherwise ``<len> <bytes>``.
* binary double (``rdbSaveBinaryDoubleValue``): 8 bytes LE IEEE 754; the old text double of
  RDB_TYPE_ZSET: one length byte (253 nan, 254 +inf, 255 -inf) then that many ASCII bytes.
* millisecond time: 8 bytes LE, signed.

:class:`Reader` never reads past its buffer: a short or malformed read raises PayloadFormatError.
"""

from __future__ import annotations

import math
import struct
from typing import Tuple

from ..ids import parse_i64
from . import lzf
from .errors import PayloadFormatError

ENC_INT8, ENC_INT16, ENC_INT32, ENC_LZF = 0, 1, 2, 3
_DOUBLE = struct.Struct("<d")
_I64 = struct.Struct("<q")


class Writer:
    """Builds an RDB byte string; ``compress`` is the server's ``rdbcompression``."""

    __slots__ = ("out", "compress")

    def __init__(self, compress: bool = True) -> None:
        self.out = bytearray()
        self.compress = compress

    def raw(self, data: bytes) -> None:
        self.out += data

    def byte(self, value: int) -> None:
        self.out.append(value)

    def length(self, value: int) -> None:
        """``rdbSaveLen`` (``value`` is a uint64; a negative int64 is written as its two's complement)."""
        value &= 0xFFFFFFFFFFFFFFFF
        out = self.out
        if value < 1 << 6:
            out.append(value)
        elif value < 1 << 14:
            out += bytes(((value >> 8) | 0x40, value & 0xFF))
        elif value <= 0xFFFFFFFF:
            out.append(0x80)
            out += value.to_bytes(4, "big")
        else:
            out.append(0x81)
            out += value.to_bytes(8, "big")

    def string(self, data: bytes) -> None:
        """``rdbSaveRawString``: integer encoding, LZF, or verbatim, as the server chooses."""
        n = len(data)
        if n <= 11 and n:
            value = parse_i64(data)
            if value is not None and self._integer(value):
                return
        if self.compress and n > 20:
            packed = lzf.compress(data, n - 4)
            if packed is not None:
                self.out.append(0xC0 | ENC_LZF)
                self.length(len(packed))
                self.length(n)
                self.out += packed
                return
        self.length(n)
        self.out += data

    def _integer(self, value: int) -> bool:
        """``rdbEncodeInteger``: write ``value`` in 1/2/4 bytes if it fits an int32; False otherwise."""
        if -(1 << 7) <= value < 1 << 7:
            self.out += bytes((0xC0 | ENC_INT8, value & 0xFF))
        elif -(1 << 15) <= value < 1 << 15:
            self.out.append(0xC0 | ENC_INT16)
            self.out += (value & 0xFFFF).to_bytes(2, "little")
        elif -(1 << 31) <= value < 1 << 31:
            self.out.append(0xC0 | ENC_INT32)
            self.out += (value & 0xFFFFFFFF).to_bytes(4, "little")
        else:
            return False
        return True

    def binary_double(self, value: float) -> None:
        self.out += _DOUBLE.pack(value)

    def ms_time(self, value: int) -> None:
        self.out += _I64.pack(value)

    def getvalue(self) -> bytes:
        return bytes(self.out)


class Reader:
    """Reads RDB primitives from ``data[pos:end]``; every failure is a PayloadFormatError."""

    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes, pos: int = 0, end: int = -1) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end < 0 else end

    def raw(self, n: int) -> bytes:
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise PayloadFormatError("short read")
        self.pos = pos + n
        return self.data[pos:pos + n]

    def byte(self) -> int:
        if self.pos >= self.end:
            raise PayloadFormatError("short read")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def length_or_encoding(self) -> Tuple[int, bool]:
        """``rdbLoadLenByRef``: ``(value, is_encoded)``."""
        b = self.byte()
        kind = b >> 6
        if kind == 3:
            return b & 0x3F, True
        if kind == 0:
            return b & 0x3F, False
        if kind == 1:
            return ((b & 0x3F) << 8) | self.byte(), False
        if b == 0x80:
            return int.from_bytes(self.raw(4), "big"), False
        if b == 0x81:
            return int.from_bytes(self.raw(8), "big"), False
        raise PayloadFormatError("unknown length encoding")

    def length(self) -> int:
        value, encoded = self.length_or_encoding()
        if encoded:
            raise PayloadFormatError("encoded value where a length is expected")
        return value

    def string(self) -> bytes:
        """``rdbGenericLoadStringObject``: integers come back as their decimal text."""
        value, encoded = self.length_or_encoding()
        if not encoded:
            return self.raw(value)
        if value == ENC_INT8:
            return b"%d" % _signed(self.byte(), 8)
        if value == ENC_INT16:
            return b"%d" % _signed(int.from_bytes(self.raw(2), "little"), 16)
        if value == ENC_INT32:
            return b"%d" % _signed(int.from_bytes(self.raw(4), "little"), 32)
        if value == ENC_LZF:
            clen = self.length()
            n = self.length()
            packed = self.raw(clen)
            out = lzf.decompress(packed, n)
            if out is None:
                raise PayloadFormatError("invalid LZF compressed string")
            return out
        raise PayloadFormatError("unknown string encoding")

    def binary_double(self) -> float:
        value: float = _DOUBLE.unpack(self.raw(8))[0]
        return value

    def text_double(self) -> float:
        """``rdbLoadDoubleValue`` (RDB_TYPE_ZSET)."""
        n = self.byte()
        if n == 253:
            return math.nan
        if n == 254:
            return math.inf
        if n == 255:
            return -math.inf
        text = self.raw(n)
        try:
            return float(text.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            raise PayloadFormatError("bad double text") from None

    def ms_time(self) -> int:
        value: int = _I64.unpack(self.raw(8))[0]
        return value


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >= 1 << (bits - 1) else value
