"""DUMP / RESTORE against the real servers: payload bytes, payloads crossing both ways, RESTORE's replies.

* Bytes: the same commands on both sides, then DUMP on each: the bodies (type + object) must be equal byte
  for byte, for every encoding the content and CONFIG decide (strings incl. integer and LZF forms, small
  lists, intsets, listpack sets (7.2+), zsets, hashes, streams with their nodes, tombstones, groups, PELs
  and consumers). Clock-made times inside a payload (delivery, seen, active) are compared within the
  harness tolerance and then taken from the real side (:func:`_same_body`). Hashtable encodings are left
  out: their order is the server's random dict order.
* The footer: the fake writes its profile's RDB version (``fake_streams.rdb.payload``). Redis 7.0.15 and
  the 7.0 profile write 10, Valkey 9.1.2 and the valkey-9.1 profile 80, so there the whole payload must be
  equal. Valkey 9.1 writes 80 where the profiles it stands in for (7.4: 12, valkey-8.0: 11) write their own:
  compared as a known difference.
* Crossing: a real payload RESTOREd on both sides (Valkey 9's re-framed with the profile's version, as
  the server of that profile writes it) and a fake payload RESTOREd on both sides (re-framed with a version
  Valkey 9 loads): everything read back must be equal (XINFO STREAM FULL, XPENDING, later trims …).
* RESTORE's errors and options, raw replies (RESP2 and RESP3), including the crafted-pickle payload.
"""

from __future__ import annotations

import hashlib
import pickle

import pytest

from fake_streams.rdb import dump_payload, format_for, load_payload
from fake_streams.rdb.payload import RdbFormat, frame

from .replies import expected_err, ids, times

#: Valkey 9 writes RDB version 80 (and loads <= 11 and 80)
VALKEY_9_VERSION = 80
#: the settings these tests change, with the servers' defaults (the real server outlives a test; FLUSHALL
#: leaves its CONFIG alone)
DEFAULTS = {"stream-node-max-entries": "100", "stream-node-max-bytes": "4096", "hash-max-listpack-entries": "512",
            "zset-max-listpack-value": "64", "rdbcompression": "yes"}


@pytest.fixture(autouse=True)
def _config_defaults(pair):
    yield
    for name, value in DEFAULTS.items():
        pair.real("CONFIG", "SET", name, value)


def _fmt(pair) -> RdbFormat:
    return format_for(pair.profile.table_name)


def _any_version(pair) -> RdbFormat:
    """The profile's format, also reading the oracle's own footer version (to decode a real payload)."""
    fmt = _fmt(pair)
    return RdbFormat(fmt.version, fmt.accepted | {VALKEY_9_VERSION}, fmt.max_type, fmt.stream_type, fmt.modern)


def _is_valkey(pair) -> bool:
    """Valkey 9 standing in for a profile with another RDB version (7.4, valkey-8.0); the valkey-9.1 profile
    writes and loads what Valkey 9.1.2 does, so there the whole payload is compared."""
    return pair.target.kind == "valkey" and pair.stands_in


def _for_fake(pair, payload: bytes) -> bytes:
    """A real payload as the profile's server writes it: Valkey 9's body with the profile's version."""
    return frame(payload[:-10], _fmt(pair).version) if _is_valkey(pair) else payload


def _for_real(pair, payload: bytes) -> bytes:
    """A fake payload the oracle loads: Valkey 9 refuses 12 (7.4's) in strict mode, loads 11."""
    return frame(payload[:-10], 11) if _is_valkey(pair) else payload


