"""``FakeStreamsServer``: one emulated server = a keyspace (held by fakeredis) + a clock + a profile.

Every stream command, whichever way it arrives (a connection, inside EXEC, from Lua), goes through
:meth:`FakeStreamsServer.execute`, which builds the handler's :class:`~fake_streams.commands.base.Context`,
runs the handler and parks the client when it returns a :class:`~fake_streams.commands.base.BlockRequest`
(:mod:`fake_streams.blocking`). This module never imports fakeredis; the adapter
:mod:`fake_streams._fakeredis` does.

Execution units: a command, a whole EXEC and a whole script each form one :class:`ExecUnit` — one
``now_ms`` snapshot on ``time_snapshot`` profiles, and one list of keys signalled ready, served
when the unit ends (:meth:`FakeStreamsServer.finish_unit`).

Hooks for tests and the pytest plugin (all thread-safe unless noted):

* :attr:`FakeStreamsServer.faults` — ``None``, or an object with
  ``on_command(client_id: int, argv: List[bytes]) -> Optional[str]``, called before every command of
  every client (stream or not; outside the server lock; argv as sent). Return ``None`` to run the
  command, an error line (``"ERR injected failure"``) to answer that error instead (inside MULTI the
  transaction then aborts at EXEC, as for a command refused at queue time), or raise
  ``redis.exceptions.ConnectionError`` to fail the call as a dropped connection (redis-py closes it;
  a retry reconnects). A hook whose ``idle`` attribute is true (a :class:`~fake_streams.faults.Faults`
  with no rule armed) promises to answer ``None`` to everything for now: the direct path runs then.
* :attr:`FakeStreamsServer.connected` — set ``False`` to act like a server that is down: blocked
  calls fail with ConnectionError at once, every client's next command fails with ConnectionError,
  new connections are refused; ``True`` brings it back.
* :meth:`FakeStreamsServer.blocked` — frozen :class:`~fake_streams.blocking.BlockedClient` records of
  the blocked clients; :meth:`FakeStreamsServer.wait_until_blocked` waits for ``n`` of them (no polling).
* :meth:`FakeStreamsServer.close` — blocked calls fail with ConnectionError within a second, the
  server's timer thread ends, later commands fail with ConnectionError.
* ``block_safety_s`` (constructor, default 60 s, ``None`` = off) — a blocked call that waits longer
  than that in real time fails with :class:`~fake_streams.blocking.BlockSafetyError`, whose message
  says when the ManualClock was never advanced past the BLOCK deadline.
"""

from __future__ import annotations

import threading
import traceback
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple

import redis.exceptions

from . import _fakeredis
from . import info as info_model
from .blocking import BLOCKED, DEFAULT_BLOCK_SAFETY_S, NOT_SERVED, BlockedClient, BlockingRegistry, Waiter
from .clock import Clock, SystemClock
from .commands import COMMANDS
from .commands.base import BlockRequest, CommandSpec
from .errors import ReplyError
from .profiles import Profile, get_profile
from .stream import Stream

if TYPE_CHECKING:
    import redis.asyncio


class ExecUnit:
    """One execution unit: the ``now`` snapshot (taken on first use) and the keys signalled ready."""

    __slots__ = ("snapshot_ms", "ready")

    def __init__(self) -> None:
        self.snapshot_ms: Optional[int] = None
        self.ready: List[Tuple[Any, bytes]] = []  # (database identity, key), each once, in signal order


class Session(Protocol):
    """What :meth:`FakeStreamsServer.execute` needs from a connection (implemented by the adapter)."""

    keyspace: Any  # the selected database: get, add, changed, peek, ident (see _fakeredis.Keyspace)
    protocol: int  # RESP version of the reply (inside Lua: the script's RESP mode)
    in_multi: bool
    from_script: bool
    unit: Optional[ExecUnit]
    client_id: int  # CLIENT ID
    db: int  # selected database number
    alive: bool  # False once the connection is closed

    def notify(self, event: str, key: bytes) -> None: ...

    def set_blocked(self, blocked: bool) -> None: ...

    def deliver(self, reply: Any) -> None:
        """The reply of a parked command (lock held, any thread): a value, a ReplyError or an exception."""


