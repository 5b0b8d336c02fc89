"""The connection classes: construction paths, server sharing, handshakes, parsers, HELLO/INFO per profile."""

from __future__ import annotations

import gc
import re
import socket
import weakref

import pytest
import redis
import redis.asyncio

from fake_streams import (
    PROFILES,
    FakeStreamsAsyncConnection,
    FakeStreamsConnection,
    FakeStreamsServer,
    ManualClock,
)
from tests.conftest import PROTOCOLS, REDIS_PY, get_connection, pool_kwargs

needs_protocol = pytest.mark.skipif(REDIS_PY < (5, 0), reason="protocol= needs redis-py >= 5")


def _server_of(client) -> FakeStreamsServer:
    conn = get_connection(client)
    try:
        return conn.streams_server
    finally:
        client.connection_pool.release(conn)


# ------------------------------------------------------------------------------------ construction
def test_redis_has_no_connection_class_parameter():
    with pytest.raises(TypeError):
        redis.Redis(connection_class=FakeStreamsConnection)


def test_pool_with_connection_class_and_shared_addresses():
    a1 = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=FakeStreamsConnection, host="a", port=1))
    a2 = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=FakeStreamsConnection, host="a", port=1))
    b = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=FakeStreamsConnection, host="b", port=1))
    a3 = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=FakeStreamsConnection, host="a", port=2))
    a1.xadd("s", {"f": "v"})
    assert a2.xlen("s") == 1
    assert b.xlen("s") == 0 and a3.xlen("s") == 0
    assert _server_of(a1) is _server_of(a2) is FakeStreamsServer.for_address("a", 1)
    assert _server_of(b) is not _server_of(a1)
    for c in (a1, a2, b, a3):
        c.close()


def test_from_url_keeps_the_connection_class():
    r = redis.Redis.from_url("redis://cache:6390/2", connection_class=FakeStreamsConnection)
    r.xadd("s", {"f": "v"})
    other = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=FakeStreamsConnection,
                                                             host="cache", port=6390, db=2))
    assert other.xlen("s") == 1
    assert _server_of(r) is FakeStreamsServer.for_address("cache", 6390)
    r.close()
    other.close()


def test_unix_path_keys_the_server():
    r1 = redis.Redis.from_url("unix:///tmp/fake.sock", connection_class=FakeStreamsConnection)
    r2 = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=FakeStreamsConnection, path="/tmp/fake.sock"))
    r1.xadd("s", {"f": "v"})
    assert r2.xlen("s") == 1
    assert _server_of(r1) is FakeStreamsServer.for_path("/tmp/fake.sock")
    r1.close()
    r2.close()


def test_server_kwarg_and_bind_override_the_address(server):
    direct = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=FakeStreamsConnection,
                                                              host="x", port=1, server=server))
    bound = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=FakeStreamsConnection.bind(server),
                                                             host="y", port=2))
    direct.xadd("s", {"f": "v"})
    assert bound.xlen("s") == 1
    assert _server_of(bound) is server
    assert issubclass(FakeStreamsConnection.bind(server), FakeStreamsConnection)
    direct.close()
    bound.close()


def test_fakeredis_class_cache_keeps_no_bound_class_alive():
    """fakeredis 2.41 asks, per connection class, whether it takes ``driver_info`` and remembers the answer (for
    every connection of ours on redis-py 4.x): that must not keep a ``bind`` class, nor its server, alive."""
    setup = pytest.importorskip("fakeredis._clients._setup", reason="fakeredis <= 2.38: no such cache")
    if not hasattr(setup, "_accepts_driver_info"):
        pytest.skip("this fakeredis has no per-class driver_info cache")
    server = FakeStreamsServer()
    bound = FakeStreamsConnection.bind(server)
    setup._accepts_driver_info(bound)
    assert bound in setup._ACCEPTS_DRIVER_INFO  # remembered (weakly: fake_streams._fakeredis.compat)
    refs = weakref.ref(bound), weakref.ref(server)
    server.close()
    del bound, server
    gc.collect()
    assert [ref() for ref in refs] == [None, None]


def test_server_kwarg_must_be_a_fake_streams_server():
    with pytest.raises(TypeError):
        FakeStreamsConnection(server=object())


def test_ssl_keepalive_and_socket_type_kwargs_are_dropped(server):
    conn = FakeStreamsConnection.bind(server)(
        host="h", port=1, ssl_keyfile="k", ssl_certfile="c", ssl_cert_reqs="required",
        socket_keepalive=True, socket_keepalive_options={}, socket_type=0, version="7.0",
    )
    conn.connect()
    conn.send_command("PING")
    assert conn.read_response() == b"PONG"
    conn.disconnect()


