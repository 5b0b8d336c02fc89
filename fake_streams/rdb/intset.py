"""Intsets (intset.c): a sorted array of distinct integers of one width.

Layout: ``<encoding: u32 LE = 2, 4 or 8> <length: u32 LE> <values, LE signed, ascending>``. The width is
the smallest that holds every value (``_intsetValueEncoding``). O(n) both ways.
"""

from __future__ import annotations

from typing import Iterable, List

from .errors import PayloadFormatError


def _width(value: int) -> int:
    if -32768 <= value <= 32767:
        return 2
    if -2147483648 <= value <= 2147483647:
        return 4
    return 8


def encode(values: Iterable[int]) -> bytes:
    """The intset holding ``values`` (distinct int64s, any order)."""
    ordered = sorted(values)
    width = max((_width(v) for v in ordered), default=2)
    mask = (1 << (8 * width)) - 1
    body = b"".join((v & mask).to_bytes(width, "little") for v in ordered)
    return width.to_bytes(4, "little") + len(ordered).to_bytes(4, "little") + body


def decode(blob: bytes) -> List[int]:
    """The values of intset ``blob``, ascending. Raises PayloadFormatError (size, width, order)."""
    if len(blob) < 8:
        raise PayloadFormatError("intset header")
    width = int.from_bytes(blob[0:4], "little")
    count = int.from_bytes(blob[4:8], "little")
    if width not in (2, 4, 8) or len(blob) != 8 + width * count or count == 0:
        raise PayloadFormatError("intset size")
    bits = 8 * width
    out: List[int] = []
    for i in range(count):
        v = int.from_bytes(blob[8 + i * width:8 + (i + 1) * width], "little")
        if v >= 1 << (bits - 1):
            v -= 1 << bits
        if out and v <= out[-1]:
            raise PayloadFormatError("intset not sorted")
        out.append(v)
    return out
