"""OBJECT ENCODING / REFCOUNT / IDLETIME / FREQ / HELP: what the server reports about a key's value.

No fakeredis import: the adapter (:mod:`fake_streams._fakeredis.server_cmds`) hands :func:`object_command` the
value (looked up without touching it; expired = missing) and the CONFIG values.

ENCODING is the encoding the profile's server gives a value with these contents under this CONFIG
(``object.c`` ``strEncoding``; the conversions of t_string.c, t_list.c, t_set.c, t_hash.c, t_zset.c):

* string: ``int`` (canonical int64 text of at most 20 bytes), ``embstr`` (at most 44 bytes), else ``raw``;
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
``maxmemory`` with an LRU/LFU policy is set. IDLETIME / FREQ: the key's LRU clock / LFU counter as
:mod:`fake_streams.keyaccess` tracks them (the adapter passes ``access``), with the server's errors when
the policy does not track the one asked for. A missing key is a nil reply. The server's shared integer
objects share one LRU field between all keys holding them; the fake keeps one per key.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

from .ids import parse_i64
from .nodes import LP_EMPTY_BYTES, str_size

#: ``OBJ_SHARED_REFCOUNT``
SHARED_REFCOUNT = 2147483647
#: ``OBJ_SHARED_INTEGERS``
SHARED_INTEGERS = 10000
#: ``OBJ_ENCODING_EMBSTR_SIZE_LIMIT``
EMBSTR_MAX = 44
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
        return encoding(profile, value, config).encode(), None
    if name == b"refcount":
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


def encoding(profile: Any, value: Any, config: Config) -> str:
    """The encoding name ``strEncoding`` would give ``value`` on ``profile`` (see the module docstring)."""
    kind = _kind(value)
    since_72 = profile.name != "7.0"
    if kind == "string":
        raw = value if isinstance(value, (bytes, bytearray)) else str(value).encode()
        if len(raw) <= 20 and parse_i64(bytes(raw)) is not None:
            return "int"
        return "embstr" if len(raw) <= EMBSTR_MAX else "raw"
    if kind == "stream":
        return "stream"
    if kind == "list":
        return "listpack" if since_72 and _list_fits(value, _setting(config, "list-max-listpack-size")) else "quicklist"
    if kind == "set":
        members = list(value)
        if len(members) <= _setting(config, "set-max-intset-entries") and all(
                len(m) <= 20 and parse_i64(bytes(m)) is not None for m in members):
            return "intset"
        if since_72 and _small(members, (), config, "set"):
            return "listpack"
        return "hashtable"
    if kind == "hash":
        items = list(value.items())
        return "listpack" if _small([k for k, _ in items], [v for _, v in items], config, "hash") else "hashtable"
    if kind == "zset":
        return "listpack" if _small([member for member, _ in value.items()], (), config, "zset") else "skiplist"
    return "raw"


def _small(names: List[Any], values: Any, config: Config, kind: str) -> bool:
    """Whether a set/hash/zset fits its ``<kind>-max-listpack-entries`` and ``-value`` limits."""
    if len(names) > _setting(config, f"{kind}-max-listpack-entries"):
        return False
    limit = _setting(config, f"{kind}-max-listpack-value")
    return all(_blen(x) <= limit for x in names) and all(_blen(x) <= limit for x in values)


def _blen(x: Any) -> int:
    return len(x) if isinstance(x, (bytes, bytearray)) else len(str(x))


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
