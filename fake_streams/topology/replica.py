"""Replication on the fake: a master and its read-only replicas (:class:`ReplicationGroup`), each node its own
:class:`~fake_streams.server.FakeStreamsServer` at its own address, all of them one dataset.

Replication is instant: a replica is a :class:`ReplicaServer`, a server whose keyspace, blocking registry and
access table are its master's (the dataset's owner), so a read on a replica sees every write of the master at
once, and a client blocked in XREAD on a replica wakes when the master adds an entry. What differs per node is
what a real node keeps per process: its address, its INFO counters, its clients, and its role.

The role (:class:`ReplicaNode`, ``server.replication``) is what the dispatch path asks (the adapter:
:mod:`fake_streams._fakeredis.replica`): a replica answers every command flagged ``write`` in the command table
(stream commands by the engine's table, the rest by fakeredis's; EVAL / EVALSHA of a script whose shebang does
not say ``no-writes``) with :data:`READONLY`, refused at queue time inside MULTI (EXEC then aborts), and a
script's write through ``redis.call`` fails with the same text; ``ROLE`` and ``INFO replication`` say what a
real replica / master says (:meth:`ReplicaNode.role_reply`, :meth:`ReplicaNode.info_fields`).

:meth:`ReplicationGroup.promote` makes a replica the master (``REPLICAOF NO ONE`` on it, ``REPLICAOF new`` on
the others): the dataset stays as it is — every stream, group and PEL — and the clients of the new master and of
the other replicas are disconnected, as a sentinel's reconfiguration of each does (its ``MULTI`` / ``SLAVEOF`` /
``CLIENT KILL TYPE normal`` / ``CLIENT KILL TYPE pubsub`` / ``EXEC``). The old master, up but no longer the
master, is left as it is until it is converted (``promote(…, convert_old=False)``, then :meth:`ReplicationGroup.convert`:
a sentinel converts a returning old master only after a wait): it still answers as a master — ROLE ``master``
with no replicas, writes accepted — and keeps its clients; converting it makes it a replica and hangs up on its
clients, a blocked read included (the blocked client's ``UNBLOCKED`` error is dropped with the connection: the
sentinel's CLIENT KILL runs in the same transaction, before the reply is written). Not emulated: a real old
master's writes of that window are lost when it resynchronises from the new master; the fake's nodes share one
dataset, so they stay.

This module is not tied to Sentinel (:mod:`.sentinel` builds on it); a cluster's replicas can use it too.
"""

from __future__ import annotations

import secrets
import threading
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

if TYPE_CHECKING:
    from ..server import FakeStreamsServer

#: the error of a write on a read-only replica (shared.roslaveerr)
READONLY = "READONLY You can't write against a read only replica."
_LOOPBACK = {"", "localhost", "127.0.0.1", "::1", "[::1]"}
#: non-stream subcommands flagged ``write`` that fakeredis's command table does not flag
_WRITE_SUBCOMMANDS = frozenset({b"function|delete", b"function|flush", b"function|load", b"function|restore"})


def _replica_server_class() -> type:
    from ..server import FakeStreamsServer

    class ReplicaServer(FakeStreamsServer):
        """A server on the dataset of ``owner`` (another :class:`FakeStreamsServer`): its own address, INFO
        counters and clients, the owner's keyspace, blocking registry and access table. :meth:`close` hangs up on
        this node's clients only; the dataset ends when its owner closes."""

        def __init__(self, owner: FakeStreamsServer) -> None:
            super().__init__(owner.profile, owner.clock, block_safety_s=owner.blocking.safety_s)
            me: Any = self  # (mypy cannot see the base's attributes from a class made in a function)
            own_backend, own_blocking = me.backend, me.blocking
            if me._unsubscribe is not None:  # the owner times out blocked clients on a ManualClock
                me._unsubscribe()
                me._unsubscribe = None
            own_blocking.close()
            own_backend.shutdown()
            me.backend, me.blocking, me.access = owner.backend, owner.blocking, owner.access
            self.owner = owner

        def close(self) -> None:
            me: Any = self
            if me.closed:
                return
            me.closed = True
            with self._registry_lock:
                if self.address and self._registry.get(self.address) is self:
                    del self._registry[self.address]
            if not self.owner.closed:
                from .._fakeredis.replica import kill_clients

                kill_clients(self)

    return ReplicaServer


_CLASS: List[type] = []


def replica_server(owner: FakeStreamsServer) -> FakeStreamsServer:
    """A new :class:`ReplicaServer` on ``owner``'s dataset."""
    if not _CLASS:
        _CLASS.append(_replica_server_class())
    return _CLASS[0](owner)  # type: ignore[no-any-return]


