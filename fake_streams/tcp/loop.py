"""The TCP server's event loop: one thread does all the I/O of every client, as the real server does.

One thread waits in epoll (``poll`` where there is no epoll) on the listening sockets (TCP, and a Unix socket
if asked), every client socket and a wake-up pipe. Each pass of the loop:

1. **reads** every readable client (one ``recv`` of up to 64 KiB, more while a large bulk is awaited)
   into its :class:`~fake_streams.tcp.protocol.RequestParser` and runs its complete requests in order
   (:meth:`Connection.process`); after each command, fakeredis's own blocked clients (BLPOP …) that
   the command woke are re-checked (the server serves them right after the command). Plain XADDs (the
   adapter's ``defer_plain_xadds``) of the clients read in a row wait in the pass's batch and run together
   (:meth:`TcpServer.run_xadd_batch`) before any other request, reply or write of the pass: the same order
   and effects as one by one, at a fraction of the cost per command;
2. takes what other threads handed over (:meth:`TcpServer.post`: replies of engine-parked readers
   served by in-process clients or by the timer thread, pushes, wake-ups of fakeredis waiters,
   CLIENT KILL), runs the requests queued behind a blocked command once it is answered, and expires
   the deadlines of fakeredis's blocked commands;
3. **writes**, one ``send`` per client with everything that pass produced for it — the replies, a
   woken reader's reply caused by another client's XADD, pub/sub messages — in the server's order
   (the client queued for writing last goes first, as ``clients_pending_write`` is walked). What the
   kernel does not take waits for the socket to become writable.

Idle clients cost a parser and a fakeredis socket, no thread. Blocked clients cost no thread either:
an engine-parked XREAD/XREADGROUP gets its reply through ``Session.deliver``; a fakeredis blocking
command (BLPOP, BLMOVE, BZPOPMIN …) parks in the adapter (:mod:`fake_streams._fakeredis.tcp`), which
registers a database change callback and a deadline here and re-runs the command's check on each
wake-up, like fakeredis's asyncio socket does.

Limits as the server's: ``maxclients`` (the ``ERR max number of clients reached`` line, then a
close), ``client-query-buffer-limit`` (a client buffering more is closed), ``proto-max-bulk-len``;
all three are read from CONFIG (``CONFIG SET`` changes them), defaulting to 10000 / 1 GB / 512 MB.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import os
import select
import socket
import threading
import time
import traceback
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

from .protocol import Limits, ProtocolError, RequestParser
from .wire import ErrorReply, Reply, ReplyShaper, encode, shape_nil_arrays

__all__ = ["Connection", "TcpServer"]

_READ = select.POLLIN
_WRITE = select.POLLOUT
_READ_LIKE = select.POLLIN | select.POLLHUP | select.POLLERR  # a hang-up or an error shows on the next recv


class _Poller:
    """fd → handler(mask) over epoll (or ``select.poll``): ``poll`` calls the handlers of the ready fds.
    O(ready fds) per wait; the masks are poll's (epoll uses the same values)."""

    def __init__(self) -> None:
        epoll = getattr(select, "epoll", None)
        self._poll = epoll() if epoll is not None else select.poll()
        self._ms = epoll is None  # poll() takes milliseconds
        self.handlers: Dict[int, Callable[[int], None]] = {}

    def register(self, fd: int, mask: int, handler: Callable[[int], None]) -> None:
        self.handlers[fd] = handler
        self._poll.register(fd, mask)

    def modify(self, fd: int, mask: int, handler: Callable[[int], None]) -> None:
        self.handlers[fd] = handler
        self._poll.modify(fd, mask)

    def unregister(self, fd: int) -> None:
        if self.handlers.pop(fd, None) is not None:
            try:
                self._poll.unregister(fd)
            except (KeyError, ValueError, OSError):
                pass

    def wait(self, timeout: Optional[float], on_error: Callable[[int], None]) -> None:
        """Wait for events and run their handlers; a handler that raises is reported to ``on_error(fd)``."""
        if self._ms:
            events = self._poll.poll(None if timeout is None else timeout * 1000)
        else:
            events = self._poll.poll(-1 if timeout is None else timeout, 1024)  # type: ignore[call-arg]  # epoll's maxevents
        handlers = self.handlers
        for fd, mask in events:
            handler = handlers.get(fd)
            if handler is not None:
                try:
                    handler(mask)
                except Exception:
                    on_error(fd)

    def close(self) -> None:
        close = getattr(self._poll, "close", None)
        if close is not None:
            close()

