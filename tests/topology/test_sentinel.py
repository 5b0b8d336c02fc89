"""The fake Sentinel deployment: replicas (reads of the master's data, READONLY on every write, ROLE / INFO
replication / HELLO), the sentinel's own command table and SENTINEL replies, and the failover helper as redis-py's
Sentinel clients (sync and asyncio) live through it."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

import pytest
import redis
import redis.exceptions
import redis.sentinel
from redis.sentinel import Sentinel

from fake_streams import ManualClock
from fake_streams.patching import patch_redis
from fake_streams.topology.replica import READONLY
from fake_streams.topology.sentinel import FakeSentinel
from tests.support.redis_compat import RETRY_ASKS_SENTINEL, aclose, async_failover_retry
from tests.topology.test_cluster import err
from tests.topology.test_cluster import raw as node_raw

START_MS = 1_700_000_000_000


@pytest.fixture
def sentinel():
    s = FakeSentinel(replicas=2, port=16379, sentinel_port=36379, version="7.0", clock=ManualClock(START_MS))
    yield s
    s.close()


def raw(server, *argv, protocol=2):
    """One command on ``server``, its raw reply (errors returned as exceptions)."""
    return node_raw(SimpleNamespace(server=server), *argv, protocol=protocol)


def _seed(server):
    c = server.client()
    c.xadd("jobs", {"n": "1"}, id="1-1")
    c.xadd("jobs", {"n": "2"}, id="2-1")
    c.xgroup_create("jobs", "workers", id="0")
    c.xreadgroup("workers", "alice", {"jobs": ">"}, count=1)
    c.close()


WRITES = [
    ("SET", "x", "1"), ("DEL", "x"), ("XADD", "jobs", "*", "n", "3"), ("XACK", "jobs", "workers", "1-1"),
    ("XREADGROUP", "GROUP", "workers", "bob", "STREAMS", "jobs", ">"),
    ("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "jobs", "0"),
    ("XGROUP", "CREATE", "jobs", "g2", "0"), ("XGROUP", "DESTROY", "jobs", "workers"),
    ("XGROUP", "CREATECONSUMER", "jobs", "workers", "c2"), ("XGROUP", "SETID", "jobs", "workers", "0"),
    ("XCLAIM", "jobs", "workers", "bob", "0", "1-1"), ("XAUTOCLAIM", "jobs", "workers", "bob", "0", "0"),
    ("XTRIM", "jobs", "MAXLEN", "0"), ("XDEL", "jobs", "1-1"), ("XSETID", "jobs", "5-5"), ("FLUSHALL",),
    ("EXPIRE", "jobs", "10"), ("FUNCTION", "FLUSH"), ("EVAL", "#!lua\nreturn 1", "0"),
]


@pytest.mark.parametrize("argv", WRITES, ids=lambda a: " ".join(a[:2]))
def test_replica_answers_every_write_with_readonly(sentinel, argv):
    _seed(sentinel.master.server)
    replica = sentinel.replicas[0].server
    assert err(raw(replica, *argv)) == READONLY
    assert err(raw(replica, *argv, protocol=3)) == READONLY


def test_replica_serves_reads_of_the_masters_data_at_once(sentinel):
    _seed(sentinel.master.server)
    replica = sentinel.replicas[1].server
    assert raw(replica, "XRANGE", "jobs", "-", "+") == [[b"1-1", [b"n", b"1"]], [b"2-1", [b"n", b"2"]]]
    assert raw(replica, "XPENDING", "jobs", "workers")[0] == 1
    assert raw(replica, "XINFO", "GROUPS", "jobs")[0][:2] == [b"name", b"workers"]
    assert raw(replica, "EVAL", "return redis.call('xlen', KEYS[1])", "1", "jobs") == 2
    assert raw(replica, "EVAL", "#!lua flags=no-writes\nreturn redis.call('xlen', KEYS[1])", "1", "jobs") == 2
    assert raw(replica, "PUBLISH", "ch", "x") == 0  # may-replicate, not a write
    # a write inside a script: the command's error with the script's suffix; pcall gives the bare error
    line = err(raw(replica, "EVAL", "return redis.call('xadd', KEYS[1], '*', 'n', 'x')", "1", "jobs"))
    assert line.startswith(READONLY + " script: ")
    assert err(raw(replica, "EVAL", "return redis.pcall('set', 'k', 'v')", "0")) == READONLY
    assert err(raw(replica, "SET", "x")) == "ERR wrong number of arguments for 'set' command"  # arity first
    sentinel.master.server.client().xadd("jobs", {"n": "3"}, id="3-1")
    assert raw(replica, "XLEN", "jobs") == 3  # replication is instant


def test_readonly_inside_multi_aborts_exec(sentinel):
    client = sentinel.replicas[0].server.client()
    pipe = client.pipeline()
    pipe.get("x").set("x", "1")
    with pytest.raises(redis.exceptions.ReadOnlyError):
        pipe.execute()
    pipe = client.pipeline()
    pipe.get("x")
    assert pipe.execute() == [None]


def test_role_info_and_hello_of_master_and_replicas(sentinel):
    master, first, second = sentinel.nodes
    assert raw(master.server, "ROLE") == [b"master", 0, [[b"127.0.0.1", b"16380", b"0"], [b"127.0.0.1", b"16381", b"0"]]]
    assert raw(first.server, "ROLE", protocol=3) == [b"slave", b"127.0.0.1", 16379, b"connected", 0]
    info = first.server.client().info("replication")
    assert (info["role"], info["master_host"], info["master_port"], info["master_link_status"],
            info["slave_read_only"]) == ("slave", "127.0.0.1", 16379, "up", 1)
    assert info["master_replid"] == master.server.client().info("replication")["master_replid"]
    minfo = master.server.client().info("replication")
    assert minfo["connected_slaves"] == 2 and minfo["slave1"]["port"] == 16381
    assert raw(first.server, "HELLO", "3", protocol=3)[b"role"] == b"replica"
    assert raw(master.server, "HELLO", "3", protocol=3)[b"role"] == b"master"


def test_sentinel_has_only_its_commands(sentinel):
    server = sentinel.server
    assert err(raw(server, "GET", "x")) == "ERR unknown command 'GET', with args beginning with: 'x' "
    assert err(raw(server, "XADD", "s", "*", "a", "1")) == \
        "ERR unknown command 'XADD', with args beginning with: 's' '*' 'a' '1' "
    assert raw(server, "PING") == b"PONG"
    assert raw(server, "ROLE") == [b"sentinel", [b"mymaster"]]
    hello = raw(server, "HELLO", "3", protocol=3)
    assert hello[b"mode"] == b"sentinel" and b"role" not in hello
    info = server.client().info()
    assert info["redis_mode"] == "sentinel" and info["sentinel_masters"] == 1
    assert info["master0"] == {"name": "mymaster", "status": "ok", "address": "127.0.0.1:16379", "slaves": 2,
                               "sentinels": 1}
    assert "used_memory" not in info and "role" not in info  # no Memory / Replication sections
    assert server.client().info("replication") == {}


def test_sentinel_replies(sentinel):
    server = sentinel.server
    master = raw(server, "SENTINEL", "MASTER", "mymaster", protocol=3)
    assert (master[b"name"], master[b"ip"], master[b"port"], master[b"flags"], master[b"num-slaves"],
            master[b"quorum"], master[b"runid"]) == (b"mymaster", b"127.0.0.1", b"16379", b"master", b"2", b"1",
                                                      sentinel.master.server.client().info()["run_id"].encode())
    flat = raw(server, "SENTINEL", "MASTER", "mymaster")
    assert flat[:4] == [b"name", b"mymaster", b"ip", b"127.0.0.1"]
    assert raw(server, "SENTINEL", "MASTERS") == [flat]
    replicas = raw(server, "SENTINEL", "REPLICAS", "mymaster", protocol=3)
    assert [(r[b"name"], r[b"flags"], r[b"master-port"]) for r in replicas] == [
        (b"127.0.0.1:16380", b"slave", b"16379"), (b"127.0.0.1:16381", b"slave", b"16379")]
    assert raw(server, "SENTINEL", "SLAVES", "mymaster", protocol=3) == replicas
    assert raw(server, "SENTINEL", "SENTINELS", "mymaster") == []
    assert raw(server, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster") == [b"127.0.0.1", b"16379"]
    assert raw(server, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nope") is None
    assert raw(server, "SENTINEL", "CKQUORUM", "mymaster") == \
        b"OK 1 usable Sentinels. Quorum and failover authorization can be reached"
    assert raw(server, "SENTINEL", "MYID") == sentinel.myid.encode()
    for sub in ("MASTER", "REPLICAS", "SLAVES", "SENTINELS", "CKQUORUM", "FAILOVER"):
        assert err(raw(server, "SENTINEL", sub, "nope")) == "ERR No such master with that name"
    assert err(raw(server, "SENTINEL", "FOO")) == "ERR unknown subcommand 'FOO'. Try SENTINEL HELP."
    assert err(raw(server, "SENTINEL")) == "ERR wrong number of arguments for 'sentinel' command"
    assert err(raw(server, "SENTINEL", "MASTER")) == "ERR wrong number of arguments for 'sentinel|master' command"
    assert err(raw(sentinel.master.server, "SENTINEL", "MASTERS")).startswith("ERR unknown command 'SENTINEL'")


def test_ckquorum_without_quorum():
    with FakeSentinel(quorum=2, port=16479, sentinel_port=36479) as s:
        assert err(raw(s.server, "SENTINEL", "CKQUORUM", "mymaster")) == (
            "NOQUORUM 1 usable Sentinels. Not enough available Sentinels to reach the specified quorum for this master")


def test_failover_keeps_streams_groups_and_pels_and_swaps_roles(sentinel):
    _seed(sentinel.master.server)
    old, new = sentinel.master, sentinel.replicas[1]
    assert sentinel.failover(new) is new
    assert sentinel.master is new and not old.is_replica and old.unconverted  # converted 10 s later
    assert sentinel.master_address == ("127.0.0.1", 16381)
    assert raw(new.server, "XPENDING", "jobs", "workers", "-", "+", "10") == [[b"1-1", b"alice", 0, 1]]
    assert raw(new.server, "XACK", "jobs", "workers", "1-1") == 1
    assert raw(old.server, "ROLE")[0::2] == [b"master", []]  # still a master, with no replicas
    assert raw(new.server, "ROLE")[2] == [[b"127.0.0.1", b"16380", b"1"]]  # the other replica follows it
    sentinel.group.owner.clock.advance(sentinel.conversion_delay_ms())
    assert old.is_replica and not old.unconverted
    assert raw(new.server, "ROLE")[2] == [[b"127.0.0.1", b"16379", b"1"], [b"127.0.0.1", b"16380", b"1"]]
    assert err(raw(old.server, "XADD", "jobs", "*", "n", "x")) == READONLY
    assert raw(old.server, "ROLE")[:3] == [b"slave", b"127.0.0.1", 16381]
    assert raw(sentinel.server, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster") == [b"127.0.0.1", b"16381"]
    replicas = raw(sentinel.server, "SENTINEL", "REPLICAS", "mymaster", protocol=3)
    assert sorted(r[b"port"] for r in replicas) == [b"16379", b"16380"]
    assert raw(sentinel.server, "SENTINEL", "MASTER", "mymaster", protocol=3)[b"config-epoch"] == b"1"
    assert raw(sentinel.server, "SENTINEL", "FAILOVER", "mymaster") == b"OK"  # the sentinel's own command
    assert sentinel.master is not new and sentinel.failovers == 2


def test_failover_hangs_up_as_a_sentinel_does(sentinel):
    """At the switch the new master's and the other replica's clients are hung up on (each gets SLAVEOF + CLIENT
    KILL); the old master's only when it is converted, 10 s later on the clock (a blocked read then ends too)."""
    _seed(sentinel.master.server)
    old_client = sentinel.master.server.client()
    new_client = sentinel.replicas[0].server.client()
    other_client = sentinel.replicas[1].server.client()
    ids = [c.client_id() for c in (old_client, new_client, other_client)]
    blocked = sentinel.master.server.client()
    outcome = []

    def read():
        try:
            outcome.append(blocked.xread({"jobs": "$"}, block=0))
        except redis.exceptions.ConnectionError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=read)
    thread.start()
    sentinel.master.server.wait_until_blocked(1)
    sentinel.failover(1)
    # hung up: redis-py's pool sees the EOF at checkout and reconnects (a new client id), as against a server
    after = [c.client_id() for c in (old_client, new_client, other_client)]
    assert after[0] == ids[0] and after[1] != ids[1] and after[2] != ids[2]
    assert old_client.xadd("jobs", {"n": "x"}, id="5-1") == b"5-1"  # the old master still takes writes
    assert not outcome and thread.is_alive()  # and the blocked read goes on: it is served by that write
    thread.join(5)  # real-time: bounded wait for the reader thread
    assert outcome == [[[b"jobs", [(b"5-1", {b"n": b"x"})]]]]
    thread = threading.Thread(target=read)
    thread.start()
    sentinel.master.server.wait_until_blocked(1)
    sentinel.group.owner.clock.advance(sentinel.conversion_delay_ms() - 1)
    assert thread.is_alive() and old_client.client_id() == ids[0]
    sentinel.group.owner.clock.advance(1)  # converted: SLAVEOF + CLIENT KILL TYPE normal
    thread.join(5)  # real-time: bounded wait for the blocked reader's hang-up
    assert isinstance(outcome[1], redis.exceptions.ConnectionError)
    assert old_client.client_id() != ids[0]
    with pytest.raises(redis.exceptions.ReadOnlyError):  # the old master's address serves on, as a replica
        old_client.xadd("jobs", {"n": "x"})


