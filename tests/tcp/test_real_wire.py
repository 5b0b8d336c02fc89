"""Raw bytes on the wire: the served fake (profile 7.0) against redis-server 7.0.15, command by command.

Both sides get the same commands on plain sockets; each reply's bytes must be equal (HELLO's client
``id`` aside). Explicit IDs keep the replies free of time.
"""

from __future__ import annotations

import re

import pytest

from fake_streams import FakeStreamsServer, ManualClock
from fake_streams.tcp import serve

from .conftest import resp_command

pytestmark = pytest.mark.real

SCRIPT = [
    "XADD s 1-1 a b",
    "XADD s 2-0 a b c d",
    "XADD s 1-0 a b",                     # error
    "XADD nope NOMKSTREAM * a b",         # nil-bulk
    "XRANGE s - +",
    "XRANGE s - + COUNT 0",               # nil-array
    "XREVRANGE s + - COUNT 1",
    "XREAD STREAMS s 9-0",                # nil-array
    "XREAD COUNT 1 STREAMS s 0",
    "XLEN s",
    "XGROUP CREATE s g 0",
    "XGROUP CREATE s g 0",                # BUSYGROUP
    "XREADGROUP GROUP g c COUNT 1 STREAMS s >",
    "XDEL s 1-1",
    "XREADGROUP GROUP g c STREAMS s 0",   # deleted history entry: [id, nil-array]
    "XGROUP CREATE s g2 $",
    "XPENDING s g2",                      # empty summary: nil, nil, nil-array
    "XINFO STREAM s",
    "XINFO GROUPS s",
    "XINFO HELP",                         # status lines
    "XCLAIM s g c3 0 1-1 JUSTID",
    "XSETID s 5-0",
    "MULTI",
    "XREAD STREAMS s 9-0",
    "XLEN s",
    "EXEC",                               # [nil-array, int]
    "MULTI",
    "MULTI",                              # nested: an error, the transaction goes on
    "XREAD STREAMS s 9-0",
    "GET nokey",
    "EXEC",                               # [nil-array, nil-bulk] (the shapes survive the nested MULTI)
    "MULTI",
    "MULTI",
    "DISCARD",
    "DISCARD",                            # DISCARD without MULTI
    "XFOO bar",
    "PING",
    "ping hello",
    "PiNg a b",                           # wrong number of arguments
    "MULTI",
    "PING",
    "PING x",
    "EXEC",
    "XGROUP FOO",
    "XADD s",
    "TYPE s",
    "GET s",                              # WRONGTYPE
    "XADD t 1-0 h w",
    "XREAD STREAMS s t s 0 0 0",          # a key named twice: two pairs for it (RESP2 and, below, RESP3)
    "XREADGROUP GROUP g c STREAMS s s 0 0",
    "HELLO 3",
    "XREAD STREAMS s t s 0 0 0",          # %3: the map repeats the key (F7)
    "XREAD STREAMS s t s 0 0 5-0",        # the repeated key's pairs differ
    "XREADGROUP GROUP g c STREAMS s s 0 0",
    "XREADGROUP GROUP g c STREAMS t t > 0",  # one served stream per pair: `>` then history
    "MULTI",
    "XREAD STREAMS s s 0 0",
    "EXEC",                               # repeated-key map inside EXEC
    "MULTI",
    "MULTI",
    "XREAD STREAMS s 9-0",
    "EXEC",                               # [_] under RESP3
    "PING",
    "PING hi",
    "XINFO STREAM s",
    "XINFO GROUPS s",
    "XREAD STREAMS s 9-0",
    "XREADGROUP GROUP g c STREAMS s 0",
    "XPENDING s g2",
    "XRANGE s - + COUNT 0",
    "XADD nope NOMKSTREAM * a b",
    "XINFO HELP",
    "XADD s 1-0 a b",
    "HELLO 2",
]


def _mask_client_id(reply: bytes) -> bytes:
    return re.sub(rb"\$2\r\nid\r\n:\d+\r\n", b"$2\r\nid\r\n:N\r\n", reply)


def test_raw_bytes_equal_a_real_server(real_redis, raw):
    real = real_redis()
    real.flushall()
    real_port = real.connection_pool.connection_kwargs["port"]
    fake = FakeStreamsServer(version="7.0", clock=ManualClock(1_700_000_000_000))
    handle = serve(fake)
    try:
        ours, theirs = raw(handle.port), raw(real_port)
        diffs = []
        for line in SCRIPT:
            args = line.split()
            a, b = _mask_client_id(ours.call(*args)), _mask_client_id(theirs.call(*args))
            if a != b:
                diffs.append(f"{line}\n  fake: {a!r}\n  real: {b!r}")
        assert not diffs, "\n".join(diffs)
    finally:
        handle.close()
        fake.close()
    assert not fake.internal_errors


