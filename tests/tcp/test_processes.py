"""Other processes on the served fake: a subprocess worker, a subprocess blocked in XREAD, and the
``python -m fake_streams serve`` process itself (SIGTERM/SIGINT: clean exit, port freed).

Each subprocess is a fresh interpreter (about a second to start); waits are bounded by WAIT_S.
"""

from __future__ import annotations

import signal
import socket
import threading
from typing import Any, List

import pytest
import redis

from .conftest import WAIT_S, blocked_clients, module_process, python_process, wait_until

WORKER = """
import sys, redis
r = redis.Redis.from_url(sys.argv[1], decode_responses=True)
done = 0
while done < 3:
    for _, entries in r.xreadgroup("workers", "sub", {"jobs": ">"}, count=10, block=0):
        for entry_id, fields in entries:
            r.xack("jobs", "workers", entry_id)
            print(entry_id, fields["n"], flush=True)
            done += 1
"""

BLOCKED_READER = """
import sys, redis
r = redis.Redis.from_url(sys.argv[1])
print(r.xread({"s": "$"}, block=0), flush=True)
"""


def finish(proc: Any) -> tuple:
    try:
        out, err = proc.communicate(timeout=WAIT_S * 3)  # real-time: a subprocess runs to its end
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    return proc.returncode, out, err


def test_subprocess_worker_consumes_what_the_test_produces(served, make_client):
    local = make_client()
    local.xgroup_create("jobs", "workers", id="$", mkstream=True)
    proc = python_process(WORKER, served.url)
    for n in range(3):
        local.xadd("jobs", {"n": n}, id=f"{n + 1}-0")
    code, out, err = finish(proc)
    assert code == 0, err
    assert out.splitlines() == ["1-0 0", "2-0 1", "3-0 2"]
    assert local.xpending("jobs", "workers")["pending"] == 0
    assert [(c["name"], c["pending"]) for c in local.xinfo_consumers("jobs", "workers")] == [(b"sub", 0)]


def test_subprocess_blocked_in_xread_is_woken_by_an_in_process_xadd(served, make_client):
    proc = python_process(BLOCKED_READER, served.url)
    try:
        wait_until(lambda: blocked_clients(served.server) == 1 or proc.poll() is not None,
                   "the subprocess to block", timeout=WAIT_S * 3)  # real-time: interpreter start-up
    except AssertionError:
        proc.kill()
        raise
    make_client().xadd("s", {"k": "v"}, id="1-0")
    code, out, err = finish(proc)
    assert code == 0, err
    assert out.strip() == "[[b's', [(b'1-0', {b'k': b'v'})]]]"


def _port_is_free(port: int) -> bool:
    """Nobody listens, and a server can bind it again (SO_REUSEADDR, as servers do: the closed
    connections leave TIME_WAIT entries behind, on a real redis-server too)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=WAIT_S).close()
        return False
    except ConnectionRefusedError:
        pass
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:
            return False
        return True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_process_stops_cleanly(sig):
    proc = module_process("serve", "--port", "0", "--version", "7.0", "--clock", "manual", "--start-ms", "5000")
    try:
        url = proc.stdout.readline().strip()  # real-time: the first stdout line is the URL, flushed
        assert url.startswith("redis://127.0.0.1:") and url.endswith("/0"), url
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        client = redis.Redis.from_url(url)
        assert client.xadd("s", {"k": "v"}) == b"5000-0"  # the manual clock
        assert client.info("server")["redis_version"] == "7.0.15"  # --version 7.0
        results: List[Any] = []

        def blocked() -> None:
            try:
                results.append(redis.Redis.from_url(url).xread({"s": "$"}, block=0))
            except Exception as exc:
                results.append(exc)

        thread = threading.Thread(target=blocked, daemon=True)
        thread.start()
        wait_until(lambda: client.info("clients")["blocked_clients"] == 1, "a blocked client")  # real-time: thread
        client.close()
        proc.send_signal(sig)
        code, out, err = finish(proc)
        assert code == 0, err
        thread.join(WAIT_S)  # real-time: the released thread returns
        assert len(results) == 1 and isinstance(results[0], redis.ConnectionError)
        assert _port_is_free(port)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_serve_tunes_its_collector():
    """``serve`` moves what startup made out of the collected generations and collects the young one every 20,000
    new containers (fake_streams.__main__._tune_gc): a process of its own, run until stopped (here at once)."""
    proc = python_process(
        "import contextlib, gc, threading\n"
        "import fake_streams.__main__ as cli\n"
        "@contextlib.contextmanager\n"
        "def stop_at_once():\n"
        "    stop = threading.Event()\n"
        "    stop.set()\n"
        "    yield stop\n"
        "cli._stop_on_signals = stop_at_once\n"
        "assert cli.main(['serve', '--port', '0']) == 0\n"
        "print(gc.get_threshold(), gc.get_freeze_count() > 1000)\n")
    out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, err
    assert out.splitlines()[-1] == "(20000, 20, 10) True"


def test_serve_reports_a_busy_port(served, capsys):
    from fake_streams.__main__ import main

    assert main(["serve", "--port", str(served.port)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and f"cannot listen on 127.0.0.1:{served.port}" in err


def test_serve_requirepass_and_unixsocket(tmp_path, raw):
    """``serve --requirepass`` sets CONFIG requirepass: AUTH is checked, and until it succeeds the parser's
    unauthenticated limits apply (more than 10 arguments is a protocol error); ``--unixsocket`` listens there."""
    path = str(tmp_path / "fake.sock")
    proc = module_process("serve", "--port", "0", "--requirepass", "s3cret", "--unixsocket", path)
    try:
        url = proc.stdout.readline().strip()
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        c = raw(port)
        assert c.call("PING") == b"-NOAUTH Authentication required.\r\n"
        assert c.call("XADD", "s", "*", "f", "v") == b"-NOAUTH Authentication required.\r\n"
        assert c.call("AUTH", "wrong").startswith(b"-WRONGPASS")
        c.send(*["ECHO"] + ["x"] * 10)
        assert c.read() == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
        assert c.closed_by_peer()
        c = raw(port)
        assert c.call("AUTH", "s3cret") == b"+OK\r\n"
        assert c.call("DEL", *[f"k{i}" for i in range(20)]) == b":0\r\n"
        assert c.call("XADD", "s", "1-0", "f", "v") == b"$3\r\n1-0\r\n"
        assert c.call("PING") == b"+PONG\r\n"
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.settimeout(WAIT_S)
        unix.connect(path)
        unix.sendall(b"AUTH s3cret\r\nCLIENT INFO\r\n")
        data = b""
        while data.count(b"\n") < 3:
            data += unix.recv(4096)
        assert data.startswith(b"+OK\r\n$") and b" flags=U " in data and f"addr={path}:0".encode() in data
        unix.close()
    finally:
        proc.terminate()
        proc.wait(WAIT_S)
