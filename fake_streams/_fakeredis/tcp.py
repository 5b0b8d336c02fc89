"""One TCP client's fakeredis socket (:class:`TcpClient`); :mod:`fake_streams.tcp` owns sockets and the event loop.

The TCP server parses requests itself (:mod:`fake_streams.tcp.protocol`) and hands each argument vector to
:meth:`TcpClient.run`, in the event loop's thread:

* a plain ``XADD key * field value …`` (the hottest command) on an existing stream without TTL takes the
  shortest path (:meth:`TcpClient.take_plain_xadds`: the direct path's conditions, with the plain XADDs on the
  same key right behind it in the input taken along, read in one scan by ``RequestParser.take_run``; then
  :func:`run_plain_xadds`: the engine's append and the command's side effects; a client sending the same XADD
  beginning again has it read in that scan alone, :meth:`TcpClient.defer_repeated_xadds`). The loop collects the runs of
  every client it reads in one pass and has them run together before anything else of the pass runs or is
  written (one server lock, one ``Stream.add_next_run`` per stream); a client's other requests run as usual,
  after the batch. tests/tcp/test_hot_xadd.py compares both with the general path;
* a **stream command** (and PING, redis-benchmark's probe) takes the direct path when nothing could tell it
  from the dispatch path (the
  conditions of :mod:`.fastpath`: no MULTI, pubsub, CLIENT REPLY, faults, ACL restriction, password, paused
  parser …): ``FakeStreamsServer.execute`` under the server lock, its reply encoded as it is (no fakeredis
  parse, dispatch or reply conversion);
* anything else goes to the socket's ``_process_command(argv)`` (fakeredis's dispatch, with our session:
  overrides, the engine for stream commands inside MULTI or Lua). Replies reach the ``tcp.Connection``
  before fakeredis flattens them, so Status vs bulk and errors reach the wire encoder intact.

Blocking without threads. An engine-parked XREAD/XREADGROUP pauses the socket; ``Session.deliver`` puts its
reply later (any thread) and the loop resumes the client. fakeredis's own blocking commands (BLPOP, BLMOVE,
BZPOPMIN, …) call the socket's ``_blocking``: here the first pass runs, and if it finds nothing the client
parks (:class:`_FakeredisWait`): a database change callback asks the loop to re-run the check after the
command that changed it, the loop ends it at its deadline, CLIENT UNBLOCK is seen on the next check — no
thread waits on fakeredis's condition (the design of fakeredis's own asyncio socket, on the event loop).
"""

from __future__ import annotations

import functools
import time
from time import perf_counter
from time import time as _wall
from typing import Any, Callable, Dict, List, Optional, Tuple
from weakref import WeakKeyDictionary

import redis

from ..blocking import BLOCKED
from ..clock import SystemClock
from ..commands.xadd_xtrim import xadd as _XADD
from ..errors import ReplyError
from ..reply import ErrorReply, RepeatedKeyMap, Status, VerbatimText
from ..stream import Stream
from . import auth, fastpath, scripting
from .access import stream_events_sent
from .backend import error
from .compat import NoResponse, SimpleError, SimpleString, SyncConnectionBase
from .overrides import override
from .socket import StreamsSocketMixin, attach


class _TcpSocketMixin(StreamsSocketMixin):
    """In front of the streams socket class of a TCP client: replies to the wire, no fakeredis parser."""

    _sf_wire: Any = None
    _sf_wait: Any = None  # a parked fakeredis blocking command (_FakeredisWait)
    _sf_resume = False  # that command was answered: the loop may run the requests behind it

    def _process_command(self, fields: Any) -> None:
        if bytes(fields[0]).lower() == b"quit":  # fakeredis has no QUIT: +OK, then hang up
            wire = self._sf_wire
            wire.put(wire.reply(Status(b"OK"), self._sf_session.protocol))
            wire.close_after_reply = True
            return
        super()._process_command(fields)  # type: ignore[misc]

    def _decode_result(self, result: Any) -> Any:  # called on each reply, outside the server lock
        self._sf_note_reply(result)  # INFO's rejected-call count (socket mixin)
        if isinstance(result, NoResponse):
            return result
        return self._sf_wire.reply(_tcp_value(result), self._sf_session.protocol)

    def _decode_error(self, error: Any) -> ErrorReply:  # the direct path's error replies (fastpath._xadd_run)
        return ErrorReply(error.value)

    def put_response(self, msg: Any) -> None:  # replies (wrapped above) and pushes, from any thread
        self._sf_wire.put(msg)

    def kill(self) -> None:  # CLIENT KILL (fakeredis >= 2.35): hang up once the pending output is written
        super().kill()  # type: ignore[misc]
        self._sf_wire.kill()

    def pause(self) -> None:  # a blocked command: the loop runs no request of this client until it is answered
        self._paused = True

    def resume(self) -> None:  # no fakeredis parser to feed: the loop goes on with the buffered requests
        self._paused = False

    def _blocking(self, timeout: Optional[float], func: Callable[[bool], Any], shape: Any = None) -> Any:
        """fakeredis's blocking commands: the first pass now; if it finds nothing, park (see module doc)."""
        ret = func(True)
        if ret is not None or self._in_transaction or self._sf_session.from_script:  # type: ignore[attr-defined]
            return ret if shape is None else shape(ret)
        wait = _FakeredisWait(self, func, shape)
        self._sf_wait = wait
        self._db.add_change_callback(wait.callback)  # type: ignore[attr-defined]
        self._blocked = True
        self.pause()
        self._sf_wire.park(wait, timeout)
        return NoResponse()


