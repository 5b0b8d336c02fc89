"""XREAD / XREADGROUP MAXCOUNT / MAXSIZE (Redis 8.10; addendum streams-redis8.md §2.13), on the fake's "8.10"
profile with a ManualClock. No Redis 8.10 server (and no Tcl case) exists here: the cases are redis-py 8.1's
(``test_xread_with_max_count``, ``…_max_size``, ``…_cumulative_across_streams``, the XREADGROUP ones) and the
addendum's rules; the choices where the sources are silent are in docs/redis8-choices.md ("MAXCOUNT / MAXSIZE"),
each named in the test that pins it. Reply sizes are measured with the TCP server's own RESP encoder
(:func:`fake_streams.tcp.wire.encode`), not with the budget's arithmetic.
"""

import threading

import pytest
import redis

from fake_streams import FakeStreamsServer
from fake_streams.clock import ManualClock
from fake_streams.tcp.wire import encode, shape_nil_arrays
from tests.conftest import PROTOCOLS, pool_kwargs, raw_reply

T0 = 1_700_000_000_000


@pytest.fixture(params=PROTOCOLS)  # RESP2 only on redis-py 4.x
def env(request):
    clock = ManualClock(T0)
    server = FakeStreamsServer(version="8.10", clock=clock)
    yield server, clock, server.client(**pool_kwargs(request.param)), request.param
    server.close()


def _wire(protocol, argv, reply):
    """The bytes the server writes for ``reply`` (the TCP encoder, nil shapes included)."""
    return encode(shape_nil_arrays([a.encode() if isinstance(a, str) else a for a in argv], reply), protocol)


def _entries(reply, protocol):
    """``[(key, [entry, …]), …]`` of an XREAD reply in either protocol."""
    if reply is None:
        return []
    if protocol == 3:  # a RepeatedKeyMap (a key named twice) keeps every pair
        return list(reply.pairs) if hasattr(reply, "pairs") else list(reply.items())
    return [(k, e) for k, e in reply]


def _total(reply, protocol):
    return sum(len(e) for _, e in _entries(reply, protocol))


def _fill(r, key, n, value=b"v"):
    for i in range(1, n + 1):
        raw_reply(r, "XADD", key, f"{i}-0", "f", value)


# ------------------------------------------------------------------------------------------- grammar, errors
@pytest.mark.parametrize("version", ("7.4", "8.6", "valkey-9.1"))
@pytest.mark.parametrize("option", ("MAXCOUNT", "MAXSIZE"))
def test_older_profiles_answer_syntax_error(version, option):
    server = FakeStreamsServer(version=version)
    try:
        r = server.client()
        assert raw_reply(r, "XREAD", option, "1", "STREAMS", "s", "0") == "-syntax error"
        assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c", option, "1", "STREAMS", "s", ">") == "-syntax error"
    finally:
        server.close()


@pytest.mark.parametrize("cmd", (("XREAD",), ("XREADGROUP", "GROUP", "g", "c")))
def test_argument_errors(env, cmd):
    # choice (docs/redis8-choices.md): the value is read like COUNT (string2ll: the integer error), then must be
    # positive ("MAXCOUNT must be a positive integer" / "MAXSIZE …", redis-py 8.1 refuses 0 and -1 itself);
    # MAXCOUNT below a positive COUNT is refused after the option scan, in either order of the two options
    _, _, r, _ = env
    tail = (">",) if len(cmd) > 1 else ("0",)
    bad = {
        ("MAXCOUNT", "0"): "-MAXCOUNT must be a positive integer",
        ("MAXCOUNT", "-1"): "-MAXCOUNT must be a positive integer",
        ("MAXSIZE", "0"): "-MAXSIZE must be a positive integer",
        ("MAXSIZE", "-5"): "-MAXSIZE must be a positive integer",
        ("MAXCOUNT", "abc"): "-value is not an integer or out of range",
        ("MAXSIZE", "1.5"): "-value is not an integer or out of range",
        ("MAXCOUNT", "99999999999999999999"): "-value is not an integer or out of range",
        ("COUNT", "5", "MAXCOUNT", "3"): "-MAXCOUNT must be greater than or equal to COUNT",
        ("MAXCOUNT", "3", "COUNT", "5"): "-MAXCOUNT must be greater than or equal to COUNT",
    }
    for opts, error in bad.items():
        assert raw_reply(r, *cmd, *opts, "STREAMS", "s", *tail) == error, opts
    assert raw_reply(r, *cmd, "MAXCOUNT", "STREAMS", "s", *tail) == "-value is not an integer or out of range"
    # COUNT 0 / negative is no limit: nothing to compare MAXCOUNT with; equal is fine; lower-case words
    assert raw_reply(r, "XREAD", "COUNT", "0", "MAXCOUNT", "1", "STREAMS", "s", "0") is None
    assert raw_reply(r, "XREAD", "count", "2", "maxcount", "2", "maxsize", "10", "STREAMS", "s", "0") is None
    # XREADGROUP: the option errors come before the key is looked at (NOGROUP here otherwise)
    assert raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">").startswith("-NOGROUP")


