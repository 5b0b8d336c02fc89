"""Redis 8 profiles without an oracle: gates on the older profiles, versions in INFO/HELLO, events, MULTI, Lua.

The gated answers of the 7.x / Valkey profiles are those measured on Valkey 9.1.2 and Redis 7.0.15
(addendum §0.3); the events are those measured on Redis 8.2.3 (docs/redis8-choices.md).
"""

import pytest
import redis

from fake_streams import FakeStreamsServer
from fake_streams.profiles import PROFILES

OLD = ("7.0", "7.2", "7.4", "valkey-8.0")
NEW = ("8.0", "8.2", "8.4", "8.6", "8.8", "8.10")


def _client(version):
    return FakeStreamsServer(version=version).client()


@pytest.mark.parametrize("version", OLD + ("8.0",))
def test_before_8_2__new_commands_and_words_keep_the_old_answers(version):
    r = _client(version)
    r.xadd("s", {"f": "v"}, id="1-0")
    with pytest.raises(redis.ResponseError, match=r"^unknown command 'XDELEX', with args beginning with: 's' 'IDS' '1' '1-0' $"):
        r.execute_command("XDELEX", "s", "IDS", "1", "1-0")
    with pytest.raises(redis.ResponseError, match="^unknown command 'xackdel'"):
        r.execute_command("xackdel", "s", "g", "IDS", "1", "1-0")
    with pytest.raises(redis.ResponseError, match="^Invalid stream ID specified as stream command argument$"):
        r.execute_command("XADD", "s", "DELREF", "*", "f", "v")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("XTRIM", "s", "MAXLEN", "0", "ACKED")
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "ENTRIESREAD", "7")
    group = r.xinfo_groups("s")[0]
    assert (group["entries-read"], group["lag"]) == (7, -6)  # not capped before 8.2.2


@pytest.mark.parametrize("version", NEW)
def test_redis_version_in_info_and_hello(version):
    r = _client(version)
    want = PROFILES[version].redis_version
    assert want.startswith(version + ".")
    assert r.info("server")["redis_version"] == want
    hello = r.execute_command("HELLO", "3")
    assert hello[b"version"] == want.encode()


@pytest.mark.parametrize("version", NEW[1:])
def test_xdelex_xackdel_events_and_watch(version):
    """Measured on Redis 8.2.3: ``xdel`` only when an entry went; WATCH dirtied only then."""
    server = FakeStreamsServer(version=version)
    r = server.client()
    r.config_set("notify-keyspace-events", "KEA")
    for i in range(1, 4):
        r.xadd("s", {"f": "v"}, id=f"{i}-0")
    r.xgroup_create("s", "g", "0")
    r.xreadgroup("g", "c", {"s": ">"}, count=2)
    p = r.pubsub()
    p.subscribe("__keyspace@0__:s")
    assert p.get_message(timeout=1)["type"] == "subscribe"
    steps = [
        (("XDELEX", "s", "IDS", "1", "9-0"), [-1], []),
        (("XDELEX", "s", "ACKED", "IDS", "1", "1-0"), [2], []),
        (("XDELEX", "s", "IDS", "1", "1-0"), [1], [b"xdel"]),
        (("XACKDEL", "s", "g", "IDS", "1", "1-0"), [1], []),  # acked only: the entry was gone
        (("XACKDEL", "s", "g", "IDS", "1", "2-0"), [1], [b"xdel"]),
        (("XACKDEL", "s", "g", "ACKED", "IDS", "1", "3-0"), [-1], []),
    ]
    for argv, reply, events in steps:
        watcher = r.pipeline()
        watcher.watch("s")
        assert r.execute_command(*argv) == reply
        watcher.multi()
        watcher.ping()
        if events:
            with pytest.raises(redis.WatchError):
                watcher.execute()
        else:
            assert watcher.execute() == [True]
        got = []
        while (msg := p.get_message(timeout=0.01)) is not None:
            got.append(msg["data"])
        assert got == events, argv
    p.close()


def test_multi_and_lua_run_xdelex():
    r = _client("8.2")
    r.xadd("s", {"f": "v"}, id="1-0")
    pipe = r.pipeline()
    pipe.execute_command("XDELEX", "s", "IDS", "1", "1-0")
    pipe.execute_command("XDELEX", "s", "IDS", "0")  # arity: refused at queue time → EXECABORT
    with pytest.raises(redis.ResponseError):
        pipe.execute()
    assert r.xlen("s") == 1
    assert r.eval("return redis.call('XDELEX', KEYS[1], 'IDS', 1, '1-0')", 1, "s") == [1]
    assert r.eval("return redis.call('XACKDEL', KEYS[1], 'g', 'IDS', 1, '1-0')", 1, "s") == [-1]


def test_redis_py_8_1_methods_on_the_8_2_profile():
    r = _client("8.2")
    for i in range(1, 4):
        r.xadd("s", {"f": "v"}, id=f"{i}-0")
    r.xgroup_create("s", "g", "0")
    r.xreadgroup("g", "c", {"s": ">"})
    assert r.xackdel("s", "g", "1-0", "2-0", ref_policy="ACKED") == [1, 1]
    assert r.xdelex("s", "3-0", ref_policy="DELREF") == [1]
    assert r.xpending("s", "g")["pending"] == 0
    r.xadd("s", {"f": "v"}, id="4-0")
    r.xadd("s", {"f": "v"}, id="5-0", maxlen=1, approximate=False, ref_policy="ACKED")  # 4-0 unread: kept
    assert r.xlen("s") == 2
    assert r.xtrim("s", maxlen=0, approximate=False, ref_policy="DELREF") == 2


def test_inspection_view_lag_follows_the_profile():
    """The fixture's view shows the lag XINFO GROUPS gives on that profile (Redis 8: #13958 rules)."""
    from fake_streams.inspect import group_view

    for version, want in (("7.4", 0), ("8.2", 2)):
        server = FakeStreamsServer(version=version)
        r = server.client(protocol=2)
        r.xadd("s", {"f": "v"}, id="1-0")
        r.xadd("s", {"f": "v"}, id="2-0")
        r.execute_command("XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "2")
        assert r.xinfo_groups("s")[0]["lag"] == want
        assert group_view(server, "s", "g").lag == want


@pytest.mark.parametrize("version", NEW)
def test_function_dump_restore_uses_the_profiles_rdb_version(version):
    """FUNCTION DUMP on a Redis 8 profile: the footer's RDB version is the profile's (12 as 7.4, 13 on 8.6, 14 on 8.8 and 8.10), and
    the payload restores (it failed with an internal KeyError on 8.0–8.6 before)."""
    r = _client(version)
    r.execute_command("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)")
    payload = r.execute_command("FUNCTION", "DUMP")
    rdb_version = 14 if PROFILES[version].has("xnack") else 13 if PROFILES[version].has("stream_idmp_rdb") else 12
    assert payload[-10:-8] == rdb_version.to_bytes(2, "little")
    r.execute_command("FUNCTION", "FLUSH")
    assert r.execute_command("FUNCTION", "RESTORE", payload) == b"OK"
    assert r.fcall("f", 0) == 1