class _FakeredisWait:
    """A fakeredis blocking command parked on the event loop: re-checked on wake-ups, ended by its deadline,
    CLIENT UNBLOCK or the client's close. Its methods run in the loop thread; ``callback`` in any (lock held)."""

    __slots__ = ("sock", "func", "shape", "db", "lock", "callback", "done")

    def __init__(self, sock: Any, func: Callable[[bool], Any], shape: Any) -> None:
        self.sock = sock
        self.func = func
        self.shape = shape
        self.db = sock._db
        self.lock = sock._server.lock
        self.callback = sock._sf_wire.wake_waiter
        self.done = False

    def recheck(self) -> None:
        """Re-run the command's check (a database it waits on changed, or CLIENT UNBLOCK)."""
        sock = self.sock
        with self.lock:
            if self.done:
                return
            if sock._unblock_reason is not None:
                try:
                    sock._take_unblock_reason()
                    result = self._empty()
                except SimpleError as exc:
                    result = exc
            else:
                ret = self.func(False)
                if ret is None:
                    return
                result = ret if self.shape is None else self.shape(ret)
            self.end()
        self._answer(result)

    def expire(self) -> None:
        """The deadline passed: the command's empty reply."""
        with self.lock:
            if self.done:
                return
            result = self._empty()
            self.end()
        self._answer(result)

    def end(self) -> None:
        """Stop waiting (lock held). Idempotent."""
        if self.done:
            return
        self.done = True
        self.db._change_callbacks.discard(self.callback)
        sock = self.sock
        sock._blocked = False
        sock._unblock_reason = None
        sock._sf_wait = None

    def _empty(self) -> Any:
        return None if self.shape is None else self.shape(None)

    def _answer(self, result: Any) -> None:
        sock = self.sock
        sock._sf_resume = True
        sock.put_response(sock._decode_result(result))


def _tcp_value(value: Any) -> Any:
    """fakeredis reply values → the wire's: SimpleString → Status, SimpleError → ErrorReply (recursively)."""
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


class _Marker:
    """A name table entry that is not an engine spec (``handler`` None, as a spec without a handler)."""

    __slots__ = ("name",)
    handler = None

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_CONTAINER = _Marker("_CONTAINER")
#: PING outside MULTI/pubsub/CLIENT REPLY (the direct path's conditions): ``+PONG`` or its argument, no dispatch
_PING = _Marker("_PING")
_NAME_CACHE_MAX = 4096
#: argument counts of a plain XADD the request parser's run scan takes (``XADD key * f v`` with 1 to 3 pairs)
_PLAIN_XADD_COUNTS = frozenset((5, 7, 9))
_NO_STARTS: List[int] = []  # (read only)


#: one client's plain XADDs on one key taken from its input (:meth:`TcpClient.take_plain_xadds`), waiting for
#: :func:`run_plain_xadds`: ``(client, argv, batch, starts, keyspace, stream, wire)`` — ``argv`` the first request,
#: ``batch`` each request's fields (fresh lists, kept by the stream), ``starts`` where each request after the first
#: starts in the client's parser (to put the undone ones back), ``keyspace`` / ``stream`` the client's database and
#: the stream at the key when taken (read again under the lock), ``wire`` the client's connection
PlainXaddRun = Tuple[Any, List[bytes], List[List[bytes]], List[int], Any, Stream, Any]