def _copy_times(real_value, fake_value, tolerance: int):
    """Stream payloads: the fake's clock-made times must be within ``tolerance`` of the real ones; they are
    then replaced by the real ones (the bodies can only be equal once the clocks agree)."""
    if real_value.kind != "stream" or fake_value.kind != "stream":
        return fake_value
    for rg, fg in zip(real_value.data.groups, fake_value.data.groups):
        for rp, fp in zip(rg.pending, fg.pending):
            assert abs(rp.delivery_time - fp.delivery_time) <= tolerance, (rp, fp)
            fp.delivery_time = rp.delivery_time
        for rc, fc in zip(rg.consumers, fg.consumers):
            for attr in ("seen_time", "active_time"):
                r, f = getattr(rc, attr), getattr(fc, attr)
                assert r == f or (r >= 0 and f >= 0 and abs(r - f) <= tolerance), (rc, fc)
                setattr(fc, attr, r)
    return fake_value


def _same_body(pair, key: str) -> bytes:
    """DUMP ``key`` on both sides; the bodies must be equal (times within tolerance) and the fake's footer
    must be its profile's. Returns the real payload."""
    __tracebackhide__ = True
    real = pair.real("DUMP", key)
    fake = pair.fake("DUMP", key)
    assert isinstance(real, bytes) and isinstance(fake, bytes), (real, fake)
    fmt = _any_version(pair)
    real_value, fake_value = load_payload(real, fmt), load_payload(fake, fmt)
    if real_value.kind == "stream" and real_value.data.groups:
        # the fake's payload with the real clock's times, re-encoded by the codec (encode(decode(x)) == x)
        fake = dump_payload(_copy_times(real_value, fake_value, pair.tolerance_ms), _fmt(pair))
    assert fake[-10:-8] == _fmt(pair).version.to_bytes(2, "little")
    assert fake[:-10] == real[:-10], f"DUMP {key}: bodies differ\n  real {real[:-10].hex()}\n  fake {fake[:-10].hex()}"
    if not _is_valkey(pair):
        assert fake == real  # Redis 7.0 and the 7.0 profile: one footer
    else:
        assert real[-10:-8] == VALKEY_9_VERSION.to_bytes(2, "little")
    return real


def _both(pair, *commands) -> None:
    for argv in commands:
        pair.same(*argv)


# ------------------------------------------------------------------------------------------ bytes
def test_dump__strings_in_every_form(pair):
    _both(pair, ("SET", "small", "hello"), ("SET", "int8", "-7"), ("SET", "int32", "1234567"),
          ("SET", "int64", "12345678901234"), ("SET", "notint", "007"), ("SET", "empty", ""),
          ("SET", "lzf", "abc" * 40), ("SET", "incompressible", bytes(range(256))), ("SET", "twenty", "a" * 21))
    for key in ("small", "int8", "int32", "int64", "notint", "empty", "lzf", "incompressible", "twenty"):
        _same_body(pair, key)


def test_dump__compact_encodings(pair):
    _both(pair, ("RPUSH", "list", "a", "1", "-300", "x" * 70, "99999999999"),
          ("SADD", "intset", "5", "-3", "70000"),
          ("SADD", "bigints", "5", str(1 << 40)),
          ("ZADD", "zset", "1", "a", "2.5", "b", "-0.1", "c", "1e20", "d", "inf", "e", "3", "f"),
          ("HSET", "hash", "f1", "v1", "f2", "22", "long", "y" * 60),
          ("SET", "s", "v"))
    for key in ("list", "intset", "bigints", "zset", "hash"):
        _same_body(pair, key)
    _both(pair, ("SADD", "lpset", "x", "y", "10"),
          ("SADD", "converted", "30", "-1", "20"), ("SADD", "converted", "7", "str", "5"), ("SADD", "converted", "1"))
    if pair.profile.has("time_snapshot"):  # 7.2+: small sets of strings are listpacks (7.0: a hashtable)
        _same_body(pair, "lpset")
        _same_body(pair, "converted")  # an intset turned listpack: its integers ascending, then appends


def test_dump__limits_from_config(pair):
    _both(pair, ("CONFIG", "SET", "hash-max-listpack-entries", "2"), ("CONFIG", "SET", "zset-max-listpack-value", "3"),
          ("HSET", "h", "a", "1", "b", "2"), ("ZADD", "z1", "1", "abc"), ("ZADD", "z2", "1", "abcd", "2", "e"),
          ("CONFIG", "SET", "rdbcompression", "no"), ("SET", "raw", "abc" * 40))
    for key in ("h", "z1", "z2", "raw"):
        _same_body(pair, key)


