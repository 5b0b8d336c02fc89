"""The arity errors of commands fakeredis serves, and the client-attribute checks of CLIENT SETNAME / CLIENT SETINFO /
HELLO … SETNAME, compared with the real servers (raw replies, RESP2 and RESP3).

fakeredis names a subcommand in its arity error with a space (``'client setname'``, the server: ``'client|setname'``)
and answers MSET's odd count with the scripts' text; it accepts names with spaces, newlines and non-ASCII bytes,
which CLIENT LIST could then not be split by (the servers refuse them). fake_streams/_fakeredis/arity.py and the
overrides in server_cmds.py / builtin.py give the servers' answers.
"""

from __future__ import annotations

import pytest

#: wrong argument counts of commands fakeredis serves (top level and subcommands, one and repeated groups)
ARITY_CASES = [
    ("MSET", "a", "b", "c"), ("MSET", "a"), ("HSET", "h", "f"), ("ZADD", "z", "1"), ("GET",), ("SET", "k"),
    ("CLIENT", "SETNAME"), ("CLIENT", "KILL"), ("CLIENT", "GETNAME", "x"), ("CLIENT", "ID", "x"),
    ("CLIENT", "NO-EVICT"), ("CLIENT", "PAUSE"), ("SCRIPT", "EXISTS"), ("FUNCTION", "DELETE"), ("ACL", "SETUSER"),
    ("PUBSUB", "NUMPAT", "x"), ("OBJECT", "FREQ"), ("CONFIG", "GET"),
]


@pytest.mark.parametrize("argv", ARITY_CASES, ids=lambda argv: " ".join(argv))
def test_arity_errors_of_commands_fakeredis_serves(pair, argv):
    pair.same(*argv)


def test_arity_errors_inside_multi_abort_the_transaction(pair):
    pair.same("MULTI")
    pair.same("CLIENT", "SETNAME")
    pair.same("MSET", "a", "b", "c")
    pair.same("EXEC")


BAD_VALUES = ["a b", "a\nb", "tab\there", "\u00e9", "x\x7f", " "]


@pytest.mark.parametrize("value", BAD_VALUES + ["ok", "a{b}", "~!", "", "x" * 300])
def test_client_setname_takes_what_client_list_can_show(pair, value):
    pair.same("CLIENT", "SETNAME", value)
    pair.same("CLIENT", "GETNAME")


@pytest.mark.parametrize("value", BAD_VALUES + ["ok", "1.2.3", ""])
@pytest.mark.parametrize("attr", ["lib-name", "LIB-VER", "Lib-Name"])
def test_client_setinfo_checks_its_value(pair, attr, value):
    """(On Redis 7.0, which has no CLIENT SETINFO, every case is its unknown-subcommand error.)"""
    pair.same("CLIENT", "SETINFO", attr, value)


def test_client_setinfo_errors(pair):
    pair.same("CLIENT", "SETINFO", "foo", "x")
    pair.same("CLIENT", "SETINFO", "foo", "a b")  # the attribute is checked first
    pair.same("CLIENT", "SETINFO", "lib-name")
    pair.same("CLIENT", "SETINFO", "lib-name", "a", "b")


@pytest.mark.parametrize("value", ["a b", "a\nb", "\u00e9"])
def test_hello_setname_refuses_a_bad_name_before_switching_protocol(pair, value):
    pair.same("CLIENT", "SETNAME", "before")
    pair.same("HELLO", "2", "SETNAME", value)
    pair.same("CLIENT", "GETNAME")
    pair.same("HGETALL", "nothing")  # still the connection's protocol: [] on RESP2, {} on RESP3
