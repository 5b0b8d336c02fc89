"""The socket mixin: what a fakeredis socket of ours does differently (see :func:`attach`).

fakeredis's per-command dispatch seam, ``BaseFakeSocket._name_to_func(name)``, is consulted for immediate
execution, for queueing inside MULTI and for Lua's ``redis.call``; :meth:`StreamsSocketMixin._name_to_func`
answers it:

* names in the override table (:mod:`.overrides`: HELLO, INFO, CLIENT UNBLOCK, …) go to their lookups;
* stream commands and container subcommands of the engine's table route to
  :meth:`FakeStreamsServer.execute <fake_streams.server.FakeStreamsServer.execute>` through the session, with
  a ``Signature`` that encodes the Redis arity (:mod:`.routing`);
* other ``X*`` names are refused with the server's ``unknown command`` text, so fakeredis's own stream code
  never touches our values;
* everything else is fakeredis's.

``FakeStreamsServer.faults`` is consulted before every command (:meth:`StreamsSocketMixin._process_command`);
the socket's ``close`` tells its session (:mod:`.sessions`).
"""

from __future__ import annotations

import collections
import functools
import itertools
from typing import Any, Dict, Tuple

import redis.exceptions

from ..commands.base import CommandSpec
from ..errors import ReplyError
from . import overrides
from .backend import error
from .compat import AsyncFakeSocket, SimpleError
from .routing import _as_bytes, _c_str, unknown_command_args
from .sessions import AsyncSession, SyncSession


