"""The direct path (fake_streams/_fakeredis/fastpath.py) answers exactly as the dispatch path.

Every scenario runs the same command sequence on two servers with the same ManualClock start, one
with the direct path and one with ``server.fast_path = False``, and compares replies and errors
(class and text), under RESP2/RESP3, decode_responses, the hiredis and the pure-Python parsers.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
import redis

pytest.importorskip("redis._parsers", reason="redis-py 4.x: no RESP3 and other parser classes; the direct path "
                    "still serves every other test there")

from redis._parsers import _RESP2Parser, _RESP3Parser  # noqa: E402
from redis.utils import HIREDIS_AVAILABLE  # noqa: E402

from fake_streams import FakeStreamsServer  # noqa: E402
from fake_streams._fakeredis import fastpath  # noqa: E402
from fake_streams.clock import ManualClock  # noqa: E402
from fake_streams.commands import COMMANDS  # noqa: E402
from fake_streams.commands.base import spec  # noqa: E402
from fake_streams.stream import Stream  # noqa: E402

PARSERS = [(2, _RESP2Parser), (3, _RESP2Parser), (3, _RESP3Parser)]
if HIREDIS_AVAILABLE:
    from redis._parsers import _HiredisParser

    PARSERS += [(2, _HiredisParser), (3, _HiredisParser)]


@pytest.fixture
def direct_calls(monkeypatch):
    """Counts commands the direct path ran: each goes through fastpath._answer, a fastpath._xadd_run (pipeline
    batches from fastpath._run) or fastpath._xadd_one (an XADD sent alone, from fastpath.execute)."""
    if not fastpath.ENABLED:
        pytest.skip("the direct path is switched off (FAKE_STREAMS_FAST_PATH=0): both servers would dispatch")
    calls = []
    answer, xadd_run, xadd_one = fastpath._answer, fastpath._xadd_run, fastpath._xadd_one

    def counting_answer(sock, session, prepared, fast, *context):
        calls.append(bytes(prepared[2][0]))
        return answer(sock, session, prepared, fast, *context)

    def counting_xadd_run(sock, session, batch, i, n, fast, table):
        end = xadd_run(sock, session, batch, i, n, fast, table)
        calls.extend(bytes(table[name][2]) for name, _, _ in batch[i:end])
        return end

    def counting_xadd_one(sock, session, spec, args):
        taken = xadd_one(sock, session, spec, args)
        if taken:
            calls.append(b"XADD")
        return taken

    monkeypatch.setattr(fastpath, "_answer", counting_answer)
    monkeypatch.setattr(fastpath, "_xadd_run", counting_xadd_run)
    monkeypatch.setattr(fastpath, "_xadd_one", counting_xadd_one)
    return calls


def _server(fast, **kwargs):
    """A server on a ManualClock at 1,000,000 ms, with the direct path (``fast``) or without it."""
    server = FakeStreamsServer(clock=ManualClock(1_000_000), **kwargs)
    server.fast_path = fast
    return server


def _pair(commands=None, **kwargs):
    servers = [_server(fast, commands=commands) for fast in (True, False)]
    clients = [s.client(**kwargs) for s in servers]
    return servers, clients


def _outcome(fn, client):
    try:
        return ("ok", fn(client))
    except Exception as exc:  # compared by class and text
        return ("error", type(exc), str(exc))


def _norm(value):
    """Exceptions inside replies (pipelines) compared by class and text."""
    if isinstance(value, (list, tuple)):
        return [_norm(item) for item in value]
    if isinstance(value, Exception):
        return (type(value), str(value))
    return value


def _run_both(steps, **kwargs):
    servers, clients = _pair(**kwargs)
    try:
        out = [[_outcome(step, c) for step in steps] for c in clients]
    finally:
        for s in servers:
            s.close()
    return out


STEPS = [
    lambda r: r.xadd("s", {"f": "v", "n": 1, "x": 1.5}, id="1-1"),
    lambda r: r.xadd("s", {"f": "é"}),
    lambda r: r.xadd("s", {"f": "v"}, id="0-1"),  # error: ID too small
    lambda r: r.xadd("s", {"f": "v"}, id="bad"),  # error: invalid ID
    lambda r: r.xadd("m", {"a": "b"}, maxlen=2, approximate=False),
    lambda r: r.xadd("m", {"a": "c"}, maxlen=2, approximate=False),
    lambda r: r.xadd("m", {"a": "d"}, maxlen=2, approximate=False),
    lambda r: r.xlen("m"),
    lambda r: r.xrange("s"),
    lambda r: r.xrange("s", "-", "+", count=1),
    lambda r: r.xrevrange("s", count=10),
    lambda r: r.xread({"s": "0-0"}, count=1),
    lambda r: r.xread({"s": "0", "m": "0"}),
    lambda r: r.xgroup_create("s", "g", "0"),
    lambda r: r.xgroup_create("s", "g", "0"),  # error: BUSYGROUP
    lambda r: r.xreadgroup("g", "c1", {"s": ">"}, count=1),
    lambda r: r.xreadgroup("g", "c2", {"s": ">"}),
    lambda r: r.xreadgroup("nog", "c2", {"s": ">"}),  # error: NOGROUP
    lambda r: r.xpending("s", "g"),
    lambda r: r.xpending_range("s", "g", "-", "+", 10),
    lambda r: r.xpending_range("s", "g", "-", "+", 10, consumername="c1", idle=0),
    lambda r: r.xclaim("s", "g", "c3", 0, ["1-1"]),
    lambda r: r.xautoclaim("s", "g", "c4", 0, "0-0", count=10),
    lambda r: r.xautoclaim("s", "g", "c4", 0, "0-0", count=10, justid=True),
    lambda r: r.xack("s", "g", "1-1", "9-9"),
    lambda r: r.xinfo_stream("s"),
    lambda r: r.xinfo_stream("s", full=True),
    lambda r: r.xinfo_groups("s"),
    lambda r: r.xinfo_consumers("s", "g"),
    lambda r: r.xgroup_createconsumer("s", "g", "c9"),
    lambda r: r.xgroup_delconsumer("s", "g", "c9"),
    lambda r: r.xgroup_setid("s", "g", "0"),
    lambda r: r.xdel("s", "1-1", "5-5"),
    lambda r: r.xtrim("s", maxlen=0),
    lambda r: r.xsetid("s", "99-0"),
    lambda r: r.set("str", "x"),
    lambda r: r.xadd("str", {"f": "v"}),  # WRONGTYPE
    lambda r: r.xlen("str"),
    lambda r: r.execute_command("XLEN"),  # wrong arity (dispatch path answers)
    lambda r: r.execute_command("xlen", b"s", "extra"),
    lambda r: r.execute_command("XINFO", "NOPE", "s"),  # unknown subcommand
    lambda r: r.execute_command("XINFO HELP"),
    lambda r: r.execute_command("XGROUP HELP"),
    lambda r: r.execute_command("XaDd", "s", "*", "f", "v"),  # mixed case: dispatch path
    lambda r: r.execute_command("XADD", "s", "*", "f", True),  # DataError from the packer
    lambda r: r.execute_command("XADD", "s", "*", "f", None),
    lambda r: r.execute_command("XADD", "s", "*", "f", memoryview(b"mv")),
    lambda r: r.execute_command("XADD", "s", "*", "f", 2**70, "g", -0.0),
    lambda r: r.execute_command(b"XRANGE", "s", "-", "+"),
    lambda r: r.xread({"s": "$"}),
    lambda r: r.type("s"),
    lambda r: r.exists("s", "m"),
]


@pytest.mark.parametrize("decode", [False, True])
@pytest.mark.parametrize("protocol, parser", PARSERS, ids=lambda p: getattr(p, "__name__", str(p)))
def test_same_replies_and_errors(direct_calls, protocol, parser, decode):
    fast, slow = _run_both(STEPS, protocol=protocol, parser_class=parser, decode_responses=decode)
    assert fast == slow
    assert any(kind == "error" for kind, *_ in fast)
    assert len(direct_calls) > 30  # the direct path really ran (only the first server has it)


@pytest.mark.parametrize("protocol", [2, 3])
def test_pipeline_mixed_with_other_commands_and_errors(direct_calls, protocol):
    def run(r):
        p = r.pipeline(transaction=False)
        p.xadd("s", {"a": 1}, id="1-0").set("k", "v").xlen("s").get("k").xadd("s", {"a": 1}, id="0-1")
        p.xadd("s", {"b": 2}).incr("k").xrange("s").xadd("s", {"c": 3}, id="9-0").xlen("s")
        return p.execute(raise_on_error=False)

    def raising(r):
        return r.pipeline(transaction=False).xadd("s", {"z": 1}).xadd("s", {"z": 1}, id="0-1").execute()

    def data_error(r):  # nothing is sent when one command cannot be packed
        r.pipeline(transaction=False).xadd("s", {"q": 1}).set("k", True).execute()

    (f1, f2, f3, f4), (s1, s2, s3, s4) = _run_both([run, raising, data_error, lambda r: r.xlen("s")],
                                                     protocol=protocol)
    assert _norm(f1) == _norm(s1)
    assert (f2, f3, f4) == (s2, s3, s4)
    assert f4 == ("ok", 3)  # the DataError pipeline sent nothing
    assert direct_calls


@pytest.mark.parametrize("protocol", [2, 3])
def test_multi_exec_unchanged(direct_calls, protocol):
    def tx(r):
        p = r.pipeline(transaction=True)
        p.xadd("s", {"a": 1}, id="1-0").xlen("s").xadd("s", {"a": 1}, id="0-1").xrange("s")
        return [repr(x) for x in p.execute(raise_on_error=False)]

    def short(r):  # wrong arity at queue time: EXECABORT
        p = r.pipeline(transaction=True)
        p.execute_command("XADD", "s").xlen("s")
        return p.execute()

    fast, slow = _run_both([tx, short, lambda r: r.xlen("s")], protocol=protocol)
    assert fast == slow
    assert direct_calls == [b"XLEN"]  # only the last, outside the transaction


def test_watch_dirtied_by_direct_xadd_from_another_client(direct_calls):
    server = FakeStreamsServer()
    r, other = server.client(), server.client()
    with r.pipeline() as p:
        p.watch("s")
        p.multi()
        p.xlen("s")
        other.xadd("s", {"f": "v"})
        with pytest.raises(redis.WatchError):
            p.execute()
    assert direct_calls == [b"XADD"]
    server.close()


def test_blocked_reader_woken_by_direct_xadd(direct_calls):
    server = FakeStreamsServer()
    reader, writer = server.client(), server.client()
    got = []
    t = threading.Thread(target=lambda: got.append(reader.xread({"s": "$"}, block=5000)))
    t.start()
    server.wait_until_blocked(1)
    sid = writer.xadd("s", {"f": "v"})
    t.join(5)  # real-time: the reader thread ends as soon as it is served
    assert got == [[[b"s", [(sid, {b"f": b"v"})]]]]
    assert direct_calls == [b"XREAD", b"XADD"]  # the blocking XREAD itself parked through the direct path
    server.close()


def test_kept_socket_context_answers_as_a_fresh_one(direct_calls):
    # the direct path keeps one handler context per socket (server.context / execute(ctx=…)) instead of one per
    # command: re-aimed at each command (argv in error texts, the selected database), its unit's time snapshot
    # taken afresh (a moved clock shows in the next command's IDs and idle times), blocked readers served at the
    # end of each command; the same replies as the dispatch path, which builds a fresh context every time
    def steps(server, r):
        out = [r.xadd("s", {"f": "v"}), r.xgroup_create("s", "g", "0"), r.xreadgroup("g", "c", {"s": ">"})]
        server.clock.advance(250)
        out += [r.xadd("s", {"f": "w"}), r.xpending_range("s", "g", "-", "+", 10),
                r.xautoclaim("s", "g", "c2", 100, "0-0"), r.xinfo_consumers("s", "g")]
        out.append(_outcome(lambda c: c.execute_command("XADD", "s", "*", "odd"), r))  # argv in the error text
        out.append(_outcome(lambda c: c.xgroup_create("nokey", "g", "0"), r))
        for sub in ("CREATE", "create"):  # the subcommand as typed, quoted in the error text (after another command)
            out.append(r.xlen("s"))
            out.append(_outcome(lambda c, sub=sub: c.execute_command(f"XGROUP {sub}", "s", "g2", "0", "BOGUS"), r))
        r.execute_command("SELECT", "1")
        out += [r.xlen("s"), r.xadd("s", {"f": "db1"}, id="5-0"), r.xrange("s")]
        r.execute_command("SELECT", "0")
        out += [r.xlen("s"), r.object("idletime", "s")]
        server.clock.advance(3000)
        out += [r.object("idletime", "s"), r.xlen("s"), r.object("idletime", "s")]
        reader = server.client()
        got = []
        t = threading.Thread(target=lambda: got.append(reader.xread({"s": "$"}, block=0)))
        t.start()
        server.wait_until_blocked(1)
        out.append(r.xadd("s", {"f": "wake"}, id="9999999-0"))
        t.join(5)  # real-time: the reader thread ends as soon as it is served
        out += [got, r.xlen("s")]
        return out

    outs, contexts = [], []
    for fast in (True, False):
        server = _server(fast)
        r = server.client()
        try:
            outs.append(steps(server, r))
            conn, = r.connection_pool._available_connections  # (one thread: one connection ran every step)
            contexts.append(conn._sock.__dict__.get("_sf_ctx"))
        finally:
            server.close()
    assert outs[0] == outs[1]
    assert contexts[0] is not None and contexts[1] is None  # one kept context served the direct commands
    assert direct_calls.count(b"XADD") >= 4 and b"XAUTOCLAIM" in direct_calls


def test_blocking_read_parks_and_times_out_on_manual_clock(direct_calls):
    clock = ManualClock(1_000)
    server = FakeStreamsServer(clock=clock)
    reader = server.client()
    got = []
    t = threading.Thread(target=lambda: got.append(reader.xreadgroup("g", "c", {"s": ">"}, block=100)))
    reader.xgroup_create("s", "g", "$", mkstream=True)
    t.start()
    server.wait_until_blocked(1)
    clock.advance(100)
    t.join(5)  # real-time: ends once the deadline is served
    assert len(got) == 1 and not got[0]  # nil (redis-py shows it as [] or None)
    assert reader.xlen("s") == 0  # the connection is usable again, replies in order
    server.close()


def test_keyspace_notification_from_direct_xadd(direct_calls):
    server = FakeStreamsServer()
    r = server.client()
    r.config_set("notify-keyspace-events", "KEA")
    ps = r.pubsub()
    ps.psubscribe("__key*__:*")
    ps.get_message(timeout=1)
    r.xadd("s", {"f": "v"})
    messages = [ps.get_message(timeout=1) for _ in range(2)]
    assert {m["data"] for m in messages} == {b"xadd", b"s"}
    assert b"XADD" in direct_calls
    ps.close()
    server.close()


def test_internal_error_recorded_and_rendered_alike():
    def boom(ctx, args):
        raise ValueError("kaput")

    table = dict(COMMANDS)
    table["xboom"] = spec("xboom", 2, "write", boom)
    fast, slow = _run_both([lambda r: r.execute_command("XBOOM", "k"), lambda r: r.xlen("k")], commands=table)
    assert fast == slow and fast[0][0] == "error"


def test_fallbacks(direct_calls):
    server = FakeStreamsServer()
    r = server.client()

    class Faults:
        def on_command(self, client_id, argv):
            return None

    server.faults = Faults()
    r.xadd("s", {"f": "v"})
    server.faults = None
    pool = r.connection_pool
    conn = pool.get_connection()
    conn.send_command("CLIENT", "REPLY", "SKIP")
    conn.send_command("XLEN", "s")  # its reply is skipped
    conn.send_command("XLEN", "s")
    assert conn.read_response() == 1 and not conn.can_read()
    pool.release(conn)
    assert direct_calls == [b"XLEN"]  # the XLEN after the skipped one
    direct_calls.clear()
    assert r.xlen("s") == 1 and direct_calls == [b"XLEN"]
    ps = r.pubsub()
    ps.subscribe("ch")
    ps.execute_command("XLEN", "s")  # pubsub connections answer an error, through the dispatch path
    assert direct_calls == [b"XLEN"]
    ps.close()
    server.fast_path = False
    assert r.xlen("s") == 1 and direct_calls == [b"XLEN"]
    server.close()


def test_unread_direct_reply_counts_as_connection_data(direct_calls):
    server = FakeStreamsServer()
    pool = server.client().connection_pool
    conn = pool.get_connection()
    conn.send_command("XADD", "s", "*", "f", "v")
    assert conn.can_read() is True
    assert conn.read_response().endswith(b"-0")
    assert conn.can_read() is False
    pool.release(conn)
    server.close()


def test_down_server_fails_alike(direct_calls):
    servers, clients = _pair()
    outs = []
    for server, client in zip(servers, clients):
        client.xadd("s", {"f": "v"})
        server.connected = False
        outs.append(_outcome(lambda r: r.xlen("s"), client))
        server.connected = True
        outs.append(_outcome(lambda r: r.xlen("s"), client))
        server.close()
    assert outs[:2] == outs[2:]


# ------------------------------------------------------------------------------------- asyncio
async def _aoutcome(fn, client):
    try:
        return ("ok", _norm(await fn(client)))
    except Exception as exc:
        return ("error", type(exc), str(exc))


async def _arun_both(steps, **kwargs):
    out = []
    for fast in (True, False):
        server = _server(fast)
        client = server.async_client(**kwargs)
        try:
            out.append([await _aoutcome(step, client) for step in steps])
        finally:
            await client.aclose()
            server.close()
    return out


async def _apipeline(r):
    p = r.pipeline(transaction=False)
    p.xadd("p", {"a": 1}, id="1-0").set("k", "v").xlen("p").xadd("p", {"a": 1}, id="0-1").xrange("p")
    return await p.execute(raise_on_error=False)


async def _atransaction(r):
    p = r.pipeline(transaction=True)
    p.xadd("t", {"a": 1}).xlen("t").xadd("t", {"a": 1}, id="0-1")
    return await p.execute(raise_on_error=False)


@pytest.mark.asyncio
@pytest.mark.parametrize("decode", [False, True])
@pytest.mark.parametrize("protocol", [2, 3])
async def test_asyncio_same_replies_and_errors(direct_calls, protocol, decode):
    fast, slow = await _arun_both(STEPS + [_apipeline, _atransaction], protocol=protocol, decode_responses=decode)
    assert fast == slow
    assert len(direct_calls) > 30


@pytest.mark.asyncio
async def test_asyncio_blocked_reader_woken_and_watch_dirtied(direct_calls):
    server = FakeStreamsServer()
    reader, writer = server.async_client(), server.async_client()
    task = asyncio.ensure_future(reader.xread({"s": "$"}, block=5000))
    for _ in range(10_000):  # yield to the event loop until the read is parked (no wall-clock wait)
        if server.blocked():
            break
        await asyncio.sleep(0)
    sid = await writer.xadd("s", {"f": "v"})
    assert await asyncio.wait_for(task, 5) == [[b"s", [(sid, {b"f": b"v"})]]]
    async with reader.pipeline() as p:
        await p.watch("s")
        p.multi()
        p.xlen("s")
        await writer.xadd("s", {"f": "w"})
        with pytest.raises(redis.WatchError):
            await p.execute()
    assert direct_calls == [b"XREAD", b"XADD", b"XADD"]
    await reader.aclose()
    await writer.aclose()
    server.close()


def test_str_encoding_follows_the_packer(direct_calls):
    """hiredis's packer sends str as UTF-8 whatever the encoder says; the pure-Python one uses the encoder."""
    steps = [lambda r: r.xadd("s", {"f": "é"}, id="1-0"), lambda r: r.execute_command("XRANGE", "s", "-", "+"),
             lambda r: r.xadd("s", {"f": "\udcff"}, id="2-0")]
    fast, slow = _run_both(steps, encoding="latin-1")
    assert fast == slow and direct_calls


