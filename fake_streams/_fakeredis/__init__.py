"""The fakeredis adapter: the only package that imports fakeredis (supported: 2.34.1 … 2.41).

fakeredis serves every non-stream command and owns the keyspace, MULTI/EXEC, WATCH, Lua and the server lock;
stream commands run in our engine, in the same keyspace. Modules, each owning one thing (no import cycles:
each imports only those above it):

* :mod:`.compat` — every name taken from fakeredis, with the fallbacks of older releases;
* :mod:`.values` — :class:`StreamValue`, a stream as fakeredis stores it (TYPE says ``stream``);
* :mod:`.backend` — :class:`Backend` (a fakeredis server behind one ``FakeStreamsServer``) and
  :class:`Keyspace` (one database as a handler's context sees it), reply conversions;
* :mod:`.access` — what sessions do on a fakeredis socket (client id, protocol, reply queue, kill, events);
* :mod:`.routing` — which names the engine serves, with fakeredis signatures carrying the Redis arity;
* :mod:`.overrides` — the table of non-stream commands served by us instead of fakeredis
  (:mod:`.builtin`: HELLO, INFO, CLIENT UNBLOCK, COPY; :mod:`.dumprestore`: DUMP, RESTORE; :mod:`.server_cmds`:
  OBJECT, AUTH, transaction refusals, SWAPDB …; :mod:`.config_cmd`: CONFIG; :mod:`.scripting`: EVAL*, SCRIPT,
  FUNCTION, FCALL*, the busy-script check, served by :mod:`fake_streams.lua`; :mod:`.shutdown`: SHUTDOWN);
* :mod:`.cluster` — CLUSTER, READONLY/READWRITE/ASKING, SELECT/MOVE in cluster mode, and the slot check
  (CROSSSLOT, MOVED, ASK) of a cluster node's commands (:mod:`fake_streams.topology`);
* :mod:`.auth` — NOAUTH / NOPERM for every command before it runs (requirepass, ACL rules and key patterns);
* :mod:`.server_info` — what INFO needs from fakeredis's state (:mod:`fake_streams.info` renders it);
* :mod:`.sessions` — one connection as the server sees it (sync and asyncio), parked replies;
* :mod:`.socket` — the socket mixin on the dispatch seam ``_name_to_func`` and :func:`attach`;
* :mod:`.fastpath` — the direct path of redis-py connections for stream commands (no RESP, no dispatch);
* :mod:`.tcp` — the fakeredis socket of one TCP client.

The rest of the package (``server``, ``connection``, ``tcp``, the engine) imports from here only what this
module exports below.
"""

from __future__ import annotations

from . import (  # each module that registers overrides is imported here
    builtin,  # noqa: F401
    cluster,  # noqa: F401
    config_cmd,  # noqa: F401
    dumprestore,  # noqa: F401
    replica,  # noqa: F401
    scripting,  # noqa: F401
    sentinel,  # noqa: F401
    server_cmds,  # noqa: F401
    shutdown,  # noqa: F401
)
from .access import client_id
from .auth import set_requirepass
from .backend import Backend, Keyspace, error, to_wire
from .compat import CONNECTION_ERROR_MSG, FAKEREDIS_VERSION, AsyncConnectionBase, SyncConnectionBase
from .routing import Router
from .scripting import abort_scripts
from .server_info import snapshot as info_snapshot
from .socket import attach
from .tcp import TcpClient
from .values import StreamValue

__all__ = [
    "AsyncConnectionBase", "Backend", "CONNECTION_ERROR_MSG", "FAKEREDIS_VERSION", "Keyspace", "Router",
    "StreamValue", "SyncConnectionBase", "TcpClient", "abort_scripts", "attach", "client_id", "error", "info_snapshot",
    "set_requirepass", "to_wire",
]
