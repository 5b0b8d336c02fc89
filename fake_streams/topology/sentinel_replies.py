"""The replies of a sentinel to ``SENTINEL <subcommand>`` and ``ROLE``, as Redis 7.0's sentinel answers them, built
from a :class:`~fake_streams.topology.sentinel.FakeSentinel`.

Values are plain Python replies: ``bytes`` (bulk), ``int``, ``list``, ``dict`` (a RESP3 map; RESP2 gets the flat
list, :func:`fake_streams.topology.replies.as_protocol`), :class:`~fake_streams.reply.Status` (a simple string),
:data:`NIL_ARRAY` (the null array of an unknown master's address). Errors are raised as :class:`SentinelError`
with the sentinel's text. A sentinel's state fields are bulk strings, numbers included (addReplyBulkLongLong).

Time fields (``last-ok-ping-reply``, ``info-refresh``, ``role-reported-time``) are derived from the sentinel's
clock as a sentinel that pings every second and refreshes INFO every ten would show them.
"""

from __future__ import annotations

import fnmatch
from typing import Any, Callable, Dict, List, Sequence, Tuple

from ..reply import Status
from . import sentinel_config

#: every SENTINEL subcommand of Redis 7.0 → its arity (commands.def); the container itself has arity -2
ARITY: Dict[str, int] = {
    "ckquorum": 3, "config": -4, "debug": -2, "failover": 3, "flushconfig": 2, "get-master-addr-by-name": 3,
    "help": 2, "info-cache": -3, "is-master-down-by-addr": 6, "master": 3, "masters": 2, "monitor": 6, "myid": 2,
    "pending-scripts": 2, "remove": 3, "replicas": 3, "reset": 3, "sentinels": 3, "set": -5,
    "simulate-failure": -3, "slaves": 3,
}
#: Valkey's sentinel: FAILOVER takes COORDINATED, and each "master" subcommand has a "primary" twin
VALKEY_ARITY: Dict[str, int] = {**ARITY, "failover": -3, "primary": 3, "primaries": 2, "get-primary-addr-by-name": 3,
                                "is-primary-down-by-addr": 6}
_VALKEY_ALIASES = {"primary": "master", "primaries": "masters", "get-primary-addr-by-name": "get-master-addr-by-name",
                   "is-primary-down-by-addr": "is-master-down-by-addr"}


def arity_ok(sub: str, argc: int, profile: Any) -> Any:
    """Whether ``argc`` arguments (the whole command) fit SENTINEL ``sub`` on ``profile``'s sentinel; None for an
    unknown subcommand. (Valkey's FAILOVER takes one optional argument: 3 or 4.)"""
    arity = (VALKEY_ARITY if profile.server == "valkey" else ARITY).get(sub)
    if arity is None:
        return None
    if arity > 0:
        return argc == arity
    return argc >= -arity and not (sub == "failover" and argc > 4)
NO_SUCH_MASTER = "ERR No such master with that name"
#: what a sentinel answers for a name no monitored master has in GET-MASTER-ADDR-BY-NAME (addReplyNullArray)
NIL_ARRAY = None
#: the commands a sentinel has (its command table: every other name is an unknown command)
COMMANDS = frozenset({"acl", "auth", "client", "command", "hello", "info", "ping", "psubscribe", "publish",
                      "punsubscribe", "role", "sentinel", "shutdown", "subscribe", "unsubscribe"})
PING_PERIOD_MS = 1000
INFO_PERIOD_MS = 10000


class SentinelError(Exception):
    """An error reply (the full line)."""


def _b(value: Any) -> bytes:
    return str(value).encode()


def _common(sentinel: Any, node: Any, now_ms: int) -> Dict[bytes, Any]:
    """The fields every instance shows first (sentinelReplyInstance), up to ``down-after-milliseconds`` +
    ``info-refresh`` + the reported role."""
    since_start = max(0, now_ms - sentinel.started_ms)
    ping = since_start % PING_PERIOD_MS
    is_master = node is sentinel.group.master  # the sentinel's view; ``role-reported``: the node's own
    flags = "master" if is_master else "slave"
    fields: Dict[bytes, Any] = {
        b"name": sentinel.master_name.encode() if is_master else node.address.encode(),
        b"ip": node.host.encode(), b"port": _b(node.port), b"runid": node.server._info.run_id.encode(),
        b"flags": flags.encode(), b"link-pending-commands": b"0", b"link-refcount": b"1", b"last-ping-sent": b"0",
        b"last-ok-ping-reply": _b(ping), b"last-ping-reply": _b(ping),
        b"down-after-milliseconds": _b(sentinel.settings.down_after_ms),
        b"info-refresh": _b(since_start % INFO_PERIOD_MS),
        b"role-reported": b"slave" if sentinel.reports_replica(node) else b"master",
        b"role-reported-time": _b(max(0, now_ms - sentinel.role_since_ms.get(node.address, sentinel.started_ms))),
    }
    return fields


