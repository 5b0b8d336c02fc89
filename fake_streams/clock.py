"""Clocks: the only module that reads time. Everything in the engine takes ``now_ms`` from a clock.

:class:`SystemClock` follows the wall clock (``time.time``, so time-machine / freezegun steer it);
:class:`ManualClock` only moves when a test moves it. A server subscribes to its clock so that a
manual ``advance``/``set`` can expire BLOCK deadlines at once (see ``subscribe``).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional, Tuple


class Clock:
    """Base class: ``now_ms()`` in integer Unix milliseconds, plus change subscriptions."""

    manual = False

    def __init__(self) -> None:
        # replaced, never changed in place (copy on write, under _LISTENERS_LOCK): a clock nobody subscribes to (a
        # SystemClock per fixture test) allocates nothing for it, and _changed reads it without a lock or a copy
        self._listeners: Tuple[Callable[[], None], ...] = ()

    def now_ms(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` (from the thread that moves the clock) after every change; returns an unsubscribe."""
        with _LISTENERS_LOCK:
            self._listeners = self._listeners + (callback,)

        def unsubscribe() -> None:
            with _LISTENERS_LOCK:
                listeners = list(self._listeners)
                try:
                    listeners.remove(callback)
                except ValueError:
                    return
                self._listeners = tuple(listeners)

        return unsubscribe

    def _changed(self) -> None:
        for callback in self._listeners:
            callback()


#: guards every clock's subscriptions (subscribing is rare: a server on a manual clock, once)
_LISTENERS_LOCK = threading.Lock()

#: ManualClock's own methods: on a SystemClock they raise :class:`SystemClockIsNotManual`
_MANUAL_ONLY = ("advance", "set", "now")


class SystemClockIsNotManual(AttributeError):
    """``advance`` / ``set`` / ``now`` asked of a :class:`SystemClock`: it follows the wall clock; the message
    says how to get a :class:`ManualClock`. An ``AttributeError``, so ``hasattr(clock, "advance")`` stays False."""


class SystemClock(Clock):
    """Wall-clock time, ``int(time.time() * 1000)`` (what Redis's ``mstime()`` gives).

    It cannot be moved: ``advance`` / ``set`` raise :class:`SystemClockIsNotManual`, which says how to ask for
    a :class:`ManualClock` instead.

    >>> SystemClock().advance(1000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    fake_streams.clock.SystemClockIsNotManual: SystemClock.advance(): this server's clock is the wall clock ...
    """

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def __getattr__(self, name: str) -> Any:  # only called for names the class does not have
        if name in _MANUAL_ONLY:
            raise SystemClockIsNotManual(
                f"SystemClock.{name}(): this server's clock is the wall clock (time.time(); freezegun and "
                f"time-machine steer it) and cannot be moved. To move time yourself, use a ManualClock:\n"
                f"  - with the pytest plugin: @pytest.mark.fake_redis_streams(clock=\"manual\") on the test, class or "
                f"module (start_ms=<Unix ms> also selects it and sets its start; --fake-redis-streams-clock=manual "
                f"for the whole run), then fake_redis_streams.clock.advance(ms);\n"
                f"  - by hand: FakeStreamsServer(clock=ManualClock(start_ms)) (from fake_streams import ManualClock), "
                f"then server.clock.advance(ms)."
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        return "SystemClock()"


class ManualClock(Clock):
    """A clock that stands still until told otherwise.

    >>> clock = ManualClock(1_000)
    >>> clock.advance(250)
    1250
    >>> clock.now_ms()
    1250
    """

    manual = True

    def __init__(self, start_ms: Optional[int] = None) -> None:
        super().__init__()
        self._now = int(time.time() * 1000) if start_ms is None else int(start_ms)
        if self._now < 0:
            raise ValueError("start_ms must be >= 0")
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        return self._now

    def now(self) -> int:
        """Alias of :meth:`now_ms`."""
        return self._now

    def advance(self, ms: int) -> int:
        """Move forward by ``ms`` milliseconds (>= 0); returns the new time."""
        ms = int(ms)
        if ms < 0:
            raise ValueError("advance() takes a non-negative number of milliseconds; use set() to go back")
        with self._lock:
            self._now += ms
            now = self._now
        self._changed()
        return now

    def set(self, ms: int) -> int:
        """Jump to ``ms`` (may go backwards, like a wall clock stepping back); returns it."""
        ms = int(ms)
        if ms < 0:
            raise ValueError("time must be >= 0")
        with self._lock:
            self._now = ms
        self._changed()
        return ms

    def __repr__(self) -> str:
        return f"ManualClock({self._now})"
