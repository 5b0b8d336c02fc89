"""The runs of redis-py's suite that tests/redispy compares, started when the session's collection ends and
made in one background thread while the rest of the session runs; each test then takes its job's outcome.

A run of redis-py's suite is a subprocess that keeps a core busy for seconds (a client process and a server),
while the session's own pytest process leaves the machine's second core mostly idle: started at the end of the
collection, the twelve runs are usually done when tests/redispy is reached. The background thread's
subprocesses run under ``nice`` (:data:`BACKGROUND_NICENESS`): they take the CPU the session leaves idle, not
the CPU of the tests running meanwhile (some of which time real servers). A test whose job is not done yet runs
pending jobs itself, at the normal priority (its own first), rather than wait idle. Without the background thread
(the default) a test that makes its own pairable job (one run of the suite: a module's ``pairable(name)`` says which)
makes the next pending pairable job beside it, joined before the test goes on (:meth:`Jobs.result`). Nothing else
changes: every job makes the same runs, and its test asserts on them as before.

Jobs are registered by :func:`start` from the tests the session selected (each test module names the job of
an item with ``job_of(item)``), in the order those tests run; a module's ``FOREGROUND_JOBS`` are left to their
tests (made when the test asks, in the session's thread). The background thread is opt-in,
``FAKE_STREAMS_REDISPY_BACKGROUND=1`` (never in an xdist worker: every worker collects every item): in two
clean-clone CI runs in a row one background run's redis-py subprocess died of SIGKILL (exit -9, well inside its
timeout; the cause was not found), which runs made by their own tests never have. Without it each test makes
its own job when it runs. :func:`stop` (session end) drops the jobs not started and stops the subprocesses of the
running one.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from .harness import set_thread_niceness, stop_all_runs

BACKGROUND_ENV = "FAKE_STREAMS_REDISPY_BACKGROUND"
#: real-time bound of :func:`stop`'s wait for the running job once its subprocesses were stopped, seconds
STOP_WAIT_S = 60.0
#: the niceness of the background thread's subprocesses
BACKGROUND_NICENESS = 10


@dataclass
class Outcome:
    """What a job made: its runs (in the order the job names them), or why a server it needs is missing."""

    runs: Tuple[Any, ...] = ()
    missing: str = ""
    label: str = ""  # the real side's name in an assertion message
    labels: Dict[str, str] = field(default_factory=dict)  # RESULTS lines: what -> counts


Job = Callable[[], Outcome]


class Jobs:
    """Named jobs, each made once: by the background thread in registration order, or by the test that asks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: Dict[str, Job] = {}  # insertion order: the order the tests run
        self._pairable: Dict[str, bool] = {}  # key -> may be made beside another pairable job (see result)
        self._futures: Dict[str, Future] = {}
        self._thread: Optional[threading.Thread] = None
        self._stopping = False
        self._stopped = threading.Event()

    def add(self, key: str, job: Job, pairable: bool = False) -> None:
        """Register job ``key`` (once; a later add of the same key changes nothing). ``pairable``: a job that keeps
        about one core busy (one run of the suite), which :meth:`result` may make beside another such job."""
        with self._lock:
            if key not in self._futures:
                self._futures[key] = Future()
                self._pending[key] = job
                self._pairable[key] = pairable

    def start_background(self) -> None:
        with self._lock:
            if self._thread is None and self._pending:
                self._thread = threading.Thread(target=self._work, name="redispy-jobs", daemon=True)
                self._thread.start()

    def _take(self, preferred: Optional[str] = None) -> Optional[Tuple[str, Job]]:
        with self._lock:
            if self._stopping or not self._pending:
                return None
            key = preferred if preferred in self._pending else next(iter(self._pending))
            return key, self._pending.pop(key)

    def _take_companion(self, besides: str) -> Optional[Tuple[str, Job]]:
        """The next pending pairable job other than ``besides``, taken; None if there is none."""
        with self._lock:
            if self._stopping:
                return None
            for key in self._pending:
                if key != besides and self._pairable.get(key):
                    return key, self._pending.pop(key)
            return None

    def _make(self, key: str, job: Job) -> None:
        future = self._futures[key]
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(job())
        except BaseException as exc:  # noqa: BLE001 - handed to the test, which raises it
            future.set_exception(exc)

    def _work(self) -> None:
        set_thread_niceness(BACKGROUND_NICENESS)
        while (taken := self._take()) is not None:
            self._make(*taken)
        # idle until the session ends: a thread that ended in the middle of another test would change the
        # thread count some tests compare (tests/tcp/test_loop.py)
        self._stopped.wait()

    def result(self, key: str, job: Job, pairable: bool = False) -> Outcome:
        """The outcome of job ``key`` (registered now when it was not): made here if nobody started it; while it is
        made elsewhere, this thread makes other pending jobs, then waits.

        Without the background thread, a pairable job made here has a companion: the next pending pairable job,
        made at the same time in a thread of its own and joined before this returns (the machine's second core
        would idle otherwise; nothing of the companion outlives this call, so no other test of the session runs
        beside it). Its test then finds its outcome made."""
        self.add(key, job, pairable)
        future = self._futures[key]
        while not future.done():
            taken = self._take(preferred=key)
            if taken is None:
                break
            companion = None
            if taken[0] == key and self._pairable.get(key) and self._thread is None:
                companion = self._take_companion(besides=key)
            helper = None
            if companion is not None:
                helper = threading.Thread(target=self._make, args=companion, name="redispy-companion", daemon=True)
                helper.start()
            self._make(*taken)
            if helper is not None:
                error = future.exception()  # made just now by this thread: done, never cancelled
                if error is not None and not isinstance(error, Exception):
                    stop_all_runs()  # interrupted (KeyboardInterrupt …): end the companion's runs too
                helper.join()
        return future.result()

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            for key in self._pending:
                self._futures[key].cancel()
            self._pending.clear()
            thread = self._thread
        self._stopped.set()
        if thread is not None and thread.is_alive():
            stop_all_runs()
            thread.join(STOP_WAIT_S)  # real-time: the running job's servers stop once its subprocesses are gone


JOBS = Jobs()


def start(items: List[Any], config: Any) -> None:
    """Register the jobs of the selected ``items`` (tests not skipped by a marker; none under ``--collect-only``)
    and, unless disabled, start the background thread."""
    for item in items:
        job_of = getattr(getattr(item, "module", None), "job_of", None)
        if job_of is None or item.get_closest_marker("skip") is not None:
            continue
        named = job_of(item)
        if named is not None and named[0] not in getattr(item.module, "FOREGROUND_JOBS", ()):
            pairable = getattr(item.module, "pairable", None)
            JOBS.add(*named, pairable=bool(pairable and pairable(named[0])))
    if config.option.collectonly:
        return
    if os.environ.get(BACKGROUND_ENV, "0") == "1" and not hasattr(config, "workerinput"):
        JOBS.start_background()


def stop() -> None:
    JOBS.stop()


__all__ = ["BACKGROUND_ENV", "BACKGROUND_NICENESS", "JOBS", "Job", "Jobs", "Outcome", "start", "stop"]
