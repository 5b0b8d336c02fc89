"""``FakeCluster``: N masters, each its own :class:`~fake_streams.server.FakeStreamsServer` (own keyspace) at its
own address, owning contiguous slot ranges as ``redis-cli --cluster create`` assigns them.

What a node knows (:class:`ClusterNode`) is what ``CLUSTER NODES`` shows: its 40-hex id, address, flags, config
epoch and slots, plus the slots it is migrating to / importing from another node. The cluster holds the one
slot → owner table every node agrees on (the fake has no gossip delay: a change is seen by every node at once).

Test helpers (all thread-safe):

* :meth:`FakeCluster.move_slot` — a complete resharding of one slot (keys moved, then the owner changes: clients
  that still send to the old node get ``MOVED``);
* :meth:`FakeCluster.begin_migration` / :meth:`FakeCluster.migrate_keys` / :meth:`FakeCluster.finish_migration`
  — the three steps of ``redis-cli --cluster reshard`` for one slot, so a test can stop in the middle: the
  source answers ``ASK`` for keys it no longer has, the target serves them only after ``ASKING``;
* :meth:`FakeCluster.unassign_slots` / :meth:`FakeCluster.assign_slots` — ``CLUSTER DELSLOTS`` / ``ADDSLOTS``: slots
  nobody serves (``CLUSTERDOWN``) and served again;
* :meth:`FakeCluster.fail_node` / :meth:`FakeCluster.revive_node` — a master goes down (connections refused,
  the others mark it ``fail`` and answer ``CLUSTERDOWN The cluster is down``) and comes back;
* :meth:`FakeCluster.failover` — a master's slots and keys pass to another node (as when its replica is
  promoted): the old address goes down, clients get ``MOVED`` to the new owner.

After each change, clients blocked in XREAD / XREADGROUP (or BLPOP …) on a slot their node no longer serves are
answered ``MOVED`` (``CLUSTERDOWN`` when the cluster is down), as the server's cron does for blocked clients.

Keys move between nodes with ``DUMP`` / ``RESTORE`` (the server's RDB format, streams with their groups and
PELs), the way ``MIGRATE`` moves them.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Tuple

from .slots import SLOTS, key_slot, split_slots

if TYPE_CHECKING:
    from ..server import FakeStreamsServer

_IDS = itertools.count(1)
_LOOPBACK = {"", "localhost", "127.0.0.1", "::1", "[::1]"}


def _node_id(seed: str) -> str:
    return hashlib.sha1(seed.encode()).hexdigest()


class ClusterNode:
    """One master of a :class:`FakeCluster` (what ``CLUSTER NODES`` says of it)."""

    def __init__(self, cluster: FakeCluster, server: FakeStreamsServer, host: str, port: int, node_id: str) -> None:
        self.cluster = cluster
        self.server = server
        self.host = host
        self.port = port
        self.cport = port + 10000
        self.node_id = node_id
        self.config_epoch = 0
        self.failed = False
        #: slot → node this node is migrating it to / importing it from (CLUSTER SETSLOT MIGRATING / IMPORTING)
        self.migrating: Dict[int, ClusterNode] = {}
        self.importing: Dict[int, ClusterNode] = {}

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def announced_ip(self) -> str:
        """The IP other nodes (and clients) are told: a node alone never learnt its own, so it says ""."""
        return self.host if len(self.cluster.nodes) > 1 else ""

    def slot_ranges(self) -> List[Tuple[int, int]]:
        """The contiguous ranges of the slots this node owns, in slot order."""
        return _ranges(slot for slot, owner in enumerate(self.cluster.owners) if owner is self)

    def __repr__(self) -> str:
        return f"ClusterNode({self.address}, id={self.node_id[:8]}…, slots={self.slot_ranges()})"


def _ranges(slots: Iterable[int]) -> List[Tuple[int, int]]:
    out: List[Tuple[int, int]] = []
    for slot in slots:
        if out and out[-1][1] == slot - 1:
            out[-1] = (out[-1][0], slot)
        else:
            out.append((slot, slot))
    return out


class FakeCluster:
    """``nodes`` masters on ``host`` at ports ``base_port``, ``base_port + 1`` … (default 30001…, as
    ``create-cluster`` uses), each a :class:`FakeStreamsServer` with the profile ``version`` and the shared
    ``clock`` (or the servers ``server_factory()`` makes; ``ports``: each node's port instead). The nodes are the servers of their addresses in ``network`` (a
    :class:`~fake_streams.patching.FakeNetwork`; default: one of its own, closed with the cluster), so every
    client routed by that network — the patching, the fixture, :meth:`client` — reaches the right node. A
    loopback ``host`` is announced as ``127.0.0.1`` (what a real node learns from its peers).

    >>> cluster = FakeCluster(3)
    >>> [node.slot_ranges() for node in cluster.nodes]
    [[(0, 5460)], [(5461, 10922)], [(10923, 16383)]]
    >>> cluster.node_for_key(b"{user1}.orders").port == cluster.node_for_key(b"{user1}.events").port
    True
    >>> cluster.close()
    """

    def __init__(self, nodes: int = 3, *, host: str = "127.0.0.1", base_port: int = 30001,
                 version: Optional[str] = "7.4", clock: Any = None, network: Any = None,
                 server_factory: Optional[Callable[[], FakeStreamsServer]] = None,
                 ports: Optional[List[int]] = None) -> None:
        from ..patching import FakeNetwork, address_of
        from ..server import FakeStreamsServer

        if nodes < 1:
            raise ValueError(f"cluster_nodes must be at least 1, not {nodes}")
        if ports is not None and len(ports) != nodes:
            raise ValueError(f"{len(ports)} ports for {nodes} nodes")
        self.lock = threading.RLock()
        self.nodes: List[ClusterNode] = []
        self.owners: List[Optional[ClusterNode]] = [None] * SLOTS
        self.current_epoch = 0
        self._own_network = network is None
        self.network = FakeNetwork(version or "7.4", clock) if network is None else network
        host = "127.0.0.1" if host in _LOOPBACK else host
        taken = self.network.servers()
        seed = next(_IDS)
        for i in range(nodes):
            port = base_port + i if ports is None else ports[i]
            address = address_of({"host": host, "port": port})
            if address in taken:
                raise ValueError(f"{address} is already served by {taken[address]!r}")
            server = server_factory() if server_factory is not None else FakeStreamsServer(version, clock)
            server.address = f"{host}:{port}"
            node = ClusterNode(self, server, host, port, _node_id(f"fake-cluster-{seed}-{i}-{id(server)}"))
            server.cluster_node = node
            self.nodes.append(node)
            self.network.alias(address, server)
        for node, (first, last) in zip(self.nodes, split_slots(nodes)):
            for slot in range(first, last + 1):
                self.owners[slot] = node
        if nodes > 1:  # redis-cli --cluster create gives every master its own config epoch
            for epoch, node in enumerate(self.nodes, start=1):
                node.config_epoch = epoch
            self.current_epoch = nodes
        self._state_ok = True
        self._refresh()

    # ---------------------------------------------------------------------------------- lookups
    @property
    def servers(self) -> List[FakeStreamsServer]:
        return [node.server for node in self.nodes]

    @property
    def startup_nodes(self) -> List[Tuple[str, int]]:
        """``(host, port)`` of every node, for ``RedisCluster(startup_nodes=…)``."""
        return [(node.host, node.port) for node in self.nodes]

    def node_for_slot(self, slot: int) -> Optional[ClusterNode]:
        return self.owners[slot]

    def node_for_key(self, key: bytes | str) -> ClusterNode:
        """The node owning ``key``'s slot."""
        raw = key.encode() if isinstance(key, str) else key
        node = self.owners[key_slot(raw)]
        if node is None:
            raise LookupError(f"slot {key_slot(raw)} is not served")
        return node

    def node(self, which: int | str) -> ClusterNode:
        """A node by index, by ``host:port`` or by node id."""
        if isinstance(which, int):
            return self.nodes[which]
        for node in self.nodes:
            if which in (node.address, node.node_id):
                return node
        raise LookupError(f"no node {which!r}")

    @property
    def state_ok(self) -> bool:
        """``cluster_state:ok``: every slot is served by a node that is up. O(1) (kept by :meth:`_refresh`)."""
        return self._state_ok

    def _refresh(self) -> None:
        """Recompute the cluster state after a change of owners or of a node's health. O(slots)."""
        self._state_ok = all(owner is not None and not owner.failed for owner in self.owners)

    def unassign_slots(self, *slots: int) -> None:
        """``CLUSTER DELSLOTS`` on the owners: nobody serves ``slots`` (``CLUSTERDOWN Hash slot not served``, the
        cluster state ``fail``)."""
        with self.lock:
            for slot in slots:
                self.owners[slot] = None
            self._refresh()
        self._redirect_blocked()

    def assign_slots(self, which: ClusterNode | int | str, *slots: int) -> None:
        """``CLUSTER ADDSLOTS`` of unserved ``slots`` on a node (the cluster state is ``ok`` again once every slot
        is served by a node that is up)."""
        node = self._as_node(which)
        with self.lock:
            taken = [slot for slot in slots if self.owners[slot] is not None]
            if taken:
                raise ValueError(f"slot {taken[0]} is already served by {self.owners[taken[0]]!r}")
            for slot in slots:
                self.owners[slot] = node
            self._refresh()
        self._redirect_blocked()

    def client(self, **kwargs: Any) -> Any:
        """A ``redis.cluster.RedisCluster`` on this cluster (kwargs go to it: protocol, decode_responses …)."""
        from redis.cluster import RedisCluster

        first = self.nodes[0]  # from_url: the only way redis-py passes a connection class to the node pools
        return RedisCluster.from_url(f"redis://{first.host}:{first.port}", connection_class=self.network.sync_class,
                                     **kwargs)

    def async_client(self, **kwargs: Any) -> Any:
        """A ``redis.asyncio.cluster.RedisCluster`` on this cluster."""
        from redis.asyncio.cluster import ClusterNode as PyClusterNode
        from redis.asyncio.cluster import RedisCluster

        cls = self.network.async_class
        client = RedisCluster(startup_nodes=[PyClusterNode(node.host, node.port) for node in self.nodes], **kwargs)
        # redis-py's asyncio cluster builds every node (startup or discovered) with its stock Connection, from its
        # connection kwargs: the fake class goes there
        client.connection_kwargs["connection_class"] = cls
        client.nodes_manager.connection_kwargs["connection_class"] = cls
        for startup in client.nodes_manager.startup_nodes.values():
            startup.connection_class = cls
        return client

    # ------------------------------------------------------------------------------ resharding
    def _bump_epoch(self, node: ClusterNode) -> None:
        self.current_epoch += 1
        node.config_epoch = self.current_epoch

    def begin_migration(self, slot: int, target: ClusterNode | int | str) -> None:
        """``CLUSTER SETSLOT slot IMPORTING`` on the target, ``MIGRATING`` on the owner: from now on the owner
        answers ``ASK slot target`` for the slot's keys it does not have."""
        dest = self._as_node(target)
        with self.lock:
            source = self.owners[slot]
            if source is None or source is dest:
                raise ValueError(f"slot {slot} is not served by another node than {dest!r}")
            source.migrating[slot] = dest
            dest.importing[slot] = source

    def migrate_keys(self, slot: int, count: Optional[int] = None) -> List[bytes]:
        """Move ``count`` (default: all) of the slot's keys from its owner to the node importing it (as
        ``MIGRATE``: DUMP, RESTORE on the target, DEL on the source); returns the keys moved."""
        with self.lock:
            source = self.owners[slot]
            dest = source.migrating.get(slot) if source is not None else None
            if source is None or dest is None:
                raise ValueError(f"slot {slot} is not being migrated")
            keys = self.keys_in_slot(source, slot)[: count if count is not None else None]
            _transfer(source, dest, keys)
            return keys

    def finish_migration(self, slot: int) -> None:
        """``CLUSTER SETSLOT slot NODE target`` everywhere: the target owns the slot (clients get ``MOVED``)."""
        with self.lock:
            source = self.owners[slot]
            dest = source.migrating.pop(slot, None) if source is not None else None
            if source is None or dest is None:
                raise ValueError(f"slot {slot} is not being migrated")
            dest.importing.pop(slot, None)
            self.owners[slot] = dest
            self._bump_epoch(dest)
            self._refresh()
        self._redirect_blocked()

    def cancel_migration(self, slot: int) -> None:
        """``CLUSTER SETSLOT slot STABLE`` on both sides: the migration is abandoned (keys already moved stay)."""
        with self.lock:
            for node in self.nodes:
                node.migrating.pop(slot, None)
                node.importing.pop(slot, None)

    def move_slot(self, slot: int, target: ClusterNode | int | str) -> None:
        """A whole resharding of ``slot`` to ``target``: begin, every key moved, finish."""
        self.begin_migration(slot, target)
        self.migrate_keys(slot)
        self.finish_migration(slot)

    def keys_in_slot(self, node: ClusterNode, slot: Optional[int]) -> List[bytes]:
        """The keys ``node`` holds in ``slot`` as ``CLUSTER GETKEYSINSLOT`` lists them (None: every key), database 0."""
        from .._fakeredis.cluster import db_keys, keys_in_slot

        with node.server.backend.lock:
            fake = node.server.backend.fake
            return db_keys(fake, 0) if slot is None else keys_in_slot(fake, slot)

    # ------------------------------------------------------------------------------------ failures
    def fail_node(self, which: ClusterNode | int | str) -> ClusterNode:
        """The node goes down: its connections fail, the others flag it ``fail``; with its slots unserved the
        cluster state is ``fail`` and keyed commands on the other nodes answer ``CLUSTERDOWN``."""
        node = self._as_node(which)
        with self.lock:
            node.failed = True
            node.server.connected = False
            self._refresh()
        self._redirect_blocked()
        return node

    def revive_node(self, which: ClusterNode | int | str) -> ClusterNode:
        """A failed node is back with its keys (as after a restart with persistence)."""
        node = self._as_node(which)
        with self.lock:
            node.failed = False
            node.server.connected = True
            self._refresh()
        return node

    def failover(self, which: ClusterNode | int | str, to: ClusterNode | int | str) -> ClusterNode:
        """``which``'s slots and keys pass to ``to`` (its promoted replica, as it were), with a new config epoch;
        ``which`` goes down. Clients following ``MOVED`` / refreshing ``CLUSTER SLOTS`` reach ``to``."""
        old, new = self._as_node(which), self._as_node(to)
        if old is new:
            raise ValueError("a node cannot fail over to itself")
        with self.lock:
            was_up, old.failed = old.server.connected, False
            old.server.connected = True  # the keys are read through a connection
            self._refresh()
            try:
                by_slot: Dict[int, List[bytes]] = {}
                for key in self.keys_in_slot(old, None):
                    by_slot.setdefault(key_slot(key), []).append(key)
                for slot, owner in enumerate(self.owners):
                    if owner is old:
                        old.migrating[slot], new.importing[slot] = new, old
                        _transfer(old, new, by_slot.get(slot, []))
                        del old.migrating[slot], new.importing[slot]
                        self.owners[slot] = new
            finally:
                old.server.connected = was_up
            self._bump_epoch(new)
            old.failed = True
            old.server.connected = False
            self._refresh()
        self._redirect_blocked()
        return new

    def _redirect_blocked(self) -> None:
        """After a change of owners or of the cluster state: each node up answers its blocked clients whose slot it
        no longer serves (``MOVED``), or ``CLUSTERDOWN`` (clusterRedirectBlockedClientIfNeeded)."""
        from .._fakeredis.cluster import redirect_blocked

        for node in self.nodes:
            if not node.failed:
                redirect_blocked(node.server)

    def _as_node(self, which: ClusterNode | int | str) -> ClusterNode:
        return which if isinstance(which, ClusterNode) else self.node(which)

    def close(self) -> None:
        """Close every node (and the network, if the cluster made it)."""
        for node in self.nodes:
            node.server.close()
        if self._own_network:
            self.network.close()

    def __enter__(self) -> FakeCluster:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FakeCluster({[node.address for node in self.nodes]})"


def _transfer(source: ClusterNode, dest: ClusterNode, keys: List[bytes]) -> None:
    """Move ``keys`` as MIGRATE does, with the slot open on both sides: DUMP + PTTL on the source, ASKING + RESTORE
    … REPLACE on the target, DEL on the source."""
    if not keys:
        return
    src, dst = source.server.client(), dest.server.client()
    try:
        for key in keys:
            payload, ttl = src.dump(key), src.pttl(key)
            if payload is None:
                continue
            pipe = dst.pipeline(transaction=False)
            pipe.execute_command("ASKING")
            pipe.execute_command("RESTORE", key, max(ttl, 0), payload, "REPLACE")
            pipe.execute()
            src.delete(key)
    finally:
        src.close()
        dst.close()


__all__ = ["ClusterNode", "FakeCluster"]
