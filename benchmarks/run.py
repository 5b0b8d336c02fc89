"""Side-by-side benchmark of Redis Streams workloads through redis-py (see benchmarks/README.md).

    python benchmarks/run.py [--sizes 1e3,1e4,1e5,1e6] [--rounds N] [--quick] [--out benchmarks/results.md]

One process, one run: the same workloads on the floor (canned replies), bare (the same replies
already parsed: no packing, no parsing), this project on a bare server (ours), through the pytest
fixture's handle (fixture) and through ``patch_redis()`` (patched), optionally an earlier revision
of this project (``--before REV``), fakeredis and a real redis-server (started here on a free
loopback port when /usr/bin/redis-server exists).
Writes a markdown report (``--out``) and the raw numbers next to it (``.json``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
import tracemalloc
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (HERE, ROOT):
    if path not in sys.path:
        sys.path.insert(0, path)

import backends  # noqa: E402
import report  # noqa: E402
import workloads  # noqa: E402

BACKEND_ORDER = report.BACKENDS


def parse_sizes(text: str) -> List[int]:
    return [int(float(part)) for part in text.split(",") if part.strip()]


def parse_protocols(text: str) -> List[Optional[int]]:
    out: List[Optional[int]] = []
    for part in text.split(","):
        part = part.strip().lower()
        if part:
            out.append(None if part == "default" else int(part))
    return out


def wait_for_ours(timeout: float) -> Any:
    """The transport is developed in parallel: poll until ``fake_streams.FakeStreamsConnection`` imports."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            import fake_streams

            return fake_streams.FakeStreamsConnection
        except (ImportError, AttributeError) as exc:
            if time.monotonic() > deadline:
                raise SystemExit(f"fake_streams.FakeStreamsConnection not importable: {exc}") from None
            for name in [m for m in sys.modules if m == "fake_streams" or m.startswith("fake_streams.")]:
                del sys.modules[name]
            print(f"waiting for fake_streams.FakeStreamsConnection ({exc}) ...", flush=True)
            time.sleep(10)


def effective_protocol(protocol: Optional[int]) -> int:
    if protocol is not None:
        return protocol
    import floor

    return int(floor.FloorConnection().protocol or 2)


# ------------------------------------------------------------------------------------------- timing


class Cell:
    """Samples of one (workload, protocol, size, backend), seconds per unit, one per timed batch, each
    tagged with its round (:func:`measure`): sample ``i`` of two cells of one workload ran in the same round.

    The figure shown per backend is a statistic of the batches (``--stat``: median, or min) of the CPU time of
    this process for the in-process backends (immune to other processes' time slices on a shared machine)
    and of wall-clock time for the real server (whose work happens in another process and on the loopback).
    Ratios of two backends are not taken from those figures but round by round (``report.round_ratios``).
    """

    def __init__(self, in_process: bool) -> None:
        self.in_process = in_process
        self.wall: List[float] = []
        self.cpu: List[float] = []  # process CPU time (this process only)
        self.rounds: List[int] = []  # the round of each sample
        #: per round, the CPUs other processes kept busy during it (None: unknown; the same list for all cells of a workload)
        self.round_others: List[Optional[float]] = []
        self.extra: Dict[str, List[float]] = {}  # sub-timings with the same clock as the metric
        self.n_calls = 0
        self.error: Optional[str] = None

    @property
    def metric(self) -> List[float]:
        return self.cpu if self.in_process else self.wall

    #: the statistic of the batches that is reported (``--stat``): the median, or the minimum — on a machine
    #: shared with other work, interference only ever adds time, so the fastest batch is the least disturbed
    statistic = staticmethod(statistics.median)

    def median_us(self) -> Optional[float]:
        """The reported figure (the :attr:`statistic` of the batches; the median unless ``--stat min``), µs/unit."""
        return self.statistic(self.metric) * 1e6 if self.metric else None

    def cpu_share(self) -> Optional[float]:
        """Median CPU time ÷ median wall time: well below 1 for an in-process backend means it was preempted."""
        if not self.wall:
            return None
        return statistics.median(self.cpu) / statistics.median(self.wall)

    def extra_us(self, label: str) -> Optional[float]:
        values = self.extra.get(label)
        return self.statistic(values) * 1e6 if values else None

    def as_json(self) -> Dict[str, Any]:
        return {
            "median_us": self.median_us(),
            "metric": "cpu" if self.in_process else "wall",
            "wall_median_us": statistics.median(self.wall) * 1e6 if self.wall else None,
            "cpu_median_us": statistics.median(self.cpu) * 1e6 if self.cpu else None,
            "wall_samples_us": [s * 1e6 for s in self.wall],
            "cpu_samples_us": [s * 1e6 for s in self.cpu],
            "rounds": list(self.rounds),
            "round_others_cpu": list(self.round_others),
            "cpu_share": self.cpu_share(),
            "extra_median_us": {k: self.extra_us(k) for k in self.extra},
            "extra_samples_us": {k: [s * 1e6 for s in v] for k, v in self.extra.items()},
            "calls_per_batch": self.n_calls,
            "error": self.error,
        }


