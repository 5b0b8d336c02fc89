"""Redis 8.6's IDMP state beyond XADD / XCFGSET (addendum streams-redis8.md §2.9, §2.10): the ``stream-idmp-duration``
/ ``stream-idmp-maxsize`` CONFIG parameters, XIDMPRECORD, and the state in DUMP / RESTORE (RDB 13,
RDB_TYPE_STREAM_LISTPACKS_4), on the fake's 8.6 and 8.10 profiles with a ManualClock. No Redis 8.6 server is here:
the RDB layout is redis/librdb's RDB-13 parser's (the DUMP body of the stream below equals the stream of librdb's
Redis 8.6 test file byte for byte, docs/redis8-choices.md "IDMP in DUMP / RESTORE"); the live Redis 8.2.3 oracle
checks the pre-8.6 answers (tests/conformance/test_redis8_refs.py). Choices: docs/redis8-choices.md.
"""

import pytest
import redis

from fake_streams import FakeStreamsServer
from fake_streams.clock import ManualClock
from fake_streams.rdb.payload import frame
from tests.conftest import raw_reply

T0 = 1_771_945_454_291  # the ms of librdb's Redis 8.6 test stream


@pytest.fixture(params=("8.6", "8.10"))
def env(request):
    clock = ManualClock(T0)
    server = FakeStreamsServer(version=request.param, clock=clock)
    yield server, clock, server.client()
    server.close()


def _info(r, key):
    return {k: v for k, v in r.xinfo_stream(key).items() if k not in ("first-entry", "last-entry")}


def _two_producers(r, key="k"):
    raw_reply(r, "XADD", key, "*", "field1", "value1")
    raw_reply(r, "XADD", key, "IDMP", "producer1", "iid_p1_e1", "*", "idmp_field", "prod1_ent1")
    raw_reply(r, "XADD", key, "IDMP", "producer2", "iid_p2_e1", "*", "idmp_field", "prod2_ent1")


# ------------------------------------------------------------------------------------------- CONFIG
@pytest.mark.parametrize("version", ("7.4", "8.0", "8.4", "valkey-9.1"))
def test_no_idmp_parameters_before_8_6(version):
    server = FakeStreamsServer(version=version)
    try:
        r = server.client()
        assert sorted(r.config_get("stream-*")) == ["stream-node-max-bytes", "stream-node-max-entries"]
        with pytest.raises(redis.ResponseError, match="^Unknown option or number of arguments for CONFIG SET - 'stream-idmp-duration'$"):
            r.config_set("stream-idmp-duration", "5")
    finally:
        server.close()


def test_idmp_parameters_defaults_ranges_and_errors(env):
    # ranges: XCFGSET's (a choice: the addendum has no CONFIG range); the errors are the numeric-config texts
    _, _, r = env
    assert r.config_get("stream-*") == {"stream-idmp-duration": "100", "stream-idmp-maxsize": "100",
                                        "stream-node-max-bytes": "4096", "stream-node-max-entries": "100"}
    for name, bad, hi in (("stream-idmp-duration", ("0", "-1", "86401"), 86400),
                          ("stream-idmp-maxsize", ("0", "-50", "10001"), 10000)):
        for value in bad:
            with pytest.raises(redis.ResponseError, match=rf"^CONFIG SET failed \(possibly related to argument '{name}'\)"
                                                          rf" - argument must be between 1 and {hi} inclusive$"):
                r.config_set(name, value)
        with pytest.raises(redis.ResponseError, match="argument couldn't be parsed into an integer$"):
            r.config_set(name, "abc")
        assert r.config_get(name) == {name: "100"}  # unchanged by the errors
        assert r.config_set(name, str(hi)) is True and r.config_get(name) == {name: str(hi)}


