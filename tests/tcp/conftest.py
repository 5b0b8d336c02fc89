"""Fixtures of the TCP tests: a served fake, raw RESP sockets, redis-cli, subprocesses.

* ``served`` — :func:`fake_streams.tcp.serve` of the ``server`` fixture (profile 7.4, ManualClock) on a
  free loopback port; closed at teardown.
* ``raw`` — ``raw(port)`` → a :class:`RawClient` sending commands and returning each reply's exact bytes.
* ``redis_cli`` — the path of ``redis-cli`` (Debian's redis-tools); skips without it, fails with
  FAKE_STREAMS_REQUIRE_REAL=1.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from typing import Any, Callable, List

import pytest

from fake_streams.tcp import serve
from tests.conftest import _missing

#: generous bound on any single wait for another thread / process (never reached when things work)
WAIT_S = 10.0
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def resp_command(*args: Any) -> bytes:
    parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


class RawClient:
    """A plain socket: ``call(*args)`` sends one command and returns the bytes of exactly one reply
    (:func:`reply_length` tells where the reply ends; nothing interprets the bytes)."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection((host, port), timeout=WAIT_S)
        self._pending = b""

    def send(self, *args: Any) -> None:
        self.sock.sendall(resp_command(*args))

    def read(self) -> bytes:
        """The raw bytes of the next reply (a bounded wait: the socket timeout)."""
        while True:
            cut = reply_length(self._pending)
            if cut:
                reply, self._pending = self._pending[:cut], self._pending[cut:]
                return reply
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError(f"closed by the server after {self._pending!r}")
            self._pending += chunk

    def call(self, *args: Any) -> bytes:
        self.send(*args)
        return self.read()

    def closed_by_peer(self) -> bool:
        """True once the server has closed the connection (bounded wait)."""
        try:
            return self.sock.recv(1) == b""
        except OSError:
            return True

    def close(self) -> None:
        self.sock.close()


_LINE_TYPES = frozenset(b"+-:_,#(")  # one line: simple string, error, integer, null, double, boolean, big number
_BULK_TYPES = frozenset(b"$!=")  # a length line, then that many bytes and CRLF: bulk, bulk error, verbatim
_AGGREGATE_TYPES = {ord("*"): 1, ord("~"): 1, ord(">"): 1, ord("%"): 2}  # elements per counted item


def _frame_end(data: bytes, pos: int) -> int:
    """End offset of the RESP2/RESP3 frame starting at ``pos`` (-1: incomplete). An attribute (``|``) is part of
    the frame of the reply that follows it."""
    line_end = data.find(b"\r\n", pos)
    if line_end < 0 or pos >= len(data):
        return -1
    kind, head, after = data[pos], data[pos + 1:line_end], line_end + 2
    if kind in _LINE_TYPES:
        return after
    if kind in _BULK_TYPES:
        size = int(head)
        return after if size < 0 else (after + size + 2 if len(data) >= after + size + 2 else -1)
    if kind in _AGGREGATE_TYPES or kind == ord("|"):
        count = int(head)
        for _ in range(max(count, 0) * _AGGREGATE_TYPES.get(kind, 2)):
            after = _frame_end(data, after)
            if after < 0:
                return -1
        return _frame_end(data, after) if kind == ord("|") else after
    raise AssertionError(f"not a RESP frame at offset {pos}: {data[pos:pos + 40]!r}")


def reply_length(data: bytes) -> int:
    """Length of the first complete reply in ``data`` (0: none yet)."""
    end = _frame_end(data, 0) if data else -1
    return max(end, 0)


@pytest.fixture
def served(server):
    handle = serve(server)
    yield handle
    handle.close()
    assert not handle.errors, "exceptions in the TCP server:\n" + "\n".join(handle.errors)


@pytest.fixture
def raw() -> Callable[..., RawClient]:
    made: List[RawClient] = []

    def make(port: int) -> RawClient:
        client = RawClient(port)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture(scope="session")
def redis_cli() -> str:
    path = os.environ.get("FAKE_STREAMS_REDIS_CLI") or shutil.which("redis-cli")
    if not path:
        _missing("redis-cli not found (Debian: apt-get install redis-tools)")
    return path


def wait_until(predicate: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    """Poll ``predicate`` until it is true. # real-time: another thread/process must reach a state first."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)  # real-time: bounded poll for observable state (deadline above)


def blocked_clients(server: Any) -> int:
    with server.backend.lock:
        return server.backend.stats()["blocked"]


def python_process(code: str, *args: str, **kwargs: Any) -> subprocess.Popen:
    """``python -c code args…`` with this checkout importable."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, **kwargs)


def module_process(*args: str) -> subprocess.Popen:
    """``python -m fake_streams args…``."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "fake_streams", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
