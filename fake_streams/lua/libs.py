"""What the Lua libraries of :mod:`fake_streams.lua` share: Lua values as lupa hands them over, the C formats.

The libraries (:mod:`.cjson`, :mod:`.cmsgpack`, :mod:`.bitop`, :mod:`.structlib`) take Lua values as lupa passes
them (bytes, int/float, bool, None, lupa tables) and return ``(True, result)`` or ``(False, message)``; they never
raise. The runtime (:mod:`.runtime`) raises the message as the Lua error a C library's ``luaL_error`` would.
Tables are read in ``lua_next`` order (lupa's ``items()``) and built one ``rawset`` at a time in document order, so
orders match the server's.
"""

from __future__ import annotations

from typing import Any, Callable, Tuple

Result = Tuple[bool, Any]
class Null:
    """``cjson.null``: a light userdata holding NULL on the server."""

    __slots__ = ()

    def __str__(self) -> str:
        return "userdata: (nil)"

    __repr__ = __str__


NULL = Null()


def lua_typename(value: Any, lua_type: Callable[[Any], Any]) -> str:
    """``lua_typename(lua_type(v))`` for a value lupa handed over."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, bytes):
        return "string"
    kind = lua_type(value)
    return "userdata" if kind is None else (kind.decode() if isinstance(kind, bytes) else str(kind))


def fmt_g(value: float, precision: int) -> bytes:
    """C's ``%.<precision>g`` (the libraries' number format)."""
    return (("%." + str(precision) + "g") % value).encode()



def _to_number(value: Any) -> Any:
    """``lua_tonumber``: numbers, and strings that read as numbers; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, bytes):
        text = value.strip()
        try:
            return int(text, 16) if text.lower().startswith((b"0x", b"-0x")) else float(text)
        except ValueError:
            return None
    return None


def _lua_number(value: float) -> Any:
    return int(value) if value.is_integer() and abs(value) < 2**63 else value


class TableLibrary:
    """A library that builds Lua tables: ``new_table()`` makes an empty one, ``lua_type(v)`` is Lua's ``type``."""

    def __init__(self, new_table: Callable[[], Any], lua_type: Callable[[Any], Any]) -> None:
        self._new_table = new_table
        self._lua_type = lua_type
