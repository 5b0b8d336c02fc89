"""Replicas on the dispatch path (:mod:`fake_streams.topology.replica`): the READONLY check every command of a
replica's client passes, a script's writes through ``redis.call``, ``ROLE``, and the
hang-up of a node's clients when its role changes.

* :func:`refused` — processCommand's ``server.masterhost && repl_slave_ro && is_write_command`` check, after the
  command's existence and arity (those errors come first) and the authentication / ACL and cluster checks (the
  socket mixin runs it after them): ``READONLY You can't write against a read only replica.`` instead of the
  command; inside MULTI the transaction is flagged, so EXEC answers EXECABORT (rejectCommand).
* :func:`script_write_refused` — scriptVerifyWriteCommandAllow: a write command a script calls on a replica.
* ``ROLE`` — :meth:`~fake_streams.topology.replica.ReplicaNode.role_reply` on a node of a replication group, the
  sentinel's ``[sentinel, [names…]]`` on a sentinel, fakeredis's otherwise.

Replica servers run with ``fast_path = False``, so every command of theirs reaches :func:`refused`.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, List, Optional, Tuple

import redis.exceptions

from ..topology import replica as topology_replica
from . import access
from .backend import to_wire
from .compat import SimpleError, extract_command
from .overrides import override, signature
from .sessions import SERVER_CLOSED, SyncSession

_ROLE = signature("role")


def _script_flags(sock: Any, argv: List[bytes]) -> Optional[frozenset]:
    """The shebang flags of the script EVAL / EVALSHA / FCALL runs (None: no shebang, or not found: then the
    command itself is not a write; the script's calls are checked one by one)."""
    from ..lua.engine import parse_shebang
    from .scripting import _engine

    if len(argv) < 2:
        return None
    name = bytes(argv[0]).lower()
    engine = _engine(sock)
    if name == b"eval":
        flags, _, problem = parse_shebang(bytes(argv[1]), engine.texts)
        return None if problem else flags
    if name == b"evalsha":
        script = engine.scripts.get(bytes(argv[1]).decode("latin-1").lower())
        return script.flags if script is not None and script.shebang else None
    function = engine.functions.get(bytes(argv[1])) if name == b"fcall" else None
    return frozenset(function.flags) if function is not None else None


def _runs(sock: Any, fields: Any) -> bool:
    """Whether the command exists and has its arity (else fakeredis answers those errors, which come first)."""
    name, args = extract_command(fields)
    try:
        sock._name_to_func(name)[1].check_arity(args, sock.version)
    except SimpleError:
        return False
    return True


def refused(sock: Any, fields: Any, session: Any) -> bool:
    """The READONLY check of a replica before ``fields`` runs: True if it answered the refusal instead."""
    if not _runs(sock, fields):
        return False
    if not topology_replica.is_write([bytes(f) for f in fields], session.server,
                                     functools.partial(_script_flags, sock)):
        return False
    if getattr(sock, "_transaction", None) is not None:
        sock._transaction_failed = True  # flagTransaction: EXEC answers EXECABORT
    sock.put_response(sock._decode_result(SimpleError(topology_replica.READONLY)))
    return True


def script_write_refused(sock: Any, argv: List[bytes]) -> Optional[str]:
    """The error of a write command a script calls on a replica (scriptVerifyWriteCommandAllow), or None."""
    node = sock._sf_session.server.replication
    if node is None or not node.is_replica:
        return None
    if topology_replica.is_write(argv, sock._sf_session.server):
        return topology_replica.READONLY
    return None


@override("role")
def _role(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    server = sock._sf_session.server
    if server.replication is None and server.sentinel is None:
        return base()
    return functools.partial(role, sock), _ROLE


def role(sock: Any) -> Any:
    server = sock._sf_session.server
    if server.sentinel is not None:
        return to_wire(server.sentinel.role_reply())
    return to_wire(server.replication.role_reply())


def kill_clients(server: Any) -> int:
    """Hang up on every client connected to ``server`` (``CLIENT KILL TYPE normal`` and ``TYPE pubsub`` on that
    node; a node that shares its dataset with others keeps theirs): their next command fails with ConnectionError,
    a parked read ends with it now, and so does a redis-py reader waiting for a reply or a pubsub message (its
    socket reads the EOF). Returns how many."""
    fake = server.backend.fake
    killed = 0
    with server.backend.lock:
        for sock in list(fake.sockets):
            session = getattr(sock, "_sf_session", None)
            if session is None or session.server is not server or not session.alive:
                continue
            access.kill(sock)
            if isinstance(session, SyncSession) and not access.is_tcp(sock):  # sync: wake a waiting reader (in
                session._push(redis.exceptions.ConnectionError(SERVER_CLOSED), resume=False)  # read or can_read)
            killed += 1
    return killed


__all__ = ["kill_clients", "refused", "role", "script_write_refused"]
