"""FUNCTION LOAD/LIST/DELETE/FLUSH/STATS/KILL and FCALL/FCALL_RO, fake vs real (raw replies, RESP2 and RESP3).

The servers list a library's functions (and the libraries) in the order of their hash dictionaries, whose
seed is random per process: :func:`dict_order` lets the real reply take the fake's order when both hold the
same entries (anything else still differs).
"""

from __future__ import annotations

from typing import Any

import pytest

from .lua_texts import valkey_8_texts

LIB1 = ("#!lua name=lib1\n"
        "redis.register_function('f1', function(keys, args) return {keys[1], args[1]} end)\n"
        "redis.register_function{function_name='f2', callback=function() return nil + 1 end, flags={'no-writes'},"
        " description='d'}")
LIB3 = ("#!lua name=lib3\n"
        "redis.register_function('g3', function() redis.setresp(3) return redis.call('hgetall', 'x') end)\n"
        "redis.register_function('g4', function() return KEYS end)\n"
        "redis.register_function('g5', function() x = 1 end)\n"
        "redis.register_function('g6', function() return redis.call('set', 'k', 'v') end)\n"
        "redis.register_function{function_name='g7', callback=function() return redis.call('set', 'k', 'v') end,"
        " flags={'no-writes'}}\n"
        "redis.register_function('g8', function(keys, args) return redis.call('xadd', keys[1], '1-1', 'f', args[1]) end)\n"
        "redis.register_function('g9', function() return {pcall(redis.call, 'nosuch')} end)\n")


def _entries(reply: Any) -> Any:
    if isinstance(reply, dict):
        return reply
    if isinstance(reply, list) and len(reply) % 2 == 0:
        return dict(zip(reply[::2], reply[1::2]))
    return None


def _reorder(real: list, fake: list, key: bytes) -> list:
    """``real`` in ``fake``'s order when both list the same entries (by their ``key`` field)."""
    def name(item: Any) -> Any:
        fields = _entries(item)
        return fields.get(key) if fields else None
    if sorted(map(name, real), key=repr) != sorted(map(name, fake), key=repr):
        return real
    by_name = {name(item): item for item in real}
    return [by_name[name(item)] for item in fake]


def dict_order(real: Any, fake: Any, pair: Any) -> Any:
    if not isinstance(real, list) or not isinstance(fake, list):
        return real
    real = _reorder(real, fake, b"library_name")
    out = []
    for r_lib, f_lib in zip(real, fake):
        r_fields, f_fields = _entries(r_lib), _entries(f_lib)
        if not r_fields or not f_fields or b"functions" not in r_fields or b"functions" not in f_fields:
            out.append(r_lib)
            continue
        functions = _reorder(r_fields[b"functions"], f_fields[b"functions"], b"name")
        if isinstance(r_lib, dict):
            r_lib = {k: (functions if k == b"functions" else v) for k, v in r_lib.items()}
        else:
            r_lib = [functions if i > 0 and r_lib[i - 1] == b"functions" and i % 2 == 1 else v
                     for i, v in enumerate(r_lib)]
        out.append(r_lib)
    return out + real[len(out):]


@pytest.fixture
def fpair(pair):
    valkey_8_texts(pair).same("FUNCTION", "FLUSH")
    return pair


LOAD_CASES = [
    [LIB1],  # already exists (loaded just before)
    ["return 1"],
    ["#!lua name=lib2\nlocal x = string.format('%d', 1)"],
    ["#!lua name=lib2\nreturn 1"],
    ["#!lua name=lib2\nredis.register_function('f1', function() return 1 end)"],
    ["#!lua name=lib2\nredis.register_function('bad-name', function() return 1 end)"],
    ["#!lua name=lib2\nredis.call('ping')"],
    ["#!lua name=lib2\nif"],
    ["#!lua name=lib2 x=y\nredis.register_function('g', function() return 1 end)"],
    ["#!lua name=lib2\nredis.register_function{function_name='g', callback=function() end, flags={'bogus'}}"],
    ["#!lua name=lib2\nredis.register_function('g')"],
    ["#!lua name=lib2\nredis.register_function{callback=function() end}"],
    ["#!lua name=lib2\nredis.register_function{function_name='g', cb=1}"],
    ["#!lua name=bad-lib\nredis.register_function('g', function() end)"],
    ["#!lua\nredis.register_function('g', function() end)"],
    ["#!js name=x\nredis.register_function('g', function() end)"],
    ["#!lua name=lib2\nredis.register_function('g', function() end)\nredis.register_function('g', function() end)"],
    ["BOGUS", LIB1],
    ["REPLACE", LIB1],
]


def test_load_errors(fpair):
    fpair.same("FUNCTION", "LOAD", LIB1)
    for args in LOAD_CASES:
        fpair.same("FUNCTION", "LOAD", *args)


