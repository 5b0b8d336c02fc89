"""Environment capture and the markdown / console reports of ``run.py``."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import statistics
import subprocess
import sys
from typing import Any, Dict, List, Optional, Tuple

BACKENDS = ["floor", "bare", "ours", "before", "fixture", "patched", "fakeredis", "real"]
#: ratio columns (numerator, denominator), shown when both backends ran; "fixture" is the path users take
RATIOS = [("fixture", "ours"), ("patched", "ours"), ("fakeredis", "fixture"), ("fixture", "floor"),
          ("ours", "floor"), ("fakeredis", "ours"), ("fakeredis", "bare"), ("real", "fixture"), ("before", "ours")]
#: (workload, extra label or None) pairs of the scaling target of issue 8
SCALING = [("xadd", None), ("readgroup_ack", "XACK"), ("xpending10", None), ("xrange10", None), ("xautoclaim10", None)]
#: single-command workloads of the "within 1.3× of the floor" target (issue 13)
FLOOR_TARGET = ["xadd", "readgroup_ack", "xrange10", "xrange100", "xpending10", "xautoclaim10", "xadd_maxlen"]
#: an in-process cell whose median CPU time is below this share of its median wall time is flagged †
BUSY_SHARE = 0.8


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git(root: str, *args: str) -> str:
    try:
        return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=10).stdout.rstrip()
    except (OSError, subprocess.SubprocessError):
        return ""


def environment(real_server: Any) -> Dict[str, str]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirty = _git(root, "status", "--porcelain", "--", "fake_streams")
    changed = [line[3:] for line in dirty.splitlines()]
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{_cpu()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()} {platform.machine()}",
        "python": f"{platform.python_implementation()} {sys.version.split()[0]}",
        "redis-py": _version("redis"),
        "hiredis": _hiredis(),
        "fakeredis": _version("fakeredis"),
        "sortedcontainers": _version("sortedcontainers"),
        "redis-server": real_server.version or "absent",
        "fake_streams": (_git(root, "rev-parse", "--short", "HEAD").strip() or "?")
        + (f" + uncommitted changes in {', '.join(changed)}" if changed else ""),
    }


def _hiredis() -> str:
    """hiredis's version, or a warning: without it the floor (and the real server's client) pack and parse with
    redis-py's pure-Python code, several times slower on multi-entry replies (XAUTOCLAIM's floor: ~24 µs with
    hiredis, ~100 µs without), while *ours* and *bare* neither pack nor parse: ratios to the floor are then not
    comparable with runs that had hiredis."""
    version = _version("hiredis")
    if version != "not installed":
        return version
    return ("NOT INSTALLED: the floor and real columns use redis-py's pure-Python parser and packer, so ratios "
            "to them are not comparable with runs that had hiredis (the issue's targets assume it)")


def environment_text(env: Dict[str, str]) -> str:
    return "\n".join(f"{k:>16}: {v}" for k, v in env.items())


def emit(text: str, out: Optional[str], title: str) -> None:
    """Print a side script's report; with ``out``, also write it as markdown under ``# title``."""
    print(text)
    if out:
        with open(out, "w") as fh:
            fh.write(f"# {title}\n\n{text}\n")


# ----------------------------------------------------------------------------------------- format


def size_label(n: int) -> str:
    """``1e3`` for powers of ten, else ``12,345``."""
    exp = len(str(n)) - 1
    return f"1e{exp}" if n == 10**exp else f"{n:,}"


def us(value: Optional[float]) -> str:
    if value is None:
        return "—"
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}"


def ratio(a: Optional[float], b: Optional[float]) -> str:
    if a is None or b is None or b == 0:
        return "—"
    return times(a / b)


def times(r: float) -> str:
    return f"{r:.0f}×" if r >= 100 else f"{r:.2f}×"


