"""The fake Sentinel deployment against a real one (Redis 7.0.15, profile "7.0"), RESP2 and RESP3: a redis-server
master, a redis-server replica (``--replicaof``) and a ``redis-sentinel`` watching the master, on loopback ports
(:mod:`tests.topology.real_sentinel`). Raw replies of the SENTINEL subcommands and the sentinel's other commands,
of the replica's READONLY refusals and reads, ROLE / INFO replication / HELLO, compared after
:func:`~tests.topology.real_sentinel.normaliser` (ids, ports, times and offsets only); then the failover as a
redis-py Sentinel client lives through it (``SENTINEL FAILOVER`` on the real one, :meth:`FakeSentinel.failover`
on the fake). ``FAKE_STREAMS_REQUIRE_REAL=1`` turns a missing redis-server / redis-sentinel into a failure.

Not compared, on purpose: a real replica's group counters (XINFO GROUPS ``entries-read``) follow the commands the
master propagated (XREADGROUP reaches a replica as XCLAIM … LASTID), while the fake's replicas share the master's
dataset, so they show the master's values."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from typing import Any, Iterator, List, Optional, Tuple

import pytest
import redis
import redis.asyncio.sentinel
import redis.exceptions
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

from fake_streams import FakeStreamsConnection, ManualClock
from fake_streams.patching import PoolPatch
from fake_streams.topology.sentinel import FakeSentinel
from tests.conformance.oracles import protocol_kwargs, require_real
from tests.support.redis_compat import (
    RETRY_ASKS_SENTINEL,
    aclose,
    async_failover_retry,
    close_sentinel,
    default_retry_without_waits,
)

from .real_sentinel import FAST_PERIODS, MASTER, WAIT_S, RealSentinel, normaliser, role_offsets, shorten_periods
from .test_cluster_oracle import Topologies

pytestmark = [pytest.mark.real, pytest.mark.slow]  # a real deployment takes seconds to settle
PROTOCOLS = (2, 3)


def _start_real(kind: str = "redis") -> RealSentinel:
    try:
        return RealSentinel(kind)
    except LookupError as exc:
        if require_real():
            pytest.fail(f"FAKE_STREAMS_REQUIRE_REAL is set: {exc}")
        pytest.skip(str(exc))


SEED: List[tuple] = [
    ("XADD", "jobs", "1-1", "n", "1"), ("XADD", "jobs", "2-1", "n", "2"), ("XGROUP", "CREATE", "jobs", "workers", "0"),
    ("XREADGROUP", "GROUP", "workers", "alice", "COUNT", "1", "STREAMS", "jobs", ">"), ("SET", "k", "v"),
]


#: the real deployments compared, and the profile the fake plays for each
KINDS = {"redis": "7.0", "valkey": "valkey-9.1"}


@pytest.fixture(scope="module", params=sorted(KINDS))
def real(request: Any) -> Iterator[RealSentinel]:
    deployment = _start_real(request.param)
    for argv in SEED:
        deployment.master.command(*argv)
    deployment.wait_replicated()
    yield deployment
    deployment.stop()


class Pair(Topologies):
    """The real deployment and a fake one on the same ports; ``same(node, *argv)`` runs argv on ``node``
    (0 master, 1 replica, 2 sentinel) of both and compares the normalised raw replies."""

    def __init__(self, real: RealSentinel, protocol: int) -> None:  # the attributes Topologies.same reads
        self.real = real
        self.protocol = protocol
        ports = real.ports
        self.fake = FakeSentinel(MASTER, 1, port=ports[0], replica_ports=[ports[1]], sentinel_port=ports[2],
                                 version=KINDS[real.kind])
        seed = self.fake.master.server.client()
        for argv in SEED:
            seed.execute_command(*argv)
        seed.close()
        fake_ids = [self.fake.myid.encode(), self.fake.group.replid.encode()]
        fake_ids += [node.server._info.run_id.encode() for node in self.fake.nodes]
        self.norm_real, self.norm_fake = normaliser(real.ids(), ports), normaliser(fake_ids, ports)
        assert real.sentinel is not None
        self.real_conns = [o.connect(protocol) for o in (real.master, real.replica, real.sentinel)]
        self.fake_conns = [FakeStreamsConnection(server=s, **protocol_kwargs(protocol)) for s in self.fake.servers]


@pytest.fixture(params=PROTOCOLS, ids=lambda p: f"resp{p}")
def pair(real: RealSentinel, request: Any) -> Iterator[Pair]:
    p = Pair(real, request.param)
    yield p
    p.close()


SENTINEL_REPLIES: List[tuple] = [
    ("SENTINEL", "MASTERS"), ("SENTINEL", "MASTER", MASTER), ("SENTINEL", "REPLICAS", MASTER),
    ("SENTINEL", "SLAVES", MASTER), ("SENTINEL", "SENTINELS", MASTER), ("SENTINEL", "CKQUORUM", MASTER),
    ("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER), ("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nope"),
    ("SENTINEL", "MYID"), ("SENTINEL", "PENDING-SCRIPTS"), ("SENTINEL", "RESET", "nope"),
    ("SENTINEL", "MASTER", "nope"), ("SENTINEL", "REPLICAS", "nope"), ("SENTINEL", "SLAVES", "nope"),
    ("SENTINEL", "SENTINELS", "nope"), ("SENTINEL", "CKQUORUM", "nope"), ("SENTINEL", "FAILOVER", "nope"),
    ("SENTINEL",), ("SENTINEL", "FOO"), ("SENTINEL", "MASTER"), ("SENTINEL", "MASTER", "a", "b"),
    ("SENTINEL", "MASTERS", "x"), ("SENTINEL", "GET-MASTER-ADDR-BY-NAME"), ("SENTINEL", "SIMULATE-FAILURE"),
    ("PING",), ("ROLE",), ("GET", "k"), ("SET", "k", "v"), ("XADD", "s", "*", "a", "1"), ("SELECT", "0"),
    ("DBSIZE",), ("ECHO", "x"), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"),
    ("INFO", "replication"), ("INFO", "keyspace"),
    ("COMMAND", "COUNT"), ("COMMAND", "INFO", "get"), ("COMMAND", "INFO", "get", "xadd"), ("CLIENT", "SETNAME", "x"),
    ("CLIENT", "NOPE"), ("ACL", "WHOAMI"),
    ("PUBLISH", "ch", "m"), ("PING", "x"), ("PING", "a", "b"), ("ROLE", "x"),
    ("SENTINEL", "MYID", "x"), ("SENTINEL", "CKQUORUM"), ("SENTINEL", "RESET", "*x"), ("SENTINEL", "RESET", "zz*"),
    ("SENTINEL", "DEBUG"), ("SENTINEL", "DEBUG", "nope", "1"), ("SENTINEL", "DEBUG", "info-period", "x"),
    ("SENTINEL", "DEBUG", "info-period", "0"), ("SENTINEL", "DEBUG", "info-period"),
    ("SENTINEL", "CONFIG", "GET", "*"), ("SENTINEL", "CONFIG", "GET", "announce*"), ("SENTINEL", "CONFIG", "GET", "x"),
    ("SENTINEL", "CONFIG", "FOO", "x"), ("SENTINEL", "CONFIG", "GET", "a", "b"),
    ("SENTINEL", "CONFIG", "SET", "resolve-hostnames", "maybe"),
    ("SENTINEL", "IS-MASTER-DOWN-BY-ADDR", "127.0.0.1", "1", "0", "*"),
    ("SENTINEL", "IS-MASTER-DOWN-BY-ADDR", "127.0.0.1", "x", "0", "*"),
    ("SENTINEL", "IS-MASTER-DOWN-BY-ADDR", "127.0.0.1", "1", "x", "*"), ("SENTINEL", "HELP"),
    ("SENTINEL", "SET", "nope", "quorum", "2"), ("SENTINEL", "SET", MASTER, "quorum", "0"),
    ("SENTINEL", "SET", MASTER, "quorum", "x"), ("SENTINEL", "SET", MASTER, "foo", "1"),
    ("SENTINEL", "SET", MASTER, "quorum"), ("SENTINEL", "SET", MASTER, "down-after-milliseconds", "0"),
    ("SENTINEL", "SET", MASTER, "failover-timeout", "-1"), ("SENTINEL", "SET", MASTER, "parallel-syncs", "x"),
    ("SENTINEL", "REMOVE", "nope"), ("SENTINEL", "MONITOR", "x", "127.0.0.1", "1", "0"),
    ("SENTINEL", "MONITOR", "x", "127.0.0.1", "1", "x"), ("SENTINEL", "MONITOR", MASTER, "127.0.0.1", "1", "1"),
    ("SENTINEL", "MONITOR", "x", "nohost", "1", "1"), ("SENTINEL", "MONITOR", "x", "127.0.0.1", "x", "1"),
    ("SENTINEL", "FLUSHCONFIG"), ("SENTINEL", "SIMULATE-FAILURE", "nope"), ("SENTINEL", "SIMULATE-FAILURE", "help"),
    ("MULTI",), ("EXEC",),
]


VALKEY_REPLIES: List[tuple] = [
    ("SENTINEL", "PRIMARY", MASTER), ("SENTINEL", "PRIMARIES"), ("SENTINEL", "GET-PRIMARY-ADDR-BY-NAME", MASTER),
    ("SENTINEL", "GET-PRIMARY-ADDR-BY-NAME", "nope"), ("SENTINEL", "PRIMARY", "nope"),
    ("SENTINEL", "IS-PRIMARY-DOWN-BY-ADDR", "127.0.0.1", "1", "0", "*"), ("SENTINEL", "FAILOVER", MASTER, "X"),
    ("SENTINEL", "FAILOVER", "nope", "COORDINATED"), ("SENTINEL", "FAILOVER", MASTER, "COORDINATED", "X"),
    ("SENTINEL", "CONFIG", "GET", "announce*", "resolve*"), ("SENTINEL", "CONFIG", "GET", "loglevel"),
    ("SENTINEL", "CONFIG", "SET", "loglevel", "bogus"), ("SENTINEL", "CONFIG", "SET", "nope", "1"),
    ("SENTINEL", "CONFIG", "SET", "announce-hostnames"),
]


@pytest.mark.parametrize("argv", VALKEY_REPLIES, ids=lambda a: " ".join(a)[:48])
def test_valkey_sentinel_replies(pair: Pair, argv: tuple) -> None:
    """What only Valkey's sentinel has (on Redis these are unknown subcommands / other texts: compared too)."""
    pair.same(2, *argv)


