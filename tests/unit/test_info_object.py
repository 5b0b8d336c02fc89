"""INFO and OBJECT without a real server: every profile prints its listed fields in order, counters move, nothing
raises (the comparisons with the real servers are tests/conformance/test_info.py and test_object.py)."""

from __future__ import annotations

import pytest
import redis

from fake_streams import PROFILES, FakeStreamsServer, ManualClock
from fake_streams import info as info_model
from tests.conformance.oracles import parse_info
from tests.conftest import get_connection


def _layout(text: bytes):
    out = []
    for line in text.decode().split("\r\n"):
        if line.startswith("# "):
            out.append((info_model.section_name(line[2:]), []))
        elif line:
            out[-1][1].append(line.split(":", 1)[0])
    return out


@pytest.fixture(params=sorted(PROFILES))
def server(request):
    srv = FakeStreamsServer(request.param, clock=ManualClock(1_700_000_000_000))
    yield srv
    srv.close()


def test_every_section_prints_the_profiles_fields_in_order(server):
    r = server.client()
    r.xadd("s", {"f": "v"})
    r.set("k", "v", ex=100)
    conn = get_connection(r)
    try:
        for args in [(), ("everything",), ("debug",), ("all", "debug"), ("Server", "CLIENTS")]:
            conn.send_command("INFO", *args)
            text = conn.read_response()
            layout = _layout(text)
            assert [name for name, _ in layout] == info_model.select(server.profile.table_name, [a.encode() for a in args])
            for name, fields in layout:
                if name in info_model.FIELDS:
                    assert fields == info_model.field_names(server.profile.table_name, name), name
    finally:
        r.connection_pool.release(conn)


def test_counters_and_resetstat(server):
    r = server.client()
    r.xadd("s", {"f": "v"})
    errors = r.info("stats")["total_error_replies"]  # 7.0: redis-py's CLIENT SETINFO is an unknown subcommand
    with pytest.raises(redis.exceptions.ResponseError, match="wrong number of arguments"):
        r.execute_command("XADD", "s")
    stats = r.info("commandstats")
    assert stats["cmdstat_xadd"]["calls"] == 1 and stats["cmdstat_xadd"]["rejected_calls"] == 1
    err = r.info("errorstats")["errorstat_ERR"]  # redis-py 4.x leaves a one-field value unparsed: "count=1"
    assert (err["count"] if isinstance(err, dict) else int(err.split("=")[1])) == errors + 1
    assert r.config_resetstat()
    assert "cmdstat_xadd" not in r.info("commandstats")
    assert r.info("stats")["total_error_replies"] == 0


def test_keyspace_memory_and_clients_are_live(server):
    r = server.client()
    before = r.info("memory")["used_memory"]
    for i in range(100):
        r.xadd("s", {"field": "x" * 100}, id=f"{i + 1}-0")
    r.execute_command("SELECT", "2")
    r.set("other", "1")
    info = r.info()
    assert info["used_memory"] - before > 100 * 100
    assert info["db0"]["keys"] == 1 and info["db2"]["keys"] == 1
    assert info["maxmemory_policy"] == "noeviction" and info["cluster_enabled"] == 0 and info["role"] == "master"
    r.config_set("maxmemory-policy", "allkeys-lfu")
    assert r.info("memory")["maxmemory_policy"] == "allkeys-lfu"


def test_object_for_every_type(server):
    r = server.client()
    r.set("int", "12"), r.set("emb", "x"), r.set("raw", "x" * (120 if server.profile.has("embstr_holds_the_key") else 50))
    r.rpush("list", "a"), r.sadd("iset", 1), r.sadd("set", "a"), r.hset("hash", "a", "b"), r.zadd("zset", {"a": 1})
    r.xadd("stream", {"f": "v"})
    got = {k: r.object("encoding", k) for k in ("int", "emb", "raw", "list", "iset", "set", "hash", "zset", "stream")}
    seven_oh = server.version == "7.0"
    assert got == {"int": b"int", "emb": b"embstr", "raw": b"raw", "list": b"quicklist" if seven_oh else b"listpack",
                   "iset": b"intset", "set": b"hashtable" if seven_oh else b"listpack", "hash": b"listpack",
                   "zset": b"listpack", "stream": b"stream"}
    shared = 1 if server.profile.has("unshared_small_integers") else 2147483647
    assert r.object("refcount", "int") == shared and r.object("refcount", "stream") == 1
    assert r.object("encoding", "missing") is None
    assert parse_info(b"a:1\r\n") == {"a": "1"}
