"""INFO: the reply text of every section and field the profile's server reports, with live values.

Owns the field lists per profile (:data:`FIELDS`), section selection (``INFO``, ``INFO s1 s2 …``,
``default``, ``all``, ``everything``, names case-insensitive, unknown names ignored), the server's
statistics (:class:`ServerStats`: commandstats, errorstats, latencystats, totals) and the rendering
(:func:`render`). It imports neither fakeredis nor the adapter: what only the keyspace knows (key
counts, clients, pub/sub, CONFIG, the dataset's size) arrives as a :class:`Snapshot` built by
:mod:`fake_streams._fakeredis.server_info`.

Field lists: Redis 7.0.15 and Valkey 9.1.2 as their live servers report them; Redis 7.2.6 / 7.4.1 and
Valkey 8.0.1 from their sources (``genRedisInfoString`` / ``genValkeyInfoString`` in src/server.c).
Fields a real server prints only in states the fake never is in (a replica's ``master_*``, AOF on,
loading, shutting down, ``min-replicas``) are absent, as they are on a standalone primary.

Values: live where they mean something in process — versions, uptime, clients (connected, blocked,
in the timeout table, pub/sub, watching), blocking and watched keys, ``used_memory`` (the dataset's
estimated size: :func:`value_bytes`; a stream's is its listpack nodes, rax and groups), ``maxmemory``,
``maxmemory_policy`` and ``maxclients`` from CONFIG, CPU from ``getrusage``, connections received,
commands processed, commandstats (``cmdstat_xadd:calls=…,usec=…,usec_per_call=…,rejected_calls=…,
failed_calls=…``), errorstats, error-reply totals, latency percentiles, pub/sub channel counts,
``rdb_changes_since_last_save``, keyspace lines (keys, expires, mean TTL in ms). The rest are the
constants a fresh standalone server with no persistence activity shows (``role:master``,
``cluster_enabled:0``, ``loading:0`` …).

Costs: :meth:`ServerStats.called` is O(1) (two dict look-ups); :func:`render` is O(sections + commands
+ errors) plus the snapshot's O(keys) walk when the memory or keyspace section is asked for.
"""

from __future__ import annotations

import os
import platform
import resource
import secrets
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

#: Section names in the order the server prints them.
SECTION_ORDER: Tuple[str, ...] = (
    "server", "tls", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules",
    "commandstats", "errorstats", "latencystats", "cluster", "cluster_info", "scriptingengines", "keyspace", "debug",
)
#: Sections only Valkey 9.1 prints (in ``all`` / ``everything`` or by name, never in ``default``).
_VALKEY_9_SECTIONS = frozenset({"tls", "cluster_info", "scriptingengines"})
#: ``INFO`` / ``INFO default`` (``module_list`` = the Modules section without module-made sections).
DEFAULT_SECTIONS: Tuple[str, ...] = (
    "server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules", "errorstats",
    "cluster", "keyspace",
)
_TITLES = {name: name.capitalize() for name in SECTION_ORDER}
_TITLES.update(cpu="CPU", tls="TLS", cluster_info="Cluster Info", scriptingengines="Scripting Engines")

_ALL_PROFILES = frozenset({"7.0", "7.2", "7.4", "valkey-8.0", "valkey-9.1"})

