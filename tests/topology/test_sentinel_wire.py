"""``serve --sentinel`` on the wire: the fake deployment served over TCP (:func:`serve_sentinel`, profile "7.0")
against a real Redis 7.0.15 one (a master, a replica, a redis-sentinel) — the raw RESP2 / RESP3 bytes (reply types
included: the sentinel's simple strings, RESP3 maps, the null array of an unknown master) of the SENTINEL
subcommands and of the replica's refusals, after the same normalisation (ids, ports, times, offsets); then
``python -m fake_streams serve --sentinel`` as a subprocess, followed by redis-py's Sentinel and redis-cli."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from typing import Any, Iterator

import pytest
import redis
from redis.sentinel import Sentinel

from fake_streams.topology.serving import serve_sentinel
from tests.support.redis_compat import close_sentinel

from .real_cluster import wire_tree
from .real_sentinel import MASTER, RealSentinel, normaliser
from .test_cluster_wire import _wire
from .test_sentinel_oracle import KINDS, _start_real

pytestmark = [pytest.mark.real, pytest.mark.slow]


@pytest.fixture(scope="module", params=sorted(KINDS))
def pair(request: Any) -> Iterator[Any]:
    real: RealSentinel = _start_real(request.param)
    real.master.command("XADD", "jobs", "1-1", "n", "1")
    real.wait_replicated()
    fake = serve_sentinel(MASTER, 1, version=KINDS[request.param])
    fake.sentinel.master.server.client().xadd("jobs", {"n": "1"}, id="1-1")
    try:
        yield real, fake
    finally:
        fake.close()
        real.stop()


@pytest.mark.parametrize("protocol", (2, 3), ids=lambda p: f"resp{p}")
@pytest.mark.parametrize("node,argv", [
    (2, ("SENTINEL", "MASTERS")), (2, ("SENTINEL", "MASTER", MASTER)), (2, ("SENTINEL", "REPLICAS", MASTER)),
    (2, ("SENTINEL", "SENTINELS", MASTER)), (2, ("SENTINEL", "CKQUORUM", MASTER)),
    (2, ("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER)), (2, ("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nope")),
    (2, ("SENTINEL", "MASTER", "nope")), (2, ("SENTINEL", "FOO")), (2, ("ROLE",)), (2, ("PING",)),
    (2, ("GET", "k")), (1, ("XADD", "jobs", "*", "n", "2")), (1, ("SET", "k", "v")), (1, ("XLEN", "jobs")),
    (1, ("EVAL", "return redis.call('del','jobs')", "0")),
], ids=lambda a: " ".join(a) if isinstance(a, tuple) else str(a))
def test_wire_bytes(pair: Any, node: int, argv: tuple, protocol: int) -> None:
    real, fake = pair
    real_ports = [real.master.port, real.replica.port, real.sentinel.port]
    sentinel = fake.sentinel
    fake_ports = [sentinel.master.port, sentinel.replicas[0].port, sentinel.port]
    fake_ids = [sentinel.myid.encode()] + [n.server._info.run_id.encode() for n in sentinel.nodes]
    real_reply = normaliser(real.ids(), real_ports)(wire_tree(_wire(real_ports[node], protocol, *argv)))
    fake_reply = normaliser(fake_ids, fake_ports)(wire_tree(_wire(fake_ports[node], protocol, *argv)))
    assert real_reply == fake_reply


def test_serve_sentinel_subprocess_with_redis_py_and_redis_cli() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "fake_streams", "serve", "--sentinel", "--sentinel-replicas", "2",
                             "--port", "0", "--version", "7.0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        urls = [proc.stdout.readline().strip() for _ in range(4)]  # type: ignore[union-attr]
        assert all(u.startswith("redis://127.0.0.1:") for u in urls)
        ports = [int(u.rsplit(":", 1)[1].split("/")[0]) for u in urls]
        app = Sentinel([("127.0.0.1", ports[0])], socket_timeout=5)
        try:
            assert app.discover_master(MASTER) == ("127.0.0.1", ports[1])
            assert sorted(app.discover_slaves(MASTER)) == sorted([("127.0.0.1", ports[2]), ("127.0.0.1", ports[3])])
            master = app.master_for(MASTER)
            master.xadd("orders", {"sku": "A"}, id="1-1")
            assert app.slave_for(MASTER).xlen("orders") == 1
            sentinel = app.sentinels[0]
            # the old master's conversion 0.5 s after the switch (10 s with the default periods), in real time
            assert sentinel.execute_command("SENTINEL", "DEBUG", "INFO-PERIOD", "100", "PUBLISH-PERIOD", "100")
            sentinel.execute_command("SENTINEL", "FAILOVER", MASTER)  # the switch: at once
            assert app.discover_master(MASTER) != ("127.0.0.1", ports[1])
            old = redis.Redis(port=ports[1], socket_timeout=5)
            assert old.execute_command("ROLE")[0] == b"master"  # not converted yet
            deadline = time.monotonic() + 10
            while old.execute_command("ROLE")[0] != b"slave" and time.monotonic() < deadline:
                time.sleep(0.02)  # real-time: bounded wait for the serving process's conversion timer (0.5 s)
            old.close()
            assert master.xadd("orders", {"sku": "B"}, id="2-1") == b"2-1"  # rediscovered, over TCP
            master.close()
        finally:
            close_sentinel(app)
        if shutil.which("redis-cli"):
            out = subprocess.run(["redis-cli", "-u", urls[0], "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER],
                                 capture_output=True, text=True, timeout=30)
            assert out.stdout.split()[0] == "127.0.0.1"
            out = subprocess.run(["redis-cli", "-u", urls[1], "XADD", "orders", "*", "a", "1"], capture_output=True,
                                 text=True, timeout=30)
            assert "READONLY You can't write against a read only replica." in out.stdout + out.stderr
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0
