"""Fuzzing bad input: random argument vectors to every stream command (fuzz_vectors.py).

Three runs over the same kind of vectors:

1. **in process** (the bulk): each vector goes straight to the command table (arity checked like the
   transport, container subcommands resolved), with a :class:`tests.support.context.DictContext`
   keyspace, for every profile and both protocols. The reply must be a valid reply value or a
   ``ReplyError`` that renders with the profile's table; any other exception is a failure. After every
   command, every stream and group passes its invariant check (``Stream._check``,
   ``ConsumerGroup._check``: entries ordered, counters consistent, each PEL entry owned by exactly one
   consumer, consumer PEL sizes sum to the group PEL) plus the checks below; after every error reply
   the keyspace fingerprint must be unchanged (no half-applied state).
2. **through the transport**: a share of the vectors goes through ``FakeStreamsConnection`` to a
   ``FakeStreamsServer`` (RESP2/RESP3, raw replies): only error replies or values, never a dropped
   connection, ``server.internal_errors`` empty, same invariants and fingerprint rule. XREAD/XREADGROUP
   vectors naming BLOCK are sent inside MULTI … EXEC (nothing blocks there).
3. **against real servers**: a smaller sample (default 2,000 per oracle) goes to the fake and to each real
   server from the same starting state; whenever either side replies with an error, both must send the
   same error text (non-error replies are not compared here: the stateful differential does that).

Sizes: FAKE_STREAMS_FUZZ_VECTORS (default 100,000 for runs 1 + 2), FAKE_STREAMS_FUZZ_TRANSPORT_SHARE
(default 0.2), FAKE_STREAMS_FUZZ_REAL_VECTORS (default 2,000 per oracle); seed FAKE_STREAMS_FUZZ_SEED
(fixed in CI, random locally, printed on failure).
"""

from __future__ import annotations

import os
import random
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest

from fake_streams import FakeStreamsConnection, FakeStreamsServer, ManualClock
from fake_streams.commands import COMMANDS, CONTAINERS, BlockRequest
from fake_streams.errors import ReplyError
from fake_streams.ids import MAX_ID, MIN_ID
from fake_streams.profiles import get_profile
from fake_streams.reply import Status
from fake_streams.stream import Stream
from tests.conformance.conftest import TARGETS, missing_oracle
from tests.conformance.replies import Err, capture, encode_args

from .conftest import FIGURES, derandomized, env_float, env_int
from .duo import Duo, argv_text
from .fuzz_vectors import VectorGen, cstr_upper, may_block
from .known_differences import ORACLE_KIND, ValkeyCounters, xread_plus_normalizer
from .open_bugs import open_bug

VECTORS = env_int("FAKE_STREAMS_FUZZ_VECTORS", 100_000)
TRANSPORT_SHARE = env_float("FAKE_STREAMS_FUZZ_TRANSPORT_SHARE", 0.2)
REAL_VECTORS = env_int("FAKE_STREAMS_FUZZ_REAL_VECTORS", 2000)
CI_SEED = 20240601
PROFILES = ("7.0", "7.2", "7.4", "valkey-8.0")
COMBOS = [(p, proto) for p in PROFILES for proto in (2, 3)]
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


def fuzz_seed() -> int:
    raw = os.environ.get("FAKE_STREAMS_FUZZ_SEED", "").strip()
    if raw:
        return int(raw)
    return CI_SEED if derandomized() else random.randrange(1 << 32)


