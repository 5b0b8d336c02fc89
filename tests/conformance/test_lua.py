"""Redis's Lua environment, fake vs real: one EVAL per script, raw replies compared (RESP2 and RESP3).

The scripts cover the libraries (cjson, cmsgpack, bit, struct), the ``redis.*`` API, error tables from
``pcall``, readonly globals, the reply conversions both ways, the error texts and their
`` script: <sha>, on @user_script:<line>.`` suffix, EVAL_RO/EVALSHA/SCRIPT and stream commands from Lua.
Valkey 9.1 is compared with the valkey-8.0 profile only: its Lua texts are not Redis 7.4's.
"""

from __future__ import annotations

import pytest

from .lua_texts import valkey_8_texts

SCRIPTS = {
    # --- reply conversion Lua -> RESP
    "number_truncated": "return 3.99",
    "negative_truncated": "return -3.7",
    "true_is_one": "return true",
    "false_is_nil": "return false",
    "nil_is_nil": "return nil",
    "array_stops_at_nil": "return {1, 2, nil, 4}",
    "nested_arrays": "return {1, {2, {3, 'x'}}, 'y'}",
    "status_reply": "return redis.status_reply('FINE')",
    "error_reply": "return redis.error_reply('My Error')",
    "error_reply_with_code": "return redis.error_reply('-X My Error')",
    "err_table": "return {err='foo bar'}",
    "ok_table": "return {ok='fine'}",
    "error_in_array": "return {1, redis.error_reply('E inner')}",
    "double_table": "return {double=3.5}",
    "double_fraction": "return {double=0.1}",
    "map_table": "return {map={a=1}}",
    "set_table": "return {set={a=true}}",
    "big_number": "return {big_number='123456789012345678901234567890'}",
    "float_in_array": "return {1.5, 2.5}",
    # --- RESP -> Lua
    "call_status_is_ok_table": "local r = redis.call('set', 'k', 'v') return {type(r), r.ok}",
    "call_nil_is_false": "return {type(redis.call('get', 'missing'))}",
    "call_integer": "redis.call('set', 'n', '10') return redis.call('incrby', 'n', 5)",
    "call_array": "redis.call('rpush', 'l', 'a', 'b') return redis.call('lrange', 'l', 0, -1)",
    "setresp3_map": "redis.setresp(3) redis.call('hset', 'h', 'f', 'v') return redis.call('hgetall', 'h')",
    "setresp3_null_is_nil": "redis.setresp(3) return {type(redis.call('get', 'missing'))}",
    "setresp3_double": "redis.setresp(3) redis.call('zadd', 'z', 1.5, 'm') return redis.call('zscore', 'z', 'm')",
    "setresp2_double_string": "redis.call('zadd', 'z', 1.5, 'm') return redis.call('zscore', 'z', 'm')",
    "setresp_bad": "redis.setresp(4)",
    "number_args_as_17g": "redis.call('set', 'f', 0.1) return redis.call('get', 'f')",
    "bad_arg_type": "return redis.call('set', 'k', {})",
    "no_args": "return redis.call()",
    # --- errors and suffixes
    "runtime_error": "return nil + 1",
    "error_string": "error('boom')",
    "error_second_line": "local x = 1\nerror('boom')",
    "error_table_raised": "error({err='MY custom'})",
    "unknown_command": "return redis.call('nosuch')",
    "unknown_stream_subcommand": "return redis.call('xgroup', 'nosuch', 's')",
    "unknown_subcommand": "return redis.call('config', 'nosuch')",
    "wrong_arity": "return redis.call('get')",
    "noscript_command": "return redis.call('eval', 'return 1', 0)",
    "command_error_raised": "redis.call('set', 'k', 'a') return redis.call('incr', 'k')",
    "compile_error": "if",
    "compile_error_line2": "local a = 1\nlocal = 2",
    "tail_call_error_line": "return cjson.decode('[1,')",
    # --- pcall / error tables
    "pcall_error_is_string": "redis.call('set', 'k', 'a') local ok, e = pcall(redis.call, 'incr', 'k') return {tostring(ok), type(e), e}",
    "pcall_err_field_nil": "local ok, e = pcall(redis.call, 'nosuch') return {tostring(ok), tostring(e.err)}",
    "redis_pcall_table": "redis.call('set', 'k', 'a') local e = redis.pcall('incr', 'k') return {type(e), e.err}",
    "redis_pcall_returned": "redis.call('set', 'k', 'a') return redis.pcall('incr', 'k')",
    "pcall_lua_error": "return {pcall(function() error('x') end)}",
    "pcall_error_table_value": "local ok, e = pcall(error, {err='A b'}) return {tostring(ok), e}",
    "xpcall_gets_table": "local ok, e = xpcall(function() redis.call('nosuch') end, function(e) return type(e) end) return {tostring(ok), e}",
    # --- globals
    "global_write": "x = 1",
    "global_function": "function f() end",
    "global_read_missing": "return y",
    "print_missing": "print('x')",
    "redis_table_readonly": "redis.call = nil",
    "string_table_readonly": "string.x = 1",
    "keys_argv": ("return {KEYS[1], ARGV[1], #KEYS, #ARGV}", ["k1"], ["a1", "a2"]),
    "local_ok": "local x = 5 return x * 2",
    "loadstring_env": "return loadstring('return type(redis)')()",
    # --- cjson
    "cjson_array_and_object": "return cjson.encode({1, 2.5, 'a/b', {}, {x=1}})",
    "cjson_precision": "return cjson.encode({3.14159265358979, 1e20, 0.1, -0.5, 12345678901234567})",
    "cjson_escapes": "return cjson.encode('q\"b\\\\s\\n\\t\\1\\127/')",
    "cjson_sparse": "return cjson.encode({[1]=1, [20]=2})",
    "cjson_sparse_small": "return cjson.encode({[1]=1, [5]=2})",
    "cjson_bad_key": "return cjson.encode({[true]=1})",
    "cjson_function": "return cjson.encode(function() end)",
    "cjson_inf": "return cjson.encode(1/0)",
    "cjson_decode_roundtrip": "local t = cjson.decode('{\"a\":[1,2,{\"b\":null}],\"c\":\"x\\\\u00e9\"}') return {t.a[1], t.a[2], tostring(t.a[3].b == cjson.null), t.c}",
    "cjson_decode_error": "return cjson.decode('[1,')",
    "cjson_decode_bad_token": "return cjson.decode('{\"a\" 1}')",
    "cjson_decode_trailing": "return cjson.decode('[1] x')",
    "cjson_decode_number": "return cjson.decode('[1.5e2, -0.25]')",
    "cjson_null_tostring": "return tostring(cjson.null)",
    "cjson_encode_args": "return cjson.encode()",
    # --- cmsgpack
    "msgpack_ints": "return cmsgpack.pack(1, 127, 128, 255, 256, 65536, -1, -32, -33, -129, -40000, 2^32)",
    "msgpack_floats": "return cmsgpack.pack(1.5, 0.1, -2.25)",
    "msgpack_strings": "return cmsgpack.pack('', 'abc', string.rep('x', 40))",
    "msgpack_array_vs_map": "return cmsgpack.pack({1, 2, 3}, {1, nil, 3}, {a=1}, {})",
    "msgpack_roundtrip": "local a, b, c = cmsgpack.unpack(cmsgpack.pack({1, {2, 'x'}}, true, 'y')) return {a[1], a[2][2], tostring(b), c}",
    "msgpack_unpack_one": "local p = cmsgpack.pack(1, 2) local off, v = cmsgpack.unpack_one(p) return {off, v}",
    "msgpack_bad": "return cmsgpack.unpack('\\193')",
    "msgpack_short": "return cmsgpack.unpack('\\205\\1')",
    "msgpack_no_input": "return cmsgpack.pack()",
    # --- bit
    "bit_ops": "return {bit.band(0xff, 0x0f), bit.bor(1, 2, 4), bit.bxor(5, 3), bit.bnot(0), bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-16, 2)}",
    "bit_tohex": "return {bit.tohex(255), bit.tohex(-1, -4), bit.tohex(0x1234, 2)}",
    "bit_rol_ror_bswap": "return {bit.rol(1, 33), bit.ror(1, 1), bit.bswap(0x12345678), bit.tobit(2^32 + 5)}",
    "bit_bad_arg": "return bit.band({})",
    # --- struct
    "struct_pack": "return struct.pack('>I2i4', 513, -2)",
    "struct_unpack": "return {struct.unpack('<hBc3', struct.pack('<hBc3', -2, 200, 'abc'))}",
    "struct_size": "return struct.size('>i4d')",
    "struct_string": "return {struct.unpack('s', struct.pack('s', 'hi'))}",
    "struct_bad_option": "return struct.pack('z', 1)",
    "struct_short": "return struct.unpack('i4', 'ab')",
    # --- redis.* helpers
    "sha1hex": "return {redis.sha1hex(''), redis.sha1hex('abc')}",
    "sha1hex_args": "return redis.sha1hex()",
    "log_levels": "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
    "log_ok": "redis.log(redis.LOG_DEBUG, 'hello', 'there') return 1",
    "log_bad_level": "redis.log(9, 'x')",
    "log_few_args": "redis.log(1)",
    "breakpoint_debug": "return {tostring(redis.breakpoint()), tostring(redis.debug('x'))}",
    "version": "return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}",
    "replicate_commands": "return tostring(redis.replicate_commands())",
    "error_reply_bad": "return redis.error_reply(1, 2)",
    "random_seeded": "math.randomseed(42) return {math.random(100), math.random(100)}",
    # --- RESP3 inside scripts (redis.setresp(3)) and back
    "setresp3_return_true": "redis.setresp(3) return true",
    "setresp3_return_false": "redis.setresp(3) return false",
    "setresp3_set_reply": "redis.setresp(3) redis.call('sadd', 'st', 'a') local r = redis.call('smembers', 'st') return {type(r.set), tostring(r.set.a)}",
    "setresp3_map_field": "redis.setresp(3) redis.call('hset', 'h', 'f', 'v') return redis.call('hgetall', 'h').map.f",
    "setresp3_double_field": "redis.setresp(3) redis.call('zadd', 'z', 2.5, 'm') return tostring(redis.call('zscore', 'z', 'm').double)",
    "setresp3_passthrough_set": "redis.setresp(3) redis.call('sadd', 'st', 'a') return redis.call('smembers', 'st')",
    "setresp3_arg_string": "redis.setresp('3') return 1",
    "setresp_no_args": "redis.setresp()",
    "map_nested": "return {map={k={1, 2}}}",
    "map_with_error_value": "return {1, {map={a=redis.error_reply('E x')}}}",
    "set_returned_resp2": "return {set={x=true}}",
    "big_number_resp": "return {big_number='12'}",
    "verbatim_string": "return {verbatim_string={format='txt', string='hello'}}",
    "double_inf": "return {double=1/0}",
    "double_integral": "return {double=3}",
    "string_with_newline_status": "return {ok='a\\nb'}",
    # --- commands and transactions inside scripts
    "multi_in_script": "return redis.call('multi')",
    "watch_in_script": "return redis.call('watch', 'k')",
    "subscribe_in_script": "return redis.call('subscribe', 'ch')",
    "blpop_in_script": "return redis.call('blpop', 'nolist', 0)",
    "blpop_in_script_with_data": "redis.call('rpush', 'l', 'a') return redis.pcall('blpop', 'l', 0)",
    "blmpop_in_script": "return {redis.call('blmpop', 0, 1, 'nolist', 'LEFT')}",
    "bzpopmin_in_script": "return redis.pcall('bzpopmin', 'nozset', 0)",
    "select_in_script": "redis.call('select', 1) redis.call('set', 'k', 'db1') return redis.call('get', 'k')",
    "mixed_case_command": "redis.call('SeT', 'k', 'v') return redis.call('GET', 'k')",
    "call_with_float_arg": "return redis.call('incrbyfloat', 'f', 1.5)",
    "call_with_int_as_float": "return redis.call('incrby', 'i', 3.0)",
    "call_huge_number": "return redis.call('set', 'k', 1e300)",
    "call_boolean_arg": "return redis.call('set', 'k', true)",
    "call_nil_arg": "return redis.call('set', 'k', nil)",
    "pcall_no_args": "return redis.pcall()",
    "hash_order_cjson": "return cjson.encode({1, 2, x=3, y=4, [10]=5})",
    "hash_order_pairs": "local t = {c=1, a=2, b=3, [5]=4} local out = {} for k in pairs(t) do out[#out+1] = tostring(k) end return out",
    "cjson_decode_order": "local t = cjson.decode('{\"z\":1,\"a\":2,\"m\":3}') local out = {} for k in pairs(t) do out[#out+1] = k end return out",
    "cjson_nesting_limit": "local t = {} local c = t for i = 1, 1001 do c[1] = {} c = c[1] end return cjson.encode(t)",
    "cjson_unicode_escape": "return cjson.decode('\"\\u00e9\\ud83d\\ude00\"')",
    "cjson_bad_unicode": "return cjson.decode('\"\\ud83d\"')",
    "cjson_bad_escape": "return cjson.decode('\"\\q\"')",
    "cjson_number_keys": "return cjson.encode({[1.5]=1})",
    "msgpack_nesting": "local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return cmsgpack.pack(t)",
    "msgpack_unpack_limit": "local p = cmsgpack.pack(1, 2, 3) return {cmsgpack.unpack_limit(p, 2)}",
    "msgpack_map_order": "return cmsgpack.pack({z=1, a=2, m=3})",
    "msgpack_long_string": "return #cmsgpack.pack(string.rep('x', 300))",
    "msgpack_decode_types": "local a, b, c, d = cmsgpack.unpack('\\195\\194\\192\\202\\63\\192\\0\\0') return {tostring(a), tostring(b), tostring(c), tostring(d)}",
    "struct_align": "return struct.pack('!4bi4', 1, 2)",
    "struct_c0": "return {struct.unpack('bc0', struct.pack('b', 3) .. 'abc')}",
    "struct_size_s": "return struct.size('s')",
    "struct_negative_unsigned": "return struct.pack('<I4', -1)",
    "struct_doubles": "return {struct.unpack('<fd', struct.pack('<fd', 1.5, 0.1))}",
    "bit_string_arg": "return bit.band('12', 10)",
    "bit_large": "return {bit.tobit(0xffffffff), bit.tobit(2^31), bit.band(2^40 + 7, 0xff)}",
    "math_functions": "return {math.floor(2.7), math.max(1, 5, 3), string.format('%.3f', math.pi)}",
    "string_library": "return {string.upper('ab'), string.rep('x', 3), string.sub('hello', 2, 3), #('abc')}",
    "table_library": "local t = {3, 1, 2} table.sort(t) return {table.concat(t, ','), #t}",
    "coroutine_available": "local co = coroutine.create(function() coroutine.yield(1) end) return {coroutine.resume(co)}",
    "tostring_number": "return tostring(1e15)",
    "unpack_global": "return {unpack({1, 2, 3})}",
    "select_global": "return select('#', 1, 2, 3)",
    "getmetatable_global": "return tostring(getmetatable('').__index == string)",
    "os_missing": "return os.time()",
    "io_missing": "return io.write('x')",
    "require_missing": "return require('x')",
    "debug_missing": "return debug.traceback()",
    "loadfile_missing": "return loadfile('x')",
    "dofile_missing": "return dofile('x')",
    "rawset_global": "rawset(_G, 'x', 1) return 1",
    "setmetatable_global": "setmetatable(_G, nil) return 1",
    "cjson_readonly": "cjson.encode = nil",
    "error_with_level": "error('lvl', 2)",
    "error_non_string": "error(42)",
    "error_nil": "error()",
    "assert_fail": "assert(false, 'nope')",
    "assert_fail_no_msg": "assert(nil)",
    "deep_recursion": "local function f(n) return f(n + 1) + 1 end return f(1)",
    "string_index_error": "local s = 'x' return s.y.z",
    "call_on_nil": "local t = {} t.f()",
    "return_multiple": "return 1, 2",
    "return_function": "return function() end",
    "return_nested_empty": "return {{}, {{}}}",
    "return_sparse_array": "return {1, 2, [4] = 4}",
    "return_hash_only": "return {a=1}",
    "return_negative_zero": "return -0",
    "return_huge": "return 1e300",
    "return_nan": "return 0/0",
    "sha1hex_number": "return redis.sha1hex(123)",
    "status_reply_number": "return redis.status_reply(1)",
    "set_repl_ok": "redis.set_repl(redis.REPL_ALL) return redis.REPL_AOF",
    "set_repl_bad": "redis.set_repl(8)",
    "acl_check_cmd": "return tostring(redis.acl_check_cmd('get', 'k'))",
    "random_default": "return math.random(10, 5)",
    # --- stream commands from Lua
    "xadd_xrange": "redis.call('xadd', 's', '1-1', 'f', 'v') return redis.call('xrange', 's', '-', '+')",
    "xadd_error": "redis.call('xadd', 's', '5-1', 'f', 'v') return redis.call('xadd', 's', '1-1', 'f', 'v')",
    "xread_resp3_map": "redis.setresp(3) redis.call('xadd', 's', '1-1', 'f', 'v') local r = redis.call('xread', 'streams', 's', '0') return {type(r.map), r.map.s[1][1]}",
    "xread_resp3_passthrough": "redis.setresp(3) redis.call('xadd', 's', '1-1', 'f', 'v') return redis.call('xread', 'streams', 's', '0')",
    "xinfo_stream_resp3": "redis.setresp(3) redis.call('xadd', 's', '1-1', 'f', 'v') return redis.call('xinfo', 'stream', 's').map['length']",
    "xgroup_and_readgroup": "redis.call('xadd', 's', '1-1', 'f', 'v') redis.call('xgroup', 'create', 's', 'g', '0') return redis.call('xreadgroup', 'group', 'g', 'c', 'streams', 's', '>')",
    "xread_block_in_script": "redis.call('xadd', 's', '1-1', 'f', 'v') return redis.pcall('xread', 'block', '0', 'streams', 's', '$')",
    "xlen_pcall_wrongtype": "redis.call('set', 'str', 'x') return redis.pcall('xlen', 'str')",
}


