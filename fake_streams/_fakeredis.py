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

Version shims (fakeredis 2.39 moved ``_server``/``_basefakesocket``/``_connection`` into
``_core``/``_socket``/``_clients``): every private import below has a fallback.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import importlib.metadata
import inspect
import time
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

import fakeredis
import fakeredis.aioredis as _aioredis
import redis.exceptions
from fakeredis import _msgs as msgs
from fakeredis._commands import Signature
from fakeredis._helpers import NoResponse, SimpleError, SimpleString, compile_pattern
from fakeredis.model import BaseModel

from .commands.base import CommandSpec
from .errors import ReplyError
from .reply import Status
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

    __slots__ = ("config",)

    def __init__(self, config: Dict[bytes, bytes]) -> None:
        self.config = config

    def __deepcopy__(self, memo: Any) -> _SharedConfig:
        return self

    def get_int(self, name: bytes) -> Optional[int]:
        raw = self.config.get(name)
        if raw is None:  # config names are case-insensitive
            raw = next((v for k, v in self.config.items() if bytes(k).lower() == name), None)
        try:
            return None if raw is None else int(raw)
        except (TypeError, ValueError):
            return None


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

    return property(get, set_)


class StreamValue(Stream, BaseModel):
    """A :class:`~fake_streams.stream.Stream` as fakeredis stores it (TYPE reports ``stream``).

    ``stream-node-max-entries`` / ``stream-node-max-bytes`` follow the server's CONFIG.
    """

    _model_type = b"stream"
    _sf_config: Optional[_SharedConfig] = None
    stream_node_max_entries = _config_property(b"stream-node-max-entries", "stream_node_max_entries")
    stream_node_max_bytes = _config_property(b"stream-node-max-bytes", "stream_node_max_bytes")


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


class Keyspace:
    """One fakeredis database as handlers' contexts see it. All methods need the backend lock."""

    __slots__ = ("_db",)

    def __init__(self, db: Any) -> None:
        self._db = db

    def get(self, key: bytes) -> Any:
        """The value at ``key`` (expired keys are dropped first), or ``None``. O(1)."""
        item = self._db.get(key)
        return None if item is None else item.value

    def add(self, key: bytes, value: Any) -> None:
        """Store ``value`` at the missing ``key`` with no TTL; dirties WATCH and wakes waiters."""
        item = CommandItem(key, self._db, None)
        item.update(value)
        item.writeback()

    def changed(self, key: bytes) -> None:
        """``signalModifiedKey``: dirty WATCHers of ``key`` and wake blocked readers (TTL untouched)."""
        self._db.notify_watch(key)

    def wake(self) -> None:
        _wake(self._db)

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
        self.lock = self.fake.lock
        config = self.fake.config
        config.setdefault(b"stream-node-max-entries", str(Stream.stream_node_max_entries).encode())
        config.setdefault(b"stream-node-max-bytes", str(Stream.stream_node_max_bytes).encode())
        self._config = _SharedConfig(config)

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
        """Wake every blocked client of every database. Lock held."""
        for db in list(self.fake.dbs.values()):
            _wake(db)

    def shutdown(self) -> None:
        """Refuse further commands and connections (ConnectionError), then wake blocked clients."""
        self.fake.connected = False
        with self.lock:
            self.wake()


def refresh_time(fake: Any) -> None:
    """Set fakeredis's per-command expiry clock (it does so per command; blocked re-runs need it too)."""
    now = time.time()
    for db in fake.dbs.values():
        db.time = now


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
        base, _, sub = cmd_name.partition(" ")
        if base in self.containers:
            if not sub:
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
    nul = raw.find(b"\0")
    return (raw if nul < 0 else raw[:nul])[:limit]


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
    _sf_script_argv: Any = None

    def _process_command(self, fields: Any) -> None:
        self._sf_fields = fields  # argv as typed (fakeredis lower-cases names): error texts quote it
        super()._process_command(fields)  # type: ignore[misc]

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
    session_cls = AsyncSession if isinstance(sock, AsyncFakeSocket) else SyncSession
    sock._sf_session = session_cls(sock, server)
    return sock