# ------------------------------------------------------------------------------------ checks
def check_value(reply: Any) -> Optional[str]:
    """None if ``reply`` is a reply value a handler may return (bytes, int, None, Status, list, RESP3 dict)."""
    if reply is None or type(reply) in (bytes, int, Status):
        return None
    if type(reply) is list:
        for item in reply:
            bad = check_value(item)
            if bad:
                return bad
        return None
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
        ids = tuple(sid for sid, _ in s.range(MIN_ID, MAX_ID))
        out.append((key, s.last_id, s.first_id, s.max_deleted_entry_id, s.entries_added, ids,
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


def test_fuzz_in_process():
    """Most vectors: the command table directly, every profile × protocol."""
    seed = fuzz_seed()
    failures = Failures(seed)
    total = int(VECTORS * (1 - TRANSPORT_SHARE))
    per = max(1, total // len(COMBOS))
    master = random.Random(seed)
    for profile, protocol in COMBOS:
        stats = run_in_process(profile, protocol, per, master.randrange(1 << 32), failures)
        for name, n in stats.items():
            FIGURES[f"fuzz in-process: {name}"] += n
    failures.raise_if_any(per * len(COMBOS))


# Negative controls: the in-process runner must notice each kind of bug it exists to find.
def _broken_table(name: str, wrapper: Any) -> Dict[str, Any]:
    from dataclasses import replace

    table = dict(COMMANDS)
    table[name] = replace(table[name], handler=wrapper(table[name].handler))
    return table


def _raises_on_empty_key(handler: Any) -> Any:
    def broken(ctx: Any, args: List[bytes]) -> Any:
        if args and args[0] == b"":
            raise IndexError("boom")
        return handler(ctx, args)

    return broken


def _half_applied(handler: Any) -> Any:
    def broken(ctx: Any, args: List[bytes]) -> Any:
        s = ctx.lookup(b"s1")
        if s is not None and len(s):
            s.delete(s.first_entry()[0])  # a change, then an error
        raise ReplyError("SYNTAX")

    return broken


def _orphan_pel(handler: Any) -> Any:
    def broken(ctx: Any, args: List[bytes]) -> Any:
        reply = handler(ctx, args)
        s = ctx.lookup(b"s1")
        group = s.groups.get(b"g1") if s is not None else None
        if group is not None and group.pel:
            sid, nack = next(iter(group.pel.items()))
            nack.consumer.pel.pop(sid, None)  # a PEL entry no consumer owns
        return reply

    return broken


@pytest.mark.parametrize("name, wrapper, symptom", [
    ("xlen", _raises_on_empty_key, "raised IndexError"),
    ("xack", _half_applied, "partial change"),
    ("xlen", _orphan_pel, "invariant broken"),
], ids=["python-exception", "half-applied-error", "broken-invariant"])
def test_fuzz_runner_catches(name, wrapper, symptom):
    failures = Failures(0)
    run_in_process("7.4", 2, 3000, 1, failures, commands=_broken_table(name, wrapper))
    assert failures.count > 0 and any(symptom in item for item in failures.items), failures.items[:3]


# -------------------------------------------------------------------------------- transport
class Transported:
    """A FakeStreamsServer and one raw connection per protocol (errors captured as :class:`Err`)."""

    def __init__(self, profile: str) -> None:
        self.server = FakeStreamsServer(version=profile, clock=ManualClock(1_700_000_000_000))
        self.conns = {p: FakeStreamsConnection(server=self.server, protocol=p) for p in (2, 3)}
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


def _has_error(reply: Any) -> bool:
    return isinstance(reply, Err) or (isinstance(reply, list) and any(isinstance(x, Err) for x in reply))


def test_fuzz_through_transport():
    """A share of the vectors through FakeStreamsConnection: the wire path, MULTI for BLOCK vectors."""
    seed = fuzz_seed() ^ 0x5EED
    failures = Failures(seed)
    total = int(VECTORS * TRANSPORT_SHARE)
    per = max(1, total // len(PROFILES))
    master = random.Random(seed)
    done = 0
    for profile in PROFILES:
        rng = random.Random(master.randrange(1 << 32))
        side = Transported(profile)
        gen = VectorGen(rng.randrange(1 << 32), side.ids_of)
        try:
            for i in range(per):
                if i and i % RESET_EVERY == 0:
                    side.close()
                    side = Transported(profile)
                    gen = VectorGen(rng.randrange(1 << 32), side.ids_of)
                argv = gen.vector()
                protocol = rng.choice((2, 3))
                side.server.clock.advance(rng.choice((0, 0, 1, 1000, 3_600_000)))
                before = fingerprint(side.streams())
                done += 1
                try:
                    if may_block(argv):
                        FIGURES["fuzz transport: BLOCK vectors sent in MULTI"] += 1
                        side.run(protocol, [b"MULTI"])
                        side.run(protocol, argv)
                        reply = side.run(protocol, [b"EXEC"])
                    else:
                        reply = side.run(protocol, argv)
                except Exception as exc:
                    failures.add(f"transport {profile}/RESP{protocol}", argv, f"raised {type(exc).__name__}: {exc}")
                    side.close()
                    side = Transported(profile)
                    gen = VectorGen(rng.randrange(1 << 32), side.ids_of)
                    continue
                FIGURES["fuzz transport: vectors"] += 1
                if side.server.internal_errors:
                    name, args, tb = side.server.internal_errors[-1]
                    failures.add(f"transport {profile}/RESP{protocol}", argv, f"internal error in {name}:\n{tb}")
                    side.server.internal_errors.clear()
                streams = side.streams()
                if isinstance(reply, Err):
                    FIGURES["fuzz transport: error replies"] += 1
                    if fingerprint(streams) != before:
                        failures.add(f"transport {profile}/RESP{protocol}", argv, f"{reply!r} after a partial change")
                try:
                    for s in streams.values():
                        if isinstance(s, Stream):
                            check_stream(s)
                            if len(s) > MAX_LEN:
                                with side.server.backend.lock:
                                    s.trim(maxlen=20)
                except AssertionError as exc:
                    failures.add(f"transport {profile}/RESP{protocol}", argv, f"invariant broken: {exc!r}")
        finally:
            side.close()
    failures.raise_if_any(done)


# ------------------------------------------------------------------------------ real servers
REAL_TARGETS = [t for t in TARGETS if t.main and t.protocol == 2]


def _host_dependent(argv: Sequence[bytes], real: Any, fake: Any, duo: Duo) -> bool:
    """XAUTOCLAIM COUNT n allocates n*16 bytes up front on the server; whether a GB-scale allocation fails
    depends on the host (the fake refuses only what no 64-bit host could map, see commands/xclaim.py)."""
    if cstr_upper(argv[0]) != b"XAUTOCLAIM" or not isinstance(real, Err):
        return False
    if real.full != duo.profile.errors["XAUTOCLAIM_COUNT_MEMORY"]:
        return False
    upper = [cstr_upper(a) for a in argv]
    for i, a in enumerate(upper[:-1]):
        if a == b"COUNT":
            try:
                return int(argv[i + 1]) * 16 >= 1 << 30
            except ValueError:
                return False
    return False


def _nul_in_name(argv: Sequence[bytes]) -> bool:
    """A NUL in the command or container-subcommand name: not comparable with a real server.

    Redis looks names up in a dict hashed over the whole argument but compared with ``strcasecmp``, so
    ``GROUPS\\0junk`` is found only when its hash lands in the bucket of ``groups`` — it depends on the
    per-process hash seed (probed on 7.0.15: found for some suffixes, not others). Valkey 9.1.2 always finds
    it. The fake answers "unknown subcommand" (a valid Redis outcome). Covered in process and through the
    transport instead.
    """
    if b"\x00" in argv[0]:
        return True
    return len(argv) > 1 and cstr_upper(argv[0]) in (b"XINFO", b"XGROUP") and b"\x00" in argv[1]


@pytest.mark.real
@pytest.mark.parametrize("target", REAL_TARGETS, ids=[t.label for t in REAL_TARGETS])
def test_fuzz_error_texts_match_real_server(target, oracle_pool):
    """A sample of vectors on the fake and a real server: where either replies with an error, both do, same text."""
    try:
        oracle = oracle_pool.get(target)
    except LookupError as exc:
        missing_oracle(str(exc))
    seed = fuzz_seed() ^ 0xD1FF
    rng = random.Random(seed)
    failures = Failures(seed)
    counters = ValkeyCounters()
    compared = 0
    chunk = 250
    done = 0
    while done < REAL_VECTORS:
        duo = Duo(oracle, target.profile)
        try:
            for argv in SETUP:
                real, fake = duo.run(2, argv)
                assert not _has_error(real) and not _has_error(fake), (argv, real, fake)
            gen = VectorGen(rng.randrange(1 << 32), lambda key: [])
            for _ in range(min(chunk, REAL_VECTORS - done)):
                done += 1
                argv = gen.vector()
                protocol = rng.choice((2, 3))
                if _nul_in_name(argv):
                    FIGURES[f"fuzz vs {oracle.label}: skipped (NUL in a command name)"] += 1
                    continue
                if may_block(argv):
                    duo.run(protocol, [b"MULTI"], sync=False)
                    duo.run(protocol, argv, sync=False)
                    real, fake = duo.run(protocol, [b"EXEC"])
                    pairs = list(zip(real, fake)) if isinstance(real, list) and isinstance(fake, list) else [(real, fake)]
                else:
                    real, fake = duo.run(protocol, argv)
                    if oracle.kind == ORACLE_KIND and cstr_upper(argv[0]) == b"XREAD":
                        real = xread_plus_normalizer(counters, protocol, list(argv))(real, fake, duo)
                    pairs = [(real, fake)]
                for r, f in pairs:
                    if not (isinstance(r, Err) or isinstance(f, Err)):
                        continue
                    compared += 1
                    if r == f or _host_dependent(argv, r, f, duo):
                        continue
                    bug = open_bug(argv, r, f, protocol)
                    if bug:
                        FIGURES[f"fuzz vs {oracle.label}: open bug {bug}"] += 1
                        continue
                    failures.add(f"{oracle.label} vs {target.profile} RESP{protocol}", argv,
                                 f"real: {r!r}\n    fake: {f!r}")
        finally:
            duo.close()
    FIGURES[f"fuzz vs {oracle.label}: vectors"] += done
    FIGURES[f"fuzz vs {oracle.label}: error replies compared"] += compared
    if counters.hits["xread-plus-0-0"]:
        FIGURES[f"fuzz vs {oracle.label}: known difference (xread-plus-0-0)"] += counters.hits["xread-plus-0-0"]
    failures.raise_if_any(done)
