"""EVAL / EVALSHA / EVAL_RO / EVALSHA_RO, SCRIPT LOAD/EXISTS/FLUSH/KILL and the busy-script state of one server.

:class:`ScriptEngine` keeps the script cache (sha1 → body and compiled function) and the :class:`Running` record
of the script being run. A script runs in its caller's thread under the server lock; its count hook calls
:meth:`Running.interrupt` every 100,000 Lua instructions, which marks the script *busy* once it has run for
``busy-reply-threshold`` ms (alias ``lua-time-limit``; 5000 by default, CONFIG settable) and stops it when a
``SCRIPT KILL`` (or a shutdown) asked for it. Other clients wait for the lock while the script
is not busy (the server does not read them either); once it is busy the hook lets go of the lock for a moment at
each call (the server's event processing during a busy script), and every other client's command asks
:meth:`ScriptEngine.busy_reply`: the server's ``BUSY`` error, ``SCRIPT KILL`` / ``FUNCTION KILL`` answered, and
``SHUTDOWN NOSAVE`` stops the script.

Commands a script calls go through the :class:`Host` the adapter builds per command (``redis.call`` reaches the
same per-command dispatch as a client's command). Texts are the profile's: Redis 7.x or Valkey.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any, Dict, List, Optional, Protocol, Tuple

from . import convert
from .runtime import RunContext, ScriptRuntime

BUSY = "BUSY {server} is busy running a script. You can only call {kill} KILL or SHUTDOWN NOSAVE."
NOTBUSY = "NOTBUSY No scripts in execution right now."
UNKILLABLE = ("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either "
              "wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
SHUTDOWN_KILLED = "ERR Script killed by a server shutdown"
NO_CLUSTER = "ERR Can not run script on cluster, 'no-cluster' flag is set."
DEFAULT_THRESHOLD_MS = 5000
_SHEBANG_FLAGS = ("no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys")  # scripts_flags_def
class ScriptError(Exception):
    """An error reply of the command (the text, code included). ``counted`` False: the script raised or returned
    an error table of a command it called (``ignore_error_stats_update``): INFO counted that error when the
    command failed, so this reply is not counted again (a failed call of the script's command only)."""

    def __init__(self, text: str, counted: bool = True) -> None:
        super().__init__(text)
        self.text = text
        self.counted = counted


class Host(Protocol):
    """What the engine needs from the adapter for one command."""

    caller_resp: int
    #: the server is a cluster node (a script flagged ``no-cluster`` is refused; commands get the slot check)
    cluster_mode: bool

    def call(self, argv: List[bytes], read_only: bool, cross_slot: bool) -> Tuple[bool, Any, bool]:
        """Run ``argv`` as a command from the script: ``(ok, reply or error text, was a write)``. ``cross_slot``:
        the script may reach keys of several slots of a cluster node (no shebang, or ``allow-cross-slot-keys``)."""

    def set_script_resp(self, resp: Optional[int]) -> None:
        """The RESP version commands reply in inside the script (None: the caller's again)."""

    def threshold_ms(self) -> int:
        """``busy-reply-threshold`` now."""

    def yield_lock(self) -> None:
        """Busy script (count hook): let other clients take the server lock for a moment, so their commands get
        BUSY (or SCRIPT KILL runs), as the server processes events while a script is busy."""

    def set_running(self, running: bool) -> None:
        """A script starts / ends (the direct stream path steps aside while one runs)."""

    def acl_check(self, argv: List[bytes]) -> Optional[bool]:
        """``redis.acl_check_cmd``: whether the script's user may run ``argv``; None for an unknown command."""

    def reply_errors(self, errors: List[convert.ErrorValue]) -> None:
        """The script's reply holds these errors below its top level: INFO counts them (rare: the error-free
        reply never gets here)."""


class Texts:
    """The profile's script error texts (Redis 7.x, Valkey 8.0, or Valkey 9's rewritten engine: feature
    ``valkey_9_script_texts``, the texts of live Valkey 9.1.2)."""

    def __init__(self, server: str, valkey_9: bool = False) -> None:
        valkey = server == "valkey"
        self.valkey = valkey
        self.valkey_9 = valkey_9
        self.unknown = "ERR Unknown command called from script" if valkey else \
            "ERR Unknown Redis command called from script"
        self.arity = "ERR Wrong number of args calling command from script" if valkey else \
            "ERR Wrong number of args calling Redis command from script"
        self.noscript_cmd = "ERR This Redis command is not allowed from script"  # Valkey 8.0 kept Redis's word
        self.bad_arg = "ERR Command arguments must be strings or integers" if valkey else \
            "ERR Lua redis lib command arguments must be strings or integers"
        self.no_args = "ERR Please specify at least one argument for this call" if valkey else \
            "ERR Please specify at least one argument for this redis lib call"
        self.noscript = "NOSCRIPT No matching script." if valkey else "NOSCRIPT No matching script. Please use EVAL."
        self.ro_write = "ERR Write commands are not allowed from read-only scripts."
        server = "Valkey" if valkey else "Redis"
        self.busy_eval = BUSY.format(server=server, kill="SCRIPT")
        self.busy_function = BUSY.format(server=server, kill="FUNCTION")
        self.killed_eval = self.killed_function = "ERR Script killed by user with SCRIPT KILL..."
        if valkey_9:
            self.noscript_cmd = "ERR This Valkey command is not allowed from script"
            self.killed_eval = "ERR Script killed by user with SCRIPT KILL."
            self.killed_function = "ERR Script killed by user with FUNCTION KILL."

    def suffix(self, sha: str, source: bytes, line: Any) -> bytes:
        """`` script: <sha or function>, on <source>:<line>.`` (Redis 7.x and Valkey 8.0 alike); Valkey 9:
        `` script: on <source>:<line>.``."""
        where = b" script: on " if self.valkey_9 else b" script: " + sha.encode() + b", on "
        return where + source + b":" + str(line).encode() + b"."

    def unknown_engine(self, shebang_engine: bytes) -> str:
        """A script shebang naming another engine than lua (``#!x``)."""
        if self.valkey_9:
            return f"ERR Could not find scripting engine '{shebang_engine[2:].decode('utf-8', 'replace')}'"
        return f"ERR Unexpected engine in script shebang: {shebang_engine.decode('utf-8', 'replace')}"


_REDIS_TEXTS = Texts("redis")


class Script:
    __slots__ = ("body", "fn", "flags", "shebang")

    def __init__(self, body: bytes, fn: Any, flags: frozenset, shebang: bool) -> None:
        self.body = body
        self.fn = fn
        self.flags = flags
        self.shebang = shebang


class Running:
    """The script being run: who runs it, since when, whether it wrote, whether it must stop."""

    def __init__(self, engine: ScriptEngine, host: Host, is_eval: bool, name: bytes = b"",
                 argv: Optional[List[bytes]] = None) -> None:
        self.engine = engine
        self.host = host
        self.is_eval = is_eval
        self.name = name  # the function's name (FUNCTION STATS)
        self.argv = argv or []
        self.thread = threading.get_ident()
        self.started = time.monotonic()
        self.wrote = False
        self.busy = False
        self.stop_reason: Optional[str] = None
        self._threshold_ms = host.threshold_ms()

    def interrupt(self) -> Optional[str]:
        """Count hook: mark busy after the threshold (then let other clients in); the error to stop with, if
        asked to stop."""
        if not self.busy and self._threshold_ms > 0 and \
                (time.monotonic() - self.started) * 1000 >= self._threshold_ms:
            self.busy = True
        if self.busy and self.stop_reason is None:
            self.host.yield_lock()
        return self.stop_reason


def key_count(numkeys: bytes, rest: List[bytes], not_a_number: str) -> int:
    """The ``numkeys`` argument of EVAL / FCALL, checked against the arguments that follow it."""
    try:
        count = int(numkeys)
        if numkeys.strip() != numkeys or not numkeys:
            raise ValueError
    except ValueError:
        raise ScriptError(not_a_number) from None
    if count > len(rest):
        raise ScriptError("ERR Number of keys can't be greater than number of args")
    if count < 0:
        raise ScriptError("ERR Number of keys can't be negative")
    return count


def refuse_no_cluster(host: Host, flags: frozenset) -> None:
    """scriptPrepareForRun's first check: a script (or function) flagged ``no-cluster`` on a cluster node."""
    if "no-cluster" in flags and host.cluster_mode:
        raise ScriptError(NO_CLUSTER)


def sha1_of(body: bytes) -> str:
    return hashlib.sha1(body).hexdigest()


def parse_shebang(body: bytes, texts: Optional[Texts] = None) -> Tuple[Optional[frozenset], int, Optional[str]]:
    """``(flags or None for no shebang, shebang length, error)`` as evalExtractShebangFlags."""
    if not body.startswith(b"#!"):
        return None, 0, None
    end = body.find(b"\n")
    if end < 0:
        return None, 0, "ERR Invalid script shebang"
    parts = body[:end].split()
    if not parts:
        return None, 0, "ERR Invalid engine in script shebang"
    if parts[0] != b"#!lua":
        return None, 0, (texts or _REDIS_TEXTS).unknown_engine(parts[0])
    flags: set = set()
    for part in parts[1:]:
        if not part.startswith(b"flags="):
            return None, 0, f"ERR Unknown lua shebang option: {part.decode('utf-8', 'replace')}"
        for flag in part[6:].split(b","):
            if not flag:
                continue
            name = flag.decode("utf-8", "replace")
            if name not in _SHEBANG_FLAGS:
                return None, 0, f"ERR Unexpected flag in script shebang: {name}"
            flags.add(name)
    return frozenset(flags), end, None


class ScriptEngine:
    """The scripting side of one server (profile: ``server``, ``redis_version``)."""

    def __init__(self, profile: Any) -> None:
        self.profile = profile
        self.texts = Texts(profile.server, "valkey_9_script_texts" in profile.features)
        parts = [int(p) for p in profile.redis_version.split(".")]
        self._version = profile.redis_version
        self._version_num = (parts[0] << 16) | (parts[1] << 8) | parts[2]
        self._shortest_doubles = tuple(parts[:2]) >= (7, 2) or profile.server == "valkey"
        self._runtime: Optional[ScriptRuntime] = None
        self.scripts: Dict[str, Script] = {}
        self.libraries: Dict[bytes, Any] = {}  # name -> functions.Library, in load order
        self.functions: Dict[bytes, Any] = {}  # name -> functions.Function
        from .functions import FunctionCommands  # (functions.py builds on this module)

        self.function_commands = FunctionCommands(self)
        self.running: Optional[Running] = None
        self._state = threading.Lock()  # guards `running` for readers outside the server lock

    @property
    def runtime(self) -> ScriptRuntime:
        if self._runtime is None:
            self._runtime = ScriptRuntime(self._version, self._version_num, self.profile.server == "valkey")
        return self._runtime

    # -------------------------------------------------------------------------------- busy state
    def busy_reply(self, argv: List[bytes], other_client: bool = False) -> Optional[Tuple[bool, str]]:
        """Outside the server lock, before another client's command: None to run it normally, else
        ``(is_error, text)`` answered without the lock (BUSY, or the reply of SCRIPT KILL / FUNCTION KILL).
        ``other_client``: asked on the script's own thread for another client (the TCP loop's busy pass)."""
        running = self.running
        if running is None or not running.busy or (running.thread == threading.get_ident() and not other_client):
            return None
        name = argv[0].lower() if argv else b""
        sub = argv[1].lower() if len(argv) > 1 else b""
        if name in (b"script", b"function") and sub == b"kill" and len(argv) == 2:
            return self.kill(name == b"script")
        if name == b"shutdown" and any(a.lower() == b"nosave" for a in argv[1:]):
            running.stop_reason = SHUTDOWN_KILLED
            return None
        if name in (b"auth", b"hello", b"quit", b"reset") or (name == b"function" and sub == b"stats"):
            return None  # allowed while busy (they run when the script's hook lets go of the lock)
        return True, self.texts.busy_eval if running.is_eval else self.texts.busy_function

    def kill(self, is_eval: bool) -> Tuple[bool, str]:
        """SCRIPT KILL (``is_eval``) / FUNCTION KILL: ``(is_error, text)``."""
        running = self.running
        if running is None:
            return True, NOTBUSY
        if running.wrote:
            return True, UNKILLABLE
        if is_eval and not running.is_eval:
            return True, self.texts.busy_function
        if not is_eval and running.is_eval:
            return True, self.texts.busy_eval
        running.stop_reason = self.texts.killed_eval if is_eval else self.texts.killed_function
        return False, "OK"

    def abort(self) -> None:
        """Stop the running script at its next hook (server shutdown / close)."""
        running = self.running
        if running is not None:
            running.stop_reason = SHUTDOWN_KILLED

    # ---------------------------------------------------------------------------------- commands
    def script_load(self, body: bytes) -> bytes:
        return self._load(body)[0].encode()

    def script_exists(self, shas: List[bytes]) -> List[int]:
        return [int(s.decode("latin-1").lower() in self.scripts) for s in shas]

    def script_flush(self, args: List[bytes]) -> None:
        if len(args) > 1 or (args and args[0].lower() not in (b"sync", b"async")):
            raise ScriptError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
        self.scripts.clear()

    def _load(self, body: bytes) -> Tuple[str, Script]:
        sha = sha1_of(body)
        script = self.scripts.get(sha)
        if script is not None:
            return sha, script
        flags, shebang_len, problem = parse_shebang(body, self.texts)
        if problem:
            raise ScriptError(problem)
        fn, message = self.runtime.compile(body[shebang_len:])
        if fn is None:
            text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
            raise ScriptError(f"ERR Error compiling script (new function): {text}")
        script = self.scripts[sha] = Script(body, fn, flags or frozenset(), flags is not None)
        return sha, script

    def run_eval(self, host: Host, first: bytes, numkeys: bytes, rest: List[bytes], by_sha: bool, ro: bool) -> Any:
        """EVAL family. Returns the reply value (:mod:`.convert` kinds) or raises :class:`ScriptError`."""
        count = key_count(numkeys, rest, "ERR value is not an integer or out of range")
        if by_sha:
            sha = first.decode("latin-1").lower()
            script = self.scripts.get(sha)
            if script is None:
                raise ScriptError(self.texts.noscript)
        else:
            sha, script = self._load(first)
        read_only = ro or "no-writes" in script.flags
        if script.shebang:
            refuse_no_cluster(host, script.flags)
        if ro and script.shebang and "no-writes" not in script.flags:
            raise ScriptError("ERR Can not execute a script with write flag using *_ro command.")
        return self._run(host, sha, script, rest[:count], rest[count:], read_only)

    def _run(self, host: Host, sha: str, script: Any, keys: List[bytes], argv: List[bytes], read_only: bool,
             function: Any = None, command: Optional[List[bytes]] = None) -> Any:
        runtime = self.runtime
        running = Running(self, host, function is None, function.name if function else b"", command)
        # scriptPrepareForRun: an EVAL script without shebang (compatibility mode) may cross slots, as may one
        # (or a function) flagged allow-cross-slot-keys
        cross_slot = "allow-cross-slot-keys" in (script.flags if function is None else function.flags) or (
            function is None and not script.shebang)
        context: RunContext = RunContext(lambda args: self._call(runtime, running, context, args, read_only,
                                                                 cross_slot),
                                         running.interrupt, host.acl_check)
        host.set_script_resp(2)
        with self._state:
            self.running = running
        host.set_running(True)
        try:
            hooked = host.threshold_ms() > 0
            if function is None:
                ok, result = runtime.run(script.fn, context, runtime.array(keys), runtime.array(argv), hooked)
            else:
                ok, result = runtime.run(function.fn, context, None, None, hooked, runtime.array(keys),
                                         runtime.array(argv))
        finally:
            with self._state:
                self.running = None
            host.set_running(False)
            host.set_script_resp(None)
        if not ok:
            raise ScriptError(self._error_text(sha if function is None else function.name.decode("utf-8", "replace"),
                                               result),
                              runtime.lua_type(result) != "table" or convert.counted_flag(result))
        errors: List[convert.ErrorValue] = []
        reply = convert.to_reply(result, runtime.lua_type, host.caller_resp, context.resp, self._shortest_doubles,
                                 errors)
        if isinstance(reply, convert.ErrorValue):
            raise ScriptError(reply.text.decode("utf-8", "replace"), reply.counted)
        if errors:
            host.reply_errors(errors)
        return reply

    def _error_text(self, sha: str, error: Any) -> str:
        runtime = self.runtime
        if runtime.lua_type(error) != "table":
            text = error if isinstance(error, bytes) else str(error).encode()
            return "ERR Error running script " + "f_" + sha + ", " + text[:100].decode("utf-8", "replace")
        message = error[b"err"]
        if isinstance(message, (int, float)) and not isinstance(message, bool):
            message = str(message).encode()
        if not isinstance(message, bytes):
            message = b"(null)"
        source, line = error[b"source"], error[b"line"]
        if isinstance(line, float) and line.is_integer():
            line = int(line)
        out = message
        if isinstance(source, bytes) and isinstance(line, (int, bytes)):
            out += self.texts.suffix(sha, source, line.decode() if isinstance(line, bytes) else line)
        return out.replace(b"\r", b" ").replace(b"\n", b" ").decode("utf-8", "replace")

    def _call(self, runtime: ScriptRuntime, running: Running, context: RunContext, args: Tuple[Any, ...],
              read_only: bool, cross_slot: bool) -> Tuple[bool, Any]:
        """``redis.call`` / ``redis.pcall``: ``(ok, Lua value)``; on failure the value is the error table."""
        texts = self.texts
        if not args:
            return False, runtime.error_table(texts.no_args)
        argv: List[bytes] = []
        for value in args:
            if isinstance(value, bytes):
                argv.append(value)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                argv.append(convert.format_double(float(value), self._shortest_doubles)
                            if not (isinstance(value, int) or float(value).is_integer()) else b"%.17g" % value)
            else:
                return False, runtime.error_table(texts.bad_arg)
        running.host.set_script_resp(context.resp)
        ok, reply, wrote = running.host.call(argv, read_only, cross_slot)
        if wrote:
            running.wrote = True
        if not ok:
            return False, _error_table(runtime, reply)
        value = convert.to_lua(reply, runtime, context.resp)
        if isinstance(reply, convert.ErrorValue):
            return False, value
        return True, value


def _error_table(runtime: ScriptRuntime, text: Any) -> Any:
    raw = text if isinstance(text, bytes) else str(text).encode()
    table = runtime.error_table(raw.strip(b"\r\n"))
    table[b"ignore_error_stats_update"] = True
    return table
