"""asyncio: what the connection's yield to the event loop costs, and how many loop iterations a command gives.

    python benchmarks/asyncio_yield.py [--n 1000] [--rounds 15] [--no-real]

The asyncio connection yields to the loop once per command and per pipeline execute, as socket I/O does
(issue 13). Per backend, in one run, batches interleaved, min and median of ``--rounds`` batches of
``--n`` commands: CPU µs per command (``time.process_time``: other processes on the machine count less
than in wall time) for ``XLEN``, ``XADD`` and a non-transactional pipeline of ``--n`` XADDs (per command);
and the loop iterations per command that a ticker task (``while True: ticks += 1; await sleep(0)``) gets.

Backends: ours (``FakeStreamsAsyncConnection``), ours with the yield switched off (the cost reference),
``fakeredis.aioredis.FakeRedis``, and ``redis-server`` from PATH on a free loopback port (skipped if absent).
Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import fakeredis.aioredis  # noqa: E402
import redis.asyncio  # noqa: E402

from fake_streams import FakeStreamsServer  # noqa: E402
from fake_streams.connection import FakeStreamsAsyncConnection  # noqa: E402


class NoYieldConnection(FakeStreamsAsyncConnection):
    """Ours with the per-command yield switched off: what the yield costs is the difference."""

    _sf_sent = property(lambda self: False, lambda self, value: None)  # type: ignore[assignment]


async def batch(r: Any, op: str, n: int) -> float:
    """CPU µs per command of ``n`` commands of ``op``."""
    start = time.process_time()
    if op == "xlen":
        for _ in range(n):
            await r.xlen("s")
    elif op == "xadd":
        for _ in range(n):
            await r.xadd("s", {"a": "1"})
    else:
        async with r.pipeline(transaction=False) as pipe:
            for _ in range(n):
                pipe.xadd("s", {"a": "1"})
            await pipe.execute()
    return (time.process_time() - start) / n * 1e6


async def iterations_per_command(r: Any, n: int) -> float:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.ensure_future(ticker())
    await asyncio.sleep(0)
    before = ticks
    for _ in range(n):
        await r.xlen("s")
    got = ticks - before
    task.cancel()
    return got / n


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_real() -> Optional[tuple]:
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bound = time.monotonic() + 10
    while time.monotonic() < bound:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)  # the server starts
    proc.kill()
    return None


async def run(n: int, rounds: int, real_port: Optional[int]) -> Dict[str, Dict[str, List[float]]]:
    server = FakeStreamsServer()
    clients: Dict[str, Any] = {
        "ours": server.async_client(),
        "ours, no yield": redis.asyncio.Redis(connection_pool=redis.asyncio.ConnectionPool(
            connection_class=NoYieldConnection.bind(server))),
        "fakeredis": fakeredis.aioredis.FakeRedis(),
    }
    if real_port is not None:
        clients["redis-server"] = redis.asyncio.Redis(port=real_port)
    results: Dict[str, Dict[str, List[float]]] = {name: {} for name in clients}
    for r in clients.values():
        await r.delete("s")
        await r.xadd("s", {"a": "1"})
    for _ in range(rounds):
        for op in ("xlen", "xadd", "pipeline"):
            for name, r in clients.items():  # interleaved: each batch on every backend in turn
                results[name].setdefault(op, []).append(await batch(r, op, n))
        for name, r in clients.items():
            results[name].setdefault("iterations", []).append(await iterations_per_command(r, min(n, 200)))
    for r in clients.values():
        await r.aclose()
    server.close()
    return results


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--no-real", action="store_true")
    args = parser.parse_args(argv)
    real = None if args.no_real else start_real()
    try:
        results = asyncio.run(run(args.n, args.rounds, real[1] if real else None))
    finally:
        if real:
            real[0].kill()
            real[0].wait()
    if real is None and not args.no_real:
        print("redis-server not on PATH: no real column")
    for name, ops in results.items():
        parts = []
        for op in ("xlen", "xadd", "pipeline"):
            samples = sorted(ops[op])
            parts.append(f"{op} {samples[0]:6.2f} / {statistics.median(samples):6.2f}")
        iterations = statistics.median(ops["iterations"])
        print(f"{name:15}: CPU us per command (min / median): {', '.join(parts)}; "
              f"loop iterations per command {iterations:.1f}")


if __name__ == "__main__":
    main()
