"""Every error reply a stream command can send, by name, with its exact wire text (spec §8).

Texts are stored whole, with their code (``ERR``, ``WRONGTYPE``, ``NOGROUP`` …) and without the
leading ``-``. Version differences are overrides in :mod:`fake_streams.profiles`; no other module
writes an error literal, and no code adds or strips ``ERR ``. Tests import this table.
"""

from __future__ import annotations

from typing import Dict

ERRORS: Dict[str, str] = {
    # generic (server.c / networking.c / object.c / timeout.c)
    "WRONGTYPE": "WRONGTYPE Operation against a key holding the wrong kind of value",
    "SYNTAX": "ERR syntax error",
    "NO_SUCH_KEY": "ERR no such key",
    "WRONG_ARITY": "ERR wrong number of arguments for '{command}' command",
    "UNKNOWN_SUBCOMMAND": "ERR unknown subcommand '{subcommand}'. Try {container} HELP.",
    "SUBCOMMAND_SYNTAX": "ERR unknown subcommand or wrong number of arguments for '{subcommand}'. Try {container} HELP.",
    "NOT_INTEGER": "ERR value is not an integer or out of range",
    "TIMEOUT_NOT_INTEGER": "ERR timeout is not an integer or out of range",
    "TIMEOUT_NEGATIVE": "ERR timeout is negative",
    "TIMEOUT_OUT_OF_RANGE": "ERR timeout is out of range",
    # IDs
    "INVALID_STREAM_ID": "ERR Invalid stream ID specified as stream command argument",
    "INVALID_START_ID": "ERR invalid start ID for the interval",
    "INVALID_END_ID": "ERR invalid end ID for the interval",
    # XADD / XTRIM
    "STRATEGY_TWICE": "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
    "MAXLEN_NEGATIVE": "ERR The MAXLEN argument must be >= 0.",
    "LIMIT_NEGATIVE": "ERR The LIMIT argument must be >= 0.",
    "LIMIT_WITHOUT_STRATEGY": "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
    "XTRIM_NO_STRATEGY": "ERR syntax error, XTRIM must be called with a trimming strategy",
    "LIMIT_WITHOUT_APPROX": "ERR syntax error, LIMIT cannot be used without the special ~ option",
    "XADD_ID_ZERO": "ERR The ID specified in XADD must be greater than 0-0",
    "XADD_ID_EXHAUSTED": "ERR The stream has exhausted the last possible ID, unable to add more items",
    "XADD_ID_TOO_SMALL": "ERR The ID specified in XADD is equal or smaller than the target stream top item",
    "ELEMENTS_TOO_LARGE": "ERR Elements are too large to be stored",
    # XADD <ms>-* overflow: which text the server sends (R7.0 sends a stale-errno text, see profiles)
    "XADD_PARTIAL_ID_OVERFLOW": "ERR The ID specified in XADD is equal or smaller than the target stream top item",
    # XREAD / XREADGROUP
    "UNBALANCED_XREAD": "ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified.",
    "UNBALANCED_XREADGROUP": "ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified.",
    "XREAD_GROUP_OPTION": "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
    "XREAD_NOACK_OPTION": "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
    "XREADGROUP_MISSING_GROUP": "ERR Missing GROUP option for XREADGROUP",
    "XREADGROUP_NOGROUP": "NOGROUP No such key '{key}' or consumer group '{group}' in XREADGROUP with GROUP option",
    "XREADGROUP_DOLLAR": (
        "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer "
        "by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."
    ),
    "XREADGROUP_PLUS": (
        "ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer "
        "by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set."
    ),
    "XREAD_LAST_ID_ZERO": "ERR the stream last element ID is 0-0",
    "XREAD_GT_ID": "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
    "BLOCK_IN_SCRIPT": "ERR {command} command is not allowed with BLOCK option from scripts",
    # XGROUP
    "ENTRIESREAD_INVALID": "ERR value for ENTRIESREAD must be positive or -1",
    "XGROUP_KEY_MISSING": (
        "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use "
        "the MKSTREAM option to create an empty stream automatically."
    ),
    "NOGROUP_FOR_KEY": "NOGROUP No such consumer group '{group}' for key name '{key}'",
    "BUSYGROUP": "BUSYGROUP Consumer Group name already exists",
    # XSETID
    "ENTRIES_ADDED_NEGATIVE": "ERR entries_added must be positive",
    "XSETID_BELOW_GIVEN_MAX_DELETED": "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
    "XSETID_BELOW_MAX_DELETED": "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id",
    "XSETID_BELOW_TOP": "ERR The ID specified in XSETID is smaller than the target stream top item",
    "XSETID_ENTRIES_ADDED_SMALL": "ERR The entries_added specified in XSETID is smaller than the target stream length",
    # XPENDING / XCLAIM / XAUTOCLAIM
    "NOGROUP": "NOGROUP No such key '{key}' or consumer group '{group}'",
    "XCLAIM_MIN_IDLE": "ERR Invalid min-idle-time argument for XCLAIM",
    "XCLAIM_IDLE": "ERR Invalid IDLE option argument for XCLAIM",
    "XCLAIM_TIME": "ERR Invalid TIME option argument for XCLAIM",
    "XCLAIM_RETRYCOUNT": "ERR Invalid RETRYCOUNT option argument for XCLAIM",
    "XCLAIM_UNKNOWN_OPTION": "ERR Unrecognized XCLAIM option '{option}'",
    "XAUTOCLAIM_MIN_IDLE": "ERR Invalid min-idle-time argument for XAUTOCLAIM",
    "XAUTOCLAIM_COUNT": "ERR COUNT must be > 0",
    "XAUTOCLAIM_COUNT_MEMORY": "ERR Insufficient memory, failed allocating transient memory, COUNT too high.",
    # XDELEX / XACKDEL (Redis 8.2; texts measured on Redis 8.2.3)
    "NUMIDS_POSITIVE": "ERR Number of IDs must be a positive integer",
    "NUMIDS_MISMATCH": "ERR The `numids` parameter must match the number of arguments",
    # XADD IDMP / XCFGSET (Redis 8.6; texts from the Tcl test globs, docs/redis8-choices.md)
    "IDMP_EXPLICIT_ID": "ERR IDMP/IDMPAUTO can be used only with auto-generated IDs",
    "IDMP_TWICE": "ERR IDMP/IDMPAUTO specified multiple times",
    "IDMP_EMPTY_PID": "ERR IDMP requires a non-empty producer ID",
    "IDMP_EMPTY_IID": "ERR IDMP requires a non-empty idempotent ID",
    "IDMPAUTO_EMPTY_PID": "ERR IDMPAUTO requires a non-empty producer ID",
    "XCFGSET_NO_PARAMETER": "ERR At least one parameter must be specified",
    "IDMP_DURATION_RANGE": "ERR IDMP-DURATION must be between 1 and 86400 seconds",
    "IDMP_MAXSIZE_RANGE": "ERR IDMP-MAXSIZE must be between 1 and 10000 entries",
    # XIDMPRECORD (Redis 8.6.2; no text in the sources: docs/redis8-choices.md)
    "XIDMPRECORD_NO_ENTRY": "ERR The stream ID does not exist in the stream",
    "XIDMPRECORD_OTHER_ID": "ERR The IID is already recorded with a different stream ID",
    # XREADGROUP CLAIM (Redis 8.4; texts from the Tcl test globs, the rest by analogy: docs/redis8-choices.md)
    "XREAD_CLAIM_OPTION": "ERR The CLAIM option is only supported by XREADGROUP. You called XREAD instead.",
    "CLAIM_NOT_INTEGER": "ERR min-idle-time is not an integer",
    "CLAIM_NEGATIVE": "ERR min-idle-time must be a positive integer",
    # XREAD / XREADGROUP MAXCOUNT / MAXSIZE (Redis 8.10; no text in the sources: docs/redis8-choices.md)
    "MAXCOUNT_NOT_POSITIVE": "ERR MAXCOUNT must be a positive integer",
    "MAXSIZE_NOT_POSITIVE": "ERR MAXSIZE must be a positive integer",
    "MAXCOUNT_BELOW_COUNT": "ERR MAXCOUNT must be greater than or equal to COUNT",
    # XNACK (Redis 8.8; exact texts from the Tcl tests, the parts their globs leave open chosen in
    # docs/redis8-choices.md)
    "XNACK_MODE": "ERR mode must be SILENT, FAIL, or FATAL",
    "XNACK_UNKNOWN_OPTION": "ERR Unrecognized XNACK option '{option}'",
    "XNACK_NO_IDS": "ERR syntax error, expected IDS keyword",
    "XNACK_NUMIDS": "ERR numids must be a positive integer",
    "XNACK_NUMIDS_MISMATCH": "ERR number of IDs doesn't match numids",
    "XNACK_RETRYCOUNT_NEGATIVE": "ERR Invalid RETRYCOUNT value, must be >= 0",
    # blocking
    "BLOCKED_NOGROUP_R70": "NOGROUP the consumer group this client was blocked on no longer exists",
    "BLOCKED_KEY_GONE_R70": "UNBLOCKED the stream key no longer exists",
    "UNBLOCKED_BY_CLIENT": "UNBLOCKED client unblocked via CLIENT UNBLOCK",
    # a cluster node's blocked reader whose slot moved or whose cluster went down (clusterRedirectBlockedClientIfNeeded)
    "CLUSTER_MOVED": "MOVED {slot} {address}",
    "CLUSTER_DOWN": "CLUSTERDOWN The cluster is down",
    "CLUSTER_UNBOUND": "CLUSTERDOWN Hash slot not served",
    # transport (fake_streams._fakeredis): command lookup (server.c processCommand / script.c scriptVerifyCommandArity)
    "UNKNOWN_COMMAND": "ERR unknown command '{command}', with args beginning with: {args}",
    "SCRIPT_UNKNOWN_COMMAND": "ERR Unknown Redis command called from script",
    # fake-only: a handler raised an unexpected Python exception (recorded in FakeStreamsServer.internal_errors)
    "INTERNAL_ERROR": "ERR fake_streams internal error in '{command}': {detail}",
}


def sanitize(value: object) -> str:
    """A name interpolated into an error the way ``addReplyErrorFormat`` sends it and redis-py reads it back.

    C ``%s`` stops at the first NUL; CR and LF become spaces; redis-py decodes the line as UTF-8 with
    ``errors="replace"``.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        nul = raw.find(b"\0")
        if nul >= 0:
            raw = raw[:nul]
        text = raw.decode("utf-8", errors="replace")
    else:
        text = str(value)
        nul = text.find("\0")
        if nul >= 0:
            text = text[:nul]
    return text.replace("\r", " ").replace("\n", " ")


class ReplyError(Exception):
    """A client-visible error reply, named by its key in :data:`ERRORS` (resolved per profile when sent).

    >>> ReplyError("NOGROUP", key=b"s", group=b"g").render(ERRORS)
    "NOGROUP No such key 's' or consumer group 'g'"
    """

    __slots__ = ("key", "params")

    def __init__(self, key: str, /, **params: object) -> None:
        if key not in ERRORS:
            raise KeyError(f"unknown error key {key!r}")
        super().__init__(key)
        self.key = key
        self.params = params

    def render(self, table: Dict[str, str]) -> str:
        """The full error line (without ``-`` and CRLF) from ``table`` (a profile's resolved error table)."""
        text = table[self.key]
        if self.params:
            text = text.format(**{k: sanitize(v) for k, v in self.params.items()})
        return text

    def __repr__(self) -> str:
        return f"ReplyError({self.key!r}, **{self.params!r})"
