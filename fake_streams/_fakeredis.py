"""The fakeredis adapter: the only module that imports fakeredis (supported: 2.34.1 … 2.41).

fakeredis serves every non-stream command and owns the keyspace, MULTI/EXEC, WATCH, Lua and the
server lock. We hook its per-command dispatch seam, ``BaseFakeSocket._name_to_func(name)``, which
is consulted for immediate execution, for queueing inside MULTI and for Lua's ``redis.call``:

* stream commands and container subcommands of the engine's table route to
  :meth:`FakeStreamsServer.execute <fake_streams.server.FakeStreamsServer.execute>` with a fakeredis
  ``Signature`` that encodes the Redis arity (so a short command fails at queue time → EXECABORT);
* other ``X*`` names are refused with the server's ``unknown command`` text, so fakeredis's own
  stream code never touches our values;
* ``HELLO`` reports the profile's server/version and ``INFO`` (which fakeredis lacks) is answered.

Stream values are :class:`StreamValue` objects stored in fakeredis's keyspace; being a fakeredis
``BaseModel`` with ``_model_type = b"stream"`` makes TYPE, EXISTS, DEL, RENAME, EXPIRE/TTL, COPY,
``SCAN … TYPE stream``, FLUSHALL and WRONGTYPE (for non-stream commands) work unchanged.

Blocking reads: the databases report every write of a key that has blocked clients to the server's
:class:`~fake_streams.blocking.BlockingRegistry` (``touched``), including writes fakeredis makes on its
own (DEL, SET, RENAME, FLUSHALL, SWAPDB, MOVE, expiry); ``CLIENT UNBLOCK`` reaches the registry first;
the socket's ``close`` tells its session (:mod:`fake_streams.sessions`). ``FakeStreamsServer.faults``
is consulted before every command (:meth:`StreamsSocketMixin._process_command`).

Version shims (fakeredis 2.39 moved ``_server``/``_basefakesocket``/``_connection`` into
``_core``/``_socket``/``_clients``): every private import below has a fallback.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import functools
import importlib.metadata
import inspect
import itertools
import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

import fakeredis
import fakeredis.aioredis as _aioredis
import redis.exceptions
from fakeredis import _msgs as msgs
from fakeredis._commands import Signature
from fakeredis._helpers import NoResponse, SimpleError, SimpleString, compile_pattern
from fakeredis.model import BaseModel

from .commands.base import CommandSpec, cstr
from .dbhooks import hook_database
from .errors import ReplyError
from .reply import RepeatedKeyMap, Status
from .stream import Stream

try:  # fakeredis >= 2.39
    from fakeredis._core import CommandItem
except ImportError:  # pragma: no cover - fakeredis <= 2.38
    from fakeredis._commands import CommandItem  # type: ignore[no-redef]
try:  # fakeredis >= 2.39
    from fakeredis._socket import AsyncFakeSocket
except ImportError:  # pragma: no cover - fakeredis <= 2.38
    from fakeredis.aioredis import AsyncFakeSocket  # type: ignore[no-redef]

FLOOR = (2, 34, 1)
FAKEREDIS_VERSION = tuple(int(p) for p in importlib.metadata.version("fakeredis").split(".")[:3] if p.isdigit())
if FAKEREDIS_VERSION < FLOOR:  # pragma: no cover
    raise ImportError(f"fake_streams needs fakeredis >= 2.34.1 (TYPE of foreign values); found {FAKEREDIS_VERSION}")

#: fakeredis's sync / asyncio connection classes (``FakeConnection`` was the class name up to 2.34).
SyncConnectionBase: type = getattr(fakeredis, "FakeRedisConnection", None) or fakeredis.FakeConnection
AsyncConnectionBase: type = getattr(_aioredis, "FakeAsyncRedisConnection", None) or _aioredis.FakeConnection
_SKIP_RESP2 = msgs.FLAG_SKIP_CONVERT_TO_RESP2


class _SharedConfig:
    """The server's CONFIG dict as a stream sees it; COPY's deepcopy keeps sharing it."""

    __slots__ = ("config", "_parsed", "_limits")

    def __init__(self, config: Dict[bytes, bytes]) -> None:
        self.config = config
        self._limits: Optional[Tuple[Any, Any, Tuple[int, int]]] = None  # node_limits(): raw values, result
        self._parsed: Dict[bytes, Tuple[Any, Optional[int]]] = {}  # name -> (raw value object, its int)

    def __deepcopy__(self, memo: Any) -> _SharedConfig:
        return self

    def node_limits(self) -> Tuple[int, int]:
        """``(stream-node-max-bytes, stream-node-max-entries)`` as the CONFIG dict says now, the defaults for
        unset or non-numeric values. O(1) while both stored value objects are the ones parsed last."""
        config = self.config
        raw_bytes = config.get(b"stream-node-max-bytes")
        raw_entries = config.get(b"stream-node-max-entries")
        last = self._limits
        if last is not None and last[0] is raw_bytes and last[1] is raw_entries and raw_bytes is not None:
            return last[2]
        max_bytes = self.get_int(b"stream-node-max-bytes")
        max_entries = self.get_int(b"stream-node-max-entries")
        limits = (Stream.stream_node_max_bytes if max_bytes is None else max_bytes,
                  Stream.stream_node_max_entries if max_entries is None else max_entries)
        self._limits = (raw_bytes, raw_entries, limits)
        return limits

    def get_int(self, name: bytes) -> Optional[int]:
        """The setting as an int (None: unset or not a number). O(1) while the stored value object is
        the one parsed last (CONFIG SET stores a new one)."""
        raw = self.config.get(name)
        if raw is not None:
            parsed = self._parsed.get(name)
            if parsed is not None and parsed[0] is raw:
                return parsed[1]
        else:  # config names are case-insensitive
            raw = next((v for k, v in self.config.items() if bytes(k).lower() == name), None)
            if raw is None:
                return None
        try:
            value: Optional[int] = int(raw)
        except (TypeError, ValueError):
            value = None
        self._parsed[name] = (raw, value)
        return value


def _config_property(name: bytes, attr: str) -> property:
    """A Stream setting that reads ``CONFIG SET <name>`` live (as the server does at every append/trim),
    unless the instance was given its own value."""
    default = getattr(Stream, attr)
    own = "_own_" + attr

    def get(self: StreamValue) -> int:
        value = self.__dict__.get(own)
        if value is None and self._sf_config is not None:
            value = self._sf_config.get_int(name)
        return default if value is None else value

    def set_(self: StreamValue, value: int) -> None:
        self.__dict__[own] = value
        self.__dict__["_sf_own_limits"] = True

    return property(get, set_)


class StreamValue(Stream, BaseModel):
    """A :class:`~fake_streams.stream.Stream` as fakeredis stores it (TYPE reports ``stream``).

    ``stream-node-max-entries`` / ``stream-node-max-bytes`` follow the server's CONFIG.
    """

    _model_type = b"stream"
    _sf_config: Optional[_SharedConfig] = None
    _sf_own_limits = False  # True once either setting was given to this instance
    stream_node_max_entries = _config_property(b"stream-node-max-entries", "stream_node_max_entries")
    stream_node_max_bytes = _config_property(b"stream-node-max-bytes", "stream_node_max_bytes")

    def node_limits(self) -> Tuple[int, int]:
        """Both settings at once (each XADD reads them): one look at the CONFIG dict. O(1)."""
        config = self._sf_config
        if config is None or self._sf_own_limits:
            return self.stream_node_max_bytes, self.stream_node_max_entries
        return config.node_limits()


# ----------------------------------------------------------------------------------------- keyspace
def _wake(db: Any) -> None:
    """Wake every waiter on ``db`` (sync condition + async change callbacks). Caller holds the lock."""
    wake_all = getattr(db, "wake_all", None)
    if wake_all is not None:
        wake_all()
        return
    db.condition.notify_all()  # fakeredis < 2.37 has no wake_all
    for callback in list(db._change_callbacks):
        callback()


_INLINE_NOTIFY: Dict[type, bool] = {}


def _inline_notify(cls: type) -> bool:
    """Whether :meth:`Keyspace.changed` may do what ``cls.notify_watch`` does itself: ``cls`` is the blocking
    hook's database class (:mod:`.dbhooks`) over fakeredis's own ``Database`` (watchers, then a wake-up
    of every waiter), with the attributes that replay needs. Cached per class."""
    known = _INLINE_NOTIFY.get(cls)
    if known is None:
        own = cls.__dict__.get("notify_watch")
        base = cls.__bases__[0] if cls.__bases__ else object
        known = _INLINE_NOTIFY[cls] = bool(
            own is not None and own.__qualname__.endswith("StreamsDatabase.notify_watch")
            and getattr(getattr(base, "notify_watch", None), "__module__", "").startswith("fakeredis")
            and hasattr(threading.Condition(), "_waiters")
        )
    return known


class Keyspace:
    """One fakeredis database as handlers' contexts see it. All methods need the backend lock."""

    __slots__ = ("_db",)

    def __init__(self, db: Any) -> None:
        self._db = db

    @property
    def ident(self) -> Any:
        """Identity of the database (the blocking registry's key; SWAPDB keeps it with the db number)."""
        return self._db

    def peek(self, key: bytes) -> Any:
        """The value at ``key`` without side effects; ``None`` if missing or expired. O(1)."""
        item = self._db._dict.get(key)
        if item is None or (item.expireat is not None and item.expireat < self._db.time):
            return None
        return item.value

    def expireat(self, key: bytes) -> Optional[float]:
        """The key's expiry time (wall-clock seconds, fakeredis's clock) or ``None``."""
        item = self._db._dict.get(key)
        return None if item is None else item.expireat

    def purge_expired(self, key: bytes) -> None:
        """Drop ``key`` if its TTL has passed now (reported to the registry as a deletion)."""
        self._db.time = time.time()
        self._db.get(key)

    def get_lasting(self, key: bytes) -> Any:
        """The value at ``key`` if it is present and has no TTL (so it cannot expire), else ``None``. O(1)."""
        item = self._db._dict.get(key)
        return item.value if item is not None and item.expireat is None else None

    def get(self, key: bytes) -> Any:
        """The value at ``key`` (expired keys are dropped first), or ``None``. O(1)."""
        db = self._db
        item = db._dict.get(key)
        if item is None:  # what db.get answers for a missing key, without its KeyError round trip
            return None
        if item.expireat is None:  # no TTL: nothing to drop
            return item.value
        item = db.get(key)
        return None if item is None else item.value

    def add(self, key: bytes, value: Any) -> None:
        """Store ``value`` at the missing ``key`` with no TTL; dirties WATCH and wakes waiters."""
        item = CommandItem(key, self._db, None)
        item.update(value)
        item.writeback()

    def changed(self, key: bytes) -> None:
        """``signalModifiedKey``: dirty WATCHers of ``key`` and wake blocked readers (TTL untouched).

        = the database's ``notify_watch`` (the blocking hook's report, then fakeredis's: WATCHers dirtied,
        its own blocked clients woken), inlined when the class is the known pair, skipping the wake-up
        when nobody waits on the database (the common case; nothing could observe it). O(1 + watchers).
        """
        db = self._db
        if not _inline_notify(type(db)):
            db.notify_watch(key)
            return
        registry = db._sf_registry
        if registry is not None and registry.has_waiters():  # touched() ignores writes while nobody is blocked
            item = db._dict.get(key)
            registry.touched(db, key, None if item is None else item.value)
        watches = db._watches.get(key)
        if watches:
            for sock in watches:
                sock.notify_watch()
        if db.condition._waiters or db._change_callbacks:
            _wake(db)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Keyspace) and other._db is self._db

    def __hash__(self) -> int:
        return id(self._db)


