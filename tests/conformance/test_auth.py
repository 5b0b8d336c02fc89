"""AUTH, requirepass and ACL key patterns on every stream command, compared with the real servers.

Clients that connect while a password is required use RESP2 and no CLIENT SETINFO (redis-py's handshake would
fail with NOAUTH before the scenario starts, on both sides alike).
"""

import warnings

import pytest
import redis

from fake_streams import FakeStreamsConnection
from tests.conftest import pool_kwargs
from tests.support.redis_compat import NO_SETINFO

from .replies import capture, err_from_exception, expected_err, first_difference, times


def _read(conn):
    try:
        return capture(lambda: conn.read_response(disable_decoding=True))
    except redis.exceptions.AuthenticationError as exc:  # NOAUTH / WRONGPASS: redis-py raises, not returns
        return err_from_exception(exc)


class Client:
    """A client pair made outside the pair's handshake (RESP2, no SETINFO): ``same(*argv)`` compares replies."""

    def __init__(self, pair, resp3_parser=False):
        self.pair = pair
        kw = pool_kwargs(2, socket_timeout=10, **NO_SETINFO)
        self.resp3 = False
        if resp3_parser:  # reads the map of a HELLO 3 sent by hand (the RESP2 parser cannot; hiredis can)
            try:
                from redis._parsers import _RESP3Parser
            except ImportError:  # redis-py 4.x: no RESP3 parser (it speaks RESP2 only)
                pass
            else:
                kw["parser_class"] = _RESP3Parser
                self.resp3 = True
        with warnings.catch_warnings():  # redis-py 8 deprecates lib_name/lib_version; None still skips SETINFO
            warnings.simplefilter("ignore", DeprecationWarning)
            self.real = redis.Connection(host="127.0.0.1", port=pair.oracle.port, **kw)
            self.fake = FakeStreamsConnection(server=pair.server, **kw) if pair.server is not None else None

    def same(self, *argv, drop=(), valkey91=None):
        """``valkey91``: the spec'd reply where Valkey 9.1.2 (standing in for 7.4 / Valkey 8.0) differs; its real
        reply must differ from it (a known difference, see tests/conformance/README.md). Not on the valkey-9.1
        profile, which answers as Valkey 9.1.2."""
        args = [str(a).encode() if not isinstance(a, bytes) else a for a in argv]
        self.real.send_command(*args)
        real = _read(self.real)
        if self.fake is None:
            return real
        self.pair.sync_clock()
        self.fake.send_command(*args)
        fake = _read(self.fake)
        if drop and isinstance(real, dict):
            real = {k: v for k, v in real.items() if k not in drop}
            fake = {k: v for k, v in fake.items() if k not in drop}
        if valkey91 is not None and self.pair.oracle.kind == "valkey" and self.pair.stands_in:
            assert real != valkey91, f"known difference gone for {argv}: {real!r}"
            real = valkey91
        real = times(real, fake, self.pair)  # idle / inactive within the harness's tolerance
        diff = first_difference(real, fake)
        assert not diff, f"{' '.join(map(str, argv))}\n  real: {real!r}\n  fake: {fake!r}\n  {diff}"
        return fake

    def close(self):
        for conn in (self.real, self.fake):
            if conn is not None:
                conn.disconnect()


@pytest.fixture
def clients(pair):
    made = []

    def make(resp3_parser=False):
        made.append(Client(pair, resp3_parser))
        return made[-1]

    yield make
    for c in made:
        c.close()
    pair.oracle.command("CONFIG", "SET", "requirepass", "")
    for user in ("alice", "bob"):
        pair.oracle.command("ACL", "DELUSER", user)


def test_auth_without_a_password_configured(pair, clients):
    c = clients()
    c.same("AUTH", "pw")
    c.same("AUTH", "default", "anything")  # default is nopass: any password
    c.same("AUTH", "a", "b", "c")
    c.same("AUTH", "nobody", "x")
    c.same("ACL", "WHOAMI")
    c.same("XADD", "s", "1-1", "f", "v")


