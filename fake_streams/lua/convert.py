"""Replies between Lua and the server: ``redis.call`` results → Lua values, a script's return value → a reply.

Server-side values are what the adapter hands over (fakeredis values after the engine's ``to_wire``): bytes,
int, float (a double), bool, None, list/tuple, dict (a RESP3 map), set, :class:`Status`-like objects (``.value``
of a simple string) and error objects (``ErrorValue``). Reply values going back are the same kinds; the
adapter turns :class:`Status` and :class:`ErrorValue` into fakeredis's own.

Rules (script_lua.c): Lua numbers are truncated to integers; ``false`` is nil under RESP2 scripts; an array
stops at its first nil; ``{err=…}`` is an error, ``{ok=…}`` a status, ``{double=…}``, ``{big_number=…}``,
``{map=…}``, ``{set=…}`` the RESP3 types (rendered in RESP2 for a RESP2 caller).
"""

from __future__ import annotations

import math
from typing import Any, Callable, List, Optional

from ..reply import Status


class ErrorValue:
    """An error reply (the text without the leading ``-``). ``counted`` False: the script's error table said
    ``ignore_error_stats_update = true`` (an error of a command the script called, already counted when that
    command failed): INFO errorstats skip it, the script's command counts a failed call instead."""

    __slots__ = ("text", "counted")

    def __init__(self, text: bytes, counted: bool = True) -> None:
        self.text = text
        self.counted = counted

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ErrorValue) and other.text == self.text

    def __repr__(self) -> str:
        return f"ErrorValue({self.text!r})"


def _map_chars(raw: bytes) -> bytes:
    return raw.replace(b"\r", b" ").replace(b"\n", b" ")


def format_double(value: float, shortest: bool) -> bytes:
    """addReplyDouble's text: ``%.17g`` (Redis 7.0) or the shortest round-trip form (7.2+, Valkey)."""
    if math.isinf(value):
        return b"inf" if value > 0 else b"-inf"
    if math.isnan(value):
        return b"nan"
    if not shortest:
        return b"%.17g" % value
    for precision in range(1, 18):
        text = b"%.*g" % (precision, value)
        if float(text) == value:
            return text
    return b"%.17g" % value


def to_lua(value: Any, runtime: Any, resp: int) -> Any:
    """A command's reply as ``redis.call`` returns it to the script."""
    if isinstance(value, (bytes, bool)) or value is None:
        if value is None:
            return None if resp == 3 else False
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, float):
        if resp == 3:
            table = runtime.new_table()
            table[b"double"] = value
            return table
        return format_double(value, True)
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, ErrorValue):
        return runtime.error_table(value.text)
    if hasattr(value, "value") and not isinstance(value, (list, tuple, dict, set)):  # a simple string
        table = runtime.new_table()
        table[b"ok"] = value.value if isinstance(value.value, bytes) else str(value.value).encode()
        return table
    if isinstance(value, dict):
        pairs = getattr(value, "pairs", None) or list(value.items())
        if resp == 3:
            inner = runtime.new_table()
            for k, v in pairs:
                inner[to_lua(k, runtime, resp)] = to_lua(v, runtime, resp)
            table = runtime.new_table()
            table[b"map"] = inner
            return table
        flat = [item for pair in pairs for item in pair]
        return _array(flat, runtime, resp)
    if isinstance(value, (set, frozenset)) or getattr(value, "resp3_set", False):
        if resp == 3:
            inner = runtime.new_table()
            for item in value:
                inner[to_lua(item, runtime, resp)] = True
            table = runtime.new_table()
            table[b"set"] = inner
            return table
        return _array(list(value), runtime, resp)
    if isinstance(value, (list, tuple)):
        return _array(value, runtime, resp)
    return runtime.error_table(b"ERR unsupported reply type " + type(value).__name__.encode())


def _array(items: Any, runtime: Any, resp: int) -> Any:
    table = runtime.new_table()
    for i, item in enumerate(items, 1):
        converted = to_lua(item, runtime, resp)
        if converted is not None:
            table[i] = converted
    return table


def counted_flag(table: Any) -> bool:
    """Whether an error table counts in INFO errorstats: not when its ``ignore_error_stats_update`` is the boolean
    true (luaExtractErrorInformation reads a boolean only)."""
    return _raw(table, b"ignore_error_stats_update") is not True


def to_reply(value: Any, lua_type: Callable[[Any], str], caller_resp: int, script_resp: int, shortest: bool,
             errors: Optional[List[ErrorValue]] = None) -> Any:
    """A script's return value (or a nested item of it) as the reply to a client speaking ``caller_resp``.
    Every error found below the top level is appended to ``errors`` (INFO counts each one)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, bool):
        if script_resp == 2:
            return 1 if value else None
        return value if caller_resp == 3 else (1 if value else 0)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            return -(2**63)
        number = int(value)
        return number if -(2**63) <= number < 2**63 else -(2**63)  # (long long) of an out-of-range double
    if value is None or lua_type(value) != "table":
        return None
    err = _raw(value, b"err")
    if isinstance(err, bytes):
        found = ErrorValue(_map_chars(err), counted_flag(value))
        if errors is not None:
            errors.append(found)
        return found
    ok = _raw(value, b"ok")
    if isinstance(ok, bytes):
        return Status(_map_chars(ok))
    double = _raw(value, b"double")
    if isinstance(double, (int, float)) and not isinstance(double, bool):
        return float(double) if caller_resp == 3 else format_double(float(double), shortest)
    big = _raw(value, b"big_number")
    if isinstance(big, bytes):
        big = _map_chars(big)
        if caller_resp == 3:
            try:
                return int(big)
            except ValueError:
                return big
        return big
    verbatim = _raw(value, b"verbatim_string")
    if verbatim is not None and lua_type(verbatim) == "table":
        text = _raw(verbatim, b"string")
        if isinstance(_raw(verbatim, b"format"), bytes) and isinstance(text, bytes):
            return text
    inner = _raw(value, b"map")
    if inner is not None and lua_type(inner) == "table":
        pairs = [(to_reply(k, lua_type, caller_resp, script_resp, shortest, errors),
                  to_reply(v, lua_type, caller_resp, script_resp, shortest, errors)) for k, v in inner.items()]
        if caller_resp == 3:
            return dict(pairs)
        return [item for pair in pairs for item in pair]
    inner = _raw(value, b"set")
    if inner is not None and lua_type(inner) == "table":
        items = [to_reply(k, lua_type, caller_resp, script_resp, shortest, errors) for k, _ in inner.items()]
        return items  # a RESP3 set reaches redis-py as a list, as from the wire
    out: List[Any] = []
    index = 1
    while True:
        item = value[index]
        if item is None:
            return out
        out.append(to_reply(item, lua_type, caller_resp, script_resp, shortest, errors))
        index += 1


def _raw(table: Any, key: bytes) -> Any:
    try:
        return table[key]
    except Exception:  # a metatable's __index that fails: no such field
        return None
