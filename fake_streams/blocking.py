"""Blocked XREAD / XREADGROUP clients (spec §3): who waits on which key, who is served when, deadlines.

A client whose command returns a :class:`~fake_streams.commands.base.BlockRequest` is *parked* here
(:meth:`BlockingRegistry.block`): it is appended to the FIFO of every key of the command and its
socket stops reading (its reply will come later). It costs nothing while it waits: no thread, no task,
no polling. It leaves on exactly one of these paths, each of which removes every registration:

* **served** — a key it waits on is signalled ready and the visit of that key re-runs its command for
  it (:meth:`_visit`); the reply (data, NOGROUP, WRONGTYPE …) is delivered to its socket;
* **timeout** — its deadline on the *server clock* passes: nil. A ManualClock expires deadlines the
  moment it is moved (:meth:`on_clock_change`); the SystemClock is served by the process's one timer
  thread, started on demand and gone when nothing is due (:class:`fake_streams.timer.Timer`);
* **CLIENT UNBLOCK** ``TIMEOUT`` (nil) / ``ERROR`` (``-UNBLOCKED …``) — :meth:`unblock`;
* **CLIENT KILL** — :meth:`hang_up` (the reader gets the ConnectionError of a server hang-up);
* **connection closed** by the client (redis-py disconnect, task cancellation, socket_timeout) —
  :meth:`drop`; or by the server (``close()``, ``connected = False``) — :meth:`release_all`;
* **safety net** — blocked longer than ``block_safety_s`` seconds of *real* time: the call fails with
  :class:`BlockSafetyError` (a ManualClock nobody advances would otherwise hang the test).

Signals (spec §3.2). Engine commands call ``ctx.signal_ready(key)`` (XADD, XGROUP DESTROY). Writes made
by fakeredis (DEL, SET, RENAME, FLUSHALL, SWAPDB, MOVE, RESTORE, expiry …) are observed as *touches*:
the adapter reports every key write of a key that has blocked clients, with the value held before
(:meth:`touched`); after each command the touches are turned into signals (:meth:`flush_touches`): a
stream *added* at the key (a different value object) signals it; a stream deleted or replaced by
another type signals it only if an XREADGROUP client (``unblock_on_nokey``) waits there. Signals are
collected per execution unit (command, EXEC, script) and served when the unit ends
(:meth:`finish_unit`), in signal order, each key once until visited. A visit serves the clients that
waited on the key when the visit started, FIFO; an XREAD client only if the key now holds a stream.
A re-blocking client goes to the tail of every key's FIFO and keeps its deadline on profiles with
``blocked_deadline_kept``. R7.0 (no ``blocked_reprocess``): served from saved state for the visited
key only, staying in place when not served (see ``commands.xread.serve_blocked_r70``).

Locking: every method that changes state runs under the backend lock (fakeredis's server lock). A
small condition (``_cond``, taken inside the backend lock, never the other way round) guards the
client table for readers from other threads (:meth:`snapshot`, :meth:`wait_until`) and the timer.

Costs: block / unblock O(k) for k keys; a visit O(c) for c clients blocked on the key, plus their
re-runs; a touch O(1); deadlines in heaps, O(log n).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
import traceback
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, List, Optional, Set, Tuple

import redis.exceptions

from .commands.base import BlockRequest
from .errors import ReplyError
from .stream import Stream
from .timer import Timer, real_monotonic

#: Default real-time limit (seconds) of a blocked call; see :class:`BlockSafetyError`.
DEFAULT_BLOCK_SAFETY_S = 60.0


class BlockSafetyError(redis.exceptions.ResponseError):
    """A blocked XREAD/XREADGROUP waited longer than ``FakeStreamsServer(block_safety_s=...)`` real seconds.

    Raised (as an error reply) in the blocked call. It exists so that a test whose ManualClock is never
    advanced fails with an explanation instead of hanging. ``block_safety_s=None`` disables it.
    """


class _Blocked:
    """Marker returned by :meth:`FakeStreamsServer.execute` when the command parked its client."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "BLOCKED"


BLOCKED = _Blocked()
#: :meth:`BlockingRegistry.rerun`'s "R7.0 client not served, stays blocked in place"
NOT_SERVED = object()


