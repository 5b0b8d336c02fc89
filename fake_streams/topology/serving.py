"""A fake cluster over TCP (``python -m fake_streams serve --cluster N``, :func:`serve_cluster`): each node's server
on its own port, the ports announced in CLUSTER SLOTS / NODES / MOVED being the ones it listens on, so any client —
``redis-cli -c``, another language's cluster client, a subprocess — follows the slots as against a real cluster."""

from __future__ import annotations

from typing import Any, List, Optional

from .cluster import FakeCluster


class ServedCluster:
    """:attr:`cluster` (the :class:`FakeCluster`) and :attr:`tcp` (one TCP server per node); :meth:`close` stops both."""

    def __init__(self, cluster: FakeCluster, tcp: List[Any]) -> None:
        self.cluster = cluster
        self.tcp = tcp

    @property
    def urls(self) -> List[str]:
        """``redis://host:port/0`` of every node, in node order."""
        return [handle.url for handle in self.tcp]

    def close(self) -> None:
        for handle in self.tcp:
            handle.close()
        self.cluster.close()

    def __enter__(self) -> ServedCluster:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


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


__all__ = ["ServedCluster", "serve_cluster"]
