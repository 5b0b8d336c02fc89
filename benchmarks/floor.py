"""The floor: a redis-py connection whose "server" answers every command with a canned reply.

Nothing is executed. What remains is redis-py's own cost of a command: argument handling in the
command method, packing to RESP (hiredis packer when installed), ``send_packed_command``, the
parser reading the reply bytes (hiredis ``Reader`` when installed) and the reply callback that
builds Python values (``parse_xread``, ``parse_stream_list``, ...). Pipelines take their normal path
(``pack_commands`` + one ``read_response`` per command).

How it stays on redis-py's path: :class:`FloorConnection` is an ordinary
``redis.connection.Connection``; only ``_connect()`` returns an in-memory :class:`CannedSocket`
instead of a TCP socket, and the command packer is wrapped so that each packed command queues
the RESP bytes of its reply (chosen by command name from a :class:`Canned` table). The socket's
``recv_into`` (or ``recv``) hands those bytes to the parser exactly as a kernel socket would. ``can_read`` is
answered from the parser's buffer instead of ``poll()`` (no file descriptor exists); this skips
one syscall per command that a real connection pays.

The replies are the shapes the real server sends, built by :func:`encode` from Python values
(see :func:`stream_entries` etc.), for RESP2 or RESP3.
"""

from __future__ import annotations

import socket
from typing import Any, Dict, List, Optional, Sequence

import redis

# ------------------------------------------------------------------------------------------- RESP


def encode(value: Any, protocol: int = 2) -> bytes:
    """RESP bytes of ``value``: bytes → bulk, int → integer, list → array, dict → map (RESP3) or
    flat array (RESP2), None → nil, :class:`Simple` → simple string."""
    out: List[bytes] = []
    _encode(value, protocol, out)
    return b"".join(out)


class Simple(bytes):
    """A RESP simple string (``+OK``)."""


def _encode(value: Any, protocol: int, out: List[bytes]) -> None:
    if isinstance(value, Simple):
        out.append(b"+%s\r\n" % bytes(value))
    elif isinstance(value, bytes):
        out.append(b"$%d\r\n%s\r\n" % (len(value), value))
    elif isinstance(value, bool):
        out.append((b"#t\r\n" if value else b"#f\r\n") if protocol == 3 else b":%d\r\n" % int(value))
    elif isinstance(value, int):
        out.append(b":%d\r\n" % value)
    elif value is None:
        out.append(b"_\r\n" if protocol == 3 else b"*-1\r\n")
    elif isinstance(value, dict):
        if protocol == 3:
            out.append(b"%%%d\r\n" % len(value))
        else:
            out.append(b"*%d\r\n" % (2 * len(value)))
        for k, v in value.items():
            _encode(k, protocol, out)
            _encode(v, protocol, out)
    elif isinstance(value, (list, tuple)):
        out.append(b"*%d\r\n" % len(value))
        for item in value:
            _encode(item, protocol, out)
    else:  # pragma: no cover - programming error
        raise TypeError(f"cannot encode {type(value).__name__}")


# ------------------------------------------------------------------------ reply shapes of workloads


def stream_entries(first_ms: int, count: int, fields: Sequence[bytes]) -> List[Any]:
    """``count`` entries ``[id, [f1, v1, ...]]`` with IDs ``first_ms-0``, ``first_ms+1-0`` …"""
    return [[b"%d-0" % (first_ms + i), list(fields)] for i in range(count)]


def xread_reply(key: bytes, items: List[Any], protocol: int) -> Any:
    """XREAD/XREADGROUP top level: RESP2 ``[[key, entries]]``, RESP3 ``{key: entries}``."""
    return {key: items} if protocol == 3 else [[key, items]]


def xpending_reply(first_ms: int, count: int, consumer: bytes) -> List[Any]:
    """XPENDING extended: ``[[id, consumer, idle-ms, delivery-count], ...]``."""
    return [[b"%d-0" % (first_ms + i), consumer, 1234, 1] for i in range(count)]


def xautoclaim_reply(first_ms: int, count: int, fields: Sequence[bytes]) -> List[Any]:
    """XAUTOCLAIM (R7): ``[next-cursor, claimed entries, deleted ids]``."""
    return [b"%d-0" % (first_ms + count), stream_entries(first_ms, count, fields), []]


def hello_reply(protocol: int) -> Dict[Any, Any]:
    return {
        Simple(b"server"): b"redis",
        Simple(b"version"): b"7.4.0",
        Simple(b"proto"): protocol,
        Simple(b"id"): 1,
        Simple(b"mode"): b"standalone",
        Simple(b"role"): b"master",
        Simple(b"modules"): [],
    }


