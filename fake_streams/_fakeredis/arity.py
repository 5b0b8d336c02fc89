"""The server's arity error for the commands fakeredis serves, where fakeredis's own text differs.

A real server names a subcommand in its arity error with a bar and answers every wrong count of a top-level
command the same way (``server.c``'s ``processCommand``: ``wrong number of arguments for '%s' command`` with the
command's full name)::

    CLIENT SETNAME        -> ERR wrong number of arguments for 'client|setname' command
    MSET a b c            -> ERR wrong number of arguments for 'mset' command

fakeredis names subcommands with a space (``'client setname'``) and, on Redis 7 and later, answers a count that
does not fill a repeated group (MSET's key/value pairs) with the text scripts get (``Wrong number of args
calling Redis command from script``) even at the top level, and already when the command is queued in MULTI,
where the server queues it (its table's arity is only a minimum: ``msetCommand`` itself refuses an odd count when
it runs, so EXEC's array holds the error). :func:`server_arity` wraps such a signature: ``check_arity`` (what
``processCommand`` checks, also at queue time) refuses fewer arguments than the fixed ones, or any extra one when
nothing repeats; ``apply`` (the command running) refuses a count that does not fill whole groups — both with the
server's text. Everything else (the argument types, the flags, ``apply``'s conversions) is fakeredis's own. Inside a script fakeredis's texts are kept (the scripting layer owns them). The commands this
project serves itself get :class:`OurSignature`, which checks the same way.
"""

from __future__ import annotations

from typing import Any, Dict, Sequence

from .compat import Signature, SimpleError


def arity_error(name: str) -> str:
    """The server's arity error text for fakeredis command name ``name`` (``"client setname"``: a subcommand)."""
    return f"ERR wrong number of arguments for '{name.replace(' ', '|')}' command"


def check_arity(sig: Any, args: Sequence[Any], error_text: str, whole_groups: bool = True) -> None:
    """O(1): the count fills ``sig``'s fixed arguments and (``whole_groups``) whole repeated groups, else
    ``error_text``. ``whole_groups=False`` is the server's table check (a minimum for a variadic command)."""
    extra = len(args) - len(sig.fixed)
    if extra == 0:
        return
    if extra < 0 or not sig.repeat or (whole_groups and extra % len(sig.repeat)):
        raise SimpleError(error_text)


class OurSignature(Signature):  # type: ignore[misc]
    """The signature of a command this project serves (:func:`.overrides.signature`): the server's arity text."""

    def check_arity(self, args: Sequence[Any], version: Any) -> None:
        check_arity(self, args, arity_error(self.name))


class ServerAritySignature:
    """A fakeredis ``Signature`` whose ``check_arity`` answers with the server's text (see the module doc)."""

    __slots__ = ("_sig", "_error")

    def __init__(self, sig: Any) -> None:
        self._sig = sig
        self._error = arity_error(sig.name)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._sig, attr)

    def check_arity(self, args: Sequence[Any], version: Any) -> None:
        check_arity(self._sig, args, self._error, whole_groups=False)

    def apply(self, args: Sequence[Any], db: Any, version: Any) -> Any:
        check_arity(self._sig, args, self._error)
        return self._sig.apply(args, db, version)


#: one wrapper per fakeredis signature object (fakeredis keeps one per command for the process)
_WRAPPED: Dict[int, ServerAritySignature] = {}


def server_arity(sig: Any) -> Any:
    """``sig`` itself when fakeredis's arity text is already the server's, else its :class:`ServerAritySignature`.
    O(1) after the first call for a signature."""
    wrapped = _WRAPPED.get(id(sig))
    if wrapped is not None and wrapped._sig is sig:
        return wrapped
    name = getattr(sig, "name", None)
    if (not isinstance(name, str) or isinstance(sig, OurSignature)  # ours: the server's text already
            or not (" " in name or len(getattr(sig, "repeat", ())) > 1)):
        return sig
    wrapped = _WRAPPED[id(sig)] = ServerAritySignature(sig)
    return wrapped


__all__ = ["OurSignature", "ServerAritySignature", "arity_error", "check_arity", "server_arity"]
