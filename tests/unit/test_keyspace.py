"""One keyspace for stream and non-stream commands, through real redis-py clients (sync/async × RESP2/RESP3).

Covers what the transport promises: TYPE/EXISTS/DEL/RENAME/EXPIRE/SCAN/FLUSH on stream values, WRONGTYPE
both ways, MULTI/EXEC (queue-time arity → EXECABORT), WATCH, Lua, execution-unit time snapshots,
internal errors, keyspace notifications and the simple blocking wait. ``real`` tests compare with redis-server.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
import time

import pytest
import redis

from fake_streams import FakeStreamsServer
from fake_streams.clock import Clock
from fake_streams.commands import COMMANDS
from fake_streams.commands.base import spec
from fake_streams.errors import ERRORS
from tests.conftest import PROTOCOLS, START_MS, aw, get_connection, outcome

WRONGTYPE = ERRORS["WRONGTYPE"]
needs_lua = pytest.mark.skipif(importlib.util.find_spec("lupa") is None, reason="fakeredis needs lupa for EVAL")


def _message(exc_info) -> str:
    return str(exc_info.value)


# ------------------------------------------------------------------------------------------ generic keys
@pytest.mark.asyncio
async def test_type_exists_del(any_client):
    r = any_client
    assert await aw(r.xadd("s", {"f": "v"}, id="1-1")) == b"1-1"
    assert await aw(r.type("s")) == b"stream"
    assert await aw(r.exists("s")) == 1
    assert await aw(r.delete("s")) == 1
    assert await aw(r.exists("s")) == 0
    assert await aw(r.type("s")) == b"none"
    assert await aw(r.xlen("s")) == 0


@pytest.mark.asyncio
async def test_rename_moves_the_stream(any_client):
    r = any_client
    await aw(r.xadd("s", {"f": "v"}, id="1-1"))
    assert await aw(r.rename("s", "t")) is True
    assert await aw(r.exists("s")) == 0
    assert await aw(r.xrange("t")) == [(b"1-1", {b"f": b"v"})]


@pytest.mark.asyncio
async def test_ttl_is_kept_across_xadd(any_client):
    r = any_client
    await aw(r.xadd("s", {"f": "v"}, id="1-1"))
    assert await aw(r.expire("s", 100)) is True
    await aw(r.xadd("s", {"f": "v"}, id="1-2"))
    assert 98 <= await aw(r.ttl("s")) <= 100
    assert await aw(r.xlen("s")) == 2


@pytest.mark.asyncio
async def test_expired_stream_is_gone(any_client):
    r = any_client
    await aw(r.xadd("s", {"f": "v"}, id="1-1"))
    await aw(r.pexpire("s", 1))
    await asyncio.sleep(0.01)  # real-time: key expiry follows fakeredis's wall clock, not the server clock
    assert await aw(r.xlen("s")) == 0
    assert await aw(r.xadd("s", {"f": "v"}, id="1-1")) == b"1-1"  # a fresh stream: last_id starts over
    assert await aw(r.ttl("s")) == -1


@pytest.mark.asyncio
async def test_scan_type_stream(any_client):
    r = any_client
    await aw(r.xadd("s1", {"f": "v"}))
    await aw(r.xadd("s2", {"f": "v"}))
    await aw(r.set("str", "x"))
    await aw(r.rpush("list", "x"))
    cursor, keys = await aw(r.scan(0, _type="stream", count=100))
    assert cursor == 0
    assert sorted(keys) == [b"s1", b"s2"]


@pytest.mark.asyncio
async def test_copy_is_independent(any_client):
    r = any_client
    await aw(r.xadd("s", {"f": "v"}, id="1-1"))
    assert await aw(r.copy("s", "c")) is True
    await aw(r.xadd("s", {"f": "v"}, id="1-2"))
    assert await aw(r.xlen("c")) == 1
    assert await aw(r.type("c")) == b"stream"


def test_flushdb_and_flushall_respect_db_numbers(make_client):
    r0, r1 = make_client(db=0), make_client(db=1)
    r0.xadd("s", {"f": "v"})
    r1.xadd("s", {"f": "v"})
    r1.xadd("t", {"f": "v"})
    assert (r0.dbsize(), r1.dbsize()) == (1, 2)
    r1.flushdb()
    assert (r0.dbsize(), r1.dbsize()) == (1, 0)
    r1.xadd("t", {"f": "v"})
    r0.flushall()
    assert (r0.dbsize(), r1.dbsize()) == (0, 0)


def test_server_flushall_from_python(server, make_client):
    r = make_client()
    r.xadd("s", {"f": "v"})
    server.flushall()
    assert r.exists("s") == 0


# ------------------------------------------------------------------------------------------- WRONGTYPE
@pytest.mark.asyncio
async def test_wrongtype_both_ways(any_client):
    r = any_client
    await aw(r.xadd("s", {"f": "v"}))
    await aw(r.set("str", "x"))
    for call in (lambda: r.get("s"), lambda: r.lpush("s", "x"), lambda: r.xadd("str", {"f": "v"}),
                 lambda: r.xlen("str"), lambda: r.xrange("str")):
        with pytest.raises(redis.ResponseError) as exc:
            await aw(call())
        assert _message(exc) == WRONGTYPE
    assert await aw(r.get("str")) == b"x"


# ------------------------------------------------------------------------------------- MULTI / EXEC
@pytest.mark.asyncio
async def test_multi_exec_mixes_fakeredis_and_stream_commands(any_client):
    r = any_client
    pipe = r.pipeline(transaction=True)
    pipe.set("k", "v").xadd("s", {"f": "v"}, id="1-1").xlen("s").type("s").get("k").xrange("s")
    assert await aw(pipe.execute()) == [True, b"1-1", 1, b"stream", b"v", [(b"1-1", {b"f": b"v"})]]


@pytest.mark.asyncio
async def test_runtime_wrongtype_inside_exec_is_an_item(any_client):
    r = any_client
    await aw(r.set("str", "x"))
    pipe = r.pipeline(transaction=True)
    pipe.xadd("str", {"f": "v"}).set("k", "v")
    replies = await aw(pipe.execute(raise_on_error=False))
    assert isinstance(replies[0], redis.ResponseError) and str(replies[0]) == WRONGTYPE
    assert replies[1] is True


@pytest.mark.asyncio
async def test_queue_time_arity_error_aborts_the_transaction(any_client):
    r = any_client
    pipe = r.pipeline(transaction=True)
    pipe.set("k", "v")
    pipe.execute_command("XADD", "only-key")
    pipe.execute_command("XGROUP", "CREATE", "s")
    with pytest.raises(redis.ResponseError) as exc:
        await aw(pipe.execute())
    message = _message(exc)
    if message.endswith("caused error: {exception.args}"):  # redis-py 6.4's asyncio pipeline drops the server's
        assert message.startswith("Command # 2 (XADD only-key)")  # text (its annotation lacks the f of an f-string)
    else:
        assert "wrong number of arguments for 'xadd' command" in message
    assert await aw(r.exists("k", "only-key")) == 0


def test_raw_multi_replies(make_client):
    """MULTI; SET; XADD (short) → error at queue time; EXEC → EXECABORT."""
    conn = get_connection(make_client())
    replies = []
    for argv in (("MULTI",), ("SET", "k", "v"), ("XADD", "s"), ("XGROUP", "CREATE", "s"), ("EXEC",)):
        conn.send_command(*argv)
        try:
            replies.append(conn.read_response())
        except redis.RedisError as exc:
            replies.append((type(exc).__name__, str(exc)))
    assert replies == [
        b"OK",
        b"QUEUED",
        ("ResponseError", "wrong number of arguments for 'xadd' command"),
        ("ResponseError", "wrong number of arguments for 'xgroup|create' command"),
        ("ExecAbortError", "Transaction discarded because of previous errors."),
    ]


@pytest.mark.asyncio
async def test_watch_is_dirtied_by_xadd_from_another_client(any_client, make_client):
    r, other = any_client, make_client()
    await aw(r.xadd("s", {"f": "v"}))
    pipe = r.pipeline(transaction=True)
    await aw(pipe.watch("s"))
    other.xadd("s", {"f": "v"})
    pipe.multi()
    pipe.set("k", "v")
    with pytest.raises(redis.WatchError):
        await aw(pipe.execute())
    assert await aw(r.exists("k")) == 0


def test_watch_is_not_dirtied_by_a_read(make_client):
    r, other = make_client(), make_client()
    r.xadd("s", {"f": "v"})
    with r.pipeline(transaction=True) as pipe:
        pipe.watch("s")
        other.xlen("s")
        other.xrange("s")
        pipe.multi()
        pipe.set("k", "v")
        assert pipe.execute() == [True]


# ----------------------------------------------------------------------------------------------- Lua
@needs_lua
@pytest.mark.asyncio
async def test_eval_xadd(any_client):
    r = any_client
    sid = await aw(r.eval("return redis.call('XADD', KEYS[1], '*', 'f', 'v')", 1, "s"))
    assert sid == f"{START_MS}-0".encode()
    assert await aw(r.xlen("s")) == 1
    rows = await aw(r.eval("return redis.call('XRANGE', KEYS[1], '-', '+')", 1, "s"))
    assert rows == [[sid, [b"f", b"v"]]]


@needs_lua
def test_eval_errors(make_client):
    r = make_client()
    r.set("str", "x")
    cases = {
        "return redis.call('XADD', 'str', '*', 'a', 'b')": WRONGTYPE,
        "return redis.call('xgroup', 'foo')": "Unknown Redis command called from script",
        "return redis.call('xnosuch', 'a')": "Unknown Redis command called from script",
        "return redis.call('XADD', 's')": "Wrong number of args calling Redis command from script",
    }
    for script, text in cases.items():
        with pytest.raises(redis.ResponseError) as exc:
            r.eval(script, 0)
        assert _message(exc).startswith(text), script


# ------------------------------------------------------------------------------ command lookup errors
def test_lookup_errors(make_client):
    r = make_client()
    cases = [
        (("XGROUP",), "wrong number of arguments for 'xgroup' command"),
        (("xGroup", "fOO", "x"), "unknown subcommand 'fOO'. Try XGROUP HELP."),
        (("XGROUP", "help", "extra"), "wrong number of arguments for 'xgroup|help' command"),
        (("XAckDel", "s", "g"), "unknown command 'XAckDel', with args beginning with: 's' 'g' "),
        (("XADD", "s"), "wrong number of arguments for 'xadd' command"),
    ]
    for argv, text in cases:
        with pytest.raises(redis.ResponseError) as exc:
            r.execute_command(*argv)
        assert _message(exc) == text, argv


def test_unknown_command_args_are_cut_like_the_server(make_client):
    with pytest.raises(redis.ResponseError) as exc:
        make_client().execute_command("XNOPE", "a" * 100, "b" * 100, "c")
    expected = "unknown command 'XNOPE', with args beginning with: '" + "a" * 100 + "' '" + "b" * 25 + "' "
    assert _message(exc) == expected


@pytest.mark.real
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_lookup_errors_equal_the_real_server(real_pair, protocol):
    fake_make, real_make = real_pair
    fake, real = fake_make(protocol), real_make(protocol)
    for r in (fake, real):
        r.set("str", "x")
        r.xadd("s", {"f": "v"}, id="1-1")
    cases = [("XGROUP",), ("XGROUP", "Foo"), ("XGROUP", "help", "x"), ("XFOO", "a", "b"), ("xinfo", "Stream"),
             ("XADD", "s"), ("GET", "s"), ("XADD", "str", "*", "a", "b"), ("TYPE", "s"), ("XLEN", "s"),
             ("XNOPE", "a" * 100, "b" * 100, "c"), ("XGROUP", "x" * 200)]
    for argv in cases:
        got = outcome(lambda a=argv: fake.execute_command(*a))
        assert got == outcome(lambda a=argv: real.execute_command(*a)), argv


@pytest.mark.real
def test_raw_multi_equals_the_real_server(real_pair):
    fake_make, real_make = real_pair
    results = []
    for r in (fake_make(), real_make()):
        conn = get_connection(r)
        replies = []
        for argv in (("MULTI",), ("SET", "k", "v"), ("XADD", "s"), ("EXEC",), ("EXISTS", "k")):
            conn.send_command(*argv)
            replies.append(outcome(conn.read_response))
        r.connection_pool.release(conn)
        results.append(replies)
    assert results[0] == results[1]


@pytest.mark.real
def test_ttl_and_scan_equal_the_real_server(real_pair):
    fake_make, real_make = real_pair
    seen = []
    for r in (fake_make(), real_make()):
        r.xadd("s", {"f": "v"}, id="1-1")
        r.expire("s", 100)
        r.xadd("s", {"f": "v"}, id="1-2")
        r.set("str", "x")
        seen.append((r.ttl("s"), r.scan(0, _type="stream"), r.type("s"), r.exists("s", "str")))
    assert seen[0] == seen[1]


# ---------------------------------------------------------------------------- execution-unit "now"
class TickClock(Clock):
    """Every read moves time forward by 1 ms (makes snapshots visible)."""

    def __init__(self, start: int) -> None:
        super().__init__()
        self._now = start

    def now_ms(self) -> int:
        self._now += 1
        return self._now


def _now_spec():
    return spec("xnowms", 1, "readonly", lambda ctx, args: ctx.now_ms)


@pytest.mark.parametrize("version, snapshot", [("7.4", True), ("7.0", False)])
def test_now_is_one_snapshot_per_exec_on_time_snapshot_profiles(version, snapshot):
    server = FakeStreamsServer(version, clock=TickClock(1000), commands={**COMMANDS, "xnowms": _now_spec()})
    r = server.client()
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("XNOWMS").execute_command("XNOWMS")
    first, second = pipe.execute()
    assert (first == second) is snapshot
    assert r.execute_command("XNOWMS") > second  # a new unit, a new snapshot
    r.close()
    server.close()


@needs_lua
def test_now_is_one_snapshot_per_script():
    server = FakeStreamsServer("7.4", clock=TickClock(1000), commands={**COMMANDS, "xnowms": _now_spec()})
    r = server.client()
    first, second = r.eval("return {redis.call('XNOWMS'), redis.call('XNOWMS')}", 0)
    assert first == second
    r.close()
    server.close()


def test_xadd_star_uses_the_server_clock(server, make_client):
    r = make_client()
    assert r.xadd("s", {"f": "v"}) == f"{START_MS}-0".encode()
    assert r.xadd("s", {"f": "v"}) == f"{START_MS}-1".encode()
    server.clock.advance(5)
    assert r.xadd("s", {"f": "v"}) == f"{START_MS + 5}-0".encode()


# ----------------------------------------------------------------------------------- internal errors
def test_unexpected_exception_becomes_an_error_reply_and_is_recorded():
    def boom(ctx, args):
        return 1 // 0

    server = FakeStreamsServer(commands={**COMMANDS, "xboom": spec("xboom", -1, "write", boom)})
    r = server.client()
    with pytest.raises(redis.ResponseError) as exc:
        r.execute_command("XBOOM", "a")
    assert _message(exc) == "fake_streams internal error in 'xboom': ZeroDivisionError: integer division or modulo by zero"
    assert r.ping() is True  # the connection survived
    [(name, args, tb)] = server.internal_errors
    assert (name, args) == ("xboom", [b"a"]) and "ZeroDivisionError" in tb
    r.close()
    server.close()


# ------------------------------------------------------------------------------ keyspace notifications
def test_keyspace_notification_for_xadd(make_client):
    r = make_client()
    sub = r.pubsub()
    sub.subscribe("__keyevent@0__:xadd", "__keyspace@0__:s")
    assert sub.get_message(timeout=1)["type"] == "subscribe"
    assert sub.get_message(timeout=1)["type"] == "subscribe"
    r.xadd("s", {"f": "v"})  # notify-keyspace-events is empty by default: nothing
    r.config_set("notify-keyspace-events", "KEt")
    r.xadd("s", {"f": "v"})
    got = {(m["channel"], m["data"]) for m in (sub.get_message(timeout=1), sub.get_message(timeout=1))}
    assert got == {(b"__keyevent@0__:xadd", b"s"), (b"__keyspace@0__:s", b"xadd")}
    assert sub.get_message(timeout=0.05) is None
    sub.close()


# ------------------------------------------------------------------------------------- blocking reads
def _wait_blocked(server, n=1):
    deadline = time.monotonic() + 5  # real-time: wait until the reader thread is parked (observable state)
    while server.backend.stats()["blocked"] < n:
        assert time.monotonic() < deadline, "reader never blocked"
        time.sleep(0.005)  # real-time: bounded poll (deadline above)


def test_blocking_xread_is_woken_by_xadd_from_another_thread(server, make_client):
    reader, writer = make_client(), make_client()
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("r", reader.xread({"s": "$"}, block=0)))
    thread.start()
    _wait_blocked(server)
    writer.set("unrelated", "x")  # wakes the reader, which goes back to sleep
    writer.xadd("s", {"f": "v"}, id="5-1")
    thread.join(5)
    assert result["r"] == [[b"s", [(b"5-1", {b"f": b"v"})]]]


def test_blocking_xread_times_out_on_the_manual_clock(server, make_client):
    reader = make_client()
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("r", reader.xread({"s": "$"}, block=1000)))
    thread.start()
    _wait_blocked(server)
    server.clock.advance(999)
    time.sleep(0.02)  # real-time: give a wrongly woken reader the chance to answer early
    assert "r" not in result
    server.clock.advance(1)
    thread.join(5)
    assert result["r"] == []


def test_no_blocking_inside_multi(make_client):
    pipe = make_client().pipeline(transaction=True)
    pipe.xread({"s": "$"}, block=0)
    assert pipe.execute() == [[]]


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_async_blocking_xread_woken_by_another_task(server, make_async_client, protocol):
    reader, writer = make_async_client(protocol), make_async_client(protocol)
    task = asyncio.ensure_future(reader.xread({"s": "$"}, block=0))
    while server.backend.stats()["blocked"] < 1:
        await asyncio.sleep(0.001)
    await writer.xadd("s", {"f": "v"}, id="5-1")
    got = await asyncio.wait_for(task, 5)
    expected = [(b"5-1", {b"f": b"v"})]
    assert got == ({b"s": [expected]} if protocol == 3 else [[b"s", expected]])
    assert await reader.ping() is True  # the socket resumed


@pytest.mark.asyncio
async def test_async_blocking_xread_woken_by_a_sync_thread_and_by_the_clock(server, make_async_client, make_client):
    reader = make_async_client()
    task = asyncio.ensure_future(reader.xread({"s": "$"}, block=0))
    while server.backend.stats()["blocked"] < 1:
        await asyncio.sleep(0.001)
    threading.Thread(target=lambda: make_client().xadd("s", {"f": "v"}, id="1-1")).start()
    assert await asyncio.wait_for(task, 5) == [[b"s", [(b"1-1", {b"f": b"v"})]]]
    task = asyncio.ensure_future(reader.xread({"s": "$"}, block=50))
    while server.backend.stats()["blocked"] < 1:
        await asyncio.sleep(0.001)
    server.clock.advance(50)
    assert await asyncio.wait_for(task, 5) == []


def test_client_unblock_ends_a_blocked_read(server, make_client):
    reader, admin = make_client(), make_client()
    reader_id = reader.client_id()
    try:
        admin.client_unblock(reader_id)
    except redis.ResponseError:
        pytest.skip("this fakeredis has no CLIENT UNBLOCK")
    results = []

    def read():
        results.append(outcome(lambda: reader.xread({"s": "$"}, block=0)))
        results.append(outcome(lambda: reader.xread({"s": "$"}, block=0)))

    thread = threading.Thread(target=read)
    thread.start()
    _wait_blocked(server)
    assert admin.client_unblock(reader_id) == 1  # TIMEOUT: the read ends with nil
    deadline = time.monotonic() + 5  # real-time: wait for the reader thread to record its first reply
    while not results and time.monotonic() < deadline:
        time.sleep(0.005)  # real-time: bounded poll (deadline above)
    _wait_blocked(server)
    assert admin.client_unblock(reader_id, error=True) == 1
    thread.join(5)
    assert results == [[], ("ResponseError", ERRORS["UNBLOCKED_BY_CLIENT"])]


def test_any_unknown_command_gets_the_server_wording(make_client):
    r = make_client()
    with pytest.raises(redis.ResponseError) as exc:
        r.execute_command("FooBar", "a", "b")
    assert _message(exc) == "unknown command 'FooBar', with args beginning with: 'a' 'b' "
    with pytest.raises(redis.ResponseError) as exc:
        r.execute_command("CONFIG", "Nope")
    assert _message(exc) == "unknown subcommand 'Nope'. Try CONFIG HELP."


def test_stream_node_config_is_read_live(make_client):
    r = make_client()
    r.config_set("stream-node-max-entries", 10)
    for i in range(1, 101):
        r.xadd("s", {"f": "v"}, id=f"1-{i}")
    assert r.xinfo_stream("s")["radix-tree-keys"] == 10
    r.copy("s", "c")
    r.config_set("stream-node-max-entries", 1000)
    r.xadd("c", {"f": "v"}, id="2-1")  # the copy follows the live CONFIG too
    assert r.xinfo_stream("c")["radix-tree-keys"] == 10