def run_plain_xadds(runs: List[PlainXaddRun]) -> List[Tuple[Any, Any]]:
    """Append and answer taken runs of plain XADDs (one client's each, in the order they were taken: the order the
    server would run them in) under one server lock; returns what is left to the general path, in order:
    ``(wire, argv)`` for a run none of whose requests was done (``argv``, its first request, is to be run; the
    others are back in its parser) or ``(wire, None)`` for the run whose next request (back in its parser) the
    engine refused — and every run after the first of those. Loop thread.

    The same conditions and effects as :func:`fastpath._xadd_run` (which the other XADDs take), without its
    batch triples: read again under the lock, nobody blocked anywhere and no stream keyspace event subscribed
    (else nothing is done), each run's key the same stream without TTL in its client's database as when it was
    taken (else that run and those after it are left); per command its own clock read, ID, entry and reply, an
    error reply in place; once per group of consecutive runs on one stream (nobody can look before the lock is
    released): WATCH dirtying and fakeredis's wake-ups (``Keyspace.changed``), the key's access stamp (OBJECT
    IDLETIME / FREQ, one touch per command), INFO commandstats (the group's time shared). An XADD the engine
    refuses (ID space exhausted, entry too large: nothing changed) ends the work: it and what follows go to the
    general path, which answers its error. CLIENT LIST's ``cmd`` and Valkey's ``tot-cmds`` follow every command
    of a run. O(fields) per command: a group is one engine call (``Stream.add_next_run``), each run's replies
    one buffer.
    """
    first = runs[0][0]
    server, lock, fake = first.server, first._lock, first._fake
    replies: List[List[Any]] = []  # per run done (in part): its replies
    entered = 0
    stop = len(runs)  # the first run left (in part) to the general path
    stop_at = 0  # its first request left
    try:
        for run in runs:
            if not run[0].session.enter():
                stop = entered
                break
            entered += 1
        lock.acquire()
        try:
            if stop and not server.blocking.has_waiters() and not stream_events_sent(first.sock):
                now = time.time()  # = fakeredis's per-command db.time
                for db in fake.dbs.values():
                    db.time = now
                clock = server.clock
                system = type(clock) is SystemClock
                i = 0
                while i < stop:
                    _, argv, batch, _, keyspace, stream, _ = runs[i]
                    key, ident = argv[1], keyspace.ident
                    if keyspace.get_lasting(key) is not stream:
                        stop = i
                        break
                    j = i + 1  # the group: the runs on this stream right after it
                    while j < stop and runs[j][5] is stream and runs[j][1][1] == key and runs[j][4].ident is ident:
                        j += 1
                    if j > i + 1:
                        batch = [fields for run in runs[i:j] for fields in run[2]]
                    if system:  # its now_ms, from a time read per command (the group's first: now)
                        nows = [int(now * 1000)]
                        if len(batch) > 1:
                            nows += [int(_wall() * 1000) for _ in range(len(batch) - 1)]
                        now = _wall()
                    else:
                        nows = [clock.now_ms() for _ in batch]
                    started = perf_counter()
                    ids: List[Any]
                    failure: Optional[Exception]
                    try:
                        ids, failure = stream.add_next_run(batch, nows, stream.node_limits())
                    except Exception as exc:  # an engine bug: answered as server.execute answers it; the rest left
                        ids = [ErrorReply(fastpath.xadd_failed(server, error(server._internal_error(
                            server.router.specs["xadd"], list(argv[1:]), exc), server.profile)).value)]
                        failure = exc
                    done = len(ids)
                    if done:
                        # an entry was added unless the reply is an error (an internal error is the only reply then)
                        fastpath.xadd_run_done(server, keyspace, key, done, type(ids[0]) is bytes, started,
                                               nows[done - 1])
                    if j == i + 1 and done == len(batch):  # (a run alone, all done)
                        replies.append(ids)
                    elif done == len(batch) == j - i:  # (unpipelined clients: one XADD each, all done)
                        replies += [[one] for one in ids]
                    else:
                        at = 0
                        for k in range(i, j):
                            size = len(runs[k][2])
                            if at + size > done:  # refused here: this request on goes to the general path
                                if at < done:
                                    replies.append(ids[at:])
                                stop, stop_at = k, done - at
                                break
                            replies.append(ids[at:at + size])
                            at += size
                        else:
                            if failure is not None:  # an engine bug on the group's only entry: the rest left too
                                stop = j
                    if failure is not None:
                        break
                    i = j
            else:
                stop = 0
        finally:
            lock.release()
    finally:
        for run in runs[:entered]:
            run[0].session.leave()
    for run, ids in zip(runs, replies):
        wire = run[6]
        count = len(ids)
        argv = run[1]
        wire.command = argv if count == 1 else [argv[0], argv[1], b"*", *run[2][count - 1]]
        wire.commands += count
        first_id = ids[0]
        if type(first_id) is not bytes:  # an internal error (the only reply of its run)
            wire.put_all(ids, wire.protocol)
        elif count == 1:  # (an unpipelined XADD: its ID's bulk; RESP2 and RESP3 alike)
            wire.put_encoded(b"$%d\r\n%s\r\n" % (len(first_id), first_id))
        else:
            wire.put_bulks(ids, wire.protocol)
    left: List[Tuple[Any, Any]] = []
    for k in range(stop, len(runs)):
        _, argv, _, starts, _, _, wire = runs[k]
        at = stop_at if k == stop else 0
        parser = wire.parser
        if at:  # the request refused, back in the parser with those after it
            parser.rewind(starts[at - 1])
        elif starts:
            parser.rewind(starts[0])
        left.append((wire, None if at else argv))
    return left


