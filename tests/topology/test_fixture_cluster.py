"""The fixture's ``topology="cluster"``: what the code under test builds (RedisCluster sync and asyncio, through the
patching) reaches the fake cluster; the handle's client, views and helpers follow the slots."""

from __future__ import annotations

import asyncio

import pytest
import redis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster

from fake_streams.topology import key_slot
from pytest_plugin._options import Options
from tests.support.redis_compat import aclose


@pytest.mark.fake_redis_streams(topology="cluster", url="redis://localhost:7000", start_ms=1_700_000_000_000)
def test_code_that_builds_redis_cluster(fake_redis_streams):
    app = RedisCluster(host="localhost", port=7000)  # what the code under test does
    try:
        app.xadd("{jobs}", {"id": "1"}, id="1-1")
        app.xgroup_create("{jobs}", "workers", id="0")
        app.xreadgroup("workers", "crashed", {"{jobs}": ">"})
        fake_redis_streams.clock.advance(60_000)
        claimed = app.xautoclaim("{jobs}", "workers", "rescuer", min_idle_time=60_000)
        assert claimed[1] == [(b"1-1", {b"id": b"1"})]
        cluster = fake_redis_streams.cluster
        assert [n.port for n in cluster.nodes] == [7000, 7001, 7002]
        assert [p.consumer for p in fake_redis_streams.group("{jobs}", "workers").pending] == ["rescuer"]
        owner = cluster.node_for_key("{jobs}")
        target = next(n for n in cluster.nodes if n is not owner)
        cluster.move_slot(key_slot(b"jobs"), target)
        assert app.xack("{jobs}", "workers", "1-1") == 1  # MOVED, followed
        assert fake_redis_streams.group("{jobs}", "workers").pending == ()
        fake_redis_streams.assert_all_acked()
        assert fake_redis_streams.client.xlen("{jobs}") == 1
    finally:
        app.close()


@pytest.mark.fake_redis_streams(topology="cluster", cluster_nodes=1)
def test_single_node_cluster_and_from_url(fake_redis_streams):
    app = RedisCluster.from_url("redis://localhost:6379")
    try:
        assert app.set("a", "1") and app.set("b", "2")
        with pytest.raises(redis.exceptions.ClusterCrossSlotError):
            app.mget("a", "b")  # one node: redis-py sends it, the node refuses
        assert app.mget_nonatomic("a", "b") == [b"1", b"2"]
        assert len(fake_redis_streams.cluster.nodes) == 1
    finally:
        app.close()


@pytest.mark.fake_redis_streams(topology="cluster", cluster_nodes=2, url="redis://127.0.0.1:7100")
def test_asyncio_redis_cluster_through_the_patching(fake_redis_streams):
    async def main():
        app = AsyncRedisCluster(host="127.0.0.1", port=7100)
        try:
            await app.xadd("events", {"n": "1"}, id="1-1")
            handle_client = fake_redis_streams.async_client()
            return await app.xlen("events"), await handle_client.xrange("events")
        finally:
            await aclose(app)

    assert asyncio.run(main()) == (1, [(b"1-1", {b"n": b"1"})])


def test_options_validation():
    assert Options(topology="cluster", cluster_nodes="5").cluster_nodes == 5
    with pytest.raises(ValueError, match="topology must be"):
        Options(topology="ring")
    with pytest.raises(ValueError, match="cluster_nodes must be 1 or more"):
        Options(topology="cluster", cluster_nodes=0)


def test_patch_redis_reaches_a_cluster_and_is_undone():
    from redis.asyncio.cluster import ClusterNode as AsyncClusterNode

    from fake_streams import patch_redis
    from fake_streams.topology import FakeCluster

    slot_member = AsyncClusterNode.__dict__["connection_class"]
    with patch_redis() as network:
        cluster = FakeCluster(3, host="localhost", base_port=7200, network=network)
        app = RedisCluster(host="localhost", port=7201)
        try:
            app.xadd("a", {"f": "v"}, id="1-1")
            app.xadd("b", {"f": "v"}, id="1-1")
        finally:
            app.close()
        assert sorted(n.server.client().dbsize() for n in cluster.nodes) == [0, 1, 1]

        async def main():
            aapp = AsyncRedisCluster(host="localhost", port=7202)
            try:
                return await aapp.xlen("a") + await aapp.xlen("b")
            finally:
                await aclose(aapp)

        assert asyncio.run(main()) == 2
    assert AsyncClusterNode.__dict__["connection_class"] is slot_member  # the slot member is back


@pytest.mark.fake_redis_streams(topology="cluster", cluster_nodes=2, url="redis://localhost:7300")
def test_serve_is_refused_for_a_cluster(fake_redis_streams):
    with pytest.raises(RuntimeError, match="serve_cluster"):
        fake_redis_streams.serve()