def test_a_new_stream_takes_the_parameters_of_its_creation(env):
    # Tcl "XINFO STREAM shows default IDMP parameters": a new stream's XINFO equals CONFIG GET of both; later
    # CONFIG SET changes new streams only (addendum §2.9: "defaults for new streams")
    _, _, r = env
    raw_reply(r, "XADD", "old", "*", "f", "v")
    r.config_set("stream-idmp-duration", "7")
    r.config_set("stream-idmp-maxsize", "2")
    raw_reply(r, "XADD", "new", "*", "f", "v")
    raw_reply(r, "XGROUP", "CREATE", "mk", "g", "$", "MKSTREAM")
    assert [_info(r, k)["idmp-duration"] for k in ("old", "new", "mk")] == [100, 7, 7]
    assert [_info(r, k)["idmp-maxsize"] for k in ("old", "new", "mk")] == [100, 2, 2]
    for i in range(3):  # maxsize 2: the third iid evicts the first
        raw_reply(r, "XADD", "new", "IDMP", "p", f"req-{i}", "*", "n", str(i))
    assert _info(r, "new")["iids-tracked"] == 2
    assert raw_reply(r, "XADD", "new", "IDMP", "p", "req-0", "*", "n", "again") != raw_reply(r, "XRANGE", "new", "-", "+")[1][0]


# ------------------------------------------------------------------------------------------- XIDMPRECORD
@pytest.mark.parametrize("version", ("7.4", "8.4", "valkey-9.1"))
def test_xidmprecord_is_unknown_before_8_6(version):
    # the version conflict (release notes: 8.6.2, #14794; command page: since 8.8.0) is decided for 8.6.2: the notes
    # name the patch and PR, 8.6.2 fixed IDMP under aof-use-rdb-preamble no (which needs this command to rebuild the
    # map), and librdb writes XIDMPRECORD for 8.6+ targets; so "8.6" (8.6.2) has it (env below), 8.4 does not
    server = FakeStreamsServer(version=version)
    try:
        assert raw_reply(server.client(), "XIDMPRECORD", "s", "p", "i", "1-0") == (
            "-unknown command 'XIDMPRECORD', with args beginning with: 's' 'p' 'i' '1-0' ")
    finally:
        server.close()


def test_xidmprecord_errors_in_order(env):
    # the texts are choices (the sources name the cases, not the texts): docs/redis8-choices.md "XIDMPRECORD"
    _, _, r = env
    raw_reply(r, "XADD", "s", f"{T0}-0", "f", "v")
    raw_reply(r, "SET", "str", "x")
    assert raw_reply(r, "XIDMPRECORD", "s", "p", "i") == "-wrong number of arguments for 'xidmprecord' command"
    assert raw_reply(r, "XIDMPRECORD", "s", "p", "i", "1-0", "x") == "-wrong number of arguments for 'xidmprecord' command"
    steps = [
        (("str", "", "", "bad"), "-WRONGTYPE Operation against a key holding the wrong kind of value"),
        (("nokey", "", "", "bad"), "-no such key"),
        (("s", "", "", "bad"), "-IDMP requires a non-empty producer ID"),
        (("s", "p", "", "bad"), "-IDMP requires a non-empty idempotent ID"),
        (("s", "p", "i", "bad"), "-Invalid stream ID specified as stream command argument"),
        (("s", "p", "i", "+"), "-Invalid stream ID specified as stream command argument"),
        (("s", "p", "i", f"{T0}-1"), "-The stream ID does not exist in the stream"),
    ]
    for argv, error in steps:
        assert raw_reply(r, "XIDMPRECORD", *argv) == error, argv
    assert _info(r, "s")["pids-tracked"] == 0  # nothing recorded by the errors
    assert raw_reply(r, "XIDMPRECORD", "s", "p", "i", f"{T0}") == b"OK"  # `ms` alone is ms-0
    assert raw_reply(r, "XIDMPRECORD", "s", "p", "i", f"{T0}-0") == b"OK"  # the same pair again: OK, nothing changes
    raw_reply(r, "XADD", "s", f"{T0}-5", "f", "w")
    assert raw_reply(r, "XIDMPRECORD", "s", "p", "i", f"{T0}-5") == "-The IID is already recorded with a different stream ID"
    info = _info(r, "s")
    assert (info["pids-tracked"], info["iids-tracked"], info["iids-added"], info["iids-duplicates"]) == (1, 1, 0, 0)


