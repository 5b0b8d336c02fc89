"""The replies of a cluster node to ``CLUSTER <subcommand>``, ``READONLY`` / ``READWRITE`` / ``ASKING``, as
Redis 7.0 (cluster.c) answers them, built from a :class:`~fake_streams.topology.cluster.ClusterNode`.

Values are plain Python replies: ``bytes`` (bulk), :class:`~fake_streams.reply.VerbatimText` (CLUSTER INFO / NODES:
a RESP3 verbatim string), ``int``, ``list``, ``dict`` (a RESP3 map; RESP2 gets the
flat list, :func:`as_protocol`), :class:`~fake_streams.reply.Status` (a simple string). Errors are raised as
:class:`ClusterError` with the server's text. The caller holds the node's server lock.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

from ..reply import Status, VerbatimText
from .slots import SLOTS, key_slot

OK = Status(b"OK")

#: CLUSTER HELP, Redis 7.0.15
HELP = [
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]", "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH", "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>", "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>", "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]", "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]", "    Promote current replica node to being a master.",
    "FORGET <node-id>", "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>", "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS", "    Delete current node own slots information.",
    "INFO", "    Return information about the cluster.",
    "KEYSLOT <key>", "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]", "    Connect nodes into a working cluster.",
    "MYID", "    Return the node id.",
    "NODES", "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>", "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]", "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>", "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)", "    Set slot state.",
    "REPLICAS <node-id>", "    Return <node-id> replicas.",
    "SAVECONFIG", "    Force saving cluster configuration on disk.",
    "SLOTS", "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS", "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS", "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
    "HELP", "    Prints this help.",
]

#: every CLUSTER subcommand of Redis 7.0 → its arity (commands.def); the container itself has arity -2
ARITY: Dict[str, int] = {
    "addslots": -3, "addslotsrange": -4, "bumpepoch": 2, "count-failure-reports": 3, "countkeysinslot": 3,
    "delslots": -3, "delslotsrange": -4, "failover": -2, "flushslots": 2, "forget": 3, "getkeysinslot": 4,
    "help": 2, "info": 2, "keyslot": 3, "links": 2, "meet": -4, "myid": 2, "nodes": 2, "replicas": 3,
    "replicate": 3, "reset": -2, "saveconfig": 2, "set-config-epoch": 3, "setslot": -4, "shards": 2,
    "slaves": 3, "slots": 2,
}

NOT_INTEGER = "ERR value is not an integer or out of range"
INVALID_SLOT = "ERR Invalid slot"
INVALID_SLOT_OR_COUNT = "ERR Invalid slot or number of keys"
DISABLED = "ERR This instance has cluster support disabled"


class ClusterError(Exception):
    """An error reply (the full line, e.g. ``"ERR Invalid slot"``)."""


def as_protocol(value: Any, protocol: int) -> Any:
    """``value`` for a RESP2 client: every map flattened to ``[k1, v1, k2, v2 …]`` (RESP3: unchanged)."""
    if protocol >= 3:
        return value
    if isinstance(value, dict):
        out: List[Any] = []
        for k, v in value.items():
            out += [k, as_protocol(v, protocol)]
        return out
    if isinstance(value, list):
        return [as_protocol(v, protocol) for v in value]
    return value


def parse_int(raw: bytes) -> int:
    """A long long as the server parses one (``string2ll``: no spaces, no ``+``, no leading zeros)."""
    try:
        text = raw.decode()
        if text != text.strip() or not text or (len(text) > 1 and text[0] == "0") or text.startswith("+"):
            raise ValueError
        return int(text)
    except (UnicodeDecodeError, ValueError):
        raise ClusterError(NOT_INTEGER) from None


def _slot(raw: bytes) -> int:
    slot = parse_int(raw)
    if slot < 0 or slot >= SLOTS:
        raise ClusterError(INVALID_SLOT)
    return slot


def _flags(node: Any, me: Any) -> str:
    flags = (["myself"] if node is me else []) + ["master"] + (["fail"] if node.failed else [])
    return ",".join(flags)


def nodes_text(me: Any, now_ms: int) -> bytes:
    """CLUSTER NODES: one line per node (this one first), with this node's open slot migrations."""
    lines = []
    ordered = [me] + [n for n in me.cluster.nodes if n is not me]
    for node in ordered:
        ranges = node.slot_ranges()
        slots = [str(a) if a == b else f"{a}-{b}" for a, b in ranges]
        if node is me:
            slots += [f"[{s}->-{d.node_id}]" for s, d in sorted(node.migrating.items())]
            slots += [f"[{s}-<-{d.node_id}]" for s, d in sorted(node.importing.items())]
        pong = 0 if node is me else now_ms
        link = "disconnected" if node.failed and node is not me else "connected"
        fields = [node.node_id, f"{node.announced_ip}:{node.port}@{node.cport}", _flags(node, me), "-", "0",
                  str(pong), str(node.config_epoch), link] + slots
        lines.append(" ".join(fields) + "\n")
    return VerbatimText("".join(lines).encode())


