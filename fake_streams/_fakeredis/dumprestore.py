"""DUMP and RESTORE (see :mod:`.overrides`) in the server's own serialization, through :mod:`fake_streams.rdb`.

fakeredis's own DUMP/RESTORE pickle the value behind an unkeyed SHA-1, so a crafted payload ran code in the
test process; these replace them. Nothing here deserialises anything executable: a payload is parsed by
the :mod:`fake_streams.rdb` readers, and its footer (RDB version of the profile's server + CRC64) is checked
before its body is read.

This module owns the conversions between fakeredis's values (bytes, list, ``ExpiringMembersSet``,
``ZSet``, ``Hash``) and :class:`~fake_streams.rdb.Value`, and the command semantics of ``restoreCommand``
(cluster.c): options first (REPLACE, ABSTTL, IDLETIME s, FREQ f; IDLETIME and FREQ exclude each other),
then BUSYKEY, then the TTL, then the payload footer, then the body; on any error the key is unchanged.
Set members keep fakeredis's member TTLs out of a payload (the server's sets have none); hash field TTLs
are written by the 7.4 profile (Redis 7.4's hash field expiration types) and left out by the others
(their servers have none).
"""

from __future__ import annotations

import copy
import functools
from typing import TYPE_CHECKING, Any, Callable, Optional, Tuple

from ..ids import parse_i64
from . import keytouch
from .compat import SKIP_RESP2, ExpiringMembersSet, Hash, SimpleError, SimpleString, ZSet
from .overrides import override
from .values import StreamValue

if TYPE_CHECKING:
    from ..rdb import Encodings, Value

# The codec (fake_streams.rdb, ~70 ms to import) is imported by the first DUMP or RESTORE, not with the adapter.

NOT_INTEGER = "ERR value is not an integer or out of range"
SYNTAX = "ERR syntax error"
BUSYKEY = "BUSYKEY Target key name already exists."
BAD_TTL = "ERR Invalid TTL value, must be >= 0"
BAD_IDLE = "ERR Invalid IDLETIME value, must be >= 0"
BAD_FREQ = "ERR Invalid FREQ value, must be >= 0 and <= 255"
BAD_FOOTER = "ERR DUMP payload version or checksum are wrong"
BAD_FORMAT = "ERR Bad data format"

#: CONFIG names (and their old aliases) of the encoding limits, with Encodings' field names
_LIMITS = (
    ("list-max-listpack-size", "list-max-ziplist-size", "list_max_listpack_size"),
    ("set-max-intset-entries", None, "set_max_intset_entries"),
    ("set-max-listpack-entries", None, "set_max_listpack_entries"),
    ("set-max-listpack-value", None, "set_max_listpack_value"),
    ("zset-max-listpack-entries", "zset-max-ziplist-entries", "zset_max_listpack_entries"),
    ("zset-max-listpack-value", "zset-max-ziplist-value", "zset_max_listpack_value"),
    ("hash-max-listpack-entries", "hash-max-ziplist-entries", "hash_max_listpack_entries"),
    ("hash-max-listpack-value", "hash-max-ziplist-value", "hash_max_listpack_value"),
)


def encodings(server: Any) -> Encodings:
    """The encoding limits in the server's CONFIG now (the defaults where unset or not a number)."""
    from ..rdb import Encodings

    config = server.backend._config
    values = {}
    for name, alias, attr in _LIMITS:
        value = config.get_int(name.encode())
        if value is None and alias:
            value = config.get_int(alias.encode())
        if value is not None:
            values[attr] = value
    raw = config.config.get(b"rdbcompression")
    values["rdbcompression"] = raw is None or bytes(raw).lower() != b"no"
    return Encodings(**values)


def to_value(value: Any) -> Value:
    """fakeredis / engine value → codec value. SimpleError for a type the server has no RDB form of here."""
    from ..rdb import Value
    from ..rdb.engine import stream_data

    if isinstance(value, bytes):
        return Value("string", value)
    if isinstance(value, StreamValue):
        return Value("stream", stream_data(value))
    if isinstance(value, list):
        return Value("list", list(value))
    if isinstance(value, ExpiringMembersSet):
        len(value)  # drops members whose TTL passed
        members = getattr(value, "_values", None)  # insertion order (the order of a listpack set)
        return Value("set", list(members) if members is not None else list(value))
    if isinstance(value, ZSet):
        return Value("zset", [(member, score) for member, score in value.items()])
    if isinstance(value, Hash):
        pairs = list(value.items())  # drops fields whose TTL passed
        ttls = getattr(value, "_expirations", None) or {}
        return Value("hash", pairs, {f: int(ttls[f]) for f, _ in pairs if ttls.get(f) is not None})
    raise SimpleError("ERR DUMP is not supported for this value type")


