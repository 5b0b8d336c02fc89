"""fake_streams.lua without a real server: the libraries' encodings (values taken from Redis 7.0.15), the sandbox,
the reply conversions and the guarantee that no Python exception leaves a script.

(The same behaviours against the real servers: tests/conformance/test_lua.py.)
"""

from __future__ import annotations

import pytest
import redis

from fake_streams import FakeStreamsServer
from fake_streams.lua.engine import parse_shebang
from fake_streams.lua.runtime import Lrand48, error_text
from tests.conftest import pool_kwargs


@pytest.fixture
def client():
    server = FakeStreamsServer(version="7.0")
    yield server.client(**pool_kwargs(2))
    server.close()


@pytest.mark.parametrize("script, expected", [
    ("return cjson.encode({1, 2.5, 'a/b', {}, {x=1}})", b'[1,2.5,"a\\/b",{},{"x":1}]'),
    ("return cjson.encode({3.14159265358979, 1e20, 0.1})", b"[3.1415926535898,1e+20,0.1]"),
    ("return cjson.encode('\\1\\127')", b'"\\u0001\\u007f"'),
    ("return cmsgpack.pack(1, 128, -33, 1.5, 0.1)", b"\x01\xcc\x80\xd0\xdf\xca?\xc0\x00\x00\xcb?\xb9\x99\x99\x99\x99\x99\x9a"),
    ("return cmsgpack.pack({1, 2}, {a=1})", b"\x92\x01\x02\x81\xa1a\x01"),
    ("return struct.pack('>I2i4', 513, -2)", b"\x02\x01\xff\xff\xff\xfe"),
    ("return {bit.band(0xff, 0x0f), bit.lshift(1, 31), bit.tohex(-1, -4)}", [15, -2147483648, b"FFFF"]),
    ("return redis.sha1hex('abc')", b"a9993e364706816aba3e25717850c26c9cd0d89d"),
    ("return {1, 2, nil, 4}", [1, 2]),
    ("return 3.99", 3),
    ("return {double=0.1}", b"0.10000000000000001"),  # 7.0's %.17g
    ("return redis.REDIS_VERSION", b"7.0.15"),
])
def test_library_values(client, script, expected):
    assert client.eval(script, 0) == expected


@pytest.mark.parametrize("script, message", [
    ("x = 1", "user_script:1: Attempt to modify a readonly table script: "),
    ("return y", "user_script:1: Script attempted to access nonexistent global variable 'y' script: "),
    ("return cjson.decode('[1,')", "user_script:1: Expected value but found T_END at character 4 script: "),
    ("return redis.call('nosuch')", "Unknown Redis command called from script script: "),
    ("return redis.call('set', 'k', {})", "Lua redis lib command arguments must be strings or integers script: "),
    ("return os.time()", "user_script:1: Script attempted to access nonexistent global variable 'os' script: "),
    ("return getfenv(tostring).python.eval('1')", "user_script:1: attempt to index field 'python' (a nil value)"),
])
def test_script_errors(client, script, message):
    with pytest.raises(redis.ResponseError) as info:
        client.eval(script, 0)
    assert str(info.value).startswith(message)


def test_pcall_error_is_the_message_and_no_python_error_leaves(client):
    client.set("k", "a")
    assert client.eval("local ok, e = pcall(redis.call, 'incr', 'k') return {tostring(ok), tostring(e.err), e}", 0) \
        == [b"false", b"nil", b"ERR value is not an integer or out of range"]
    assert client.eval("return redis.pcall('incr', 'k').err", 0) == b"ERR value is not an integer or out of range"


def test_globals_cannot_be_set_by_any_route(client):
    for script in ("leak = 1", "rawset(_G, 'leak', 1)", "rawset(getfenv(1), 'leak', 1)", "setmetatable(_G, nil)",
                   "getmetatable('').__index.leak = 1"):
        with pytest.raises(redis.ResponseError, match="Attempt to modify a readonly table"):
            client.eval(script, 0)
    with pytest.raises(redis.ResponseError, match="nonexistent global variable 'leak'"):
        client.eval("return leak", 0)


def test_shebang_and_error_reply_helpers():
    assert parse_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1") == (frozenset({"no-writes", "allow-oom"}), 31,
                                                                           None)
    assert parse_shebang(b"return 1") == (None, 0, None)
    assert parse_shebang(b"#!lua flags=bad\n")[2] == "ERR Unexpected flag in script shebang: bad"
    assert error_text(b"My Error") == b"My Error"
    assert error_text(b"-NOSPACE") == b"ERR NOSPACE"


def test_math_random_is_the_servers_lrand48(client):
    # Redis 7.0.15: math.randomseed(42) then math.random(100) twice -> 75, 35
    assert client.eval("math.randomseed(42) return {math.random(100), math.random(100)}", 0) == [75, 35]
    rand = Lrand48()
    rand.seed(42)
    assert int((rand.next() % Lrand48.MAX) / Lrand48.MAX * 100) + 1 == 75


def test_function_dump_restore_round_trip_and_payload_checks():
    for version in ("7.0", "valkey-8.0"):
        server = FakeStreamsServer(version=version)
        client = server.client(**pool_kwargs(2))
        client.function_load("#!lua name=lib\nredis.register_function('f', function() return 'x' end)")
        payload = client.function_dump()
        client.function_flush()
        assert client.function_restore(payload) is True
        assert client.fcall("f", 0) == b"x"
        with pytest.raises(redis.ResponseError, match="^Library lib already exists"):
            client.function_restore(payload)
        with pytest.raises(redis.ResponseError, match="^DUMP payload version or checksum are wrong"):
            client.function_restore(payload[:-1] + bytes([payload[-1] ^ 1]))
        server.close()
