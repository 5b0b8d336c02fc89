"""requirepass and ACL in process: the direct path of stream commands refuses what the dispatch path refuses
(the comparisons with the real servers are tests/conformance/test_auth.py)."""

from __future__ import annotations

import warnings

import pytest
import redis

from fake_streams import FakeStreamsConnection, FakeStreamsServer, ManualClock
from tests.conftest import pool_kwargs
from tests.support.redis_compat import NO_SETINFO


def _raw(server):
    with warnings.catch_warnings():  # redis-py 8 deprecates lib_name; None still skips CLIENT SETINFO
        warnings.simplefilter("ignore", DeprecationWarning)
        conn = FakeStreamsConnection(server=server, **pool_kwargs(2, **NO_SETINFO))
    conn.connect()
    return conn


def _run(conn, *argv):
    conn.send_command(*argv)
    try:
        return conn.read_response()
    except redis.exceptions.ResponseError as exc:
        return f"error: {exc}"
    except redis.exceptions.AuthenticationError as exc:
        return f"auth error: {exc}"


@pytest.mark.parametrize("fast", [True, False])
def test_set_requirepass_applies_to_new_connections_on_both_paths(fast):
    server = FakeStreamsServer("7.4", clock=ManualClock(1_700_000_000_000))
    server.fast_path = fast
    before = server.client()
    before.xadd("s", {"f": "v"}, id="1-0")
    server.set_requirepass("pw")
    assert before.xlen("s") == 1  # connected before: stays authenticated
    conn = _raw(server)
    assert _run(conn, "XADD", "s", "2-0", "f", "v") == "auth error: Authentication required."
    assert _run(conn, "XLEN", "s") == "auth error: Authentication required."
    assert _run(conn, "AUTH", "pw") == b"OK"
    assert _run(conn, "XADD", "s", "2-0", "f", "v") == b"2-0"
    assert server.client(password="pw").xlen("s") == 2
    server.set_requirepass(None)
    assert _run(_raw(server), "XLEN", "s") == 2
    server.close()


@pytest.mark.parametrize("fast", [True, False])
def test_key_patterns_on_the_direct_path(fast):
    server = FakeStreamsServer("7.0", clock=ManualClock(1_700_000_000_000))
    server.fast_path = fast
    admin = server.client()
    admin.execute_command("ACL", "SETUSER", "alice", "on", ">pw", "~s*", "+@all")
    conn = _raw(server)
    assert _run(conn, "AUTH", "alice", "pw") == b"OK"
    assert _run(conn, "XADD", "s1", "1-0", "f", "v") == b"1-0"
    refused = "error: this user has no permissions to access one of the keys used as arguments"
    assert _run(conn, "XADD", "t1", "1-0", "f", "v") == refused
    assert _run(conn, "XREAD", "STREAMS", "s1", "t1", "0", "0") == refused
    assert _run(conn, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "t1", ">") == refused
    log = admin.acl_log()
    assert log and log[0]["reason"] == "key" and log[0]["object"] == "t1"
    server.close()


def test_a_new_server_has_fakeredis_own_default_user_and_leaves_fakeredis_as_it_was():
    """The backend builds its fakeredis server with the ``+@all`` category lookup answered from a cache
    (compat.new_fake_server): the default user's rules are exactly those of a FakeServer built by fakeredis, ACL LIST
    says so, and fakeredis's own lookup is back in place afterwards (its servers and ACL SETUSER use it)."""
    import fakeredis
    import fakeredis.model._acl as acl_module
    from fakeredis.model._command_info import get_commands_by_category

    from fake_streams._fakeredis.compat import new_fake_server

    ours = new_fake_server((7, 4), "redis")
    theirs = fakeredis.FakeServer(version=(7, 4), server_type="redis")
    assert vars(ours.acl._user_acl[b"default"]) == vars(theirs.acl._user_acl[b"default"])
    assert ours.acl.as_rules() == theirs.acl.as_rules()
    assert acl_module.get_commands_by_category is get_commands_by_category
    server = FakeStreamsServer()
    try:
        client, plain = server.client(), fakeredis.FakeRedis(server=theirs)
        assert client.acl_list() == plain.acl_list()
        for r in (client, plain):
            assert r.acl_setuser("reader", enabled=True, nopass=True, commands=["+@read", "-@all", "+xadd"], keys=["*"])
        assert client.acl_getuser("reader") == plain.acl_getuser("reader")
    finally:
        server.close()
