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

``FakeStreamsServer.faults`` is consulted before every command (:meth:`StreamsSocketMixin._process_command`),
then authentication and ACL (:mod:`.auth`), then on a cluster node the slot check (:mod:`.cluster`);
the socket's ``close`` tells its session (:mod:`.sessions`).
"""

from __future__ import annotations

import collections
import functools
import itertools
import time
import weakref
from typing import Any, Dict, Optional, Tuple

import redis.exceptions

from ..commands.base import CommandSpec
from ..errors import ReplyError
from ..info import command_stat_name
from . import auth, cluster, keytouch, overrides, replica, scripting, sentinel
from .arity import server_arity
from .backend import error
from .compat import AsyncFakeSocket, SimpleError, extract_command, get_command_info
from .routing import _as_bytes, _c_str, unknown_command_args
from .sessions import AsyncSession, SyncSession


class StreamsSocketMixin:
    """Put in front of fakeredis's FakeSocket / AsyncFakeSocket (see :func:`attach`)."""

    _sf_session: Any = None
    _sf_fields: Any = None
    _killed = False  # CLIENT KILL / an injected drop (read by the direct path's state check)
    _sf_script_argv: Any = None
    _sf_acl_checked: Any = None  # the server's dispatch generation at which the direct path found the ACL open
    _sf_top = False  # inside this socket's own _process_command (INFO's rejected-call count)
    _sf_ran = False  # the current top-level command reached _run_command (so its error is not a rejection)
    _sf_name: Any = None  # the fakeredis name of the current top-level command, once looked up
    _sf_authenticated = True  # passed AUTH, or connected while ``default`` needed no password (see .auth)
    _sf_async_block = False  # an asyncio fakeredis blocking command's task holds the session (see _blocking)
    _sf_asking = False  # a cluster node's client said ASKING (see .cluster)
    _sf_connection: Any = None  # a weak reference to the redis-py connection reading this socket (see attach)
    _server: Any  # fakeredis's socket attribute: the FakeServer

    def _decode_error(self, error: Any) -> Any:
        """The exception of an error reply, made by the reading connection's own parser, as a socket's reply is
        (fakeredis asks redis-py's default parser). On redis-py 4.x only the ClusterParser a RedisCluster gives
        its connections raises MovedError, AskError, TryAgainError, ClusterDownError, ClusterCrossSlotError: with
        the default one the client could not follow a redirection. O(1)."""
        ref = self._sf_connection
        parser = getattr(ref(), "_parser", None) if ref is not None else None
        if parser is None:
            return super()._decode_error(error)  # type: ignore[misc]
        return parser.parse_error(error.value)

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
                faults = session.server.faults  # an idle hook (an unarmed Faults) would answer None: not asked
                if faults is not None and not getattr(faults, "idle", False) and self._sf_fault(faults, session, fields):
                    return
            self._sf_fields = fields  # argv as typed (fakeredis lower-cases names): error texts quote it
            self._sf_top, self._sf_ran, self._sf_name = True, False, None
            if fields and session.server.sentinel is not None and sentinel.refused(self, fields, session):
                return
            if fields and not self._sf_open(fake) and self._sf_refused(fields, session):
                return
            if fields and session.server.cluster_node is not None and cluster.refused(self, fields, session):
                return
            node = session.server.replication
            if fields and node is not None and node.is_replica and replica.refused(self, fields, session):
                return
            if getattr(fake, "_sf_script_running", False):  # a busy script answers without the lock (lua)
                answer = scripting.busy_answer(self, fields)
                if answer is not None:
                    self.put_response(self._decode_result(answer))  # type: ignore[attr-defined]
                    return
            super()._process_command(fields)  # type: ignore[misc]
        finally:
            self._sf_top = False
            if session.server.cluster_node is not None:
                cluster.after(self, fields)
            if fake is not None:  # after the command (ACL SETUSER, AUTH, HELLO …): see _GENERATIONS
                fake._sf_generation = next(_GENERATIONS)
            session.leave()

    def _sf_open(self, fake: Any) -> bool:
        """Whether nothing can refuse this socket's commands: authenticated as ``default`` and ``default`` can run
        everything (checked by fakeredis's own rule model). O(1)."""
        if not self._sf_authenticated or self._client_info.get("user", "default") != "default":  # type: ignore[attr-defined]
            return False
        user = fake.acl._user_acl.get(b"default")
        return user is None or auth._unrestricted(user)

    def _sf_refused(self, fields: Any, session: Any) -> bool:
        """:func:`.auth.gate` (NOAUTH, NOPERM) after the checks the server makes first (the command exists and has
        its arity, else fakeredis answers those): True if it answered the refusal instead of the command."""
        cmd, args = extract_command(fields)
        profile = session.server.profile
        try:
            _, sig = self._name_to_func(cmd)
            sig.check_arity(args, self.version)  # type: ignore[attr-defined]
        except SimpleError:
            self._sf_name = None
            if not ("noauth_before_command_checks" in profile.features and auth.needs_auth(self, fields)):
                return False
            line: Optional[str] = auth.NOAUTH  # Valkey 9.1: authentication before the command's existence / arity
        else:
            line = auth.gate(self, list(fields), cmd, profile)
        if line is None:
            return False
        if cmd == "exec":  # rejectCommand on EXEC: execCommandAbort, the transaction and watches go
            line = "EXECABORT Transaction discarded because of: " + line
            if getattr(self, "_transaction", None) is not None:
                self._exec_abort(line)  # type: ignore[attr-defined]
        elif getattr(self, "_queueing", True) and getattr(self, "_transaction", None) is not None:
            self._transaction_failed = True  # rejectCommand: EXEC aborts
        self.put_response(self._decode_result(SimpleError(line)))  # type: ignore[attr-defined]
        return True

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

    def _blocking(self, *args: Any, **kwargs: Any) -> Any:
        """fakeredis's blocking commands (BLPOP, BZPOPMIN …). On an asyncio socket fakeredis parks the command
        in a task of its own, with a wake-up callback on the database that only that task removes, through the
        socket's database: a close that wiped the socket first (a cancelled read) left the callback behind, to
        fire later on a closed loop. So the task counts as a running command of the session (entered here,
        left when it ends): a close waits for it, ends its wait (``Session.request_close``: as CLIENT
        UNBLOCK does) and completes when it is done."""
        session = self._sf_session
        if (session is None or not isinstance(self, AsyncFakeSocket)
                or not hasattr(super(), "_async_blocking") or not session.enter()):
            return super()._blocking(*args, **kwargs)  # type: ignore[misc]
        try:
            result = super()._blocking(*args, **kwargs)  # type: ignore[misc]
        except BaseException:
            session.leave()
            raise
        if getattr(self, "_blocked", False):  # parked: the task leaves the session when it ends
            self._sf_async_block = True
        else:
            session.leave()
        return result

    async def _async_blocking(self, *args: Any, **kwargs: Any) -> None:
        try:
            await super()._async_blocking(*args, **kwargs)  # type: ignore[misc]
        finally:
            session = self._sf_session
            if self._sf_async_block and session is not None:
                self._sf_async_block = False
                session.leave()  # a close waiting for this task completes now

    def kill(self) -> None:
        """CLIENT KILL (lock held): fakeredis drops the socket, and a stream read parked in it ends at once
        as the server's hang-up ends a real client's read (:meth:`Session.killed`)."""
        parent = getattr(super(), "kill", None)
        if parent is not None:
            parent()
        else:  # fakeredis < 2.35 has no CLIENT KILL (access.kill, an injected drop, still ends a parked read)
            self._killed = True
        session = self._sf_session
        if session is not None:
            session.killed()

    def _sf_close_now(self) -> None:
        if getattr(self, "_server", None) is not None:
            super().close()  # type: ignore[misc]
        session = self._sf_session
        if session is not None:  # no socket <-> session cycle left for the cyclic GC (Session.detach)
            session.detach(self)
        # the command parser is a generator whose frame holds the socket: a cycle until it is closed (redis-py's sync
        # disconnect shuts the socket down, which closes it; its asyncio one does not)
        try:
            self._parser.close()  # type: ignore[attr-defined]
        except ValueError:  # "generator already executing": closed from inside a command of its own (rare)
            pass

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
        if not from_script and not session.depth and getattr(self._server, "_sf_script_running", False):
            answer = scripting.busy_answer(self, self._sf_fields)  # got the lock from a busy script's hook
            if answer is not None:  # an error is a value here, as fakeredis's own _run_command returns it
                return answer
        self._sf_ran = True
        started = time.perf_counter()
        result = session.run_unit(
            lambda: keytouch.run_touching(
                self, sig, args,
                lambda: super(StreamsSocketMixin, self)._run_command(func, sig, args, from_script)),  # type: ignore[misc]
            from_script)
        name = command_stat_name(sig.name, args)
        usec = (time.perf_counter() - started) * 1e6
        if isinstance(result, SimpleError):  # a script's reply of a called command's error: not counted again
            session.server.stats.called(name, usec, result.value,
                                        counted=type(result) is not scripting.UncountedError)
        else:
            session.server.stats.called(name, usec, None, _writes(name))
        return result

    def _decode_result(self, result: Any) -> Any:
        self._sf_note_reply(result)
        return super()._decode_result(result)  # type: ignore[misc]

    def _sf_note_reply(self, result: Any) -> None:
        """INFO's count of a command refused before it ran (arity, unknown command, ACL, queue-time errors):
        the error reply of a top-level command that never reached ``_run_command``."""
        if self._sf_top and not self._sf_ran and isinstance(result, SimpleError) and self._sf_session is not None:
            self._sf_ran = True  # once per command
            name = self._sf_name
            self._sf_session.server.stats.rejected(None if name is None else command_stat_name(name), result.value)

    def _name_to_func(self, cmd_name: str) -> Tuple[Any, Any]:
        session = self._sf_session
        if session is None:
            return super()._name_to_func(cmd_name)  # type: ignore[misc]
        found = self._sf_lookup(session, cmd_name)
        if not session.depth:  # INFO counts a refusal under this name (after a lookup that did not fail)
            self._sf_name = cmd_name
        return found

    def _sf_lookup(self, session: Any, cmd_name: str) -> Tuple[Any, Any]:
        lookup = overrides.find(cmd_name)
        if lookup is not None:
            func, sig = lookup(self, cmd_name, functools.partial(super()._name_to_func, cmd_name))  # type: ignore[misc]
            return (func, sig) if session.depth else (func, server_arity(sig))
        router = session.server.router
        kind, name = router.resolve(cmd_name)
        if kind == "fakeredis":
            try:
                func, sig = super()._name_to_func(cmd_name)  # type: ignore[misc]
                return (func, sig) if session.depth else (func, server_arity(sig))  # the server's arity text
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
        profile = session.server.profile
        if in_script and not (subcommand and profile.has("script_names_unknown_subcommands")):
            return error(ReplyError("SCRIPT_UNKNOWN_COMMAND"), profile)  # scriptVerifyCommandArity's text
        argv = (self._sf_script_argv if in_script else self._sf_fields) or [b"", b""]
        if subcommand:
            exc = ReplyError("UNKNOWN_SUBCOMMAND", subcommand=_c_str(argv[1], 128), container=argv[0].upper())
        else:
            exc = ReplyError("UNKNOWN_COMMAND", command=_c_str(argv[0], 128), args=unknown_command_args(argv[1:]))
        return error(exc, profile)

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


