"""The fake cluster against real Redis 7.0.15 clusters (profile "7.0"), RESP2 and RESP3: a single-node cluster and a
3-master cluster on loopback ports, built as the issue says (``--cluster-enabled yes``, ``CLUSTER MEET``,
``CLUSTER ADDSLOTSRANGE``), and a standalone server for the cluster commands' refusal. Raw replies of the cluster
commands, the errors and stream commands, compared after :func:`~tests.topology.real_cluster.normaliser` (node IDs,
ports, epochs, pong times and gossip counters only). ``FAKE_STREAMS_REQUIRE_REAL=1`` turns a missing redis-server
into a failure."""

from __future__ import annotations

from typing import Any, Iterator, List

import pytest

from fake_streams import FakeStreamsConnection, FakeStreamsServer
from fake_streams.topology import FakeCluster, key_slot
from tests.conformance.conftest import protocol_param
from tests.conformance.oracles import Oracle, _find_redis_server, protocol_kwargs, require_real
from tests.conformance.replies import capture, first_difference

from .real_cluster import RealCluster, normaliser, sort_shards

pytestmark = pytest.mark.real
#: RESP2 and RESP3; RESP3 skips with the reason where redis-py cannot speak it (4.x)
PROTOCOLS = [protocol_param(p, p, f"resp{p}") for p in (2, 3)]


def _real_or_skip(make: Any) -> Any:
    binary, why = _find_redis_server()
    if binary is None:
        if require_real():
            pytest.fail(f"FAKE_STREAMS_REQUIRE_REAL is set: {why}")
        pytest.skip(why)
    return make(binary)


@pytest.fixture(scope="module")
def real_single() -> Iterator[RealCluster]:
    cluster = _real_or_skip(lambda _: RealCluster(1))
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def real_three() -> Iterator[RealCluster]:
    cluster = _real_or_skip(lambda _: RealCluster(3))
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def real_standalone() -> Iterator[Oracle]:
    oracle = _real_or_skip(lambda binary: Oracle.start("redis", binary))
    yield oracle
    oracle.stop()


class Topologies:
    """One real and one fake cluster of the same shape; ``same(i, *argv)`` runs argv on node ``i`` of both."""

    def __init__(self, real: RealCluster, masters: int, protocol: int) -> None:
        self.real = real
        self.protocol = protocol
        for node in real.nodes:
            node.command("FLUSHALL")
        self.fake = FakeCluster(masters, version="7.0")
        real_ids = [node.command("CLUSTER", "MYID") for node in real.nodes]
        self.norm_real = normaliser(real_ids, [n.port for n in real.nodes], real.bus_ports)
        self.norm_fake = normaliser([n.node_id.encode() for n in self.fake.nodes], [n.port for n in self.fake.nodes],
                                    [n.cport for n in self.fake.nodes])
        self.real_conns = [node.connect(protocol) for node in real.nodes]
        self.fake_conns = [FakeStreamsConnection(server=n.server, **protocol_kwargs(protocol)) for n in self.fake.nodes]

    def both(self, i: int, *argv: Any) -> tuple:
        replies = []
        for conn in (self.real_conns[i], self.fake_conns[i]):
            conn.send_command(*argv)
            replies.append(capture(lambda conn=conn: conn.read_response(disable_decoding=True)))
        return replies[0], replies[1]

    def same(self, i: int, *argv: Any, post: Any = None) -> Any:
        real, fake = self.both(i, *argv)
        real, fake = self.norm_real(real), self.norm_fake(fake)
        if post is not None:
            real, fake = post(real), post(fake)
        diff = first_difference(real, fake)
        assert diff is None, f"{argv!r} on node {i} (RESP{self.protocol}): {diff}\n real: {real!r}\n fake: {fake!r}"
        return real

    def close(self) -> None:
        for conn in self.real_conns + self.fake_conns:
            conn.disconnect()
        self.fake.close()


@pytest.fixture(params=PROTOCOLS)
def single(real_single: RealCluster, request: Any) -> Iterator[Topologies]:
    t = Topologies(real_single, 1, request.param)
    yield t
    t.close()