# ----------------------------------------------------------------------------------------- sessions
class Session:
    """One connection as :meth:`FakeStreamsServer.execute` sees it (the ``Session`` protocol of server.py)."""

    __slots__ = ("_sock", "server", "depth", "from_script", "unit")

    def __init__(self, sock: Any, server: Any) -> None:
        self._sock = sock
        self.server = server
        self.depth = 0  # nesting of fakeredis _run_command: 0 = between commands
        self.from_script = False
        self.unit: Any = None  # the current execution unit (server.ExecUnit)

    @property
    def keyspace(self) -> Keyspace:
        return Keyspace(self._sock._db)

    @property
    def protocol(self) -> int:
        sock = self._sock
        resp = getattr(sock, "_resp_version", None)  # fakeredis >= 2.39 follows the script's RESP mode
        if resp is not None:
            return int(resp)
        return 2 if self.from_script else int(sock._client_info.protocol_version)

    @property
    def in_multi(self) -> bool:
        return bool(getattr(self._sock, "_in_transaction", False))

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

    def call(self, spec: CommandSpec, args: list, argv: list) -> Any:
        """Run an engine command; errors become fakeredis SimpleErrors, replies fakeredis values."""
        try:
            reply = self.server.execute(self, spec, args, argv)
        except ReplyError as exc:
            raise error(exc, self.server.profile) from None
        return to_wire(reply)

    def notify(self, event: str, key: bytes) -> None:
        """Keyspace notification of class ``t`` (stream), as ``notify-keyspace-events`` asks (default: none)."""
        fake = self._sock._server
        flags = getattr(fake, "config", {}).get(b"notify-keyspace-events", b"")
        if not flags or (b"t" not in flags and b"A" not in flags):
            return
        if not fake.subscribers and not fake.psubscribers:
            return
        db, name = self._sock._db_num, event.encode()
        messages = []
        if b"K" in flags:
            messages.append((b"__keyspace@%d__:%s" % (db, key), name))
        if b"E" in flags:
            messages.append((b"__keyevent@%d__:%s" % (db, name), key))
        for channel, message in messages:
            for sock in list(fake.subscribers.get(channel, ())):
                sock.put_response([b"message", channel, message])
            for pattern, socks in list(fake.psubscribers.items()):
                if compile_pattern(pattern).match(channel):
                    for sock in list(socks):
                        sock.put_response([b"pmessage", pattern, channel, message])

    def _closed(self) -> bool:
        fake = self._sock._server
        return fake is None or not fake.connected or self.server.closed

    def _unblocked(self) -> bool:
        """CLIENT UNBLOCK (fakeredis records it on the socket): True for TIMEOUT; raises for ERROR."""
        reason = getattr(self._sock, "_unblock_reason", None)
        if reason is None:
            return False
        self._sock._unblock_reason = None
        if reason == b"error":
            raise ReplyError("UNBLOCKED_BY_CLIENT")
        return True


class SyncSession(Session):
    __slots__ = ()

    def park(self, attempt: Callable[[], Tuple[bool, Any]], deadline_ms: Optional[int], clock: Any) -> Any:
        """Wait in the calling thread (holding the lock, as fakeredis's command does) until ``attempt``
        reports done; re-run on every keyspace change (and every manual-clock move)."""
        sock = self._sock
        db, fake = sock._db, sock._server
        sock._blocked = True
        try:
            while True:
                timeout = None
                if deadline_ms is not None and not clock.manual:
                    timeout = max(0.0, (deadline_ms - clock.now_ms()) / 1000.0)
                db.condition.wait(timeout)
                if self._closed():
                    raise redis.exceptions.ConnectionError("Connection closed by server.")
                if self._unblocked():
                    return None
                refresh_time(fake)
                done, reply = attempt()
                if done:
                    return reply
        finally:
            sock._blocked = False
            sock._unblock_reason = None


class AsyncSession(Session):
    __slots__ = ()

    def park(self, attempt: Callable[[], Tuple[bool, Any]], deadline_ms: Optional[int], clock: Any) -> Any:
        """Never block the event loop: pause the socket, finish in a task, reply later (fakeredis's way)."""
        sock = self._sock
        loop = asyncio.get_running_loop()
        event = asyncio.Event()

        def wake() -> None:  # any thread, lock held
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # loop closed
                pass

        sock._db.add_change_callback(wake)
        sock._blocked = True
        sock.pause()
        loop.create_task(self._wait(attempt, deadline_ms, clock, event, wake, sock._db, sock._server))
        return NoResponse()

    async def _wait(self, attempt: Any, deadline_ms: Any, clock: Any, event: Any, wake: Any, db: Any, fake: Any) -> None:
        sock, result, deliver = self._sock, None, True
        try:
            while True:
                timeout = None
                if deadline_ms is not None and not clock.manual:
                    timeout = max(0.0, (deadline_ms - clock.now_ms()) / 1000.0)
                try:
                    await asyncio.wait_for(event.wait(), timeout)
                except asyncio.TimeoutError:
                    pass
                event.clear()
                if self._closed():
                    deliver = False
                    return
                with fake.lock:
                    refresh_time(fake)
                    try:
                        done, reply = (True, None) if self._unblocked() else attempt()
                    except ReplyError as exc:
                        done, reply = True, error(exc, self.server.profile)
                if done:
                    result = to_wire(reply)
                    return
        except BaseException:
            deliver = False
            raise
        finally:
            with fake.lock:
                db.remove_change_callback(wake)
            sock._blocked = False
            sock._unblock_reason = None
            if deliver:
                sock.put_response(sock._decode_result(result))
            try:
                sock.resume()
            except Exception:  # the socket was closed meanwhile
                pass


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
