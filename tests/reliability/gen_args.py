"""Arguments for the stateful differential's commands: keys, names, IDs, numbers, and the :class:`World` they
are drawn from (the fake's streams, its clock, the IDs seen per key). Used by gen_commands.py.

Draws are hypothesis draws (``d`` is ``data.draw``). Choices whose list depends on the state use
fixed-shape draws (:func:`pick`, :func:`position`) so hypothesis can replay a sequence; :func:`chance` and
:func:`one` shrink towards the plain choice.

Time-dependent arguments are kept away from the values they are compared with, so the clock difference
between the real server and the fake never decides an outcome: min-idle thresholds are 0 or ≥ 10 minutes,
backdated idle times are 0, 1 ms or ≥ 50 minutes, explicit IDs are either small (ms < 10^6), taken whole
from earlier replies of the same key, or far in the future (ms 9999999999999) — never a clock-made ms with a
different sequence.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

from hypothesis import strategies as st

from fake_streams.ids import StreamID

KEYS = (b"s1", b"s2", b"s3")
STRING_KEY = b"str"
MISSING_KEY = b"nokey"
GROUPS = (b"g1", b"g2", b"g3")
CONSUMERS = (b"alice", b"bob", b"carol", b"c\xff\x00d")
FIELDS = (b"f", b"g", b"", b"\x00\xff", b"field-with-a-longer-name")
VALUES = (b"v", b"1", b"", b"\xff\xfe\x00", b"x" * 40, b"-1")

#: XADD's far-future IDs: deterministic on both sides whatever the clocks say
FUTURE_MS = 9999999999999
U64 = 18446744073709551615
CLOCK_MS = 10**12  # an ID at or above this ms was (or may be) made by a clock

EDGE_IDS = (b"0-0", b"0-1", b"%d-%d" % (U64, U64), b"%d-0" % U64, b"%d-1" % FUTURE_MS, b"1-%d" % U64)
BAD_IDS = (b"abc", b"", b"1-", b"-1", b"1-x", b"\xff", b"18446744073709551616-0", b"1-18446744073709551616",
           b"1--1", b" 1-1", b"1-1 ", b"0x10-1", b"+1-1", b"1.5-1")
NUMBERS = (b"1", b"2", b"3", b"0", b"5", b"10", b"100")
BAD_NUMBERS = (b"-1", b"abc", b"", b"1.5", b" 1", b"9223372036854775807", b"9223372036854775808",
               b"-9223372036854775808", b"-9223372036854775809", b"18446744073709551616", b"0x10", b"1e3")
#: min-idle-time thresholds: far from any idle time a test can produce (0 … a few seconds, or ≥ 50 min)
MIN_IDLE = (b"0", b"0", b"600000", b"3600000000", b"-5")
#: XCLAIM IDLE: how far back to date a delivery
BACKDATE = (b"0", b"1", b"3000000", b"200000000", b"100000000000000", b"-100")
#: XPENDING IDLE thresholds
IDLE_FILTER = (b"0", b"600000", b"3600000000")


def one(d: Callable, seq: Sequence[Any]) -> Any:
    """One of ``seq``; hypothesis shrinks towards the first, so put the plain choice first."""
    return d(st.sampled_from(list(seq)))


def pick(d: Callable, seq: Sequence[Any]) -> Any:
    """One of a sequence whose length depends on the state. The draw has a fixed shape (an integer in a
    fixed range) so that hypothesis can replay and shrink a sequence whose state differs slightly."""
    return seq[d(st.integers(0, 1023)) % len(seq)]


def position(d: Callable, lo: int, hi: int) -> int:
    """An integer in ``[lo, hi]`` (bounds depending on the state) from a fixed-shape draw."""
    return lo + d(st.integers(0, 1023)) % (hi - lo + 1)


def chance(d: Callable, p_percent: int) -> bool:
    """True with about ``p_percent`` % probability; shrinks (and starts) towards False."""
    return d(st.integers(0, 99)) >= 100 - p_percent


def case(d: Callable, word: bytes) -> bytes:
    """An option name in random case (servers compare case-insensitively)."""
    style = d(st.integers(0, 9))
    if style < 6:
        return word.upper()
    if style < 8:
        return word.lower()
    return bytes(c ^ 0x20 if (i % 2 and 65 <= (c & 0xDF) <= 90) else c for i, c in enumerate(word))


def number(d: Callable, valid: Sequence[bytes] = NUMBERS, bad_percent: int = 8) -> bytes:
    return one(d, BAD_NUMBERS) if chance(d, bad_percent) else one(d, valid)


class World:
    """What generators may look at: the fake's streams, its clock, and the IDs seen in replies per key.

    IDs are only ever reused with the key they came from: clock-made IDs of two streams may compare
    differently on the two sides (each side's clock made them), IDs of one stream never do.
    """

    def __init__(self, stream_of: Callable[[bytes], Any], now_ms: Callable[[], int]) -> None:
        self.stream_of = stream_of
        self.now_ms = now_ms
        self.known: dict = {}

    def remember(self, key: bytes, sid: bytes) -> None:
        seen = self.known.setdefault(key, [])
        if sid not in seen and len(seen) < 200:
            seen.append(sid)

    def known_ids(self, key: bytes) -> List[bytes]:
        return self.known.get(key, [])

    def live_ids(self, key: bytes, limit: int = 64) -> List[bytes]:
        stream = self.stream_of(key)
        if stream is None or not len(stream):
            return []
        items = stream.range(StreamID(0, 0), StreamID(U64, U64), limit)
        return [sid.encode() for sid, _ in items]

    def pel_ids(self, key: bytes, group: bytes) -> List[bytes]:
        stream = self.stream_of(key)
        g = stream.groups.get(group) if stream is not None else None
        return [sid.encode() for sid in list(g.pel.keys())[:64]] if g is not None else []

    def groups(self, key: bytes) -> List[bytes]:
        stream = self.stream_of(key)
        return list(stream.groups.keys()) if stream is not None else []

    def last_id(self, key: bytes) -> StreamID:
        stream = self.stream_of(key)
        return stream.last_id if stream is not None else StreamID(0, 0)


# ---------------------------------------------------------------------------------------- arguments
def key(d: Callable) -> bytes:
    return one(d, KEYS * 4 + (STRING_KEY, MISSING_KEY))


def group_key(d: Callable, world: World) -> bytes:
    """A key for a group command: mostly one that has groups (else NOGROUP would dominate)."""
    with_groups = [k for k in KEYS if world.groups(k)]
    if with_groups and not chance(d, 20):
        return pick(d, with_groups)
    return key(d)


def group_name(d: Callable, world: World, k: bytes) -> bytes:
    existing = world.groups(k)
    if existing and chance(d, 80):
        return pick(d, existing)
    return one(d, GROUPS)


def consumer_name(d: Callable) -> bytes:
    return one(d, CONSUMERS)


def some_id(d: Callable, world: World, k: bytes, group: Optional[bytes] = None) -> bytes:
    """An ID argument: an entry of ``k``, a pending ID of ``group``, an ID seen on ``k``, a small, edge or bad ID."""
    kinds = ["live", "pel", "live", "pel", "small", "live", "pel", "edge", "bad", "known", "live", "pel"]
    known = world.known_ids(k)
    live = world.live_ids(k)
    pel = world.pel_ids(k, group) if group is not None else []
    kind = one(d, kinds)
    if kind == "pel" and not pel:
        kind = "live"
    if kind == "live" and not live:
        kind = "small"
    if kind == "live":
        return pick(d, live)
    if kind == "pel":
        return pick(d, pel)
    if kind == "known" and known:
        return pick(d, known)
    if kind == "edge":
        return one(d, EDGE_IDS)
    if kind == "bad":
        return one(d, BAD_IDS)
    ms = d(st.integers(0, 30))
    if chance(d, 15):
        return b"%d" % ms  # incomplete ID: seq defaults to 0 (or max as an end bound)
    return b"%d-%d" % (ms, d(st.integers(0, 3)))


def range_bound(d: Callable, world: World, k: bytes, start: bool) -> bytes:
    roll = d(st.integers(0, 9))
    if roll < 3:
        return b"-" if start else b"+"
    if roll < 4:
        return b"+" if start else b"-"
    sid = some_id(d, world, k)
    if roll < 6 and sid[:1] not in (b"-", b"+", b"("):
        return b"(" + sid
    return sid


def xadd_id(d: Callable, world: World, k: bytes) -> bytes:
    last = world.last_id(k)
    roll = d(st.integers(0, 19))
    if roll < 8:
        return b"*"
    if roll < 14 and last.ms < CLOCK_MS:
        ms = last.ms + d(st.integers(0, 2))
        seq = last.seq + d(st.integers(1, 3)) if ms == last.ms else d(st.integers(0, 2))
        return b"%d-%d" % (ms, seq)
    if roll < 15:
        ms = last.ms + d(st.integers(0, 1)) if last.ms < CLOCK_MS or last.ms >= FUTURE_MS else d(st.integers(1, 5))
        return b"%d-*" % ms
    if roll < 16:
        return one(d, (b"%d-0" % FUTURE_MS, b"%d-*" % FUTURE_MS, b"%d-%d" % (U64, U64 - 1)))
    return some_id(d, world, k)


def fields(d: Callable) -> List[bytes]:
    n = one(d, (1, 1, 1, 2, 2, 3))
    out: List[bytes] = []
    for _ in range(n):
        out += [one(d, FIELDS), one(d, VALUES)]
    if chance(d, 3):
        out = out[:-1]  # odd number of field/value arguments
    return out


def trim_args(d: Callable, world: World, k: bytes, xtrim: bool) -> List[bytes]:
    """``[(MAXLEN|MINID) [=|~] threshold [LIMIT n]]`` (always a strategy for XTRIM), sometimes damaged."""
    out: List[bytes] = []
    if xtrim or chance(d, 35):
        minid = chance(d, 40)
        out.append(case(d, b"MINID" if minid else b"MAXLEN"))
        mode = one(d, (b"", b"", b"~", b"="))
        if mode:
            out.append(mode)
        if minid:
            out.append(some_id(d, world, k))
        else:
            stream = world.stream_of(k)
            size = len(stream) if stream is not None else 0
            out.append(b"%d" % position(d, 0, size + 2) if not chance(d, 8) else one(d, BAD_NUMBERS))
        if chance(d, 30):
            out += [case(d, b"LIMIT"), number(d, (b"0", b"1", b"2", b"5", b"100"))]
        if chance(d, 4):
            out += [case(d, one(d, (b"MAXLEN", b"MINID"))), b"1"]  # both strategies
    return out
