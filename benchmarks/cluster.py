"""Stream commands on a fake cluster node against a standalone server, and the direct path against the general path
on the same nodes, side by side in one run.

    python benchmarks/cluster.py [--repeat 7] [--batch 2000] [--out benchmarks/results-cluster.md]

Backends (each a redis-py client; the cluster ones are ``redis.cluster.RedisCluster`` from ``FakeCluster.client``):

* **standalone** — ``FakeStreamsServer().client()`` (the direct path);
* **cluster-1 general** / **cluster-3 general** — a 1-node / 3-node ``FakeCluster``, its nodes with
  ``server.fast_path = False``: every command takes the dispatch path (RESP packing, fakeredis's parser,
  the socket's slot check): what cluster nodes did before they took the direct path;
* **cluster-1 direct** / **cluster-3 direct** — the same clusters with the direct path (the slot check first,
  then the engine, no RESP);
* **node direct** — a plain ``redis.Redis`` on the node of the 3-node cluster that owns the key (direct path):
  the node's own cost, slot check included, without ``RedisCluster``'s client-side routing;
* **async …** — the same with ``redis.asyncio`` clients (``FakeStreamsServer.async_client``,
  ``FakeCluster.async_client``: ``redis.asyncio.cluster.RedisCluster``), standalone and the 3-node cluster.

Workloads: ``xadd`` (``XADD s * f v``, unit: command) and ``readgroup_ack`` (``XREADGROUP GROUP g c COUNT 10
STREAMS s >`` then ``XACK s g`` of the 10 IDs, unit: iteration; the stream is refilled between batches, untimed).
Each cell is the fastest of ``--repeat`` batches (CPU time of this process per unit, µs; the ratio is to the
standalone server with the same kind of client), the backends interleaved batch by batch, so the ratios of one run are comparable; the machine is shared, so only ratios mean
much. Prints a Markdown table (and writes it to ``--out`` if given). Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from fake_streams import FakeStreamsServer  # noqa: E402
from fake_streams.topology import FakeCluster  # noqa: E402

GROUP = "g"


def _hiredis() -> str:
    try:
        import hiredis  # noqa: F401
    except ImportError:
        return "not installed"
    return "installed"


class Backend:
    """A client and how to switch its servers' direct path on or off."""

    def __init__(self, name: str, client: Any, servers: List[Any], direct: bool, close: Callable[[], None],
                 key: str = "s", loop: Any = None) -> None:
        self.name = name
        self.key = key
        self.client = client
        self.servers = servers
        self.direct = direct
        self.close = close
        self.loop = loop  # an asyncio client's event loop

    def prepare(self) -> None:
        for server in self.servers:
            server.fast_path = self.direct

    def run(self, workload: str, n: int) -> float:
        """One batch of ``n`` units of ``workload``: CPU seconds."""
        if self.loop is None:
            return WORKLOADS[workload](self.client, self.key, n)
        return self.loop.run_until_complete(ASYNC_WORKLOADS[workload](self.client, self.key, n))

    def delete(self) -> None:
        done = self.client.delete(self.key)
        if self.loop is not None:
            self.loop.run_until_complete(done)


def backends(base_port: int) -> List[Backend]:
    out: List[Backend] = []
    standalone = FakeStreamsServer()
    out.append(Backend("standalone", standalone.client(), [standalone], True, lambda: None))
    for nodes, port in ((1, base_port), (3, base_port + 10)):
        cluster = FakeCluster(nodes, base_port=port)
        for direct in (False, True):
            client = cluster.client()
            label = f"cluster-{nodes} {'direct' if direct else 'general'}"
            out.append(Backend(label, client, cluster.servers, direct, client.close))
        if nodes == 3:
            owner = cluster.node_for_key("s").server
            out.append(Backend("node direct", owner.client(), [owner], True, client.close))
            out += async_backends(standalone, cluster)
        out[-1].close = _then(out[-1].close, cluster.close)
    out[-1].close = _then(out[-1].close, standalone.close)
    return out


def _then(first: Callable[[], None], second: Callable[[], None]) -> Callable[[], None]:
    def both() -> None:
        first()
        second()
    return both