@dataclass(frozen=True)
class BlockedClient:
    """A blocked client as :meth:`FakeStreamsServer.blocked` shows it (a frozen copy).

    ``argv`` is the command as the client sent it; ``keys`` each key once, in argument order;
    ``deadline_ms`` on the server clock (``None`` for ``BLOCK 0``); ``db`` the selected database.
    """

    client_id: int
    argv: Tuple[bytes, ...]
    keys: Tuple[bytes, ...]
    deadline_ms: Optional[int]
    db: int


class Waiter:
    """One parked client: its session, what to re-run, where it waits and until when."""

    __slots__ = ("session", "spec", "prefix", "req", "keyspace", "keys", "argv", "deadline_ms", "due", "safety_at",
                 "blocked_at", "seq")

    def __init__(self, session: Any, spec: Any, prefix: List[bytes], req: BlockRequest, keyspace: Any,
                 argv: List[bytes], deadline_ms: Optional[int], due: Optional[int], safety_at: Optional[float],
                 seq: int) -> None:
        self.session = session
        self.spec = spec
        self.prefix = prefix
        self.req = req
        self.keyspace = keyspace
        self.keys = list(req.keys)
        self.argv = argv
        self.deadline_ms = deadline_ms  # on the server clock (what blocked() shows)
        self.due = due  # when the timeout fires, in BlockingRegistry._due_now() units
        self.safety_at = safety_at
        self.blocked_at = real_monotonic()
        self.seq = seq

    def record(self) -> BlockedClient:
        return BlockedClient(self.session.client_id, tuple(self.argv), tuple(self.keys), self.deadline_ms,
                             self.session.db)


QueueKey = Tuple[Any, bytes]  # (database identity, key)
#: taken to make a registry's condition or timer on first use (rare, never held long)
_MAKING = threading.Lock()


