"""The blocking registry's timer: one daemon thread per server, alive only while something waits on real time.

Used by :class:`fake_streams.blocking.BlockingRegistry` for SystemClock BLOCK deadlines, the real-time
safety net and key expiries (a ManualClock needs no thread: moving it expires deadlines at once).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Optional


def real_monotonic() -> float:
    """Monotonic seconds that time-freezing libraries leave alone (freezegun patches ``time.monotonic``;
    ``clock_gettime(CLOCK_MONOTONIC)`` is untouched), so the safety net fires even under a frozen clock."""
    return _clock_gettime(_CLOCK_MONOTONIC) if _clock_gettime is not None else time.monotonic()


_clock_gettime = getattr(time, "clock_gettime", None)
_CLOCK_MONOTONIC = getattr(time, "CLOCK_MONOTONIC", 1)


class Timer:
    """One daemon thread per server, alive only while something waits on real time.

    It sleeps on a condition until the nearest due time (a SystemClock deadline, a safety limit, a
    key expiry), runs the registry's ``run_due()`` under the backend lock, and exits when nothing
    is left to wait for. :meth:`due` (lock held) starts it or wakes it for an earlier item.
    """

    def __init__(self, registry: Any, lock: Any) -> None:
        self._registry = registry
        self._lock = lock
        self._cond = threading.Condition()
        self._thread: Optional[threading.Thread] = None
        self._kicked = False
        self._stopped = False
        self._next_at: Optional[float] = None  # real_monotonic() the thread sleeps until

    def due(self, in_s: float) -> None:
        at = real_monotonic() + max(0.0, in_s)
        with self._cond:
            if self._stopped:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="fake-streams-timer", daemon=True)
                self._next_at = at
                self._thread.start()
            elif self._next_at is None or at < self._next_at:
                self._kicked = True
                self._cond.notify_all()

    def kick(self) -> None:
        """Make a sleeping thread re-check now (it ends if nothing is left to wait for)."""
        with self._cond:
            if self._thread is not None:
                self._kicked = True
                self._cond.notify_all()

    def _run(self) -> None:
        lock = self._lock
        while True:
            with lock:
                wait = None if self._stopped else self._registry.run_due()
                with self._cond:
                    if wait is None or self._stopped:
                        self._thread = None
                        self._next_at = None
                        return
                    self._next_at = real_monotonic() + wait
            with self._cond:
                if not self._kicked and not self._stopped:
                    self._cond.wait(max(wait, 0.0))
                self._kicked = False

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            thread = self._thread
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(1.0)


__all__ = ["Timer"]
