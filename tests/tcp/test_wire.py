"""The TCP server's wire: the reply encoder, nil-array shapes, and raw bytes from a served fake.

Byte-for-byte comparisons with a real redis-server are in test_real_wire.py.
"""

from __future__ import annotations

import socket
import threading

import pytest
import redis

from fake_streams.reply import Status
from fake_streams.tcp import NIL_ARRAY, ErrorReply, encode, serve, shape_nil_arrays

from .conftest import WAIT_S, blocked_clients, resp_command, wait_until


# ------------------------------------------------------------------------------------------- encoder
@pytest.mark.parametrize("value, resp2, resp3", [
    (b"1-0", b"$3\r\n1-0\r\n", b"$3\r\n1-0\r\n"),
    (Status(b"OK"), b"+OK\r\n", b"+OK\r\n"),
    (ErrorReply(b"ERR boom"), b"-ERR boom\r\n", b"-ERR boom\r\n"),
    (None, b"$-1\r\n", b"_\r\n"),
    (NIL_ARRAY, b"*-1\r\n", b"_\r\n"),
    (7, b":7\r\n", b":7\r\n"),
    (2**64, b"$20\r\n18446744073709551616\r\n", b"(18446744073709551616\r\n"),
    (True, b":1\r\n", b"#t\r\n"),
    (1.5, b"$3\r\n1.5\r\n", b",1.5\r\n"),
    (float("inf"), b"$3\r\ninf\r\n", b",inf\r\n"),
    ([b"a", [Status(b"x"), None]], b"*2\r\n$1\r\na\r\n*2\r\n+x\r\n$-1\r\n", b"*2\r\n$1\r\na\r\n*2\r\n+x\r\n_\r\n"),
    ({b"k": 1}, b"*2\r\n$1\r\nk\r\n:1\r\n", b"%1\r\n$1\r\nk\r\n:1\r\n"),
    ({b"m"}, b"*1\r\n$1\r\nm\r\n", b"~1\r\n$1\r\nm\r\n"),
    (Status(b"a\r\nb"), b"+a  b\r\n", b"+a  b\r\n"),
])
def test_encode(value, resp2, resp3):
    assert encode(value, 2) == resp2
    assert encode(value, 3) == resp3


def test_encode_push():
    message = [b"message", b"ch", b"hi"]
    assert encode(message, 3, push=True) == b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"
    assert encode(message, 2, push=True) == b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"


@pytest.mark.parametrize("command, value, expected", [
    ([b"XREAD", b"STREAMS", b"s", b"0"], None, NIL_ARRAY),
    ([b"xreadgroup"], [[b"s", [[b"1-0", None], [b"2-0", [b"f", b"v"]]]]],
     [[b"s", [[b"1-0", NIL_ARRAY], [b"2-0", [b"f", b"v"]]]]]),
    ([b"XRANGE", b"s", b"-", b"+", b"COUNT", b"0"], None, NIL_ARRAY),
    ([b"XADD", b"s", b"NOMKSTREAM", b"*", b"f", b"v"], None, None),
    ([b"XPENDING", b"s", b"g"], [0, None, None, None], [0, None, None, NIL_ARRAY]),
    ([b"LPOP", b"l", b"2"], None, NIL_ARRAY),
    ([b"LPOP", b"l"], None, None),
    ([b"GET", b"k"], None, None),
    ([b"EXEC"], None, NIL_ARRAY),
    ([b"GEOPOS", b"g", b"a", b"b"], [None, [b"1", b"2"]], [NIL_ARRAY, [b"1", b"2"]]),
])
def test_shape_nil_arrays(command, value, expected):
    assert shape_nil_arrays(command, value) == expected


def test_shape_nil_arrays_exec_follows_the_queued_commands():
    queued = [[b"XREAD", b"STREAMS", b"s", b"0"], [b"GET", b"k"]]
    assert shape_nil_arrays([b"EXEC"], [None, None], queued) == [NIL_ARRAY, None]


