"""One fakeredis server as the engine sees it: :class:`Backend` (the server, its lock, CONFIG, databases) and
:class:`Keyspace` (one database as a handler's context reads and writes it), plus the reply conversions.

Blocking reads: the databases report every write of a key that has blocked clients to the server's
:class:`~fake_streams.blocking.BlockingRegistry` (``touched``, :mod:`fake_streams.dbhooks`), including writes
fakeredis makes on its own (DEL, SET, RENAME, FLUSHALL, SWAPDB, MOVE, expiry).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any, DefaultDict, Dict, Optional, cast

from ..dbhooks import hook_database
from ..errors import ReplyError
from ..idmp import DEFAULT_DURATION_S, DEFAULT_MAXSIZE, IdmpState
from ..keyaccess import KeyAccess, table_of
from ..reply import Status
from ..stream import Stream
from . import keytouch
from .compat import CommandItem, FakeServer, SimpleError, SimpleString
from .values import StreamValue, _SharedConfig


def _wake(db: Any) -> None:
    """Wake every waiter on ``db`` (sync condition + async change callbacks). Caller holds the lock."""
    wake_all = getattr(db, "wake_all", None)
    if wake_all is not None:
        wake_all()
        return
    db.condition.notify_all()  # fakeredis < 2.37 has no wake_all
    for callback in list(db._change_callbacks):
        callback()


_INLINE_NOTIFY: Dict[type, bool] = {}


def _inline_notify(cls: type) -> bool:
    """Whether :meth:`Keyspace.changed` may do what ``cls.notify_watch`` does itself: ``cls`` is the blocking
    hook's database class (:mod:`.dbhooks`) over fakeredis's own ``Database`` (watchers, then a wake-up
    of every waiter), with the attributes that replay needs. Cached per class."""
    known = _INLINE_NOTIFY.get(cls)
    if known is None:
        own = cls.__dict__.get("notify_watch")
        base = cls.__bases__[0] if cls.__bases__ else object
        known = _INLINE_NOTIFY[cls] = bool(
            own is not None and own.__qualname__.endswith("StreamsDatabase.notify_watch")
            and getattr(getattr(base, "notify_watch", None), "__module__", "").startswith("fakeredis")
            and hasattr(threading.Condition(), "_waiters")
        )
    return known


class Keyspace:
    """One fakeredis database as handlers' contexts see it. All methods need the backend lock."""

    __slots__ = ("_db",)

    def __init__(self, db: Any) -> None:
        self._db = db

    @property
    def access_table(self) -> Dict[bytes, int]:
        """The database's key access stamps (:mod:`fake_streams.keyaccess`)."""
        return table_of(self._db)

    @property
    def ident(self) -> Any:
        """Identity of the database (the blocking registry's key; SWAPDB keeps it with the db number)."""
        return self._db

    def peek(self, key: bytes) -> Any:
        """The value at ``key`` without side effects; ``None`` if missing or expired. O(1)."""
        item = self._db._dict.get(key)
        if item is None or (item.expireat is not None and item.expireat < self._db.time):
            return None
        return item.value

    def expireat(self, key: bytes) -> Optional[float]:
        """The key's expiry time (wall-clock seconds, fakeredis's clock) or ``None``."""
        item = self._db._dict.get(key)
        return None if item is None else item.expireat

    def purge_expired(self, key: bytes) -> None:
        """Drop ``key`` if its TTL has passed now (reported to the registry as a deletion)."""
        self._db.time = time.time()
        self._db.get(key)

    def get_lasting(self, key: bytes) -> Any:
        """The value at ``key`` if it is present and has no TTL (so it cannot expire), else ``None``. O(1)."""
        item = self._db._dict.get(key)
        return item.value if item is not None and item.expireat is None else None

    def get(self, key: bytes) -> Any:
        """The value at ``key`` (expired keys are dropped first), or ``None``. O(1)."""
        db = self._db
        item = db._dict.get(key)
        if item is None:  # what db.get answers for a missing key, without its KeyError round trip
            return None
        if item.expireat is None:  # no TTL: nothing to drop
            return item.value
        item = db.get(key)
        return None if item is None else item.value

    def add(self, key: bytes, value: Any) -> None:
        """Store ``value`` at the missing ``key`` with no TTL; dirties WATCH and wakes waiters."""
        item = CommandItem(key, self._db, None)
        item.update(value)
        item.writeback()

    def changed(self, key: bytes) -> None:
        """``signalModifiedKey``: dirty WATCHers of ``key`` and wake blocked readers (TTL untouched).

        = the database's ``notify_watch`` (the blocking hook's report, then fakeredis's: WATCHers dirtied,
        its own blocked clients woken), inlined when the class is the known pair, skipping the wake-up
        when nobody waits on the database (the common case; nothing could observe it). O(1 + watchers).
        """
        db = self._db
        if not _inline_notify(type(db)):
            db.notify_watch(key)
            return
        registry = db._sf_registry
        if registry is not None and registry.has_waiters():  # touched() ignores writes while nobody is blocked
            item = db._dict.get(key)
            registry.touched(db, key, None if item is None else item.value)
        watches = db._watches.get(key)
        if watches:
            for sock in watches:
                sock.notify_watch()
        if db.condition._waiters or db._change_callbacks:
            _wake(db)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Keyspace) and other._db is self._db

    def __hash__(self) -> int:
        return id(self._db)


