"""The busy-script model where no real server can be compared: a script that wrote is unkillable, a server close
or SIGTERM of ``python -m fake_streams serve`` stops a looping script, and nothing of it leaks as a Python error.

(BUSY / SCRIPT KILL / NOTBUSY against the real servers: tests/conformance/test_lua_busy.py.)
"""

from __future__ import annotations

import signal
import threading
from typing import Any, Dict

import pytest
import redis

from fake_streams import FakeStreamsServer
from fake_streams._fakeredis.scripting import running_engine
from tests.tcp.conftest import WAIT_S, module_process, wait_until

LOOP_AFTER_WRITE = "redis.call('set', 'x', '1') while true do end"


def _busy(client: Any) -> bool:
    try:
        client.ping()
    except redis.ResponseError as exc:
        return str(exc).startswith("BUSY")
    return False


def _run_in_thread(client: Any, script: str) -> Dict[str, Any]:
    box: Dict[str, Any] = {}

    def run() -> None:
        try:
            box["reply"] = client.eval(script, 0)
        except Exception as exc:  # the script's error reply
            box["reply"] = exc

    box["thread"] = thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return box


def _started(server: Any) -> None:
    """Wait until the thread's script runs (a command sent before would simply run first)."""
    wait_until(lambda: running_engine(server.backend.fake), "the script to start")  # real-time: another thread


def test_a_script_that_wrote_is_unkillable_until_the_server_closes():
    server = FakeStreamsServer(version="7.0")
    control = server.client()
    control.config_set("busy-reply-threshold", "50")
    box = _run_in_thread(server.client(), LOOP_AFTER_WRITE)
    _started(server)
    with pytest.raises(redis.ResponseError, match="^BUSY Redis is busy running a script"):
        control.ping()  # waits for the lock until the script is busy, then BUSY
    with pytest.raises(redis.ResponseError, match="^UNKILLABLE Sorry the script already executed write commands"):
        control.script_kill()
    with pytest.raises(redis.ResponseError, match="^UNKILLABLE"):
        control.execute_command("FUNCTION", "KILL")  # the write is checked first (scriptKill)
    server.close()  # a shutdown stops even an unkillable script
    box["thread"].join(WAIT_S)  # real-time: the script stops at its next count hook
    assert not box["thread"].is_alive()
    assert isinstance(box["reply"], redis.ResponseError)
    assert "Script killed by a server shutdown" in str(box["reply"])


def test_a_killed_script_does_not_survive_pcall():
    server = FakeStreamsServer(version="7.4")
    control = server.client()
    control.config_set("busy-reply-threshold", "50")
    box = _run_in_thread(server.client(), "while true do pcall(function() while true do end end) end")
    _started(server)
    with pytest.raises(redis.ResponseError, match="^BUSY"):
        control.get("k")
    assert control.script_kill() is True
    box["thread"].join(WAIT_S)  # real-time: the kill takes effect at the next hook
    assert "Script killed by user with SCRIPT KILL..." in str(box["reply"])
    assert control.ping() is True
    with pytest.raises(redis.ResponseError, match="^NOTBUSY No scripts in execution right now."):
        control.script_kill()
    server.close()


def test_below_the_threshold_other_clients_wait_for_the_script():
    server = FakeStreamsServer(version="7.4")
    control = server.client()
    control.config_set("busy-reply-threshold", "5000")
    script = "local n = 0 for i = 1, 3000000 do n = n + i end redis.call('set', 'done', n) return n"
    box = _run_in_thread(server.client(), script)
    box["thread"].join(WAIT_S)  # real-time: a short CPU-bound script
    assert control.get("done") == str(sum(range(1, 3000001))).encode()
    server.close()


def _serve_with_a_busy_script(script: str, stop: Any) -> None:
    """A ``serve`` process whose client runs ``script`` until busy; ``stop(proc, client)`` must end the process."""
    proc = module_process("serve", "--port", "0", "--version", "7.0")
    try:
        url = proc.stdout.readline().strip()  # real-time: the first stdout line is the URL, flushed
        client = redis.Redis.from_url(url)
        client.config_set("busy-reply-threshold", "50")
        box = _run_in_thread(redis.Redis.from_url(url), script)
        wait_until(lambda: _busy(client), "the served script to be busy")  # real-time: another process
        stop(proc, client)
        proc.communicate(timeout=WAIT_S * 3)  # real-time: the process exits
        assert proc.returncode == 0
        box["thread"].join(WAIT_S)  # real-time: the client's connection is closed by the exit
        assert not box["thread"].is_alive()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_sigterm_stops_a_serve_process_running_a_looping_script():
    _serve_with_a_busy_script("while true do end", lambda proc, client: proc.send_signal(signal.SIGTERM))


def test_shutdown_from_a_client_ends_a_serve_process():
    _serve_with_a_busy_script(LOOP_AFTER_WRITE, lambda proc, client: client.shutdown(nosave=True))


def test_shutdown_nosave_stops_a_busy_script_and_the_server():
    server = FakeStreamsServer(version="7.0")
    control = server.client()
    control.config_set("busy-reply-threshold", "50")
    box = _run_in_thread(server.client(), LOOP_AFTER_WRITE)  # unkillable: only SHUTDOWN NOSAVE ends it
    wait_until(lambda: _busy(control), "the script to be busy")  # real-time: another thread
    control.shutdown(nosave=True)  # redis-py expects the connection to drop, as from an exiting server
    box["thread"].join(WAIT_S)  # real-time: the script stops at its next count hook
    assert "Script killed by a server shutdown" in str(box["reply"])
    wait_until(lambda: server.closed, "the server to close")  # real-time: closed in its own thread
    with pytest.raises(redis.ConnectionError):
        control.ping()