def master_fields(sentinel: Any, now_ms: int) -> Dict[bytes, Any]:
    """SENTINEL MASTER ``name``: the master's state."""
    group = sentinel.group
    fields = _common(sentinel, group.master, now_ms)
    fields.update({
        b"config-epoch": _b(sentinel.config_epoch), b"num-slaves": _b(len(group.replicas)),
        b"num-other-sentinels": b"0", b"quorum": _b(sentinel.quorum),
        b"failover-timeout": _b(sentinel.settings.failover_timeout_ms),
        b"parallel-syncs": _b(sentinel.settings.parallel_syncs),
    })
    return fields


def replica_fields(sentinel: Any, node: Any, now_ms: int) -> Dict[bytes, Any]:
    """One entry of SENTINEL REPLICAS ``name``."""
    master = sentinel.group.master
    fields = _common(sentinel, node, now_ms)
    # the role and link of the instance's last INFO: an old master not converted yet replicates from nobody, and a
    # converted one is seen linked at the sentinel's next INFO of it (with its +role-change)
    linked = sentinel.reports_replica(node)
    fields.update({
        b"master-link-down-time": b"0", b"master-link-status": b"ok" if linked else b"err",
        b"master-host": master.host.encode() if linked else b"?", b"master-port": _b(master.port if linked else 0),
        b"slave-priority": _b(node.priority),
        b"slave-repl-offset": _b(sentinel.group.offset), b"replica-announced": b"1",
    })
    return fields


def ckquorum(sentinel: Any) -> Any:
    """SENTINEL CKQUORUM: one usable sentinel (this one), the quorum and the majority of one voter."""
    usable, voters = 1, 1
    no_quorum = usable < sentinel.quorum
    no_auth = usable < voters // 2 + 1
    if not no_quorum and not no_auth:
        return Status(f"OK {usable} usable Sentinels. Quorum and failover authorization can be reached".encode())
    text = f"NOQUORUM {usable} usable Sentinels. "
    if no_quorum:
        text += "Not enough available Sentinels to reach the specified quorum for this master"
    if no_auth:
        text += (". " if no_quorum else "") + "Not enough available Sentinels to reach the majority and authorize " \
                                             "a failover"
    raise SentinelError(text)


def sentinel_command(sentinel: Any, sub: str, args: Sequence[bytes], now_ms: int,
                     publish: Callable[[List[Tuple[bytes, bytes]]], None]) -> Any:
    """``SENTINEL sub args…`` (the subcommand exists and has its arity: checked before); ``publish(events)``
    publishes ``(channel, message)`` pairs on the sentinel (SENTINEL FAILOVER's events)."""
    sub = _VALKEY_ALIASES.get(sub, sub)
    if sub == "masters":
        return [master_fields(sentinel, now_ms)]
    if sub == "myid":
        return sentinel.myid.encode()
    if sub == "pending-scripts":
        return []
    if sub == "help":
        lines = sentinel_config.VALKEY_HELP if sentinel.server.profile.server == "valkey" else sentinel_config.HELP
        return [Status(line.encode()) for line in lines]
    if sub == "flushconfig":  # the fake keeps no configuration file: nothing to write
        return Status(b"OK")
    if sub == "debug":
        return sentinel_config.debug_command(sentinel, args)
    if sub == "config":
        return sentinel_config.config_command(sentinel, args)
    if sub == "simulate-failure":
        return sentinel_config.simulate_failure(sentinel, args)
    if sub == "monitor":
        return sentinel_config.monitor_checks(sentinel, args)
    if sub == "is-master-down-by-addr":
        return sentinel_config.is_master_down(sentinel, args)
    name = bytes(args[0]) if args else b""
    known = name == sentinel.master_name.encode()
    if sub == "get-master-addr-by-name":
        if not known:
            return NIL_ARRAY
        master = sentinel.group.master
        return [master.host.encode(), _b(master.port)]
    if sub == "reset":  # the number of masters whose name matches the pattern (a fake sentinel keeps its state)
        return int(fnmatch.fnmatchcase(sentinel.master_name, name.decode("utf-8", "replace")))
    if sub in ("master", "replicas", "slaves", "sentinels", "ckquorum", "failover", "set", "remove"):
        if not known:
            raise SentinelError(NO_SUCH_MASTER)
        if sub == "set":
            return sentinel_config.set_command(sentinel, args[1:])
        if sub == "remove":
            raise SentinelError("ERR fake-redis-streams: SENTINEL REMOVE of the watched master is not emulated")
        if sub == "master":
            return master_fields(sentinel, now_ms)
        if sub in ("replicas", "slaves"):
            return [replica_fields(sentinel, node, now_ms) for node in sentinel.group.replicas]
        if sub == "sentinels":
            return []
        if sub == "ckquorum":
            return ckquorum(sentinel)
        if len(args) > 1 and (len(args) > 2 or bytes(args[1]).lower() != b"coordinated"):
            raise SentinelError("ERR Unknown failover option specified")  # (Valkey; instant, as coordinated is)
        if sentinel.best_replica() is None:
            raise SentinelError("NOGOODSLAVE No suitable replica to promote")
        publish(sentinel.switch()[1])
        sentinel.crash_if_simulated(in_command=True)
        return Status(b"OK")
    raise SentinelError(f"ERR fake-redis-streams: SENTINEL {sub.upper()} is not emulated (the fake sentinel's state "
                        "is changed with FakeSentinel.failover)")