def _samples(cell: Dict[str, Any], extra: Optional[str]) -> Dict[int, float]:
    """A cell's samples (its metric's clock, or the sub-timing ``extra``) by round (results of runs before rounds
    were recorded: by batch index, which was the round)."""
    if cell.get("error") and not cell.get("rounds"):
        return {}
    if extra:
        values = (cell.get("extra_samples_us") or {}).get(extra) or []
    else:
        values = cell.get("cpu_samples_us" if cell.get("metric") == "cpu" else "wall_samples_us") or []
    rounds = cell.get("rounds") or range(len(values))
    return dict(zip(rounds, values))


#: a round is *quiet* when other processes kept fewer CPUs than this busy during its in-process batches
QUIET_OTHERS = 0.5


def _quiet(cell: Dict[str, Any]) -> Optional[set]:
    """The quiet rounds of a cell's workload (``round_others_cpu``, recorded by ``run.measure``), None if unknown."""
    others = cell.get("round_others_cpu")
    if not others:
        return None
    return {r for r, v in enumerate(others) if v is not None and v < QUIET_OTHERS}


def round_ratios(num: Dict[str, Any], den: Dict[str, Any], extra: Optional[str] = None) -> Tuple[List[float], Optional[bool]]:
    """The ratio num ÷ den of two cells (their json) round by round: each round's two batches ran a fraction of a
    second apart (``run.measure``), so machine drift between rounds cancels in each ratio. Only the quiet rounds
    count (other processes kept less than :data:`QUIET_OTHERS` CPUs busy: on a 2-CPU machine a busy neighbour
    slows the C-heavy and the Python-heavy backends unequally) when at least 5 and a third of the rounds were
    quiet; the flag says which: True quiet rounds only, False all rounds (too few quiet ones), None unknown.
    O(rounds)."""
    a, b = _samples(num, extra), _samples(den, extra)
    pairs = {r: a[r] / b[r] for r in a if r in b and b[r] > 0}
    quiet = _quiet(num)
    if quiet is None:
        return list(pairs.values()), None
    calm = [v for r, v in pairs.items() if r in quiet]
    if len(calm) >= max(5, len(pairs) / 3):
        return calm, True
    return list(pairs.values()), False


class RatioStat:
    """Median and interquartile range of per-round ratios (the figure and its spread); ``quiet`` as
    :func:`round_ratios` says (a False one is marked ``‡``: the machine was busy in most rounds)."""

    def __init__(self, values: List[float], quiet: Optional[bool] = None) -> None:
        self.quiet = quiet
        self.n = len(values)
        self.median = statistics.median(values)
        if self.n >= 2:
            q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
        else:
            q1 = q3 = self.median
        self.q1, self.q3 = q1, q3
        self.low, self.high = min(values), max(values)

    def text(self) -> str:
        """``1.27× (1.24–1.31)``: median (interquartile range) of the rounds."""
        return f"{times(self.median)} ({self.q1:.2f}–{self.q3:.2f})" + ("‡" if self.quiet is False else "")

    def straddles(self, limit: float) -> bool:
        return self.q1 <= limit <= self.q3


def ratio_stat(results: Dict[str, Any], plabel: str, wl: str, size: int, a: str, b: str,
               extra: Optional[str] = None) -> Optional[RatioStat]:
    """Per-round a ÷ b of one workload and size (None when either did not run)."""
    values, quiet = round_ratios(_cell(results, plabel, wl, size, a), _cell(results, plabel, wl, size, b), extra)
    return RatioStat(values, quiet) if values else None


def ratio_cell(results: Dict[str, Any], plabel: str, wl: str, size: int, a: str, b: str,
               extra: Optional[str] = None) -> str:
    stat = ratio_stat(results, plabel, wl, size, a, b, extra)
    return "—" if stat is None else stat.text()


def _cell(results: Dict[str, Any], plabel: str, wl: str, size: int, backend: str) -> Dict[str, Any]:
    return results["cells"].get(f"{plabel}|{wl}|{size}|{backend}", {})


def _med(results: Dict[str, Any], plabel: str, wl: str, size: int, backend: str, extra: Optional[str] = None) -> Optional[float]:
    cell = _cell(results, plabel, wl, size, backend)
    if extra:
        return cell.get("extra_median_us", {}).get(extra)
    return cell.get("median_us")