class TcpClient:
    """The fakeredis socket of one TCP client of ``server``, replying through ``wire`` (a ``tcp.Connection``
    with ``peer``/``local`` addresses and ``fd``). All methods run in the event loop's thread."""

    __slots__ = ("sock", "session", "server", "_lock", "_fake", "_names", "_released", "_xadd_head")

    #: the loop's batch runner (:meth:`defer_plain_xadds` takes into its batch)
    run_plain_xadds = staticmethod(run_plain_xadds)

    def __init__(self, server: Any, wire: Any) -> None:
        info = {"addr": wire.peer, "laddr": wire.local, "fd": wire.fd}
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
        self.session = fake_sock._sf_session
        self.server = server
        self._fake = server.backend.fake
        self._lock = server.backend.lock
        self._names = _names_of(server.router)
        self._released = False
        #: ``(head, name, key)`` of this client's last plain XADD run: its requests' bytes up to the ``*``
        #: (:meth:`defer_repeated_xadds`)
        self._xadd_head: Optional[Tuple[bytes, bytes, bytes]] = None

    # ------------------------------------------------------------------------------ running
    def run(self, argv: Any, parser: Any = None) -> None:
        """Run one request (replies go to the wire); an XADD may take the XADDs on its key right behind it in
        ``parser`` along (:meth:`_plain_xadds`, :meth:`_xadd_run`). O(1) around each command."""
        spec = self._names.get(argv[0])
        # `XADD key * field value …` (is_plain_xadd), the hottest command: its own path, tried first
        if (spec is not None and len(argv) > 4 and len(argv) & 1 and argv[2] == b"*" and spec.handler is _XADD
                and self._plain_xadds(argv, spec, parser)):
            return
        if not self._direct(argv, parser, spec):
            self.sock._process_command(argv)

    def _plain_xadds(self, argv: Any, spec: Any, parser: Any) -> bool:
        """``XADD key * field value …`` on an existing stream without TTL, and the plain XADDs on the same key
        right behind it in ``parser`` (a pipeline), appended and answered now (:meth:`take_plain_xadds` then
        :func:`run_plain_xadds`). False: not taken (nothing consumed, changed or counted; the general path runs
        it); True with requests put back in ``parser``: the first of them is one the engine refused (the
        general path answers its error)."""
        runs: List[PlainXaddRun] = []
        if not self.take_plain_xadds(argv, spec, parser, runs):
            return False
        undone = run_plain_xadds(runs)
        if undone and undone[0][1] is not None:  # none done: the general path runs it, the rest behind it
            return False
        self.sock._sf_wire.commands -= 1  # the connection counts the request it handed over
        return True

    def defer_plain_xadds(self, argv: Any, parser: Any, runs: List[PlainXaddRun]) -> bool:
        """The loop's pass batch: if ``argv`` is a plain XADD the direct path may take, take it and the plain
        XADDs on its key behind it in ``parser`` into ``runs`` (answered by :func:`run_plain_xadds`, before
        anything else of this pass is run or answered). False: nothing taken."""
        argc = len(argv)
        if argc < 5 or not argc & 1 or argv[2] != b"*":
            return False
        spec = self._names.get(argv[0])
        return spec is not None and spec.handler is _XADD and self.take_plain_xadds(argv, spec, parser, runs)

    def take_plain_xadds(self, argv: Any, spec: Any, parser: Any, runs: List[PlainXaddRun]) -> bool:
        """Take ``XADD key * field value …`` and the plain XADDs on the same key right behind it in ``parser`` (the
        same name, key and ``*``, byte for byte: one scan, ``RequestParser.take_run``) into ``runs``, if the direct
        path's conditions hold (:meth:`_usable`) and, read without the lock (:func:`run_plain_xadds` reads them
        again under it), nobody is blocked and ``key`` holds a stream without TTL. False: nothing taken.
        O(bytes of the run)."""
        if not self._usable() or self.server.blocking.has_waiters():
            return False
        key = argv[1]
        keyspace = self.session.keyspace
        stream = keyspace.get_lasting(key)
        if not isinstance(stream, Stream):
            return False
        name = argv[0]
        cached = self._xadd_head
        if cached is None or cached[1] != name or cached[2] != key:
            cached = self._xadd_head = (b"$%d\r\n%s\r\n$%d\r\n%s\r\n$1\r\n*\r\n" % (len(name), name, len(key), key),
                                        name, key)
        if parser is not None and parser.has_input:
            tails, starts = parser.take_run(cached[0], 3, _PLAIN_XADD_COUNTS)
            runs.append((self, argv, [argv[3:], *tails], starts, keyspace, stream, self.sock._sf_wire))
        else:
            runs.append((self, argv, [argv[3:]], _NO_STARTS, keyspace, stream, self.sock._sf_wire))
        return True

    def defer_repeated_xadds(self, parser: Any, runs: List[PlainXaddRun]) -> bool:
        """:meth:`defer_plain_xadds` for requests that begin as this client's last plain XADD run did (the same name
        and key, byte for byte: a producer sends the same command again and again), read from ``parser`` in one
        scan without the general read of the first one (``RequestParser.take_run``). False: nothing taken (not
        such a request, or the conditions of :meth:`take_plain_xadds` do not hold). O(bytes of the run)."""
        head, name, key = self._xadd_head  # type: ignore[misc]  # (the caller checked it is set)
        tails, starts = parser.take_run(head, 3, _PLAIN_XADD_COUNTS)
        if not tails:
            return False
        keyspace = self.session.keyspace
        stream = keyspace.get_lasting(key)
        if not self._usable() or self.server.blocking.has_waiters() or not isinstance(stream, Stream):
            parser.rewind(starts[0])
            return False
        runs.append((self, [name, key, b"*", *tails[0]], tails, starts[1:], keyspace, stream, self.sock._sf_wire))
        return True

    def _xadd_run(self, argv: Any, spec: Any, parser: Any) -> bool:
        """XADDs on one key back to back in the client's input (a pipeline): run together by
        :func:`fastpath._xadd_run` (one lock, one session entry, per command its own clock read, ID, entry,
        trim and reply; taken only when nothing can tell — no blocked client, no stream keyspace event, a
        stream without TTL at the key). A single XADD goes this way too (no command context to build). False:
        not taken, nothing consumed or run."""
        server = self.server
        if server.blocking.has_waiters() or len(argv) < 3:
            return False
        key = argv[1]
        names = self._names
        # fastpath's batch triples (name, args, argv), args read only; every name is the first's object (the
        # followers' names are checked to be XADD's): fastpath looks the spec up once per run, not per command
        name = argv[0]
        batch = [(name, argv[1:], argv)]
        table = {name: (spec, None, b"", 0, 0)}  # name -> fastpath's table entry (only the spec is read)
        argc = len(argv)
        while parser.has_input:
            taken = _next_request(parser, lambda following: (
                len(following) >= 3 and following[1] == key
                and (len(following) == argc or spec.arity_ok(len(following))) and names.get(following[0]) is spec))
            if taken is None:
                break
            following = taken[1]
            batch.append((name, following[1:], following))
        session, sock = self.session, self.sock
        out: list = []
        done = 0
        if session.enter():
            try:
                fake = self._fake
                self._lock.acquire()
                try:
                    now = time.time()
                    for db in fake.dbs.values():
                        db.time = now
                    done = fastpath._xadd_run(sock, session, batch, 0, len(batch), out, table)
                finally:
                    self._lock.release()
            finally:
                session.leave()
        if not done and len(batch) == 1:
            return False
        wire = sock._sf_wire
        wire.commands += len(batch) - 1  # the connection counts the request it handed over (Valkey's tot-cmds)
        if out:
            protocol = wire.protocol  # the connection's RESP version: only dispatch-path commands (HELLO, RESET) change it
            wire.command = batch[done - 1][2]
            wire.put_all(out, protocol)
        for _, _, typed in batch[done:]:  # not taken (another thread parked a reader meanwhile): one by one
            wire.command = typed
            self.run(typed)
        return True

    def _direct(self, argv: Any, parser: Any = None, spec: Any = None) -> bool:
        """A stream command (or PING) on the direct path if nothing could tell the difference; False: not run.
        ``spec``: the name table's entry for ``argv[0]`` if the caller looked it up."""
        names = self._names
        if spec is None:
            spec = names.get(argv[0])
        if spec is None:
            if argv[0] in names or len(names) >= _NAME_CACHE_MAX:
                return False
            spec = names[argv[0]] = _lookup(self.server.router, bytes(argv[0]).lower())
            if spec is None:
                return False
        if spec is _PING:
            if len(argv) > 2 or not self._usable():
                return False
            started = time.perf_counter()
            wire = self.sock._sf_wire
            if len(argv) == 2:
                wire.put_own(argv[1], wire.protocol)
            else:
                wire.put_encoded(b"+PONG\r\n")  # the same in RESP2 and RESP3
            self.server.stats.called("ping", (time.perf_counter() - started) * 1e6)  # INFO commandstats
            return True
        start = 1
        if spec is _CONTAINER:
            if len(argv) < 2:
                return False
            spec = self.server.router.specs.get(
                f"{bytes(argv[0]).lower().decode('latin-1')}|{bytes(argv[1]).lower().decode('latin-1')}")
            if spec is None or spec.handler is None:
                return False
            start = 2
        if not spec.arity_ok(len(argv)) or not self._usable():
            return False
        if spec.handler is _XADD and parser is not None and self._xadd_run(argv, spec, parser):
            return True
        session, sock = self.session, self.sock
        if not session.enter():
            return False
        server = self.server
        try:
            fake = self._fake
            lock = self._lock
            lock.acquire()
            try:
                now = time.time()  # = fakeredis's per-command db.time
                for db in fake.dbs.values():
                    db.time = now
                started = time.perf_counter()
                try:
                    value = server.execute(session, spec, list(argv[start:]), argv)
                except ReplyError as exc:
                    value = ErrorReply(exc.render(server.profile.errors))
                except SimpleError as exc:
                    value = ErrorReply(exc.value)
                fastpath._count(server, spec, started,  # INFO commandstats / errorstats, as the dispatch path
                                value.value.decode("utf-8", "replace") if type(value) is ErrorReply else None)
            finally:
                lock.release()
        finally:
            session.leave()
        if value is BLOCKED:
            sock.pause()
            return True
        wire = sock._sf_wire
        wire.put_own(value, wire.protocol)
        return True

    def _usable(self) -> bool:
        """The direct path's conditions (those of :mod:`.fastpath`: no faults, MULTI, pubsub, CLIENT REPLY state,
        paused parser, pending cleanup, CLIENT PAUSE; an unrestricted, authenticated ``default`` user)."""
        sock, session, server, fake = self.sock, self.session, self.server, self._fake
        if server.faults is not None or not server.fast_path or not fastpath.ENABLED or not session.alive \
                or server.cluster_node is not None:  # a cluster node's slot check: the dispatch path over TCP
            return False
        if (session.depth or session.resume_pending or sock._paused or sock._killed or sock._transaction is not None
                or sock._in_transaction or sock._pubsub or sock._reply_off or sock._reply_skip
                or sock._reply_skip_next or not fake.connected or fake.closed_sockets):
            return False
        if getattr(fake, "pause_until", 0.0) and fake.pause_until > time.time():
            return False
        if getattr(fake, "_sf_script_running", False):  # a script runs: the dispatch path answers BUSY
            return False
        return fastpath._acl_ok(sock, fake)

    def answer_busy(self, argv: Any) -> bool:
        """While another client's script is busy on the loop's thread: reply what the busy server answers
        ``argv`` with now (BUSY, SCRIPT KILL's reply); False if it answers nothing now (the request runs once the
        script has ended). O(1)."""
        if not getattr(self._fake, "_sf_script_running", False):
            return False
        answer = scripting.busy_answer(self.sock, argv, other_client=True)
        if answer is None:
            return False
        sock = self.sock
        sock._sf_wire.command = argv
        sock.put_response(sock._decode_result(answer))
        return True

    # -------------------------------------------------------------------------------- state
    @property
    def paused(self) -> bool:
        """A command of this client is blocked: its later requests wait."""
        return bool(self.sock._paused)

    @property
    def resume_pending(self) -> bool:
        """The blocked command was answered: the loop should :meth:`resume` the client."""
        return self.sock._sf_resume or self.session.resume_pending

    def resume(self) -> bool:
        """Unpause after a blocked command's reply; True if the client may run its buffered requests."""
        sock = self.sock
        if sock._sf_resume:
            sock._sf_resume = False
            sock._paused = False
        self.session.resume_if_pending()
        return not sock._paused

    @property
    def must_authenticate(self) -> bool:
        """A password is required and this client has not authenticated yet (the parser's smaller limits)."""
        return not auth.passed(self.sock, self._fake)

    @property
    def gone(self) -> bool:
        """Killed (CLIENT KILL) or the server shut down: the connection is to be closed."""
        sock = self.sock
        return bool(sock._killed) or sock._server is None or not sock._server.connected

    def release(self) -> None:
        """The connection closed: end a parked command, close the socket (watches, subscriptions and the
        session go). Idempotent."""
        if self._released:
            return
        self._released = True
        sock = self.sock
        wait = sock._sf_wait
        if wait is not None:
            with self._lock:
                wait.end()
        if sock._server is not None:
            sock.close()


