"""Direct path for stream commands: no RESP packing/parsing, no fakeredis dispatch.

A stream command sent by a :class:`~fake_streams.connection.FakeStreamsConnection` (sync) or
``FakeStreamsAsyncConnection`` normally travels ``redis-py pack → RESP bytes → fakeredis parser →
_process_command → _name_to_func → Session.run_unit → Session.call → _decode_result → reply queue →
read_response``. The hooks' ``send_command`` runs it instead as ``encode args (:func:`_encode`) → arity →
server lock → FakeStreamsServer.execute`` (:func:`execute`: a batch of one for :func:`_run`, which
pipelines use too; ``execute`` opens and finishes the execution unit itself) and keeps the reply on a
per-socket deque that :func:`take` hands to ``read_response``. ``COMMAND GETKEYS`` of a
stream command (redis-py's cluster clients ask it before every XREAD / XREADGROUP) is answered directly too
(:func:`getkeys`). Non-transactional pipelines:
:func:`pack_commands` leaves stream commands unpacked and :func:`send_deferred` runs them in order,
sending every other command as RESP (hooks: :class:`SyncFastPath`, :class:`AsyncFastPath`).

On a cluster node each command passes the node's slot check first, as on the dispatch path
(:func:`.cluster.direct_refusal`: ``MOVED`` / ``ASK`` / ``CROSSSLOT`` / ``TRYAGAIN`` / ``CLUSTERDOWN`` answered
instead, counted as a rejected call).

What stays identical (the dispatch path's own code runs): the :class:`~fake_streams.commands.base.Context`
built by ``FakeStreamsServer.execute``, the execution unit (time snapshot, blocked clients served at
its end), WATCH dirtying, keyspace notifications, internal-error recording, error texts per profile;
the error reply is the ``ResponseError`` fakeredis's ``_decode_error`` builds (redis-py's parser
``parse_error``), raised by ``read_response``; decoding uses the connection's encoder.

Falls back to the dispatch path (returns False, nothing done) whenever it could behave differently:
fast path disabled (``server.fast_path = False``, env ``FAKE_STREAMS_FAST_PATH=0``), a cluster node's client
after ``ASKING``, not connected /
killed / server down / CLIENT PAUSE in force, a fault hook set that is not ``idle``, ACL user other than an unrestricted
``default``, MULTI queueing or EXEC running, pubsub, ``CLIENT REPLY OFF/SKIP``, the parser paused (a parked blocking read) or
replies already queued on the socket (never reorder), closed sockets awaiting cleanup, a health check
due, an argument type the packer would treat specially (anything but exact bytes/str/int/float), a
name not in the table (unknown case mix, spaces in a bytes name), a wrong arity (the dispatch path
renders the error). A command that blocks (BlockRequest) parks exactly as on the dispatch path: its
reply arrives on the socket's queue, which ``read_response`` reads once the deque is empty.

Contract: handlers return fresh lists (reply.py builds them so); the fast path hands them to redis-py
without the copy fakeredis's ``_decode_result`` makes.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from time import perf_counter as _perf_counter
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple
from weakref import WeakKeyDictionary

import redis.exceptions
from redis.connection import HiredisRespSerializer, PythonRespSerializer

from ..blocking import BLOCKED
from ..clock import SystemClock
from ..commands.xadd_xtrim import MAXLEN_SPELLINGS, append_now, append_parsed, append_trimmed_now, parse_xadd_args
from ..commands.xadd_xtrim import xadd as _XADD
from ..errors import ReplyError
from ..reply import Status
from ..stream import Stream
from . import auth, cluster, handshake
from .access import stream_events_sent
from .backend import error
from .compat import SimpleError
from .sessions import SERVER_CLOSED, AsyncSession, SyncSession

#: global switch (tests/benchmarks); per server: ``server.fast_path = False``
ENABLED = os.environ.get("FAKE_STREAMS_FAST_PATH", "1") not in ("0", "false", "no", "off")

#: (spec, typed subcommand or None, typed command name, least and most arguments after the names)
_Entry = Tuple[Any, Optional[bytes], bytes, int, int]
_TABLES: WeakKeyDictionary[Any, Dict[Any, _Entry]] = WeakKeyDictionary()
#: the XADD shapes :func:`_xadd_run` appends without the option scan (0: the general parse)
_PLAIN, _TRIMMING = 1, 2
#: most plain XADDs :func:`_plain_run` appends in one engine call (a longer run is split): its fresh field lists are
#: alive together, and a young collection that finds them moves them to an older generation, whose count their
#: freeing then does not lower; so more young and full collections (each full one walks every stream of the
#: process). benchmarks/loads.py, 3 loads of 1e6 through the fixture: gen0 collections per load 1,848 one command
#: at a time, 4,596 with runs of 1,000, 2,755 of 64, 1,839 of 16 (of 8: 1,848)
_PLAIN_RUN_MAX = 16


def _table(router: Any) -> Dict[Any, _Entry]:
    """Command names as redis-py sends them (``"XADD"``, ``b"xadd"``, ``"XINFO STREAM"``) → spec. Cached per router."""
    table = _TABLES.get(router)
    if table is not None:
        return table
    table = {}
    for name, spec in router.specs.items():
        if spec.handler is None:
            continue
        base, _, sub = name.partition("|")
        for word in (name.upper(), name.lower()):
            b, _, s = word.partition("|")
            names = 2 if sub else 1  # the arity counts the command (and subcommand) name
            least = (spec.arity if spec.arity >= 0 else -spec.arity) - names
            most = spec.arity - names if spec.arity >= 0 else sys.maxsize
            entry = (spec, s.encode() if sub else None, b.encode(), least, most)
            if sub:
                table[f"{b} {s}"] = entry
            else:
                table[b] = entry
                table[b.encode()] = entry
    _TABLES[router] = table
    return table


_UTF8 = ("utf-8", "strict")


def _str_codec(conn: Any) -> Optional[Tuple[str, str]]:
    """How the connection's packer encodes a str argument (:data:`_UTF8` when that is ``str.encode()``'s
    default); None for an unknown packer (fall back)."""
    packer = type(getattr(conn, "_command_packer", None))
    if packer is HiredisRespSerializer:
        return _UTF8
    if packer is PythonRespSerializer or packer is type(None):  # redis.asyncio packs with the encoder
        encoder = conn.encoder
        codec = (encoder.encoding, encoder.encoding_errors)
        return _UTF8 if codec == _UTF8 else codec
    return None


def _acl_ok(sock: Any, fake: Any) -> bool:
    """Whether the socket's user can run every command on every key (else the dispatch path checks each).
    The verdict is kept per socket until a command goes through the dispatch path anywhere on the server
    (only such commands change users and rules: ``_fakeredis.socket._GENERATIONS``). O(1) when kept."""
    generation = fake._sf_generation  # read before the state it covers
    if sock._sf_acl_checked == generation:
        return True
    if _acl_open(sock, fake):
        sock._sf_acl_checked = generation
        return True
    return False


def _acl_open(sock: Any, fake: Any) -> bool:
    if sock._client_info.get("user") != "default" or not auth.passed(sock, fake):  # NOAUTH: the dispatch path says it
        return False
    acl = fake.acl._user_acl.get(b"default")
    if acl is None:
        return True
    if not acl.enabled:
        return False
    try:  # fakeredis >= 2.41
        return bool(acl.unrestricted())
    except AttributeError:
        return _grants_everything(acl)


def _grants_everything(acl: Any) -> bool:
    """Whether the default user's ACL can refuse nothing (fakeredis >= 2.41 asks ``unrestricted()``)."""
    unrestricted = getattr(acl, "unrestricted", None)
    if unrestricted is not None:
        return bool(unrestricted())
    commands = getattr(acl, "_commands", None)
    if not isinstance(commands, dict):
        return False
    return (bool(commands.get(b"@all")) and all(commands.values())
            and b"*" in getattr(acl, "_key_patterns", ()) and b"*" in getattr(acl, "_channel_patterns", ()))