def test_master_for_and_slave_for_follow_a_failover(sentinel):
    _seed(sentinel.master.server)
    master = sentinel.master_for(decode_responses=True)
    replica = sentinel.slave_for(decode_responses=True)
    assert master.xadd("jobs", {"n": "3"}, id="3-1") == "3-1"
    assert replica.xlen("jobs") == 3
    with pytest.raises(redis.exceptions.ReadOnlyError):
        replica.xadd("jobs", {"n": "4"})
    sentinel.failover(sentinel.replicas[0])
    # the hung-up connection is replaced at checkout, after asking the sentinel again: the new master
    assert master.xack("jobs", "workers", "1-1") == 1
    assert master.connection_pool.get_master_address() == ("127.0.0.1", 16380)
    assert master.xinfo_groups("jobs")[0]["pending"] == 0


def test_a_master_connection_that_lands_on_a_replica_gets_readonly_and_asks_again(sentinel, monkeypatch):
    """A sentinel that has not seen the failover yet names a replica: READONLY there is redis-py's cue to drop the
    connection (ConnectionError "The previous master is now a slave") and ask the sentinels again."""
    master = sentinel.master_for()
    pool = master.connection_pool
    real = pool.proxy.get_master_address
    stale = iter([(sentinel.replicas[0].host, sentinel.replicas[0].port)])
    monkeypatch.setattr(pool.proxy, "get_master_address", lambda: next(stale, None) or real())
    with pytest.raises(redis.exceptions.ConnectionError, match="The previous master is now a slave"):
        master.set("k", "1")
    assert master.set("k", "1") and master.get("k") == b"1"
    assert sentinel.replicas[0].server.client().get("k") == b"1"  # the same dataset, read on the replica