def test_sentinel_settings_change_and_come_back(pair: Pair) -> None:
    """SENTINEL SET / DEBUG / CONFIG SET, what MASTER / CKQUORUM / DEBUG / CONFIG GET then show, and back."""
    for argv in (("SENTINEL", "SET", MASTER, "quorum", "2", "down-after-milliseconds", "5000"),
                 ("SENTINEL", "CKQUORUM", MASTER), ("SENTINEL", "MASTER", MASTER),
                 ("SENTINEL", "SET", MASTER, "parallel-syncs", "3", "quorum", "x"), ("SENTINEL", "MASTER", MASTER),
                 ("SENTINEL", "SET", MASTER, "quorum", "1", "down-after-milliseconds", "30000", "parallel-syncs", "1"),
                 ("SENTINEL", "CKQUORUM", MASTER), ("SENTINEL", "MASTER", MASTER),
                 ("SENTINEL", "DEBUG", "ping-period", "2000", "INFO-PERIOD", "5000"), ("SENTINEL", "DEBUG"),
                 ("SENTINEL", "DEBUG", "ping-period", "1000", "info-period", "10000"), ("SENTINEL", "DEBUG"),
                 ("SENTINEL", "CONFIG", "SET", "announce-hostnames", "YES"), ("SENTINEL", "CONFIG", "GET", "announce*"),
                 ("SENTINEL", "CONFIG", "SET", "announce-hostnames", "no"), ("SENTINEL", "CONFIG", "GET", "*")):
        pair.same(2, *argv)


