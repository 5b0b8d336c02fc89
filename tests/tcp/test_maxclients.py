"""maxclients: 10,000 idle connections all answer PING; the next one gets the server's error line and a close.

The test process needs ~20,100 descriptors (both ends of every connection live here): it raises its soft
RLIMIT_NOFILE and skips when the hard limit is too low.
"""

from __future__ import annotations

import resource
import socket

import pytest

from fake_streams.tcp import serve

from .conftest import WAIT_S, module_process


@pytest.fixture
def descriptors():
    """10,001 client sockets in this process (the server runs in a subprocess that raises its own limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 10_000 + 200
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"needs {need} file descriptors, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.slow  # 10,000 sockets (~3 s); test_maxclients_from_config_and_argument checks the reply in the fast loop
def test_ten_thousand_idle_clients_then_max_number_of_clients_reached(descriptors):
    proc = module_process("serve", "--port", "0", "--maxclients", "10000")
    socks: list = []
    try:
        url = proc.stdout.readline().strip()
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        for _ in range(10_000):
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=WAIT_S))
        for sock in socks:  # every one answers: all the requests sent, then the replies read
            sock.sendall(b"PING\r\n")
        for sock in socks:
            assert sock.recv(16) == b"+PONG\r\n"
        extra = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        assert extra.recv(100) == b"-ERR max number of clients reached\r\n"
        assert extra.recv(100) == b""
        extra.close()
        socks.pop().close()  # one leaves: its place is free again
        for _ in range(100):  # the server sees the close in its next pass
            again = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
            again.sendall(b"PING\r\n")
            reply = again.recv(100)
            if reply == b"+PONG\r\n":
                socks.append(again)
                break
            again.close()
        assert reply == b"+PONG\r\n"
    finally:
        for sock in socks:
            sock.close()
        proc.terminate()
        proc.wait(WAIT_S)


def test_maxclients_from_config_and_argument(server, raw):
    with serve(server, maxclients=2) as handle:
        first, second = raw(handle.port), raw(handle.port)
        refused = socket.create_connection(("127.0.0.1", handle.port), timeout=WAIT_S)
        assert refused.recv(100) == b"-ERR max number of clients reached\r\n"
        refused.close()
        assert first.call("CONFIG", "SET", "maxclients", "3") == b"+OK\r\n"
        third = raw(handle.port)
        assert third.call("PING") == b"+PONG\r\n" and second.call("PING") == b"+PONG\r\n"