# ------------------------------------------------------------------------------------------- MAXCOUNT
def test_maxcount_caps_the_total_redis_py_cases(env):
    _, _, r, protocol = env
    _fill(r, "stream", 5)
    assert _total(raw_reply(r, "XREAD", "MAXCOUNT", "2", "STREAMS", "stream", "0"), protocol) == 2
    _fill(r, "s1", 3)
    _fill(r, "s2", 3)
    reply = raw_reply(r, "XREAD", "COUNT", "3", "MAXCOUNT", "4", "STREAMS", "s1", "s2", "0", "0")
    assert [(k, len(e)) for k, e in _entries(reply, protocol)] == [(b"s1", 3), (b"s2", 1)]
    # the cap repeated: the last one counts
    assert _total(raw_reply(r, "XREAD", "MAXCOUNT", "1", "MAXCOUNT", "5", "STREAMS", "stream", "0"), protocol) == 5


def test_streams_after_the_spent_budget_are_left_out(env):
    # choice: a stream that gets nothing because the budget is spent is not in the reply (not `[key, []]`)
    _, _, r, protocol = env
    _fill(r, "s1", 2)
    _fill(r, "s2", 2)
    reply = raw_reply(r, "XREAD", "MAXCOUNT", "2", "STREAMS", "s1", "s2", "0", "0")
    assert [k for k, _ in _entries(reply, protocol)] == [b"s1"]


def test_xreadgroup_maxcount_delivers_only_what_is_sent(env):
    _, _, r, protocol = env
    _fill(r, "s", 5)
    raw_reply(r, "XGROUP", "CREATE", "s", "g", "0")
    reply = raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "2", "STREAMS", "s", ">")
    assert _total(reply, protocol) == 2
    assert raw_reply(r, "XPENDING", "s", "g")[0] == 2
    info = raw_reply(r, "XINFO", "GROUPS", "s")[0]
    fields = dict(zip(info[::2], info[1::2])) if protocol == 2 else info
    assert fields[b"last-delivered-id"] == b"2-0" and fields[b"entries-read"] == 2 and fields[b"lag"] == 3
    # the next read goes on from there
    reply = raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "MAXCOUNT", "2", "STREAMS", "s", ">")
    assert [e[0] for _, es in _entries(reply, protocol) for e in es] == [b"3-0", b"4-0"]


def test_xreadgroup_cumulative_across_streams_and_consumers_created_everywhere(env):
    # redis-py's cumulative case; choice: the consumer is created in every named stream's group (as without the
    # caps, eager_consumer_creation), also where the spent budget serves nothing
    _, _, r, protocol = env
    for key in ("s1", "s2", "s3"):
        _fill(r, key, 3)
        raw_reply(r, "XGROUP", "CREATE", key, "g", "0")
    reply = raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "MAXCOUNT", "4", "STREAMS", "s1", "s2", "s3",
                 ">", ">", ">")
    assert [(k, len(e)) for k, e in _entries(reply, protocol)] == [(b"s1", 3), (b"s2", 1)]
    assert [raw_reply(r, "XPENDING", k, "g")[0] for k in ("s1", "s2", "s3")] == [3, 1, 0]
    assert len(raw_reply(r, "XINFO", "CONSUMERS", "s3", "g")) == 1


def test_history_read_counts_only_the_entries_sent(env):
    clock_env = env
    _, clock, r, protocol = clock_env
    _fill(r, "s", 4)
    raw_reply(r, "XGROUP", "CREATE", "s", "g", "0")
    raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    reply = raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "3", "STREAMS", "s", "0")
    assert [e[0] for _, es in _entries(reply, protocol) for e in es] == [b"1-0", b"2-0", b"3-0"]
    counts = [row[3] for row in raw_reply(r, "XPENDING", "s", "g", "-", "+", "10")]
    assert counts == [2, 2, 2, 1]  # 4-0 was not sent: not redelivered
    # a history read with nothing pending after the ID still answers the stream with no entries
    reply = raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "3", "STREAMS", "s", "9-0")
    assert _entries(reply, protocol) == [(b"s", [])]


