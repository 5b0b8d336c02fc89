"""The fuzzer's runners and checks: the starting state, an in-process runner over the command table, a
transport runner (FakeStreamsServer + raw connections), reply-value and invariant checks, the keyspace
fingerprint for the "no half-applied state" rule, and failure collection. Used by test_fuzz_arguments.py.
"""

from __future__ import annotations

import random
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest

from fake_streams import FakeStreamsConnection, FakeStreamsServer, ManualClock
from fake_streams.commands import COMMANDS, CONTAINERS, BlockRequest
from fake_streams.errors import ReplyError
from fake_streams.ids import MAX_ID, MIN_ID
from fake_streams.profiles import get_profile
from fake_streams.reply import RepeatedKeyMap, Status
from fake_streams.stream import Stream
from tests.conformance.oracles import protocol_kwargs
from tests.conformance.replies import Err, capture, encode_args

from .duo import argv_text, wire_protocol
from .fuzz_vectors import VectorGen

#: rebuild the starting state this often (keeps streams small and the invariant checks cheap)
RESET_EVERY = 2500
MAX_LEN = 150

#: the starting state: two streams with groups, consumers, pending entries (one of them deleted), a string
SETUP: List[List[bytes]] = [
    [b"XADD", b"s1", b"1-1", b"f", b"v"],
    [b"XADD", b"s1", b"1-2", b"f", b"v2"],
    [b"XADD", b"s1", b"2-0", b"a", b"b", b"c", b"d"],
    [b"XADD", b"s1", b"3-0", b"f", b"\xff"],
    [b"XADD", b"s1", b"5-0", b"f", b""],
    [b"XGROUP", b"CREATE", b"s1", b"g1", b"0"],
    [b"XGROUP", b"CREATE", b"s1", b"g2", b"$"],
    [b"XREADGROUP", b"GROUP", b"g1", b"c1", b"COUNT", b"2", b"STREAMS", b"s1", b">"],
    [b"XREADGROUP", b"GROUP", b"g1", b"c2", b"STREAMS", b"s1", b">"],
    [b"XDEL", b"s1", b"2-0"],
    [b"XCLAIM", b"s1", b"g1", b"c2", b"0", b"1-1", b"IDLE", b"10000000000"],
    [b"XADD", b"s2", b"10-0", b"x", b"y"],
    [b"XGROUP", b"CREATE", b"s2", b"g1", b"0"],
    [b"XGROUP", b"CREATECONSUMER", b"s2", b"g1", b"cx"],
    [b"SET", b"str", b"hello"],
]


# ------------------------------------------------------------------------------------ checks
def check_value(reply: Any) -> Optional[str]:
    """None if ``reply`` is a reply value a handler may return (bytes, int, None, Status, list, RESP3 dict,
    RESP3 map with a repeated key: a RepeatedKeyMap whose dict view is consistent with its pairs)."""
    if reply is None or type(reply) in (bytes, int, Status):
        return None
    if type(reply) is list:
        for item in reply:
            bad = check_value(item)
            if bad:
                return bad
        return None
    if type(reply) is RepeatedKeyMap:
        if dict(reply.pairs) != dict(reply) or len(reply) == len(reply.pairs):
            return f"inconsistent RepeatedKeyMap: {reply!r:.200}"
        return check_value([list(pair) for pair in reply.pairs])
    if type(reply) is dict:
        for k, v in reply.items():
            bad = check_value(k) or check_value(v)
            if bad:
                return bad
        return None
    return f"not a reply value: {type(reply).__name__} {reply!r:.200}"


def check_stream(stream: Stream) -> None:
    """The engine's own invariants plus counters the issue names."""
    stream._check()
    assert stream.entries_added >= 0
    for name, group in stream.groups.items():
        assert group.name == name
        group._check()
        assert group.entries_read >= -1, group
        for sid, nack in group.pel.items():
            assert nack.delivery_count >= 0 and nack.delivery_time >= 0, (sid, nack)