class ReplicaNode:
    """One node of a :class:`ReplicationGroup`: its server, its address, and (through the group) its role."""

    def __init__(self, group: ReplicationGroup, server: FakeStreamsServer, host: str, port: int) -> None:
        self.group = group
        self.server = server
        self.host = host
        self.port = port
        #: this node's replica-priority (INFO ``slave_priority``, SENTINEL REPLICAS ``slave-priority``)
        self.priority = 100
        #: a demoted master not converted yet: it still acts as a master (see :meth:`ReplicationGroup.convert`)
        self.unconverted = False

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def is_replica(self) -> bool:
        """True while this node is a replica (read only); O(1), asked before every command of its clients. A
        demoted master that was not converted yet is not one (it still believes it is the master)."""
        return self.group.master is not self and not self.unconverted

    @property
    def master(self) -> ReplicaNode:
        return self.group.master

    @property
    def followers(self) -> List[ReplicaNode]:
        """The replicas replicating from this node: the master's converted replicas; none for any other node."""
        if self is not self.group.master:
            return []
        return [node for node in self.group.nodes if node.is_replica]

    # ------------------------------------------------------------------------------- replies
    def role_reply(self) -> List[Any]:
        """``ROLE``: a master ``[master, offset, [[ip, port, offset] …]]`` (ip, port and offset of each replica as
        bulk strings; a demoted master not converted yet has none); a replica ``[slave, master ip, master port,
        connected, offset]``."""
        offset = self.group.offset
        if not self.is_replica:
            return [b"master", offset,
                    [[r.host.encode(), str(r.port).encode(), str(offset).encode()] for r in self.followers]]
        master = self.master
        return [b"slave", master.host.encode(), master.port, b"connected", offset]

    def info_fields(self, backlog_size: int, profile: Any) -> List[Tuple[str, Any]]:
        """``INFO replication`` of this node as ``profile``'s server prints it (a master with its replicas, or a
        replica of its master, the link up): Redis 7.0's fields, and Valkey's ``replicas_waiting_psync``, the
        replica type of each ``slaveN`` line and (9.1) the replica's ``replicas_repl_buffer_*``."""
        valkey = profile.server == "valkey"
        waiting = [("replicas_waiting_psync", 0)] if valkey else []
        offset = self.group.offset
        backlog = [("master_failover_state", "no-failover"), ("master_replid", self.group.replid),
                   ("master_replid2", self.group.replid2), ("master_repl_offset", offset),
                   ("second_repl_offset", offset if self.group.replid2 != "0" * 40 else -1),
                   ("repl_backlog_active", 1), ("repl_backlog_size", backlog_size),
                   ("repl_backlog_first_byte_offset", 1), ("repl_backlog_histlen", offset)]
        if not self.is_replica:
            replicas = self.followers
            lines: List[Tuple[str, Any]] = [("role", "master"), ("connected_slaves", len(replicas))]
            kind = ",type=replica" if valkey else ""
            lines += [(f"slave{i}", f"ip={r.host},port={r.port},state=online,offset={offset},lag=0{kind}")
                      for i, r in enumerate(replicas)]
            return lines + waiting + backlog
        master = self.master
        buffers = [("replicas_repl_buffer_size", 0), ("replicas_repl_buffer_peak", 0)] \
            if valkey and not profile.spec_key.startswith("V8") else []  # (Valkey 9)
        return ([("role", "slave"), ("master_host", master.host), ("master_port", master.port),
                 ("master_link_status", "up"), ("master_last_io_seconds_ago", 1), ("master_sync_in_progress", 0),
                 ("slave_read_repl_offset", offset), ("slave_repl_offset", offset)] + buffers
                + [("slave_priority", self.priority), ("slave_read_only", 1), ("replica_announced", 1),
                   ("connected_slaves", 0)] + waiting + backlog)

    def __repr__(self) -> str:
        return f"ReplicaNode({self.address}, {'replica' if self.is_replica else 'master'})"


def _hang_up(node: ReplicaNode) -> None:
    from .._fakeredis.replica import kill_clients

    if not node.server.closed:
        kill_clients(node.server)


def is_write(argv: Sequence[bytes], server: Any, script_flags: Any = None) -> bool:
    """Whether ``argv`` is a write command as processCommand judges it on a replica: the command's ``write`` flag
    (a container's: its subcommand's); EVAL / EVALSHA / FCALL by their script's flags (``script_flags(argv)``: the
    set of shebang flags, or None for a script without a shebang, which is not a write at the top level)."""
    name = bytes(argv[0]).lower()
    if name in (b"eval", b"evalsha", b"fcall") and script_flags is not None:
        flags = script_flags(argv)
        return flags is not None and "no-writes" not in flags
    full = name
    if len(argv) > 1:
        sub = name + b"|" + bytes(argv[1]).lower()
        if sub.decode("utf-8", "replace") in server.commands or sub in _WRITE_SUBCOMMANDS:
            full = sub
    spec = server.commands.get(full.decode("utf-8", "replace"))
    if spec is not None:
        return "write" in spec.flags
    if full in _WRITE_SUBCOMMANDS:
        return True
    from .._fakeredis.compat import get_command_info

    info = get_command_info(full)
    return info is not None and b"write" in info[2]