def test_claim_counts_towards_maxcount(env):
    # choice: CLAIM's idle entries come first and count towards MAXCOUNT as towards COUNT
    _, clock, r, protocol = env
    _fill(r, "s", 3)
    raw_reply(r, "XGROUP", "CREATE", "s", "g", "0")
    raw_reply(r, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "s", ">")  # 1-0, 2-0 pending with c1
    clock.advance(100)
    reply = raw_reply(r, "XREADGROUP", "GROUP", "g", "c2", "CLAIM", "50", "MAXCOUNT", "1", "STREAMS", "s", ">")
    assert [e[:1] + e[2:] for _, es in _entries(reply, protocol) for e in es] == [[b"1-0", 100, 1]]
    owners = [row[1] for row in raw_reply(r, "XPENDING", "s", "g", "-", "+", "10")]
    assert owners == [b"c2", b"c1"]  # 2-0 was not claimed
    reply = raw_reply(r, "XREADGROUP", "GROUP", "g", "c2", "CLAIM", "50", "MAXCOUNT", "2", "STREAMS", "s", ">")
    assert [(e[0], e[2], e[3]) for _, es in _entries(reply, protocol) for e in es] == [(b"2-0", 100, 1), (b"3-0", 0, 0)]


# ------------------------------------------------------------------------------------------- MAXSIZE
def test_maxsize_redis_py_cases(env):
    _, _, r, protocol = env
    raw_reply(r, "XADD", "stream", "1-0", "f", "v")
    assert _total(raw_reply(r, "XREAD", "MAXSIZE", "65536", "STREAMS", "stream", "0"), protocol) == 1
    # a soft cap: the first entry is always sent
    assert _total(raw_reply(r, "XREAD", "MAXSIZE", "1", "STREAMS", "stream", "0"), protocol) == 1


@pytest.mark.parametrize("cmd", (("XREAD",), ("XREADGROUP", "GROUP", "g", "c")))
def test_maxsize_is_the_reply_in_bytes_headers_included(env, cmd):
    # the rule (addendum §2.13): the reply with the next entry must fit MAXSIZE, protocol overhead included;
    # checked here against the bytes the TCP encoder writes for the reply without the cap, cut after k entries
    server, _, r, protocol = env
    for key in ("s1", "s2"):
        for i in range(1, 6):
            raw_reply(r, "XADD", key, f"{i}-0", "field", "x" * (i * 7))
    tail = (">", ">") if len(cmd) > 1 else ("0", "0")
    for k in range(1, 11):
        if len(cmd) > 1:
            for key in ("s1", "s2"):
                raw_reply(r, "XGROUP", "DESTROY", key, "g")
                raw_reply(r, "XGROUP", "CREATE", key, "g", "0")
        argv = (*cmd, "MAXCOUNT", str(k), "STREAMS", "s1", "s2", *tail)
        capped = raw_reply(r, *argv)
        exact = len(_wire(protocol, argv, capped))
        for size, expected in ((exact, k), (exact - 1, max(1, k - 1)), (exact + 10_000, k)):
            if len(cmd) > 1:
                for key in ("s1", "s2"):
                    raw_reply(r, "XGROUP", "DESTROY", key, "g")
                    raw_reply(r, "XGROUP", "CREATE", key, "g", "0")
            got = raw_reply(r, *cmd, "MAXCOUNT", str(k), "MAXSIZE", str(size), "STREAMS", "s1", "s2", *tail)
            assert _total(got, protocol) == expected, (k, size)
            assert len(_wire(protocol, argv, got)) <= size or expected == 1
            if len(cmd) > 1:  # what did not fit is not pending
                pending = sum(raw_reply(r, "XPENDING", key, "g")[0] for key in ("s1", "s2"))
                assert pending == expected


def test_maxsize_stops_at_the_first_entry_that_does_not_fit(env):
    # choice: "whichever cap is reached first wins" and nothing after a refused entry is taken, even a smaller one
    _, _, r, protocol = env
    raw_reply(r, "XADD", "s", "1-0", "f", "a")
    raw_reply(r, "XADD", "s", "2-0", "f", "b" * 200)
    raw_reply(r, "XADD", "t", "1-0", "f", "c")
    reply = raw_reply(r, "XREAD", "MAXSIZE", "100", "STREAMS", "s", "t", "0", "0")
    assert _entries(reply, protocol) == [(b"s", [[b"1-0", [b"f", b"a"]]])]