class Backend:
    """The fakeredis ``FakeServer`` behind one FakeStreamsServer (one keyspace; ``db`` numbers honoured).

    Its version (the profile's) steers fakeredis's own commands. Methods marked "lock held" expect
    the caller to hold :attr:`lock`, the server lock fakeredis takes around every command.
    """

    __slots__ = ("fake", "lock", "_config")

    def __init__(self, profile: Any) -> None:
        self.fake = fakeredis.FakeServer(version=profile.version_tuple, server_type=profile.server)
        self.fake._sf_generation = 0  # see _GENERATIONS
        self.lock = self.fake.lock
        config = self.fake.config
        config.setdefault(b"stream-node-max-entries", str(Stream.stream_node_max_entries).encode())
        config.setdefault(b"stream-node-max-bytes", str(Stream.stream_node_max_bytes).encode())
        self._config = _SharedConfig(config)

    def install_hooks(self, registry: Any) -> None:
        """Every database (now and created later, e.g. by SELECT) reports key writes to ``registry``."""
        dbs = self.fake.dbs
        factory = dbs.default_factory
        dbs.default_factory = lambda: hook_database(factory(), registry)
        for db in list(dbs.values()):
            hook_database(db, registry)

    def new_stream(self) -> StreamValue:
        """An empty stream value bound to this server's CONFIG."""
        value = StreamValue()
        value._sf_config = self._config
        return value

    def stats(self) -> Dict[str, Any]:
        """What INFO reports: client counts and ``{db: (keys, expires)}``. Lock held."""
        keyspace = {}
        for index, db in sorted(self.fake.dbs.items()):
            items = [db.get(k) for k in list(db)]  # iterating drops expired keys
            items = [item for item in items if item is not None]
            if items:
                keyspace[index] = (len(items), sum(1 for item in items if item.expireat is not None))
        sockets = list(self.fake.sockets)
        return {
            "clients": len(sockets),
            "blocked": sum(1 for s in sockets if getattr(s, "_blocked", False)),
            "keyspace": keyspace,
        }

    def flush(self) -> None:
        """FLUSHALL from Python. Lock held."""
        for db in self.fake.dbs.values():
            db.clear()

    def wake(self) -> None:
        """Wake fakeredis's own blocked clients (BLPOP …) of every database. Lock held."""
        for db in list(self.fake.dbs.values()):
            _wake(db)

    def shutdown(self) -> None:
        """Refuse further commands and connections (ConnectionError), then wake fakeredis's blocked clients."""
        self.fake.connected = False
        with self.lock:
            self.wake()