def test_fcall(fpair):
    fpair.same("FUNCTION", "LOAD", LIB1)
    fpair.same("FUNCTION", "LOAD", LIB3)
    fpair.same("FCALL", "f1", 1, "k", "a")
    fpair.same("FCALL", "f2", 0)
    fpair.same("FCALL_RO", "f1", 0)
    fpair.same("FCALL_RO", "f2", 0)
    fpair.same("FCALL", "nosuch", 0)
    fpair.same("FCALL", "f1", "x")
    fpair.same("FCALL", "f1", 5)
    fpair.same("FCALL", "f1", -1)
    for name in ("g3", "g4", "g5", "g6", "g7", "g9"):
        fpair.same("FCALL", name, 0)
    fpair.same("FCALL_RO", "g7", 0)
    fpair.same("FCALL", "g8", 1, "s", "v")
    fpair.same("XRANGE", "s", "-", "+")
    fpair.same("EVAL", "return redis.call('fcall', 'f1', 0)", 0)


def test_list_stats_delete_flush(fpair):
    fpair.same("FUNCTION", "LOAD", LIB1)
    fpair.same("FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('o1', function() return 1 end)")
    fpair.same("FUNCTION", "LIST", normalize=dict_order)
    fpair.same("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "li*", normalize=dict_order)
    fpair.same("FUNCTION", "LIST", "LIBRARYNAME", "OTH*")
    fpair.same("FUNCTION", "LIST", "LIBRARYNAME")
    fpair.same("FUNCTION", "LIST", "BOGUS")
    fpair.same("FUNCTION", "STATS")
    fpair.same("FUNCTION", "DELETE", "other")
    fpair.same("FUNCTION", "DELETE", "other")
    fpair.same("FCALL", "o1", 0)
    fpair.same("FUNCTION", "KILL")
    fpair.same("FUNCTION", "FLUSH", "bogus")
    fpair.same("FUNCTION", "FLUSH", "SYNC")
    fpair.same("FUNCTION", "LIST")
    fpair.same("FUNCTION", "STATS")


LONG = ("#!lua name=longlib\n"
        "redis.register_function('long_one', function(keys, args) return 'hello world hello world hello world' end)")


def test_dump_and_restore(fpair):
    if fpair.profile.server == "valkey" and fpair.stands_in:
        pytest.skip("Valkey 9.1 writes its own RDB version (newer than Valkey 8.0's): its payloads are not 8.0's")
    fpair.same("FUNCTION", "LOAD", LONG)
    fake_payload = fpair.same("FUNCTION", "DUMP")  # LZF-compressed code: the same bytes
    real_payload = fpair.real("FUNCTION", "DUMP")
    fpair.same("FUNCTION", "FLUSH")
    fpair.same("FUNCTION", "RESTORE", fpair.per_side(real=fake_payload, fake=real_payload))  # each restores the other's
    fpair.same("FUNCTION", "LIST", "WITHCODE")
    fpair.same("FCALL", "long_one", 0)
    fpair.same("FUNCTION", "RESTORE", fpair.per_side(real=real_payload, fake=fake_payload))  # APPEND: exists
    fpair.same("FUNCTION", "RESTORE", fpair.per_side(real=real_payload, fake=fake_payload), "REPLACE")
    fpair.same("FUNCTION", "RESTORE", fpair.per_side(real=real_payload, fake=fake_payload), "FLUSH")
    fpair.same("FUNCTION", "RESTORE", fpair.per_side(real=real_payload, fake=fake_payload), "BOGUS")
    fpair.same("FUNCTION", "RESTORE", fpair.per_side(real=real_payload, fake=fake_payload), "FLUSH", "x")
    fpair.same("FUNCTION", "RESTORE", b"garbage-payload")
    fpair.same("FUNCTION", "RESTORE", fpair.per_side(real=real_payload[:-1] + b"\0", fake=fake_payload[:-1] + b"\0"))
    fpair.same("FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('long_one', function() return 2 end)")
    fpair.same("FUNCTION", "FLUSH")
    fpair.same("FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('long_one', function() return 2 end)")
    fpair.same("FUNCTION", "RESTORE", fpair.per_side(real=real_payload, fake=fake_payload))  # Function … exists


def test_dump_of_code_lzf_cannot_shorten(fpair):
    if fpair.profile.server == "valkey" and fpair.stands_in:
        pytest.skip("Valkey 9.1 writes its own RDB version (newer than Valkey 8.0's): its payloads are not 8.0's")
    # LZF cannot shorten this code by 4 bytes, so it is stored plain: the same bytes, CRC64 included
    fpair.same("FUNCTION", "LOAD", "#!lua name=s\nredis.register_function('s', function() return 1 end)")
    fpair.same("FUNCTION", "DUMP")


def test_info_counts_scripts_and_functions(fpair):
    from .oracles import parse_info

    fpair.same("SCRIPT", "FLUSH")  # the real server keeps its script cache across tests (FLUSHALL spares it)
    fpair.same("SCRIPT", "LOAD", "return 1")
    fpair.same("EVAL", "return 2", 0)
    fpair.same("FUNCTION", "LOAD", LIB1)
    fields = ("number_of_cached_scripts", "number_of_functions", "number_of_libraries")
    real, fake = parse_info(fpair.real("INFO", "memory")), parse_info(fpair.fake("INFO", "memory"))
    assert [real.get(f) for f in fields] == [fake.get(f) for f in fields] == ["2", "2", "1"]
