"""The handle the ``fake_redis_streams`` fixture yields: fake servers, clients, clock, views, faults."""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any, Dict, List, Optional, Tuple

import redis
import redis.asyncio
from redis.connection import parse_url

from fake_streams import inspect as views
from fake_streams.clock import Clock, ManualClock, SystemClock
from fake_streams.connection import FakeStreamsAsyncConnection, FakeStreamsConnection
from fake_streams.faults import Faults
from fake_streams.patching import FakeNetwork, PoolPatch, parse_address
from fake_streams.server import FakeStreamsServer

from ._options import Options


class FakeRedisStreams:
    """What ``fake_redis_streams`` yields (exposed for type hints; the constructor is private).

    * ``.client`` — a sync ``redis.Redis`` on ``.url`` (made on first use); ``.async_client(**kw)`` —
      a new ``redis.asyncio.Redis``; all are closed at teardown.
    * ``.server`` — the :class:`~fake_streams.FakeStreamsServer` at ``.url``; ``.server_for(url)`` —
      the one any other address reaches (each ``host:port`` is its own server, ``db`` its database).
    * ``.clock`` — the clock of every server (``.advance(ms)`` / ``.set(ms)`` when manual).
    * ``.stream(key)``, ``.group(key, name)``, ``.streams()``, ``.assert_all_acked(...)`` — frozen views.
    * ``.faults`` — :class:`~fake_streams.faults.Faults` of ``.server`` (``fail_next``, ``drop``, ``outage``).
    * ``.connection_class`` / ``.async_connection_class`` — to inject where code takes a connection class.
    * ``.serve()`` — the same server over TCP for subprocesses and non-Python clients; returns its URL.
    * ``.cluster`` / ``.sentinel`` — the :class:`~fake_streams.topology.FakeCluster` /
      :class:`~fake_streams.topology.sentinel.FakeSentinel` of ``topology="cluster"`` / ``"sentinel"``.
    """

    real = False

    def __init__(self, options: Options) -> None:
        self.options = options
        self.url: str = options.url
        self.clock: Clock = ManualClock(options.start_ms) if options.clock == "manual" else SystemClock()
        # the factory does not hold the handle: no handle <-> network cycle for the cyclic GC (issue 13)
        self.network = FakeNetwork(options.version, self.clock, factory=functools.partial(_new_server, options.version,
                                                                                          self.clock))
        self._address, self._db = parse_address(self.url)
        #: the :class:`~fake_streams.topology.FakeCluster` of ``topology="cluster"`` (None: standalone)
        self.cluster: Any = None
        #: the :class:`~fake_streams.topology.sentinel.FakeSentinel` of ``topology="sentinel"`` (None otherwise)
        self.sentinel: Any = None
        if options.topology == "cluster":
            self.cluster = self._new_cluster()
            self.server: FakeStreamsServer = self.cluster.nodes[0].server
        elif options.topology == "sentinel":
            self.sentinel = self._new_sentinel()
            self.server = self.sentinel.group.owner  # the dataset: the master's, whichever node is master now
        else:
            self.server = self.network.server_at(self._address)
        self._client: Any = None
        self._async_clients: List[Any] = []
        self._closed = False
        self._tcp: List[Any] = []
        self._patch: Optional[PoolPatch] = None
        if options.patch:
            self._patch = PoolPatch(self.network.replacement, self.network.replacement, options.passthrough_hosts)
            self._patch.install()

    def _new_cluster(self) -> Any:
        """``cluster_nodes`` masters at the url's host, its port and the ports after it."""
        from fake_streams.topology import FakeCluster

        if self._db:
            raise ValueError(f"fake_redis_streams: a cluster has database 0 only; url {self.url!r} names {self._db}")
        host, _, port = self._address.rpartition(":")
        return FakeCluster(self.options.cluster_nodes, host=host, base_port=int(port), version=self.options.version,
                           clock=self.clock, network=self.network,
                           server_factory=functools.partial(_new_server, self.options.version, self.clock, ""))

    def _new_sentinel(self) -> Any:
        """A master at the url, ``sentinel_replicas`` replicas at the ports after it, a sentinel at
        ``sentinel_port`` on the url's host, watching ``sentinel_master``."""
        from fake_streams.topology.sentinel import FakeSentinel

        host, _, port = self._address.rpartition(":")
        options = self.options
        return FakeSentinel(options.sentinel_master, options.sentinel_replicas, host=host, port=int(port),
                            sentinel_port=options.sentinel_port, version=options.version, clock=self.clock,
                            network=self.network, master=_new_server(options.version, self.clock, ""))

    def __repr__(self) -> str:
        return f"<fake_redis_streams url={self.url!r} version={self.options.version!r} clock={self.clock!r}>"

    # -------------------------------------------------------------------------------- clients
    def _client_kwargs(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        out = self.options.client_kwargs()
        out.update(kwargs)
        return out

    @property
    def client(self) -> Any:
        """A sync ``redis.Redis`` on ``.url`` (created on first use, closed at teardown); with
        ``topology="cluster"`` a ``redis.cluster.RedisCluster``; with ``topology="sentinel"`` the master of
        ``redis.sentinel.Sentinel(...).master_for(sentinel_master)`` (it follows a failover)."""
        if self._client is None and self.cluster is not None:
            self._client = self.cluster.client(**self._client_kwargs({}))
        if self._client is None and self.sentinel is not None:
            self._client = self.sentinel.master_for(db=self._db, **self._client_kwargs({}))
        if self._client is None:
            # the stock class bound by server=: no class made per test (a class is freed by the cyclic GC only);
            # = Redis.from_url(self.url, connection_class=…, server=…, …) with the URL parsed once per session
            kwargs = self._client_kwargs({})
            kwargs.update(_url_options(self.url))
            kwargs["connection_class"] = FakeStreamsConnection
            _without_maint_notifications(kwargs, redis.ConnectionPool)
            self._client = _pool_client(redis.ConnectionPool(server=self.server, **kwargs))
        return self._client

    def async_client(self, **kwargs: Any) -> redis.asyncio.Redis:
        """A new ``redis.asyncio.Redis`` on ``.url``; ``kwargs`` override the pool options (closed at teardown);
        with ``topology="cluster"`` a ``redis.asyncio.cluster.RedisCluster``, with ``topology="sentinel"`` the
        master of ``redis.asyncio.sentinel.Sentinel(...).master_for(sentinel_master)``."""
        if self.sentinel is not None:
            master = self.sentinel.async_master_for(db=self._db, **self._client_kwargs(kwargs))
            self._async_clients.append(master)
            return master  # type: ignore[no-any-return]
        if self.cluster is not None:
            cluster_client = self.cluster.async_client(**self._client_kwargs(kwargs))
            self._async_clients.append(cluster_client)
            return cluster_client  # type: ignore[no-any-return]
        options = self._client_kwargs(kwargs)
        _without_maint_notifications(options, redis.asyncio.ConnectionPool)
        client = redis.asyncio.Redis.from_url(self.url, connection_class=FakeStreamsAsyncConnection, server=self.server,
                                              **options)
        self._async_clients.append(client)
        return client

    @property
    def connection_class(self) -> type:
        """The sync connection class to inject (``ConnectionPool(connection_class=...)``, Django's
        ``CONNECTION_POOL_KWARGS``): its connections reach the server of the address they are given."""
        return self.network.sync_class

    @property
    def async_connection_class(self) -> type:
        """The asyncio twin of :attr:`connection_class`."""
        return self.network.async_class

    def server_for(self, url: str) -> FakeStreamsServer:
        """The fake server a client of ``url`` reaches (``redis://host:port``, ``rediss://``, ``unix://``)."""
        return self.network.server_for(url)

    def servers(self) -> Dict[str, FakeStreamsServer]:
        """``{address: server}`` of every fake server this test used."""
        return self.network.servers()

    # ---------------------------------------------------------------------------------- views
    def _target(self, db: Optional[int], url: Optional[str], key: Any = None) -> Tuple[FakeStreamsServer, int]:
        if url is None and key is not None and self.cluster is not None:  # the node that owns the key
            return self.cluster.node_for_key(key).server, 0
        if url is None:
            return self.server, self._db if db is None else db
        address, url_db = parse_address(url)
        return self.network.server_at(address), url_db if db is None else db

    def stream(self, key: Any, *, db: Optional[int] = None, url: Optional[str] = None) -> views.StreamView:
        """A frozen view of stream ``key`` (entries, counters, groups); LookupError if there is none."""
        __tracebackhide__ = True
        server, index = self._target(db, url, key)
        return views.stream_view(server, key, index)

    def group(self, key: Any, name: Any, *, db: Optional[int] = None, url: Optional[str] = None) -> views.GroupView:
        """A frozen view of group ``name`` of stream ``key`` (consumers, pending entries, last id, lag)."""
        __tracebackhide__ = True
        return self.stream(key, db=db, url=url).group(name)

    def streams(self, *, db: Optional[int] = None, url: Optional[str] = None) -> List[Any]:
        """The stream keys of the database (sorted)."""
        server, index = self._target(db, url)
        return [key for _, key in views.stream_keys(server, index)]

    def assert_all_acked(
        self, stream: Any = None, group: Any = None, *, db: Optional[int] = None, url: Optional[str] = None
    ) -> None:
        """Fail unless every delivered entry was XACKed (of ``stream`` / ``group``; default: all)."""
        __tracebackhide__ = True
        if stream is None and url is None and self.cluster is not None:  # every node
            for node in self.cluster.nodes:
                views.assert_all_acked(node.server, None, group, 0)
            return
        server, index = self._target(db, url, stream)
        views.assert_all_acked(server, stream, group, index)

    def blocked(self) -> Any:
        """The clients blocked on ``.server`` now (see ``FakeStreamsServer.blocked``)."""
        return self.server.blocked()

    def wait_until_blocked(self, n: int = 1, timeout_s: float = 5.0) -> Any:
        """Wait (real time, bounded) until ``n`` clients are blocked on ``.server``."""
        return self.server.wait_until_blocked(n, timeout_s)

    def serve(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve ``.server`` over TCP (RESP2/RESP3) and return its ``redis://`` URL; closed at teardown.

        Subprocesses, redis-cli or non-Python services reach the same state as ``.client``.
        """
        from fake_streams.tcp import serve

        if self.cluster is not None:  # one node over TCP would announce ports nobody listens on
            raise RuntimeError("fake_redis_streams.serve() serves one server; a cluster over TCP is "
                               "fake_streams.topology.serving.serve_cluster(n) or `python -m fake_streams serve "
                               "--cluster N`")
        if self.sentinel is not None:
            raise RuntimeError("fake_redis_streams.serve() serves one server; a sentinel deployment over TCP is "
                               "fake_streams.topology.serving.serve_sentinel() or `python -m fake_streams serve "
                               "--sentinel`")
        handle = serve(self.server, host=host, port=port)
        self._tcp.append(handle)
        # patched in-process clients of this URL must reach the same server, not a new one at that address
        self.network.alias(parse_address(handle.url)[0], self.server)
        return handle.url

    @property
    def faults(self) -> Faults:
        """Fault injection on ``.server`` (``server_for(url).faults`` for another address)."""
        return Faults.install(self.server)

    def flushall(self) -> None:
        """FLUSHALL on every server of this test."""
        for server in self.network.servers().values():
            server.flushall()

    def report(self) -> str:
        """The failure-report text: streams, groups and PELs of every server, armed and fired faults."""
        text = views.render(self.network.servers())
        faults = [(a, s.faults) for a, s in self.network.servers().items() if isinstance(getattr(s, "faults", None), Faults)]
        for address, f in faults:
            described = f.describe()
            if described:
                text += f"\nfaults of {address}:\n" + described
        return text

    # ------------------------------------------------------------------------------- teardown
    def close(self) -> None:
        """Close clients and servers and undo the patch; AssertionError if the fake saw a problem."""
        __tracebackhide__ = True
        problems = self._shutdown()
        if problems:
            raise AssertionError("\n\n".join(problems))

    def _shutdown(self, check_faults: bool = True) -> List[str]:
        """Close clients and servers, undo the patch; returns the problems found (for the fixture to report)."""
        problems: List[str] = []
        if self._closed:
            return problems
        self._closed = True
        try:
            if self._client is not None:
                self._client.close()
            for client in self._async_clients:
                close_async(client)
            for handle in self._tcp:
                handle.close()
        finally:
            if self._patch is not None:
                self._patch.uninstall()
            self.network.close()
        for address, server in self.network.servers().items():
            for name, args, tb in server.internal_errors:
                problems.append(
                    f"A command handler raised an unexpected exception on {address} (the client got an "
                    f"'ERR fake_streams internal error' reply): {name} {args!r}\n{tb}"
                )
        if check_faults and self.options.assert_all_faults_triggered:
            unfired = [
                f"- {rule.describe()}" for s in self.network.servers().values()
                if isinstance(getattr(s, "faults", None), Faults) for rule in s.faults.unfired()
            ]
            if unfired:
                problems.append(
                    "The following faults were armed but never fired:\n" + "\n".join(unfired) + "\n"
                    "If this is on purpose, pass optional=True to fail_next() or use "
                    "@pytest.mark.fake_redis_streams(assert_all_faults_triggered=False)."
                )
        return problems


#: url -> what redis-py's ``parse_url`` makes of it (strings, numbers, classes: nothing of a test's)
_URL_OPTIONS: Dict[str, Dict[str, Any]] = {}


def _url_options(url: str) -> Dict[str, Any]:
    """``redis.connection.parse_url(url)`` (what ``ConnectionPool.from_url`` adds to its kwargs), parsed once per URL
    (it costs more than the rest of the client's construction); a fresh copy each time."""
    options = _URL_OPTIONS.get(url)
    if options is None:
        options = parse_url(url)
        if len(_URL_OPTIONS) < 1024:  # a suite's URLs: a handful
            _URL_OPTIONS[url] = options
    return dict(options)


#: the attributes ``redis.Redis(connection_pool=pool)`` sets (redis-py 5.1 to 8.x): what :func:`_pool_client` copies
_CLIENT_FIELDS = frozenset({"_event_dispatcher", "auto_close_connection_pool", "connection_pool", "single_connection_lock",
                            "connection", "_single_connection_client", "response_callbacks"})
#: (protocol, legacy_responses) -> the response-callback table a client of such a pool starts with (a private
#: snapshot: plain strings and functions), or None where this redis-py builds its clients some other way
_CALLBACKS: Dict[Tuple[Any, Any], Any] = {}


def _pool_client(pool: Any) -> Any:
    """``redis.Redis(connection_pool=pool)`` that closes its pool (as ``from_url`` makes it), without re-building its
    169-entry case-insensitive response-callback table (one Python ``__setitem__`` per entry: 60–100 µs, the largest
    single cost of a fixture test; a plain fakeredis fixture pays it too).

    The first client of each (protocol, legacy_responses) is built by ``redis.Redis`` itself; if it has exactly the
    attributes of redis-py 5.1–8.x (:data:`_CLIENT_FIELDS`), later clients get the same ones, made the way its
    ``__init__`` makes them — a new event dispatcher told about the pool, a new lock, no single connection —
    and a copy of that first table; with any other redis-py, every client is built by ``redis.Redis``. O(table)
    in C (a dict copy)."""
    kwargs = pool.connection_kwargs
    key = (kwargs.get("protocol"), kwargs.get("legacy_responses", True))
    callbacks: Any = _CALLBACKS.get(key, _MISSING)
    if callbacks is None or callbacks is _MISSING:
        client = redis.Redis(connection_pool=pool)
        client.auto_close_connection_pool = True
        if callbacks is _MISSING:
            _CALLBACKS[key] = _callbacks_of(client)
        return client
    from redis.event import AfterPooledConnectionsInstantiationEvent, ClientType, EventDispatcher

    client = redis.Redis.__new__(redis.Redis)
    dispatcher = client._event_dispatcher = EventDispatcher()
    client.auto_close_connection_pool = True
    dispatcher.dispatch(AfterPooledConnectionsInstantiationEvent([pool], ClientType.SYNC, None))
    client.connection_pool = pool
    client.single_connection_lock = threading.RLock()
    client.connection = None
    client._single_connection_client = False
    client.response_callbacks = _copy_table(callbacks)
    return client


def _callbacks_of(client: Any) -> Any:
    """A snapshot of a fresh client's response-callback table if the client is what :func:`_pool_client` can copy,
    else None."""
    table = client.response_callbacks
    lock = client.single_connection_lock
    if (set(vars(client)) != _CLIENT_FIELDS or type(client) is not redis.Redis or client.connection is not None
            or client._single_connection_client or type(lock) is not type(threading.RLock())
            or not isinstance(table, dict) or getattr(table, "__dict__", None)):
        return None
    try:
        from redis.event import AfterPooledConnectionsInstantiationEvent, ClientType, EventDispatcher  # noqa: F401
    except ImportError:  # pragma: no cover - redis-py < 5.1 (no event dispatcher: the fields differ anyway)
        return None
    return _copy_table(table)


def _copy_table(table: Any) -> Any:
    """A copy of a response-callback table of the same (case-insensitive dict) class: its keys are upper-case
    already, so a C-level dict copy, not one ``__setitem__`` per entry."""
    kind: Any = type(table)
    copy = kind.__new__(kind)
    dict.update(copy, table)
    return copy


_MISSING = object()


def _without_maint_notifications(kwargs: Dict[str, Any], pool_class: type) -> None:
    """Turn off redis-py's (>= 7.0) maintenance notifications on a pool of ``pool_class`` (``.client``'s and
    ``.async_client()``'s): a fake server never moves or sends them, and our connection classes already leave them
    out of the handshake. The pool's handler would only cost set-up time (~25 µs a test) and make pool <-> handler
    and connection <-> handler reference cycles that keep the test's server alive until the cyclic garbage
    collector runs (issue 13)."""
    config = _MAINT_CONFIG[pool_class] if pool_class in _MAINT_CONFIG else _maint_config_class(pool_class)
    if config is not None and "maint_notifications_config" not in kwargs:
        kwargs["maint_notifications_config"] = config(enabled=False)


def _maint_config_class(pool_class: type) -> Any:
    """redis-py's ``MaintNotificationsConfig`` when ``pool_class`` takes one (None before redis-py 7.0, and for the
    asyncio pool of redis-py versions without asyncio maintenance notifications), looked up once per class."""
    import inspect

    try:
        from redis.maint_notifications import MaintNotificationsConfig
    except ImportError:  # pragma: no cover - redis-py < 7.0: no maintenance notifications
        MaintNotificationsConfig = None  # type: ignore[assignment, misc]
    if "maint_notifications_config" not in inspect.signature(pool_class.__init__).parameters:  # type: ignore[misc]
        MaintNotificationsConfig = None  # type: ignore[assignment, misc]  # pragma: no cover
    _MAINT_CONFIG[pool_class] = MaintNotificationsConfig
    return MaintNotificationsConfig


_MAINT_CONFIG: Dict[type, Any] = {}


def _new_server(version: str, clock: Clock, address: str) -> FakeStreamsServer:
    """A server of the fixture: faults installed (idle until a rule is armed)."""
    server = FakeStreamsServer(version, clock)
    Faults.install(server)
    return server


def close_async(client: Any) -> None:
    """Close an asyncio client from synchronous teardown (its own loop may be gone already)."""
    close = getattr(client, "aclose", None) or client.close
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(close())
    except Exception:  # best effort: the connections are in memory (or the server is gone)
        pass
    finally:
        loop.close()


__all__ = ["FakeRedisStreams", "close_async"]