@pytest.mark.parametrize("argv", SENTINEL_REPLIES, ids=lambda a: " ".join(a)[:48])
def test_sentinel_replies(pair: Pair, argv: tuple) -> None:
    pair.same(2, *argv)


REPLICA_COMMANDS: List[tuple] = [
    ("SET", "x", "1"), ("DEL", "k"), ("INCR", "n"), ("EXPIRE", "k", "10"), ("FLUSHALL",), ("FLUSHDB",),
    ("SWAPDB", "0", "1"), ("MOVE", "k", "1"), ("COPY", "k", "k2"), ("RESTORE", "r", "0", "x"), ("FUNCTION", "FLUSH"),
    ("XADD", "jobs", "*", "n", "3"), ("XADD", "new", "*", "n", "3"), ("XACK", "jobs", "workers", "1-1"),
    ("XREADGROUP", "GROUP", "workers", "bob", "STREAMS", "jobs", ">"),
    ("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "jobs", "0"),
    ("XREADGROUP", "GROUP", "nogroup", "c", "STREAMS", "jobs", ">"),
    ("XGROUP", "CREATE", "jobs", "g2", "0"), ("XGROUP", "DESTROY", "jobs", "workers"),
    ("XGROUP", "CREATECONSUMER", "jobs", "workers", "c2"), ("XGROUP", "DELCONSUMER", "jobs", "workers", "alice"),
    ("XGROUP", "SETID", "jobs", "workers", "0"), ("XCLAIM", "jobs", "workers", "bob", "0", "1-1"),
    ("XAUTOCLAIM", "jobs", "workers", "bob", "0", "0"), ("XTRIM", "jobs", "MAXLEN", "0"), ("XDEL", "jobs", "1-1"),
    ("XSETID", "jobs", "5-5"),
    ("XADD", "jobs"), ("XACK", "jobs"), ("NOSUCHCOMMAND",),  # existence and arity come first
    ("GET", "k"), ("XLEN", "jobs"), ("XRANGE", "jobs", "-", "+"), ("XREVRANGE", "jobs", "+", "-", "COUNT", "1"),
    ("XREAD", "STREAMS", "jobs", "0"), ("XPENDING", "jobs", "workers"),
    ("XPENDING", "jobs", "workers", "-", "+", "10"), ("XINFO", "CONSUMERS", "jobs", "workers"),
    ("XGROUP", "HELP"), ("PUBLISH", "ch", "x"), ("SELECT", "1"), ("SELECT", "0"), ("SCRIPT", "FLUSH"),
    ("EVAL", "return redis.call('set','x','1')", "0"), ("EVAL", "return redis.call('xadd','jobs','*','a','1')", "0"),
    ("EVAL", "return redis.call('xack','jobs','workers','1-1')", "0"), ("EVAL", "return redis.pcall('set','x','1')", "0"),
    ("EVAL", "return redis.call('get','k')", "0"), ("EVAL", "return redis.call('xlen','jobs')", "0"),
    ("EVAL", "#!lua\nreturn redis.call('get','k')", "0"), ("EVAL", "#!lua flags=no-writes\nreturn redis.call('get','k')", "0"),
    ("EVAL_RO", "return redis.call('set','x','1')", "0"), ("EVAL_RO", "return redis.call('get','k')", "0"),
    ("FCALL", "nofunc", "0"),
]


_TIMES = (b"idle", b"inactive")  # a consumer's idle time; Valkey's time since its last successful read


def _idle_times(reply: Any) -> Any:
    """XPENDING's extended rows and XINFO CONSUMERS with their idle times (the wall clock since the seed) as <n>."""
    if not isinstance(reply, list):
        return reply
    out = []
    for row in reply:
        if isinstance(row, dict):
            row = {k: (b"<n>" if k in _TIMES else v) for k, v in row.items()}
        elif isinstance(row, list) and b"idle" in row:
            row = [b"<n>" if i and row[i - 1] in _TIMES else v for i, v in enumerate(row)]
        elif isinstance(row, list) and len(row) == 4:
            row = row[:2] + [b"<n>"] + row[3:]
        out.append(row)
    return out


@pytest.mark.parametrize("argv", REPLICA_COMMANDS, ids=lambda a: " ".join(a)[:48])
def test_replica_commands(pair: Pair, argv: tuple) -> None:
    timed = argv[:2] == ("XINFO", "CONSUMERS") or (argv[0] == "XPENDING" and len(argv) > 3)
    pair.same(1, *argv, post=_idle_times if timed else None)


def test_replica_multi_with_a_write_aborts(pair: Pair) -> None:
    for argv in (("MULTI",), ("GET", "k"), ("SET", "x", "1"), ("XADD", "jobs", "*", "a", "1"), ("EXEC",),
                 ("MULTI",), ("GET", "k"), ("XLEN", "jobs"), ("EXEC",)):
        pair.same(1, *argv)


@pytest.mark.parametrize("node", [0, 1], ids=["master", "replica"])
def test_role(pair: Pair, node: int) -> None:
    pair.same(node, "ROLE", post=role_offsets)


def _info_shape(reply: Any) -> Any:
    """INFO as (section title, field name) pairs, with the values of the replication fields that are behaviour."""
    text = reply.decode() if isinstance(reply, bytes) else str(reply)
    text = text[4:] if text.startswith("txt:") else text
    keep = {"role", "master_host", "master_port", "master_link_status", "master_sync_in_progress", "slave_priority",
            "slave_read_only", "replica_announced", "connected_slaves", "master_failover_state",
            "repl_backlog_active", "sentinel_masters", "sentinel_tilt", "sentinel_running_scripts",
            "sentinel_scripts_queue_length", "sentinel_simulate_failure_flags", "redis_mode", "master0"}
    out = []
    for line in text.split("\r\n"):
        if line.startswith("#"):
            out.append(line)
        elif ":" in line:
            name, _, value = line.partition(":")
            if name.startswith("slave") and name[5:].isdigit():  # slave0:ip=…,port=…,state=…,offset=…,lag=…
                value = ",".join(f for f in value.split(",") if f.split("=")[0] in ("ip", "port", "state"))
            out.append(f"{name}:{value}" if name in keep or name.startswith("slave") and name[5:].isdigit()
                       else name)
    return out


@pytest.mark.parametrize("node,section", [(0, "replication"), (1, "replication"), (2, "default"), (2, "sentinel"),
                                          (2, "server"), (2, "all")],
                         ids=["master-replication", "replica-replication", "sentinel-default", "sentinel-sentinel",
                              "sentinel-server", "sentinel-all"])
def test_info(pair: Pair, node: int, section: str) -> None:
    pair.same(node, "INFO", section, post=_info_shape)


def _hello_shape(reply: Any) -> Any:
    pairs = reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2]))
    return {k: (b"<id>" if k == b"id" else v) for k, v in pairs.items()}