def test_dump__large_zset_is_a_skiplist(pair):
    pair.same("ZADD", "z", *[x for i in range(200) for x in (str(i / 7), f"m{i}")])
    _same_body(pair, "z")


def test_dump__stream_nodes_tombstones_and_counters(pair):
    _both(pair, ("CONFIG", "SET", "stream-node-max-entries", "4"))
    for i in range(1, 16):
        fields = ("f", str(i), "g", "v" * (i % 5)) if i % 3 else ("other", "x" * 30)
        pair.same("XADD", "s", f"{i}-{i % 2}", *fields)
    _both(pair, ("XDEL", "s", "2-0", "7-1", "8-0"), ("XTRIM", "s", "MAXLEN", "10"), ("XTRIM", "s", "MINID", "4-0"))
    _same_body(pair, "s")
    _both(pair, ("XADD", "empty", "MAXLEN", "0", "1-1", "f", "v"))  # no node left, counters kept
    _same_body(pair, "empty")


def test_dump__stream_node_bytes_limit(pair):
    _both(pair, ("CONFIG", "SET", "stream-node-max-bytes", "300"))
    for i in range(40):
        pair.same("XADD", "s", f"{i + 1}-0", "field", f"value-{i * 37}", "n", str(i))
    _both(pair, ("XDEL", "s", "3-0", "20-0"))
    _same_body(pair, "s")


def test_dump__stream_large_values_and_numbers(pair):
    values = ["x" * 63, "y" * 64, "z" * 4095, "w" * 5000, "-1", "0", "007", "-0", "9223372036854775807",
              "9223372036854775808", "-9223372036854775808", "1.5", "127", "128", "-4096", "4095", "32768"]
    for i, value in enumerate(values):
        pair.same("XADD", "s", f"{i + 1}-0", "f", value, value, "n")
    pair.same("XADD", "s", "100-0", *[x for i in range(30) for x in (f"k{i}", str(i * 1000))])
    _same_body(pair, "s")


def test_dump__stream_counters_set_by_xsetid_and_group_offsets(pair):
    _both(pair, ("XADD", "s", "5-0", "f", "v"), ("XADD", "s", "6-0", "f", "w"),
          ("XSETID", "s", "100-0", "ENTRIESADDED", "50", "MAXDELETEDID", "20-0"),
          ("XGROUP", "CREATE", "s", "unknown", "0"), ("XGROUP", "CREATE", "s", "at-end", "$"),
          ("XGROUP", "CREATE", "s", "offset", "5-0", "ENTRIESREAD", "49"),
          ("XGROUP", "CREATE", "s", "", "0"), ("XGROUP", "CREATE", "mk", "g", "$", "MKSTREAM"))
    _same_body(pair, "s")
    _same_body(pair, "mk")


