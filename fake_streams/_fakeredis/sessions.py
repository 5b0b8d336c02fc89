"""Sessions: one connection (a fakeredis socket) as the server sees it, sync or asyncio.

A session implements the ``Session`` protocol of :mod:`fake_streams.server` (keyspace, protocol,
in_multi, from_script, the current execution unit) and the blocking layer's needs: who it is
(``client_id``, ``db``), whether it is still connected (``alive``), and :meth:`Session.deliver` —
the reply of a parked command, sent later from whichever thread served it (lock held).

How a parked command's reply reaches redis-py:

* **sync** — the command returns no reply and the socket's parser is paused (later commands of a
  pipeline wait in its buffer). :meth:`SyncSession.deliver` queues the reply; the connection's own
  thread, blocked in ``read_response`` on that queue (under ``socket_timeout``, like a real socket),
  takes it and resumes the parser (:meth:`Session.resume_if_pending`, also called before a send).
* **asyncio** — the same, but the reply is queued and the parser resumed on the socket's event loop
  (``loop.call_soon`` from a writer on that loop, ``call_soon_threadsafe`` from other threads or loops).

CLIENT KILL (:meth:`Session.killed`, lock held) ends a parked stream read, or a fakeredis blocking command
(BLPOP …), with the ConnectionError of a server hang-up. An asyncio fakeredis blocking command's task holds
the session like a running command (``socket.StreamsSocketMixin._blocking``), so a close waits for it.

Closing: the socket's ``close`` calls :meth:`Session.request_close` (any thread, maybe from GC): the
registration is dropped and a reader still waiting is woken with :data:`CLOSED_BY_CLIENT`. fakeredis's
own ``close`` (which drops the socket's server and database) waits until no command of this socket is
running — its own (:meth:`Session.enter` / :meth:`Session.leave` around each command) or a re-run of
its parked command by another client — and is then done by whoever leaves last. Once it is done the session
holds its socket weakly (:meth:`Session.detach`): the socket and the session no longer form a reference cycle,
so a closed connection's socket, session and server are freed by reference counting, not by the cyclic garbage
collector (issue 13: per-test cost).

This module imports nothing from fakeredis; it reaches the socket through :mod:`.access`.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any, Callable, List

import redis.exceptions

from ..blocking import BLOCKED
from ..commands.base import CommandSpec
from ..errors import ReplyError
from . import access
from .backend import Keyspace, error, to_wire


class _ClosedByClient:
    """Queued to a reader when its own connection is closed (redis-py disconnect from any thread)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "CLOSED_BY_CLIENT"


CLOSED_BY_CLIENT = _ClosedByClient()
#: what redis-py's parsers raise when the server hangs up
SERVER_CLOSED = "Connection closed by server."


