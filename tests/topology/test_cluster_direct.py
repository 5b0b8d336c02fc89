"""Cluster nodes take the direct path (fake_streams/_fakeredis/fastpath.py) for stream commands, with the node's slot
check first: every scenario runs on two identical clusters (the same ManualClock start), one whose nodes have the
direct path and one whose nodes have ``server.fast_path = False``, and compares raw replies (RESP2 and RESP3),
pipelines with errors in place, INFO's rejected calls and errorstats, and what ``RedisCluster`` sees while slots
move. ``direct_calls`` checks that the direct path really ran."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, List

import pytest
import redis.exceptions
from redis.cluster import RedisCluster

from fake_streams import FakeStreamsConnection, ManualClock
from fake_streams._fakeredis import fastpath
from fake_streams.topology import FakeCluster, key_slot
from tests.conformance.oracles import protocol_kwargs
from tests.support.redis_compat import with_cluster_errors
from tests.unit.test_fastpath import direct_calls  # noqa: F401  (the fixture)

START_MS = 1_700_000_000_000


@pytest.fixture
def getkeys_calls(monkeypatch: Any) -> List[Any]:
    """The commands whose ``COMMAND GETKEYS`` the direct path answered (fastpath.getkeys)."""
    taken: List[Any] = []
    original = fastpath.getkeys

    def counting(conn: Any, args: Any) -> bool:
        answered = original(conn, args)
        if answered:
            taken.append(args[1])
        return answered

    monkeypatch.setattr(fastpath, "getkeys", counting)
    return taken


def _cluster(fast: bool, nodes: int = 3) -> FakeCluster:
    cluster = FakeCluster(nodes, clock=ManualClock(START_MS))
    for server in cluster.servers:
        server.fast_path = fast
    return cluster


def _key_on(cluster: FakeCluster, node: int, prefix: str = "k", skip: int = 0) -> str:
    return [k for k in (f"{prefix}{i}" for i in range(2000)) if cluster.node_for_key(k) is cluster.nodes[node]][skip]


class Raw:
    """One raw connection per node (no response callbacks): ``(i, *argv)`` → the reply or the error's class and
    text."""

    def __init__(self, cluster: FakeCluster, protocol: int) -> None:
        self.conns = [with_cluster_errors(FakeStreamsConnection(server=n.server, **protocol_kwargs(protocol)))
                      for n in cluster.nodes]  # the error classes RedisCluster's connections raise

    def __call__(self, i: int, *argv: Any) -> Any:
        conn = self.conns[i]
        conn.send_command(*argv)
        try:
            return conn.read_response(disable_decoding=True)
        except redis.exceptions.ResponseError as exc:
            return (type(exc).__name__, str(exc))

    def close(self) -> None:
        for conn in self.conns:
            conn.disconnect()


def _both(scenario: Callable[[FakeCluster, Raw], List[Any]], protocol: int, nodes: int = 3) -> List[List[Any]]:
    out = []
    for fast in (True, False):
        cluster = _cluster(fast, nodes)
        raw = Raw(cluster, protocol)
        try:
            out.append(scenario(cluster, raw))
        finally:
            raw.close()
            cluster.close()
    return out


def _error(reply: Any) -> str:
    """redis-py's class of an error reply as :class:`Raw` returns it (it cuts the cluster codes off the text),
    else ""."""
    return reply[0] if isinstance(reply, tuple) and isinstance(reply[1], str) else ""


def _stats(raw: Raw, i: int) -> Any:
    """INFO's per-command calls / rejected / failed and errorstats of node ``i`` (not the times)."""
    info = raw(i, "INFO", "commandstats")
    rows = [line.split(b",usec=")[0] + line[line.index(b",rejected"):] for line in info.split(b"\r\n")
            if line.startswith(b"cmdstat_") and not line.startswith(b"cmdstat_info")]
    return sorted(rows), raw(i, "INFO", "errorstats")


