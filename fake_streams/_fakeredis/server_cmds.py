"""Server commands fakeredis lacks or answers differently, registered in the override table (:mod:`.overrides`):

* ``OBJECT`` — ENCODING / REFCOUNT / IDLETIME / FREQ / HELP (:mod:`fake_streams.objectinfo`; IDLETIME and FREQ
  from :mod:`fake_streams.keyaccess`), an unknown
  subcommand or a wrong arity refused before it runs (EXECABORT in MULTI);
* ``SAVE`` everywhere, ``MULTI`` and ``WATCH`` on Valkey — ``CMD_NO_MULTI``: refused inside MULTI, which aborts;
* ``AUTH``, ``ACL SETUSER`` (rules kept in order), ``RESET`` — see :mod:`.auth` (``CONFIG SET requirepass``: :mod:`.config_cmd`);
* ``CLIENT SETINFO`` — an unknown subcommand on Redis 7.0 (it came with 7.2);
* ``SWAPDB`` — dirties the watched keys of both databases first (``touchAllWatchedKeysInDb``);
* ``TOUCH`` (fakeredis has none) — the number of the keys that exist, each touched (:mod:`.keytouch`).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Tuple

from ..keyaccess import table_of
from ..objectinfo import check_subcommand, object_command
from . import auth
from .compat import SKIP_RESP2, Key, Signature, SimpleError, SimpleString
from .overrides import override, signature

_OBJECT = signature("object", fixed=1, variadic=True)


@override("object")
def _object(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    """As processCommand: an unknown subcommand or a subcommand's wrong arity is refused before the command
    runs (at queue time in MULTI: EXECABORT), so OBJECT itself only sees well-formed calls."""
    typed = _typed_argv(sock)
    if len(typed) >= 2:
        sub = bytes(typed[1])
        err = check_subcommand(sub, len(typed))
        if err is not None:
            if err.startswith("ERR wrong number"):
                sock._sf_name = "object " + sub.decode("utf-8", "replace").lower()  # INFO: rejected on object|sub
            raise SimpleError(err)
    return functools.partial(object_reply, sock), _OBJECT


def _typed_argv(sock: Any) -> list:
    session = sock._sf_session
    if session.depth:  # a script's redis.call: only its name and first argument are known here
        return []
    return list(sock._sf_fields or ())


def object_reply(sock: Any, sub: bytes, *args: bytes) -> Any:
    """``OBJECT <subcommand> …`` on the socket's database (lock held)."""
    server = sock._sf_session.server
    db = sock._db
    access, table = server.access, table_of(db)

    def stamp(key: bytes, lfu: bool) -> int:
        return access.frequency(table, key) if lfu else access.idle_seconds(table, key)

    reply, err = object_command(server.profile, sub, list(args), _Lookup(db), _config(sock), stamp)
    if err is not None:
        raise SimpleError(err)
    if isinstance(reply, list) and reply and isinstance(reply[0], bytes) and sub.lower() == b"help":
        return [SimpleString(line) for line in reply]
    return reply


class _Lookup:
    """A key's value in one fakeredis database, as OBJECT reads it (no access-time update, expired = missing)."""

    __slots__ = ("_db",)

    def __init__(self, db: Any) -> None:
        self._db = db

    def __call__(self, key: bytes) -> Any:
        item = self._db.get(key)  # drops an expired key
        return None if item is None else item.value


def _config(sock: Any) -> Callable[[str], Any]:
    config = sock._server.config

    def get(name: str) -> Any:
        raw = config.get(name.encode())
        if isinstance(raw, (bytes, bytearray)):
            return raw.decode("utf-8", "replace")
        return raw

    return get


#: ``CMD_NO_MULTI`` commands (besides PSYNC/SYNC/SHUTDOWN) per server kind, with their arity (commands.def).
_NO_MULTI = {"redis": {"save": 1}, "valkey": {"save": 1, "multi": 1, "watch": -2}}
NOT_IN_MULTI = "ERR Command not allowed inside a transaction"


def _refused_in_multi(sock: Any, name: str) -> bool:
    """processCommand's ``CMD_NO_MULTI`` check: the command is queued in a transaction, has its arity, and the
    profile's server refuses it there (``rejectCommand``: the transaction is flagged, EXEC answers EXECABORT)."""
    if not getattr(sock, "_queueing", sock._transaction is not None) or sock._sf_session.depth:
        return False
    arity = _NO_MULTI[sock._sf_session.server.profile.server].get(name)
    if arity is None:
        return False
    argc = len(sock._sf_fields or ())
    return argc == arity if arity > 0 else argc >= -arity