@pytest.fixture(params=PROTOCOLS)
def three(real_three: RealCluster, request: Any) -> Iterator[Topologies]:
    t = Topologies(real_three, 3, request.param)
    yield t
    t.close()


CLUSTER_REPLIES: List[tuple] = [
    ("CLUSTER", "INFO"), ("CLUSTER", "MYID"), ("CLUSTER", "SLOTS"), ("CLUSTER", "NODES"), ("CLUSTER", "HELP"),
    ("CLUSTER", "KEYSLOT", "foo"), ("CLUSTER", "KEYSLOT", "{}"), ("CLUSTER", "KEYSLOT", "{}bar"),
    ("CLUSTER", "KEYSLOT", "a{b}{c}"), ("CLUSTER", "KEYSLOT", "{{x}}"), ("CLUSTER", "KEYSLOT", ""),
    ("CLUSTER", "COUNTKEYSINSLOT", "0"), ("CLUSTER", "GETKEYSINSLOT", "0", "10"),
    ("CLUSTER",), ("CLUSTER", "nope"), ("CLUSTER", "KEYSLOT"), ("CLUSTER", "INFO", "x"),
    ("CLUSTER", "COUNTKEYSINSLOT", "-1"), ("CLUSTER", "COUNTKEYSINSLOT", "16384"),
    ("CLUSTER", "COUNTKEYSINSLOT", "x"), ("CLUSTER", "COUNTKEYSINSLOT", " 1"),
    ("CLUSTER", "GETKEYSINSLOT", "1", "-1"), ("CLUSTER", "GETKEYSINSLOT", "16384", "1"),
    ("CLUSTER", "GETKEYSINSLOT", "x", "1"), ("CLUSTER", "GETKEYSINSLOT", "1", "x"),
    ("READONLY",), ("READWRITE",), ("ASKING",), ("READONLY", "x"),
    ("SELECT", "1"), ("SELECT", "0"), ("SELECT", "x"), ("SELECT", "-1"), ("SWAPDB", "0", "1"),
    ("INFO", "cluster"),
]


@pytest.mark.parametrize("argv", CLUSTER_REPLIES, ids=lambda a: " ".join(a) or "empty")
def test_single_node_cluster_replies(single: Topologies, argv: tuple) -> None:
    single.same(0, *argv)


def test_single_node_shards_and_hello(single: Topologies) -> None:
    single.same(0, "CLUSTER", "SHARDS", post=sort_shards)
    real, fake = single.both(0, "HELLO", str(single.protocol))
    pick = (lambda r: {k: r[k] for k in (b"mode", b"role", b"proto")}) if single.protocol == 3 else (
        lambda r: r[8:14])
    assert pick(real) == pick(fake)


