"""Blocking reads: idle cost, XADD → reader wake-up latency and threads started, ours and fakeredis side by side.

    python benchmarks/blocking.py [--clients 100] [--idle-s 2] [--wakes 1000] [--rounds 5] [--no-fakeredis] [--no-idle]

Measures, on a FakeStreamsServer with the SystemClock and the default safety net (so the real-time
timer is in use, as in real use), and on ``fakeredis.FakeRedis`` in the same run:

* **idle CPU** (ours) — ``--clients`` sync clients (one thread each) and as many asyncio clients (one
  loop) all blocked in ``XREAD BLOCK 0`` for ``--idle-s`` seconds: process CPU time / wall time
  (target < 2 % of one core);
* **wake latency** — time from just before a writer's ``XADD`` to the blocked reader's return, median,
  p90 and p99 over ``--wakes`` rounds, for sync thread → sync reader (one long-lived reader thread),
  asyncio task → asyncio reader (same loop) and sync thread → asyncio reader (issue 13 targets:
  median ≤ fakeredis's, p99 ≤ 1 ms);
* **threads started** during those rounds by the backend itself (every ``threading.Thread.start``
  counted; the script's own threads are started before counting begins). Target: ≤ 2 per 1,000 wake-ups.

The backends alternate in ``--rounds`` rounds per scenario in the same process (each round: every backend
``--wakes / --rounds`` wake-ups, the order swapped every round), so a drift of the machine (a 2-core VM's
scheduling moves a thread wake-up by tens of µs from one minute to the next) hits both alike: the
medians and percentiles are over all wake-ups of a backend, the ratio is the median of the rounds' ratios
(with their range). Prints one line per figure. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import fakeredis  # noqa: E402
import fakeredis.aioredis  # noqa: E402

from fake_streams import FakeStreamsServer  # noqa: E402


# ---------------------------------------------------------------------------------- threads started
class ThreadCounter:
    """Counts the threads started (``threading.Thread.start``) while it is active."""

    def __init__(self) -> None:
        self.started = 0
        self.names: List[str] = []

    @contextlib.contextmanager
    def counting(self) -> Iterator[ThreadCounter]:
        original = threading._start_new_thread  # type: ignore[attr-defined]  # what every Thread.start calls

        def counted(function: Any, args: Any, *rest: Any) -> Any:
            self.started += 1
            owner = getattr(function, "__self__", None)
            self.names.append(getattr(owner, "name", "?"))
            return original(function, args, *rest)

        threading._start_new_thread = counted  # type: ignore[attr-defined]
        try:
            yield self
        finally:
            threading._start_new_thread = original  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------- backends
class Backend:
    """One backend's clients and its "a client is blocked now" probe."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name == "ours":
            self.server: Any = FakeStreamsServer()
            self.client: Callable[[], Any] = self.server.client
            self.async_client: Callable[[], Any] = self.server.async_client
        else:
            self.server = fakeredis.FakeServer()
            self.client = lambda: fakeredis.FakeRedis(server=self.server)
            self.async_client = lambda: fakeredis.aioredis.FakeRedis(server=self.server)

    def blocked(self) -> bool:
        if self.name == "ours":
            return bool(self.server.blocking.count())
        return any(getattr(sock, "_blocked", False) for sock in list(self.server.sockets))

    def wait_blocked(self) -> None:
        """Until a reader is blocked (polled with short sleeps, the same way on both backends)."""
        bound = time.monotonic() + 10
        while not self.blocked():
            if time.monotonic() > bound:
                raise TimeoutError(f"{self.name}: the reader never blocked")
            time.sleep(0.0001)

    async def wait_blocked_async(self) -> None:
        bound = time.monotonic() + 10
        while not self.blocked():
            if time.monotonic() > bound:
                raise TimeoutError(f"{self.name}: the reader never blocked")
            await asyncio.sleep(0)

    def close(self) -> None:
        if self.name == "ours":
            self.server.close()


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

    def run_loop() -> None:
        async def main() -> None:
            readers = [server.async_client() for _ in range(clients)]
            tasks = [asyncio.ensure_future(r.xread({f"a{i}": "$"}, block=0)) for i, r in enumerate(readers)]
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
def _summary(samples: List[float], threads: int) -> dict:
    samples = sorted(samples)
    last = len(samples) - 1
    return {"median_us": 1e6 * statistics.median(samples), "p90_us": 1e6 * samples[int(0.9 * last)],
            "p99_us": 1e6 * samples[int(0.99 * last)], "n": len(samples), "threads": threads}


