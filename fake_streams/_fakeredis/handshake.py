"""The connection handshake (``CLIENT SETINFO``, ``HELLO 3``) served on the direct path (issue 13: per-test cost).

redis-py opens every connection with ``CLIENT SETINFO LIB-NAME <name>`` and ``CLIENT SETINFO LIB-VER <version>``
(redis-py >= 5; after HELLO on RESP3). On the dispatch path each is fakeredis's ``_process_command`` (name lookup,
ACL check, lock, execution unit, key touches, reply conversion, the reply queue and its event): ~45 µs, a
quarter of a fixture test's server-side cost. :func:`setinfo` answers the common form instead with the same
effects: the client's ``lib-name`` / ``lib-ver`` (CLIENT LIST / INFO), the typed argv the connection's CLIENT LIST
line shows as its last command (``cmd=client|setinfo``), fakeredis's per-command database time, INFO commandstats
(``cmdstat_client|setinfo``), the reply ``OK`` handed to ``read_response`` as the dispatch path's would be.

Served only when nothing else could happen on the dispatch path (else it returns False and the command goes
there, unchanged): the direct path's state checks (:func:`.fastpath._session`: connected, no fault hook armed,
authenticated ``default`` user with every permission, not in MULTI or pubsub, no CLIENT REPLY OFF/SKIP, no reply
queued, no health check due, no closed socket awaiting cleanup, no script running, no CLIENT PAUSE), a standalone
server (no cluster node, replication or sentinel role), a profile that has CLIENT SETINFO (not Redis 7.0: unknown
subcommand there), the names exactly as redis-py types them (``"CLIENT", "SETINFO", "LIB-NAME"|"LIB-VER"``) and a
value of 1–128 printable ASCII characters without spaces (a real server refuses spaces, newlines and special
characters with its own error: that stays the dispatch path's answer). O(len(value)).

``HELLO 3`` as redis-py sends it on a RESP3 connection without credentials (:func:`hello3`) is served the same way,
by the HELLO override's own function (the socket's protocol switch, the profile's map); with AUTH or SETNAME, another
version or none it stays on the dispatch path. MONITOR is not served by the fake, so there are no MONITOR lines to
write.
"""

from __future__ import annotations

import time
from time import perf_counter as _perf_counter
from typing import Any, Callable, Tuple

from . import builtin

#: the direct path's state check (``fastpath._session(conn, health)``), passed in by fastpath (no import cycle)
SessionCheck = Callable[[Any, bool], Any]

_FIELDS = {"LIB-NAME": (b"LIB-NAME", "lib-name"), "LIB-VER": (b"LIB-VER", "lib-ver")}
#: printable ASCII without space: what a real server accepts in CLIENT SETINFO (and more: ``{`` etc. are fine)
_PLAIN = frozenset(range(0x21, 0x7F))


def setinfo(conn: Any, args: Tuple[Any, ...], usable: SessionCheck) -> bool:
    """Answer ``CLIENT SETINFO LIB-NAME|LIB-VER value`` sent by redis-py's handshake directly (see the module doc);
    False: nothing done, send it through the dispatch path. ``conn`` is connected (``conn._sock`` set)."""
    if len(args) != 4 or args[0] != "CLIENT" or args[1] != "SETINFO" or type(args[3]) is not str:
        return False
    field = _FIELDS.get(args[2]) if type(args[2]) is str else None
    value = args[3]
    if field is None or not 0 < len(value) <= 128 or not value.isascii() or not _PLAIN.issuperset(value.encode()):
        return False
    session = _plain_session(conn)
    if session is None or session.server.profile.name == "7.0":  # 7.0: an unknown subcommand
        return False
    info_key = field[1]

    def answer(sock: Any) -> Any:
        sock._client_info[info_key] = value
        return b"OK"

    return _serve(conn, session, [b"CLIENT", b"SETINFO", field[0], value.encode()], "client setinfo",
                  "client|setinfo", answer, usable)


def hello3(conn: Any, args: Tuple[Any, ...], usable: SessionCheck) -> bool:
    """Answer ``HELLO 3`` (redis-py's RESP3 handshake without credentials) directly: fakeredis's protocol switch and
    the profile's map, by the override's own function (:func:`.builtin.hello`); False: the dispatch path answers."""
    if len(args) != 2 or args[0] != "HELLO" or (args[1] != 3 and args[1] != "3") or type(args[1]) is bool:
        return False
    session = _plain_session(conn)
    return session is not None and _serve(conn, session, [b"HELLO", b"3"], "hello", "hello",
                                          lambda sock: builtin.hello(sock, b"3"), usable)


def _plain_session(conn: Any) -> Any:
    """The connection's session if its server is a standalone one (no cluster node, replication or sentinel role:
    the dispatch path checks those first), else None."""
    session = getattr(conn._sock, "_sf_session", None)
    if session is None or getattr(conn._sock, "_sf_fast", None) is None:
        return None
    server = session.server
    if server.cluster_node is not None or server.replication is not None or server.sentinel is not None:
        return None
    return session


def _serve(conn: Any, session: Any, typed: list, name: str, stat: str, answer: Callable[[Any], Any],
           usable: SessionCheck) -> bool:
    """What the dispatch path does around a keyless command that cannot fail, if the direct path's state checks
    pass (see the module doc): fakeredis's closed-socket clean-out, the per-command database time, the typed argv
    (CLIENT LIST's ``cmd``), ``answer(sock)``'s reply for ``read_response``, INFO commandstats under ``stat``. O(1)."""
    sock = conn._sock
    fake = sock._server
    if fake is not None and fake.closed_sockets:  # what the dispatch path does first (the direct path refuses then)
        clean_closed_sockets(fake)
    if usable(conn, True) is None or not session.enter():
        return False
    try:
        started = _perf_counter()
        with fake.lock:
            now = time.time()  # = fakeredis's per-command db.time
            for db in fake.dbs.values():
                db.time = now
            sock._sf_fields = typed
            sock._sf_name = name
            sock._sf_fast.append(answer(sock))
            session.server.stats.called(stat, (_perf_counter() - started) * 1e6)
    finally:
        session.leave()
    return True


def clean_closed_sockets(fake: Any) -> None:
    """fakeredis's clean-out of the server's closed connections, which its ``_process_command`` runs under the lock
    before every command (a closed socket's watches, subscriptions, client entry go). O(closed sockets)."""
    with fake.lock:
        closed = fake.closed_sockets
        while closed:
            try:
                ref = closed.pop()
            except IndexError:
                break
            sock = ref()
            if sock:
                sock._cleanup(fake)


__all__ = ["clean_closed_sockets", "hello3", "setinfo"]