MULTI_KEY_ERRORS: List[tuple] = [
    ("MSET", "a", "1", "b", "2"), ("MGET", "a", "b"), ("DEL", "a", "b"), ("EXISTS", "a", "b"),
    ("XREAD", "STREAMS", "a", "b", "0", "0"), ("XREAD", "COUNT", "1", "STREAMS", "a", "b", "0-0", "0-0"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", ">", ">"),
    ("EVAL", "return 1", "2", "a", "b"), ("EVAL", "return 1", "3", "a", "b"), ("RENAME", "a", "b"),
    ("SUNIONSTORE", "a", "b", "c"), ("ZUNIONSTORE", "d", "2", "a", "b"), ("BLPOP", "a", "b", "0"),
    ("LMOVE", "a", "b", "LEFT", "RIGHT"), ("SORT", "a", "STORE", "b"), ("COPY", "a", "b"),
    ("WATCH", "a", "b"), ("PFCOUNT", "a", "b"), ("BITOP", "AND", "a", "b"), ("LMPOP", "2", "a", "b", "LEFT"),
    ("MSET", "{a}1", "1", "{a}2", "2"), ("MGET", "{a}1", "{a}2"), ("XREAD", "STREAMS", "{a}x", "{a}y", "0", "0"),
    ("MOVE", "{a}1", "1"), ("COPY", "{a}1", "{a}3", "DB", "0"),
]


@pytest.mark.parametrize("argv", MULTI_KEY_ERRORS, ids=lambda a: " ".join(a))
def test_crossslot_single_node(single: Topologies, argv: tuple) -> None:
    single.same(0, *argv)


def test_stream_commands_single_node(single: Topologies) -> None:
    s = single
    s.same(0, "XADD", "{s}1", "1-1", "f", "v")
    s.same(0, "XADD", "{s}2", "1-2", "f", "v")
    s.same(0, "XGROUP", "CREATE", "{s}1", "g", "0")
    s.same(0, "XGROUP", "CREATE", "{s}2", "g", "0")
    s.same(0, "XREADGROUP", "GROUP", "g", "c", "COUNT", "5", "STREAMS", "{s}1", "{s}2", ">", ">")
    s.same(0, "XPENDING", "{s}1", "g")
    s.same(0, "CLUSTER", "COUNTKEYSINSLOT", str(key_slot(b"s")))
    s.same(0, "CLUSTER", "GETKEYSINSLOT", str(key_slot(b"s")), "10")
    s.same(0, "XINFO", "GROUPS", "{s}2")


def test_transactions_single_node(single: Topologies) -> None:
    s = single
    for argv in (("MULTI",), ("SET", "{t}1", "x"), ("XADD", "{t}2", "1-1", "f", "v"), ("EXEC",)):
        s.same(0, *argv)
    for argv in (("MULTI",), ("SET", "{t}1", "y"), ("SET", "other", "y"), ("EXEC",), ("GET", "{t}1"),
                 ("EXEC",)):
        s.same(0, *argv)
    for argv in (("MULTI",), ("MSET", "a", "1", "b", "2"), ("EXEC",)):
        s.same(0, *argv)


GETKEYS: List[tuple] = [
    ("GET", "a"), ("MSET", "a", "1", "b", "2"), ("DEL", "a", "b", "c"), ("XREAD", "COUNT", "2", "STREAMS", "a", "b",
                                                                          "0", "0"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", ">"), ("XADD", "s", "*", "f", "v"),
    ("XGROUP", "CREATE", "s", "g", "$"), ("XINFO", "STREAM", "s"), ("EVAL", "return 1", "2", "a", "b", "c"),
    ("EVAL", "return 1", "0"), ("ZUNIONSTORE", "d", "2", "a", "b"), ("SORT", "a", "STORE", "b"),
    ("BLMPOP", "0", "2", "a", "b", "LEFT"), ("PING",), ("NOPE",), ("GET",), ("EVAL", "return 1", "5", "a"),
    ("PING", "x"), ("NOPE", "x"), ("GET", "a", "b"), ("MEMORY", "USAGE", "k"), ("EVAL_RO", "return 1", "1", "k"),
    ("OBJECT", "ENCODING", "k"), ("BITOP", "AND", "d", "a"), ("RENAME", "a", "b"),
]


@pytest.mark.parametrize("argv", GETKEYS, ids=lambda a: " ".join(a))
def test_command_getkeys(single: Topologies, argv: tuple) -> None:
    single.same(0, "COMMAND", "GETKEYS", *argv)


# ------------------------------------------------------------------------------------------- 3 masters
@pytest.mark.parametrize("argv", [a for a in CLUSTER_REPLIES if a[:2] != ("CLUSTER", "KEYSLOT")],
                         ids=lambda a: " ".join(a) or "empty")
def test_three_masters_cluster_replies(three: Topologies, argv: tuple) -> None:
    for i in range(3):
        three.same(i, *argv)


def test_three_masters_shards(three: Topologies) -> None:
    three.same(1, "CLUSTER", "SHARDS", post=sort_shards)


def test_moved_and_streams_on_three_masters(three: Topologies) -> None:
    t = three
    for key in ("foo", "bar", "{orders}", "jobs", "a", "b"):
        owner = t.fake.nodes.index(t.fake.node_for_key(key))
        for i in range(3):
            t.same(i, "XADD", key, "1-1", "f", "v") if i == owner else t.same(i, "XLEN", key)
        t.same(owner, "XGROUP", "CREATE", key, "g", "0")
        t.same(owner, "XREADGROUP", "GROUP", "g", "c", "STREAMS", key, ">")
        t.same((owner + 1) % 3, "XREADGROUP", "GROUP", "g", "c", "STREAMS", key, ">")
        t.same(owner, "XPENDING", key, "g")  # (the extended form's idle times are the clocks')
    for i in range(3):
        t.same(i, "CLUSTER", "INFO")
        t.same(i, "MSET", "{x}1", "1", "{x}2", "2")
        t.same(i, "XREAD", "STREAMS", "foo", "bar", "0", "0")
        t.same(i, "DBSIZE")


def test_transaction_moved_on_three_masters(three: Topologies) -> None:
    t = three
    mine = next(k for k in (f"k{i}" for i in range(200)) if t.fake.node_for_key(k) is t.fake.nodes[0])
    other = next(k for k in (f"k{i}" for i in range(200)) if t.fake.node_for_key(k) is not t.fake.nodes[0])
    for argv in (("MULTI",), ("SET", mine, "1"), ("SET", other, "1"), ("EXEC",), ("GET", mine)):
        t.same(0, *argv)


def test_ask_during_migration_on_three_masters(three: Topologies) -> None:
    t = three
    slot = key_slot(b"m")
    src = t.fake.nodes.index(t.fake.node_for_key("{m}"))
    dst = (src + 1) % 3
    t.same(src, "XADD", "{m}here", "1-1", "f", "v")
    t.real.nodes[dst].command("CLUSTER", "SETSLOT", slot, "IMPORTING", t.real.ids[src])
    t.real.nodes[src].command("CLUSTER", "SETSLOT", slot, "MIGRATING", t.real.ids[dst])
    t.fake.begin_migration(slot, t.fake.nodes[dst])
    try:
        t.same(src, "XLEN", "{m}here")
        t.same(src, "XLEN", "{m}gone")
        t.same(src, "MGET", "{m}here", "{m}gone")
        t.same(dst, "XLEN", "{m}gone")
        t.same(dst, "ASKING")
        t.same(dst, "XLEN", "{m}gone")
        t.same(dst, "XLEN", "{m}gone")  # ASKING lasted one command
        t.same(dst, "ASKING")
        t.same(dst, "XADD", "{m}new", "1-1", "f", "v")
        t.same(dst, "ASKING")
        t.same(dst, "MGET", "{m}new", "{m}missing")
        t.same(src, "CLUSTER", "NODES")
        t.same(dst, "CLUSTER", "NODES")
    finally:
        for node in (t.real.nodes[src], t.real.nodes[dst]):
            node.command("CLUSTER", "SETSLOT", slot, "STABLE")
        t.fake.cancel_migration(slot)


# ------------------------------------------------------------------------------------------- standalone
@pytest.mark.parametrize("argv", [("CLUSTER", "SLOTS"), ("CLUSTER", "INFO"), ("CLUSTER", "KEYSLOT", "x"),
                                  ("CLUSTER", "nope"), ("CLUSTER",), ("READONLY",), ("READWRITE",), ("ASKING",),
                                  ("INFO", "cluster"), ("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2")],
                         ids=lambda a: " ".join(a))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_standalone_answers(real_standalone: Oracle, argv: tuple, protocol: int) -> None:
    server = FakeStreamsServer("7.0")
    real = real_standalone.connect(protocol)
    fake = FakeStreamsConnection(server=server, **protocol_kwargs(protocol))
    try:
        replies = []
        for conn in (real, fake):
            conn.send_command(*argv)
            replies.append(capture(lambda conn=conn: conn.read_response(disable_decoding=True)))
        assert first_difference(*replies) is None, replies
    finally:
        real.disconnect()
        fake.disconnect()
        server.close()
