"""Sentinel mode on the dispatch path (:mod:`fake_streams.topology.sentinel`): a sentinel's command table and
``SENTINEL <subcommand>``, registered in the override table (:mod:`.overrides`).

* :func:`refused` — a sentinel has a command table of its own (:data:`~fake_streams.topology.sentinel_replies.
  COMMANDS`): any other command is an ``unknown command`` there, answered before anything else is checked;
* ``SENTINEL`` — the container's arity, the subcommand, its arity (processCommand's checks), then
  :func:`fake_streams.topology.sentinel_replies.sentinel_command`; on a server that is not a sentinel, an
  ``unknown command`` (a redis-server has no SENTINEL command);
* :func:`rebind` — point a redis-py connection of ours at another server before it connects (a
  Sentinel-managed connection learns its address from the sentinel at connect time).

Sentinel servers run with ``fast_path = False``, so every command of theirs reaches :func:`refused`.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Tuple

from ..errors import ReplyError
from ..topology import replies as cluster_replies
from ..topology import sentinel_replies
from .backend import error, to_wire
from .compat import SimpleError, SimpleString
from .overrides import override, signature
from .routing import _c_str, unknown_command_args

_SENTINEL = signature("sentinel", fixed=1, variadic=True)


def _unknown(sock: Any, argv: Any) -> SimpleError:
    return error(ReplyError("UNKNOWN_COMMAND", command=_c_str(bytes(argv[0]), 128),
                            args=unknown_command_args([bytes(a) for a in argv[1:]])),
                 sock._sf_session.server.profile)


def refused(sock: Any, fields: Any, session: Any) -> bool:
    """A command a sentinel does not have: True once its ``unknown command`` error is answered."""
    name = bytes(fields[0]).decode("utf-8", "replace").lower()
    if name in sentinel_replies.COMMANDS:
        return False
    if getattr(sock, "_transaction", None) is not None:  # (a sentinel has no MULTI; kept for safety)
        sock._transaction_failed = True
    sock.put_response(sock._decode_result(_unknown(sock, fields)))
    return True


@override("sentinel")
def _sentinel(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    session = sock._sf_session
    typed = [] if session.depth else list(sock._sf_fields or ())
    if session.server.sentinel is None:
        if typed:
            raise _unknown(sock, typed)
        return base()
    profile = session.server.profile
    if typed:
        if len(typed) < 2:
            raise error(ReplyError("WRONG_ARITY", command="sentinel"), profile)
        sub = bytes(typed[1]).decode("utf-8", "replace").lower()
        fits = sentinel_replies.arity_ok(sub, len(typed), profile)
        if fits is None:
            raise error(ReplyError("UNKNOWN_SUBCOMMAND", subcommand=bytes(typed[1])[:128], container=b"SENTINEL"),
                        profile)
        if not fits:
            raise error(ReplyError("WRONG_ARITY", command=f"sentinel|{sub}"), profile)
    return functools.partial(sentinel_command, sock), _SENTINEL


def sentinel_command(sock: Any, sub: bytes, *args: bytes) -> Any:
    """``SENTINEL sub args…`` on a sentinel (lock held)."""
    session = sock._sf_session
    sentinel = session.server.sentinel
    name = bytes(sub).decode("utf-8", "replace").lower()
    try:
        reply = sentinel_replies.sentinel_command(sentinel, name, list(args), session.server.clock.now_ms(),
                                                  functools.partial(_publish, sock))
    except sentinel_replies.SentinelError as exc:
        raise SimpleError(str(exc)) from None
    if type(reply).__name__ == "Status":
        return SimpleString(reply.value)
    return to_wire(cluster_replies.as_protocol(reply, session.protocol))


def _publish(sock: Any, events: Any) -> None:
    """PUBLISH each ``(channel, message)`` on the sentinel, from inside the command (lock held): fakeredis's own
    PUBLISH of the calling socket, which delivers to every (pattern) subscriber (a client's PUBLISH on a sentinel
    takes only hello messages)."""
    for channel, message in events:
        sock.publish(channel, message)


def publish(server: Any, events: Any) -> None:
    """:func:`_publish` from outside a command: on a connection of the sentinel's own, lock taken."""
    from ..connection import FakeStreamsConnection

    conn = FakeStreamsConnection(server=server)
    conn.connect()
    try:
        with server.backend.lock:
            _publish(conn._sock, events)
    finally:
        conn.disconnect()


HELLO_CHANNEL = b"__sentinel__:hello"


def _on_a_sentinel(handler: Callable[..., Any]) -> Callable[..., Tuple[Any, Any]]:
    """A lookup that serves a command with ``handler(fakeredis's func, *args)`` on a sentinel, fakeredis's
    elsewhere."""

    def lookup(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
        func, sig = base()
        if sock._sf_session.server.sentinel is None:
            return func, sig
        return functools.partial(handler, func), sig

    return lookup


def sentinel_publish(func: Callable[..., Any], channel: bytes, message: bytes) -> Any:
    """PUBLISH on a sentinel: only the sentinels' hello channel (the hello itself is not read: one fake sentinel
    learns of no other)."""
    if bytes(channel) != HELLO_CHANNEL:
        raise SimpleError("ERR Only HELLO messages are accepted by Sentinel instances.")
    return func(channel, message)


def sentinel_command_count(func: Callable[..., Any]) -> int:
    """COMMAND COUNT on a sentinel: its command table's size."""
    return len(sentinel_replies.COMMANDS)


def sentinel_command_info(func: Callable[..., Any], *names: bytes) -> Any:
    """COMMAND INFO on a sentinel: nil for a command its table does not have."""
    if not names:
        raise SimpleError("ERR fake-redis-streams: COMMAND INFO of every command of a sentinel is not emulated")
    known = [n for n in names if bytes(n).decode("utf-8", "replace").lower() in sentinel_replies.COMMANDS]
    found = iter(func(*known) if known else [])
    return [next(found) if bytes(n).decode("utf-8", "replace").lower() in sentinel_replies.COMMANDS else None
            for n in names]


override("publish")(_on_a_sentinel(sentinel_publish))
override("command count")(_on_a_sentinel(sentinel_command_count))
override("command info")(_on_a_sentinel(sentinel_command_info))


def rebind(conn: Any, server: Any) -> None:
    """Make the (not connected) redis-py connection ``conn`` of ours reach ``server`` when it connects."""
    conn.streams_server = server
    conn._server = server.backend.fake


__all__ = ["rebind", "refused", "sentinel_command"]