# ---------------------------------------------------------------------------------------- server


class Canned:
    """The floor's "server": command name (upper-case str) → RESP reply bytes.

    Set :attr:`replies` before a workload (``canned.set(XADD=..., XACK=...)``); handshake commands
    (HELLO, CLIENT, SELECT, AUTH, PING) have fixed answers. An unknown command gets ``+OK``.
    """

    def __init__(self) -> None:
        self.replies: Dict[str, bytes] = {}

    def set(self, protocol: int, **values: Any) -> None:
        """Replace the table: ``name=value`` (a Python value, encoded for ``protocol``)."""
        self.replies = {name.upper(): encode(value, protocol) for name, value in values.items()}

    def reply_for(self, name: str, args: Sequence[Any]) -> bytes:
        found = self.replies.get(name)
        if found is not None:
            return found
        if name == "HELLO":
            return encode(hello_reply(int(args[1]) if len(args) > 1 else 2), 3)
        if name == "PING":
            return b"+PONG\r\n"
        return b"+OK\r\n"


class InertSocket:
    """Stands in for ``Connection._sock`` (redis-py sets options on it, tests it for None and closes it)."""

    def settimeout(self, timeout: Optional[float]) -> None:
        pass

    def setsockopt(self, *args: Any) -> None:
        pass

    def shutdown(self, how: int) -> None:
        pass

    def close(self) -> None:
        pass


class CannedSocket(InertSocket):
    """In-memory stand-in for the TCP socket: ``sendall`` is a no-op, ``recv_into`` / ``recv`` serve queued
    replies (redis-py's pure-Python buffer reads with ``recv`` since 8.1, with ``recv_into`` before)."""

    def __init__(self) -> None:
        self.pending: List[bytes] = []
        self.buffered = b""
        self.sent_bytes = 0

    def sendall(self, data: bytes) -> None:
        self.sent_bytes += len(data)

    def recv_into(self, buf: Any, nbytes: int = 0) -> int:
        if not self.buffered:
            if not self.pending:
                raise socket.timeout("floor: no reply queued")  # what a silent server looks like
            self.buffered = b"".join(self.pending) if len(self.pending) > 1 else self.pending[0]
            self.pending.clear()
        data = self.buffered
        n = min(len(buf), len(data))
        buf[:n] = data[:n] if n < len(data) else data
        self.buffered = data[n:] if n < len(data) else b""
        return n

    def recv(self, bufsize: int) -> bytes:
        if not self.buffered and not self.pending:
            raise socket.timeout("floor: no reply queued")
        data = self.buffered + b"".join(self.pending)
        self.pending.clear()
        self.buffered = data[bufsize:]
        return data[:bufsize]


class _QueueingPacker:
    """Wraps redis-py's command packer: every packed command queues its canned reply."""

    __slots__ = ("_inner", "_conn")

    def __init__(self, inner: Any, conn: FloorConnection) -> None:
        self._inner = inner
        self._conn = conn

    def pack(self, *args: Any) -> Any:
        name = args[0]
        if not isinstance(name, str):
            name = bytes(name).decode()
        name = name.split(" ", 1)[0].upper()
        conn = self._conn
        sock = conn._sock
        if sock is not None:
            sock.pending.append(conn.canned.reply_for(name, args))
        return self._inner.pack(*args)


class FloorConnection(redis.connection.Connection):
    """``redis.Connection`` whose socket is a :class:`CannedSocket` fed by ``canned=`` (a :class:`Canned`)."""

    def __init__(self, canned: Optional[Canned] = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.canned = canned if canned is not None else Canned()
        self._command_packer = _QueueingPacker(self._command_packer, self)

    def _connect(self) -> CannedSocket:
        return CannedSocket()

    def can_read(self, timeout: float = 0) -> bool:
        if not self._sock:
            self.connect()
        sock = self._sock
        return bool(sock.pending or sock.buffered)

    # redis-py >= 8 maintenance notifications would resolve the host name; nothing to resolve here.
    def activate_maint_notifications_handling_if_enabled(self, *args: Any, **kwargs: Any) -> None:
        return None

    def get_resolved_ip(self) -> Optional[str]:
        return None

    def repr_pieces(self) -> List[Any]:
        return [("floor", "canned")]


def floor_client(canned: Canned, protocol: Optional[int]) -> redis.Redis:
    """A ``redis.Redis`` on the floor; ``protocol=None`` keeps redis-py's default."""
    kwargs: Dict[str, Any] = {"connection_class": FloorConnection, "canned": canned}
    if protocol is not None:
        kwargs["protocol"] = protocol
    return redis.Redis(connection_pool=redis.ConnectionPool(**kwargs))
