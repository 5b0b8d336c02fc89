"""CONFIG served by us (fakeredis 2.41 has no CONFIG GET and a CONFIG SET that accepts anything), registered in
the override table (:mod:`.overrides`): GET, SET, RESETSTAT, REWRITE and HELP, with the profile's parameter table
and errors (:mod:`fake_streams.config`).

The store is fakeredis's ``FakeServer.config`` dict, so every reader (fakeredis's keyspace notifications, the
stream node limits, OBJECT ENCODING / DUMP's listpack limits, INFO) sees what CONFIG SET wrote. Effects beyond
the stored value: ``requirepass`` becomes the ``default`` user's password (:func:`.auth.set_requirepass`).
CONFIG RESETSTAT zeroes INFO's counters (:class:`fake_streams.info.ServerStats`). An unknown subcommand and a
wrong arity are answered before these run (fakeredis's lookup and arity check, :mod:`.socket`).
"""

from __future__ import annotations

import collections
import functools
from typing import Any, Callable, Dict, Tuple

from ..config import NO_CONFIG_FILE, help_lines, table_for
from . import auth
from .compat import SimpleError, SimpleString, msgs
from .overrides import override, signature

# named as the server's arity error names them ("wrong number of arguments for 'config|get' command"); CONFIG is
# ``noscript`` (refused in redis.call)
_NO_SCRIPT = msgs.FLAG_NO_SCRIPT
_GET = signature("config|get", fixed=1, variadic=True, flags=_NO_SCRIPT)
_SET = signature("config|set", fixed=2, variadic=True, flags=_NO_SCRIPT)
_NO_ARGS = {name: signature(name.replace(" ", "|"), flags=_NO_SCRIPT)
            for name in ("config resetstat", "config rewrite", "config help")}
CONTAINER_ARITY = "ERR wrong number of arguments for 'config' command"
_OK = SimpleString(b"OK")

Base = Callable[[], Tuple[Any, Any]]


_CONTAINER = signature("config", variadic=True, flags=_NO_SCRIPT)


@override("config")
def _config(sock: Any, name: str, base: Base) -> Tuple[Any, Any]:
    """``CONFIG`` without a subcommand: the container's arity error (fakeredis calls it an unknown command). From
    a script whose ``redis.call`` fakeredis did not join with its subcommand: refused as ``noscript``."""
    if sock._sf_session.depth:
        return config_container, _CONTAINER
    raise SimpleError(CONTAINER_ARITY)


def config_container(*args: bytes) -> Any:
    raise SimpleError(CONTAINER_ARITY)


def _table(sock: Any) -> Any:
    profile = sock._sf_session.server.profile
    return table_for(profile.name, profile.server)


@override("config get")
def _config_get(sock: Any, name: str, base: Base) -> Tuple[Any, Any]:
    return functools.partial(config_get, sock), _GET


def config_get(sock: Any, *patterns: bytes) -> Any:
    """``CONFIG GET pattern [pattern …]``: a map (RESP3), pairs flattened (RESP2). Several patterns came with
    7.0, so every profile takes them."""
    pairs = _table(sock).get(patterns, collections.ChainMap(sock._server.config, _process_values(sock)))
    if sock._client_info.protocol_version >= 3:
        return dict(pairs)
    return [x for pair in pairs for x in pair]


def _process_values(sock: Any) -> Dict[bytes, bytes]:
    """What a server reports of its own process: the port clients reach it on (as INFO's ``tcp_port``; 6379 for an
    in-process server without an address, as a server started without a config file)."""
    address = sock._sf_session.server.address
    if address and not address.startswith("unix:"):
        port = address.rsplit(":", 1)[-1]
        if port.isdigit():
            return {b"port": port.encode()}
    return {}


@override("config set")
def _config_set(sock: Any, name: str, base: Base) -> Tuple[Any, Any]:
    return functools.partial(config_set, sock), _SET


def config_set(sock: Any, *args: bytes) -> Any:
    """``CONFIG SET name value [name value …]``: all or nothing, then the effects of what changed."""
    fake = sock._server
    err, changed = _table(sock).set(args, fake.config)
    if err is not None:
        raise SimpleError(err)
    if "requirepass" in changed:
        auth.set_requirepass(fake, fake.config[b"requirepass"])
    return _OK


@override("config resetstat")
def _config_resetstat(sock: Any, name: str, base: Base) -> Tuple[Any, Any]:
    return functools.partial(config_resetstat, sock), _NO_ARGS[name]


def config_resetstat(sock: Any) -> Any:
    """``CONFIG RESETSTAT``: commandstats, errorstats and the stat counters back to zero."""
    sock._sf_session.server.stats.reset()
    return _OK


@override("config rewrite")
def _config_rewrite(sock: Any, name: str, base: Base) -> Tuple[Any, Any]:
    return functools.partial(config_rewrite), _NO_ARGS[name]


def config_rewrite() -> Any:
    """``CONFIG REWRITE``: the fake, like a server started without a config file, has none to rewrite."""
    raise SimpleError(NO_CONFIG_FILE)


@override("config help")
def _config_help(sock: Any, name: str, base: Base) -> Tuple[Any, Any]:
    return functools.partial(config_help, sock), _NO_ARGS[name]


def config_help(sock: Any) -> Any:
    """``CONFIG HELP``: the server's lines, as status replies."""
    return [SimpleString(line) for line in help_lines(sock._sf_session.server.profile.server)]
