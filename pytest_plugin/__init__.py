"""pytest plugin of fake-redis-streams: the ``fake_redis_streams`` fixture.

Loaded through the ``pytest11`` entry point; importing it registers nothing global.
"""

from __future__ import annotations

import asyncio
from typing import Any, List

import pytest

from fake_streams import FakeStreamsServer

__all__ = ["FakeRedisStreams", "fake_redis_streams"]


class FakeRedisStreams:
    """The handle the ``fake_redis_streams`` fixture yields (private constructor; for type hints)."""

    def __init__(self, server: FakeStreamsServer) -> None:
        self.server = server
        self._client: Any = None
        self._async_clients: List[Any] = []

    @property
    def clock(self) -> Any:
        """The server clock (SystemClock; a ManualClock has ``.advance(ms)`` / ``.set(ms)``)."""
        return self.server.clock

    @property
    def client(self) -> Any:
        """A sync ``redis.Redis`` on the server (created on first use, closed at teardown)."""
        if self._client is None:
            self._client = self.server.client()
        return self._client

    def async_client(self, **kwargs: Any) -> Any:
        """A new ``redis.asyncio.Redis`` on the server; kwargs go to its pool (``protocol``, ``decode_responses`` …)."""
        client = self.server.async_client(**kwargs)
        self._async_clients.append(client)
        return client

    def _teardown(self) -> None:
        if self._client is not None:
            self._client.close()
        for client in self._async_clients:
            _close_async(client)
        self.server.close()
        errors = self.server.internal_errors
        if errors:
            lines = [f"- {name} {args!r}\n{tb}" for name, args, tb in errors]
            pytest.fail(
                "fake_redis_streams: a command handler raised an unexpected exception "
                "(the client got an 'ERR fake_streams internal error' reply):\n" + "\n".join(lines),
                pytrace=False,
            )


def _close_async(client: Any) -> None:
    """Close an asyncio client from synchronous teardown (its own loop may be gone already)."""
    close = getattr(client, "aclose", None) or client.close
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(close())
    except Exception:  # best effort: the connections are in memory, nothing leaks outside the process
        pass
    finally:
        loop.close()


@pytest.fixture
def fake_redis_streams() -> Any:
    """A fresh in-memory Redis Streams server for this test (profile "7.4", wall clock).

    Yields a handle with ``.server`` (FakeStreamsServer), ``.clock`` (the server clock),
    ``.client`` (a sync redis.Redis on the server) and ``.async_client(**kwargs)`` (a new
    redis.asyncio.Redis). Clients are closed at teardown, and the test fails if a command handler
    raised an unexpected exception.
    """
    handle = FakeRedisStreams(FakeStreamsServer(version="7.4"))
    yield handle
    handle._teardown()

