"""Per-test cost of the pytest fixture, the plugin's start-up cost, and what ended tests leave alive.

    python benchmarks/pertest.py [--tests 300] [--repeat 5] [--separate [--pairs 3]] [--out benchmarks/results-pertest.md]

* **per-test cost**: one pytest session (a subprocess) runs ``--tests`` rounds of three tests, interleaved: an
  empty test, a test on a plain fakeredis fixture (``r = fakeredis.FakeRedis(); yield r; r.close()``) and a
  test on ``fake_redis_streams.client``; the last two do ``XADD`` + ``XLEN`` on their fresh server. A
  ``conftest.py`` hook measures the CPU time of each test's whole protocol (set-up, call, tear-down:
  ``time.process_time``); the report gives the median and the mean per kind and the overhead above the empty
  test (the mean catches costs that land on a few tests only, e.g. cyclic garbage collections; the first test
  of each kind is left out of both and shown apart: it pays the kind's one-time imports). A cyclic collection
  runs inside whichever test crosses the allocation threshold, so interleaved kinds pay each other's collections
  (the report gives the GC time that fell in each kind's tests); ``--separate`` runs the two fixtures in
  sessions of their own instead, as a user's suite runs one of them: a pair of sessions, (empty, fakeredis)
  and (empty, fixture) interleaved in each, so each fixture pays only its own collections and is measured
  against the empty test *of its own session* (sessions differ by more than the overhead: a baseline from
  another session does not cancel); ``--pairs`` pairs, their order alternated, the ratio of each pair and
  their median reported.
  (Interleaving in one process makes the kinds share the machine's state; CPU time is what other processes
  on a shared machine inflate least.)
* **plugin start**: a one-test suite that never asks for the fixture, with the plugin loaded and with
  ``-p no:fake_redis_streams`` (``--repeat`` runs of each, interleaved, the fastest CPU time of each: on a
  shared machine interference only adds); the difference is what installing the package costs every pytest
  run (and every xdist worker). ``python -X importtime`` of the plugin module is reported beside it (fastest
  of ``--repeat`` fresh processes).
* **alive after gc**: after the per-test session's rounds, its last test counts the ``FakeStreamsServer``
  objects still alive after ``gc.collect()``, and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
from typing import Dict, List, Tuple

import report  # benchmarks/ is the folder of the script, first on sys.path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CONFTEST = """
import gc
import statistics
import time
from collections import defaultdict

import pytest

TIMES = defaultdict(list)
NO_GC = defaultdict(list)  # kind -> CPU seconds of each test less the cyclic collections that ran inside it
GC_TIMES = defaultdict(float)  # kind -> CPU seconds of the cyclic collections that ran inside its tests
GC_CLOCK = [0.0, 0.0]  # [total so far, start of the running collection]


def _gc_timer(phase, info):
    if phase == "start":
        GC_CLOCK[1] = time.process_time()
    else:
        GC_CLOCK[0] += time.process_time() - GC_CLOCK[1]


gc.callbacks.append(_gc_timer)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start, gc_start = time.process_time(), GC_CLOCK[0]
    yield
    spec = getattr(item, "callspec", None)
    if spec is not None and "kind" in spec.params:
        elapsed, collecting = time.process_time() - start, GC_CLOCK[0] - gc_start
        TIMES[spec.params["kind"]].append(elapsed)
        NO_GC[spec.params["kind"]].append(elapsed - collecting)
        if spec.params["i"]:
            GC_TIMES[spec.params["kind"]] += collecting


def pytest_sessionfinish(session):
    for kind, values in sorted(TIMES.items()):
        first, rest = values[0], values[1:]  # the first test of a kind pays its one-time imports
        ordered = sorted(rest)
        no_gc = NO_GC[kind][1:]
        print(f"KIND {kind} {ordered[len(ordered) // 2] * 1e3:.4f} {len(values)} MEAN {statistics.mean(rest) * 1e3:.4f} "
              f"FIRST {first * 1e3:.4f} GC {GC_TIMES[kind] / len(rest) * 1e3:.4f} "
              f"NOGC {sorted(no_gc)[len(no_gc) // 2] * 1e3:.4f} {statistics.mean(no_gc) * 1e3:.4f}")
"""

PER_TEST = """
import gc, os, resource

import fakeredis
import pytest


@pytest.fixture
def plain_fakeredis():
    client = fakeredis.FakeRedis()
    yield client
    client.close()


@pytest.fixture
def nothing():
    yield None


FIXTURE = {{"empty": "nothing", "fakeredis": "plain_fakeredis", "fixture": "fake_redis_streams"}}


KINDS = [k for k in ("empty", "fakeredis", "fixture") if k in os.environ.get("PERTEST_KINDS", "empty fakeredis fixture").split()]


@pytest.mark.parametrize("i,kind", [(i, kind) for i in range({n}) for kind in KINDS])
def test_one(request, i, kind):
    value = request.getfixturevalue(FIXTURE[kind])
    if kind != "empty":
        r = value if kind == "fakeredis" else value.client
        r.xadd("s", {{"f": "v"}})
        assert r.xlen("s") == 1