#: scripts whose reply shows the interpreter's table order (pairs/next): Valkey's Lua hashes strings its own way
TABLE_ORDER = {"hash_order_cjson", "hash_order_pairs", "cjson_decode_order", "msgpack_map_order"}
def _case(value):
    return value if isinstance(value, tuple) else (value, [], [])


@pytest.fixture
def lua_pair(pair):
    return valkey_8_texts(pair)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_script(lua_pair, name):
    body, keys, argv = _case(SCRIPTS[name])
    argv_all = ("EVAL", body, len(keys), *keys, *argv)
    valkey = lua_pair.target.kind == "valkey"
    if valkey and name in TABLE_ORDER:
        lua_pair.loosely(*argv_all, reason="Valkey's Lua hashes strings differently: another pairs/next order")
    else:
        lua_pair.same(*argv_all)


def test_evalsha_and_script_cache(lua_pair):
    sha = lua_pair.same("SCRIPT", "LOAD", "return ARGV[1]")
    lua_pair.same("EVALSHA", sha, 0, "x")
    lua_pair.same("SCRIPT", "EXISTS", sha, "0" * 40)
    lua_pair.same("SCRIPT", "FLUSH")
    lua_pair.same("EVALSHA", sha, 0, "x")
    lua_pair.same("EVAL", "return 1", "x")
    lua_pair.same("EVAL", "return 1", 2, "a")
    lua_pair.same("EVAL", "return 1", -1)