def async_backends(standalone: Any, cluster: Any) -> List[Backend]:
    loop = asyncio.new_event_loop()

    def closer(client: Any) -> Callable[[], None]:
        return lambda: loop.run_until_complete(client.aclose())

    out = [Backend("async standalone", standalone.async_client(), [standalone], True, lambda: None, loop=loop)]
    out[0].close = closer(out[0].client)
    for direct in (False, True):
        client = cluster.async_client()
        out.append(Backend(f"async cluster-3 {'direct' if direct else 'general'}", client, cluster.servers, direct,
                           closer(client), loop=loop))
    out[-1].close = _then(out[-1].close, loop.close)
    return out


def xadd_batch(client: Any, key: str, n: int) -> float:
    xadd = client.xadd
    started = time.process_time()
    for _ in range(n):
        xadd(key, {"f": "v"})
    return time.process_time() - started


def readgroup_batch(client: Any, key: str, n: int) -> float:
    client.delete(key)
    pipe = client.pipeline(transaction=False)
    for _ in range(n * 10):
        pipe.xadd(key, {"f": "v"})
    pipe.execute()
    client.xgroup_create(key, GROUP, "0")
    read, ack = client.xreadgroup, client.xack
    started = time.process_time()
    for _ in range(n):
        reply = read(GROUP, "c", {key: ">"}, count=10)
        ack(key, GROUP, *[entry_id for entry_id, _ in reply[0][1]])
    return time.process_time() - started


async def async_xadd_batch(client: Any, key: str, n: int) -> float:
    xadd = client.xadd
    started = time.process_time()
    for _ in range(n):
        await xadd(key, {"f": "v"})
    return time.process_time() - started


async def async_readgroup_batch(client: Any, key: str, n: int) -> float:
    await client.delete(key)
    pipe = client.pipeline(transaction=False)
    for _ in range(n * 10):
        pipe.xadd(key, {"f": "v"})
    await pipe.execute()
    await client.xgroup_create(key, GROUP, "0")
    read, ack = client.xreadgroup, client.xack
    started = time.process_time()
    for _ in range(n):
        reply = await read(GROUP, "c", {key: ">"}, count=10)
        await ack(key, GROUP, *[entry_id for entry_id, _ in reply[0][1]])
    return time.process_time() - started


WORKLOADS: Dict[str, Callable[[Any, str, int], float]] = {"xadd": xadd_batch, "readgroup_ack": readgroup_batch}
ASYNC_WORKLOADS: Dict[str, Callable[[Any, str, int], Any]] = {"xadd": async_xadd_batch,
                                                              "readgroup_ack": async_readgroup_batch}


def measure(repeat: int, batch: int, base_port: int) -> Tuple[Dict[Tuple[str, str], float], List[str]]:
    found = backends(base_port)
    best: Dict[Tuple[str, str], float] = {}
    try:
        for workload in WORKLOADS:
            n = batch if workload == "xadd" else max(batch // 10, 1)
            for backend in found:  # warm-up (the cluster client's slot map, the first connections)
                backend.prepare()
                backend.run(workload, max(n // 10, 1))
            for _ in range(repeat):
                for backend in found:
                    backend.prepare()
                    backend.delete()
                    per_unit = backend.run(workload, n) / n * 1e6
                    cell = (workload, backend.name)
                    best[cell] = min(best.get(cell, per_unit), per_unit)
    finally:
        for backend in found:
            backend.close()
    return best, [b.name for b in found]


def _cell(best: Dict[Tuple[str, str], float], workload: str, name: str) -> str:
    base = best[(workload, "async standalone" if name.startswith("async") else "standalone")]
    return f"{best[(workload, name)]:.1f} ({best[(workload, name)] / base:.2f}×)"


def table(best: Dict[Tuple[str, str], float], names: List[str], repeat: int, batch: int) -> str:
    lines = [f"Python {platform.python_version()}, hiredis {_hiredis()}; fastest of {repeat} batches of "
             f"{batch} XADD / {max(batch // 10, 1)} XREADGROUP+XACK iterations; µs per unit (CPU), "
             "ratio to standalone in brackets.", "",
             "| workload | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for workload in WORKLOADS:
        cells = [_cell(best, workload, name) for name in names]
        lines.append(f"| {workload} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--batch", type=int, default=2000, help="XADD per batch (XREADGROUP+XACK: a tenth)")
    parser.add_argument("--base-port", type=int, default=39001)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    best, names = measure(args.repeat, args.batch, args.base_port)
    text = table(best, names, args.repeat, args.batch)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            out.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
