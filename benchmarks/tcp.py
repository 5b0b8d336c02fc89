"""The TCP server against a real redis-server, side by side in one run (issue 15's targets).

Starts ``python -m fake_streams serve`` (profile 7.0) and ``redis-server`` on free loopback ports and,
for ``--rounds`` rounds, each workload on the fake and on the real server back to back (the first of the two
alternating from round to round), measures:

* ``redis-benchmark -c 50`` requests/s: PING_INLINE, PING_MBULK, ``XADD s * f v``, and ``XADD … -P 16``;
* the server process's CPU time per request during each redis-benchmark run (from ``/proc/PID/stat``):
  on a shared, loaded machine requests/s swing with the load, the CPU a request costs much less; and
  its kernel part (system time: the ``recv``/``send``/``epoll_wait`` the request costs, the same
  syscalls for both servers), so that what is left is the server's own (user) time;
* the time of one XADD with a 16 MiB and a 64 MiB value (send to reply, one connection).

Prints a Markdown table (median per cell, every sample, the fake/real ratio), the fake/real ratio of each
round's requests/s (the two runs of a workload in a round are next to each other in time, so they saw
about the same load) with its range, and the load average before, during (at each round's start) and after, since the
machine may be shared. Bounded: every redis-benchmark run has ``-n`` requests and a
timeout. ``python benchmarks/tcp.py [--rounds 3] [-n 50000] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS: List[Tuple[str, List[str], int]] = [
    ("PING_INLINE", ["-t", "ping_inline"], 1),
    ("PING_MBULK", ["-t", "ping_mbulk"], 1),
    ("XADD", ["XADD", "s", "*", "f", "v"], 1),
    ("XADD -P 16", ["-P", "16", "XADD", "p", "*", "f", "v"], 4),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start() -> Tuple[subprocess.Popen, int, subprocess.Popen, int]:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    fake = subprocess.Popen([sys.executable, "-m", "fake_streams", "serve", "--port", "0", "--version", "7.0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert fake.stdout is not None
    fake_port = int(fake.stdout.readline().strip().rsplit(":", 1)[1].split("/")[0])
    real_port = _free_port()
    real = subprocess.Popen(["redis-server", "--port", str(real_port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", tempfile.mkdtemp(prefix="fake-streams-bench-")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", real_port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)  # real-time: waiting for redis-server to listen
    return fake, fake_port, real, real_port


def _cpu_seconds(pid: int) -> Tuple[float, float]:
    """(user, system) CPU seconds of process ``pid`` (Linux ``/proc``; zeros elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _benchmark(pid: int, port: int, args: List[str], requests: int) -> Tuple[float, float, float]:
    """(requests/s, server CPU µs per request, of which system) of one bounded redis-benchmark run."""
    user, system = _cpu_seconds(pid)
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-c", "50", "-n", str(requests), "-q", *args],
                         capture_output=True, text=True, timeout=300).stdout
    user_after, system_after = _cpu_seconds(pid)
    found = re.findall(r"([\d.]+) requests per second", out.replace("\r", "\n"))
    per_request = 1e6 / requests
    return ((float(found[-1]) if found else 0.0), (user_after - user + system_after - system) * per_request,
            (system_after - system) * per_request)


def _command(port: int, inline: bytes) -> int:
    """An inline command's integer reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(inline + b"\r\n")
        return int(sock.recv(100)[1:].split(b"\r\n")[0])


def _big_xadd(port: int, size: int) -> float:
    value = b"v" * size
    request = b"*5\r\n$4\r\nXADD\r\n$3\r\nbig\r\n$1\r\n*\r\n$1\r\nf\r\n$%d\r\n%s\r\n" % (size, value)
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    start = time.perf_counter()
    sock.sendall(request)
    reply = sock.recv(100)
    elapsed = time.perf_counter() - start
    sock.sendall(b"DEL big\r\n")
    sock.recv(100)
    sock.close()
    if not reply.startswith(b"$"):
        raise RuntimeError(f"XADD of {size} bytes answered {reply!r}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-n", type=int, default=50000, help="requests per redis-benchmark run (x4 for -P 16)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if not shutil.which("redis-benchmark") or not shutil.which("redis-server"):
        print("needs redis-server and redis-benchmark on PATH", file=sys.stderr)
        return 1
    load_before = os.getloadavg()
    fake, fake_port, real, real_port = _start()
    samples: Dict[Tuple[str, str], List[float]] = {}
    loads: List[float] = []
    try:
        sides = [("fake", fake_port, fake.pid), ("real", real_port, real.pid)]
        for round_no in range(args.rounds):
            loads.append(os.getloadavg()[0])
            order = sides if round_no % 2 == 0 else sides[::-1]  # who goes first alternates too
            for name, bench_args, scale in WORKLOADS:  # each workload on both servers back to back
                for side, port, pid in order:
                    rate, cpu_us, system_us = _benchmark(pid, port, bench_args, args.n * scale)
                    samples.setdefault((name, side), []).append(rate)
                    samples.setdefault((f"{name}: server CPU µs/request", side), []).append(cpu_us)
                    samples.setdefault((f"{name}: of which system", side), []).append(system_us)
            for size in (16, 64):
                for side, port, _ in order:
                    samples.setdefault((f"XADD {size} MiB (s)", side), []).append(_big_xadd(port, size << 20))
        lengths = {side: (_command(port, b"XLEN s"), _command(port, b"XLEN p"))
                   for side, port in (("fake", fake_port), ("real", real_port))}
    finally:
        fake.terminate()
        real.terminate()
        fake.wait(10)
        real.wait(10)
    load_after = os.getloadavg()
    lines = [f"load average before {load_before[0]:.2f} / after {load_after[0]:.2f} on {os.cpu_count()} CPUs; "
             f"{args.rounds} rounds, each workload on fake and real back to back", "",
             "| workload | fake (median) | real (median) | fake / real | fake samples | real samples |",
             "|---|---|---|---|---|---|"]
    names = [name for name, _, _ in WORKLOADS]
    for name, _, _ in WORKLOADS:
        names += [f"{name}: server CPU µs/request", f"{name}: of which system"]
    names += ["XADD 16 MiB (s)", "XADD 64 MiB (s)"]
    for name in names:
        fake_s, real_s = samples[(name, "fake")], samples[(name, "real")]
        f, r = statistics.median(fake_s), statistics.median(real_s)
        ratio = f / r if r else float("nan")
        fmt = "{:.3f}" if "MiB" in name else "{:.1f}" if "CPU" in name or "system" in name else "{:.0f}"
        lines.append(f"| {name} | {fmt.format(f)} | {fmt.format(r)} | {ratio:.2f} | "
                     f"{', '.join(fmt.format(x) for x in fake_s)} | {', '.join(fmt.format(x) for x in real_s)} |")
    lines += ["", "fake / real requests/s per round (the same round's two runs), and their range:", ""]
    for name, _, _ in WORKLOADS:
        pairs = [f / r for f, r in zip(samples[(name, "fake")], samples[(name, "real")]) if r]
        lines.append(f"- {name}: {', '.join(f'{x:.2f}' for x in pairs)} (range {min(pairs):.2f}–{max(pairs):.2f})")
    lines += ["", f"load average at each round's start: {', '.join(f'{x:.2f}' for x in loads)}"]
    expected = (args.rounds * args.n, args.rounds * args.n * 4)
    lines += ["", f"-c 50 without a drop: XLEN s / XLEN p after the runs = {lengths} (expected {expected} each)"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
