"""Large loads in one process: the 2nd and 3rd bulk load must cost what the 1st did.

    python benchmarks/loads.py [--entries 1e6] [--loads 3] [--via fixture|server|control] [--release]
                               [--runs N] [--no-gc] [--out FILE]

Each load is what a test that fills a big stream does: a fresh server (through the pytest fixture's handle
by default, ``--via server`` for a bare ``FakeStreamsServer``), ``--entries`` ``XADD s * user u:1234 action
click`` in non-transactional pipelines of 1000, the server kept alive afterwards (the worst case: a suite
whose earlier streams are still referenced). ``--release`` closes the handle after its load, as the
fixture's teardown does at the end of a test, and drops it: the path of a suite whose tests each fill a
stream. The garbage collector runs with Python's defaults, as in users' processes (no ``gc.freeze``).
Reported per load: CPU time (``time.process_time``), split into user and system time (``getrusage``), the
time spent in collections of each generation (``gc.callbacks``), the page faults, and the ratio to the
first load.

``--via control`` is the yardstick: no Redis at all, plain Python building and keeping the same shape of
data per entry as the engine keeps (an integer key, the ID's bytes, a field tuple with two fresh value
bytes, in chunks of 1000 frozen to tuples) with as many short-lived tuples per entry as a pipelined XADD
makes. What the control's later loads cost above its first is the interpreter's and the machine's (a
bigger heap of the same shape, the kernel's cost per page fault growing with the process's size), not ours;
``--runs N`` runs it beside the fixture, alternated, when asked with ``--via fixture,control``, and the
report takes the control's extra seconds off ours. (Measured in session 12, findings §15: the control's
third load costs what its first did, so on this machine the heap's size alone charges nothing.)

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
    """(owner, client) for one load: the fixture's handle and its client, a bare server and its client, or the
    control's store and itself."""
    if via == "fixture":
        from pytest_plugin._fixture import FakeRedisStreams
        from pytest_plugin._options import Options

        handle = FakeRedisStreams(Options(patch=False))
        return handle, handle.client
    if via == "control":
        control = Control()
        return control, control
    from fake_streams import FakeStreamsServer

    server = FakeStreamsServer()
    return server, server.client(protocol=2)


def release(owner: Any) -> None:
    """``--release``: what the fixture's teardown does to a test's server (the control just drops its data)."""
    close = getattr(owner, "close", None)
    if close is not None:
        close()


def load(client: Any, entries: int) -> None:
    if isinstance(client, Control):
        client.load(entries)
        return
    for start in range(0, entries, 1000):
        pipe = client.pipeline(transaction=False)
        for _ in range(min(1000, entries - start)):
            pipe.xadd("s", {"user": "u:1234", "action": "click"})
        pipe.execute()


class Control:
    """The yardstick (``--via control``): what a load keeps, built by plain Python with no Redis in between.

    Per entry the engine keeps an integer key (``ms << 64 | seq``), the ID's bytes and a field tuple whose two
    values are fresh bytes (the names are shared), in chunks of 1000 that are frozen to tuples once full; a
    pipelined XADD also makes about five short-lived tuples (redis-py's command and its ``(args, options)``, the
    pipeline's queued command, the encoded arguments, the reply). The control builds exactly that: its later
    loads' extra cost is what the interpreter and the machine charge for a bigger heap of this shape. O(entries).
    """

    def __init__(self) -> None:
        self.chunks: List[tuple] = []
        self.ms = int(time.time() * 1000)

    def load(self, entries: int) -> None:
        names = (b"user", b"action")
        chunk: List[Any] = []
        seq = 0
        for start in range(0, entries, 1000):
            queued = []
            for _ in range(min(1000, entries - start)):
                command = ("XADD", "s", "*", "user", "u:1234", "action", "click")
                queued.append((command, {}))
            replies = []
            for command, _options in queued:
                encoded = tuple(part.encode() for part in command)
                fields = (names[0], bytes(encoded[4]), names[1], bytes(encoded[6]))
                seq += 1
                chunk.append((self.ms << 64 | seq, b"%d-%d" % (self.ms, seq), fields))
                if len(chunk) == 1000:
                    self.chunks.append(tuple(chunk))
                    chunk = []
                replies.append((b"%d-%d" % (self.ms, seq),))
        if chunk:
            self.chunks.append(tuple(chunk))


