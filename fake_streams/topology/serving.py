"""A fake cluster over TCP (``python -m fake_streams serve --cluster N``, :func:`serve_cluster`): each node's server
on its own port, the ports announced in CLUSTER SLOTS / NODES / MOVED being the ones it listens on, so any client —
``redis-cli -c``, another language's cluster client, a subprocess — follows the slots as against a real cluster.

The same for a Sentinel deployment (``serve --sentinel``, :func:`serve_sentinel`): the sentinel, the master and
each replica on its own port, the addresses the sentinel names being the ones they listen on."""

from __future__ import annotations

from typing import Any, List, Optional

from .cluster import FakeCluster


class _Served:
    """A topology and its TCP servers (one per instance); :meth:`close` stops both."""

    def __init__(self, topology: Any, tcp: List[Any]) -> None:
        self._topology = topology
        self.tcp = tcp

    @property
    def urls(self) -> List[str]:
        """``redis://host:port/0`` of every instance, in serving order."""
        return [handle.url for handle in self.tcp]

    def close(self) -> None:
        for handle in self.tcp:
            handle.close()
        self._topology.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class ServedCluster(_Served):
    """:attr:`cluster` (the :class:`FakeCluster`) and :attr:`tcp` (one TCP server per node, in node order)."""

    def __init__(self, cluster: FakeCluster, tcp: List[Any]) -> None:
        super().__init__(cluster, tcp)
        self.cluster = cluster


def serve_cluster(nodes: int = 3, host: str = "127.0.0.1", port: int = 0, *, version: str = "7.4",
                  clock: Any = None, maxclients: Optional[int] = None) -> ServedCluster:
    """Serve a ``nodes``-master fake cluster on ``host``: node ``i`` on ``port + i`` (``port=0``: free ports)."""
    from ..server import FakeStreamsServer
    from ..tcp import serve

    servers = [FakeStreamsServer(version, clock) for _ in range(nodes)]
    handles: List[Any] = []
    try:
        for i, server in enumerate(servers):
            handles.append(serve(server, host, 0 if port == 0 else port + i, maxclients=maxclients))
        made = iter(servers)
        cluster = FakeCluster(nodes, host=host, version=version, clock=clock, ports=[h.port for h in handles],
                              server_factory=lambda: next(made))
    except BaseException:
        for handle in handles:
            handle.close()
        for server in servers:
            server.close()
        raise
    return ServedCluster(cluster, handles)


class ServedSentinel(_Served):
    """:attr:`sentinel` (the :class:`~fake_streams.topology.sentinel.FakeSentinel`) and :attr:`tcp` (the sentinel's
    TCP server, then the master's and each replica's: :attr:`urls` in that order)."""

    def __init__(self, sentinel: Any, tcp: List[Any]) -> None:
        super().__init__(sentinel, tcp)
        self.sentinel = sentinel


def serve_sentinel(master_name: str = "mymaster", replicas: int = 1, host: str = "127.0.0.1", port: int = 0,
                   sentinel_port: Optional[int] = None, *, version: str = "7.4", clock: Any = None,
                   maxclients: Optional[int] = None, quorum: int = 1) -> ServedSentinel:
    """Serve a sentinel watching ``master_name`` on ``host``: the master on ``port``, replica ``i`` on ``port + 1 +
    i``, the sentinel on ``sentinel_port`` (default 26379; ``port=0``: free ports for all, the sentinel's too)."""
    from ..server import FakeStreamsServer
    from ..tcp import serve
    from .replica import replica_server
    from .sentinel import FakeSentinel

    if sentinel_port is None:
        sentinel_port = 0 if port == 0 else 26379
    master = FakeStreamsServer(version, clock)
    others = [replica_server(master) for _ in range(replicas)]
    lookout = FakeStreamsServer(version, clock)
    servers = [lookout, master, *others]
    handles: List[Any] = []
    try:
        handles.append(serve(lookout, host, sentinel_port, maxclients=maxclients))
        for i, server in enumerate([master, *others]):
            handles.append(serve(server, host, 0 if port == 0 else port + i, maxclients=maxclients))
        sentinel = FakeSentinel(master_name, replicas, host=host, port=handles[1].port,
                                replica_ports=[h.port for h in handles[2:]], sentinel_port=handles[0].port,
                                version=version, clock=clock, quorum=quorum, master=master, replica_servers=others,
                                sentinel_server=lookout)
    except BaseException:
        for handle in handles:
            handle.close()
        for server in reversed(servers):
            server.close()
        raise
    return ServedSentinel(sentinel, handles)


__all__ = ["ServedCluster", "ServedSentinel", "serve_cluster", "serve_sentinel"]
