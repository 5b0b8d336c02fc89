"""EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT LOAD/EXISTS/FLUSH/KILL, FUNCTION LOAD/DELETE/FLUSH/LIST/STATS/KILL
and FCALL/FCALL_RO served by :mod:`fake_streams.lua`
(registered in :mod:`.overrides`), and the busy-script check of another client's command (:func:`busy_answer`).

The server's :class:`~fake_streams.lua.engine.ScriptEngine` lives on fakeredis's ``FakeServer``
(``_sf_scripts``). :class:`SocketHost` runs a script's ``redis.call`` as fakeredis runs one: the name through
the socket's ``_name_to_func`` (so stream commands reach the engine, overrides apply) and ``_run_command`` with
``from_script=True``; the script's RESP mode is fakeredis's ``_script_resp``. On a cluster node each command also
passes the slot check of a script's command (:func:`.cluster.script_refusal`).

INFO counts as the server does (measured on Redis 7.0.15 and Valkey 9.1.2): a command the script calls counts
its own call and error when it runs (``_run_command``); one refused before it runs (unknown, arity, no-script,
ACL, read-only, cluster) counts the error and, when the command exists, a rejected call of it; an error table
marked ``ignore_error_stats_update`` (what redis.call / redis.pcall give) that the script raises or returns is
a failed call of the script's command but no new error (:class:`UncountedError`); the errors inside an array
or map reply count as :meth:`SocketHost.reply_errors` says.
"""

from __future__ import annotations

import functools
import time
import traceback
from typing import Any, Callable, List, Optional, Tuple

from ..info import command_stat_name
from ..lua import convert
from ..lua.engine import ScriptEngine, ScriptError
from ..reply import Status
from . import auth, cluster, replica
from .compat import COMMANDS_WITH_SUB, SimpleError, SimpleString, get_command_info
from .overrides import override, signature

try:
    from fakeredis.model import is_write_command
except ImportError:  # fakeredis 2.37: none, but its command table has the flags (EVAL_RO, FCALL_RO refuse writes)

    def is_write_command(cmd: bytes) -> bool:  # type: ignore[misc]
        flags = (get_command_info(cmd) or (None, None, ()))[2]
        return b"write" in flags

_NO_SCRIPT = "s"  # fakeredis's FLAG_NO_SCRIPT
#: fakeredis's blocking commands; Redis 7.0 refuses all but BLMPOP/BZMPOP in scripts (NOSCRIPT), 7.2+ and
#: Valkey 8.0 none (commands/*.json)
_BLOCKING = frozenset({"blpop", "brpop", "brpoplpush", "blmove", "bzpopmin", "bzpopmax", "blmpop", "bzmpop"})
_BLOCKING_IN_7_0 = frozenset({"blmpop", "bzmpop"})


def _blocking_allowed(name: str, profile: Any) -> bool:
    return name in _BLOCKING_IN_7_0 or profile.server == "valkey" or \
        tuple(int(p) for p in profile.redis_version.split(".")[:2]) >= (7, 2)


#: commands whose RESP3 reply is a set (fakeredis builds a list for them)
_SET_REPLIES = frozenset({"smembers", "sinter", "sunion", "sdiff"})


class _SetReply(list):
    """A RESP3 set reply (its members in fakeredis's order)."""

    resp3_set = True


def engine_of(fake: Any, profile: Any) -> ScriptEngine:
    """The scripting engine of fakeredis server ``fake`` (made on first use)."""
    engine = getattr(fake, "_sf_scripts", None)
    if engine is None:
        engine = fake._sf_scripts = ScriptEngine(profile)
    return engine


def running_engine(fake: Any) -> Optional[ScriptEngine]:
    """The engine if a script runs now (any thread), else None. O(1); no lock."""
    engine = getattr(fake, "_sf_scripts", None)
    return engine if engine is not None and engine.running is not None else None


def _engine(sock: Any) -> ScriptEngine:
    return engine_of(sock._server, sock._sf_session.server.profile)


class UncountedError(SimpleError):
    """The error reply of a script's command that INFO errorstats and ``total_error_replies`` skip
    (``ERR_REPLY_FLAG_NO_STATS_UPDATE``): the command still counts a failed call."""