def to_wire(reply: Any) -> Any:
    """Our reply values → fakeredis's: :class:`Status` → ``SimpleString`` (top level and in a top-level list)."""
    if type(reply) is Status:
        return SimpleString(reply.value)
    if type(reply) is list:
        for i, item in enumerate(reply):
            if type(item) is Status:
                reply[i] = SimpleString(item.value)
    return reply


def error(exc: ReplyError, profile: Any) -> SimpleError:
    return SimpleError(exc.render(profile.errors))


# -------------------------------------------------------------------------- socket access (sessions)
CONNECTION_ERROR_MSG = msgs.CONNECTION_ERROR_MSG


def client_id(sock: Any) -> int:
    """``CLIENT ID`` of a fakeredis socket."""
    info = getattr(sock, "_client_info", None) or {}
    return int(info.get("id", 0) or 0)


def protocol_of(sock: Any, from_script: bool) -> int:
    resp = getattr(sock, "_resp_version", None)  # fakeredis >= 2.39 follows the script's RESP mode
    if resp is not None:
        return int(resp)
    return 2 if from_script else int(sock._client_info.protocol_version)


def no_response() -> NoResponse:
    """The value a command returns when it sends no reply now (a parked blocking read)."""
    return NoResponse()


def reply_item(sock: Any, reply: Any, profile: Any) -> Any:
    """What goes on ``sock``'s reply queue for ``reply`` (an engine value, a ReplyError, an exception)."""
    from .blocking import BlockSafetyError

    if isinstance(reply, BlockSafetyError):  # an error reply (TCP clients get the line), raised as its class
        decoded = sock._decode_result(SimpleError("ERR " + str(reply)))
        return BlockSafetyError(*decoded.args) if type(decoded) is redis.exceptions.ResponseError else decoded
    if isinstance(reply, BaseException) and not isinstance(reply, ReplyError):
        return reply
    value = error(reply, profile) if isinstance(reply, ReplyError) else to_wire(reply)
    return sock._decode_result(value)


