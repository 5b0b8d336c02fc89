"""redis-py connection classes (sync and asyncio) whose server is a :class:`FakeStreamsServer`.

They are ordinary redis-py connection classes, built on fakeredis's in-memory socket::

    pool = redis.ConnectionPool(connection_class=FakeStreamsConnection, host="cache", port=6379, protocol=3)
    client = redis.Redis(connection_pool=pool)
    client = redis.Redis.from_url("redis://cache:6379/0", connection_class=FakeStreamsConnection)

Connections to the same ``host:port`` (or Unix ``path``) share one server
(:meth:`FakeStreamsServer.for_address`), unless ``server=`` names one or the class was made with
:meth:`FakeStreamsConnection.bind`. ``version=`` picks the profile of a server created that way.
Keyword arguments real sockets need (``ssl_*``, ``socket_keepalive*``, ``socket_type``) are dropped.

Reading a reply works like reading a real socket: ``socket_timeout`` (or a per-call ``timeout``)
bounds the wait for the reply of a blocked XREAD/XREADGROUP (``TimeoutError``, the connection is
dropped, redis-py's ``Retry`` re-sends as it would to a server); closing the connection from another
thread or task ends the wait (sync: ``ConnectionError`` with the hiredis parser, ``ValueError('I/O
operation on closed file.')`` with the pure-Python one, as redis-py does on a real socket; asyncio:
``ConnectionError``); a cancelled read drops the connection, as redis-py does. Reconnecting to a
closed server fails with ConnectionError and stops that connection's retries (it is gone for good).
The asyncio class yields to the event loop once per command and per pipeline execute, as socket I/O does
(see :class:`FakeStreamsAsyncConnection`).
"""

from __future__ import annotations

import asyncio
import errno
import math
import os
import queue
from typing import Any, Dict, Optional

import redis.exceptions

from . import _fakeredis
from ._fakeredis import fastpath
from ._fakeredis.sessions import CLOSED_BY_CLIENT
from ._fakeredis.sessions import SERVER_CLOSED as _SERVER_CLOSED  # what redis-py raises when the server hangs up
from .server import FakeStreamsServer

try:
    from redis.utils import SENTINEL as _SENTINEL  # redis-py >= 8: read_response(timeout=SENTINEL)
except ImportError:  # pragma: no cover - older redis-py
    _SENTINEL = object()
_MISSING = object()
try:
    from asyncio import timeout as _async_timeout  # Python >= 3.11
except ImportError:  # pragma: no cover - Python < 3.11: redis-py's own dependency there
    from async_timeout import timeout as _async_timeout  # type: ignore[no-redef, import-not-found, unused-ignore]

#: kwargs redis-py builds for SSL / keepalive / socket families that an in-memory socket has no use for
_DROP_PREFIXES = ("ssl_", "socket_keepalive", "socket_type")


def _client_setinfo_kwargs() -> Dict[str, Any]:
    """What redis-py would report in CLIENT SETINFO by default, as explicit keyword arguments (computed once).

    Given explicitly, fakeredis does not have to find out whether our class takes them: it would ask
    ``inspect.signature`` of every ``__init__`` in the MRO (a cost on the first connection of every new class,
    e.g. every ``bind``) and remember the class in a module-level dict for good, keeping it, and the server
    or network it holds, alive until the process ends (issue 13). redis-py >= 7.1: ``driver_info``; 5.0–7.0:
    ``lib_name``/``lib_version`` (their defaults); 4.x takes neither (nothing to give)."""
    global _SETINFO
    if _SETINFO is None:
        import inspect

        from redis.connection import AbstractConnection

        params = inspect.signature(AbstractConnection.__init__).parameters
        version = _redis_py_version()
        if "driver_info" in params:
            from redis.driver_info import DriverInfo

            _SETINFO = {"driver_info": (DriverInfo, version)}
        elif "lib_version" in params:
            _SETINFO = {"lib_name": "redis-py", "lib_version": version}
        else:
            _SETINFO = {}
    return _SETINFO


_SETINFO: Optional[Dict[str, Any]] = None


def _redis_py_version() -> str:
    """redis-py's version as it reports it (its ``get_lib_version`` reads the package metadata, a slow call)."""
    try:
        from redis.utils import get_lib_version
    except ImportError:  # pragma: no cover - redis-py 4.x
        return redis.__version__
    return str(get_lib_version())


def _add_setinfo(kwargs: Dict[str, Any]) -> None:
    """Fill in what redis-py would report in CLIENT SETINFO unless the caller said (see :func:`_client_setinfo_kwargs`)."""
    if "driver_info" in kwargs or "lib_name" in kwargs or "lib_version" in kwargs:
        return
    for name, value in _client_setinfo_kwargs().items():
        if name == "driver_info":  # a fresh DriverInfo per connection, as redis-py makes one (it is mutable)
            kind, version = value
            value = kind(lib_version=version)
        kwargs[name] = value


