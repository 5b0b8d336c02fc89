"""LZF (liblzf 3.6 as vendored by the server): decompression, and the compressor the server runs on DUMP.

Format of the compressed stream, one control byte then:

* ``000LLLLL`` + L+1 literal bytes (1..32);
* ``LLLooooo oooooooo`` — a back-reference of L+2 bytes (L = 1..6) at distance o+1;
* ``111ooooo LLLLLLLL oooooooo`` — a back-reference of L+9 bytes at distance o+1.

:func:`compress` follows ``lzf_compress`` with the server's build options (HLOG 16, VERY_FAST, no
ULTRA_FAST, CHECK_INPUT) step by step — its hash, its table updates after a match, its output limit —
so that a DUMP of the same value gives the same bytes. (The server's hash table is not cleared between
calls; a stale slot could only matter when it points into the current input at a matching position
the current call did not hash, which repeated identical compressions never hit; we use a clean table.)
Both functions are O(len).
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

_HSIZE_MASK = (1 << 16) - 1
_MAX_LIT = 1 << 5
_MAX_OFF = 1 << 13
_MAX_REF = (1 << 8) + (1 << 3)


def _literal(out: bytearray, op: int, lit: int, byte: int) -> Tuple[int, int]:
    """Copy one literal byte into the current run (closing the run at 32): the new ``(op, lit)``."""
    out[op] = byte
    op += 1
    lit += 1
    if lit == _MAX_LIT:
        out[op - lit - 1] = lit - 1  # stop run
        return op + 1, 0  # start run
    return op, lit


def compress(data: bytes, out_len: int) -> Optional[bytes]:
    """``lzf_compress(data, len, out, out_len)``: the compressed bytes, or ``None`` when they would not fit
    in ``out_len`` bytes (the server then stores the string as it is). O(len(data))."""
    in_end = len(data)
    if not in_end or not out_len:
        return None
    out = bytearray(out_len + 8)
    out_end = out_len
    htab: Dict[int, int] = {}
    ip = 0
    op = 1  # start run
    lit = 0
    limit = in_end - 2
    get = htab.get
    # IDX(h) = ((h >> (3*8 - HLOG)) - h*5) & (HSIZE - 1) of every position at once (VERY_FAST, HLOG 16): mod 2^16 the slot depends on the three bytes at ip only (the byte
    # before, in h's top bits, vanishes), so the hash the loop would carry along is the same as this one
    slots = [((a << 8 | b) - (b << 8 | c) * 5) & _HSIZE_MASK for a, b, c in zip(data, data[1:], data[2:])]
    while ip < limit:
        slot = slots[ip]
        ref = get(slot)
        htab[slot] = ip
        if (ref is not None and ref > 0 and ip - ref - 1 < _MAX_OFF and data[ref + 2] == data[ip + 2]
                and data[ref] == data[ip] and data[ref + 1] == data[ip + 1]):
            off = ip - ref - 1
            length = 2
            maxlen = in_end - ip - length
            if maxlen > _MAX_REF:
                maxlen = _MAX_REF
            if op + 3 + 1 >= out_end and op - (not lit) + 3 + 1 >= out_end:
                return None
            out[op - lit - 1] = (lit - 1) & 0xFF  # stop run
            op -= not lit  # undo run if length is zero
            stopped = False
            if maxlen > 16:
                for _ in range(16):
                    length += 1
                    if data[ref + length] != data[ip + length]:
                        stopped = True
                        break
            if not stopped:
                while True:
                    length += 1
                    if not (length < maxlen and data[ref + length] == data[ip + length]):
                        break
            length -= 2  # now #octets - 1
            ip += 1
            if length < 7:
                out[op] = (off >> 8) + (length << 5)
                op += 1
            else:
                out[op] = (off >> 8) + (7 << 5)
                out[op + 1] = length - 7
                op += 2
            out[op] = off & 0xFF
            op += 1
            lit = 0
            op += 1  # start run
            ip += length + 1
            if ip >= limit:
                break
            ip -= 2  # VERY_FAST: hash the last two positions of the match
            htab[slots[ip]] = ip
            htab[slots[ip + 1]] = ip + 1
            ip += 2
        else:
            if op >= out_end:
                return None
            out[op] = data[ip]  # _literal, inlined (hot)
            op += 1
            ip += 1
            lit += 1
            if lit == _MAX_LIT:
                out[op - lit - 1] = lit - 1
                lit = 0
                op += 1
    if op + 3 > out_end:  # at most 3 bytes can be missing here
        return None
    while ip < in_end:
        op, lit = _literal(out, op, lit, data[ip])
        ip += 1
    out[op - lit - 1] = (lit - 1) & 0xFF  # end run
    op -= not lit
    return bytes(out[:op])


def decompress(data: bytes, out_len: int) -> Optional[bytes]:
    """``lzf_decompress``: exactly ``out_len`` bytes, or ``None`` when ``data`` is not a valid stream of that
    size (a back-reference before the start, output overflow, truncated input, or a shorter result). O(out_len)."""
    out = bytearray()
    ip, in_end = 0, len(data)
    while ip < in_end:
        ctrl = data[ip]
        ip += 1
        if ctrl < 32:  # literal run
            run = ctrl + 1
            if ip + run > in_end or len(out) + run > out_len:
                return None
            out += data[ip:ip + run]
            ip += run
            continue
        length = ctrl >> 5
        if length == 7:
            if ip >= in_end:
                return None
            length += data[ip]
            ip += 1
        if ip >= in_end:
            return None
        ref = len(out) - ((ctrl & 0x1F) << 8) - 1 - data[ip]
        ip += 1
        length += 2
        if ref < 0 or len(out) + length > out_len:
            return None
        if ref + length <= len(out):
            out += out[ref:ref + length]
        else:  # overlapping copy (byte by byte semantics): the last d bytes repeat
            period = out[ref:]
            out += (period * (length // len(period) + 1))[:length]
    if len(out) != out_len:
        return None
    return bytes(out)
