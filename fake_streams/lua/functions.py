"""FUNCTION LOAD [REPLACE] / DELETE / FLUSH / LIST / STATS / DUMP / RESTORE and FCALL / FCALL_RO on a
:class:`~fake_streams.lua.engine.ScriptEngine` (functions.c, function_lua.c).

A library's code runs once at load time with the load API only (``redis.register_function``, ``redis.log``, the
versions; 500 ms at most); the functions it registers run later in the functions engine's own globals (no KEYS /
ARGV). Libraries and functions keep their load order (the servers list them in their hash order, random per
process).
"""

from __future__ import annotations

import fnmatch
import time
from typing import Any, Dict, List, Optional, Tuple

from . import dump
from .engine import _SHEBANG_FLAGS, Host, ScriptEngine, ScriptError, key_count, refuse_no_cluster

LOAD_TIMEOUT_S = 0.5  # FUNCTION LOAD's own limit
_NAME_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
BAD_LIBRARY_NAME = ("Library names can only contain letters, numbers, or underscores(_) and must be at least one "
                    "character long")
#: Valkey 9.1.2's register-time errors of FUNCTION LOAD, answered without the "Error registering functions" frame
_VALKEY_9_REGISTER_TEXTS = {
    BAD_LIBRARY_NAME: BAD_LIBRARY_NAME.replace("Library names", "Function names"),
    "Function already exists in the library": "Function already exists in the library",
}


class Function:
    __slots__ = ("name", "fn", "description", "flags", "library")

    def __init__(self, name: bytes, fn: Any, description: Optional[bytes], flags: frozenset, library: bytes) -> None:
        self.name = name
        self.fn = fn
        self.description = description
        self.flags = flags
        self.library = library


class Library:
    __slots__ = ("name", "code", "functions")

    def __init__(self, name: bytes, code: bytes) -> None:
        self.name = name
        self.code = code
        self.functions: Dict[bytes, Function] = {}


def valid_name(name: bytes) -> bool:
    return bool(name) and all(c in _NAME_CHARS for c in name)


class _Loading:
    """The RunContext of FUNCTION LOAD: collects ``redis.register_function`` calls, stops after 500 ms."""

    def __init__(self, library: Library) -> None:
        self.library = library
        self.started = time.monotonic()
        self.resp = 2
        self.call = None

    def interrupt(self) -> Optional[str]:
        return "ERR FUNCTION LOAD timeout" if time.monotonic() - self.started > LOAD_TIMEOUT_S else None

    def register(self, name: bytes, fn: Any, description: Optional[bytes], flags: List[bytes]) -> Optional[str]:
        known = set()
        for flag in flags:
            text = flag.decode("utf-8", "replace").lower()
            if text not in _SHEBANG_FLAGS:
                return "unknown flag given"
            known.add(text)
        if not valid_name(name):
            return BAD_LIBRARY_NAME  # functionLibCreateFunction's text (sic) in Redis 7.x and Valkey 8.0
        if name in self.library.functions:
            return "Function already exists in the library"
        self.library.functions[name] = Function(name, fn, description, frozenset(known), self.library.name)
        return None


