"""Large loads in one process: the 2nd and 3rd bulk load must cost what the 1st did.

    python benchmarks/loads.py [--entries 1e6] [--loads 3] [--via fixture|server] [--runs N] [--out FILE]

Each load is what a test that fills a big stream does: a fresh server (through the pytest fixture's handle
by default, ``--via server`` for a bare ``FakeStreamsServer``), ``--entries`` ``XADD s * user u:1234 action
click`` in non-transactional pipelines of 1000, the server kept alive afterwards (the worst case: a suite
whose earlier streams are still referenced). The garbage collector runs with Python's defaults, as in
users' processes (no ``gc.freeze``). Reported per load: CPU time (``time.process_time``), the time spent in
collections of each generation (``gc.callbacks``) and the ratio to the first load.

What made later loads slower (issue 13): a pipeline kept every stream command waiting to be sent as
lists and a tuple holding the command spec, all tracked by the collector; built in one burst, they
survived young collections and were promoted, which triggers full collections, and each full collection
walks every container of every stream in the process (the entry index's chunk lists), so the cost grew
with each load. The pipeline now keeps them as tuples of bytes (untracked at the collector's first look).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List

import report  # benchmarks/ is the folder of the script, first on sys.path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


class GcClock:
    """CPU time spent in collections, per generation, and their number (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: Dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            generation = info["generation"]
            self.seconds[generation] += time.process_time() - self._start
            self.count[generation] += 1

    def reset(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]


def make_client(via: str) -> Any:
    if via == "fixture":
        from pytest_plugin._fixture import FakeRedisStreams
        from pytest_plugin._options import Options

        handle = FakeRedisStreams(Options(patch=False))
        return handle, handle.client
    from fake_streams import FakeStreamsServer

    server = FakeStreamsServer()
    return server, server.client(protocol=2)


def load(client: Any, entries: int) -> None:
    for start in range(0, entries, 1000):
        pipe = client.pipeline(transaction=False)
        for _ in range(min(1000, entries - start)):
            pipe.xadd("s", {"user": "u:1234", "action": "click"})
        pipe.execute()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=float, default=1e6)
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--via", choices=("fixture", "server"), default="fixture")
    ap.add_argument("--runs", type=int, default=1,
                    help="run the whole sequence in this many fresh processes, one after the other, and report the "
                         "median ratio per load (one run's ratios move by ±0.2 on a shared 2-CPU machine)")
    ap.add_argument("--out", help="markdown file to write (default: print only)")
    ap.add_argument("--no-gc", action="store_true", help="diagnosis: the collector off (what is left is not the GC)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one run's rows, for --runs
    args = ap.parse_args()
    if args.runs > 1:
        return _runs(args)
    if args.no_gc:
        gc.disable()
    entries = int(args.entries)
    clock = GcClock()
    kept: List[Any] = []
    rows = []
    for i in range(args.loads):
        owner, client = make_client(args.via)
        clock.reset()
        t0, r0 = time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
        load(client, entries)
        seconds = time.process_time() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        sys_s, faults = r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt
        kept.append((owner, client))
        rows.append((seconds, list(clock.seconds), list(clock.count)))
        if args.json:
            continue
        print(f"load {i + 1}: {seconds:.2f} s CPU ({rows[0][0] and seconds / rows[0][0]:.2f}× the first); "
              f"in gc {sum(clock.seconds):.2f} s (" + ", ".join(
                  f"gen{g} {clock.count[g]}× {clock.seconds[g]:.2f} s" for g in range(3)) + f"); system {sys_s:.2f} s, "
              f"{faults:,} page faults", flush=True)
    if args.json:
        print(json.dumps(rows))
        return 0
    lines = [f"{args.loads} loads of {entries:,} XADD (pipelines of 1000) through the {args.via}, one process, "
             f"earlier servers kept alive, {_gc_words(args)}; CPU time", "",
             "| load | CPU s | ÷ first | in gc (s) | gen0 / gen1 / gen2 collections |", "|---:|---:|---:|---:|---|"]
    for i, (seconds, in_gc, count) in enumerate(rows):
        lines.append(f"| {i + 1} | {seconds:.2f} | {seconds / rows[0][0]:.2f}× | {sum(in_gc):.2f} | "
                     f"{count[0]} / {count[1]} / {count[2]} |")
    report.emit("\n".join(lines), args.out, "Large loads in one process (`python benchmarks/loads.py`)")
    return 0


def _gc_words(args: Any) -> str:
    """How the report names the collector's state (``--no-gc``: off)."""
    return "the cyclic GC off (--no-gc)" if args.no_gc else "Python's default GC"


def _runs(args: Any) -> int:
    """``--runs N``: the sequence in N fresh processes one after the other; per load the median of the runs' ratios
    to their own first load (and the runs' range), the median CPU and GC seconds."""
    command = [sys.executable, os.path.abspath(__file__), "--json", "--entries", str(args.entries), "--loads",
               str(args.loads), "--via", args.via] + (["--no-gc"] if args.no_gc else [])
    runs = []
    for n in range(args.runs):
        rows = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        runs.append(rows)
        print(f"run {n + 1}: " + ", ".join(f"load {i + 1} {row[0]:.2f} s ({row[0] / rows[0][0]:.2f}×, gc "
                                           f"{sum(row[1]):.2f} s)" for i, row in enumerate(rows)), flush=True)
    lines = [f"{args.loads} loads of {int(args.entries):,} XADD (pipelines of 1000) through the {args.via}, one process "
             f"per run, {args.runs} runs one after the other, earlier servers kept alive, {_gc_words(args)}; CPU time",
             "", "| load | CPU s (median) | ÷ first: median of the runs (range) | in gc s (median) |",
             "|---:|---:|---:|---:|"]
    for i in range(args.loads):
        ratios = [rows[i][0] / rows[0][0] for rows in runs]
        lines.append(f"| {i + 1} | {statistics.median(rows[i][0] for rows in runs):.2f} | "
                     f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f}) | "
                     f"{statistics.median(sum(rows[i][1]) for rows in runs):.2f} |")
    report.emit("\n".join(lines), args.out, "Large loads in one process (`python benchmarks/loads.py`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