class Session:
    """One connection as :meth:`FakeStreamsServer.execute` sees it (the ``Session`` protocol of server.py)."""

    __slots__ = ("_sock", "server", "depth", "from_script", "unit", "alive", "resume_pending", "_state", "_busy",
                 "_close_pending", "_closed", "_keyspace", "__weakref__")

    def __init__(self, sock: Any, server: Any) -> None:
        self._sock = sock
        self.server = server
        self.depth = 0  # nesting of fakeredis _run_command: 0 = between commands
        self.from_script = False
        self.unit: Any = None  # the current execution unit (server.ExecUnit)
        self.alive = True  # False once the connection is closed (either side)
        self.resume_pending = False  # sync: the parser waits for the owner thread to resume it
        self._state = threading.Lock()  # guards the four fields below (a leaf lock)
        self._busy = 0  # commands of this socket running now (its own, or a re-run by another client)
        self._close_pending = False
        self._closed = False
        self._keyspace: Any = None  # the Keyspace of the selected database (rebuilt after SELECT)

    # ------------------------------------------------------------------------------- identity
    @property
    def client_id(self) -> int:
        """``CLIENT ID`` of this connection."""
        return access.client_id(self._sock)

    @property
    def db(self) -> int:
        return int(getattr(self._sock, "_db_num", 0) or 0)

    @property
    def keyspace(self) -> Keyspace:
        db = self._sock._db
        keyspace = self._keyspace
        if keyspace is None or keyspace.ident is not db:
            keyspace = self._keyspace = Keyspace(db)
        return keyspace

    @property
    def protocol(self) -> int:
        return access.protocol_of(self._sock, self.from_script)

    @property
    def in_multi(self) -> bool:
        return bool(getattr(self._sock, "_in_transaction", False))

    # ------------------------------------------------------------------------------ execution
    def run_unit(self, run: Callable[[], Any], from_script: bool) -> Any:
        """Run one fakeredis command; the outermost one (a command, an EXEC, a script) is an execution unit."""
        outer = self.depth == 0
        saved = self.from_script
        self.depth += 1
        self.from_script = from_script
        if outer:
            self.unit = self.server.new_unit()
        try:
            return run()
        finally:
            self.depth -= 1
            self.from_script = saved
            if outer:
                unit, self.unit = self.unit, None
                self.server.finish_unit(unit)
            elif self.unit is not None:
                self.server.blocking.flush_touches(self.unit)

    def call(self, spec: CommandSpec, args: List[bytes], argv: List[bytes]) -> Any:
        """Run an engine command; errors become fakeredis SimpleErrors, replies fakeredis values."""
        try:
            reply = self.server.execute(self, spec, args, argv)
        except ReplyError as exc:
            raise error(exc, self.server.profile) from None
        if reply is BLOCKED:
            self._sock.pause()  # later commands of this connection wait for the reply
            return access.no_response()
        return to_wire(reply)

    def notify(self, event: str, key: bytes) -> None:
        """Keyspace notification of class ``t`` (stream), as ``notify-keyspace-events`` asks (default: none)."""
        access.publish_keyspace_event(self._sock, event, key)

    # ------------------------------------------------------------------------------- blocking
    def set_blocked(self, blocked: bool) -> None:
        """Shown by INFO ``blocked_clients`` (the adapter counts flagged sockets); nothing once closed (a closed socket
        is no client of the server's, and it may be gone: :meth:`detach`)."""
        sock = self._sock  # (read before the check: a close sets _closed first, then detaches: see deliver)
        if not self._closed:
            sock._blocked = blocked

    def deliver(self, reply: Any) -> None:
        """Send the reply of the parked command (lock held, any thread): a value, a ReplyError, a
        BlockSafetyError (an error reply) or another exception (the connection fails with it). Nothing once the
        connection is closed (a registration its close left for later, :meth:`BlockingRegistry.drop`): nobody reads,
        and the socket may be gone (:meth:`detach`)."""
        # the socket read before the check, and held for this call: a close sets _closed first and then detaches
        # (the proxy dies with the socket); the reader woken by the push below may close it at once, in its thread
        sock = self._sock
        if self._closed:
            return
        item = access.reply_item(sock, reply, self.server.profile)
        if isinstance(item, redis.exceptions.ConnectionError):  # the server drops this connection
            self._push(item, resume=False)
            self.alive = False
            access.kill(sock)
            return
        self._push(item, resume=True)

    def _push(self, item: Any, resume: bool) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def resume_if_pending(self) -> None:
        """Owner thread (sync): let the parser run the commands queued behind a served blocking one."""

    # -------------------------------------------------------------------------------- closing
    def enter(self) -> bool:
        """A command of this socket starts running (False: the socket is closed, do not run it).
        (``acquire``/``release`` rather than ``with``: a third cheaper, and this runs around every command.)"""
        state = self._state
        state.acquire()
        if self._closed:
            state.release()
            return False
        self._busy += 1
        state.release()
        return True

    def leave(self) -> None:
        state = self._state
        state.acquire()
        self._busy -= 1
        if self._busy or not self._close_pending:
            state.release()
            return
        self._close_pending = False
        self._closed = True
        state.release()
        self._sock._sf_close_now()

    def request_close(self) -> bool:
        """The connection closes the socket (any thread, maybe GC): True if it may be closed right now,
        False if a running command will close it when it ends (or it is closed already)."""
        self.on_close()
        with self._state:
            if self._closed or self._close_pending:
                return False
            busy = self._busy > 0
            if busy:
                self._close_pending = True
            else:
                self._closed = True
        if busy:  # maybe a fakeredis blocking command (BLPOP …) parked in its thread: end it
            access.end_fakeredis_block(self._sock, self.server.backend.lock)
        return not busy

    def killed(self) -> None:
        """CLIENT KILL of this connection (lock held): a parked stream read, or a fakeredis blocking command
        (BLPOP …) of a redis-py connection, ends now with the ConnectionError a real client gets when the
        server hangs up (queued ahead of the nil fakeredis's command then answers, which the dropped
        connection never reads); later commands fail as fakeredis makes them (killed socket). A TCP
        client's fakeredis command is left to the TCP layer (its replies go straight to the wire)."""
        sock = self._sock  # (read before the check, held for this call: see deliver)
        if not self.alive:
            return
        self.alive = False
        parked = self.server.blocking.hang_up(self)
        # a TCP client's socket writes every reply to its wire: the TCP layer hangs up on it itself
        in_fakeredis = not parked and getattr(sock, "_blocked", False) and not access.is_tcp(sock)
        if parked or in_fakeredis:
            self._push(redis.exceptions.ConnectionError(SERVER_CLOSED), resume=False)
        if in_fakeredis:
            access.end_fakeredis_block_locked(sock)

    def detach(self, sock: Any) -> None:
        """The socket is closed (fakeredis's ``close`` done): hold it weakly from now on. The socket holds its session
        (``_sf_session``), so a strong reference back made a cycle that only the cyclic GC freed, with the server and
        everything else the session reaches. While the socket lives the proxy reads it as before; once it is gone,
        only a closed session's holders can still ask (the blocking registry's late drop, a TCP client), and they
        look at ``alive`` / :meth:`enter` first, which never touch the socket. Idempotent."""
        if type(self._sock) is not weakref.ProxyType:
            self._sock = weakref.proxy(sock)

    def on_close(self) -> None:
        """Unregister a parked command and wake a reader still waiting for its reply."""
        if not self.alive:
            return
        self.alive = False
        self.server.blocking.drop(self, self.server.backend.lock)
        self._push(CLOSED_BY_CLIENT, resume=False)


