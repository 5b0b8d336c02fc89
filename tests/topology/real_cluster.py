"""Real Redis Cluster oracles for tests/topology: a single-node cluster (``--cluster-enabled yes`` + ``CLUSTER
ADDSLOTSRANGE 0 16383``) and a 3-master cluster on loopback ports (``CLUSTER MEET`` + ``ADDSLOTSRANGE`` with the
split ``redis-cli --cluster create`` makes), started with :class:`tests.conformance.oracles.Oracle`; and the
normaliser that makes their replies comparable with the fake's: node IDs, ports (client and bus), config
epochs, pong times and the gossip message counters become placeholders — nothing else changes.
"""

from __future__ import annotations

import re
import time
from typing import Any, Dict, List, Optional

from fake_streams.topology.slots import split_slots
from tests.conformance.oracles import _FINDERS, Oracle, _free_port

WAIT_S = 30.0  # real-time bound for a real cluster to agree on its state


class RealCluster:
    """``masters`` real redis-server nodes forming one cluster; ``nodes[i]`` owns ``split_slots(masters)[i]``.
    ``kind``: the oracle's server kind (``redis``: Redis 7.0.15; ``redis8``: Redis 8.2.3)."""

    def __init__(self, masters: int, kind: str = "redis") -> None:
        binary, why = _FINDERS[kind]()
        if binary is None:
            raise LookupError(why)
        self.nodes: List[Oracle] = []
        self.bus_ports: List[int] = []
        try:
            for _ in range(masters):
                bus = _free_port()
                self.bus_ports.append(bus)
                self.nodes.append(Oracle.start(kind, binary, extra=(
                    "--cluster-enabled", "yes", "--cluster-config-file", "{workdir}/nodes.conf",
                    "--cluster-port", str(bus), "--cluster-node-timeout", "5000")))
            for node, (first, last) in zip(self.nodes, split_slots(masters)):
                node.command("CLUSTER", "ADDSLOTSRANGE", first, last)
            for node in self.nodes[1:]:
                node.command("CLUSTER", "MEET", "127.0.0.1", self.nodes[0].port, self.bus_ports[0])
            self._wait_ok(masters)
            self.ids = [node.command("CLUSTER", "MYID") for node in self.nodes]
        except BaseException:
            self.stop()
            raise

    def _wait_ok(self, masters: int) -> None:
        deadline = time.monotonic() + WAIT_S
        while True:
            ready = True
            for node in self.nodes:
                info = node.command("CLUSTER", "INFO").decode()
                slots = node.command("CLUSTER", "SLOTS")
                if ("cluster_state:ok" not in info or f"cluster_known_nodes:{masters}" not in info
                        or len(slots) != masters or any(b"" == s[2][0] for s in slots if masters > 1)):
                    ready = False
            if ready:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the real {masters}-node cluster did not reach cluster_state:ok in {WAIT_S} s")
            time.sleep(0.1)  # real-time: bounded wait for the real cluster's gossip to converge

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def normaliser(ids: List[bytes], ports: List[int], bus_ports: List[int]) -> Any:
    """A function that replaces, in a reply, node ``i``'s id by ``<id i>``, its port by ``<port i>``, its bus port by
    ``<bus i>``, and epochs / pong times / gossip counters (history, not behaviour) by ``<n>``."""
    id_map = {nid: f"<id{i}>".encode() for i, nid in enumerate(ids)}
    port_map = {p: f"<port{i}>" for i, p in enumerate(ports)}
    bus_map = {p: f"<bus{i}>" for i, p in enumerate(bus_ports)}

    def text(raw: bytes) -> bytes:
        for nid, name in id_map.items():
            raw = raw.replace(nid, name)
        out = raw.decode("utf-8", "replace")
        out = re.sub(r":(\d+)@(\d+)", lambda m: f":{port_map.get(int(m[1]), m[1])}@{bus_map.get(int(m[2]), m[2])}",
                     out)
        verbatim = out.startswith("txt:")  # a RESP3 verbatim string read off the wire
        out = out[4:] if verbatim else out
        out = re.sub(r"^((?:MOVED|ASK) \d+ [^:]*):(\d+)$", lambda m: f"{m[1]}:{port_map.get(int(m[2]), m[2])}", out)
        if out.startswith("cluster_state:"):  # CLUSTER INFO: epochs and gossip counters
            lines = []
            for line in out.split("\r\n"):
                name, _, value = line.partition(":")
                if name.startswith("cluster_stats_messages_") and name not in (
                        "cluster_stats_messages_sent", "cluster_stats_messages_received"):
                    continue
                if name in ("cluster_current_epoch", "cluster_my_epoch") or name.startswith("cluster_stats_messages"):
                    value = "<n>"
                lines.append(f"{name}:{value}" if line else line)
            out = "\r\n".join(lines)
        elif "@" in out and " connected" in out or " disconnected" in out:  # CLUSTER NODES
            rows = []
            for line in out.splitlines():
                fields = line.split(" ")
                if len(fields) >= 8:
                    fields[4:7] = ["<n>", "<n>", "<n>"]
                rows.append(" ".join(fields))
            out = "\n".join(sorted(rows)) + "\n"
        return (("txt:" if verbatim else "") + out).encode()

    def walk(value: Any) -> Any:
        if isinstance(value, bytes):
            return text(value)
        if isinstance(value, int) and not isinstance(value, bool) and value in port_map:
            return port_map[value]
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {walk(k): walk(v) for k, v in value.items()}
        if hasattr(value, "text") and hasattr(value, "code"):  # an Err (redis-py cut MOVED / ASK off the text)
            body = text(value.text.encode()).decode()
            if value.code in ("MOVED", "ASK"):
                body = re.sub(r"^(\d+ [^:]*):(\d+)$", lambda m: f"{m[1]}:{port_map.get(int(m[2]), m[2])}", body)
            return type(value)(value.kind, value.code, body)
        return value

    return walk


