"""The fake cluster: CLUSTER replies, slot checks (CROSSSLOT / MOVED / ASK / CLUSTERDOWN), cluster-mode rules, and the
test helpers (resharding, failures, failover) as redis-py's RedisCluster (sync and asyncio) lives through them."""

from __future__ import annotations

import asyncio

import pytest
import redis
import redis.exceptions
from redis.cluster import RedisCluster

from fake_streams import ManualClock
from fake_streams.topology import FakeCluster, key_slot
from tests.conformance.replies import err_from_exception
from tests.conftest import PROTOCOLS, REDIS_PY, get_connection, pool_kwargs
from tests.support.redis_compat import NO_RESP3, aclose, record_status_codes, with_cluster_errors

record_status_codes()  # err() reads the error code older redis-py strips (also when this file runs alone)

START_MS = 1_700_000_000_000


@pytest.fixture
def cluster():
    c = FakeCluster(3, clock=ManualClock(START_MS))
    yield c
    c.close()


def raw(node, *argv, protocol=2):
    """One command on a node, its raw reply (no response callbacks; errors returned as exceptions)."""
    if protocol == 3 and NO_RESP3:
        pytest.skip(NO_RESP3)
    conn = get_connection(node.server.client(**pool_kwargs(protocol)))
    try:
        conn.send_command(*argv)
        try:
            return conn.read_response(disable_decoding=True)
        except redis.exceptions.ResponseError as exc:
            return exc
    finally:
        conn.disconnect()


def cluster_connection(client):
    """A connection of ``client`` that parses the cluster errors as RedisCluster's do (MovedError, AskError …):
    before redis-py 6 only the ClusterParser RedisCluster gives its connections does."""
    return with_cluster_errors(get_connection(client))


def err(reply):
    """The error line as the server sent it (redis-py strips known codes: ERR, MOVED, ASK, CROSSSLOT …)."""
    assert isinstance(reply, redis.exceptions.ResponseError), reply
    return err_from_exception(reply).full


def test_slot_ownership_and_cluster_replies(cluster):
    first, second, third = cluster.nodes
    assert [n.slot_ranges() for n in cluster.nodes] == [[(0, 5460)], [(5461, 10922)], [(10923, 16383)]]
    assert raw(first, "CLUSTER", "KEYSLOT", "foo") == 12182
    assert raw(first, "CLUSTER", "MYID") == first.node_id.encode()
    slots = raw(first, "CLUSTER", "SLOTS")
    assert slots == [[0, 5460, [b"127.0.0.1", first.port, first.node_id.encode(), []]],
                     [5461, 10922, [b"127.0.0.1", second.port, second.node_id.encode(), []]],
                     [10923, 16383, [b"127.0.0.1", third.port, third.node_id.encode(), []]]]
    lines = raw(second, "CLUSTER", "NODES").decode().splitlines()
    assert lines[0].split()[:3] == [second.node_id, f"127.0.0.1:{second.port}@{second.port + 10000}",
                                    "myself,master"]
    assert lines[0].split()[-2:] == ["connected", "5461-10922"]
    info = dict(line.split(":") for line in raw(first, "CLUSTER", "INFO").decode().split("\r\n") if line)
    assert info["cluster_state"] == "ok" and info["cluster_known_nodes"] == "3" and info["cluster_size"] == "3"
    flat = raw(first, "CLUSTER", "SHARDS")
    assert flat[0][0] == b"slots" and flat[0][2] == b"nodes" and flat[0][3][0][:2] == [b"id", first.node_id.encode()]
    assert raw(first, "CLUSTER", "SLOTS", protocol=3)[0][2][3] == {}
    shards = raw(first, "CLUSTER", "SHARDS", protocol=3)
    assert shards[0][b"slots"] == [0, 5460] and shards[0][b"nodes"][0][b"id"] == first.node_id.encode()