def kill(sock: Any) -> None:
    """Hang up on a client, as CLIENT KILL does (lock held): its next command fails with ConnectionError."""
    killer = getattr(sock, "kill", None)
    if killer is not None and getattr(sock, "_server", None) is not None:
        killer()
    else:  # fakeredis < 2.35 has no CLIENT KILL
        sock._killed = True


def end_fakeredis_block(sock: Any, lock: Any) -> None:
    """A socket closed while fakeredis's own blocking command (BLPOP …) waits in its thread: end that
    wait as CLIENT UNBLOCK does, so the command returns and the close completes. Waits at most 50 ms
    for the lock (a caller holding it, e.g. a TCP release, wakes the database itself)."""
    if not getattr(sock, "_blocked", False) or not lock.acquire(timeout=0.05):
        return
    try:
        db = getattr(sock, "_db", None)
        if getattr(sock, "_blocked", False) and db is not None:
            sock._unblock_reason = b"timeout"
            _wake(db)
    finally:
        lock.release()


def socket_loop(sock: Any) -> Any:
    """The event loop an asyncio fakeredis socket belongs to."""
    loop = getattr(sock, "_event_loop", None)
    return loop if loop is not None else asyncio.get_running_loop()


def queue_async(sock: Any, queue: Any, item: Any) -> None:
    """On the socket's loop: queue ``item`` for the reader of an asyncio socket and wake ``can_read``."""
    queue.put_nowait(item)
    event = getattr(sock, "_response_available", None)
    if event is not None:
        event.set()


