"""XADD IDMP / IDMPAUTO, XCFGSET and the XINFO IDMP fields (Redis 8.6; addendum streams-redis8.md §2.6–2.8),
ported from the cases of Redis's stream.tcl and redis-py 8.1's tests that the addendum records, on the fake's
8.6 profile with a ManualClock (no Redis 8.6 server is available here). Choices where the sources are
silent: docs/redis8-choices.md ("IDMP").
"""

import pytest
import redis

from fake_streams import FakeStreamsServer
from fake_streams.clock import ManualClock

T0 = 1_700_000_000_000


@pytest.fixture(params=("8.6", "8.10"))
def env(request):
    clock = ManualClock(T0)
    server = FakeStreamsServer(version=request.param, clock=clock)
    yield clock, server.client(protocol=2)
    server.close()


def x(r, *argv):
    try:
        return r.execute_command(*argv)
    except redis.ResponseError as exc:
        return f"-{exc}"


def _idmp_info(r):
    info = x(r, "XINFO", "STREAM", "s")
    return [info[info.index(name) + 1] for name in (b"idmp-duration", b"idmp-maxsize", b"pids-tracked",
                                                     b"iids-tracked", b"iids-added", b"iids-duplicates")]


def test_syntax_errors(env):
    _, r = env
    assert x(r, "XADD", "s", "IDMP", "p1", "*", "f", "v") == "-Invalid stream ID specified as stream command argument"
    assert x(r, "XADD", "s", "IDMP", "p1", "iid1", "1-1", "f", "v") == "-IDMP/IDMPAUTO can be used only with auto-generated IDs"
    assert x(r, "XADD", "s", "IDMP", "p1", "i1", "IDMP", "p2", "i2", "*", "f", "v") == "-IDMP/IDMPAUTO specified multiple times"
    assert x(r, "XADD", "s", "IDMPAUTO", "p1", "IDMP", "p2", "i2", "*", "f", "v") == "-IDMP/IDMPAUTO specified multiple times"
    assert x(r, "XADD", "s", "IDMP", "", "iid1", "*", "f", "v") == "-IDMP requires a non-empty producer ID"
    assert x(r, "XADD", "s", "IDMP", "p1", "", "*", "f", "v") == "-IDMP requires a non-empty idempotent ID"
    assert x(r, "XADD", "s", "IDMPAUTO", "", "*", "f", "v") == "-IDMPAUTO requires a non-empty producer ID"
    assert x(r, "EXISTS", "s") == 0
    for iid in (b"\x00\x01", b"x" * 65536, b"*", b"-", b"+", b"IDMP", b"123-456"):
        assert x(r, "XADD", "s", "IDMP", "p", iid, "*", "f", "v").count(b"-") == 1


def test_duplicates_return_the_original_id_and_keep_its_fields(env):
    clock, r = env
    first = x(r, "XADD", "s", "IDMP", "p1", "req-1", "*", "amount", "100", "currency", "USD")
    clock.advance(5)
    assert x(r, "XADD", "s", "IDMP", "p1", "req-1", "KEEPREF", "MAXLEN", "~", "1000", "LIMIT", "10", "*", "amount", "200") == first
    assert x(r, "XRANGE", "s", "-", "+") == [(first, {b"amount": b"100", b"currency": b"USD"})]
    assert x(r, "XADD", "s", "IDMP", "p2", "req-1", "*", "f", "v") != first  # producers are independent
    assert x(r, "XADD", "nokey", "NOMKSTREAM", "IDMP", "p1", "req-1", "*", "f", "v") is None
    pipe = r.pipeline()
    for argv in (("XADD", "m", "IDMP", "p", "a", "*", "f", "1"), ("XADD", "m", "IDMP", "p", "a", "*", "f", "2")):
        pipe.execute_command(*argv)
    a, b = pipe.execute()
    assert a == b and x(r, "XLEN", "m") == 1


def test_idmpauto_same_content_same_iid(env):
    _, r = env
    x(r, "XADD", "s", "*", "f", "v")
    assert _idmp_info(r) == [100, 100, 0, 0, 0, 0]
    a = x(r, "XADD", "s", "IDMPAUTO", "producer1", "*", "f", "v", "g", "w")
    assert _idmp_info(r) == [100, 100, 1, 1, 1, 0]
    assert x(r, "XADD", "s", "IDMPAUTO", "producer1", "*", "f", "v", "g", "w") == a
    assert _idmp_info(r) == [100, 100, 1, 1, 1, 1]
    assert x(r, "XADD", "s", "IDMPAUTO", "producer2", "*", "f", "v", "g", "w") != a
    assert _idmp_info(r) == [100, 100, 2, 2, 2, 1]
    assert x(r, "XADD", "s", "IDMPAUTO", "producer1", "*", "g", "w", "f", "v") != a  # field order matters (choice)


