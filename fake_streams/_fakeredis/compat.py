"""Every name this project takes from fakeredis, public or private, with the fallbacks older releases need.

Supported: fakeredis 2.34.1 … 2.41 (the tox matrix runs the floor and the latest). fakeredis 2.39 moved
``_server``/``_basefakesocket``/``_connection`` into ``_core``/``_socket``/``_clients``: every private import
here has a fallback. The rest of the adapter package imports fakeredis's names from this module only, so a
fakeredis release that moves something is mended in one place.
"""

from __future__ import annotations

import importlib.metadata
import threading
import weakref
from typing import Any, Dict, List, Tuple

import fakeredis
import fakeredis.aioredis as _aioredis
from fakeredis import _msgs as msgs
from fakeredis._commands import COMMANDS_WITH_SUB, Key, Signature
from fakeredis._helpers import NoResponse, SimpleError, SimpleString, compile_pattern
from fakeredis.model import BaseModel, ExpiringMembersSet, Hash, ZSet

try:
    from fakeredis.model._command_info import get_command_info
except ImportError:  # pragma: no cover - a release without the command table

    def get_command_info(cmd: bytes) -> Any:  # type: ignore[misc]
        return None
try:  # fakeredis >= 2.39
    from fakeredis._socket._resp import extract_command
except ImportError:  # pragma: no cover - fakeredis <= 2.38 (a private name there)
    from fakeredis._basefakesocket import _extract_command as extract_command  # type: ignore[no-redef,import-not-found]
try:  # fakeredis >= 2.39
    from fakeredis._core import CommandItem
except ImportError:  # pragma: no cover - fakeredis <= 2.38
    from fakeredis._commands import CommandItem  # type: ignore[no-redef]
try:  # fakeredis >= 2.39
    from fakeredis._socket import AsyncFakeSocket
except ImportError:  # pragma: no cover - fakeredis <= 2.38
    from fakeredis.aioredis import AsyncFakeSocket  # type: ignore[no-redef]

FLOOR = (2, 34, 1)
FAKEREDIS_VERSION = tuple(int(p) for p in importlib.metadata.version("fakeredis").split(".")[:3] if p.isdigit())
if FAKEREDIS_VERSION < FLOOR:  # pragma: no cover
    raise ImportError(f"fake_streams needs fakeredis >= 2.34.1 (TYPE of foreign values); found {FAKEREDIS_VERSION}")


def _weak_class_caches() -> None:
    """fakeredis >= 2.41 remembers, per connection class, whether it takes ``driver_info`` in a module-level dict
    (``_clients._setup._ACCEPTS_DRIVER_INFO``), asked for a connection given none of ``driver_info`` / ``lib_name``
    / ``lib_version``: on redis-py 4.x every one of ours (no such arguments there, connection.py's _add_setinfo has
    nothing to give). It would keep every ``bind`` class, and the server it holds, alive until the process ends
    (issue 13): weak keys instead, the same answers. O(entries) once, at import."""
    try:
        from fakeredis._clients import _setup
    except ImportError:  # pragma: no cover - fakeredis <= 2.38: no such cache
        return
    cache = getattr(_setup, "_ACCEPTS_DRIVER_INFO", None)
    if type(cache) is dict:
        _setup._ACCEPTS_DRIVER_INFO = weakref.WeakKeyDictionary(cache)  # type: ignore[assignment]  # same get/set


_weak_class_caches()

#: fakeredis's sync / asyncio connection classes (``FakeConnection`` was the class name up to 2.34).
SyncConnectionBase: Any = getattr(fakeredis, "FakeRedisConnection", None) or fakeredis.FakeConnection
AsyncConnectionBase: Any = getattr(_aioredis, "FakeAsyncRedisConnection", None) or _aioredis.FakeConnection
#: fakeredis's FakeServer (one keyspace, its lock, its CONFIG dict, its sockets).
FakeServer = fakeredis.FakeServer

_acl_module: Any  # the module whose get_commands_by_category a new server's ACL asks (its default user: "+@all")
try:
    import fakeredis.model._acl as _acl_module
except ImportError:  # pragma: no cover - a release that keeps its ACL elsewhere: servers are built plainly
    _acl_module = None
_BY_CATEGORY: Any = getattr(_acl_module, "get_commands_by_category", None)
#: category -> the commands fakeredis's table lists under it (the table is read once, from fakeredis's own data)
_CATEGORY_COMMANDS: Dict[Any, Tuple[bytes, ...]] = {}
_BUILDING = threading.Lock()


def _commands_by_category(category: Any) -> List[bytes]:
    """``get_commands_by_category``, each category's answer remembered (a fresh list each time, as the original)."""
    found = _CATEGORY_COMMANDS.get(category)
    if found is None:
        found = _CATEGORY_COMMANDS[category] = tuple(_BY_CATEGORY(category))
    return list(found)


def new_fake_server(version: Any, server_type: Any) -> Any:
    """``FakeServer(version=version, server_type=server_type)``, the same server, built faster: its default user's
    ACL (``+@all``) asks ``get_commands_by_category``, which walks fakeredis's whole command table at every new
    server (60 µs warm, three quarters of the construction; more in a test suite, where it is never in the CPU's
    caches) for an answer that never changes. While our server is built that name answers from a cache; it is put
    back at once (fakeredis's own servers, ACL SETUSER … keep the original). Built under a lock, so two builds never
    leave the cached one in place; a fakeredis server built meanwhile in another thread gets the same answers."""
    if _BY_CATEGORY is None or getattr(_acl_module, "get_commands_by_category", None) is not _BY_CATEGORY:
        return FakeServer(version=version, server_type=server_type)  # pragma: no cover - someone else replaced it
    with _BUILDING:
        _acl_module.get_commands_by_category = _commands_by_category
        try:
            return FakeServer(version=version, server_type=server_type)
        finally:
            _acl_module.get_commands_by_category = _BY_CATEGORY
SKIP_RESP2 = msgs.FLAG_SKIP_CONVERT_TO_RESP2
CONNECTION_ERROR_MSG = msgs.CONNECTION_ERROR_MSG


def bytes_args(n: int) -> Any:
    """``(bytes,) * n``: the argument types of a fakeredis ``Signature`` (fakeredis annotates them as 1-tuples)."""
    return (bytes,) * n


__all__ = [
    "COMMANDS_WITH_SUB", "FAKEREDIS_VERSION", "FLOOR", "AsyncConnectionBase", "AsyncFakeSocket", "BaseModel",
    "CONNECTION_ERROR_MSG", "CommandItem", "ExpiringMembersSet", "FakeServer", "Hash", "Key", "NoResponse", "SKIP_RESP2", "Signature", "SimpleError",
    "SimpleString", "SyncConnectionBase", "ZSet", "bytes_args", "compile_pattern", "extract_command", "get_command_info",
    "msgs", "new_fake_server",
]