def _health_due(conn: Any, is_async: bool) -> bool:
    """redis-py's check_health condition (sync: monotonic clock; asyncio: the loop's clock)."""
    now = asyncio.get_running_loop().time() if is_async else time.monotonic()
    return now > conn.next_health_check


def _usable(conn: Any, sock: Any, session: Any, health: bool, is_async: bool) -> bool:
    """Every condition under which the direct path behaves exactly as the dispatch path (see module doc).
    O(1); the cheapest and likeliest refusals first (this runs before every direct command)."""
    server = session.server
    faults = server.faults  # a hook that says it is idle (an unarmed Faults) answers nothing: run directly
    if (faults is not None and not getattr(faults, "idle", False)) or not server.fast_path or not session.alive \
            or session.depth:
        return False
    if session.resume_pending:
        session.resume_if_pending()  # as sendall does: commands queued behind a served blocking read run first
    fake = sock._server
    if (fake is None or not fake.connected or sock._killed or sock._paused or sock._transaction is not None
            or sock._in_transaction or sock._pubsub or sock._reply_off or sock._reply_skip
            or sock._reply_skip_next or fake.closed_sockets  # CLIENT REPLY: the socket mixin's defaults
            or getattr(fake, "_sf_script_running", False)):  # a script runs: the dispatch path answers BUSY
        return False
    if getattr(fake, "pause_until", 0.0) and fake.pause_until > time.time():  # CLIENT PAUSE: let fakeredis decide
        return False
    if health and conn.health_check_interval and _health_due(conn, is_async):
        return False
    responses = sock.responses
    if responses is None or (responses.qsize() if is_async else responses.queue):
        return False
    return _acl_ok(sock, fake)


def _encode(conn: Any, args: Tuple[Any, ...]) -> Optional[list]:
    """The arguments after the command name of a stream command the direct path can encode exactly as the
    packer would, or None (not a stream command, an argument type the packer treats itself, wrong arity).
    ``args[0]`` is then a key of :func:`_commands`' table. O(len(args))."""
    if not ENABLED or not args:
        return None
    table, codec = conn._sf_fast_setup or _setup(conn)
    name = args[0]
    entry = table.get(name) if type(name) is str or type(name) is bytes else None
    if entry is None or codec is None:
        return None
    least, most = entry[3], entry[4]
    out: list = []
    append = out.append
    utf8 = codec is _UTF8  # str.encode() without arguments: the common codec, and the cheaper call
    try:
        for arg in args[1:]:
            kind = type(arg)
            if kind is str:
                append(arg.encode() if utf8 else arg.encode(*codec))
            elif kind is bytes:
                append(arg)
            elif kind is int:
                append(b"%d" % arg)
            elif kind is float:
                append(repr(arg).encode())
            else:  # bool, memoryview, None … : the packer decides (DataError or its own encoding)
                return None
    except UnicodeError:
        return None
    if not least <= len(out) <= most:  # = spec.arity_ok(len(argv)), precomputed per table entry
        return None
    return out


