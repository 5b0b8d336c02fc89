"""The real-time timer (fake_streams/timer.py): one thread for the process, none per BLOCK (issue 13).

Every BLOCK on a SystemClock server arms its registry's timer (the safety net, a BLOCK n deadline); these
tests count the threads that arming starts, check that servers share the thread, that it ends when the
last armed server closes, that an armed timer does not keep an unclosed server alive, and that a bug in a
registry's timer work is recorded without stopping the thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sys
import threading
import time
import weakref
from typing import Any, Iterator, List

import pytest

from fake_streams import FakeStreamsServer
from fake_streams.timer import Timer, timer_thread_alive, timer_threads_started
from tests.support.redis_compat import aclose

from .conftest import WAIT_S

WAKES = 200


@contextlib.contextmanager
def threads_started() -> Iterator[List[str]]:
    """The names of the threads started inside the block: each new thread runs ``threading.setprofile``'s
    hook first, which notes its name and removes itself."""
    names: List[str] = []

    def note(frame: Any, event: str, arg: Any) -> None:
        sys.setprofile(None)
        names.append(threading.current_thread().name)

    threading.setprofile(note)
    try:
        yield names
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]


def test_many_async_blocks_and_wakes_start_at_most_one_thread():
    server = FakeStreamsServer()  # SystemClock + the default safety net: every BLOCK arms the timer

    async def rounds() -> None:
        reader, writer = server.async_client(), server.async_client()
        await reader.ping()
        for i in range(WAKES):
            task = asyncio.ensure_future(reader.xread({"s": "$"}, block=0))
            while not server.blocking.count():
                await asyncio.sleep(0)
            await writer.xadd("s", {"i": str(i)})
            assert len((await task)[0][1]) == 1
        await aclose(reader)
        await aclose(writer)

    try:
        with threads_started() as names:
            asyncio.run(rounds())
        assert len(names) <= 1, names
        assert set(names) <= {"fake-streams-timer"}
    finally:
        server.close()


def test_many_sync_blocks_and_wakes_start_at_most_one_thread():
    server = FakeStreamsServer()
    reader, writer = server.client(), server.client()
    go, done = threading.Semaphore(0), threading.Semaphore(0)
    replies: List[Any] = []

    def read_loop() -> None:
        for _ in range(WAKES):
            go.acquire()
            replies.append(reader.xread({"s": "$"}, block=0))
            done.release()

    thread = threading.Thread(target=read_loop, daemon=True)
    thread.start()  # the test's own thread, before counting
    try:
        with threads_started() as names:
            for i in range(WAKES):
                go.release()
                server.wait_until_blocked(1, WAIT_S)
                writer.xadd("s", {"i": str(i)})
                assert done.acquire(timeout=WAIT_S)  # real-time: the woken reader thread returns, bounded
        assert len(names) <= 1, names
        assert len(replies) == WAKES
    finally:
        thread.join(WAIT_S)  # real-time: the reader thread has returned already, bounded
        server.close()


def test_servers_share_the_timer_thread_and_it_ends_with_the_last_armed_one():
    servers = [FakeStreamsServer(), FakeStreamsServer()]
    readers = [s.client() for s in servers]
    threads = [threading.Thread(target=_swallow, args=(lambda r=r: r.xread({"s": "$"}, block=0),), daemon=True)
               for r in readers]
    try:
        threads[0].start()
        servers[0].wait_until_blocked(1, WAIT_S)
        with servers[0].backend.lock:  # the registration (and the timer's arming) is complete
            assert servers[0].blocking._timer.armed_at() is not None
        started = timer_threads_started()
        with threads_started() as names:
            threads[1].start()
            servers[1].wait_until_blocked(1, WAIT_S)
            with servers[1].backend.lock:
                assert servers[1].blocking._timer.armed_at() is not None
        assert [n for n in names if n != threads[1].name] == []  # no timer thread for the second server
        assert timer_threads_started() == started and timer_thread_alive()
        servers[0].close()
        assert timer_thread_alive()  # the other server still uses it
    finally:
        for server in servers:
            server.close()
        for t in threads:
            t.join(WAIT_S)  # real-time: close() released the readers, bounded
    assert all(s.blocking._timer.armed_at() is None for s in servers)


def test_closing_the_only_armed_server_ends_the_timer_thread():
    server = FakeStreamsServer(block_safety_s=30)
    client = server.client()
    thread = threading.Thread(target=lambda: _swallow(lambda: client.xread({"s": "$"}, block=0)), daemon=True)
    thread.start()
    server.wait_until_blocked(1, WAIT_S)
    with server.backend.lock:  # the registration (and the timer's arming) is complete
        pass
    armed = [t for t in threading.enumerate() if t.name == "fake-streams-timer"]
    assert len(armed) == 1
    server.close()
    thread.join(WAIT_S)  # real-time: close() released the reader, bounded
    others_armed = timer_thread_alive()  # another test's server may still be armed: then the thread stays
    if not others_armed:
        assert not armed[0].is_alive()


def test_an_armed_timer_does_not_keep_its_registry_alive():
    """The scheduler holds armed timers; a timer holds its registry weakly, so a server nobody closed can
    be collected while its safety-net item (60 s away) is still armed."""

    class Registry:
        runs = 0

        def run_due(self) -> None:
            Registry.runs += 1

    registry, lock = Registry(), threading.Lock()
    timer = Timer(registry, lock)
    with lock:
        timer.due(60.0)
    try:
        assert timer.armed_at() is not None
        ref = weakref.ref(registry)
        del registry
        gc.collect()
        assert ref() is None
        timer.fire()  # what the thread does when the item falls due: nothing, the registry is gone
        assert Registry.runs == 0
    finally:
        timer.stop()
    assert timer.armed_at() is None


def test_a_served_reader_leaves_the_timer_armed_but_no_stale_work():
    """After a wake-up the timer stays armed (no thread ends and restarts per BLOCK); the registry's
    heaps are empty, so the item that falls due does nothing and disarms it."""
    server = FakeStreamsServer()

    async def block_and_wake() -> None:
        reader, writer = server.async_client(), server.async_client()
        task = asyncio.ensure_future(reader.xread({"s": "$"}, block=0))
        while not server.blocking.count():
            await asyncio.sleep(0)
        await writer.xadd("s", {"k": "v"})
        await task
        await aclose(reader)
        await aclose(writer)

    try:
        asyncio.run(block_and_wake())
        timer = server.blocking._timer
        assert timer.armed_at() is not None
        with server.backend.lock:
            assert server.blocking.run_due() is None  # nothing left to wait for
    finally:
        server.close()


def test_a_failing_timer_run_is_recorded_and_the_thread_goes_on(monkeypatch):
    broken, healthy = FakeStreamsServer(), FakeStreamsServer()

    def fail() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(broken.blocking, "run_due", fail)
    try:
        with broken.backend.lock:
            broken.blocking._timer.due(0.0)
        bound = time.monotonic() + WAIT_S
        while not broken.internal_errors:
            assert time.monotonic() < bound, "the failing timer run was not recorded"
            time.sleep(0.005)  # real-time: the timer thread fires at once, bounded above
        [(where, _, text)] = broken.internal_errors
        assert where == "blocking timer" and "boom" in text
        reader = healthy.client()
        start = time.monotonic()
        assert reader.xread({"s": "$"}, block=100) == []  # real-time: a SystemClock BLOCK 100 still times out
        assert time.monotonic() - start < 2
    finally:
        broken.internal_errors.clear()
        broken.close()
        healthy.close()


def test_system_clock_deadlines_of_several_clients_fire_in_order():
    block_ms = 150  # deadlines 150 ms apart: the order holds on a loaded machine
    server = FakeStreamsServer()
    try:
        clients = [server.client() for _ in range(3)]
        ended: List[Any] = []
        threads = []
        for i, c in enumerate(clients):
            timeout = block_ms * (3 - i)

            def read(c=c, timeout=timeout, i=i) -> None:
                c.xread({"s": "$"}, block=timeout)
                ended.append(i)

            threads.append(threading.Thread(target=read, daemon=True))
        for n, t in enumerate(threads):
            t.start()
            server.wait_until_blocked(n + 1, WAIT_S)
        for t in threads:
            t.join(WAIT_S)  # real-time: SystemClock BLOCK deadlines of at most 450 ms, bounded
        assert ended == [2, 1, 0]  # the shortest deadline first, though it blocked last
    finally:
        server.close()


def _swallow(call: Any) -> None:
    try:
        call()
    except Exception:
        pass


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork: POSIX only")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")  # Python >= 3.12
def test_a_forked_child_starts_its_own_timer_thread():
    """The parent's thread does not exist in a forked child: the child's first due item starts one there."""
    server = FakeStreamsServer()
    client = server.client()
    thread = threading.Thread(target=_swallow, args=(lambda: client.xread({"s": "$"}, block=0),), daemon=True)
    thread.start()
    try:
        server.wait_until_blocked(1, WAIT_S)
        with server.backend.lock:  # the registration (and the timer's arming) is complete
            assert timer_thread_alive()
        pid = os.fork()
        if pid == 0:  # the child: report through the exit status only
            code = 1
            try:
                child = FakeStreamsServer()
                if not timer_thread_alive():
                    start = time.monotonic()
                    child.client().xread({"s": "$"}, block=50)  # real-time: a SystemClock BLOCK 50 in the child
                    code = 0 if time.monotonic() - start < 5 else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)  # real-time: the child's BLOCK 50, bounded by it
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        server.close()
        thread.join(WAIT_S)  # real-time: close() released the reader, bounded


def test_deadline_heaps_stay_small_while_a_long_wait_holds_their_head():
    """A BLOCK 0 client waits all along (its safety item heads the heap); another client blocks and is
    woken again and again: the entries of the served waits do not pile up behind the head."""
    server = FakeStreamsServer()

    async def rounds() -> None:
        long_reader, reader, writer = (server.async_client() for _ in range(3))
        waiting = asyncio.ensure_future(long_reader.xread({"other": "$"}, block=0))
        while not server.blocking.count():
            await asyncio.sleep(0)
        for i in range(300):
            task = asyncio.ensure_future(reader.xread({"s": "$"}, block=60_000))  # a deadline and a safety item
            while server.blocking.count() < 2:
                await asyncio.sleep(0)
            await writer.xadd("s", {"i": str(i)})
            await task
            assert len(server.blocking._safety) <= 64 and len(server.blocking._deadlines) <= 64
        await writer.xadd("other", {"k": "v"})
        await waiting
        for client in (long_reader, reader, writer):
            await aclose(client)

    try:
        asyncio.run(rounds())
    finally:
        server.close()
