"""Fault injection through ``server.faults``: error replies, dropped connections, server down/up."""

from __future__ import annotations

import threading

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from fake_streams.faults import Faults, client_ids


def no_retry(url: str = "redis://localhost:6379/0", **kwargs):
    """A client that surfaces every ConnectionError (redis-py 8 retries by default)."""
    return redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **kwargs)


def test_fail_next_error_reply_then_normal(fake_redis_streams):
    r = fake_redis_streams.client
    r.xadd("s", {"f": "v"}, id="1-1")
    r.xgroup_create("s", "g", id="0")
    r.xreadgroup("g", "c", {"s": ">"})
    fake_redis_streams.faults.fail_next("XACK", times=2, error="ERR injected")
    for _ in range(2):
        with pytest.raises(redis.ResponseError, match="^injected$"):
            r.xack("s", "g", "1-1")
    assert r.xlen("s") == 1  # other commands are untouched
    assert r.xack("s", "g", "1-1") == 1
    fired = fake_redis_streams.faults.fired
    assert [(f.argv[0].upper(), f.outcome) for f in fired] == [(b"XACK", "ERR injected")] * 2


def test_error_line_maps_to_redis_py_exception_classes(fake_redis_streams):
    fake_redis_streams.faults.fail_next("SET", error="READONLY You can't write against a read only replica.")
    with pytest.raises(redis.exceptions.ReadOnlyError):
        fake_redis_streams.client.set("k", "v")


def test_subcommand_and_match_narrow_the_rule(fake_redis_streams):
    r = fake_redis_streams.client
    faults = fake_redis_streams.faults
    faults.fail_next("XGROUP CREATE", error="ERR nope", match=lambda argv: argv[3] == b"only-this")
    r.xgroup_create("s", "other", id="0", mkstream=True)
    r.xgroup_createconsumer("s", "other", "c")
    with pytest.raises(redis.ResponseError, match="nope"):
        r.xgroup_create("s", "only-this", id="0")
    assert r.xgroup_create("s", "only-this", id="0")


def test_connection_error_fault_drops_the_call_and_the_command_does_not_run(fake_redis_streams):
    r = no_retry()
    fake_redis_streams.faults.fail_next("XADD", error=ConnectionError)
    with pytest.raises(redis.ConnectionError):
        r.xadd("s", {"f": "v"})
    assert r.xlen("s") == 0  # reconnected; the dropped XADD never ran
    assert r.xadd("s", {"f": "v"}, id="1-1") == b"1-1"
    r.close()


def test_a_retrying_client_survives_a_dropped_connection(fake_redis_streams):
    r = redis.Redis(retry=Retry(NoBackoff(), 2), retry_on_error=[redis.ConnectionError])
    fake_redis_streams.faults.fail_next("XADD", times=2, error=redis.ConnectionError("gone"))
    assert r.xadd("s", {"f": "v"}, id="1-1") == b"1-1"
    assert fake_redis_streams.stream("s").length == 1
    assert [f.outcome for f in fake_redis_streams.faults.fired] == ["connection dropped"] * 2
    r.close()


def test_client_rule_and_drop_hit_only_that_clients_connections(fake_redis_streams):
    a, b = no_retry(), no_retry()
    a.ping()
    b.ping()
    assert client_ids(a) and set(client_ids(a)).isdisjoint(client_ids(b))
    fake_redis_streams.faults.fail_next("PING", error="ERR only a", client=a)
    assert b.ping()
    with pytest.raises(redis.ResponseError, match="only a"):
        a.ping()
    fake_redis_streams.faults.drop(b)
    assert a.ping()
    with pytest.raises(redis.ConnectionError):
        b.ping()
    assert b.ping()  # a new connection
    a.close()
    b.close()


def test_drop_needs_an_open_connection(fake_redis_streams):
    with pytest.raises(ValueError, match="has no open connection to drop"):
        fake_redis_streams.faults.drop(no_retry())


def test_fault_inside_multi_aborts_the_transaction(fake_redis_streams):
    r = fake_redis_streams.client
    fake_redis_streams.faults.fail_next("XADD", error="ERR injected")
    pipe = r.pipeline(transaction=True)
    pipe.set("k", "v").xadd("s", {"f": "v"})
    with pytest.raises(redis.ResponseError, match=r"Command # 2 \(XADD s \* f v\) of pipeline caused error: injected"):
        pipe.execute()  # the server refused it at queue time, so EXEC aborted (redis-py shows the first error)
    assert r.exists("k", "s") == 0