def one_run(via: str, entries: int, loads: int, released: bool, quiet: bool) -> List[Dict[str, Any]]:
    """One process's sequence of loads; per load its CPU, user and system seconds, the collections' seconds and
    counts per generation, and the page faults."""
    clock = GcClock()
    kept: List[Any] = []
    rows: List[Dict[str, Any]] = []
    for i in range(loads):
        owner, client = make_client(via)
        clock.reset()
        t0, r0 = time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
        load(client, entries)
        seconds = time.process_time() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        row = {"cpu": seconds, "user": r1.ru_utime - r0.ru_utime, "system": r1.ru_stime - r0.ru_stime,
               "faults": r1.ru_minflt - r0.ru_minflt, "gc": list(clock.seconds), "collections": list(clock.count)}
        rows.append(row)
        if released:
            release(owner)
            del owner, client
        else:
            kept.append((owner, client))
        if not quiet:
            print(f"{via} load {i + 1}: {seconds:.2f} s CPU ({seconds / rows[0]['cpu']:.2f}× the first; user "
                  f"{row['user']:.2f} s, system {row['system']:.2f} s); in gc {sum(clock.seconds):.2f} s (" + ", ".join(
                      f"gen{g} {clock.count[g]}× {clock.seconds[g]:.2f} s" for g in range(3)) + f"); "
                  f"{row['faults']:,} page faults", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=float, default=1e6)
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--via", default="fixture",
                    help="fixture, server or control, or several separated by commas (with --runs: alternated, "
                         "one process each per run)")
    ap.add_argument("--release", action="store_true",
                    help="close each load's handle after it, as the fixture's teardown does (default: kept alive)")
    ap.add_argument("--runs", type=int, default=1,
                    help="run the whole sequence in this many fresh processes, one after the other, and report the "
                         "median ratio per load (one run's ratios move by ±0.2 on a shared 2-CPU machine)")
    ap.add_argument("--out", help="markdown file to write (default: print only)")
    ap.add_argument("--no-gc", action="store_true", help="diagnosis: the collector off (what is left is not the GC)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one run's rows, for --runs
    args = ap.parse_args()
    vias = args.via.split(",")
    for via in vias:
        if via not in ("fixture", "server", "control"):
            ap.error(f"--via: {via!r} is not one of fixture, server, control")
    if args.runs > 1 or len(vias) > 1:
        return _runs(args, vias)
    if args.no_gc:
        gc.disable()
    rows = one_run(vias[0], int(args.entries), args.loads, args.release, quiet=args.json)
    if args.json:
        print(json.dumps(rows))
        return 0
    lines = [_title(args, vias[0]) + "; CPU time", "",
             "| load | CPU s | ÷ first | user s | system s | page faults | in gc (s) | gen0 / gen1 / gen2 collections |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for i, row in enumerate(rows):
        lines.append(f"| {i + 1} | {row['cpu']:.2f} | {row['cpu'] / rows[0]['cpu']:.2f}× | {row['user']:.2f} | "
                     f"{row['system']:.2f} | {row['faults']:,} | {sum(row['gc']):.2f} | "
                     + " / ".join(str(c) for c in row["collections"]) + " |")
    report.emit("\n".join(lines), args.out, "Large loads in one process (`python benchmarks/loads.py`)")
    return 0


def _title(args: Any, via: str, runs: str = "one process") -> str:
    what = "plain Python keeping the same data (the control)" if via == "control" else f"the {via}"
    kept = "each handle closed after its load (the fixture's teardown)" if args.release else "earlier servers kept alive"
    return (f"{args.loads} loads of {int(args.entries):,} XADD (pipelines of 1000) through {what}, {runs}, {kept}, "
            + _gc_words(args))


def _gc_words(args: Any) -> str:
    """How the report names the collector's state (``--no-gc``: off)."""
    return "the cyclic GC off (--no-gc)" if args.no_gc else "Python's default GC"


def _runs(args: Any, vias: List[str]) -> int:
    """``--runs N``: the sequence in N fresh processes one after the other (per run one process per ``--via``,
    alternated); per load the median of the runs' ratios to their own first load (and the runs' range), the
    median CPU, user, system and GC seconds."""
    results: Dict[str, List[List[Dict[str, Any]]]] = {via: [] for via in vias}
    for n in range(args.runs):
        for via in vias:
            command = [sys.executable, os.path.abspath(__file__), "--json", "--entries", str(args.entries), "--loads",
                       str(args.loads), "--via", via] + (["--no-gc"] if args.no_gc else []) + (
                           ["--release"] if args.release else [])
            rows = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
            results[via].append(rows)
            print(f"run {n + 1} {via}: " + ", ".join(
                f"load {i + 1} {row['cpu']:.2f} s ({row['cpu'] / rows[0]['cpu']:.2f}×, user {row['user']:.2f}, "
                f"system {row['system']:.2f}, gc {sum(row['gc']):.2f} s)" for i, row in enumerate(rows)), flush=True)
    sections = []
    for via in vias:
        runs = results[via]
        lines = [_title(args, via, f"one process per run, {args.runs} runs one after the other"
                        + (" (alternated with " + ", ".join(v for v in vias if v != via) + ")" if len(vias) > 1 else ""))
                 + "; CPU time", "",
                 "| load | CPU s (median) | ÷ first: median of the runs (range) | user s | system s | in gc s |",
                 "|---:|---:|---:|---:|---:|---:|"]
        for i in range(args.loads):
            ratios = [rows[i]["cpu"] / rows[0]["cpu"] for rows in runs]
            lines.append(f"| {i + 1} | {statistics.median(rows[i]['cpu'] for rows in runs):.2f} | "
                         f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f}) | "
                         f"{statistics.median(rows[i]['user'] for rows in runs):.2f} | "
                         f"{statistics.median(rows[i]['system'] for rows in runs):.2f} | "
                         f"{statistics.median(sum(rows[i]['gc']) for rows in runs):.2f} |")
        lines.append("")
        lines.append("Per run, last load ÷ first: " + ", ".join(
            f"{rows[-1]['cpu'] / rows[0]['cpu']:.2f}" for rows in runs))
        sections.append("\n".join(lines))
    if "control" in vias and len(vias) > 1:
        lines = ["The later loads' extra seconds (last load − first) beside the control's in the same run, and the "
                 "last load ÷ first once the control's extra seconds are taken off (what is left is ours):", ""]
        controls = results["control"]
        for via in vias:
            if via == "control":
                continue
            net = [(a[-1]["cpu"] - (c[-1]["cpu"] - c[0]["cpu"])) / a[0]["cpu"] for a, c in zip(results[via], controls)]
            lines.append(f"* {via}: extra " + ", ".join(f"{a[-1]['cpu'] - a[0]['cpu']:+.2f}" for a in results[via])
                         + " s; control's extra " + ", ".join(f"{c[-1]['cpu'] - c[0]['cpu']:+.2f}" for c in controls)
                         + f" s; net ÷ first median {statistics.median(net):.2f}× ("
                         + ", ".join(f"{r:.2f}" for r in net) + ")")
        sections.append("\n".join(lines))
    report.emit("\n\n".join(sections), args.out, "Large loads in one process (`python benchmarks/loads.py`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