def test_code_under_patch_builds_its_own_sentinel_clients():
    with patch_redis(version="7.0") as network:
        deployment = FakeSentinel(network=network)
        app = Sentinel([("localhost", 26379)], socket_timeout=1)
        assert app.discover_master("mymaster") == ("127.0.0.1", 6379)
        assert app.discover_slaves("mymaster") == [("127.0.0.1", 6380)]
        master = app.master_for("mymaster")
        master.xadd("orders", {"sku": "A"}, id="1-1")
        assert app.slave_for("mymaster").xrange("orders") == [(b"1-1", {b"sku": b"A"})]
        deployment.failover()
        assert master.xadd("orders", {"sku": "B"}, id="2-1") == b"2-1"
        assert network.server_for("redis://127.0.0.1:6380").client().xlen("orders") == 2
        deployment.close()


def test_asyncio_sentinel_clients_follow_a_failover(sentinel):
    """As against a real deployment (test_sentinel_oracle.py's asyncio twin): until the old master is converted
    the client's connection there still works (it is still a master); the conversion, 10 s later on the clock,
    hangs it up; the next command reconnects at checkout, asks the sentinel and reaches the new master. A read
    blocked on the old master at that moment retries (RETRY_ASKS_SENTINEL): redis-py < 6.1 asks the sentinel and blocks again on the new
    master; 6.1 on reconnects to the old address, now a replica, where XREADGROUP is a write (READONLY →
    ConnectionError "The previous master is now a slave")."""
    async def main():
        master = sentinel.async_master_for(**async_failover_retry())
        waiter = sentinel.async_master_for(**async_failover_retry())
        replica = sentinel.async_slave_for()
        try:
            await master.xadd("jobs", {"n": "1"}, id="1-1")
            await master.xgroup_create("jobs", "g", id="0")
            await master.xreadgroup("g", "c", {"jobs": ">"})
            assert await replica.xlen("jobs") == 1
            with pytest.raises(redis.exceptions.ReadOnlyError):
                await replica.xack("jobs", "g", "1-1")
            blocked = asyncio.ensure_future(waiter.xreadgroup("g", "w", {"jobs": ">"}, block=0))
            await asyncio.to_thread(sentinel.master.server.wait_until_blocked, 1)
            old = sentinel.master
            sentinel.failover()
            assert sentinel.master_address != (old.host, old.port)
            # not converted yet: the old master still answers, as a master, on the connection the client has
            assert (await master.execute_command("ROLE"))[0] == b"master"
            assert [c.port for c in master.connection_pool._available_connections] == [old.port]
            assert await master.xpending("jobs", "g") == {"pending": 1, "min": b"1-1", "max": b"1-1",
                                                           "consumers": [{"name": b"c", "pending": 1}]}
            assert not blocked.done()
            sentinel.group.owner.clock.advance(sentinel.conversion_delay_ms())  # +convert-to-slave
            if RETRY_ASKS_SENTINEL:
                await asyncio.to_thread(sentinel.master.server.wait_until_blocked, 1)  # retried on the new master
                assert not blocked.done()
                assert await sentinel.async_master_for().xadd("jobs", {"n": "2"}, id="2-1") == b"2-1"
                assert await asyncio.wait_for(blocked, 5) == [[b"jobs", [(b"2-1", {b"n": b"2"})]]]
            else:
                with pytest.raises(redis.exceptions.ConnectionError, match="The previous master is now a slave"):
                    await asyncio.wait_for(blocked, 5)
            assert await master.xack("jobs", "g", "1-1") == 1  # reconnected at checkout: the new master
            assert [c.port for c in master.connection_pool._available_connections] == [sentinel.master.port]
        finally:
            await aclose(master)
            await aclose(waiter)
            await aclose(replica)

    asyncio.run(main())