def from_value(value: Value, server: Any) -> Any:
    """codec value → the value fakeredis / the engine stores."""
    from ..rdb.engine import build_stream

    kind, data = value.kind, value.data
    if kind == "string":
        return bytes(data)
    if kind == "list":
        return list(data)
    if kind == "set":
        return ExpiringMembersSet({m: None for m in data})
    if kind == "zset":
        zset = ZSet()
        for member, score in data:
            zset.add(member, score)
        return zset
    if kind == "hash":
        h = Hash()
        for f, v in data:
            h[f] = v
        for f, when_ms in value.field_ttls.items():
            h.set_key_expireat(f, when_ms)
        return h
    return build_stream(data, server.backend.new_stream)


@override("dump")
def _dump(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    return functools.partial(dump, sock), base()[1]


def dump(sock: Any, key: Any) -> Optional[bytes]:
    """``DUMP key``: the payload, or nil for a missing key. O(size of the value)."""
    if key.value is None:
        return None
    from ..rdb import dump_payload, format_of

    server = sock._sf_session.server
    value = key.value
    if isinstance(value, StreamValue) and value.idmp is not None:  # lazy IDMP expiry: only what is tracked now
        value.idmp.expire(server.clock.now_ms())
    return dump_payload(to_value(value), format_of(server.profile), encodings(server))


@override("restore")
def _restore(sock: Any, name: str, base: Callable[[], Tuple[Any, Any]]) -> Tuple[Any, Any]:
    # fakeredis's own signature (its key item is written back and notified as "restore" after the call), with
    # the TTL left as bytes: it is parsed after the options and the BUSYKEY check, as the server does
    sig = copy.copy(base()[1])
    sig.fixed = (sig.fixed[0], bytes, bytes)
    sig.flags = set(sig.flags) | set(SKIP_RESP2)
    return functools.partial(restore, sock), sig


def _int(raw: bytes) -> int:
    value = parse_i64(bytes(raw))
    if value is None:
        raise SimpleError(NOT_INTEGER)
    return value


def restore(sock: Any, item: Any, ttl_arg: bytes, payload: bytes, *options: bytes) -> Any:
    """``RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]`` (``restoreCommand``). ``item`` is
    fakeredis's item for the key (an expired key reads as missing, as ``lookupKeyWrite``); it is written back
    after the call only if it was changed, so an error leaves the key as it was."""
    replace = absttl = False
    idle: Optional[int] = None
    freq: Optional[int] = None
    j = 0
    while j < len(options):
        option = bytes(options[j]).lower()
        more = len(options) - j - 1
        if option == b"replace":
            replace = True
        elif option == b"absttl":
            absttl = True
        elif option == b"idletime" and more >= 1 and freq is None:
            idle = _int(options[j + 1])
            if idle < 0:
                raise SimpleError(BAD_IDLE)
            j += 1
        elif option == b"freq" and more >= 1 and idle is None:
            freq = _int(options[j + 1])
            if freq < 0 or freq > 255:
                raise SimpleError(BAD_FREQ)
            j += 1
        else:
            raise SimpleError(SYNTAX)
        j += 1
    existed = item.value is not None
    if existed and not replace:
        raise SimpleError(BUSYKEY)
    ttl = _int(ttl_arg)
    if ttl < 0:
        raise SimpleError(BAD_TTL)
    from ..rdb import PayloadFormatError, PayloadVersionError, format_of, load_payload

    server = sock._sf_session.server
    try:
        value = load_payload(bytes(payload), format_of(server.profile))
    except PayloadVersionError:
        raise SimpleError(BAD_FOOTER) from None
    except PayloadFormatError:
        raise SimpleError(BAD_FORMAT) from None
    stored = from_value(value, server)
    now_ms = sock._db.time * 1000.0
    if ttl and not absttl:
        ttl += int(now_ms)
    if ttl and ttl <= now_ms:  # checkAlreadyExpired: the key is not created (an old one is still deleted)
        if existed:
            item.value = None
        return SimpleString(b"OK")
    item.value = stored
    item.expireat = ttl / 1000.0 if ttl else None
    keytouch.restored(sock, item.key, idle, freq)
    return SimpleString(b"OK")