def test_cluster_command_errors(cluster):
    node = cluster.nodes[0]
    assert err(raw(node, "CLUSTER")) == "ERR wrong number of arguments for 'cluster' command"
    assert err(raw(node, "CLUSTER", "foo")) == "ERR unknown subcommand 'foo'. Try CLUSTER HELP."
    assert err(raw(node, "CLUSTER", "KEYSLOT")) == "ERR wrong number of arguments for 'cluster|keyslot' command"
    assert err(raw(node, "CLUSTER", "COUNTKEYSINSLOT", "16384")) == "ERR Invalid slot"
    assert err(raw(node, "CLUSTER", "COUNTKEYSINSLOT", "x")) == "ERR value is not an integer or out of range"
    assert err(raw(node, "CLUSTER", "GETKEYSINSLOT", "1", "-1")) == "ERR Invalid slot or number of keys"
    assert raw(node, "CLUSTER", "HELP")[0].startswith(b"CLUSTER <subcommand>")


def test_keys_in_slot(cluster):
    node = cluster.node_for_key("{t}a")
    for key in ("{t}a", "{t}b", "{t}c"):
        assert raw(node, "SET", key, "1") == b"OK"
    slot = key_slot(b"t")
    assert raw(node, "CLUSTER", "COUNTKEYSINSLOT", str(slot)) == 3
    assert raw(node, "CLUSTER", "GETKEYSINSLOT", str(slot), "2") == [b"{t}c", b"{t}b"]  # newest first


def test_moved_and_crossslot(cluster):
    owner = cluster.node_for_key("foo")
    other = next(n for n in cluster.nodes if n is not owner)
    assert err(raw(other, "GET", "foo")) == f"MOVED 12182 127.0.0.1:{owner.port}"
    assert err(raw(other, "XADD", "foo", "*", "f", "v")) == f"MOVED 12182 127.0.0.1:{owner.port}"
    assert raw(owner, "XADD", "foo", "1-1", "f", "v") == b"1-1"
    node = cluster.nodes[0]
    cross = "CROSSSLOT Keys in request don't hash to the same slot"
    for argv in (("MSET", "a", "1", "b", "2"), ("DEL", "a", "b"), ("XREAD", "STREAMS", "a", "b", "0", "0"),
                 ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", ">", ">"),
                 ("EVAL", "return 1", "2", "a", "b"), ("SUNIONSTORE", "a", "b"), ("RENAME", "a", "b")):
        assert err(raw(node, *argv)) == cross, argv
    same = cluster.node_for_key("{a}")
    assert raw(same, "MSET", "{a}1", "1", "{a}2", "2") == b"OK"
    assert raw(same, "XREAD", "STREAMS", "{a}x", "{a}y", "0", "0") is None
    assert raw(node, "PING") == b"PONG"  # no key: any node serves it


def test_transactions_across_slots(cluster):
    node = cluster.node_for_key("{a}")
    client = node.server.client()
    conn = cluster_connection(client)
    try:
        for argv in (("MULTI",), ("SET", "{a}1", "x"), ("SET", "{a}2", "y")):
            conn.send_command(*argv)
            conn.read_response()
        conn.send_command("EXEC")
        assert conn.read_response() == [b"OK", b"OK"]
        # each queued command is on a slot of this node, but EXEC sees two slots: CROSSSLOT, transaction gone
        other = next(k for k in (f"k{i}" for i in range(100)) if cluster.node_for_key(k) is node
                     and key_slot(k.encode()) != key_slot(b"a"))
        for argv in (("MULTI",), ("SET", "{a}1", "z"), ("SET", other, "z")):
            conn.send_command(*argv)
            conn.read_response()
        conn.send_command("EXEC")
        with pytest.raises(redis.exceptions.ClusterCrossSlotError):
            conn.read_response()
        conn.send_command("GET", "{a}1")
        assert conn.read_response() == b"x"
        # a queued command of another node's slot: MOVED at queue time, EXEC aborts
        moved = next(k for k in (f"k{i}" for i in range(100)) if cluster.node_for_key(k) is not node)
        conn.send_command("MULTI")
        conn.read_response()
        conn.send_command("SET", moved, "1")
        with pytest.raises(redis.exceptions.MovedError):
            conn.read_response()
        conn.send_command("EXEC")
        with pytest.raises(redis.exceptions.ExecAbortError):
            conn.read_response()
    finally:
        conn.disconnect()


