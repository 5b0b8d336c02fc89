"""A fake sentinel's settings and the SENTINEL subcommands that read or change them, as Redis 7.0's sentinel answers
them: ``SET`` (the master's quorum, down-after-milliseconds, failover-timeout, parallel-syncs), ``DEBUG`` (the
sentinel's periods), ``CONFIG GET / SET``, ``SIMULATE-FAILURE``, ``MONITOR`` / ``REMOVE`` (their checks),
``IS-MASTER-DOWN-BY-ADDR`` (asked with ``*``) and ``HELP``.

Errors are raised as :class:`~fake_streams.topology.sentinel_replies.SentinelError` with the sentinel's text.
Not emulated (an error says so): watching a second master (MONITOR of a valid new master), REMOVE of the one watched,
SET of the script / auth / rename options, leader votes (IS-MASTER-DOWN-BY-ADDR with a run id).
"""

from __future__ import annotations

import fnmatch
import ipaddress
from typing import Any, Dict, List, Optional, Sequence

from ..reply import Status

OK = Status(b"OK")

#: SENTINEL DEBUG's parameters and their defaults (milliseconds), in the order the sentinel lists them
DEBUG_DEFAULTS = (("INFO-PERIOD", 10000), ("PING-PERIOD", 1000), ("ASK-PERIOD", 1000), ("PUBLISH-PERIOD", 2000),
                  ("DEFAULT-DOWN-AFTER", 30000), ("DEFAULT-FAILOVER-TIMEOUT", 180000), ("TILT-TRIGGER", 2000),
                  ("TILT-PERIOD", 30000), ("SLAVE-RECONF-TIMEOUT", 10000), ("MIN-LINK-RECONNECT-PERIOD", 15000),
                  ("ELECTION-TIMEOUT", 10000), ("SCRIPT-MAX-RUNTIME", 60000), ("SCRIPT-RETRY-DELAY", 30000))
#: SENTINEL CONFIG's parameters and their defaults, in the order CONFIG GET lists them
CONFIG_DEFAULTS = (("resolve-hostnames", "no"), ("announce-hostnames", "no"), ("announce-ip", ""),
                   ("announce-port", "0"), ("sentinel-user", ""), ("sentinel-pass", ""))
_YES_NO = frozenset({"resolve-hostnames", "announce-hostnames"})
#: SENTINEL SET options the fake keeps (each a positive integer)
_NUMERIC = ("quorum", "down-after-milliseconds", "failover-timeout", "parallel-syncs")
_NOT_EMULATED_SET = frozenset({"notification-script", "client-reconfig-script", "auth-pass", "auth-user",
                               "rename-command", "master-reboot-down-after-period"})
#: SIMULATE-FAILURE's flags (SENTINEL_SIMFAILURE_CRASH_AFTER_ELECTION / _PROMOTION)
CRASH_AFTER_ELECTION, CRASH_AFTER_PROMOTION = 1, 2
_SIMULATIONS = {"crash-after-election": CRASH_AFTER_ELECTION, "crash-after-promotion": CRASH_AFTER_PROMOTION}

