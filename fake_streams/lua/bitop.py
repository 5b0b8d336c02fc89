"""``bit`` as LuaBitOp 1.0: 32-bit operations, arguments rounded to nearest (the 2^52+2^51 trick), signed results.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Tuple

from .libs import Result, _to_number, lua_typename


def _bit_arg(value: Any, index: int, name: str, lua_type: Callable[[Any], Any]) -> int:
    number = _to_number(value)
    if number is None or (isinstance(number, float) and (math.isnan(number) or math.isinf(number))):
        if number is None:
            got = lua_typename(value, lua_type)
            raise _BitError(f"bad argument #{index} to '{name}' (number expected, got {'no value' if got == 'nil' else got})")
        return 0
    return int(round(number)) & 0xFFFFFFFF  # the 2^52+2^51 trick: round half to even, low 32 bits


class _BitError(Exception):
    pass


def _signed(b: int) -> int:
    b &= 0xFFFFFFFF
    return b - 2**32 if b & 0x80000000 else b


class Bit:
    """LuaBitOp: every result is a signed 32-bit number."""

    def __init__(self, lua_type: Callable[[Any], Any]) -> None:
        self._lua_type = lua_type

    def call(self, name: bytes, *args: Any) -> Result:
        op = name.decode()
        try:
            return True, self._run(op, args)
        except _BitError as exc:
            return False, str(exc)

    def _arg(self, args: Tuple[Any, ...], i: int, op: str) -> int:
        return _bit_arg(args[i] if i < len(args) else None, i + 1, op, self._lua_type)

    def _run(self, op: str, args: Tuple[Any, ...]) -> Any:
        b = self._arg(args, 0, op)
        if op == "tobit":
            return _signed(b)
        if op == "bnot":
            return _signed(~b)
        if op in ("band", "bor", "bxor"):
            for i in range(1, len(args)):
                other = self._arg(args, i, op)
                b = b & other if op == "band" else (b | other if op == "bor" else b ^ other)
            return _signed(b)
        if op == "bswap":
            return _signed(int.from_bytes(b.to_bytes(4, "big"), "little"))
        if op == "tohex":
            n = 8 if len(args) < 2 else _signed(self._arg(args, 1, op))
            digits = "0123456789abcdef"
            if n < 0:
                n, digits = -n, "0123456789ABCDEF"
            n = min(n, 8)
            out = ""
            for _ in range(n):
                out = digits[b & 15] + out
                b >>= 4
            return out.encode()
        n = self._arg(args, 1, op) & 31
        if op == "lshift":
            return _signed(b << n)
        if op == "rshift":
            return _signed(b >> n)
        if op == "arshift":
            return _signed(_signed(b) >> n)
        if op == "rol":
            return _signed((b << n) | (b >> (32 - n)))
        return _signed((b << (32 - n)) | (b >> n))  # ror