def _events(pubsub):
    out = []
    try:
        while (message := pubsub.get_message(timeout=0.2)) is not None:  # real-time: messages already queued
            out.append((message["channel"], message["data"]))
    except redis.exceptions.ConnectionError:  # the sentinel exited (a simulated crash) after these
        pass
    return out


def test_failover_publishes_the_sentinel_events(sentinel):
    """The events of a forced failover (compared with a real sentinel's in test_sentinel_oracle), the other
    replicas' reconfiguration, then the old master's conversion; SENTINEL FAILOVER publishes the same."""
    watcher = sentinel.server.client().pubsub()
    watcher.psubscribe("*")
    assert watcher.get_message(timeout=1)["type"] == "psubscribe"
    sentinel.failover(sentinel.replicas[0])
    events = _events(watcher)
    assert events[-1] == (b"-role-change", b"slave 127.0.0.1:16379 127.0.0.1 16379 @ mymaster 127.0.0.1 16380 "
                                           b"new reported role is master")  # the old master, not converted yet
    sentinel.group.owner.clock.advance(sentinel.conversion_delay_ms())
    events += _events(watcher)
    channels = [c for c, _ in events]
    assert channels[:2] == [b"+new-epoch", b"+try-failover"] and events[0][1] == b"1"
    reconf = [m for c, m in events if c.startswith(b"+slave-reconf-")]
    assert reconf == [b"slave 127.0.0.1:16381 127.0.0.1 16381 @ mymaster 127.0.0.1 16379"] * 3
    assert (b"+switch-master", b"mymaster 127.0.0.1 16379 127.0.0.1 16380") in events
    assert [m for c, m in events if c == b"+slave"] == [b"slave 127.0.0.1:16381 127.0.0.1 16381 @ mymaster 127.0.0.1 16380",
                                                       b"slave 127.0.0.1:16379 127.0.0.1 16379 @ mymaster 127.0.0.1 16380"]
    assert events[-1] == (b"+convert-to-slave", b"slave 127.0.0.1:16379 127.0.0.1 16379 @ mymaster 127.0.0.1 16380")
    sentinel.group.owner.clock.advance(10_000)  # the sentinel's next INFO of it
    assert _events(watcher) == [(b"+role-change", b"slave 127.0.0.1:16379 127.0.0.1 16379 @ mymaster 127.0.0.1 16380 "
                                                  b"new reported role is slave")]
    assert raw(sentinel.server, "SENTINEL", "FAILOVER", "mymaster") == b"OK"
    again = _events(watcher)
    assert again[0] == (b"+new-epoch", b"2") and len(again) == len(events) - 1
    assert raw(sentinel.server, "SENTINEL", "FAILOVER", "mymaster") == b"OK"  # before that one's conversion:
    third = _events(watcher)  # the old master waiting for it is converted first
    assert [c for c, _ in third[:2]] == [b"+convert-to-slave", b"+new-epoch"]
    watcher.close()