def stream_events_sent(sock: Any) -> bool:
    """Whether :func:`publish_keyspace_event` would send anything for a stream event now (lock held)."""
    fake = sock._server
    flags = getattr(fake, "config", {}).get(b"notify-keyspace-events", b"")
    if not flags or (b"t" not in flags and b"A" not in flags):
        return False
    return bool(fake.subscribers or fake.psubscribers)


def publish_keyspace_event(sock: Any, event: str, key: bytes) -> None:
    """Keyspace notification of class ``t`` (stream), as ``notify-keyspace-events`` asks (default: none)."""
    fake = sock._server
    flags = getattr(fake, "config", {}).get(b"notify-keyspace-events", b"")
    if not flags or (b"t" not in flags and b"A" not in flags):
        return
    if not fake.subscribers and not fake.psubscribers:
        return
    db, name = sock._db_num, event.encode()
    messages = []
    if b"K" in flags:
        messages.append((b"__keyspace@%d__:%s" % (db, key), name))
    if b"E" in flags:
        messages.append((b"__keyevent@%d__:%s" % (db, name), key))
    for channel, message in messages:
        for sub in list(fake.subscribers.get(channel, ())):
            sub.put_response([b"message", channel, message])
        for pattern, socks in list(fake.psubscribers.items()):
            if compile_pattern(pattern).match(channel):
                for sub in list(socks):
                    sub.put_response([b"pmessage", pattern, channel, message])


# ------------------------------------------------------------------------------------------ routing
class Router:
    """fakeredis command names (``"xadd"``, ``"xgroup create"``, bare ``"xgroup"``) → engine specs.

    Signatures carry the Redis arity: ``fixed`` = the minimum number of arguments after the
    (sub)command name, ``repeat`` = one more ``bytes`` for a negative (minimum) arity.
    """

    def __init__(self, commands: Mapping[str, CommandSpec]) -> None:
        self.specs: Dict[str, CommandSpec] = dict(commands)
        self.containers = {name.split("|", 1)[0] for name in commands if "|" in name}
        self.signatures: Dict[str, Signature] = {}
        for name, spec in self.specs.items():
            names = 2 if "|" in name else 1
            self.signatures[name] = _signature(name, abs(spec.arity) - names, spec.arity < 0)
        for container in self.containers:  # the container itself has arity -2
            self.signatures[container] = _signature(container, 1, True)

    def resolve(self, cmd_name: str) -> Tuple[str, Optional[str]]:
        """``(kind, name)``: kind is "spec", "container", "unknown_sub", "refuse" or "fakeredis"."""
        base, sep, sub = cmd_name.partition(" ")
        if base in self.containers:
            if not sep:  # "xinfo " (an empty subcommand name) is an unknown subcommand, not the bare container
                return "container", base
            full = f"{base}|{sub}"
            return ("spec", full) if full in self.specs else ("unknown_sub", base)
        if cmd_name in self.specs:
            return "spec", cmd_name
        if base.startswith("x"):  # every X* command is a stream command: never let fakeredis's XStream code run
            return "refuse", None
        return "fakeredis", None


