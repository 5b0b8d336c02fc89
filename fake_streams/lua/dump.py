"""FUNCTION DUMP / RESTORE payloads in the servers' format: RDB ``FUNCTION2`` records (opcode 245, the library code
as an RDB string) in the DUMP footer (RDB version + CRC64), built with :mod:`fake_streams.rdb`'s primitives.

Strings are written as ``rdbSaveRawString`` does (LZF over 20 bytes when it saves 4), so a DUMP is byte-identical
to the server's for the same libraries in the same order; every RDB string encoding is read, and 7.0 release
candidates' ``FUNCTION`` records (name, engine, description, code) too. Only library *code* comes out of a payload:
it is then compiled as FUNCTION LOAD would; nothing else is interpreted.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ..rdb import payload as rdb_payload
from ..rdb.errors import PayloadFormatError, PayloadVersionError
from ..rdb.rdbio import Reader, Writer

OPCODE_FUNCTION2 = 245
OPCODE_FUNCTION = 246  # 7.0 release candidates


def dump(codes: List[bytes], profile: Any) -> bytes:
    """The FUNCTION DUMP reply for these library codes (``rdbSaveFunctions`` + ``createDumpPayload``). O(size)."""
    writer = Writer()
    for code in codes:
        writer.byte(OPCODE_FUNCTION2)
        writer.string(code)
    return rdb_payload.frame(writer.getvalue(), rdb_payload.format_of(profile).version)


def verify(payload: bytes, profile: Any) -> bool:
    """``verifyDumpPayload`` for the profile's RDB versions."""
    try:
        rdb_payload.check_footer(payload, rdb_payload.format_of(profile))
    except PayloadVersionError:
        return False
    return True


def library_codes(payload: bytes) -> Tuple[List[bytes], Optional[str]]:
    """The library codes of a verified payload, or the server's error for the first record it cannot read."""
    reader = Reader(payload, 0, len(payload) - 10)
    codes: List[bytes] = []
    while reader.pos < reader.end:
        try:
            kind = reader.byte()
        except PayloadFormatError:
            return codes, "can not read data type"
        if kind not in (OPCODE_FUNCTION, OPCODE_FUNCTION2):
            return codes, "given type is not a function"
        try:
            if kind == OPCODE_FUNCTION2:
                codes.append(reader.string())
                continue
            name, engine = reader.string(), reader.string()
            if reader.length():
                reader.string()  # the description, dropped as the server drops it
            codes.append(b"#!" + engine + b" name=" + name + b"\n" + reader.string())
        except PayloadFormatError:
            return codes, "Failed loading library payload"
    return codes, None