class Backend:
    """The fakeredis ``FakeServer`` behind one FakeStreamsServer (one keyspace; ``db`` numbers honoured).

    Its version (the profile's) steers fakeredis's own commands. Methods marked "lock held" expect
    the caller to hold :attr:`lock`, the server lock fakeredis takes around every command.
    """

    __slots__ = ("fake", "lock", "_config", "_idmp")

    def __init__(self, profile: Any) -> None:
        self.fake = FakeServer(version=profile.version_tuple, server_type=profile.server)
        self.fake._sf_generation = 0  # type: ignore[attr-defined]  # ours, on fakeredis's server: see _GENERATIONS
        self.lock = self.fake.lock
        config = self.fake.config
        config.setdefault(b"stream-node-max-entries", str(Stream.stream_node_max_entries).encode())
        config.setdefault(b"stream-node-max-bytes", str(Stream.stream_node_max_bytes).encode())
        self._config = _SharedConfig(config)
        self._idmp = profile.has("stream_idmp")  # Redis 8.6+: a new stream takes stream-idmp-* (CONFIG)

    def install_hooks(self, registry: Any) -> None:
        """Every database (now and created later, e.g. by SELECT) reports key writes to ``registry``."""
        dbs = cast("DefaultDict[int, Any]", self.fake.dbs)  # a defaultdict (fakeredis annotates a dict)
        factory = dbs.default_factory
        assert factory is not None
        dbs.default_factory = lambda: hook_database(factory(), registry)
        for db in list(dbs.values()):
            hook_database(db, registry)

    def install_access(self, now_ms: Any) -> KeyAccess:
        """The key access model (OBJECT IDLETIME / FREQ) on the clock ``now_ms``."""
        keytouch.install(self.fake, now_ms)
        return keytouch.access_of(self.fake)

    def new_stream(self) -> StreamValue:
        """An empty stream value bound to this server's CONFIG."""
        value = StreamValue()
        value._sf_config = self._config
        if self._idmp:  # streamNew: the stream's IDMP-DURATION / IDMP-MAXSIZE are the CONFIG values of now
            config = self._config
            value.idmp = IdmpState(config.get_int(b"stream-idmp-duration") or DEFAULT_DURATION_S,
                                   config.get_int(b"stream-idmp-maxsize") or DEFAULT_MAXSIZE)
        return value

    def stats(self) -> Dict[str, Any]:
        """What INFO reports: client counts and ``{db: (keys, expires)}``. Lock held."""
        keyspace = {}
        for index, db in sorted(self.fake.dbs.items()):
            found = [db.get(k) for k in list(db)]  # iterating drops expired keys
            items = [item for item in found if item is not None]
            if items:
                keyspace[index] = (len(items), sum(1 for item in items if item.expireat is not None))
        sockets = list(self.fake.sockets)
        return {
            "clients": len(sockets),
            "blocked": sum(1 for s in sockets if getattr(s, "_blocked", False)),
            "keyspace": keyspace,
        }

    def flush(self) -> None:
        """FLUSHALL from Python. Lock held."""
        for db in self.fake.dbs.values():
            db.clear()

    def wake(self) -> None:
        """Wake fakeredis's own blocked clients (BLPOP …) of every database. Lock held."""
        for db in list(self.fake.dbs.values()):
            _wake(db)

    def shutdown(self) -> None:
        """Refuse further commands and connections (ConnectionError), wake fakeredis's blocked clients, then
        drop the back-references that make the server a reference cycle: each database's blocking registry
        and the databases' factory (fakeredis's closes over its server). The data stays readable (views,
        reports); a closed server and everything it holds is then freed by reference counting, not left
        to the cyclic garbage collector (issue 13). O(databases)."""
        self.fake.connected = False
        with self.lock:
            self.wake()
            dbs = self.fake.dbs
            for db in dbs.values():
                db._sf_registry = None  # type: ignore[attr-defined]  # ours (fake_streams.dbhooks)
            if isinstance(dbs, defaultdict):
                dbs.default_factory = None


def to_wire(reply: Any) -> Any:
    """Our reply values → fakeredis's: :class:`Status` → ``SimpleString`` (top level and in a top-level list)."""
    if type(reply) is Status:
        return SimpleString(reply.value)
    if type(reply) is list:
        for i, item in enumerate(reply):
            if type(item) is Status:
                reply[i] = SimpleString(item.value)
    return reply


def error(exc: ReplyError, profile: Any) -> SimpleError:
    return SimpleError(exc.render(profile.errors))