def test_expiry_after_duration_and_eviction_by_maxsize(env):
    clock, r = env
    x(r, "XADD", "s", "IDMP", "p", "init", "*", "f", "v")
    assert x(r, "XCFGSET", "s", "IDMP-DURATION", "1") == b"OK"
    old = x(r, "XADD", "s", "IDMP", "p", "req", "*", "f", "v")
    clock.advance(999)
    assert x(r, "XADD", "s", "IDMP", "p", "req", "*", "f", "v") == old
    clock.advance(1501)
    assert x(r, "XADD", "s", "IDMP", "p", "req", "*", "f", "v") != old
    assert x(r, "XCFGSET", "s", "IDMP-DURATION", "100", "IDMP-MAXSIZE", "3") == b"OK"
    ids = {i: x(r, "XADD", "s", "IDMP", "q", f"req-{i}", "*", "f", "v") for i in range(1, 5)}
    assert x(r, "XADD", "s", "IDMP", "q", "req-3", "*", "f", "v") == ids[3]  # still tracked
    assert x(r, "XADD", "s", "IDMP", "q", "req-4", "*", "f", "v") == ids[4]
    assert x(r, "XADD", "s", "IDMP", "q", "req-1", "*", "f", "v") != ids[1]  # the oldest was evicted
    assert _idmp_info(r)[1:4] == [3, 1, 3]  # maxsize 3; the XCFGSET change cleared p's iid; q holds 3


def test_xcfgset_errors_and_clearing(env):
    _, r = env
    assert x(r, "XCFGSET", "s", "IDMP-DURATION", "5") == "-no such key"
    x(r, "SET", "str", "v")
    assert x(r, "XCFGSET", "str", "IDMP-DURATION", "5").startswith("-WRONGTYPE")
    a = x(r, "XADD", "s", "IDMP", "p", "i", "*", "f", "v")
    assert x(r, "XCFGSET", "s") == "-At least one parameter must be specified"
    for argv in (("IDMP-DURATION",), ("IDMP-MAXSIZE",), ("INVALID",)):
        assert x(r, "XCFGSET", "s", *argv) == "-syntax error"
    for bad in ("A", "*", "-", "+", "120-5", "3.14", "000000000", "IDMP-DURATION"):
        assert x(r, "XCFGSET", "s", "IDMP-DURATION", bad) == "-value is not an integer or out of range"
    assert x(r, "XCFGSET", "s", "IDMP-DURATION", "INVALID", "IDMP-MAXSIZE") == "-value is not an integer or out of range"
    for bad in ("86401", "0", "-100"):
        assert x(r, "XCFGSET", "s", "IDMP-DURATION", bad) == "-IDMP-DURATION must be between 1 and 86400 seconds"
    for bad in ("10001", "0", "-50"):
        assert x(r, "XCFGSET", "s", "IDMP-MAXSIZE", bad) == "-IDMP-MAXSIZE must be between 1 and 10000 entries"
    assert _idmp_info(r)[:2] == [100, 100]  # unchanged after the errors
    assert x(r, "XCFGSET", "s", "IDMP-DURATION", "100") == b"OK"  # the same value: history kept (choice)
    assert x(r, "XADD", "s", "IDMP", "p", "i", "*", "f", "v") == a
    assert x(r, "XCFGSET", "s", "IDMP-DURATION", "86400", "IDMP-MAXSIZE", "10000") == b"OK"
    assert x(r, "XADD", "s", "IDMP", "p", "i", "*", "f", "v") != a  # a changed value clears the history
    assert _idmp_info(r)[:4] == [86400, 10000, 1, 1]


def test_xinfo_stream_field_order(env):
    _, r = env
    x(r, "XADD", "s", "1-1", "f", "v")
    names = x(r, "XINFO", "STREAM", "s")[0::2]
    assert names == [b"length", b"radix-tree-keys", b"radix-tree-nodes", b"last-generated-id",
                     b"max-deleted-entry-id", b"entries-added", b"recorded-first-entry-id", b"idmp-duration",
                     b"idmp-maxsize", b"pids-tracked", b"iids-tracked", b"iids-added", b"iids-duplicates",
                     b"groups", b"first-entry", b"last-entry"]
    full = x(r, "XINFO", "STREAM", "s", "FULL")[0::2]
    assert full[7:13] == names[7:13] and full[13:] == [b"entries", b"groups"]


@pytest.mark.parametrize("version", ("7.4", "valkey-8.0", "8.0", "8.2", "8.4"))
def test_before_8_6_the_old_answers(version):
    r = FakeStreamsServer(version=version).client(protocol=2)
    assert x(r, "XADD", "s", "IDMP", "p", "i", "*", "f", "v") == "-Invalid stream ID specified as stream command argument"
    assert x(r, "XADD", "s", "IDMPAUTO", "p", "*", "f", "v") == "-Invalid stream ID specified as stream command argument"
    assert x(r, "XCFGSET", "s", "IDMP-DURATION", "5") == "-unknown command 'XCFGSET', with args beginning with: 's' 'IDMP-DURATION' '5' "
    x(r, "XADD", "s", "1-1", "f", "v")
    assert b"idmp-duration" not in x(r, "XINFO", "STREAM", "s")


def test_redis_py_8_1_idmp_methods():
    r = FakeStreamsServer(version="8.6", clock=ManualClock(T0)).client()
    a = r.xadd("s", {"f": "v"}, idmpauto="producer1")
    assert r.xadd("s", {"f": "v"}, idmpauto="producer1") == a
    b = r.xadd("s", {"f": "v"}, idmp=("producer1", "req-1"))
    assert r.xadd("s", {"x": "y"}, idmp=("producer1", "req-1")) == b
    assert r.xcfgset("s", idmp_duration=60, idmp_maxsize=5) in (True, b"OK", "OK")
    info = r.xinfo_stream("s")
    assert (info["idmp-duration"], info["idmp-maxsize"], info["pids-tracked"]) == (60, 5, 0)
