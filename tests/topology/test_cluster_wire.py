"""``serve --cluster`` on the wire: the fake 3-master cluster served over TCP (:func:`serve_cluster`, profile "7.0")
against a real Redis 7.0.15 3-master cluster — the raw RESP2 / RESP3 bytes of the cluster commands (reply types
included: CLUSTER INFO / NODES are verbatim strings in RESP3) and of the redirections, after the same
normalisation (node ids, ports, epochs, pong times, gossip counters); then ``python -m fake_streams serve --cluster``
as a subprocess, followed by redis-py's RedisCluster and ``redis-cli -c``."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from typing import Any, Iterator

import pytest
from redis.cluster import RedisCluster

from fake_streams.topology.serving import serve_cluster
from tests.conformance.oracles import _find_redis_server, require_real
from tests.tcp.conftest import resp_command

from .real_cluster import RealCluster, normaliser, read_reply, wire_tree

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def pair() -> Iterator[Any]:
    binary, why = _find_redis_server()
    if binary is None:
        if require_real():
            pytest.fail(f"FAKE_STREAMS_REQUIRE_REAL is set: {why}")
        pytest.skip(why)
    real = RealCluster(3)
    fake = serve_cluster(3, version="7.0")
    try:
        yield real, fake
    finally:
        fake.close()
        real.stop()


def _wire(port: int, protocol: int, *argv: Any) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        if protocol == 3:
            sock.sendall(resp_command("HELLO", "3"))
            read_reply(sock)
        sock.sendall(resp_command(*argv))
        return read_reply(sock)


@pytest.mark.slow  # a second real 3-master cluster (~2 s to start); test_cluster_oracle.py compares the replies in process
@pytest.mark.parametrize("protocol", (2, 3), ids=lambda p: f"resp{p}")
@pytest.mark.parametrize("argv", [
    ("CLUSTER", "INFO"), ("CLUSTER", "NODES"), ("CLUSTER", "SLOTS"), ("CLUSTER", "MYID"), ("CLUSTER", "HELP"),
    ("CLUSTER", "KEYSLOT", "{user}1"), ("CLUSTER", "COUNTKEYSINSLOT", "5"), ("CLUSTER", "GETKEYSINSLOT", "5", "1"),
    ("CLUSTER", "nope"), ("READONLY",), ("ASKING",), ("GET", "foo"), ("XADD", "foo", "*", "f", "v"),
    ("MSET", "a", "1", "b", "2"), ("XREAD", "STREAMS", "a", "b", "0", "0"), ("SELECT", "1"),
], ids=lambda a: " ".join(a))
def test_wire_bytes(pair: Any, argv: tuple, protocol: int) -> None:
    # (INFO is left out: the fake answers it with a bulk string in RESP3 where the server sends a verbatim one —
    # INFO's module, not the cluster's)
    real, fake = pair
    norm_real = normaliser(real.ids, [n.port for n in real.nodes], real.bus_ports)
    norm_fake = normaliser([n.node_id.encode() for n in fake.cluster.nodes], [n.port for n in fake.cluster.nodes],
                           [n.cport for n in fake.cluster.nodes])
    real_reply = norm_real(wire_tree(_wire(real.nodes[0].port, protocol, *argv)))
    fake_reply = norm_fake(wire_tree(_wire(fake.cluster.nodes[0].port, protocol, *argv)))
    assert real_reply == fake_reply


def test_serve_cluster_subprocess_with_redis_py_and_redis_cli() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "fake_streams", "serve", "--cluster", "3", "--port", "0",
                             "--version", "7.0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        urls = [proc.stdout.readline().strip() for _ in range(3)]  # type: ignore[union-attr]
        assert all(u.startswith("redis://127.0.0.1:") for u in urls)
        client = RedisCluster.from_url(urls[0])
        try:
            for key in ("a", "b", "c"):
                client.xadd(key, {"f": "v"}, id="1-1")
            assert [client.xlen(k) for k in ("a", "b", "c")] == [1, 1, 1]
            assert len(client.cluster_nodes()) == 3
        finally:
            client.close()
        if shutil.which("redis-cli"):
            out = subprocess.run(["redis-cli", "-c", "-u", urls[1], "XRANGE", "a", "-", "+"], capture_output=True,
                                 text=True, timeout=30)
            assert out.stdout.split() == ["1-1", "f", "v"]
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0