@pytest.mark.parametrize("node", [0, 1, 2], ids=["master", "replica", "sentinel"])
def test_hello(pair: Pair, node: int) -> None:
    pair.same(node, "HELLO", str(pair.protocol), post=_hello_shape)


# ------------------------------------------------------------------------------------------------ failover
def _outcome(fn: Any) -> Any:
    """What one client call gives: its value, or the class of the error it raised."""
    try:
        return fn()
    except redis.exceptions.ConnectionError as exc:
        return ("ConnectionError", type(exc).__name__)
    except redis.exceptions.ResponseError as exc:
        return ("ResponseError", type(exc).__name__, str(exc))


def _until_switched(events: List[Any]) -> List[Any]:
    """The sentinel's events of one failover, from its start up to ``+switch-master`` and the ``+slave`` events that
    follow it (what comes later — the old master's ``-role-change`` and its conversion — is compared by
    test_asyncio_failover_as_a_sentinel_client_sees_it, with timings)."""
    out, switched = [], False
    for channel, message in events:
        if switched and channel != b"+slave":
            break
        out.append((channel, message))
        switched = switched or channel == b"+switch-master"
    return out


def _client_path(sentinels: Any, failover: Any, settle: Any, replicated: Any) -> List[Any]:
    """A redis-py Sentinel client's life through a failover (the sentinel's periods shortened first:
    :data:`~tests.topology.real_sentinel.FAST_PERIODS`): a stream with a group and a PEL, a failover, the hang-up,
    the rediscovery; READONLY where the old master is now a replica; the events the sentinel published."""
    app = Sentinel(sentinels, socket_timeout=5)
    watcher = redis.Redis(host=sentinels[0][0], port=sentinels[0][1], socket_timeout=5).pubsub()
    watcher.psubscribe("*")
    assert watcher.get_message(timeout=5)["type"] == "psubscribe"  # real-time: bounded wait for the confirmation
    master, replica = app.master_for(MASTER), app.slave_for(MASTER)
    seen: List[Any] = [shorten_periods(sentinels[0])]
    try:
        step = seen.append
        step(_outcome(lambda: master.xadd("orders", {"sku": "A"}, id="1-1")))
        step(_outcome(lambda: master.xgroup_create("orders", "billing", id="0")))
        step(_outcome(lambda: master.xreadgroup("billing", "worker", {"orders": ">"})))
        replicated()
        step(_outcome(lambda: replica.xpending("orders", "billing")["pending"]))
        before = app.discover_master(MASTER)
        failover()
        settle()
        after = app.discover_master(MASTER)
        step(("moved", before != after, after == tuple(app.discover_slaves(MASTER) and after)))
        step(_outcome(lambda: master.xack("orders", "billing", "1-1")))  # the hang-up
        step(_outcome(lambda: master.xack("orders", "billing", "1-1")))  # rediscovered: the PEL is still there
        step(_outcome(lambda: master.xpending("orders", "billing")["pending"]))
        step(_outcome(lambda: master.xlen("orders")))
        old = redis.Redis(host=before[0], port=before[1], socket_timeout=5)
        step(_outcome(lambda: old.execute_command("ROLE")[0]))
        step(_outcome(lambda: old.xadd("orders", {"sku": "B"})))
        step(_outcome(lambda: old.xlen("orders")))
        old.close()
        events = []
        while (message := watcher.get_message(timeout=0.5)) is not None:  # real-time: the events already sent
            events.append((message["channel"], message["data"]))
        step(("events", _until_switched(events)))
    finally:
        watcher.close()
        master.close()
        replica.close()
        close_sentinel(app)
    return seen