@pytest.mark.asyncio
async def test_asyncio_str_encoding_follows_the_encoder(direct_calls):
    steps = [lambda r: r.xadd("s", {"f": "é"}, id="1-0"), lambda r: r.execute_command("XRANGE", "s", "-", "+"),
             lambda r: r.xadd("s", {"f": "\udcff"}, id="2-0")]
    fast, slow = await _arun_both(steps, encoding="latin-1")
    assert fast == slow and direct_calls
    assert fast[1] == ("ok", [[b"1-0", {b"f": b"\xe9"}]])  # latin-1 on the wire


# --------------------------------------------------------------------- pipelines run as batches
def _batch_pipeline(r):
    """Stream commands back to back (one direct batch), errors in place, non-stream commands between."""
    p = r.pipeline(transaction=False)
    p.xadd("b", {"a": 1}, id="1-0").xadd("b", {"a": 2}, id="1-0").xadd("b", {"a": 3}, id="2-0")
    p.xgroup_create("b", "g", "0").xgroup_create("b", "g", "0").xreadgroup("g", "c", {"b": ">"}, count=1)
    p.xack("b", "g", "1-0", "7-7").xpending("b", "g").xlen("b").xrange("b").xadd("str", {"f": 1})
    p.set("str", "x").xadd("str", {"f": 1}).xlen("str").get("str").xadd("b", {"z": 0}).xlen("b")
    p.xadd("b", {"a": 1}, id="bad").xinfo_stream("b").xtrim("b", maxlen=1).xrange("b")
    return p.execute(raise_on_error=False)


