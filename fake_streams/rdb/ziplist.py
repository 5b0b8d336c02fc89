"""Ziplists and zipmaps (ziplist.c, zipmap.c): the containers of payloads from before Redis 7 (read only).

Ziplist: ``<zlbytes u32 LE> <zltail u32 LE> <zllen u16 LE> <entry>* 0xFF``, each entry
``<prevlen: 1 byte < 254, or 0xFE + u32 LE> <encoding> <data>``: strings ``00pppppp`` (6-bit length),
``01pppppp qqqqqqqq`` (14-bit, big endian), ``10000000`` + u32 BE; integers ``0xC0`` int16, ``0xD0``
int32, ``0xE0`` int64, ``0xF0`` int24, ``0xFE`` int8 (LE), ``0xF1``..``0xFD`` the values 0..12.

Zipmap: ``<zmlen: 1 byte> (<len> key <len> <free: 1 byte> value <free bytes>)* 0xFF``, lengths one byte
< 254 or 0xFE + u32 LE.

Both decoders check every length against the blob and raise PayloadFormatError. O(len).
"""

from __future__ import annotations

from typing import List, Tuple, Union

from .errors import PayloadFormatError

Element = Union[bytes, int]


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def decode(blob: bytes) -> List[Element]:
    """The entries of ziplist ``blob`` (ints as int, strings as bytes)."""
    size = len(blob)
    if size < 11 or int.from_bytes(blob[0:4], "little") != size or blob[-1] != 0xFF:
        raise PayloadFormatError("ziplist header")
    declared = int.from_bytes(blob[8:10], "little")
    out: List[Element] = []
    p, end = 10, size - 1
    prev_size = 0
    last_start = 10
    while p < end:
        start = p
        if blob[p] < 254:
            prevlen, p = blob[p], p + 1
        elif blob[p] == 254 and p + 5 <= end:
            prevlen, p = int.from_bytes(blob[p + 1:p + 5], "little"), p + 5
        else:
            raise PayloadFormatError("ziplist prevlen")
        if prevlen != prev_size or p >= end:
            raise PayloadFormatError("ziplist prevlen mismatch")
        b = blob[p]
        kind = b >> 6
        item: Element
        if kind == 0:
            n, p = b & 0x3F, p + 1
            item = blob[p:p + n]
        elif kind == 1:
            if p + 2 > end:
                raise PayloadFormatError("ziplist entry")
            n, p = ((b & 0x3F) << 8) | blob[p + 1], p + 2
            item = blob[p:p + n]
        elif b == 0x80:
            if p + 5 > end:
                raise PayloadFormatError("ziplist entry")
            n, p = int.from_bytes(blob[p + 1:p + 5], "big"), p + 5
            item = blob[p:p + n]
        else:
            widths = {0xC0: 2, 0xD0: 4, 0xE0: 8, 0xF0: 3, 0xFE: 1}
            p += 1
            if b in widths:
                n = widths[b]
                if p + n > end:
                    raise PayloadFormatError("ziplist entry")
                item = _signed(int.from_bytes(blob[p:p + n], "little"), 8 * n)
            elif 0xF1 <= b <= 0xFD:
                n, item = 0, (b & 0x0F) - 1
            else:
                raise PayloadFormatError("ziplist encoding")
        if p + n > end:
            raise PayloadFormatError("ziplist entry overflows")
        p += n
        prev_size = p - start
        last_start = start
        out.append(item)
    if p != end:
        raise PayloadFormatError("ziplist overrun")
    tail = int.from_bytes(blob[4:8], "little")
    if out and tail != last_start or not out and tail != 10:
        raise PayloadFormatError("ziplist tail offset")
    if declared != 0xFFFF and declared != len(out):
        raise PayloadFormatError("ziplist count")
    return out


def decode_zipmap(blob: bytes) -> List[Tuple[bytes, bytes]]:
    """The ``(key, value)`` pairs of zipmap ``blob`` (RDB_TYPE_HASH_ZIPMAP)."""
    size = len(blob)
    if size < 2 or blob[-1] != 0xFF:
        raise PayloadFormatError("zipmap header")
    p, end = 1, size - 1
    pairs: List[Tuple[bytes, bytes]] = []

    def length(at: int) -> Tuple[int, int]:
        if at >= end:
            raise PayloadFormatError("zipmap length")
        if blob[at] < 254:
            return blob[at], at + 1
        if blob[at] == 254 and at + 5 <= end:
            return int.from_bytes(blob[at + 1:at + 5], "little"), at + 5
        raise PayloadFormatError("zipmap length")

    while p < end:
        klen, p = length(p)
        if p + klen > end:
            raise PayloadFormatError("zipmap key")
        key, p = blob[p:p + klen], p + klen
        vlen, p = length(p)
        if p >= end:
            raise PayloadFormatError("zipmap free")
        free, p = blob[p], p + 1
        if p + vlen + free > end:
            raise PayloadFormatError("zipmap value")
        pairs.append((key, blob[p:p + vlen]))
        p += vlen + free
    if p != end:
        raise PayloadFormatError("zipmap overrun")
    return pairs