class FunctionCommands:
    """FUNCTION LOAD/DELETE/FLUSH/LIST/STATS and FCALL/FCALL_RO on a :class:`ScriptEngine`."""

    def __init__(self, engine: ScriptEngine) -> None:
        self.engine = engine

    def load(self, args: List[bytes]) -> bytes:
        replace = False
        for option in args[:-1]:
            if option.lower() != b"replace":
                raise ScriptError(f"ERR Unknown option given: {option.decode('utf-8', 'replace')}")
            replace = True
        if not args or len(args) > 2:
            raise ScriptError("ERR Function code is missing")
        return self._create(args[-1], replace)

    def _create(self, code: bytes, replace: bool, target: Optional[Tuple[dict, dict]] = None) -> bytes:
        """Load a library into ``target`` (``(libraries, functions)``; default: the server's)."""
        engine = self.engine
        libraries, functions = target if target is not None else (engine.libraries, engine.functions)
        if not code.startswith(b"#!"):
            raise ScriptError("ERR Missing library metadata")
        end = code.find(b"\n")
        if end < 0:
            raise ScriptError("ERR Invalid library metadata")
        parts = code[:end].split()
        if not parts:
            raise ScriptError("ERR Invalid library metadata")
        engine_name = parts[0][2:]
        name: Optional[bytes] = None
        for part in parts[1:]:
            if part[:5].lower() == b"name=":
                if name is not None:
                    raise ScriptError("ERR Invalid metadata value, name argument was given multiple times")
                name = part[5:]
                continue
            raise ScriptError(f"ERR Invalid metadata value given: {part.decode('utf-8', 'replace')}")
        if name is None:
            raise ScriptError("ERR Library name was not given")
        if not valid_name(name):
            raise ScriptError("ERR " + BAD_LIBRARY_NAME)
        if engine_name.lower() != b"lua":
            raise ScriptError(f"ERR Engine '{engine_name.decode('utf-8', 'replace')}' not found")
        old = libraries.get(name)
        if old is not None and not replace:
            raise ScriptError(f"ERR Library '{name.decode('utf-8', 'replace')}' already exists")
        library = Library(name, code)
        loading = _Loading(library)
        runtime = engine.runtime
        ok, result = runtime.load_library(code[end:], loading)  # from the newline: line numbers kept
        if ok is None:
            text = result.decode("utf-8", "replace") if isinstance(result, bytes) else str(result)
            raise ScriptError(f"ERR Error compiling function: {text}")
        if not ok:
            message = result[b"err"] if runtime.lua_type(result) == "table" else result
            text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
            bare = text[4:] if text.startswith("ERR ") else text
            if engine.texts.valkey_9 and bare in _VALKEY_9_REGISTER_TEXTS:  # Valkey 9: the error itself, unframed
                raise ScriptError("ERR " + _VALKEY_9_REGISTER_TEXTS[bare])
            raise ScriptError(f"ERR Error registering functions: {text}")
        if not library.functions:
            raise ScriptError("ERR No functions registered")
        for fname in library.functions:
            owner = functions.get(fname)
            if owner is not None and owner.library != name:
                raise ScriptError(f"ERR Function {fname.decode('utf-8', 'replace')} already exists")
        if old is not None:
            for fname in old.functions:
                functions.pop(fname, None)
        libraries[name] = library
        functions.update(library.functions)
        return name

    def dump(self) -> bytes:
        """FUNCTION DUMP: every library's code in the servers' payload format."""
        engine = self.engine
        return dump.dump([library.code for library in engine.libraries.values()], engine.profile)

    def restore(self, payload: bytes, policy: bytes) -> None:
        """FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE] (functionRestoreCommand + libraryJoin)."""
        engine = self.engine
        policy = policy.lower()
        if policy not in (b"append", b"replace", b"flush"):
            raise ScriptError("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
        if not dump.verify(payload, engine.profile):
            raise ScriptError("ERR DUMP payload version or checksum are wrong")
        codes, problem = dump.library_codes(payload)
        if problem:
            raise ScriptError("ERR " + problem)
        target: Tuple[dict, dict] = ({}, {})
        for code in codes:
            self._create(code, False, target)
        libraries, functions = target
        if policy == b"flush":
            engine.libraries, engine.functions = libraries, functions
            return
        replaced = set()
        for name in libraries:
            if name in engine.libraries:
                if policy != b"replace":
                    raise ScriptError(f"ERR Library {name.decode('utf-8', 'replace')} already exists")
                replaced.add(name)
        for fname in functions:
            owner = engine.functions.get(fname)
            if owner is not None and owner.library not in replaced:
                raise ScriptError(f"ERR Function {fname.decode('utf-8', 'replace')} already exists")
        for name in replaced:
            for fname in engine.libraries.pop(name).functions:
                engine.functions.pop(fname, None)
        engine.libraries.update(libraries)
        engine.functions.update(functions)

    def delete(self, name: bytes) -> None:
        engine = self.engine
        library = engine.libraries.pop(name, None)
        if library is None:
            raise ScriptError("ERR Library not found")
        for fname in library.functions:
            engine.functions.pop(fname, None)

    def flush(self, args: List[bytes]) -> None:
        if len(args) > 1 or (args and args[0].lower() not in (b"sync", b"async")):
            raise ScriptError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
        self.engine.libraries.clear()
        self.engine.functions.clear()

    def list(self, args: List[bytes], resp: int) -> List[Any]:
        with_code = False
        pattern: Optional[bytes] = None
        i = 0
        while i < len(args):
            arg = args[i]
            i += 1
            if arg.lower() == b"withcode":
                with_code = True
                continue
            if arg.lower() == b"libraryname":
                if i >= len(args):
                    raise ScriptError("ERR library name argument was not given")
                pattern = args[i]
                i += 1
                continue
            raise ScriptError(f"ERR Unknown argument {arg.decode('utf-8', 'replace')}")
        out = []
        for library in self.engine.libraries.values():
            if pattern is not None and not _glob_match(pattern, library.name):
                continue
            functions = [_pairs([(b"name", f.name), (b"description", f.description),
                                 (b"flags", [flag.encode() for flag in _SHEBANG_FLAGS if flag in f.flags])], resp)
                         for f in library.functions.values()]
            fields = [(b"library_name", library.name), (b"engine", b"LUA"), (b"functions", functions)]
            if with_code:
                fields.append((b"library_code", library.code))
            out.append(_pairs(fields, resp))
        return out

    def stats(self, resp: int) -> Any:
        engine = self.engine
        running = engine.running
        current: Any = None
        if running is not None and not running.is_eval:
            current = _pairs([(b"name", running.name), (b"command", list(running.argv)),
                              (b"duration_ms", int((time.monotonic() - running.started) * 1000))], resp)
        counts = _pairs([(b"libraries_count", len(engine.libraries)), (b"functions_count", len(engine.functions))],
                        resp)
        return _pairs([(b"running_script", current), (b"engines", _pairs([(b"LUA", counts)], resp))], resp)

    def fcall(self, host: Host, name: bytes, numkeys: bytes, rest: List[bytes], ro: bool,
              command: List[bytes]) -> Any:
        engine = self.engine
        function = engine.functions.get(name)
        if function is None:
            raise ScriptError("ERR Function not found")
        count = key_count(numkeys, rest, "ERR Bad number of keys provided")
        read_only = "no-writes" in function.flags
        refuse_no_cluster(host, function.flags)
        if ro and not read_only:
            raise ScriptError("ERR Can not execute a script with write flag using *_ro command.")
        return engine._run(host, "", None, rest[:count], rest[count:], read_only or ro, function, command)


def _pairs(fields: List[Tuple[bytes, Any]], resp: int) -> Any:
    """A map reply: a dict under RESP3, a flat list under RESP2."""
    if resp == 3:
        return dict(fields)
    return [item for pair in fields for item in pair]


def _glob_match(pattern: bytes, name: bytes) -> bool:
    return fnmatch.fnmatchcase(name.lower().decode("latin-1"), pattern.lower().decode("latin-1"))