@contextlib.contextmanager
def _patched_fake(port: int, sentinel_port: int, kind: str, clock: Optional[ManualClock] = None) -> Iterator[FakeSentinel]:
    """A fake deployment (one replica, the profile of ``kind``, on ``clock``) that redis-py clients built inside
    the block reach."""
    with FakeSentinel(MASTER, 1, port=port, sentinel_port=sentinel_port, version=KINDS[kind],
                      clock=clock) as deployment:
        patch = PoolPatch(deployment.network.replacement, deployment.network.replacement).install()
        try:
            yield deployment
        finally:
            patch.uninstall()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_failover_as_a_sentinel_client_sees_it(kind: str) -> None:
    deployment = _start_real(kind)
    try:
        assert deployment.sentinel is not None
        real_sentinels = [("127.0.0.1", deployment.sentinel.port)]
        real_ids, real_ports = deployment.ids(), deployment.ports
        replica_port = deployment.replica.port
        real = _client_path(
            real_sentinels,
            lambda: deployment.sentinel.command("SENTINEL", "FAILOVER", MASTER),  # type: ignore[union-attr]
            lambda: deployment.wait_settled(replica_port), deployment.wait_replicated)
    finally:
        deployment.stop()
    with _patched_fake(16390, 36390, kind) as fake_deployment:
        fake = _client_path(fake_deployment.sentinels, fake_deployment.failover,
                            fake_deployment.convert_old_masters, lambda: None)
    norm_real = normaliser(real_ids, real_ports)
    norm_fake = normaliser([fake_deployment.myid.encode()], [16390, 16391, 36390])
    real, fake = norm_real(real), norm_fake(fake)
    assert fake == real, f"\n real: {real!r}\n fake: {fake!r}"


