"""DUMP / RESTORE through the fake (in process): the override module, RESTORE's option and error order, streams.

The comparisons with real servers are in tests/conformance/test_dump_restore.py; here: what needs the fake's
insides (node model, tombstones, TTLs on fakeredis's clock) and the crafted-pickle payload.
"""

from __future__ import annotations

import hashlib
import pickle

import pytest
import redis

from fake_streams.rdb import format_for, load_payload
from fake_streams.rdb.payload import frame
from tests.support.budget import budget


class _CreatesAFile:
    """A pickle that, when loaded, creates a file: the proof that a payload ran code."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _pickle_payload(path) -> bytes:
    body = pickle.dumps(_CreatesAFile(str(path)))
    return hashlib.sha1(body).digest() + body  # what fakeredis's own RESTORE accepted


def test_crafted_pickle_payload_is_refused_and_runs_nothing(make_client, tmp_path):
    marker = tmp_path / "ran"
    client = make_client()
    with pytest.raises(redis.ResponseError, match="^DUMP payload version or checksum are wrong$"):
        client.restore("k", 0, _pickle_payload(marker))
    assert not marker.exists()
    assert client.exists("k") == 0


def test_dump_of_a_missing_key_is_nil(make_client):
    assert make_client().dump("nothing") is None


def _populate(c):
    c.set("s", "hello")
    c.set("n", "-42")
    c.rpush("l", "a", "b", "7")
    c.sadd("si", 3, 1, 2)
    c.sadd("ss", "x", "y")
    c.zadd("z", {"a": 1.5, "b": -2})
    c.hset("h", mapping={"f": "v", "g": "1"})
    for i in range(1, 8):
        c.xadd("x", {"f": i, "g": "v"}, id=f"{i}-1")
    c.xdel("x", "3-1")
    c.xgroup_create("x", "grp", "0")
    c.xreadgroup("grp", "alice", {"x": ">"}, count=2)
    c.xreadgroup("grp", "bob", {"x": ">"}, count=1)


@pytest.mark.parametrize("version", ["7.0", "7.2", "7.4", "valkey-8.0"])
def test_every_type_round_trips(server_factory, version):
    c = server_factory(version).client()
    _populate(c)
    for key in (b"s", b"n", b"l", b"si", b"ss", b"z", b"h", b"x"):
        payload = c.dump(key)
        assert payload[-10:-8] == format_for(version).version.to_bytes(2, "little")
        c.restore(b"copy:" + key, 0, payload)
        assert c.dump(b"copy:" + key) == payload
    assert c.get("copy:s") == b"hello" and c.get("copy:n") == b"-42"
    assert c.lrange("copy:l", 0, -1) == [b"a", b"b", b"7"]
    assert c.smembers("copy:si") == {b"1", b"2", b"3"}
    assert c.zrange("copy:z", 0, -1, withscores=True) == [(b"b", -2.0), (b"a", 1.5)]
    assert c.hgetall("copy:h") == {b"f": b"v", b"g": b"1"}
    assert c.xinfo_stream("copy:x", full=True) == c.xinfo_stream("x", full=True)
    assert c.xpending_range("copy:x", "grp", "-", "+", 10) == c.xpending_range("x", "grp", "-", "+", 10)


@pytest.fixture
def server_factory(make_client):
    from fake_streams import FakeStreamsServer, ManualClock

    servers = []

    def make(version):
        server = FakeStreamsServer(version=version, clock=ManualClock(1_700_000_000_000))
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


def test_restored_stream_keeps_the_node_model(server_factory):
    c = server_factory("7.4").client()
    c.config_set("stream-node-max-entries", 3)
    for i in range(1, 11):
        c.xadd("x", {"f": i}, id=f"{i}-0")
    c.xdel("x", "2-0", "5-0")
    c.execute_command("XTRIM", "x", "MAXLEN", 7)  # exact: 1-0 becomes a tombstone too (nodes [1 2 3] [4 5 6] [7 8 9] [10])
    payload = c.dump("x")
    c.config_set("stream-node-max-entries", 100)  # RESTORE keeps the payload's nodes, not the config's
    c.restore("y", 0, payload)
    assert c.dump("y") == payload
    assert c.xinfo_stream("y")["radix-tree-keys"] == c.xinfo_stream("x")["radix-tree-keys"] == 4
    assert c.xtrim("y", maxlen=4, approximate=True) == c.xtrim("x", maxlen=4, approximate=True)
    assert c.dump("y") == c.dump("x")
    data = load_payload(c.dump("x"), format_for("7.4")).data
    assert [[(e.id, e.deleted) for e in n.entries] for n in data.nodes] == [
        [((7, 0), False), ((8, 0), False), ((9, 0), False)], [((10, 0), False)]]


def test_tombstones_keep_their_fields_in_the_payload(server_factory):
    c = server_factory("7.4").client()
    c.xadd("x", {"a": "1"}, id="1-0")
    c.xadd("x", {"a": "2", "b": "zz"}, id="2-0")
    c.xadd("x", {"a": "3"}, id="3-0")
    c.xdel("x", "2-0")
    c.execute_command("XTRIM", "x", "MAXLEN", 1)
    data = load_payload(c.dump("x"), format_for("7.4")).data
    (node,) = data.nodes
    assert [(e.id, e.fields, e.deleted) for e in node.entries] == [
        ((1, 0), [b"a", b"1"], True), ((2, 0), [b"a", b"2", b"b", b"zz"], True), ((3, 0), [b"a", b"3"], False)]


def test_restore_option_and_error_order(make_client):
    c = make_client()
    c.set("old", "v")
    payload = c.dump("old")
    errors = [
        (["old", "x", payload, "BOGUS"], "syntax error"),  # options before anything else
        (["old", "0", payload, "IDLETIME", "x"], "value is not an integer or out of range"),
        (["old", "0", payload, "IDLETIME", "-1"], "Invalid IDLETIME value, must be >= 0"),
        (["old", "0", payload, "FREQ", "256"], "Invalid FREQ value, must be >= 0 and <= 255"),
        (["old", "0", payload, "IDLETIME", "1", "FREQ", "1"], "syntax error"),
        (["old", "0", payload, "IDLETIME"], "syntax error"),
        (["old", "x", payload], "BUSYKEY Target key name already exists."),  # BUSYKEY before the TTL
        (["new", "x", payload], "value is not an integer or out of range"),
        (["new", "-1", payload], "Invalid TTL value, must be >= 0"),
        (["new", "0", b"short"], "DUMP payload version or checksum are wrong"),
        (["new", "0", payload[:-1] + b"\x00"], "DUMP payload version or checksum are wrong"),
        (["new", "0", frame(b"\x00\x80\x00\x00\x10\x00ab", 12)], "Bad data format"),  # 4096 bytes announced
        (["old", "0", frame(b"\x63", 12), "REPLACE"], "Bad data format"),
    ]
    for args, text in errors:
        with pytest.raises(redis.ResponseError) as info:
            c.execute_command("RESTORE", *args)
        assert str(info.value) == text, args
    assert c.get("old") == b"v" and c.exists("new") == 0  # nothing changed on any error
    with pytest.raises(redis.ResponseError, match="^BUSYKEY Target key name already exists.$"):
        c.restore("old", 0, payload)


def test_restore_replace_ttl_and_absttl(make_client):
    c = make_client()
    c.set("src", "value")
    payload = c.dump("src")
    c.set("dst", "other", ex=100)
    assert c.restore("dst", 0, payload, replace=True)
    assert c.get("dst") == b"value" and c.ttl("dst") == -1
    assert c.restore("t", 50_000, payload)
    assert 49 <= c.ttl("t") <= 50
    assert c.execute_command("RESTORE", "gone", 1, payload, "ABSTTL") == b"OK"  # already expired: not created
    assert c.exists("gone") == 0
    assert c.execute_command("RESTORE", "dst", 1, payload, "ABSTTL", "REPLACE") == b"OK"  # ... and the old one goes
    assert c.exists("dst") == 0
    assert c.execute_command("RESTORE", "later", 4_102_444_800_000, payload, "ABSTTL", "IDLETIME", "10") == b"OK"
    assert c.ttl("later") > 10**8


def test_dump_follows_rdbcompression(make_client):
    c = make_client()
    c.set("s", "a" * 100)
    assert len(c.dump("s")) < 40
    c.config_set("rdbcompression", "no")
    assert c.dump("s") == frame(b"\x00\x40\x64" + b"a" * 100, 12)


def test_dump_follows_the_listpack_limits(make_client):
    c = make_client()
    c.hset("h", mapping={"a": "1", "b": "2"})
    assert c.dump("h")[0] == 16  # RDB_TYPE_HASH_LISTPACK
    c.config_set("hash-max-listpack-entries", 1)
    assert c.dump("h")[0] == 4  # RDB_TYPE_HASH


def test_hash_field_ttls_survive_dump_and_restore(make_client):
    c = make_client()  # profile 7.4
    c.hset("h", mapping={"a": "1", "b": "2"})
    c.execute_command("HPEXPIREAT", "h", 4_102_444_800_000, "FIELDS", 1, "b")
    c.restore("h2", 0, c.dump("h"))
    assert c.hgetall("h2") == {b"a": b"1", b"b": b"2"}
    assert c.execute_command("HPEXPIRETIME", "h2", "FIELDS", 2, "a", "b") == [-1, 4_102_444_800_000]


def test_restore_of_corrupted_payloads_never_breaks_the_server(make_client):
    """Random corruption of real-format payloads (CRC fixed up): RESTORE answers OK or one of the two payload
    errors, and a value it accepted can be read, trimmed and dumped (the server fixture checks that no
    internal error was recorded)."""
    import random

    c = make_client()
    _populate(c)
    c.hset("hx", mapping={"a": "1"})
    c.execute_command("HPEXPIREAT", "hx", 4_102_444_800_000, "FIELDS", 1, "a")
    rnd = random.Random(1414)
    allowed = {"DUMP payload version or checksum are wrong", "Bad data format"}
    accepted = 0
    for key in (b"x", b"h", b"z", b"l", b"si", b"ss", b"hx"):
        body = c.dump(key)[:-10]
        for i in range(budget(fast=40, full=150)):
            mutated = bytearray(body)
            for _ in range(rnd.randrange(1, 3)):
                mutated[rnd.randrange(len(mutated))] = rnd.randrange(256)
            try:
                assert c.restore(b"fuzz", 0, frame(bytes(mutated), 12), replace=True)
            except redis.ResponseError as exc:
                assert str(exc) in allowed, (key, i, exc)
                continue
            accepted += 1
            kind = c.type("fuzz")
            if kind == b"stream":
                c.xinfo_stream("fuzz", full=True)
                c.xrange("fuzz")
                c.execute_command("XTRIM", "fuzz", "MAXLEN", "~", 1)
                for group in c.xinfo_groups("fuzz"):
                    c.xreadgroup(group["name"], "fuzzer", {"fuzz": "0"})
                    c.xpending_range("fuzz", group["name"], "-", "+", 10)
            c.dump("fuzz")
    assert accepted  # some corruption (inside a value's bytes) loads as a different value


@pytest.mark.asyncio
async def test_dump_and_restore_from_an_asyncio_client(make_async_client, tmp_path):
    c = make_async_client(protocol=3)
    await c.xadd("s", {"f": "v"}, id="1-1")
    await c.xgroup_create("s", "g", "0")
    assert await c.restore("copy", 0, await c.dump("s")) == b"OK"
    assert await c.xinfo_groups("copy") == await c.xinfo_groups("s")
    marker = tmp_path / "ran"
    with pytest.raises(redis.ResponseError, match="^DUMP payload version or checksum are wrong$"):
        await c.restore("evil", 0, _pickle_payload(marker))
    assert not marker.exists()
