"""Key access tracking: each key's LRU clock or LFU counter, as the server keeps it in ``robj.lru``
(what OBJECT IDLETIME / OBJECT FREQ report and RESTORE IDLETIME / FREQ set).

The server's model (db.c ``lookupKey``, evict.c, object.c):

* every key lookup of a command touches the key (reads and writes alike), except the ``LOOKUP_NOTOUCH``
  lookups of OBJECT, TYPE, EXISTS, TTL/PTTL/EXPIRETIME/PEXPIRETIME (and SCAN's TYPE filter); a new value
  (``createObject``) starts fresh; an overwrite of an existing key (``dbOverwrite``) keeps the LFU data;
  RENAME and MOVE keep the object (so its data), COPY makes a new one;
* under an LRU (non-LFU) policy the stamp is ``LRU_CLOCK()``: seconds (``LRU_CLOCK_RESOLUTION`` 1000 ms) mod
  2^24; IDLETIME = ``estimateObjectIdleTime`` / 1000, the clock's wrap undone;
* under an LFU policy the stamp is ``(minutes mod 2^16) << 8 | counter``; a touch first decays the counter by
  one per ``lfu-decay-time`` minutes elapsed (``LFUDecrAndReturn``), then ``LFULogIncr``: +1 with probability
  ``1 / ((counter - LFU_INIT_VAL) * lfu-log-factor + 1)`` (always while the counter is at most 5, never past
  255); a fresh value has ``LFU_INIT_VAL`` (5); FREQ = the decayed counter.

Time is the server's :class:`~fake_streams.clock.Clock` (the one stream consumers' idle times use), so a
:class:`~fake_streams.clock.ManualClock`'s ``advance`` moves IDLETIME too. A stamp lives in the key's
database's table (``{key: stamp}``, one dict store per touched key, ints only: no reference to values); an
entry is valid while its key exists (the adapter drops or renews it when a command deletes or recreates the
key; entries of keys gone otherwise are pruned when the table outgrows the database). A key without an entry
(stored by a path that is no command) is fresh when first asked about. No fakeredis import.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Dict, Optional

#: ``LRU_CLOCK_MAX`` (24 bits) and ``LRU_CLOCK_RESOLUTION`` (ms)
LRU_CLOCK_MAX = (1 << 24) - 1
LRU_CLOCK_RESOLUTION = 1000
#: ``LFU_INIT_VAL``
LFU_INIT_VAL = 5
#: the lookups that do not touch (``LOOKUP_NOTOUCH``), by fakeredis command name
NOTOUCH = frozenset({"object", "type", "exists", "ttl", "pttl", "expiretime", "pexpiretime", "scan",
                     "debug object"})

Table = Dict[bytes, int]


class KeyAccess:
    """One server's access model: the clock, the policy (read from CONFIG), the LFU parameters.

    ``config`` is the CONFIG mapping (bytes names → values); ``now_ms`` the server clock. All methods are
    O(1) and need the server lock.
    """

    __slots__ = ("_now_ms", "_config", "_policy_raw", "lfu", "_random")

    def __init__(self, now_ms: Callable[[], int], config: Any) -> None:
        self._now_ms = now_ms
        self._config = config
        self._policy_raw: Any = _UNSET
        self.lfu = False
        self._random: Optional[random.Random] = None  # made on the first LFU increment (seeding one costs ~12 µs)

    def refresh(self) -> bool:
        """Whether an LFU ``maxmemory-policy`` is set (re-read when CONFIG's value object changed)."""
        raw = self._config.get(b"maxmemory-policy")
        if raw is not self._policy_raw:
            self._policy_raw = raw
            text = raw.decode("latin-1") if isinstance(raw, (bytes, bytearray)) else str(raw or "")
            self.lfu = "lfu" in text.lower()
        return self.lfu

    def _int_config(self, name: bytes, default: int) -> int:
        raw = self._config.get(name)
        try:
            return int(raw) if raw is not None else default
        except (TypeError, ValueError):
            return default

    def lru_clock(self, now_ms: Optional[int] = None) -> int:
        """``LRU_CLOCK()``: the clock's seconds mod 2^24 (``now_ms``: the clock's time if the caller has read it)."""
        return ((self._now_ms() if now_ms is None else now_ms) // LRU_CLOCK_RESOLUTION) & LRU_CLOCK_MAX

    def _minutes(self) -> int:
        """``LFUGetTimeInMinutes()``."""
        return (self._now_ms() // 60000) & 65535

    def fresh(self) -> int:
        """The stamp of a new value (``createObject``)."""
        if self.refresh():
            return (self._minutes() << 8) | LFU_INIT_VAL
        return self.lru_clock()

    def touch(self, table: Table, key: bytes, now_ms: Optional[int] = None) -> None:
        """``lookupKey``'s update of an existing key: one dict store (``now_ms``: the command's time if taken; the
        LRU stamp is made from it)."""
        if self.refresh():
            old = table.get(key)
            counter = LFU_INIT_VAL if old is None else self._decayed(old)
            if counter < 255:
                base = max(counter - LFU_INIT_VAL, 0)
                draw = self._random
                if draw is None:
                    draw = self._random = random.Random()
                if draw.random() < 1.0 / (base * self._int_config(b"lfu-log-factor", 10) + 1):
                    counter += 1
            table[key] = (self._minutes() << 8) | counter
        else:
            table[key] = self.lru_clock(now_ms)

    def touch_many(self, table: Table, key: bytes, times: int, now_ms: Optional[int] = None) -> None:
        """``times`` touches of one key in a row (a run of commands on it); ``now_ms``: the clock's time if the
        caller has just read it (the LRU stamp is taken from it)."""
        if not self.refresh():
            table[key] = ((self._now_ms() if now_ms is None else now_ms) // LRU_CLOCK_RESOLUTION) & LRU_CLOCK_MAX
            return
        for _ in range(times):
            self.touch(table, key)

    def _decayed(self, stamp: int) -> int:
        """``LFUDecrAndReturn``."""
        counter = stamp & 255
        decay = self._int_config(b"lfu-decay-time", 1)
        if decay <= 0:
            return counter
        last, now = stamp >> 8, self._minutes()
        elapsed = now - last if now >= last else 65535 - last + now
        periods = elapsed // decay
        return max(counter - periods, 0) if periods else counter

    def stamp_of(self, table: Table, key: bytes) -> int:
        """The key's stamp; a key never stamped is made fresh now."""
        stamp = table.get(key)
        if stamp is None:
            stamp = table[key] = self.fresh()
        return stamp

    def idle_seconds(self, table: Table, key: bytes) -> int:
        """``estimateObjectIdleTime() / 1000`` (the LRU clock's wrap undone)."""
        stamp, now = self.stamp_of(table, key), self.lru_clock()
        ticks = now - stamp if now >= stamp else now + (LRU_CLOCK_MAX - stamp)
        return ticks * LRU_CLOCK_RESOLUTION // 1000

    def frequency(self, table: Table, key: bytes) -> int:
        """``LFUDecrAndReturn`` of the key's stamp (OBJECT FREQ)."""
        return self._decayed(self.stamp_of(table, key))

    def restored(self, table: Table, key: bytes, idle: Optional[int], freq: Optional[int]) -> None:
        """A RESTOREd value: fresh, then ``objectSetLRUOrLFU`` (FREQ under LFU, IDLETIME seconds otherwise)."""
        if self.refresh():
            stamp = (self._minutes() << 8) | (LFU_INIT_VAL if freq is None else freq)
        elif idle is not None:
            stamp = self.lru_clock() - idle * 1000 // LRU_CLOCK_RESOLUTION
            if stamp < 0:
                stamp += LRU_CLOCK_MAX
        else:
            stamp = self.lru_clock()
        table[key] = stamp


_UNSET = object()


def table_of(db: Any) -> Table:
    """The access table of a database object (made on first use)."""
    table = getattr(db, "_sf_access", None)
    if table is None:
        table = db._sf_access = {}
    return table


def prune(table: Table, live: Any) -> None:
    """Drop the entries of keys not in ``live`` (a mapping of the database's keys) once they are most of the
    table. Amortised O(1) per entry."""
    if len(table) > 2 * len(live) + 64:
        for key in [k for k in table if k not in live]:
            del table[key]


__all__ = ["KeyAccess", "LFU_INIT_VAL", "LRU_CLOCK_MAX", "NOTOUCH", "prune", "table_of"]