def _crash_path(sentinel_address: Any, down: Any) -> List[Any]:
    """SIMULATE-FAILURE crash-after-election, then FAILOVER: the reply, the events a subscriber got, and what a
    Sentinel client finds afterwards. The clients retry as redis-py's default does, without its backoff waits (those
    are seconds of real time against a server that is gone, on either side)."""
    at_once = default_retry_without_waits()
    control = redis.Redis(host=sentinel_address[0], port=sentinel_address[1], socket_timeout=5, **at_once)
    watcher = control.pubsub()
    watcher.psubscribe("*")
    assert watcher.get_message(timeout=5)["type"] == "psubscribe"  # real-time: bounded wait for the confirmation
    seen: List[Any] = [control.execute_command("SENTINEL", "SIMULATE-FAILURE", "crash-after-election"),
                       control.execute_command("SENTINEL", "FAILOVER", MASTER)]
    events: List[Any] = []
    try:
        while (message := watcher.get_message(timeout=2)) is not None:  # real-time: until the sentinel is gone
            events.append((message["channel"], message["data"]))
    except redis.exceptions.ConnectionError:
        events.append("hung up")
    down()
    seen.append(events)
    app = Sentinel([sentinel_address], socket_timeout=2, sentinel_kwargs={"socket_timeout": 2, **at_once})
    seen.append(_outcome(lambda: app.discover_master(MASTER)))
    watcher.close()
    control.close()
    close_sentinel(app)
    return seen


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_simulated_crash_after_election(kind: str) -> None:
    deployment = _start_real(kind)
    try:
        assert deployment.sentinel is not None
        proc = deployment.sentinel.proc
        address = ("127.0.0.1", deployment.sentinel.port)
        real = _crash_path(address, lambda: proc.wait(timeout=10))  # real-time: the sentinel process exits (99)
        real_ports = deployment.ports
        assert proc.returncode == 99
    finally:
        deployment.stop()
    with _patched_fake(16392, 36392, kind) as fake_deployment:
        fake = _crash_path(("127.0.0.1", 36392), lambda: None)
        fake_id = fake_deployment.myid.encode()
    real = normaliser([], real_ports)(real)
    fake = normaliser([fake_id], [16392, 16393, 36392])(fake)
    assert real == fake, f"\n real: {real!r}\n fake: {fake!r}"


# ---------------------------------------------------------------------- the old master's conversion, sync and asyncio
async def _call(result: Any) -> Any:
    return await result if inspect.isawaitable(result) else result


async def _outcome_of(call: Any) -> Any:
    """What one client call gives (sync or asyncio): its value, or the class and text of the error it raised."""
    try:
        return await _call(call())
    except redis.exceptions.RedisError as exc:
        return (type(exc).__name__, str(exc))


async def _poll(check: Any, what: str) -> None:
    """Until ``check()`` (a quick sync call) is true; the event loop runs meanwhile, as in an application."""
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not reached in {WAIT_S} s: {what}")
        await asyncio.sleep(0.02)  # real-time: bounded wait for the real deployment (the fake is there at once)


def _names(port: int) -> List[str]:
    """The application's connections on the node at ``port`` (by client name)."""
    control = redis.Redis(port=port, socket_timeout=5)
    try:
        return sorted(c["name"] for c in control.client_list() if c["name"] in ("app", "waiter"))
    finally:
        control.close()


