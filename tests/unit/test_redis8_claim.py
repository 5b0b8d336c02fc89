"""XREADGROUP … CLAIM (Redis 8.4; addendum streams-redis8.md §2.5), ported from the cases of Redis's
stream-cgroups.tcl ("XREADGROUP CLAIM …") that the addendum records, on the fake's 8.4 and 8.6 profiles with a
ManualClock. No Redis 8.4 server is available here, so these are spec tests; the choices where the sources are
silent are in docs/redis8-choices.md ("XREADGROUP CLAIM").
"""

import threading

import pytest

from fake_streams import FakeStreamsServer
from fake_streams.clock import ManualClock
from tests.conftest import get_connection, pool_kwargs, raw_reply
from tests.support.redis_compat import NO_RESP3

T0 = 1_700_000_000_000
CLAIM_PROFILES = ("8.4", "8.6", "8.10")


@pytest.fixture(params=CLAIM_PROFILES)
def env(request):
    clock = ManualClock(T0)
    server = FakeStreamsServer(version=request.param, clock=clock)
    yield server, clock, server.client(**pool_kwargs(2))
    server.close()


def _three_pending(r, clock, reader="c1"):
    for i in range(1, 4):
        raw_reply(r, "XADD", "s", f"{i}-0", "f", f"v{i}")
    raw_reply(r, "XGROUP", "CREATE", "s", "g", "0")
    raw_reply(r, "XREADGROUP", "GROUP", "g", reader, "STREAMS", "s", ">")


def test_claim_errors_and_positions(env):
    _, _, r = env
    raw_reply(r, "XADD", "s", "1-0", "f", "v")
    raw_reply(r, "XGROUP", "CREATE", "s", "g", "0")
    for bad in ("test", "5.5", "5,5", "10e", "+10", "*10", "10/2", "10*2", "10€", "-0", "-5.5", "(-10)*2",
                "COUNT", "STREAMS", "GROUP"):
        assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "CLAIM", bad, "STREAMS", "s", ">") == \
            "-min-idle-time is not an integer", bad
    for bad in ("-10", "-42"):
        assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "CLAIM", bad, "STREAMS", "s", ">") == \
            "-min-idle-time must be a positive integer"
    assert raw_reply(r, "XREAD", "COUNT", "2", "CLAIM", "10", "STREAMS", "s", "0-0") == \
        "-The CLAIM option is only supported by XREADGROUP. You called XREAD instead."
    assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "CLAIM", "50", ">").startswith("-NOGROUP No such key 'CLAIM'")
    assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "CLAIM", ">").startswith("-Unbalanced")
    assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">", "CLAIM", "50") == \
        "-Invalid stream ID specified as stream command argument"
    assert raw_reply(r, "XREADGROUP", "GROUP", "g", "CLAIM", "50", "c", "STREAMS", "s", ">") == "-syntax error"
    # anywhere before STREAMS, also before GROUP; 0 and int64 max are valid; the last CLAIM counts
    got = raw_reply(r, "XREADGROUP", "CLAIM", "50", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    assert got == [[b"s", [[b"1-0", [b"f", b"v"], 0, 0]]]]
    assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "CLAIM", "9223372036854775807", "STREAMS", "s", ">") is None
    assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "CLAIM", "9223372036854775807", "CLAIM", "0", "STREAMS", "s", ">") == \
        [[b"s", [[b"1-0", [b"f", b"v"], 0, 1]]]]


@pytest.mark.parametrize("version", ("7.0", "7.4", "valkey-8.0", "8.0", "8.2"))
def test_before_8_4_claim_is_a_syntax_error(version):
    r = FakeStreamsServer(version=version).client()
    raw_reply(r, "XADD", "s", "1-0", "f", "v")
    raw_reply(r, "XGROUP", "CREATE", "s", "g", "0")
    assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "CLAIM", "10", "STREAMS", "s", ">") == "-syntax error"
    assert raw_reply(r, "XREAD", "CLAIM", "10", "STREAMS", "s", "0") == "-syntax error"


def test_claimed_then_new_with_four_fields_and_counts(env):
    _, clock, r = env
    _three_pending(r, clock)
    raw_reply(r, "XADD", "s", "4-0", "f", "v4")
    clock.advance(100)
    got = raw_reply(r, "XREADGROUP", "GROUP", "g", "c2", "CLAIM", "50", "STREAMS", "s", ">")
    assert got == [[b"s", [[b"1-0", [b"f", b"v1"], 100, 1], [b"2-0", [b"f", b"v2"], 100, 1],
                           [b"3-0", [b"f", b"v3"], 100, 1], [b"4-0", [b"f", b"v4"], 0, 0]]]]
    pending = raw_reply(r, "XPENDING", "s", "g", "-", "+", "10")
    assert pending == [[f"{i}-0".encode(), b"c2", 0, 2 if i < 4 else 1] for i in range(1, 5)]
    consumers = {c[1]: c[3] for c in raw_reply(r, "XINFO", "CONSUMERS", "s", "g")}
    assert consumers == {b"c1": 0, b"c2": 4}


