"""Serve a :class:`~fake_streams.server.FakeStreamsServer` over TCP, speaking RESP2/RESP3 like a real server.

>>> from fake_streams import FakeStreamsServer
>>> from fake_streams.tcp import serve
>>> server = FakeStreamsServer()
>>> with serve(server) as tcp:           # port 0: a free port
...     url = tcp.url                    # 'redis://127.0.0.1:PORT/0'
>>> server.close()

Every TCP client gets a fakeredis socket of the same server as in-process clients (the adapter's
:class:`~fake_streams._fakeredis.TcpClient`): fakeredis parses its requests and runs them, the stream
commands through the engine — blocking reads park the client's thread exactly like a sync in-process
client. This module owns the sockets and threads, and writes the replies: it gets them before
fakeredis flattens them, so simple vs bulk strings, nil-bulk vs nil-array (``*-1`` for XREAD …), RESP3
maps, sets, doubles and pushes (pub/sub under RESP3) go out as a real server writes them.

Threads: one accepting thread, one thread per client (a client blocked in XREAD BLOCK holds only its
own thread; idle clients wait in ``select`` with no timeout). The accepting thread also wakes every
0.1 s to release the blocked command of a client that hung up. :meth:`TcpServer.close`
stops accepting, releases blocked clients, closes every socket and joins the threads; it leaves the
FakeStreamsServer open (in-process clients keep working).
"""

from __future__ import annotations

import collections
import os
import select
import socket
import threading
import time
from typing import Any, Deque, List, Sequence, Set

from . import _fakeredis
from .reply import ErrorReply, RepeatedKeyMap, Status

#: how often a blocked command's client is checked for a hang-up (seconds)
_REAP_INTERVAL_S = 0.1

__all__ = ["NIL_ARRAY", "ErrorReply", "TcpServer", "encode", "serve", "shape_nil_arrays"]


