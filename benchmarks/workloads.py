"""The workloads: each runs ``n`` units of work through one ``redis.Redis`` client.

Dataset of one size N (built by ``run.py`` on every backend that has data):

* ``s`` — N entries, IDs :func:`backends.entry_id` (``1600000000001-0`` …), fields :data:`backends.FIELDS`;
* group ``g1`` on ``s``: consumer ``c1`` was delivered all N entries (a PEL of N, never acknowledged);
* group ``g2`` on ``s``: created at ``0``, consumed 10 at a time by the XREADGROUP+XACK loop;
* ``m`` — 1000 entries, written by XADD MAXLEN ~ 1000 (steady state: trimming keeps it near 1000).

A workload is made once per (backend, protocol) by ``make(ctx)``; it returns a :class:`Job` whose
``reset()`` runs untimed before every batch and whose ``run(n)`` is timed. Writes to ``s`` come last
(the harness runs workloads in :data:`WORKLOADS` order, both protocols each) and their ``reset``
trims ``s`` back to N entries (exact XTRIM, untimed), so every batch sees a stream of N entries.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

import backends
import floor

FIELDS = backends.FIELDS
FIELD_LIST = backends.FIELD_LIST
KEY = b"s"
MAXLEN_KEY = b"m"
MAXLEN_FILL = 1000


@dataclass
class Ctx:
    backend: Any  # backends.Backend
    client: Any  # redis.Redis
    protocol: int  # effective RESP version (2 or 3)
    size: int
    starts: List[bytes]  # random range starts (IDs of existing entries), shared by all backends
    clock: Callable[[], float] = time.perf_counter  # for sub-timings: the clock of the backend's metric


@dataclass
class Job:
    run: Callable[[int], Optional[Dict[str, float]]]  # n units; may return extra timings {label: seconds}
    reset: Callable[[], None]
    max_n: int  # most units one batch may run (state limits)


@dataclass
class Workload:
    name: str
    label: str
    unit: str  # what one measured unit is
    make: Callable[[Ctx], Job]
    units_per_call: int = 1  # units run(1) performs (1000 for the pipeline)


def _noop() -> None:
    pass


def _canned(ctx: Ctx, **replies: Any) -> Callable[[], None]:
    """For the floor: a reset that installs the workload's canned replies."""
    if ctx.backend.has_data:
        return _noop
    canned = ctx.backend.canned
    protocol = ctx.protocol

    def reset() -> None:
        canned.set(protocol, **replies)

    return reset


def _trim_back(ctx: Ctx) -> Callable[[], None]:
    if not ctx.backend.has_data:
        return _canned(ctx, XADD=b"%d-0" % int(time.time() * 1000))
    r, size = ctx.client, ctx.size

    def reset() -> None:
        r.xtrim(KEY, maxlen=size, approximate=False)

    return reset


def _entries(count: int) -> List[Any]:
    return floor.stream_entries(backends.BASE_MS + 1, count, FIELD_LIST)


# ----------------------------------------------------------------------------------------- reads


def make_xrange(count: int) -> Callable[[Ctx], Job]:
    def make(ctx: Ctx) -> Job:
        r, starts = ctx.client, ctx.starts
        nstarts = len(starts)
        state = [0]

        def run(n: int) -> None:
            j = state[0]
            for _ in range(n):
                r.xrange(KEY, min=starts[j % nstarts], max="+", count=count)
                j += 1
            state[0] = j

        return Job(run, _canned(ctx, XRANGE=_entries(count)), 10**9)

    return make


def make_xpending(ctx: Ctx) -> Job:
    r, starts = ctx.client, ctx.starts
    nstarts = len(starts)
    state = [0]

    def run(n: int) -> None:
        j = state[0]
        for _ in range(n):
            r.xpending_range(KEY, "g1", min=starts[j % nstarts], max="+", count=10)
            j += 1
        state[0] = j

    reply = floor.xpending_reply(backends.BASE_MS + 1, 10, b"c1")
    return Job(run, _canned(ctx, XPENDING=reply), 10**9)