#: SENTINEL HELP, Redis 7.0.15
HELP = [
    "SENTINEL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CKQUORUM <master-name>",
    "    Check if the current Sentinel configuration is able to reach the quorum",
    "    needed to failover a master and the majority needed to authorize the",
    "    failover.",
    "CONFIG SET <param> <value>", "    Set a global Sentinel configuration parameter.",
    "CONFIG GET <param>", "    Get global Sentinel configuration parameter.",
    "DEBUG [<param> <value> ...]",
    "    Show a list of configurable time parameters and their values (milliseconds).",
    "    Or update current configurable parameters values (one or more).",
    "GET-MASTER-ADDR-BY-NAME <master-name>", "    Return the ip and port number of the master with that name.",
    "FAILOVER <master-name>",
    "    Manually failover a master node without asking for agreement from other", "    Sentinels",
    "FLUSHCONFIG",
    "    Force Sentinel to rewrite its configuration on disk, including the current", "    Sentinel state.",
    "INFO-CACHE <master-name>", "    Return last cached INFO output from masters and all its replicas.",
    "IS-MASTER-DOWN-BY-ADDR <ip> <port> <current-epoch> <runid>",
    "    Check if the master specified by ip:port is down from current Sentinel's", "    point of view.",
    "MASTER <master-name>", "    Show the state and info of the specified master.",
    "MASTERS", "    Show a list of monitored masters and their state.",
    "MONITOR <name> <ip> <port> <quorum>",
    "    Start monitoring a new master with the specified name, ip, port and quorum.",
    "MYID", "    Return the ID of the Sentinel instance.",
    "PENDING-SCRIPTS", "    Get pending scripts information.",
    "REMOVE <master-name>", "    Remove master from Sentinel's monitor list.",
    "REPLICAS <master-name>", "    Show a list of replicas for this master and their state.",
    "RESET <pattern>", "    Reset masters for specific master name matching this pattern.",
    "SENTINELS <master-name>", "    Show a list of Sentinel instances for this master and their state.",
    "SET <master-name> <option> <value> [<option> <value> ...]",
    "    Set configuration parameters for certain masters.",
    "SIMULATE-FAILURE [CRASH-AFTER-ELECTION] [CRASH-AFTER-PROMOTION] [HELP]", "    Simulate a Sentinel crash.",
    "HELP", "    Prints this help.",
]

#: SENTINEL HELP, Valkey 9.1.2 (the "primary" words, FAILOVER … COORDINATED, CONFIG of several parameters)
VALKEY_HELP = [
    "SENTINEL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CKQUORUM <primary-name>",
    "    Check if the current Sentinel configuration is able to reach the quorum",
    "    needed to failover a primary and the majority needed to authorize the",
    "    failover.",
    "CONFIG SET param value [param value ...]", "    Set a global Sentinel configuration parameter.",
    "CONFIG GET <param> [param param param ...]", "    Get global Sentinel configuration parameter.",
    "DEBUG [<param> <value> ...]",
    "    Show a list of configurable time parameters and their values (milliseconds).",
    "    Or update current configurable parameters values (one or more).",
    "GET-PRIMARY-ADDR-BY-NAME <primary-name>", "    Return the ip and port number of the primary with that name.",
    "FAILOVER <primary-name> [COORDINATED]",
    "    Manually failover a primary node without asking for agreement from other", "    Sentinels",
    "FLUSHCONFIG",
    "    Force Sentinel to rewrite its configuration on disk, including the current", "    Sentinel state.",
    "INFO-CACHE <primary-name>", "    Return last cached INFO output from primaries and all its replicas.",
    "IS-PRIMARY-DOWN-BY-ADDR <ip> <port> <current-epoch> <runid>",
    "    Check if the primary specified by ip:port is down from current Sentinel's", "    point of view.",
    "PRIMARY <primary-name>", "    Show the state and info of the specified primary.",
    "PRIMARIES", "    Show a list of monitored primaries and their state.",
    "MONITOR <name> <ip> <port> <quorum>",
    "    Start monitoring a new primary with the specified name, ip, port and quorum.",
    "MYID", "    Return the ID of the Sentinel instance.",
    "PENDING-SCRIPTS", "    Get pending scripts information.",
    "REMOVE <primary-name>", "    Remove primary from Sentinel's monitor list.",
    "REPLICAS <primary-name>", "    Show a list of replicas for this primary and their states.",
    "RESET <pattern>", "    Reset primaries for specific primary name matching this pattern.",
    "SENTINELS <primary-name>", "    Show a list of Sentinel instances for this primary and their state.",
    "SET <primary-name> <option> <value> [<option> <value> ...]",
    "    Set configuration parameters for certain primaries.",
    "SIMULATE-FAILURE [CRASH-AFTER-ELECTION] [CRASH-AFTER-PROMOTION] [HELP]", "    Simulate a Sentinel crash.",
    "HELP", "    Print this help.",
]
#: Valkey's sentinel CONFIG has a log level too
VALKEY_CONFIG_DEFAULTS = CONFIG_DEFAULTS + (("loglevel", "notice"),)
_LOG_LEVELS = ("debug", "verbose", "notice", "warning", "nothing")