def _signature(name: str, fixed: int, variadic: bool) -> Signature:
    return Signature(name, "_sf_call", (bytes,) * max(fixed, 0), (bytes,) if variadic else (), flags=_SKIP_RESP2)


_INFO_SIGNATURE = Signature("info", "_sf_info", (), (bytes,), flags=_SKIP_RESP2)


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    return str(value).encode()


def _c_str(raw: bytes, limit: int) -> bytes:
    """``%.{limit}s`` of a C string: cut at the first NUL, then at ``limit`` bytes."""
    return cstr(raw)[:limit]


def unknown_command_args(args: Any) -> bytes:
    """processCommand's "args beginning with" list: ``'%.*s' `` per argument while under 128 bytes."""
    out = b""
    for arg in args:
        if len(out) >= 128:
            break
        out += b"'" + _c_str(bytes(arg), 128 - len(out)) + b"' "
    return out


# ------------------------------------------------------------------------------------ socket mixin
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
        if cmd_name == "hello":
            return self._sf_hello, super()._name_to_func(cmd_name)[1]  # type: ignore[misc]
        if cmd_name == "info":
            return self._sf_info, _INFO_SIGNATURE
        if cmd_name == "client unblock":
            func, sig = super()._name_to_func(cmd_name)  # type: ignore[misc]
            return functools.partial(self._sf_client_unblock, func), sig
        if cmd_name == "copy" and _COPY_SHARES_VALUE:
            func, sig = super()._name_to_func(cmd_name)  # type: ignore[misc]
            return functools.partial(_copy_stream_first, func), sig
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

    def _sf_hello(self, *args: bytes) -> Any:
        """fakeredis's HELLO (protocol switch, AUTH, SETNAME), reporting the profile's server and version."""
        if not args:  # HELLO without a version keeps the current protocol
            args = (str(self._client_info.protocol_version).encode(),)  # type: ignore[attr-defined]
        data = self.hello(*args)  # type: ignore[attr-defined]
        profile = self._sf_session.server.profile
        return {
            b"server": profile.server.encode(),
            b"version": profile.hello_version.encode(),
            b"proto": data["proto"],
            b"id": data["id"],
            b"mode": b"standalone",
            b"role": b"master",
            b"modules": [],
        }

    def _sf_info(self, *sections: bytes) -> bytes:
        return self._sf_session.server.info(sections)

    def _sf_client_unblock(self, func: Any, client_id: int, *args: bytes) -> Any:
        """``CLIENT UNBLOCK``: a stream read parked in the engine first, else fakeredis's own (BLPOP …)."""
        reason = bytes(args[0]).lower() if len(args) == 1 else (b"timeout" if not args else b"")
        if reason in (b"timeout", b"error"):
            if self._sf_session.server.blocking.unblock(int(client_id), reason == b"error"):
                return 1
        return func(client_id, *args)


def _copy_stream_first(func: Callable[..., Any], key: Any, newkey: Any, *args: Any) -> Any:
    """COPY on fakeredis < 2.35 stores the source value itself: give it a deep copy of a stream instead."""
    if isinstance(key.value, StreamValue):
        key._value = copy.deepcopy(key.value)  # not marked modified: the source item keeps the original
    return func(key, newkey, *args)


def _copy_shares_value() -> bool:
    try:
        from fakeredis.commands_mixins.generic_mixin import GenericCommandsMixin

        return "deepcopy" not in inspect.getsource(GenericCommandsMixin.copy)
    except Exception:  # pragma: no cover - no source: copying twice is harmless
        return True


_COPY_SHARES_VALUE = _copy_shares_value()
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
    from .sessions import AsyncSession, SyncSession

    session_cls = AsyncSession if isinstance(sock, AsyncFakeSocket) else SyncSession
    sock._sf_fast = collections.deque()  # replies of stream commands run directly (fake_streams.fastpath)
    sock._sf_session = session_cls(sock, server)
    return sock


__all__ = ["AsyncConnectionBase", "Backend", "Keyspace", "Router", "StreamValue", "SyncConnectionBase", "attach"]


# --- TCP server (issue 7): one TCP client's fakeredis socket (fake_streams.tcp owns sockets and threads) ---
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
        from .tcp import ErrorReply

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