@pytest.mark.parametrize("protocol, parser", PARSERS, ids=lambda p: getattr(p, "__name__", str(p)))
def test_pipeline_batches_answer_alike(direct_calls, protocol, parser):
    (fast,), (slow,) = _run_both([_batch_pipeline], protocol=protocol, parser_class=parser)
    assert _norm(fast) == _norm(slow) and fast[0] == "ok"
    assert sum(isinstance(x, redis.ResponseError) for x in fast[1]) >= 3
    # the stream commands before the first non-stream one ran directly; later ones wait behind its reply
    assert direct_calls[:10] == [b"XADD"] * 3 + [b"XGROUP"] * 2 + [b"XREADGROUP", b"XACK", b"XPENDING", b"XLEN",
                                                                   b"XRANGE"]


def test_pipeline_batch_serves_blocked_readers_after_each_command(direct_calls):
    """A reader blocked with COUNT 10 is served at the end of the first pipelined XADD: it gets one entry,
    as from the dispatch path (the server serves blocked clients after every command)."""
    got = []
    for fast in (True, False):
        server = _server(fast)
        reader, writer = server.client(), server.client()
        out = []
        t = threading.Thread(target=lambda out=out, reader=reader: out.append(reader.xread({"s": "$"}, count=10,
                                                                                         block=0)))
        t.start()
        server.wait_until_blocked(1)
        p = writer.pipeline(transaction=False)
        p.xadd("s", {"n": 1}, id="1-0").xadd("s", {"n": 2}, id="2-0").xadd("s", {"n": 3}, id="3-0")
        replies = p.execute()
        t.join(5)  # real-time: the reader thread ends as soon as it is served
        got.append((out, replies, server.blocked()))
        server.close()
    assert got[0] == got[1]
    assert got[0][0] == [[[b"s", [(b"1-0", {b"n": b"1"})]]]]
    assert direct_calls.count(b"XADD") == 3