def test_a_converted_old_master_is_seen_as_a_replica_at_the_sentinels_next_info(sentinel):
    """SENTINEL REPLICAS shows an instance's role and link as its last INFO reported them (sentinel.c
    sentinelRefreshInstanceInfo): right after the conversion the old master still reports the master role, linked
    to nobody; the sentinel's next INFO of it, one INFO-PERIOD later (its +role-change), shows the replica, linked.
    (A real sentinel's moment between the two is too short to compare in test_sentinel_oracle.py: it waits for the
    INFO there.)"""
    clock = sentinel.group.owner.clock

    def old_master():
        rows = [dict(zip(r[::2], r[1::2])) for r in raw(sentinel.server, "SENTINEL", "REPLICAS", "mymaster")]
        (row,) = [r for r in rows if r[b"port"] == b"16379"]
        return [row[k] for k in (b"role-reported", b"master-link-status", b"master-host", b"master-port")]

    sentinel.failover(sentinel.replicas[0])
    assert old_master() == [b"master", b"err", b"?", b"0"]
    clock.advance(sentinel.conversion_delay_ms())  # +convert-to-slave: SLAVEOF sent, no INFO of it yet
    assert sentinel.group.node("127.0.0.1:16379").is_replica
    assert old_master() == [b"master", b"err", b"?", b"0"]
    clock.advance(sentinel.settings.debug["INFO-PERIOD"] - 1)
    assert old_master()[0] == b"master"
    clock.advance(1)  # the next INFO: +role-change
    assert old_master() == [b"slave", b"ok", b"127.0.0.1", b"16380"]