def _plabels(results: Dict[str, Any]) -> List[str]:
    seen: List[str] = []
    for key in results["cells"]:
        label = key.split("|", 1)[0]
        if label not in seen:
            seen.append(label)
    return seen


def progress_line(wl: Any, plabel: str, cells: Dict[str, Any]) -> str:
    parts = []
    for name in BACKENDS:
        cell = cells.get(name)
        if cell is None:
            continue
        parts.append(f"{name} {'ERR' if cell.error else us(cell.median_us())}")
    as_json = {n: c.as_json() for n, c in cells.items()}
    tail = ""
    for a, b in RATIOS:
        if (a, b) in _PROGRESS_RATIOS and a in as_json and b in as_json:
            values, quiet = round_ratios(as_json[a], as_json[b])
            if values:
                tail += f"  {a}/{b} {RatioStat(values, quiet).text()}"
    quiet = next((_quiet(c) for c in as_json.values() if c.get("round_others_cpu")), None)
    calm = "" if quiet is None else f"  [quiet rounds {len(quiet)}/{len(next(iter(as_json.values()))['round_others_cpu'])}]"
    return f"{wl.label:38s} {plabel:26s} µs/{wl.unit.split(' ')[0]}: " + ", ".join(parts) + tail + calm


_PROGRESS_RATIOS = {("fixture", "ours"), ("patched", "ours"), ("fakeredis", "fixture"), ("fixture", "floor"),
                    ("before", "ours")}


# ---------------------------------------------------------------------------------------- markdown

