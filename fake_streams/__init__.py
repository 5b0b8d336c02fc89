"""fake_streams: an in-memory, byte-exact Redis Streams server for Python test suites.

Stream commands run in this package's engine; every other command is served by fakeredis, in the
same keyspace, so TYPE, EXPIRE, MULTI/EXEC, WATCH and Lua work across both.

>>> import redis
>>> from fake_streams import FakeStreamsConnection, FakeStreamsServer, ManualClock
>>> server = FakeStreamsServer(version="7.4", clock=ManualClock(1_700_000_000_000))
>>> pool = redis.ConnectionPool(connection_class=FakeStreamsConnection.bind(server))
>>> r = redis.Redis(connection_pool=pool)
>>> r.set("greeting", "hello")
True
>>> r.type("greeting")
b'string'
>>> server.close()

Without ``bind``, connections to the same ``host:port`` share one server::

    r = redis.Redis.from_url("redis://cache:6379/0", connection_class=FakeStreamsConnection)

The pytest fixture ``fake_redis_streams`` (package ``pytest_plugin``) gives each test a fresh server;
outside pytest, ``with patch_redis() as network:`` routes every redis-py client to fake servers.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

#: public name -> the module defining it; imported on first access (PEP 562), so that importing the package
#: (e.g. for ``fake_streams.profiles``, which the pytest plugin reads at start-up) costs no redis/fakeredis import
_EXPORTS = {
    "BlockedClient": "blocking", "BlockSafetyError": "blocking",
    "ManualClock": "clock", "SystemClock": "clock",
    "FakeStreamsAsyncConnection": "connection", "FakeStreamsConnection": "connection",
    "ReplyError": "errors",
    "Faults": "faults",
    "StreamID": "ids",
    "GroupView": "inspect", "StreamView": "inspect",
    "FakeNetwork": "patching", "patch_redis": "patching",
    "PROFILES": "profiles", "Profile": "profiles",
    "FakeStreamsServer": "server",
}

if TYPE_CHECKING:  # pragma: no cover - what type checkers and IDEs see
    from .blocking import BlockedClient, BlockSafetyError
    from .clock import ManualClock, SystemClock
    from .connection import FakeStreamsAsyncConnection, FakeStreamsConnection
    from .errors import ReplyError
    from .faults import Faults
    from .ids import StreamID
    from .inspect import GroupView, StreamView
    from .patching import FakeNetwork, patch_redis
    from .profiles import PROFILES, Profile
    from .server import FakeStreamsServer


def __getattr__(name: str) -> Any:
    """The public names of :data:`_EXPORTS`, and ``__version__`` (see :mod:`fake_streams._version`), on first access."""
    if name == "__version__":
        from ._version import version

        value = globals()["__version__"] = version()
        return value
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # later accesses are plain module attributes
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "PROFILES",
    "BlockSafetyError",
    "BlockedClient",
    "FakeNetwork",
    "FakeStreamsAsyncConnection",
    "FakeStreamsConnection",
    "FakeStreamsServer",
    "Faults",
    "GroupView",
    "ManualClock",
    "Profile",
    "ReplyError",
    "StreamID",
    "StreamView",
    "SystemClock",
    "patch_redis",
]
