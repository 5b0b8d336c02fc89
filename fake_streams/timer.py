"""The real-time timer of the blocking registries: one daemon thread for the whole process, alive only while
some server has something due in real time.

Used by :class:`fake_streams.blocking.BlockingRegistry` for SystemClock BLOCK deadlines, the real-time
safety net and key expiries (a ManualClock needs no thread: moving it expires deadlines at once).

Each registry owns a :class:`Timer`; every Timer is served by the process's one scheduler thread
(``fake-streams-timer``), which sleeps on a condition until the earliest due time of all of them, runs
that registry's ``run_due()`` under its server's lock and re-arms it for the next item. A BLOCK whose due
time is not earlier than what its timer already waits for (the common case: safety limits only grow)
costs a dict look-up and starts nothing: 1,000 blocked-and-woken reads start at most one thread. An
item that stopped mattering (the client was served) is not cancelled: its entry fires, finds nothing
due, and the timer goes idle; the thread ends once no timer is armed (at :meth:`Timer.stop`, when the
last one stops, it is woken and joined), and after ``fork`` the child starts its own on demand.

A Timer holds its registry weakly: a server nobody closed stays collectable while its entry is armed
(the entry fires, finds it gone, and is dropped).

Locking: :meth:`Timer.due` runs with the registry's backend lock held; the scheduler's condition is a
leaf lock (taken inside a backend lock, never the other way round): the thread takes a backend lock
only with the condition released.

Costs: :meth:`Timer.due` O(1); the thread's loop O(t) per wake-up for t armed timers (one per server
with pending real-time work: a handful).
"""

from __future__ import annotations

import os
import threading
import time
import traceback
import weakref
from typing import Any, Dict, List, Optional


def real_monotonic() -> float:
    """Monotonic seconds that time-freezing libraries leave alone (freezegun patches ``time.monotonic``;
    ``clock_gettime(CLOCK_MONOTONIC)`` is untouched), so the safety net fires even under a frozen clock."""
    return _clock_gettime(_CLOCK_MONOTONIC) if _clock_gettime is not None else time.monotonic()


_clock_gettime = getattr(time, "clock_gettime", None)
_CLOCK_MONOTONIC = getattr(time, "CLOCK_MONOTONIC", 1)

#: the name of the scheduler thread (tests and thread-leak checks look for it)
THREAD_NAME = "fake-streams-timer"


class _Scheduler:
    """The process's timer thread: sleeps until the earliest armed :class:`Timer`, fires it, repeats."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: Dict[Timer, float] = {}  # timer -> real_monotonic() it is due at (one entry each)
        self._thread: Optional[threading.Thread] = None
        self._sleep_until = 0.0  # what the thread sleeps until; 0: not sleeping (it looks again before it does)
        self.started = 0  # threads started so far (for tests and benchmarks)

    def arm(self, timer: Timer, at: float) -> None:
        """Fire ``timer`` at ``at`` (real_monotonic seconds) or earlier. O(1)."""
        with self._cond:
            current = self._armed.get(timer)
            if (current is not None and current <= at) or timer.stopped:
                return
            self._armed[timer] = at
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
                self.started += 1
                self._thread.start()
            elif at < self._sleep_until:
                self._cond.notify_all()

    def stop(self, timer: Timer, join_s: float) -> None:
        """Forget ``timer`` for good (it is never armed again); if no timer is left, wake the thread so that
        it ends, and wait for that up to ``join_s`` seconds (never from the thread itself)."""
        with self._cond:
            timer.stopped = True  # under the condition: an arm() racing with this one cannot re-arm it
            self._armed.pop(timer, None)
            thread = self._thread
            if self._armed or thread is None:
                return
            self._cond.notify_all()
        if thread is not threading.current_thread():
            thread.join(join_s)

    def armed(self, timer: Timer) -> Optional[float]:
        with self._cond:
            return self._armed.get(timer)

    def alive(self) -> bool:
        """Whether the thread runs now."""
        with self._cond:
            return self._thread is not None

    def _run(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while True:
                    if not self._armed:
                        self._thread = None
                        return
                    now = real_monotonic()
                    due: List[Timer] = [timer for timer, at in self._armed.items() if at <= now]
                    if due:
                        for timer in due:
                            del self._armed[timer]
                        break
                    self._sleep_until = min(self._armed.values())
                    cond.wait(self._sleep_until - now)
                    self._sleep_until = 0.0
            for timer in due:  # the condition released: fire takes the timer's backend lock
                timer.fire()

    def _after_fork(self) -> None:
        """In a forked child: the thread does not exist there; start afresh (on demand)."""
        self._cond = threading.Condition()
        self._armed = {}
        self._thread = None
        self._sleep_until = 0.0


_SCHEDULER = _Scheduler()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_SCHEDULER._after_fork)


def timer_thread_alive() -> bool:
    """Whether the process's timer thread runs now."""
    return _SCHEDULER.alive()


def timer_threads_started() -> int:
    """How many timer threads this process has started (the thread ends when nothing is due; a later due
    item starts a new one)."""
    return _SCHEDULER.started


class Timer:
    """A registry's real-time alarm, served by the process's scheduler thread (see the module docstring).

    ``registry.run_due()`` (called with ``lock`` held) does what is due and returns the seconds until its
    next item (None: nothing left); ``registry.timer_failed(text)`` records an exception it raised.
    """

    __slots__ = ("_registry", "_lock", "stopped", "__weakref__")

    def __init__(self, registry: Any, lock: Any) -> None:
        self._registry = weakref.ref(registry)
        self._lock = lock
        self.stopped = False  # set once, by stop()

    def due(self, in_s: float) -> None:
        """Something is due in ``in_s`` seconds (lock held). O(1)."""
        _SCHEDULER.arm(self, real_monotonic() + max(0.0, in_s))

    def armed_at(self) -> Optional[float]:
        """The real_monotonic() time this timer fires at next, or None (idle)."""
        return _SCHEDULER.armed(self)

    def fire(self) -> None:
        """On the scheduler thread: run what is due under the lock, re-arm for the next item."""
        registry = self._registry()
        if registry is None or self.stopped:
            return
        with self._lock:
            if self.stopped:
                return
            try:
                wait = registry.run_due()
            except Exception:  # a bug: keep the thread serving the other servers, report it
                registry.timer_failed(traceback.format_exc())
                return
            if wait is not None:
                self.due(wait)

    def stop(self) -> None:
        """Never fire again; the thread ends (joined, at most ~1 s) if no other timer is armed."""
        _SCHEDULER.stop(self, 1.0)


__all__ = ["THREAD_NAME", "Timer", "real_monotonic", "timer_thread_alive", "timer_threads_started"]
