"""Database hooks: fakeredis's writes of keys that have blocked clients, reported to the blocking registry.

Every fakeredis ``Database`` of a server is switched (in place) to a direct subclass of its class that
calls ``registry.touched(db, key, value_before)`` on each write path fakeredis uses: ``notify_watch``
(every command write, FLUSHALL / FLUSHDB), ``__setitem__`` (MOVE and COPY write the target directly),
``swap`` (SWAPDB) and the two lazy-expiry paths (``__getitem__``, ``_remove_expired``). The registry
keeps only keys it has clients for (O(1) per write). No fakeredis import: the subclass is made from
the instance's class (see :mod:`fake_streams._fakeredis`, ``Backend.install_hooks``).
"""

from __future__ import annotations

from typing import Any, Dict


def _hooked_class(base: type) -> type:
    """A subclass of fakeredis's ``Database`` class ``base`` that reports writes to the blocking registry.

    ``notify_watch`` (every write, incl. FLUSHALL), ``__setitem__`` (MOVE / COPY write the target
    directly), ``swap`` (SWAPDB) and the two lazy-expiry paths (``__getitem__``, ``_remove_expired``)
    call ``registry.touched(db, key, value_before)``. O(1) per write; the expiry sweep adds O(w) for w
    keys with blocked clients in this database. (A direct subclass, so instances can switch class.)
    """

    class StreamsDatabase(base):  # type: ignore[valid-type, misc]
        _sf_registry: Any = None

        def notify_watch(self, key: bytes) -> None:
            registry = self._sf_registry
            if registry is not None:
                registry.touched(self, key, _raw_value(self, key))
            super().notify_watch(key)

        def __setitem__(self, key: bytes, value: Any) -> None:
            registry = self._sf_registry
            if registry is not None:
                registry.touched(self, key, _raw_value(self, key))
            super().__setitem__(key, value)

        def swap(self, other: Any) -> None:
            registry = self._sf_registry
            if registry is not None:
                for db in (self, other):
                    for key in registry.watched_keys(db):
                        registry.touched(db, key, _raw_value(db, key))
            super().swap(other)
            # the key access stamps go with the keys (fake_streams.keyaccess)
            self._sf_access, other._sf_access = getattr(other, "_sf_access", None), getattr(self, "_sf_access", None)

        def clear(self) -> None:
            super().clear()
            table = getattr(self, "_sf_access", None)
            if table:
                table.clear()

        def __getitem__(self, key: bytes) -> Any:
            registry = self._sf_registry
            if registry is None:
                return super().__getitem__(key)
            item = self._dict.get(key)
            try:
                return super().__getitem__(key)
            except KeyError:
                if item is not None and key not in self._dict:  # expired just now
                    registry.touched(self, key, item.value)
                raise

        def _remove_expired(self) -> None:
            registry = self._sf_registry
            raw = self._dict
            watched = registry.watched_keys(self) if registry is not None else ()
            before = [(key, raw[key]) for key in watched if key in raw]
            super()._remove_expired()
            for key, item in before:
                if key not in raw:
                    registry.touched(self, key, item.value)

    return StreamsDatabase


def _raw_value(db: Any, key: bytes) -> Any:
    item = db._dict.get(key)
    return None if item is None else item.value


_HOOKED_CLASSES: Dict[type, type] = {}


def hook_database(db: Any, registry: Any) -> Any:
    """Switch fakeredis database ``db`` to its reporting subclass, reporting to ``registry``."""
    base = type(db)
    if base not in _HOOKED_CLASSES.values():
        cls = _HOOKED_CLASSES.get(base)
        if cls is None:
            cls = _HOOKED_CLASSES[base] = _hooked_class(base)
        db.__class__ = cls
    db._sf_registry = registry
    return db


__all__ = ["hook_database"]