def sort_shards(reply: Any) -> Any:
    """CLUSTER SHARDS lists shards in the server's hash-table order: sorted by their first slot."""
    def first_slot(shard: Any) -> Any:
        pairs = shard if isinstance(shard, list) else [x for kv in shard.items() for x in kv]
        for i in range(0, len(pairs) - 1, 2):
            if pairs[i] == b"slots":
                return pairs[i + 1][:1]
        return []

    return sorted(reply, key=first_slot) if isinstance(reply, list) else reply


def bus_port_of(node: Oracle) -> Optional[int]:
    line = node.command("CLUSTER", "NODES").decode().splitlines()
    for row in line:
        if "myself" in row:
            return int(row.split(" ")[1].split("@")[1].split(",")[0])
    return None


def wire_tree(data: bytes) -> Any:
    """One RESP2/RESP3 reply as read off the wire: ``[marker, payload]`` (arrays and maps: ``[marker, items…]``), so
    the reply types (simple / bulk / verbatim strings, maps) take part in a comparison."""
    value, end = _parse(data, 0)
    if end != len(data):
        raise ValueError(f"trailing bytes after a reply: {data[end:]!r}")
    return value


def _parse(data: bytes, pos: int) -> Any:
    eol = data.index(b"\r\n", pos)
    marker, head = chr(data[pos]), data[pos + 1:eol]
    pos = eol + 2
    if marker in "+-":
        return [marker, head], pos
    if marker in ":(":
        return [marker, int(head)], pos
    if marker in ",#_":
        return [marker, head], pos
    if marker in "$=!":
        n = int(head)
        if n < 0:
            return [marker, None], pos
        return [marker, data[pos:pos + n]], pos + n + 2
    if marker in "*~>%|":
        n = int(head)
        if n < 0:
            return [marker, None], pos
        items = [marker]
        for _ in range(n * (2 if marker in "%|" else 1)):
            item, pos = _parse(data, pos)
            items.append(item)
        return items, pos
    raise ValueError(f"not a RESP reply at {pos}: {data[pos - 1:pos + 20]!r}")


def read_reply(sock: Any) -> bytes:
    """Read from ``sock`` until one whole reply has arrived (bounded by the socket's timeout)."""
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed")
        data += chunk
        try:
            _, end = _parse(data, 0)
        except (ValueError, IndexError):
            continue
        if end == len(data):
            return data


__all__ = ["RealCluster", "bus_port_of", "normaliser", "read_reply", "sort_shards", "wire_tree"]


def info_dict(raw: bytes) -> Dict[str, str]:
    return dict(line.split(":", 1) for line in raw.decode().split("\r\n") if ":" in line)
