"""Which arguments of a (non-stream) command are keys, as the server's key specs say (``COMMAND GETKEYS``).

fakeredis's command table carries the legacy ``first/last/step`` triple, but with ``last`` wrong for variadic
commands (``DEL``, ``MSET``) and nothing for the movable-key commands (``EVAL``, ``ZUNIONSTORE``, ``SORT …
STORE``), so the commands whose keys are more than "argument 1" are listed here; for the rest the command
table's first key is used. Stream commands are not here: the engine knows their keys
(:func:`fake_streams._fakeredis.auth.stream_keys`).

Costs: O(number of arguments) per command.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

Rule = Callable[[Sequence[bytes]], List[bytes]]


def _range(first: int, last: int, step: int = 1) -> Rule:
    def keys(argv: Sequence[bytes]) -> List[bytes]:
        end = len(argv) + last if last < 0 else last
        return list(argv[first:end + 1:step])

    return keys


def _numkeys(at: int, fixed: Sequence[int] = ()) -> Rule:
    """``numkeys`` at argument ``at``, that many keys right after it, plus the keys at ``fixed`` positions."""

    def keys(argv: Sequence[bytes]) -> List[bytes]:
        try:
            count = int(argv[at])
        except (IndexError, ValueError):
            return []
        if count < 0 or at + 1 + count > len(argv):
            return []  # getKeys fails: the command itself answers the error
        return [argv[i] for i in fixed] + list(argv[at + 1:at + 1 + count])

    return keys


def _with_store(*options: bytes) -> Rule:
    """Key 1, and the key after each of ``options`` (SORT … STORE dst, GEORADIUS … STORE/STOREDIST dst)."""

    def keys(argv: Sequence[bytes]) -> List[bytes]:
        out = list(argv[1:2])
        for i in range(2, len(argv) - 1):
            if argv[i].lower() in options:
                out.append(argv[i + 1])
        return out

    return keys


def _sub_key(argv: Sequence[bytes]) -> List[bytes]:
    return list(argv[2:3])


_RULES: Dict[bytes, Rule] = {}
for _names, _rule in (
    ((b"del", b"unlink", b"exists", b"touch", b"mget", b"watch", b"sinter", b"sunion", b"sdiff", b"sinterstore",
      b"sunionstore", b"sdiffstore", b"pfcount", b"pfmerge"), _range(1, -1)),
    ((b"mset", b"msetnx"), _range(1, -1, 2)),
    ((b"rename", b"renamenx", b"copy", b"smove", b"rpoplpush", b"lmove", b"blmove", b"brpoplpush",
      b"geosearchstore", b"zrangestore", b"lcs"), _range(1, 2)),
    ((b"blpop", b"brpop", b"bzpopmin", b"bzpopmax"), _range(1, -2)),
    ((b"bitop",), _range(2, -1)),
    ((b"eval", b"evalsha", b"eval_ro", b"evalsha_ro", b"fcall", b"fcall_ro", b"blmpop", b"bzmpop"), _numkeys(2)),
    ((b"zunionstore", b"zinterstore", b"zdiffstore"), _numkeys(2, fixed=(1,))),
    ((b"zunion", b"zinter", b"zdiff", b"zintercard", b"sintercard", b"lmpop", b"zmpop"), _numkeys(1)),
    ((b"sort",), _with_store(b"store")),
    ((b"georadius", b"georadiusbymember"), _with_store(b"store", b"storedist")),
    ((b"sort_ro", b"georadius_ro", b"georadiusbymember_ro"), _range(1, 1)),
    ((b"object", b"memory"), _sub_key),
    ((b"migrate",), lambda argv: []),  # served by its own node whatever the slot state (not emulated)
):
    for _name in _names:
        _RULES[_name] = _rule


def command_keys(argv: Sequence[bytes], info: Optional[Any]) -> List[bytes]:
    """The keys of ``argv`` (a non-stream command as typed); ``info`` is fakeredis's command-table entry for it
    (``[name, arity, flags, first, last, step, …]``) or None."""
    name = bytes(argv[0]).lower()
    rule = _RULES.get(name)
    if rule is not None:
        if name == b"memory" and (len(argv) < 2 or bytes(argv[1]).lower() != b"usage"):
            return []
        if name == b"object" and (len(argv) < 2 or bytes(argv[1]).lower() == b"help"):
            return []
        return [bytes(k) for k in rule(argv)]
    if not info or info[3] <= 0 or len(argv) <= info[3]:
        return []
    return [bytes(argv[info[3]])]


def has_keys(name: bytes, info: Optional[Any]) -> bool:
    """Whether the command ``name`` can name keys at all (``doesCommandHaveKeys``)."""
    return bytes(name).lower() in _RULES or bool(info and info[3] > 0)


__all__ = ["command_keys", "has_keys"]
