"""The table of non-stream commands this project serves itself instead of fakeredis (or on top of it).

The socket mixin's dispatch seam (:meth:`StreamsSocketMixin._name_to_func
<fake_streams._fakeredis.socket.StreamsSocketMixin._name_to_func>`) asks this table first for every command
name that is not a stream command, whichever way the command arrives (immediately, queued in MULTI, from Lua's
``redis.call``). A module that serves a command registers a *lookup* for its name::

    @override("object")
    def _object(sock, name, base):
        return functools.partial(object_command, sock), signature("object", fixed=1, variadic=True)

``sock`` is the calling fakeredis socket (its ``_sf_session`` is set), ``name`` the fakeredis command name
(lower case, ``"client unblock"`` for a subcommand fakeredis joins), and ``base()`` fakeredis's own
``(func, signature)`` for that name (it raises fakeredis's ``unknown command`` error where fakeredis has none).
The lookup returns the ``(func, signature)`` fakeredis then checks the arity of and calls: ``func(*args)``,
each argument converted as the signature's types say (``bytes`` stays ``bytes``). A function raises
``SimpleError`` for an error reply; a lookup may raise it too (refused at queue time in MULTI: EXECABORT).

Names are registered when their module is imported; :mod:`fake_streams._fakeredis` imports every module that
registers (one import line each). One name, one lookup: registering a name twice is an error. A subcommand's
container joins fakeredis's containers (``COMMANDS_WITH_SUB``), as fakeredis's own registrations do, so its
parser names ``FUNCTION LOAD`` ``"function load"`` even where it has no FUNCTION of its own (fakeredis 2.37).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from .arity import OurSignature
from .compat import COMMANDS_WITH_SUB, SKIP_RESP2, Signature, bytes_args

#: ``lookup(sock, name, base) -> (func, signature)``
Lookup = Callable[[Any, str, Callable[[], Tuple[Any, Any]]], Tuple[Any, Any]]

_TABLE: Dict[str, Lookup] = {}


def override(*names: str) -> Callable[[Lookup], Lookup]:
    """Register the decorated lookup for each fakeredis command name in ``names`` (lower case)."""

    def register(lookup: Lookup) -> Lookup:
        for name in names:
            if name in _TABLE:
                raise RuntimeError(f"command {name!r} is overridden twice ({_TABLE[name]!r}, {lookup!r})")
            _TABLE[name] = lookup
            if " " in name:
                COMMANDS_WITH_SUB.add(name.split(" ")[0])
        return lookup

    return register


def find(name: str) -> Optional[Lookup]:
    """The lookup registered for ``name``, or None (fakeredis serves it). O(1)."""
    return _TABLE.get(name)


def names() -> Tuple[str, ...]:
    """Every overridden name (sorted), for tests and docs."""
    return tuple(sorted(_TABLE))


def signature(name: str, fixed: int = 0, variadic: bool = False, flags: str = "") -> Signature:
    """A fakeredis ``Signature`` for a command fakeredis may not know: ``fixed`` arguments after the name, more
    if ``variadic``, all ``bytes``; replies are sent as they are (no RESP2 conversion by fakeredis)."""
    return OurSignature(name, "_sf_override", bytes_args(fixed), bytes_args(int(variadic)), flags=SKIP_RESP2 + flags)