def test_zz_alive():
    from fake_streams.server import FakeStreamsServer
    gc.collect()
    alive = sum(1 for o in gc.get_objects() if isinstance(o, FakeStreamsServer))
    print(f"ALIVE={{alive}} RSS_KB={{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}}")
"""

PLAIN = """
def test_plain():
    assert True
"""


def write_suite(into: str, name: str, files: Dict[str, str]) -> str:
    folder = os.path.join(into, name)
    os.makedirs(folder, exist_ok=True)
    for filename, text in files.items():
        with open(os.path.join(folder, filename), "w") as fh:
            fh.write(textwrap.dedent(text))
    return folder


def run_suite(folder: str, *args: str, kinds: str = "") -> Tuple[float, str]:
    """CPU seconds (user + system) of one pytest subprocess run in ``folder``, and its output (``kinds``: the
    per-test suite's kinds to run, default all three)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if kinds:
        env["PERTEST_KINDS"] = kinds
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *args],
                          cwd=folder, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"suite in {folder} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc.stdout


def import_ms() -> float:
    """Self + children import time of ``pytest_plugin`` (``-X importtime``), pytest already imported."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import pytest, dataclasses; import pytest_plugin"],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    for line in proc.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == "pytest_plugin":
            return int(parts[1]) / 1000
    return float("nan")


def ratio_line(no_gc: Dict[str, Tuple[float, float]]) -> str:
    """``fixture ÷ fakeredis fixture`` overhead, median and mean, of the per-test times less the GC's."""
    if not {"empty", "fakeredis", "fixture"} <= set(no_gc):
        return "?"
    (e_med, e_mean), (p_med, p_mean), (f_med, f_mean) = no_gc["empty"], no_gc["fakeredis"], no_gc["fixture"]
    return (f"fixture {f_med - e_med:.3f} / {f_mean - e_mean:.3f} ms, fakeredis {p_med - e_med:.3f} / {p_mean - e_mean:.3f} "
            f"ms (median / mean above the empty test): {(f_med - e_med) / (p_med - e_med):.2f}× (median), "
            f"{(f_mean - e_mean) / (p_mean - e_mean):.2f}× (mean)")


Kinds = Dict[str, Dict[str, float]]


def parse_kinds(out: str) -> Kinds:
    """The per-kind figures a per-test session printed (ms): median, mean, first, gc (mean per test), nogc_median,
    nogc_mean."""
    pattern = (r"KIND (\w+) ([\d.]+) \d+ MEAN ([\d.]+) FIRST ([\d.]+) GC ([\d.]+) NOGC ([\d.]+) ([\d.]+)")
    names = ("median", "mean", "first", "gc", "nogc_median", "nogc_mean")
    return {m.group(1): dict(zip(names, map(float, m.groups()[1:]))) for m in re.finditer(pattern, out)}


