"""redis-py's own connection handshake (HELLO on RESP3, CLIENT SETINFO LIB-NAME / LIB-VER, CLIENT SETNAME), compared
with the real servers: what the new connection reports (CLIENT LIST fields: name, lib-name, lib-ver, resp, its
last command, …), the HELLO map, INFO commandstats and errorstats, and the protocol of its later replies.

The fake serves the plain CLIENT SETINFO of the handshake on its direct path (fake_streams/_fakeredis/handshake.py);
tests/unit/test_handshake.py checks that it leaves what the dispatch path leaves, this file that both leave what a
server leaves (on 7.0, which has no CLIENT SETINFO, redis-py swallows the unknown-subcommand errors).
"""

from __future__ import annotations

import pytest
import redis

from .oracles import parse_info, protocol_kwargs

#: CLIENT LIST fields that differ between any two servers (addresses, clocks, memory, traffic)
_COMPARED = ("name", "flags", "db", "sub", "psub", "ssub", "multi", "watch", "cmd", "user", "resp", "lib-name",
             "lib-ver", "redir")


def _fields(line: str) -> dict:
    return dict(item.split("=", 1) for item in line.split() if "=" in item)


def _stats(side) -> dict:
    """INFO commandstats / errorstats as counters (calls, rejected_calls, failed_calls, count), read on the side's
    own connection: the real server's are not reset between tests, so the handshake is compared as a difference."""
    info = {**parse_info(side("INFO", "commandstats")), **parse_info(side("INFO", "errorstats"))}
    out = {}
    for key, value in info.items():
        for item in value.split(","):
            name, _, number = item.partition("=")
            if name in ("calls", "rejected_calls", "failed_calls", "count"):
                out[f"{key}.{name}"] = int(number)
    return out


def _handshake(pair, side_name: str, kwargs: dict) -> dict:
    side = getattr(pair, side_name)
    before = _stats(side)
    if side_name == "real":
        conn = redis.Connection(host="127.0.0.1", port=pair.oracle.port, socket_timeout=10, **kwargs)
    else:
        conn = pair._fake_connection_class(server=pair.server, **kwargs)
    try:
        conn.connect()
        hello = getattr(conn, "handshake_metadata", None)
        listing = side("CLIENT", "LIST").decode()
        conn.send_command("CLIENT", "ID")
        ident = str(conn.read_response())
        line = next(entry for entry in listing.splitlines() if _fields(entry).get("id") == ident)
        conn.send_command("HGETALL", "nothing")  # a later non-stream reply: {} on RESP3, [] on RESP2
        later = conn.read_response()
    finally:
        conn.disconnect()
    after = _stats(side)
    fields = _fields(line)
    return {
        "client": {k: fields.get(k) for k in _COMPARED},
        "hello": None if hello is None else {k: v for k, v in hello.items() if k not in (b"id", b"version", b"server")},
        "stats": {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)},
        "later": type(later).__name__,
    }


@pytest.mark.parametrize("extra", [{}, {"client_name": "worker-1"}], ids=["plain", "setname"])
def test_redis_py_handshake_leaves_what_a_server_leaves(pair, extra):
    kwargs = {**protocol_kwargs(pair.protocol), **extra}
    real = _handshake(pair, "real", kwargs)
    if pair.fake is None:
        return
    fake = _handshake(pair, "fake", kwargs)
    if pair.oracle.kind == "valkey" and pair.stands_in:  # Valkey 9.1.2 standing in for 7.4 / valkey-8.0
        for side in (real, fake):
            side["client"].pop("watch", None)
            side["hello"] = None if side["hello"] is None else {k: v for k, v in side["hello"].items()
                                                              if k != b"modules"}
    assert fake == real
