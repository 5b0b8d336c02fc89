"""Every way code builds a redis-py client reaches the fake while the fixture patches (patch=True).

The 20 construction paths of redis-py-integration.md §6, then the extra ones of issue 5:

sync
  1. ``redis.Redis(host, port)``                 2. ``redis.StrictRedis(host, port)``
  3. ``redis.Redis.from_url(url)``               4. ``redis.from_url(url)``
  5. ``Redis(connection_pool=ConnectionPool.from_url(url))``
  6. ``Redis(connection_pool=BlockingConnectionPool(host, port))``
  7. ``redis.Redis(ssl=True)``                   8. ``redis.from_url("rediss://…")``
  9. ``redis.Redis(unix_socket_path=…)``        10. ``redis.from_url("unix://…")``
 11. ``from redis import Redis`` imported before the patch (tests/patching/app.py)
 12. a client constructed at import time, before the patch
asyncio
 13. ``redis.asyncio.Redis(host, port)``        14. ``redis.asyncio.StrictRedis``
 15. ``redis.asyncio.from_url``                 16. ``redis.asyncio.Redis.from_url``
 17. ``Redis(connection_pool=asyncio ConnectionPool.from_url(url))``
 18. ``Redis(connection_pool=asyncio BlockingConnectionPool(host, port))``
 19. asyncio ``from_url("rediss://…")``        20. asyncio ``from_url("unix://…")``
extra
 21. ``Redis.from_pool(ConnectionPool(...))`` sync / 22. asyncio (redis-py >= 5.0.1)
 23. a Redis subclass defined at import time (walrus style) / 24. an asyncio subclass
 25. ``BlockingConnectionPool.from_url`` sync / 26. asyncio
 27. a client built and used in another thread
 28. a ``from_url`` client built at import time, with a db number in the URL

Each case writes through the client and checks the entry landed on the fake server (and database)
of the address the client was given — never on a real socket.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest
import redis
import redis.asyncio as aredis

from fake_streams import FakeStreamsAsyncConnection, FakeStreamsConnection
from fake_streams.inspect import stream_keys
from fake_streams.patching import parse_address

from . import app

SOCK = "/tmp/fake-streams-never-created.sock"
H = "redis://h1:7000"

SYNC_PATHS = {
    "01 redis.Redis(host, port)": (lambda: redis.Redis(host="h1", port=7000), H),
    "02 redis.StrictRedis(host, port)": (lambda: redis.StrictRedis(host="h1", port=7000), H),
    "03 redis.Redis.from_url": (lambda: redis.Redis.from_url("redis://h1:7000/0"), H),
    "04 redis.from_url": (lambda: redis.from_url("redis://h1:7000/2"), H + "/2"),
    "05 Redis(connection_pool=ConnectionPool.from_url)": (
        lambda: redis.Redis(connection_pool=redis.ConnectionPool.from_url("redis://h1:7000")), H),
    "06 Redis(connection_pool=BlockingConnectionPool)": (
        lambda: redis.Redis(connection_pool=redis.BlockingConnectionPool(host="h1", port=7000)), H),
    "07 redis.Redis(ssl=True)": (
        lambda: redis.Redis(host="h1", port=7000, ssl=True, ssl_cert_reqs="required", ssl_ca_certs="/nonexistent"), H),
    "08 redis.from_url('rediss://')": (lambda: redis.from_url("rediss://h1:7000/1?ssl_cert_reqs=none"), H + "/1"),
    "09 redis.Redis(unix_socket_path=)": (lambda: redis.Redis(unix_socket_path=SOCK), "unix://" + SOCK),
    "10 redis.from_url('unix://')": (lambda: redis.from_url(f"unix://{SOCK}?db=4"), f"unix://{SOCK}?db=4"),
    "11 `from redis import Redis` done before the patch": (lambda: app.Redis(host="h1", port=7000), H),
    "12 client constructed before the patch": (lambda: app.EARLY_CLIENT, "redis://early:6379"),
    "25 BlockingConnectionPool.from_url": (
        lambda: redis.Redis(connection_pool=redis.BlockingConnectionPool.from_url("redis://h1:7000/5")), H + "/5"),
    "23 Redis subclass defined at import time": (lambda: app.WalrusStyle(host="h1", port=7000), H),
    "28 from_url client built at import time (db 3)": (lambda: app.EARLY_URL_CLIENT, "redis://early:6379/3"),
}
if hasattr(redis.Redis, "from_pool"):
    SYNC_PATHS["21 Redis.from_pool"] = (lambda: redis.Redis.from_pool(redis.ConnectionPool(host="h1", port=7000)), H)

ASYNC_PATHS = {
    "13 redis.asyncio.Redis(host, port)": (lambda: aredis.Redis(host="h1", port=7000), H),
    "14 redis.asyncio.StrictRedis": (lambda: aredis.StrictRedis(host="h1", port=7000), H),
    "15 redis.asyncio.from_url": (lambda: aredis.from_url("redis://h1:7000/2"), H + "/2"),
    "16 redis.asyncio.Redis.from_url": (lambda: aredis.Redis.from_url("redis://h1:7000"), H),
    "17 asyncio Redis(connection_pool=ConnectionPool.from_url)": (
        lambda: aredis.Redis(connection_pool=aredis.ConnectionPool.from_url("redis://h1:7000")), H),
    "18 asyncio Redis(connection_pool=BlockingConnectionPool)": (
        lambda: aredis.Redis(connection_pool=aredis.BlockingConnectionPool(host="h1", port=7000)), H),
    "19 asyncio from_url('rediss://')": (lambda: aredis.from_url("rediss://h1:7000?ssl_cert_reqs=none"), H),
    "20 asyncio from_url('unix://')": (lambda: aredis.from_url("unix://" + SOCK), "unix://" + SOCK),
    "24 asyncio Redis subclass defined at import time": (lambda: app.AsyncSubclass(host="h1", port=7000), H),
    "26 asyncio BlockingConnectionPool.from_url": (
        lambda: aredis.Redis(connection_pool=aredis.BlockingConnectionPool.from_url("redis://h1:7000/5")), H + "/5"),
}
if hasattr(aredis.Redis, "from_pool"):
    ASYNC_PATHS["22 asyncio Redis.from_pool"] = (
        lambda: aredis.Redis.from_pool(aredis.ConnectionPool(host="h1", port=7000)), H)


def _landed(fake_redis_streams: Any, url: str) -> None:
    view = fake_redis_streams.stream("orders", url=url)
    assert view.length == 1 and view.entries[0].fields == {"sku": "A"}
    everywhere = [
        (address, db, key)
        for address, server in fake_redis_streams.servers().items()
        for db, key in stream_keys(server)
    ]
    assert everywhere == [(parse_address(url)[0], parse_address(url)[1], "orders")]


@pytest.mark.parametrize("make, url", list(SYNC_PATHS.values()), ids=list(SYNC_PATHS))
def test_sync_path_reaches_the_fake(fake_redis_streams: Any, make: Callable[[], Any], url: str) -> None:
    client = make()
    assert client.xadd("orders", {"sku": "A"}, id="1-1") == b"1-1"
    assert issubclass(client.connection_pool.connection_class, FakeStreamsConnection)
    _landed(fake_redis_streams, url)
    if client is not app.EARLY_CLIENT and client is not app.EARLY_URL_CLIENT:
        client.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("make, url", list(ASYNC_PATHS.values()), ids=list(ASYNC_PATHS))
async def test_async_path_reaches_the_fake(fake_redis_streams: Any, make: Callable[[], Any], url: str) -> None:
    client = make()
    try:
        assert await client.xadd("orders", {"sku": "A"}, id="1-1") == b"1-1"
        assert issubclass(client.connection_pool.connection_class, FakeStreamsAsyncConnection)
    finally:
        await (client.aclose() if hasattr(client, "aclose") else client.close())
    _landed(fake_redis_streams, url)


def test_27_client_built_in_another_thread(fake_redis_streams: Any) -> None:
    out: dict = {}

    def worker() -> None:
        try:
            client = redis.Redis(host="h1", port=7000)
            out["id"] = client.xadd("orders", {"sku": "A"}, id="1-1")
            client.close()
        except BaseException as exc:  # surfaced below
            out["error"] = exc

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(10)  # real-time: bounded wait for an in-memory command in another thread
    assert "error" not in out and out["id"] == b"1-1"
    _landed(fake_redis_streams, H)


def test_module_level_clients_work_again_in_the_next_test(fake_redis_streams: Any) -> None:
    """After the previous tests closed their servers, import-time clients get a fresh fake connection."""
    assert app.EARLY_CLIENT.xadd("orders", {"sku": "A"}, id="1-1") == b"1-1"
    _landed(fake_redis_streams, "redis://early:6379")
    assert app.publish("h1", 7000, sku="B")
    assert fake_redis_streams.stream("events", url=H).length == 1


@pytest.mark.fake_redis_streams(patch=False)
def test_injected_connection_class_without_patching(fake_redis_streams: Any) -> None:
    """Code that takes a connection class (Django OPTIONS, ConnectionPool kwargs) needs no patching."""
    pool = redis.ConnectionPool.from_url("redis://h1:7000", connection_class=fake_redis_streams.connection_class)
    redis.Redis(connection_pool=pool).xadd("orders", {"sku": "A"}, id="1-1")
    _landed(fake_redis_streams, H)
    assert redis.Redis(host="h1").connection_pool.connection_class is redis.Connection  # not patched


@pytest.mark.asyncio
@pytest.mark.fake_redis_streams(patch=False)
async def test_injected_async_connection_class(fake_redis_streams: Any) -> None:
    client = aredis.Redis.from_url("redis://h1:7000", connection_class=fake_redis_streams.async_connection_class)
    await client.xadd("orders", {"sku": "A"}, id="1-1")
    await (client.aclose() if hasattr(client, "aclose") else client.close())
    _landed(fake_redis_streams, H)
