"""OBJECT ENCODING / REFCOUNT / IDLETIME / FREQ / HELP: what the server reports about a key's value.

No fakeredis import: the adapter (:mod:`fake_streams._fakeredis.server_cmds`) hands :func:`object_command` the
value (looked up without touching it; expired = missing) and the CONFIG values.

ENCODING is the encoding the profile's server gives a value with these contents under this CONFIG
(``object.c`` ``strEncoding``; the conversions of t_string.c, t_list.c, t_set.c, t_hash.c, t_zset.c):

* string: ``int`` (canonical int64 text of at most 20 bytes), ``embstr`` (at most 44 bytes), else ``raw``;
  Valkey 9.1 (feature ``embstr_holds_the_key``) embeds the key with the value in one allocation of at most
  128 bytes (:func:`valkey_embeds`; measured on Valkey 9.1.2 for keys written fresh, with or without a TTL,
  every key and value length). Not modelled: a value written over a key that already had an expiry keeps
  8 bytes for it there (so up to 8 bytes shorter values embed); the fake reports the fresh-key rule;
* list: ``quicklist`` on Redis 7.0; from 7.2 ``listpack`` while its listpack would fit
  ``list-max-listpack-size`` (negative: 4/8/16/32/64 KiB; positive: that many entries within 8 KiB), else
  ``quicklist``;
* set: ``intset`` (every member canonical int64 text, at most ``set-max-intset-entries``); from 7.2 then
  ``listpack`` (at most ``set-max-listpack-entries`` members of at most ``set-max-listpack-value`` bytes);
  else ``hashtable``;
* hash: ``listpack`` (at most ``hash-max-listpack-entries`` fields, fields and values at most
  ``hash-max-listpack-value`` bytes), else ``hashtable``; zset: the same with ``zset-max-*``, else ``skiplist``;
* stream: ``stream``.

The server converts a value to the bigger encoding when it outgrows the small one and (lists aside) never
back; the fake computes the encoding from the contents, so a value that grew past a limit and shrank again
reports the small encoding. String values the server makes ``raw`` whatever their length (APPEND,
SETRANGE, SETBIT results) report by length too.

REFCOUNT: 1, or ``2147483647`` (``OBJ_SHARED_REFCOUNT``) for the shared integers 0..9999 while no
``maxmemory`` with an LRU/LFU policy is set (never on Valkey 9.1: feature ``unshared_small_integers``). IDLETIME / FREQ: the key's LRU clock / LFU counter as
:mod:`fake_streams.keyaccess` tracks them (the adapter passes ``access``), with the server's errors when
the policy does not track the one asked for. A missing key is a nil reply. The server's shared integer
objects share one LRU field between all keys holding them; the fake keeps one per key.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, List, Optional, Tuple

from .ids import parse_i64
from .nodes import LP_EMPTY_BYTES, str_size
from .rdb.objects import hash_encoding, set_encoding, zset_encoding
from .rdb.values import Encodings

#: ``OBJ_SHARED_REFCOUNT``
SHARED_REFCOUNT = 2147483647
#: ``OBJ_SHARED_INTEGERS``
SHARED_INTEGERS = 10000
#: ``OBJ_ENCODING_EMBSTR_SIZE_LIMIT``
EMBSTR_MAX = 44
#: Valkey 9.1: the one allocation an embedded string object (header, key, expiry, value) may take.
EMBED_LIMIT = 128
#: ``LFU_INIT_VAL``
LFU_INIT = 5
#: quicklist ``optimization_level`` (bytes) for ``list-max-listpack-size`` -1 … -5, and ``SIZE_SAFETY_LIMIT``
_LIST_SIZE_LEVELS = (4096, 8192, 16384, 32768, 65536)
_SIZE_SAFETY_LIMIT = 8192

_DEFAULTS = {
    "list-max-listpack-size": -2, "set-max-intset-entries": 512, "set-max-listpack-entries": 128,
    "set-max-listpack-value": 64, "hash-max-listpack-entries": 512, "hash-max-listpack-value": 64,
    "zset-max-listpack-entries": 128, "zset-max-listpack-value": 64,
}
_HELP = (
    b"ENCODING <key>",
    b"    Return the kind of internal representation used in order to store the value",
    b"    associated with a <key>.",
    b"FREQ <key>",
    b"    Return the access frequency index of the <key>. The returned integer is",
    b"    proportional to the logarithm of the recent access frequency of the key.",
    b"IDLETIME <key>",
    b"    Return the idle time of the <key>, that is the approximated number of",
    b"    seconds elapsed since the last access to the key.",
    b"REFCOUNT <key>",
    b"    Return the number of references of the value associated with the specified",
    b"    <key>.",
)
_LFU_SELECTED = ("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching "
                 "between policies at runtime LRU and LFU data will take some time to adjust.")
_LFU_NOT_SELECTED = ("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when "
                     "switching between policies at runtime LRU and LFU data will take some time to adjust.")
_KEY_SUBCOMMANDS = (b"encoding", b"refcount", b"idletime", b"freq")

Config = Callable[[str], Any]


def check_subcommand(sub: bytes, argc: int) -> Optional[str]:
    """The error processCommand answers for ``OBJECT sub`` with ``argc`` words in all (unknown subcommand,
    the subcommand's arity), or None."""
    name = bytes(sub).lower()
    if name == b"help":
        return None if argc == 2 else "ERR wrong number of arguments for 'object|help' command"
    if name not in _KEY_SUBCOMMANDS:
        shown = bytes(sub).decode("utf-8", "replace")
        return f"ERR unknown subcommand '{shown[:128]}'. Try OBJECT HELP."
    return None if argc == 3 else f"ERR wrong number of arguments for 'object|{name.decode()}' command"


def object_command(profile: Any, sub: bytes, args: List[bytes], lookup: Callable[[bytes], Any],
                   config: Config, access: Optional[Callable[[bytes, bool], int]] = None) -> Tuple[Any, Optional[str]]:
    """``OBJECT sub args…``: ``(reply, None)`` or ``(None, error text)``. ``lookup(key)`` is the value or None;
    ``access(key, lfu)`` the key's FREQ (``lfu``) or IDLETIME in seconds (default: a key just made)."""
    name = bytes(sub).lower()
    err = check_subcommand(sub, len(args) + 2)
    if err is not None:
        return None, err
    if name == b"help":
        footer = profile.help_footer.strip()
        return [b"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", *_HELP, b"HELP",
                b"    " + footer], None
    value = lookup(args[0])
    if value is None:
        return None, None
    policy = str(config("maxmemory-policy") or "noeviction").lower()
    lfu = "lfu" in policy
    if name == b"encoding":
        return encoding(profile, value, config, bytes(args[0])).encode(), None
    if name == b"refcount":
        if "unshared_small_integers" in profile.features:
            return 1, None
        return refcount(value, config, policy), None
    if name == b"idletime":
        if lfu:
            return None, _LFU_SELECTED
        return (0 if access is None else access(args[0], False)), None
    if not lfu:
        return None, _LFU_NOT_SELECTED
    return (LFU_INIT if access is None else access(args[0], True)), None


def _setting(config: Config, name: str) -> int:
    raw = config(name)
    try:
        return int(raw) if raw is not None else _DEFAULTS[name]
    except (TypeError, ValueError):
        return _DEFAULTS[name]


def _kind(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, int)):
        return "string"
    if isinstance(value, list):
        return "list"
    model = getattr(value, "_model_type", None)
    return model.decode() if isinstance(model, bytes) else type(value).__name__


