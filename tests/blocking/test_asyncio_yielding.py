"""The asyncio connection yields to the event loop on every command, as socket I/O does (issue 13).

Each scenario runs the same redis.asyncio code against a real server and against a fake (duo, see
conftest.py) and compares what the tasks saw: a polling consumer without BLOCK can be stopped by another
task, a reader task created just before a burst of XADDs sends its ``XREAD BLOCK … $`` first, every command
and every pipeline execute gives other tasks at least one loop iteration. Loop iterations are counted by a
ticker task, not timed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, List

import pytest

from fake_streams import FakeStreamsServer
from tests.support.redis_compat import aclose

from .conftest import ASYNC_NO_RETRY, WAIT_S


class Ticker:
    """A task that counts the loop iterations it gets (one per ``asyncio.sleep(0)``)."""

    def __init__(self) -> None:
        self.ticks = 0
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            self.ticks += 1
            await asyncio.sleep(0)

    def stop(self) -> None:
        self._task.cancel()


def test_a_polling_consumer_without_block_lets_another_task_stop_it(duo):
    """``while not stop.is_set(): await r.xread(..., count=10)``: the task that sets ``stop`` gets to run."""

    async def scenario(side):
        r = side.async_client(**ASYNC_NO_RETRY)
        try:
            await r.xadd("jobs", {"n": "1"}, id="1-1")
            stop = asyncio.Event()
            bound = time.monotonic() + WAIT_S

            async def poll() -> str:
                while not stop.is_set():
                    await r.xread({"jobs": "0"}, count=10)
                    if time.monotonic() > bound:  # real-time: a starved loop never runs stopper(); give up
                        return "starved"
                return "stopped"

            async def stopper() -> None:
                for _ in range(3):
                    await asyncio.sleep(0)
                stop.set()

            outcome, _ = await asyncio.gather(poll(), stopper())
            return outcome
        finally:
            await aclose(r)

    real, fake = duo.run(scenario)
    assert real.value == fake.value == "stopped", (real.value, fake.value)


@pytest.mark.parametrize("warm", ["connected", "fresh"])
def test_a_reader_task_created_before_a_burst_of_xadds_blocks_first(duo, warm):
    """faststream's ``test_concurrent_consume_stream`` pattern: the reader task is created, then the writer
    sends five XADDs; the reader's ``XREAD BLOCK … $`` reaches the server before the second XADD (before
    this yielding, the fake ran the whole burst first and the reader got nothing)."""

    async def scenario(side):
        reader, writer = side.async_client(**ASYNC_NO_RETRY), side.async_client(**ASYNC_NO_RETRY)
        try:
            if warm == "connected":
                await reader.ping()
                await writer.ping()
            task = asyncio.ensure_future(reader.xread({"s": "$"}, block=2000))  # real-time: bounded wait if missed
            for i in range(1, 6):
                await writer.xadd("s", {"n": str(i)}, id=f"{i}-1")
            return _entry_ids(await asyncio.wait_for(task, WAIT_S))
        finally:
            await aclose(reader)
            await aclose(writer)

    real, fake = duo.run(scenario)
    # which XADD a real server sees first after the XREAD is a race (two sockets, sent one loop iteration
    # apart; the first or second on an idle machine): the reader gets part of the burst, never nothing.
    # The fake is deterministic: the XREAD comes right after the first XADD.
    for side in (real, fake):
        assert isinstance(side.value, list) and side.value, f"the reader missed the burst: {side.value!r}"
    assert fake.value == [b"2-1"], f"the reader blocked late on the fake: {fake.value!r}"


@pytest.mark.parametrize("kind", ["stream command", "other command", "pipeline", "transaction", "blocking read"])
def test_every_command_and_pipeline_execute_gives_the_loop_an_iteration(duo, kind):
    n = 20

    async def scenario(side):
        r = side.async_client(**ASYNC_NO_RETRY)
        try:
            await r.ping()
            await r.xadd("s", {"k": "v"}, id="1-1")
            ticker = Ticker()
            await asyncio.sleep(0)
            before = ticker.ticks
            for _ in range(n):
                if kind == "stream command":
                    await r.xlen("s")
                elif kind == "other command":
                    await r.get("k")
                elif kind == "blocking read":  # served at once: data is there
                    await r.xread({"s": "0"}, block=100)
                else:
                    async with r.pipeline(transaction=kind == "transaction") as pipe:
                        pipe.xlen("s").xrange("s").xadd("s", {"k": "v"})  # stream commands: the direct path
                        await pipe.execute()
            ticks = ticker.ticks - before
            ticker.stop()
            return ticks >= n
        finally:
            await aclose(r)

    real, fake = duo.run(scenario)
    assert real.value is True, "the real server's client gives at least one iteration per command"
    assert fake.value is True, f"fewer than one loop iteration per {kind} on the fake"


def test_a_cancel_that_lands_on_the_yield_drops_the_connection_so_no_reply_goes_astray():
    """Fake only (how many loop iterations a real round trip takes is the network's business): a task
    cancelled on the yield of its command's read gets CancelledError; the command ran (it was sent, as on
    a server), its reply is dropped with the connection, and the next command reads its own reply."""
    server = FakeStreamsServer()

    async def scenario() -> tuple:
        r = server.async_client(**ASYNC_NO_RETRY)
        try:
            await r.set("k", "1")
            probe = server.client()
            task = asyncio.ensure_future(r.incr("k"))
            for _ in range(100):  # until the task has sent INCR (run at once in memory): it then yields
                await asyncio.sleep(0)  # in the same step, before its read, and stands on that yield now
                if probe.get("k") == b"2":
                    break
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return await r.get("k"), await r.xadd("s", {"f": "v"}, id="1-1"), await r.ping()
        finally:
            await aclose(r)

    try:
        assert asyncio.run(scenario()) == (b"2", b"1-1", True)
    finally:
        server.close()


def _entry_ids(reply: Any) -> List[bytes]:
    """The entry IDs of an XREAD reply of one stream (RESP2 list or RESP3 map)."""
    if not reply:
        return []
    entries = list(reply.values())[0][0] if isinstance(reply, dict) else reply[0][1]
    return [entry[0] for entry in entries]
