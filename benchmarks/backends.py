"""The five backends of the benchmark, each reached through ``redis.Redis``.

* ``floor`` — :mod:`floor`: canned replies, redis-py's own cost only;
* ``bare`` — :mod:`bare`: the floor's replies already parsed, redis-py's cost without packing/parsing;
* ``ours`` — this project on a bare server: ``ConnectionPool(connection_class=FakeStreamsConnection,
  server=FakeStreamsServer())``;
* ``fixture`` — this project as the pytest fixture gives it: the handle ``fake_redis_streams`` yields
  (:class:`pytest_plugin._fixture.FakeRedisStreams`, default options: faults installed, network classes), its ``.client``;
* ``patched`` — this project as ``patch_redis()`` gives it: a plain ``redis.Redis(host=..., port=...)`` built
  while the patch is installed (the patch stays installed for the run; the real server's address passes through);
* ``before`` — (``--before REV``) the ``fake_streams`` of git revision REV, imported as ``fake_streams_before``,
  on a bare server like ``ours``: before/after figures of one change in one run;
* ``fakeredis`` — ``fakeredis.FakeRedis`` with its own stream implementation;
* ``real`` — ``/usr/bin/redis-server`` started by :class:`RealServer` on a free loopback port.

A :class:`Backend` builds one dataset (:meth:`Backend.prefill`) and hands out clients per protocol
(``None`` = redis-py's default). The floor and bare have no data: their workloads install canned replies.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from typing import Any, Dict, List, Optional

import bare
import floor
import redis

#: The fields of every entry (constant, so all backends hold the same bytes).
FIELDS = {b"user": b"u:1234", b"action": b"click"}
FIELD_LIST = [b"user", b"u:1234", b"action", b"click"]
#: Prefilled entry i (0-based) has ID ``BASE_MS + i + 1``-0 (realistic 13-digit ms; below "now").
BASE_MS = 1_600_000_000_000
FILL_CHUNK = 1000


def entry_id(i: int) -> bytes:
    return b"%d-0" % (BASE_MS + i + 1)


class Backend:
    name = "?"
    has_data = True

    def client(self, protocol: Optional[int]) -> redis.Redis:
        raise NotImplementedError

    def close(self) -> None:
        pass

    # ------------------------------------------------------------------------------ setup helpers
    def prefill(self, key: bytes, n: int) -> float:
        """XADD ``n`` entries with IDs :func:`entry_id` in pipelines of 1000; returns seconds taken."""
        r = self.client(2)
        t0 = time.perf_counter()
        for start in range(0, n, FILL_CHUNK):
            pipe = r.pipeline(transaction=False)
            for i in range(start, min(n, start + FILL_CHUNK)):
                pipe.execute_command("XADD", key, entry_id(i), *FIELD_LIST)
            pipe.execute()
        return time.perf_counter() - t0

    def raw(self, *args: Any) -> Any:
        """Run one command and return the parsed reply without redis-py's callback (cheap for huge replies)."""
        r = self.client(2)
        conn = r.connection_pool.get_connection()
        try:
            conn.send_command(*args)
            return conn.read_response()
        finally:
            r.connection_pool.release(conn)

    def read_all_into_pel(self, key: bytes, group: bytes, consumer: bytes, n: int) -> None:
        """XGROUP CREATE ``group`` at 0 and deliver all ``n`` entries to ``consumer`` (a PEL of ``n``)."""
        self.raw("XGROUP", "CREATE", key, group, "0")
        done = 0
        while done < n:
            step = min(100_000, n - done)
            self.raw("XREADGROUP", "GROUP", group, consumer, "COUNT", step, "STREAMS", key, ">")
            done += step


class Ours(Backend):
    name = "ours"
    package = "fake_streams"

    def __init__(self) -> None:
        import importlib

        streams = importlib.import_module(self.package)
        self.server = streams.FakeStreamsServer()
        self._connection_class = streams.FakeStreamsConnection
        self._clients: Dict[Optional[int], redis.Redis] = {}

    def client(self, protocol: Optional[int]) -> redis.Redis:
        r = self._clients.get(protocol)
        if r is None:
            kwargs: Dict[str, Any] = {"connection_class": self._connection_class, "server": self.server}
            if protocol is not None:
                kwargs["protocol"] = protocol
            r = self._clients[protocol] = redis.Redis(connection_pool=redis.ConnectionPool(**kwargs))
        return r

    def close(self) -> None:
        for r in self._clients.values():
            r.close()
        self._clients.clear()
        self.server.close()


class Before(Ours):
    """``fake_streams`` of an earlier revision (see :func:`install_before`), on a bare server."""

    name = "before"
    package = "fake_streams_before"