def encoding(profile: Any, value: Any, config: Config, key: bytes = b"") -> str:
    """The encoding name ``strEncoding`` would give ``value`` (stored at ``key``) on ``profile`` (see the module
    docstring)."""
    kind = _kind(value)
    since_72 = profile.name != "7.0"
    if kind == "string":
        raw = value if isinstance(value, (bytes, bytearray)) else str(value).encode()
        if len(raw) <= 20 and parse_i64(bytes(raw)) is not None:
            return "int"
        if "embstr_holds_the_key" in profile.features:
            return "embstr" if valkey_embeds(len(key), len(raw)) else "raw"
        return "embstr" if len(raw) <= EMBSTR_MAX else "raw"
    if kind == "stream":
        return "stream"
    if kind == "list":
        return "listpack" if since_72 and _list_fits(value, _setting(config, "list-max-listpack-size")) else "quicklist"
    if kind == "set":
        return set_encoding([_bytes(m) for m in value], _limits(config), since_72)
    if kind == "hash":
        return hash_encoding([(_bytes(k), _bytes(v)) for k, v in value.items()], _limits(config))
    if kind == "zset":
        return zset_encoding([_bytes(member) for member, _ in value.items()], _limits(config))
    return "raw"


def _limits(config: Config) -> Encodings:
    """The ``*-max-listpack-*`` / ``set-max-intset-entries`` limits in CONFIG now."""
    s = functools.partial(_setting, config)
    return Encodings(list_max_listpack_size=s("list-max-listpack-size"), set_max_intset_entries=s("set-max-intset-entries"),
                     set_max_listpack_entries=s("set-max-listpack-entries"),
                     set_max_listpack_value=s("set-max-listpack-value"),
                     zset_max_listpack_entries=s("zset-max-listpack-entries"),
                     zset_max_listpack_value=s("zset-max-listpack-value"),
                     hash_max_listpack_entries=s("hash-max-listpack-entries"),
                     hash_max_listpack_value=s("hash-max-listpack-value"))