def _setup(conn: Any) -> Tuple[Dict[Any, _Entry], Optional[Tuple[str, str]]]:
    """Per connection, made on first use: the server's name table and the packer's str codec (``_encode`` makes
    it, so what runs an encoded command reads ``conn._sf_fast_setup``)."""
    cached = conn._sf_fast_setup
    if cached is None:
        cached = conn._sf_fast_setup = (_table(conn.streams_server.router), _str_codec(conn))
    return cached  # type: ignore[no-any-return]


def _expand(entry: _Entry, encoded: Any) -> Tuple[Any, list, list]:
    """``(spec, args, argv)`` of a command from its table entry and encoded arguments (handlers own ``args``: a
    pipeline's tuple is copied into a list; a single command's list is its own already). O(len(encoded))."""
    spec, sub, name = entry[0], entry[1], entry[2]
    args = encoded if type(encoded) is list else list(encoded)
    return spec, args, [name, sub, *encoded] if sub is not None else [name, *encoded]


def prepare(conn: Any, args: Tuple[Any, ...]) -> Optional[Tuple[Any, list, list]]:
    """``(spec, args, argv)`` for a stream command the direct path can encode exactly as the packer
    would, or None (see :func:`_encode`). O(len(args))."""
    encoded = _encode(conn, args)
    return None if encoded is None else _expand(_setup(conn)[0][args[0]], encoded)


def _session(conn: Any, health: bool) -> Any:
    """The connection's session if the direct path may run a command now (see module doc), else None."""
    sock = conn._sock
    session = getattr(sock, "_sf_session", None)
    kind = type(session)
    if (kind is not SyncSession and kind is not AsyncSession) or not _usable(conn, sock, session, health,
                                                                             kind is AsyncSession):
        return None
    return session


def execute(conn: Any, command: Tuple[Any, Any, Any], health: bool = True) -> bool:
    """Run one command directly if the connection's state allows (see module doc); False = not run, send it
    through the dispatch path. ``command`` is ``(name, encoded args, args)`` as :func:`pack_commands` keeps it
    (a batch of one for :func:`_run`, the path of a pipeline's commands too). ``health``: a due health check
    forces the dispatch path.

    Exceptions other than error replies propagate (the caller disconnects, as redis-py does when
    ``sendall`` raises).
    """
    session = _session(conn, health)
    if session is None:
        return False
    table = conn._sf_fast_setup[0]
    spec = table[command[0]][0]
    if spec.handler is _XADD and _xadd_one(conn._sock, session, spec, command[1]):
        return True
    return _run(conn._sock, session, (command,), 0, table) > 0


_GETKEYS = frozenset({"COMMAND GETKEYS", "command getkeys"})
#: the name of a deferred ``COMMAND GETKEYS`` (:meth:`AsyncFastPath.pack_command`), answered by :func:`getkeys` when
#: it is sent, else packed then
_ASK_KEYS = object()


def getkeys(conn: Any, args: Tuple[Any, ...]) -> bool:
    """``COMMAND GETKEYS <stream command> …`` answered directly (what redis-py's cluster clients ask before every
    XREAD / XREADGROUP, whose keys move): the keys, as :func:`.cluster.command_getkeys` answers them, when the
    command is a stream command the direct path can encode with its arity and names at least one key; False
    otherwise (errors, containers, other commands: the dispatch path answers). Counted in INFO as
    ``command|getkeys``. O(len(args))."""
    if len(args) < 3 or args[0] not in _GETKEYS:
        return False
    encoded = _encode(conn, args[1:])
    if encoded is None:
        return False
    entry = conn._sf_fast_setup[0][args[1]]
    if entry[1] is not None:  # "XINFO STREAM" as one argument: the dispatch path answers it
        return False
    keys = auth.stream_keys(entry[0].name, [entry[2], *encoded])
    session = _session(conn, True)
    if not keys or session is None or not session.enter():
        return False
    try:
        started = _perf_counter()
        sock = conn._sock
        with sock._server.lock:
            sock._sf_fast.append(keys)
            session.server.stats.called("command|getkeys", (_perf_counter() - started) * 1e6)
    finally:
        session.leave()
    return True


def _fields(conn: Any, args: Tuple[Any, ...]) -> Optional[list]:
    """The fields fakeredis's RESP parser would read from the packer's bytes of ``args`` (the first argument split
    on whitespace, as both packers split it), or None when an argument is of a type the packer treats itself
    (anything but exact bytes, str and int). O(len(args))."""
    codec = (conn._sf_fast_setup or _setup(conn))[1]
    if codec is None or not args:
        return None
    name = args[0]
    kind = type(name)
    if kind is str:
        head = name.encode().split()
    elif kind is bytes:
        head = name.split() if b" " in name else [name]
    else:
        return None
    utf8 = codec is _UTF8
    out = head
    append = out.append
    try:
        for arg in args[1:]:
            kind = type(arg)
            if kind is bytes:
                append(arg)
            elif kind is str:
                append(arg.encode() if utf8 else arg.encode(*codec))
            elif kind is int:
                append(b"%d" % arg)
            else:  # float (hiredis formats it itself), bool, memoryview, None …: the packer decides
                return None
    except UnicodeError:
        return None
    return out


