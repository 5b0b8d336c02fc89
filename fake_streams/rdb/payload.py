"""The DUMP payload footer and what each profile's server writes and accepts.

``<type + object> <RDB version: u16 LE> <crc64(everything before): u64 LE>``. RESTORE refuses a payload
shorter than 10 bytes, with a version the server does not load, or with a CRC mismatch
(``verifyDumpPayload``) before it looks at the body.

Per profile (rdb.h ``RDB_VERSION``; the highest object type ``rdbIsObjectType`` accepts; the stream
type ``rdbSaveObjectType`` writes):

==========  =======  =================  ===========  =====================================
profile     writes   accepts            max type     stream type / 7.2 encodings
==========  =======  =================  ===========  =====================================
7.0         10       <= 10              19           19 (no consumer active-time) / no
7.2         11       <= 11              21           21 / yes (listpack sets, fpconv)
7.4         12       <= 12              25 (*)       21 / yes
valkey-8.0  11       <= 11              21           21 / yes
8.0 … 8.4   12       <= 12              25 (*)       21 / yes (7.4's: measured on Redis 8.2.3)
8.6         13       <= 13              26           26 (IDMP state) / yes
8.8+        14       <= 14              27           27 (the NACK zone, and the IDMP state) / yes
==========  =======  =================  ===========  =====================================

8.0 … 8.4 use 7.4's row (Redis 8.2.3 writes RDB 12, checked). 8.8: RDB 14 and type 27
(RDB_TYPE_STREAM_LISTPACKS_5) as librdb names them for Redis 8.8 (XNACK): 26's body (the IDMP state after the
groups) with each group's NACK zone; 8.8 also loads 8.6's type 26.
(*) 22-25: Redis 7.4's hash field expiration (its pre-GA forms 22/23 and 24/25), written for a hash
with field TTLs. Redis 8.6 writes RDB 13 (redis/librdb's version table: 8.6 → 13, 7.4 … 8.4 → 12) and
RDB_TYPE_STREAM_LISTPACKS_4 for every stream (profile feature ``stream_idmp_rdb``); a profile before it refuses
such a payload: version 13 in the footer ("DUMP payload version or checksum are wrong"), or type 26 under a
version-12 footer ("Bad data format"). RDB 13's key metadata (``RDB_OPCODE_KEY_META``, module metadata) never
occurs in a DUMP of this server's values. Valkey 9 writes version 80 and
accepts <= 11 and 80 (``rdb-version-check strict``); the conformance tests compare the bodies
against it and the footer with the profile's own version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, FrozenSet

from . import objects, streams
from .crc64 import crc64
from .errors import PayloadVersionError
from .values import Encodings, Value


@dataclass(frozen=True)
class RdbFormat:
    version: int  # RDB_VERSION written in the footer
    accepted: FrozenSet[int]  # footer versions RESTORE loads
    max_type: int  # highest RDB_TYPE_* loaded
    stream_type: int  # RDB_TYPE_STREAM_LISTPACKS_2 / _3
    modern: bool  # 7.2+: listpack sets, 7.2 list conversion, fpconv score text
    hash_ttls: bool = False  # 7.4: hash field TTLs (RDB_TYPE_HASH_METADATA / _LISTPACK_EX)


_R70 = RdbFormat(10, frozenset(range(11)), 19, streams.TYPE_STREAM_LISTPACKS_2, False)
_R72 = RdbFormat(11, frozenset(range(12)), 21, streams.TYPE_STREAM_LISTPACKS_3, True)
_R74 = RdbFormat(12, frozenset(range(13)), 25, streams.TYPE_STREAM_LISTPACKS_3, True, True)
#: Valkey 9 writes RDB version 80 (RDB_VERSION; versions 12..79 are left to Redis) and loads <= 11 and 80.
_V91 = RdbFormat(80, frozenset(range(12)) | {80}, 21, streams.TYPE_STREAM_LISTPACKS_3, True)
#: Redis 8.6: RDB 13, streams as RDB_TYPE_STREAM_LISTPACKS_4 (with their IDMP state)
_R86 = RdbFormat(13, frozenset(range(14)), 26, streams.TYPE_STREAM_LISTPACKS_4, True, True)
#: Redis 8.8: RDB 14, streams as RDB_TYPE_STREAM_LISTPACKS_5 (27) with the NACK zone
_R88 = RdbFormat(14, frozenset(range(15)), 27, streams.TYPE_STREAM_LISTPACKS_5, True, True)
_FORMATS = {"7.0": _R70, "7.2": _R72, "7.4": _R74, "valkey-8.0": _R72, "valkey-9.1": _V91, "8.6": _R86, "8.8": _R88}


def format_for(profile_name: str, like: str = "") -> RdbFormat:
    """The :class:`RdbFormat` of a profile name (``Profile.name``), else of the profile it is ``like``
    (``Profile.table_name``)."""
    fmt = _FORMATS.get(profile_name)
    return fmt if fmt is not None else _FORMATS[like or profile_name]


def format_of(profile: Any) -> RdbFormat:
    """The :class:`RdbFormat` of a :class:`~fake_streams.profiles.Profile`, by feature: 8.8's with ``xnack`` (RDB 14),
    8.6's with ``stream_idmp_rdb`` (RDB 13), else its own or its table's (:func:`format_for`); so "8.10" writes
    what 8.8 does."""
    if profile.has("xnack"):
        return _R88
    if profile.has("stream_idmp_rdb"):
        return _R86
    return format_for(profile.name, profile.table_name)


def frame(body: bytes, version: int) -> bytes:
    """``createDumpPayload``'s footer around ``body``."""
    head = body + version.to_bytes(2, "little")
    return head + crc64(head).to_bytes(8, "little")


_DEFAULT_ENCODINGS = Encodings()


def dump_payload(value: Value, fmt: RdbFormat, encodings: Encodings = _DEFAULT_ENCODINGS) -> bytes:
    """The DUMP reply for ``value``. O(size)."""
    return frame(objects.encode(value, encodings, fmt.modern, fmt.stream_type, fmt.hash_ttls), fmt.version)


def check_footer(payload: bytes, fmt: RdbFormat) -> bytes:
    """``verifyDumpPayload``: the body (type + object) of a payload whose footer is right, else
    PayloadVersionError."""
    if len(payload) < 10:
        raise PayloadVersionError("payload too short")
    version = int.from_bytes(payload[-10:-8], "little")
    if version not in fmt.accepted:
        raise PayloadVersionError(f"RDB version {version}")
    if crc64(payload[:-8]) != int.from_bytes(payload[-8:], "little"):
        raise PayloadVersionError("checksum")
    return payload[:-10]


def load_payload(payload: bytes, fmt: RdbFormat) -> Value:
    """The value of a RESTORE payload: PayloadVersionError (footer) or PayloadFormatError (body)."""
    check_footer(payload, fmt)
    # the server reads the object from the whole buffer: a body that runs into the footer is read on
    # (rioInitWithBuffer over the full argument), and what follows the object is ignored
    return objects.decode(payload, fmt.max_type)