#: the running event loop of this thread, or None: get_running_loop() without raising (asyncio._get_running_loop,
#: undocumented but stable since Python 3.7)
_running_loop = asyncio._get_running_loop


def _is_reply(item: BaseException) -> bool:
    return isinstance(item, redis.exceptions.ResponseError)


class SyncSession(Session):
    __slots__ = ()

    def _push(self, item: Any, resume: bool) -> None:
        sock = self._sock
        if resume:
            self.resume_pending = True
        if item is CLOSED_BY_CLIENT or (isinstance(item, BaseException) and not _is_reply(item)):
            responses = sock.responses  # straight to the reader: not a reply a wire could encode
            if responses is not None:
                responses.put(item)
                ready = getattr(sock, "response_ready", None)  # fakeredis >= 2.35; older readers wait on the queue
                if ready is not None:
                    ready.set()
        else:
            sock.put_response(item)  # wakes the owner thread waiting in read_response

    def resume_if_pending(self) -> None:
        if self.resume_pending and self.alive:
            self.resume_pending = False
            self._sock.resume()


class AsyncSession(Session):
    __slots__ = ("_loop",)

    def __init__(self, sock: Any, server: Any) -> None:
        super().__init__(sock, server)
        self._loop = access.socket_loop(sock)

    def _push(self, item: Any, resume: bool) -> None:
        """Hand ``item`` to the socket's loop: ``call_soon`` from the loop's own thread (a writer task on the
        same loop: no wake-up write to the loop's self-pipe), ``call_soon_threadsafe`` from any other."""
        sock = self._sock
        queue = sock.responses  # captured: close() drops it from the socket, a reader still awaits it
        if queue is None:
            return
        loop = self._loop
        try:  # the socket travels with the call: the session holds it weakly once it is closed (detach)
            if loop is _running_loop():
                self._loop.call_soon(self._finish, sock, queue, item, resume)
            else:
                self._loop.call_soon_threadsafe(self._finish, sock, queue, item, resume)
        except RuntimeError:  # the loop is closed: nobody is left to read
            pass

    def _finish(self, sock: Any, queue: Any, item: Any, resume: bool) -> None:
        """On the socket's loop: queue ``item`` for the reader, then let the parser go on."""
        access.queue_async(sock, queue, item)
        if resume and self.alive:
            try:
                sock.resume()
            except Exception as exc:  # an injected fault or a closed parser: fail the next read
                access.queue_async(sock, queue, exc)


__all__ = ["AsyncSession", "CLOSED_BY_CLIENT", "Session", "SyncSession"]