class _Execution:
    """The :class:`~fake_streams.commands.base.Context` of one handler call.

    ``protocol``, ``in_multi`` and ``from_script`` are read from the session when a handler asks (they
    cannot change while it runs): most handlers never ask, and building a context stays a few stores.
    """

    __slots__ = ("_server", "_session", "_unit", "_keyspace", "profile", "argv")

    def __init__(self, server: FakeStreamsServer, session: Session, unit: ExecUnit, argv: List[bytes]) -> None:
        #: the whole command as the client typed it (name and subcommand included), for error texts
        self.argv = argv
        self._server = server
        self._session = session
        self._unit = unit
        self._keyspace = session.keyspace
        self.profile = server.profile

    @property
    def protocol(self) -> int:
        return self._session.protocol

    @property
    def in_multi(self) -> bool:
        return self._session.in_multi

    @property
    def from_script(self) -> bool:
        return self._session.from_script

    @property
    def now_ms(self) -> int:
        return self._server.now_ms(self._unit)

    def lookup(self, key: bytes) -> Optional[Stream]:
        """``lookupKey``: the stream at ``key`` (None if missing), touched (OBJECT IDLETIME / FREQ). O(1)."""
        keyspace = self._keyspace
        value = keyspace.get(key)
        if value is None:
            return None
        # before the type check, as the server does; stamped with the unit's time if it is taken (LRU_CLOCK() is a
        # cached clock in the server too: the time of the command, not of the lookup)
        self._server.access.touch(keyspace.access_table, key, self._unit.snapshot_ms)
        if isinstance(value, Stream):
            return value
        raise ReplyError("WRONGTYPE")

    def create(self, key: bytes) -> Stream:
        value = self._server.backend.new_stream()
        keyspace = self._keyspace
        keyspace.add(key, value)
        keyspace.access_table[key] = self._server.access.fresh()
        return value

    def modified(self, key: bytes) -> None:
        self._keyspace.changed(key)

    def signal_ready(self, key: bytes) -> None:
        self._server.blocking.signal(self._unit, self._keyspace.ident, key)

    def notify(self, event: str, key: bytes) -> None:
        self._session.notify(event, key)


