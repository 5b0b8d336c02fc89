"""Hash slots: CRC16 (XMODEM) of a key or of its hash tag, modulo 16384, and how ``redis-cli --cluster create``
splits the slots between masters.

Costs: :func:`key_slot` is O(len(key)) (C code: ``binascii.crc_hqx``; about 0.3 µs for a short key).
"""

from __future__ import annotations

import struct
from binascii import crc_hqx
from typing import List, Tuple

SLOTS = 16384


def crc16(data: bytes) -> int:
    """CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the checksum of Redis Cluster's key slots: the
    standard library's ``binascii.crc_hqx`` with initial value 0 is exactly that CRC (in C)."""
    return crc_hqx(data, 0)


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