#: Per section: ``name`` (every profile) or ``(name, "profile …")`` — the profiles that print it, in order.
FIELDS: Mapping[str, Tuple[Any, ...]] = {
    "server": (
        "redis_version", ("server_name", "valkey-8.0 valkey-9.1"), ("valkey_version", "valkey-8.0 valkey-9.1"), ("valkey_release_stage", "valkey-9.1"), "redis_git_sha1",
        "redis_git_dirty", "redis_build_id", ("redis_mode", "7.0 7.2 7.4"), ("server_mode", "valkey-8.0 valkey-9.1"), "os",
        "arch_bits", "monotonic_clock", "multiplexing_api", ("atomicvar_api", "7.0 7.2 7.4"), "gcc_version",
        "process_id", "process_supervised", "run_id", "tcp_port", "server_time_usec", "uptime_in_seconds",
        "uptime_in_days", "hz", "configured_hz", ("clients_hz", "valkey-9.1"), "lru_clock", "executable", "config_file", "io_threads_active",
        ("availability_zone", "valkey-8.0 valkey-9.1"), ("listener0", "valkey-8.0 valkey-9.1"),
    ),
    "clients": (
        "connected_clients", "cluster_connections", "maxclients", "client_recent_max_input_buffer",
        "client_recent_max_output_buffer", "blocked_clients", "tracking_clients",
        ("pubsub_clients", "7.4 valkey-8.0 valkey-9.1"), ("watching_clients", "7.4 valkey-8.0 valkey-9.1"), "clients_in_timeout_table",
        ("total_watched_keys", "7.4 valkey-8.0 valkey-9.1"), ("total_blocking_keys", "7.2 7.4 valkey-8.0 valkey-9.1"),
        ("total_blocking_keys_on_nokey", "7.2 7.4 valkey-8.0 valkey-9.1"),
        ("paused_reason", "valkey-9.1"), ("paused_actions", "valkey-9.1"),
        ("paused_timeout_milliseconds", "valkey-9.1"),
    ),
    "memory": (
        "used_memory", "used_memory_human", "used_memory_rss", "used_memory_rss_human", "used_memory_peak",
        "used_memory_peak_human", "used_memory_peak_perc", "used_memory_overhead", "used_memory_startup",
        "used_memory_dataset", "used_memory_dataset_perc", "allocator_allocated", "allocator_active",
        "allocator_resident", ("allocator_muzzy", "7.4 valkey-8.0 valkey-9.1"), "total_system_memory",
        "total_system_memory_human", "used_memory_lua", "used_memory_vm_eval", "used_memory_lua_human",
        "used_memory_scripts_eval", "number_of_cached_scripts", "number_of_functions", "number_of_libraries",
        "used_memory_vm_functions", "used_memory_vm_total", "used_memory_vm_total_human", "used_memory_functions",
        "used_memory_scripts", "used_memory_scripts_human", "maxmemory", "maxmemory_human", "maxmemory_policy",
        "allocator_frag_ratio", "allocator_frag_bytes", "allocator_rss_ratio", "allocator_rss_bytes",
        "rss_overhead_ratio", "rss_overhead_bytes", "mem_fragmentation_ratio", "mem_fragmentation_bytes",
        "mem_not_counted_for_evict", "mem_replication_backlog", "mem_total_replication_buffers", ("mem_replicas_repl_buffer", "valkey-9.1"),
        "mem_clients_slaves", "mem_clients_normal", "mem_cluster_links", ("mem_cluster_slot_import", "valkey-9.1"),
        ("mem_cluster_slot_export", "valkey-9.1"), "mem_aof_buffer", "mem_allocator",
        ("mem_overhead_db_hashtable_rehashing", "7.4 valkey-8.0 valkey-9.1"), "active_defrag_running",
        "lazyfree_pending_objects", "lazyfreed_objects",
    ),
    "persistence": (
        "loading", "async_loading", "current_cow_peak", "current_cow_size", "current_cow_size_age",
        "current_fork_perc", "current_save_keys_processed", "current_save_keys_total",
        "rdb_changes_since_last_save", "rdb_bgsave_in_progress", "rdb_last_save_time", "rdb_last_bgsave_status",
        "rdb_last_bgsave_time_sec", "rdb_current_bgsave_time_sec", "rdb_saves", "rdb_last_cow_size",
        "rdb_last_load_keys_expired", "rdb_last_load_keys_loaded", "aof_enabled", "aof_rewrite_in_progress",
        "aof_rewrite_scheduled", "aof_last_rewrite_time_sec", "aof_current_rewrite_time_sec",
        "aof_last_bgrewrite_status", "aof_rewrites", "aof_rewrites_consecutive_failures", "aof_last_write_status",
        "aof_last_cow_size", "module_fork_in_progress", "module_fork_last_cow_size", ("slot_migration_fork_in_progress", "valkey-9.1"),
    ),
    "stats": (
        "total_connections_received", "total_commands_processed", "instantaneous_ops_per_sec",
        "total_net_input_bytes", "total_net_output_bytes", "total_net_repl_input_bytes",
        "total_net_repl_output_bytes", ("total_net_cluster_slot_import_bytes", "valkey-9.1"),
        ("total_net_cluster_slot_export_bytes", "valkey-9.1"), "instantaneous_input_kbps", "instantaneous_output_kbps",
        "instantaneous_input_repl_kbps", "instantaneous_output_repl_kbps", "rejected_connections", "sync_full",
        "sync_partial_ok", "sync_partial_err", ("expired_subkeys", "7.4"), "expired_keys", ("expired_fields", "valkey-9.1"), "expired_stale_perc",
        ("expired_keys_with_volatile_items_stale_perc", "valkey-9.1"),
        "expired_time_cap_reached_count", "expire_cycle_cpu_milliseconds", "evicted_keys", "evicted_clients",
        ("evicted_scripts", "7.4 valkey-8.0 valkey-9.1"), "total_eviction_exceeded_time", "current_eviction_exceeded_time",
        "keyspace_hits", "keyspace_misses", "pubsub_channels", "pubsub_patterns", "pubsubshard_channels",
        "latest_fork_usec", "total_forks", "migrate_cached_sockets", "slave_expires_tracked_keys",
        "active_defrag_hits", "active_defrag_misses", "active_defrag_key_hits", "active_defrag_key_misses",
        "total_active_defrag_time", "current_active_defrag_time", "tracking_total_keys", "tracking_total_items",
        "tracking_total_prefixes", "unexpected_error_replies", "total_error_replies", "dump_payload_sanitizations",
        "total_reads_processed", "total_writes_processed", "io_threaded_reads_processed",
        "io_threaded_writes_processed", ("io_threaded_freed_objects", "valkey-8.0 valkey-9.1"),
        ("io_threaded_accept_processed", "valkey-9.1"),
        ("io_threaded_poll_processed", "valkey-8.0 valkey-9.1"), ("io_threaded_total_prefetch_batches", "valkey-8.0 valkey-9.1"),
        ("io_threaded_total_prefetch_entries", "valkey-8.0 valkey-9.1"),
        ("client_query_buffer_limit_disconnections", "7.4 valkey-8.0 valkey-9.1"),
        ("client_output_buffer_limit_disconnections", "7.4 valkey-8.0 valkey-9.1"), "reply_buffer_shrinks",
        "reply_buffer_expands", ("eventloop_cycles", "7.2 7.4 valkey-8.0 valkey-9.1"),
        ("eventloop_duration_sum", "7.2 7.4 valkey-8.0 valkey-9.1"), ("eventloop_duration_cmd_sum", "7.2 7.4 valkey-8.0 valkey-9.1"),
        ("instantaneous_eventloop_cycles_per_sec", "7.2 7.4 valkey-8.0 valkey-9.1"),
        ("instantaneous_eventloop_duration_usec", "7.2 7.4 valkey-8.0 valkey-9.1"),
        ("acl_access_denied_auth", "valkey-9.1"), ("acl_access_denied_cmd", "valkey-9.1"),
        ("acl_access_denied_key", "valkey-9.1"), ("acl_access_denied_channel", "valkey-9.1"),
        ("acl_access_denied_tls_cert", "valkey-9.1"), ("acl_access_denied_db", "valkey-9.1"),
    ),
    "replication": (
        "role", "connected_slaves", ("replicas_waiting_psync", "valkey-8.0 valkey-9.1"), "master_failover_state",
        "master_replid", "master_replid2", "master_repl_offset", "second_repl_offset", "repl_backlog_active",
        "repl_backlog_size", "repl_backlog_first_byte_offset", "repl_backlog_histlen",
    ),
    "cpu": (
        "used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children",
        "used_cpu_sys_main_thread", "used_cpu_user_main_thread", ("used_active_time_main_thread", "valkey-9.1"),
    ),
    "tls": tuple((name, "valkey-9.1") for name in (
        "tls_server_cert_serial", "tls_server_cert_expires_in_seconds", "tls_client_cert_serial",
        "tls_client_cert_expires_in_seconds", "tls_ca_cert_serial", "tls_ca_cert_expires_in_seconds")),
    "cluster": ("cluster_enabled",),
    "cluster_info": (),
    "scriptingengines": tuple((name, "valkey-9.1") for name in (
        "engines_count", "engines_total_used_memory", "engines_total_memory_overhead", "engine_0")),
    "debug": (
        ("eventloop_duration_aof_sum", "7.2 7.4 valkey-8.0 valkey-9.1"), ("eventloop_duration_cron_sum", "7.2 7.4 valkey-8.0 valkey-9.1"),
        ("eventloop_duration_max", "7.2 7.4 valkey-8.0 valkey-9.1"), ("eventloop_cmd_per_cycle_max", "7.2 7.4 valkey-8.0 valkey-9.1"),
        ("io_threaded_reads_pending", "valkey-9.1"), ("io_threaded_writes_pending", "valkey-9.1"),
        ("allocator_allocated_lua", "7.4"), ("allocator_active_lua", "7.4"), ("allocator_resident_lua", "7.4"),
        ("allocator_frag_bytes_lua", "7.4"),
    ),
}
#: Sections whose lines are generated (one per command, error, db …) rather than listed above.
GENERATED = ("modules", "commandstats", "errorstats", "latencystats", "keyspace")
#: Sections a profile prints (Redis 7.0 has no Debug section).
_PROFILE_SECTIONS = {"7.0": frozenset(SECTION_ORDER) - {"debug"} - _VALKEY_9_SECTIONS,
                     "valkey-9.1": frozenset(SECTION_ORDER)}