def install_before(rev: str, root: str, into: str) -> str:
    """Extract ``fake_streams/`` of git revision ``rev`` as the package ``fake_streams_before`` under ``into``
    (the package imports itself relatively only, so the copy is independent of ours); returns its revision."""
    import io
    import tarfile

    sha = subprocess.run(["git", "-C", root, "rev-parse", "--short", rev], capture_output=True, text=True,
                         check=True).stdout.strip()
    data = subprocess.run(["git", "-C", root, "archive", rev, "fake_streams"], capture_output=True, check=True).stdout
    target = os.path.join(into, "fake_streams_before")
    shutil.rmtree(target, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            member.name = "fake_streams_before" + member.name[len("fake_streams"):]
            tar.extract(member, into)
    return sha


class Fixture(Ours):
    """The handle of the ``fake_redis_streams`` fixture (what a test gets), default options, its ``.client``."""

    name = "fixture"

    def __init__(self) -> None:
        from pytest_plugin._fixture import FakeRedisStreams
        from pytest_plugin._options import Options

        self.handle = FakeRedisStreams(Options(patch=False))  # .client does not go through the patch
        self.server = self.handle.server
        self._clients: Dict[Optional[int], redis.Redis] = {}

    def client(self, protocol: Optional[int]) -> redis.Redis:
        r = self._clients.get(protocol)
        if r is None:
            kwargs = {} if protocol is None else {"protocol": protocol}
            r = self._clients[protocol] = redis.Redis.from_url(
                self.handle.url, connection_class=self.handle.connection_class, **kwargs)
        return r

    def close(self) -> None:
        super().close()
        self.handle.close()


class Patched(Ours):
    """``patch_redis()``: a stock ``redis.Redis(host="cache", port=6379)`` reaches a fake server."""

    name = "patched"

    def __init__(self, passthrough: Optional[List[str]] = None) -> None:
        from fake_streams import patch_redis

        self._patch = patch_redis(passthrough_hosts=passthrough or ())
        self.network = self._patch.__enter__()
        self.server = self.network.server_for("redis://cache:6379")
        self._clients: Dict[Optional[int], redis.Redis] = {}

    def client(self, protocol: Optional[int]) -> redis.Redis:
        r = self._clients.get(protocol)
        if r is None:
            kwargs = {} if protocol is None else {"protocol": protocol}
            r = self._clients[protocol] = redis.Redis(host="cache", port=6379, **kwargs)
        return r

    def close(self) -> None:
        for r in self._clients.values():
            r.close()
        self._clients.clear()
        self._patch.__exit__(None, None, None)


class FakeRedisBackend(Backend):
    name = "fakeredis"

    def __init__(self) -> None:
        import fakeredis

        self._fakeredis = fakeredis
        self.server = fakeredis.FakeServer()
        self._clients: Dict[Optional[int], redis.Redis] = {}

    def client(self, protocol: Optional[int]) -> redis.Redis:
        r = self._clients.get(protocol)
        if r is None:
            kwargs: Dict[str, Any] = {"server": self.server}
            if protocol is not None:
                kwargs["protocol"] = protocol
            r = self._clients[protocol] = self._fakeredis.FakeRedis(**kwargs)
        return r

    def close(self) -> None:
        for r in self._clients.values():
            r.close()
        self._clients.clear()


class Real(Backend):
    name = "real"

    def __init__(self, port: int) -> None:
        self.port = port
        self._clients: Dict[Optional[int], redis.Redis] = {}
        self.client(2).flushall()

    def client(self, protocol: Optional[int]) -> redis.Redis:
        r = self._clients.get(protocol)
        if r is None:
            kwargs: Dict[str, Any] = {"host": "127.0.0.1", "port": self.port, "socket_timeout": 120}
            if protocol is not None:
                kwargs["protocol"] = protocol
            r = self._clients[protocol] = redis.Redis(**kwargs)
        return r

    def read_all_into_pel(self, key: bytes, group: bytes, consumer: bytes, n: int) -> None:
        # server-side (Lua) so the 1e6-entry reply never crosses the socket
        self.raw("XGROUP", "CREATE", key, group, "0")
        done = 0
        while done < n:
            step = min(100_000, n - done)
            self.raw(
                "EVAL",
                "redis.call('XREADGROUP','GROUP',ARGV[1],ARGV[2],'COUNT',ARGV[3],'STREAMS',KEYS[1],'>') return 1",
                1, key, group, consumer, step,
            )
            done += step

    def used_memory(self) -> int:
        return int(self.client(2).info("memory")["used_memory"])

    def close(self) -> None:
        try:
            self.client(2).flushall()
        except redis.RedisError:
            pass
        for r in self._clients.values():
            r.close()
        self._clients.clear()


class Floor(Backend):
    name = "floor"
    has_data = False

    def __init__(self) -> None:
        self.canned = floor.Canned()
        self._clients: Dict[Optional[int], redis.Redis] = {}

    def client(self, protocol: Optional[int]) -> redis.Redis:
        r = self._clients.get(protocol)
        if r is None:
            r = self._clients[protocol] = floor.floor_client(self.canned, protocol)
        return r

    def prefill(self, key: bytes, n: int) -> float:
        return 0.0

    def read_all_into_pel(self, key: bytes, group: bytes, consumer: bytes, n: int) -> None:
        pass


class Bare(Floor):
    """The floor's canned replies, handed to redis-py already parsed (no packing, no parsing)."""

    name = "bare"

    def client(self, protocol: Optional[int]) -> redis.Redis:
        r = self._clients.get(protocol)
        if r is None:
            r = self._clients[protocol] = bare.bare_client(self.canned, protocol)
        return r


# ------------------------------------------------------------------------------------ real server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RealServer:
    """``redis-server`` on a free loopback port, no persistence; :meth:`stop` ends exactly that process."""

    def __init__(self, binary: str = "/usr/bin/redis-server") -> None:
        self.binary = binary
        self.proc: Optional[subprocess.Popen] = None
        self.port = 0
        self.version = ""
        self.note = ""

    def start(self) -> bool:
        path = self.binary if os.path.exists(self.binary) else shutil.which("redis-server")
        if not path:
            self.note = f"{self.binary} not found: real-server column skipped"
            return False
        self.port = free_port()
        args: List[str] = [
            path, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--loglevel", "warning", "--logfile", "",
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                info = redis.Redis(host="127.0.0.1", port=self.port, protocol=2).info("server")
                self.version = info["redis_version"]
                return True
            except redis.ConnectionError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        self.note = f"{path} did not answer on 127.0.0.1:{self.port}: real-server column skipped"
        self.stop()
        return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
