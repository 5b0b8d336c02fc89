"""Routing: which fakeredis command names (``"xadd"``, ``"xgroup create"``, bare ``"xgroup"``) the engine
serves, with fakeredis ``Signature`` objects that carry the Redis arity (a short command fails at queue time
inside MULTI → EXECABORT), and the server's ``unknown command`` argument list.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

from ..commands.base import CommandSpec, cstr
from .compat import SKIP_RESP2, Signature, bytes_args

_DEFAULT: Dict[str, Router] = {}


class Router:
    """fakeredis command names (``"xadd"``, ``"xgroup create"``, bare ``"xgroup"``) → engine specs.

    Signatures carry the Redis arity: ``fixed`` = the minimum number of arguments after the
    (sub)command name, ``repeat`` = one more ``bytes`` for a negative (minimum) arity.
    """

    def __init__(self, commands: Mapping[str, CommandSpec]) -> None:
        self.specs: Dict[str, CommandSpec] = dict(commands)
        self.containers = {name.split("|", 1)[0] for name in commands if "|" in name}
        self.signatures: Dict[str, Signature] = {}
        for name, spec in self.specs.items():
            names = 2 if "|" in name else 1
            self.signatures[name] = _signature(name, abs(spec.arity) - names, spec.arity < 0)
        for container in self.containers:  # the container itself has arity -2
            self.signatures[container] = _signature(container, 1, True)

    @classmethod
    def default(cls) -> Router:
        """The Router of the default command table (``fake_streams.commands.COMMANDS``), made once and shared by
        every server on it: it is read-only once built, and building it (27 fakeredis Signatures) was a large
        part of a new server's cost (one per test in the pytest fixture)."""
        router = _DEFAULT.get("router")
        if router is None:
            from ..commands import COMMANDS

            router = _DEFAULT["router"] = cls(COMMANDS)
        return router

    def resolve(self, cmd_name: str) -> Tuple[str, Optional[str]]:
        """``(kind, name)``: kind is "spec", "container", "unknown_sub", "refuse" or "fakeredis"."""
        base, sep, sub = cmd_name.partition(" ")
        if base in self.containers:
            if not sep:  # "xinfo " (an empty subcommand name) is an unknown subcommand, not the bare container
                return "container", base
            full = f"{base}|{sub}"
            return ("spec", full) if full in self.specs else ("unknown_sub", base)
        if cmd_name in self.specs:
            return "spec", cmd_name
        if base.startswith("x"):  # every X* command is a stream command: never let fakeredis's XStream code run
            return "refuse", None
        return "fakeredis", None


def _signature(name: str, fixed: int, variadic: bool) -> Signature:
    return Signature(name, "_sf_call", bytes_args(max(fixed, 0)), bytes_args(int(variadic)), flags=SKIP_RESP2)


_INFO_SIGNATURE = Signature("info", "_sf_info", bytes_args(0), bytes_args(1), flags=SKIP_RESP2)


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    return str(value).encode()


def _c_str(raw: bytes, limit: int) -> bytes:
    """``%.{limit}s`` of a C string: cut at the first NUL, then at ``limit`` bytes."""
    return cstr(raw)[:limit]


def unknown_command_args(args: Any) -> bytes:
    """processCommand's "args beginning with" list: ``'%.*s' `` per argument while under 128 bytes."""
    out = b""
    for arg in args:
        if len(out) >= 128:
            break
        out += b"'" + _c_str(bytes(arg), 128 - len(out)) + b"' "
    return out

