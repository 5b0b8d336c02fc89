"""Production topologies on the fake: a Redis Cluster of N masters (:class:`FakeCluster`) and a Sentinel deployment
(:class:`FakeSentinel`: a master, its replicas, a sentinel), each node its own
:class:`~fake_streams.server.FakeStreamsServer` at its own address.

Modules: :mod:`.slots` (CRC16 hash slots, hash tags, the slot split), :mod:`.keys` (key positions of non-stream
commands), :mod:`.redirect` (CROSSSLOT / MOVED / ASK / CLUSTERDOWN), :mod:`.replies` (CLUSTER subcommands),
:mod:`.cluster` (the cluster, its nodes and the test helpers: resharding, failures, failover). The adapter side
(override table entries, the per-command slot check) is :mod:`fake_streams._fakeredis.cluster`. Sentinel:
:mod:`.replica` (replication groups, the replica role), :mod:`.sentinel` (the deployment, the failover helper),
:mod:`.sentinel_replies` (SENTINEL subcommands), :mod:`.sentinel_connection` (redis-py's Sentinel-managed
connections on the fake), :mod:`.serving` (both over TCP); adapter side :mod:`fake_streams._fakeredis.replica` and
:mod:`fake_streams._fakeredis.sentinel`.
"""

from __future__ import annotations

from .cluster import ClusterNode, FakeCluster
from .sentinel import FakeSentinel
from .slots import SLOTS, key_slot, split_slots

__all__ = ["SLOTS", "ClusterNode", "FakeCluster", "FakeSentinel", "key_slot", "split_slots"]