def test_pipeline_batch_dirties_watch_and_sends_keyspace_events_in_order(direct_calls):
    outs = []
    for fast in (True, False):
        server = _server(fast)
        r, other = server.client(), server.client()
        r.config_set("notify-keyspace-events", "KEA")
        ps = other.pubsub()
        ps.psubscribe("__key*__:*")
        ps.get_message(timeout=1)
        with r.pipeline() as watcher:
            watcher.watch("w")
            watcher.multi()
            watcher.xlen("w")
            p = other.pipeline(transaction=False)
            p.xadd("v", {"f": 1}).xadd("w", {"f": 1}, maxlen=0, approximate=False).xdel("v", "0-1")
            p.xadd("v", {"f": 1}, id="0-1").xgroup_create("v", "g", "$")
            replies = p.execute(raise_on_error=False)
            try:
                watcher.execute()
                watched = "executed"
            except redis.WatchError:
                watched = "aborted"
        messages = []
        while True:
            m = ps.get_message(timeout=0.2)  # real-time: bounded wait for the last event to arrive
            if m is None:
                break
            messages.append((m["channel"], m["data"]))
        ps.close()
        outs.append((_norm(replies), watched, messages))
        server.close()
    assert outs[0] == outs[1]
    assert outs[0][1] == "aborted" and len(outs[0][2]) >= 8
    assert direct_calls[:5] == [b"XADD", b"XADD", b"XDEL", b"XADD", b"XGROUP"]


def test_pipeline_batch_stops_at_a_parked_read(direct_calls):
    """A blocking read parks mid-pipeline: the commands after it wait behind it (dispatch path), then run."""
    outs = []
    for fast in (True, False):
        clock = ManualClock(1_000_000)
        server = FakeStreamsServer(clock=clock)
        server.fast_path = fast
        r = server.client()
        p = r.pipeline(transaction=False)
        p.xadd("s", {"n": 1}, id="1-0").xread({"e": "$"}, block=100).xadd("s", {"n": 2}, id="2-0").xlen("s")
        out = []
        t = threading.Thread(target=lambda out=out, p=p: out.append(p.execute()))
        t.start()
        server.wait_until_blocked(1)
        assert server.backend.fake.dbs[0].get(b"s").value.last_id == (1, 0)  # the XADD after it waits
        clock.advance(100)
        t.join(5)  # real-time: ends once the deadline is served
        outs.append(_norm(out[0]))
        server.close()
    assert outs[0] == outs[1]
    assert outs[0][0] == b"1-0" and not outs[0][1] and outs[0][2:] == [b"2-0", 2]
    assert direct_calls == [b"XADD", b"XREAD"]


@pytest.mark.asyncio
async def test_asyncio_pipeline_batches_answer_alike(direct_calls):
    fast, slow = await _arun_both([_batch_pipeline])
    assert fast == slow and fast[0][0] == "ok"
    assert direct_calls[:3] == [b"XADD"] * 3


def test_acl_restricted_default_user_answers_alike(direct_calls):
    steps = [
        lambda r: r.xadd("s", {"f": "v"}, id="1-0"),
        lambda r: r.execute_command("ACL", "SETUSER", "default", "-xadd"),
        lambda r: r.xadd("s", {"f": "v"}, id="2-0"),  # NOPERM (the dispatch path decides)
        lambda r: r.xlen("s"),
        lambda r: r.execute_command("ACL", "SETUSER", "default", "+@all"),
        lambda r: r.xadd("s", {"f": "v"}, id="3-0"),
        lambda r: r.xlen("s"),
    ]
    fast, slow = _run_both(steps)
    assert fast == slow
    # once any rule was changed the default user is no longer unrestricted: every later command dispatches
    assert direct_calls == [b"XADD"]


def test_acl_verdict_kept_per_socket_is_dropped_when_another_client_changes_rules(direct_calls):
    """The direct path keeps a socket's "unrestricted" verdict until any command goes through the dispatch path
    on the server: after rules changed by *another* connection (ACL SETUSER) or the socket's own AUTH, the next
    command of a connection that already ran direct ones is checked again, and answers as on the
    dispatch-only server."""
    outs = []
    for fast in (True, False):
        server = _server(fast)
        a, b = server.client(), server.client()
        out = [_outcome(lambda r: r.xadd("s", {"f": "v"}, id="1-0"), a),
               _outcome(lambda r: r.xlen("s"), a)]  # a's verdict is kept now (direct path)
        out.append(_outcome(lambda r: r.execute_command("ACL", "SETUSER", "default", "-xlen"), b))
        out.append(_outcome(lambda r: r.xlen("s"), a))  # the dispatch path decides (fakeredis checks its own way)
        out.append(_outcome(lambda r: r.xadd("s", {"f": "v"}, id="2-0"), a))
        out.append(_outcome(lambda r: r.execute_command("ACL", "SETUSER", "default", "+@all"), b))
        out.append(_outcome(lambda r: r.xlen("s"), a))
        out.append(_outcome(lambda r: r.execute_command("ACL", "SETUSER", "u", "on", ">pw", "~*", "+@all", "-xrange"), b))
        out.append(_outcome(lambda r: r.execute_command("AUTH", "u", "pw"), a))
        out.append(_outcome(lambda r: r.xrange("s"), a))  # NOPERM for u
        out.append(_outcome(lambda r: r.xlen("s"), a))
        outs.append(out)
        server.close()
    fast, slow = outs
    assert fast == slow
    kinds = [kind for kind, *_ in fast]
    assert kinds == ["ok", "ok", "ok", "error", "ok", "ok", "ok", "ok", "ok", "error", "ok"], fast  # NOPERM: -xlen, u's -xrange
    # direct: only the two commands before b's rule change; a verdict kept past it would have run a's later
    # XLEN/XADD directly (once a rule was changed the default user is no longer unrestricted, see above)
    assert direct_calls == [b"XADD", b"XLEN"]


