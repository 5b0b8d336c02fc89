"""Tests for examples/worker.py, written the way we suggest you write yours.

* The ``fake_redis_streams`` fixture gives every test a fresh in-memory server; the application's
  own ``redis.Redis.from_url(REDIS_URL)`` reaches it because the fixture patches redis-py.
* Time is a manual clock: idle times and BLOCK timeouts move when the test says so — no sleeps.
* The same file runs against a real server with ``--fake-redis-streams-real=redis://host:port``;
  tests that need the manual clock, the views or fault injection are skipped there with the reason.
"""

from __future__ import annotations

import threading
from typing import Dict, List

import pytest
import worker

pytestmark = pytest.mark.fake_redis_streams(decode_responses=True)


@pytest.fixture
def app(fake_redis_streams, monkeypatch):
    """The application's own client, built from REDIS_URL like in production."""
    monkeypatch.setenv("REDIS_URL", fake_redis_streams.url)
    client = worker.connect()
    worker.ensure_group(client)
    yield client
    client.close()


class Recorder:
    """A handler that records orders and fails on demand."""

    def __init__(self, fail_times: int = 0) -> None:
        self.seen: List[Dict[str, str]] = []
        self.fail_times = fail_times

    def __call__(self, order: Dict[str, str]) -> None:
        self.seen.append(order)
        if self.fail_times:
            self.fail_times -= 1
            raise RuntimeError("payment service unavailable")


def test_published_orders_are_processed_and_acked(app, fake_redis_streams):
    worker.publish(app, {"sku": "A", "qty": "1"})
    worker.publish(app, {"sku": "B", "qty": "2"})
    handler = Recorder()

    assert worker.Worker(app, "w1", handler).poll_once() == 2

    assert handler.seen == [{"sku": "A", "qty": "1"}, {"sku": "B", "qty": "2"}]
    assert fake_redis_streams.client.xpending(worker.STREAM, worker.GROUP)["pending"] == 0


def test_ensure_group_is_idempotent(app):
    worker.ensure_group(app)
    assert [g["name"] for g in app.xinfo_groups(worker.STREAM)] == [worker.GROUP]


def test_a_failed_handler_leaves_the_order_pending(app, fake_redis_streams):
    entry_id = worker.publish(app, {"sku": "A"})

    assert worker.Worker(app, "w1", Recorder(fail_times=1)).poll_once() == 0

    pending = fake_redis_streams.group(worker.STREAM, worker.GROUP).pending
    assert [(p.id, p.consumer, p.delivery_count) for p in pending] == [(entry_id, "w1", 1)]


@pytest.mark.fake_redis_streams(start_ms=1_700_000_000_000)
def test_orders_of_a_crashed_worker_are_recovered_after_min_idle(app, fake_redis_streams):
    entry_id = worker.publish(app, {"sku": "A"})
    app.xreadgroup(worker.GROUP, "crashed", {worker.STREAM: ">"})  # read, then the process died
    handler = Recorder()
    rescuer = worker.Worker(app, "w2", handler, min_idle_ms=60_000)

    fake_redis_streams.clock.advance(59_999)
    assert rescuer.recover() == 0  # not idle long enough: the owner may still be working on it

    fake_redis_streams.clock.advance(1)
    assert rescuer.recover() == 1

    assert handler.seen == [{"sku": "A"}]
    fake_redis_streams.assert_all_acked(worker.STREAM, worker.GROUP)
    assert entry_id in fake_redis_streams.stream(worker.STREAM).ids  # acked, not deleted


@pytest.mark.fake_redis_streams(start_ms=1_000)
def test_a_poison_order_ends_in_the_dead_letter_stream(app, fake_redis_streams):
    entry_id = worker.publish(app, {"sku": "POISON"})
    w = worker.Worker(app, "w1", Recorder(fail_times=99), min_idle_ms=1_000, max_deliveries=3)
    w.poll_once()  # delivery 1
    for _ in range(2):  # deliveries 2 and 3, each after the order went idle
        fake_redis_streams.clock.advance(1_000)
        assert w.recover() == 0

    fake_redis_streams.clock.advance(1_000)
    assert w.recover() == 1  # delivery 4 > max_deliveries: dead-lettered

    dead = fake_redis_streams.stream(worker.DEAD)
    assert [e.fields for e in dead.entries] == [{"sku": "POISON", "original_id": entry_id}]
    fake_redis_streams.assert_all_acked()


@pytest.mark.fake_redis_streams(start_ms=1_000)
def test_a_lost_xack_means_the_order_is_processed_again(app, fake_redis_streams):
    """At-least-once: the handler ran, but the XACK never reached the server."""
    worker.publish(app, {"sku": "A"})
    handler = Recorder()
    fake_redis_streams.faults.fail_next("XACK", error="ERR injected: connection reset while acking")
    w = worker.Worker(app, "w1", handler, min_idle_ms=1_000)

    with pytest.raises(Exception, match="connection reset while acking"):
        w.poll_once()
    fake_redis_streams.clock.advance(1_000)
    assert w.recover() == 1

    assert handler.seen == [{"sku": "A"}, {"sku": "A"}]  # handlers must be idempotent
    fake_redis_streams.assert_all_acked()


def test_a_blocked_worker_wakes_up_when_an_order_arrives(app, fake_redis_streams):
    handler = Recorder()
    results: List[int] = []
    poller = threading.Thread(target=lambda: results.append(worker.Worker(app, "w1", handler).poll_once()))
    poller.start()
    fake_redis_streams.wait_until_blocked(1)  # no sleep: wait until the server has it blocked

    worker.publish(fake_redis_streams.client, {"sku": "A"})

    poller.join(10)  # real-time: bounded wait for the woken thread
    assert results == [1] and handler.seen == [{"sku": "A"}]


@pytest.mark.fake_redis_streams(start_ms=1_000)
def test_an_idle_poll_returns_when_block_ms_has_passed_on_the_clock(app, fake_redis_streams):
    results: List[int] = []
    poller = threading.Thread(target=lambda: results.append(worker.Worker(app, "w1", Recorder(), block_ms=5_000).poll_once()))
    poller.start()
    fake_redis_streams.wait_until_blocked(1)

    fake_redis_streams.clock.advance(5_000)  # the BLOCK deadline passes now, not in 5 real seconds

    poller.join(10)  # real-time: bounded wait for the woken thread
    assert results == [0]