def test_claim_order_longest_idle_first_and_count_bounds_the_total(env):
    _, clock, r = env
    for i in range(1, 4):
        raw_reply(r, "XADD", "s", f"{i}-0", "f", "v")
    raw_reply(r, "XGROUP", "CREATE", "s", "g", "0")
    raw_reply(r, "XREADGROUP", "GROUP", "g", "a", "COUNT", "1", "STREAMS", "s", ">")  # 1-0 at T0
    clock.advance(10)
    raw_reply(r, "XREADGROUP", "GROUP", "g", "b", "COUNT", "2", "STREAMS", "s", ">")  # 2-0, 3-0 at T0+10
    clock.advance(10)
    raw_reply(r, "XCLAIM", "s", "g", "b", "0", "1-0")  # 1-0 re-delivered at T0+20: now the youngest
    clock.advance(100)
    for i in range(4, 8):
        raw_reply(r, "XADD", "s", f"{i}-0", "f", "v")
    got = raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "COUNT", "4", "CLAIM", "50", "STREAMS", "s", ">")
    assert [(e[0], e[2], e[3]) for e in got[0][1]] == [(b"2-0", 110, 1), (b"3-0", 110, 1), (b"1-0", 100, 2),
                                                        (b"4-0", 0, 0)]
    # equal idle times (all claimed at once): ID order (choice, docs/redis8-choices.md)
    got = raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "CLAIM", "0", "STREAMS", "s", ">")
    assert [e[0] for e in got[0][1]] == [b"1-0", b"2-0"]


def test_claim_with_nothing_idle_enough_only_delivers_new_entries_or_nil(env):
    _, clock, r = env
    _three_pending(r, clock)
    clock.advance(10)
    assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c2", "CLAIM", "50", "STREAMS", "s", ">") is None
    raw_reply(r, "XADD", "s", "4-0", "f", "v")
    assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c2", "CLAIM", "50", "STREAMS", "s", ">") == \
        [[b"s", [[b"4-0", [b"f", b"v"], 0, 0]]]]


def test_claim_skips_deleted_and_delconsumer_entries(env):
    _, clock, r = env
    _three_pending(r, clock)
    raw_reply(r, "XDEL", "s", "2-0")
    clock.advance(100)
    got = raw_reply(r, "XREADGROUP", "GROUP", "g", "c2", "CLAIM", "50", "STREAMS", "s", ">")
    assert [e[0] for e in got[0][1]] == [b"1-0", b"3-0"]
    assert raw_reply(r, "XPENDING", "s", "g")[0] == 3  # the deleted entry's PEL entry stays (choice)
    raw_reply(r, "XGROUP", "DELCONSUMER", "s", "g", "c2")
    clock.advance(100)
    raw_reply(r, "XTRIM", "s", "MAXLEN", "0")
    assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c3", "CLAIM", "0", "STREAMS", "s", ">") is None


def test_claim_with_noack_keeps_claimed_pending_and_new_unacked(env):
    _, clock, r = env
    _three_pending(r, clock)
    raw_reply(r, "XADD", "s", "4-0", "f", "v")
    clock.advance(60)
    got = raw_reply(r, "XREADGROUP", "GROUP", "g", "c2", "CLAIM", "50", "NOACK", "STREAMS", "s", ">")
    assert len(got[0][1]) == 4
    assert [p[0] for p in raw_reply(r, "XPENDING", "s", "g", "-", "+", "10")] == [b"1-0", b"2-0", b"3-0"]


def test_claim_with_a_specific_id_is_ignored(env):
    _, clock, r = env
    _three_pending(r, clock)
    clock.advance(100)
    got = raw_reply(r, "XREADGROUP", "GROUP", "g", "c1", "CLAIM", "50", "STREAMS", "s", "0")
    assert got == [[b"s", [[b"1-0", [b"f", b"v1"]], [b"2-0", [b"f", b"v2"]], [b"3-0", [b"f", b"v3"]]]]]


def test_setid_back_to_zero_returns_claimed_then_the_same_ids_as_new(env):
    _, clock, r = env
    for i in range(1, 3):
        raw_reply(r, "XADD", "s", f"{i}-0", "f", "v")
    raw_reply(r, "XGROUP", "CREATE", "s", "g", "0")
    raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")  # delivery count 2
    raw_reply(r, "XGROUP", "SETID", "s", "g", "0")
    clock.advance(100)
    got = raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "CLAIM", "50", "STREAMS", "s", ">")
    assert [(e[0], e[3]) for e in got[0][1]] == [(b"1-0", 2), (b"2-0", 2), (b"1-0", 0), (b"2-0", 0)]
    clock.advance(100)
    got = raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "CLAIM", "50", "STREAMS", "s", ">")
    assert [(e[0], e[3]) for e in got[0][1]] == [(b"1-0", 1), (b"2-0", 1)]


