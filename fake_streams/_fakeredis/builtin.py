"""Overrides the adapter itself needs (see :mod:`.overrides`): HELLO and INFO report the profile's server,
CLIENT UNBLOCK reaches the engine's parked readers first, COPY of a stream copies it on old fakeredis.
"""

from __future__ import annotations

import copy
import functools
import inspect
from typing import Any, Callable, Dict, Tuple

from ..reply import VerbatimText
from . import auth, server_cmds
from .compat import SimpleError
from .overrides import override, signature
from .values import StreamValue

_INFO_SIGNATURE = signature("info", variadic=True)


@override("hello")
def _hello(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    return functools.partial(hello, sock), base()[1]


def hello(sock: Any, *args: bytes) -> Any:
    """fakeredis's HELLO (protocol switch, AUTH, SETNAME), reporting the profile's server and version."""
    if not args:  # HELLO without a version keeps the current protocol
        args = (str(sock._client_info.protocol_version).encode(),)
    args = tuple(auth.hello_auth(sock, list(args)))  # AUTH user pass: authenticated here (fakeredis does not check)
    at = 1  # helloCommand: the name is checked after authentication, before the protocol switch
    while at + 1 < len(args):
        if args[at] == b"SETNAME" and not server_cmds.shown_in_client_list(args[at + 1]):
            raise SimpleError(server_cmds.BAD_CLIENT_NAME)
        at += 2 if args[at] == b"SETNAME" else 3  # AUTH user pass (anything else: fakeredis's syntax error)
    data = sock.hello(*args)
    server = sock._sf_session.server
    profile = server.profile
    node = server.replication
    reply = {
        b"server": profile.server.encode(),
        b"version": profile.hello_version.encode(),
        b"proto": data["proto"],
        b"id": data["id"],
        b"mode": b"standalone" if server.cluster_node is None else b"cluster",
        b"role": b"replica" if node is not None and node.is_replica else b"master",
        b"modules": [lua_module()] if "lua_module_listed" in profile.features else [],
    }
    if server.sentinel is not None:  # a sentinel reports its mode, no role and no modules
        reply[b"mode"] = b"sentinel"
        reply[b"modules"] = []
        del reply[b"role"]
    return reply


def lua_module() -> Dict[bytes, Any]:
    """Valkey 9.1's built-in scripting engine module as HELLO lists it (a new map each time)."""
    return {b"name": b"lua", b"ver": 1, b"path": b"lua", b"args": []}


@override("info")
def _info(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    return functools.partial(info, sock), _INFO_SIGNATURE


def info(sock: Any, *sections: bytes) -> bytes:
    """INFO (fakeredis has none): the server's report of ``sections`` — a verbatim string in RESP3 (``=…txt:``, the
    server's ``addReplyVerbatim``), except on a sentinel, whose INFO is a bulk string (``sentinelInfoCommand``)."""
    server = sock._sf_session.server
    report = server.info(sections)
    return report if server.sentinel is not None else VerbatimText(report)


@override("client unblock")
def _client_unblock(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    func, sig = base()
    return functools.partial(client_unblock, sock, func), sig


def client_unblock(sock: Any, func: Any, client_id: int, *args: bytes) -> Any:
    """``CLIENT UNBLOCK``: a stream read parked in the engine first, else fakeredis's own (BLPOP …)."""
    reason = bytes(args[0]).lower() if len(args) == 1 else (b"timeout" if not args else b"")
    if reason in (b"timeout", b"error"):
        if sock._sf_session.server.blocking.unblock(int(client_id), reason == b"error"):
            return 1
    return func(client_id, *args)


def _copy_shares_value() -> bool:
    """Whether fakeredis's COPY stores the source value itself (< 2.35) instead of a deep copy."""
    try:
        from fakeredis.commands_mixins.generic_mixin import GenericCommandsMixin

        return "deepcopy" not in inspect.getsource(GenericCommandsMixin.copy)
    except Exception:  # pragma: no cover - no source: copying twice is harmless
        return True


if _copy_shares_value():

    @override("copy")
    def _copy(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
        func, sig = base()
        return functools.partial(copy_stream_first, func), sig


def copy_stream_first(func: Callable[..., Any], key: Any, newkey: Any, *args: Any) -> Any:
    """COPY on fakeredis < 2.35 stores the source value itself: give it a deep copy of a stream instead."""
    if isinstance(key.value, StreamValue):
        key._value = copy.deepcopy(key.value)  # not marked modified: the source item keeps the original
    return func(key, newkey, *args)