@override("multi", "watch", "save")
def _no_multi(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    if _refused_in_multi(sock, name):
        if "no_multi_names_the_command" in sock._sf_session.server.profile.features:
            raise SimpleError(f"ERR Command '{name}' not allowed inside a transaction")  # Valkey 9.1: cmd->fullname
        raise SimpleError(NOT_IN_MULTI)
    return base()


_AUTH = signature("auth", fixed=1, variadic=True)


@override("auth")
def _auth(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    return functools.partial(auth_reply, sock), _AUTH


def auth_reply(sock: Any, *args: bytes) -> Any:
    """``AUTH [username] password`` (:func:`.auth.auth_command`)."""
    auth.auth_command(sock, *args)
    return SimpleString(b"OK")


@override("client setinfo")
def _client_setinfo(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    """CLIENT SETINFO came with Redis 7.2: on 7.0 it is an unknown subcommand (refused before NOAUTH, so redis-py's
    handshake goes on before AUTH as against a real 7.0)."""
    if sock._sf_session.server.profile.name == "7.0":
        typed = _typed_argv(sock)
        sub = bytes(typed[1]).decode("utf-8", "replace") if len(typed) > 1 else "setinfo"
        raise SimpleError(f"ERR unknown subcommand '{sub[:128]}'. Try CLIENT HELP.")
    func, sig = base()
    return functools.partial(client_setinfo, func), sig


def client_setinfo(func: Callable[..., Any], attr: bytes, value: bytes, *rest: Any) -> Any:
    """``clientSetinfoCommand``'s checks before fakeredis records the value: the attribute is LIB-NAME or LIB-VER
    (any case), the value printable ASCII without spaces (``!``..``~``: CLIENT LIST must stay splittable)."""
    name = bytes(attr)
    if name.lower() not in (b"lib-name", b"lib-ver"):
        raise SimpleError(f"ERR Unrecognized option '{name.decode('utf-8', 'replace')}'")
    if not shown_in_client_list(value):
        raise SimpleError(f"ERR {name.decode()} cannot contain spaces, newlines or special characters.")
    return func(attr, value, *rest)


#: ``clientSetName``'s refusal (CLIENT SETNAME, HELLO … SETNAME)
BAD_CLIENT_NAME = "ERR Client names cannot contain spaces, newlines or special characters."


def shown_in_client_list(value: bytes) -> bool:
    """``validateClientAttr``: only ``!``..``~`` (printable ASCII, no space), so CLIENT LIST stays splittable. O(n)."""
    return all(0x21 <= byte <= 0x7E for byte in bytes(value))


@override("client setname")
def _client_setname(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    func, sig = base()
    return functools.partial(client_setname, func), sig


@override("client getname")
def _client_getname(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    func, sig = base()
    return functools.partial(client_getname, func), sig


def client_getname(func: Callable[..., Any], *args: Any) -> Any:
    """CLIENT GETNAME: nil for a connection without a name (never named, or named ``""``: ``clientSetName``
    clears it); fakeredis answers an empty string."""
    return func(*args) or None


def client_setname(func: Callable[..., Any], value: bytes, *rest: Any) -> Any:
    """CLIENT SETNAME: a name CLIENT LIST can show (:func:`shown_in_client_list`), then fakeredis's."""
    if not shown_in_client_list(value):
        raise SimpleError(BAD_CLIENT_NAME)
    return func(value, *rest)


@override("acl setuser")
def _acl_setuser(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    func, sig = base()
    return functools.partial(acl_setuser, sock, func), sig


def acl_setuser(sock: Any, func: Callable[..., Any], username: bytes, *args: bytes) -> Any:
    """fakeredis's ACL SETUSER, then the user's command rules are kept in order (:func:`.auth.record_setuser`)."""
    reply = func(username, *args)
    auth.record_setuser(sock._server, username, list(args))
    return reply


@override("swapdb")
def _swapdb(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    func, sig = base()
    return functools.partial(swapdb, sock, func), sig


def swapdb(sock: Any, func: Callable[..., Any], index1: Any, index2: Any, *rest: Any) -> Any:
    """fakeredis's SWAPDB, after ``touchAllWatchedKeysInDb`` both ways: a key watched in one of the two databases
    that exists in either is dirtied (EXEC of its watchers answers nil), as the server does."""
    if sock._sf_session.server.cluster_node is not None:
        raise SimpleError("ERR SWAPDB is not allowed in cluster mode")
    dbs = sock._server.dbs  # .get: looking must not create a database (fakeredis's dict makes them on access)
    first, second = dbs.get(index1), dbs.get(index2)
    if index1 != index2:
        for emptied, replaced in ((first, second), (second, first)):
            if emptied is None:  # never used: no keys, no watchers
                continue
            keys = replaced._dict if replaced is not None else {}
            for key, watchers in list(emptied._watches.items()):
                if key in emptied._dict or key in keys:
                    for watcher in list(watchers):
                        watcher.notify_watch()
    return func(index1, index2, *rest)


@override("reset")
def _reset(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    func, sig = base()
    return functools.partial(reset, sock, func), sig


def reset(sock: Any, func: Callable[..., Any], *args: Any) -> Any:
    """fakeredis's RESET, then ``clientSetDefaultAuth``: the client is ``default`` again, authenticated only if
    ``default`` needs no password now."""
    reply = func(*args)
    sock._client_info["user"] = "default"
    sock._sf_authenticated = auth.default_open(sock._server)
    return reply


#: the keys typed as fakeredis ``Key`` arguments, so :func:`.keytouch.run_touching` touches them
_TOUCH = Signature("touch", "_sf_override", (Key(),), (Key(),), flags=SKIP_RESP2)  # type: ignore[arg-type]  # fakeredis annotates types, passes Key instances itself


@override("touch")
def _touch(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    return touch, _TOUCH


def touch(*items: Any) -> int:
    """``TOUCH key [key …]``: how many of the keys exist (a key named twice counts twice, as ``touchCommand``)."""
    return sum(1 for item in items if item.value is not None)