class SocketHost:
    """:class:`fake_streams.lua.engine.Host` over one fakeredis socket; ``stat_name``: the script's command as
    INFO commandstats names it (``eval``, ``fcall_ro`` …)."""

    def __init__(self, sock: Any, stat_name: str) -> None:
        self.sock = sock
        self.stat_name = stat_name
        self.caller_resp = int(sock._client_info.protocol_version)
        self.cluster_mode = sock._sf_session.server.cluster_node is not None
        self.slot = getattr(sock, "_sf_slot", -1)  # a cluster node's script: its slot (run_ctx->slot = caller's)

    def set_script_resp(self, resp: Optional[int]) -> None:
        self.sock._script_resp = resp

    def yield_lock(self) -> None:
        lock = self.sock._server.lock
        wire = getattr(self.sock, "_sf_wire", None)  # a TCP client's script runs on the TCP loop's thread
        lock.release()
        try:
            if wire is not None and wire.owner.on_loop_thread():
                wire.owner.serve_while_busy(wire)  # the loop's other clients get BUSY meanwhile (≤ 1 ms)
            else:
                time.sleep(0.001)  # real-time: a busy script lets waiting clients take the lock (their BUSY replies)
        finally:
            lock.acquire()

    def set_running(self, running: bool) -> None:
        self.sock._server._sf_script_running = running

    def reply_errors(self, errors: List[convert.ErrorValue]) -> None:
        """Errors inside the script's reply (addReplyErrorFormatEx per item): one marked not to count is a failed
        call of the script's command each; the others count in errorstats, and the command fails once more if
        any did (call()'s check that the error count moved). O(len(errors))."""
        stats = self.sock._sf_session.server.stats
        stat = stats.command(self.stat_name)
        counted = False
        for found in errors:
            if found.counted:
                stats.error_reply(found.text.decode("utf-8", "replace"))
                counted = True
            else:
                stat.failed += 1
        if counted:
            stat.failed += 1

    def _refused(self, stat_name: Optional[str], text: str) -> Tuple[bool, Any, bool]:
        """scriptCall's error path: a command refused before it ran counts its error (errorstats,
        ``total_error_replies``) and, if the command exists (``stat_name``), a rejected call of it."""
        self.sock._sf_session.server.stats.rejected(stat_name, text)
        return False, text, False

    def acl_check(self, argv: List[bytes]) -> Optional[bool]:
        sock = self.sock
        name, _ = self._command_name(argv)
        try:
            func, _ = sock._name_to_func(name)
        except SimpleError:
            return None
        if func is None:
            return None
        return auth.gate(sock, argv, name, sock._sf_session.server.profile) is None

    @staticmethod
    def _command_name(argv: List[bytes]) -> Tuple[str, List[bytes]]:
        """fakeredis's name for ``argv`` (a container joined with its subcommand) and the arguments after it."""
        name = argv[0].decode("utf-8", "replace").lower()
        args = argv[1:]
        if name in COMMANDS_WITH_SUB and args:
            name += " " + args[0].decode("utf-8", "replace").lower()
            args = args[1:]
        return name, args

    def threshold_ms(self) -> int:
        config = getattr(self.sock._server, "config", {})
        for name in (b"busy-reply-threshold", b"lua-time-limit"):
            raw = config.get(name)
            if raw is not None:
                try:
                    return int(raw)
                except (TypeError, ValueError):
                    break
        return 5000

    def call(self, argv: List[bytes], read_only: bool, cross_slot: bool) -> Tuple[bool, Any, bool]:
        sock = self.sock
        texts = _engine(sock).texts
        name, args = self._command_name(argv)
        sock._sf_script_argv = argv[:2]
        try:
            func, sig = sock._name_to_func(name)
        except SimpleError as exc:  # Valkey 9.1 names an unknown subcommand with the command's own error
            named = str(exc.value).startswith("ERR unknown subcommand")
            return self._refused(None, str(exc.value) if named else texts.unknown)
        if func is None:
            return self._refused(None, texts.unknown)
        stat_name = command_stat_name(sig.name, args)
        try:
            sig.check_arity(args, sock.version)
        except SimpleError:
            return self._refused(stat_name, texts.arity)
        blocking = name in _BLOCKING
        profile = sock._sf_session.server.profile
        if _NO_SCRIPT in sig.flags and not (blocking and _blocking_allowed(name, profile)):
            return self._refused(stat_name, texts.noscript_cmd)
        refusal = auth.gate(sock, argv, name, profile)
        if refusal is not None:  # scriptVerifyACL
            text = _script_acl_text(refusal, profile)
            sock._sf_session.server.stats.rejected(  # Valkey 9.1 counts it as the NOPERM it is at the top level
                stat_name, "NOPERM" if profile.has("script_acl_counts_noperm") else text)
            return False, text, False
        write = is_write_command(sig.name.replace(" ", "|").encode()) or is_write_command(sig.name.encode())
        if read_only and write:
            return self._refused(stat_name, texts.ro_write)
        readonly = replica.script_write_refused(sock, argv) if sock._sf_session.server.replication else None
        if readonly is not None:  # scriptVerifyWriteCommandAllow: a read-only replica (counted as the write check is)
            return self._refused(stat_name, readonly)
        if self.cluster_mode:  # scriptVerifyClusterState (after the write checks: a refused write still counts)
            refusal = cluster.script_refusal(sock, argv, name, cross_slot, self)
            if refusal is not None:
                return self._refused(stat_name, refusal)[:2] + (write,)
        if blocking:  # from a script a blocking command never blocks: it answers as if its timeout had passed
            saved, sock._in_transaction = sock._in_transaction, True  # fakeredis's _blocking returns at once then
            try:  # (from_script=False: fakeredis's own no-script flag was judged above, by the profile's rule)
                result = _run_in_script_resp(sock, func, sig, list(args), False)
            finally:
                sock._in_transaction = saved
        else:
            result = _run_in_script_resp(sock, func, sig, list(args), True)
        if sock._script_resp == 3 and isinstance(result, list) and name in _SET_REPLIES:
            result = _SetReply(result)  # fakeredis answers a list where the server sends a RESP3 set
        if isinstance(result, SimpleError):
            return False, result.value.encode() if isinstance(result.value, str) else result.value, write
        return True, _from_fakeredis(result), write