def test_cluster_mode_rules(cluster):
    node = cluster.nodes[0]
    assert err(raw(node, "SELECT", "1")) == "ERR SELECT is not allowed in cluster mode"
    assert raw(node, "SELECT", "0") == b"OK"
    assert err(raw(node, "SELECT", "x")) == "ERR value is not an integer or out of range"
    assert err(raw(node, "SWAPDB", "0", "1")) == "ERR SWAPDB is not allowed in cluster mode"
    mine = next(k for k in (f"k{i}" for i in range(100)) if cluster.node_for_key(k) is node)
    assert err(raw(node, "MOVE", mine, "1")) == "ERR MOVE is not allowed in cluster mode"
    info = raw(node, "INFO", "cluster").decode()
    assert "cluster_enabled:1" in info
    assert "redis_mode:cluster" in raw(node, "INFO", "server").decode()
    assert raw(node, "HELLO", "3", protocol=3)[b"mode"] == b"cluster"
    assert raw(node, "READONLY") == b"OK" and raw(node, "READWRITE") == b"OK" and raw(node, "ASKING") == b"OK"


def test_standalone_refuses_cluster_commands():
    from fake_streams import FakeStreamsServer

    server = FakeStreamsServer()
    try:
        node = type("Standalone", (), {"server": server})()
        for argv in (("CLUSTER", "SLOTS"), ("CLUSTER", "INFO"), ("CLUSTER", "KEYSLOT", "x"), ("READONLY",),
                     ("READWRITE",), ("ASKING",)):
            assert err(raw(node, *argv)) == "ERR This instance has cluster support disabled", argv
        assert err(raw(node, "CLUSTER", "nope")) == "ERR unknown subcommand 'nope'. Try CLUSTER HELP."
        assert raw(node, "SELECT", "1") == b"OK"
        assert "cluster_enabled:0" in raw(node, "INFO", "cluster").decode()
    finally:
        server.close()


def test_ask_during_migration(cluster):
    src = cluster.node_for_key("{m}1")
    dst = next(n for n in cluster.nodes if n is not src)
    slot = key_slot(b"m")
    assert raw(src, "XADD", "{m}1", "1-1", "f", "v") == b"1-1"
    assert raw(src, "SET", "{m}2", "x") == b"OK"
    cluster.begin_migration(slot, dst)
    assert f"[{slot}->-{dst.node_id}]" in raw(src, "CLUSTER", "NODES").decode().splitlines()[0]
    assert f"[{slot}-<-{src.node_id}]" in raw(dst, "CLUSTER", "NODES").decode().splitlines()[0]
    assert raw(src, "XLEN", "{m}1") == 1  # still here: served
    assert err(raw(src, "GET", "{m}new")) == f"ASK {slot} 127.0.0.1:{dst.port}"
    assert err(raw(dst, "GET", "{m}new")) == f"MOVED {slot} 127.0.0.1:{src.port}"  # no ASKING: MOVED back
    assert raw(src, "MGET", "{m}1", "{m}2") == [None, b"x"]  # both here: served
    moved = cluster.migrate_keys(slot, count=1)  # in GETKEYSINSLOT order: the newest key first
    assert moved == [b"{m}2"]
    assert err(raw(src, "MGET", "{m}1", "{m}2")) == "TRYAGAIN Multiple keys request during rehashing of slot"
    moved = cluster.migrate_keys(slot, count=1)
    assert moved == [b"{m}1"]
    assert err(raw(src, "XLEN", "{m}1")) == f"ASK {slot} 127.0.0.1:{dst.port}"
    conn = cluster_connection(dst.server.client())
    try:
        conn.send_command("ASKING")
        assert conn.read_response() == b"OK"
        conn.send_command("XRANGE", "{m}1", "-", "+")
        assert conn.read_response() == [[b"1-1", [b"f", b"v"]]]
        conn.send_command("XLEN", "{m}1")  # ASKING lasts one command
        with pytest.raises(redis.exceptions.MovedError):
            conn.read_response()
        conn.send_command("ASKING")
        conn.read_response()
        conn.send_command("MGET", "{m}1", "{m}absent")  # several keys, one missing here: TRYAGAIN
        with pytest.raises(redis.exceptions.TryAgainError):
            conn.read_response()
    finally:
        conn.disconnect()
    cluster.migrate_keys(slot)
    cluster.finish_migration(slot)
    assert err(raw(src, "XLEN", "{m}1")) == f"MOVED {slot} 127.0.0.1:{dst.port}"
    assert raw(dst, "XLEN", "{m}1") == 1 and raw(dst, "GET", "{m}2") == b"x"


