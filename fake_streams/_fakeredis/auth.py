"""Authentication and ACL checks in the shared command path: every command of every client (in process, in a
pipeline, queued in MULTI, over TCP) passes :func:`gate` before fakeredis runs it.

What the server does (server.c ``processCommand``, networking.c ``authRequired``, acl.c ``authCommand``):

* A connection is authenticated from the start if the ``default`` user has ``nopass`` and is enabled then
  (so ``CONFIG SET requirepass`` leaves clients already connected authenticated, as the server does); else
  every command but AUTH, HELLO, QUIT and RESET answers ``NOAUTH Authentication required.`` (after the
  unknown-command and arity checks, before everything else; inside MULTI the transaction aborts).
* ``CONFIG SET requirepass pw`` gives the ``default`` user that one password (an empty one: ``nopass``).
* AUTH: ``AUTH pw`` with ``default`` on ``nopass`` is the server's "called without any password configured"
  error; a wrong pair, an unknown or disabled user is ``WRONGPASS invalid username-password pair or user is
  disabled.``; more than two arguments is a syntax error. ``HELLO … AUTH user pass`` authenticates the same way;
  an unauthenticated HELLO without AUTH has its own NOAUTH text.
* ACL: a user's command rules (replayed in the order ACL SETUSER gave them: the last one naming the command,
  its subcommand, one of its categories or ``@all`` wins) and key patterns, checked on every key of the command —
  stream commands' keys as the engine knows them (XREAD / XREADGROUP: every key after STREAMS; XGROUP / XINFO
  subcommands: the key after the subcommand) — and channel patterns for pub/sub; refusals are ``NOPERM`` with the
  profile's text (Redis 7.0's "this user has no permissions …", 7.2+ and Valkey's "No permissions to access a
  key" / "User u has no permissions to run the 'cmd' command"), logged in ACL LOG. fakeredis's own ACL check is
  switched off for the servers we attach (:func:`install`): this one replaces it.

Costs: O(1) for an authenticated client whose user can run everything (the common case); else one command lookup
plus O(keys × patterns).
"""

from __future__ import annotations

import fnmatch
import hashlib
from typing import Any, List, Optional

from ..topology import keys as key_specs
from .compat import SimpleError, get_command_info

NOAUTH = "NOAUTH Authentication required."
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
AUTH_NO_PASSWORD = ("ERR AUTH <password> called without any password configured for the default user. "
                    "Are you sure your configuration is correct?")
SYNTAX = "ERR syntax error"
_HELLO_NOAUTH = ("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO{proto} "
                 "AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol "
                 "version at the same time")
#: commands an unauthenticated client may send (``CMD_NO_AUTH``)
NO_AUTH_COMMANDS = frozenset({b"auth", b"hello", b"quit", b"reset"})


def install(fake: Any) -> None:
    """Take ACL checking over from fakeredis for ``fake`` (a FakeServer): :func:`gate` does it for our sockets."""
    fake.acl.validate_command = _skip


def _skip(*args: Any) -> None:
    return None


def _default(fake: Any) -> Any:
    return fake.acl._user_acl.get(b"default")


def default_open(fake: Any) -> bool:
    """Whether a connection made now is authenticated at once: ``default`` is ``nopass`` and enabled."""
    user = _default(fake)
    return user is None or (bool(user._nopass) and bool(user.enabled))


def passed(sock: Any, fake: Any) -> bool:
    """Whether ``sock`` may run commands (authenticated, or no authentication required now). O(1)."""
    return bool(getattr(sock, "_sf_authenticated", True)) or default_open(fake)


def set_requirepass(fake: Any, password: bytes, config: bool = False) -> None:
    """``ACLUpdateDefaultUserPassword``: ``resetpass``, then ``>password`` (or ``nopass`` for an empty one);
    ``config``: also store it as CONFIG GET requirepass shows it (what CONFIG SET itself does)."""
    if config:
        fake.config[b"requirepass"] = password
    user = fake.acl.get_user_acl(b"default")
    user._passwords.clear()
    if password:
        user.add_password(password)
    else:
        user.set_nopass()


