"""redis-py's connection handshake (CLIENT SETINFO LIB-NAME / LIB-VER) served directly (_fakeredis/handshake.py)
leaves exactly what the dispatch path leaves.

Each scenario connects the same way to two servers, one with the direct path and one with ``server.fast_path =
False`` (every command through fakeredis's dispatch), and compares every observable of the handshake: the replies
(redis-py's ``read_response`` of each command, the HELLO map), the connection's CLIENT INFO line (lib-name,
lib-ver, name, resp, cmd = its last command), INFO commandstats / errorstats, the protocol of a later non-stream
reply. The direct side must really have served it (counted), else the comparison would prove nothing.
"""

from __future__ import annotations

import re

import pytest
import redis

from fake_streams import FakeStreamsServer
from fake_streams._fakeredis import fastpath, handshake
from fake_streams.clock import ManualClock
from fake_streams.connection import FakeStreamsConnection

PROFILES = ["7.0", "7.2", "7.4", "valkey-8.0", "valkey-9.1"]
#: CLIENT INFO fields that differ between two servers for reasons of their own (ids, clocks, memory estimates)
_VOLATILE = {"id", "addr", "laddr", "age", "idle", "fd", "tot-net-in", "tot-net-out", "qbuf", "qbuf-free",
             "argv-mem", "tot-mem", "omem", "obl", "rbs", "rbp"}


@pytest.fixture
def served(monkeypatch):
    """The commands the direct handshake answered: "HELLO", the CLIENT SETINFO field names."""
    if not fastpath.ENABLED:
        pytest.skip("the direct path is switched off (FAKE_STREAMS_FAST_PATH=0)")
    names: list = []
    serve, greet = handshake.setinfo, handshake.hello3
    monkeypatch.setattr(handshake, "setinfo", lambda conn, args, usable: serve(conn, args, usable) and not names.append(args[2]))
    monkeypatch.setattr(handshake, "hello3", lambda conn, args, usable: greet(conn, args, usable) and not names.append("HELLO"))
    return names


def _observe(server, **kwargs):
    """Open a connection (redis-py's handshake), then read what it left behind, through the dispatch path."""
    conn = FakeStreamsConnection.bind(server)(**kwargs)
    conn.connect()
    seen = {"hello": _plain(getattr(conn, "handshake_metadata", None))}
    server.fast_path = False  # the observations themselves go through fakeredis on both servers
    observer = FakeStreamsConnection.bind(server)()
    observer.connect()
    observer.send_command("CLIENT", "LIST")
    first_line = observer.read_response().decode().splitlines()[0]  # connection order: ``conn``'s line first
    observer.disconnect()
    seen["listed"] = {k: v for k, v in (item.split("=", 1) for item in first_line.split()) if k not in _VOLATILE}
    conn.send_command("CLIENT", "INFO")
    line = conn.read_response()
    line = line.decode() if isinstance(line, bytes) else str(line)
    fields = dict(item.split("=", 1) for item in line.split())
    seen["client"] = {k: v for k, v in fields.items() if k not in _VOLATILE}
    conn.send_command("INFO", "commandstats")
    stats = conn.read_response()
    stats = stats.decode() if isinstance(stats, bytes) else str(stats)
    seen["commandstats"] = sorted(re.sub(r"usec=\d+,usec_per_call=[\d.]+", "usec", line)
                                  for line in stats.splitlines() if line.startswith("cmdstat_client|setinfo"))
    conn.send_command("INFO", "errorstats")
    seen["errorstats"] = conn.read_response()
    conn.send_command("HGETALL", "missing")  # RESP3: a map ({}), RESP2: an array ([])
    seen["later reply"] = conn.read_response()
    conn.disconnect()
    return seen


def _plain(value):
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k not in (b"id", "id")}
    return value


def _both(version, **kwargs):
    out = []
    for fast in (True, False):
        server = FakeStreamsServer(clock=ManualClock(1_000_000), version=version)
        server.fast_path = fast
        out.append(_observe(server, **kwargs))
    return out


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("version", PROFILES)
def test_handshake_same_both_ways(served, version, protocol):
    direct, dispatched = _both(version, protocol=protocol)
    assert direct == dispatched
    hello = ["HELLO"] if protocol == 3 else []
    if version == "7.0":  # no CLIENT SETINFO before 7.2: an unknown subcommand (the dispatch path answers it)
        assert served == hello
        assert "lib-name" not in direct["client"]
    else:
        assert served == hello + ["LIB-NAME", "LIB-VER"]
        assert direct["client"]["lib-name"] == "redis-py" and direct["client"]["lib-ver"] == redis.__version__
        assert direct["commandstats"] and "calls=4," in direct["commandstats"][0]  # with the observer's
        assert direct["listed"]["cmd"] == "client|setinfo" and direct["listed"]["lib-name"] == "redis-py"
    assert direct["client"]["resp"] == str(protocol)