def test_xidmprecord_rebuilds_what_an_aof_rewrite_writes(env):
    # librdb's RESP output for an 8.6 target (and an AOF rewrite): the entries, XCFGSET, then one XIDMPRECORD per
    # tracked iid, oldest first; the rebuilt stream deduplicates as the original did
    _, clock, r = env
    _two_producers(r)
    ids = [e[0] for e in raw_reply(r, "XRANGE", "k", "-", "+")]
    for entry_id, fields in raw_reply(r, "XRANGE", "k", "-", "+"):
        raw_reply(r, "XADD", "copy", entry_id, *fields)
    assert raw_reply(r, "XCFGSET", "copy", "IDMP-DURATION", "100", "IDMP-MAXSIZE", "100") == b"OK"
    assert raw_reply(r, "XIDMPRECORD", "copy", "producer1", "iid_p1_e1", ids[1]) == b"OK"
    assert raw_reply(r, "XIDMPRECORD", "copy", "producer2", "iid_p2_e1", ids[2]) == b"OK"
    assert raw_reply(r, "XADD", "copy", "IDMP", "producer1", "iid_p1_e1", "*", "x", "y") == ids[1]
    info = _info(r, "copy")
    assert (info["pids-tracked"], info["iids-tracked"], info["iids-added"], info["iids-duplicates"]) == (2, 2, 0, 1)
    # a recorded iid ages from its entry ID's ms (the server keeps no other time per iid)
    clock.advance(100_000)
    assert raw_reply(r, "XADD", "copy", "IDMP", "producer1", "iid_p1_e1", "*", "x", "y") not in ids


def test_xidmprecord_evicts_at_maxsize_in_multi_and_lua(env):
    _, _, r = env
    for i in range(3):
        raw_reply(r, "XADD", "s", f"{T0}-{i}", "f", "v")
    raw_reply(r, "XCFGSET", "s", "IDMP-MAXSIZE", "2")
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("XIDMPRECORD", "s", "p", "a", f"{T0}-0")
    pipe.execute_command("XIDMPRECORD", "s", "p", "b", f"{T0}-1")
    assert pipe.execute() == [b"OK", b"OK"]
    assert r.eval("return redis.call('XIDMPRECORD', KEYS[1], 'p', 'c', ARGV[1])", 1, "s", f"{T0}-2") == b"OK"
    assert _info(r, "s")["iids-tracked"] == 2
    assert raw_reply(r, "XADD", "s", "IDMP", "p", "a", "*", "f", "v") not in (f"{T0}-0".encode(),)  # "a" was evicted
    assert raw_reply(r, "XADD", "s", "IDMP", "p", "c", "*", "f", "v") == f"{T0}-2".encode()


# ------------------------------------------------------------------------------------------- DUMP / RESTORE
#: the IDMP part of the DUMP of the stream _two_producers() makes at T0: duration 100, maxsize 100 (14-bit
#: lengths), 2 producers, per producer its ID, 1 iid, the iid and its entry ID (ms as a 64-bit length, seq);
#: iids-added 2, iids-duplicates 0. The same bytes end the stream of librdb's Redis 8.6 test file.
IDMP_TAIL = bytes.fromhex(
    "40644064" "02"
    "0970726f64756365723101" "096969645f70315f6531" "810000019c902dead3" "01"
    "0970726f64756365723201" "096969645f70325f6531" "810000019c902dead3" "02"
    "02" "00")


#: (stream type, RDB version) of each profile's DUMP: 8.6 → RDB_TYPE_STREAM_LISTPACKS_4 / 13; 8.10 (8.8's format)
#: → RDB_TYPE_STREAM_LISTPACKS_5 / 14, whose body is 26's with the groups' NACK zones (none here)
FORMATS = {"8.6": (26, 13), "8.10": (27, 14)}


def test_dump_writes_the_rdb_version_and_the_idmp_state(env):
    server, _, r = env
    stream_type, version = FORMATS[server.profile.name]
    _two_producers(r)
    payload = r.dump("k")
    assert payload[0] == stream_type
    assert payload[-10:-8] == version.to_bytes(2, "little")
    assert payload[:-10].endswith(b"\x00" + IDMP_TAIL)  # 0 consumer groups, then the IDMP state
    raw_reply(r, "SET", "str", "x")
    assert r.dump("str")[-10:-8] == version.to_bytes(2, "little")  # every DUMP of the server says its RDB version
    raw_reply(r, "XADD", "plain", "1-0", "f", "v")  # never written with IDMP: the defaults and zero counters
    assert r.dump("plain")[:-10].endswith(b"\x00" + bytes.fromhex("40644064" "00" "00" "00"))


