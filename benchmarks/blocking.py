"""Blocking reads: idle cost of blocked clients and XADD → reader wake-up latency (a script, not a test).

    python benchmarks/blocking.py [--clients 100] [--idle-s 2] [--wakes 300]

Measures, on a FakeStreamsServer with the SystemClock and the default safety net (so the timer thread
is running, as in real use):

* **idle CPU** — ``--clients`` sync clients (one thread each) and as many asyncio clients (one loop) all
  blocked in ``XREAD BLOCK 0`` for ``--idle-s`` seconds: process CPU time / wall time (target < 2 % of
  one core);
* **wake latency** — time from just before a writer's ``XADD`` to the blocked reader's return, median
  and p90 over ``--wakes`` rounds, for sync thread → sync reader, asyncio task → asyncio reader (same
  loop) and sync thread → asyncio reader (target: median < 2 ms).

Prints one line per figure. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from typing import Any, List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from fake_streams import FakeStreamsServer  # noqa: E402


# ------------------------------------------------------------------------------------- idle CPU
def idle_cpu(clients: int, idle_s: float) -> dict:
    server = FakeStreamsServer()
    threads: List[threading.Thread] = []

    def read(client: Any, key: str) -> None:
        try:
            client.xread({key: "$"}, block=0)
        except Exception:  # ConnectionError when the server closes at the end
            pass

    for i in range(clients):
        thread = threading.Thread(target=read, args=(server.client(), f"s{i}"), daemon=True)
        thread.start()
        threads.append(thread)
    loop_ready = threading.Event()
    loop_box: dict = {}

    def run_loop() -> None:
        async def main() -> None:
            readers = [server.async_client() for _ in range(clients)]
            tasks = [asyncio.ensure_future(r.xread({f"a{i}": "$"}, block=0)) for i, r in enumerate(readers)]
            loop_box["loop"] = asyncio.get_running_loop()
            loop_ready.set()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run(main())

    loop_thread = threading.Thread(target=run_loop, daemon=True)
    loop_thread.start()
    loop_ready.wait(10)
    server.wait_until_blocked(2 * clients, 30)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    time.sleep(idle_s)  # the measured idle period
    cpu1, wall1 = time.process_time(), time.perf_counter()
    blocked = len(server.blocked())
    server.close()
    for thread in threads:
        thread.join(5)
    loop_thread.join(5)
    return {"blocked": blocked, "cpu_s": cpu1 - cpu0, "wall_s": wall1 - wall0,
            "percent": 100.0 * (cpu1 - cpu0) / (wall1 - wall0)}


# -------------------------------------------------------------------------------- wake latency
def _summary(samples: List[float]) -> dict:
    samples = sorted(samples)
    return {"median_ms": 1000 * statistics.median(samples), "p90_ms": 1000 * samples[int(0.9 * (len(samples) - 1))],
            "n": len(samples)}


def latency_sync(wakes: int) -> dict:
    server = FakeStreamsServer()
    reader, writer = server.client(), server.client()
    samples: List[float] = []
    for i in range(wakes):
        box: dict = {}

        def read(box: dict = box) -> None:
            reader.xread({"s": "$"}, block=0)
            box["t1"] = time.perf_counter()

        thread = threading.Thread(target=read)
        thread.start()
        server.wait_until_blocked(1, 10)
        t0 = time.perf_counter()
        writer.xadd("s", {"i": str(i)})
        thread.join(10)
        samples.append(box["t1"] - t0)
    server.close()
    return _summary(samples)


def latency_async(wakes: int, writer_in_thread: bool) -> dict:
    server = FakeStreamsServer()
    sync_writer = server.client()

    async def main() -> List[float]:
        reader, writer = server.async_client(), server.async_client()
        out: List[float] = []
        for i in range(wakes):
            task = asyncio.ensure_future(reader.xread({"s": "$"}, block=0))
            while not server.blocked():
                await asyncio.sleep(0)
            t0 = time.perf_counter()
            if writer_in_thread:
                threading.Thread(target=sync_writer.xadd, args=("s", {"i": str(i)})).start()
            else:
                await writer.xadd("s", {"i": str(i)})
            await task
            out.append(time.perf_counter() - t0)
        await reader.aclose()
        await writer.aclose()
        return out

    samples = asyncio.run(main())
    server.close()
    return _summary(samples)


def main(argv: Any = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--idle-s", type=float, default=2.0)
    parser.add_argument("--wakes", type=int, default=300)
    args = parser.parse_args(argv)

    idle = idle_cpu(args.clients, args.idle_s)
    print(f"idle CPU: {idle['blocked']} blocked clients ({args.clients} sync threads + {args.clients} asyncio tasks) "
          f"for {idle['wall_s']:.2f} s: {idle['cpu_s'] * 1000:.1f} ms CPU = {idle['percent']:.2f} % of one core "
          f"(target < 2 %)")
    for label, result in (
        ("sync thread -> sync reader", latency_sync(args.wakes)),
        ("asyncio task -> asyncio reader", latency_async(args.wakes, writer_in_thread=False)),
        ("sync thread -> asyncio reader", latency_async(args.wakes, writer_in_thread=True)),
    ):
        print(f"wake latency XADD -> reader, {label}: median {result['median_ms']:.3f} ms, "
              f"p90 {result['p90_ms']:.3f} ms over {result['n']} wakes (target median < 2 ms)")


if __name__ == "__main__":
    main()