def test_history_deleted_entry_counts_as_its_nil(env):
    _, _, r, protocol = env
    _fill(r, "s", 3)
    raw_reply(r, "XGROUP", "CREATE", "s", "g", "0")
    raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    raw_reply(r, "XDEL", "s", "1-0")
    argv = ("XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "2", "STREAMS", "s", "0")
    got = raw_reply(r, *argv)
    size = len(_wire(protocol, argv, got))
    assert _entries(got, protocol)[0][1][0] == [b"1-0", None]
    got = raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "MAXSIZE", str(size), "STREAMS", "s", "0")
    assert _total(got, protocol) == 2
    got = raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "MAXSIZE", str(size - 1), "STREAMS", "s", "0")
    assert _total(got, protocol) == 1


# ------------------------------------------------------------------------------------------- MULTI, Lua, BLOCK
def test_in_multi_and_from_scripts(env):
    _, _, r, protocol = env
    _fill(r, "s", 3)
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("XREAD", "MAXCOUNT", "2", "STREAMS", "s", "0")
    pipe.execute_command("XREAD", "MAXCOUNT", "0", "STREAMS", "s", "0")
    done = pipe.execute(raise_on_error=False)
    assert len(done[0][0][1] if protocol == 2 else done[0][b"s"][0]) == 2  # redis-py's parsed shapes
    assert isinstance(done[1], redis.ResponseError) and str(done[1]) == "MAXCOUNT must be a positive integer"
    got = r.eval("return redis.call('XREAD', 'MAXCOUNT', 1, 'MAXSIZE', 1, 'STREAMS', KEYS[1], '0')", 1, "s")
    assert got == [[b"s", [[b"1-0", [b"f", b"v"]]]]]


def _blocked(server, n=1):
    return len(server.blocked()) == n


def test_a_blocked_reader_is_served_within_the_caps(env):
    server, clock, r, protocol = env
    raw_reply(r, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    out = {}
    client = server.client(**pool_kwargs(protocol))
    thread = threading.Thread(target=lambda: out.setdefault("reply", raw_reply(
        client, "XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "2", "BLOCK", "0", "STREAMS", "s", ">")), daemon=True)
    thread.start()
    for _ in range(500):
        if _blocked(server) or "reply" in out:
            break
        threading.Event().wait(0.01)  # real-time: wait for the reader thread to block (bounded, 5 s)
    assert _blocked(server)
    pipe = r.pipeline(transaction=True)
    for i in range(1, 4):
        pipe.execute_command("XADD", "s", f"{i}-0", "f", "v")
    pipe.execute()
    thread.join(5)  # real-time: the woken reader's thread finishes
    assert [e[0] for _, es in _entries(out["reply"], protocol) for e in es] == [b"1-0", b"2-0"]
    assert raw_reply(r, "XPENDING", "s", "g")[0] == 2


def test_keyspace_events_are_those_of_the_read_without_caps():
    # XREADGROUP sends `xgroup-createconsumer` for each consumer it creates: with MAXCOUNT spent on the first
    # stream the second stream's consumer is still created (choice above), so its event is still sent
    server = FakeStreamsServer(version="8.10")
    try:
        r = server.client()
        r.config_set("notify-keyspace-events", "KEA")
        for key in ("s1", "s2"):
            _fill(r, key, 2)
            raw_reply(r, "XGROUP", "CREATE", key, "g", "0")
        p = r.pubsub()
        p.psubscribe("__keyevent@0__:*")
        assert p.get_message(timeout=1)["type"] == "psubscribe"
        raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "1", "STREAMS", "s1", "s2", ">", ">")
        got = []
        while (message := p.get_message(timeout=0.2)) is not None:  # real-time: drain the events (bounded)
            got.append((message["channel"], message["data"]))
        assert got == [(b"__keyevent@0__:xgroup-createconsumer", b"s1"), (b"__keyevent@0__:xgroup-createconsumer", b"s2")]
        p.close()
    finally:
        server.close()


def test_a_key_named_twice_shares_the_budget(env):
    # a key named twice is served twice (spec §2.6); the budget runs across both occurrences, RESP3's map repeats
    # the key, and MAXSIZE counts both headers
    _, _, r, protocol = env
    _fill(r, "s", 2)
    argv = ("XREAD", "MAXCOUNT", "3", "STREAMS", "s", "s", "0", "0")
    reply = raw_reply(r, *argv)
    assert [(k, len(e)) for k, e in _entries(reply, protocol)] == [(b"s", 2), (b"s", 1)]
    size = len(_wire(protocol, argv, reply))
    for cap, total in ((size, 3), (size - 1, 2)):
        got = raw_reply(r, "XREAD", "MAXCOUNT", "3", "MAXSIZE", str(cap), "STREAMS", "s", "s", "0", "0")
        assert _total(got, protocol) == total