# ----------------------------------------------------------- runs of XADD key * … in one batch
@pytest.fixture
def run_appends(monkeypatch):
    """Notes the key of every plain XADD a run (fastpath._xadd_run) tried to append: one at a time (``append_now``)
    or back to back in one engine call (``_plain_run``: each command up to and with the one refused, if any)."""
    calls = _counted_appends(monkeypatch, "append_now", 0)
    plain_run = fastpath._plain_run

    def counting(stream, batch, i, j, *rest):
        done, now, refused = plain_run(stream, batch, i, j, *rest)
        calls.extend(bytes(batch[k][1][0]) for k in range(i, i + done + (refused is not None)))
        return done, now, refused

    monkeypatch.setattr(fastpath, "_plain_run", counting)
    return calls


def _counted_appends(monkeypatch, name, arg):
    """Replaces fastpath's ``name`` (``append_now`` / ``append_trimmed_now``) with a wrapper noting ``args[arg]`` of
    every call; returns the notes."""
    if not fastpath.ENABLED:
        pytest.skip("the direct path is switched off (FAKE_STREAMS_FAST_PATH=0)")
    calls = []
    original = getattr(fastpath, name)

    def counting(stream, args, now, limits=None):
        calls.append(bytes(args[arg]))
        return original(stream, args, now, limits)

    monkeypatch.setattr(fastpath, name, counting)
    return calls


def _xadd_runs(r):
    p = r.pipeline(transaction=False)
    for n in range(4):
        p.xadd("s", {"n": n})
    p.xadd("t", {"n": 0}).xadd("s", {"a": 1, "b": 2}).xadd("s", {"n": 9}, id="1-0").xadd("s", {"n": 5})
    p.xadd("s", {"n": 6}, maxlen=3, approximate=False).xadd("s", {"n": 7}).xlen("s").xadd("s", {"n": 8})
    return p.execute(raise_on_error=False)


@pytest.mark.parametrize("protocol", [2, 3])
def test_xadd_runs_answer_alike(direct_calls, run_appends, protocol):
    def ttl_then_run(r):
        r.expire("s", 100)  # a key with a TTL takes the general path
        return [r.ttl("s") > 0] + _xadd_runs(r)

    (f1, f2, f3), (s1, s2, s3) = _run_both(
        [lambda r: r.xadd("s", {"n": -1}), _xadd_runs, ttl_then_run], protocol=protocol)
    assert (f1, _norm(f2), _norm(f3)) == (s1, _norm(s2), _norm(s3))
    assert run_appends.count(b"s") >= 6  # runs of 4, 2 … on the existing stream without TTL
    assert len(run_appends) < direct_calls.count(b"XADD")


def test_xadd_run_watch_and_errors_alike(run_appends):
    outs = []
    for fast in (True, False):
        server = _server(fast)
        r, other = server.client(), server.client()
        r.xadd("full", {"f": 1})
        r.execute_command("XSETID", "full", "18446744073709551615-18446744073709551615")
        r.xadd("ok", {"f": 1})
        result = []
        for key in ("full", "ok"):
            with r.pipeline() as watcher:
                watcher.watch(key)
                watcher.multi()
                watcher.xlen(key)
                p = other.pipeline(transaction=False)
                p.xadd(key, {"f": 2}).xadd(key, {"f": 3}).xadd(key, {"f": 4})
                replies = _norm(p.execute(raise_on_error=False))
                try:
                    result.append((replies, watcher.execute()))
                except redis.WatchError:
                    result.append((replies, "aborted"))
        outs.append(result)
        server.close()
    assert outs[0] == outs[1]
    assert outs[0][0][1] == [1]  # only errors (ID space exhausted): WATCH not dirtied
    assert outs[0][1][1] == "aborted"
    assert run_appends.count(b"full") == 3 and run_appends.count(b"ok") == 3


def _plain_runs(monkeypatch):
    """The lengths of the runs fastpath._plain_run was given."""
    lengths = []
    plain_run = fastpath._plain_run

    def noting(stream, batch, i, j, *rest):
        lengths.append(j - i)
        return plain_run(stream, batch, i, j, *rest)

    monkeypatch.setattr(fastpath, "_plain_run", noting)
    return lengths


@pytest.mark.parametrize("limits", [None, (0, 3)])
def test_plain_xadd_runs_append_as_one_at_a_time(monkeypatch, limits):
    """A pipeline's back-to-back ``XADD key * …`` append in one engine call: the same replies, entries, IDs, node
    boundaries (XINFO STREAM FULL's listpack view, stream-node-max-entries 3 makes several), OBJECT / INFO figures as
    on the dispatch path, which appends one command at a time; the runs end at another key, another shape, a packed
    command, and go on after it."""
    if not fastpath.ENABLED:
        pytest.skip("the direct path is switched off (FAKE_STREAMS_FAST_PATH=0)")
    lengths = _plain_runs(monkeypatch)

    def pipeline(r):
        if limits is not None:
            r.config_set("stream-node-max-entries", limits[1])
        r.xadd("s", {"f": "seed"})
        r.xadd("u", {"a": "seed", "b": 0})
        p = r.pipeline(transaction=False)
        for n in range(7):
            p.xadd("s", {"f": n})
        p.xadd("s", {"f": 1, "g": 2}).xadd("s", {"f": "x" * 70}).xadd("s", {"n": 123456789})
        for n in range(3):  # the master entry's two field names (SAMEFIELDS: only the values are stored)
            p.xadd("u", {"a": n, "b": "v" * n})
        p.xadd("t", {"f": 0}).xadd("s", {"f": 8}).xadd("s", {"f": 8}).xadd("s", {"f": 9}, maxlen=5, approximate=True)
        p.set("k", "v").xadd("s", {"f": 10}).xadd("s", {"f": 11})
        return p.execute(raise_on_error=False)

    outs = []
    for fast in (True, False):
        server = _server(fast)
        r = server.client()
        replies = pipeline(r)
        db = server.backend.fake.dbs[0]
        outs.append([replies, r.xlen("t"), r.info("commandstats")["cmdstat_xadd"]["calls"],
                     r.info("memory")["used_memory_dataset"]]
                    + [(r.xrange(key), r.xinfo_stream(key, full=True), r.object("idletime", key),
                        db.get(key.encode()).value.node_layout()) for key in ("s", "u")])
        server.close()
    assert outs[0] == outs[1] and len(outs[0][0]) == 20
    # (f …) ×7, (f g), (f x…), (n): plain XADDs on s, one run; u's three; then after t's, two; none after SET (a packed command's
    # reply is queued on the socket: what follows it goes there too, in order)
    assert lengths == [10, 3, 2], lengths


def test_long_plain_xadd_runs_are_split(monkeypatch):
    """A run's fresh field lists are alive together: more than ``_PLAIN_RUN_MAX`` of them are appended in several
    engine calls (one long run would have the collector promote them: benchmarks/loads.py), answered alike."""
    if not fastpath.ENABLED:
        pytest.skip("the direct path is switched off (FAKE_STREAMS_FAST_PATH=0)")
    lengths = _plain_runs(monkeypatch)
    most = fastpath._PLAIN_RUN_MAX
    server = _server(True)
    r = server.client()
    r.xadd("s", {"f": "seed"})
    p = r.pipeline(transaction=False)
    for n in range(2 * most + 3):
        p.xadd("s", {"f": n})
    assert p.execute() == [b"1000000-%d" % n for n in range(1, 2 * most + 4)]
    assert lengths == [most, most, 3]
    server.close()