def _run_in_script_resp(sock: Any, func: Any, sig: Any, args: List[bytes], from_script: bool) -> Any:
    """fakeredis's ``_run_command`` with the reply in the script's RESP mode (``redis.setresp``). fakeredis >= 2.39
    follows the mode itself (``_resp_version``); 2.37 converts by the client's protocol only, so the client info
    lends it the script's for the call. O(1) around the command."""
    if hasattr(type(sock), "_resp_version"):
        return sock._run_command(func, sig, args, from_script)
    info = sock._client_info
    saved = info.get("resp", 2)
    info["resp"] = sock._script_resp or 2
    try:
        return sock._run_command(func, sig, args, from_script)
    finally:
        info["resp"] = saved


_ACL_7_0 = {  # Redis 7.0's getAclErrorMessage, after "The user executing the script "
    "this user has no permissions to run the": "can't run this command or subcommand",
    "this user has no permissions to access one of the keys": "can't access at least one of the keys mentioned in the "
                                                               "command arguments",
    "this user has no permissions to access one of the channels": "can't publish to the channel mentioned in the "
                                                                   "command",
}


def _script_acl_text(refusal: str, profile: Any) -> str:
    """The script's error for a command its user may not run (``auth.gate``'s NOPERM text at the top level)."""
    text = refusal[len("NOPERM "):] if refusal.startswith("NOPERM ") else refusal
    if profile.name == "7.0":
        for start, reason in _ACL_7_0.items():
            if text.startswith(start):
                return "ERR The user executing the script " + reason
    return "ERR ACL failure in script: " + text