# ----------------------------------------------------------------------------------- served fake, raw
def test_raw_replies(served, raw):
    c = raw(served.port)
    assert c.call("XADD", "s", "1-0", "f", "v") == b"$3\r\n1-0\r\n"  # bulk, not +1-0
    assert c.call("TYPE", "s") == b"+stream\r\n"
    assert c.call("XRANGE", "s", "-", "+") == b"*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
    assert c.call("XREAD", "STREAMS", "s", "1-0") == b"*-1\r\n"
    assert c.call("XADD", "nope", "NOMKSTREAM", "*", "f", "v") == b"$-1\r\n"
    assert c.call("XADD", "s", "1-0", "f", "v") == (
        b"-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n")
    assert c.call("SET", "k", "v") == b"+OK\r\n"
    assert c.call("GET", "k") == b"$1\r\nv\r\n"
    assert c.call("MULTI") == b"+OK\r\n"
    assert c.call("XREAD", "STREAMS", "s", "1-0") == b"+QUEUED\r\n"
    assert c.call("GET", "missing") == b"+QUEUED\r\n"
    assert c.call("EXEC") == b"*2\r\n*-1\r\n$-1\r\n"
    assert c.call("HELLO", "3").startswith(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.4.1\r\n")
    assert c.call("XREAD", "STREAMS", "s", "1-0") == b"_\r\n"
    assert c.call("XREAD", "STREAMS", "s", "0") == b"%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
    assert c.call("XGROUP", "CREATE", "s", "g", "$") == b"+OK\r\n"
    assert c.call("XPENDING", "s", "g") == b"*4\r\n:0\r\n_\r\n_\r\n_\r\n"
    assert c.call("HELLO", "2").startswith(b"*14\r\n")
    assert c.call("XPENDING", "s", "g") == b"*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n"
    assert c.call("XFOO") == b"-ERR unknown command 'XFOO', with args beginning with: \r\n"
    assert c.call("QUIT") == b"+OK\r\n"
    assert c.closed_by_peer()


def test_pipelined_requests_in_one_packet(served, raw):
    c = raw(served.port)
    c.sock.sendall(resp_command("XADD", "s", "1-0", "a", "1") + resp_command("XLEN", "s") + resp_command("PING"))
    assert [c.read(), c.read(), c.read()] == [b"$3\r\n1-0\r\n", b":1\r\n", b"+PONG\r\n"]


def test_reply_before_a_blocking_command_is_written_at_once(served, raw, make_client):
    """XADD + XREAD BLOCK 0 in one packet: XADD's reply arrives while the XREAD is still blocked."""
    c = raw(served.port)
    c.sock.sendall(resp_command("XADD", "s", "1-0", "a", "1") + resp_command("XREAD", "BLOCK", "0", "STREAMS", "s", "$"))
    assert c.read() == b"$3\r\n1-0\r\n"
    wait_until(lambda: blocked_clients(served.server) == 1, "the XREAD to block")
    make_client().xadd("s", {"b": "2"}, id="2-0")
    assert c.read() == b"*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n"


def test_requests_queued_behind_a_blocking_read_run_after_it(served, raw, make_client):
    c = raw(served.port)
    c.sock.sendall(resp_command("XREAD", "BLOCK", "0", "STREAMS", "s", "$") + resp_command("XLEN", "s"))
    wait_until(lambda: blocked_clients(served.server) == 1, "the XREAD to block")  # real-time: server thread
    make_client().xadd("s", {"b": "2"}, id="2-0")
    assert c.read().startswith(b"*1\r\n*2\r\n$1\r\ns\r\n")
    assert c.read() == b":1\r\n"


def test_pubsub_push_under_resp3(served, raw, make_client):
    c = raw(served.port)
    c.call("HELLO", "3")
    assert c.call("SUBSCRIBE", "news") == b">3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n"
    assert make_client().publish("news", "hi") == 1
    assert c.read() == b">3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n"


def test_pubsub_resp2(served, raw, make_client):
    c = raw(served.port)
    assert c.call("SUBSCRIBE", "news") == b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n"
    make_client().publish("news", "hi")
    assert c.read() == b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n"


def test_inline_and_malformed_requests(served, raw):
    """Inline commands work (redis-cli, PING_INLINE); a malformed request gets the protocol error and a close
    (every case against a real server: test_protocol.py)."""
    c = raw(served.port)
    c.sock.sendall(b"PING\r\n")
    assert c.read() == b"+PONG\r\n"
    c.sock.sendall(b"*1\r\n$-5\r\n")
    assert c.read() == b"-ERR Protocol error: invalid bulk length\r\n"
    assert c.closed_by_peer()
    assert raw(served.port).call("PING") == b"+PONG\r\n"


# ------------------------------------------------------------------------------------- shared state
def test_tcp_and_in_process_clients_share_one_keyspace(served, make_client):
    local = make_client(decode_responses=True)
    remote = redis.Redis.from_url(served.url, decode_responses=True)
    try:
        local.xadd("s", {"from": "local"}, id="1-0")
        remote.xadd("s", {"from": "tcp"}, id="2-0")
        remote.set("plain", "x")
        assert local.xrange("s") == remote.xrange("s") == [("1-0", {"from": "local"}), ("2-0", {"from": "tcp"})]
        assert local.type("plain") == "string" and remote.type("s") == "stream"
        assert local.info("clients")["connected_clients"] == 2
    finally:
        remote.close()


def test_serve_url_and_repr(server):
    with serve(server, port=0) as handle:
        assert handle.url == f"redis://127.0.0.1:{handle.port}/0"
        assert "closed=False" in repr(handle)
    assert handle.closed
    with pytest.raises(OSError):  # the listening socket is gone
        socket.create_connection(("127.0.0.1", handle.port), timeout=WAIT_S)
    handle.close()  # idempotent


def test_serve_refuses_a_closed_server(server):
    server.close()
    with pytest.raises(ValueError):
        serve(server)


def test_many_clients(served, make_client):
    errors = []

    def worker(n: int) -> None:
        try:
            client = redis.Redis.from_url(served.url)
            for i in range(20):
                client.xadd("s", {"w": n, "i": i})
            client.close()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    assert not errors
    assert make_client().xlen("s") == 160