def test_simulated_crash_after_election_stops_the_failover_and_the_sentinel(sentinel):
    assert raw(sentinel.server, "SENTINEL", "SIMULATE-FAILURE", "crash-after-election") == b"OK"
    assert sentinel.server.client().info("sentinel")["sentinel_simulate_failure_flags"] == 1
    assert err(raw(sentinel.server, "SENTINEL", "SIMULATE-FAILURE", "crash-after-promotion")).startswith(
        "ERR fake-redis-streams: ")
    watcher = sentinel.server.client().pubsub()
    watcher.psubscribe("*")
    watcher.get_message(timeout=1)
    old = sentinel.master
    assert raw(sentinel.server, "SENTINEL", "FAILOVER", "mymaster") == b"OK"
    assert [c for c, _ in _events(watcher)] == [b"+new-epoch", b"+try-failover"]  # then the hang-up
    assert sentinel.master is old and sentinel.crashed
    for _ in range(50):  # the crash thread takes the sentinel down as soon as FAILOVER's reply is out
        if not sentinel.server.connected:
            break
        threading.Event().wait(0.02)  # real-time: bounded wait for the sentinel's crash thread
    with pytest.raises(redis.sentinel.MasterNotFoundError):
        sentinel.sentinel_client().discover_master("mymaster")


