"""FUNCTION DUMP / RESTORE payloads in the servers' format: RDB ``FUNCTION2`` records (opcode 245, the library code
as an RDB string), the RDB version (2 bytes, little-endian) and a CRC64 (Jones, 8 bytes, little-endian).

Reading accepts every RDB string encoding (plain, integer, LZF-compressed), so payloads made by a real server
RESTORE here; writing stores plain strings (valid for the servers: they RESTORE them; not byte-identical to a
server's DUMP, which LZF-compresses code longer than 20 bytes). Only library *code* is read from a payload: it is
compiled as FUNCTION LOAD would, nothing else is interpreted.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

OPCODE_FUNCTION2 = 245
OPCODE_FUNCTION = 246  # 7.0 release candidates: name, engine, description, code
_POLY = 0x95AC9329AC4BC9B5  # Jones polynomial 0xad93d23594c935a9, bit-reflected


def _crc_table() -> List[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc_table()


def crc64(data: bytes, crc: int = 0) -> int:
    """Redis's crc64 (Jones, reflected, no final xor): ``crc64(b"123456789") == 0xe9c6d914c4b8d9ca``. O(n)."""
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


def rdb_version(profile: Any) -> int:
    """RDB_VERSION of the profile's server: 10 (Redis 7.0), 11 (7.2, Valkey 8.0), 12 (7.4)."""
    version = tuple(int(p) for p in profile.redis_version.split(".")[:2])
    return 10 if version < (7, 2) else 11 if version < (7, 4) else 12


def _length(n: int) -> bytes:
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return bytes([0x40 | (n >> 8), n & 0xFF])
    if n <= 0xFFFFFFFF:
        return b"\x80" + n.to_bytes(4, "big")
    return b"\x81" + n.to_bytes(8, "big")


def dump(codes: List[bytes], version: int) -> bytes:
    """The payload of FUNCTION DUMP for these library codes."""
    body = b"".join(bytes([OPCODE_FUNCTION2]) + _length(len(code)) + code for code in codes)
    body += version.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")


def verify(payload: bytes, version: int) -> bool:
    """verifyDumpPayload: a footer, a version not newer than ours, a matching CRC64."""
    if len(payload) < 10:
        return False
    if int.from_bytes(payload[-10:-8], "little") > version:
        return False
    return crc64(payload[:-8]) == int.from_bytes(payload[-8:], "little")


class PayloadError(Exception):
    pass


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise PayloadError
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def length(self) -> Tuple[int, bool]:
        """``(length or encoding, is an encoding)`` (rdbLoadLenByRef)."""
        first = self.take(1)[0]
        kind = first >> 6
        if kind == 0:
            return first & 0x3F, False
        if kind == 1:
            return ((first & 0x3F) << 8) | self.take(1)[0], False
        if kind == 3:
            return first & 0x3F, True
        if first == 0x80:
            return int.from_bytes(self.take(4), "big"), False
        if first == 0x81:
            return int.from_bytes(self.take(8), "big"), False
        raise PayloadError

    def string(self) -> bytes:
        n, encoded = self.length()
        if not encoded:
            return self.take(n)
        if n in (0, 1, 2):  # integers, little-endian signed
            return str(int.from_bytes(self.take(1 << n), "little", signed=True)).encode()
        if n == 3:
            compressed, _ = self.length()
            size, _ = self.length()
            return lzf_decompress(self.take(compressed), size)
        raise PayloadError


def lzf_decompress(data: bytes, size: int) -> bytes:
    """liblzf's decompressor (literal runs and back references). O(size)."""
    out = bytearray()
    i = 0
    while i < len(data):
        ctrl = data[i]
        i += 1
        if ctrl < 32:
            run = ctrl + 1
            if i + run > len(data):
                raise PayloadError
            out += data[i:i + run]
            i += run
            continue
        length = ctrl >> 5
        if length == 7:
            if i >= len(data):
                raise PayloadError
            length += data[i]
            i += 1
        if i >= len(data):
            raise PayloadError
        ref = len(out) - ((ctrl & 0x1F) << 8) - data[i] - 1
        i += 1
        if ref < 0:
            raise PayloadError
        for _ in range(length + 2):
            out.append(out[ref])
            ref += 1
    if len(out) != size:
        raise PayloadError
    return bytes(out)


def library_codes(payload: bytes) -> Tuple[List[bytes], Optional[str]]:
    """The library codes of a verified payload, or the server's error for a record it cannot read."""
    reader = _Reader(payload[:-10])
    codes: List[bytes] = []
    while reader.pos < len(reader.data):
        try:
            kind = reader.take(1)[0]
        except PayloadError:
            return codes, "can not read data type"
        if kind not in (OPCODE_FUNCTION, OPCODE_FUNCTION2):
            return codes, "given type is not a function"
        try:
            if kind == OPCODE_FUNCTION2:
                codes.append(reader.string())
                continue
            name, engine = reader.string(), reader.string()
            has_description, _ = reader.length()
            if has_description:
                reader.string()
            codes.append(b"#!" + engine + b" name=" + name + b"\n" + reader.string())
        except PayloadError:
            return codes, "Failed loading library payload"
    return codes, None