def _resolve(cls: type, kwargs: Dict[str, Any]) -> FakeStreamsServer:
    """Pick the server for a new connection and strip what the base classes must not see."""
    server = kwargs.pop("server", None) or getattr(cls, "_bound_server", None)
    version = kwargs.pop("version", None)
    path = kwargs.pop("path", None)
    for name in list(kwargs):
        if name.startswith(_DROP_PREFIXES):
            del kwargs[name]
    if server is None:
        if path:
            server = FakeStreamsServer.for_path(path, version)
        else:
            server = FakeStreamsServer.for_address(kwargs.get("host", "localhost"), kwargs.get("port", 6379), version)
    elif not isinstance(server, FakeStreamsServer):
        raise TypeError(f"server= must be a FakeStreamsServer, not {type(server).__name__}")
    if server.closed:
        raise ValueError(f"{server!r} is closed")
    _add_setinfo(kwargs)
    return server


class _Common:
    """What the sync and asyncio classes share."""

    _bound_server: Optional[FakeStreamsServer] = None
    streams_server: FakeStreamsServer

    @classmethod
    def bind(cls, server: FakeStreamsServer) -> type:
        """A subclass whose connections all use ``server`` (whatever host/port they are given)."""
        return type(cls.__name__, (cls,), {"_bound_server": server, "__module__": cls.__module__})

    # redis-py >= 8: maintenance notifications would resolve the host name (a real DNS lookup) and send
    # CLIENT MAINT_NOTIFICATIONS; a fake server never moves, so skip all of it (activate_… is per class).
    def _add_maint_notifications_to_handshake(self, *args: Any, **kwargs: Any) -> None:
        return None

    def get_resolved_ip(self) -> Optional[str]:
        return None

    def _decode(self, response: Any) -> Any:
        """Decode a reply as the parser would (RESP3 maps too); identity without ``decode_responses``."""
        if not getattr(self.encoder, "decode_responses", False):  # type: ignore[attr-defined]
            return response
        if isinstance(response, list):
            return [self._decode(item) for item in response]
        if isinstance(response, dict):
            return {self._decode(k): self._decode(v) for k, v in response.items()}
        if isinstance(response, bytes):
            return self.encoder.decode(response)  # type: ignore[attr-defined]
        return response


def _refuse_if_closed(conn: Any) -> None:
    """A closed server never comes back: (re)connecting fails with ConnectionError, and this connection's
    own Retry (a per-connection copy) is set to give up (:func:`_give_up_if_closed`), so a call that was
    blocked when the server closed ends at once instead of retrying with backoff for a minute
    (``connected = False`` is the "server down" that redis-py retries, as against a real server)."""
    server = conn.streams_server
    if server.closed:
        _give_up_if_closed(conn)
        raise redis.exceptions.ConnectionError(f"{server!r} is closed")


def _refuse_if_down(conn: Any, asyncio_text: bool = False) -> None:
    """A server that is down (``connected = False``: the process is gone, as after a simulated sentinel crash)
    refuses the connection as the OS does when nothing listens: ``ConnectionRefusedError``, which redis-py's
    ``connect`` turns into its own ConnectionError text (``Error 111 connecting to host:port. Connection
    refused.``; asyncio's ``open_connection`` words it ``Connect call failed (host, port)``), as against a real
    address."""
    if not conn.streams_server.backend.fake.connected:
        text = (f"Connect call failed {(getattr(conn, 'host', None), getattr(conn, 'port', None))!r}" if asyncio_text
                else os.strerror(errno.ECONNREFUSED))
        raise ConnectionRefusedError(errno.ECONNREFUSED, text)


def _give_up_if_closed(conn: Any) -> None:
    """If the server is closed, set this connection's Retry to no retries. Called where a read fails too: redis-py
    sleeps its backoff *before* the reconnect that would refuse (redis-py 6–7: up to 2 s for the first retry)."""
    if conn.streams_server.closed:
        retry = getattr(conn, "retry", None)
        update = getattr(retry, "update_retries", None)
        if update is not None:
            update(0)
        elif retry is not None and isinstance(getattr(retry, "_retries", None), int):  # redis-py < 6: no setter
            retry._retries = 0


def _item_error(item: Any) -> Optional[BaseException]:
    """An exception queued instead of a reply that must end the connection (not an error reply)."""
    if isinstance(item, BaseException) and not isinstance(item, redis.exceptions.ResponseError):
        return item
    return None


