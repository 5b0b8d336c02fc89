"""``FakeSentinel``: a Redis Sentinel deployment on the fake — one sentinel watching the master ``master_name``
(default ``"mymaster"``) and its replicas (a :class:`~fake_streams.topology.replica.ReplicationGroup`), each
instance its own :class:`~fake_streams.server.FakeStreamsServer` at its own address.

The sentinel is a server of its own (``server.sentinel`` is the :class:`FakeSentinel`): it has a sentinel's
command table only (every other command is an ``unknown command``), answers ``SENTINEL`` subcommands
(:mod:`.sentinel_replies`), ``ROLE`` (``[sentinel, [names]]``), ``INFO`` (``redis_mode:sentinel``, a
``# Sentinel`` section) and ``HELLO`` (``mode: sentinel``).

Test helper: :meth:`FakeSentinel.failover` — what a sentinel's forced failover does, in its order (measured on
Redis 7.0.15's and Valkey 9.1.2's sentinels, see tests/topology/test_sentinel_oracle.py):

1. at once: a replica becomes the master (every stream, group and PEL stays: the dataset is one), the other
   replicas follow it, the config epoch grows; the clients of the new master and of the other replicas are hung
   up on (the sentinel sends each ``SLAVEOF`` + ``CLIENT KILL TYPE normal`` / ``pubsub``), and the sentinel names
   the new master (``+switch-master``);
2. the old master is left alone: still a master (ROLE ``master`` with no replicas, writes accepted), its clients
   connected — a client that follows Sentinel and holds a connection there goes on using it;
3. :meth:`conversion_delay_ms` later on the deployment's clock (10 s by default: the sentinel converts a master
   that came back as one after 4 × ``PUBLISH-PERIOD``, checked on each ``INFO-PERIOD``; a ManualClock's
   ``advance`` runs it, a SystemClock a timer) the old master is converted (``+convert-to-slave``): it becomes a
   replica and its clients are hung up on, blocked ones included (they read the EOF); the next command of a
   Sentinel client reconnects, asks the sentinel and reaches the new master (redis-py 6.1 and later, sync and
   asyncio: a command in flight at that moment retries on the old address and fails — ``ConnectionError("The previous master is now a
   slave")`` — as against a real deployment); ``+role-change`` follows one ``INFO-PERIOD`` later.
   :meth:`convert_old_masters` does step 3 now.

``SENTINEL FAILOVER name`` does the same. Not emulated: the writes a real old master accepted in step 2 are lost
when it resynchronises from the new master; the fake keeps them (its nodes share one dataset).

Clients: :meth:`FakeSentinel.sentinel_client` / :meth:`master_for` / :meth:`slave_for` (and their asyncio twins)
are redis-py's own Sentinel classes on this deployment's network; inside :func:`~fake_streams.patching.patch_redis`
(or the fixture) a ``Sentinel([(host, port)])`` the code under test builds reaches it the same way.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import sentinel_config, sentinel_replies
from .replica import ReplicaNode, ReplicationGroup

if TYPE_CHECKING:
    from ..server import FakeStreamsServer

_IDS = itertools.count(1)
_LOOPBACK = {"", "localhost", "127.0.0.1", "::1", "[::1]"}


class FakeSentinel:
    """A sentinel on ``host:sentinel_port`` (default 26379) watching ``master_name``: a master on ``host:port``
    (default 6379) and ``replicas`` replicas on ``replica_ports`` (default the ports after ``port``), profile
    ``version`` on ``clock``. Every instance is put in ``network`` (a :class:`~fake_streams.patching.FakeNetwork`;
    default: one of its own, closed with the sentinel). ``quorum``: the quorum the sentinel was configured with.
    ``master``: the server to be the master (default: a new one; ``replica_servers``: the replicas' servers, made
    on its dataset by :func:`~fake_streams.topology.replica.replica_server`).

    >>> sentinel = FakeSentinel(replicas=1)
    >>> sentinel.master_address, [r.address for r in sentinel.replicas]
    (('127.0.0.1', 6379), ['127.0.0.1:6380'])
    >>> sentinel.close()
    """

    def __init__(self, master_name: str = "mymaster", replicas: int = 1, *, host: str = "127.0.0.1",
                 port: int = 6379, replica_ports: Optional[Sequence[int]] = None, sentinel_port: int = 26379,
                 version: Optional[str] = "7.4", clock: Any = None, network: Any = None, quorum: int = 1,
                 master: Optional[FakeStreamsServer] = None,
                 replica_servers: Optional[Sequence[FakeStreamsServer]] = None,
                 sentinel_server: Optional[FakeStreamsServer] = None) -> None:
        from ..patching import FakeNetwork, address_of
        from ..server import FakeStreamsServer

        if replicas < 0:
            raise ValueError(f"sentinel_replicas must be 0 or more, not {replicas}")
        if quorum < 1:
            raise ValueError(f"quorum must be 1 or more, not {quorum}")
        ports = list(replica_ports) if replica_ports is not None else [port + 1 + i for i in range(replicas)]
        if len(ports) != replicas:
            raise ValueError(f"{len(ports)} replica ports for {replicas} replicas")
        self.lock = threading.RLock()
        self.master_name = master_name
        self.quorum = quorum
        self.config_epoch = 0
        self.failovers = 0
        #: a SIMULATE-FAILURE crash stopped a failover: the sentinel has exited
        self.crashed = False
        self._own_network = network is None
        self.network = FakeNetwork(version or "7.4", clock) if network is None else network
        host = "127.0.0.1" if host in _LOOPBACK else host
        taken = self.network.servers()
        for p in [port, *ports, sentinel_port]:
            address = address_of({"host": host, "port": p})
            if address in taken:
                raise ValueError(f"{address} is already served by {taken[address]!r}")
        owner = master if master is not None else FakeStreamsServer(version, clock)
        self.group = ReplicationGroup(owner, host, port, ports, self.network, replica_servers)
        self.server: FakeStreamsServer = (sentinel_server if sentinel_server is not None
                                          else FakeStreamsServer(owner.profile, owner.clock))
        self.server.address = f"{host}:{sentinel_port}"
        self.server.fast_path = False  # every command passes the sentinel's command table
        self.server.sentinel = self
        #: what SENTINEL SET / DEBUG / CONFIG SET / SIMULATE-FAILURE changed
        self.settings = sentinel_config.SentinelSettings(valkey=self.server.profile.server == "valkey")
        self.host = host
        self.port = sentinel_port
        self.myid = hashlib.sha1(f"fake-sentinel-{next(_IDS)}-{id(self)}".encode()).hexdigest()
        self.started_ms = owner.clock.now_ms()
        #: address → when the sentinel saw that instance take its current role (``role-reported-time``)
        self.role_since_ms: Dict[str, int] = {node.address: self.started_ms for node in self.group.nodes}
        #: what the sentinel does later in a failover: ``(due ms, "convert" | "role-change", node)``, by due time
        self.scheduled: List[Tuple[int, str, ReplicaNode]] = []
        self._timer: Optional[threading.Timer] = None
        self._unsubscribe = owner.clock.subscribe(self._on_clock) if owner.clock.manual else None
        self.network.alias(address_of({"host": host, "port": sentinel_port}), self.server)

    # ---------------------------------------------------------------------------------- lookups
    @property
    def master(self) -> ReplicaNode:
        """The current master's node."""
        return self.group.master

    @property
    def master_address(self) -> tuple:
        """``(ip, port)`` of the current master (SENTINEL GET-MASTER-ADDR-BY-NAME)."""
        return (self.group.master.host, self.group.master.port)

    @property
    def replicas(self) -> List[ReplicaNode]:
        return self.group.replicas

    @property
    def nodes(self) -> List[ReplicaNode]:
        """Every instance watched (master and replicas), in the order they were made."""
        return self.group.nodes

    @property
    def sentinels(self) -> List[tuple]:
        """``[(host, port)]`` of the sentinels, for ``redis.sentinel.Sentinel(…)``."""
        return [(self.host, self.port)]

    @property
    def servers(self) -> List[FakeStreamsServer]:
        """Every server of the deployment: the instances, then the sentinel."""
        return [node.server for node in self.group.nodes] + [self.server]

    def role_reply(self) -> List[Any]:
        return sentinel_replies.role_reply(self)

    def info(self, sections: Sequence[bytes], render: Callable[[Sequence[bytes]], bytes]) -> bytes:
        """INFO on the sentinel: of the server's sections only Server, Clients, Stats and CPU (``render(names)``
        renders those), then ``# Sentinel`` (the sentinel's counters and one line per master)."""
        names = {bytes(s).decode("utf-8", "replace").lower() for s in sections} or {"default"}
        every = bool(names & {"default", "all", "everything"})
        base = [s for s in ("server", "clients", "stats", "cpu") if every or s in names]
        blocks = [render([s.encode() for s in base])] if base else []
        if every or "sentinel" in names:
            master = self.group.master
            lines = ["# Sentinel", "sentinel_masters:1", "sentinel_tilt:0", "sentinel_tilt_since_seconds:-1"]
            if self.server.profile.server == "valkey":
                lines.append("sentinel_total_tilt:0")
            lines += ["sentinel_running_scripts:0", "sentinel_scripts_queue_length:0",
                     f"sentinel_simulate_failure_flags:{self.settings.simulate_failure}",
                     f"master0:name={self.master_name},status=ok,address={master.address},"
                     f"slaves={len(self.group.replicas)},sentinels=1"]
            blocks.append("".join(line + "\r\n" for line in lines).encode())
        return b"\r\n".join(blocks)

    # ------------------------------------------------------------------------------ failover
    def failover(self, to: ReplicaNode | int | str | None = None) -> ReplicaNode:
        """A failover, done at once: ``to`` (a replica's node, index in :attr:`nodes` or ``host:port``; default
        :meth:`best_replica`) becomes the master, the others its replicas; the
        config epoch grows; the clients of the old and the new master are disconnected; the sentinel publishes the
        failover's events (``+switch-master`` …, :func:`~.sentinel_replies.failover_events`). Returns the new
        master."""
        new, events = self.switch(to)
        if events and not self.server.closed:
            from .._fakeredis.sentinel import publish

            publish(self.server, events)
        self.crash_if_simulated(in_command=False)
        return new

    def conversion_delay_ms(self) -> int:
        """How long after a failover the sentinel converts the old master (sentinelRefreshInstanceInfo): at the
        first INFO refresh (every ``INFO-PERIOD``) more than 4 × ``PUBLISH-PERIOD`` after it first reported its
        master role (at once): 10 s with the defaults (SENTINEL DEBUG changes both)."""
        info, publish = self.settings.debug["INFO-PERIOD"], self.settings.debug["PUBLISH-PERIOD"]
        return info * (4 * publish // info + 1)

    def reports_replica(self, node: ReplicaNode) -> bool:
        """Whether the sentinel's last INFO of ``node`` showed the replica role (``role-reported``, the link fields of
        SENTINEL REPLICAS: sentinelRefreshInstanceInfo sets them from each INFO reply): a converted old master
        reports it from the sentinel's next INFO of it, one ``INFO-PERIOD`` after the conversion (its
        ``+role-change``), not at once. O(scheduled steps)."""
        return node.is_replica and not any(step == "role-change" and pending is node
                                           for _, step, pending in self.scheduled)

    def convert_old_masters(self) -> List[ReplicaNode]:
        """Convert now every old master still waiting for it (what the sentinel does :meth:`conversion_delay_ms`
        after a failover): it becomes a replica, its clients are hung up on, ``+convert-to-slave`` is published.
        Returns the nodes converted."""
        events, converted = self._run_due(None)
        self._publish(events)
        return converted

    def _on_clock(self) -> None:
        if self.scheduled and self.scheduled[0][0] <= self.group.owner.clock.now_ms():
            self._publish(self._run_due(self.group.owner.clock.now_ms())[0])

    def _on_timer(self) -> None:
        self._timer = None
        self._publish(self._run_due(self.group.owner.clock.now_ms())[0])

    def _publish(self, events: List[Tuple[bytes, bytes]]) -> None:
        if events and not self.server.closed and not self.crashed:
            from .._fakeredis.sentinel import publish

            publish(self.server, events)

    def _run_due(self, now_ms: Optional[int]) -> Tuple[List[Tuple[bytes, bytes]], List[ReplicaNode]]:
        """Run the scheduled steps due at ``now_ms`` (None: the conversions, whenever due); the events to publish
        and the nodes converted."""
        events: List[Tuple[bytes, bytes]] = []
        converted: List[ReplicaNode] = []
        with self.lock:
            later: List[Tuple[int, str, ReplicaNode]] = []
            for due, step, node in self.scheduled:
                if now_ms is not None and due > now_ms or now_ms is None and step != "convert":
                    later.append((due, step, node))
                    continue
                at = self.group.owner.clock.now_ms()
                if step == "convert" and self.group.convert(node):
                    converted.append(node)
                    events.append(sentinel_replies.convert_event(self, node))
                    later.append((at + self.settings.debug["INFO-PERIOD"], "role-change", node))
                elif step == "role-change" and node.is_replica:
                    self.role_since_ms[node.address] = at
                    events.append(sentinel_replies.role_change_event(self, node))
            self.scheduled = sorted(later, key=lambda item: item[0])
            self._arm()
        return events, converted

    def _schedule(self, due_ms: int, step: str, node: ReplicaNode) -> None:
        with self.lock:
            self.scheduled = sorted([*self.scheduled, (due_ms, step, node)], key=lambda item: item[0])
            self._arm()

    def _arm(self) -> None:
        """On a SystemClock, a real-time timer for the earliest scheduled step (a ManualClock runs them when it
        moves)."""
        if self._unsubscribe is not None or self.server.closed:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.scheduled:
            wait_s = max(0.0, (self.scheduled[0][0] - self.group.owner.clock.now_ms()) / 1000)
            self._timer = threading.Timer(wait_s, self._on_timer)
            self._timer.daemon = True
            self._timer.start()

    def crash_if_simulated(self, in_command: bool) -> None:
        """After a failover that SIMULATE-FAILURE crash-after-election stopped: the sentinel has exited — its server
        is down (connections refused). ``in_command``: called from a command of the sentinel, which holds its lock;
        the server goes down once that command's reply is out."""
        if not self.crashed or self.server.closed:
            return
        server = self.server

        def go_down() -> None:
            from .._fakeredis.replica import kill_clients

            with server.backend.lock:  # after the running command (its reply queued)
                pass
            kill_clients(server)  # its clients read the EOF of a process that exited
            server.connected = False

        if in_command:
            threading.Thread(target=go_down, name="fake-sentinel-crash", daemon=True).start()
        else:
            go_down()

    def best_replica(self) -> Optional[ReplicaNode]:
        """The replica a failover promotes (sentinelSelectSlave): priority 0 never; the lowest priority, then (the
        replication offsets being equal here) the smallest run id."""
        candidates = [node for node in self.group.replicas if node.priority > 0]
        return min(candidates, key=lambda node: (node.priority, node.server._info.run_id), default=None)

    def switch(self, to: ReplicaNode | int | str | None = None) -> Tuple[ReplicaNode, List[Tuple[bytes, bytes]]]:
        """:meth:`failover` without publishing: the new master and the events to publish, in order."""
        pending, _ = self._run_due(None)  # an old master still waiting: converted first (its wait is over)
        with self.lock:
            if to is None:
                new = self.best_replica()
                if new is None:
                    raise ValueError("no replica to promote (none, or every one has priority 0)")
            else:
                new = self.group.node(to)
            old = self.group.master
            if self.settings.simulate_failure & sentinel_config.CRASH_AFTER_ELECTION:  # elected, then it exits
                self.config_epoch += 1
                self.crashed = True
                # only what SENTINEL FAILOVER itself published went out: the rest is in the tick that crashes
                return old, pending + sentinel_replies.failover_events(self, old, new, [])[:2]
            others = [node for node in self.group.replicas if node is not new]
            self.group.promote(new, convert_old=False)
            self.config_epoch += 1
            self.failovers += 1
            now = self.group.owner.clock.now_ms()
            self.role_since_ms[old.address] = self.role_since_ms[new.address] = now
            self._schedule(now + self.conversion_delay_ms(), "convert", old)
            return new, pending + sentinel_replies.failover_events(self, old, new, others)

    # ------------------------------------------------------------------------------- clients
    def sentinel_client(self, **kwargs: Any) -> Any:
        """A ``redis.sentinel.Sentinel`` on this deployment (kwargs: the instances' connection kwargs)."""
        import redis
        from redis.sentinel import Sentinel

        client = Sentinel([], **kwargs)
        client.sentinels = [redis.Redis.from_url(f"redis://{host}:{port}", connection_class=self.network.sync_class,
                                                 **client.sentinel_kwargs) for host, port in self.sentinels]
        return client

    def master_for(self, **kwargs: Any) -> Any:
        """``Sentinel(...).master_for(master_name)``: a ``redis.Redis`` that follows the master."""
        return self.sentinel_client().master_for(self.master_name,
                                                 connection_class=self.network.sentinel_sync_class, **kwargs)

    def slave_for(self, **kwargs: Any) -> Any:
        """``Sentinel(...).slave_for(master_name)``: a ``redis.Redis`` on the replicas (round robin)."""
        return self.sentinel_client().slave_for(self.master_name,
                                                connection_class=self.network.sentinel_sync_class, **kwargs)

    def async_sentinel_client(self, **kwargs: Any) -> Any:
        """A ``redis.asyncio.sentinel.Sentinel`` on this deployment."""
        import redis.asyncio
        from redis.asyncio.sentinel import Sentinel

        client = Sentinel([], **kwargs)
        client.sentinels = [redis.asyncio.Redis.from_url(f"redis://{host}:{port}",
                                                         connection_class=self.network.async_class,
                                                         **client.sentinel_kwargs) for host, port in self.sentinels]
        return client

    def async_master_for(self, **kwargs: Any) -> Any:
        return self.async_sentinel_client().master_for(self.master_name,
                                                       connection_class=self.network.sentinel_async_class, **kwargs)

    def async_slave_for(self, **kwargs: Any) -> Any:
        return self.async_sentinel_client().slave_for(self.master_name,
                                                      connection_class=self.network.sentinel_async_class, **kwargs)

    # ------------------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Close the sentinel and every instance (and the network, if the sentinel made it)."""
        with self.lock:
            self.scheduled = []
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._unsubscribe is not None:
                self._unsubscribe()
        self.server.close()
        self.group.close()
        if self._own_network:
            self.network.close()

    def __enter__(self) -> FakeSentinel:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"FakeSentinel({self.master_name!r}, sentinel={self.host}:{self.port}, master={self.master.address}, "
                f"replicas={[r.address for r in self.replicas]})")


__all__ = ["FakeSentinel"]