def _fail_once(monkeypatch, method):
    """``Stream.<method>`` raises ValueError("kaput") at its next call (an engine bug), then works again."""
    original = getattr(Stream, method)
    failures = []

    def failing_once(self, *args):
        if not failures:
            failures.append(1)
            raise ValueError("kaput")
        return original(self, *args)

    monkeypatch.setattr(Stream, method, failing_once)


def test_plain_xadd_run_engine_bug_answered_in_place(monkeypatch):
    """An engine exception inside a run's one engine call is answered as the dispatch path answers an engine bug
    (the internal-error reply, recorded) for the run's first command; the commands after it run on."""
    if not fastpath.ENABLED:
        pytest.skip("the direct path is switched off (FAKE_STREAMS_FAST_PATH=0)")
    _fail_once(monkeypatch, "add_next_run")
    server = _server(True)
    r = server.client()
    r.xadd("s", {"f": 0})
    p = r.pipeline(transaction=False)
    for n in range(4):
        p.xadd("s", {"f": n})
    replies = p.execute(raise_on_error=False)
    assert isinstance(replies[0], redis.ResponseError) and "ValueError: kaput" in str(replies[0])
    assert [type(reply) for reply in replies[1:]] == [bytes] * 3 and r.xlen("s") == 4
    stats = r.info("commandstats")["cmdstat_xadd"]
    assert stats["calls"] == 5 and stats["failed_calls"] == 1
    (name, args, trace), = server.internal_errors
    assert (name, args[0]) == ("xadd", b"s") and "ValueError: kaput" in trace
    server.close()


def test_xadd_run_not_taken_when_events_are_subscribed(run_appends):
    server = FakeStreamsServer(clock=ManualClock(1_000_000))
    r = server.client()
    r.xadd("s", {"f": 0})
    r.config_set("notify-keyspace-events", "Et")
    ps = r.pubsub()
    ps.subscribe("__keyevent@0__:xadd")
    ps.get_message(timeout=1)
    p = r.pipeline(transaction=False)
    p.xadd("s", {"f": 1}).xadd("s", {"f": 2}).xadd("s", {"f": 3})
    p.execute()
    got = [ps.get_message(timeout=1) for _ in range(3)]
    assert [m["data"] for m in got] == [b"s"] * 3 and run_appends == []
    ps.close()
    server.close()


def test_xadd_runs_with_options_and_ids_answer_alike(direct_calls, monkeypatch):
    parsed = []
    original = fastpath.append_parsed

    def counting(stream, args, targs, now, limits=None):
        parsed.append(bytes(args[1]))
        return original(stream, args, targs, now, limits)

    monkeypatch.setattr(fastpath, "append_parsed", counting)

    def run(r):
        p = r.pipeline(transaction=False)
        p.xadd("s", {"n": 1}, id="5-1").xadd("s", {"n": 2}, id="5-*").xadd("s", {"n": 3}, id="5-1")
        p.xadd("s", {"n": 4}, id="0-0").xadd("s", {"n": 5}, id="x-1").xadd("s", {"n": 6}, maxlen=3)
        p.xadd("s", {"n": 7}, maxlen=2, approximate=False).xadd("s", {"n": 8}, minid="7-0")
        p.xadd("s", {"n": 9}, nomkstream=True, id="9-0").xadd("s", {"n": 10}, maxlen=1, limit=5)
        p.execute_command("XADD", "s", "*", "odd").execute_command("XADD", "s", "MAXLEN", "-1", "*", "f", "v")
        p.xadd("s", {"n": 11}).xadd("s", {"n": 12}, id="18446744073709551615-18446744073709551615")
        p.xadd("s", {"n": 13}).xlen("s").xrange("s").xinfo_stream("s")
        return p.execute(raise_on_error=False)

    (f0, f1), (s0, s1) = _run_both([lambda r: r.xadd("s", {"n": 0}, id="1-0"), run])
    assert (f0, _norm(f1)) == (s0, _norm(s1))
    assert sum(isinstance(x, redis.ResponseError) for x in f1[1]) >= 6
    assert len(parsed) >= 7  # the option / explicit-ID forms ran in the run (argument errors stop before; maxlen=3
    # is `MAXLEN ~ 3 *`: append_trimmed_now, see below)


def _trimming_steps(rnd):
    """Random XADDs on "m" mostly in redis-py's ``maxlen=n`` shape (``MAXLEN ~ n *``), single and pipelined, with
    thresholds that trim, that do not, and bad ones; other XADD forms, node limits changed (the caller moves the clock)."""
    def maxlen_xadd(p, n):
        roll = rnd.random()
        if roll < 0.75:
            return p.xadd("m", {"f": n, "g": "x" * rnd.choice([0, 1, 40])}, maxlen=rnd.choice([0, 1, 3, 7, 20]))
        if roll < 0.85:
            raw = rnd.choice(["-1", "abc", "007", "99999999999999999999", "+5", " 5", "5"])
            return p.execute_command("XADD", "m", rnd.choice(["MAXLEN", "maxlen", "MaxLen"]), "~", raw, "*", "f", n)
        if roll < 0.9:
            return p.execute_command("XADD", "m", "MAXLEN", "~", "5", "*", "f")  # wrong arity (the general path)
        return p.xadd("m", {"f": n}, maxlen=4, approximate=False)  # `MAXLEN 4 *`: the general path

    steps = []
    for k in range(60):
        roll = rnd.random()
        if roll < 0.4:
            steps.append(lambda r, k=k: maxlen_xadd(r, k))
        elif roll < 0.8:
            size = rnd.choice([2, 5, 16])

            def pipelined(r, k=k, sizes=size):
                p = r.pipeline(transaction=False)
                for j in range(sizes):
                    maxlen_xadd(p, k * 100 + j)
                if rnd.random() < 0.3:
                    p.xadd("other", {"f": k}, maxlen=1)
                return _norm(p.execute(raise_on_error=False))
            steps.append(pipelined)
        elif roll < 0.88:
            entries = rnd.choice([2, 3, 100, 0])
            steps.append(lambda r, v=entries: r.config_set("stream-node-max-entries", v))
        else:
            steps.append(lambda r: (r.xlen("m"), r.xinfo_stream("m")))
    steps.append(lambda r: r.xinfo_stream("m", full=True))
    steps.append(lambda r: (r.xlen("m"), r.object("idletime", "m"), r.xinfo_stream("other")["length"]))
    steps.append(lambda r: {k: v for k, v in r.info("commandstats")["cmdstat_xadd"].items() if k != "usec"
                            and k != "usec_per_call"})
    return steps