def test_redis_cluster_client_streams_and_resharding(cluster):
    rc = cluster.client()
    try:
        rc.xadd("{orders}", {"id": "1"}, id="1-1")
        rc.xgroup_create("{orders}", "workers", id="0")
        assert rc.xreadgroup("workers", "alice", {"{orders}": ">"}) == [[b"{orders}", [(b"1-1", {b"id": b"1"})]]]
        with pytest.raises(redis.exceptions.RedisClusterException):
            rc.xread({"a": "0", "b": "0"})
        slot = key_slot(b"orders")
        target = next(n for n in cluster.nodes if n is not cluster.node_for_key("{orders}"))
        cluster.move_slot(slot, target)  # the client still thinks the old node owns it: MOVED, then it follows
        pending = rc.xpending("{orders}", "workers")
        assert pending["pending"] == 1 and pending["consumers"] == [{"name": b"alice", "pending": 1}]
        assert rc.xack("{orders}", "workers", "1-1") == 1
        assert rc.cluster_keyslot("{orders}") == slot
    finally:
        rc.close()


def test_failover_keeps_streams_groups_and_pel(cluster):
    rc = cluster.client()
    try:
        rc.xadd("jobs", {"n": "1"}, id="1-1")
        rc.xgroup_create("jobs", "g", id="0")
        rc.xreadgroup("g", "c", {"jobs": ">"})
        old = cluster.node_for_key("jobs")
        new = next(n for n in cluster.nodes if n is not old)
        cluster.failover(old, new)
        assert cluster.node_for_key("jobs") is new
        assert rc.xpending("jobs", "g")["pending"] == 1  # the client meets a dead node, refreshes, retries
        assert old.server.connected is False
    finally:
        rc.close()


def test_failed_node_means_clusterdown(cluster):
    down = cluster.fail_node(2)
    up = cluster.nodes[0]
    mine = next(k for k in (f"k{i}" for i in range(100)) if cluster.node_for_key(k) is up)
    assert err(raw(up, "GET", mine)) == "CLUSTERDOWN The cluster is down"
    assert raw(up, "PING") == b"PONG"
    assert b"cluster_state:fail" in raw(up, "CLUSTER", "INFO")
    assert f"{down.node_id} 127.0.0.1:{down.port}@{down.cport} master,fail" in raw(up, "CLUSTER", "NODES").decode()
    with pytest.raises(redis.exceptions.ConnectionError):
        down.server.client().ping()
    cluster.revive_node(down)
    assert raw(up, "GET", mine) is None


def test_single_node_cluster_has_no_ip():
    with FakeCluster(1, base_port=31001) as single:
        node = single.nodes[0]
        assert raw(node, "CLUSTER", "SLOTS") == [[0, 16383, [b"", node.port, node.node_id.encode(), []]]]
        assert raw(node, "CLUSTER", "NODES").decode() == f"{node.node_id} :{node.port}@{node.cport} myself,master - 0 0 0 connected 0-16383\n"
        assert err(raw(node, "MSET", "a", "1", "b", "2")).startswith("CROSSSLOT")
        rc = RedisCluster.from_url(f"redis://127.0.0.1:{node.port}", connection_class=single.network.sync_class)
        try:
            assert rc.xadd("s", {"f": "v"}, id="1-1") == b"1-1" and rc.xlen("s") == 1
        finally:
            rc.close()


