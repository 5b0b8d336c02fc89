"""Make code that builds its own redis-py clients talk to fake servers.

One patch point: ``ConnectionPool.connection_class`` (sync and asyncio) becomes a class-level *data
descriptor*. Every pool asks it which class to instantiate at ``make_connection`` time; while
patched, the stock classes (``Connection``, ``SSLConnection``, ``UnixDomainSocketConnection``) are
answered with a fake connection class whose server is picked from the pool's address. A data
descriptor on the class wins over the instance ``__dict__``, so this reaches every way a client can
be built — ``redis.Redis(...)``, ``from_url`` (``redis://``, ``rediss://``, ``unix://``),
``ConnectionPool`` / ``BlockingConnectionPool``, ``Redis.from_pool``, subclasses, the asyncio
twins, clients built in other threads and even pools built *before* the patch (as long as they have
not opened a real connection yet). Nothing is patched at import.

Address model (like a real network): each ``host:port`` (or Unix socket path) is its own server,
created on first use; ``db`` numbers are that server's databases. The loopback names ``localhost``,
``127.0.0.1``, ``::1`` and the empty host are one host. A :class:`FakeNetwork` holds the servers::

    with patch_redis() as network:
        app.publish_order()                                   # redis.Redis(host="cache") inside
        assert network.server_for("redis://cache:6379").client().xlen("orders") == 1

``passthrough_hosts`` keeps real connections for some addresses (``"real-redis"`` — any port,
``"real-redis:6380"``, ``"unix:/run/redis.sock"``), for suites that also talk to a real server.
Custom connection classes (not the three stock ones) are never replaced.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

import redis.asyncio.connection as _aconn
import redis.connection as _sconn
import redis.exceptions

from .clock import Clock
from .connection import FakeStreamsAsyncConnection, FakeStreamsConnection
from .server import FakeStreamsServer

__all__ = ["FakeNetwork", "PoolPatch", "address_of", "patch_redis"]

_SYNC_STOCK = (_sconn.Connection, _sconn.SSLConnection, _sconn.UnixDomainSocketConnection)
_ASYNC_STOCK = (_aconn.Connection, _aconn.SSLConnection, _aconn.UnixDomainSocketConnection)
_LOOPBACK = {"", "localhost", "127.0.0.1", "::1", "[::1]"}
_MISSING = object()


def _host(host: Any) -> str:
    host = "localhost" if host is None else str(host).lower()
    return "localhost" if host in _LOOPBACK else host


def address_of(kwargs: Dict[str, Any]) -> str:
    """The server address of a pool's ``connection_kwargs``: ``"host:port"`` or ``"unix:/path"``.

    >>> address_of({"host": "127.0.0.1"})
    'localhost:6379'
    >>> address_of({"path": "/tmp/r.sock"})
    'unix:/tmp/r.sock'
    """
    path = kwargs.get("path")
    if path:
        return f"unix:{path}"
    return f"{_host(kwargs.get('host'))}:{int(kwargs.get('port') or 6379)}"


def parse_address(url: str) -> Tuple[str, int]:
    """``(address, db)`` of a ``redis://``, ``rediss://`` or ``unix://`` URL, or of ``host:port`` / ``host``.

    >>> parse_address("redis://cache:6380/2")
    ('cache:6380', 2)
    >>> parse_address("unix:///run/redis.sock?db=1")
    ('unix:/run/redis.sock', 1)
    >>> parse_address("cache")
    ('cache:6379', 0)
    """
    parsed = _PARSED.get(url)
    if parsed is not None:
        return parsed
    if "://" not in url:
        host, _, port = url.rpartition(":") if url.count(":") == 1 else (url, "", "")
        parsed = address_of({"host": host or url, "port": int(port) if port else 6379}), 0
    else:
        kwargs = _sconn.parse_url(url)
        parsed = address_of(kwargs), int(kwargs.get("db") or 0)
    if len(_PARSED) < 1024:  # URLs a suite uses: a handful (redis-py's parse_url costs more than a server)
        _PARSED[url] = parsed
    return parsed


_PARSED: Dict[str, Tuple[str, int]] = {}


class _HostFilter:
    """Addresses that keep their real connection: ``host`` (any port), ``host:port``, ``unix:/path``."""

    def __init__(self, entries: Iterable[str]) -> None:
        self.hosts, self.addresses = set(), set()
        for entry in entries:
            entry = str(entry)
            if entry.startswith("unix:") or entry.startswith("/"):
                self.addresses.add("unix:" + entry[5:] if entry.startswith("unix:") else "unix:" + entry)
            elif "://" in entry:
                self.addresses.add(parse_address(entry)[0])
            elif entry.count(":") == 1:
                self.addresses.add(parse_address(entry)[0])
            else:
                self.hosts.add(_host(entry))

    def __bool__(self) -> bool:
        return bool(self.hosts or self.addresses)

    def passes(self, kwargs: Dict[str, Any]) -> bool:
        address = address_of(kwargs)
        return address in self.addresses or (not kwargs.get("path") and _host(kwargs.get("host")) in self.hosts)


class FakeNetwork:
    """The fake servers addresses resolve to while patched: one :class:`FakeStreamsServer` per address.

    ``factory(address)`` makes a server on first use (default: profile ``version`` on ``clock``).
    Thread-safe. :meth:`close` closes every server it made.
    """

    def __init__(
        self,
        version: str = "7.4",
        clock: Optional[Clock] = None,
        *,
        factory: Optional[Callable[[str], FakeStreamsServer]] = None,
    ) -> None:
        self.version = version
        self.clock = clock
        self._factory = factory
        self._servers: Dict[str, FakeStreamsServer] = {}
        self._lock = threading.Lock()
        self._classes: Dict[type, type] = {}
        self._managed: Dict[bool, type] = {}  # Sentinel-managed connection classes (sync: False, asyncio: True)
        self._placeholder: Optional[FakeStreamsServer] = None

    @property
    def sync_class(self) -> type:
        """The sync connection class of this network (made on first use): its connections reach the server
        of the address they are given."""
        return self._class_for(FakeStreamsConnection)

    @property
    def async_class(self) -> type:
        """The asyncio twin of :attr:`sync_class` (made on first use)."""
        return self._class_for(FakeStreamsAsyncConnection)

    @property
    def sentinel_sync_class(self) -> type:
        """The class of this network in place of ``redis.sentinel.SentinelManagedConnection``: it connects to the
        server of the address the sentinels name (:mod:`fake_streams.topology.sentinel_connection`)."""
        return self._managed_class(False)

    @property
    def sentinel_async_class(self) -> type:
        """The asyncio twin of :attr:`sentinel_sync_class`."""
        return self._managed_class(True)

    def _managed_class(self, is_async: bool) -> type:
        cls = self._managed.get(is_async)
        if cls is None:
            from .topology.sentinel_connection import managed_class

            made = managed_class(self, is_async)
            with self._lock:
                cls = self._managed.setdefault(is_async, made)
        return cls

    def placeholder(self) -> FakeStreamsServer:
        """The server a Sentinel-managed connection is bound to until it connects (no address reaches it)."""
        with self._lock:
            if self._placeholder is None or self._placeholder.closed:
                self._placeholder = FakeStreamsServer(self.version, self.clock)
            return self._placeholder

    def replacement(self, stock: type) -> type:
        """The class a :class:`PoolPatch` puts in place of the stock connection class ``stock`` (made on first use)."""
        is_async = issubclass(stock, getattr(_aconn, "AbstractConnection", _aconn.Connection))
        if stock.__name__.startswith("SentinelManaged") and stock.__module__.startswith("redis."):
            return self.sentinel_async_class if is_async else self.sentinel_sync_class
        return self.async_class if is_async else self.sync_class

    def _class_for(self, base: type) -> type:
        cls = self._classes.get(base)
        if cls is None:
            with self._lock:
                cls = self._classes.get(base)
                if cls is None:
                    cls = self._classes[base] = self._routed(base)
        return cls

    def _routed(self, base: type) -> type:
        """A subclass of ``base`` whose connections reach this network's server of their address.

        The class holds the network weakly (the network holds the class): once a test drops its
        network, both are collectable even where a library keeps connection classes in a cache."""
        network_ref = weakref.ref(self)

        def __init__(conn: Any, **kwargs: Any) -> None:
            if kwargs.get("server") is None:
                kwargs["server"] = _alive(network_ref).server_at(address_of(kwargs))
            base.__init__(conn, **kwargs)  # type: ignore[misc]  # base is the class this one extends

        return type(base.__name__, (base,), {"__init__": __init__, "__module__": base.__module__,
                                             "network": _NetworkOf(network_ref)})

    def server_at(self, address: str) -> FakeStreamsServer:
        """The server at ``address`` (``"host:port"`` / ``"unix:/path"``, normalized), created on first use."""
        with self._lock:
            server = self._servers.get(address)
            if server is None or server.closed:
                if self._factory is not None:
                    server = self._factory(address)
                else:
                    server = FakeStreamsServer(self.version, self.clock)
                server.address = address
                self._servers[address] = server
            return server

    def alias(self, address: str, server: FakeStreamsServer) -> None:
        """Make ``address`` reach ``server`` too (e.g. the TCP address it is served on, so patched in-process
        clients of that URL share its state instead of getting a server of their own)."""
        with self._lock:
            self._servers[address] = server

    def server_for(self, url: str = "redis://localhost:6379") -> FakeStreamsServer:
        """The server a client of ``url`` (``redis://``, ``rediss://``, ``unix://``, or ``host[:port]``) reaches."""
        return self.server_at(parse_address(url)[0])

    def servers(self) -> Dict[str, FakeStreamsServer]:
        """``{address: server}`` of every server used so far, in creation order."""
        with self._lock:
            return dict(self._servers)

    def close(self) -> None:
        """Close every server (their clients get ConnectionError from now on)."""
        with self._lock:
            servers = list({id(s): s for s in self._servers.values()}.values())
            if self._placeholder is not None:
                servers.append(self._placeholder)
        for server in servers:
            server.close()

    def __repr__(self) -> str:
        return f"FakeNetwork(version={self.version!r}, servers={list(self.servers())!r})"


def _alive(network_ref: Any) -> FakeNetwork:
    network = network_ref()
    if network is None:
        raise redis.exceptions.ConnectionError("the FakeNetwork of this connection class is gone (closed with its test)")
    return network  # type: ignore[no-any-return]


class _NetworkOf:
    """``cls.network`` / ``conn.network`` of a routed class: its :class:`FakeNetwork` (None once collected)."""

    __slots__ = ("_ref",)

    def __init__(self, ref: Any) -> None:
        self._ref = ref

    def __get__(self, obj: Any, owner: Any = None) -> Optional[FakeNetwork]:
        return self._ref()  # type: ignore[no-any-return]


class _Patched:
    """The data descriptor a :class:`PoolPatch` puts on a pool class (``connection_class``): the stock classes are
    answered with the patch's replacement unless the pool's address passes through. ``member``: the ``__slots__``
    member the value lives in (redis.asyncio.cluster.ClusterNode), else the instance ``__dict__``. One small
    object per pool class and patch (no closures): a fixture test makes three."""

    __slots__ = ("stock", "patch", "repl", "member")

    def __init__(self, stock: Tuple[type, ...], patch: PoolPatch, repl: Any, member: Any = None) -> None:
        self.stock = stock
        self.patch = patch
        self.repl = repl
        self.member = member

    def __get__(self, pool: Any, owner: Any = None) -> Any:
        if pool is None:  # the class attribute itself
            return self
        member = self.member
        if member is None:
            cls = pool.__dict__.get("connection_class")
        else:
            try:
                cls = member.__get__(pool, type(pool))
            except AttributeError:
                cls = None
        hosts = self.patch.hosts
        if cls in self.stock and not (hosts and hosts.passes(_kwargs_of(pool))):
            return self.patch._pick(pool, cls, self.repl)
        return cls

    def __set__(self, pool: Any, value: Any) -> None:
        if self.member is None:
            pool.__dict__["connection_class"] = value
        else:
            self.member.__set__(pool, value)


def _kwargs_of(pool: Any) -> Dict[str, Any]:
    return getattr(pool, "connection_kwargs", None) or {}


def _connections_of(pool: Any) -> List[Any]:
    if not hasattr(pool, "__dict__"):  # redis.asyncio.cluster.ClusterNode (slots): asyncio connections only
        return list(getattr(pool, "_connections", None) or ())
    conns: List[Any] = list(pool.__dict__.get("_available_connections") or ())
    conns += list(pool.__dict__.get("_in_use_connections") or ())
    conns += [c for c in pool.__dict__.get("_connections") or () if c is not None]  # BlockingConnectionPool
    return conns


def asyncio_connection(conn: Any) -> bool:
    return isinstance(conn, getattr(_aconn, "AbstractConnection", _aconn.Connection))


_NODE_SLOT: List[Any] = []  # the ``connection_class`` slot member of redis.asyncio.cluster.ClusterNode, unpatched


def _async_cluster_node() -> Any:
    """``redis.asyncio.cluster.ClusterNode`` when it keeps its connection class in a slot (redis-py >= 4.3), else None;
    its unpatched slot member is kept in ``_NODE_SLOT`` (an outer patch may have replaced the class attribute). The
    class is looked up once (every fixture test installs and uninstalls a patch: an import statement each time)."""
    if _NODE_SLOT and _NODE_CLASS:
        return _NODE_CLASS[0]
    try:
        from redis.asyncio.cluster import ClusterNode
    except ImportError:  # pragma: no cover - redis-py without the asyncio cluster
        return None
    member = ClusterNode.__dict__.get("connection_class")
    if not _NODE_SLOT:
        if member is None or isinstance(member, (property, _Patched)):
            return None
        _NODE_SLOT.append(member)
    if not _NODE_CLASS:
        _NODE_CLASS.append(ClusterNode)
    return ClusterNode


_NODE_CLASS: List[Any] = []  # redis.asyncio.cluster.ClusterNode, once _async_cluster_node found its slot member


def _stocks() -> Tuple[Tuple[type, ...], ...]:
    """The classes a patch replaces (sync, asyncio): the stock ones and the Sentinel-managed ones (computed once:
    every fixture test installs a patch)."""
    if not _STOCKS:
        from .topology.sentinel_connection import managed_stock  # Sentinel pools: their managed connections too

        _STOCKS.extend((_SYNC_STOCK + managed_stock(False), _ASYNC_STOCK + managed_stock(True)))
    return tuple(_STOCKS)


_STOCKS: List[Tuple[type, ...]] = []


class PoolPatch:
    """The descriptor pair on ``redis.ConnectionPool`` / ``redis.asyncio.ConnectionPool``, and the same on
    ``redis.asyncio.cluster.ClusterNode`` (the asyncio RedisCluster makes its connections there, with no pool).

    ``sync_class`` / ``async_class`` replace the stock classes; each is either a class or a callable
    ``(stock_class) -> class``. :meth:`install` / :meth:`uninstall` (idempotent, nest LIFO). The
    descriptor is consulted once per new connection (O(1)).
    """

    _POOLS: Tuple[Any, ...] = (_sconn.ConnectionPool, _aconn.ConnectionPool)  # patched at class level

    def __init__(self, sync_class: Any, async_class: Any, passthrough_hosts: Iterable[str] = ()) -> None:
        self.hosts = _HostFilter(passthrough_hosts)
        self._replacements = (sync_class, async_class)
        self._saved: List[Any] = []
        self._made: set = set()
        self._pools: Any = None  # a WeakSet of the pools that got a replacement class (made on first use)
        self._lock = threading.Lock()
        self.installed = False

    def install(self) -> PoolPatch:
        if self.installed:
            return self
        self._saved = [pool.__dict__.get("connection_class", _MISSING) for pool in self._POOLS]
        for pool, stock, repl in zip(self._POOLS, _stocks(), self._replacements):
            pool.connection_class = _Patched(stock, self, repl)
        node_cls = _async_cluster_node()
        if node_cls is not None:
            self._saved.append(node_cls.__dict__["connection_class"])
            node_cls.connection_class = _Patched(_ASYNC_STOCK, self, self._replacements[1], _NODE_SLOT[0])
        self.installed = True
        return self

    def _pick(self, pool: Any, stock: type, repl: Any) -> type:
        """The class a patched pool gets for ``stock`` (``repl`` itself, or ``repl(stock)``); the pool is remembered."""
        cls = repl(stock) if not isinstance(repl, type) else repl
        with self._lock:  # pools may be built in several threads at once
            self._made.add(cls)
            if hasattr(pool, "__dict__"):  # not an asyncio ClusterNode (slots, no weak references, no pool)
                if self._pools is None:
                    self._pools = weakref.WeakSet()
                self._pools.add(pool)
        return cls

    def uninstall(self) -> None:
        """Restore the previous descriptor, then empty the pools holding our connections, so a
        long-lived client (built at import time) makes a fresh connection the next time."""
        if not self.installed:
            return
        node_cls = _async_cluster_node()
        for pool, saved in zip(self._POOLS + ((node_cls,) if node_cls is not None else ()), self._saved):
            if saved is _MISSING:
                with contextlib.suppress(AttributeError):
                    delattr(pool, "connection_class")
            else:
                pool.connection_class = saved
        self.installed = False
        with self._lock:
            made, pools = tuple(self._made), list(self._pools or ())
            self._pools = None
        for pool in pools:
            conns = _connections_of(pool)
            if made and any(isinstance(c, made) for c in conns):
                for conn in conns:
                    if not asyncio_connection(conn):
                        with contextlib.suppress(Exception):
                            conn.disconnect()
                with contextlib.suppress(Exception):
                    pool.reset()

    def __enter__(self) -> PoolPatch:
        return self.install()

    def __exit__(self, *exc: Any) -> None:
        self.uninstall()


@contextlib.contextmanager
def patch_redis(
    network: Optional[FakeNetwork] = None,
    *,
    version: str = "7.4",
    clock: Optional[Clock] = None,
    passthrough_hosts: Iterable[str] = (),
) -> Iterator[FakeNetwork]:
    """Route every redis-py client built or connected inside the block to fake servers; yields the network.

    ``network`` reuses servers across blocks (default: a new :class:`FakeNetwork` of profile
    ``version`` on ``clock``, closed on exit). Clients that opened a real socket before the block
    keep it. Undone on exit, whatever happens.

    >>> import redis
    >>> with patch_redis() as network:
    ...     redis.Redis(host="cache").xadd("orders", {"sku": "A"}, id="1-1")
    ...     network.server_for("redis://cache").client().xlen("orders")
    b'1-1'
    1
    """
    own = network is None
    net = FakeNetwork(version, clock) if network is None else network
    patch = PoolPatch(net.replacement, net.replacement, passthrough_hosts)
    patch.install()
    try:
        yield net
    finally:
        patch.uninstall()
        if own:
            net.close()