@pytest.mark.parametrize("version", ["7.0", "8.2", "8.6", "valkey-9.1"])
@pytest.mark.parametrize("seed", range(4))
def test_trimming_xadd_runs_answer_alike(monkeypatch, seed, version):
    """``XADD key MAXLEN ~ n * …`` through the direct path's run (:func:`fastpath._xadd_run`: the shape recognised
    in O(1), :func:`append_trimmed_now`) against the dispatch path's handler: the same replies and error texts,
    stream state (entries, nodes dropped, first/last IDs, counters), commandstats; also on the Redis 8.2 profile
    (reference policies exist, the shape takes no policy word), 8.6 (IDMP) and Valkey 9.1."""
    import random

    taken = _counted_appends(monkeypatch, "append_trimmed_now", 3)
    outs = []
    for fast in (True, False):
        rnd = random.Random(seed)
        server = _server(fast, version=version)
        r = server.client()
        out = []
        for step in _trimming_steps(rnd):
            out.append(_outcome(step, r))
            if rnd.random() < 0.3:
                server.clock.advance(rnd.choice([0, 1, 1000]))
        outs.append(out)
        server.close()
    assert outs[0] == outs[1]
    assert sum(kind == "error" for kind, *_ in outs[0]) + str(outs[0]).count("ResponseError") > 0
    assert len(taken) > 50 and {b"-1", b"abc"} & set(taken)  # bad thresholds answered by the shortcut too


def test_trimming_xadd_dirties_watch_only_when_it_adds(monkeypatch):
    """A refused ``XADD key MAXLEN ~ n *`` (bad threshold) leaves a WATCH intact, one that adds dirties it: as on the
    dispatch path."""
    taken = _counted_appends(monkeypatch, "append_trimmed_now", 3)
    calls = []
    outs = []
    for fast in (True, False):
        server = _server(fast)
        r, other = server.client(), server.client()
        r.xadd("m", {"f": 0})
        result = []
        for threshold in ("-1", "abc", "2"):
            with r.pipeline() as watcher:
                watcher.watch("m")
                watcher.multi()
                watcher.xlen("m")
                result.append(_outcome(lambda o, t=threshold: o.execute_command(
                    "XADD", "m", "MAXLEN", "~", t, "*", "f", "v"), other))
                try:
                    result.append(watcher.execute())
                except redis.WatchError:
                    result.append("aborted")
        outs.append(result)
        calls.append(other.info("commandstats")["cmdstat_xadd"])
        server.close()
    assert outs[0] == outs[1] and calls[0]["calls"] == calls[1]["calls"] and calls[0]["failed_calls"] == 2
    assert [x for x in outs[0] if not isinstance(x, tuple)] == [[1], [1], "aborted"]
    assert taken == [b"-1", b"abc", b"2"]  # the direct run's shortcut answered all three


def test_trimming_xadd_on_an_exhausted_stream_answers_alike():
    outs = []
    for fast in (True, False):
        server = _server(fast)
        r = server.client()
        r.xadd("m", {"f": 1})
        r.execute_command("XSETID", "m", "18446744073709551615-18446744073709551615")
        out = [_outcome(lambda r: r.xadd("m", {"f": 2}, maxlen=0), r),
               _outcome(lambda r: r.execute_command("XADD", "m", "MAXLEN", "~", "-1", "*", "f", "v"), r),
               _outcome(lambda r: _norm(r.pipeline(transaction=False).xadd("m", {"f": 3}, maxlen=1).xlen("m")
                                        .execute(raise_on_error=False)), r),
               _outcome(lambda r: r.xinfo_stream("m"), r)]
        outs.append(out)
        server.close()
    assert outs[0] == outs[1]
    assert outs[0][0][0] == "error" and "exhausted" in outs[0][0][2] and ">= 0" in outs[0][1][2]  # the threshold checked before the ID


def _single_xadds_taken(monkeypatch):
    """The keys of the XADDs fastpath._xadd_one (an XADD sent alone) ran itself (it answered True)."""
    if not fastpath.ENABLED:
        pytest.skip("the direct path is switched off (FAKE_STREAMS_FAST_PATH=0)")
    taken = []
    xadd_one = fastpath._xadd_one

    def noting(sock, session, spec, args):
        done = xadd_one(sock, session, spec, args)
        if done:
            taken.append(bytes(args[0]))
        return done

    monkeypatch.setattr(fastpath, "_xadd_one", noting)
    return taken


@pytest.mark.parametrize("version", ["7.0", "8.2"])
def test_single_xadds_answer_as_a_run_of_one(monkeypatch, version):
    """An XADD sent alone in one of redis-py's two shapes (``key * …``, ``key MAXLEN ~ n * …``) is run by
    ``_xadd_one`` without ``_run``'s and ``_xadd_run``'s loops: the same replies, error texts, stream state, OBJECT /
    INFO figures as when it is a pipeline's batch of one (``_xadd_run``) and as on the dispatch path; every other case
    (missing key, a TTL, the other shapes, a wrong type) is left to the general path, which answers it alike."""
    taken = _single_xadds_taken(monkeypatch)

    def steps(r, single):
        def xadd(*args):
            if single:
                return _outcome(lambda c: c.execute_command("XADD", *args), r)
            reply, = r.pipeline(transaction=False).execute_command("XADD", *args).execute(raise_on_error=False)
            return ("error", type(reply), str(reply)) if isinstance(reply, Exception) else ("ok", reply)

        out = [xadd("s", "*", "f", "0"), xadd("s", "*", "f", "1", "g", "2"), xadd("s", "*", "f", "x" * 70)]
        r.config_set("stream-node-max-entries", 3)
        out += [xadd("s", "*", "f", n) for n in range(5)]
        out += [xadd("s", "MAXLEN", "~", n, "*", "f", "t") for n in (3, 100, 0, "-1", "abc", "007")]
        out += [xadd("s", "maxlen", "~", 2, "*", "f", "u"), xadd("s", "MAXLEN", 2, "*", "f", "exact"),
                xadd("s", "5-*", "f", "id"), xadd("new", "*", "f", "created")]
        r.set("str", "v")
        out += [xadd("str", "*", "f", "v"), xadd("str", "MAXLEN", "~", 1, "*", "f", "v")]
        r.expire("s", 100)
        out.append(xadd("s", "*", "f", "ttl"))
        r.persist("s")
        r.execute_command("XSETID", "new", "18446744073709551615-18446744073709551615")
        out += [xadd("new", "*", "f", "full"), xadd("new", "MAXLEN", "~", 1, "*", "f", "full")]
        out += [r.xinfo_stream("s", full=True), r.xinfo_stream("new"), r.object("idletime", "s"), r.xlen("s")]
        stats = r.info("commandstats")["cmdstat_xadd"]
        out.append({k: v for k, v in stats.items() if k not in ("usec", "usec_per_call")})
        out.append(dict(r.info("errorstats")))
        return out

    outs = []
    for fast, single in ((True, True), (True, False), (False, True)):
        server = _server(fast, version=version)
        r = server.client()
        outs.append(steps(r, single))
        server.close()
    assert outs[0] == outs[1] == outs[2]
    errors = [o for o in outs[0] if isinstance(o, tuple) and o[0] == "error"]
    assert len(errors) >= 6  # the bad thresholds, the wrong types, the exhausted stream
    # alone and direct: every plain / approximate-trimming XADD on an existing stream without TTL (the bad thresholds
    # too: answered in place, nothing changed); the pipelined ones went through _xadd_run instead
    assert taken == [b"s"] * 14 + [b"new"] * 2, taken  # (the first XADD creates "s": the general path)