class BlockingRegistry:
    """The blocked clients of one server (see the module docstring).

    It holds its server weakly (the server holds it): no reference cycle, so a closed server and what it
    held are freed by reference counting, not left to the cyclic garbage collector (issue 13).
    """

    def __init__(self, server: Any, safety_s: Optional[float] = DEFAULT_BLOCK_SAFETY_S) -> None:
        self._server_ref = weakref.ref(server)
        self.safety_s = safety_s
        self._queues: Dict[QueueKey, Dict[Waiter, None]] = {}  # insertion-ordered: the FIFO
        self._waiters: Dict[Any, Waiter] = {}  # session -> its registration
        self._deadlines: List[Tuple[int, int, Waiter]] = []  # (due, seq, waiter); see _due_now()
        self._rechecks: List[Tuple[int, int, Waiter]] = []  # BlockRequest.recheck_ms (XREADGROUP CLAIM): re-run due
        self._safety: List[Tuple[float, int, Waiter]] = []  # real_monotonic()
        self._expiry: List[Tuple[float, int, Any, bytes]] = []  # wall-clock s (fakeredis expiry), (db, key)
        self._expiry_at: Dict[QueueKey, float] = {}  # what _expiry holds per key (no duplicates)
        self._touched: Dict[QueueKey, Any] = {}  # key written this command -> value before
        self._dead: List[Any] = []  # sessions closed without the lock (append is atomic)
        self._pending: Optional[Deque[QueueKey]] = None  # ready keys while serving
        self._pending_set: Set[QueueKey] = set()
        self._seq = itertools.count()
        self._cond_made: Optional[threading.Condition] = None  # see _cond
        self._timer_made: Optional[Timer] = None  # see _timer
        self._timer_lock = server.backend.lock
        self.closed = False

    # Made on first use: most servers (one per fixture test) never block a client, and a Condition is nine objects
    # for the cyclic GC to count and walk (issue 13: per-test cost). Made under _MAKING, so every thread gets the same.
    @property
    def _cond(self) -> threading.Condition:
        """Guards the registrations for readers in other threads (``snapshot``, ``wait_until``). O(1)."""
        cond = self._cond_made
        if cond is None:
            with _MAKING:
                cond = self._cond_made
                if cond is None:
                    cond = self._cond_made = threading.Condition()
        return cond

    @property
    def _timer(self) -> Timer:
        """The real-time alarm of this registry (deadlines, safety limits, key expiry). O(1)."""
        timer = self._timer_made
        if timer is None:
            with _MAKING:
                timer = self._timer_made
                if timer is None:
                    timer = self._timer_made = Timer(self, self._timer_lock)
        return timer

    @property
    def _server(self) -> Any:
        """The server (alive while anything can call this registry: its sessions and commands hold it)."""
        return self._server_ref()

    # ------------------------------------------------------------------------------- parking
    def block(self, session: Any, spec: Any, req: BlockRequest, argv: List[bytes], now_ms: int) -> None:
        """Park ``session`` on ``req.keys`` (lock held). ``argv``: the command as typed (its first
        ``len(argv) - len(req.args)`` items are re-used for re-runs). Deadline = ``now_ms + timeout``."""
        deadline = None if req.timeout_ms == 0 else now_ms + req.timeout_ms
        due = None if req.timeout_ms == 0 else self._due_now() + req.timeout_ms
        safety = None if self.safety_s is None else real_monotonic() + self.safety_s
        prefix = list(argv[: len(argv) - len(req.args)])
        self._register(Waiter(session, spec, prefix, req, session.keyspace, list(argv), deadline, due, safety,
                              next(self._seq)))

    def _register(self, waiter: Waiter) -> None:
        ident = waiter.keyspace.ident
        with self._cond:
            self._waiters[waiter.session] = waiter
            for key in waiter.keys:
                self._queues.setdefault((ident, key), {})[waiter] = None
            self._cond.notify_all()
        waiter.session.set_blocked(True)
        if waiter.due is not None:
            self._push_due(self._deadlines, (waiter.due, waiter.seq, waiter))
            if not self._server.clock.manual:
                self._timer.due(self._deadline_wait(waiter.due))
        if waiter.req.recheck_ms is not None:
            recheck = self._due_now() + waiter.req.recheck_ms
            self._push_due(self._rechecks, (recheck, waiter.seq, waiter))
            if not self._server.clock.manual:
                self._timer.due(self._deadline_wait(recheck))
        if waiter.safety_at is not None:
            self._push_due(self._safety, (waiter.safety_at, waiter.seq, waiter))
            self._timer.due(waiter.safety_at - real_monotonic())
        if waiter.req.unblock_on_nokey:
            for key in waiter.keys:
                self._watch_expiry(waiter.keyspace, key)

    def _push_due(self, heap: List[Any], entry: Tuple[Any, int, Waiter]) -> None:
        """``heappush``; entries of waiters that left are popped lazily at the head, so while one long wait
        stays at the head those behind it are dropped here once they are most of the heap. Amortized
        O(log n); the heap stays within twice the blocked clients (or 64 entries)."""
        heapq.heappush(heap, entry)
        if len(heap) > 64 and len(heap) > 2 * len(self._waiters):
            heap[:] = [item for item in heap if self._live(item[2])]
            heapq.heapify(heap)

    def _remove(self, waiter: Waiter) -> bool:
        """Unregister ``waiter`` from every key; False if it was not (or no longer) registered."""
        with self._cond:
            if self._waiters.get(waiter.session) is not waiter:
                return False
            del self._waiters[waiter.session]
            ident = waiter.keyspace.ident
            for key in waiter.keys:
                queue = self._queues.get((ident, key))
                if queue is not None:
                    queue.pop(waiter, None)
                    if not queue:
                        del self._queues[(ident, key)]
            self._cond.notify_all()
            idle = not self._waiters
        waiter.session.set_blocked(False)
        if idle and (self._deadlines or self._safety or self._expiry or self._rechecks):
            self._deadlines.clear()  # every entry is stale now; the timer stays armed (firing it finds
            self._safety.clear()  # nothing due), so the next BLOCK costs no thread start and no wake-up
            self._rechecks.clear()
            self._expiry.clear()
            self._expiry_at.clear()
        return True

    def _live(self, waiter: Waiter) -> bool:
        return self._waiters.get(waiter.session) is waiter

    # ------------------------------------------------------------------------------- signals
    def signal(self, unit: Any, ident: Any, key: bytes) -> None:
        """``signalKeyAsReady``: queue ``key`` in ``unit`` if clients wait on it (each key once per unit)."""
        if not self._queues:  # nobody blocked anywhere
            return
        item = (ident, key)
        if item in self._queues and item not in unit.ready:
            unit.ready.append(item)

    def touched(self, ident: Any, key: bytes, old: Any) -> None:
        """The adapter saw a write of ``key`` (value before: ``old``). O(1); keeps the first ``old`` per command."""
        if not self._queues:
            return
        item = (ident, key)
        if item in self._queues and item not in self._touched:
            self._touched[item] = old

    def has_waiters(self) -> bool:
        """Whether any client is blocked (on any key of any database). O(1)."""
        return bool(self._queues)

    def watched_keys(self, ident: Any) -> List[bytes]:
        """Keys of database ``ident`` that have blocked clients (for the adapter's expiry hooks)."""
        return [key for (db, key) in self._queues if db is ident]

    def flush_touches(self, unit: Any) -> None:
        """End of one command: turn its touches into signals of ``unit`` (spec §3.2 ``dbAdd`` /
        ``signalDeletedKeyAsReady``). Lock held."""
        if not self._touched:
            return
        touched, self._touched = self._touched, {}
        for item, old in touched.items():
            queue = self._queues.get(item)
            if not queue:
                continue
            first = next(iter(queue))
            new = first.keyspace.peek(item[1])
            nokey = any(w.req.unblock_on_nokey for w in queue)
            if new is not None and nokey:  # a TTL set or changed: wake XREADGROUP clients when it expires
                self._watch_expiry(first.keyspace, item[1])
            if new is old:  # modified in place (XADD signals itself) or only its TTL changed
                continue
            if isinstance(new, Stream) or (isinstance(old, Stream) and nokey):
                if item not in unit.ready:
                    unit.ready.append(item)

    # ------------------------------------------------------------------------------- serving
    def finish_unit(self, unit: Any) -> None:
        """End of an execution unit (lock held): expire what is due, then serve the keys it signalled."""
        if not unit.ready and not self._touched and not self._dead:  # nothing to do (the common case)
            return
        self.flush_touches(unit)
        self._purge_dead()
        ready, unit.ready = unit.ready, []
        if not ready:
            return
        if not self._server.clock.manual:
            self._expire_deadlines()
        self._serve_ready(ready)

    def _serve_ready(self, ready: List[QueueKey]) -> None:
        """``handleClientsBlockedOnKeys``: visit ready keys until none is left (re-runs may add more)."""
        outer = self._pending is None
        if outer:
            self._pending = deque()
            self._pending_set = set()
        pending = self._pending
        assert pending is not None
        for item in ready:
            if item not in self._pending_set:
                pending.append(item)
                self._pending_set.add(item)
        if not outer:  # a re-run's unit ended while serving: its keys join the current pass
            return
        try:
            while pending:
                item = pending.popleft()
                self._pending_set.discard(item)
                try:
                    self._visit(item)
                except Exception:  # a bug: keep the writer's command intact, report it like a handler's
                    self._server.internal_errors.append(("blocking", [item[1]], traceback.format_exc()))
        finally:
            self._pending = None
            self._pending_set = set()

    def _visit(self, item: QueueKey) -> None:
        """``handleClientsBlockedOnKey``: the clients blocked on the key when the visit starts, FIFO."""
        queue = self._queues.get(item)
        if not queue:
            return
        key = item[1]
        for waiter in list(queue):
            if not self._live(waiter) or waiter not in queue:
                continue
            if not waiter.session.alive:
                self._remove(waiter)
                continue
            if not isinstance(waiter.keyspace.peek(key), Stream) and not waiter.req.unblock_on_nokey:
                continue
            self._serve(waiter, key)

    def _serve(self, waiter: Waiter, key: bytes) -> None:
        session = waiter.session
        if not session.enter():  # its connection closed meanwhile
            self._remove(waiter)
            return
        try:
            self._serve_entered(waiter, key)
        finally:
            session.leave()

    def _serve_entered(self, waiter: Waiter, key: bytes) -> None:
        r70 = waiter.req.saved is not None and not self._server.profile.has("blocked_reprocess")
        if not r70:
            self._remove(waiter)
        try:
            reply = self._server.rerun(waiter, key if r70 else None)
        except ReplyError as exc:
            reply = exc
        if reply is NOT_SERVED:
            return
        if r70:
            self._remove(waiter)
        if isinstance(reply, BlockRequest):
            self._reblock(waiter, reply)
        else:
            waiter.session.deliver(reply)

    def _reblock(self, waiter: Waiter, req: BlockRequest) -> None:
        """Nothing to serve after a re-run: back to the tail of every key (spec §3.2, §6 row 7)."""
        if self._server.profile.has("blocked_deadline_kept"):
            deadline, due = waiter.deadline_ms, waiter.due
        elif req.timeout_ms == 0:
            deadline = due = None
        else:
            deadline = self._server.clock.now_ms() + req.timeout_ms
            due = self._due_now() + req.timeout_ms
        again = Waiter(waiter.session, waiter.spec, waiter.prefix, req, waiter.keyspace, waiter.argv, deadline,
                       due, waiter.safety_at, next(self._seq))
        again.blocked_at = waiter.blocked_at
        self._register(again)

    # ------------------------------------------------------------------------------ endings
    def on_clock_change(self) -> None:
        """A ManualClock moved (lock held): time out every client whose deadline has passed."""
        self._purge_dead()
        self._expire_deadlines()

    def _due_now(self) -> int:
        """The time BLOCK timeouts are measured on, in ms: the ManualClock itself (a test moves it); for any
        other clock the real monotonic clock, so ``BLOCK n`` waits n real milliseconds even when a library
        (freezegun, time-machine) freezes or moves ``time.time`` — what a real server does."""
        clock = self._server.clock
        return clock.now_ms() if clock.manual else int(real_monotonic() * 1000)

    def _expire_deadlines(self) -> None:
        now = self._due_now()
        rechecks = self._rechecks
        while rechecks and rechecks[0][0] <= now:  # a CLAIM reader's pending entry became claimable: re-run
            _, _, waiter = heapq.heappop(rechecks)
            if self._live(waiter) and waiter.session.alive:
                self._serve(waiter, waiter.keys[0])
        heap = self._deadlines
        while heap and heap[0][0] <= now:
            _, _, waiter = heapq.heappop(heap)
            if self._remove(waiter):
                waiter.session.deliver(None)

    def unblock(self, client_id: int, error: bool) -> bool:
        """``CLIENT UNBLOCK id [TIMEOUT|ERROR]`` for a client blocked here (lock held)."""
        for waiter in list(self._waiters.values()):
            if waiter.session.alive and waiter.session.client_id == client_id:
                self._remove(waiter)
                waiter.session.deliver(ReplyError("UNBLOCKED_BY_CLIENT") if error else None)
                return True
        return False

    def release_where(self, answer: Callable[[Waiter], Any]) -> int:
        """Release every blocked client for which ``answer(waiter)`` is not None, with that reply (lock held; a cluster
        node whose slot moved answers MOVED, :mod:`fake_streams._fakeredis.cluster`). Returns how many. O(waiters)."""
        released = 0
        for waiter in list(self._waiters.values()):
            reply = answer(waiter)
            if reply is not None and self._remove(waiter):
                waiter.session.deliver(reply)
                released += 1
        return released

    def hang_up(self, session: Any) -> bool:
        """``session``'s connection is killed (CLIENT KILL; lock held): forget its parked read, if it has one
        (True). The caller tells the reader."""
        waiter = self._waiters.get(session)
        return waiter is not None and self._remove(waiter)

    def release_all(self, exc: BaseException) -> None:
        """The server goes away: every blocked call fails with ``exc`` (lock held if possible)."""
        for waiter in list(self._waiters.values()):
            if self._remove(waiter):
                waiter.session.deliver(exc)

    def drop(self, session: Any, lock: Any) -> None:
        """``session``'s connection closed: forget its registration (now if the lock is free, else later)."""
        if session not in self._waiters:
            return
        if lock.acquire(blocking=False):
            try:
                waiter = self._waiters.get(session)
                if waiter is not None:
                    self._remove(waiter)
            finally:
                lock.release()
        else:
            self._dead.append(session)
            with self._cond:
                self._cond.notify_all()

    def _purge_dead(self) -> None:
        while self._dead:
            waiter = self._waiters.get(self._dead.pop())
            if waiter is not None:
                self._remove(waiter)

    # ------------------------------------------------------------------------ timer & expiry
    def _deadline_wait(self, due: int) -> float:
        return max(0.0, (due - self._due_now()) / 1000.0)

    def _watch_expiry(self, keyspace: Any, key: bytes) -> None:
        """Wake XREADGROUP clients when ``key`` expires (fakeredis expires keys lazily, on the wall clock)."""
        expireat = keyspace.expireat(key)
        item = (keyspace.ident, key)
        if expireat is not None and self._expiry_at.get(item) != expireat:
            self._expiry_at[item] = expireat
            heapq.heappush(self._expiry, (expireat, next(self._seq), keyspace, key))
            self._timer.due(expireat - time.time())

    def run_due(self) -> Optional[float]:
        """The timer's work (lock held): everything due now; returns seconds until the next due item."""
        self._purge_dead()
        waits: List[float] = []
        if not self._server.clock.manual:
            self._expire_deadlines()
            while self._deadlines and not self._live(self._deadlines[0][2]):
                heapq.heappop(self._deadlines)
            if self._deadlines:
                waits.append(self._deadline_wait(self._deadlines[0][0]))
            while self._rechecks and not self._live(self._rechecks[0][2]):
                heapq.heappop(self._rechecks)
            if self._rechecks:
                waits.append(self._deadline_wait(self._rechecks[0][0]))
        mono = real_monotonic()
        while self._safety and (self._safety[0][0] <= mono or not self._live(self._safety[0][2])):
            _, _, waiter = heapq.heappop(self._safety)
            if self._remove(waiter):
                waiter.session.deliver(BlockSafetyError(self._safety_message(waiter)))
        if self._safety:
            waits.append(self._safety[0][0] - mono)
        wall = time.time()
        expired: List[Tuple[Any, bytes]] = []
        while self._expiry and (self._expiry[0][0] <= wall or (self._expiry[0][2].ident, self._expiry[0][3])
                                not in self._queues):
            at, _, keyspace, key = heapq.heappop(self._expiry)
            if self._expiry_at.get((keyspace.ident, key)) == at:
                del self._expiry_at[(keyspace.ident, key)]
            if (keyspace.ident, key) in self._queues:
                expired.append((keyspace, key))
        if self._expiry:
            waits.append(self._expiry[0][0] - wall)
        if expired:
            unit = self._server.new_unit()
            for keyspace, key in expired:
                keyspace.purge_expired(key)  # reported as a touch by the adapter
            self._server.finish_unit(unit)
        return min(waits) if waits else None

    def timer_failed(self, text: str) -> None:
        """The timer's ``run_due`` raised (a bug): recorded like a handler's, the timer goes on."""
        self._server.internal_errors.append(("blocking timer", [], text))

    def _safety_message(self, waiter: Waiter) -> str:
        command = b" ".join(waiter.argv).decode("utf-8", "replace")
        clock = self._server.clock
        lines = [f"fake_streams: a blocked call waited {self.safety_s:g} s of real time and was given up.",
                 f"  command: {command}"]
        if clock.manual and waiter.deadline_ms is not None:
            lines += [
                "  The server clock is a ManualClock that was never advanced past the BLOCK deadline:",
                f"  now:      {clock.now_ms()} ms",
                f"  deadline: {waiter.deadline_ms} ms",
                "Advance it (server.clock.advance(ms)) or write to one of the keys;",
            ]
        else:
            lines.append("  Nothing woke it (BLOCK 0 waits forever); write to one of the keys;")
        lines.append("FakeStreamsServer(block_safety_s=...) changes the limit (None disables it).")
        return "\n".join(lines)

    # --------------------------------------------------------------------------- inspection
    def snapshot(self) -> List[BlockedClient]:
        """The blocked clients in the order they blocked (any thread)."""
        with self._cond:
            waiters = [w for w in self._waiters.values() if w.session.alive]
        return [w.record() for w in sorted(waiters, key=lambda w: w.seq)]

    def count(self) -> int:
        with self._cond:
            return sum(1 for w in self._waiters.values() if w.session.alive)

    def wait_until(self, n: int, timeout_s: float) -> List[BlockedClient]:
        """Wait (on a condition, no polling) until at least ``n`` clients are blocked."""
        deadline = real_monotonic() + timeout_s
        with self._cond:
            while sum(1 for w in self._waiters.values() if w.session.alive) < n:
                remaining = deadline - real_monotonic()
                if remaining <= 0:
                    have = sum(1 for w in self._waiters.values() if w.session.alive)
                    raise TimeoutError(f"fake_streams: {have} client(s) blocked after {timeout_s:g} s; "
                                       f"waited for {n}")
                self._cond.wait(remaining)
        return self.snapshot()

    def close(self) -> None:
        """Disarm the timer (its thread ends, at most ~1 s, if no other server uses it). The clients must
        have been released already."""
        self.closed = True
        if self._timer_made is not None:  # never armed: nothing to stop
            self._timer_made.stop()


__all__ = ["BLOCKED", "BlockSafetyError", "BlockedClient", "BlockingRegistry", "DEFAULT_BLOCK_SAFETY_S"]
