"""Where does the time of this project's (backend *ours*) stream commands go?

    python benchmarks/profile_engine.py [--size 1e4] [--ops 2000] [--workloads xadd,xrange10] [--out benchmarks/profile.md]
    python benchmarks/profile_engine.py --engine-only --engine-sizes 1e3,1e6 --repeat 9 --stat min --out /tmp/e.md

Two views, written as markdown (``--out``) and printed:

1. **Layers under cProfile**: each workload of ``run.py`` runs ``--ops`` units through redis-py on
   ``ours``; the profile's own time (``tottime``) is summed per layer — redis-py, hiredis, fakeredis,
   our transport (``_fakeredis/``, ``server.py``, ``connection.py``), the engine (handlers and models),
   sortedcontainers. Time of C builtins (``len``, ``list.append``, ...) goes to the layer that called
   them, in proportion to the calls (cProfile records the time per caller). Then the top functions.
   cProfile inflates small Python calls, so read the *shares*, not the absolute µs.
2. **Engine only** (no redis-py, no fakeredis, no profiler): the command handlers called directly
   with a minimal context on a dataset built by the handlers, at every ``--engine-sizes`` size:
   the cost the engine itself adds per command and how it scales; then (``--mem-size``) tracemalloc
   bytes per stream entry and per pending entry of the engine's own structures (each XADD gets fresh
   field/value ``bytes``, as commands parsed off a connection do).

``--engine-only`` skips view 1 (no redis-py/fakeredis involved at all).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (HERE, ROOT):
    if path not in sys.path:
        sys.path.insert(0, path)

import backends  # noqa: E402
import workloads  # noqa: E402

LAYERS = ["redis-py", "hiredis", "fakeredis", "transport", "engine", "sortedcontainers", "harness", "other"]
TRANSPORT_FILES = ("server.py", "connection.py", "clock.py")


def layer_of(func: Tuple[str, int, str]) -> Optional[str]:
    """The layer of a profiled function, ``None`` for a C builtin (attributed to its callers)."""
    filename, _, name = func
    path = filename.replace("\\", "/")
    if "hiredis" in name or "/hiredis/" in path:
        return "hiredis"
    if filename == "~" or filename.startswith("<"):
        return None
    if "/fake_streams/" in path:
        return "transport" if path.endswith(TRANSPORT_FILES) or "/_fakeredis/" in path else "engine"
    if "/fakeredis/" in path:
        return "fakeredis"
    if "/redis/" in path:
        return "redis-py"
    if "/sortedcontainers/" in path:
        return "sortedcontainers"
    if "/benchmarks/" in path:
        return "harness"
    return "other"


def layer_times(stats: pstats.Stats) -> Dict[str, float]:
    """Own time per layer; builtins split over their callers' layers (by the callers' recorded time)."""
    out = dict.fromkeys(LAYERS, 0.0)
    raw = stats.stats  # type: ignore[attr-defined]
    for func, (_cc, _nc, tt, _ct, callers) in raw.items():
        layer = layer_of(func)
        if layer is not None:
            out[layer] += tt
            continue
        if not callers:
            out["other"] += tt
            continue
        total = sum(c[2] for c in callers.values()) or 1.0
        for caller, c in callers.items():
            caller_layer = layer_of(caller) or "other"
            out[caller_layer] += tt * (c[2] / total if total else 1 / len(callers))
    return out


def short(func: Tuple[str, int, str]) -> str:
    filename, line, name = func
    if filename == "~":
        return name
    parts = filename.replace("\\", "/").split("/")
    for anchor in ("fake_streams", "fakeredis", "redis", "sortedcontainers", "benchmarks"):
        if anchor in parts:
            i = len(parts) - 1 - parts[::-1].index(anchor)
            return f"{'/'.join(parts[i:])}:{line} {name}"
    return f"{parts[-1]}:{line} {name}"


def build_ours(size: int) -> backends.Ours:
    backend = backends.Ours()
    gc.disable()
    try:
        backend.prefill(workloads.KEY, size)
        backend.read_all_into_pel(workloads.KEY, b"g1", b"c1", size)
        backend.raw("XGROUP", "CREATE", workloads.KEY, "g2", "0")
        backend.prefill(workloads.MAXLEN_KEY, workloads.MAXLEN_FILL)
    finally:
        gc.enable()
    gc.collect()
    return backend


def profile_layers(size: int, ops: int, chosen: List[workloads.Workload], top: int) -> List[str]:
    backend = build_ours(size)
    starts = workloads.random_starts(size)
    md: List[str] = [f"## Layers under cProfile (ours, RESP2, N = {size:,})\n"]
    summary = ["| workload | CPU µs/unit (no profiler) | " + " | ".join(LAYERS[:-2]) + " | other |", "|---|---:|" + "---:|" * (len(LAYERS) - 1)]
    details: List[str] = []
    for wl in chosen:
        job = wl.make(workloads.Ctx(backend, backend.client(2), 2, size, starts))
        n = max(1, min(job.max_n, ops // wl.units_per_call))
        job.reset()
        t0 = time.process_time()
        job.run(n)
        plain = (time.process_time() - t0) / (n * wl.units_per_call) * 1e6
        job.reset()
        prof = cProfile.Profile()
        prof.enable()
        job.run(n)
        prof.disable()
        stats = pstats.Stats(prof)
        units = n * wl.units_per_call
        layers = layer_times(stats)
        total = sum(layers.values()) - layers["harness"]
        shares = {k: v / total for k, v in layers.items() if k != "harness"}
        summary.append(
            f"| {wl.label} | {plain:.1f} | "
            + " | ".join(f"{shares[k]:.0%}" for k in LAYERS if k not in ("harness", "other"))
            + f" | {shares['other']:.0%} |"
        )
        rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
        details.append(f"### {wl.label} — top {top} functions by own time (µs per unit under the profiler)\n")
        details.append("| own µs | cum µs | calls/unit | layer | function |")
        details.append("|---:|---:|---:|---|---|")
        shown = 0
        for func, (_cc, nc, tt, ct, _callers) in rows:
            layer = layer_of(func) or "builtin"
            if layer == "harness":
                continue
            details.append(f"| {tt / units * 1e6:.2f} | {ct / units * 1e6:.2f} | {nc / units:.1f} | {layer} | `{short(func)}` |")
            shown += 1
            if shown >= top:
                break
        details.append("")
        print(f"  profiled {wl.label}: {plain:.1f} µs/unit; "
              + ", ".join(f"{k} {shares[k]:.0%}" for k in LAYERS if k != "harness"), flush=True)
    backend.close()
    md += [
        "Share of the profiled own time (harness excluded) per layer; builtins charged to their callers.\n",
        *summary,
        "",
        *details,
    ]
    return md


# ------------------------------------------------------------------------------------- engine only


class MiniContext:
    """The smallest :class:`fake_streams.commands.base.Context`: a dict keyspace, no transport."""

    def __init__(self, protocol: int = 2) -> None:
        from fake_streams.profiles import get_profile

        self.profile = get_profile("7.4")
        self.protocol = protocol
        self.in_multi = False
        self.from_script = False
        self.keyspace: Dict[bytes, Any] = {}
        self.now = int(time.time() * 1000)

    @property
    def now_ms(self) -> int:
        return self.now

    def lookup(self, key: bytes) -> Any:
        return self.keyspace.get(key)

    def create(self, key: bytes) -> Any:
        from fake_streams.stream import Stream

        stream = self.keyspace[key] = Stream()
        return stream

    def modified(self, key: bytes) -> None:
        pass

    def signal_ready(self, key: bytes) -> None:
        pass

    def notify(self, event: str, key: bytes) -> None:
        pass


def _handlers() -> Dict[str, Any]:
    from fake_streams.commands import COMMANDS

    names = ["xadd", "xrange", "xpending", "xautoclaim", "xreadgroup", "xack", "xtrim", "xgroup|create", "xgroup|setid"]
    return {name: COMMANDS[name].handler for name in names}


def _engine_size(size: int, ops: int, table: Dict[str, List[float]], repeat: int = 5, stat: str = "median") -> None:
    """Build the dataset of ``size`` with the handlers, then time each command's handler."""
    h = _handlers()
    fields = list(workloads.FIELD_LIST)
    ctx = MiniContext()
    gc.disable()
    for i in range(size):
        h["xadd"](ctx, [b"s", backends.entry_id(i), *fields])
    h["xgroup|create"](ctx, [b"s", b"g1", b"0"])
    h["xreadgroup"](ctx, [b"GROUP", b"g1", b"c1", b"COUNT", b"%d" % size, b"STREAMS", b"s", b">"])
    h["xgroup|create"](ctx, [b"s", b"g2", b"0"])
    for i in range(1000):
        h["xadd"](ctx, [b"m", backends.entry_id(i), *fields])
    gc.enable()
    gc.collect()
    gc.freeze()
    starts = workloads.random_starts(size)
    nst = len(starts)
    n_read = min(ops, max(1, size // 10 - 1))
    cursor: List[Any] = [b"0-0", 0]
    acks: List[List[bytes]] = []

    def xrange_k(k: int) -> Any:
        def run(count: int) -> None:
            for j in range(count):
                h["xrange"](ctx, [b"s", starts[j % nst], b"+", b"COUNT", b"%d" % k])

        return run

    def xpending(count: int) -> None:
        for j in range(count):
            h["xpending"](ctx, [b"s", b"g1", starts[j % nst], b"+", b"10"])

    def xautoclaim(count: int) -> None:  # alternating claimers, as in workloads.make_xautoclaim
        c, turn = cursor
        for _ in range(count):
            c = h["xautoclaim"](ctx, [b"s", b"g1", (b"c2", b"c3")[turn], b"0", c, b"COUNT", b"10"])[0]
            if c == b"0-0":
                turn ^= 1
        cursor[0], cursor[1] = c, turn

    def readgroup(count: int) -> None:
        for _ in range(count):
            reply = h["xreadgroup"](ctx, [b"GROUP", b"g2", b"c1", b"COUNT", b"10", b"STREAMS", b"s", b">"])
            acks.append([e[0] for e in reply[0][1]])

    def xack(count: int) -> None:
        for ids in acks[:count]:
            h["xack"](ctx, [b"s", b"g2", *ids])

    def xadd(count: int) -> None:
        for _ in range(count):
            ctx.now += 1
            h["xadd"](ctx, [b"s", b"*", *fields])

    def xadd_maxlen(count: int) -> None:
        for _ in range(count):
            ctx.now += 1
            h["xadd"](ctx, [b"m", b"MAXLEN", b"~", b"1000", b"*", *fields])

    plan = [
        ("XRANGE COUNT 10", xrange_k(10), ops, None),
        ("XRANGE COUNT 100", xrange_k(100), ops, None),
        ("XPENDING start + COUNT 10", xpending, ops, None),
        ("XAUTOCLAIM COUNT 10", xautoclaim, ops, None),
        ("XREADGROUP COUNT 10", readgroup, n_read, lambda: h["xgroup|setid"](ctx, [b"s", b"g2", b"0"])),
        ("XADD", xadd, ops, lambda: h["xtrim"](ctx, [b"s", b"MAXLEN", b"%d" % size])),
        ("XADD MAXLEN ~ 1000", xadd_maxlen, ops, None),
    ]
    # label by label (the writes to s come last: their reset trims the oldest entries, i.e. the PEL's)
    for label, fn, count, reset in plan:
        values: List[float] = []
        ack_values: List[float] = []
        for _ in range(repeat):
            acks.clear()
            if reset:
                reset()
            t0 = time.process_time()
            fn(count)
            values.append((time.process_time() - t0) / count * 1e6)
            if fn is readgroup:  # XACK the IDs just delivered (a PEL of exactly these)
                t0 = time.process_time()
                xack(count)
                ack_values.append((time.process_time() - t0) / count * 1e6)
        pick = min if stat == "min" else statistics.median
        table.setdefault(label, []).append(pick(values))
        if ack_values:
            table.setdefault("XACK (10 IDs)", []).append(pick(ack_values))
    gc.unfreeze()


def engine_only(sizes: List[int], ops: int, repeat: int = 5, stat: str = "median") -> List[str]:
    md = ["## Engine only: handler CPU µs per command (no redis-py, no fakeredis, no profiler)\n",
          f"{stat.capitalize()} of {repeat} batches per cell; the dataset is built by the handlers themselves.\n"]
    md.append("| command | " + " | ".join(f"N = {s:,}" for s in sizes) + f" | N = {sizes[-1]:,} ÷ N = {sizes[0]:,} |")
    md.append("|---|" + "---:|" * (len(sizes) + 1))
    table: Dict[str, List[float]] = {}
    for size in sizes:
        _engine_size(size, ops, table, repeat, stat)
        gc.collect()
        print(f"  engine only at N = {size:,}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in table.items()), flush=True)
    for label, values in table.items():
        md.append(f"| {label} | " + " | ".join(f"{v:.1f}" for v in values) + f" | {values[-1] / values[0]:.2f}× |")
    md.append("")
    return md


def engine_memory(size: int) -> Tuple[float, float]:
    """tracemalloc bytes per entry and per pending entry of a stream of ``size`` entries built by the handlers.

    Each XADD gets fresh ``bytes`` for its fields and values (as commands parsed off a connection do);
    then XGROUP CREATE + one XREADGROUP delivers every entry to one consumer.
    """
    import tracemalloc

    h = _handlers()
    ctx = MiniContext()
    fields = list(workloads.FIELD_LIST)
    gc.collect()
    tracemalloc.start()
    h["xadd"](ctx, [b"warmup", b"1-1", b"f", b"v"])
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    for i in range(size):
        h["xadd"](ctx, [b"s", backends.entry_id(i), *[b"%s" % f for f in fields]])
    gc.collect()
    filled = tracemalloc.get_traced_memory()[0]
    h["xgroup|create"](ctx, [b"s", b"g1", b"0"])
    reply = h["xreadgroup"](ctx, [b"GROUP", b"g1", b"c1", b"COUNT", b"%d" % size, b"STREAMS", b"s", b">"])
    del reply
    gc.collect()
    pel = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (filled - base) / size, (pel - filled) / size


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=float, default=1e4, help="stream size for the cProfile view (default 1e4)")
    ap.add_argument("--ops", type=int, default=2000, help="units per workload (default 2000)")
    ap.add_argument("--engine-sizes", default="1e3,1e4,1e5,1e6", help="sizes of the engine-only view ('' = skip)")
    ap.add_argument("--workloads", help="comma list of workload names (default: all)")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--engine-only", action="store_true", help="skip the cProfile layers (view 1)")
    ap.add_argument("--repeat", type=int, default=5, help="engine-only batches per cell (default 5)")
    ap.add_argument("--stat", choices=("median", "min"), default="median", help="engine-only statistic over the batches")
    ap.add_argument("--mem-size", type=float, default=1e5, help="entries of the engine memory phase (0 = skip)")
    ap.add_argument("--out", default=os.path.join(HERE, "profile.md"))
    args = ap.parse_args(argv)
    chosen = [w for w in workloads.WORKLOADS if not args.workloads or w.name in args.workloads.split(",")]
    md = ["# Profile of this project's stream commands", "",
          f"Produced by `python benchmarks/profile_engine.py` ({time.strftime('%Y-%m-%d %H:%M')}); see its docstring.", ""]
    if not args.engine_only:
        md += profile_layers(int(args.size), args.ops, chosen, args.top)
    if args.engine_sizes:
        sizes = [int(float(s)) for s in args.engine_sizes.split(",") if s]
        md += engine_only(sizes, args.ops, args.repeat, args.stat)
    if args.mem_size:
        per_entry, per_pending = engine_memory(int(args.mem_size))
        md += [f"Engine memory (tracemalloc, N = {int(args.mem_size):,}): {per_entry:.0f} B per entry, "
               f"{per_pending:.0f} B per pending entry.", ""]
        print(f"  engine memory: {per_entry:.0f} B/entry, {per_pending:.0f} B/pending entry", flush=True)
    with open(args.out, "w") as fh:
        fh.write("\n".join(md) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
