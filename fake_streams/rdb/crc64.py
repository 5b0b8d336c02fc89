"""Redis's CRC-64 (crc64.c): Jones polynomial 0xad93d23594c935a9, reflected in and out, init 0, no final xor.

``crc64(b"123456789") == 0xe9c6d914c4b8d9ca`` (the check value crc64.c tests). Table driven, one table
lookup per byte: O(len) (about 0.1 µs per byte in CPython).
"""

from __future__ import annotations

from typing import Tuple

#: the Jones polynomial, bit-reversed (the reflected form the byte-wise table uses)
_POLY_REFLECTED = 0x95AC9329AC4BC9B5


def _make_table() -> Tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY_REFLECTED if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE = _make_table()


def crc64(data: bytes, crc: int = 0) -> int:
    """The CRC-64 of ``data``, continuing from ``crc`` (0 to start). O(len(data))."""
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc
