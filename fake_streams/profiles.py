"""Version profiles: what differs between Redis 7.0, 7.2, 7.4, 8.0 … 8.10, Valkey 8.0 and Valkey 9.1 for stream
commands (spec §6, §9; Redis 8: the addendum streams-redis8.md §0.3 and docs/redis8-choices.md).

Handlers ask for features (``profile.has("xread_plus_id")``), never compare version numbers, and
resolve error texts through ``profile.errors`` (the base table of :mod:`fake_streams.errors` with
this profile's overrides applied). Users name profiles by the public strings ``"7.0"``, ``"7.2"``,
``"7.4"`` (default), ``"valkey-8.0"``, ``"8.0"``, ``"8.2"``, ``"8.4"``, ``"8.6"``, ``"8.8"``, ``"8.10"`` and ``"valkey-9.1"``
(Valkey 9.1.2 exactly: checked against the live server, which is its oracle with no declared difference).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Dict, FrozenSet, Mapping, Optional, Tuple

from .errors import ERRORS

#: Feature switches (spec §6 row in brackets).
FEATURES: Mapping[str, str] = MappingProxyType(
    {
        "xread_plus_id": "XREAD accepts '+' for the last entry; XREADGROUP '+' has its own error [row 1]",
        "blocked_reprocess": "a woken blocked client re-runs its command (R7.2+); else the R7.0 serve-from-saved-state model [row 4-6]",
        "blocked_deadline_kept": "a client that re-blocks after a wake-up keeps its original deadline (7.2.5+) [row 7]",
        "block_allowed_in_scripts": "BLOCK inside a script is accepted and never blocks (R7.4+); else an error [row 3]",
        "time_snapshot": "one 'now' per execution unit (command, EXEC, script) (R7.2+); else a live clock [row 8]",
        "consumer_active_time": "consumers have active-time / inactive (R7.2+) [row 9]",
        "eager_consumer_creation": "XREADGROUP/XCLAIM/XAUTOCLAIM create the consumer before serving (R7.2+) [row 10]",
        "xsetid_checks_max_deleted": "XSETID refuses an ID below max-deleted-entry-id (R7.2+) [row 11]",
        "block_timeout_range_check": "BLOCK refuses a timeout whose deadline would overflow int64: 'timeout is out of range' (R7.2+; 7.0 blocks) [timeout.c]",
        "script_slot_per_run": "a script's slot check on a cluster node keeps the script's own slot (from its caller's), names the command in its cross-slot / rehashing errors and says 'slot not served' (R7.4, V8.0+); else 7.0's: the client's slot, every refusal but cluster-down 'non local key' [script.c scriptVerifyClusterState]",
        "script_cross_slot_unsets_slot": "on a cluster node each command of a script that may cross slots leaves its client without a slot (the next script of an EXEC starts without one): the cluster slot-stats rule (V8.0+, measured on R8.2.3) [clusterSlotStatsInvalidateSlotIfApplicable]",
        # Redis 8 (docs/redis8-choices.md; spec addendum streams-redis8.md §0.3)
        "lag_behind_first_estimated": "a group whose last ID is behind the first entry has its entries-read estimated, not counted (R8.0, #13958) [A9]",
        "xread_plus_empty_nil": "XREAD '+' on a stream whose last ID is 0-0 reads nothing (nil, or blocks) instead of the error (measured on R8.2.3 and V9.1.2; assumed from R8.0)",
        "stream_ref_policies": "XDELEX, XACKDEL, KEEPREF/DELREF/ACKED on XADD/XTRIM (R8.2.0) [A1, A2]",
        "entriesread_capped": "XGROUP CREATE/SETID store ENTRIESREAD capped at entries-added (R8.2.2) [A3]",
        "xreadgroup_claim": "XREADGROUP … CLAIM min-idle-time: idle pending entries first, 4-element entries (R8.4.0) [A4]",
        "stream_idmp": "XADD IDMP/IDMPAUTO, XCFGSET, the six XINFO STREAM IDMP fields (R8.6.0) [A5]",
        "approx_trim_ref_policies": "`~` trimming honours DELREF/ACKED; before, it deletes nothing (R8.2.7, R8.4.4, R8.6.0) [A2]",
        "xnack": "XNACK; owner-less (NACKed) PEL entries in every command that sees the PEL; XINFO `nacked-count`; RDB 14 (R8.8.0) [A7]",
        "xidmprecord": "XIDMPRECORD key pid iid id: the AOF-rewrite command that records one IDMP pair (R8.6.2, #14794; the docs say since 8.8.0: docs/redis8-choices.md) [A6]",
        "stream_idmp_rdb": "DUMP/RESTORE carry a stream's IDMP state: RDB 13, RDB_TYPE_STREAM_LISTPACKS_4 (R8.6; librdb's RDB-13 support) [A5]",
        "read_caps": "XREAD / XREADGROUP MAXCOUNT (entries across all streams) and MAXSIZE (reply bytes) (R8.10.0) [A8]",
        # Valkey 9.1.2 (observed on the live server; spec §9)
        "reestimating_read_counter": "entries-read / lag with Valkey 9's tombstone rules: any deleted ID after the cursor counts, an ID below max-deleted-entry-id is unknown, a '>' delivery counts on only from a known position (V9.1) [spec §9 item 1]",
        "unshared_small_integers": "OBJECT REFCOUNT of a small integer string is 1: values are not the shared integers (V9.1)",
        "embstr_holds_the_key": "embstr: the key, its expiry and the value fit one 128-byte allocation, not a 44-byte value limit (V9.1)",
        "noauth_before_command_checks": "an unauthenticated client gets NOAUTH before unknown-command / arity errors (V9.1)",
        "no_multi_names_the_command": "a command refused inside MULTI is named: \"ERR Command 'watch' not allowed inside a transaction\" (V9.1)",
        "lua_module_listed": "HELLO 'modules' and INFO Modules list the built-in lua scripting engine module (V9.1)",
        "script_acl_counts_noperm": "a script command refused by ACL counts as NOPERM in INFO errorstats (the script still gets 'ERR ACL failure in script: …') (V9.1)",
        "script_names_unknown_subcommands": "redis.call of an unknown subcommand gets the command's own 'unknown subcommand … Try X HELP.' error, not 'Unknown command called from script' (V9.1)",
        "renamed_key_is_a_new_object": "RENAME / RENAMENX / MOVE make a new object (the key is embedded in it): the key's LFU counter starts afresh (V9.1)",
        "script_cluster_module_texts": "a script command refused by a cluster node's slot check gets the module API's texts: 'Can not execute a command '<name>' while the cluster is down', else 'Attempted to access a non local key in a cluster node' (several slots in one command, a slot not served, another node's key, a migration); the cross-slot check between commands keeps its script text (V9.1)",
        "valkey_9_script_texts": "the scripting engine's texts of Valkey 9: error suffix without the sha, 'This Valkey command', 'SCRIPT KILL.' / 'FUNCTION KILL.', 'Could not find scripting engine', function registration errors unframed (V9.1)",
    }
)

#: the Redis 8 switches: not in the 7.x / Valkey profiles
REDIS8_FEATURES = frozenset({"lag_behind_first_estimated", "xread_plus_empty_nil", "xreadgroup_claim", "stream_idmp",
                             "stream_ref_policies", "entriesread_capped", "approx_trim_ref_policies", "xnack",
                             "xidmprecord", "stream_idmp_rdb", "read_caps", "script_cross_slot_unsets_slot"})
_ALL = frozenset(FEATURES)
#: What only Valkey 9.1 does; the Redis and Valkey 8 profiles have none of it.
_VALKEY_9 = frozenset({
    "reestimating_read_counter", "unshared_small_integers", "embstr_holds_the_key", "noauth_before_command_checks",
    "no_multi_names_the_command", "lua_module_listed", "valkey_9_script_texts", "renamed_key_is_a_new_object",
    "script_cluster_module_texts",
    "script_names_unknown_subcommands", "script_acl_counts_noperm",
})
#: the Redis 7.x / Valkey 8.0 feature set: neither Redis 8's nor Valkey 9's switches
_R7 = _ALL - REDIS8_FEATURES - _VALKEY_9


@dataclass(frozen=True)
class Profile:
    """One emulated server version. Immutable; shared by every connection of a server."""

    name: str  # public name: "7.0", "7.2", "7.4", "valkey-8.0", "8.0" … "8.10", "valkey-9.1"
    spec_key: str  # spec version key: "R7.0", "R7.2", "R7.4", "V8", "R8.0" …, "V9.1"
    server: str  # "redis" or "valkey" (HELLO 'server')
    redis_version: str  # INFO redis_version / HELLO 'version' for redis
    valkey_version: Optional[str]  # INFO valkey_version (valkey only)
    features: FrozenSet[str]
    error_overrides: Mapping[str, str] = field(default_factory=dict)
    help_footer: bytes = b"    Print this help."
    #: the older profile whose INFO field lists and DUMP format this one reuses (None: its own tables)
    like: Optional[str] = None

    def __post_init__(self) -> None:
        unknown = set(self.features) - _ALL
        if unknown:
            raise ValueError(f"unknown features {sorted(unknown)}")
        bad = set(self.error_overrides) - set(ERRORS)
        if bad:
            raise ValueError(f"overrides for unknown errors {sorted(bad)}")
        table: Dict[str, str] = dict(ERRORS)
        table.update(self.error_overrides)
        object.__setattr__(self, "errors", MappingProxyType(table))

    errors: Mapping[str, str] = field(init=False, repr=False, compare=False)

    def has(self, feature: str) -> bool:
        """Whether this profile has ``feature`` (a key of :data:`FEATURES`)."""
        if feature not in _ALL:
            raise KeyError(f"unknown feature {feature!r}")
        return feature in self.features

    @property
    def version_tuple(self) -> Tuple[int, ...]:
        """The version the server reports as ``version`` in HELLO (the valkey version for valkey)."""
        return tuple(int(p) for p in (self.valkey_version or self.redis_version).split("."))

    @property
    def hello_version(self) -> str:
        return self.valkey_version or self.redis_version

    @property
    def table_name(self) -> str:
        """The profile name that tables keyed by profile (INFO fields, DUMP format) use for this one."""
        return self.like or self.name


R7_4 = Profile(
    name="7.4",
    spec_key="R7.4",
    server="redis",
    redis_version="7.4.1",
    valkey_version=None,
    features=_R7,
)

R7_2 = Profile(
    name="7.2",
    spec_key="R7.2",
    server="redis",
    redis_version="7.2.6",
    valkey_version=None,
    features=_R7 - {"xread_plus_id", "block_allowed_in_scripts", "script_slot_per_run"},
)

R7_0 = Profile(
    name="7.0",
    spec_key="R7.0",
    server="redis",
    redis_version="7.0.15",
    valkey_version=None,
    features=frozenset(),
    error_overrides={
        "UNBALANCED_XREAD": "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
        "UNBALANCED_XREADGROUP": "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
        # stale errno in 7.0's streamAppendItem for <ms>-* overflow (spec §2.1 step 14, §6 row 12)
        "XADD_PARTIAL_ID_OVERFLOW": "ERR Elements are too large to be stored",
    },
    help_footer=b"    Prints this help.",
)

V8_0 = Profile(
    name="valkey-8.0",
    spec_key="V8",
    server="valkey",
    redis_version="7.2.4",
    valkey_version="8.0.1",
    features=_R7 | {"script_cross_slot_unsets_slot"},
    error_overrides={
        # scriptVerifyCommandArity: Valkey dropped "Redis" from the text
        "SCRIPT_UNKNOWN_COMMAND": "ERR Unknown command called from script",
    },
)



def _redis8(line: str, patch: int, features: FrozenSet[str]) -> Profile:
    """A Redis 8.x profile: 7.4's behaviour plus ``features``; INFO fields and DUMP format as 7.4
    (Redis 8.2.3 dumps streams as RDB 12 / STREAM_LISTPACKS_3, like 7.4: checked). The patch number is the
    newest release of the line that the sources name (docs/redis8-choices.md, "Profile versions")."""
    return Profile(
        name=line,
        spec_key="R" + line,
        server="redis",
        redis_version=f"{line}.{patch}",
        valkey_version=None,
        features=_R7 | {"lag_behind_first_estimated", "xread_plus_empty_nil"} | features,
        error_overrides={
            # Redis 8.0 (#13958): XREAD also names '+' (measured on Redis 8.2.3)
            "UNBALANCED_XREAD": "ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must be specified.",
        },
        like="7.4",
    )


_R8_2_ADDITIONS = frozenset({"stream_ref_policies", "entriesread_capped", "approx_trim_ref_policies",
                             "script_cross_slot_unsets_slot"})
R8_0 = _redis8("8.0", 0, frozenset())
R8_2 = _redis8("8.2", 7, _R8_2_ADDITIONS)
_R8_4_ADDITIONS = _R8_2_ADDITIONS | {"xreadgroup_claim"}
R8_4 = _redis8("8.4", 4, _R8_4_ADDITIONS)
_R8_6_ADDITIONS = _R8_4_ADDITIONS | {"stream_idmp", "stream_idmp_rdb", "xidmprecord"}
R8_6 = _redis8("8.6", 2, _R8_6_ADDITIONS)
#: Redis 8.8's feature set: 8.6's plus XNACK (a later line extends it: 8.10 = R8_8_FEATURES | its own)
R8_8_FEATURES = _R8_6_ADDITIONS | {"xnack"}
R8_8 = _redis8("8.8", 0, R8_8_FEATURES)
#: what Redis 8.10 adds to 8.8 (XREAD / XREADGROUP MAXCOUNT / MAXSIZE): "8.10" = R8_8_FEATURES | R8_10_FEATURES
R8_10_FEATURES = frozenset({"read_caps"})
R8_10 = _redis8("8.10", 1, R8_8_FEATURES | R8_10_FEATURES)
REDIS8_PROFILES = (R8_0, R8_2, R8_4, R8_6, R8_8, R8_10)

V9_1 = Profile(
    name="valkey-9.1",
    spec_key="V9.1",
    server="valkey",
    redis_version="7.2.4",  # INFO redis_version of Valkey 9.1.2 (the compatibility version it reports)
    valkey_version="9.1.2",
    features=_R7 | _VALKEY_9 | {"xread_plus_empty_nil", "script_cross_slot_unsets_slot"},
    error_overrides=V8_0.error_overrides,
)

PROFILES: Mapping[str, Profile] = MappingProxyType(
    {p.name: p for p in (R7_0, R7_2, R7_4, V8_0, *REDIS8_PROFILES, V9_1)}
)
DEFAULT_PROFILE = R7_4


def get_profile(version: str | Profile | None) -> Profile:
    """The profile for a public version string (``"7.4"``) or a :class:`Profile`; ``None`` → the default."""
    if version is None:
        return DEFAULT_PROFILE
    if isinstance(version, Profile):
        return version
    try:
        return PROFILES[str(version)]
    except KeyError:
        raise ValueError(f"unknown version {version!r}; choose one of {sorted(PROFILES)}") from None