NOT_INTEGER = "ERR value is not an integer or out of range"


class SentinelSettings:
    """What a sentinel was configured with (besides the quorum, kept by the sentinel itself)."""

    def __init__(self, valkey: bool = False) -> None:
        self.valkey = valkey
        self.down_after_ms = 30000
        self.failover_timeout_ms = 180000
        self.parallel_syncs = 1
        self.debug: Dict[str, int] = dict(DEBUG_DEFAULTS)
        self.config: Dict[str, str] = dict(VALKEY_CONFIG_DEFAULTS if valkey else CONFIG_DEFAULTS)
        #: SIMULATE-FAILURE's flags (INFO ``sentinel_simulate_failure_flags``)
        self.simulate_failure = 0


def _error(text: str) -> Exception:
    from .sentinel_replies import SentinelError

    return SentinelError(text)


def _text(raw: bytes) -> str:
    return bytes(raw).decode("utf-8", "replace")


def _int(raw: bytes) -> Optional[int]:
    """A long long as the server parses one (string2ll), or None."""
    text = _text(raw)
    if not text or text != text.strip() or text.startswith("+") or (len(text) > 1 and text.lstrip("-")[:1] == "0"):
        return None
    try:
        return int(text)
    except ValueError:
        return None


def set_command(sentinel: Any, args: Sequence[bytes]) -> Any:
    """``SENTINEL SET <name> <option> <value> …`` on the watched master (the name was checked): each pair applied
    in order, as the sentinel does (a bad pair answers its error, the pairs before it stay applied)."""
    settings = sentinel.settings
    i = 0
    while i < len(args):
        option = _text(args[i])
        name = option.lower()
        if name in _NOT_EMULATED_SET:
            raise _error(f"ERR fake-redis-streams: SENTINEL SET {option} is not emulated")
        if name not in _NUMERIC or i + 1 >= len(args):
            raise _error(f"ERR Unknown option or number of arguments for SENTINEL SET '{option}'")
        value = _int(args[i + 1])
        if value is None or value <= 0:
            raise _error(f"ERR Invalid argument '{_text(args[i + 1])}' for SENTINEL SET '{option}'")
        if name == "quorum":
            sentinel.quorum = value
        elif name == "down-after-milliseconds":
            settings.down_after_ms = value
        elif name == "failover-timeout":
            settings.failover_timeout_ms = value
        else:
            settings.parallel_syncs = value
        i += 2
    return OK


def debug_command(sentinel: Any, args: Sequence[bytes]) -> Any:
    """``SENTINEL DEBUG [<param> <value> …]``: the periods (a map of bulk strings), or set some."""
    settings = sentinel.settings
    if not args:
        return {name.encode(): str(value).encode() for name, value in settings.debug.items()}
    i = 0
    while i < len(args):
        param = _text(args[i])
        name = param.upper()
        if name not in settings.debug or i + 1 >= len(args):
            raise _error(f"ERR Unknown option or number of arguments for SENTINEL DEBUG '{param}'")
        value = _int(args[i + 1])
        if value is None or value <= 0:
            raise _error(f"ERR Invalid argument '{_text(args[i + 1])}' for SENTINEL DEBUG '{param}'")
        settings.debug[name] = value
        i += 2
    return OK


def config_command(sentinel: Any, args: Sequence[bytes]) -> Any:
    """``SENTINEL CONFIG GET <pattern>`` / ``SET <option> <value>`` (Valkey: several patterns / pairs)."""
    settings = sentinel.settings
    verb = _text(args[0]).lower() if args else ""
    many = settings.valkey
    if verb == "get" and (len(args) == 2 or (many and len(args) > 2)):
        out: Dict[bytes, bytes] = {}
        for pattern in (_text(a).lower() for a in args[1:]):  # each pattern's matches in table order, once each
            for k, v in settings.config.items():
                if fnmatch.fnmatchcase(k, pattern):
                    out.setdefault(k.encode(), v.encode())
        return out
    if verb == "set" and (len(args) == 3 or (many and len(args) > 3 and len(args) % 2 == 1)):
        for option_raw, value_raw in zip(args[1::2], args[2::2]):
            _config_set(settings, _text(option_raw), _text(value_raw))
        return OK
    if many:
        raise _error("ERR Only SENTINEL CONFIG GET <param> [<param> <param> ...] / SET <param> <value> "
                     "[<param> <value> ...] are supported.")
    raise _error("ERR Only SENTINEL CONFIG GET <option> / SET <option> <value> are supported.")


