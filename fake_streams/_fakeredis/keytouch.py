"""``lookupKey``'s touch for fakeredis's commands (:mod:`fake_streams.keyaccess` keeps the model).

Around every fakeredis command (top level, queued in EXEC, a script's ``redis.call``) the socket mixin calls
:func:`run_touching`: the key arguments are those fakeredis types as ``Key`` in the command's signature
(positions cached per signature shape). Before the command, each that exists (not expired) is touched;
after it, each that exists now but did not before is a new value (fresh stamp) and each that is gone loses
its entry. Commands whose lookups do not touch (:data:`~fake_streams.keyaccess.NOTOUCH`) are left alone.
RENAME / RENAMENX and MOVE carry the source's stamp (the server moves the object), COPY's target is a new
value even when REPLACE overwrote one (``dupStringObject`` …); RESTORE sets its own stamp
(:func:`restored`, from :mod:`.dumprestore`). Stream commands are touched by the engine's own lookups
(``_Execution.lookup`` / ``create``). O(key arguments) per command.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from ..keyaccess import NOTOUCH, KeyAccess, prune, table_of
from .compat import Key

_Shape = Tuple[Tuple[int, ...], int, Tuple[int, ...]]
_SHAPES: Dict[Any, _Shape] = {}


def _shape(sig: Any) -> _Shape:
    """(key positions among the fixed arguments, repeat length, key offsets in the repeat) of a signature."""
    cache_key = (sig.fixed, sig.repeat)
    shape = _SHAPES.get(cache_key)
    if shape is None:
        fixed = tuple(i for i, t in enumerate(sig.fixed) if isinstance(t, Key))
        repeat = tuple(i for i, t in enumerate(sig.repeat) if isinstance(t, Key))
        shape = _SHAPES[cache_key] = (fixed, len(sig.repeat), repeat)
    return shape


def key_args(sig: Any, args: List[Any]) -> List[bytes]:
    """The arguments fakeredis looks up as keys."""
    fixed, period, repeat = _shape(sig)
    n = len(args)
    keys = [args[i] for i in fixed if i < n]
    if repeat and period:
        start = len(sig.fixed)
        for base in range(start, n, period):
            keys.extend(args[base + j] for j in repeat if base + j < n)
    return keys


def access_of(fake: Any) -> KeyAccess:
    """The fakeredis server's :class:`KeyAccess` (installed by the backend)."""
    return fake._sf_key_access  # type: ignore[no-any-return]


def install(fake: Any, now_ms: Callable[[], int]) -> None:
    fake._sf_key_access = KeyAccess(now_ms, fake.config)


def _live(db: Any, key: bytes) -> bool:
    item = db._dict.get(key)
    return item is not None and (item.expireat is None or item.expireat >= db.time)


def run_touching(sock: Any, sig: Any, args: List[Any], run: Callable[[], Any]) -> Any:
    """``run()`` (the command) with its keys touched as ``lookupKey`` does (see the module docstring).

    Under an LRU policy a touch and a new value get the same stamp (the clock now), so the keys are stamped
    after the command in one pass; under LFU the touches come first (the counter of what existed grows, what
    the command made starts at ``LFU_INIT_VAL``)."""
    name = sig.name
    if name in NOTOUCH:
        return run()
    fixed, period, repeat = _shape(sig)
    if not fixed and not repeat:
        return run()
    access: KeyAccess = sock._server._sf_key_access
    if access.refresh():
        return _run_lfu(sock, access, name, key_args(sig, args), args, run)
    result = run()
    db = sock._db
    live, now, stamp = db._dict, db.time, access.lru_clock()
    table = table_of(db)
    for key in (key_args(sig, args) if repeat or len(fixed) != 1 or fixed[0] >= len(args) else (args[fixed[0]],)):
        item = live.get(key)
        if item is None or (item.expireat is not None and item.expireat < now):
            table.pop(key, None)
        else:
            table[key] = stamp
    if name == "move":
        _carry(sock, name, args, table, stamp)
    if "_sf_restored" in sock.__dict__:
        _apply_restored(sock, access, table)
    if len(table) > 2 * len(live) + 64:
        prune(table, live)
    return result


def _apply_restored(sock: Any, access: KeyAccess, table: Dict[bytes, int]) -> None:
    key, idle, freq = sock.__dict__.pop("_sf_restored")
    if _live(sock._db, key):
        access.restored(table, key, idle, freq)


def _run_lfu(sock: Any, access: KeyAccess, name: str, keys: List[bytes], args: List[Any],
             run: Callable[[], Any]) -> Any:
    db = sock._db
    table = table_of(db)
    before = []
    for key in keys:
        if _live(db, key):
            access.touch(table, key)
            before.append(key)
    carried: Optional[int] = None
    if name in ("rename", "renamenx", "move") and before and before[0] == keys[0] and not \
            sock._sf_session.server.profile.has("renamed_key_is_a_new_object"):
        carried = table.get(keys[0])  # the object moves with its data (else the new one starts at LFU_INIT_VAL)
    result = run()
    for key in keys:
        if not _live(db, key):
            table.pop(key, None)
        elif key not in before:
            table[key] = access.fresh()
    if carried is not None:
        _carry(sock, name, args, table, carried)
    if name == "copy" and len(keys) > 1 and _live(db, keys[1]):
        table[keys[1]] = access.fresh()
    if "_sf_restored" in sock.__dict__:
        _apply_restored(sock, access, table)
    prune(table, db._dict)
    return result


def _carry(sock: Any, name: str, args: List[Any], table: Dict[bytes, int], stamp: int) -> None:
    """RENAME / MOVE done: the moved object keeps its stamp in its new place."""
    if name == "move":
        try:
            target = sock._server.dbs.get(int(args[1]))
        except (TypeError, ValueError):
            return
        if target is not None and _live(target, args[0]) and target is not sock._db:
            table_of(target)[args[0]] = stamp
        return
    db = sock._db
    if not _live(db, args[0]) and _live(db, args[1]):
        table[args[1]] = stamp


def restored(sock: Any, key: bytes, idle: Optional[int], freq: Optional[int]) -> None:
    """RESTORE is storing ``key``: once fakeredis has written it back, its stamp is set from IDLETIME / FREQ
    (``objectSetLRUOrLFU``) by :func:`run_touching`."""
    sock._sf_restored = (key, idle, freq)


__all__ = ["install", "key_args", "restored", "run_touching"]
