"""The command table: every stream command and container subcommand the engine serves.

Each command module exports ``SPECS`` (a tuple of :class:`~fake_streams.commands.base.CommandSpec`);
this module gathers them explicitly, in the order of ``_MODULES``. Nothing registers itself on import.

``COMMANDS`` maps the lower-case full name (``"xadd"``, ``"xgroup|create"``) to its spec;
``CONTAINERS`` lists the container commands whose second argument names a subcommand.
"""

from __future__ import annotations

from importlib import import_module
from types import MappingProxyType
from typing import Dict, Mapping

from .base import BlockRequest, CommandSpec, Context

#: command modules, one per t_stream.c family
_MODULES = (
    "xclaim",
    "xinfo",
    "xadd_xtrim", "xrange", "xsetid",
    "xread", "xgroup", "xack_xpending", "xdelex", "xcfgset", "xnack", "xidmprecord",
)

CONTAINERS = frozenset({"xgroup", "xinfo"})


def _gather() -> Mapping[str, CommandSpec]:
    table: Dict[str, CommandSpec] = {}
    for name in _MODULES:
        module = import_module(f"{__name__}.{name}")
        for spec in module.SPECS:
            if spec.name in table:
                raise RuntimeError(f"command {spec.name!r} defined twice")
            table[spec.name] = spec
    return MappingProxyType(table)


COMMANDS: Mapping[str, CommandSpec] = _gather()

__all__ = ["BlockRequest", "COMMANDS", "CONTAINERS", "CommandSpec", "Context"]