class ReplicationGroup:
    """A master and ``replicas`` replicas: ``master`` (a :class:`FakeStreamsServer`, the dataset's owner) at
    ``host:port``, replica ``i`` at ``host:replica_ports[i]``. Each node's server is put in ``network`` at its
    address (a :class:`~fake_streams.patching.FakeNetwork`), so clients routed there reach the right node. A
    loopback host is announced as ``127.0.0.1``. Thread-safe."""

    def __init__(self, master: FakeStreamsServer, host: str, port: int, replica_ports: Sequence[int],
                 network: Any = None, replica_servers: Optional[Sequence[FakeStreamsServer]] = None) -> None:
        from ..patching import address_of

        self.lock = threading.RLock()
        host = "127.0.0.1" if host in _LOOPBACK else host
        self.owner = master
        self.offset = 0
        #: the replication ids (INFO ``master_replid`` / ``master_replid2``): the owner's, until a promotion
        self.replid = master._info.replid
        self.replid2 = "0" * 40
        servers = [master] + (list(replica_servers) if replica_servers is not None
                              else [replica_server(master) for _ in replica_ports])
        self.nodes = [ReplicaNode(self, server, host, p) for server, p in zip(servers, [port, *replica_ports])]
        self.master = self.nodes[0]
        for node in self.nodes:
            node.server.address = node.address
            node.server.replication = node
            if network is not None:
                network.alias(address_of({"host": host, "port": node.port}), node.server)
        self._apply_roles()

    @property
    def replicas(self) -> List[ReplicaNode]:
        """The replicas, in node order."""
        return [node for node in self.nodes if node is not self.master]

    def node(self, which: ReplicaNode | int | str) -> ReplicaNode:
        """A node by index, by ``host:port`` or itself."""
        if isinstance(which, ReplicaNode):
            return which
        if isinstance(which, int):
            return self.nodes[which]
        for node in self.nodes:
            if which == node.address:
                return node
        raise LookupError(f"no node {which!r}")

    def _apply_roles(self) -> None:
        for node in self.nodes:  # every command of a replica passes the dispatch path's READONLY check
            node.server.fast_path = not node.is_replica

    def promote(self, which: ReplicaNode | int | str, convert_old: bool = True) -> ReplicaNode:
        """Make ``which`` the master and every other node its replica (what a failover does); the clients of the
        new master and of the other replicas are disconnected (their next command fails with ConnectionError, a
        blocked read ends with it at once). The old master is converted at once too (``convert_old``) or left
        :attr:`~ReplicaNode.unconverted` — still a master, its clients connected — until :meth:`convert`. Returns
        the new master. The dataset is untouched."""
        new = self.node(which)
        with self.lock:
            old = self.master
            if new is old:
                raise ValueError(f"{new!r} is already the master")
            self.master = new
            new.unconverted = False
            old.unconverted = True
            self.offset += 1  # the new master's replication history starts after the old one's
            self.replid2, self.replid = self.replid, secrets.token_hex(20)  # shiftReplicationId
            self._apply_roles()
            hung_up = [node for node in self.nodes if node is not old and not node.unconverted]
        for node in hung_up:  # SLAVEOF NO ONE on the new master, SLAVEOF new on the others, each + CLIENT KILL
            _hang_up(node)
        if convert_old:
            self.convert(old)
        return new

    def convert(self, node: ReplicaNode | int | str) -> bool:
        """Make a demoted master that was left :attr:`~ReplicaNode.unconverted` a replica of the master and hang up
        on its clients (what a sentinel's ``+convert-to-slave`` sends: ``SLAVEOF`` + ``CLIENT KILL TYPE normal`` /
        ``pubsub``); a client blocked there reads the EOF. False if ``node`` was not waiting to be converted."""
        node = self.node(node)
        with self.lock:
            if not node.unconverted:
                return False
            node.unconverted = False
            self._apply_roles()
        _hang_up(node)
        return True

    def close(self) -> None:
        """Close every node, the dataset's owner last."""
        for node in self.nodes:
            if node.server is not self.owner:
                node.server.close()
        self.owner.close()


__all__ = ["READONLY", "ReplicaNode", "ReplicationGroup", "is_write", "replica_server"]