class FakeStreamsConnection(_Common, fastpath.SyncFastPath, _fakeredis.SyncConnectionBase):
    """A ``redis.Connection`` served in memory by a :class:`FakeStreamsServer`."""

    def __init__(self, **kwargs: Any) -> None:
        server = _resolve(type(self), kwargs)
        self.streams_server = server
        super().__init__(server=server.backend.fake, **kwargs)

    def _connect(self) -> Any:
        _refuse_if_closed(self)
        _refuse_if_down(self)
        return _fakeredis.attach(super()._connect(), self.streams_server, self)

    def read_response(self, disable_decoding: bool = False, **kwargs: Any) -> Any:
        """The next reply, waiting at most ``socket_timeout`` (``timeout=`` overrides it; None = forever)."""
        sock = self._sock
        if sock is None:  # closed by another thread before this one got to read
            raise self._sf_closed_error()
        fast = sock.__dict__.get("_sf_fast")  # replies of stream commands run directly (fastpath.py)
        if fast:
            return fastpath.take(self, fast, disable_decoding)
        session = getattr(sock, "_sf_session", None)
        if session is None:
            return super().read_response(disable_decoding=disable_decoding, **kwargs)
        timeout = kwargs.get("timeout", _MISSING)
        if timeout is _MISSING or timeout is _SENTINEL:
            timeout = self.socket_timeout
        try:
            response = self._sf_next(sock, session, timeout)
        except BaseException:
            _give_up_if_closed(self)
            if kwargs.get("disconnect_on_error", True):
                self.disconnect()
            raise
        if isinstance(response, BaseException):  # an error reply
            raise response
        return response if disable_decoding else self._decode(response)

    def _sf_next(self, sock: Any, session: Any, timeout: Optional[float]) -> Any:
        session.resume_if_pending()  # commands pipelined behind a served blocking read
        responses = sock.responses
        if responses is None:
            raise redis.exceptions.ConnectionError(_fakeredis.CONNECTION_ERROR_MSG)
        if not self.streams_server.backend.fake.connected:
            try:
                item = responses.get_nowait()
            except queue.Empty:
                raise redis.exceptions.ConnectionError(_fakeredis.CONNECTION_ERROR_MSG) from None
        else:
            try:
                item = responses.get() if timeout is None else responses.get(timeout=max(0.0, timeout))
            except queue.Empty:
                raise redis.exceptions.TimeoutError("Timeout reading from socket") from None
        if item is CLOSED_BY_CLIENT:  # closed from another thread while this one waited
            raise self._sf_closed_error()
        error = _item_error(item)
        if error is not None:
            raise error
        return item

    def _sf_closed_error(self) -> BaseException:
        """What redis-py raises in a read whose socket another thread closed (integration doc §3.2, e14)."""
        if "hiredis" in type(self._parser).__name__.lower():
            return redis.exceptions.ConnectionError(_SERVER_CLOSED)
        return ValueError("I/O operation on closed file.")  # the pure-Python parser's closed buffer

    def activate_maint_notifications_handling_if_enabled(self, *args: Any, **kwargs: Any) -> None:
        return None


