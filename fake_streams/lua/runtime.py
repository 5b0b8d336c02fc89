"""One Lua 5.1 interpreter set up as Redis's script environment (``prelude.lua``), and the Python side of it.

The runtime is lupa's ``lupa.lua51`` (the Lua Redis embeds; lupa ships it in its wheels). ``prelude.lua``
builds the globals (readonly tables, ``redis.*``, the libraries of :mod:`.libs`, Redis's ``pcall``), the error
handler that adds ``source``/``line`` to an error, and the count hook that asks :meth:`ScriptRuntime.interrupt`
every 100,000 instructions whether to stop. Python callbacks never raise into Lua: each returns ``(ok, …)``.

The runtime belongs to one server and runs one script at a time (the caller holds the server lock);
:attr:`ScriptRuntime.context` is the running script's :class:`RunContext` (its redis.call target, its RESP mode).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import logging
from typing import Any, NoReturn, Optional, Tuple, Union

from . import bitop, cjson, cmsgpack, libs, structlib

LOGGER = logging.getLogger("fake_streams.lua")
_LOG_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.INFO, 3: logging.WARNING}


def load_lupa() -> Any:
    """``lupa.lua51`` (Redis's Lua version)."""
    import lupa.lua51

    return lupa.lua51


class RunContext:
    """What a running script's callbacks need; the engine makes one per script run."""

    def __init__(self, call: Any, interrupt: Any, acl_check: Any = None) -> None:
        self.call = call  # (args: tuple of Lua values) -> (ok, lua value or error table)
        self.interrupt = interrupt  # () -> Optional[str]: the error text to stop with, or None
        self.acl_check = acl_check  # (argv: List[bytes]) -> Optional[bool]: permitted; None: no such command
        self.resp = 2  # redis.setresp


class Lrand48:
    """The server's ``redisLrand48`` (POSIX lrand48: 48-bit LCG, top 31 bits)."""

    MAX = 2**31 - 1

    def __init__(self) -> None:
        self.state = 0x1234ABCD330E

    def seed(self, value: int) -> None:
        value &= 0xFFFFFFFF
        self.state = ((value >> 16) << 32) | ((value & 0xFFFF) << 16) | 0x330E

    def next(self) -> int:
        self.state = (0x5DEECE66D * self.state + 0xB) & (2**48 - 1)
        return self.state >> 17


class ScriptRuntime:
    """The Lua state of one server."""

    def __init__(self, version: str, version_num: int, server_alias: bool) -> None:
        lupa = load_lupa()
        self.lupa = lupa
        self.lua = lupa.LuaRuntime(encoding=None, unpack_returned_tuples=True, register_eval=False)
        self.context: Optional[RunContext] = None
        self.valkey = server_alias  # Valkey's texts (and its 'server' alias of 'redis')
        self.api_name = "server" if server_alias else "redis"
        self._rand = Lrand48()
        api_helpers = self.lua.eval("function() return function() return {} end, function(v) return type(v) end end")
        self._new_table_fn, self._lua_type_fn = api_helpers()
        new_table, lua_type = self._new_table_fn, self._lua_type
        self.cjson = cjson.CJson(new_table, lua_type)
        self.msgpack = cmsgpack.CMsgpack(new_table, lua_type)
        self.bit = bitop.Bit(lua_type)
        self.struct = structlib.Struct(lua_type)
        raising = self._raising
        callbacks = {
            b"unwrap": _unwrap,
            b"redis_call": lambda *a: self._call(a, True),
            b"redis_pcall": lambda *a: self._call(a, False),
            b"redis_sha1hex": self._sha1hex,
            b"redis_status_reply": lambda *a: self._single_field(b"ok", a),
            b"redis_error_reply": lambda *a: self._single_field(b"err", a),
            b"redis_log": self._log,
            b"redis_setresp": self._setresp,
            b"redis_set_repl": self._set_repl,
            b"redis_replicate_commands": lambda *a: True,
            b"redis_breakpoint": lambda *a: False,
            b"redis_debug": lambda *a: (),
            b"redis_acl_check_cmd": self._acl_check_cmd,
            b"version": version.encode(),
            b"version_num": version_num,
            b"server_alias": server_alias,
            b"cjson_encode": raising(lambda *a: self._one_arg(self.cjson.encode, "encode", a)),
            b"cjson_decode": raising(lambda *a: self._one_arg(self.cjson.decode, "decode", a)),
            b"null": libs.NULL,
            b"msgpack_pack": raising(self.msgpack.pack),
            b"msgpack_unpack": raising(lambda data=None, *_: self._multi(self.msgpack.unpack(data))),
            b"msgpack_unpack_one": raising(lambda data=None, offset=0, *_: self._multi(
                self.msgpack.unpack(data, 1, _int(offset), full=False))),
            b"msgpack_unpack_limit": raising(lambda data=None, limit=None, offset=0, *_: self._unpack_limit(
                data, limit, offset)),
            b"struct_pack": raising(self.struct.pack),
            b"struct_unpack": raising(lambda *a: self._multi(self.struct.unpack(*a[:3]))),
            b"struct_size": raising(self.struct.size),
            b"random": raising(lambda *a: self._random(len(a), *a)),
            b"randomseed": raising(lambda *a: self._randomseed(len(a), *a)),
            b"interrupt": self._interrupt,
            b"register_function": self._register_function,
        }
        for op in ("tobit", "bnot", "band", "bor", "bxor", "lshift", "rshift", "arshift", "rol", "ror", "bswap",
                   "tohex"):
            callbacks[b"bit_" + op.encode()] = raising(functools.partial(self.bit.call, op.encode()))
        callbacks = self.lua.table_from(callbacks)
        source = importlib.resources.files(__package__).joinpath("prelude.lua").read_bytes()
        loader = self.lua.eval("function(src) return assert(loadstring(src, '=[fake_streams]')) end")
        self.api = loader(source)(callbacks)

    # ----------------------------------------------------------------------------------- helpers
    def _lua_type(self, value: Any) -> Any:
        kind = self._lua_type_fn(value)
        return kind.decode() if isinstance(kind, bytes) else kind

    def new_table(self) -> Any:
        return self._new_table_fn()

    def lua_type(self, value: Any) -> str:
        return self._lua_type(value)

    @staticmethod
    def _multi(result: Tuple[bool, Any]) -> Tuple[Any, ...]:
        ok, value = result
        return (True, *value) if ok else (False, value)

    def _unpack_limit(self, data: Any, limit: Any, offset: Any) -> Tuple[Any, ...]:
        if not isinstance(limit, (int, float)) or isinstance(limit, bool):
            return False, f"bad argument #2 to 'unpack_limit' (number expected, got {libs.lua_typename(limit, self._lua_type)})"
        return self._multi(self.msgpack.unpack(data, int(limit), _int(offset), full=False))

    def error_table(self, text: Union[str, bytes]) -> Any:
        table = self.new_table()
        table[b"err"] = text.encode() if isinstance(text, str) else text
        return table

    # --------------------------------------------------------------------------------- callbacks
    def _raising(self, fn: Any) -> Any:
        """A library function returning ``(ok, value…)`` as a callback: the values, or the message raised as
        ``luaL_error`` does (prefixed with the calling line)."""
        def call(*args: Any) -> Any:
            result = fn(*args)
            if not result[0]:
                message = result[1] if isinstance(result[1], bytes) else str(result[1]).encode()
                raise LuaRaise(self.api.where() + message)
            return result[1] if len(result) == 2 else tuple(result[1:])
        return call

    def _raise(self, text: str) -> NoReturn:
        raise LuaRaise(self.error_table(text))

    @staticmethod
    def _one_arg(fn: Any, name: str, args: Tuple[Any, ...]) -> Tuple[bool, Any]:
        if len(args) != 1:
            return False, f"bad argument #1 to '{name}' (expected 1 argument)"
        return fn(args[0])

    def _call(self, args: Tuple[Any, ...], raise_error: bool) -> Any:
        context = self.context
        if context is None:
            self._raise("ERR redis.call/pcall can only be called inside a script invocation")
        try:
            ok, value = context.call(args)
        except LuaRaise:
            raise
        except Exception as exc:  # a bug of ours: the script gets an error, never a Python exception
            LOGGER.exception("redis.call failed inside the fake")
            ok, value = False, self.error_table(f"ERR internal error in fake_streams: {type(exc).__name__}: {exc}")
        if not ok and raise_error:
            raise LuaRaise(value)
        return value

    def _single_field(self, field: bytes, args: Tuple[Any, ...]) -> Any:
        if len(args) != 1 or not isinstance(args[0], bytes):
            return self.error_table("ERR wrong number or type of arguments")
        table = self.new_table()
        table[field] = error_text(args[0]) if field == b"err" else args[0]
        return table

    def _acl_check_cmd(self, *args: Any) -> Any:
        """``redis.acl_check_cmd(command, args…)``: whether the script's user may run it (keys included)."""
        if not args:
            self._raise("ERR Please specify at least one argument for this call" if self.valkey else
                        "ERR Please specify at least one argument for this redis lib call")
        argv = [a if isinstance(a, bytes) else libs.fmt_g(a, 17) for a in args
                if isinstance(a, bytes) or (isinstance(a, (int, float)) and not isinstance(a, bool))]
        if len(argv) != len(args):
            self._raise("ERR Command arguments must be strings or integers" if self.valkey else
                        "ERR Lua redis lib command arguments must be strings or integers")
        context = self.context
        permitted = context.acl_check(argv) if context is not None and context.acl_check is not None else True
        if permitted is None:
            self._raise(f"ERR Invalid command passed to {self.api_name}.acl_check_cmd()")
        return permitted

    def _sha1hex(self, *args: Any) -> bytes:
        if len(args) != 1:
            self._raise("ERR wrong number of arguments")
        value = args[0]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = libs.fmt_g(value, 14)
        if not isinstance(value, bytes):
            value = b""
        return hashlib.sha1(value).hexdigest().encode()

    def _log(self, *args: Any) -> Any:
        if len(args) < 2:
            self._raise(f"ERR {self.api_name}.log() requires two arguments or more.")
        level = libs._to_number(args[0])
        if level is None:
            self._raise("ERR First argument must be a number (log level).")
        if not 0 <= int(level) <= 3:
            self._raise("ERR Invalid log level." if self.valkey else "ERR Invalid debug level.")
        parts = [a if isinstance(a, bytes) else libs.fmt_g(a, 14) for a in args[1:]
                 if isinstance(a, bytes) or (isinstance(a, (int, float)) and not isinstance(a, bool))]
        LOGGER.log(_LOG_LEVELS[int(level)], b" ".join(parts).decode("utf-8", "replace"))
        return ()

    def _setresp(self, *args: Any) -> Any:
        if len(args) != 1:
            self._raise(f"ERR {self.api_name}.setresp() requires one argument.")
        number = libs._to_number(args[0])
        resp = int(number) if number is not None else 0
        if resp not in (2, 3):
            self._raise("ERR RESP version must be 2 or 3.")
        if self.context is not None:
            self.context.resp = resp
        return ()

    def _set_repl(self, *args: Any) -> Any:
        if len(args) != 1:
            self._raise("ERR server.set_repl() requires one argument." if self.valkey else
                        "ERR redis.set_repl() requires two arguments.")
        number = libs._to_number(args[0])
        if int(number or 0) & ~3:
            self._raise("ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
        return ()

    def _register_function(self, *args: Any) -> Any:
        """``redis.register_function`` while a library loads: ``(name, callback)`` or a table of named arguments."""
        context = self.context
        register = getattr(context, "register", None)
        if register is None:
            self._raise(f"ERR {self.api_name}.register_function can only be called on FUNCTION LOAD command")
        if not 1 <= len(args) <= 2:
            self._raise(f"ERR wrong number of arguments to {self.api_name}.register_function")
        if len(args) == 2:
            name, callback = args
            if isinstance(name, (int, float)) and not isinstance(name, bool):
                name = libs.fmt_g(name, 14)
            if not isinstance(name, bytes):
                self._raise(f"ERR first argument to {self.api_name}.register_function must be a string")
            if self._lua_type(callback) != "function":
                self._raise(f"ERR second argument to {self.api_name}.register_function must be a function")
            problem = register(name, callback, None, [])
        else:
            problem = self._register_named(args[0], register)
        if problem:
            self._raise("ERR " + problem)
        return ()

    def _register_named(self, table: Any, register: Any) -> Any:
        api = self.api_name
        if isinstance(table, (bytes, int, float, bool)) or table is None or self._lua_type(table) != "table":
            return (f"calling {api}.register_function with a single argument is only applicable to Lua table "
                    "(representing named arguments).")
        name = description = callback = None
        flags: list = []
        for key, value in table.items():
            if isinstance(key, (int, float)) and not isinstance(key, bool):
                key = libs.fmt_g(key, 14)
            if not isinstance(key, bytes):
                return f"named argument key given to {api}.register_function is not a string"
            key = key.lower()
            if key in (b"function_name", b"description"):
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    value = libs.fmt_g(value, 14)
                if not isinstance(value, bytes):
                    return f"{key.decode()} argument given to {api}.register_function must be a string"
                if key == b"function_name":
                    name = value
                else:
                    description = value
            elif key == b"callback":
                if self._lua_type(value) != "function":
                    return f"callback argument given to {api}.register_function must be a function"
                callback = value
            elif key == b"flags":
                if isinstance(value, (bytes, int, float, bool)) or value is None or self._lua_type(value) != "table":
                    return f"flags argument to {api}.register_function must be a table representing function flags"
                index = 1
                while True:
                    flag = value[index]
                    if flag is None:
                        break
                    if not isinstance(flag, bytes):
                        return "unknown flag given"
                    flags.append(flag)
                    index += 1
            else:
                return f"unknown argument given to {api}.register_function"
        if name is None:
            return f"{api}.register_function must get a function name argument"
        if callback is None:
            return f"{api}.register_function must get a callback argument"
        return register(name, callback, description, flags)

    def load_library(self, body: bytes, context: Any) -> Tuple[bool, Any]:
        """Run a library's code with the load API; ``(ok, error table or compiler message)``."""
        self.context = context
        try:
            return self.api.load_library(body, True)
        finally:
            self.context = None

    def _interrupt(self) -> Any:
        context = self.context
        message = context.interrupt() if context is not None else None
        return message.encode() if message else None

    def _random(self, nargs: int, *args: Any) -> Tuple[bool, Any]:
        r = (self._rand.next() % Lrand48.MAX) / Lrand48.MAX
        if nargs == 0:
            return True, r
        bounds = []
        for i, value in enumerate(args[:2]):
            number = libs._to_number(value)
            if number is None:
                got = libs.lua_typename(value, self._lua_type)
                return False, f"bad argument #{i + 1} to 'random' (number expected, got {'no value' if got == 'nil' else got})"
            bounds.append(int(number))
        if nargs == 1:
            if bounds[0] < 1:
                return False, "bad argument #1 to 'random' (interval is empty)"
            return True, int(r * bounds[0]) + 1
        if nargs == 2:
            low, high = bounds
            if low > high:
                return False, "bad argument #2 to 'random' (interval is empty)"
            return True, int(r * (high - low + 1)) + low
        return False, "wrong number of arguments"

    def _randomseed(self, nargs: int, *args: Any) -> Tuple[bool, Any]:
        number = libs._to_number(args[0]) if args else None
        if number is None:
            got = libs.lua_typename(args[0] if args else None, self._lua_type)
            return False, f"bad argument #1 to 'randomseed' (number expected, got {'no value' if got == 'nil' else got})"
        self._rand.seed(int(number))
        return True, None

    # ----------------------------------------------------------------------------------- running
    def compile(self, body: bytes, chunkname: bytes = b"@user_script") -> Tuple[Any, Optional[bytes]]:
        """``(function, None)`` or ``(None, compiler message)``."""
        fn, message = self.api.compile(body, chunkname)
        return fn, message

    def run(self, fn: Any, context: RunContext, keys: Any, argv: Any, hooked: bool, *args: Any) -> Tuple[bool, Any]:
        """Run ``fn(*args)`` with ``KEYS``/``ARGV`` set; ``(ok, value)`` — value is the error table on failure."""
        self.context = context
        try:
            return self.api.run(fn, keys, argv, hooked, *args)
        finally:
            self.context = None

    def array(self, items: Any) -> Any:
        table = self.new_table()
        for i, item in enumerate(items, 1):
            table[i] = item
        return table


class LuaRaise(Exception):
    """Raised by a callback: Lua gets ``value`` (an error table or a message) as the error object."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self.value = value


def _unwrap(error: Any) -> Any:
    """The Lua error value of a callback's failure (other userdata unchanged)."""
    return error.value if isinstance(error, LuaRaise) else error


def error_text(message: bytes) -> bytes:
    """``luaPushErrorBuff`` of ``redis.error_reply``: ``-CODE msg`` keeps its code, other text gets ``ERR``."""
    raw = message if message.startswith(b"-") else b"-" + message
    code, sep, rest = raw[1:].partition(b" ")
    if not sep:
        code, rest = b"ERR", raw[1:]
    return code + b" " + rest.strip(b"\r\n")


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
