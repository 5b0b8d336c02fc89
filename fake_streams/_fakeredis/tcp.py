"""One TCP client's fakeredis socket (:class:`TcpClient`); :mod:`fake_streams.tcp` owns sockets and threads.

fakeredis parses the client's requests and runs them (stream commands through the session: a blocking read
parks this thread like any sync client); replies go to the ``tcp.Connection`` before fakeredis flattens them,
so Status vs bulk and errors reach the wire encoder intact.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import redis

from ..reply import ErrorReply, RepeatedKeyMap, Status
from .backend import _wake
from .compat import NoResponse, SimpleError, SimpleString, SyncConnectionBase
from .socket import attach


class _TcpSocketMixin:
    """fakeredis parses the client's requests and runs them (stream commands through the session above:
    a blocking read parks this thread like any sync client); replies go to the ``tcp.Connection`` before
    fakeredis flattens them, so Status vs bulk and errors reach the wire encoder intact."""

    _sf_wire: Any = None

    def _process_command(self, fields: Any) -> None:
        wire = self._sf_wire
        wire.command = fields
        if fields and bytes(fields[0]).lower() == b"quit":  # fakeredis has no QUIT: +OK, then hang up
            wire.put(wire.reply(Status(b"OK"), self._sf_session.protocol))
            wire.closing = True
            return
        super()._process_command(fields)  # type: ignore[misc]

    def _decode_result(self, result: Any) -> Any:  # called on each reply, outside the server lock
        self._sf_note_reply(result)  # INFO's rejected-call count (socket mixin)
        if isinstance(result, NoResponse):
            return result
        return self._sf_wire.reply(_tcp_value(result), self._sf_session.protocol)

    def put_response(self, msg: Any) -> None:  # replies (wrapped above) and pushes, from any thread
        self._sf_wire.put(msg)

    def kill(self) -> None:  # CLIENT KILL (fakeredis >= 2.35): hang up now, not at the next request
        super().kill()  # type: ignore[misc]
        self._sf_wire.wake()


def _tcp_value(value: Any) -> Any:
    """fakeredis reply values → the wire's: SimpleString → Status, SimpleError → tcp.ErrorReply (recursively)."""
    kind = type(value)
    if kind is list or kind is tuple:
        return [_tcp_value(item) for item in value]
    if isinstance(value, SimpleString):
        return Status(value.value)
    if isinstance(value, SimpleError):
        return ErrorReply(value.value)
    if kind is dict:
        return {_tcp_value(k): _tcp_value(v) for k, v in value.items()}
    if kind is RepeatedKeyMap:
        return RepeatedKeyMap([(_tcp_value(k), _tcp_value(v)) for k, v in value.pairs])
    return value


_TCP_CLASSES: Dict[type, type] = {}


class TcpClient:
    """The fakeredis socket of one TCP client of ``server``, replying through ``wire`` (a ``tcp.Connection``)."""

    def __init__(self, server: Any, wire: Any, sock: Any, peer: Any) -> None:
        local = sock.getsockname()
        info = {"addr": f"{peer[0]}:{peer[1]}", "laddr": f"{local[0]}:{local[1]}", "fd": sock.fileno()}
        kwargs = {"protocol": 2} if int(redis.__version__.split(".")[0]) >= 5 else {}
        connection = SyncConnectionBase(server=server.backend.fake, client_info=info, **kwargs)
        fake_sock = attach(connection._connect(), server)  # _connect: no handshake, the TCP client does its own
        base = type(fake_sock)
        cls = _TCP_CLASSES.get(base)
        if cls is None:
            cls = _TCP_CLASSES[base] = type("Tcp" + base.__name__, (_TcpSocketMixin, base), {})
        fake_sock.__class__ = cls
        fake_sock._sf_wire = wire
        self.sock = fake_sock
        self._lock = server.backend.lock
        self._released = False

    def feed(self, data: bytes) -> Optional[bytes]:
        """Run the requests in ``data`` (replies go to the wire); the error text if fakeredis cannot parse them.

        ``feed(b"")`` on a wake-up lets the parser go on with requests queued behind a served blocking read.
        """
        try:
            self.sock.sendall(data)
        except SimpleError as exc:
            return exc.value.encode() if isinstance(exc.value, str) else exc.value
        return None

    @property
    def killed(self) -> bool:
        return bool(getattr(self.sock, "_killed", False))

    def release(self) -> None:
        """Close the socket (any thread, not under the server lock, as redis-py does): a command parked in it
        ends; watches and subscriptions go. Idempotent."""
        if self._released:
            return
        self._released = True
        db = self.sock._db
        if self.sock._server is not None:
            self.sock.close()
        if db is not None:
            with self._lock:
                _wake(db)  # a thread parked in the socket's own session re-checks and sees it closed