def test_read_only_scripts(lua_pair):
    lua_pair.same("EVAL_RO", "return redis.call('set', 'k', 'v')", 0)
    lua_pair.same("EVAL_RO", "return redis.call('get', 'k')", 0)
    lua_pair.same("EVAL", "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')", 0)
    lua_pair.same("EVAL_RO", "#!lua\nreturn 1", 0)
    lua_pair.same("EVAL", "#!lua flags=bogus\nreturn 1", 0)
    lua_pair.same("EVAL", "#!python\nreturn 1", 0)
    lua_pair.same("EVAL", "#!lua\nreturn nil + 1", 0)
    lua_pair.same("SCRIPT", "KILL")


def test_eval_in_multi(lua_pair):
    lua_pair.same("MULTI")
    lua_pair.same("EVAL", "return redis.call('incr', 'c')", 0)
    lua_pair.same("EVAL", "return redis.call('incr', 'c')", 0)
    lua_pair.same("EXEC")


def test_script_write_dirties_watch(lua_pair):
    other = lua_pair.connect()
    lua_pair.same("WATCH", "k")
    other.same("EVAL", "return redis.call('set', 'k', 'v')", 0)
    lua_pair.same("MULTI")
    lua_pair.same("GET", "k")
    lua_pair.same("EXEC")  # nil: the script's write touched the watched key


