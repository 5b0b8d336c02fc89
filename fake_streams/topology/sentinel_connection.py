"""redis-py's Sentinel-managed connections on the fake: the classes a :class:`~fake_streams.patching.FakeNetwork`
puts in place of ``redis.sentinel.SentinelManagedConnection`` (and its SSL twin, and the asyncio ones).

A Sentinel-managed connection learns where to connect only when it connects: its pool asks the sentinels
(``SENTINEL MASTERS`` / ``SENTINEL REPLICAS``) and hands it an address (``connect_to``). The fake class keeps
all of redis-py's logic (the sentinel queries, the replica round robin, the retry, ``READONLY`` on a master
connection turned into ConnectionError so the next connect asks again) and only changes where the address
leads: to the network's server of that address (:func:`fake_streams._fakeredis.sentinel.rebind`). Until it
connects, a connection is bound to the network's placeholder server, which no address reaches.
"""

from __future__ import annotations

from typing import Any


def managed_class(network: Any, is_async: bool) -> type:
    """The Sentinel-managed connection class of ``network`` (sync or asyncio): redis-py's SentinelManagedConnection
    on top of the network's routed fake connection class."""
    from .._fakeredis.sentinel import rebind
    from ..patching import address_of

    if is_async:
        from redis.asyncio.sentinel import SentinelManagedConnection as AsyncManaged

        fake_async: Any = network.async_class

        class AsyncFakeManaged(AsyncManaged, fake_async):  # type: ignore[misc, valid-type]
            def __init__(self, **kwargs: Any) -> None:
                kwargs.setdefault("server", self.network.placeholder())
                super().__init__(**kwargs)

            async def connect_to(self, address: Any) -> None:
                host, port = address
                rebind(self, self.network.server_at(address_of({"host": host, "port": port})))
                await super().connect_to(address)

        AsyncFakeManaged.__name__ = AsyncFakeManaged.__qualname__ = "SentinelManagedConnection"
        return AsyncFakeManaged

    from redis.sentinel import SentinelManagedConnection

    fake_sync: Any = network.sync_class

    class FakeManaged(SentinelManagedConnection, fake_sync):  # type: ignore[misc, valid-type]
        def __init__(self, **kwargs: Any) -> None:
            kwargs.setdefault("server", self.network.placeholder())
            super().__init__(**kwargs)

        def connect_to(self, address: Any) -> None:
            host, port = address
            rebind(self, self.network.server_at(address_of({"host": host, "port": port})))
            super().connect_to(address)

    FakeManaged.__name__ = FakeManaged.__qualname__ = "SentinelManagedConnection"
    return FakeManaged


def managed_stock(is_async: bool) -> tuple:
    """redis-py's own Sentinel-managed connection classes (replaced by a patch like the stock classes)."""
    if is_async:
        from redis.asyncio import sentinel as async_sentinel

        return (async_sentinel.SentinelManagedConnection, async_sentinel.SentinelManagedSSLConnection)
    from redis import sentinel

    return (sentinel.SentinelManagedConnection, sentinel.SentinelManagedSSLConnection)


__all__ = ["managed_class", "managed_stock"]