def test_version_kwarg_picks_the_profile_of_a_new_shared_server():
    r = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=FakeStreamsConnection,
                                                         host="v", port=1, version="7.0"))
    assert r.info("server")["redis_version"] == PROFILES["7.0"].redis_version
    r.close()


def test_closed_server_refuses_commands(server, make_client):
    r = make_client()
    r.ping()
    server.close()
    with pytest.raises(redis.ConnectionError):
        r.ping()


def test_no_dns_lookup_on_connect(monkeypatch, server):
    def refuse(*args, **kwargs):
        raise AssertionError(f"DNS lookup {args!r}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    pool = redis.ConnectionPool(connection_class=FakeStreamsConnection.bind(server),
                                **pool_kwargs(3, host="prod-redis.example.internal"))
    r = redis.Redis(connection_pool=pool)
    assert r.xadd("s", {"f": "v"}, id="1-1") == b"1-1"
    r.close()


# --------------------------------------------------------------------------------------- handshakes
@needs_protocol
@pytest.mark.parametrize("version", sorted(PROFILES))
def test_hello_reports_the_profile(version, make_client, server):
    srv = FakeStreamsServer(version)
    r = make_client(3, srv=srv)
    profile = PROFILES[version]
    reply = r.execute_command("HELLO", "3")
    assert reply[b"server"] == profile.server.encode()
    assert reply[b"version"] == profile.hello_version.encode()
    # Valkey 9.1 lists its built-in Lua engine module (live Valkey 9.1.2); the others list none
    modules = [{b"name": b"lua", b"ver": 1, b"path": b"lua", b"args": []}] if profile.has("lua_module_listed") else []
    assert (reply[b"proto"], reply[b"mode"], reply[b"role"], reply[b"modules"]) == (3, b"standalone", b"master", modules)
    conn = get_connection(r)
    assert conn.handshake_metadata[b"version"] == profile.hello_version.encode()
    r.connection_pool.release(conn)
    srv.close()


@needs_protocol
def test_hello_2_switches_back_and_is_flat(make_client):
    r = make_client(3)
    flat = r.execute_command("HELLO", "2")
    assert flat[:4] == [b"server", b"redis", b"version", b"7.4.1"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("decode", [False, True])
def test_decode_responses(make_client, protocol, decode):
    r = make_client(protocol, decode_responses=decode)
    sid = r.xadd("s", {"f": "v"}, id="1-1")
    info = r.xinfo_stream("s")
    if decode:
        assert sid == "1-1" and r.xrange("s") == [("1-1", {"f": "v"})]
        assert info["length"] == 1 and info["last-generated-id"] == "1-1"
    else:
        assert sid == b"1-1" and r.xrange("s") == [(b"1-1", {b"f": b"v"})]
        assert info["length"] == 1 and info["last-generated-id"] == b"1-1"


def _parser_classes():
    params = []
    if REDIS_PY >= (5, 0):
        from redis._parsers import _RESP2Parser, _RESP3Parser

        params += [(2, _RESP2Parser), (3, _RESP2Parser), (3, _RESP3Parser)]
        try:
            from redis._parsers import _HiredisParser
            from redis.utils import HIREDIS_AVAILABLE
        except ImportError:  # pragma: no cover
            HIREDIS_AVAILABLE = False
        if HIREDIS_AVAILABLE:
            params += [(2, _HiredisParser), (3, _HiredisParser)]
    else:  # pragma: no cover - redis-py 4.x
        from redis.connection import HIREDIS_AVAILABLE, HiredisParser, PythonParser

        params.append((2, PythonParser))
        if HIREDIS_AVAILABLE:
            params.append((2, HiredisParser))
    return params


@pytest.mark.parametrize("protocol, parser", _parser_classes(), ids=lambda p: getattr(p, "__name__", str(p)))
def test_handshake_with_each_parser(server, protocol, parser):
    pool = redis.ConnectionPool(connection_class=FakeStreamsConnection.bind(server),
                                **pool_kwargs(protocol, parser_class=parser, client_name="worker-1"))
    r = redis.Redis(connection_pool=pool)
    assert r.xadd("s", {"f": "v"}, id="1-1") == b"1-1"
    assert r.client_getname() in (b"worker-1", "worker-1")  # fakeredis answers CLIENT GETNAME with a str under RESP2
    assert r.xread({"s": "0"}) in ([[b"s", [(b"1-1", {b"f": b"v"})]]], {b"s": [[(b"1-1", {b"f": b"v"})]]})
    r.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_async_client_shares_the_server_with_sync(server, make_client, make_async_client, protocol):
    ar = make_async_client(protocol, client_name="async-1")
    assert await ar.xadd("s", {"f": "v"}, id="1-1") == b"1-1"
    assert make_client().xlen("s") == 1
    assert await ar.type("s") == b"stream"
    assert await ar.client_getname() in (b"async-1", "async-1")  # (fakeredis: a str under RESP2)
    pool = redis.asyncio.ConnectionPool(connection_class=FakeStreamsAsyncConnection, host="shared", port=1)
    other = redis.asyncio.Redis(connection_pool=pool)
    await other.set("k", "v")
    sync = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=FakeStreamsConnection,
                                                            host="shared", port=1))
    assert sync.get("k") == b"v"
    sync.close()
    await (other.aclose() if hasattr(other, "aclose") else other.close())