def dispatch_unpacked(conn: Any, args: Tuple[Any, ...]) -> bool:
    """Send a command that is not a stream command (sync connections) straight to the socket's dispatch — the
    ``_process_command`` fakeredis's RESP parser calls, with the socket mixin in front — with the fields that parser
    would read, instead of packing it to RESP for the parser to unpack. Everything from the dispatch on is the
    socket path itself (faults, ACL, MULTI queueing, pubsub, CLIENT REPLY, the reply queue), so replies are
    identical; only the two conversions are skipped. False (nothing done: the caller packs and sends it) unless
    the socket would run it at once on its own: connected, not killed, its parser not paused behind a parked
    read (commands wait in its buffer then), no resume pending, no health check due; and not with
    ``server.fast_path = False`` (tests compare the two). O(len(args))."""
    sock = conn._sock
    session = getattr(sock, "_sf_session", None)
    if (type(session) is not SyncSession or sock._paused or session.resume_pending or not session.alive
            or not session.server.fast_path):
        return False
    fake = sock._server
    if fake is None or not fake.connected or sock._killed:  # sendall raises the ConnectionError
        return False
    if conn.health_check_interval and _health_due(conn, False):
        return False
    fields = _fields(conn, args)
    if fields is None:
        return False
    sock._process_command(fields)
    return True


class DeferredCommands(list):
    """What ``pack_commands`` returns: per command ``(name, encoded args, args)`` for a stream command, or
    ``(None, packed RESP chunks, None)``."""

    __slots__ = ()


def pack_commands(conn: Any, commands: Any) -> DeferredCommands:
    """Pipeline packing: stream commands stay unpacked (run directly at send time when possible); the
    rest are packed now, so a DataError is raised before anything is sent, as redis-py does.

    A stream command is kept as ``(name, encoded args as a tuple, args)``: made only of bytes, str and
    numbers, so the garbage collector untracks it at its first look and a pipeline of a million commands
    waiting to be sent promotes nothing to the old generation (lists or the command spec in there would:
    every full collection would then walk all the streams of the process, more at every bulk load; it is
    expanded when it runs, :func:`_expand`). O(len(commands)) and the arguments."""
    out = DeferredCommands()
    append = out.append
    pack = conn.pack_command
    for cmd in commands:
        encoded = _encode(conn, cmd)
        append((cmd[0], tuple(encoded), cmd) if encoded is not None else (None, pack(*cmd), None))
    return out


def run_deferred(conn: Any, deferred: DeferredCommands, i: int) -> int:
    """Run ``deferred[i]`` and the stream commands right after it directly, as one batch: the state checks,
    the session's entry and the server lock once for the batch; per command exactly what a single
    direct command does (fakeredis's time, its own execution unit: blocked clients served, WATCH
    dirtied, keyspace events sent at the end of each command). Returns the index of the first command
    not run (``i`` if the state forbids the direct path, e.g. MULTI queueing; the batch also stops after a
    command that parks, since what follows must wait behind it)."""
    session = _session(conn, health=False)
    if session is None:
        return i
    return _run(conn._sock, session, deferred, i, conn._sf_fast_setup[0])


def send_deferred(conn: Any, deferred: DeferredCommands, check_health: bool) -> None:
    """``send_packed_command`` for :func:`pack_commands`' result: in order, each stream command directly
    (unless the state forbids it, e.g. MULTI queueing), every other one as RESP bytes through the socket.
    Replies keep the command order (the direct path refuses while socket replies are queued)."""
    if not conn._sock:
        connect = getattr(conn, "connect_check_health", None)  # redis-py >= 5.1; before: connect()
        connect(check_health=False) if connect is not None else conn.connect()
    if check_health:
        conn.check_health()
    try:
        for payload in socket_payloads(conn, deferred):
            for chunk in payload:
                conn._sock.sendall(chunk)
    except BaseException:
        conn.disconnect()
        raise


def socket_payloads(conn: Any, deferred: DeferredCommands) -> Iterator[Any]:
    """Walk :func:`pack_commands`' result in order: runs of stream commands directly (:func:`run_deferred`),
    yielding the packed RESP chunks of every command that must go through the socket, each when its turn
    comes (lazily, so direct and socket commands keep their order). Shared by the sync and asyncio hooks."""
    i, n = 0, len(deferred)
    while i < n:
        name, payload, args = deferred[i]
        if name is _ASK_KEYS:  # (only ever alone: AsyncFastPath.pack_command's)
            if not getkeys(conn, args):
                yield conn._sf_pack(*args)
            i += 1
            continue
        if name is not None:
            j = run_deferred(conn, deferred, i)
            if j > i:
                i = j
                continue
            payload = conn._sf_pack(*args)
        yield payload
        i += 1