def test_stream_commands_from_scripts_wake_blocked_readers(lua_pair):
    reader = lua_pair.connect()
    lua_pair.same("XADD", "s", "1-1", "f", "v")
    reader.send("XREAD", "BLOCK", 0, "STREAMS", "s", "$")
    lua_pair.wait_blocked(1)
    lua_pair.same("EVAL", "return redis.call('xadd', KEYS[1], '2-1', 'f', ARGV[1])", 1, "s", "w")
    reader.read()


def test_evalsha_is_case_insensitive_and_script_load_errors(lua_pair):
    sha = lua_pair.same("SCRIPT", "LOAD", "return 7")
    lua_pair.same("EVALSHA", sha.upper(), 0)
    lua_pair.same("SCRIPT", "EXISTS", sha.upper())
    lua_pair.same("SCRIPT", "LOAD", "if")
    lua_pair.same("SCRIPT", "LOAD", "#!lua flags=bogus\nreturn 1")
    lua_pair.same("EVALSHA_RO", sha, 0)


def test_acl_inside_scripts(lua_pair):
    lua_pair.same("ACL", "SETUSER", "luauser", "on", ">pw", "+@all", "-set", "~k*")
    user = lua_pair.connect()
    user.same("AUTH", "luauser", "pw")
    user.same("EVAL", "return redis.call('set', 'k1', 'v')", 0)
    user.same("EVAL", "return redis.call('get', 'other')", 0)
    user.same("EVAL", "return redis.pcall('set', 'k1', 'v')", 0)
    user.same("EVAL", "return {redis.acl_check_cmd('set', 'k1', 'v'), redis.acl_check_cmd('get', 'k1')}", 0)
    user.same("EVAL", "return redis.acl_check_cmd('get', 'zzz')", 0)
    user.same("EVAL", "return redis.acl_check_cmd('nosuch')", 0)
    user.same("EVAL", "return redis.call('get', 'k1')", 0)
    lua_pair.real("ACL", "DELUSER", "luauser")  # the real server outlives the test (fakeredis answers +OK, not :1)
