"""The fixture's ``topology="sentinel"``: what the code under test builds (redis-py's Sentinel, sync and asyncio,
through the patching) reaches the fake deployment; the handle's client follows a failover, its views read the
dataset whichever node is master."""

from __future__ import annotations

import asyncio

import pytest
import redis
import redis.asyncio.sentinel
from redis.sentinel import Sentinel

from pytest_plugin._options import Options
from tests.support.redis_compat import aclose, async_failover_retry


@pytest.mark.fake_redis_streams(topology="sentinel", sentinel_replicas=2, start_ms=1_700_000_000_000)
def test_code_that_builds_a_sentinel_client(fake_redis_streams):
    app = Sentinel([("localhost", 26379)], socket_timeout=1)  # what the code under test does
    master = app.master_for("mymaster")
    master.xadd("jobs", {"id": "1"}, id="1-1")
    master.xgroup_create("jobs", "workers", id="0")
    master.xreadgroup("workers", "crashed", {"jobs": ">"})
    assert [p.consumer for p in fake_redis_streams.group("jobs", "workers").pending] == ["crashed"]
    deployment = fake_redis_streams.sentinel
    assert [n.port for n in deployment.nodes] == [6379, 6380, 6381]
    assert app.slave_for("mymaster").xlen("jobs") == 1
    promoted = deployment.failover()
    fake_redis_streams.clock.advance(60_000)
    claimed = master.xautoclaim("jobs", "workers", "rescuer", min_idle_time=60_000)
    assert claimed[1] == [(b"1-1", {b"id": b"1"})]
    assert master.xack("jobs", "workers", "1-1") == 1
    fake_redis_streams.assert_all_acked()
    assert app.discover_master("mymaster") == ("127.0.0.1", promoted.port)
    assert fake_redis_streams.client.xlen("jobs") == 1  # the handle's client is Sentinel-managed too


@pytest.mark.fake_redis_streams(topology="sentinel", url="redis://localhost:7000", sentinel_port=27000,
                                sentinel_master="orders", sentinel_replicas=0)
def test_options_place_the_deployment(fake_redis_streams):
    app = Sentinel([("127.0.0.1", 27000)])
    assert app.discover_master("orders") == ("127.0.0.1", 7000)
    assert app.discover_slaves("orders") == []
    assert redis.Redis(port=7000).set("k", "v")  # a plain client of the master's address
    assert fake_redis_streams.client.get("k") == b"v"
    with pytest.raises(RuntimeError, match="serve --sentinel"):
        fake_redis_streams.serve()


@pytest.mark.fake_redis_streams(topology="sentinel", clock="manual")
def test_asyncio_sentinel_through_the_patch(fake_redis_streams):
    """The code under test's asyncio Sentinel client through a failover, as in production: its connection to the
    old master serves on until the sentinel converts that one (10 s later: the clock), then the next command
    reconnects, asks the sentinel and reaches the new master (every redis-py line: the pool checks the connection
    out, sees the hang-up and reconnects through the sentinel)."""
    async def main():
        app = redis.asyncio.sentinel.Sentinel([("localhost", 26379)])
        master = app.master_for("mymaster", **async_failover_retry())
        replica = app.slave_for("mymaster")
        try:
            await master.xadd("s", {"a": "1"}, id="1-1")
            assert await replica.xrange("s") == [(b"1-1", {b"a": b"1"})]
            with pytest.raises(redis.exceptions.ReadOnlyError):
                await replica.xadd("s", {"a": "2"})
            deployment = fake_redis_streams.sentinel
            deployment.failover()
            assert await app.discover_master("mymaster") == ("127.0.0.1", 6380)
            assert (await master.execute_command("ROLE"))[0] == b"master"  # still the old one's
            assert [c.port for c in master.connection_pool._available_connections] == [6379]
            fake_redis_streams.clock.advance(deployment.conversion_delay_ms())
            assert await master.xadd("s", {"a": "2"}, id="2-1") == b"2-1"
            assert [c.port for c in master.connection_pool._available_connections] == [6380]
            handle_client = fake_redis_streams.async_client()
            assert await handle_client.xlen("s") == 2
        finally:
            await aclose(master)
            await aclose(replica)

    asyncio.run(main())


def test_sentinel_options_are_validated():
    with pytest.raises(ValueError, match="topology must be 'standalone', 'cluster' or 'sentinel'"):
        Options(topology="ring")
    with pytest.raises(ValueError, match="sentinel_replicas must be 0 or more"):
        Options(topology="sentinel", sentinel_replicas=-1)
    assert Options(topology="sentinel").sentinel_master == "mymaster"


@pytest.mark.fake_redis_streams(topology="sentinel")
def test_failure_report_shows_the_dataset_once(fake_redis_streams):
    fake_redis_streams.client.xadd("orders", {"sku": "A"}, id="1-1")
    fake_redis_streams.sentinel.failover()
    report = fake_redis_streams.report()
    assert report.count("stream 'orders'") == 1
    assert ("redis://127.0.0.1:6379  (profile 7.4, SystemClock())\n  old master, not converted yet (a replica of "
            "127.0.0.1:6380 to be): the master's data") in report
    fake_redis_streams.sentinel.convert_old_masters()
    assert "redis://127.0.0.1:6379  (profile 7.4, SystemClock())\n  replica of 127.0.0.1:6380: the master's data" \
        in fake_redis_streams.report()
    assert "sentinel watching 'mymaster' (master 127.0.0.1:6380)" in report