def _run(sock: Any, session: Any, batch: Any, i: int, table: Dict[Any, _Entry]) -> int:
    """The part of fakeredis's ``_process_command`` a stream command goes through, without its parsing,
    for ``batch[i]`` and the stream commands after it (``batch`` holds :func:`pack_commands`' triples; a
    packed command ends the batch; ``table``: the connection's name table). Returns the index after the
    last command run."""
    if not session.enter():  # closed meanwhile: the dispatch path would answer nothing either
        return i
    try:
        n, fast, fake = len(batch), sock._sf_fast, sock._server
        node = session.server.cluster_node
        ctx = wall = None  # (made for the first command that is no XADD run: see _context)
        lock = fake.lock
        lock.acquire()
        try:
            dbs = fake.dbs.values()
            while i < n:
                name, encoded, _ = batch[i]
                if name is None:
                    break
                now = time.time()  # = fakeredis's per-command db.time
                for db in dbs:
                    db.time = now
                entry = table[name]
                if node is not None:  # a cluster node: its slot check first (MOVED, ASK, CROSSSLOT …)
                    if sock._sf_asking:  # (ASKING lasts one command: the dispatch path keeps that state)
                        break
                    line = cluster.direct_refusal(sock, node, entry[0].name, encoded)
                    if line is not None:
                        i += 1
                        session.server.stats.rejected(entry[0].name, line)
                        fast.append(sock._decode_error(SimpleError(line)))
                        continue
                if entry[0].handler is _XADD:  # (a run of XADDs on one key: the same key, the same slot verdict)
                    j = _xadd_run(sock, session, batch, i, n, fast, table)
                    if j > i:
                        i = j
                        continue
                i += 1
                if ctx is None:
                    ctx, wall = _context(sock, session)
                if _answer(sock, session, _expand(entry, encoded), fast, ctx, int(now * 1000) if wall else None):
                    break  # parked: the reply comes through the socket's queue, later commands wait
        finally:
            lock.release()
    finally:
        session.leave()
    return i


def _context(sock: Any, session: Any) -> Tuple[Any, bool]:
    """The socket's handler context for its top-level commands (``server.context``, kept on the socket), and whether
    the server's clock is a SystemClock (its ``now_ms`` is ``int(time.time() * 1000)``: the command's time is then
    what ``_run`` read for fakeredis's ``db.time``). O(1)."""
    ctx = sock.__dict__.get("_sf_ctx")
    server = session.server
    if ctx is None or ctx._session is not session:
        ctx = sock._sf_ctx = server.context(session)
    return ctx, type(server.clock) is SystemClock


def _answer(sock: Any, session: Any, prepared: Tuple[Any, list, list], fast: Any, ctx: Any = None,
            now_ms: Optional[int] = None) -> bool:
    """One command as Session.call + fakeredis's ``_decode_result`` would answer it (lock held, session
    entered): its reply or error reply appended to ``fast``; True if it parked instead (its reply will come
    through the socket's queue). ``server.execute`` opens and finishes the execution unit itself when none is
    open (``depth`` only matters to fakeredis's name lookups), in the socket's context ``ctx`` (see
    ``server.context``) at ``now_ms`` (the server clock's time, read with fakeredis's ``db.time``: one clock
    read per command). O(1) around the handler."""
    server = session.server
    started = _perf_counter()
    spec, args, argv = prepared
    try:
        reply = server.execute(session, spec, args, argv, ctx, now_ms)
    except ReplyError as exc:
        err = error(exc, server.profile)
        _count(server, spec, started, err.value)
        fast.append(sock._decode_error(err))
        return False
    except SimpleError as exc:
        _count(server, spec, started, exc.value)
        fast.append(sock._decode_error(exc))
        return False
    _count(server, spec, started, None)
    if reply is BLOCKED:
        sock.pause()
        return True
    kind = type(reply)
    if kind is Status:
        reply = reply.value
    elif kind is list and reply and type(reply[0]) is Status:  # help replies: only Status lines
        _plain_list(reply)
    fast.append(reply)
    return False