DEFAULT_MAXCLIENTS = 10000
DEFAULT_QUERY_BUFFER_LIMIT = 1024 * 1024 * 1024
DEFAULT_MAX_BULK_LEN = 512 * 1024 * 1024
_READ_SIZE = 65536
_BIG_READ_SIZE = 4 * 1024 * 1024  # while a large bulk is awaited
_MAXCLIENTS_ERROR = b"-ERR max number of clients reached\r\n"
_MEMORY_UNITS = {b"": 1, b"b": 1, b"k": 1000, b"kb": 1024, b"m": 1000**2, b"mb": 1024**2, b"g": 1000**3, b"gb": 1024**3}


def memory_value(raw: Any, default: int) -> int:
    """A CONFIG memory value (``536870912``, ``512mb``, ``1gb``; ``memtoull``), ``default`` if unreadable."""
    text = raw if isinstance(raw, bytes) else str(raw).encode()
    text = text.strip().lower()
    digits = text.rstrip(b"kmgb")
    unit = text[len(digits):]
    if not digits.isdigit() or unit not in _MEMORY_UNITS:
        return default
    return int(digits) * _MEMORY_UNITS[unit]


class Connection:
    """One client: its socket, request parser, the adapter's fakeredis client and its output.

    Adapter callbacks (any thread unless noted): :meth:`reply` (loop thread, the reply to
    :attr:`command`), :meth:`put` (a reply or a push), :meth:`kill`, :meth:`wake_waiter` (a fakeredis
    blocked command's database changed), :meth:`park` (loop thread, a fakeredis command blocked).
    """

    __slots__ = ("owner", "sock", "fd", "peer", "local", "parser", "client", "command", "protocol", "shaper",
                 "out", "unsent", "dirty", "close_after_reply", "closed", "writing", "last_active", "created",
                 "waiter", "unix", "bytes_in", "bytes_out", "commands", "held", "__weakref__")

    def __init__(self, owner: TcpServer, sock: socket.socket, peer: str, local: str) -> None:
        self.owner = owner
        self.sock = sock
        self.fd = sock.fileno()
        self.peer = peer
        self.local = local
        self.parser = RequestParser(owner.limits, self.auth_required)
        self.bytes_in = self.bytes_out = self.commands = 0  # totals (CLIENT LIST on Valkey: tot-net-in/out, tot-cmds)
        self.command: List[bytes] = []  # the request being run
        self.protocol = 2  # the RESP version of the last reply (pushes use it)
        self.shaper = ReplyShaper()
        self.out: List[bytes] = []  # encoded output of this pass
        self.unsent: Any = b""  # what the kernel did not take yet (a memoryview of the last write)
        self.dirty = False  # queued for writing in this pass
        self.close_after_reply = False  # QUIT, a protocol error, CLIENT KILL: write what is queued, then close
        self.closed = False
        self.writing = False  # registered for writability
        self.created = self.last_active = time.monotonic()
        self.waiter: Any = None  # a fakeredis blocked command of this client (the adapter's)
        self.held: Optional[List[bytes]] = None  # a parsed request put back until a busy script ends
        self.unix = peer.endswith(":0") and local == peer and not peer[:1].isdigit()  # a Unix-socket client
        self.client: Any = owner.client_factory(owner.server, self)

    # ----------------------------------------------------------------------------- adapter side
    def reply(self, value: Any, protocol: int) -> Reply:
        """Wrap the reply to :attr:`command` (loop thread, or the thread serving a parked read)."""
        self.protocol = protocol
        return self.shaper.reply(self.command, value, protocol)

    def auth_required(self) -> bool:
        """A password is required and this client has not authenticated (the parser's smaller limits apply)."""
        return bool(self.client.must_authenticate)

    def put(self, message: Any) -> None:
        """Queue a reply (:class:`~fake_streams.tcp.wire.Reply`) or a push message for this pass's write."""
        if type(message) is Reply:
            self.owner.post(self, encode(message.value, message.protocol), None, reply=True)
            return
        if isinstance(message, BaseException):  # not a reply: the connection is dropped
            self.owner.post(self, None, self._drop)
            return
        else:
            data = encode(message, self.protocol, push=True)
        self.owner.post(self, data, None)

    def put_own(self, value: Any, protocol: int) -> None:
        """The reply to this client's running stream command on the direct path (loop thread): nil shapes,
        encoded and queued at once (no MULTI or AUTH state to track: the direct path runs outside both)."""
        self.protocol = protocol
        kind = type(value)
        if kind is bytes:  # XADD's ID, a bulk: encoded here
            self.out.append(b"$%d\r\n%s\r\n" % (len(value), value))
        else:
            if protocol == 2 and (value is None or kind is list):
                value = shape_nil_arrays(self.command, value)
            self.out.append(encode(value, protocol))
        if not self.dirty:
            self.dirty = True
            self.owner.dirty.append(self)

    def put_encoded(self, data: bytes) -> None:
        """Queue an encoded reply to this client's running command (loop thread; the direct path's constant replies)."""
        self.out.append(data)
        if not self.dirty:
            self.dirty = True
            self.owner.dirty.append(self)

    def put_all(self, values: List[Any], protocol: int) -> None:
        """Queue the replies of a run of this client's commands that need no nil shaping (XADD IDs, errors)."""
        self.protocol = protocol
        if len(values) == 1 and type(values[0]) is bytes:  # one unpipelined XADD's ID
            value = values[0]
            self.out.append(b"$%d\r\n%s\r\n" % (len(value), value))
        else:
            self.out.append(b"".join([b"$%d\r\n%s\r\n" % (len(v), v) if type(v) is bytes else encode(v, protocol)
                                      for v in values]))
        if not self.dirty:
            self.dirty = True
            self.owner.dirty.append(self)

    def put_bulks(self, values: List[bytes], protocol: int) -> None:
        """Queue the replies of a run of this client's commands that are all bulks (a run of XADDs' IDs): IDs of one
        length (the common case) joined in one call. O(len(values))."""
        self.protocol = protocol
        size = len(values[0])
        if list(map(len, values)).count(size) == len(values):
            self.out.append(b"$%d\r\n%s\r\n" % (size, (b"\r\n$%d\r\n" % size).join(values)))
        else:
            self.out.append(b"".join([b"$%d\r\n%s\r\n" % (len(v), v) for v in values]))
        if not self.dirty:
            self.dirty = True
            self.owner.dirty.append(self)

    def kill(self) -> None:
        """CLIENT KILL (any thread): close once what is queued (the reply to a self-kill) is written."""
        self.owner.post(self, None, self._drop)

    def wake_waiter(self) -> None:
        """A database change may have readied this client's fakeredis blocked command (lock held, any thread)."""
        self.owner.post(self, None, self._recheck)

    def park(self, waiter: Any, timeout_s: Optional[float]) -> None:
        """A fakeredis blocking command parked (loop thread): re-checked on wake-ups, ended at its deadline."""
        self.waiter = waiter
        if timeout_s:
            self.owner.call_at(time.monotonic() + timeout_s, lambda: self._expire(waiter))

    def _recheck(self) -> None:
        waiter = self.waiter
        if waiter is not None and not self.closed:
            self.owner.rechecks.append(waiter)

    def _expire(self, waiter: Any) -> None:
        if self.waiter is waiter and not self.closed:
            waiter.expire()

    def _drop(self) -> None:
        self.close_after_reply = True
        self._mark_dirty()  # the pass's write closes it once the output is out

    # ------------------------------------------------------------------------------- loop side
    def on_event(self, mask: int) -> None:
        """Registered for reading and writing (output waits): write, then read."""
        if mask & _WRITE:
            self.owner.flush(self)
        if mask & _READ_LIKE and not self.closed:
            self.on_readable()

    def on_readable(self, mask: int = _READ) -> None:
        """Registered for reading only (every event is read-like: a hang-up or an error shows in ``recv``):
        one ``recv``, then the complete requests run."""
        if self.owner.busy_running is self:  # a protected client (its script runs): not read meanwhile
            return
        parser = self.parser
        try:
            data = self.sock.recv(_BIG_READ_SIZE if parser.awaiting_bulk else _READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.owner.close_connection(self)
            return
        self.last_active = time.monotonic()
        self.bytes_in += len(data)
        if self.close_after_reply:
            return  # the server reads no more requests of a client it is about to close
        if parser.feed(data) > self.owner.query_buffer_limit:
            self.owner.close_connection(self)  # freeClientAsync: no reply
            return
        self.process()

    def process(self) -> None:
        """Run the complete requests buffered, in order, until one blocks or the client is to be closed.

        A run of plain XADDs (the adapter's ``defer_plain_xadds``) joins the pass's batch
        (:meth:`TcpServer.run_xadd_batch`) instead of running now: every other request — of this client or
        another —, a protocol error's reply and the pass's writes come after the batch has run, so the commands
        run and answer in the order they were read."""
        client, parser, owner = self.client, self.parser, self.owner
        state = client.sock  # its _paused: a blocked command (read directly: this loop runs per request)
        while not self.close_after_reply and not state._paused:
            if (client._xadd_head is not None and owner.batching and self.held is None and owner.busy_running is None
                    and client.defer_repeated_xadds(parser, owner.xadd_batch)):  # this client's XADD again
                if not parser.has_input:
                    break
                owner.run_xadd_batch()  # what follows in its input runs after its XADDs
                continue
            try:
                argv = parser.next() if self.held is None else self._take_held()
            except ProtocolError as exc:
                if owner.xadd_batch:
                    owner.run_xadd_batch()
                self._queue(encode(ErrorReply(b"ERR Protocol error: " + exc.text), 2))
                self.close_after_reply = True
                break
            if argv is None:
                break
            if not argv:
                continue
            if owner.busy_running is not None:  # another client's script is busy (TcpServer.serve_while_busy)
                if owner.xadd_batch:
                    owner.run_xadd_batch()
                if self._answer_while_busy(argv, client):
                    continue
                break
            if owner.batching and client.defer_plain_xadds(argv, parser, owner.xadd_batch):
                if not parser.has_input:
                    break
                owner.run_xadd_batch()  # what follows in its input runs after its XADDs
                continue
            if owner.xadd_batch:
                owner.run_xadd_batch()
            self.run_request(argv)
            if client.gone:
                self._drop()
            elif not parser.has_input and self.held is None:  # nothing more to read: next() would answer None
                break

    def run_request(self, argv: List[bytes]) -> None:
        """Run one request now (its replies queued), then what the server does after a command: the replies held
        back while it ran, fakeredis's blocked clients it woke. A bug below drops this client only."""
        owner = self.owner
        self.command = argv
        owner.running = self
        try:
            self.client.run(argv, self.parser)
            self.commands += 1
        except Exception:  # a bug below us: this client is dropped, the server goes on
            owner._record_error()
            self._drop()
        finally:
            owner.running = None
        if owner._after_command:
            owner.release_after_command()
        if owner.rechecks:
            owner.run_rechecks()

    def _take_held(self) -> List[bytes]:
        held, self.held = self.held, None
        assert held is not None
        return held

    def _answer_while_busy(self, argv: List[bytes], client: Any) -> bool:
        """A request read while another client's script is busy (:meth:`TcpServer.serve_while_busy`): True if it
        was answered as the busy server answers it (BUSY, SCRIPT KILL / FUNCTION KILL's reply, without the server
        lock); else it is held, and it and the requests behind it run once the script has ended (AUTH, HELLO,
        QUIT, RESET, SHUTDOWN NOSAVE — which stops the script —, …)."""
        if client.answer_busy(argv):
            self.commands += 1
            return True
        self.held = argv
        if self not in self.owner._deferred:
            self.owner._deferred.append(self)
        return False

    def _queue(self, data: bytes) -> None:
        self.out.append(data)
        if not self.dirty:
            self.dirty = True
            self.owner.dirty.append(self)

    def _mark_dirty(self) -> None:
        if not self.dirty:
            self.dirty = True
            self.owner.dirty.append(self)


class TcpServer:
    """Listening sockets serving ``server``; :attr:`url` is ``redis://HOST:PORT/0``. Use :func:`~fake_streams.tcp.serve`.

    ``client_factory(server, connection)`` makes the adapter's client of a new connection (a
    :class:`fake_streams._fakeredis.tcp.TcpClient`).
    """

    def __init__(self, server: Any, client_factory: Callable[[Any, Connection], Any], host: str = "127.0.0.1",
                 port: int = 0, backlog: int = 4096, maxclients: Optional[int] = None,
                 unixsocket: Optional[str] = None) -> None:
        self.server = server
        self.client_factory = client_factory
        self.host = host
        self.config: Dict[bytes, Any] = server.backend.fake.config
        self.config.setdefault(b"maxclients", str(maxclients or DEFAULT_MAXCLIENTS).encode())
        if maxclients is not None:
            self.config[b"maxclients"] = str(maxclients).encode()
        self.config.setdefault(b"proto-max-bulk-len", str(DEFAULT_MAX_BULK_LEN).encode())
        self.config.setdefault(b"client-query-buffer-limit", str(DEFAULT_QUERY_BUFFER_LIMIT).encode())
        self.limits = Limits()
        self.maxclients = DEFAULT_MAXCLIENTS
        self.query_buffer_limit = DEFAULT_QUERY_BUFFER_LIMIT
        self._config_seen: Tuple[Any, ...] = ()
        self._refresh_config()
        self.connections: Dict[int, Connection] = {}
        self.dirty: List[Connection] = []  # to write at the end of this pass (in order of first output)
        self.rechecks: List[Any] = []  # fakeredis waiters to re-check after the current command
        self.running: Optional[Connection] = None  # whose command runs now (loop thread)
        #: the pass's batch of plain-XADD runs taken from the clients' input (:meth:`run_xadd_batch`)
        self.xadd_batch: List[Any] = []
        self._run_plain_xadds: Optional[Callable[[List[Any]], List[Tuple[Any, Any]]]] = getattr(
            client_factory, "run_plain_xadds", None)
        self.batching = self._run_plain_xadds is not None  # runs join the batch (off while it is being undone)
        self.busy_running: Optional[Connection] = None  # whose busy script runs during serve_while_busy
        self._deferred: List[Connection] = []  # clients whose requests wait for a busy script's end
        self.errors: List[str] = []  # tracebacks of exceptions a command raised (its client was dropped); last 100
        self._after_command: List[Tuple[Connection, Optional[bytes], Optional[Callable[[], None]]]] = []
        self.closed = False
        self._inbox: Deque[Tuple[Connection, Optional[bytes], Optional[Callable[[], None]]]] = collections.deque()
        self._timers: List[Tuple[float, int, Callable[[], None]]] = []
        self._timer_seq = itertools.count()
        self._poller = _Poller()
        self._listeners: List[socket.socket] = []
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.create_server((host, port), family=family, backlog=backlog)
        self.port: int = listener.getsockname()[1]
        self._listeners.append(listener)
        self.unixsocket = unixsocket
        if unixsocket:
            if os.path.exists(unixsocket):
                os.unlink(unixsocket)
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.bind(unixsocket)
            unix.listen(backlog)
            self._listeners.append(unix)
        for sock in self._listeners:
            sock.setblocking(False)
            self._poller.register(sock.fileno(), _READ, self._accept_from(sock))
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._wake_pending = False
        self._poller.register(self._wake_r, _READ, self._drain_wake)
        self._thread = threading.Thread(target=self._run, name=f"fake-streams-tcp :{self.port}", daemon=True)
        self._loop_ident: Optional[int] = None
        self._thread.start()

    # ---------------------------------------------------------------------------------- public
    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"redis://{host}:{self.port}/0"

    @property
    def clients(self) -> int:
        """How many TCP clients are connected now."""
        return len(self.connections)

    def __repr__(self) -> str:
        return f"TcpServer(url={self.url!r}, closed={self.closed})"

    def __enter__(self) -> TcpServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self, timeout: float = 5.0) -> None:
        """Stop accepting, close every connection (blocked clients released) and join the thread. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self._wake()
        if threading.get_ident() != self._loop_ident:
            self._thread.join(timeout)

    # ------------------------------------------------------------------------ cross-thread entry
    def post(self, conn: Connection, data: Optional[bytes], action: Optional[Callable[[], None]],
             reply: bool = False) -> None:
        """Output for ``conn`` and/or an action to run for it in the loop thread; from the loop thread at once.

        A ``reply`` for another client than the one whose command is running (a reader the command served)
        is queued after that command's own reply, as the server serves blocked clients after the command;
        pushes (pub/sub messages) are queued when the command sends them."""
        if threading.get_ident() == self._loop_ident:
            if reply and self.running is not None and conn is not self.running:
                self._after_command.append((conn, data, action))
                return
            self._deliver(conn, data, action)
            return
        self._inbox.append((conn, data, action))
        self._wake()

    def _deliver(self, conn: Connection, data: Optional[bytes], action: Optional[Callable[[], None]]) -> None:
        """Loop thread: queue ``data`` for ``conn``, run ``action``, and resume ``conn`` if its blocked command
        was answered."""
        if data is not None and not conn.closed:
            conn._queue(data)
        if action is not None:
            action()
        client = conn.client
        if client is not None and client.resume_pending:
            self._ready.append(conn)

    def release_after_command(self) -> None:
        """Queue the replies held back while the command ran (loop thread)."""
        held, self._after_command = self._after_command, []
        for conn, data, action in held:
            self.post(conn, data, action)

    def run_xadd_batch(self) -> None:
        """Run the pass's batch of plain-XADD runs (loop thread; before anything else of the pass is run or
        written): appended and answered together under one server lock (the adapter's ``run_plain_xadds``), in
        the order they were read. What the adapter leaves (a run the engine refused, a blocked client or a
        keyspace event subscriber appeared meanwhile) runs one by one through the general path, in order, its
        clients' later requests behind it. O(commands of the batch)."""
        batch, self.xadd_batch = self.xadd_batch, []
        assert self._run_plain_xadds is not None
        try:
            left = self._run_plain_xadds(batch)
        except Exception:  # a bug below us: the batch's clients are dropped (as one client's is), the server goes on
            self._record_error()
            for run in batch:
                run[6]._drop()
            return
        if not left:
            return
        self.batching = False
        try:
            for conn, argv in left:
                if conn.closed:
                    continue
                if argv is not None:
                    conn.run_request(argv)
                    if conn.client.gone:
                        conn._drop()
                conn.process()
        finally:
            self.batching = True

    def call_at(self, when: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` in the loop thread at monotonic time ``when`` (loop thread only)."""
        heapq.heappush(self._timers, (when, next(self._timer_seq), callback))

    def run_rechecks(self) -> None:
        """Re-run the checks of fakeredis blocked commands woken by the command just run (loop thread)."""
        while self.rechecks:
            waiters, self.rechecks = self.rechecks, []
            for waiter in dict.fromkeys(waiters):
                waiter.recheck()

    def flush(self, conn: Connection) -> None:
        """Write ``conn``'s output: one ``send``; the rest when the socket is writable again."""
        if conn.closed:
            return
        if conn.out:
            data: Any = b"".join([conn.unsent, *conn.out]) if conn.unsent else (
                conn.out[0] if len(conn.out) == 1 else b"".join(conn.out))
            conn.out.clear()
        else:
            data = conn.unsent  # a view of what the last send left: no copy per partial send
        if data:
            try:
                sent = conn.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self.close_connection(conn)
                return
            conn.bytes_out += sent
            conn.unsent = memoryview(data)[sent:] if sent < len(data) else b""
        if conn.unsent:
            if not conn.writing:
                conn.writing = True
                self._poller.modify(conn.fd, _READ | _WRITE, conn.on_event)
            return
        if conn.writing:
            conn.writing = False
            self._poller.modify(conn.fd, _READ, conn.on_readable)
        if conn.close_after_reply:
            self.close_connection(conn)

    def close_connection(self, conn: Connection) -> None:
        if conn.closed:
            return
        conn.closed = True
        self._poller.unregister(conn.fd)
        try:
            conn.sock.close()
        except OSError:
            pass
        client, conn.waiter = conn.client, None
        if client is not None:
            client.release()
        self.connections.pop(conn.fd, None)  # last: a client counted as gone has released what it held

    # ------------------------------------------------------------------------------------ loop
    _ready: List[Connection]

    def _run(self) -> None:
        self._loop_ident = threading.get_ident()
        self._ready = []
        wait = self._poller.wait
        try:
            while not self.closed:
                wait(self._next_timeout(), self._handler_failed)
                try:
                    self._after_reads()
                except Exception:  # a bug: recorded; the loop (every other client) goes on
                    self._record_error()
                    self.dirty, self._ready, self.rechecks, self.xadd_batch = [], [], [], []
        finally:
            self._shutdown()

    def _after_reads(self) -> None:
        if self.xadd_batch:  # the reads' XADDs run (and are answered) first
            self.run_xadd_batch()
        inbox = self._inbox
        while inbox:
            self._deliver(*inbox.popleft())
        if self.rechecks:
            self.run_rechecks()
        if self._timers:
            self._run_timers()
        if self._deferred:  # requests held while a script was busy: their turn now
            deferred, self._deferred = self._deferred, []
            for conn in deferred:
                if not conn.closed:
                    conn.process()
        while self._ready:
            ready, self._ready = self._ready, []
            for conn in ready:
                if not conn.closed and conn.client.resume():
                    conn.process()
        if self.xadd_batch:
            self.run_xadd_batch()
        dirty = self.dirty
        if dirty:
            self.dirty = []
            for conn in reversed(dirty):  # clients_pending_write: each client put at its head when first queued
                conn.dirty = False
                self.flush(conn)
        self._refresh_config()

    def on_loop_thread(self) -> bool:
        """Whether the caller runs on this server's I/O thread."""
        return threading.get_ident() == self._loop_ident

    def serve_while_busy(self, running: Connection) -> None:
        """``processEventsWhileBlocked``: called on this loop's thread by the count hook of a busy script that
        ``running``'s command runs (the server lock released meanwhile). One pass of events, waiting at most
        1 ms: other clients' requests get what a busy server answers (:meth:`Connection._answer_while_busy`),
        new clients are accepted, replies are written; ``running`` is not read. Re-entry does nothing. Once
        :meth:`close` was called the script stops as at a shutdown (``close`` waits for this thread)."""
        if threading.get_ident() != self._loop_ident or self.busy_running is not None:
            return
        if self.closed:
            self.server.stop_scripts()
            return
        self.busy_running, self.running = running, None  # replies of this pass are not the command's: sent now
        try:
            self._poller.wait(0.001, self._handler_failed)
            if self.xadd_batch:
                self.run_xadd_batch()
            dirty, self.dirty = self.dirty, []
            for conn in reversed(dirty):
                conn.dirty = False
                self.flush(conn)
        finally:
            self.busy_running, self.running = None, running

    def _record_error(self) -> None:
        self.errors.append(traceback.format_exc())
        del self.errors[:-100]

    def _handler_failed(self, fd: int) -> None:
        """An event handler raised (a bug): recorded, and that client is closed."""
        self._record_error()
        conn = self.connections.get(fd)
        if conn is not None:
            self.close_connection(conn)

    def _next_timeout(self) -> Optional[float]:
        if self._inbox or self._ready or self.rechecks:
            return 0
        if not self._timers:
            return None
        return max(0.0, self._timers[0][0] - time.monotonic())

    def _run_timers(self) -> None:
        now = time.monotonic()
        timers = self._timers
        while timers and timers[0][0] <= now:
            heapq.heappop(timers)[2]()

    def _refresh_config(self) -> None:
        config = self.config
        raw = (config.get(b"maxclients"), config.get(b"proto-max-bulk-len"), config.get(b"client-query-buffer-limit"))
        if raw == self._config_seen:
            return
        self._config_seen = raw
        self.maxclients = memory_value(raw[0], DEFAULT_MAXCLIENTS)
        self.limits.max_bulk_len = memory_value(raw[1], DEFAULT_MAX_BULK_LEN)
        self.query_buffer_limit = memory_value(raw[2], DEFAULT_QUERY_BUFFER_LIMIT)

    def _wake(self) -> None:
        if self._wake_pending:
            return
        self._wake_pending = True
        try:
            os.write(self._wake_w, b"!")
        except (BlockingIOError, OSError):
            pass

    def _drain_wake(self, mask: int) -> None:
        self._wake_pending = False
        try:
            while os.read(self._wake_r, 4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _accept_from(self, listener: socket.socket) -> Callable[[int], None]:
        unix = listener.family == getattr(socket, "AF_UNIX", None)

        def accept(mask: int) -> None:
            for _ in range(1000):  # MAX_ACCEPTS_PER_CALL
                try:
                    sock, peer = listener.accept()
                except (BlockingIOError, InterruptedError):
                    return
                except OSError:
                    return
                self._admit(sock, peer, unix)
        return accept

    def _admit(self, sock: socket.socket, peer: Any, unix: bool) -> None:
        if len(self.connections) >= self.maxclients:
            try:
                sock.send(_MAXCLIENTS_ERROR)  # best effort, as the server does
            except OSError:
                pass
            sock.close()
            return
        sock.setblocking(False)
        if unix:
            address = local = f"{self.unixsocket}:0"
        else:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            here = sock.getsockname()
            address, local = _address(peer), _address(here)
        try:
            conn = Connection(self, sock, address, local)
        except Exception:  # the server is shutting down (fakeredis refuses new sockets)
            sock.close()
            return
        self.connections[conn.fd] = conn
        self._poller.register(conn.fd, _READ, conn.on_readable)  # on_event while output waits for writability

    def _shutdown(self) -> None:
        for conn in list(self.connections.values()):
            self.close_connection(conn)
        for sock in self._listeners:
            self._poller.unregister(sock.fileno())
            sock.close()
        if self.unixsocket:
            try:
                os.unlink(self.unixsocket)
            except OSError:
                pass
        self._poller.close()
        os.close(self._wake_r)
        os.close(self._wake_w)


def _address(addr: Any) -> str:
    host, port = addr[0], addr[1]
    return f"{host}:{port}"

