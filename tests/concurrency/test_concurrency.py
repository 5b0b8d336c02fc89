"""Exactly-once and at-least-once delivery under concurrency (issue 6, "Concurrency").

8 producer threads XADD ``N`` entries (payload ``p``/``q`` = producer, sequence) while 8 consumers of one
group — 4 threads with sync clients and 4 asyncio tasks on one event loop in its own thread — read with
``XREADGROUP GROUP g <c> BLOCK 100 COUNT 50 STREAMS s >`` and XACK.

* :func:`test_exactly_once_delivery_and_ack` (SystemClock): every entry is delivered exactly once in the
  group and acked; XLEN, XPENDING, XINFO GROUPS agree; a second group reads each entry once too.
* :func:`test_crashed_consumers_recovered_by_xautoclaim` (ManualClock): consumers crash after reading a
  batch (seeded): their thread/task ends, or their client is closed, or their connection is dropped
  by ``Faults.drop`` before the XACK; a replacement consumer takes the slot over. Time does not move
  while consumers run, so no live consumer's entry is ever idle; afterwards the test advances the clock
  past the min-idle time and two concurrent rescuers loop XAUTOCLAIM: each abandoned entry is claimed
  by exactly one rescuer, nothing is lost, the PEL ends empty.

``N`` = env ``FAKE_STREAMS_CONCURRENCY_N`` (default 100000 in the full run, 5000 in the fast loop). Measured on the 2-core CI machine: the
produce/consume phase takes 6-10 s in the first test and 19-26 s in the second (slower because an
installed ``Faults`` turns the transport's fast path off), ~40 s for the file, also with a second copy
of the file running at the same time — so CI keeps the full 100000. ``FAKE_STREAMS_CONCURRENCY_SEED`` fixes the seed (random otherwise;
printed, and in every assertion message). No sleeps: the test waits on events, joins and
``wait_until_blocked``, every real-time wait bounded by :data:`WAIT_S` or :data:`RUN_S`.
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import redis
import redis.asyncio.retry
from redis.backoff import NoBackoff
from redis.retry import Retry

from fake_streams import FakeStreamsServer, ManualClock
from fake_streams.faults import Faults
from tests.conftest import PROTOCOLS, START_MS, pool_kwargs
from tests.support.budget import budget
from tests.support.redis_compat import aclose

N = int(os.environ.get("FAKE_STREAMS_CONCURRENCY_N", "") or budget(fast=5_000, full=100_000))
SEED = int(os.environ.get("FAKE_STREAMS_CONCURRENCY_SEED", str(random.SystemRandom().randrange(2**32))))
PRODUCERS = 8
SYNC_CONSUMERS = 4
ASYNC_CONSUMERS = 4
#: bound of a short real-time wait (joins after a stop, wait_until_blocked), seconds
WAIT_S = 15.0
#: bound of the whole produce/consume phase in real time, seconds
RUN_S = 240.0
KEY = "s"

EntryId = bytes
Payload = Tuple[int, int]


def _ctx() -> str:
    return f"(seed={SEED}, N={N}; rerun with FAKE_STREAMS_CONCURRENCY_SEED={SEED} FAKE_STREAMS_CONCURRENCY_N={N})"


def _threads() -> Set[threading.Thread]:
    return set(threading.enumerate())


def _sync_client(server: FakeStreamsServer, protocol: int) -> Any:
    return server.client(**pool_kwargs(protocol, retry=Retry(NoBackoff(), 0)))


def _async_client(server: FakeStreamsServer, protocol: int) -> Any:
    return server.async_client(**pool_kwargs(protocol, retry=redis.asyncio.retry.Retry(NoBackoff(), 0)))


def _protocol(i: int) -> int:
    return PROTOCOLS[i % len(PROTOCOLS)]


def _entries(reply: Any) -> List[Tuple[EntryId, Dict[bytes, bytes]]]:
    """The entries of an XREADGROUP reply on one key, RESP2 (list of pairs) or RESP3 (map)."""
    if not reply:
        return []
    if isinstance(reply, dict):  # RESP3: redis-py gives {key: [entries]}
        assert list(reply) == [KEY.encode()] and len(reply[KEY.encode()]) == 1, reply
        entries = reply[KEY.encode()][0]
    else:  # RESP2: [[key, entries]]
        assert len(reply) == 1 and reply[0][0] == KEY.encode(), reply
        entries = reply[0][1]
    return [(entry_id, dict(fields)) for entry_id, fields in entries]


def _payload(fields: Dict[bytes, bytes]) -> Payload:
    return int(fields[b"p"]), int(fields[b"q"])


class Run:
    """Shared bookkeeping of one run: a stop flag, counters, errors, the threads started."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.done = threading.Event()  # all N read (test 2) / acked (test 1), or an error
        self.count = 0
        self.errors: List[str] = []
        self.threads: List[threading.Thread] = []
        self.tasks: List[Any] = []  # asyncio tasks (created and read on the event-loop thread only)

    def add(self, n: int) -> None:
        with self.lock:
            self.count += n
            if self.count >= N:
                self.done.set()

    def fail(self, where: str, exc: BaseException) -> None:
        with self.lock:
            self.errors.append(f"{where}: {type(exc).__name__}: {exc}")
        self.done.set()

    def start(self, name: str, target: Callable[[], None]) -> None:
        def body() -> None:
            try:
                target()
            except BaseException as exc:  # noqa: BLE001 - reported by the test thread
                self.fail(name, exc)

        thread = threading.Thread(target=body, name=f"concurrency-{name}", daemon=True)
        with self.lock:
            self.threads.append(thread)
        thread.start()

    def join_all(self) -> List[str]:
        """Join every thread started (including those started meanwhile); the names of those still alive."""
        deadline = time.monotonic() + WAIT_S
        while True:
            with self.lock:
                pending = [t for t in self.threads if t.is_alive()]
            if not pending:
                return []
            for thread in pending:
                thread.join(max(0.0, deadline - time.monotonic()))  # real-time: workers end after stop/close
            if time.monotonic() >= deadline:
                return [t.name for t in self.threads if t.is_alive()]