_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def machine_busy_s() -> Optional[float]:
    """CPU seconds all CPUs of the machine spent busy since boot (``/proc/stat``: everything but idle and iowait,
    steal included — a hypervisor's theft is interference too), or None where unreadable. 10 ms resolution."""
    try:
        with open("/proc/stat") as fh:
            parts = fh.readline().split()
        ticks = [int(x) for x in parts[1:9]]  # user nice system idle iowait irq softirq steal
    except (OSError, ValueError):
        return None
    return (sum(ticks) - ticks[3] - ticks[4]) / _HZ


#: processes of the run whose CPU time is not interference (the real server started for the run)
OWN_PIDS: List[int] = []


def own_children_s() -> float:
    """CPU seconds of :data:`OWN_PIDS` (``/proc/<pid>/stat`` utime + stime), 10 ms resolution."""
    total = 0.0
    for pid in OWN_PIDS:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / _HZ
        except (OSError, ValueError, IndexError):
            pass
    return total


def round_order(live: List[str], rnd: int) -> List[str]:
    """The backends' order in round ``rnd``: a permutation drawn afresh each round (seeded: the same in every run),
    so that each backend runs in every position and after every other backend about equally often. (A rotation
    keeps each backend behind the same neighbour: one that runs the same code warms the caches for it, and the
    ratio of two backends running identical code came out 0.90-0.97 that way.)"""
    order = list(live)
    random.Random(7919 * rnd + 1).shuffle(order)
    return order