def fingerprint(streams: Dict[bytes, Any]) -> Tuple:
    """A cheap picture of a keyspace: everything an error must not change. O(n + p) per stream."""
    out = []
    for key in sorted(streams):
        s = streams[key]
        if not isinstance(s, Stream):
            out.append((key, type(s).__name__, repr(getattr(s, "value", s))[:100]))
            continue
        groups = []
        for name, g in s.groups.items():
            pel = tuple((sid, n.delivery_time, n.delivery_count, n.consumer.name if n.consumer else None)
                        for sid, n in g.pel.items())
            consumers = tuple((c.name, c.seen_time, c.active_time, tuple(c.pel.keys())) for c in g.consumers.values())
            groups.append((name, g.last_id, g.entries_read, pel, consumers))
        # the node layout has each macro node's live/deleted counts and bytes: any added, deleted or trimmed
        # entry shows there, so the entry IDs themselves need not be listed (keeps this O(#nodes + p))
        ends = (s.first_entry() or (None,))[0], (s.last_entry() or (None,))[0]
        out.append((key, s.last_id, s.first_id, s.max_deleted_entry_id, s.entries_added, len(s), ends,
                    tuple(s.node_layout()), tuple(groups)))
    return tuple(out)


class Failures:
    """Collects failures (first 20 kept in full) so one run reports many."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.items: List[str] = []
        self.count = 0

    def add(self, where: str, argv: Sequence[bytes], what: str) -> None:
        self.count += 1
        if len(self.items) < 20:
            self.items.append(f"[{where}] {argv_text(argv)}\n    {what}")

    def raise_if_any(self, total: int) -> None:
        if self.count:
            pytest.fail(f"{self.count} of {total} vectors failed (FAKE_STREAMS_FUZZ_SEED={self.seed}):\n"
                        + "\n".join(self.items), pytrace=False)


# ---------------------------------------------------------------------------------- in process
class InProcess:
    """The command table called directly, as the transport would (arity, containers), on a dict keyspace."""

    def __init__(self, profile: str, protocol: int, rng: random.Random, commands: Any = None) -> None:
        from tests.support.context import DictContext

        self.ctx = DictContext(profile, protocol=protocol, now_ms=1_700_000_000_000)
        self.rng = rng
        self.commands = COMMANDS if commands is None else commands
        for argv in SETUP:
            if argv[0] == b"SET":
                self.ctx.keyspace[argv[1]] = argv[2]  # a non-stream value: lookup() raises WRONGTYPE
            else:
                assert not isinstance(self.call(argv), ReplyError), argv

    def ids_of(self, key: bytes) -> List[bytes]:
        s = self.ctx.keyspace.get(key)
        if not isinstance(s, Stream) or not len(s):
            return []
        return [sid.encode() for sid, _ in s.range(MIN_ID, MAX_ID, 20)]

    def call(self, argv: List[bytes]) -> Any:
        """The reply value, a ReplyError instance, or a marker string for what the transport answers itself."""
        name = argv[0].lower()
        rest = argv[1:]
        lname = name.decode("latin-1")
        if lname in CONTAINERS:
            if not rest:
                return ReplyError("WRONG_ARITY", command=lname)
            sub = f"{lname}|{rest[0].lower().decode('latin-1')}"
            spec = self.commands.get(sub)
            if spec is None:
                return "<unknown subcommand>"
            rest = rest[1:]
        else:
            spec = self.commands.get(lname)
            if spec is None:
                return "<unknown command>"
        if not spec.arity_ok(len(argv)):
            return ReplyError("WRONG_ARITY", command=spec.name)
        self.ctx.argv = list(argv)
        try:
            return spec.handler(self.ctx, list(rest))
        except ReplyError as exc:
            return exc

    def tick(self) -> None:
        """The server clock moves (mostly forward, sometimes a lot, rarely backwards)."""
        r = self.rng.random()
        if r < 0.5:
            return
        self.ctx.now_ms = max(0, self.ctx.now_ms + self.rng.choice((1, 7, 1000, 3_600_000, 86_400_000 * 30, -5000)))

    def bound(self) -> None:
        for s in list(self.ctx.keyspace.values()):
            if isinstance(s, Stream) and len(s) > MAX_LEN:
                s.trim(maxlen=20)


def run_in_process(profile: str, protocol: int, n: int, seed: int, failures: Failures,
                   commands: Any = None) -> Dict[str, int]:
    rng = random.Random(seed)
    stats = {"vectors": 0, "errors": 0, "values": 0, "blocks": 0, "transport-answered": 0}
    proc: Optional[InProcess] = None
    gen: Optional[VectorGen] = None
    errors_table = get_profile(profile).errors
    for i in range(n):
        if i % RESET_EVERY == 0:
            proc = InProcess(profile, protocol, rng, commands)
            gen = VectorGen(rng.randrange(1 << 32), proc.ids_of)
        assert proc is not None and gen is not None
        argv = gen.vector()
        proc.tick()
        before = fingerprint(proc.ctx.keyspace)
        stats["vectors"] += 1
        try:
            reply = proc.call(argv)
        except Exception as exc:  # the bug this test exists for
            failures.add(f"{profile}/RESP{protocol}", argv, f"raised {type(exc).__name__}: {exc}")
            proc = InProcess(profile, protocol, rng, commands)
            gen = VectorGen(rng.randrange(1 << 32), proc.ids_of)
            continue
        if isinstance(reply, str):
            stats["transport-answered"] += 1
        elif isinstance(reply, ReplyError):
            stats["errors"] += 1
            try:
                reply.render(errors_table)
            except Exception as exc:
                failures.add(f"{profile}/RESP{protocol}", argv, f"error {reply!r} does not render: {exc!r}")
            if fingerprint(proc.ctx.keyspace) != before:
                failures.add(f"{profile}/RESP{protocol}", argv, f"error {reply!r} after a partial change of state")
        elif isinstance(reply, BlockRequest):
            stats["blocks"] += 1
        else:
            stats["values"] += 1
            bad = check_value(reply)
            if bad:
                failures.add(f"{profile}/RESP{protocol}", argv, bad)
        try:
            for s in proc.ctx.keyspace.values():
                if isinstance(s, Stream):
                    check_stream(s)
        except AssertionError as exc:
            failures.add(f"{profile}/RESP{protocol}", argv, f"invariant broken: {exc!r}")
            proc = InProcess(profile, protocol, rng, commands)
            gen = VectorGen(rng.randrange(1 << 32), proc.ids_of)
            continue
        proc.bound()
    return stats


# -------------------------------------------------------------------------------- transport
class Transported:
    """A FakeStreamsServer and one raw connection per protocol (errors captured as :class:`Err`)."""

    def __init__(self, profile: str) -> None:
        self.server = FakeStreamsServer(version=profile, clock=ManualClock(1_700_000_000_000))
        # RESP3 needs redis-py >= 5.0: on 4.x the RESP3 vectors go through a RESP2 connection (duo.wire_protocol)
        self.conns = {p: FakeStreamsConnection(server=self.server, **protocol_kwargs(wire_protocol(p))) for p in (2, 3)}
        for argv in SETUP:
            assert not isinstance(self.run(2, argv), Err), argv

    def run(self, protocol: int, argv: Sequence[bytes]) -> Any:
        conn = self.conns[protocol]
        conn.send_command(*encode_args(argv))
        return capture(lambda: conn.read_response(disable_decoding=True))

    def streams(self) -> Dict[bytes, Any]:
        with self.server.backend.lock:
            db = self.server.backend.fake.dbs[0]
            out = {}
            for key in list(db.keys()):
                item = db.get(key)
                if item is not None:
                    out[key] = item.value
            return out

    def ids_of(self, key: bytes) -> List[bytes]:
        s = self.streams().get(key)
        if not isinstance(s, Stream) or not len(s):
            return []
        return [sid.encode() for sid, _ in s.range(MIN_ID, MAX_ID, 20)]

    def close(self) -> None:
        for conn in self.conns.values():
            conn.disconnect()
        self.server.close()


def has_error(reply: Any) -> bool:
    return isinstance(reply, Err) or (isinstance(reply, list) and any(isinstance(x, Err) for x in reply))