def test_requirepass_is_enforced_for_new_connections(pair, clients):
    old = clients()
    old.same("XADD", "s", "1-1", "f", "v")
    old.same("CONFIG", "SET", "requirepass", "pw")
    old.same("XLEN", "s")  # connected before: stays authenticated
    c = clients()
    # Valkey 8.0.1 (and Redis) check the command's existence and arity before NOAUTH; Valkey 9.1.2 says NOAUTH first
    c.same("GET", valkey91=expected_err("ERR wrong number of arguments for 'get' command"))
    c.same("NOSUCHCMD", valkey91=expected_err("ERR unknown command 'NOSUCHCMD', with args beginning with: "))
    c.same("XINFO", "NOPE", valkey91=expected_err("ERR unknown subcommand 'NOPE'. Try XINFO HELP."))
    for argv in [("PING",), ("XADD", "s", "*", "f", "v"), ("XREAD", "STREAMS", "s", "0"), ("HELLO",), ("HELLO", "2"), ("MULTI",), ("GET", "x"), ("EXEC",), ("AUTH", "bad"),
                 ("AUTH", "default", "bad"), ("AUTH", "nobody", "x"), ("HELLO", "2", "AUTH", "default", "bad"),
                 ("AUTH", "pw"), ("PING",), ("XLEN", "s"), ("ACL", "WHOAMI")]:
        c.same(*argv)
    h = clients(resp3_parser=True)
    h.same("XLEN", "s")
    if h.resp3:  # redis-py 4.x cannot read HELLO 3's map: AUTH instead
        h.same("HELLO", "3", "AUTH", "default", "pw", drop=(b"id", b"server", b"version", b"modules"))  # HELLO: tcp tests
    else:
        h.same("AUTH", "default", "pw")
    h.same("XRANGE", "s", "-", "+")
    old.same("CONFIG", "SET", "requirepass", "")
    fresh = clients()
    fresh.same("XLEN", "s")


def test_reset_drops_the_authentication(pair, clients):
    admin = clients()
    admin.same("CONFIG", "SET", "requirepass", "pw")
    c = clients()
    c.same("AUTH", "pw")
    c.same("XADD", "s", "1-1", "f", "v")
    c.same("RESET")
    c.same("XLEN", "s")
    c.same("AUTH", "pw")
    c.same("XLEN", "s")


def test_noauth_inside_multi_and_on_exec(pair, clients):
    admin = clients()
    admin.same("CONFIG", "SET", "requirepass", "pw")
    c = clients()
    c.same("MULTI")
    c.same("EXEC")
    c.same("AUTH", "pw")
    c.same("MULTI")
    c.same("XADD", "s", "1-1", "f", "v")
    c.same("EXEC")


STREAM_COMMANDS = [
    ("XADD", "{k}", "5-1", "f", "v"), ("XLEN", "{k}"), ("XRANGE", "{k}", "-", "+"), ("XREVRANGE", "{k}", "+", "-"),
    ("XREAD", "STREAMS", "{k}", "0"), ("XREAD", "COUNT", "1", "STREAMS", "s1", "{k}", "0", "0"),
    ("XGROUP", "CREATE", "{k}", "g", "0", "MKSTREAM"), ("XGROUP", "CREATECONSUMER", "{k}", "g", "c"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "{k}", ">"), ("XREADGROUP", "GROUP", "streams", "c", "STREAMS", "{k}", ">"),
    ("XPENDING", "{k}", "g"), ("XACK", "{k}", "g", "1-1"), ("XCLAIM", "{k}", "g", "c", "0", "1-1"),
    ("XAUTOCLAIM", "{k}", "g", "c", "0", "0"), ("XINFO", "STREAM", "{k}"), ("XINFO", "GROUPS", "{k}"),
    ("XINFO", "CONSUMERS", "{k}", "g"), ("XDEL", "{k}", "1-1"), ("XTRIM", "{k}", "MAXLEN", "10"),
    ("XSETID", "{k}", "9-9"), ("XGROUP", "DELCONSUMER", "{k}", "g", "c"), ("XGROUP", "SETID", "{k}", "g", "$"),
    ("XGROUP", "DESTROY", "{k}", "g"), ("XINFO", "HELP"), ("XGROUP", "HELP"), ("GET", "{k}"),
]


