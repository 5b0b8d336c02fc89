"""Cluster mode on the dispatch path (:mod:`fake_streams.topology`): the commands of a cluster node registered in
the override table (:mod:`.overrides`) and the slot check every command of a node's client passes.

* ``CLUSTER <subcommand>`` (:mod:`fake_streams.topology.replies`), ``READONLY`` / ``READWRITE`` / ``ASKING``; on a
  standalone server each answers ``ERR This instance has cluster support disabled`` (after the subcommand and
  arity checks, as the server does);
* ``SELECT n`` (n ≠ 0), ``MOVE`` and ``SWAPDB`` (:mod:`.server_cmds`) refused in cluster mode with the server's text;
* :func:`refused` — ``getNodeByQuery`` for one command (or, at EXEC, for every command queued in the transaction):
  ``CROSSSLOT`` / ``MOVED`` / ``ASK`` / ``TRYAGAIN`` / ``CLUSTERDOWN`` (:mod:`fake_streams.topology.redirect`) answered
  instead of the command; inside MULTI the refusal of a queued command aborts the transaction (EXECABORT), a refused
  EXEC discards it. :func:`after` ends the one-command life of ``ASKING`` (kept while a transaction is open).

Every command of a cluster node's client reaches :func:`refused`, or, for a stream command on the direct path,
:func:`direct_refusal` (the same verdict). Keys are the
engine's for stream commands (:func:`.auth.stream_keys`, XREAD/XREADGROUP: every key after STREAMS) and
:func:`fake_streams.topology.keys.command_keys` for the rest. A script's commands pass
:func:`script_refusal` (``scriptVerifyClusterState``): keys another node serves, or of another slot than the
script's, get the script errors.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, List, Optional, Sequence, Tuple

from ..errors import ReplyError
from ..topology import keys as topology_keys
from ..topology import redirect
from ..topology import replies as cluster_replies
from ..topology.slots import key_slot
from . import auth
from .backend import error, to_wire
from .compat import SimpleError, SimpleString, extract_command, get_command_info
from .overrides import override, signature

_CLUSTER = signature("cluster", fixed=1, variadic=True)
_NO_ARGS = signature("readonly")
#: commands that never name keys in the transaction's key check (the transaction machinery itself)
_TRANSACTION = frozenset({b"multi", b"exec", b"discard", b"watch", b"unwatch", b"reset", b"quit"})


def _node(sock: Any) -> Any:
    return sock._sf_session.server.cluster_node


def _typed(sock: Any) -> List[bytes]:
    session = sock._sf_session
    return [] if session.depth else list(sock._sf_fields or ())


@override("cluster")
def _cluster(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    """processCommand's checks first (at queue time in MULTI): the container's arity, the subcommand, its arity."""
    typed = _typed(sock)
    profile = sock._sf_session.server.profile
    if typed:
        if len(typed) < 2:
            raise error(ReplyError("WRONG_ARITY", command="cluster"), profile)
        sub = bytes(typed[1]).decode("utf-8", "replace").lower()
        arity = cluster_replies.ARITY.get(sub)
        if arity is None:
            raise error(ReplyError("UNKNOWN_SUBCOMMAND", subcommand=bytes(typed[1])[:128], container=b"CLUSTER"),
                        profile)
        if (len(typed) != arity) if arity > 0 else (len(typed) < -arity):
            raise error(ReplyError("WRONG_ARITY", command=f"cluster|{sub}"), profile)
    return functools.partial(cluster_command, sock), _CLUSTER


def cluster_command(sock: Any, sub: bytes, *args: bytes) -> Any:
    """``CLUSTER sub args…`` (lock held)."""
    node = _node(sock)
    if node is None:
        raise SimpleError(cluster_replies.DISABLED)
    server = sock._sf_session.server
    name = bytes(sub).decode("utf-8", "replace").lower()
    try:
        reply = cluster_replies.cluster_command(node, name, list(args), server.clock.now_ms(),
                                                functools.partial(keys_in_slot, sock._server))
    except cluster_replies.ClusterError as exc:
        raise SimpleError(str(exc)) from None
    return to_wire(cluster_replies.as_protocol(_statuses(reply), sock._sf_session.protocol))


def _statuses(reply: Any) -> Any:
    if isinstance(reply, list) and reply and all(type(item).__name__ == "Status" for item in reply):
        return [SimpleString(item.value) for item in reply]
    return reply


def keys_in_slot(fake: Any, slot: int) -> List[bytes]:
    """The keys of database 0 in ``slot``, the newest first (the server keeps each slot's keys in a list it adds to
    at the head; the database's insertion order is that order reversed), expired keys left out. O(keys)."""
    return [k for k in reversed(db_keys(fake, 0)) if key_slot(k) == slot]


def db_keys(fake: Any, index: int) -> List[bytes]:
    """The live keys of database ``index`` of the FakeServer ``fake`` (lock held)."""
    db = fake.dbs.get(index) if hasattr(fake.dbs, "get") else fake.dbs[index]
    if db is None:
        return []
    now = db.time
    return [k for k, item in db._dict.items() if item.expireat is None or item.expireat >= now]


def _flag_command(flag: Optional[str]) -> Callable[..., Any]:
    def lookup(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
        return functools.partial(_set_flag, sock, flag), _NO_ARGS

    return lookup


def _set_flag(sock: Any, flag: Optional[str]) -> Any:
    if _node(sock) is None:
        raise SimpleError(cluster_replies.DISABLED)
    if flag == "asking":
        sock._sf_asking = True
    elif flag is not None:
        sock._sf_readonly = flag == "readonly"
    return SimpleString(b"OK")


override("readonly")(_flag_command("readonly"))
override("readwrite")(_flag_command("readwrite"))
override("asking")(_flag_command("asking"))


_SELECT = signature("select", fixed=1)


@override("select")
def _select(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    func, sig = base()
    return functools.partial(select, sock, func), _SELECT


def select(sock: Any, func: Callable[..., Any], index: bytes) -> Any:
    """SELECT as selectCommand: the integer check, then in cluster mode only database 0, then fakeredis's SELECT."""
    try:
        number = cluster_replies.parse_int(bytes(index))
    except cluster_replies.ClusterError as exc:
        raise SimpleError(str(exc)) from None
    if number != 0 and _node(sock) is not None:
        raise SimpleError("ERR SELECT is not allowed in cluster mode")
    return func(number)


@override("move")
def _move(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    func, sig = base()
    return functools.partial(move, sock, func), sig


def move(sock: Any, func: Callable[..., Any], *args: Any) -> Any:
    if _node(sock) is not None:
        raise SimpleError("ERR MOVE is not allowed in cluster mode")
    return func(*args)


_GETKEYS = signature("command getkeys", variadic=True)


@override("command getkeys")
def _command_getkeys(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    typed = _typed(sock)
    if typed and len(typed) < 4:  # arity -4: the command and one argument at least
        raise error(ReplyError("WRONG_ARITY", command="command|getkeys"), sock._sf_session.server.profile)
    return functools.partial(command_getkeys, sock), _GETKEYS


def command_getkeys(sock: Any, *argv: bytes) -> Any:
    """``COMMAND GETKEYS cmd args…`` (what redis-py's cluster client asks for movable-key commands): the keys as
    the slot check sees them, with the server's errors (getKeysSubcommandImpl)."""
    fields = [bytes(a) for a in argv]
    if b" " in fields[0]:  # ("XINFO STREAM" in one argument): no command has that name
        raise SimpleError("ERR Invalid command specified")
    cmd, args = extract_command(fields)
    info = get_command_info(fields[0].lower())
    try:
        _, sig = sock._name_to_func(cmd)
    except SimpleError:  # not served here; the key rules still know it (MEMORY USAGE, EVAL_RO …)
        if not topology_keys.has_keys(fields[0], None):
            raise SimpleError("ERR Invalid command specified") from None
        sig = None
    stream = sock._sf_session.server.router.resolve(cmd)[0] == "spec"
    if not stream and not topology_keys.has_keys(fields[0], info):
        raise SimpleError("ERR The command has no key arguments")
    try:
        if sig is not None:
            sig.check_arity(args, sock.version)
    except SimpleError:
        raise SimpleError("ERR Invalid number of arguments specified for command") from None
    keys = command_keys(sock, fields, cmd)
    if not keys and not (info and b"no_mandatory_keys" in info[2]):
        raise SimpleError("ERR Invalid arguments specified for command")
    return keys


# --------------------------------------------------------------------------------------------- slot check
def command_keys(sock: Any, fields: List[bytes], cmd: str) -> List[bytes]:
    """The keys of ``fields`` (``cmd``: fakeredis's name for it): :func:`.auth.command_keys`."""
    return auth.command_keys(sock, fields, cmd)


def refused(sock: Any, fields: Any, session: Any) -> bool:
    """The slot check of a cluster node before ``fields`` runs: True if it answered the refusal instead.

    A command that does not exist or has the wrong arity is left to fakeredis (those errors come first)."""
    node = session.server.cluster_node
    sock._sf_slot = -1  # resetClient: the client's slot is the current command's
    argv = [bytes(f) for f in fields]
    cmd, args = extract_command(fields)
    try:
        _, sig = sock._name_to_func(cmd)
        sig.check_arity(args, sock.version)
    except SimpleError:
        return False
    name = argv[0].lower()
    in_multi = getattr(sock, "_transaction", None) is not None
    queue = getattr(sock, "_sf_cluster_queue", None)
    if not in_multi and queue:
        queue = sock._sf_cluster_queue = None
    if name == b"exec" and in_multi:
        commands = list(queue or ())
    else:
        commands = [command_keys(sock, argv, cmd)]
    db = sock._server.dbs[0]
    found = redirect.route(node, commands, bool(getattr(sock, "_sf_asking", False)), lambda key: _present(db, key))
    line = redirect.refusal_line(found)
    if line is None:
        sock._sf_slot = found.slot  # what a script it runs may reach without crossing slots
        if in_multi and name not in _TRANSACTION and commands[0]:
            if queue is None:
                queue = sock._sf_cluster_queue = []
            queue.append(commands[0])
        return False
    if in_multi:
        if name == b"exec":  # discardTransaction, then the redirection
            forget = getattr(sock, "_forget_transaction", None)
            if forget is not None:
                forget()
            else:  # pragma: no cover - older fakeredis
                sock._transaction, sock._transaction_failed = None, False
            sock._clear_watches()
            sock._sf_cluster_queue = None
        else:  # flagTransaction: EXEC answers EXECABORT
            sock._transaction_failed = True
    sock.put_response(sock._decode_result(SimpleError(line)))
    return True


def direct_refusal(sock: Any, node: Any, spec_name: str, args: Sequence[bytes]) -> Optional[str]:
    """The slot check of a stream command on the direct path (:mod:`.fastpath`; lock held, the client not after
    ``ASKING``): the refusal line :func:`refused` would answer, or None. ``args``: the arguments after the
    command (and subcommand) name, as the engine's table names it ``spec_name``.

    The common case, one key of a slot this node owns while no slot of the node is being migrated and the
    cluster is up, costs one CRC16 (C code) and two look-ups; anything else takes :func:`redirect.route`, as the
    dispatch path does."""
    if spec_name == "xread" or spec_name == "xreadgroup":
        keys = auth.stream_keys(spec_name, [b"", *args])
    elif "|" in spec_name:
        keys = [] if spec_name.endswith("|help") or not args else [args[0]]
    else:
        keys = list(args[:1])
    if not keys:
        return None
    cluster = node.cluster
    if len(keys) == 1 and not node.migrating and not node.importing and cluster.state_ok \
            and cluster.owners[key_slot(keys[0])] is node:
        return None
    db = sock._server.dbs[0]
    return redirect.refusal_line(redirect.route(node, (keys,), False, lambda key: _present(db, key)))


def script_refusal(sock: Any, argv: List[bytes], cmd: str, cross_slot: bool, run: Any) -> Optional[str]:
    """The slot check of a command a script on this cluster node calls (``argv``; ``cmd``: fakeredis's name for
    it): the script error instead of running it, or None (:func:`fake_streams.topology.redirect.script_refusal`).
    The client's ``ASKING`` holds for the script's commands. ``cross_slot``: the script may reach several slots
    of this node. ``run``: the script's run, whose ``slot`` the check keeps (feature ``script_slot_per_run``).

    The script's slot: Redis 7.0 keeps it on the client (its command's declared keys set it, :func:`refused`; the
    first slot a script reaches sets it if none; through a transaction's EXEC the next script inherits it); Redis
    7.4 / Valkey keep it per run, starting from the client's, and every command a script runs sets the client's
    to its own slot (-1 without keys; Valkey 8.0+ and Redis 8.2+: -1 as well in a script that may cross slots). O(keys) plus, during a migration of the slot, one lookup per key."""
    server = sock._sf_session.server
    db = sock._server.dbs[0]
    found = redirect.route(server.cluster_node, [command_keys(sock, argv, cmd)],
                           bool(getattr(sock, "_sf_asking", False)), lambda key: _present(db, key))
    command = cmd.replace(" ", "|")
    if server.profile.has("script_slot_per_run"):
        text, run.slot = redirect.script_refusal(found, run.slot, cross_slot, command, True,
                                                 server.profile.has("script_cluster_module_texts"))
        if text is None:  # (slot stats: a script crossing slots leaves its client without one)
            sock._sf_slot = -1 if cross_slot and server.profile.has("script_cross_slot_unsets_slot") else found.slot
        return text
    text, sock._sf_slot = redirect.script_refusal(found, getattr(sock, "_sf_slot", -1), cross_slot, command, False)
    return text


def redirect_blocked(server: Any) -> int:
    """``clusterRedirectBlockedClientIfNeeded`` for every client blocked on ``server`` (a cluster node): the cluster
    is down → ``CLUSTERDOWN The cluster is down``; its (first) key's slot unserved → ``CLUSTERDOWN Hash slot not
    served``; served by another node and not being imported here → ``MOVED``. Returns how many were released."""
    node = server.cluster_node
    if node is None or server.closed:
        return 0

    def answer(waiter: Any) -> Any:
        if not node.cluster.state_ok:
            return ReplyError("CLUSTER_DOWN")
        if not waiter.keys:
            return None
        slot = key_slot(bytes(waiter.keys[0]))
        owner = node.cluster.owners[slot]
        if owner is node or slot in node.importing:
            return None
        if owner is None:
            return ReplyError("CLUSTER_UNBOUND")
        return ReplyError("CLUSTER_MOVED", slot=slot, address=f"{owner.announced_ip}:{owner.port}")

    with server.backend.lock:
        return server.blocking.release_where(answer)


def _present(db: Any, key: bytes) -> bool:
    item = db._dict.get(key)
    return item is not None and (item.expireat is None or item.expireat >= db.time)


def after(sock: Any, fields: Any) -> None:
    """resetClient: ``ASKING`` lasts one command, or until the transaction it was given in ends."""
    if getattr(sock, "_sf_asking", False) and getattr(sock, "_transaction", None) is None:
        if not fields or bytes(fields[0]).lower() != b"asking":
            sock._sf_asking = False


__all__ = ["after", "cluster_command", "command_keys", "db_keys", "keys_in_slot", "redirect_blocked", "refused",
           "direct_refusal", "script_refusal"]
