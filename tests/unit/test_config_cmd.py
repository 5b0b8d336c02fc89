"""CONFIG as libraries use it through redis-py, and the effects of CONFIG SET on what the fake emulates.

The replies themselves are compared with the real servers in tests/conformance/test_config.py; here: that a
value CONFIG SET stores reaches its readers (keyspace notifications, the stream node limits, OBJECT ENCODING,
INFO, requirepass), that every profile has a table, and the glob matcher.
"""

import pytest
import redis

from fake_streams.config import glob_matcher, table_for
from fake_streams.config_table import TABLES
from fake_streams.profiles import PROFILES
from fake_streams.server import FakeStreamsServer
from tests.conftest import PROTOCOLS, pool_kwargs
from tests.support.redis_compat import aclose


@pytest.fixture
def server():
    s = FakeStreamsServer(version="7.4")
    yield s
    s.close()


def test_library_reads(server):
    r = server.client(decode_responses=True)
    assert r.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
    assert r.config_get("stream-node-max-*") == {"stream-node-max-bytes": "4096", "stream-node-max-entries": "100"}
    assert r.config_get("databases") == {"databases": "16"}
    assert r.config_set("maxmemory", "1mb") is True
    assert r.config_get("maxmemory") == {"maxmemory": "1048576"}
    with pytest.raises(redis.ResponseError, match="argument must be a memory value"):
        r.config_set("maxmemory", "lots")


def test_keyspace_events_set_by_config_reach_subscribers(server):
    r = server.client()
    assert r.config_set("notify-keyspace-events", "KEA")
    assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": "AKE"}
    sub = r.pubsub()
    sub.psubscribe("__key*__:*")
    assert sub.get_message(timeout=1)["type"] == "psubscribe"
    r.xadd("s", {"f": "v"})
    got = [sub.get_message(timeout=1) for _ in range(2)]
    assert [(m["channel"], m["data"]) for m in got] == [(b"__keyspace@0__:s", b"xadd"), (b"__keyevent@0__:xadd", b"s")]
    r.config_set("notify-keyspace-events", "")
    r.xadd("s", {"f": "v"})
    assert sub.get_message(timeout=0.05) is None  # real-time: a bounded wait for a message that must not come
    sub.close()


def test_stream_node_limits_reach_the_engine(server):
    r = server.client()
    r.config_set("stream-node-max-entries", "2")
    for i in range(5):
        r.xadd("s", {"f": "v"}, id=f"{i + 1}-1")
    assert r.xinfo_stream("s")["radix-tree-keys"] == 3


def test_an_alias_stores_the_canonical_parameter(server):
    r = server.client()
    r.config_set("hash-max-ziplist-entries", "2")
    fake_config = server.backend.fake.config
    assert fake_config[b"hash-max-listpack-entries"] == b"2"
    assert b"hash-max-ziplist-entries" not in fake_config
    r.hset("h", mapping={"a": "1", "b": "2"})
    assert r.object("encoding", "h") == b"listpack"
    r.hset("h", "c", "3")
    assert r.object("encoding", "h") == b"hashtable"
    r.config_set("lua-time-limit", "100")
    assert fake_config[b"busy-reply-threshold"] == b"100"


def test_maxmemory_policy_reaches_info(server):
    r = server.client()
    r.config_set("maxmemory-policy", "ALLKEYS-LFU")
    assert r.info("memory")["maxmemory_policy"] == "allkeys-lfu"


def test_requirepass_set_by_config_takes_effect(server):
    r = server.client()
    r.config_set("requirepass", "pw")
    with pytest.raises(redis.AuthenticationError):
        server.client().ping()
    assert server.client(password="pw").ping()
    r.config_set("requirepass", "")
    assert server.client().ping()


def test_a_refused_multi_set_changes_nothing(server):
    r = server.client()
    with pytest.raises(redis.ResponseError, match="'hz'"):
        r.execute_command("CONFIG", "SET", "maxmemory", "10", "hz", "abc")
    assert r.config_get("maxmemory") == {"maxmemory": "0"}
    assert server.backend.fake.config.get(b"maxmemory") is None


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_has_a_table(name):
    profile = PROFILES[name]
    table = table_for(profile.name, profile.server)
    names = dict(table.get([b"*"], {}))
    assert b"maxmemory-policy" in names and b"stream-node-max-entries" in names
    assert all(p.canonical.lower() in table.entries for p in table.entries.values())


def test_tables_chain_to_known_parents():
    for version, (parent, body, removed) in TABLES.items():
        assert parent is None or parent in TABLES, version
        for line in body.splitlines():
            assert line.count("|") == 5, line
        for name in removed:  # a version drops only what its parent has
            assert table_for(parent, "").lookup(name) is not None, (version, name)
            now = table_for(version, "").lookup(name)  # gone, or only an alias now (server_cpulist)
            assert now is None or now.canonical != name, (version, name)


@pytest.mark.parametrize("pattern,name,matches", [
    (b"*", b"hz", True), (b"h?", b"hz", True), (b"h?", b"hzz", False), (b"[hz]z", b"zz", True),
    (b"[^h]z", b"hz", False), (b"[a-i]z", b"hz", True), (b"HZ*", b"hz", True), (b"h\\*", b"h*", True),
    (b"h\\*", b"hz", False), (b"max*-policy", b"maxmemory-policy", True), (b"[]", b"x", False),
])
def test_glob_matcher(pattern, name, matches):
    assert glob_matcher(pattern)(name) is matches


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_config_through_the_asyncio_client(server, protocol):
    r = server.async_client(**pool_kwargs(protocol))
    assert await r.config_set("hz", "20") is True
    assert await r.config_get("hz") == {"hz": "20"}
    assert await r.config_get("hz", "maxmemory") == {"hz": "20", "maxmemory": "0"}  # RESP2 pairs / RESP3 map
    await aclose(r)


def test_port_is_the_address_clients_reach():
    shared = FakeStreamsServer.for_address("localhost", 6390, version="7.0")
    try:
        r = shared.client()
        assert r.config_get("port") == {"port": "6390"}
        assert r.info("server")["tcp_port"] == 6390
    finally:
        FakeStreamsServer.reset_registry()


def test_a_bare_config_from_a_script_is_noscript():
    """fakeredis < 2.39 does not join ``redis.call('config', 'get', …)`` with its subcommand: the bare container,
    looked up from a script, carries ``noscript`` (fakeredis then refuses it as the server does)."""
    from types import SimpleNamespace

    from fake_streams._fakeredis import overrides
    from fake_streams._fakeredis.compat import SimpleError, msgs

    lookup = overrides.find("config")
    in_script = SimpleNamespace(_sf_session=SimpleNamespace(depth=1))
    _, sig = lookup(in_script, "config", lambda: (None, None))
    assert msgs.FLAG_NO_SCRIPT in sig.flags
    top_level = SimpleNamespace(_sf_session=SimpleNamespace(depth=0))
    with pytest.raises(SimpleError, match="wrong number of arguments for 'config' command"):
        lookup(top_level, "config", lambda: (None, None))