def _from_fakeredis(value: Any) -> Any:
    """fakeredis reply values → :mod:`fake_streams.lua.convert`'s (errors and simple strings marked)."""
    if isinstance(value, SimpleError):
        return convert.ErrorValue(value.value.encode() if isinstance(value.value, str) else value.value)
    if isinstance(value, SimpleString):
        return Status(value.value if isinstance(value.value, bytes) else str(value.value).encode())
    if isinstance(value, list):
        return type(value)(_from_fakeredis(item) for item in value)  # a _SetReply stays one
    return value


def to_fakeredis(value: Any, sock: Any = None) -> Any:
    """A script reply → fakeredis values (Status → SimpleString, errors → SimpleError, recursively). fakeredis
    decodes errors at the top and in arrays only: an error inside a map is decoded here for an in-process
    client (a TCP client's encoder takes SimpleErrors anywhere)."""
    if isinstance(value, Status):
        return SimpleString(value.value)
    if isinstance(value, convert.ErrorValue):
        return SimpleError(value.text.decode("utf-8", "replace"))
    if isinstance(value, list):
        return [to_fakeredis(item, sock) for item in value]
    if isinstance(value, dict):
        in_process = sock is not None and getattr(sock, "_sf_wire", None) is None
        items = {}
        for k, v in value.items():
            v = to_fakeredis(v, sock)
            items[to_fakeredis(k, sock)] = sock._decode_result(v) if in_process and isinstance(v, SimpleError) else v
        return items
    return value


def _guarded(sock: Any, run: Callable[[], Any]) -> Any:
    """Run a scripting command: its error reply as fakeredis's; a bug of ours recorded in the server's
    ``internal_errors`` and answered with an error reply (never a Python exception out of the client call)."""
    try:
        return run()
    except ScriptError as exc:
        raise (SimpleError if exc.counted else UncountedError)(exc.text) from None
    except Exception as exc:
        server = sock._sf_session.server
        fields = [bytes(f) for f in (sock._sf_fields or [])]
        command = fields[0].decode("latin-1").lower() if fields else "?"
        server.internal_errors.append((command, fields[1:], traceback.format_exc()))
        raise SimpleError(f"ERR fake_streams internal error in '{command}': {type(exc).__name__}: {exc}") from None


def eval_command(sock: Any, name: str, by_sha: bool, ro: bool, first: bytes, numkeys: bytes, *rest: bytes) -> Any:
    host = SocketHost(sock, name)
    return to_fakeredis(_guarded(sock, lambda: _engine(sock).run_eval(host, first, numkeys, list(rest), by_sha, ro)), sock)


for _name, _by_sha, _ro in (("eval", False, False), ("evalsha", True, False), ("eval_ro", False, True),
                            ("evalsha_ro", True, True)):
    def _lookup(sock: Any, name: str, base: Any, _by_sha: bool = _by_sha, _ro: bool = _ro,
                _stat: str = _name) -> Tuple[Any, Any]:
        return functools.partial(eval_command, sock, _stat, _by_sha, _ro), signature(name, fixed=2, variadic=True,
                                                                             flags=_NO_SCRIPT)
    override(_name)(_lookup)