@pytest.fixture
def ports(real_redis):
    """``{"fake": port, "real": port}``: a fresh served fake (profile 7.0) and the real server, flushed."""
    real = real_redis()
    real.flushall()
    real.config_resetstat()
    fake = FakeStreamsServer(version="7.0", clock=ManualClock(1_700_000_000_000))
    handle = serve(fake)
    yield {"fake": handle.port, "real": real.connection_pool.connection_kwargs["port"]}
    handle.close()
    fake.close()


@pytest.mark.parametrize("protocol", ["2", "3"])
def test_exec_aborted_by_watch_after_a_nested_multi(ports, raw, protocol):
    """EXEC of a transaction a WATCH aborted is the nil-array (``*-1``; ``_`` in RESP3), nested MULTI or not."""
    replies = {}
    for side, port in ports.items():
        client, other = raw(port), raw(port)
        client.call("HELLO", protocol)
        got = [client.call(*line.split()) for line in ("WATCH w", "MULTI", "MULTI", "XREAD STREAMS s 0")]
        other.call("SET", "w", "1")
        got.append(client.call("EXEC"))
        replies[side] = got
    assert replies["fake"] == replies["real"]
    assert replies["fake"][-1] == (b"*-1\r\n" if protocol == "2" else b"_\r\n")


PIPELINE = [
    "XADD p 5-0 a 1", "XADD p 5-1 a 2", "XADD p 3-0 a 3", "XADD p 6-0 a", "XADD p MAXLEN 2 7-0 a 4",
    "XADD p NOMKSTREAM 8-0 a 5", "XADD q 1-0 b 1", "XADD p 9-0 a 6", "XLEN p", "XADD p 10-0 a 7", "XRANGE p - +",
]


def test_pipelined_xadds_equal_a_real_server(ports, raw):
    """A pipeline of XADDs on one key runs as one batch on the fake: replies, errors and order as the server's."""
    replies = {}
    for side, port in ports.items():
        client = raw(port)
        client.call("XADD", "p", "1-0", "x", "y")  # the stream exists: the batch may take the run
        client.sock.sendall(b"".join(resp_command(*line.split()) for line in PIPELINE))
        replies[side] = [client.read() for _ in PIPELINE]
    assert replies["fake"] == replies["real"]


def test_client_reply_skip_and_ping_pipelined(ports, raw):
    got = []
    for port in ports.values():
        client = raw(port)
        client.sock.sendall(resp_command("CLIENT", "REPLY", "SKIP") + resp_command("PING", "skipped")
                            + resp_command("XADD", "r", "1-0", "a", "b") + resp_command("PING"))
        got.append([client.read(), client.read()])
    assert got[0] == got[1] == [b"$3\r\n1-0\r\n", b"+PONG\r\n"]


def test_commandstats_count_the_direct_path(ports, raw):
    """Stream commands and PING answered on the TCP direct path are counted by INFO as the server counts them."""
    counts = []
    for port in ports.values():
        c = raw(port)
        for line in ("XADD s 1-0 a b", "XADD s 2-0 a b", "XADD s 1-0 a b", "PING", "PING x", "XLEN s",
                     "XRANGE s - +"):
            c.call(*line.split())
        c.sock.sendall(b"".join(resp_command("XADD", "s", f"{i}-0", "a", "b") for i in range(3, 8)))
        assert [c.read() for _ in range(5)] == [b"$3\r\n%d-0\r\n" % i for i in range(3, 8)]  # one batch here
        info = c.call("INFO", "commandstats").decode()
        counts.append(sorted(re.findall(r"cmdstat_(xadd|ping|xlen|xrange):calls=(\d+),.*?"
                                        r"rejected_calls=(\d+),failed_calls=(\d+)", info)))
    assert counts[0] == counts[1]
    assert ("xadd", "8", "0", "1") in counts[0]


@pytest.mark.parametrize("protocol", ["2", "3"])
@pytest.mark.parametrize("command", ["INFO", "INFO server", "INFO keyspace", "CLIENT INFO"])
def test_report_replies_have_the_servers_reply_type(ports, raw, protocol, command):
    """INFO / CLIENT INFO are the server's ``addReplyVerbatim``: a bulk string in RESP2, a verbatim string (``=…txt:``)
    in RESP3 — the type byte and the ``txt:`` format as the real server sends them (the text itself differs)."""
    heads = {}
    for side, port in ports.items():
        client = raw(port)
        client.call("HELLO", protocol)
        reply = client.call(*command.split())
        body = reply[reply.index(b"\r\n") + 2:]
        heads[side] = (reply[:1], body[:4] if protocol == "3" else b"")  # RESP3: the "txt:" format
    assert heads["fake"] == heads["real"]
    assert heads["fake"][0] == (b"$" if protocol == "2" else b"=")