def test_handshake_after_a_closed_connection(served):
    """A connection closed before leaves fakeredis's clean-up to the next command: done by the direct handshake too."""
    results = []
    for fast in (True, False):
        server = FakeStreamsServer(clock=ManualClock(1_000_000))
        server.fast_path = fast
        first = FakeStreamsConnection.bind(server)()
        first.connect()
        first.send_command("CLIENT", "SETNAME", "gone")
        first.read_response()
        first.disconnect()
        server.fast_path = fast
        seen = _observe(server)
        server.fast_path = False
        results.append((seen, len(server.backend.fake.sockets), len(server.backend.fake.closed_sockets)))
    assert results[0] == results[1]
    assert results[0][1:] == (0, 1)  # the first connection cleaned out before the handshake; the second's waits
    assert served.count("LIB-NAME") == 2  # the first connection's and the second's, both direct


@pytest.mark.parametrize("kwargs", [
    {"lib_name": "my lib", "lib_version": "1.0"},  # a space: the server's own error, on the dispatch path
    {"lib_name": "lib\nx", "lib_version": "1.0"},
    {"lib_name": "lib", "lib_version": "ver\u00e9"},
    {"lib_name": "x" * 200, "lib_version": "1.0"},
    {"client_name": "worker-1", "protocol": 3},
    {"username": "default", "password": "pw", "protocol": 3},
])
def test_unusual_handshakes_same_both_ways(served, kwargs):
    kwargs = dict(kwargs)
    if "lib_name" in kwargs:
        try:
            from redis.driver_info import DriverInfo
        except ImportError:
            pass
        else:  # redis-py >= 7.1 takes driver_info (lib_name / lib_version are deprecated there)
            kwargs = {"driver_info": DriverInfo(name=kwargs.pop("lib_name"), lib_version=kwargs.pop("lib_version"))}
    outcomes = []
    for fast in (True, False):
        server = FakeStreamsServer(clock=ManualClock(1_000_000))
        if "password" in kwargs:
            server.fast_path = False
            server.client().config_set("requirepass", "pw")
        server.fast_path = fast
        try:
            outcomes.append(_observe(server, **kwargs))
        except Exception as exc:
            outcomes.append((type(exc), str(exc)))
    assert outcomes[0] == outcomes[1]


def test_setinfo_direct_only_in_plain_states(served):
    """MULTI, a fault hook, a sentinel/cluster role: not served directly (the dispatch path decides)."""
    server = FakeStreamsServer(clock=ManualClock(1_000_000))
    conn = FakeStreamsConnection.bind(server)()
    conn.connect()
    handshake_served = (["HELLO"] if conn.protocol == 3 else []) + ["LIB-NAME", "LIB-VER"]  # redis-py 8: RESP3
    assert served == handshake_served
    conn.send_command("MULTI")
    assert conn.read_response() == b"OK"
    conn.send_command("CLIENT", "SETINFO", "LIB-NAME", "again")
    assert conn.read_response() == b"QUEUED"
    conn.send_command("EXEC")
    assert conn.read_response() == [b"OK"]
    assert served == handshake_served
    conn.disconnect()


@pytest.mark.parametrize("protocol", [2, 3])
def test_async_handshake_same_both_ways(served, protocol):
    import asyncio

    from fake_streams.connection import FakeStreamsAsyncConnection

    async def scenario(server):
        conn = FakeStreamsAsyncConnection.bind(server)(protocol=protocol)
        await conn.connect()
        server.fast_path = False
        observer = FakeStreamsConnection.bind(server)()
        observer.connect()
        observer.send_command("CLIENT", "LIST")
        first = observer.read_response().decode().splitlines()[0]
        observer.send_command("INFO", "commandstats")
        stats = [line.split(",usec=")[0] for line in observer.read_response().decode().splitlines()
                 if line.startswith("cmdstat_client")]
        observer.disconnect()
        await conn.send_command("HGETALL", "missing")
        later = await conn.read_response()
        await conn.disconnect()
        return {k: v for k, v in (item.split("=", 1) for item in first.split()) if k not in _VOLATILE}, stats, later

    outcomes = []
    for fast in (True, False):
        server = FakeStreamsServer(clock=ManualClock(1_000_000))
        server.fast_path = fast
        outcomes.append(asyncio.run(scenario(server)))
    assert outcomes[0] == outcomes[1]
    assert served == (["HELLO"] if protocol == 3 else []) + ["LIB-NAME", "LIB-VER"]
    assert outcomes[0][0]["cmd"] == "client|setinfo" and outcomes[0][0]["resp"] == str(protocol)