def test_restore_round_trip_keeps_the_map_order_and_counters(env):
    _, clock, r = env
    raw_reply(r, "XADD", "k", "*", "f", "v")
    raw_reply(r, "XCFGSET", "k", "IDMP-DURATION", "50", "IDMP-MAXSIZE", "3")
    added = [raw_reply(r, "XADD", "k", "IDMP", "p", f"req-{i}", "*", "n", str(i)) for i in range(4)]  # req-0 evicted
    raw_reply(r, "XADD", "k", "IDMP", "p", "req-3", "*", "n", "dup")
    raw_reply(r, "XADD", "k", "IDMP", "q", "only", "*", "n", "q")
    raw_reply(r, "XGROUP", "CREATE", "k", "g", "0")
    raw_reply(r, "XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "k", ">")
    before = _info(r, "k")
    payload = r.dump("k")
    assert r.restore("k2", 0, payload) == b"OK"
    assert _info(r, "k2") == {**before}
    assert r.dump("k2") == payload
    assert raw_reply(r, "XADD", "k2", "IDMP", "p", "req-1", "*", "n", "x") == added[1]  # still tracked
    assert raw_reply(r, "XADD", "k2", "IDMP", "p", "req-0", "*", "n", "x") not in added  # evicted before the DUMP
    # the oldest of the restored map is evicted first: req-2 goes when "new" comes, req-3 stays
    raw_reply(r, "XADD", "k2", "IDMP", "p", "new", "*", "n", "x")
    assert raw_reply(r, "XADD", "k2", "IDMP", "p", "req-3", "*", "n", "x") == added[3]
    # ages on: after IDMP-DURATION every iid is forgotten
    clock.advance(50_000)
    assert _info(r, "k2")["iids-tracked"] == 0


def test_restore_of_an_older_payload_takes_the_config_defaults(env):
    server, _, r = env
    old = FakeStreamsServer(version="8.4").client()
    old.xadd("s", {"f": "v"}, id="1-0")
    r.config_set("stream-idmp-duration", "9")
    assert r.restore("s", 0, old.dump("s")) == b"OK"
    assert (_info(r, "s")["idmp-duration"], _info(r, "s")["idmp-maxsize"]) == (9, 100)


def test_pre_8_6_profiles_refuse_an_8_6_payload(env):
    # Redis 8.4 loads RDB <= 12 and no type 26: the version check comes first, then the body's type (the same
    # answers as the real Redis 8.2.3 gives: tests/conformance/test_redis8_refs.py)
    server, _, r = env
    _two_producers(r)
    payload = r.dump("k")
    older = FakeStreamsServer(version="8.4").client()
    with pytest.raises(redis.ResponseError, match="^DUMP payload version or checksum are wrong$"):
        older.restore("k", 0, payload)
    with pytest.raises(redis.ResponseError, match="^Bad data format$"):
        older.restore("k", 0, frame(payload[:-10], 12))
    if server.profile.name == "8.10":  # 8.10 loads 8.6's payload (RDB 13, type 26), IDMP state included
        eight_six = FakeStreamsServer(version="8.6", clock=ManualClock(T0))
        try:
            old = eight_six.client()
            _two_producers(old)
            assert r.restore("from86", 0, old.dump("k")) == b"OK"
            assert _info(r, "from86") == _info(old, "k")
        finally:
            eight_six.close()


@pytest.mark.parametrize("damage", ("duration 0", "maxsize 10001", "more producers than there are", "producer twice", "iid twice"))
def test_damaged_idmp_state_is_bad_data_format(env, damage):
    server, _, r = env
    _two_producers(r)
    body = r.dump("k")[:-10]
    head = body[: -len(IDMP_TAIL)]
    tail = {
        "duration 0": b"\x00" + IDMP_TAIL[2:],
        "maxsize 10001": IDMP_TAIL[:2] + b"\x67\x11" + IDMP_TAIL[4:],
        "more producers than there are": IDMP_TAIL[:4] + b"\x30" + IDMP_TAIL[5:],
        "producer twice": IDMP_TAIL.replace(b"producer2", b"producer1"),
        "iid twice": IDMP_TAIL[:4] + b"\x01\x09producer1\x02" + IDMP_TAIL[16:35] * 2 + IDMP_TAIL[-2:],
    }[damage]
    body = head + tail
    with pytest.raises(redis.ResponseError, match="^Bad data format$"):
        r.restore("k2", 0, frame(body, FORMATS[server.profile.name][1]))
    assert r.exists("k2") == 0


# ------------------------------------------------------------------------------------------- Tcl persistence cases
# stream.tcl's IDMP persistence cases, with the fake's stand-in for a reload: DEBUG RELOAD / SAVE + restart write
# the keyspace as RDB and load it back, i.e. each stream goes through the same serialization as DUMP + RESTORE;
# an AOF without RDB preamble is replayed as the rewrite writes it (the entries, XCFGSET, XIDMPRECORD per iid).
def _reload(r, key="mystream"):
    payload = r.dump(key)
    r.delete(key)
    assert r.restore(key, 0, payload) == b"OK"


def test_tcl_xadd_idmp_persists_in_rdb(env):
    """XADD IDMP persists in RDB"""
    _, _, r = env
    id1 = raw_reply(r, "XADD", "mystream", "IDMP", "p1", "persist-1", "*", "field", "value1")
    raw_reply(r, "XADD", "mystream", "IDMP", "p1", "persist-2", "*", "field", "value2")
    _reload(r)
    assert r.xlen("mystream") == 2
    assert raw_reply(r, "XADD", "mystream", "IDMP", "p1", "persist-1", "*", "field", "new") == id1
    assert r.xlen("mystream") == 2


def test_tcl_xadd_idmp_multiple_producers_persistence_in_rdb(env):
    """XADD IDMP multiple producers persistence in RDB"""
    _, _, r = env
    ids = [raw_reply(r, "XADD", "mystream", "IDMP", p, "req-1", "*", "field", f"v{i}") for i, p in enumerate(("p1", "p2", "p3"))]
    assert (_info(r, "mystream")["pids-tracked"], _info(r, "mystream")["iids-tracked"]) == (3, 3)
    _reload(r)
    assert (_info(r, "mystream")["pids-tracked"], _info(r, "mystream")["iids-tracked"]) == (3, 3)
    for p, entry_id in zip(("p1", "p2", "p3"), ids):
        assert raw_reply(r, "XADD", "mystream", "IDMP", p, "req-1", "*", "field", "dup") == entry_id


def test_tcl_xadd_idmp_set_in_aof(env):
    """XADD IDMP set in AOF (the replay of a rewritten AOF without RDB preamble: 8.6.2's XIDMPRECORD)"""
    _, _, r = env
    id1 = raw_reply(r, "XADD", "mystream", "IDMP", "p1", "aof-1", "*", "field", "value1")
    raw_reply(r, "XADD", "mystream", "IDMP", "p1", "aof-2", "*", "field", "value2")
    assert raw_reply(r, "XADD", "mystream", "IDMP", "p1", "aof-1", "*", "field", "dup") == id1
    info = _info(r, "mystream")
    entries = raw_reply(r, "XRANGE", "mystream", "-", "+")
    r.delete("mystream")
    for entry_id, fields in entries:
        raw_reply(r, "XADD", "mystream", entry_id, *fields)
    raw_reply(r, "XCFGSET", "mystream", "IDMP-DURATION", str(info["idmp-duration"]), "IDMP-MAXSIZE", str(info["idmp-maxsize"]))
    for (entry_id, _), iid in zip(entries, ("aof-1", "aof-2")):
        assert raw_reply(r, "XIDMPRECORD", "mystream", "p1", iid, entry_id) == b"OK"
    assert r.xlen("mystream") == 2
    assert raw_reply(r, "XADD", "mystream", "IDMP", "p1", "aof-1", "*", "field", "new") == id1