def _xadd_run(sock: Any, session: Any, batch: Any, i: int, n: int, fast: Any, table: Mapping[Any, _Entry]) -> int:
    """XADD commands on one key, back to back in a pipeline batch (or a single one): each appends its entry
    (and trims, if it asks) and answers its ID, in order, with what the general path does around the
    handler done once for the run where once is the same thing. Lock held. Returns the index after the
    run (``i``: not taken, the general path runs the command).

    Taken only when nothing can tell the difference: the key holds a stream without TTL (it cannot
    expire or change type during the run: only this batch's stream commands run until the lock is
    released), no client is blocked anywhere (serving blocked clients after each command has nothing to
    do, and none can block meanwhile), no stream keyspace event is subscribed (``xadd``/``xtrim`` would
    be sent). What stays per command: the argument checks, the clock read (the command's own ``now``),
    the ID, the entry, the trimming, the reply, an error reply in place. WATCH dirtying and fakeredis's
    wake-up of its own waiters are idempotent and nobody can look before the lock is released: once,
    after the run, if an entry was added. Engine-internal exceptions are answered as the general path
    does (recorded, INTERNAL_ERROR). Plain XADDs back to back (a pipeline's ``XADD key * …``) append in one
    engine call (:func:`_plain_run`; the same entries, IDs and node boundaries, each at its own clock read).
    Per command: O(fields) for ``XADD key * …`` and ``XADD key MAXLEN ~ n * …`` (+ its trimming), else XADD's
    own cost.
    """
    server = session.server
    if server.blocking.has_waiters() or stream_events_sent(sock):
        return i
    key = batch[i][1][0]
    keyspace = session.keyspace
    stream = keyspace.get_lasting(key)
    if not isinstance(stream, Stream):
        return i
    clock = server.clock
    now_ms = clock.now_ms
    wall = type(clock) is SystemClock  # its now_ms inlined below (one call less per command)
    wall_time = time.time
    limits = stream.node_limits()  # CONFIG SET cannot run before the lock is released
    decode_error = sock._decode_error
    append = fast.append
    added = False
    xadd_name = None
    spec = table[batch[i][0]][0]
    first, started = i, _perf_counter()
    now = None  # the last command's clock read: the run's lookupKey touch stamps with it
    try:
        while i < n:
            name, args, _ = batch[i]  # the encoded args: a tuple (pipelines) or a list, read only here
            if name is None:
                break
            if name is not xadd_name:  # the same name object command after command (redis-py's "XADD")
                spec = table[name][0]
                if spec.handler is not _XADD:
                    break
                xadd_name = name
            if args[0] != key:
                break
            shape = _xadd_shape(args)
            if not shape and server.profile.has("stream_ref_policies"):  # Redis 8.2+ options (KEEPREF/DELREF/ACKED
                break  # …) may come: the general path
            if shape == _PLAIN and i + 1 < n:  # plain XADDs on the key behind it: one engine call for the run
                j = _plain_run_end(batch, i + 1, min(n, i + _PLAIN_RUN_MAX), xadd_name, key)
                if j > i + 1:
                    try:
                        done, now, refused = _plain_run(stream, batch, i, j, fast, limits,
                                                        wall_time if wall else None, now_ms)
                    except Exception as exc:  # an engine bug: the run's first command answers it, as server.execute
                        refused = server._internal_error(spec, list(args), exc)  # would (the rest go on below)
                        done = 0
                    added = added or done > 0
                    i += done
                    if refused is not None:  # answered in place; the commands after it go on in this loop
                        append(decode_error(xadd_failed(server, error(refused, server.profile))))
                        i += 1
                    continue
            i += 1
            try:
                now = int(wall_time() * 1000) if wall else now_ms()
                if shape == _PLAIN:
                    append(append_now(stream, args, now, limits))
                elif shape:
                    append(append_trimmed_now(stream, args, now, limits))
                else:
                    args = list(args)
                    targs = parse_xadd_args(args)
                    append(append_parsed(stream, args, targs, now, limits)[0])
                added = True
            except ReplyError as exc:
                append(decode_error(xadd_failed(server, error(exc, server.profile))))
            except Exception as exc:  # an engine bug: as server.execute answers it
                append(decode_error(xadd_failed(server, error(server._internal_error(spec, list(args), exc),
                                                              server.profile))))
    finally:
        xadd_run_done(server, keyspace, key, i - first, added, started, now)
    return i


def _xadd_shape(args: Any) -> int:
    """Which of the two XADD shapes redis-py sends the encoded ``args`` have: :data:`_PLAIN` (``key * f v …`` =
    :func:`is_plain_xadd`), :data:`_TRIMMING` (``key MAXLEN ~ n * f v …`` = :func:`is_trimming_xadd`, ``n`` not
    checked yet), else 0 (the general parse). O(1)."""
    argc = len(args)
    if argc % 2:
        return _TRIMMING if argc > 6 and args[4] == b"*" and args[2] == b"~" and args[1] in MAXLEN_SPELLINGS else 0
    return _PLAIN if argc > 3 and args[1] == b"*" else 0


def _xadd_one(sock: Any, session: Any, spec: Any, args: list) -> bool:
    """One XADD (``spec``: its table entry's) sent alone (not in a pipeline) in one of :func:`_xadd_shape`'s two
    shapes, as :func:`_run` and :func:`_xadd_run` would run it as a batch of one, without their loops: False
    (nothing done) whenever ``_xadd_run`` would not take it (another shape, a cluster node, a client blocked, a
    stream event subscribed, the key no stream or with a TTL, the socket closed), so that the caller runs it on
    the general path.

    Otherwise, lock held: fakeredis's ``db.time``, the command's clock read, the entry appended (and trimmed),
    its ID or error reply on the socket's deque, then :func:`xadd_run_done`'s bookkeeping: the same state,
    replies, INFO figures as a run of one (``tests/unit/test_fastpath.py``, the single-command cases of the
    XADD runs' tests). This is the path of every ``r.xadd(...)``: a loop set-up less is about 1 µs of the
    8–9 µs the engine takes per XADD in place (benchmarks/findings.md §14). O(fields) (+ the trimming work).
    """
    shape = _xadd_shape(args)
    server = session.server
    if not shape or server.cluster_node is not None or not session.enter():
        return False
    try:
        fake = sock._server
        lock = fake.lock
        lock.acquire()
        try:
            if server.blocking.has_waiters() or stream_events_sent(sock):
                return False
            keyspace = session.keyspace
            key = args[0]
            stream = keyspace.get_lasting(key)
            if not isinstance(stream, Stream):
                return False
            now = time.time()  # = fakeredis's per-command db.time
            for db in fake.dbs.values():
                db.time = now
            clock = server.clock
            now_ms = int(now * 1000) if type(clock) is SystemClock else clock.now_ms()
            started = _perf_counter()
            added = False
            try:
                sock._sf_fast.append(append_now(stream, args, now_ms) if shape == _PLAIN
                                     else append_trimmed_now(stream, args, now_ms))
                added = True
            except ReplyError as exc:
                sock._sf_fast.append(sock._decode_error(xadd_failed(server, error(exc, server.profile))))
            except Exception as exc:  # an engine bug: as server.execute answers it
                sock._sf_fast.append(sock._decode_error(xadd_failed(
                    server, error(server._internal_error(spec, list(args), exc), server.profile))))
            xadd_run_done(server, keyspace, key, 1, added, started, now_ms)
            return True
        finally:
            lock.release()
    finally:
        session.leave()