METHOD = """\
## Method

* **One process, one run, rounds.** Every backend is driven through `redis.Redis` (redis-py) in the same
  Python process, workload by workload; per workload and size, @REPEAT@ *rounds*, and in each round every
  backend runs one timed batch, one right after the other, in an order drawn afresh each round (a seeded
  permutation, the same in every run: each backend runs in every position and after every other one about
  equally often — a fixed rotation kept each backend behind the same neighbour, and two backends running
  identical code then differed by up to 10 %), so a round's batches share the machine's state of the same
  fraction of a second.
* **Backends.** *floor*: a `redis.Connection` subclass whose socket is in memory and answers each
  packed command with pre-encoded RESP bytes of the right shape — redis-py still packs the
  arguments (hiredis packer), parses the reply (hiredis reader) and runs its reply callback, so the
  floor is redis-py's own cost per command; it skips the `poll()` a real connection does in
  `can_read`. *bare*: a `redis.Connection` subclass with no socket that neither packs nor parses:
  `send_command` only records the command name (in a pipeline `pack_commands` returns the names
  and `send_packed_command` records them), `read_response` returns the floor's canned reply as the
  Python value redis-py's parser makes of it (parsed once per command shape by redis-py's own
  parser — hiredis — and cached; the top-level list is copied per read since `parse_xautoclaim`
  assigns into it), `can_read` is False. What is left is redis-py's command method, pool and reply
  callback: the least any connection-class fake can cost (*ours* works at that level: its direct
  path skips packing and parsing), so *fakeredis/bare* is the most "× faster than fakeredis" such a
  fake can show on this machine. *ours*: `ConnectionPool(connection_class=fake_streams.FakeStreamsConnection,
  server=FakeStreamsServer())` (default profile), a bare server. *fixture*: the handle the pytest fixture
  `fake_redis_streams` yields (default options: a `Faults` installed on its server, the network's connection
  class), its `.client` — the path users take. *patched*: `patch_redis()` installed, a stock
  `redis.Redis(host="cache", port=6379)`. *before* (with `--before REV`): `fake_streams` of that git revision
  on a bare server, imported side by side as `fake_streams_before`. *fakeredis*: `fakeredis.FakeRedis` with its own
  stream code. *real*: `/usr/bin/redis-server` started for the run on a free 127.0.0.1 port
  (no persistence), TCP loopback, redis-py's default parser (hiredis).
* **Dataset per size N** (same bytes everywhere): stream `s` with N entries
  `{user: u:1234, action: click}`, IDs `1600000000001-0` …, prefilled with non-transactional
  pipelines of 1000 `XADD` (the rate, with the garbage collector off during setup, is reported
  below); group `g1` whose consumer `c1` was
  delivered all N entries (PEL of N); group `g2` at `0`; stream `m` with 1000 entries.
* **Workloads** (in this order, each for every protocol before the next):
  `XRANGE s <start> + COUNT 10` and `COUNT 100`, `<start>` drawn from 4096 random existing IDs
  (same sequence for every backend); `XPENDING s g1 <start> + 10`; `XAUTOCLAIM s g1 c2 0 <cursor>
  COUNT 10` following the returned cursor through the PEL of N (the claimer alternates between c2
  and c3 at each wrap, so every claim moves entries to another consumer at every N); `XREADGROUP GROUP g2 c1 COUNT 10
  STREAMS s >` followed by `XACK` of the 10 IDs (one unit = both commands; `XACK alone` is timed
  inside the loop; `XGROUP SETID g2 0` between batches, so a batch holds at most N/10 − 1 units);
  `XADD s * …`; `XADD m MAXLEN ~ 1000 * …` (steady state: `m` stays near 1000 entries whatever N
  is, so this row measures the same thing at every N); a pipeline (`transaction=False`) of 1000
  `XADD s *` (unit: one XADD). After every batch of the writes to `s`, an untimed exact
  `XTRIM s MAXLEN N` restores the size.
* **Clock.** For the in-process backends (floor, bare, ours, fakeredis) the figure is the CPU time of
  this process (`time.process_time`), which other processes on the machine cannot inflate the way
  they inflate wall-clock time (the run shares 2 CPUs with other work); it equals wall-clock time
  on an idle machine, since nothing in these backends sleeps or waits. For the real server it is
  wall-clock time (`time.perf_counter`): its work happens in the server process and the kernel.
  Both clocks are recorded for every batch in `results.json`.
* **Timing.** Per cell, 3 untimed warm-up units give a cost estimate; a batch then holds as many
  units as fit in about @TARGET@ ms (at most @MAXUNITS@ units, at least 1); one timed batch per round,
  each after an untimed reset and `gc.collect()`; the backend columns show the **median µs per unit** of
  the rounds' batches (`--stat min`: the fastest batch's). The datasets are moved to the permanent GC generation
  (`gc.freeze()`) once built, so the collector does not rescan millions of objects of *other*
  backends in every batch (the garbage collector stays on).
* **Ratios** are *not* the quotient of two columns: each is the **median of the per-round ratios** (the two
  backends' batches of the same round divided), shown with the interquartile range of the rounds in
  parentheses. Only *quiet* rounds count — those during whose in-process batches other processes kept fewer than
  0.5 CPUs busy (`/proc/stat` busy time minus this process's CPU time; `round_others_cpu` in `results.json`) —
  when at least 5 and a third of the rounds were quiet, else all rounds (the ratio is then marked ‡): a busy
  neighbour on a 2-CPU machine slows the C-heavy floor and the Python-heavy fake unequally. So the machine's drift between rounds (the floor's own XADD moved from 17.8 to 24.5 µs between
  two sizes of one `--quick` run) cancels in each ratio and a target is decided by the code. Targets of issue
  13: *fixture/ours* and *patched/ours* (≤ 1.10: the user's path costs what a
  bare server does), *fakeredis/fixture* (≥ 2.2 on XADD, ≥ 2.5 on XREADGROUP + XACK), *fixture/floor* (≤ 1.3
  on single commands, ≤ 1.1 on pipelined XADD), *fakeredis/bare* (the ceiling of "× faster than fakeredis"
  for a connection-class fake), *real/fixture* (> 1: faster than the real server over loopback),
  *before/ours* (> 1: the change made it faster). The earlier "≥ 4× fakeredis" target is retired: no
  connection class can reach it on XADD (*fakeredis/bare* is below 4.5×).
* **Memory**: `tracemalloc` traced bytes after `gc.collect()`, before and after the prefill of
  @MEMSIZE@ entries (→ bytes per entry) and after delivering all of them to one consumer
  (→ bytes per pending entry), for ours and fakeredis; for the real server `INFO memory`
  `used_memory` deltas (allocator-level, for orientation).
* Raw samples, batch sizes and errors are in `results.json` next to this file.
"""