def overheads(kinds: Kinds, kind: str, empty: Dict[str, float]) -> Tuple[float, float]:
    """``kind``'s median and mean per-test time above ``empty``'s (ms)."""
    return kinds[kind]["median"] - empty["median"], kinds[kind]["mean"] - empty["mean"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", type=int, default=300, help="rounds of (empty, fakeredis, fixture) tests")
    ap.add_argument("--repeat", type=int, default=5, help="runs of the plugin-start suites and of -X importtime")
    ap.add_argument("--separate", action="store_true",
                    help="run the two fixtures in sessions of their own (each beside its own empty test)")
    ap.add_argument("--pairs", type=int, default=3, help="--separate: pairs of sessions (order alternated)")
    ap.add_argument("--out", help="markdown file to write (default: print only)")
    args = ap.parse_args()
    pairs: List[Tuple[Kinds, Kinds]] = []  # --separate: (the fakeredis session's kinds, the fixture session's)
    with tempfile.TemporaryDirectory() as tmp:
        per_test = write_suite(tmp, "per_test", {"conftest.py": CONFTEST, "test_per_test.py": PER_TEST.format(n=args.tests),
                                                 "pytest.ini": "[pytest]\n"})
        plain = write_suite(tmp, "plain", {"test_plain.py": PLAIN, "pytest.ini": "[pytest]\n"})
        if args.separate:
            out = ""
            for n in range(args.pairs):
                order = ("fakeredis", "fixture") if n % 2 == 0 else ("fixture", "fakeredis")
                ran = {kind: run_suite(per_test, kinds="empty " + kind)[1] for kind in order}
                out += ran["fixture"]
                pairs.append((parse_kinds(ran["fakeredis"]), parse_kinds(ran["fixture"])))
        else:
            _, out = run_suite(per_test)
        starts: Dict[str, List[float]] = {"loaded": [], "not loaded": []}
        for _ in range(args.repeat):
            starts["loaded"].append(run_suite(plain)[0])
            starts["not loaded"].append(run_suite(plain, "-p", "no:fake_redis_streams")[0])
    alive = ([None] + list(re.finditer(r"ALIVE=(\d+) RSS_KB=(\d+)", out)))[-1]  # separate: a fixture session's
    start_ms = (min(starts["loaded"]) - min(starts["not loaded"])) * 1000
    imports = [import_ms() for _ in range(args.repeat)]
    lines = per_test_lines_separate(args, pairs) if args.separate else per_test_lines(args, parse_kinds(out))
    lines += [
        f"* plugin start (a one-test suite, fastest of {args.repeat} CPU times, plugin loaded − `-p no:fake_redis_streams`): "
        f"{start_ms:.1f} ms (loaded: {', '.join(f'{x:.3f}' for x in starts['loaded'])} s; not loaded: "
        f"{', '.join(f'{x:.3f}' for x in starts['not loaded'])} s); `-X importtime` of pytest_plugin, fastest of "
        f"{args.repeat}: {min(imports):.1f} ms (median {statistics.median(imports):.1f} ms)",
        f"* after {(2 if args.separate else 3) * args.tests} tests, gc.collect(): {alive.group(1) if alive else '?'} "
        f"FakeStreamsServer alive (peak RSS {int(alive.group(2)) // 1024 if alive else '?'} MB)",
    ]
    report.emit("\n".join(lines), args.out, "Per-test cost, plugin start, leaks (`python benchmarks/pertest.py`)")
    return 0


def per_test_lines(args: argparse.Namespace, kinds: Kinds) -> List[str]:
    """The report of one interleaved session of the three kinds."""
    empty = kinds["empty"]
    (fixture_ms, fixture_mean), (fakeredis_ms, fakeredis_mean) = (overheads(kinds, "fixture", empty),
                                                                  overheads(kinds, "fakeredis", empty))
    no_gc = {kind: (k["nogc_median"], k["nogc_mean"]) for kind, k in kinds.items()}
    row = "| {} | {median:.3f} | {} | {mean:.3f} | {} | {first:.1f} |"
    return [
        f"One pytest session of {args.tests} interleaved rounds (empty test, fakeredis fixture, fake_redis_streams), "
        "CPU time per test (set-up + call + tear-down), median and mean of the rounds after the first (the first "
        "test of a kind pays its one-time imports: shown apart); shared 2-CPU machine",
        "",
        "| test | median CPU ms | above the empty test | mean CPU ms | above the empty test | first test ms |",
        "|---|---:|---:|---:|---:|---:|",
        row.format("empty", "—", "—", **empty),
        row.format("plain fakeredis fixture, XADD + XLEN", f"{fakeredis_ms:.3f} ms", f"{fakeredis_mean:.3f} ms",
                   **kinds["fakeredis"]),
        row.format("`fake_redis_streams.client`, XADD + XLEN", f"{fixture_ms:.3f} ms", f"{fixture_mean:.3f} ms",
                   **kinds["fixture"]),
        "",
        f"* per-test overhead: fixture ÷ fakeredis fixture = {fixture_ms / fakeredis_ms:.2f}× (median), "
        f"{fixture_mean / fakeredis_mean:.2f}× (mean)",
        "* the same without the cyclic collections that ran inside the tests (each test's CPU time less their time; "
        "interleaved, a collection lands in whichever kind crosses the allocation threshold): "
        + ratio_line(no_gc),
        "* cyclic GC inside the tests, mean per test (a collection runs inside whichever test crosses the allocation "
        "threshold, so interleaved kinds pay each other's): "
        + ", ".join(f"{kind} {k['gc']:.3f} ms" for kind, k in sorted(kinds.items())),
    ]


def per_test_lines_separate(args: argparse.Namespace, pairs: List[Tuple[Kinds, Kinds]]) -> List[str]:
    """The report of ``--separate``'s pairs of sessions: each fixture above the empty test of its own session."""
    lines = [
        f"{len(pairs)} pairs of pytest sessions, (empty, fakeredis fixture) and (empty, fake_redis_streams), "
        f"{args.tests} interleaved rounds each, the pairs' order alternated; CPU time per test (set-up + call + "
        "tear-down) above the empty test of the same session, median and mean of the rounds after the first; "
        "each fixture pays only its own cyclic collections; shared 2-CPU machine",
        "",
        "| pair | fakeredis above empty, median / mean ms | fixture above empty, median / mean ms | ratio median | "
        "ratio mean | GC per test, fakeredis / fixture ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    medians, means = [], []
    for n, (plain, ours) in enumerate(pairs, 1):
        (p_med, p_mean), (f_med, f_mean) = (overheads(plain, "fakeredis", plain["empty"]),
                                            overheads(ours, "fixture", ours["empty"]))
        medians.append(f_med / p_med)
        means.append(f_mean / p_mean)
        lines.append(f"| {n} | {p_med:.3f} / {p_mean:.3f} | {f_med:.3f} / {f_mean:.3f} | {medians[-1]:.2f}× | "
                     f"{means[-1]:.2f}× | {plain['fakeredis']['gc']:.3f} / {ours['fixture']['gc']:.3f} |")
    lines += ["", f"* per-test overhead, fixture ÷ fakeredis fixture, median of the pairs: "
                  f"{statistics.median(medians):.2f}× (median), {statistics.median(means):.2f}× (mean)"]
    return lines


if __name__ == "__main__":
    sys.exit(main())