_OLDER_SECTIONS = frozenset(SECTION_ORDER) - _VALKEY_9_SECTIONS


def section_name(title: str) -> str:
    """The section name (as INFO takes it) of a printed title: ``"Cluster Info"`` → ``"cluster_info"``."""
    for name, printed in _TITLES.items():
        if printed == title:
            return name
    raise KeyError(title)


def field_names(profile_name: str, section: str) -> List[str]:
    """The listed field names ``section`` has on ``profile_name``, in the server's order."""
    names = []
    for item in FIELDS.get(section, ()):
        name, profiles = (item, None) if isinstance(item, str) else (item[0], item[1].split())
        if profiles is None or profile_name in profiles:
            names.append(name)
    return names


def sections_of(profile_name: str) -> Tuple[str, ...]:
    """Every section ``profile_name`` can print, in order."""
    allowed = _PROFILE_SECTIONS.get(profile_name, _OLDER_SECTIONS)
    return tuple(s for s in SECTION_ORDER if s in allowed)


def select(profile_name: str, args: Sequence[bytes]) -> List[str]:
    """The sections ``INFO args…`` prints, in the server's order (``genInfoSectionDict``).

    No argument or ``default``: :data:`DEFAULT_SECTIONS`; ``all``: every section but Debug;
    ``everything``: the same plus module-made sections (there are none). Unknown names are ignored.
    """
    names: Set[str] = set()
    every = not args
    if every:
        names.update(DEFAULT_SECTIONS)
    for raw in args:
        name = bytes(raw).decode("utf-8", "replace").lower()
        if name == "default":
            names.update(DEFAULT_SECTIONS)
        elif name in ("all", "everything"):
            names.update(s for s in SECTION_ORDER if s != "debug")
        elif name == "module_list":
            names.add("modules")
        else:
            names.add(name)
    return [s for s in sections_of(profile_name) if s in names]


