"""``fake_redis_streams.client`` is built without re-building redis-py's response-callback table for every test
(issue 13, per-test cost): it must be the client ``redis.Redis(connection_pool=...)`` makes, attribute for
attribute, and each test's client must be its own (a callback set in one test is not seen by the next)."""

from __future__ import annotations

import threading
from typing import Any, Dict

import pytest
import redis

SEEN: Dict[str, Any] = {}


def _reference(client: Any) -> Any:
    """What redis-py itself builds on a pool like ``client``'s (same connection kwargs)."""
    pool = client.connection_pool
    return redis.Redis(connection_pool=redis.ConnectionPool(connection_class=pool.connection_class,
                                                            **pool.connection_kwargs))


@pytest.mark.parametrize("protocol", [pytest.param(2, marks=pytest.mark.fake_redis_streams(protocol=2)),
                                      pytest.param(3, marks=pytest.mark.fake_redis_streams(protocol=3))])
@pytest.mark.parametrize("round", range(2))  # the first client of a protocol is redis-py's own, later ones copies
def test_the_client_is_what_redis_py_builds(fake_redis_streams: Any, protocol: int, round: int) -> None:
    client = fake_redis_streams.client
    assert client.connection_pool.connection_kwargs["protocol"] == protocol
    reference = _reference(client)
    assert type(client) is redis.Redis
    assert set(vars(client)) == set(vars(reference))
    for name, value in vars(reference).items():
        assert type(getattr(client, name)) is type(value), name
    assert client.auto_close_connection_pool is True
    assert client.connection is None and client.single_connection_lock is not reference.single_connection_lock
    assert dict(client.response_callbacks) == dict(reference.response_callbacks)
    assert type(client.response_callbacks) is type(reference.response_callbacks)
    assert client.response_callbacks.get("xrange") is reference.response_callbacks.get("XRANGE")  # case-insensitive
    assert set(vars(client._event_dispatcher)) == set(vars(reference._event_dispatcher))
    assert client.xadd("s", {"f": "v"}, id="1-1") == b"1-1" and client.xlen("s") == 1
    assert client.xrange("s") == [(b"1-1", {b"f": b"v"})]
    assert client.xinfo_stream("s")["length"] == 1  # a callback that differs between RESP2 and RESP3


def test_a_callback_set_in_one_test_stays_in_that_test(fake_redis_streams: Any) -> None:
    client = fake_redis_streams.client
    SEEN["first"] = client
    client.set_response_callback("XLEN", lambda reply, **kw: "changed")
    assert client.xlen("s") == "changed"


def test_b_the_next_test_has_the_stock_callbacks(fake_redis_streams: Any) -> None:
    client = fake_redis_streams.client
    assert "first" in SEEN and SEEN["first"] is not client
    assert client.xlen("s") == 0
    assert client.response_callbacks.get("XLEN") is _reference(client).response_callbacks.get("XLEN")


def test_the_client_closes_its_pool_at_teardown(fake_redis_streams: Any) -> None:
    client = fake_redis_streams.client
    client.ping()
    conn = client.connection_pool._available_connections[0]
    fake_redis_streams.close()
    assert conn._sock is None  # the pool was disconnected with the client


def test_its_pool_has_no_maintenance_notification_handler(fake_redis_streams: Any) -> None:
    pytest.importorskip("redis.maint_notifications", reason="this redis-py has no maintenance notifications")
    client = fake_redis_streams.client
    assert client.ping() is True
    pool = client.connection_pool
    assert getattr(pool, "_maint_notifications_pool_handler", None) is None
    assert getattr(pool._available_connections[0], "_maint_notifications_connection_handler", None) is None
    assert _reference(client).connection_pool._maint_notifications_pool_handler is not None  # redis-py's default


def test_threads_share_nothing_they_should_not(fake_redis_streams: Any) -> None:
    """Two threads on the fixture's client: its lock is a fresh RLock, usable as redis-py's is."""
    client = fake_redis_streams.client
    errors = []

    def work() -> None:
        try:
            for _ in range(50):
                client.xadd("t", {"f": "v"})
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)  # real-time: bounded wait for two short threads
    assert not errors and client.xlen("t") == 100