def _next_request(parser: Any, accepts: Callable[[Any], Any]) -> Optional[Tuple[int, Any]]:
    """``(mark, argv)`` of the next complete request in ``parser`` if ``accepts(argv)`` (``mark`` un-reads it), else
    None with nothing consumed: no complete request yet, a protocol error (raised again when the connection asks
    for the next request), or one ``accepts`` refuses. O(size of the request)."""
    mark = parser.mark()
    if mark is None:
        return None
    try:
        following = parser.next()
    except Exception:  # the parser keeps the error
        return None
    if following is None:  # incomplete: the parser keeps what it read of it
        return None
    if not accepts(following):
        parser.rewind(mark)
        return None
    return mark, following


def _lookup(router: Any, name: bytes) -> Any:
    """The engine spec of a top-level stream command name (lower case), :data:`_CONTAINER`, :data:`_PING`
    or None."""
    if name == b"ping":
        return _PING
    text = name.decode("latin-1")
    if text in router.containers:
        return _CONTAINER
    spec = router.specs.get(text)
    return spec if spec is not None and spec.handler is not None and "|" not in text else None


_NAME_TABLES: WeakKeyDictionary[Any, Dict[Any, Any]] = WeakKeyDictionary()


def _names_of(router: Any) -> Dict[Any, Any]:
    """Per router: typed command names → spec (:data:`_CONTAINER`, None for other commands), filled on use."""
    table = _NAME_TABLES.get(router)
    if table is None:
        table = _NAME_TABLES[router] = {}
    return table