@pytest.mark.asyncio
async def test_async_no_dns_lookup(monkeypatch, server):
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: (_ for _ in ()).throw(AssertionError("DNS")))
    pool = redis.asyncio.ConnectionPool(connection_class=FakeStreamsAsyncConnection.bind(server),
                                        **pool_kwargs(3, host="prod-redis.example.internal"))
    r = redis.asyncio.Redis(connection_pool=pool)
    assert await r.ping() is True
    await (r.aclose() if hasattr(r, "aclose") else r.close())


# --------------------------------------------------------------------------------------------- INFO
@pytest.mark.parametrize("version", sorted(PROFILES))
def test_info_server_per_profile(version):
    srv = FakeStreamsServer(version, clock=ManualClock(1_700_000_000_000))
    r = srv.client()
    profile = PROFILES[version]
    info = r.info("server")
    assert info["redis_version"] == profile.redis_version
    assert info["server_mode" if profile.valkey_version else "redis_mode"] == "standalone"
    assert info["server_time_usec"] == 1_700_000_000_000_000
    if profile.valkey_version:
        assert info["valkey_version"] == profile.valkey_version and info["server_name"] == "valkey"
    else:
        assert "valkey_version" not in info
    r.close()
    srv.close()


def test_info_text_format_and_sections(make_client):
    r, other = make_client(), make_client(db=3)
    r.xadd("s", {"f": "v"})
    r.set("k", "v", ex=100)
    other.set("x", "y")
    conn = get_connection(r)
    conn.send_command("INFO", "CLIENTS", "keyspace")
    raw = conn.read_response()
    r.connection_pool.release(conn)
    assert raw.startswith(b"# Clients\r\nconnected_clients:2\r\n")
    assert re.search(rb"\r\n\r\n# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=(99\d\d\d|100000),subexpiry=0\r\n"
                     rb"db3:keys=1,expires=0,avg_ttl=0,subexpiry=0\r\n$", raw), raw  # avg_ttl: the mean TTL in ms
    assert set(r.info()) >= {"redis_version", "connected_clients", "blocked_clients", "role", "db0", "db3"}
    assert r.info("nosuchsection") == {}


@pytest.mark.real
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_hello_and_info_equal_the_real_server(real_pair, protocol):
    fake_make, real_make = real_pair
    seen = []
    for r in (fake_make(protocol), real_make(protocol)):
        r.xadd("s", {"f": "v"})
        hello = r.execute_command("HELLO", str(protocol))
        hello = dict(zip(hello[::2], hello[1::2])) if isinstance(hello, list) else hello
        hello.pop(b"id")
        info = r.info()
        conn = get_connection(r)
        conn.send_command("INFO", "keyspace")
        keyspace = conn.read_response()
        r.connection_pool.release(conn)
        seen.append((hello, info["redis_version"], info["redis_mode"], info["role"], info["db0"], keyspace))
    assert seen[0] == seen[1]


# ------------------------------------------------------------------------------------ pytest plugin
def test_plugin_fixture_sync(fake_redis_streams):
    r = fake_redis_streams.client
    assert r.xadd("s", {"f": "v"}, id="1-1") == b"1-1"
    assert fake_redis_streams.server.version == "7.4"
    assert fake_redis_streams.clock is fake_redis_streams.server.clock


@pytest.mark.asyncio
async def test_plugin_fixture_async(fake_redis_streams):
    ar = fake_redis_streams.async_client()
    assert await ar.xadd("s", {"f": "v"}, id="1-1") == b"1-1"
    assert fake_redis_streams.client.xlen("s") == 1