def markdown(results: Dict[str, Any], chosen: List[Any], note: str) -> str:
    cfg, env = results["config"], results["env"]
    sizes: List[int] = cfg["sizes"]
    out: List[str] = ["# Benchmark results", ""]
    out.append(
        f"Produced by `python benchmarks/run.py{' --quick' if cfg['quick'] else ''}"
        f"{' --stat min' if cfg.get('stat') == 'min' else ''}` "
        f"({env['date']}, {results.get('elapsed_s', 0):.0f} s). µs per unit ({cfg.get('stat', 'median')} of "
        f"{cfg['repeat']} rounds' batches), lower is better; ratios: median (interquartile range) of the per-round "
        "ratios. See the method below the tables."
    )
    out.append("")
    out.append(
        METHOD.replace("@TARGET@", f"{cfg['target_ms']:.0f}")
        .replace("@MAXUNITS@", str(cfg["max_units"]))
        .replace("@REPEAT@", str(cfg["repeat"]))
        .replace("@MEMSIZE@", f"{cfg['mem_size']:,}")
    )
    out.append("## Environment\n")
    for k, v in env.items():
        out.append(f"* {k}: {v}")
    if note:
        out.append(f"* note: {note}")
    out.append("")
    present = [b for b in BACKENDS if any(k.rsplit("|", 1)[1] == b for k in results["cells"])]
    ratios = [(a, b) for a, b in RATIOS if a in present and b in present]
    for plabel in _plabels(results):
        out.append(f"## {plabel}: µs per unit ({cfg.get('stat', 'median')})\n")
        out.append("| workload | N | " + " | ".join(present) + " | " + " | ".join(f"{a}/{b}" for a, b in ratios) + " |")
        out.append("|---|---:|" + "---:|" * (len(present) + len(ratios)))
        for wl in chosen:
            rows: List[Tuple[str, Optional[str]]] = [(wl.label, None)]
            if wl.name == "readgroup_ack":
                rows.append(("└ XACK alone (inside the loop)", "XACK"))
            for label, extra in rows:
                for size in sizes:
                    vals = {b: _med(results, plabel, wl.name, size, b, extra) for b in present}
                    errs = [f"{b}: {_cell(results, plabel, wl.name, size, b).get('error')}" for b in present
                            if _cell(results, plabel, wl.name, size, b).get("error")]
                    cells = [_shown(results, plabel, wl.name, size, b, vals[b]) for b in present]
                    out.append(f"| {label} | {size_label(size)} | " + " | ".join(cells) + " | "
                               + " | ".join(ratio_cell(results, plabel, wl.name, size, a, b, extra)
                                            for a, b in ratios) + " |")
                    for err in errs:
                        out.append(f"| ↳ {err} |" + " |" * (len(present) + len(ratios) + 1))
        out.append("")
    out.append(
        f"† this in-process cell got less than {BUSY_SHARE:.0%} of a CPU during its batches (other processes ran on "
        "the machine): its CPU-time figure stands, its wall-clock time (in `results.json`) was longer.\n"
    )
    out.append(scaling_md(results, chosen))
    out.append(memory_md(results))
    out.append(fills_md(results))
    out.append("## Targets of issue 13 (first protocol above)\n")
    out.append("```\n" + targets_text(results, chosen) + "\n```\n")
    return "\n".join(out)


def _shown(results: Dict[str, Any], plabel: str, wl: str, size: int, backend: str, value: Optional[float]) -> str:
    cell = _cell(results, plabel, wl, size, backend)
    if cell.get("error"):
        return "error"
    share = cell.get("cpu_share")
    busy = cell.get("metric") == "cpu" and share is not None and share < BUSY_SHARE
    return us(value) + ("†" if busy else "")


