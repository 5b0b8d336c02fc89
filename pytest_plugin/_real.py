"""The dual run: ``--fake-redis-streams-real=redis://host:port`` gives tests a real server instead.

The fixture flushes the server (FLUSHALL) before each test, ``.client`` / ``.async_client()`` talk
to it and, with ``patch=True``, every client the code under test builds is redirected to it
(whatever host, port, TLS or Unix socket it asked for; ``db`` is kept). What only the fake can do —
the clock, inspection views, fault injection, fake servers — skips the test with the reason.
Only ``redis://`` URLs are supported for the real server.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

import pytest
import redis
import redis.asyncio
import redis.asyncio.connection as _aconn
import redis.connection as _sconn

from fake_streams.patching import PoolPatch

from ._fixture import close_async
from ._options import Options

#: kwargs of the stock TLS / Unix classes a plain TCP connection does not take
_DROP = ("ssl", "path")


def _redirected(base: type, host: str, port: int) -> type:
    def __init__(self: Any, **kwargs: Any) -> None:
        for name in list(kwargs):
            if name.startswith(_DROP):
                del kwargs[name]
        kwargs["host"], kwargs["port"] = host, port
        base.__init__(self, **kwargs)  # type: ignore[misc]  # base is the class this one extends

    return type("Redirected" + base.__name__, (base,), {"__init__": __init__, "__module__": __name__})


def skip_reason(options: Options, server_version: str) -> Optional[str]:
    """Why a test cannot run against the real server at setup (its markers pin fake-only behaviour)."""
    explicit = options.explicit
    if explicit.get("clock") == "manual" or explicit.get("start_ms") is not None:
        return "fake_redis_streams: the test uses the manual clock (clock='manual' / start_ms), which a real server cannot follow"
    version = explicit.get("version")
    if version and not _same_version(str(version), server_version):
        return f"fake_redis_streams: the test is written for profile {version!r}; the real server is {server_version}"
    return None


def _same_version(profile: str, server: str) -> bool:
    kind, _, number = server.partition(" ")
    want_kind = "valkey" if profile.startswith("valkey-") else "redis"
    want = profile.split("-")[-1]
    return kind == want_kind and (number == want or number.startswith(want + "."))


class RealRedisStreams:
    """The handle in a dual run: same clients and URL, a real server behind them."""

    real = True

    def __init__(self, options: Options, url: str) -> None:
        self.options = options
        self.url = url
        self._client: Any = None
        self._async_clients: List[Any] = []
        self._closed = False
        kwargs = _sconn.parse_url(url)
        probe = redis.Redis.from_url(url)
        try:
            info = probe.info("server")
            probe.flushall()
        except redis.ConnectionError as exc:
            pytest.fail(f"fake_redis_streams: cannot reach the real server {url} (--fake-redis-streams-real): {exc}",
                        pytrace=False)
        finally:
            probe.close()
        self.server_version = (
            f"valkey {info['valkey_version']}" if "valkey_version" in info else f"redis {info['redis_version']}"
        )
        self._patch: Optional[PoolPatch] = None
        host, port = kwargs.get("host", "localhost"), int(kwargs.get("port", 6379))
        #: injectable classes that reach the real server whatever address they are given
        self.connection_class = _redirected(_sconn.Connection, host, port)
        self.async_connection_class = _redirected(_aconn.Connection, host, port)
        if options.patch:
            self._patch = PoolPatch(self.connection_class, self.async_connection_class, options.passthrough_hosts)
            self._patch.install()

    def __repr__(self) -> str:
        return f"<fake_redis_streams real={self.url!r} ({self.server_version})>"

    def _client_kwargs(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        out = self.options.client_kwargs()
        out.update(kwargs)
        return out

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = redis.Redis.from_url(self.url, **self._client_kwargs({}))
        return self._client

    def async_client(self, **kwargs: Any) -> Any:
        client = redis.asyncio.Redis.from_url(self.url, **self._client_kwargs(kwargs))
        self._async_clients.append(client)
        return client

    def flushall(self) -> None:
        self.client.flushall()

    def _fake_only(self, what: str) -> Any:
        pytest.skip(f"fake_redis_streams: {what} needs the fake server; this run uses the real server {self.url} "
                    "(--fake-redis-streams-real)")

    @property
    def server(self) -> Any:
        return self._fake_only(".server")

    @property
    def clock(self) -> Any:
        return self._fake_only("the clock (.clock)")

    @property
    def faults(self) -> Any:
        return self._fake_only("fault injection (.faults)")

    def server_for(self, url: str) -> Any:
        return self._fake_only(".server_for()")

    def servers(self) -> Any:
        return self._fake_only(".servers()")

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._fake_only("inspection (.stream())")

    def group(self, *args: Any, **kwargs: Any) -> Any:
        return self._fake_only("inspection (.group())")

    def streams(self, *args: Any, **kwargs: Any) -> Any:
        return self._fake_only("inspection (.streams())")

    def assert_all_acked(self, *args: Any, **kwargs: Any) -> Any:
        return self._fake_only("inspection (.assert_all_acked())")

    def blocked(self) -> Any:
        return self._fake_only(".blocked()")

    def wait_until_blocked(self, n: int = 1, timeout_s: float = 5.0) -> int:
        """Wait until the real server reports ``n`` blocked clients (INFO clients); returns the count."""
        __tracebackhide__ = True
        probe = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                count = int(probe.info("clients")["blocked_clients"])
                if count >= n:
                    return count
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"{count} client(s) blocked on the real server {self.url} after {timeout_s} s; expected {n}"
                    )
                time.sleep(0.005)  # real-time: polling a real server's client table
        finally:
            probe.close()

    def report(self) -> str:
        return ""

    def close(self) -> None:
        """Close clients and servers and undo the patch; AssertionError if the fake saw a problem."""
        __tracebackhide__ = True
        problems = self._shutdown()
        if problems:
            raise AssertionError("\n\n".join(problems))

    def _shutdown(self, check_faults: bool = True) -> List[str]:
        if self._closed:
            return []
        self._closed = True
        try:
            if self._client is not None:
                self._client.close()
            for client in self._async_clients:
                close_async(client)
        finally:
            if self._patch is not None:
                self._patch.uninstall()
        return []


__all__ = ["RealRedisStreams", "skip_reason"]
