"""Read-only views of a fake server's streams, for assertions and failure reports.

Views are frozen copies taken under the server lock — never live internals — so a test can keep
one and compare it later. Names, fields and values are ``str`` when they are valid UTF-8 (``bytes``
otherwise); IDs are ``"<ms>-<seq>"`` strings; times are integer milliseconds of the server clock
(``idle_ms`` = now − the event), so with a ManualClock they are exact::

    >>> from fake_streams import FakeStreamsServer, ManualClock
    >>> server = FakeStreamsServer(clock=ManualClock(1_000))
    >>> r = server.client()
    >>> r.xadd("orders", {"sku": "A"})
    b'1000-0'
    >>> r.xgroup_create("orders", "workers", id="0")
    True
    >>> _ = r.xreadgroup("workers", "alice", {"orders": ">"})
    >>> server.clock.advance(500)
    1500
    >>> stream_view(server, "orders").entries
    (Entry(id='1000-0', fields={'sku': 'A'}),)
    >>> group_view(server, "orders", "workers").pending
    (Pending(id='1000-0', consumer='alice', delivery_count=1, idle_ms=500, delivery_time=1000),)
    >>> server.close()

Helpers raise ``AssertionError`` / ``LookupError`` whose text says what happened, lists the items
one per line, then the way out. :func:`render` is the text of the pytest failure-report section.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, AbstractSet, Any, Dict, Iterable, List, NamedTuple, Optional, Tuple, Union

from .commands import COMMANDS
from .groups import INVALID_ENTRIES_READ, NEVER_ACTIVE, ConsumerGroup, lag_of
from .ids import MAX_ID as _MAX
from .ids import MIN_ID as _MIN
from .ids import id_of
from .profiles import FEATURES, PROFILES
from .stream import Stream

if TYPE_CHECKING:
    from .server import FakeStreamsServer

Text = Union[str, bytes]

__all__ = [
    "ConsumerView",
    "Entry",
    "GroupView",
    "Pending",
    "StreamView",
    "assert_all_acked",
    "group_view",
    "render",
    "stream_keys",
    "stream_view",
    "supported_commands_markdown",
]


def _text(raw: Union[str, bytes, bytearray]) -> Text:
    if isinstance(raw, (bytes, bytearray)):
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(raw)
    return raw


def _key(name: Text) -> bytes:
    return name if isinstance(name, bytes) else str(name).encode("utf-8")


class Entry(NamedTuple):
    """One stream entry; equal to the plain tuple ``(id, fields)``."""

    id: str
    fields: Dict[Text, Text]


class Pending(NamedTuple):
    """One PEL entry (``streamNACK``): delivered to ``consumer``, not yet acknowledged. ``consumer`` is None for an
    owner-less entry (Redis 8.8 XNACK), whose ``idle_ms`` is -1 and ``delivery_time`` 0 (as XPENDING shows it)."""

    id: str
    consumer: Optional[Text]
    delivery_count: int
    idle_ms: int
    delivery_time: int


@dataclass(frozen=True)
class ConsumerView:
    """A consumer of a group (``streamConsumer``); ``inactive_ms`` is -1 when it never read successfully."""

    name: Text
    pending: int
    idle_ms: int
    inactive_ms: int
    seen_time: int
    active_time: int


@dataclass(frozen=True)
class GroupView:
    """A consumer group (``streamCG``). ``last_id`` is its last-delivered-id; ``lag`` None = unknown (nil)."""

    stream: Text
    name: Text
    last_id: str
    entries_read: Optional[int]
    lag: Optional[int]
    consumers: Tuple[ConsumerView, ...]
    pending: Tuple[Pending, ...]
    #: the owner-less (NACKed, Redis 8.8 XNACK) entries' IDs in NACK order, the order XREADGROUP … CLAIM serves them
    nacked: Tuple[str, ...] = ()

    @property
    def pending_ids(self) -> Tuple[str, ...]:
        return tuple(p.id for p in self.pending)

    def consumer(self, name: Text) -> ConsumerView:
        for consumer in self.consumers:
            if consumer.name == _text(_key(name)):
                return consumer
        listed = "".join(f"\n- {c.name!r} ({c.pending} pending)" for c in self.consumers) or "\n(none)"
        raise LookupError(f"Group {self.name!r} of stream {self.stream!r} has no consumer {name!r}. Its consumers are:{listed}")


@dataclass(frozen=True)
class StreamView:
    """A stream: counters, live entries (ID order) and groups (name order)."""

    key: Text
    db: int
    length: int
    first_id: str
    last_id: str
    max_deleted_entry_id: str
    entries_added: int
    entries: Tuple[Entry, ...]
    groups: Tuple[GroupView, ...]

    @property
    def ids(self) -> Tuple[str, ...]:
        return tuple(e.id for e in self.entries)

    def group(self, name: Text) -> GroupView:
        for group in self.groups:
            if group.name == _text(_key(name)):
                return group
        raise LookupError(_no_group(self, name))


# --------------------------------------------------------------------------------------- snapshots
def _databases(server: FakeStreamsServer) -> Dict[int, Any]:
    return dict(server.backend.fake.dbs)


def _value(db: Any, key: bytes) -> object:
    item = db.get(key)
    return None if item is None else item.value


def _group_view(stream: Stream, key: bytes, group: ConsumerGroup, now_ms: int, features: AbstractSet[str]) -> GroupView:
    consumers = tuple(
        ConsumerView(
            name=_text(c.name),
            pending=len(c.pel),
            idle_ms=max(0, now_ms - c.seen_time),
            inactive_ms=-1 if c.active_time == NEVER_ACTIVE else max(0, now_ms - c.active_time),
            seen_time=c.seen_time,
            active_time=c.active_time,
        )
        for c in group.consumers.values()
    )
    pending = tuple(
        Pending(
            id=str(sid),
            consumer=None if nack.consumer.nacked else _text(nack.consumer.name),  # None: NACKed (Redis 8.8)
            delivery_count=nack.delivery_count,
            idle_ms=nack.reported_idle(now_ms),
            delivery_time=nack.delivery_time,
        )
        for sid, nack in group.pel.items()
    )
    return GroupView(
        stream=_text(key),
        name=_text(group.name),
        last_id=str(group.last_id),
        entries_read=None if group.entries_read == INVALID_ENTRIES_READ else group.entries_read,
        lag=lag_of(stream, group, features),  # as XINFO on this profile (Redis 8 / Valkey 9 rules: groups.py)
        consumers=consumers,
        pending=pending,
        nacked=tuple(str(id_of(k)) for k, _ in group.nack_zone.fifo()),
    )


def _stream_view(stream: Stream, key: bytes, db: int, now_ms: int, features: AbstractSet[str] = frozenset()) -> StreamView:
    entries = tuple(
        Entry(str(sid), {_text(f): _text(v) for f, v in zip(fields[::2], fields[1::2])})
        for sid, fields in stream.range(_MIN, _MAX)
    )
    return StreamView(
        key=_text(key),
        db=db,
        length=len(stream),
        first_id=str(stream.first_id),
        last_id=str(stream.last_id),
        max_deleted_entry_id=str(stream.max_deleted_entry_id),
        entries_added=stream.entries_added,
        entries=entries,
        groups=tuple(_group_view(stream, key, g, now_ms, features) for g in stream.groups.values()),
    )


def stream_keys(server: FakeStreamsServer, db: Optional[int] = None) -> List[Tuple[int, Text]]:
    """``[(db, key), …]`` of every stream on ``server`` (or in database ``db``), sorted. O(keys)."""
    out = []
    with server.backend.lock:
        for index, database in sorted(_databases(server).items()):
            if db is not None and index != db:
                continue
            for key in sorted(database):
                if isinstance(_value(database, key), Stream):
                    out.append((index, _text(key)))
    return out


def stream_view(server: FakeStreamsServer, key: Text, db: int = 0) -> StreamView:
    """A frozen :class:`StreamView` of ``key``; ``LookupError`` (listing the streams there) if it is no stream.

    O(n + pending) for n entries.
    """
    raw = _key(key)
    with server.backend.lock:
        database = _databases(server).get(db)
        value = None if database is None else _value(database, raw)
        if isinstance(value, Stream):
            return _stream_view(value, raw, db, server.clock.now_ms(), server.profile.features)
    what = "no stream" if value is None else f"a key of type {_type_name(value)!r}, not a stream,"
    streams = [k for d, k in stream_keys(server, db)]
    listed = "".join(f"\n- {k!r}" for k in streams) if streams else "\n(none)"
    raise LookupError(f"There is {what} at {_text(raw)!r} in db {db} of {_where(server)}. The streams there are:{listed}")


def group_view(server: FakeStreamsServer, key: Text, group: Text, db: int = 0) -> GroupView:
    """A frozen :class:`GroupView` of ``group`` on stream ``key``; ``LookupError`` if either is missing."""
    return stream_view(server, key, db).group(group)


#: names of the fakeredis value types that are plain Python containers
_TYPE_NAMES: Dict[type, str] = {bytes: "string", list: "list", set: "set", dict: "hash"}


def _type_name(value: object) -> str:
    model_type = getattr(value, "_model_type", None)
    if isinstance(model_type, bytes):
        return model_type.decode()
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _where(server: FakeStreamsServer) -> str:
    address = getattr(server, "address", None)
    if not address:
        return repr(server)
    return "unix://" + address[5:] if address.startswith("unix:") else f"redis://{address}"


def _no_group(view: StreamView, name: Text) -> str:
    listed = "".join(f"\n- {g.name!r}" for g in view.groups) or "\n(none)"
    return f"Stream {view.key!r} (db {view.db}) has no consumer group {_text(_key(name))!r}. Its groups are:{listed}"


# ----------------------------------------------------------------------------------------- asserts
def assert_all_acked(server: FakeStreamsServer, stream: Optional[Text] = None, group: Optional[Text] = None, db: int = 0) -> None:
    """Fail unless every delivered entry was acknowledged (every PEL is empty).

    ``stream`` / ``group`` narrow the check (default: every stream of ``db`` and every group).
    """
    __tracebackhide__ = True
    if stream is None:
        views = [stream_view(server, k, db) for _, k in stream_keys(server, db)]
    else:
        views = [stream_view(server, stream, db)]
    lines: List[str] = []
    for view in views:
        groups = view.groups if group is None else (view.group(group),)
        for g in groups:
            lines += [f"- stream {view.key!r} group {g.name!r}: {_pending_line(p)}" for p in g.pending]
    if lines:
        target = "" if stream is None else f" in stream {_text(_key(stream))!r}" + ("" if group is None else f", group {_text(_key(group))!r}")
        raise AssertionError(
            f"The following entries were delivered but never acknowledged (XACK){target}:\n"
            + "\n".join(lines)
            + "\nIf this is on purpose, assert on fake_redis_streams.group(stream, group).pending instead."
        )


def _pending_line(p: Pending) -> str:
    return f"{p.id} consumer={p.consumer!r} delivery_count={p.delivery_count} idle_ms={p.idle_ms}"


# ------------------------------------------------------------------------------------------ report
def render(servers: Dict[str, FakeStreamsServer], max_entries: int = 10) -> str:
    """The failure-report text: every stream of every server, its last entries, groups, consumers and PEL."""
    blocks: List[str] = []
    for address, server in servers.items():
        if getattr(server, "closed", False):
            continue
        head = f"{_where(server) if address else repr(server)}  (profile {server.version}, {server.clock!r})"
        node, sentinel = getattr(server, "replication", None), getattr(server, "sentinel", None)
        if node is not None and node is not node.master:  # the master's dataset, shown once (under the master)
            role = (f"old master, not converted yet (a replica of {node.master.address} to be)" if node.unconverted
                    else f"replica of {node.master.address}")
            blocks.append(f"{head}\n  {role}: the master's data")
            continue
        if sentinel is not None:
            blocks.append(f"{head}\n  sentinel watching {sentinel.master_name!r} (master {sentinel.master.address})")
            continue
        keys = stream_keys(server)
        if not keys:
            blocks.append(f"{head}\n  no streams")
            continue
        lines = [head]
        for db, key in keys:
            lines += _render_stream(stream_view(server, key, db), max_entries)
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def _render_stream(view: StreamView, max_entries: int) -> List[str]:
    lines = [
        f"  db {view.db} stream {view.key!r}: length={view.length} first_id={view.first_id} last_id={view.last_id} "
        f"entries_added={view.entries_added} max_deleted_entry_id={view.max_deleted_entry_id}"
    ]
    shown = view.entries[-max_entries:] if max_entries else ()
    if len(shown) < len(view.entries):
        lines.append(f"    ... {len(view.entries) - len(shown)} earlier entries")
    lines += [f"    {e.id} {e.fields!r}" for e in shown]
    for g in view.groups:
        lag = "nil" if g.lag is None else g.lag
        read = "nil" if g.entries_read is None else g.entries_read
        lines.append(f"    group {g.name!r}: last_id={g.last_id} entries_read={read} lag={lag} pending={len(g.pending)}")
        lines += [
            f"      consumer {c.name!r}: pending={c.pending} idle_ms={c.idle_ms} inactive_ms={c.inactive_ms}"
            for c in g.consumers
        ]
        lines += [f"      PEL {_pending_line(p)}" for p in g.pending]
    return lines


# ---------------------------------------------------------------------------------------- commands
#: which commands each profile feature changes (for the supported-commands table)
_FEATURE_COMMANDS = {
    "xread_plus_id": "XREAD, XREADGROUP",
    "blocked_reprocess": "XREAD, XREADGROUP (BLOCK)",
    "blocked_deadline_kept": "XREAD, XREADGROUP (BLOCK)",
    "block_allowed_in_scripts": "XREAD, XREADGROUP (in EVAL)",
    "time_snapshot": "every command (MULTI/EXEC, EVAL)",
    "consumer_active_time": "XINFO CONSUMERS, XINFO STREAM FULL",
    "eager_consumer_creation": "XREADGROUP, XCLAIM, XAUTOCLAIM",
    "xsetid_checks_max_deleted": "XSETID",
    "block_timeout_range_check": "XREAD, XREADGROUP (BLOCK)",
    "lag_behind_first_estimated": "XINFO GROUPS, XINFO STREAM FULL, XREADGROUP (entries-read)",
    "xread_plus_empty_nil": "XREAD",
    "stream_ref_policies": "XDELEX, XACKDEL, XADD, XTRIM",
    "entriesread_capped": "XGROUP CREATE, XGROUP SETID",
    "approx_trim_ref_policies": "XADD, XTRIM (~)",
    "xreadgroup_claim": "XREADGROUP (CLAIM, also BLOCK)",
    "stream_idmp": "XADD (IDMP, IDMPAUTO), XCFGSET, XINFO STREAM",
    "xidmprecord": "XIDMPRECORD",
    "stream_idmp_rdb": "DUMP, RESTORE (streams: IDMP state)",
    "read_caps": "XREAD, XREADGROUP (MAXCOUNT, MAXSIZE)",
    "reestimating_read_counter": "XREADGROUP, XINFO GROUPS, XINFO STREAM FULL",
    "unshared_small_integers": "OBJECT REFCOUNT",
    "embstr_holds_the_key": "OBJECT ENCODING",
    "noauth_before_command_checks": "every command (requirepass)",
    "no_multi_names_the_command": "MULTI, WATCH, SAVE (in MULTI)",
    "lua_module_listed": "HELLO, INFO",
    "script_names_unknown_subcommands": "EVAL / FCALL (redis.call of an unknown subcommand)",
    "script_acl_counts_noperm": "INFO errorstats (EVAL / FCALL: a redis.call refused by ACL)",
    "renamed_key_is_a_new_object": "RENAME, RENAMENX, MOVE (OBJECT FREQ)",
}


def supported_commands_markdown(profiles: Iterable[str] = ()) -> str:
    """Markdown tables generated from ``COMMANDS`` and the profiles: the commands the engine serves
    (every other command is fakeredis's), then the behaviour switches per profile."""
    names = list(profiles) or list(PROFILES)
    rows = ["| command | arity | flags | since | summary |", "|---|---|---|---|---|"]
    for name, spec in COMMANDS.items():
        if spec.handler is None or (spec.feature and not any(PROFILES[n].has(spec.feature) for n in names)):
            continue
        flags = " ".join(sorted(spec.flags))
        only = ""
        if spec.feature:  # a later version's command: only on the profiles that have it
            only = " (profiles " + ", ".join(f"`{n}`" for n in names if PROFILES[n].has(spec.feature)) + " only)"
        rows.append(f"| `{name.replace('|', ' ').upper()}` | {spec.arity} | {flags} | {spec.since} | {spec.summary}{only} |")
    table = "\n".join(rows)
    head = "| behaviour | commands | " + " | ".join(names) + " |"
    feats = [head, "|---|---|" + "---|" * len(names)]
    for feature, text in FEATURES.items():
        cells = " | ".join("yes" if PROFILES[n].has(feature) else "—" for n in names)
        feats.append(f"| {text.split(' [')[0]} | {_FEATURE_COMMANDS.get(feature, '')} | {cells} |")
    versions = ", ".join(f"`{n}` = {PROFILES[n].server} {PROFILES[n].hello_version}" for n in names)
    return (
        f"Stream commands served by the engine, in every profile unless noted ({versions}); every other command is "
        f"served by fakeredis.\n\n{table}\n\nBehaviour that differs between profiles:\n\n" + "\n".join(feats) + "\n"
    )