def test_acl_key_patterns_apply_to_every_stream_command(pair, clients):
    admin = clients()
    admin.same("XADD", "s1", "1-1", "f", "v")
    admin.same("XADD", "t1", "1-1", "f", "v")
    admin.same("ACL", "SETUSER", "alice", "on", ">pw", "~s*", "+@all")
    c = clients()
    c.same("AUTH", "alice", "pw")
    for key in ("s2", "t2"):
        for argv in STREAM_COMMANDS:
            c.same(*[a.format(k=key) for a in argv])
    c.same("MULTI")
    c.same("XLEN", "t1")
    c.same("XLEN", "s1")
    c.same("EXEC")
    c.same("XREAD", "BLOCK", "10", "STREAMS", "t1", "$")  # refused before it could block
    c.same("ACL", "WHOAMI")


def test_acl_key_patterns_see_every_key_of_variadic_and_movable_key_commands(pair, clients):
    """The key check takes every key the key specs name (DEL a b, MSET's odd arguments, EVAL's numkeys keys,
    ZUNIONSTORE's destination and sources), not only the first."""
    admin = clients()
    admin.same("ACL", "SETUSER", "carol", "on", ">pw", "~s*", "+@all")
    c = clients()
    c.same("AUTH", "carol", "pw")
    for argv in [("DEL", "s1", "t1"), ("DEL", "s1", "s2"), ("MSET", "s1", "1", "t1", "2"), ("MSET", "s1", "1", "s2", "2"),
                 ("MGET", "s1", "t1"), ("EXISTS", "s1", "s2", "t1"), ("EVAL", "return 1", "2", "s1", "t1"),
                 ("EVAL", "return 1", "1", "s1", "t1"), ("ZUNIONSTORE", "s9", "2", "s1", "t1"),
                 ("ZUNIONSTORE", "t9", "1", "s1"), ("RENAME", "s1", "t1"), ("XADD", "s3", "1-1", "f", "v")]:
        c.same(*argv)


def test_acl_command_rules_on_stream_commands(pair, clients):
    admin = clients()
    admin.same("XADD", "s", "1-1", "f", "v")
    admin.same("ACL", "SETUSER", "bob", "on", ">pw", "~*", "+@read", "+xgroup|help")
    c = clients()
    c.same("AUTH", "bob", "pw")
    for argv in [("XLEN", "s"), ("XRANGE", "s", "-", "+"), ("XREAD", "STREAMS", "s", "0"), ("XADD", "s", "5-1", "f", "v"),
                 ("XGROUP", "CREATE", "s", "g", "0"), ("XGROUP", "HELP"), ("XINFO", "STREAM", "s"), ("SET", "x", "1"),
                 ("XTRIM", "s", "MAXLEN", "0"), ("AUTH", "default", "x"), ("XADD", "s", "7-1", "f", "v")]:
        c.same(*argv)


def test_acl_rules_apply_in_order(pair, clients):
    admin = clients()
    admin.same("XADD", "s", "1-1", "f", "v")
    admin.same("ACL", "SETUSER", "alice", "on", ">pw", "~*", "+@all", "-xadd", "-xgroup", "+xgroup|help")
    admin.same("ACL", "SETUSER", "bob", "on", ">pw", "~*", "-xlen", "+@all", "-@stream", "+xrange")
    for user, argv_list in [("alice", [("XADD", "s", "2-1", "f", "v"), ("XLEN", "s"), ("XGROUP", "HELP"),
                                       ("XGROUP", "CREATE", "s", "g", "0")]),
                            ("bob", [("XLEN", "s"), ("XRANGE", "s", "-", "+"), ("XADD", "s", "3-1", "f", "v"),
                                     ("GET", "s"), ("XINFO", "STREAM", "s")])]:
        c = clients()
        c.same("AUTH", user, "pw")
        for argv in argv_list:
            c.same(*argv)