def _sds_size(length: int, smallest_header: int) -> int:
    """Bytes of an sds string of ``length``: header (type 5 is 1 byte, types 8/16/32/64 3/5/9/17), text, NUL."""
    headers = ((1 << 5, 1), (1 << 8, 3), (1 << 16, 5), (1 << 32, 9))
    header = next((h for limit, h in headers if length < limit and h >= smallest_header), 17)
    return header + length + 1


def valkey_embeds(key_len: int, value_len: int) -> bool:
    """Valkey 9.1's embstr test for a key written fresh: an 8-byte object header, the key (a size byte and its
    sds) and the value (an sds of type 8 or more) within :data:`EMBED_LIMIT` bytes. O(1).

    Measured on Valkey 9.1.2: key 1 byte → values up to 112 bytes embed, key 31 → 82, key 32 → 79, key 100 → 11
    (the same with ``SET … EX`` or a later EXPIRE)."""
    size = 8 + 1 + _sds_size(key_len, 1) + _sds_size(value_len, 3)
    return size <= EMBED_LIMIT


def _bytes(x: Any) -> bytes:
    return bytes(x) if isinstance(x, (bytes, bytearray)) else str(x).encode()


def _list_fits(items: List[bytes], fill: int) -> bool:
    """``quicklistNodeExceedsLimit`` on a listpack holding ``items`` (t_list.c ``listTypeTryConvertListpack``)."""
    size = LP_EMPTY_BYTES + sum(str_size(bytes(item)) for item in items)
    if fill < 0:
        return size <= _LIST_SIZE_LEVELS[min(-fill, len(_LIST_SIZE_LEVELS)) - 1]
    return size <= _SIZE_SAFETY_LIMIT and len(items) <= (fill or 1)


def refcount(value: Any, config: Config, policy: str) -> int:
    """``OBJECT REFCOUNT``: the shared small integers' refcount where the server shares them, else 1."""
    if _kind(value) != "string":
        return 1
    raw = value if isinstance(value, (bytes, bytearray)) else str(value).encode()
    number = parse_i64(bytes(raw)) if len(raw) <= 20 else None
    if number is None or not 0 <= number < SHARED_INTEGERS:
        return 1
    try:
        maxmemory = int(config("maxmemory") or 0)
    except (TypeError, ValueError):
        maxmemory = 0
    shares = maxmemory == 0 or not ("lru" in policy or "lfu" in policy)
    return SHARED_REFCOUNT if shares else 1


__all__ = ["encoding", "object_command", "refcount"]