# ------------------------------------------------------------------------------- CLIENT LIST / INFO
@override("client list")
def _client_list(sock: Any, name: str, base: Callable[[], Any]) -> Any:
    return functools.partial(client_list, sock), base()[1]


@override("client info")
def _client_info(sock: Any, name: str, base: Callable[[], Any]) -> Any:
    return functools.partial(client_info, sock), base()[1]


def client_info(sock: Any) -> bytes:
    """CLIENT INFO: this connection's line, with the server's fields (:func:`client_line`)."""
    return VerbatimText(client_line(sock, time.time()) + b"\n")


_CLIENT_TYPES = frozenset((b"normal", b"master", b"replica", b"slave", b"pubsub"))


def client_list(sock: Any, *args: bytes) -> bytes:
    """CLIENT LIST [TYPE normal|master|replica|pubsub | ID id …]: one line per connection of the server (of this
    node, in a replication group), in connection order, each with the server's fields; the server's errors for a bad type, id or syntax."""
    ids: Optional[set] = None
    kind: Optional[bytes] = None
    if len(args) == 2 and bytes(args[0]).lower() == b"type":
        kind = bytes(args[1]).lower()
        if kind not in _CLIENT_TYPES:
            raise SimpleError(f"ERR Unknown client type '{bytes(args[1]).decode('utf-8', 'replace')}'")
    elif len(args) > 1 and bytes(args[0]).lower() == b"id":
        ids = set()
        for raw in args[1:]:
            text = bytes(raw)
            if not (text.isdigit() or (text[:1] == b"-" and text[1:].isdigit())):
                raise SimpleError("ERR Invalid client ID")
            ids.add(int(text))
    elif args:
        raise SimpleError("ERR syntax error")
    now = time.time()
    lines = []
    node = _node_of(sock)
    for other in list(sock._server.sockets):
        if node is not None and _node_of(other) not in (node, None):  # a replica shares its master's dataset only
            continue
        if ids is not None and int(other._client_info.get("id", 0)) not in ids:
            continue
        if kind is not None and kind != (b"pubsub" if getattr(other, "_pubsub", 0) else b"normal"):
            continue
        lines.append(client_line(other, now) + b"\n")
    return VerbatimText(b"".join(lines))