def measure(wl: workloads.Workload, jobs: Dict[str, workloads.Job], rounds: int, target_s: float,
            max_units: int) -> Dict[str, Cell]:
    """Calibrate a batch size per backend, then ``rounds`` rounds: in each, every backend runs one timed batch
    (after its untimed reset and a ``gc.collect()``), one backend right after the other (:func:`round_order`).
    A round lasts a few tenths of a second, so the batches of one round share the machine's state (other
    processes, frequency, caches): the ratio of two backends is taken per round and its median over the
    rounds reported (``report.round_ratios``), which drift between rounds cannot move."""
    cells = {name: Cell(in_process=name != "real") for name in jobs}
    max_calls = max(2, max_units // wl.units_per_call)
    live = list(jobs)
    for name in list(live):
        job, cell = jobs[name], cells[name]
        try:
            warm = max(1, min(3, job.max_n))
            job.reset()
            t0 = time.perf_counter()
            job.run(warm)
            per_call = (time.perf_counter() - t0) / warm
            cell.n_calls = int(max(1, min(job.max_n, max_calls, target_s / max(per_call, 1e-9))))
        except Exception as exc:  # a backend that cannot run a workload gets a note, not a crash
            cell.error = f"{type(exc).__name__}: {exc}"[:160]
            live.remove(name)
    round_others: List[Optional[float]] = []
    for rnd in range(rounds):
        # other processes' CPU time during the round: the machine's busy time minus this process's and the real
        # server's (jiffies: a round of ~50 ms or more keeps the quantization below a few tenths of a CPU)
        busy0, own0, kids0, wall0 = machine_busy_s(), time.process_time(), own_children_s(), time.perf_counter()
        for name in round_order(live, rnd):
            job, cell = jobs[name], cells[name]
            if cell.error:
                continue
            try:
                job.reset()
                gc.collect()
                c0 = time.process_time()
                t0 = time.perf_counter()
                extra = job.run(cell.n_calls)
                elapsed = time.perf_counter() - t0
                cpu = time.process_time() - c0
            except Exception as exc:
                cell.error = f"{type(exc).__name__}: {exc}"[:160]
                continue
            units = cell.n_calls * wl.units_per_call
            cell.wall.append(elapsed / units)
            cell.cpu.append(cpu / units)
            cell.rounds.append(rnd)
            for label, seconds in (extra or {}).items():
                cell.extra.setdefault(label, []).append(seconds / units)
        busy1, wall = machine_busy_s(), time.perf_counter() - wall0
        if busy0 is None or busy1 is None or wall <= 0:
            round_others.append(None)
        else:
            own = time.process_time() - own0 + own_children_s() - kids0
            round_others.append(max(0.0, busy1 - busy0 - own) / wall)
    for cell in cells.values():
        cell.round_others = round_others
    return cells


# ------------------------------------------------------------------------------------------- phases


def build(size: int, real_port: Optional[int], fills: Dict[str, Dict[str, float]],
          chosen: List[str]) -> Dict[str, backends.Backend]:
    makers: Dict[str, Any] = {
        "floor": backends.Floor, "bare": backends.Bare, "ours": backends.Ours, "before": backends.Before,
        "fixture": backends.Fixture,
        "patched": lambda: backends.Patched([f"127.0.0.1:{real_port}"] if real_port else []),
        "fakeredis": backends.FakeRedisBackend,
    }
    made: Dict[str, backends.Backend] = {name: makers[name]() for name in chosen if name in makers}
    if real_port and "real" in chosen:
        made["real"] = backends.Real(real_port)
    for name, backend in made.items():
        if not backend.has_data:
            continue
        t0 = time.perf_counter()
        gc.disable()  # setup only: full collections over a growing heap would dominate a 1e6 fill
        try:
            seconds = backend.prefill(workloads.KEY, size)
            backend.read_all_into_pel(workloads.KEY, b"g1", b"c1", size)
            backend.raw("XGROUP", "CREATE", workloads.KEY, "g2", "0")
            backend.prefill(workloads.MAXLEN_KEY, workloads.MAXLEN_FILL)
        finally:
            gc.enable()
        fills.setdefault(str(size), {})[name] = size / seconds if seconds else 0.0
        print(f"  prefill {name:9s} {size:>9,d} entries: {seconds:6.1f} s ({size / seconds:,.0f} XADD/s in pipelines),"
              f" total setup {time.perf_counter() - t0:5.1f} s", flush=True)
    return made


def memory_phase(size: int, real_port: Optional[int]) -> Dict[str, Dict[str, float]]:
    """Bytes per stream entry and per pending entry: tracemalloc for the in-process backends, INFO for real."""
    out: Dict[str, Dict[str, float]] = {}
    for cls in (backends.Ours, backends.FakeRedisBackend):
        gc.collect()
        tracemalloc.start()
        backend = cls()
        backend.raw("XADD", "warmup", "1-1", "f", "v")  # connection, socket, first key: not per entry
        backend.raw("DEL", "warmup")
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        backend.prefill(workloads.KEY, size)
        gc.collect()
        filled = tracemalloc.get_traced_memory()[0]
        backend.read_all_into_pel(workloads.KEY, b"g1", b"c1", size)
        gc.collect()
        pel = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        backend.close()
        out[cls.name] = {"entry": (filled - base) / size, "pending": (pel - filled) / size}
        print(f"  memory {cls.name:9s}: {out[cls.name]['entry']:.0f} B/entry, {out[cls.name]['pending']:.0f} B/pending entry", flush=True)
    if real_port:
        real = backends.Real(real_port)
        base = real.used_memory()
        real.prefill(workloads.KEY, size)
        filled = real.used_memory()
        real.read_all_into_pel(workloads.KEY, b"g1", b"c1", size)
        pel = real.used_memory()
        real.close()
        out["real"] = {"entry": (filled - base) / size, "pending": (pel - filled) / size}
        print(f"  memory real     : {out['real']['entry']:.0f} B/entry, {out['real']['pending']:.0f} B/pending entry (INFO used_memory)", flush=True)
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", help="stream sizes, e.g. 1e3,1e4,1e5,1e6 (default; --quick: 1e3,1e4)")
    ap.add_argument("--rounds", "--repeat", dest="rounds", type=int,
                    help="rounds: in each, every backend runs one timed batch; ratios are the median of the per-round "
                    "ratios (default 21, --quick 15)")
    ap.add_argument("--stat", choices=("median", "min"), default="median",
                    help="statistic of the batches to report: median (default) or min (the least disturbed batch, "
                    "for a machine shared with other work)")
    ap.add_argument("--quick", action="store_true", help="small sizes, fewer rounds, shorter batches, RESP2 only: about 20-30 s")
    ap.add_argument("--out", default=os.path.join(HERE, "results.md"), help="markdown report (raw numbers go to .json)")
    ap.add_argument("--protocols", help="comma list of 2, 3, default (default: 2,default; --quick: 2)")
    ap.add_argument("--target-ms", type=float, help="aimed duration of one timed batch (default 20, --quick 8)")
    ap.add_argument("--max-ops", type=int, help="most units in one batch (default 2000, --quick 500)")
    ap.add_argument("--mem-size", type=float, help="entries for the tracemalloc phase (default 1e5, --quick 1e4; 0 = skip)")
    ap.add_argument("--no-real", action="store_true", help="do not start redis-server")
    ap.add_argument("--workloads", help="comma list of workload names (default: all)")
    ap.add_argument("--backends", help="comma list of backends (default: all but 'before'): " + ",".join(BACKEND_ORDER))
    ap.add_argument("--before", metavar="REV", help="add the column 'before': fake_streams of git revision REV "
                    "(e.g. main, HEAD~3) on a bare server, beside ours (before/after of a change in one run)")
    ap.add_argument("--from-json", help="only re-render the markdown from an earlier results .json")
    ap.add_argument("--wait-ours", type=float, default=900, help="seconds to wait for fake_streams to import")
    args = ap.parse_args(argv)

    if args.from_json:
        with open(args.from_json) as fh:
            results = json.load(fh)
        names = results["config"]["workloads"]
        chosen = [w for w in workloads.WORKLOADS if w.name in names]
        with open(args.out, "w") as fh:
            fh.write(report.markdown(results, chosen, results.get("note", "")))
        print(report.targets_text(results, chosen))
        print(f"wrote {args.out}")
        return 0

    quick = args.quick
    Cell.statistic = staticmethod(min if args.stat == "min" else statistics.median)  # type: ignore[assignment]
    sizes = parse_sizes(args.sizes or ("1e3,1e4" if quick else "1e3,1e4,1e5,1e6"))
    repeat = args.rounds or (15 if quick else 21)
    protocols = parse_protocols(args.protocols or ("2" if quick else "2,default"))
    target_s = (args.target_ms or (8 if quick else 20)) / 1000
    max_units = args.max_ops or (500 if quick else 2000)
    mem_size = int(args.mem_size if args.mem_size is not None else (1e4 if quick else 1e5))
    chosen = [w for w in workloads.WORKLOADS if not args.workloads or w.name in args.workloads.split(",")]

    chosen_backends = (args.backends.split(",") if args.backends
                       else [b for b in BACKEND_ORDER if b != "before"])
    if args.before:
        import atexit
        import shutil
        import tempfile

        into = tempfile.mkdtemp(prefix="fake_streams_before_")
        atexit.register(shutil.rmtree, into, True)  # the extracted copy goes with the run
        before_sha = backends.install_before(args.before, ROOT, into)
        sys.path.insert(0, into)
        if "before" not in chosen_backends:
            chosen_backends.insert(chosen_backends.index("ours") + 1 if "ours" in chosen_backends else 0, "before")
    wait_for_ours(args.wait_ours)
    real_server = backends.RealServer()
    real_port = None
    if not args.no_real and "real" in chosen_backends and real_server.start():
        real_port = real_server.port
        if real_server.proc is not None:
            OWN_PIDS.append(real_server.proc.pid)
    elif args.no_real:
        real_server.note = "--no-real: real-server column skipped"
    env = report.environment(real_server)
    if args.before:
        env["before"] = f"{args.before} ({before_sha}), imported as fake_streams_before"
    print(report.environment_text(env), flush=True)
    if real_server.note:
        print("note:", real_server.note)

    started = time.perf_counter()
    env["load average at start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    results: Dict[str, Any] = {"cells": {}, "fills": {}, "memory": {}, "env": env, "config": {
        "sizes": sizes, "repeat": repeat, "protocols": [effective_protocol(p) if p else "default" for p in protocols],
        "target_ms": target_s * 1000, "max_units": max_units, "mem_size": mem_size, "quick": quick,
        "workloads": [w.name for w in chosen], "backends": chosen_backends, "stat": args.stat,
    }}
    try:
        for size in sizes:
            print(f"\n== size {size:,d} (at {time.perf_counter() - started:.0f} s)", flush=True)
            made = build(size, real_port, results["fills"], chosen_backends)
            gc.collect()
            gc.freeze()  # the datasets are long-lived: keep the collector from rescanning them every batch
            try:
                starts = workloads.random_starts(size)
                for wl in chosen:
                    for protocol in protocols:
                        proto = effective_protocol(protocol)
                        plabel = f"RESP{proto}" + (" (redis-py default)" if protocol is None else "")
                        jobs = {}
                        for name in BACKEND_ORDER:
                            if name in made:
                                clock = time.perf_counter if name == "real" else time.process_time
                                ctx = workloads.Ctx(made[name], made[name].client(protocol), proto, size, starts, clock)
                                jobs[name] = wl.make(ctx)
                        cells = measure(wl, jobs, repeat, target_s, max_units)
                        for name, cell in cells.items():
                            results["cells"][f"{plabel}|{wl.name}|{size}|{name}"] = cell.as_json()
                        print("  " + report.progress_line(wl, plabel, cells), flush=True)
            finally:
                for backend in made.values():
                    backend.close()
                made.clear()
                gc.unfreeze()
                gc.collect()
        if mem_size:
            print(f"\n== memory ({mem_size:,d} entries, tracemalloc; at {time.perf_counter() - started:.0f} s)", flush=True)
            results["memory"] = {"size": mem_size, **memory_phase(mem_size, real_port)}
    finally:
        real_server.stop()
    results["elapsed_s"] = time.perf_counter() - started
    results["note"] = real_server.note
    env["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nelapsed {results['elapsed_s']:.0f} s", flush=True)

    text = report.markdown(results, chosen, real_server.note)
    with open(args.out, "w") as fh:
        fh.write(text)
    json_path = os.path.splitext(args.out)[0] + ".json"
    with open(json_path, "w") as fh:
        json.dump(results, fh, indent=1)
    print(f"wrote {args.out} and {json_path}")
    print(report.targets_text(results, chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