def test_dump__stream_groups_pels_consumers(pair):
    for i in range(1, 8):
        pair.same("XADD", "s", f"{i}-0", "f", str(i))
    _both(pair, ("XGROUP", "CREATE", "s", "g1", "0"), ("XGROUP", "CREATE", "s", "g0", "$"),
          ("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "3", "STREAMS", "s", ">"),
          ("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "2", "STREAMS", "s", ">"),
          ("XGROUP", "CREATECONSUMER", "s", "g0", "carol"),
          ("XCLAIM", "s", "g1", "bob", "0", "1-0", "TIME", "1700000000000", "RETRYCOUNT", "5"),
          ("XACK", "s", "g1", "2-0"), ("XDEL", "s", "3-0"))
    _same_body(pair, "s")


# ------------------------------------------------------------------------------------------ crossing
def _populate(pair) -> None:
    _both(pair, ("CONFIG", "SET", "stream-node-max-entries", "3"),
          ("SET", "str", "x" * 50), ("RPUSH", "list", *[f"e{i}" for i in range(300)]),
          ("SADD", "set", *[f"m{i}" for i in range(150)]), ("SADD", "ints", "1", "2", "3"),
          ("ZADD", "zset", "1.5", "a", "-2", "b"), ("HSET", "hash", *[f"k{i}" for i in range(1200)]))
    for i in range(1, 11):
        pair.same("XADD", "stream", f"{i}-0", "f", str(i))
    _both(pair, ("XDEL", "stream", "2-0", "5-0"), ("XTRIM", "stream", "MAXLEN", "7"),
          ("XGROUP", "CREATE", "stream", "g", "0"),
          ("XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "stream", ">"),
          ("XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "STREAMS", "stream", ">"))


def _compare_contents(pair, key: str) -> None:
    pair.same("TYPE", key)
    kind = pair.fake("TYPE", key)
    reads = {
        b"string": [("GET", key)],
        b"list": [("LRANGE", key, "0", "-1")],
        b"set": [("SMISMEMBER", key, *[f"m{i}" for i in range(152)], "1", "2", "3"), ("SCARD", key)],
        b"zset": [("ZRANGE", key, "0", "-1", "WITHSCORES")],
        b"hash": [("HLEN", key), ("HMGET", key, *[f"k{i}" for i in range(0, 1200, 2)], "nope")],
        b"stream": [("XINFO", "STREAM", key, "FULL"), ("XPENDING", key, "g", "-", "+", "10"),
                    ("XRANGE", key, "-", "+"), ("XINFO", "STREAM", key)],
    }[kind if isinstance(kind, bytes) else kind.encode()]
    for argv in reads:
        pair.same(*argv, normalize=times)


def test_restore__real_payloads_into_the_fake(pair):
    _populate(pair)
    for key in ("str", "list", "set", "ints", "zset", "hash", "stream"):
        payload = pair.real("DUMP", key)
        pair.real("RESTORE", f"r:{key}", "0", payload)
        assert pair.fake("RESTORE", f"r:{key}", "0", _for_fake(pair, payload)) == b"OK"
        _compare_contents(pair, f"r:{key}")
    pair.same("XTRIM", "r:stream", "MAXLEN", "~", "2")
    pair.same("XADD", "r:stream", "*", "after", "restore", normalize=ids)
    pair.same("XLEN", "r:stream", normalize=times)
    pair.same("XREADGROUP", "GROUP", "g", "c3", "STREAMS", "r:stream", "0")


def test_restore__fake_payloads_into_the_real_server(pair):
    _populate(pair)
    for key in ("str", "list", "set", "ints", "zset", "hash", "stream"):
        payload = pair.fake("DUMP", key)
        assert pair.real("RESTORE", f"f:{key}", "0", _for_real(pair, payload)) == b"OK"
        pair.fake("RESTORE", f"f:{key}", "0", payload)
        _compare_contents(pair, f"f:{key}")
    pair.same("XTRIM", "f:stream", "MAXLEN", "~", "2")
    pair.same("XINFO", "STREAM", "f:stream", "FULL", normalize=times)


def test_restore__stream_keeps_nodes_for_later_trims(pair):
    _both(pair, ("CONFIG", "SET", "stream-node-max-entries", "5"))
    for i in range(1, 21):
        pair.same("XADD", "s", f"{i}-0", "f", str(i))
    payload = pair.real("DUMP", "s")
    _both(pair, ("CONFIG", "SET", "stream-node-max-entries", "100"))
    pair.real("RESTORE", "copy", "0", payload)
    pair.fake("RESTORE", "copy", "0", _for_fake(pair, payload))
    pair.same("XINFO", "STREAM", "copy")
    pair.same("XTRIM", "copy", "MAXLEN", "~", "12")
    pair.same("XADD", "copy", "21-0", "f", "21")
    pair.same("XINFO", "STREAM", "copy")
    _same_body(pair, "copy")


# ------------------------------------------------------------------------------------------ RESTORE replies
def test_restore__options_and_errors(pair):
    pair.same("SET", "src", "value")
    payload = pair.real("DUMP", "src")
    mine = pair.per_side(real=payload, fake=_for_fake(pair, payload))
    bad_crc = pair.per_side(real=payload[:-1] + bytes((payload[-1] ^ 1,)),
                            fake=_for_fake(pair, payload)[:-1] + bytes((_for_fake(pair, payload)[-1] ^ 1,)))
    pair.same("RESTORE", "src", "x", mine, "BOGUS")
    pair.same("RESTORE", "src", "0", mine, "IDLETIME", "x")
    pair.same("RESTORE", "src", "0", mine, "IDLETIME", "-1")
    pair.same("RESTORE", "src", "0", mine, "FREQ", "256")
    pair.same("RESTORE", "src", "0", mine, "FREQ", "-1")
    pair.same("RESTORE", "src", "0", mine, "IDLETIME", "1", "FREQ", "1")
    pair.same("RESTORE", "src", "0", mine, "IDLETIME")
    pair.same("RESTORE", "src", "x", mine)
    pair.same("RESTORE", "src", "0", mine)
    pair.same("RESTORE", "new", "x", mine)
    pair.same("RESTORE", "new", "-1", mine)
    pair.same("RESTORE", "new", "0", "")
    pair.same("RESTORE", "new", "0", "short")
    pair.same("RESTORE", "new", "0", bad_crc)
    pair.same("RESTORE", "new", "0", frame(b"\x00\x01v", 999))
    pair.same("RESTORE", "new", "0", frame(b"\x63\x00", 9))
    pair.same("RESTORE", "new", "0", frame(b"\x00\x80\x00\x01\x00\x00v", 9))
    pair.same("RESTORE", "new", "0", frame(b"\x02\x00", 9))  # an empty set
    pair.same("RESTORE", "new", "0", frame(b"\x12\x01\x02\x05hello", 9))  # a quicklist node that is no listpack
    pair.same("EXISTS", "new")
    pair.same("GET", "src")
    pair.same("RESTORE", "src", "0", mine, "REPLACE", "IDLETIME", "5")
    pair.same("RESTORE", "abs", "1", mine, "ABSTTL")
    pair.same("EXISTS", "abs")
    pair.same("RESTORE", "src", "1", mine, "ABSTTL", "REPLACE")
    pair.same("EXISTS", "src")
    pair.same("RESTORE", "later", "4102444800000", mine, "absttl", "freq", "100")
    pair.same("PEXPIRETIME", "later")
    pair.same("RESTORE", "ttl", "100000", mine, "replace")
    pair.same("TTL", "ttl")
    pair.same("RESTORE", "old-version", "0", frame(b"\x00\x01v", 6))
    pair.same("GET", "old-version")


def test_dump_and_restore__arity_and_missing_keys(pair):
    pair.same("DUMP", "missing")
    pair.same("DUMP")
    pair.same("DUMP", "a", "b")
    pair.same("RESTORE", "k", "0")
    pair.same("RESTORE", "k")
    pair.same("SET", "k", "v")
    pair.same("DUMP", "k", "extra")


def test_restore__a_crafted_pickle_is_refused(pair, tmp_path):
    class CreatesAFile:
        def __reduce__(self):
            return (open, (str(tmp_path / "ran"), "w"))

    body = pickle.dumps(CreatesAFile())
    pair.same("RESTORE", "k", "0", hashlib.sha1(body).digest() + body)
    pair.same("RESTORE", "k", "0", hashlib.sha1(body).digest() + body, "REPLACE")
    pair.same("EXISTS", "k")
    assert not (tmp_path / "ran").exists()


def test_restore__a_payload_from_a_newer_server_is_refused(pair):
    pair.same("SET", "src", "value")
    body = pair.real("DUMP", "src")[:-10]
    pair.same("RESTORE", "k", "0", frame(body, 13))  # newer than every profile and than Valkey 9's <= 11
    if not _is_valkey(pair):
        pair.same("RESTORE", "k", "0", frame(body, _fmt(pair).version + 1))
    pair.same("EXISTS", "k")


@pytest.mark.parametrize("version", [10, 11, 12])
def test_restore__footer_versions(pair, version):
    """Which RDB versions RESTORE loads: Redis 7.0 up to 10; Valkey 9 up to 11 (and 80), the profiles it
    stands in for up to their own (7.4: 12)."""
    payload = frame(b"\x00\x01v", version)
    fmt = _fmt(pair)
    if _is_valkey(pair) and (version in fmt.accepted) != (version <= 11):
        expected = b"OK" if version in fmt.accepted else expected_err("ERR DUMP payload version or checksum are wrong")
        with pair.known_difference("valkey-9.1", reason=f"the {pair.profile.name} profile loads RDB <= {fmt.version}, "
                                   "Valkey 9 loads <= 11 and 80", expected=expected):
            pair.same("RESTORE", "k", "0", payload)
        return
    pair.same("RESTORE", "k", "0", payload)
    pair.same("GET", "k")


# ------------------------------------------------------------------------------------------ around RESTORE
def _stream_payload(pair):
    """A stream with two entries and a group, DUMPed on the real side (and removed there)."""
    _both(pair, ("XADD", "src", "1-1", "f", "v"), ("XADD", "src", "2-0", "f", "w"),
          ("XGROUP", "CREATE", "src", "g", "0"))
    payload = pair.real("DUMP", "src")
    return pair.per_side(real=payload, fake=_for_fake(pair, payload))


def test_restore__wakes_readers_blocked_on_the_key(pair):
    payload = _stream_payload(pair)
    reader = pair.connect()
    reader.send("XREAD", "BLOCK", "0", "STREAMS", "k", "0-0")
    group_reader = pair.connect()
    group_reader.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "src", ">")
    pair.wait_blocked(1)  # the XREADGROUP was served at once (entries after the group's last ID)
    pair.same("RESTORE", "k", "0", payload)
    reader.read()
    group_reader.read()


def test_restore__in_multi_and_exec(pair):
    payload = _stream_payload(pair)
    pair.same("MULTI")
    pair.same("RESTORE", "k", "0", payload)
    pair.same("RESTORE", "k", "0", payload)
    pair.same("XLEN", "k")
    pair.same("EXEC")
    pair.same("XINFO", "GROUPS", "k", normalize=times)


def test_restore__replace_of_another_type_and_wrongtype_after(pair):
    payload = _stream_payload(pair)
    _both(pair, ("RPUSH", "k", "a"), ("EXPIRE", "k", "1000"))
    pair.same("RESTORE", "k", "0", payload, "REPLACE")
    pair.same("TYPE", "k")
    pair.same("TTL", "k")
    pair.same("LPUSH", "k", "x")
    pair.same("XRANGE", "k", "-", "+")


def test_dump_and_restore_from_a_script(pair):
    pytest.importorskip("lupa")
    _both(pair, ("XADD", "s", "1-1", "f", "v"), ("SET", "str", "abc" * 10))
    # the body only: Valkey 9's footer is its own (the whole payload is compared on Redis 7.0)
    script = ("local p = redis.call('DUMP', KEYS[1]); redis.call('RESTORE', KEYS[2], 0, p); "
              "return ARGV[1] == 'whole' and p or string.sub(p, 1, -11)")
    part = "body" if _is_valkey(pair) else "whole"
    pair.same("EVAL", script, "2", "str", "str2", part)
    pair.same("GET", "str2")
    pair.same("EVAL", script, "2", "s", "s2", part)
    pair.same("XINFO", "STREAM", "s2")
    pair.same("EVAL", "return redis.pcall('RESTORE', KEYS[1], 0, 'junk')", "1", "k")
    pair.same("EVAL", "return redis.call('DUMP', KEYS[1]) == false", "1", "nothing")
