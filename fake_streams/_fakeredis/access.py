"""What sessions and the direct path read and do on a fakeredis socket: its client id, protocol, reply queue,
kill, its event loop, keyspace notifications. Every such access to a socket's private state is here.
"""

from __future__ import annotations

import asyncio
from typing import Any

import redis.exceptions

from ..errors import ReplyError
from .backend import _wake, error, to_wire
from .compat import NoResponse, SimpleError, compile_pattern


def client_id(sock: Any) -> int:
    """``CLIENT ID`` of a fakeredis socket."""
    info = getattr(sock, "_client_info", None) or {}
    return int(info.get("id", 0) or 0)


def protocol_of(sock: Any, from_script: bool) -> int:
    resp = getattr(sock, "_resp_version", None)  # fakeredis >= 2.39 follows the script's RESP mode
    if resp is not None:
        return int(resp)
    if from_script:  # fakeredis 2.37: the mode the script host set (redis.setresp; RESP2 by default)
        return int(getattr(sock, "_script_resp", None) or 2)
    return int(sock._client_info.protocol_version)


def no_response() -> NoResponse:
    """The value a command returns when it sends no reply now (a parked blocking read)."""
    return NoResponse()


def reply_item(sock: Any, reply: Any, profile: Any) -> Any:
    """What goes on ``sock``'s reply queue for ``reply`` (an engine value, a ReplyError, an exception)."""
    from ..blocking import BlockSafetyError

    if isinstance(reply, BlockSafetyError):  # an error reply (TCP clients get the line), raised as its class
        decoded = sock._decode_result(SimpleError("ERR " + str(reply)))
        return BlockSafetyError(*decoded.args) if type(decoded) is redis.exceptions.ResponseError else decoded
    if isinstance(reply, BaseException) and not isinstance(reply, ReplyError):
        return reply
    value = error(reply, profile) if isinstance(reply, ReplyError) else to_wire(reply)
    return sock._decode_result(value)


def kill(sock: Any) -> None:
    """Hang up on a client, as CLIENT KILL does (lock held): its next command fails with ConnectionError."""
    killer = getattr(sock, "kill", None)
    if killer is not None and getattr(sock, "_server", None) is not None:
        killer()
    else:  # fakeredis < 2.35 has no CLIENT KILL
        sock._killed = True


def end_fakeredis_block(sock: Any, lock: Any) -> None:
    """A socket closed while fakeredis's own blocking command (BLPOP …) waits in its thread: end that
    wait as CLIENT UNBLOCK does, so the command returns and the close completes. Waits at most 50 ms
    for the lock (a caller holding it, e.g. a TCP release, wakes the database itself)."""
    if not getattr(sock, "_blocked", False) or not lock.acquire(timeout=0.05):
        return
    try:
        end_fakeredis_block_locked(sock)
    finally:
        lock.release()


def end_fakeredis_block_locked(sock: Any) -> bool:
    """:func:`end_fakeredis_block` with the lock held; True if the socket was blocked in such a command."""
    db = getattr(sock, "_db", None)
    if not getattr(sock, "_blocked", False) or db is None:
        return False
    sock._unblock_reason = b"timeout"
    _wake(db)
    return True


def is_tcp(sock: Any) -> bool:
    """Whether ``sock`` is a TCP client's (its replies go to a wire, see :mod:`.tcp`), not a redis-py connection's."""
    return getattr(sock, "_sf_wire", None) is not None


def socket_loop(sock: Any) -> Any:
    """The event loop an asyncio fakeredis socket belongs to."""
    loop = getattr(sock, "_event_loop", None)
    return loop if loop is not None else asyncio.get_running_loop()


def queue_async(sock: Any, queue: Any, item: Any) -> None:
    """On the socket's loop: queue ``item`` for the reader of an asyncio socket and wake ``can_read``."""
    queue.put_nowait(item)
    event = getattr(sock, "_response_available", None)
    if event is not None:
        event.set()


def stream_events_sent(sock: Any) -> bool:
    """Whether :func:`publish_keyspace_event` would send anything for a stream event now (lock held)."""
    fake = sock._server
    flags = getattr(fake, "config", {}).get(b"notify-keyspace-events", b"")
    if not flags or (b"t" not in flags and b"A" not in flags):
        return False
    return bool(fake.subscribers or fake.psubscribers)


def publish_keyspace_event(sock: Any, event: str, key: bytes) -> None:
    """Keyspace notification of class ``t`` (stream), as ``notify-keyspace-events`` asks (default: none)."""
    fake = sock._server
    flags = getattr(fake, "config", {}).get(b"notify-keyspace-events", b"")
    if not flags or (b"t" not in flags and b"A" not in flags):
        return
    if not fake.subscribers and not fake.psubscribers:
        return
    db, name = sock._db_num, event.encode()
    messages = []
    if b"K" in flags:
        messages.append((b"__keyspace@%d__:%s" % (db, key), name))
    if b"E" in flags:
        messages.append((b"__keyevent@%d__:%s" % (db, name), key))
    for channel, message in messages:
        for sub in list(fake.subscribers.get(channel, ())):
            sub.put_response([b"message", channel, message])
        for pattern, socks in list(fake.psubscribers.items()):
            if compile_pattern(pattern).match(channel):
                for sub in list(socks):
                    sub.put_response([b"pmessage", pattern, channel, message])