def _scaling(results: Dict[str, Any], plabel: str, wl: str, size: int, base_size: int, backend: str,
             extra: Optional[str] = None, normalized: bool = False) -> Optional[float]:
    """cost(size) / cost(base_size); ``normalized``: each cost first divided by the floor's of the same rounds (the
    median of the per-round ratios to the floor at each size)."""
    if normalized:
        fa = ratio_stat(results, plabel, wl, base_size, backend, "floor", extra)
        fb = ratio_stat(results, plabel, wl, size, backend, "floor", extra)
        return fb.median / fa.median if fa and fb and fa.median else None
    a = _med(results, plabel, wl, base_size, backend, extra)
    b = _med(results, plabel, wl, size, backend, extra)
    return b / a if a and b else None


def scaling_md(results: Dict[str, Any], chosen: List[Any]) -> str:
    sizes = results["config"]["sizes"]
    plabels = _plabels(results)
    if len(sizes) < 2 or not plabels:
        return ""
    plabel = plabels[0]
    lines = [f"## Scaling ({plabel}): cost at N ÷ cost at N = {size_label(sizes[0])}\n"]
    lines.append(
        "*raw*: the medians of the table above divided. *floor-normalized*: the same with each median first "
        "divided by the floor's of the same rounds (median of the per-round ratios) — the floor does not depend on N, so this "
        "cancels the machine's load changing between sizes (which shifts raw figures by up to 2× on this shared "
        "machine); it is the figure the scaling target below uses.\n"
    )
    head = "| workload | backend | " + " | ".join(size_label(s) for s in sizes[1:]) + " |"
    lines += [head, "|---|---|" + "---:|" * (len(sizes) - 1)]
    rows = [(w.name, w.label, None) for w in chosen]
    rows.insert(next((i + 1 for i, r in enumerate(rows) if r[0] == "readgroup_ack"), len(rows)),
                ("readgroup_ack", "└ XACK alone", "XACK"))
    names = {w.name for w in chosen}
    for name, label, extra in rows:
        if name not in names:
            continue
        for backend, normalized in (("ours", True), ("ours", False), ("fakeredis", True), ("real", True)):
            vals = [_scaling(results, plabel, name, s, sizes[0], backend, extra, normalized) for s in sizes[1:]]
            if all(v is None for v in vals):
                continue
            how = "floor-normalized" if normalized else "raw"
            lines.append(f"| {label} | {backend} ({how}) | " + " | ".join("—" if v is None else f"{v:.2f}×" for v in vals) + " |")
    return "\n".join(lines) + "\n"


def memory_md(results: Dict[str, Any]) -> str:
    mem = results.get("memory") or {}
    if not mem:
        return ""
    lines = [f"## Memory ({mem['size']:,} entries)\n", "| backend | bytes / stream entry | bytes / pending entry | how |", "|---|---:|---:|---|"]
    for name, how in (("ours", "tracemalloc"), ("fakeredis", "tracemalloc"), ("real", "INFO used_memory")):
        if name in mem:
            lines.append(f"| {name} | {mem[name]['entry']:.0f} | {mem[name]['pending']:.0f} | {how} |")
    return "\n".join(lines) + "\n"