def _start_producers(server: FakeStreamsServer, run: Run) -> List[Payload]:
    """8 producer threads XADD ``N`` entries between them; returns every payload they will write."""
    share = [N // PRODUCERS + (1 if p < N % PRODUCERS else 0) for p in range(PRODUCERS)]
    for p in range(PRODUCERS):
        def produce(p: int = p) -> None:
            client = _sync_client(server, _protocol(p))
            try:
                for q in range(share[p]):
                    client.xadd(KEY, {"p": p, "q": q})
            finally:
                client.close()

        run.start(f"producer-{p}", produce)
    return [(p, q) for p in range(PRODUCERS) for q in range(share[p])]


def _run_async_consumers(run: Run, make_tasks: Callable[[], List[Any]]) -> None:
    """An event loop in its own thread runs the tasks ``make_tasks()`` creates, and those they add to
    ``run.tasks``, until all have ended."""

    def loop_body() -> None:
        async def main() -> None:
            run.tasks.extend(make_tasks())
            while True:
                live = [t for t in run.tasks if not t.done()]
                if not live:
                    break
                await asyncio.wait(live)
            for t in run.tasks:
                if t.exception() is not None:
                    run.fail("async consumer", t.exception())
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if others:
                run.fail("async loop", RuntimeError(f"{len(others)} task(s) left"))

        asyncio.run(main())

    run.start("event-loop", loop_body)


# ------------------------------------------------------------------------------- exactly once
def test_exactly_once_delivery_and_ack():
    print(f"concurrency exactly-once {_ctx()}")
    before = _threads()
    started = time.monotonic()
    server = FakeStreamsServer()  # SystemClock: BLOCK 100 times out in real time
    admin = server.client()
    admin.xgroup_create(KEY, "g", id="0", mkstream=True)
    run = Run()
    delivered: List[List[Tuple[EntryId, Payload, bytes]]] = []
    acked = collections.Counter()

    def record(name: str, batch: List[Tuple[EntryId, Dict[bytes, bytes]]], n_acked: int) -> None:
        mine = [(i, _payload(f), name.encode()) for i, f in batch]
        with run.lock:
            delivered.append(mine)
            acked[name] += n_acked
        run.add(n_acked)

    for c in range(SYNC_CONSUMERS):
        def consume(name: str = f"t{c}", protocol: int = _protocol(c)) -> None:
            client = _sync_client(server, protocol)
            try:
                while not run.stop.is_set():
                    batch = _entries(client.xreadgroup("g", name, {KEY: ">"}, count=50, block=100))
                    if batch:
                        record(name, batch, client.xack(KEY, "g", *[i for i, _ in batch]))
            finally:
                client.close()

        run.start(f"consumer-{c}", consume)

    def make_tasks() -> List[Any]:
        async def consume(name: str, protocol: int) -> None:
            client = _async_client(server, protocol)
            try:
                while not run.stop.is_set():
                    batch = _entries(await client.xreadgroup("g", name, {KEY: ">"}, count=50, block=100))
                    if batch:
                        record(name, batch, await client.xack(KEY, "g", *[i for i, _ in batch]))
            finally:
                await aclose(client)

        return [asyncio.ensure_future(consume(f"a{c}", _protocol(c + 1))) for c in range(ASYNC_CONSUMERS)]

    _run_async_consumers(run, make_tasks)
    expected = _start_producers(server, run)

    finished = run.done.wait(RUN_S)  # real-time: the whole produce/consume phase
    run.stop.set()
    alive = run.join_all()
    elapsed = time.monotonic() - started
    print(f"exactly-once: {N} entries, {PRODUCERS} producers, {SYNC_CONSUMERS}+{ASYNC_CONSUMERS} consumers, {elapsed:.1f} s")
    assert finished and not run.errors, f"{run.errors or 'timed out'} {_ctx()}"
    assert not alive, f"threads still alive after stop: {alive} {_ctx()}"

    got = [d for batch in delivered for d in batch]
    counts = collections.Counter(i for i, _, _ in got)
    dupes = [i for i, n in counts.items() if n > 1]
    assert not dupes, f"{len(dupes)} entries delivered more than once, e.g. {dupes[:5]} {_ctx()}"
    assert sorted(p for _, p, _ in got) == expected, f"payloads delivered != payloads written {_ctx()}"
    assert sum(acked.values()) == N, f"XACK counted {sum(acked.values())} {_ctx()}"
    stored = {i: _payload(f) for i, f in admin.xrange(KEY)}
    assert stored == {i: p for i, p, _ in got}, f"delivered entries differ from XRANGE {_ctx()}"
    # each producer's entries are in its XADD order (one connection, one thread)
    for p in range(PRODUCERS):
        seqs = [q for _, (pp, q) in sorted(stored.items(), key=lambda kv: _id_key(kv[0])) if pp == p]
        assert seqs == sorted(seqs), f"producer {p}'s entries out of order {_ctx()}"

    assert admin.xlen(KEY) == N
    assert admin.xpending(KEY, "g")["pending"] == 0
    (group,) = admin.xinfo_groups(KEY)
    assert (group["pending"], group["lag"], group["entries-read"]) == (0, 0, N), f"{group} {_ctx()}"
    consumers = admin.xinfo_consumers(KEY, "g")
    names = {f"{kind}{c}".encode() for kind, n in (("t", SYNC_CONSUMERS), ("a", ASYNC_CONSUMERS)) for c in range(n)}
    assert {n.encode() for n in acked} <= {c["name"] for c in consumers} <= names, f"{consumers} {_ctx()}"
    assert all(c["pending"] == 0 for c in consumers)

    # a second group reads everything: each entry once
    admin.xgroup_create(KEY, "g2", id="0")
    second = collections.Counter()
    while True:
        batch = _entries(admin.xreadgroup("g2", "solo", {KEY: ">"}, count=5000))
        if not batch:
            break
        second.update(i for i, _ in batch)
        assert admin.xack(KEY, "g2", *[i for i, _ in batch]) == len(batch)
    assert set(second) == set(stored) and set(second.values()) == {1}, f"second group {_ctx()}"
    infos = {g["name"]: g for g in admin.xinfo_groups(KEY)}
    assert (infos[b"g2"]["pending"], infos[b"g2"]["lag"], infos[b"g2"]["entries-read"]) == (0, 0, N)

    admin.close()
    errors = list(server.internal_errors)
    server.close()
    assert not errors, "\n".join(tb for _, _, tb in errors)
    assert _threads() <= before, f"threads left: {_threads() - before}"


def _id_key(entry_id: bytes) -> Tuple[int, int]:
    ms, seq = entry_id.split(b"-")
    return int(ms), int(seq)


# ---------------------------------------------------------------------------- crash recovery
CRASH_P = 0.02  # chance that a consumer crashes after reading a batch
MAX_CRASHES = 6  # per consumer slot
CRASH_MODES = ("vanish", "close", "drop")
MIN_IDLE_MS = 60_000


def test_crashed_consumers_recovered_by_xautoclaim():
    print(f"concurrency crash-recovery {_ctx()}")
    before = _threads()
    started = time.monotonic()
    server = FakeStreamsServer(clock=ManualClock(START_MS))  # time moves only when the test says
    faults = Faults.install(server)
    admin = server.client()
    admin.xgroup_create(KEY, "g", id="0", mkstream=True)
    run = Run()
    lock = run.lock
    read: Dict[EntryId, Tuple[Payload, str]] = {}  # every entry read by a consumer, and by whom
    processed: Dict[EntryId, int] = collections.Counter()  # entry -> times processed (then acked)
    crashes: List[Tuple[str, str, int]] = []  # (consumer, mode, entries abandoned)
    abandoned: Set[EntryId] = set()

    def on_batch(name: str, rng: random.Random, crashes_left: int, batch: List[Tuple[EntryId, Dict[bytes, bytes]]]) -> Optional[str]:
        """Record a read batch; the crash mode if the consumer crashes now (seeded per slot)."""
        mode = rng.choice(CRASH_MODES) if crashes_left and rng.random() < CRASH_P else None
        with lock:
            for i, f in batch:
                assert i not in read, f"{i!r} read twice by '>' ({read[i][1]} and {name})"
                read[i] = (_payload(f), name)
            if mode:
                crashes.append((name, mode, len(batch)))
                abandoned.update(i for i, _ in batch)
        return mode

    def on_acked(batch: List[Tuple[EntryId, Any]], n_acked: int) -> None:
        assert n_acked == len(batch), (n_acked, len(batch))
        with lock:
            processed.update(i for i, _ in batch)

    def sync_slot(slot: int, generation: int, crashes_left: int, rng: random.Random) -> None:
        name = f"t{slot}.{generation}"
        client = _sync_client(server, _protocol(slot))
        try:
            while True:
                try:
                    reply = client.xreadgroup("g", name, {KEY: ">"}, count=50, block=100)
                except redis.ConnectionError:
                    if run.stop.is_set():
                        return  # server.close() at the end
                    raise
                batch = _entries(reply)
                if not batch:
                    continue  # a ManualClock that does not move: only close() ends the read
                mode = on_batch(name, rng, crashes_left, batch)
                if mode is None:
                    on_acked(batch, client.xack(KEY, "g", *[i for i, _ in batch]))
                    run.add(len(batch))
                    continue
                # crash: the slot is taken over by the next generation, this one never acks
                run.start(f"t{slot}.{generation + 1}", lambda: sync_slot(slot, generation + 1, crashes_left - 1, rng))
                if mode == "drop":
                    faults.drop(client)
                    try:
                        client.xack(KEY, "g", *[i for i, _ in batch])
                    except redis.ConnectionError:
                        pass
                    else:
                        raise AssertionError("a dropped connection ran XACK")
                run.add(len(batch))
                return  # "vanish"; "close" is the finally clause
        finally:
            client.close()

    for slot in range(SYNC_CONSUMERS):
        rng = random.Random(f"{SEED}-t{slot}")
        run.start(f"t{slot}.0", lambda slot=slot, rng=rng: sync_slot(slot, 0, MAX_CRASHES, rng))

    def make_tasks() -> List[Any]:
        async def async_slot(slot: int, generation: int, crashes_left: int, rng: random.Random) -> None:
            name = f"a{slot}.{generation}"
            client = _async_client(server, _protocol(slot + 1))
            try:
                while True:
                    try:
                        reply = await client.xreadgroup("g", name, {KEY: ">"}, count=50, block=100)
                    except redis.ConnectionError:
                        if run.stop.is_set():
                            return
                        raise
                    batch = _entries(reply)
                    if not batch:
                        continue
                    mode = on_batch(name, rng, crashes_left, batch)
                    if mode is None:
                        on_acked(batch, await client.xack(KEY, "g", *[i for i, _ in batch]))
                        run.add(len(batch))
                        continue
                    run.tasks.append(asyncio.ensure_future(async_slot(slot, generation + 1, crashes_left - 1, rng)))
                    if mode == "drop":
                        faults.drop(client)
                        try:
                            await client.xack(KEY, "g", *[i for i, _ in batch])
                        except redis.ConnectionError:
                            pass
                        else:
                            raise AssertionError("a dropped connection ran XACK")
                    run.add(len(batch))
                    return
            finally:
                await aclose(client)

        return [asyncio.ensure_future(async_slot(s, 0, MAX_CRASHES, random.Random(f"{SEED}-a{s}")))
                for s in range(ASYNC_CONSUMERS)]

    _run_async_consumers(run, make_tasks)
    expected = _start_producers(server, run)

    finished = run.done.wait(RUN_S)  # real-time: the whole produce/consume phase
    assert finished and not run.errors, f"{run.errors or 'timed out'} {_ctx()}"
    # every slot's current consumer ends up blocked on '>' (nothing is left to read)
    server.wait_until_blocked(SYNC_CONSUMERS + ASYNC_CONSUMERS, WAIT_S)
    consumed_at = time.monotonic()
    assert len(read) == N and not run.errors, f"{len(read)} read, {run.errors} {_ctx()}"
    assert crashes or N < 10_000, f"no consumer crashed: raise CRASH_P {_ctx()}"
    assert abandoned.isdisjoint(processed) and len(abandoned) + len(processed) == N

    # before recovery: exactly the abandoned entries are pending, delivered once, owned by crashed consumers
    pending = admin.xpending_range(KEY, "g", "-", "+", N + 1)
    assert {p["message_id"] for p in pending} == abandoned, f"PEL != abandoned entries {_ctx()}"
    assert {p["times_delivered"] for p in pending} <= {1}
    crashed = {name.encode() for name, _, _ in crashes}
    assert {p["consumer"] for p in pending} <= crashed

    # recovery: the entries become idle; two rescuers race over the PEL with XAUTOCLAIM
    server.clock.advance(MIN_IDLE_MS)
    claimed: Dict[str, List[EntryId]] = {"r0": [], "r1": []}

    def rescue(name: str) -> None:
        client = _sync_client(server, 2)
        try:
            cursor = b"0-0"
            while True:
                cursor, entries, deleted = client.xautoclaim(KEY, "g", name, MIN_IDLE_MS, cursor, count=100)
                assert deleted == [], deleted
                ids = [i for i, _ in entries]
                if ids:
                    info = client.xpending_range(KEY, "g", ids[0], ids[-1], len(ids), consumername=name)
                    assert {p["message_id"] for p in info} >= set(ids)
                    assert all(p["times_delivered"] >= 2 for p in info if p["message_id"] in set(ids)), info
                    for i, f in entries:
                        assert _payload(f) == read[i][0]
                    claimed[name].extend(ids)
                    on_acked(entries, client.xack(KEY, "g", *ids))
                if cursor == b"0-0":
                    return
        finally:
            client.close()

    for name in claimed:
        run.start(f"rescuer-{name}", lambda name=name: rescue(name))
    with run.lock:
        rescuers = run.threads[-2:]
    for thread in rescuers:
        thread.join(WAIT_S)  # real-time: one XAUTOCLAIM pass over the PEL
    assert not any(t.is_alive() for t in rescuers) and not run.errors, f"{run.errors} {_ctx()}"

    both = claimed["r0"] + claimed["r1"]
    assert len(both) == len(set(both)), f"an entry was claimed by both rescuers {_ctx()}"
    assert set(both) == abandoned, f"claimed != abandoned: lost {len(abandoned - set(both))} {_ctx()}"
    assert set(processed) == set(read) and min(processed.values()) >= 1, f"entries never processed {_ctx()}"
    assert sorted(p for p, _ in read.values()) == expected, f"payloads read != written {_ctx()}"
    assert admin.xlen(KEY) == N
    assert admin.xpending(KEY, "g")["pending"] == 0
    consumers = admin.xinfo_consumers(KEY, "g")
    assert all(c["pending"] == 0 for c in consumers), f"{consumers} {_ctx()}"
    assert crashed <= {c["name"] for c in consumers}
    (group,) = admin.xinfo_groups(KEY)
    assert (group["pending"], group["entries-read"]) == (0, N), f"{group} {_ctx()}"

    run.stop.set()
    errors = list(server.internal_errors)
    admin.close()
    server.close()  # the blocked consumers get ConnectionError and end
    alive = run.join_all()
    elapsed = time.monotonic() - started
    modes = collections.Counter(mode for _, mode, _ in crashes)
    print(f"crash-recovery: {N} entries, {len(crashes)} crashes {dict(modes)}, {len(abandoned)} abandoned, "
          f"claimed {len(claimed['r0'])}+{len(claimed['r1'])}, consume {consumed_at - started:.1f} s, total {elapsed:.1f} s")
    assert not alive and not run.errors, f"alive: {alive}, errors: {run.errors} {_ctx()}"
    assert not errors, "\n".join(tb for _, _, tb in errors)
    assert _threads() <= before, f"threads left: {_threads() - before}"