def test_outage_fails_commands_and_connects_then_recovers(fake_redis_streams):
    r = no_retry()
    r.xadd("s", {"f": "v"}, id="1-1")
    with fake_redis_streams.faults.outage():
        assert fake_redis_streams.server.connected is False
        with pytest.raises(redis.ConnectionError):
            r.xlen("s")
        with pytest.raises(redis.ConnectionError):
            no_retry().ping()
    assert r.xlen("s") == 1  # data survives the outage
    r.close()


def test_server_down_fails_a_blocked_reader(fake_redis_streams):
    reader = no_retry(socket_timeout=None)
    out = {}

    def read() -> None:
        try:
            out["reply"] = reader.xread({"s": "$"}, block=0)
        except redis.ConnectionError as exc:
            out["error"] = exc

    thread = threading.Thread(target=read)
    thread.start()
    fake_redis_streams.wait_until_blocked(1, 10)
    fake_redis_streams.faults.server_down()
    thread.join(10)  # real-time: the blocked call must fail promptly once the server is down
    assert not thread.is_alive() and "error" in out
    fake_redis_streams.faults.server_up()
    reader.close()


@pytest.mark.asyncio
async def test_async_client_sees_injected_errors(fake_redis_streams):
    r = fake_redis_streams.async_client()
    fake_redis_streams.faults.fail_next("XLEN", error="ERR async injected")
    with pytest.raises(redis.ResponseError, match="async injected"):
        await r.xlen("s")
    assert await r.xlen("s") == 0


def test_faults_of_another_address(fake_redis_streams):
    other = fake_redis_streams.server_for("redis://cache:6380")
    Faults.install(other).fail_next("PING", error="ERR cache down")
    with pytest.raises(redis.ResponseError, match="cache down"):
        redis.Redis(host="cache", port=6380).ping()
    assert fake_redis_streams.client.ping()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"times": 0}, "times must be >= 1"),
        ({"error": "-ERR x"}, "without the leading '-'"),
        ({"error": "ERR a\r\nb"}, "one line"),
        ({"error": ValueError}, "error must be an error line"),
    ],
)
def test_fail_next_validates(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        Faults().fail_next("XACK", **kwargs)


def test_describe_lists_armed_and_fired():
    faults = Faults()
    faults.fail_next("XACK", times=2, error="ERR x")
    assert faults.on_command(7, [b"xack", b"s", b"g", b"1-1"]) == "ERR x"
    assert faults.on_command(7, [b"XADD", b"s"]) is None
    assert faults.describe() == "- armed: XACK x1 -> 'ERR x'\n- fired: xack s g 1-1 (client 7) -> ERR x"
    assert repr(faults) == "Faults(armed=1, fired=1)"


def test_unarmed_faults_keep_the_direct_path(fake_redis_streams, monkeypatch):
    """The fixture installs a Faults on every server; while no rule is armed it is ``idle`` and stream commands
    take the direct path (issue 13); an armed rule sends them through the dispatch path, where it fires."""
    from fake_streams._fakeredis import fastpath

    if not fastpath.ENABLED:
        pytest.skip("the direct path is switched off (FAKE_STREAMS_FAST_PATH=0)")
    direct = []
    answer = fastpath._answer

    def counting(sock, session, prepared, fast, *context):
        direct.append(bytes(prepared[2][0]))
        return answer(sock, session, prepared, fast, *context)

    monkeypatch.setattr(fastpath, "_answer", counting)
    r = fake_redis_streams.client
    faults = fake_redis_streams.faults
    assert isinstance(fake_redis_streams.server.faults, Faults) and faults.idle
    assert r.xlen("s") == 0 and direct == [b"XLEN"]
    faults.fail_next("XLEN", times=2, error="ERR injected")
    assert not faults.idle
    for _ in range(2):
        with pytest.raises(redis.ResponseError, match="^injected$"):
            r.xlen("s")
    assert direct == [b"XLEN"] and faults.idle  # both fired on the dispatch path; spent, the rule is idle
    assert r.xlen("s") == 0 and direct == [b"XLEN", b"XLEN"]
    faults.drop(r)
    assert not faults.idle
    with pytest.raises(redis.ConnectionError):
        no_retry_client = redis.Redis(connection_pool=r.connection_pool, retry=Retry(NoBackoff(), 0))
        no_retry_client.xlen("s")
    assert faults.idle and [f.outcome for f in faults.fired][-1] == "connection dropped"
    faults.fail_next("XLEN", error="ERR later")
    faults.clear()
    assert faults.idle and r.xlen("s") == 0 and direct[-1] == b"XLEN"