@override("script load")
def _script_load(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    return (lambda body: _guarded(sock, lambda: _engine(sock).script_load(body))), signature(name, 1, flags=_NO_SCRIPT)


@override("script exists")
def _script_exists(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    return (lambda *shas: _guarded(sock, lambda: _engine(sock).script_exists(list(shas)))), \
        signature(name, 1, True, flags=_NO_SCRIPT)


def _ok_after(sock: Any, run: Callable[..., Any]) -> Callable[..., Any]:
    """A command that replies +OK once ``run(*args)`` succeeded."""
    def command(*args: bytes) -> Any:
        _guarded(sock, lambda: run(*args))
        return SimpleString(b"OK")
    return command


@override("script flush")
def _script_flush(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    return _ok_after(sock, lambda *args: _engine(sock).script_flush(list(args))), signature(name, 0, True, _NO_SCRIPT)


@override("script kill")
def _script_kill(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    return functools.partial(_kill, sock, True), signature(name, 0, flags=_NO_SCRIPT)


@override("function kill")
def _function_kill(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    return functools.partial(_kill, sock, False), signature(name, 0, flags=_NO_SCRIPT)


def _functions(sock: Any) -> Any:
    return _engine(sock).function_commands


@override("function load")
def _function_load(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    return (lambda *args: _guarded(sock, lambda: _functions(sock).load(list(args)))), signature(name, 1, True, _NO_SCRIPT)


@override("function delete")
def _function_delete(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    return _ok_after(sock, lambda library: _functions(sock).delete(library)), signature(name, 1, flags=_NO_SCRIPT)


@override("function flush")
def _function_flush(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    return _ok_after(sock, lambda *args: _functions(sock).flush(list(args))), signature(name, 0, True, _NO_SCRIPT)


@override("function list")
def _function_list(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    return (lambda *args: _guarded(sock, lambda: _functions(sock).list(list(args), _resp(sock)))), \
        signature(name, 0, True, flags=_NO_SCRIPT)


@override("function dump")
def _function_dump(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    return (lambda: _guarded(sock, lambda: _functions(sock).dump())), signature(name, 0, flags=_NO_SCRIPT)


@override("function restore")
def _function_restore(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    def restore(payload: bytes, *policy: bytes) -> Any:
        if len(policy) > 1:  # addReplySubcommandSyntaxError
            typed = bytes((sock._sf_fields or [b"", b"restore"])[1])[:128].decode("utf-8", "replace")
            raise SimpleError(f"ERR unknown subcommand or wrong number of arguments for '{typed}'. Try FUNCTION HELP.")
        return _ok_after(sock, lambda: _functions(sock).restore(payload, policy[0] if policy else b"append"))()
    return restore, signature(name, 1, True, flags=_NO_SCRIPT)


@override("function stats")
def _function_stats(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    return (lambda: _guarded(sock, lambda: _functions(sock).stats(_resp(sock)))), signature(name, 0, flags=_NO_SCRIPT)


def _resp(sock: Any) -> int:
    return int(sock._client_info.protocol_version)


def fcall_command(sock: Any, ro: bool, function: bytes, numkeys: bytes, *rest: bytes) -> Any:
    host = SocketHost(sock, "fcall_ro" if ro else "fcall")
    command = [bytes(f) for f in (sock._sf_fields or [])]
    return to_fakeredis(_guarded(sock, lambda: _functions(sock).fcall(host, function, numkeys, list(rest), ro,
                                                                      command)), sock)


@override("fcall")
def _fcall(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    return functools.partial(fcall_command, sock, False), signature(name, 2, True, flags=_NO_SCRIPT)


@override("fcall_ro")
def _fcall_ro(sock: Any, name: str, base: Any) -> Tuple[Any, Any]:
    return functools.partial(fcall_command, sock, True), signature(name, 2, True, flags=_NO_SCRIPT)


def _kill(sock: Any, is_eval: bool) -> Any:
    is_error, text = _engine(sock).kill(is_eval)
    if is_error:
        raise SimpleError(text)
    return SimpleString(text.encode())


def busy_answer(sock: Any, fields: Any, other_client: bool = False) -> Optional[Any]:
    """Another client's command while a script is busy (before the lock, and again once it has the lock):
    None to run it, else its reply (SimpleError BUSY …, or SCRIPT KILL's answer). O(1) when no script runs.
    ``other_client``: asked on the script's own thread (the TCP loop serving its other clients meanwhile)."""
    engine = getattr(sock._server, "_sf_scripts", None)
    if engine is None or engine.running is None or not fields:
        return None
    verdict = engine.busy_reply([bytes(f) for f in fields], other_client)
    if verdict is None:
        return None
    is_error, text = verdict
    return SimpleError(text) if is_error else SimpleString(text.encode())


def script_counts(fake: Any) -> Tuple[int, int, int]:
    """INFO's ``number_of_cached_scripts``, ``number_of_functions``, ``number_of_libraries``. O(1)."""
    engine = getattr(fake, "_sf_scripts", None)
    if engine is None:
        return 0, 0, 0
    return len(engine.scripts), len(engine.functions), len(engine.libraries)


def abort_scripts(fake: Any) -> None:
    """Server shutdown: a running script stops at its next count hook (even one that wrote)."""
    engine = getattr(fake, "_sf_scripts", None)
    if engine is not None:
        engine.abort()