def _role(port: int) -> Any:
    control = redis.Redis(port=port, socket_timeout=5)
    try:
        return role_offsets(control.execute_command("ROLE"))
    finally:
        control.close()


def _blocked_clients(port: int) -> int:
    control = redis.Redis(port=port, socket_timeout=5)
    try:
        return int(control.info("clients")["blocked_clients"])
    finally:
        control.close()


#: the SENTINEL REPLICAS fields that say how the sentinel sees an instance's role and link
_VIEW = (b"flags", b"role-reported", b"master-link-down-time", b"master-link-status", b"master-host", b"master-port")


def _as_map(reply: Any) -> Any:
    return reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2]))


async def _conversion_path(mode: str, sentinel_address: Any, failover: Any, convert: Any, refresh: Any,
                           ports: List[int]) -> Tuple[List[Any], float]:
    """A Sentinel client (``mode`` "sync" or "asyncio") through a forced failover, step by step as it sees it (the
    sentinel's periods shortened first: :data:`~tests.topology.real_sentinel.FAST_PERIODS`): the switch (the old
    master is still a master: which node answers, ROLE, a write, its connections), then the old master's conversion
    (``convert()``: on the real deployment, waited for; on the fake, the clock moved): what a read blocked there
    gets, where the next commands go, the old master's ROLE and connections; then (``refresh()``: on the real
    deployment, waited for; on the fake, the clock moved by an INFO-PERIOD) the sentinel's next INFO of the
    converted replica (``+role-change``); the sentinel's events after ``+switch-master``. ``ports``: old master, new
    master. Returns the steps and the seconds (real time) from the switch seen to the conversion seen."""
    old_port, new_port = ports
    if mode == "asyncio":
        app: Any = redis.asyncio.sentinel.Sentinel([sentinel_address], socket_timeout=5)
        kwargs = async_failover_retry()
    else:
        app = Sentinel([sentinel_address], socket_timeout=5)
        kwargs = {"retry": Retry(NoBackoff(), 3), "retry_on_error": [redis.exceptions.ConnectionError]}
    master = app.master_for(MASTER, client_name="app", **kwargs)
    # the waiter's read stays blocked through the real deployment's wait (a reply timeout would end it first)
    waiter = app.master_for(MASTER, client_name="waiter", **{**kwargs, "socket_timeout": WAIT_S})
    watcher = redis.Redis(host=sentinel_address[0], port=sentinel_address[1], socket_timeout=5).pubsub()
    watcher.psubscribe("*")
    assert watcher.get_message(timeout=5)["type"] == "psubscribe"  # real-time: bounded wait for the confirmation
    seen: List[Any] = [shorten_periods(sentinel_address)]
    step = seen.append

    def pool_ports(client: Any) -> List[int]:
        return [c.port for c in client.connection_pool._available_connections]

    sentinel = redis.Redis(host=sentinel_address[0], port=sentinel_address[1], socket_timeout=5)

    def old_entry() -> Any:
        """The sentinel's view of the old master (SENTINEL REPLICAS: the fields of _VIEW)."""
        entries = [_as_map(r) for r in sentinel.execute_command("SENTINEL", "REPLICAS", MASTER)]
        return [{k: e[k] for k in _VIEW if k in e} for e in entries if e[b"port"] == str(old_port).encode()]

    try:
        step(await _outcome_of(lambda: master.xadd("orders", {"sku": "A"}, id="1-1")))
        step(await _outcome_of(lambda: master.xgroup_create("orders", "billing", id="0")))
        step(await _outcome_of(lambda: master.xreadgroup("billing", "worker", {"orders": ">"})))
        if mode == "asyncio":
            blocked = asyncio.ensure_future(waiter.xreadgroup("billing", "waiter", {"orders": ">"}, block=0))
        else:
            blocked = asyncio.ensure_future(asyncio.to_thread(waiter.xreadgroup, "billing", "waiter",
                                                              {"orders": ">"}, block=0))
        await _poll(lambda: _blocked_clients(old_port) == 1, "the waiter blocked on the master")
        failover()
        await _poll(lambda: sentinel.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER)[1]
                    == str(new_port).encode(), "the sentinel names the new master")
        switched = time.monotonic()
        # the sentinel's view of the old master: a replica that still reports the master role, linked to nobody
        # (a real sentinel lists it at +switch-master and sees its role at its first INFO, a moment later)
        await _poll(lambda: [e.get(b"role-reported") for e in old_entry()] == [b"master"], "the old master listed")
        step(("window", old_entry()))
        # the switch: the old master is still a master, and the client's connection there serves on
        step(("window", role_offsets(await _outcome_of(lambda: master.execute_command("ROLE"))), pool_ports(master)))
        step(("window", await _outcome_of(lambda: master.xpending("orders", "billing"))))
        step(("window", await _outcome_of(lambda: master.xadd("window", {"n": "1"}, id="1-1"))))
        step(("window", _role(old_port), _names(old_port), blocked.done()))
        convert()
        await _poll(lambda: _role(old_port)[:1] == [b"slave"] and _role(old_port)[3] == b"connected",
                    "the old master converted and linked")
        window_s = time.monotonic() - switched
        # the conversion hung up on the client's connections there: a moment for the event loop to read those EOFs
        # (as it had, with the default periods, through the 10 s the replica's link then took to come up)
        await asyncio.sleep(0.05)  # real-time: the hang-ups reach an asyncio client's streams
        step(("converted", _role(old_port)))
        step(("converted", await _outcome_of(lambda: master.xack("orders", "billing", "1-1")), pool_ports(master)))
        step(("converted", await _outcome_of(lambda: master.xadd("orders", {"sku": "B"}, id="2-1"))))
        try:
            step(("blocked read", await asyncio.wait_for(blocked, 5)))  # real-time: bounded, the entry is there
        except redis.exceptions.RedisError as exc:
            step(("blocked read", type(exc).__name__, str(exc)))
        step(("converted", await _outcome_of(lambda: master.xpending("orders", "billing")), _names(old_port)))
        refresh()  # the sentinel's next INFO of the converted replica: +role-change, one INFO-PERIOD later
        await _poll(lambda: [e.get(b"role-reported") for e in old_entry()] == [b"slave"],
                    "the sentinel saw the old master's new role")
        events = []
        while (message := watcher.get_message(timeout=0.5)) is not None:  # real-time: the events already sent
            events.append((message["channel"], message["data"]))
        channels = [channel for channel, _ in events]
        step(("events", events[channels.index(b"+switch-master") + 1:]))
    finally:
        watcher.close()
        sentinel.close()
        for client in (master, waiter):
            await (aclose(client) if mode == "asyncio" else _call(client.close()))
    return seen, window_s