class _NilArray:
    """``addReplyNullArray``: ``*-1`` in RESP2 (``_`` in RESP3); a bare ``None`` is the nil-bulk ``$-1``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NIL_ARRAY"


NIL_ARRAY = _NilArray()


class Reply:
    """The reply to one command: the command as typed, the value (wire types kept) and its RESP version."""

    __slots__ = ("command", "value", "protocol")

    def __init__(self, command: Sequence[bytes], value: Any, protocol: int) -> None:
        self.command = command
        self.value = value
        self.protocol = protocol


# ------------------------------------------------------------------------------------------ encoding
def _line(value: bytes) -> bytes:
    """A simple string / error line: CR and LF become spaces, as the server does (addReplyErrorLength)."""
    return value.replace(b"\r", b" ").replace(b"\n", b" ")


def _double(value: float) -> bytes:
    if value != value:
        return b"nan"
    if value in (float("inf"), float("-inf")):
        return b"inf" if value > 0 else b"-inf"
    text = repr(value)
    return (text[:-2] if text.endswith(".0") else text).encode()


def encode(value: Any, protocol: int, push: bool = False) -> bytes:
    """RESP bytes of ``value`` for a client speaking ``protocol`` (2 or 3). O(size of the reply).

    ``bytes``/``str`` → bulk string; :class:`~fake_streams.reply.Status` → simple string; :class:`ErrorReply` → error; ``None`` → nil-bulk;
    :data:`NIL_ARRAY` → nil-array; ``dict`` → map (flat array in RESP2), :class:`~fake_streams.reply.RepeatedKeyMap` → a map of all its pairs; ``set`` → set (array in
    RESP2); ``bool`` → boolean (integer in RESP2); ``float`` → double (bulk in RESP2). ``push`` makes a
    top-level array a RESP3 push (``>``), as pub/sub messages are.
    """
    out: List[bytes] = []
    _encode(value, protocol == 3, out, push)
    return b"".join(out)


def _encode(value: Any, resp3: bool, out: List[bytes], push: bool = False) -> None:
    kind = type(value)
    if kind is bytes:
        out.append(b"$%d\r\n%s\r\n" % (len(value), value))
    elif kind is list or kind is tuple:
        out.append(b"%s%d\r\n" % (b">" if push and resp3 else b"*", len(value)))
        for item in value:
            _encode(item, resp3, out)
    elif kind is int:
        if -(2**63) <= value < 2**63:
            out.append(b":%d\r\n" % value)
        elif resp3:
            out.append(b"(%d\r\n" % value)
        else:
            _encode(b"%d" % value, resp3, out)
    elif value is None:
        out.append(b"_\r\n" if resp3 else b"$-1\r\n")
    elif value is NIL_ARRAY:
        out.append(b"_\r\n" if resp3 else b"*-1\r\n")
    elif kind is ErrorReply:
        out.append(b"-%s\r\n" % _line(value.value))
    elif kind is dict or kind is RepeatedKeyMap:
        items = value.pairs if kind is RepeatedKeyMap else value.items()
        out.append(b"%%%d\r\n" % len(items) if resp3 else b"*%d\r\n" % (2 * len(items)))
        for key, item in items:
            _encode(key, resp3, out)
            _encode(item, resp3, out)
    elif kind is bool:
        out.append((b"#t\r\n" if value else b"#f\r\n") if resp3 else (b":1\r\n" if value else b":0\r\n"))
    elif kind is float:
        if resp3:
            out.append(b",%s\r\n" % _double(value))
        else:
            _encode(_double(value), resp3, out)
    elif kind is set or kind is frozenset:
        out.append(b"%s%d\r\n" % (b"~" if resp3 else b"*", len(value)))
        for item in value:
            _encode(item, resp3, out)
    elif kind is str:
        _encode(value.encode(), resp3, out)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        _encode(bytes(value), resp3, out)
    elif kind is Status:
        out.append(b"+%s\r\n" % _line(value.value))
    elif isinstance(value, BaseException):
        out.append(b"-%s\r\n" % _line(f"ERR {value}".encode()))
    elif isinstance(value, list):
        _encode(list(value), resp3, out, push)
    else:
        _encode(str(value).encode(), resp3, out)


# ---------------------------------------------------------------------------------------- nil arrays
#: commands whose nil reply is a nil-array (``*-1`` in RESP2): stream reads, EXEC aborted by WATCH,
#: blocking pops (timeout), LMPOP/ZMPOP
_NIL_ARRAY_COMMANDS = frozenset(
    b"xread xreadgroup xrange xrevrange exec blpop brpop brpoplpush blmove blmpop bzpopmin bzpopmax bzmpop "
    b"lmpop zmpop".split()
)


def _all_nil_arrays(value: Any) -> Any:
    if value is None:
        return NIL_ARRAY
    if type(value) is list:
        return [_all_nil_arrays(item) for item in value]
    return value


def shape_nil_arrays(command: Sequence[bytes], value: Any, queued: Sequence[Sequence[bytes]] = ()) -> Any:
    """``value`` with :data:`NIL_ARRAY` where the server writes a nil-array (RESP2 only differs).

    XREAD/XREADGROUP (every nil: the reply and a deleted history entry ``[id, nil]``), XRANGE/XREVRANGE
    ``COUNT 0``, the empty XPENDING summary's 4th element, GEOPOS's missing members, LPOP/RPOP with a
    count, the commands of :data:`_NIL_ARRAY_COMMANDS`; EXEC's elements follow their ``queued`` commands.
    """
    name = bytes(command[0]).lower() if command else b""
    if value is None:
        if name in _NIL_ARRAY_COMMANDS or (name in (b"lpop", b"rpop") and len(command) > 2):
            return NIL_ARRAY
        return None
    if type(value) is not list:
        return value
    if name in (b"xread", b"xreadgroup"):
        return _all_nil_arrays(value)
    if name == b"exec" and len(queued) == len(value):
        return [shape_nil_arrays(cmd, item) for cmd, item in zip(queued, value)]
    if name == b"xpending" and len(value) == 4 and value[3] is None:
        return value[:3] + [NIL_ARRAY]
    if name == b"geopos":
        return [NIL_ARRAY if item is None else item for item in value]
    return value


# ---------------------------------------------------------------------------------------- connection
class Connection:
    """One TCP client: reads requests into its fakeredis socket, writes replies and pushes.

    The adapter's socket calls back :meth:`reply` (the reply to the command being run), :meth:`put`
    (a reply, or a push message from any thread) and :meth:`wake`.
    """

    def __init__(self, owner: TcpServer, sock: socket.socket, peer: Any) -> None:
        self.owner = owner
        self.sock = sock
        self.peer = peer
        self.command: Sequence[bytes] = ()  # the command being run (set by the adapter)
        self.protocol = 2  # the RESP version of the last reply (pushes use it)
        self.closing = False  # QUIT answered / server stopping
        self.busy_since = 0.0  # monotonic time the running request(s) started; 0 = idle
        self._queued: List[Sequence[bytes]] = []  # commands queued since MULTI (EXEC's reply shape)
        self._out: Deque[Any] = collections.deque()
        self._write_lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.thread = threading.Thread(target=self._run, name=f"fake-streams-tcp {peer}", daemon=True)
        self.client: Any = None

    # ------------------------------------------------------------------------ adapter callbacks
    def reply(self, value: Any, protocol: int) -> Reply:
        """Wrap the reply to :attr:`command`; tracks MULTI…EXEC so EXEC's elements get their own shapes."""
        command, name = self.command, bytes(self.command[0]).lower() if self.command else b""
        self.protocol = protocol
        queued: Sequence[Sequence[bytes]] = ()
        if name == b"multi" or name == b"discard":
            self._queued = []
        elif name == b"exec":
            queued, self._queued = self._queued, []
        elif type(value) is Status and value.value == b"QUEUED":
            self._queued.append(command)
        if protocol == 2:
            value = shape_nil_arrays(command, value, queued)
        return Reply(command, value, protocol)

    def put(self, message: Any) -> None:
        """Queue a reply or a push; written at once from this client's thread, else by waking it."""
        self._out.append(message)
        if type(message) is Reply and threading.current_thread() is self.thread:
            self._flush()  # replies are put outside the server lock: write them before the next command runs
        else:
            self.wake()

    def wake(self) -> None:
        try:
            os.write(self._wake_w, b"!")
        except (BlockingIOError, OSError):  # a wake-up is pending already / closed
            pass

    # ------------------------------------------------------------------------------------ thread
    def _flush(self) -> None:
        with self._write_lock:
            chunks = []
            while self._out:
                message = self._out.popleft()
                if type(message) is Reply:
                    chunks.append(encode(message.value, message.protocol))
                elif isinstance(message, BaseException):  # the socket was closed under the client: hang up
                    self.closing = True
                else:
                    chunks.append(encode(message, self.protocol, push=True))
            if chunks:
                self.sock.sendall(b"".join(chunks))

    def _run(self) -> None:
        try:
            self.client = _fakeredis.TcpClient(self.owner.server, self, self.sock, self.peer)
            while not self.closing:
                readable, _, _ = select.select([self.sock, self._wake_r], [], [])
                if self._wake_r in readable:
                    try:
                        os.read(self._wake_r, 4096)
                    except BlockingIOError:
                        pass
                    if not self.closing and self.sock not in readable:
                        self.client.feed(b"")  # a served blocking read: run the requests queued behind it
                if self.sock in readable:
                    data = self.sock.recv(65536)
                    if not data:
                        break
                    self.busy_since = time.monotonic()
                    try:
                        error = self.client.feed(data)
                    finally:
                        self.busy_since = 0.0
                    if error is not None:  # a request fakeredis cannot parse: answer, then hang up
                        self._out.append(Reply((), ErrorReply(error), self.protocol))
                        self.closing = True
                self._flush()
                if self.client.killed:
                    break
        except Exception:  # the peer went away, the server closed, or this socket was released
            pass
        finally:
            self._finish()

    def _finish(self) -> None:
        if self.client is not None:
            self.client.release()
        try:
            self.sock.close()
        finally:
            for fd in (self._wake_r, self._wake_w):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.owner._forget(self)

    def peer_gone(self) -> bool:
        """The client hung up (EOF pending on the socket): checked while a command of it is blocked."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            return bool(readable) and self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except (OSError, ValueError):
            return True

    def stop(self) -> None:
        """From another thread: release a blocked command, wake the thread and cut the socket."""
        self.closing = True
        client = self.client
        if client is not None:
            client.release()
        self.wake()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


# ------------------------------------------------------------------------------------------- server
class TcpServer:
    """A listening socket serving ``server``; :attr:`url` is ``redis://HOST:PORT/0``. Use :func:`serve`."""

    def __init__(self, server: Any, host: str = "127.0.0.1", port: int = 0, backlog: int = 128) -> None:
        self.server = server
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family, backlog=backlog)
        self.host = host
        self.port: int = self._listener.getsockname()[1]
        self.closed = False
        self._connections: Set[Connection] = set()
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._accept_loop, name=f"fake-streams-tcp :{self.port}", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"redis://{host}:{self.port}/0"

    @property
    def clients(self) -> int:
        """How many TCP clients are connected now."""
        with self._lock:
            return len(self._connections)

    def __repr__(self) -> str:
        return f"TcpServer(url={self.url!r}, closed={self.closed})"

    def __enter__(self) -> TcpServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _accept_loop(self) -> None:
        try:
            while True:
                readable, _, _ = select.select([self._listener, self._wake_r], [], [], _REAP_INTERVAL_S)
                if self._wake_r in readable:
                    return
                self._reap()
                if self._listener not in readable:
                    continue
                try:
                    sock, peer = self._listener.accept()
                except OSError:
                    continue
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                connection = Connection(self, sock, peer)
                with self._lock:
                    if self.closed:
                        sock.close()
                        return
                    self._connections.add(connection)
                connection.thread.start()
        finally:
            self._listener.close()

    def _reap(self) -> None:
        """Release the blocked command of a client that hung up (the server frees such a client at once;
        a parked ghost would otherwise be served the next entry). O(clients) every interval."""
        now = time.monotonic()
        with self._lock:
            busy = [c for c in self._connections if c.busy_since and now - c.busy_since >= _REAP_INTERVAL_S]
        for connection in busy:
            if connection.peer_gone():
                connection.stop()

    def _forget(self, connection: Connection) -> None:
        with self._lock:
            self._connections.discard(connection)

    def close(self, timeout: float = 5.0) -> None:
        """Stop accepting, release blocked clients, close every connection and join the threads. Idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            connections = list(self._connections)
        os.write(self._wake_w, b"!")
        self._thread.join(timeout)
        for connection in connections:
            connection.stop()
        for connection in connections:
            connection.thread.join(timeout)
        os.close(self._wake_r)
        os.close(self._wake_w)


def serve(server: Any, host: str = "127.0.0.1", port: int = 0) -> TcpServer:
    """Serve ``server`` on ``host:port`` (0 = a free port) until ``.close()``; returns the :class:`TcpServer`.

    In-process clients of ``server`` and TCP clients share one keyspace; a TCP client blocked in
    XREAD BLOCK is woken by an XADD from either side.
    """
    if getattr(server, "closed", False):
        raise ValueError(f"{server!r} is closed")
    return TcpServer(server, host, port)