class FakeStreamsServer:
    """An in-memory Redis/Valkey server whose stream commands run in the engine.

    >>> server = FakeStreamsServer(version="7.4")
    >>> client = server.client()
    >>> client.set("k", "v")
    True
    >>> client.type("k")
    b'string'
    >>> server.close()

    ``version`` picks the profile (``"7.0"``, ``"7.2"``, ``"7.4"``, ``"valkey-8.0"``); ``clock`` drives
    stream IDs, idle times and BLOCK deadlines (default :class:`SystemClock`; pass a
    :class:`~fake_streams.clock.ManualClock` to steer time). Key expiry (EXPIRE/TTL) follows
    fakeredis, i.e. the wall clock. ``block_safety_s``: the real-time limit of a blocked call (see the
    module docstring). ``commands`` replaces the command table (tests).
    """

    _registry: ClassVar[Dict[str, FakeStreamsServer]] = {}
    #: the :class:`~fake_streams.topology.cluster.ClusterNode` this server is (cluster mode), or None (standalone)
    cluster_node: Any = None
    #: the :class:`~fake_streams.topology.replica.ReplicaNode` this server is (a master or replica of a replication
    #: group), or None
    replication: Any = None
    #: the :class:`~fake_streams.topology.sentinel.SentinelState` of a sentinel (this server answers only the
    #: sentinel's commands), or None
    sentinel: Any = None
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        version: str | Profile | None = "7.4",
        clock: Optional[Clock] = None,
        *,
        block_safety_s: Optional[float] = DEFAULT_BLOCK_SAFETY_S,
        commands: Optional[Mapping[str, CommandSpec]] = None,
    ) -> None:
        self.profile: Profile = get_profile(version)
        self.clock: Clock = clock if clock is not None else SystemClock()
        table = COMMANDS if commands is None else commands
        # a command of a later version (spec.feature) does not exist on this profile: `unknown command`
        self.commands: Mapping[str, CommandSpec] = {
            name: cmd for name, cmd in table.items() if cmd.feature is None or self.profile.has(cmd.feature)
        }
        #: unexpected Python exceptions raised by handlers: (command, args, traceback text)
        self.internal_errors: List[Tuple[str, List[bytes], str]] = []
        self.closed = False
        self.address: Optional[str] = None
        self.router = (_fakeredis.Router.default(self.commands, self.profile.name) if commands is None
                       else _fakeredis.Router(self.commands))
        self.backend = _fakeredis.Backend(self.profile)  # the fakeredis server behind (internal)
        self.blocking = BlockingRegistry(self, block_safety_s)  # the blocked clients (internal)
        self.backend.install_hooks(self.blocking)
        #: the keys' LRU clock / LFU counter (OBJECT IDLETIME / FREQ) on this server's clock (internal)
        self.access = self.backend.install_access(self.clock.now_ms)
        #: callables run after a SHUTDOWN closed the server (``python -m fake_streams serve`` exits)
        self.shutdown_hooks: List[Callable[[], None]] = []
        #: fault injection hook (see the module docstring); None = none
        self.faults: Any = None
        #: False: every stream command takes fakeredis's dispatch path (fake_streams.fastpath; tests)
        self.fast_path = True
        self._snapshot = self.profile.has("time_snapshot")
        self._started_ms = self.clock.now_ms()
        #: INFO's counters (commandstats, errorstats, totals; reset by CONFIG RESETSTAT)
        self.stats = info_model.ServerStats()
        self._info = info_model.InfoRenderer(self.profile, self._started_ms)
        self._unsubscribe = self.clock.subscribe(self._on_clock_change) if self.clock.manual else None

    @property
    def version(self) -> str:
        """The profile's public name (``"7.4"`` …)."""
        return self.profile.name

    def __repr__(self) -> str:
        where = f", address={self.address!r}" if self.address else ""
        return f"FakeStreamsServer(version={self.version!r}, clock={self.clock!r}{where})"

    # ------------------------------------------------------------------------ shared servers
    @classmethod
    def for_address(cls, host: Any = "localhost", port: Any = 6379, version: Optional[str] = None) -> FakeStreamsServer:
        """The server every connection to ``host:port`` shares (created on first use)."""
        return cls._shared(f"{host}:{port}", version)

    @classmethod
    def for_path(cls, path: str, version: Optional[str] = None) -> FakeStreamsServer:
        """The server every connection to the Unix socket ``path`` shares."""
        return cls._shared(f"unix:{path}", version)

    @classmethod
    def _shared(cls, address: str, version: Optional[str]) -> FakeStreamsServer:
        with cls._registry_lock:
            server = cls._registry.get(address)
            if server is None:
                server = cls._registry[address] = cls(version or "7.4")
                server.address = address
            return server

    @classmethod
    def reset_registry(cls) -> None:
        """Close and forget every shared (address-keyed) server."""
        with cls._registry_lock:
            servers = list(cls._registry.values())
            cls._registry.clear()
        for server in servers:
            server.close()

    # -------------------------------------------------------------------------------- clients
    def client(self, **kwargs: Any) -> redis.Redis:
        """A ``redis.Redis`` on this server (kwargs go to its ConnectionPool: protocol, decode_responses, db …)."""
        import redis

        from .connection import FakeStreamsConnection

        pool = redis.ConnectionPool(connection_class=FakeStreamsConnection.bind(self), **kwargs)
        return redis.Redis(connection_pool=pool)

    def async_client(self, **kwargs: Any) -> redis.asyncio.Redis:
        """A ``redis.asyncio.Redis`` on this server."""
        import redis.asyncio

        from .connection import FakeStreamsAsyncConnection

        pool = redis.asyncio.ConnectionPool(connection_class=FakeStreamsAsyncConnection.bind(self), **kwargs)
        return redis.asyncio.Redis(connection_pool=pool)

    # ------------------------------------------------------------------------------ execution
    def execute(self, session: Session, spec: CommandSpec, args: List[bytes], argv: Optional[List[bytes]] = None,
                ctx: Optional[_Execution] = None, now_ms: Optional[int] = None) -> Any:
        """Run ``spec`` with ``args`` (after the command/subcommand name) for ``session``.

        The single entry point of every stream command. ``argv`` is the whole command as typed
        (default: the lower-case names + ``args``). Call it with the backend lock held (the adapter
        does). Returns the reply value; raises :class:`ReplyError` for an error reply.

        ``ctx``: a context of this server and session (:meth:`context`) that a connection keeps for its top-level
        commands (the direct path: one per socket instead of one per command); used only when no execution unit
        is open (else a fresh context joins that unit). It is re-aimed at this command (argv, the selected
        database) and its own unit is reset, so what the handler sees is what a fresh one would show; ``now_ms``:
        the clock's time as the caller has just read it, the unit's snapshot (the command's time: its
        ``now`` on ``time_snapshot`` profiles, the keys' access stamps on every profile).
        """
        if argv is None:
            argv = [part.encode() for part in spec.name.split("|")] + list(args)
        unit = session.unit
        own_unit = unit is None
        if unit is None:
            if ctx is not None:
                unit = session.unit = ctx._unit  # (finish_unit leaves its ready list empty)
                unit.snapshot_ms = now_ms
                if unit.ready:  # (left by a finish_unit that raised: a fresh unit would not have them either)
                    unit.ready = []
                ctx.argv = argv
                ctx._keyspace = session.keyspace  # (SELECT changes it between commands)
            else:
                unit = session.unit = ExecUnit()
        else:
            ctx = None
        try:
            handler = spec.handler  # = _call, inlined: this is the path of every command
            if handler is None:  # a container's own entry: the transport answers for it
                raise ReplyError("WRONG_ARITY", command=spec.name)
            try:
                reply = handler(ctx or _Execution(self, session, unit, argv), args)
            except ReplyError:
                raise
            except Exception as exc:
                raise self._internal_error(spec, args, exc) from None
            if isinstance(reply, BlockRequest):
                if session.in_multi or session.from_script:  # handlers answer nil there; be safe
                    return None
                self.blocking.block(session, spec, reply, argv, self.now_ms(unit))
                return BLOCKED
            return reply
        finally:
            if own_unit:
                session.unit = None
                self.blocking.finish_unit(unit)

    def context(self, session: Session) -> _Execution:
        """A context for :meth:`execute`'s ``ctx`` (a connection keeps it for its top-level commands), with its own
        execution unit."""
        return _Execution(self, session, ExecUnit(), [])

    def _call(
        self, session: Session, unit: ExecUnit, spec: CommandSpec, args: List[bytes], argv: List[bytes],
        handler: Optional[Callable[[Any, List[bytes]], Any]] = None,
    ) -> Any:
        handler = handler or spec.handler
        if handler is None:  # a container's own entry: the transport answers for it
            raise ReplyError("WRONG_ARITY", command=spec.name)
        try:
            return handler(_Execution(self, session, unit, argv), args)
        except ReplyError:
            raise
        except Exception as exc:
            raise self._internal_error(spec, args, exc) from None

    def _internal_error(self, spec: CommandSpec, args: List[bytes], exc: Exception) -> ReplyError:
        """A handler bug (called in its ``except``): recorded; answered with an error reply, never a crash."""
        self.internal_errors.append((spec.name, list(args), traceback.format_exc()))
        return ReplyError("INTERNAL_ERROR", command=spec.name, detail=f"{type(exc).__name__}: {exc}")

    def rerun(self, waiter: Waiter, key: Optional[bytes] = None) -> Any:
        """Run a parked command again for its client (lock held; called by the blocking registry).

        R7.2+: the handler with the rewritten args (``key`` is None); returns a reply or a new
        BlockRequest, raises ReplyError. R7.0 (``key`` given): serve from the saved state for that key
        only; :data:`~fake_streams.blocking.NOT_SERVED` when the client stays blocked.
        """
        session, req = waiter.session, waiter.req
        handler = None
        if key is not None:
            from .commands.xread import serve_blocked_r70

            saved_read = req.saved
            assert saved_read is not None  # an R7.0 profile's BlockRequest carries the saved read

            def handler(ctx: Any, args: List[bytes]) -> Any:
                reply = serve_blocked_r70(ctx, key, saved_read)
                return NOT_SERVED if reply is None else reply

        saved, unit = session.unit, ExecUnit()
        session.unit = unit
        try:
            args = list(req.args)
            return self._call(session, unit, waiter.spec, args, waiter.prefix + args, handler)
        finally:
            session.unit = saved
            self.finish_unit(unit)

    def new_unit(self) -> ExecUnit:
        return ExecUnit()

    def now_ms(self, unit: Optional[ExecUnit]) -> int:
        """``now`` for a handler: the unit's snapshot on ``time_snapshot`` profiles, else the live clock."""
        if not self._snapshot or unit is None:
            return self.clock.now_ms()
        if unit.snapshot_ms is None:
            unit.snapshot_ms = self.clock.now_ms()
        return unit.snapshot_ms

    def finish_unit(self, unit: Optional[ExecUnit]) -> None:
        """End of an execution unit (lock held): serve the clients blocked on the keys it signalled."""
        if unit is not None:
            self.blocking.finish_unit(unit)

    def _on_clock_change(self) -> None:
        """A manual clock moved: time out the blocked clients whose deadline has passed."""
        if self.closed:
            return
        with self.backend.lock:
            self.blocking.on_clock_change()

    # ------------------------------------------------------------------------------------ INFO
    def info(self, sections: Sequence[bytes]) -> bytes:
        """The INFO reply for ``INFO sections…`` (lock held): every section and field the profile's server
        reports, with live values (:mod:`fake_streams.info`); a sentinel's own sections on a sentinel."""
        if self.sentinel is not None:
            self._info.sentinel_mode = True
            return self.sentinel.info(sections, self._render_info)  # type: ignore[no-any-return]
        return self._render_info(sections)

    def _render_info(self, sections: Sequence[bytes]) -> bytes:
        names = info_model.select(self.profile.table_name, sections)
        with_keys = "memory" in names or "keyspace" in names
        port = self.address.rsplit(":", 1)[-1] if self.address and not self.address.startswith("unix:") else "6379"
        snap = _fakeredis.info_snapshot(self.backend, self.blocking.snapshot(), int(port) if port.isdigit() else 0,
                                        with_keys)
        self._info.cluster_enabled = self.cluster_node is not None
        self._info.replication = self.replication
        return self._info.render(sections, self.stats, snap, self.clock.now_ms())

    # ---------------------------------------------------------------------------- management
    def set_requirepass(self, password: Optional[str]) -> None:
        """As ``CONFIG SET requirepass password`` (None or "" = none): connections made from now on must AUTH
        (``NOAUTH Authentication required.`` until they do); connections already made stay authenticated."""
        with self.backend.lock:
            _fakeredis.set_requirepass(self.backend.fake, (password or "").encode(), config=True)

    def flushall(self) -> None:
        """Drop every key of every database (like FLUSHALL; WATCHers are dirtied, blocked XREADGROUP released)."""
        with self.backend.lock:
            unit = ExecUnit()
            self.backend.flush()
            self.finish_unit(unit)

    # -------------------------------------------------------------------------------- hooks
    @property
    def connected(self) -> bool:
        """False while the server plays "down" (see the module docstring)."""
        return not self.closed and bool(self.backend.fake.connected)

    @connected.setter
    def connected(self, value: bool) -> None:
        if value and self.closed:
            raise RuntimeError(f"{self!r} is closed")
        self.backend.fake.connected = bool(value)
        if not value:
            with self.backend.lock:
                self.blocking.release_all(_server_gone())

    def blocked(self) -> List[BlockedClient]:
        """The clients blocked in XREAD/XREADGROUP now, in the order they blocked (frozen records)."""
        return self.blocking.snapshot()

    def wait_until_blocked(self, n: int = 1, timeout_s: float = 5.0) -> List[BlockedClient]:
        """Wait until at least ``n`` clients are blocked (woken by each block, no polling); returns
        :meth:`blocked`. Raises ``TimeoutError`` after ``timeout_s`` seconds of real time."""
        return self.blocking.wait_until(n, timeout_s)

    def request_shutdown(self) -> None:
        """SHUTDOWN: a running script stops, the server closes (in another thread: the caller may hold the lock),
        then every callable in :attr:`shutdown_hooks` runs (``serve`` exits). Idempotent."""
        self.stop_scripts()

        def run() -> None:
            self.close()
            for hook in list(self.shutdown_hooks):
                hook()

        threading.Thread(target=run, name="fake-streams-shutdown", daemon=True).start()

    def stop_scripts(self) -> None:
        """Stop a running Lua script at its next count hook, even one that wrote (a shutdown: SIGTERM, close)."""
        _fakeredis.abort_scripts(self.backend.fake)

    def close(self) -> None:
        """Disconnect: blocked calls and later commands of this server's clients fail with ConnectionError.

        Blocked clients are released at once (the lock is waited for at most 1 s), the timer thread
        ends. Idempotent.
        """
        if self.closed:
            return
        self.closed = True
        if self._unsubscribe is not None:
            self._unsubscribe()
        with self._registry_lock:
            if self.address and self._registry.get(self.address) is self:
                del self._registry[self.address]
        self.backend.fake.connected = False
        self.stop_scripts()  # a looping script lets go of the lock
        locked = self.backend.lock.acquire(timeout=1.0)
        try:
            self.blocking.release_all(_server_gone())
        finally:
            if locked:
                self.backend.lock.release()
        self.blocking.close()
        self.backend.shutdown()


def _server_gone() -> BaseException:
    """What a blocked call gets when the server closes or goes down (redis-py's own wording)."""
    return redis.exceptions.ConnectionError("Connection closed by server.")


__all__ = ["BlockedClient", "ExecUnit", "FakeStreamsServer", "Session"]