@pytest.mark.parametrize("mode", ["sync", "asyncio"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_conversion_as_a_sentinel_client_sees_it(kind: str, mode: str) -> None:
    """The old master between the switch and its conversion, and after it, as a Sentinel client sees it, on the
    real deployment (with FAST_PERIODS it converts the old master about 1.1 s after the switch; 10 s with the
    default periods) and on the fake (the same periods set, the same wait on its ManualClock). On redis-py 6.1 and
    later a blocked read (sync or asyncio) retries on the old address, now a replica (ConnectionError "The previous
    master is now a slave"); before 6.1 it asks the sentinel and blocks again on the new master (tests/support/redis_compat.py ``RETRY_ASKS_SENTINEL``): each side shows what
    this redis-py does, and they must agree."""
    deployment = _start_real(kind)
    try:
        assert deployment.sentinel is not None
        real_ids, real_ports = deployment.ids(), deployment.ports

        def real_failover() -> None:
            deployment.wait_replicated()
            deployment.sentinel.command("SENTINEL", "FAILOVER", MASTER)  # type: ignore[union-attr]

        real, real_window_s = asyncio.run(_conversion_path(mode, ("127.0.0.1", deployment.sentinel.port),
                                                           real_failover, lambda: None, lambda: None,
                                                           real_ports[:2]))
    finally:
        deployment.stop()
    clock = ManualClock(1_700_000_000_000)
    with _patched_fake(16394, 36394, kind, clock) as fake_deployment:
        fake, _ = asyncio.run(_conversion_path(
            mode, ("127.0.0.1", 36394), fake_deployment.failover,
            lambda: clock.advance(fake_deployment.conversion_delay_ms()),
            lambda: clock.advance(fake_deployment.settings.debug["INFO-PERIOD"]), [16394, 16395]))
    real = normaliser(real_ids, real_ports)(real)
    fake = normaliser([fake_deployment.myid.encode()], [16394, 16395, 36394])(fake)
    assert fake == real, f"\n real: {real!r}\n fake: {fake!r}"
    if not RETRY_ASKS_SENTINEL:
        assert ("blocked read", "ConnectionError", "The previous master is now a slave") in real
    # the real sentinel waited 4 × PUBLISH-PERIOD after the switch before converting the old master (the fake: its
    # clock, moved by its conversion_delay_ms under the same periods)
    publish_s = int(FAST_PERIODS[FAST_PERIODS.index("PUBLISH-PERIOD") + 1]) / 1000
    assert real_window_s > 0.9 * 4 * publish_s, real_window_s
    assert fake_deployment.conversion_delay_ms() > 4 * publish_s * 1000
