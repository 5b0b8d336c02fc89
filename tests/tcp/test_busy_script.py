"""A busy Lua script over TCP: the event loop's other clients are served meanwhile, as the server's
``processEventsWhileBlocked`` does — BUSY to their commands, SCRIPT KILL answered, new clients accepted —, the
script's own client is not read, and a command the busy server lets wait (AUTH, HELLO, QUIT, RESET …) runs, in
order, once the script has ended. (The texts themselves are compared with the real servers in
tests/conformance/test_lua_busy.py.)"""

from __future__ import annotations

import threading

import redis

from fake_streams import FakeStreamsServer
from fake_streams.tcp import serve
from tests.conftest import pool_kwargs

from .conftest import WAIT_S

BUSY = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."


def _busy_script(url: str) -> dict:
    """Start ``while true do end`` from its own client in a thread; the box gets its outcome."""
    box: dict = {}

    def run() -> None:
        try:
            box["reply"] = redis.Redis.from_url(url, socket_timeout=WAIT_S).eval("while true do end", 0)
        except redis.exceptions.ResponseError as exc:
            box["error"] = str(exc)

    box["thread"] = threading.Thread(target=run, daemon=True)
    box["thread"].start()
    return box


def _wait_busy(client: redis.Redis) -> None:
    deadline = threading.Event()
    for _ in range(int(WAIT_S * 100)):
        try:
            client.ping()
        except redis.exceptions.ResponseError as exc:
            assert str(exc) == BUSY
            return
        deadline.wait(0.01)  # real-time: the script in the served loop passes busy-reply-threshold (50 ms)
    raise AssertionError("the served script never became busy")


def test_other_clients_get_busy_and_can_kill_the_script():
    server = FakeStreamsServer(version="7.0")
    with serve(server) as tcp:
        control = redis.Redis.from_url(tcp.url, socket_timeout=WAIT_S)
        control.config_set("busy-reply-threshold", "50")
        box = _busy_script(tcp.url)
        _wait_busy(control)
        late = redis.Redis.from_url(tcp.url, **pool_kwargs(2, socket_timeout=WAIT_S))  # connects while busy
        try:
            late.xadd("s", {"f": "v"})
            raise AssertionError("XADD ran during a busy script")
        except redis.exceptions.ResponseError as exc:
            assert str(exc) == BUSY
        assert control.script_kill() is True
        box["thread"].join(WAIT_S)  # real-time: the killed script's client gets its error
        assert box["error"].startswith("Script killed by user with SCRIPT KILL...")
        assert control.xlen("s") == 0 and control.ping() is True
    server.close()


def test_a_command_the_busy_server_lets_wait_runs_after_the_script_in_order():
    server = FakeStreamsServer(version="7.0")
    with serve(server) as tcp:
        control = redis.Redis.from_url(tcp.url, socket_timeout=WAIT_S)
        control.config_set("busy-reply-threshold", "50")
        waiter = redis.Redis.from_url(tcp.url, socket_timeout=WAIT_S)
        waiter.ping()  # connected before the script
        box = _busy_script(tcp.url)
        _wait_busy(control)
        pipe = waiter.pipeline(transaction=False)
        pipe.execute_command("RESET")  # allowed while busy: waits for the script's end, then the XLEN behind it
        pipe.xlen("s")
        answered = {}
        reader = threading.Thread(target=lambda: answered.update(replies=pipe.execute()), daemon=True)
        reader.start()
        reader.join(0.3)  # real-time: while the script is busy, nothing of the pipeline is answered
        assert reader.is_alive()
        assert control.script_kill() is True
        reader.join(WAIT_S)  # real-time: the held requests run once the script has ended
        box["thread"].join(WAIT_S)  # real-time: the killed script's client gets its error
        assert answered["replies"] == ["RESET", 0]  # redis-py decodes a RESET reply (its own callback)
    server.close()


def test_closing_the_served_loop_stops_its_busy_script():
    """The loop thread runs the busy script: close() stops it as a shutdown does, and the thread ends (before, the
    script ran on and close() gave up after its 5 s join, leaving the thread spinning: a test that failed before
    its SCRIPT KILL hung or burned CPU in the ones after)."""
    server = FakeStreamsServer(version="7.0")
    tcp = serve(server)
    control = redis.Redis.from_url(tcp.url, socket_timeout=WAIT_S)
    control.config_set("busy-reply-threshold", "50")
    box = _busy_script(tcp.url)
    _wait_busy(control)
    tcp.close()
    assert [t for t in threading.enumerate() if t.name == f"fake-streams-tcp :{tcp.port}"] == []
    box["thread"].join(WAIT_S)  # real-time: the script's client sees its connection end
    assert not box["thread"].is_alive()
    control.close()
    server.close()
