"""Hash slots: CRC16 (XMODEM) of a key or of its hash tag, modulo 16384, and how ``redis-cli --cluster create``
splits the slots between masters.

Costs: :func:`key_slot` is O(len(key)) (one table look-up per byte of the hashed part).
"""

from __future__ import annotations

import struct
from typing import List, Tuple

SLOTS = 16384


def _crc16_table() -> Tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return tuple(table)


_TABLE = _crc16_table()


def crc16(data: bytes) -> int:
    """CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the checksum of Redis Cluster's key slots."""
    crc = 0
    table = _TABLE
    for byte in data:
        crc = ((crc << 8) & 0xFF00) ^ table[((crc >> 8) ^ byte) & 0xFF]
    return crc


def hashed_part(key: bytes) -> bytes:
    """The part of ``key`` that is hashed: the hash tag (between the first ``{`` and the first ``}`` after it)
    when it is not empty, else the whole key."""
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            return key[start + 1:end]
    return key


def key_slot(key: bytes) -> int:
    """The hash slot of ``key`` (``CLUSTER KEYSLOT``)."""
    return crc16(hashed_part(key)) & (SLOTS - 1)


def _f32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def _lround(value: float) -> int:
    """C's ``lround``: halves away from zero."""
    return int(value + 0.5) if value >= 0 else -int(-value + 0.5)


def split_slots(masters: int) -> List[Tuple[int, int]]:
    """The contiguous ``(first, last)`` slot range of each of ``masters`` masters, as ``redis-cli --cluster
    create`` assigns them (its single-precision cursor included: 3 masters get 0-5460, 5461-10922, 10923-16383)."""
    if masters < 1 or masters > SLOTS:
        raise ValueError(f"a cluster has 1 to {SLOTS} masters, not {masters}")
    per_node = _f32(SLOTS / masters)
    ranges = []
    first, cursor = 0, 0.0
    for i in range(masters):
        last = _lround(_f32(cursor + per_node - 1))
        if last > SLOTS or i == masters - 1:
            last = SLOTS - 1
        last = max(last, first)
        ranges.append((first, last))
        first = last + 1
        cursor = _f32(cursor + per_node)
    return ranges


__all__ = ["SLOTS", "crc16", "hashed_part", "key_slot", "split_slots"]
