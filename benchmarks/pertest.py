"""Per-test cost of the pytest fixture, the plugin's start-up cost, and what ended tests leave alive.

    python benchmarks/pertest.py [--tests 200] [--repeat 3] [--out benchmarks/results-pertest.md]

Each figure is the CPU time of a ``python -m pytest`` subprocess (``resource.getrusage(RUSAGE_CHILDREN)``:
other processes on a shared machine do not inflate it), suites run interleaved, medians reported:

* **per-test overhead**: suites of tests that each do ``XADD`` + ``XLEN`` on a fresh server — through
  ``fake_redis_streams.client``, and through a plain fakeredis fixture (``r = fakeredis.FakeRedis(); yield r;
  r.close()``; run with ``-p no:fake_redis_streams``) — and of empty tests, each at ``--tests`` and at 4× as
  many tests: the difference of the two sizes divided by the tests added is the cost of one test (imports and
  start-up cancel out); minus the empty test's, it is the fixture's overhead.
* **plugin start**: a one-test suite that never asks for the fixture, with the plugin loaded and with
  ``-p no:fake_redis_streams``; the difference is what installing the package costs every pytest run
  (and every xdist worker). ``python -X importtime`` of the plugin module is reported beside it.
* **alive after gc**: the fixture suite's last test counts the ``FakeStreamsServer`` objects still alive after
  ``gc.collect()`` once every other test ended (each wrote entries), and the process's peak RSS.
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
from typing import Dict, List

import report  # benchmarks/ is the folder of the script, first on sys.path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SUITES = {
    "empty": """
        import pytest

        @pytest.mark.parametrize("i", range({n}))
        def test_nothing(i):
            pass
        """,
    "fakeredis": """
        import fakeredis
        import pytest

        @pytest.fixture
        def r():
            client = fakeredis.FakeRedis()
            yield client
            client.close()

        @pytest.mark.parametrize("i", range({n}))
        def test_one(r, i):
            r.xadd("s", {{"f": "v"}})
            assert r.xlen("s") == 1
        """,
    "fixture": """
        import gc, resource
        import pytest

        @pytest.mark.parametrize("i", range({n}))
        def test_one(fake_redis_streams, i):
            r = fake_redis_streams.client
            r.xadd("s", {{"f": "v"}})
            assert r.xlen("s") == 1

        def test_zz_alive():
            from fake_streams.server import FakeStreamsServer
            gc.collect()
            alive = sum(1 for o in gc.get_objects() if isinstance(o, FakeStreamsServer))
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(f"ALIVE={{alive}} RSS_KB={{rss}}")
        """,
    "plain": """
        def test_plain():
            assert True
        """,
}


def write_suites(into: str, n: int) -> Dict[str, str]:
    """``{suite name + size: folder}``: each suite at ``n`` and at ``4 * n`` tests (the plain suite once)."""
    paths = {}
    for name, text in SUITES.items():
        for size in ((1,) if name == "plain" else (n, 4 * n)):
            folder = os.path.join(into, f"{name}{size}")
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, f"test_{name}.py"), "w") as fh:
                fh.write(textwrap.dedent(text.format(n=size)))
            with open(os.path.join(folder, "pytest.ini"), "w") as fh:
                fh.write("[pytest]\n")
            paths[f"{name}{size}" if name != "plain" else name] = folder
    return paths


def run_suite(folder: str, *args: str) -> (float, str):
    """CPU seconds (user + system) of one pytest subprocess run in ``folder``, and its output."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", help="markdown file to write (default: print only)")
    args = ap.parse_args()
    runs: Dict[str, List[float]] = {}
    alive = ""
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_suites(tmp, args.tests)
        n = args.tests
        plans = [(f"{s} x{k}", f"{s}{k}", extra) for k in (n, 4 * n)
                 for s, extra in (("empty", ()), ("fakeredis", ("-p", "no:fake_redis_streams")), ("fixture", ()))]
        plans += [("plain, plugin loaded", "plain", ()),
                  ("plain, -p no:fake_redis_streams", "plain", ("-p", "no:fake_redis_streams"))]
        for rep in range(args.repeat):
            for label, suite, extra in plans[rep % len(plans):] + plans[: rep % len(plans)]:
                seconds, out = run_suite(paths[suite], *extra)
                runs.setdefault(label, []).append(seconds)
                found = re.search(r"ALIVE=\d+ RSS_KB=\d+", out)
                if found:
                    alive = found.group(0)
    med = {k: statistics.median(v) for k, v in runs.items()}
    n = args.tests

    def per_test_ms(suite: str) -> float:
        return (med[f"{suite} x{4 * n}"] - med[f"{suite} x{n}"]) / (3 * n) * 1000

    empty_ms = per_test_ms("empty")
    fixture_ms = per_test_ms("fixture") - empty_ms
    fakeredis_ms = per_test_ms("fakeredis") - empty_ms
    start_ms = (med["plain, plugin loaded"] - med["plain, -p no:fake_redis_streams"]) * 1000
    lines = [
        f"CPU time of pytest subprocesses, median of {args.repeat} interleaved runs, suites of {n} and {4 * n} tests "
        "(shared 2-CPU machine: CPU time, not wall time)",
        "",
        "| suite | CPU s (median) | runs |",
        "|---|---:|---|",
    ]
    lines += [f"| {k} | {med[k]:.3f} | {', '.join(f'{x:.3f}' for x in runs[k])} |" for k in runs]
    lines += [
        "",
        f"* one empty test: {empty_ms:.2f} ms; overhead above it: fixture {fixture_ms:.2f} ms, fakeredis fixture "
        f"{fakeredis_ms:.2f} ms (fixture ÷ fakeredis {fixture_ms / fakeredis_ms:.2f}×)",
        f"* plugin start (plain suite, plugin loaded − `-p no:fake_redis_streams`): {start_ms:.1f} ms; "
        f"`-X importtime` of pytest_plugin: {import_ms():.1f} ms",
        f"* after {4 * n} fixture tests, gc.collect(): {alive.replace('ALIVE=', '').split()[0] if alive else '?'} "
        f"FakeStreamsServer alive ({alive})",
    ]
    report.emit("\n".join(lines), args.out, "Per-test cost, plugin start, leaks (`python benchmarks/pertest.py`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