def _plain_run_end(batch: Any, j: int, n: int, name: Any, key: bytes) -> int:
    """The index after the plain XADDs (``XADD key * f v …``: :func:`is_plain_xadd` args) on ``key`` from
    ``batch[j]`` on, sent under the command name object ``name`` (a packed command's name is None: it ends the
    run). O(length of the run)."""
    while j < n:
        cmd = batch[j]
        if cmd[0] is not name:
            break
        args = cmd[1]
        argc = len(args)
        if argc % 2 or argc < 4 or args[1] != b"*" or args[0] != key:
            break
        j += 1
    return j


def _plain_run(stream: Stream, batch: Any, i: int, j: int, fast: Any, limits: Tuple[int, int],
               wall_time: Any, now_ms: Any) -> Tuple[int, int, Optional[ReplyError]]:
    """Append the plain XADDs ``batch[i:j]`` (all on ``stream``) in one engine call (``Stream.add_next_run``: one ID
    loop, one node call per node filled), each at its own clock read (``wall_time``: ``time.time`` on a SystemClock
    server, else None and ``now_ms`` is the server clock's), their IDs appended to ``fast`` in order. Returns
    ``(done, last clock read, refused)``: how many were added, the clock read of the last command looked at, and the
    ReplyError of the command at ``i + done`` if the engine refused it (nothing of it changed: ID space exhausted,
    entry too large; the commands after it are left to the caller). Other exceptions (engine bugs) propagate. The
    same entries, IDs and node boundaries as :func:`append_now` one command at a time (``tests/unit/test_add_run.py``).
    O(fields) per command."""
    count = j - i
    nows = [int(wall_time() * 1000) for _ in range(count)] if wall_time is not None else [now_ms() for _ in range(count)]
    ids, refused = stream.add_next_run([list(batch[k][1][2:]) for k in range(i, j)], nows, limits)
    done = len(ids)
    fast.extend(ids)
    return done, nows[done if done < count else count - 1], refused


def xadd_failed(server: Any, err: Any) -> Any:
    """INFO errorstats / commandstats of an XADD of a run answered with the error reply ``err`` (returned). O(1)."""
    server.stats.error_reply(err.value)
    server.stats.command("xadd").failed += 1
    return err


def xadd_run_done(server: Any, keyspace: Any, key: bytes, count: int, added: bool, started: float,
                  now_ms: Optional[int] = None) -> None:
    """After ``count`` XADDs on ``key`` run back to back (lock held; :func:`_xadd_run`, the TCP plain-XADD run):
    WATCH dirtying and fakeredis's wake-ups once if an entry was added, each XADD's lookupKey touch (OBJECT
    IDLETIME / FREQ; ``now_ms``: the run's last clock read, if the caller has it), INFO commandstats with the
    run's time (since ``started``) shared by its commands. O(1)."""
    if added:
        keyspace.changed(key)
    if count:
        server.access.touch_many(keyspace.access_table, key, count, now_ms)
        server.stats.called_many("xadd", count, (_perf_counter() - started) * 1e6)


def _count(server: Any, spec: Any, started: float, error_text: Optional[str]) -> None:
    """INFO commandstats of one direct-path command (its name, µs since ``started``, its error reply). O(1)."""
    server.stats.called(spec.name, (_perf_counter() - started) * 1e6, error_text, "write" in spec.flags)


def _plain_list(reply: list) -> None:
    """fakeredis's ``_decode_result`` of ``to_wire``'s list: a top-level Status item → its bytes (nothing
    deeper is a fakeredis type). O(len(reply))."""
    for i, item in enumerate(reply):
        if type(item) is Status:
            reply[i] = item.value


def pending(sock: Any) -> Any:
    """The socket's deque of direct-path replies if it holds any, else None."""
    fast = getattr(sock, "__dict__", {}).get("_sf_fast") if sock is not None else None
    return fast if fast else None


def take(conn: Any, fast: Any, disable_decoding: bool) -> Any:
    """The next direct-path reply for ``read_response`` (an error reply is raised). O(1) (+ decoding)."""
    session = conn._sock._sf_session  # the socket is ours: it holds the deque (its class has the attribute)
    if session is not None and session.resume_pending:
        session.resume_if_pending()
    item = fast.popleft()
    if type(item) is not bytes and isinstance(item, BaseException):  # (most replies are bytes: one check)
        raise item
    if disable_decoding or not conn.encoder.decode_responses:  # redis-py's Encoder (sync and asyncio) has it
        return item
    return conn._decode(item)