def fills_md(results: Dict[str, Any]) -> str:
    fills = results.get("fills") or {}
    if not fills:
        return ""
    names = [b for b in BACKENDS if any(b in v for v in fills.values())]
    lines = ["## Prefill rate (XADD/s, pipelines of 1000)\n", "| N | " + " | ".join(names) + " |", "|---:|" + "---:|" * len(names)]
    for size, per in fills.items():
        lines.append(f"| {size_label(int(size))} | " + " | ".join(f"{per[n]:,.0f}" if n in per else "—" for n in names) + " |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------ targets


def targets_text(results: Dict[str, Any], chosen: List[Any]) -> str:
    """The speed targets of issue 13 as measured ratios (side by side in this run): through the fixture within
    10 % of a bare server; ≥ 2.2× fakeredis on XADD and ≥ 2.5× on XREADGROUP + XACK; single commands within
    1.3× of the floor, pipelined XADD ≤ 1.1× the floor; plus the scaling and memory checks."""
    plabels = _plabels(results)
    if not plabels:
        return "no results"
    plabel = plabels[0]
    sizes = results["config"]["sizes"]
    names = {w.name: w.label for w in chosen}
    lines = [f"targets measured on {plabel}: median (interquartile range) of the per-round ratios of batches run "
             "side by side (quiet rounds only, see the method; ‡: too few quiet rounds, all counted); '≈' marks a ratio "
             "whose interquartile range holds the limit (decided by less than the spread)"]

    def verdict(ok: Optional[bool]) -> str:
        return "n/a " if ok is None else ("PASS" if ok else "FAIL")

    def cells(a: str, b: str, workloads: List[str]) -> List[Tuple[RatioStat, str]]:
        out = []
        for wl in workloads:
            for n in sizes:
                stat = ratio_stat(results, plabel, wl, n, a, b) if wl in names else None
                if stat is not None:
                    out.append((stat, f"{names[wl]} @ {size_label(n)}"))
        return out

    def line(label: str, found: List[Tuple[RatioStat, str]], limit: float, at_most: bool, info: str = "") -> None:
        if not found:
            lines.append(f"[n/a ] {label}: not measured in this run")
            return
        pick = max if at_most else min
        worst = pick(found, key=lambda item: item[0].median)
        ok = worst[0].median <= limit if at_most else worst[0].median >= limit
        close = "≈" if worst[0].straddles(limit) else ""
        tag = "info" if info else verdict(ok)
        lines.append(f"[{tag}] {label}{info}: worst {worst[0].text()}{close} ({worst[1]}); "
                     + ", ".join(f"{n} {r.median:.2f}×{'≈' if r.straddles(limit) else ''}" for r, n in found))

    every = [w.name for w in chosen]
    line("fixture ≤ 1.10× bare server (ours)", cells("fixture", "ours", every), 1.10, True)
    line("patch_redis() ≤ 1.10× bare server (ours)", cells("patched", "ours", every), 1.10, True)
    line("fakeredis ÷ fixture ≥ 2.2× on XADD", cells("fakeredis", "fixture", ["xadd"]), 2.2, False)
    line("fakeredis ÷ fixture ≥ 2.5× on XREADGROUP COUNT 10 + XACK", cells("fakeredis", "fixture", ["readgroup_ack"]),
         2.5, False)
    no_hiredis = str(results["env"].get("hiredis", "")).lower().startswith("not installed")
    info = " (hiredis not installed: the floor packs and parses in Python, no verdict)" if no_hiredis else ""
    line("fixture ≤ 1.3× floor on single commands",
         cells("fixture", "floor", [w for w in FLOOR_TARGET if w != "pipeline"]), 1.3, True, info)
    line("fixture ≤ 1.1× floor on pipelined XADD", cells("fixture", "floor", ["pipeline"]), 1.1, True, info)
    before = cells("before", "ours", every)
    if before:
        lines.append("[info] before ÷ ours (> 1: this revision is faster): "
                     + ", ".join(f"{n} {r.text()}" for r, n in before))
    if len(sizes) >= 2:
        parts, ok = [], True
        for wl, extra in SCALING:
            if wl not in names:
                continue
            norm = _scaling(results, plabel, wl, sizes[-1], sizes[0], "ours", extra, normalized=True)
            raw = _scaling(results, plabel, wl, sizes[-1], sizes[0], "ours", extra)
            if norm is not None and raw is not None:
                ok = ok and norm <= 1.5
                parts.append(f"{extra or names[wl]} {norm:.2f}× (raw {raw:.2f}×)")
        lines.append(f"[{verdict(ok if parts else None)}] cost at N={size_label(sizes[-1])} ≤ 1.5× cost at "
                     f"N={size_label(sizes[0])} (floor-normalized): " + ", ".join(parts))
    mem = results.get("memory") or {}
    if "ours" in mem and "fakeredis" in mem:
        o, f = mem["ours"]["entry"], mem["fakeredis"]["entry"]
        lines.append(f"[{verdict(o <= f)}] memory per entry no worse than fakeredis: ours {o:.0f} B, fakeredis {f:.0f} B"
                     f" (pending entry: ours {mem['ours']['pending']:.0f} B, fakeredis {mem['fakeredis']['pending']:.0f} B)")
    return "\n".join(lines)
