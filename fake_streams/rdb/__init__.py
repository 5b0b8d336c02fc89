"""DUMP / RESTORE payloads in the server's own serialization (RDB object encoding + version + CRC64).

A DUMP payload is ``<type byte> <rdbSaveObject body> <RDB version: u16 LE> <crc64 of all before: u64 LE>``
(``createDumpPayload`` / ``verifyDumpPayload`` in the server's cluster.c). This package is the pure
codec: bytes in, plain Python values out and back, with no fakeredis import and nothing executable
ever deserialised (no pickle, marshal or eval: every byte is parsed by the readers here and checked).

Modules:

* :mod:`.crc64` — Redis's CRC-64 (Jones polynomial, reflected);
* :mod:`.lzf` — LZF decompression and the server's exact compressor (``rdbcompression``);
* :mod:`.listpack`, :mod:`.intset`, :mod:`.ziplist` (+ zipmap) — the compact containers;
* :mod:`.fpconv` — the score text of zset listpacks on 7.2+ (Grisu2, as the server prints doubles);
* :mod:`.engine` — between the engine's Stream (with its groups) and the codec's stream data;
* :mod:`.rdbio` — lengths, strings (int / LZF encodings), doubles, millisecond times;
* :mod:`.values` — the decoded values (:class:`~.values.StreamData` and friends);
* :mod:`.objects` — ``rdbSaveObject`` / ``rdbLoadObject`` per type;
* :mod:`.streams` — the stream type (node listpacks, groups, PELs, consumers);
* :mod:`.payload` — the footer, the versions each profile emits and accepts, and the entry points
  :func:`~.payload.dump_payload` / :func:`~.payload.load_payload`.

Errors: :class:`~.errors.PayloadVersionError` (footer: version or checksum) and
:class:`~.errors.PayloadFormatError` (the body does not decode), which RESTORE turns into the server's
``ERR DUMP payload version or checksum are wrong`` and ``ERR Bad data format``.
"""

from .errors import PayloadFormatError, PayloadVersionError
from .payload import RdbFormat, dump_payload, format_for, format_of, load_payload
from .values import ConsumerData, Encodings, GroupData, NodeData, PendingData, StreamData, Value

__all__ = [
    "PayloadFormatError",
    "PayloadVersionError",
    "RdbFormat",
    "dump_payload",
    "format_for",
    "format_of",
    "load_payload",
    "Encodings",
    "GroupData",
    "ConsumerData",
    "NodeData",
    "PendingData",
    "StreamData",
    "Value",
]
