"""redis-py connection classes (sync and asyncio) whose server is a :class:`FakeStreamsServer`.

They are ordinary redis-py connection classes, built on fakeredis's in-memory socket::

    pool = redis.ConnectionPool(connection_class=FakeStreamsConnection, host="cache", port=6379, protocol=3)
    client = redis.Redis(connection_pool=pool)
    client = redis.Redis.from_url("redis://cache:6379/0", connection_class=FakeStreamsConnection)

Connections to the same ``host:port`` (or Unix ``path``) share one server
(:meth:`FakeStreamsServer.for_address`), unless ``server=`` names one or the class was made with
:meth:`FakeStreamsConnection.bind`. ``version=`` picks the profile of a server created that way.
Keyword arguments real sockets need (``ssl_*``, ``socket_keepalive*``, ``socket_type``) are dropped.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from . import _fakeredis
from .server import FakeStreamsServer

#: kwargs redis-py builds for SSL / keepalive / socket families that an in-memory socket has no use for
_DROP_PREFIXES = ("ssl_", "socket_keepalive", "socket_type")


def _resolve(cls: type, kwargs: Dict[str, Any]) -> FakeStreamsServer:
    """Pick the server for a new connection and strip what the base classes must not see."""
    server = kwargs.pop("server", None) or getattr(cls, "_bound_server", None)
    version = kwargs.pop("version", None)
    path = kwargs.pop("path", None)
    for name in list(kwargs):
        if name.startswith(_DROP_PREFIXES):
            del kwargs[name]
    if server is None:
        if path:
            server = FakeStreamsServer.for_path(path, version)
        else:
            server = FakeStreamsServer.for_address(kwargs.get("host", "localhost"), kwargs.get("port", 6379), version)
    elif not isinstance(server, FakeStreamsServer):
        raise TypeError(f"server= must be a FakeStreamsServer, not {type(server).__name__}")
    if server.closed:
        raise ValueError(f"{server!r} is closed")
    return server


class _Common:
    """What the sync and asyncio classes share."""

    _bound_server: Optional[FakeStreamsServer] = None
    streams_server: FakeStreamsServer

    @classmethod
    def bind(cls, server: FakeStreamsServer) -> type:
        """A subclass whose connections all use ``server`` (whatever host/port they are given)."""
        return type(cls.__name__, (cls,), {"_bound_server": server, "__module__": cls.__module__})

    # redis-py >= 8: maintenance notifications would resolve the host name (a real DNS lookup) and send
    # CLIENT MAINT_NOTIFICATIONS; a fake server never moves, so skip all of it (activate_… is per class).
    def _add_maint_notifications_to_handshake(self, *args: Any, **kwargs: Any) -> None:
        return None

    def get_resolved_ip(self) -> Optional[str]:
        return None

    def _decode(self, response: Any) -> Any:
        """Decode a reply as the parser would (RESP3 maps too); identity without ``decode_responses``."""
        if not getattr(self.encoder, "decode_responses", False):  # type: ignore[attr-defined]
            return response
        if isinstance(response, list):
            return [self._decode(item) for item in response]
        if isinstance(response, dict):
            return {self._decode(k): self._decode(v) for k, v in response.items()}
        if isinstance(response, bytes):
            return self.encoder.decode(response)  # type: ignore[attr-defined]
        return response


class FakeStreamsConnection(_Common, _fakeredis.SyncConnectionBase):
    """A ``redis.Connection`` served in memory by a :class:`FakeStreamsServer`."""

    def __init__(self, **kwargs: Any) -> None:
        server = _resolve(type(self), kwargs)
        self.streams_server = server
        super().__init__(server=server.backend.fake, **kwargs)

    def _connect(self) -> Any:
        return _fakeredis.attach(super()._connect(), self.streams_server)

    def activate_maint_notifications_handling_if_enabled(self, *args: Any, **kwargs: Any) -> None:
        return None


class FakeStreamsAsyncConnection(_Common, _fakeredis.AsyncConnectionBase):
    """A ``redis.asyncio.Connection`` served in memory by a :class:`FakeStreamsServer`."""

    def __init__(self, **kwargs: Any) -> None:
        server = _resolve(type(self), kwargs)
        self.streams_server = server
        super().__init__(server=server.backend.fake, **kwargs)

    async def _connect(self) -> None:
        await super()._connect()
        _fakeredis.attach(self._sock, self.streams_server)

    async def activate_maint_notifications_handling_if_enabled(self, *args: Any, **kwargs: Any) -> None:
        return None


__all__ = ["FakeStreamsAsyncConnection", "FakeStreamsConnection"]