@pytest.mark.skipif(bool(NO_RESP3), reason=NO_RESP3)
def test_claim_creates_the_consumer_and_resp3_uses_integers(env):
    server, clock, _ = env
    r3 = server.client(protocol=3)
    _three_pending(r3, clock)
    clock.advance(70)
    got = raw_reply(r3, "XREADGROUP", "GROUP", "g", "newc", "COUNT", "1", "CLAIM", "50", "STREAMS", "s", ">")
    assert got == {b"s": [[b"1-0", [b"f", b"v1"], 70, 1]]}
    assert [c[b"name"] for c in raw_reply(r3, "XINFO", "CONSUMERS", "s", "g")] == [b"c1", b"newc"]
    assert raw_reply(r3, "XREADGROUP", "GROUP", "nog", "c", "CLAIM", "1", "STREAMS", "s", ">").startswith("-NOGROUP")


def test_claim_in_multi_and_lua(env):
    _, clock, r = env
    _three_pending(r, clock)
    clock.advance(100)
    conn = get_connection(r)
    try:
        for argv in (("MULTI",), ("XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "BLOCK", "0", "CLAIM", "50",
                                  "STREAMS", "s", ">"), ("EXEC",)):
            conn.send_command(*argv)
            reply = conn.read_response(disable_decoding=True)
        assert reply == [[[b"s", [[b"1-0", [b"f", b"v1"], 100, 1]]]]]  # BLOCK inside MULTI never blocks
    finally:
        r.connection_pool.release(conn)
    got = r.eval("return redis.call('XREADGROUP', 'GROUP', 'g', 'c3', 'COUNT', 1, 'CLAIM', 50, 'BLOCK', 0, "
                 "'STREAMS', KEYS[1], '>')", 1, "s")
    assert got == [[b"s", [[b"2-0", [b"f", b"v2"], 100, 1]]]]


def _blocked(server, n=1):
    return len(server.blocked()) == n


def _start(server, *argv):
    out = {}
    client = server.client(**pool_kwargs(2))

    def run():
        out["reply"] = raw_reply(client, *argv)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    for _ in range(500):
        if _blocked(server) or "reply" in out:
            break
        threading.Event().wait(0.01)  # real-time: wait for the reader thread to block (bounded, 5 s)
    return thread, out


def test_blocking_claim_wakes_when_a_pending_entry_reaches_min_idle(env):
    server, clock, r = env
    _three_pending(r, clock)
    thread, out = _start(server, "XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "BLOCK", "5000", "CLAIM", "1000",
                         "STREAMS", "s", ">")
    assert _blocked(server) and "reply" not in out
    clock.advance(999)
    assert _blocked(server)
    clock.advance(1)
    thread.join(5)  # real-time: the woken reader's thread finishes
    assert out["reply"] == [[b"s", [[b"1-0", [b"f", b"v1"], 1000, 1]]]]


def test_blocking_claim_wakes_on_a_new_entry_and_times_out_with_nil(env):
    server, clock, r = env
    _three_pending(r, clock)
    thread, out = _start(server, "XREADGROUP", "GROUP", "g", "c2", "BLOCK", "5000", "CLAIM", "1000",
                         "STREAMS", "s", ">")
    clock.advance(10)
    raw_reply(r, "XADD", "s", "4-0", "f", "v4")
    thread.join(5)  # real-time: the woken reader's thread finishes
    assert out["reply"] == [[b"s", [[b"4-0", [b"f", b"v4"], 0, 0]]]]
    thread, out = _start(server, "XREADGROUP", "GROUP", "g", "c2", "BLOCK", "100", "CLAIM", "500", "STREAMS", "s", ">")
    clock.advance(100)
    thread.join(5)  # real-time: the timed-out reader's thread finishes
    assert out["reply"] is None
    assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c2", "BLOCK", "100", "CLAIM", "0", "COUNT", "1", "STREAMS", "s", ">")[0][1][0][0] == b"1-0"


def test_two_blocked_claim_readers_each_get_an_entry(env):
    server, clock, r = env
    raw_reply(r, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    t1, o1 = _start(server, "XREADGROUP", "GROUP", "g", "a", "COUNT", "1", "BLOCK", "0", "CLAIM", "0", "STREAMS", "s", ">")
    c2 = server.client(**pool_kwargs(2))
    o2 = {}
    t2 = threading.Thread(target=lambda: o2.setdefault("reply", raw_reply(c2, "XREADGROUP", "GROUP", "g", "b", "COUNT", "1",
                                                                      "BLOCK", "0", "CLAIM", "0", "STREAMS", "s", ">")),
                          daemon=True)
    t2.start()
    for _ in range(500):
        if _blocked(server, 2):
            break
        threading.Event().wait(0.01)  # real-time: wait for the second reader to block (bounded, 5 s)
    raw_reply(r, "XADD", "s", "1-0", "f", "v")
    t1.join(5)  # real-time: the woken readers' threads finish
    t2.join(5)  # real-time: as above
    # the first reader gets the new entry; the second is re-run, and CLAIM 0 claims it at once
    assert o1["reply"] == [[b"s", [[b"1-0", [b"f", b"v"], 0, 0]]]]
    assert o2["reply"] == [[b"s", [[b"1-0", [b"f", b"v"], 0, 1]]]]
