"""Listpacks (listpack.c): the server's compact list of strings and integers.

Layout: ``<total bytes: u32 LE> <element count: u16 LE> <element>* 0xFF``; the count saturates at
65535 ("unknown"). Each element is ``<encoding><data><backlen>``:

* ``0xxxxxxx`` 7-bit uint; ``110xxxxx x`` 13-bit int; ``0xF1``/``0xF2``/``0xF3``/``0xF4`` + 2/3/4/8 bytes
  LE signed int;
* ``10xxxxxx`` string < 64 bytes; ``1110xxxx x`` string < 4096; ``0xF0`` + u32 LE length;
* backlen: the size of encoding + data, 1..5 bytes of 7 bits, read right to left.

A string that is canonical int64 text (``lpStringToInt64``, the same rule as ``string2ll``) is stored as
an integer, so :func:`encode` of an element sequence gives the server's bytes for it. :func:`decode`
checks everything it reads (header size, terminator, every backlen, the count unless saturated) and
raises :class:`~.errors.PayloadFormatError`. Both O(total bytes).
"""

from __future__ import annotations

from typing import Iterable, List, Union

from ..nodes import listpack_int
from .errors import PayloadFormatError

Element = Union[bytes, int]

HEADER_SIZE = 6
EOF_BYTE = 0xFF
NUMELE_UNKNOWN = 0xFFFF
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _backlen(size: int) -> bytes:
    """``lpEncodeBacklen`` for an element whose encoding + data take ``size`` bytes."""
    if size <= 127:
        return bytes((size,))
    if size < 16383:
        return bytes((size >> 7, (size & 127) | 128))
    if size < 2097151:
        return bytes((size >> 14, ((size >> 7) & 127) | 128, (size & 127) | 128))
    if size < 268435455:
        return bytes((size >> 21, ((size >> 14) & 127) | 128, ((size >> 7) & 127) | 128, (size & 127) | 128))
    return bytes((size >> 28, ((size >> 21) & 127) | 128, ((size >> 14) & 127) | 128,
                  ((size >> 7) & 127) | 128, (size & 127) | 128))


def encode_int(value: int) -> bytes:
    """One integer element (encoding + data + backlen), ``lpEncodeIntegerGetType``'s smallest form."""
    if -4096 <= value <= 4095:
        return _SMALL_INTS[value + 4096]
    return _encode_int(value)


def _encode_int(value: int) -> bytes:
    if 0 <= value <= 127:
        enc = bytes((value,))
    elif -4096 <= value <= 4095:
        v = value & 0x1FFF
        enc = bytes(((v >> 8) | 0xC0, v & 0xFF))
    elif -32768 <= value <= 32767:
        enc = b"\xf1" + (value & 0xFFFF).to_bytes(2, "little")
    elif -8388608 <= value <= 8388607:
        enc = b"\xf2" + (value & 0xFFFFFF).to_bytes(3, "little")
    elif -2147483648 <= value <= 2147483647:
        enc = b"\xf3" + (value & 0xFFFFFFFF).to_bytes(4, "little")
    elif _I64_MIN <= value <= _I64_MAX:
        enc = b"\xf4" + (value & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
    else:
        raise ValueError(f"{value} does not fit int64")
    return enc + _backlen(len(enc))


#: the elements of -4096..4095 (7-bit and 13-bit encodings: flags, deltas, counts, small values)
_SMALL_INTS = tuple(_encode_int(v) for v in range(-4096, 4096))


def encode_str(raw: bytes) -> bytes:
    """One string element stored as a string (the caller decided it is not integer text)."""
    n = len(raw)
    if n < 64:
        enc = bytes((0x80 | n,)) + raw
    elif n < 4096:
        enc = bytes((0xE0 | (n >> 8), n & 0xFF)) + raw
    else:
        enc = b"\xf0" + n.to_bytes(4, "little") + raw
    return enc + _backlen(len(enc))


def encode_element(item: Element) -> bytes:
    """One element as ``lpAppend`` (bytes) / ``lpAppendInteger`` (int) writes it."""
    if isinstance(item, int):
        return encode_int(item)
    raw = bytes(item)
    value = listpack_int(raw)
    return encode_int(value) if value is not None else encode_str(raw)


def encode(items: Iterable[Element]) -> bytes:
    """The listpack holding ``items`` in order. O(total size)."""
    parts = [encode_element(item) for item in items]
    body = b"".join(parts)
    total = HEADER_SIZE + len(body) + 1
    count = min(len(parts), NUMELE_UNKNOWN)
    return total.to_bytes(4, "little") + count.to_bytes(2, "little") + body + b"\xff"


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def decode(blob: bytes) -> List[Element]:
    """The elements of listpack ``blob`` (ints as int, strings as bytes). Raises PayloadFormatError. O(len)."""
    size = len(blob)
    if size < HEADER_SIZE + 1 or int.from_bytes(blob[0:4], "little") != size or blob[-1] != EOF_BYTE:
        raise PayloadFormatError("listpack header or terminator")
    declared = int.from_bytes(blob[4:6], "little")
    out: List[Element] = []
    p, end = HEADER_SIZE, size - 1
    while p < end:
        b = blob[p]
        if b < 0x80:
            item: Element = b
            enc_len = 1
        elif b < 0xC0:
            n = b & 0x3F
            enc_len = 1 + n
            item = blob[p + 1:p + enc_len]
        elif b < 0xE0:
            if p + 2 > end:
                raise PayloadFormatError("listpack element overflows")
            item = _signed(((b & 0x1F) << 8) | blob[p + 1], 13)
            enc_len = 2
        elif b < 0xF0:
            if p + 2 > end:
                raise PayloadFormatError("listpack element overflows")
            n = ((b & 0x0F) << 8) | blob[p + 1]
            enc_len = 2 + n
            item = blob[p + 2:p + enc_len]
        elif b == 0xF0:
            if p + 5 > end:
                raise PayloadFormatError("listpack element overflows")
            n = int.from_bytes(blob[p + 1:p + 5], "little")
            enc_len = 5 + n
            item = blob[p + 5:p + enc_len]
        elif 0xF1 <= b <= 0xF4:
            width = (2, 3, 4, 8)[b - 0xF1]
            enc_len = 1 + width
            if p + enc_len > end:
                raise PayloadFormatError("listpack element overflows")
            item = _signed(int.from_bytes(blob[p + 1:p + enc_len], "little"), 8 * width)
        else:
            raise PayloadFormatError("bad listpack encoding byte")
        q = p + enc_len
        if q >= end:
            raise PayloadFormatError("listpack element overflows")
        if enc_len <= 127:  # one-byte backlen (nearly every element)
            if blob[q] != enc_len:
                raise PayloadFormatError("listpack backlen mismatch")
            p = q + 1
        else:
            back = _backlen(enc_len)
            if blob[q:q + len(back)] != back or q + len(back) > end:
                raise PayloadFormatError("listpack backlen mismatch")
            p = q + len(back)
        out.append(item)
    if p != end:
        raise PayloadFormatError("listpack elements overrun the terminator")
    if declared != NUMELE_UNKNOWN and declared != len(out):
        raise PayloadFormatError("listpack element count mismatch")
    return out


def as_bytes(item: Element) -> bytes:
    """An element as the string the server returns for it (``lpGet``: integers in decimal)."""
    return b"%d" % item if type(item) is int else item  # type: ignore[return-value]