def _node_of(sock: Any) -> Any:
    """The server a connection is a client of (the nodes of a replication group share one fakeredis server)."""
    session = getattr(sock, "_sf_session", None)
    return session.server if session is not None else None


def _subscriptions(sock: Any, table: Any) -> int:
    return sum(1 for subscribers in (table or {}).values() if sock in subscribers)


def client_line(sock: Any, now: float) -> bytes:
    """One ``CLIENT LIST`` line as the profile's server writes it: ``id addr laddr fd name age idle flags db sub
    psub ssub multi qbuf qbuf-free argv-mem multi-mem rbs rbp obl oll omem tot-mem events cmd user redir resp``
    (``watch`` from 7.4; ``lib-name lib-ver`` from 7.2; on Valkey also ``capa``, ``watch`` and
    ``tot-net-in tot-net-out tot-cmds``). Addresses, fd, age, idle, flags, db, subscriptions, MULTI,
    the last command, user and protocol are this connection's; the memory fields are this fake's estimates.
    In-process connections (no socket) show fakeredis's addresses and ``fd=-1``."""
    info = sock._client_info
    wire = getattr(sock, "_sf_wire", None)
    server = sock._server
    flags = ""
    if getattr(sock, "_pubsub", 0):
        flags += "P"
    transaction = getattr(sock, "_transaction", None)
    if transaction is None and getattr(sock, "_in_transaction", False):  # EXEC running: still MULTI, its count
        transaction = wire.shaper.queued if wire is not None else []
    if transaction is not None:
        flags += "x"
    if getattr(sock, "_blocked", False):
        flags += "b"
    if transaction is not None and getattr(sock, "_watch_notified", False):
        flags += "d"
    if wire is not None and wire.close_after_reply:
        flags += "c"
    if wire is not None and wire.unix:
        flags += "U"
    if getattr(sock, "_no_evict", False):
        flags += "e"
    profile = sock._sf_session.server.profile if getattr(sock, "_sf_session", None) is not None else None
    valkey = profile is not None and profile.server == "valkey"
    version = profile.version_tuple if profile is not None else (7, 0)
    newer = valkey or version >= (7, 2)  # lib-name / lib-ver, the T flag
    watch_field = valkey or version >= (7, 4)
    if newer and getattr(sock, "_no_touch", False):
        flags += "T"
    created = float(info.get("-created", now))
    if wire is not None:
        age, idle = int(time.monotonic() - wire.created), int(time.monotonic() - wire.last_active)
        addr, laddr, fd = wire.peer, wire.local, wire.fd
        command = wire.command
        qbuf = wire.parser.buffered
        events = "rw" if wire.writing else "r"
    else:
        age = idle = max(0, int(now - created))
        addr, laddr, fd = info.get("addr", "127.0.0.1:0"), info.get("laddr", "127.0.0.1:0"), -1
        command, qbuf, events = getattr(sock, "_sf_fields", None) or [], 0, "r"
        if getattr(sock, "_sf_name", None) is None:  # its last command was unknown: the server's lastcmd is NULL
            command = []
    if command:
        cmd = bytes(command[0]).lower().decode("utf-8", "replace")
        if len(command) > 1 and cmd in _CONTAINER_COMMANDS:
            cmd += "|" + bytes(command[1]).lower().decode("utf-8", "replace")
    else:
        cmd = "NULL"
    fields = [
        ("id", info.get("id", 0)), ("addr", addr), ("laddr", laddr), ("fd", fd), ("name", info.get("name", "")),
        ("age", age), ("idle", idle), ("flags", flags or "N"), *([("capa", "")] if valkey else []),
        ("db", getattr(sock, "_db_num", 0)),
        ("sub", _subscriptions(sock, getattr(server, "subscribers", None))),
        ("psub", _subscriptions(sock, getattr(server, "psubscribers", None))),
        ("ssub", _subscriptions(sock, getattr(server, "ssubscribers", None))),
        ("multi", len(transaction) if transaction is not None else 0 if valkey and getattr(sock, "_watches", None)
         else -1),  # Valkey keeps its WATCH state in the MULTI state: 0 once a key is watched
        *([("watch", len(getattr(sock, "_watches", ())))] if watch_field else []), ("qbuf", qbuf),
        ("qbuf-free", max(0, 20474 - qbuf) if qbuf < 20474 else 0),
        ("argv-mem", sum(len(a) for a in command) if command else 0), ("multi-mem", 0), ("rbs", 16384),
        ("rbp", 16384), ("obl", 0), ("oll", 0), ("omem", 0), ("tot-mem", 37658 + qbuf), ("events", events),
        ("cmd", cmd), ("user", info.get("user", "default")), ("redir", -1), ("resp", info.get("resp", 2)),
    ]
    if newer:
        fields += [("lib-name", info.get("lib-name", "")), ("lib-ver", info.get("lib-ver", ""))]
    if valkey:
        net = (wire.bytes_in, wire.bytes_out, wire.commands) if wire is not None else (0, 0, 0)
        fields += [("tot-net-in", net[0]), ("tot-net-out", net[1]), ("tot-cmds", net[2])]
    return " ".join(f"{k}={v}" for k, v in fields).encode("utf-8", "replace")


#: commands whose ``cmd`` field names the subcommand too (``client|info``)
_CONTAINER_COMMANDS = frozenset(
    "acl client cluster command config debug function latency memory module object pubsub script slowlog "
    "xgroup xinfo".split()
)