class SyncFastPath:
    """Hooks for the sync connection class (put before fakeredis's connection class in the bases); its
    ``read_response`` must first hand out the direct replies (:func:`pending`, the socket's ``_sf_fast``
    deque) with :func:`take`."""

    _sf_fast_setup: Any = None  # set by prepare: (the server's name table, the packer's str codec)

    def send_command(self, *args: Any, **kwargs: Any) -> None:
        encoded = _encode(self, args)
        try:
            if encoded is not None:
                if execute(self, (args[0], encoded, args)):
                    return
            elif args and args[0] in _GETKEYS and getkeys(self, args):
                return
            elif ENABLED and self._sock is not None and (  # type: ignore[attr-defined]
                    handshake.setinfo(self, args, _session) or handshake.hello3(self, args, _session)
                    or dispatch_unpacked(self, args)):
                return
        except BaseException:
            self.disconnect()  # type: ignore[attr-defined]
            raise
        super().send_command(*args, **kwargs)  # type: ignore[misc]

    def can_read(self, timeout: Optional[float] = 0) -> bool:
        sock = self._sock  # type: ignore[attr-defined]
        if sock is not None:
            if sock.__dict__.get("_sf_fast"):
                return True
            if sock._killed:  # the server hung up: what it sent before is read first (a real socket's buffered
                # bytes), then reading the EOF fails, as redis-py's does (the hang-up's own ConnectionError, queued
                # by kill_clients, is that EOF: not readable data)
                pending = sock.responses.queue if sock.responses is not None else ()
                if pending and not isinstance(pending[0], redis.exceptions.ConnectionError):
                    return True
                raise redis.exceptions.ConnectionError(SERVER_CLOSED)
            if (timeout is not None and timeout <= 0 and self._server.connected  # type: ignore[attr-defined]
                    and self._selector is not None):  # type: ignore[attr-defined]
                responses = sock.responses  # = fakeredis's can_read/check_can_read without waiting
                return responses is not None and len(responses.queue) > 0  # queue.Queue's deque: qsize unlocked
        return super().can_read(timeout)  # type: ignore[misc]

    def pack_commands(self, commands: Any) -> Any:
        return pack_commands(self, commands)

    def _sf_pack(self, *args: Any) -> Any:
        """redis-py's packing of one command (RESP bytes)."""
        return super().pack_command(*args)  # type: ignore[misc]

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if type(command) is DeferredCommands:
            send_deferred(self, command, check_health)
            return
        super().send_packed_command(command, check_health)  # type: ignore[misc]


class AsyncFastPath:
    """Hooks for the asyncio connection class; its ``read_response`` must start like the sync one's."""

    _sf_fast_setup: Any = None  # set by prepare

    async def send_command(self, *args: Any, **kwargs: Any) -> None:
        encoded = _encode(self, args)
        if encoded is not None and self.is_connected:  # type: ignore[attr-defined]
            try:
                if execute(self, (args[0], encoded, args)):
                    return
            except BaseException:
                await self.disconnect(nowait=True)  # type: ignore[attr-defined]
                raise
        elif args and args[0] in _GETKEYS and self.is_connected and getkeys(self, args):  # type: ignore[attr-defined]
            return
        elif ENABLED and args and self.is_connected and (  # type: ignore[attr-defined]
                handshake.setinfo(self, args, _session) or handshake.hello3(self, args, _session)):
            return
        # = redis.asyncio's send_command, packed as RESP (pack_command would keep a stream command unpacked)
        await self.send_packed_command(self._sf_pack(*args),  # type: ignore[attr-defined]
                                       check_health=kwargs.get("check_health", True))

    def pack_command(self, *args: Any) -> Any:
        """redis.asyncio's cluster nodes pack each command themselves (``send_packed_command(pack_command(…))``):
        a stream command stays unpacked, as in :func:`pack_commands`, to run directly when it is sent; so does
        ``COMMAND GETKEYS`` (:func:`getkeys` when it is sent)."""
        encoded = _encode(self, args)
        if encoded is not None:
            deferred = DeferredCommands()
            deferred.append((args[0], tuple(encoded), args))
            return deferred
        if args and args[0] in _GETKEYS:  # (what the cluster client asks before XREAD / XREADGROUP)
            deferred = DeferredCommands()
            deferred.append((_ASK_KEYS, None, args))
            return deferred
        return self._sf_pack(*args)

    def _sf_pack(self, *args: Any) -> Any:
        """redis-py's packing of one command (RESP bytes)."""
        return super().pack_command(*args)  # type: ignore[misc]

    async def can_read(self, *args: Any, **kwargs: Any) -> bool:
        sock = self._sock  # type: ignore[attr-defined]
        if pending(sock) is not None or getattr(sock, "_killed", False):  # killed: the hang-up's EOF is readable
            return True
        return await super().can_read(*args, **kwargs)  # type: ignore[misc]

    def pack_commands(self, commands: Any) -> Any:
        return pack_commands(self, commands)

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if type(command) is not DeferredCommands:
            await super().send_packed_command(command, check_health)  # type: ignore[misc]
            return
        if not self.is_connected:  # type: ignore[attr-defined]
            connect = getattr(self, "connect_check_health", None)  # redis-py >= 5.1; before: connect()
            await (connect(check_health=False) if connect is not None else self.connect())  # type: ignore[attr-defined]
        if check_health:
            await self.check_health()  # type: ignore[attr-defined]
        try:
            for payload in socket_payloads(self, command):
                self._writer.writelines(payload)  # type: ignore[attr-defined]
            await self._writer.drain()  # type: ignore[attr-defined]
        except BaseException:
            await self.disconnect(nowait=True)  # type: ignore[attr-defined]
            raise


__all__ = ["AsyncFastPath", "SyncFastPath", "ENABLED", "DeferredCommands", "execute", "getkeys", "pack_commands", "pending",
           "prepare", "run_deferred", "send_deferred", "take"]