def latency_sync(backend: Backend, wakes: int) -> Tuple[List[float], int]:
    """One long-lived reader thread; per round: it blocks, the main thread XADDs, it returns."""
    reader, writer = backend.client(), backend.client()
    reader.ping()
    writer.ping()
    go, done = threading.Semaphore(0), threading.Semaphore(0)
    ended: List[float] = []

    def read_loop() -> None:
        for _ in range(wakes):
            go.acquire()
            reader.xread({"s": "$"}, block=0)
            ended.append(time.perf_counter())
            done.release()

    thread = threading.Thread(target=read_loop, daemon=True)
    thread.start()
    samples: List[float] = []
    with ThreadCounter().counting() as counter:
        for i in range(wakes):
            go.release()
            backend.wait_blocked()
            t0 = time.perf_counter()
            writer.xadd("s", {"i": str(i)})
            done.acquire()
            samples.append(ended[-1] - t0)
    thread.join(10)
    return samples, counter.started


def latency_async(backend: Backend, wakes: int, writer_in_thread: bool) -> Tuple[List[float], int]:
    sync_writer = backend.client()
    sync_writer.ping()
    writer_go, writer_done = threading.Semaphore(0), threading.Semaphore(0)
    writes: List[float] = []

    def write_loop() -> None:  # one long-lived writer thread (its start is not counted)
        for i in range(wakes):
            writer_go.acquire()
            writes.append(time.perf_counter())
            sync_writer.xadd("s", {"i": str(i)})
            writer_done.release()

    writer_thread = threading.Thread(target=write_loop, daemon=True)
    if writer_in_thread:
        writer_thread.start()

    async def main(counter: ThreadCounter) -> List[float]:
        reader, writer = backend.async_client(), backend.async_client()
        await reader.ping()
        await writer.ping()
        out: List[float] = []
        with counter.counting():
            for i in range(wakes):
                task = asyncio.ensure_future(reader.xread({"s": "$"}, block=0))
                await backend.wait_blocked_async()
                if writer_in_thread:
                    writer_go.release()
                    await task
                    out.append(time.perf_counter() - writes[-1])
                else:
                    t0 = time.perf_counter()
                    await writer.xadd("s", {"i": str(i)})
                    await task
                    out.append(time.perf_counter() - t0)
        if writer_in_thread:
            for _ in range(wakes):
                writer_done.acquire()
        await reader.aclose()
        await writer.aclose()
        return out

    counter = ThreadCounter()
    samples = asyncio.run(main(counter))
    if writer_in_thread:
        writer_thread.join(10)
    return samples, counter.started


SCENARIOS = (
    ("sync thread -> sync reader", lambda b, n: latency_sync(b, n)),
    ("asyncio task -> asyncio reader", lambda b, n: latency_async(b, n, writer_in_thread=False)),
    ("sync thread -> asyncio reader", lambda b, n: latency_async(b, n, writer_in_thread=True)),
)


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--idle-s", type=float, default=2.0)
    parser.add_argument("--wakes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5, help="rounds the wake-ups of each backend are split in")
    parser.add_argument("--no-fakeredis", action="store_true", help="measure ours only")
    parser.add_argument("--no-idle", action="store_true", help="skip the idle CPU phase")
    args = parser.parse_args(argv)

    if not args.no_idle:
        idle = idle_cpu(args.clients, args.idle_s)
        print(f"idle CPU: {idle['blocked']} blocked clients ({args.clients} sync threads + {args.clients} asyncio "
              f"tasks) for {idle['wall_s']:.2f} s: {idle['cpu_s'] * 1000:.1f} ms CPU = {idle['percent']:.2f} % "
              f"of one core (target < 2 %)")
    names = ["ours"] if args.no_fakeredis else ["ours", "fakeredis"]
    rounds = max(1, min(args.rounds, args.wakes))
    for label, scenario in SCENARIOS:
        samples: Dict[str, List[float]] = {name: [] for name in names}
        threads = {name: 0 for name in names}
        ratios: List[float] = []
        backends = {name: Backend(name) for name in names}  # one server per backend for all rounds
        try:
            for r in range(rounds):
                medians = {}
                for name in (names if r % 2 == 0 else names[::-1]):  # side by side, the order swapped every round
                    got, started = scenario(backends[name], args.wakes // rounds)
                    samples[name] += got
                    threads[name] += started
                    medians[name] = statistics.median(got)
                if "fakeredis" in medians:
                    ratios.append(medians["ours"] / medians["fakeredis"])
        finally:
            for backend in backends.values():
                backend.close()
        for name in names:
            summary = _summary(samples[name], threads[name])
            ratio = ""
            if name == "ours" and ratios:
                ratio = (f"; median {statistics.median(ratios):.2f}x fakeredis's (rounds {min(ratios):.2f}–"
                         f"{max(ratios):.2f}x)")
            print(f"wake latency XADD -> reader, {label}, {name:9}: median {summary['median_us']:7.1f} us, "
                  f"p90 {summary['p90_us']:7.1f} us, p99 {summary['p99_us']:7.1f} us over {summary['n']} wakes in "
                  f"{rounds} rounds; {summary['threads']} threads started{ratio}")
    print("targets (issue 13): median <= fakeredis's, p99 <= 1000 us, <= 2 threads started per 1,000 wake-ups")


if __name__ == "__main__":
    main()
