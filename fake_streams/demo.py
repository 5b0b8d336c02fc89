"""``python -m fake_streams demo``: a crashed consumer and its recovery, on the embedded server.

The job this project exists for, in one run: a producer adds orders, two workers of one consumer
group share them, one worker crashes holding entries it never acknowledged, a minute passes (on the
manual clock: instantly), and a recovery pass with XAUTOCLAIM takes the stale entries over until
everything is acknowledged. No Redis server, no sleeping; the output is the same on every run (IDs
come from the manual clock), so a test compares it line by line.

Only public API: :class:`FakeStreamsServer` with a :class:`ManualClock`, and a ``redis.Redis`` from
:meth:`FakeStreamsServer.client`.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, TextIO

import redis

from .clock import ManualClock
from .server import FakeStreamsServer

START_MS = 1_700_000_000_000
STREAM, GROUP = "orders", "workers"
MIN_IDLE_MS = 30_000


class _Log:
    """``  t+SECONDS  WHO       WHAT`` lines, time read from the manual clock."""

    def __init__(self, clock: ManualClock, out: TextIO) -> None:
        self.clock, self.out = clock, out

    def __call__(self, who: str, what: str) -> None:
        seconds = (self.clock.now_ms() - START_MS) / 1000
        print(f"  t+{seconds:<6.1f} {who:<9} {what}", file=self.out)

    def section(self, title: str) -> None:
        print(f"\n{title}", file=self.out)


def _ids(entries: List[Any]) -> str:
    return ", ".join(entry_id for entry_id, _ in entries)


def _orders(entries: List[Any]) -> str:
    return ", ".join(fields["order"] for _, fields in entries)


def _fields(info: Dict[str, Any]) -> str:
    return "  ".join(f"{key}={'nil' if value is None else value}" for key, value in info.items())


def run(version: str = "7.4", out: Optional[TextIO] = None) -> int:
    """Run the demo on a fresh server of profile ``version``, printing to ``out`` (stdout). Returns 0."""
    out = out or sys.stdout
    clock = ManualClock(START_MS)
    server = FakeStreamsServer(version=version, clock=clock)
    kwargs: Dict[str, Any] = {"decode_responses": True}
    if int(redis.__version__.split(".")[0]) >= 5:
        kwargs["protocol"] = 2  # the same reply shapes on every redis-py version
    r: Any = server.client(**kwargs)  # read as RESP2 shapes: redis-py annotates replies for every protocol at once
    log = _Log(clock, out)
    try:
        print(f"fake-redis-streams demo: profile {server.version} ({server.profile.server} "
              f"{server.profile.hello_version}), embedded server, manual clock at {START_MS}", file=out)

        log.section("1. Orders come in; two workers share them through a consumer group")
        for order in ("1001", "1002", "1003", "1004"):
            entry_id = r.xadd(STREAM, {"order": order})
            log("producer", f"XADD {STREAM} * order {order}  -> {entry_id}")
        log("setup", f"XGROUP CREATE {STREAM} {GROUP} 0  -> {'OK' if r.xgroup_create(STREAM, GROUP, id='0') else '?'}")
        clock.advance(100)
        for worker in ("alice", "bob"):
            [[_, got]] = r.xreadgroup(GROUP, worker, {STREAM: ">"}, count=2)
            log(worker, f"XREADGROUP ... COUNT 2 >  -> {_ids(got)} (orders {_orders(got)})")
            if worker == "alice":
                acked = r.xack(STREAM, GROUP, *(entry_id for entry_id, _ in got))
                log(worker, f"ships orders {_orders(got)}, XACK  -> {acked}")
        log("bob", "*** crashes before acknowledging: his 2 entries stay pending ***")

        log.section("2. Work goes on without bob")
        clock.advance(100)
        for order in ("1005", "1006"):
            entry_id = r.xadd(STREAM, {"order": order})
            log("producer", f"XADD {STREAM} * order {order}  -> {entry_id}")
        [[_, got]] = r.xreadgroup(GROUP, "alice", {STREAM: ">"}, count=10)
        acked = r.xack(STREAM, GROUP, *(entry_id for entry_id, _ in got))
        log("alice", f"XREADGROUP ... >  -> {_ids(got)}; ships, XACK  -> {acked}")
        summary = r.xpending(STREAM, GROUP)
        owners = ", ".join(f"{c['name']}: {c['pending']}" for c in summary["consumers"])
        log("monitor", f"XPENDING {STREAM} {GROUP}  -> {summary['pending']} pending ({owners})")

        log.section("3. A minute later (ManualClock.advance: no waiting), a recovery pass")
        clock.advance(60_000)
        log("clock", "advance(60_000)")
        for entry in r.xpending_range(STREAM, GROUP, "-", "+", 10):
            log("monitor", f"{entry['message_id']}  owner {entry['consumer']}  idle {entry['time_since_delivered']} ms  "
                           f"delivered {entry['times_delivered']}x")
        next_id, claimed, *deleted = r.xautoclaim(STREAM, GROUP, "alice", MIN_IDLE_MS, "0-0", count=10)
        log("alice", f"XAUTOCLAIM {STREAM} {GROUP} alice {MIN_IDLE_MS} 0-0  -> {_ids(claimed)} (next {next_id})")
        for entry in r.xpending_range(STREAM, GROUP, "-", "+", 10):
            log("monitor", f"{entry['message_id']}  owner {entry['consumer']}  idle {entry['time_since_delivered']} ms  "
                           f"delivered {entry['times_delivered']}x")
        clock.advance(100)
        acked = r.xack(STREAM, GROUP, *(entry_id for entry_id, _ in claimed))
        log("alice", f"ships orders {_orders(claimed)}, XACK  -> {acked}")

        log.section("4. Final state")
        summary = r.xpending(STREAM, GROUP)
        print(f"  XPENDING {STREAM} {GROUP}: {_fields(summary)}", file=out)
        for info in r.xinfo_groups(STREAM):
            print(f"  XINFO GROUPS {STREAM}: {_fields(info)}", file=out)
        for info in r.xinfo_consumers(STREAM, GROUP):
            print(f"  XINFO CONSUMERS {STREAM} {GROUP}: {_fields(info)}", file=out)
        print("\nEvery order shipped once, bob's two after the recovery pass; no server, no sleep.", file=out)
        return 0
    finally:
        r.close()
        server.close()


__all__ = ["run"]