def _config_set(settings: SentinelSettings, option: str, value: str) -> None:
    name = option.lower()
    if name not in settings.config:
        raise _error(f"ERR Invalid argument '{option}' to SENTINEL CONFIG SET")
    invalid = _error(f"ERR Invalid value '{value}' to SENTINEL CONFIG SET '{option}'")
    if name in _YES_NO:
        if value.lower() not in ("yes", "no"):
            raise invalid
        value = value.lower()
    elif name == "loglevel":
        if value.lower() not in _LOG_LEVELS:
            raise invalid
        value = value.lower()
    elif name == "announce-port":
        port = _int(value.encode())
        if port is None or not 0 <= port <= 65535:
            raise invalid
    settings.config[name] = value


def simulate_failure(sentinel: Any, args: Sequence[bytes]) -> Any:
    """``SENTINEL SIMULATE-FAILURE <flag> …``: the crash flags a failover honours (``HELP`` lists them); with
    ``crash-after-election`` the next failover stops after ``+elected-leader`` and the sentinel exits."""
    flags = 0
    for raw in args:
        name = _text(raw).lower()
        if name == "help":
            return [b"crash-after-election", b"crash-after-promotion"]
        if name not in _SIMULATIONS:
            raise _error("ERR Unknown failure simulation specified")
        if _SIMULATIONS[name] == CRASH_AFTER_PROMOTION:  # two masters at once: a replication group has one
            raise _error("ERR fake-redis-streams: SENTINEL SIMULATE-FAILURE crash-after-promotion is not emulated")
        flags |= _SIMULATIONS[name]
    sentinel.settings.simulate_failure = flags
    return OK


def monitor_checks(sentinel: Any, args: Sequence[bytes]) -> Any:
    """``SENTINEL MONITOR <name> <ip> <port> <quorum>``: the sentinel's checks; a valid new master is not
    emulated (one fake sentinel watches one master)."""
    name, host, port_raw, quorum_raw = (bytes(a) for a in args)
    quorum = _int(quorum_raw)
    if quorum is None:
        raise _error("ERR Invalid quorum")
    port = _int(port_raw)
    if port is None:
        raise _error("ERR Invalid port")
    if quorum <= 0:
        raise _error("ERR Quorum must be 1 or greater.")
    try:
        ipaddress.ip_address(_text(host))
    except ValueError:
        raise _error("ERR Invalid IP address or hostname specified") from None
    if name == sentinel.master_name.encode():
        raise _error("ERR Duplicate master name.")
    raise _error("ERR fake-redis-streams: SENTINEL MONITOR of a second master is not emulated (a FakeSentinel "
                 "watches one master)")


def is_master_down(sentinel: Any, args: Sequence[bytes]) -> List[Any]:
    """``SENTINEL IS-MASTER-DOWN-BY-ADDR <ip> <port> <epoch> <runid>`` asked with ``*`` (no vote): the master is
    up as far as this sentinel sees it."""
    if _int(bytes(args[1])) is None or _int(bytes(args[2])) is None:
        raise _error(NOT_INTEGER)
    if bytes(args[3]) != b"*":
        raise _error("ERR fake-redis-streams: SENTINEL IS-MASTER-DOWN-BY-ADDR with a run id (a leader vote) is not "
                     "emulated")
    return [0, b"*", 0]


__all__ = ["CONFIG_DEFAULTS", "VALKEY_CONFIG_DEFAULTS", "VALKEY_HELP", "CRASH_AFTER_ELECTION", "CRASH_AFTER_PROMOTION", "DEBUG_DEFAULTS", "HELP",
           "SentinelSettings", "config_command", "debug_command", "is_master_down", "monitor_checks", "set_command",
           "simulate_failure"]
