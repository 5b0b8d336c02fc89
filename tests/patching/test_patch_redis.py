"""``fake_streams.patch_redis()`` and the pieces behind it: addresses, passthrough hosts, nesting, undo."""

from __future__ import annotations

import pytest
import redis
import redis.asyncio as aredis

from fake_streams import FakeStreamsConnection, ManualClock
from fake_streams.patching import FakeNetwork, PoolPatch, address_of, parse_address, patch_redis

STOCK = redis.connection.Connection


def _unpatched() -> bool:
    return (
        "connection_class" not in vars(redis.connection.ConnectionPool)
        and redis.ConnectionPool().connection_class is STOCK
        and aredis.ConnectionPool().connection_class is aredis.connection.Connection
    )


def test_patch_redis__routes_clients_and_undoes_on_exit():
    assert _unpatched()
    with patch_redis() as network:
        redis.Redis(host="cache").xadd("orders", {"sku": "A"}, id="1-1")
        assert network.server_for("redis://cache:6379").client().xlen("orders") == 1
    assert _unpatched()
    assert all(server.closed for server in network.servers().values())


def test_patch_redis__undone_after_an_exception():
    with pytest.raises(ZeroDivisionError), patch_redis():
        assert not _unpatched()
        1 / 0  # noqa: B018
    assert _unpatched()


def test_patch_redis__nests_lifo_and_keeps_a_given_network():
    network = FakeNetwork(version="7.0", clock=ManualClock(5_000))
    with patch_redis(network):
        with patch_redis() as inner:
            redis.Redis(host="a").xadd("s", {"f": "v"})
            assert list(inner.servers()) == ["a:6379"]
        assert redis.Redis(host="a").xadd("s", {"f": "v"}) == b"5000-0"  # the outer network again
        assert network.server_for("a").version == "7.0"
    assert _unpatched()
    assert not network.server_for("a").closed  # a network passed in is not closed on exit
    assert network.server_for("a").client().xlen("s") == 1
    network.close()


def test_addresses__loopback_names_are_one_host_ports_and_dbs_are_separate():
    with patch_redis() as network:
        redis.Redis(host="localhost").xadd("s", {"f": "1"})
        redis.Redis(host="127.0.0.1").xadd("s", {"f": "2"})
        redis.Redis().xadd("s", {"f": "3"})
        redis.Redis(port=6380).xadd("s", {"f": "4"})
        redis.Redis(db=2).xadd("s", {"f": "5"})
        assert sorted(network.servers()) == ["localhost:6379", "localhost:6380"]
        local = network.server_for("redis://localhost").client()
        assert local.xlen("s") == 3
        assert network.server_for("redis://localhost/2").client(db=2).xlen("s") == 1
        assert network.server_for("localhost:6380").client().xlen("s") == 1


@pytest.mark.parametrize(
    "url, expected",
    [
        ("redis://cache", ("cache:6379", 0)),
        ("redis://CACHE:6380/3", ("cache:6380", 3)),
        ("rediss://user:pw@cache:6390/1", ("cache:6390", 1)),
        ("redis://127.0.0.1:6379", ("localhost:6379", 0)),
        ("unix:///run/redis.sock?db=2", ("unix:/run/redis.sock", 2)),
        ("cache:7000", ("cache:7000", 0)),
        ("cache", ("cache:6379", 0)),
    ],
)
def test_parse_address(url, expected):
    assert parse_address(url) == expected


def test_address_of_pool_kwargs():
    assert address_of({"host": "::1", "port": "6379"}) == "localhost:6379"
    assert address_of({"path": "/x.sock", "host": "ignored"}) == "unix:/x.sock"


@pytest.mark.parametrize(
    "hosts, kwargs, real",
    [
        (["real-redis"], {"host": "real-redis", "port": 1}, True),
        (["real-redis:6380"], {"host": "real-redis", "port": 6380}, True),
        (["real-redis:6380"], {"host": "real-redis", "port": 6379}, False),
        (["redis://real-redis:6380/0"], {"host": "real-redis", "port": 6380}, True),
        (["unix:/run/r.sock"], {"unix_socket_path": "/run/r.sock"}, True),
        (["/run/r.sock"], {"unix_socket_path": "/run/r.sock"}, True),
        (["localhost"], {"host": "127.0.0.1"}, True),
        (["real-redis"], {"host": "other"}, False),
    ],
)
def test_passthrough_hosts_keep_the_stock_class(hosts, kwargs, real):
    with patch_redis(passthrough_hosts=hosts):
        pool = redis.Redis(**kwargs).connection_pool
        assert (pool.connection_class in (STOCK, redis.UnixDomainSocketConnection)) is real
        apool = aredis.Redis(**kwargs).connection_pool
        stock = (aredis.connection.Connection, aredis.connection.UnixDomainSocketConnection)
        assert (apool.connection_class in stock) is real


def test_custom_connection_classes_are_left_alone():
    class Custom(redis.Connection):
        pass

    with patch_redis():
        assert redis.ConnectionPool(connection_class=Custom).connection_class is Custom
        bound = FakeStreamsConnection
        assert redis.ConnectionPool(connection_class=bound).connection_class is bound


def test_pool_patch_install_uninstall_are_idempotent():
    patch = PoolPatch(FakeStreamsConnection, lambda stock: stock)
    patch.install()
    patch.install()
    assert issubclass(redis.ConnectionPool().connection_class, FakeStreamsConnection)
    assert aredis.ConnectionPool().connection_class is aredis.connection.Connection  # callable: stock -> stock
    patch.uninstall()
    patch.uninstall()
    assert _unpatched()


def test_a_pool_built_before_the_patch_is_emptied_on_exit():
    pool = redis.ConnectionPool(host="early")
    client = redis.Redis(connection_pool=pool)
    with patch_redis():
        client.xadd("s", {"f": "v"})
        assert pool._available_connections  # a fake connection sits in the pool
    assert not pool._available_connections  # gone: the next command makes a fresh (real) connection
    assert pool.connection_class is STOCK


@pytest.mark.real
def test_passthrough_host_reaches_a_real_server(real_redis):
    real = real_redis()
    port = real.connection_pool.connection_kwargs["port"]
    real.flushall()
    with patch_redis(passthrough_hosts=[f"localhost:{port}"]) as network:
        redis.Redis(port=port).xadd("s", {"f": "real"})
        redis.Redis(port=port + 1).xadd("s", {"f": "fake"})
        assert list(network.servers()) == [f"localhost:{port + 1}"]
    assert real.xlen("s") == 1