# ------------------------------------------------------------------------------------ statistics
class CommandStat:
    """One ``cmdstat_<name>`` line: calls, total µs, rejected and failed calls, a latency histogram."""

    __slots__ = ("calls", "usec", "rejected", "failed", "buckets")

    def __init__(self) -> None:
        self.calls = 0
        self.usec = 0.0
        self.rejected = 0
        self.failed = 0
        self.buckets = [0] * 64  # calls per µs bit length (a coarse HdrHistogram): index = int(µs).bit_length()

    def percentile(self, p: float) -> float:
        """The upper bound (µs) of the bucket holding the ``p``-th percentile call."""
        total = sum(self.buckets)
        if not total:
            return 0.0
        rank, seen = p / 100.0 * total, 0
        for bits, n in enumerate(self.buckets):
            seen += n
            if n and seen >= rank:
                return float(1 << bits)
        return 0.0  # pragma: no cover


#: ``ERROR_STATS_NUMBER``: the server stops tracking new error codes after this many.
ERROR_STATS_MAX = 128


class ServerStats:
    """Counters INFO reports (the server's ``stat_*`` fields, commandstats, errorstats); reset by CONFIG RESETSTAT.

    Callers hold the server lock. ``called`` is the hot one: O(1).
    """

    def __init__(self) -> None:
        self.commands: Dict[str, CommandStat] = {}
        self.errors: Dict[str, int] = {}
        self.total_error_replies = 0
        self.connections_received = 0
        self.rejected_connections = 0
        self.dirty = 0  # rdb_changes_since_last_save: successful write commands
        self.errors_disabled = False

    def reset(self) -> None:
        """``CONFIG RESETSTAT``: every counter but the dirty count back to zero."""
        dirty = self.dirty
        self.__init__()  # type: ignore[misc]
        self.dirty = dirty

    @property
    def total_commands(self) -> int:
        """``total_commands_processed``: every call counted in commandstats. O(commands)."""
        return sum(stat.calls for stat in self.commands.values())

    def command(self, name: str) -> CommandStat:
        """The ``cmdstat_`` record of ``name`` (created on first use)."""
        stat = self.commands.get(name)
        if stat is None:
            stat = self.commands[name] = CommandStat()
        return stat

    def called_many(self, name: str, n: int, usec: float) -> None:
        """``n`` successful write calls of ``name`` that took ``usec`` together (a batch of the direct path)."""
        stat = self.command(name)
        stat.calls += n
        stat.usec += usec
        stat.buckets[int(usec / n).bit_length() & 63] += n
        self.dirty += n

    def called(self, name: str, usec: float, error: Optional[str] = None, write: bool = False,
               counted: bool = True) -> None:
        """A command ran (top level, in EXEC or from a script): ``error`` is its error reply's text, if any
        (``counted`` False: a failed call whose error errorstats skip, ``ERR_REPLY_FLAG_NO_STATS_UPDATE``). O(1):
        the hot one (every command); ``total_commands`` is summed when INFO asks."""
        stat = self.commands.get(name)
        if stat is None:
            stat = self.commands[name] = CommandStat()
        stat.calls += 1
        stat.usec += usec
        stat.buckets[int(usec).bit_length() & 63] += 1
        if error is not None:
            stat.failed += 1
            if counted:
                self.error_reply(error)
        elif write:
            self.dirty += 1

    def rejected(self, name: Optional[str], error: str) -> None:
        """A command refused before it ran (arity, NOAUTH, NOPERM, not allowed in MULTI …); ``name`` None:
        unknown command (errorstats only)."""
        if name is not None:
            self.command(name).rejected += 1
        self.error_reply(error)

    def error_reply(self, error: str) -> None:
        """An error reply was sent: errorstats count its code (the first word; ``ERR`` if none)."""
        self.total_error_replies += 1
        code = error.split(" ", 1)[0] if error else "ERR"
        count = self.errors.get(code)
        if count is not None:
            self.errors[code] = count + 1
        elif len(self.errors) < ERROR_STATS_MAX:
            self.errors[code] = 1
        else:
            self.errors_disabled = True


#: Containers served whole by one handler (their subcommand is the first argument): cmdstat names the subcommand.
WHOLE_CONTAINERS = {"object": frozenset({"encoding", "refcount", "idletime", "freq", "help"})}


def command_stat_name(name: str, args: Sequence[Any] = ()) -> str:
    """``cmdstat_`` name of a command as fakeredis or the engine names it: ``"xgroup create"`` → ``xgroup|create``;
    ``object`` with ``args[0] == b"ENCODING"`` → ``object|encoding``."""
    subs = WHOLE_CONTAINERS.get(name)
    if subs is not None and args:
        sub = bytes(args[0]).decode("utf-8", "replace").lower()
        if sub in subs:
            return f"{name}|{sub}"
    return name.lower().replace(" ", "|")