class StreamsSocketMixin:
    """Put in front of fakeredis's FakeSocket / AsyncFakeSocket (see :func:`attach`)."""

    _sf_session: Any = None
    _sf_fields: Any = None
    _killed = False  # CLIENT KILL / an injected drop (read by the direct path's state check)
    _sf_script_argv: Any = None
    _sf_acl_checked: Any = None  # the server's dispatch generation at which the direct path found the ACL open

    def _process_command(self, fields: Any) -> None:
        session = self._sf_session
        if session is None:
            super()._process_command(fields)  # type: ignore[misc]
            return
        if not session.enter():  # closed meanwhile by another thread
            return
        fake = self._server
        try:
            if fields:
                faults = session.server.faults
                if faults is not None and self._sf_fault(faults, session, fields):
                    return
            self._sf_fields = fields  # argv as typed (fakeredis lower-cases names): error texts quote it
            super()._process_command(fields)  # type: ignore[misc]
        finally:
            if fake is not None:  # after the command (ACL SETUSER, AUTH, HELLO …): see _GENERATIONS
                fake._sf_generation = next(_GENERATIONS)
            session.leave()

    def _sf_fault(self, faults: Any, session: Any, fields: Any) -> bool:
        """``faults.on_command`` (outside the lock): True if it answered an error instead of the command.

        A ``redis.exceptions.ConnectionError`` it raises propagates (the socket is marked killed, so
        redis-py drops the connection and a retry reconnects).
        """
        try:
            line = faults.on_command(session.client_id, [bytes(f) for f in fields])
        except redis.exceptions.ConnectionError:
            self._killed = True
            session.alive = False
            raise
        if line is None:
            return False
        # inside MULTI (fakeredis < 2.39 has no _queueing flag: an open transaction is queueing)
        if getattr(self, "_queueing", True) and getattr(self, "_transaction", None) is not None:
            self._transaction_failed = True  # like a command refused at queue time: EXEC aborts
        self.put_response(self._decode_result(SimpleError(line)))  # type: ignore[attr-defined]
        return True

    def sendall(self, data: Any) -> None:
        session = self._sf_session
        if session is not None:
            session.resume_if_pending()
        super().sendall(data)  # type: ignore[misc]

    def close(self) -> None:
        """Closed by its connection (any thread, maybe from GC); idempotent. fakeredis's close waits for a
        command of this socket still running in another thread (see ``Session.request_close``)."""
        session = self._sf_session
        if session is None or session.request_close():
            self._sf_close_now()

    def _sf_close_now(self) -> None:
        if getattr(self, "_server", None) is not None:
            super().close()  # type: ignore[misc]

    def shutdown(self, how: Any) -> None:
        try:
            super().shutdown(how)  # type: ignore[misc]
        except ValueError:  # "generator already executing": another thread runs a command on it
            pass

    def _lua_redis_call(self, lua_runtime: Any, expected_globals: Any, op: Any, *args: Any) -> Any:
        # the name (and subcommand) of this redis.call as the script typed them, for _name_to_func
        self._sf_script_argv = [_as_bytes(op)] + [_as_bytes(a) for a in args[:1]]
        return super()._lua_redis_call(lua_runtime, expected_globals, op, *args)  # type: ignore[misc]

    def _run_command(self, func: Any, sig: Any, args: Any, from_script: bool) -> Any:
        session = self._sf_session
        if session is None:
            return super()._run_command(func, sig, args, from_script)  # type: ignore[misc]
        return session.run_unit(lambda: super(StreamsSocketMixin, self)._run_command(func, sig, args, from_script),
                                from_script)

    def _name_to_func(self, cmd_name: str) -> Tuple[Any, Any]:
        session = self._sf_session
        if session is None:
            return super()._name_to_func(cmd_name)  # type: ignore[misc]
        lookup = overrides.find(cmd_name)
        if lookup is not None:
            return lookup(self, cmd_name, functools.partial(super()._name_to_func, cmd_name))  # type: ignore[misc]
        router = session.server.router
        kind, name = router.resolve(cmd_name)
        if kind == "fakeredis":
            try:
                return super()._name_to_func(cmd_name)  # type: ignore[misc]
            except SimpleError as exc:  # fakeredis's own wording: answer with the server's
                if not exc.value.startswith("ERR unknown command"):
                    raise
                raise self._sf_unknown(" " in cmd_name, in_script=session.depth > 0) from None
        # the typed names travel with the function, so a command queued in MULTI keeps its own argv
        typed = (self._sf_script_argv if session.depth else self._sf_fields) or []
        if kind == "spec":
            prefix = typed[: 2 if "|" in name else 1]
            return functools.partial(self._sf_call, router.specs[name], prefix), router.signatures[name]
        if kind == "container":
            return functools.partial(self._sf_container, name, typed[:1]), router.signatures[name]
        # a name lookup below the top level comes from a script's redis.call
        raise self._sf_unknown(kind == "unknown_sub", in_script=session.depth > 0)

    def _sf_unknown(self, subcommand: bool, in_script: bool) -> SimpleError:
        """The lookup error for the current argv (top level) or for ``redis.call`` (inside a script)."""
        session = self._sf_session
        if in_script:  # scriptVerifyCommandArity's text
            return error(ReplyError("SCRIPT_UNKNOWN_COMMAND"), session.server.profile)
        argv = self._sf_fields or [b"", b""]
        if subcommand:
            exc = ReplyError("UNKNOWN_SUBCOMMAND", subcommand=_c_str(argv[1], 128), container=argv[0].upper())
        else:
            exc = ReplyError("UNKNOWN_COMMAND", command=_c_str(argv[0], 128), args=unknown_command_args(argv[1:]))
        return error(exc, session.server.profile)

    def _sf_call(self, spec: CommandSpec, prefix: list, *args: bytes) -> Any:
        args_list = list(args)
        return self._sf_session.call(spec, args_list, prefix + args_list)

    def _sf_container(self, container: str, prefix: list, *args: bytes) -> Any:
        """A container reached without fakeredis joining its subcommand (Lua ``redis.call`` on fakeredis < 2.39)."""
        session = self._sf_session
        sub = args[0].decode("utf-8", "replace").lower()
        spec = session.server.router.specs.get(f"{container}|{sub}")
        if spec is None or spec.handler is None:
            raise self._sf_unknown(True, in_script=session.from_script)
        if not spec.arity_ok(len(args) + 1):
            raise error(ReplyError("WRONG_ARITY", command=spec.name), session.server.profile)
        return self._sf_call(spec, prefix + [args[0]], *args[1:])


_SOCKET_CLASSES: Dict[type, type] = {}


#: Draws for ``FakeServer._sf_generation``, stored after every command that went through the dispatch path (any
#: socket of the server; ``StreamsSocketMixin._process_command``): state only such commands change (the ACL, a
#: socket's user) is the same while that value is. Read it *before* looking at that state. ``next`` on an
#: ``itertools.count`` is atomic under the GIL and values are never reused, so a late store of an older draw
#: cannot bring back a value a reader kept.
_GENERATIONS = itertools.count(1)


def attach(sock: Any, server: Any) -> Any:
    """Re-class fakeredis's socket ``sock`` so its stream commands reach ``server``; returns it.

    The subclass is built from whatever class fakeredis made, so fakeredis's socket constructor
    (whose signature changed across releases) is never called by us.
    """
    base = type(sock)
    cls = _SOCKET_CLASSES.get(base)
    if cls is None:
        cls = _SOCKET_CLASSES[base] = type("Streams" + base.__name__, (StreamsSocketMixin, base), {})
    sock.__class__ = cls
    session_cls = AsyncSession if isinstance(sock, AsyncFakeSocket) else SyncSession
    sock._sf_fast = collections.deque()  # replies of stream commands run directly (fake_streams.fastpath)
    sock._sf_session = session_cls(sock, server)
    return sock