def _redirections(cluster: FakeCluster, raw: Raw) -> List[Any]:
    mine, mine2, other = _key_on(cluster, 0), _key_on(cluster, 0, skip=1), _key_on(cluster, 1)
    tagged = ("{t}a", "{t}b")
    home = cluster.nodes.index(cluster.node_for_key("{t}"))
    out = [
        raw(0, "XADD", mine, "1-1", "f", "v"), raw(0, "XADD", other, "1-1", "f", "v"), raw(1, "XADD", other, "1-1",
                                                                                        "f", "v"),
        raw(0, "XLEN", other), raw(0, "XINFO", "STREAM", other), raw(0, "XINFO", "HELP"),
        raw(0, "XREAD", "STREAMS", mine, other, "0", "0"), raw(0, "XREAD", "COUNT", "1", "STREAMS", mine, mine2, "0",
                                                               "0"),
        raw(home, "XADD", tagged[0], "1-1", "f", "v"), raw(home, "XREAD", "STREAMS", *tagged, "0", "0"),
        raw(0, "XGROUP", "CREATE", mine, "g", "0"), raw(1, "XGROUP", "CREATE", mine, "g", "0"),
        raw(0, "XREADGROUP", "GROUP", "g", "c", "STREAMS", mine, ">"),
        raw(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", mine, ">"), raw(0, "XACK", mine, "g", "1-1"),
        raw(0, "XPENDING", mine, "g"), raw(2, "XPENDING", mine, "g"), raw(0, "XLEN", "{t}"),
    ]
    out.append(_stats(raw, 0))
    return out


@pytest.mark.parametrize("protocol", (2, 3), ids=lambda p: f"resp{p}")
def test_moved_and_crossslot_alike(direct_calls, protocol):  # noqa: F811
    fast, slow = _both(_redirections, protocol)
    assert fast == slow
    assert {_raised("MovedError", protocol), _raised("ClusterCrossSlotError", protocol)} <= {_error(r) for r in fast}
    assert b"XREADGROUP" in direct_calls and b"XACK" in direct_calls


def _migration_and_failures(cluster: FakeCluster, raw: Raw) -> List[Any]:
    slot = key_slot(b"m")
    src = cluster.nodes.index(cluster.node_for_key("{m}"))
    dst = (src + 1) % 3
    out = [raw(src, "XADD", "{m}here", "1-1", "f", "v")]
    cluster.begin_migration(slot, dst)
    out += [raw(src, "XLEN", "{m}here"), raw(src, "XLEN", "{m}gone"),
            raw(src, "XREAD", "STREAMS", "{m}here", "{m}gone", "0", "0"),  # TRYAGAIN
            raw(dst, "XLEN", "{m}gone"), raw(dst, "ASKING"), raw(dst, "XADD", "{m}gone", "1-1", "f", "v"),
            raw(dst, "XLEN", "{m}gone"), raw(dst, "ASKING"), raw(dst, "XREAD", "STREAMS", "{m}gone", "{m}no", "0", "0")]
    cluster.migrate_keys(slot)
    out += [raw(src, "XLEN", "{m}here"), raw(dst, "ASKING"), raw(dst, "XLEN", "{m}here")]
    cluster.finish_migration(slot)
    out += [raw(src, "XLEN", "{m}here"), raw(dst, "XLEN", "{m}here")]
    unserved = key_slot(b"u")
    cluster.unassign_slots(unserved)
    out += [raw(0, "XLEN", "{u}"), raw(0, "XLEN", _key_on(cluster, 0))]
    cluster.assign_slots(0, unserved)
    cluster.fail_node(2)
    out += [raw(0, "XLEN", _key_on(cluster, 0)), raw(0, "XINFO", "HELP")]
    cluster.revive_node(2)
    out += [raw(0, "XLEN", _key_on(cluster, 0)), _stats(raw, src), _stats(raw, dst)]
    return out


@pytest.mark.parametrize("protocol", (2, 3), ids=lambda p: f"resp{p}")
def test_ask_tryagain_and_clusterdown_alike(direct_calls, protocol):  # noqa: F811
    fast, slow = _both(_migration_and_failures, protocol)
    assert fast == slow
    assert {_raised(n, protocol) for n in ("AskError", "TryAgainError", "MovedError", "ClusterDownError")} <= \
        {_error(r) for r in fast}
    assert b"XLEN" in direct_calls


def _pipelines(cluster: FakeCluster, raw: Raw) -> List[Any]:
    mine, other = _key_on(cluster, 0), _key_on(cluster, 1)
    client = cluster.nodes[0].server.client()
    try:
        pipe = client.pipeline(transaction=False)
        for i in range(3):
            pipe.xadd(mine, {"f": i}, id=f"1-{i + 1}")
        pipe.xadd(other, {"f": "v"})  # MOVED, in place
        pipe.xadd(mine, {"f": "v"}, id="1-9")
        pipe.xlen(other)
        pipe.xread({mine: "0", other: "0"})  # CROSSSLOT
        pipe.get(other)  # a non-stream command between: dispatch path
        pipe.xlen(mine)
        out = [_errors_as_text(pipe.execute(raise_on_error=False))]
        pipe = client.pipeline(transaction=True)  # MULTI: dispatch path, EXECABORT
        pipe.xadd(mine, {"f": "v"})
        pipe.xadd(other, {"f": "v"})
        out.append(_outcome(pipe.execute))
    finally:
        client.close()
    out.append(_stats(raw, 0))
    return out


def _errors_as_text(replies: List[Any]) -> List[Any]:
    return [(type(r).__name__, str(r)) if isinstance(r, Exception) else r for r in replies]


def _outcome(run: Callable[[], Any]) -> Any:
    try:
        return run()
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as exc:
        return (type(exc).__name__, str(exc))


def _raised(name: str, protocol: int) -> str:
    """The class RedisCluster's connections raise for a cluster error: ``name``, but ResponseError on RESP3 with
    redis-py 5.x (its RESP3 handshake swaps ClusterParser for a parser that knows no cluster error)."""
    from redis._parsers import _RESP3Parser

    if protocol == 3 and type(_RESP3Parser.parse_error("MOVED 1 127.0.0.1:1")).__name__ != "MovedError":
        return "ResponseError"
    return name


def _plain(name: str) -> str:
    """The class a plain client's connection raises for a cluster error: ``name`` from redis-py 6 on, before then
    ResponseError (only RedisCluster's ClusterParser knows the cluster errors)."""
    from redis.connection import DefaultParser

    maps = type(DefaultParser.parse_error("MOVED 1 127.0.0.1:1")).__name__ == "MovedError"
    return name if maps else "ResponseError"


def test_pipelines_alike(direct_calls):  # noqa: F811
    fast, slow = _both(_pipelines, 2)
    assert fast == slow
    assert fast[0][3][0] == _plain("MovedError") and fast[0][6][0] == _plain("ClusterCrossSlotError")
    assert direct_calls[:4] == [b"XADD"] * 4  # the batch ran directly, MOVED answered in place


def _redis_cluster_client(cluster: FakeCluster, raw: Raw) -> List[Any]:
    client = cluster.client()
    out: List[Any] = []
    try:
        for key in ("orders", "{user1}.events", "jobs"):
            out.append([client.xadd(key, {"n": i}, id=f"1-{i}") for i in range(1, 6)])
            out.append(client.xgroup_create(key, "g", "0"))
            out.append(client.xreadgroup("g", "c", {key: ">"}, count=3))
        cluster.move_slot(key_slot(b"jobs"), (cluster.nodes.index(cluster.node_for_key("jobs")) + 1) % 3)
        for key in ("orders", "jobs"):
            entries = client.xreadgroup("g", "c", {key: ">"}, count=10)
            out.append(entries)
            out.append(client.xack(key, "g", *[entry_id for entry_id, _ in entries[0][1]]))
            out.append(client.xpending(key, "g"))
        out.append(_outcome(lambda: client.xread({"orders": "0", "jobs": "0"})))
    finally:
        client.close()
    return out


def test_redis_cluster_client_alike_while_a_slot_moves(direct_calls):  # noqa: F811
    fast, slow = _both(_redis_cluster_client, 2)
    assert fast == slow
    assert direct_calls.count(b"XREADGROUP") >= 5


def test_single_node_cluster_alike(direct_calls):  # noqa: F811
    def scenario(cluster: FakeCluster, raw: Raw) -> List[Any]:
        return [raw(0, "XADD", "a", "1-1", "f", "v"), raw(0, "XREAD", "STREAMS", "a", "b", "0", "0"),
                raw(0, "XADD", "{a}b", "1-1", "f", "v"), raw(0, "XREAD", "STREAMS", "a", "{a}b", "0", "0"),
                raw(0, "XINFO", "STREAM", "a"), _stats(raw, 0)]

    fast, slow = _both(scenario, 3, nodes=1)
    assert fast == slow
    assert direct_calls == [b"XADD", b"XREAD"]  # (the first command of a connection connects it: dispatch path)


GETKEYS = [
    ("XREADGROUP", "GROUP", "g", "c", "COUNT", "10", "STREAMS", "{s}1", "{s}2", ">", ">"),
    ("XREAD", "BLOCK", "0", "STREAMS", "a", "b", "0", "0"), ("XREAD", "STREAMS", "a"), ("XREAD", "STREAMS"),
    ("XADD", "s", "*", "f", "v"), ("XADD", "s"), ("XLEN", "s"), ("XLEN",), ("XINFO", "STREAM", "s"),
    ("XGROUP", "HELP"), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s"), ("xread", "streams", "a", "0"),
    ("XReAd", "STREAMS", "a", "0"), ("GET", "a"), ("PING",),
]


@pytest.mark.parametrize("decode", (False, True))
@pytest.mark.parametrize("protocol", (2, 3), ids=lambda p: f"resp{p}")
def test_command_getkeys_of_stream_commands_alike(getkeys_calls, protocol, decode):
    """What redis-py's cluster clients ask before each XREAD / XREADGROUP: answered directly for a stream command
    with its keys, the dispatch path for everything else; the same replies, errors and INFO counts."""
    def scenario(cluster: FakeCluster, raw: Raw) -> List[Any]:
        client = cluster.nodes[0].server.client(protocol=protocol, decode_responses=decode)
        try:
            out = [_outcome(lambda argv=argv: client.execute_command("COMMAND GETKEYS", *argv)) for argv in GETKEYS]
        finally:
            client.close()
        return out + [_stats(raw, 0)]

    fast, slow = _both(scenario, protocol)
    assert fast == slow
    first = [k if isinstance(k, str) else k.decode() for k in fast[0]]  # (redis-py's RESP2 callback makes str)
    assert first == ["{s}1", "{s}2"] and any(_error(r) for r in fast)
    if fastpath.ENABLED:
        assert getkeys_calls == ["XREADGROUP", "XREAD", "XADD", "XLEN", "xread"]


def _async_scenario(cluster: FakeCluster, raw: Raw) -> List[Any]:
    async def run() -> List[Any]:
        client = cluster.async_client()
        out: List[Any] = []
        try:
            for key in ("orders", "jobs"):
                out.append([await client.xadd(key, {"n": i}, id=f"1-{i}") for i in range(1, 4)])
                out.append(await client.xgroup_create(key, "g", "0"))
                out.append(await client.xreadgroup("g", "c", {key: ">"}, count=2))
            cluster.move_slot(key_slot(b"jobs"), (cluster.nodes.index(cluster.node_for_key("jobs")) + 1) % 3)
            out.append(await client.xreadgroup("g", "c", {"jobs": ">"}))
            out.append(await client.xack("jobs", "g", "1-1", "1-2", "1-3"))
        finally:
            await client.aclose()
        return out

    return asyncio.run(run())


def test_asyncio_redis_cluster_alike(direct_calls, getkeys_calls):  # noqa: F811
    """redis.asyncio's cluster client packs each command itself: stream commands and COMMAND GETKEYS still run
    directly."""
    fast, slow = _both(_async_scenario, 2)
    assert fast == slow
    assert direct_calls.count(b"XREADGROUP") >= 2 and getkeys_calls.count("XREADGROUP") >= 2


@pytest.mark.fake_redis_streams(topology="cluster", url="redis://localhost:7000", start_ms=START_MS)
def test_the_fixtures_cluster_takes_the_direct_path(fake_redis_streams, direct_calls):  # noqa: F811
    app = RedisCluster(host="localhost", port=7000)  # what the code under test builds
    try:
        app.xadd("{jobs}", {"id": "1"}, id="1-1")
        app.xgroup_create("{jobs}", "workers", id="0")
        assert app.xreadgroup("workers", "c", {"{jobs}": ">"}) == [[b"{jobs}", [(b"1-1", {b"id": b"1"})]]]
        assert app.xack("{jobs}", "workers", "1-1") == 1
    finally:
        app.close()
    assert b"XREADGROUP" in direct_calls and b"XACK" in direct_calls