def _async_resp3_follows_redirections() -> bool:
    """redis-py 5.x's asyncio RedisCluster on RESP3 swaps in the RESP3 parser and gives the cluster's error classes to
    the instance, but ``parse_error`` reads the class's: MOVED stays a plain ResponseError, against a real cluster
    too."""
    from redis._parsers import _AsyncRESP3Parser

    return isinstance(_AsyncRESP3Parser.parse_error("MOVED 1 127.0.0.1:1"), redis.exceptions.MovedError)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_asyncio_redis_cluster(cluster, protocol):
    if protocol == 3 and not _async_resp3_follows_redirections():
        pytest.skip(f"redis-py {redis.__version__}: the asyncio RESP3 parser raises no MovedError (follows no MOVED)")
    async def main():
        client = cluster.async_client(**pool_kwargs(protocol))
        try:
            await client.xadd("{q}", {"a": "1"}, id="1-1")
            if REDIS_PY >= (5, 0):
                await client.xgroup_create("{q}", "g", id="0")
            else:  # redis-py 4.x's asyncio RedisCluster finds no key in XGROUP CREATE (against a real cluster too)
                cluster.node_for_key("{q}").server.client().xgroup_create("{q}", "g", id="0")
            got = await client.xreadgroup("g", "c", {"{q}": ">"})
            cluster.move_slot(key_slot(b"q"), next(n for n in cluster.nodes if n is not cluster.node_for_key("{q}")))
            assert await client.xack("{q}", "g", "1-1") == 1
            return got
        finally:
            await aclose(client)

    got = asyncio.run(main())
    entries = [(b"1-1", {b"a": b"1"})]
    assert got == ({b"{q}": [entries]} if protocol == 3 else [[b"{q}", entries]])


def test_address_taken_is_refused():
    from fake_streams.patching import FakeNetwork

    network = FakeNetwork()
    try:
        network.server_at("localhost:32001")
        with pytest.raises(ValueError, match="already served"):
            FakeCluster(2, base_port=32001, network=network)
    finally:
        network.close()


def test_blocked_reader_gets_moved_when_its_slot_moves(cluster):
    import threading

    owner = cluster.node_for_key("{b}")
    target = next(n for n in cluster.nodes if n is not owner)
    conn = get_connection(owner.server.client())
    got = []
    try:
        conn.send_command("XREAD", "BLOCK", "0", "STREAMS", "{b}s", "$")
        reader = threading.Thread(target=lambda: got.append(capture_error(conn)))
        reader.start()
        owner.server.wait_until_blocked(1)
        cluster.move_slot(key_slot(b"b"), target)
        reader.join(5)  # real-time: bounded wait for the reader thread that was answered MOVED
        assert got == [f"MOVED {key_slot(b'b')} 127.0.0.1:{target.port}"]
        assert owner.server.blocked() == []
    finally:
        conn.disconnect()


def test_blocked_reader_gets_clusterdown_when_a_node_fails(cluster):
    import threading

    owner = cluster.nodes[0]
    key = next(k for k in (f"k{i}" for i in range(100)) if cluster.node_for_key(k) is owner)
    conn = get_connection(owner.server.client())
    got = []
    try:
        conn.send_command("XREAD", "BLOCK", "0", "STREAMS", key, "$")
        reader = threading.Thread(target=lambda: got.append(capture_error(conn)))
        reader.start()
        owner.server.wait_until_blocked(1)
        cluster.fail_node(2)
        reader.join(5)  # real-time: bounded wait for the reader thread that was answered CLUSTERDOWN
        assert got == ["CLUSTERDOWN The cluster is down"]
    finally:
        conn.disconnect()


def capture_error(conn):
    try:
        return conn.read_response()
    except redis.exceptions.ResponseError as exc:
        return err(exc)


def test_unassigned_slot_is_not_served(cluster):
    slot = key_slot(b"foo")
    owner = cluster.node_for_key("foo")
    cluster.unassign_slots(slot)  # as after CLUSTER DELSLOTS on its owner
    assert err(raw(owner, "GET", "foo")) == "CLUSTERDOWN Hash slot not served"
    assert b"cluster_state:fail" in raw(owner, "CLUSTER", "INFO")
    assert [r for r in raw(owner, "CLUSTER", "SLOTS") if r[0] <= slot <= r[1]] == []


def test_failover_of_a_failed_node(cluster):
    rc = cluster.client()
    try:
        rc.xadd("jobs", {"n": "1"}, id="1-1")
        old = cluster.node_for_key("jobs")
        cluster.fail_node(old)
        assert not cluster.state_ok
        new = cluster.failover(old, next(n for n in cluster.nodes if n is not old))
        assert cluster.state_ok and cluster.node_for_key("jobs") is new
        assert rc.xrange("jobs") == [(b"1-1", {b"n": b"1"})]
    finally:
        rc.close()