def _master_event(name: str, node: Any) -> str:
    return f"master {name} {node.host} {node.port}"


def _replica_event(node: Any, name: str, master: Any) -> str:
    return f"slave {node.address} {node.host} {node.port} @ {name} {master.host} {master.port}"


def failover_events(sentinel: Any, old: Any, new: Any, others: Sequence[Any]) -> List[Tuple[bytes, bytes]]:
    """What a sentinel publishes (``sentinelEvent``, channel = event type) during a failover of ``old`` to ``new``
    (``others``: the other replicas, reconfigured to follow ``new``), in the order a forced failover publishes
    them, up to the sentinel's first look at the old master, which still reports the master role (``-role-change``;
    its conversion comes later: :func:`convert_event`). Valkey publishes ``-sdown`` for the master after
    ``+try-failover``."""
    name = sentinel.master_name
    during = _master_event(name, old)
    promoted = _replica_event(new, name, old)
    epoch = str(sentinel.config_epoch)
    events = [("+new-epoch", epoch), ("+try-failover", during)]
    if sentinel.server.profile.server == "valkey":  # Valkey's forced failover clears the master's SDOWN state
        events.append(("-sdown", during))
    events += [("+vote-for-leader", f"{sentinel.myid} {epoch}"),
              ("+elected-leader", during), ("+failover-state-select-slave", during), ("+selected-slave", promoted),
              ("+failover-state-send-slaveof-noone", promoted), ("+failover-state-wait-promotion", promoted),
              ("-role-change", promoted + " new reported role is master"), ("+promoted-slave", promoted),
              ("+failover-state-reconf-slaves", during)]
    for node in others:
        replica = _replica_event(node, name, old)
        events += [("+slave-reconf-sent", replica), ("+slave-reconf-inprog", replica), ("+slave-reconf-done", replica)]
    events += [("+failover-end", during), ("+switch-master", f"{name} {old.host} {old.port} {new.host} {new.port}")]
    events += [("+slave", _replica_event(node, name, new)) for node in [*others, old]]
    events.append(("-role-change", _replica_event(old, name, new) + " new reported role is master"))
    return [(channel.encode(), message.encode()) for channel, message in events]


def convert_event(sentinel: Any, node: Any) -> Tuple[bytes, bytes]:
    """``+convert-to-slave``: the sentinel sent the old master ``node`` its SLAVEOF."""
    return b"+convert-to-slave", _replica_event(node, sentinel.master_name, sentinel.group.master).encode()


def role_change_event(sentinel: Any, node: Any) -> Tuple[bytes, bytes]:
    """``+role-change``: the next INFO of a converted old master ``node`` reports the replica role."""
    message = _replica_event(node, sentinel.master_name, sentinel.group.master) + " new reported role is slave"
    return b"+role-change", message.encode()


def role_reply(sentinel: Any) -> List[Any]:
    """ROLE on a sentinel: ``[sentinel, [master names…]]``."""
    return [b"sentinel", [sentinel.master_name.encode()]]


__all__ = ["ARITY", "COMMANDS", "NO_SUCH_MASTER", "SentinelError", "ckquorum", "failover_events", "master_fields",
           "replica_fields", "role_reply", "sentinel_command"]