def make_xautoclaim(ctx: Ctx) -> Job:
    """XAUTOCLAIM g1 <c2|c3> 0 <cursor> COUNT 10, walking the PEL of N with the returned cursor.

    Every claim moves entries to another consumer: the first pass takes them from c1 to c2, and the
    claiming consumer alternates between c2 and c3 each time the cursor wraps to 0-0 (re-claiming
    entries a consumer already owns is cheaper, and would make small N look cheaper than large N).
    """
    r = ctx.client
    state: List[Any] = [b"0-0", 0]
    consumers = ("c2", "c3")

    def run(n: int) -> None:
        cursor, turn = state
        for _ in range(n):
            cursor = r.xautoclaim(KEY, "g1", consumers[turn], 0, cursor, count=10)[0]
            if cursor in (b"0-0", "0-0"):
                turn ^= 1
        state[0], state[1] = cursor, turn

    reply = floor.xautoclaim_reply(backends.BASE_MS + 1, 10, FIELD_LIST)
    return Job(run, _canned(ctx, XAUTOCLAIM=reply), 10**9)


def make_readgroup_ack(ctx: Ctx) -> Job:
    """One unit = XREADGROUP g2 c1 COUNT 10 STREAMS s > , then XACK of the 10 IDs. Reset: XGROUP SETID g2 0."""
    r = ctx.client
    clock = ctx.clock

    def run(n: int) -> Dict[str, float]:
        ack_time = 0.0
        for _ in range(n):
            reply = r.xreadgroup("g2", "c1", {KEY: ">"}, count=10)
            items = next(iter(reply.values())) if isinstance(reply, dict) else reply[0][1]
            if items and isinstance(items[0], list):
                items = items[0]  # RESP3 callbacks: {key: [[entries]]}
            ids = [item[0] for item in items]
            t0 = clock()
            r.xack(KEY, "g2", *ids)
            ack_time += clock() - t0
        return {"XACK": ack_time}

    if ctx.backend.has_data:

        def reset() -> None:
            r.xgroup_setid(KEY, "g2", "0")

    else:
        reset = _canned(
            ctx, XREADGROUP=floor.xread_reply(KEY, _entries(10), ctx.protocol), XACK=10
        )
    return Job(run, reset, max(1, ctx.size // 10 - 1))


# ---------------------------------------------------------------------------------------- writes


def make_xadd(ctx: Ctx) -> Job:
    r = ctx.client

    def run(n: int) -> None:
        for _ in range(n):
            r.xadd(KEY, FIELDS)

    return Job(run, _trim_back(ctx), 10**9)


def make_xadd_maxlen(ctx: Ctx) -> Job:
    r = ctx.client

    def run(n: int) -> None:
        for _ in range(n):
            r.xadd(MAXLEN_KEY, FIELDS, maxlen=1000, approximate=True)

    reset = _noop if ctx.backend.has_data else _canned(ctx, XADD=b"%d-0" % int(time.time() * 1000))
    return Job(run, reset, 10**9)


def make_pipeline(ctx: Ctx) -> Job:
    """One call = a non-transactional pipeline of 1000 XADD; the unit is one XADD."""
    r = ctx.client

    def run(n: int) -> None:
        for _ in range(n):
            pipe = r.pipeline(transaction=False)
            for _ in range(1000):
                pipe.xadd(KEY, FIELDS)
            pipe.execute()

    return Job(run, _trim_back(ctx), 10**9)


WORKLOADS: List[Workload] = [
    Workload("xrange10", "XRANGE COUNT 10", "command", make_xrange(10)),
    Workload("xrange100", "XRANGE COUNT 100", "command", make_xrange(100)),
    Workload("xpending10", "XPENDING start + COUNT 10 (extended)", "command", make_xpending),
    Workload("xautoclaim10", "XAUTOCLAIM COUNT 10", "command", make_xautoclaim),
    Workload("readgroup_ack", "XREADGROUP COUNT 10 + XACK", "iteration (2 commands)", make_readgroup_ack),
    Workload("xadd", "XADD", "command", make_xadd),
    Workload("xadd_maxlen", "XADD MAXLEN ~ 1000", "command", make_xadd_maxlen),
    Workload("pipeline", "pipeline of 1000 XADD", "XADD in the pipeline", make_pipeline, units_per_call=1000),
]


def random_starts(size: int, count: int = 4096, seed: int = 8) -> List[bytes]:
    """IDs of existing entries, uniformly spread, leaving 100 entries after each (same for every backend)."""
    rng = random.Random(seed)
    top = max(1, size - 100)
    return [backends.entry_id(rng.randrange(top)) for _ in range(count)]