def test_a_subscriber_waiting_for_a_message_reads_the_crash_at_once(sentinel):
    """A sentinel that exits (SIMULATE-FAILURE crash-after-election) closes its clients' sockets: a subscriber
    waiting in get_message reads the events published before the exit, then the hang-up at once (the kernel's FIN),
    not at the end of its timeout; reconnecting is refused as by a port nobody listens on."""
    assert raw(sentinel.server, "SENTINEL", "SIMULATE-FAILURE", "crash-after-election") == b"OK"
    watcher = sentinel.server.client().pubsub()
    watcher.psubscribe("*")
    assert watcher.get_message(timeout=1)["type"] == "psubscribe"
    seen: list = []

    def listen():
        try:
            while True:
                message = watcher.get_message(timeout=5)  # real-time: bounded; the hang-up ends it far sooner
                if message is not None:
                    seen.append(message["channel"])
        except redis.ConnectionError as exc:
            seen.append(str(exc))

    thread = threading.Thread(target=listen)
    thread.start()
    threading.Event().wait(0.1)  # real-time: the listener is waiting in get_message
    started = time.monotonic()
    assert raw(sentinel.server, "SENTINEL", "FAILOVER", "mymaster") == b"OK"
    thread.join(5)  # real-time: bounded
    assert not thread.is_alive() and time.monotonic() - started < 1.0
    assert seen[:2] == [b"+new-epoch", b"+try-failover"]
    assert seen[2].startswith("Error 111 connecting to ") and seen[2].endswith(". Connection refused.")
    watcher.close()


def test_a_hung_up_subscriber_reads_what_was_sent_before_the_hang_up():
    """The messages a server sent before it hung up are read first, then the hang-up (a real socket's buffered
    bytes, then its EOF): can_read on a killed connection with replies queued is True."""
    from fake_streams import FakeStreamsServer
    from fake_streams._fakeredis.replica import kill_clients

    server = FakeStreamsServer()
    watcher = server.client().pubsub()
    watcher.psubscribe("*")
    assert watcher.get_message(timeout=1)["type"] == "psubscribe"
    publisher = server.client()
    publisher.publish("a", "1")
    publisher.publish("b", "2")
    assert watcher.get_message(timeout=1)["channel"] == b"a"
    kill_clients(server)
    assert watcher.get_message(timeout=1)["channel"] == b"b"
    with pytest.raises(redis.ConnectionError, match="Connection closed by server"):
        watcher.parse_response(block=False, timeout=1)
    watcher.close()
    server.close()


def test_sentinel_set_changes_what_master_shows(sentinel):
    assert raw(sentinel.server, "SENTINEL", "SET", "mymaster", "quorum", "3", "failover-timeout", "1000") == b"OK"
    master = raw(sentinel.server, "SENTINEL", "MASTER", "mymaster", protocol=3)
    assert (master[b"quorum"], master[b"failover-timeout"]) == (b"3", b"1000")
    assert err(raw(sentinel.server, "SENTINEL", "CKQUORUM", "mymaster")).startswith("NOQUORUM 1 usable Sentinels.")
    assert err(raw(sentinel.server, "SENTINEL", "SET", "mymaster", "auth-pass", "x")).startswith("ERR fake-redis-")
    assert err(raw(sentinel.server, "SENTINEL", "REMOVE", "mymaster")).startswith("ERR fake-redis-streams: ")


def test_failover_picks_by_priority_and_never_a_priority_0_replica(sentinel):
    first, second = sentinel.replicas
    first.priority = 0
    assert sentinel.best_replica() is second
    second.priority = 0
    assert err(raw(sentinel.server, "SENTINEL", "FAILOVER", "mymaster")) == "NOGOODSLAVE No suitable replica to promote"
    with pytest.raises(ValueError, match="no replica to promote"):
        sentinel.failover()
    assert sentinel.failover(first) is first  # the helper may still promote it by name
    assert raw(sentinel.server, "SENTINEL", "REPLICAS", "mymaster", protocol=3)[1][b"slave-priority"] == b"0"


def test_client_list_on_a_node_shows_that_nodes_clients(sentinel):
    """The nodes share one dataset, not their clients: CLIENT LIST on each lists the connections made to it."""
    on_master = sentinel.master.server.client(client_name="on-master")
    on_replica = sentinel.replicas[0].server.client(client_name="on-replica")
    assert on_master.ping() and on_replica.ping()
    assert [c["name"] for c in on_master.client_list()] == ["on-master"]
    assert [c["name"] for c in on_replica.client_list()] == ["on-replica"]
    assert sentinel.replicas[1].server.client().client_list()[0]["name"] == ""