class FakeStreamsAsyncConnection(_Common, fastpath.AsyncFastPath, _fakeredis.AsyncConnectionBase):
    """A ``redis.asyncio.Connection`` served in memory by a :class:`FakeStreamsServer`.

    Like socket I/O, it lets the event loop run other tasks on every command: the first read after a send
    (one command, or a whole pipeline / transaction) yields to the loop once before it takes the reply
    (``asyncio.sleep(0)``: one loop iteration; a real server's round trip gives ~6). So a task polling
    without BLOCK does not starve the loop, and a task created just before a burst of commands gets to send
    its own first, as against a server. A cancellation that lands on that yield drops the connection, as a
    cancelled socket read does. Sends never wait (an in-memory write), so ``socket_timeout`` bounds only
    reads, and no ``asyncio.wait_for`` task wraps a send (Python < 3.12's ``wait_for`` can lose a cancel
    that lands as its task ends: a cancelled blocked read then waited for ``socket_timeout``).
    """

    _sf_sent = False  # a command was sent since the last read: the next read yields to the loop first

    def __init__(self, **kwargs: Any) -> None:
        server = _resolve(type(self), kwargs)
        self.streams_server = server
        super().__init__(server=server.backend.fake, **kwargs)

    async def _connect(self) -> None:
        _refuse_if_closed(self)
        _refuse_if_down(self, asyncio_text=True)
        await super()._connect()
        _fakeredis.attach(self._sock, self.streams_server, self)

    async def disconnect(self, nowait: bool = False, **kwargs: Any) -> None:
        sock = self._sock
        if sock is not None:  # fakeredis only forgets it: close it, so a parked read is unregistered
            sock.close()
        reader, writer = self._reader, self._writer
        if writer is not None:  # fakeredis forgets its writer unclosed: the writer <-> transport cycle then held the
            writer.close()  # socket (and the server) for the cyclic GC; closed, it lets go of the socket (issue 13)
        await super().disconnect(nowait=nowait, **kwargs)
        parser = self._parser  # redis-py's parser keeps its stream (our socket's reader) past on_disconnect, and the
        if reader is not None and getattr(parser, "_stream", None) is reader:  # parser is a cycle of its own (its
            parser._stream = None  # bound push handler): let go of it (the next connect gives it the new reader)

    async def can_read_destructive(self) -> bool:
        """The pool's check at checkout before redis-py 8 (8 asks ``can_read``, hooked in the fast path): a
        connection the server hung up on reads the EOF, as a socket whose hang-up the event loop has seen, so
        the pool reconnects it (a Sentinel-managed one asking the sentinels) instead of sending on it."""
        if getattr(self._sock, "_killed", False):
            return True
        return bool(await super().can_read_destructive())

    async def send_command(self, *args: Any, **kwargs: Any) -> None:
        self._sf_sent = True
        await super().send_command(*args, **kwargs)

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        """redis-py's send without its ``asyncio.wait_for`` under ``socket_timeout`` (an in-memory write
        never waits; see the class docstring); the direct path's pipelines go to :class:`AsyncFastPath`."""
        self._sf_sent = True
        if type(command) is fastpath.DeferredCommands:
            await super().send_packed_command(command, check_health)
            return
        if not self.is_connected:
            connect = getattr(self, "connect_check_health", None)  # redis-py >= 5.1; before: connect()
            await (connect(check_health=False) if connect is not None else self.connect())
        if check_health:
            await self.check_health()
        try:
            if isinstance(command, str):
                command = command.encode()
            self._writer.writelines([command] if isinstance(command, bytes) else command)
            await self._writer.drain()
        except BaseException:  # as redis-py: a send that failed part-way leaves the connection unusable
            await self.disconnect(nowait=True)
            raise

    async def read_response(self, disable_decoding: bool = False, timeout: Optional[float] = None, *,
                            disconnect_on_error: bool = True, **kwargs: Any) -> Any:
        """The next reply, as redis.asyncio reads a socket: ``timeout=None`` → ``socket_timeout``
        (``TimeoutError``, connection dropped); a number → ``None`` on expiry; ``math.inf`` → no limit.
        Any other exception (cancellation included) drops the connection. The first read after a send
        yields to the event loop once (see the class docstring)."""
        if self._sf_sent:
            self._sf_sent = False
            try:
                await asyncio.sleep(0)
            except BaseException:  # cancelled while "on the wire": the reply is lost with the connection
                if disconnect_on_error:
                    await self.disconnect(nowait=True)
                raise
        sock = self._sock
        fast = fastpath.pending(sock)  # replies of stream commands run directly (_fakeredis/fastpath.py)
        if fast is not None:
            return fastpath.take(self, fast, disable_decoding)
        session = getattr(sock, "_sf_session", None)
        if session is None:
            return await super().read_response(disable_decoding=disable_decoding, timeout=timeout,
                                               disconnect_on_error=disconnect_on_error, **kwargs)
        limit = None if timeout == math.inf else (timeout if timeout is not None else self.socket_timeout)
        try:
            if limit is None:
                response = await self._sf_next(sock)
            else:
                async with _async_timeout(limit):  # no wait_for task: a cancel always reaches this read
                    response = await self._sf_next(sock)
        except asyncio.TimeoutError:
            if timeout is not None:
                return None
            if disconnect_on_error:
                await self.disconnect(nowait=True)
            raise redis.exceptions.TimeoutError(f"Timeout reading from {self._sf_host()}") from None
        except BaseException:
            _give_up_if_closed(self)
            if disconnect_on_error:
                await self.disconnect(nowait=True)
            raise
        if isinstance(response, BaseException):  # an error reply
            raise response
        return response if disable_decoding else self._decode(response)

    async def _sf_next(self, sock: Any) -> Any:
        responses = sock.responses
        if responses is None:
            raise redis.exceptions.ConnectionError(_fakeredis.CONNECTION_ERROR_MSG)
        if not self.streams_server.backend.fake.connected and responses.empty():
            raise redis.exceptions.ConnectionError(_fakeredis.CONNECTION_ERROR_MSG)
        item = await responses.get()
        if item is CLOSED_BY_CLIENT:
            raise redis.exceptions.ConnectionError(_SERVER_CLOSED)
        error = _item_error(item)
        if error is not None:
            raise error
        return item

    def _sf_host(self) -> str:
        host_error = getattr(self, "_host_error", None)
        return host_error() if callable(host_error) else f"{self.host}:{self.port}"

    async def activate_maint_notifications_handling_if_enabled(self, *args: Any, **kwargs: Any) -> None:
        return None


__all__ = ["FakeStreamsAsyncConnection", "FakeStreamsConnection"]