# --------------------------------------------------------------------------------------- memory
#: robj header (``sizeof(robj)``) and a main-dict entry plus its key sds overhead, as the server allocates them.
_ROBJ = 16
_DICT_ENTRY = 24
_SDS_HDR = 4


def value_bytes(value: Any) -> int:
    """Estimated bytes the server would use for ``value`` (the robj and its payload, not the key).

    Streams: the listpack nodes' exact ``lpBytes``, 32 bytes per rax node, per group 120 bytes, per
    consumer 80 bytes plus its name, per pending entry 72 bytes (two rax slots and a ``streamNACK``).
    Other types (fakeredis values): elements' lengths plus a per-element overhead (11 bytes as listpack
    entries below 128 elements, 40 as hashtable/quicklist nodes above). O(size of the value).
    """
    layout = getattr(value, "node_layout", None)
    if callable(layout):
        return _stream_bytes(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _ROBJ + len(value) + _SDS_HDR
    if isinstance(value, int):
        return _ROBJ
    if isinstance(value, Mapping):  # hash; zset (member → score)
        items = list(value.items())
        per = 11 if len(items) < 128 else 40
        return _ROBJ + sum(_elem_len(k) + _elem_len(v) + 2 * per for k, v in items)
    if isinstance(value, (list, tuple, set, frozenset)):
        per = 11 if len(value) < 128 else 40
        return _ROBJ + sum(_elem_len(e) + per for e in value)
    members = getattr(value, "_bylex", None) or getattr(value, "members", None)
    if members is not None:
        try:
            return value_bytes(dict(members)) if isinstance(members, Mapping) else value_bytes(list(members))
        except Exception:  # an unknown container: a flat estimate
            return _ROBJ + 64
    return _ROBJ + 64


def _elem_len(elem: Any) -> int:
    if isinstance(elem, (bytes, bytearray)):
        return len(elem)
    return 8


def _stream_bytes(stream: Any) -> int:
    nodes = stream.node_layout()
    size = _ROBJ + 48 + sum(lp for _, _, _, lp, _ in nodes) + 32 * stream.radix_tree_nodes
    for name, group in stream.groups.items():
        size += 120 + len(name) + 72 * len(group.pel)
        for cname in group.consumers:
            size += 80 + len(cname)
    return size


def key_bytes(key: bytes) -> int:
    """The main dictionary's cost of one key: its dict entry and its key sds."""
    return _DICT_ENTRY + len(key) + _SDS_HDR


def human_bytes(n: int) -> str:
    """``bytesToHuman``: ``894.81K``, ``1.00M`` …"""
    if n < 1024:
        return f"{n}B"
    for i, unit in enumerate("KMGTP", start=1):
        if n < 1024 ** (i + 1) or unit == "P":
            return f"{n / 1024 ** i:.2f}{unit}"
    return f"{n}B"  # pragma: no cover


# ------------------------------------------------------------------------------------- snapshot
@dataclass
class Snapshot:
    """What the keyspace knows, taken under the server lock by the adapter (``_fakeredis.server_info``)."""

    clients: int = 1
    blocked: int = 0  # blocked sockets (engine stream reads and fakeredis's own BLPOP …)
    pubsub_clients: int = 0
    watching_clients: int = 0
    watched_keys: int = 0
    pubsub_channels: int = 0
    pubsub_patterns: int = 0
    pubsub_shard_channels: int = 0
    keyspace: Dict[int, Tuple[int, int, int]] = field(default_factory=dict)  # db → keys, expires, avg TTL ms
    dataset_bytes: int = 0
    cached_scripts: int = 0
    functions: int = 0
    libraries: int = 0
    config: Callable[[str], Optional[str]] = lambda name: None
    blocked_clients: Sequence[Any] = ()  # the engine's BlockedClient records
    port: int = 6379


#: ``used_memory_startup`` and the Lua / functions fields of a fresh server, per server kind (live 7.0.15, 8.0).
_STARTUP = {
    "redis": dict(startup=876072, lua=32768, vm_functions=33792, functions=200),
    "valkey": dict(startup=998952, lua=33792, vm_functions=35840, functions=320),
}


#: What a keyspace line has after ``avg_ttl`` (hash fields with a TTL: the fake keeps none).
_KEYSPACE_TAIL = {"7.4": ",subexpiry=0", "valkey-9.1": ",keys_with_volatile_items=0"}

#: Valkey 9.1's Lua engine module as INFO Modules / Scripting Engines report it (live Valkey 9.1.2).
LUA_MODULE_LINE = ("name=lua,ver=1,api=1,filters=0,usedby=[],using=[],"
                   "options=[handle-repl-async-load|handle-atomic-slot-migration]")
LUA_ENGINE_OVERHEAD = 56


class InfoRenderer:
    """Renders INFO for one server: the fixed per-server values (run id, start time) live here."""

    def __init__(self, profile: Any, started_ms: int) -> None:
        self.profile = profile
        self.started_ms = started_ms
        self.run_id = secrets.token_hex(20)
        self.replid = secrets.token_hex(20)
        self.peak = 0
        #: a cluster node's INFO: ``redis_mode:cluster``, ``cluster_enabled:1`` (set by the server)
        self.cluster_enabled = False
        #: a node of a replication group (:class:`~fake_streams.topology.replica.ReplicaNode`): its INFO replication
        self.replication: Any = None
        #: a sentinel's INFO: ``redis_mode:sentinel`` (set by the server)
        self.sentinel_mode = False

    @property
    def mode(self) -> str:
        if self.sentinel_mode:
            return "sentinel"
        return "cluster" if self.cluster_enabled else "standalone"

    # The render methods return the section's (name, value) pairs; names come from FIELDS, values from here.
    def render(self, args: Sequence[bytes], stats: ServerStats, snap: Snapshot, now_ms: int) -> bytes:
        """The INFO reply for ``args`` (the section names after INFO)."""
        blocks = []
        for section in select(self.profile.table_name, args):
            lines = self._lines(section, stats, snap, now_ms)
            blocks.append("# " + _TITLES[section] + "\r\n" + "".join(f"{k}:{v}\r\n" for k, v in lines))
        return "\r\n".join(blocks).encode()

    def _lines(self, section: str, stats: ServerStats, snap: Snapshot, now_ms: int) -> List[Tuple[str, Any]]:
        if section in GENERATED:
            return getattr(self, "_gen_" + section)(stats, snap)
        values = getattr(self, "_val_" + section)(stats, snap, now_ms)
        if section == "replication" and self.replication is not None:
            return list(self.replication.info_fields(values["repl_backlog_size"], self.profile))
        return [(name, values[name]) for name in field_names(self.profile.table_name, section)]

    # -- listed sections -----------------------------------------------------------------------
    def _val_server(self, stats: ServerStats, snap: Snapshot, now_ms: int) -> Dict[str, Any]:
        p = self.profile
        uptime = max(0, now_ms - self.started_ms) // 1000
        system = platform.system()
        return {
            "redis_version": p.redis_version, "server_name": p.server, "valkey_version": p.valkey_version,
            "redis_git_sha1": "00000000", "redis_git_dirty": 0,
            "redis_build_id": f"{abs(hash(p.name)) & 0xFFFFFFFFFFFFFFF:015x}",
            "redis_mode": self.mode, "server_mode": self.mode,
            "os": f"{system} {platform.release()} {platform.machine()}",
            "arch_bits": 64 if sys.maxsize > 2 ** 32 else 32,
            "monotonic_clock": "POSIX clock_gettime",
            "multiplexing_api": {"Linux": "epoll", "Darwin": "kqueue"}.get(system, "select"),
            "atomicvar_api": "c11-builtin", "gcc_version": "0.0.0", "process_id": os.getpid(),
            "process_supervised": "no", "run_id": self.run_id, "tcp_port": snap.port,
            "server_time_usec": now_ms * 1000, "uptime_in_seconds": uptime, "uptime_in_days": uptime // 86400,
            "hz": _int_config(snap, "hz", 10), "configured_hz": _int_config(snap, "hz", 10),
            "lru_clock": (now_ms // 1000) & 0xFFFFFF, "executable": sys.executable or "", "config_file": "",
            "io_threads_active": 0, "availability_zone": "", "valkey_release_stage": "ga",
            "clients_hz": _int_config(snap, "hz", 10),
            "listener0": f"name=tcp,bind=*,bind=-::*,port={snap.port}",
        }

    def _val_clients(self, stats: ServerStats, snap: Snapshot, now_ms: int) -> Dict[str, Any]:
        blocked = list(snap.blocked_clients)
        keys = {(b.db, k) for b in blocked for k in b.keys}
        nokey = {(b.db, k) for b in blocked if b.argv[:1] and bytes(b.argv[0]).lower() == b"xreadgroup"
                 for k in b.keys}
        timed = sum(1 for b in blocked if b.deadline_ms is not None) + max(0, snap.blocked - len(blocked))
        return {
            "connected_clients": snap.clients, "cluster_connections": 0,
            "maxclients": _int_config(snap, "maxclients", 10000), "client_recent_max_input_buffer": 0,
            "client_recent_max_output_buffer": 0, "blocked_clients": snap.blocked, "tracking_clients": 0,
            "pubsub_clients": snap.pubsub_clients, "watching_clients": snap.watching_clients,
            "clients_in_timeout_table": timed, "total_watched_keys": snap.watched_keys,
            "total_blocking_keys": len(keys), "total_blocking_keys_on_nokey": len(nokey),
            "paused_reason": "none", "paused_actions": "none", "paused_timeout_milliseconds": 0,
        }

    def _memory(self, snap: Snapshot) -> Tuple[int, int, int]:
        base = _STARTUP[self.profile.server]
        startup = base["startup"]
        overhead = startup + 1024 * max(0, snap.clients - 1)
        used = overhead + snap.dataset_bytes
        self.peak = max(self.peak, used)
        return startup, overhead, used

    def _val_memory(self, stats: ServerStats, snap: Snapshot, now_ms: int) -> Dict[str, Any]:
        base = _STARTUP[self.profile.server]
        startup, overhead, used = self._memory(snap)
        rss = _rss_bytes() or used
        dataset = used - overhead
        maxmemory = _int_config(snap, "maxmemory", 0)
        scripts = base["functions"] + 200 * snap.cached_scripts
        lua, vm_functions = base["lua"], base["vm_functions"]
        system = _system_memory()
        return {
            "used_memory": used, "used_memory_human": human_bytes(used), "used_memory_rss": rss,
            "used_memory_rss_human": human_bytes(rss), "used_memory_peak": self.peak,
            "used_memory_peak_human": human_bytes(self.peak),
            "used_memory_peak_perc": f"{used * 100 / self.peak:.2f}%", "used_memory_overhead": overhead,
            "used_memory_startup": startup, "used_memory_dataset": dataset,
            "used_memory_dataset_perc": f"{dataset * 100 / max(1, used - startup):.2f}%",
            "allocator_allocated": used, "allocator_active": used, "allocator_resident": used,
            "allocator_muzzy": 0, "total_system_memory": system, "total_system_memory_human": human_bytes(system),
            "used_memory_lua": lua, "used_memory_vm_eval": lua, "used_memory_lua_human": human_bytes(lua),
            "used_memory_scripts_eval": 200 * snap.cached_scripts, "number_of_cached_scripts": snap.cached_scripts,
            "number_of_functions": snap.functions, "number_of_libraries": snap.libraries,
            "used_memory_vm_functions": vm_functions, "used_memory_vm_total": lua + vm_functions,
            "used_memory_vm_total_human": human_bytes(lua + vm_functions), "used_memory_functions": base["functions"],
            "used_memory_scripts": scripts, "used_memory_scripts_human": human_bytes(scripts),
            "maxmemory": maxmemory, "maxmemory_human": human_bytes(maxmemory),
            "maxmemory_policy": snap.config("maxmemory-policy") or "noeviction",
            "allocator_frag_ratio": "1.00", "allocator_frag_bytes": 0, "allocator_rss_ratio": "1.00",
            "allocator_rss_bytes": 0, "rss_overhead_ratio": f"{rss / used:.2f}", "rss_overhead_bytes": rss - used,
            "mem_fragmentation_ratio": f"{rss / used:.2f}", "mem_fragmentation_bytes": rss - used,
            "mem_not_counted_for_evict": 0, "mem_replication_backlog": 0, "mem_total_replication_buffers": 0,
            "mem_clients_slaves": 0, "mem_clients_normal": overhead - startup, "mem_cluster_links": 0,
            "mem_aof_buffer": 0, "mem_allocator": "jemalloc-5.3.0", "mem_replicas_repl_buffer": 0,
            "mem_cluster_slot_import": 0, "mem_cluster_slot_export": 0, "mem_overhead_db_hashtable_rehashing": 0,
            "active_defrag_running": 0, "lazyfree_pending_objects": 0, "lazyfreed_objects": 0,
        }

    def _val_persistence(self, stats: ServerStats, snap: Snapshot, now_ms: int) -> Dict[str, Any]:
        values: Dict[str, Any] = {name: 0 for name in field_names(self.profile.table_name, "persistence")}
        values.update({
            "current_fork_perc": "0.00", "rdb_changes_since_last_save": stats.dirty,
            "rdb_last_save_time": self.started_ms // 1000, "rdb_last_bgsave_status": "ok",
            "rdb_last_bgsave_time_sec": -1, "rdb_current_bgsave_time_sec": -1, "aof_last_rewrite_time_sec": -1,
            "aof_current_rewrite_time_sec": -1, "aof_last_bgrewrite_status": "ok", "aof_last_write_status": "ok",
        })
        return values

    def _val_stats(self, stats: ServerStats, snap: Snapshot, now_ms: int) -> Dict[str, Any]:
        values: Dict[str, Any] = {name: 0 for name in field_names(self.profile.table_name, "stats")}
        for name in ("instantaneous_input_kbps", "instantaneous_output_kbps", "instantaneous_input_repl_kbps",
                     "instantaneous_output_repl_kbps", "expired_stale_perc",
                     "expired_keys_with_volatile_items_stale_perc"):
            values[name] = "0.00"
        values.update({
            "total_connections_received": stats.connections_received,
            "total_commands_processed": stats.total_commands, "rejected_connections": stats.rejected_connections,
            "pubsub_channels": snap.pubsub_channels, "pubsub_patterns": snap.pubsub_patterns,
            "pubsubshard_channels": snap.pubsub_shard_channels, "total_error_replies": stats.total_error_replies,
            "total_reads_processed": stats.total_commands, "total_writes_processed": stats.total_commands,
        })
        return values

    def _val_replication(self, stats: ServerStats, snap: Snapshot, now_ms: int) -> Dict[str, Any]:
        backlog = 10 * 1024 * 1024 if self.profile.server == "valkey" else 1024 * 1024
        return {
            "role": "master", "connected_slaves": 0, "replicas_waiting_psync": 0,
            "master_failover_state": "no-failover", "master_replid": self.replid, "master_replid2": "0" * 40,
            "master_repl_offset": 0, "second_repl_offset": -1, "repl_backlog_active": 0,
            "repl_backlog_size": _int_config(snap, "repl-backlog-size", backlog), "repl_backlog_first_byte_offset": 0,
            "repl_backlog_histlen": 0,
        }

    def _val_cpu(self, stats: ServerStats, snap: Snapshot, now_ms: int) -> Dict[str, Any]:
        own = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {
            "used_cpu_sys": f"{own.ru_stime:.6f}", "used_cpu_user": f"{own.ru_utime:.6f}",
            "used_cpu_sys_children": f"{children.ru_stime:.6f}", "used_cpu_user_children": f"{children.ru_utime:.6f}",
            "used_cpu_sys_main_thread": f"{own.ru_stime:.6f}", "used_cpu_user_main_thread": f"{own.ru_utime:.6f}",
            "used_active_time_main_thread": f"{own.ru_stime + own.ru_utime:.6f}",
        }

    def _val_tls(self, stats: ServerStats, snap: Snapshot, now_ms: int) -> Dict[str, Any]:
        """No TLS: every certificate ``none``, expiring in 0 s (as Valkey 9.1.2 without TLS configured)."""
        return {f"tls_{who}_cert_{what}": ("none" if what == "serial" else 0)
                for who in ("server", "client", "ca") for what in ("serial", "expires_in_seconds")}

    def _val_cluster_info(self, stats: ServerStats, snap: Snapshot, now_ms: int) -> Dict[str, Any]:
        return {}  # standalone: the title alone

    def _val_scriptingengines(self, stats: ServerStats, snap: Snapshot, now_ms: int) -> Dict[str, Any]:
        """The one built-in engine (Lua), its memory the Lua VMs' (``used_memory_vm_total``)."""
        base = _STARTUP[self.profile.server]
        used = base["lua"] + base["vm_functions"]
        return {"engines_count": 1, "engines_total_used_memory": used,
                "engines_total_memory_overhead": LUA_ENGINE_OVERHEAD,
                "engine_0": f"name=LUA,module=lua,abi_version=4,used_memory={used},memory_overhead={LUA_ENGINE_OVERHEAD}"}

    def _val_cluster(self, stats: ServerStats, snap: Snapshot, now_ms: int) -> Dict[str, Any]:
        return {"cluster_enabled": int(self.cluster_enabled)}

    def _val_debug(self, stats: ServerStats, snap: Snapshot, now_ms: int) -> Dict[str, Any]:
        return {name: 0 for name in field_names(self.profile.table_name, "debug")}

    # -- generated sections --------------------------------------------------------------------
    def _gen_modules(self, stats: ServerStats, snap: Snapshot) -> List[Tuple[str, Any]]:
        if "lua_module_listed" in self.profile.features:
            return [("module", LUA_MODULE_LINE)]
        return []

    def _gen_commandstats(self, stats: ServerStats, snap: Snapshot) -> List[Tuple[str, Any]]:
        lines = []
        for name in sorted(stats.commands):
            s = stats.commands[name]
            per_call = s.usec / s.calls if s.calls else 0.0
            lines.append((f"cmdstat_{name}", f"calls={s.calls},usec={int(s.usec)},usec_per_call={per_call:.2f},"
                                             f"rejected_calls={s.rejected},failed_calls={s.failed}"))
        return lines

    def _gen_errorstats(self, stats: ServerStats, snap: Snapshot) -> List[Tuple[str, Any]]:
        lines = [(f"errorstat_{code}", f"count={stats.errors[code]}") for code in sorted(stats.errors)]
        if stats.errors_disabled:
            lines.append(("errorstat_ERRORSTATS_DISABLED", "count=1"))
        return lines

    def _gen_latencystats(self, stats: ServerStats, snap: Snapshot) -> List[Tuple[str, Any]]:
        lines = []
        for name in sorted(stats.commands):
            s = stats.commands[name]
            if s.calls:
                lines.append((f"latency_percentiles_usec_{name}",
                              f"p50={s.percentile(50):.3f},p99={s.percentile(99):.3f},p99.9={s.percentile(99.9):.3f}"))
        return lines

    def _gen_keyspace(self, stats: ServerStats, snap: Snapshot) -> List[Tuple[str, Any]]:
        sub = _KEYSPACE_TAIL.get(self.profile.table_name, "")
        return [(f"db{db}", f"keys={keys},expires={expires},avg_ttl={avg}{sub}")
                for db, (keys, expires, avg) in sorted(snap.keyspace.items()) if keys]


def _int_config(snap: Snapshot, name: str, default: int) -> int:
    raw = snap.config(name)
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


def _system_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def listed_fields(profile_name: str, sections: Iterable[str] = SECTION_ORDER) -> Dict[str, List[str]]:
    """``{section: [field, …]}`` of the listed sections (for tests and docs)."""
    return {s: field_names(profile_name, s) for s in sections if s in FIELDS}


__all__ = ["DEFAULT_SECTIONS", "FIELDS", "InfoRenderer", "SECTION_ORDER", "ServerStats", "Snapshot",
           "command_stat_name", "field_names", "human_bytes", "key_bytes", "section_name", "select", "value_bytes"]