def authenticate(sock: Any, username: bytes, password: bytes) -> None:
    """``ACLAuthenticateUser``: on success the socket runs as ``username``; else ``WRONGPASS`` (logged)."""
    fake = sock._server
    user = fake.acl._user_acl.get(bytes(username))
    ok = user is not None and user.enabled and (
        user._nopass or hashlib.sha256(bytes(password)).hexdigest().encode() in user._passwords)
    if not ok:
        fake.acl.add_log_record(b"auth", b"toplevel", b"AUTH", bytes(username), sock._client_info.as_bytes())
        raise SimpleError(WRONGPASS)
    sock._client_info["user"] = bytes(username).decode("utf-8", "replace")
    sock._sf_authenticated = True


def auth_command(sock: Any, *args: bytes) -> Any:
    """``AUTH [username] password``."""
    if len(args) > 2:
        raise SimpleError(SYNTAX)
    if len(args) == 1:
        if default_open_password(sock._server):
            raise SimpleError(AUTH_NO_PASSWORD)
        username, password = b"default", args[0]
    else:
        username, password = args
    authenticate(sock, username, password)
    return b"OK"


def default_open_password(fake: Any) -> bool:
    """Whether ``default`` has ``nopass`` (AUTH's one-argument form then refuses)."""
    user = _default(fake)
    return user is None or bool(user._nopass)


def hello_auth(sock: Any, args: List[bytes]) -> List[bytes]:
    """HELLO's ``AUTH user pass`` option: authenticate (raises WRONGPASS), return the other arguments."""
    out: List[bytes] = []
    i = 0
    while i < len(args):
        if i > 0 and bytes(args[i]).lower() == b"auth" and i + 2 < len(args):
            authenticate(sock, args[i + 1], args[i + 2])
            i += 3
            continue
        out.append(args[i])
        i += 1
    return out


def needs_auth(sock: Any, fields: List[bytes]) -> bool:
    """Whether ``fields`` gets NOAUTH for ``sock`` whatever the command is (not authenticated, not AUTH / HELLO /
    QUIT / RESET). O(1)."""
    return not passed(sock, sock._server) and bytes(fields[0]).lower() not in NO_AUTH_COMMANDS


def gate(sock: Any, fields: List[bytes], cmd: str, profile: Any) -> Optional[str]:
    """The error the server answers before running ``fields`` for ``sock`` (NOAUTH, NOPERM), or None.

    ``cmd`` is fakeredis's name for the command (``"xgroup create"``); the caller has checked that it exists
    and has its arity (those errors come first).
    """
    fake = sock._server
    name = bytes(fields[0]).lower()
    if not passed(sock, fake):
        if name == b"hello" and not any(bytes(a).lower() == b"auth" for a in fields[2:]):
            return _HELLO_NOAUTH.format(proto="" if profile.name == "7.0" else " <proto>")
        if name not in NO_AUTH_COMMANDS:
            return NOAUTH
        return None
    username = sock._client_info.get("user") or "default"
    user = fake.acl._user_acl.get(username.encode())
    if user is None or name == b"auth" or _unrestricted(user):
        return None
    info = _command_info(fields)
    context = b"multi" if getattr(sock, "_transaction", None) is not None else b"toplevel"
    client = sock._client_info.as_bytes()
    full = cmd.replace(" ", "|")
    if not _command_allowed(user, info, fields, full):
        fake.acl.add_log_record(b"command", context, full.encode(), username.encode(), client)
        if profile.name == "7.0":
            return f"NOPERM this user has no permissions to run the '{full}' command"
        return f"NOPERM User {username} has no permissions to run the '{full}' command"
    keys = command_keys(sock, fields, cmd, info)
    patterns = list(user._key_patterns)
    for key in keys:
        if not any(fnmatch.fnmatchcase(key, bytes(p)) for p in patterns):
            fake.acl.add_log_record(b"key", context, key, username.encode(), client)
            if profile.name == "7.0":
                return "NOPERM this user has no permissions to access one of the keys used as arguments"
            return "NOPERM No permissions to access a key"
    if info and b"@pubsub" in info[6]:
        denied = user.channels_not_allowed(info, fields)
        if denied:
            fake.acl.add_log_record(b"channel", context, denied[0], username.encode(), client)
            if profile.name == "7.0":
                return "NOPERM this user has no permissions to access one of the channels used as arguments"
            return "NOPERM No permissions to access a channel"
    return None