_WRITES: Dict[str, bool] = {}


def _writes(name: str) -> bool:
    """Whether the command ``name`` (``xgroup|create``) has the ``write`` flag (INFO's dirty count). Cached."""
    known = _WRITES.get(name)
    if known is None:
        info = get_command_info(name.replace("|", " ").encode()) or get_command_info(name.split("|")[0].encode())
        known = _WRITES[name] = info is not None and b"write" in info[2]
    return known


_SOCKET_CLASSES: Dict[type, type] = {}


#: Draws for ``FakeServer._sf_generation``, stored after every command that went through the dispatch path (any
#: socket of the server; ``StreamsSocketMixin._process_command``): state only such commands change (the ACL, a
#: socket's user) is the same while that value is. Read it *before* looking at that state. ``next`` on an
#: ``itertools.count`` is atomic under the GIL and values are never reused, so a late store of an older draw
#: cannot bring back a value a reader kept.
_GENERATIONS = itertools.count(1)


def attach(sock: Any, server: Any, connection: Any = None) -> Any:
    """Re-class fakeredis's socket ``sock`` so its stream commands reach ``server``; returns it. ``connection``:
    the redis-py connection that reads it (its parser makes the error replies' exceptions; held weakly).

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
    if connection is not None:
        sock._sf_connection = weakref.ref(connection)
    server.stats.connections_received += 1  # INFO total_connections_received
    fake = sock._server
    auth.install(fake)
    sock._sf_authenticated = auth.default_open(fake)
    return sock