def test_single_xadd_engine_bug_answered_as_the_dispatch_path_does(monkeypatch):
    """An engine exception inside ``_xadd_one`` is answered as ``server.execute`` answers a handler bug: the
    internal-error reply (recorded in ``server.internal_errors``), a failed call in INFO; nothing else changes and
    the next XADD runs."""
    taken = _single_xadds_taken(monkeypatch)
    server = _server(True)
    r = server.client()
    r.xadd("s", {"f": 0})  # (creates the key: the general path)
    _fail_once(monkeypatch, "add_next")
    with pytest.raises(redis.ResponseError, match="ValueError: kaput"):
        r.xadd("s", {"f": 1})
    assert r.xadd("s", {"f": 2}, maxlen=5) == b"1000000-1" and r.xlen("s") == 2
    stats = r.info("commandstats")["cmdstat_xadd"]
    assert stats["calls"] == 3 and stats["failed_calls"] == 1
    (name, args, trace), = server.internal_errors
    assert (name, args) == ("xadd", [b"s", b"*", b"f", b"1"]) and "ValueError: kaput" in trace
    assert taken == [b"s", b"s"]
    server.close()


def test_prepare_encodes_exact_types_only():
    """prepare: exact str/bytes/int/float encoded as the packer would; anything else (a str subclass, an
    unencodable str, a wrong arity) → None, the dispatch path decides."""
    server = FakeStreamsServer()
    r = server.client()
    r.ping()
    conn = r.connection_pool.get_connection()

    class Sub(str):
        def encode(self, *args, **kwargs):  # the pure-Python packer would call this
            return b"other"

    spec_, args, argv = fastpath.prepare(conn, ("XADD", "s", "*", "f", "é"))
    assert (args, argv) == ([b"s", b"*", b"f", "é".encode()], [b"XADD", b"s", b"*", b"f", "é".encode()])
    assert args is not argv and spec_.name == "xadd"
    assert fastpath.prepare(conn, ("XADD", "s", "*", "f", Sub("v"))) is None  # the packer decides
    assert fastpath.prepare(conn, ("XADD", "s", "*", "f", "\udcff")) is None  # the packer raises
    assert fastpath.prepare(conn, ("XADD", "s", "*")) is None  # wrong arity: the dispatch path renders it
    assert fastpath.prepare(conn, ("XLEN", "s"))[1:] == ([b"s"], [b"XLEN", b"s"])
    assert fastpath.prepare(conn, ("XADD", "s", "*", "n", 1, "x", 1.5, "b", b"\xff"))[1] == [
        b"s", b"*", b"n", b"1", b"x", b"1.5", b"b", b"\xff"]
    r.connection_pool.release(conn)
    server.close()


def test_prepare_arity_bounds_agree_with_the_specs():
    """prepare checks the arity from bounds precomputed per table name: for every name (upper and lower case,
    containers' "XINFO STREAM" form) and every argument count 0..12 it accepts exactly what
    ``CommandSpec.arity_ok`` accepts for the full argv (names included)."""
    server = FakeStreamsServer()
    r = server.client()
    r.ping()
    conn = r.connection_pool.get_connection()
    table = fastpath._table(server.router)
    assert {"XADD", "xadd", b"XADD", b"xadd", "XINFO STREAM", "xinfo stream"} <= set(table)
    checked = 0
    for name, (spec_, sub, _, _, _) in table.items():
        names = 2 if sub is not None else 1
        for argc in range(13):
            prepared = fastpath.prepare(conn, (name,) + ("k",) * argc)
            assert (prepared is not None) == spec_.arity_ok(argc + names), (name, argc)
            checked += 1
    assert checked == 13 * len(table) > 13 * 40
    r.connection_pool.release(conn)
    server.close()


UNPACKED_STEPS = [
    lambda r: r.set("k", "v"),
    lambda r: r.get("k"),
    lambda r: r.execute_command("CONFIG GET", "maxmemory"),  # a name with a space: split as the packers split it
    lambda r: r.execute_command(b"CONFIG GET", b"maxmemory"),
    lambda r: r.execute_command("config\tget", "maxmemory"),  # any whitespace
    lambda r: r.mset({"a": 1, "b": -2, "é": "ü"}),
    lambda r: r.mget("a", "b", "é"),
    lambda r: r.incrbyfloat("f", 1.5),  # a float: packed (not unpacked)
    lambda r: r.execute_command("SET", "t", True),  # DataError from the packer
    lambda r: r.execute_command("SET", "m", memoryview(b"mv")),
    lambda r: r.get("m"),
    lambda r: r.execute_command("NOSUCH", "x"),  # unknown command: the same error text
    lambda r: r.execute_command("GET"),  # wrong arity
    lambda r: r.lpush("l", "x"),
    lambda r: r.blpop(["l"], timeout=1),
    lambda r: r.hset("h", mapping={"x": 1}),
    lambda r: r.hgetall("h"),
    lambda r: r.client_setinfo("LIB-NAME", "mine"),
    lambda r: r.client_info()["lib-name"],
    lambda r: r.echo(""),
]


@pytest.mark.parametrize("protocol, parser", PARSERS, ids=lambda p: getattr(p, "__name__", str(p)))
def test_other_commands_unpacked_answer_alike(monkeypatch, protocol, parser):
    """A sync connection's non-stream commands go to the socket's dispatch as the parser's fields (``dispatch_unpacked``):
    replies, errors and effects as when packed to RESP and parsed back (``fast_path = False``)."""
    if not fastpath.ENABLED:
        pytest.skip("the direct path is switched off (FAKE_STREAMS_FAST_PATH=0)")
    unpacked = []
    dispatch = fastpath.dispatch_unpacked
    monkeypatch.setattr(fastpath, "dispatch_unpacked", lambda conn, args: dispatch(conn, args) and not unpacked.append(args))
    fast, slow = _run_both(UNPACKED_STEPS, protocol=protocol, parser_class=parser)
    assert fast == slow
    assert any(kind == "error" for kind, *_ in fast)
    assert len(unpacked) >= len(UNPACKED_STEPS) - 5  # really taken (not for floats, bools, memoryviews, …)


def _resp_fields(data: bytes) -> list:
    """The bulk strings of one RESP array (what fakeredis's parser hands ``_process_command``)."""
    head, rest = data.split(b"\r\n", 1)
    out = []
    for _ in range(int(head[1:])):
        line, rest = rest.split(b"\r\n", 1)
        size = int(line[1:])
        out.append(rest[:size])
        rest = rest[size + 2:]
    return out


@pytest.mark.parametrize("packer", ["hiredis", "python"])
def test_unpacked_fields_are_what_the_parser_reads_from_the_packed_bytes(packer):
    """``_fields`` = fakeredis's parse of the packer's RESP bytes, for every argument kind it takes."""
    from redis.connection import HiredisRespSerializer, PythonRespSerializer

    if packer == "hiredis" and not HIREDIS_AVAILABLE:
        pytest.skip("hiredis is not installed")
    server = FakeStreamsServer()
    try:
        conn = server.client().connection_pool.get_connection()
        if packer == "python":
            conn._command_packer = PythonRespSerializer(conn._buffer_cutoff, conn.encoder.encode)
        else:
            conn._command_packer = HiredisRespSerializer()
        conn._sf_fast_setup = None
        for args in [("GET", "k"), ("CONFIG GET", "x"), (b"CONFIG  GET", b"x"), ("SET", "é", -12, 0, b"\x00\xff"),
                     ("client setinfo", "lib-name", ""), ("x\ty", "z")]:
            assert fastpath._fields(conn, args) == _resp_fields(b"".join(conn._command_packer.pack(*args))), args
        for args in [("SET", "k", 1.5), ("SET", "k", True), ("SET", "k", None), ("SET", "k", memoryview(b"x")), (1, "k")]:
            assert fastpath._fields(conn, args) is None, args
    finally:
        server.close()