def record_setuser(fake: Any, username: bytes, args: List[bytes]) -> None:
    """After fakeredis's ``ACL SETUSER username args…`` succeeded: keep the user's command rules in order
    (``reset`` / ``nocommands`` / ``allcommands`` / ``+…`` / ``-…``), which :func:`_command_allowed` replays."""
    user = fake.acl._user_acl.get(bytes(username))
    if user is None:
        return
    rules = _rules(user)
    for raw in args:
        arg = bytes(raw)
        low = arg.lower()
        if low == b"reset" or low == b"nocommands":
            rules[:] = [] if low == b"reset" else rules + [(False, b"@all")]
        elif low == b"allcommands":
            rules.append((True, b"@all"))
        elif arg[:1] in (b"+", b"-") and len(arg) > 1:
            rules.append((arg[:1] == b"+", arg[1:].lower()))
    user._sf_rules = rules


def _rules(user: Any) -> List[Any]:
    """The user's command rules in order; a user we never saw set up: fakeredis's rules as it stores them."""
    rules = getattr(user, "_sf_rules", None)
    if rules is None:
        rules = [(bool(allow), bytes(name).lower()) for name, allow in user._commands.items()
                 if allow or name != b"@all"]
    return list(rules)


def _command_allowed(user: Any, info: Any, fields: List[bytes], full: str) -> bool:
    """``ACLCheckAllUserCommandPerm``'s verdict, replaying the user's rules in order (the last rule naming the
    command, its subcommand, one of its categories or ``@all`` wins; none: denied)."""
    command = full.split("|", 1)[0].encode()
    sub = full.encode()
    categories = set(info[6]) if info else set()
    allowed = False
    for allow, name in _rules(user):
        if name == b"@all" or name == command or name == sub or (name[:1] == b"@" and name in categories):
            allowed = allow
    return allowed


def _unrestricted(user: Any) -> bool:
    check = getattr(user, "unrestricted", None)
    if check is not None:
        return bool(check())
    commands = user._commands
    return (bool(commands.get(b"@all")) and all(commands.values()) and b"*" in user._key_patterns
            and b"*" in user._channel_patterns)


def _command_info(fields: List[bytes]) -> Any:
    """The command table's entry: the subcommand's (``xinfo stream``: its own categories) before the container's."""
    name = bytes(fields[0]).lower()
    info = get_command_info(name + b" " + bytes(fields[1]).lower()) if len(fields) > 1 else None
    return info or get_command_info(name)


def command_keys(sock: Any, fields: List[bytes], cmd: str, info: Any = None) -> List[bytes]:
    """The keys ``fields`` names, as the server's key specs say (``COMMAND GETKEYS``): the engine's for stream
    commands, :mod:`fake_streams.topology.keys` for the rest (``info``: fakeredis's command-table entry of
    ``fields[0]``, looked up when not given). Used by the ACL key check and a cluster node's slot check."""
    argv = [bytes(f) for f in fields]
    kind, spec_name = sock._sf_session.server.router.resolve(cmd)
    if kind == "spec":
        return stream_keys(spec_name, argv)
    return key_specs.command_keys(argv, info if info is not None else get_command_info(argv[0].lower()))


def stream_keys(spec_name: str, fields: List[bytes]) -> List[bytes]:
    """The keys of a stream command (``spec_name`` as the engine's table names it), from its argv."""
    if spec_name in ("xread", "xreadgroup"):  # key specs: keyword STREAMS searched from argument 1 / 4
        for i in range(1 if spec_name == "xread" else 4, len(fields)):
            if fields[i].lower() == b"streams":
                rest = fields[i + 1:]
                return rest[: len(rest) // 2]
        return []
    if "|" in spec_name:
        sub = spec_name.split("|", 1)[1]
        return [] if sub == "help" or len(fields) < 3 else [fields[2]]
    return fields[1:2]


__all__ = ["NOAUTH", "WRONGPASS", "auth_command", "authenticate", "command_keys", "default_open", "gate", "needs_auth",
           "hello_auth", "install", "passed", "set_requirepass", "stream_keys"]