def info_text(me: Any) -> bytes:
    """CLUSTER INFO."""
    cluster = me.cluster
    assigned = sum(1 for owner in cluster.owners if owner is not None)
    failed = sum(1 for owner in cluster.owners if owner is not None and owner.failed)
    masters_with_slots = {id(owner) for owner in cluster.owners if owner is not None}
    many = len(cluster.nodes) > 1
    fields = [
        ("cluster_state", "ok" if cluster.state_ok else "fail"),
        ("cluster_slots_assigned", assigned), ("cluster_slots_ok", assigned - failed),
        ("cluster_slots_pfail", 0), ("cluster_slots_fail", failed),
        ("cluster_known_nodes", len(cluster.nodes)), ("cluster_size", len(masters_with_slots)),
        ("cluster_current_epoch", cluster.current_epoch), ("cluster_my_epoch", me.config_epoch),
    ]
    peers = len(cluster.nodes) - 1
    if many:  # the gossip counters of a node that has peers (values: one ping/pong per peer so far)
        fields += [("cluster_stats_messages_ping_sent", peers), ("cluster_stats_messages_pong_sent", peers),
                   ("cluster_stats_messages_sent", 2 * peers), ("cluster_stats_messages_ping_received", peers),
                   ("cluster_stats_messages_pong_received", peers),
                   ("cluster_stats_messages_received", 2 * peers)]
    else:
        fields += [("cluster_stats_messages_sent", 0), ("cluster_stats_messages_received", 0)]
    fields.append(("total_cluster_links_buffer_limit_exceeded", 0))
    return VerbatimText("".join(f"{name}:{value}\r\n" for name, value in fields).encode())


def slots_reply(me: Any) -> List[Any]:
    """CLUSTER SLOTS: ``[start, end, [ip, port, id, {}]]`` per contiguous range, in slot order."""
    out: List[Any] = []
    cluster = me.cluster
    start = 0
    while start < SLOTS:
        owner = cluster.owners[start]
        end = start
        while end + 1 < SLOTS and cluster.owners[end + 1] is owner:
            end += 1
        if owner is not None and not owner.failed:
            out.append([start, end, [owner.announced_ip.encode(), owner.port, owner.node_id.encode(), {}]])
        start = end + 1
    return out


def shards_reply(me: Any) -> List[Any]:
    """CLUSTER SHARDS: one map per master (this one first): its slot ranges and its node."""
    out: List[Any] = []
    ordered = [me] + [n for n in me.cluster.nodes if n is not me]
    for node in ordered:
        slots: List[Any] = []
        for a, b in node.slot_ranges():
            slots += [a, b]
        ip = node.announced_ip.encode()
        out.append({
            b"slots": slots,
            b"nodes": [{
                b"id": node.node_id.encode(), b"port": node.port, b"ip": ip, b"endpoint": ip,
                b"role": b"master", b"replication-offset": 0, b"health": b"fail" if node.failed else b"online",
            }],
        })
    return out


def cluster_command(me: Any, sub: str, args: Sequence[bytes], now_ms: int,
                    keys_in_slot: Callable[[int], List[bytes]]) -> Any:
    """``CLUSTER sub args…`` on node ``me`` (the subcommand exists and has its arity: checked before)."""
    if sub == "help":
        return [Status(line.encode()) for line in HELP]
    if sub == "info":
        return info_text(me)
    if sub == "myid":
        return me.node_id.encode()
    if sub == "nodes":
        return nodes_text(me, now_ms)
    if sub == "slots":
        return slots_reply(me)
    if sub == "shards":
        return shards_reply(me)
    if sub == "keyslot":
        return key_slot(bytes(args[0]))
    if sub == "countkeysinslot":
        return len(keys_in_slot(_slot(bytes(args[0]))))
    if sub == "getkeysinslot":
        slot, count = parse_int(bytes(args[0])), parse_int(bytes(args[1]))
        if slot < 0 or slot >= SLOTS or count < 0:
            raise ClusterError(INVALID_SLOT_OR_COUNT)
        return keys_in_slot(slot)[:count]
    if sub == "links":
        raise ClusterError("ERR fake-redis-streams: CLUSTER LINKS (the cluster bus) is not emulated")
    if sub in ("count-failure-reports", "replicas", "slaves"):
        return _peer_command(me, sub, args)
    raise ClusterError(f"ERR fake-redis-streams: CLUSTER {sub.upper()} changes the topology, which the fake "
                       "does with FakeCluster.move_slot / begin_migration / fail_node / failover")


def _peer_command(me: Any, sub: str, args: Sequence[bytes]) -> Any:
    target = _find(me, bytes(args[0]))
    if target is None:
        raise ClusterError(f"ERR Unknown node {bytes(args[0]).decode('utf-8', 'replace')}")
    if sub == "count-failure-reports":
        return 0
    return []  # REPLICAS / SLAVES: the fake cluster's masters have no replicas


def _find(me: Any, node_id: bytes) -> Optional[Any]:
    for node in me.cluster.nodes:
        if node.node_id.encode() == node_id:
            return node
    return None


__all__ = ["ARITY", "ClusterError", "DISABLED", "HELP", "as_protocol", "cluster_command", "info_text",
           "nodes_text", "parse_int", "shards_reply", "slots_reply"]
