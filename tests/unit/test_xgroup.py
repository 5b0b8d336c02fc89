"""XGROUP CREATE / SETID / DESTROY / CREATECONSUMER / DELCONSUMER / HELP (spec §2.7): check order,
every error text, options, side effects (WATCH, ready keys, events) and the R7.0 help footer.
"""

from __future__ import annotations

import pytest

from fake_streams.groups import INVALID_ENTRIES_READ, NEVER_ACTIVE
from fake_streams.ids import MAX_ID, MIN_ID
from fake_streams.reply import OK, Status
from tests.support.context import DictContext
from tests.support.engine import ALL, T0, sid
from tests.support.engine import check_all as check
from tests.support.engine import profile_err as err

KEY_MISSING = (
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use "
    "the MKSTREAM option to create an empty stream automatically."
)


def setup(version="7.4", n=3):
    ctx = DictContext(version, now_ms=T0)
    for i in range(1, n + 1):
        ctx.run("XADD", "s", f"{i}-0", "f", str(i))
    ctx.keyspace[b"str"] = "a string"
    ctx.clear_effects()
    return ctx


def group(ctx, name="g", key="s"):
    return ctx.keyspace[key.encode()].groups[name.encode()]


def syntax(ctx, typed):
    return err(ctx, "SUBCOMMAND_SYNTAX", subcommand=typed, container="XGROUP")


# ============================================================================================ CREATE
@pytest.mark.parametrize("version", ALL)
def test_create_and_busygroup(version):
    """'XGROUP CREATE: creation and duplicate group name detection'."""
    ctx = setup(version)
    assert ctx.run("XGROUP", "CREATE", "s", "g", "$") == OK
    g = group(ctx)
    assert (g.last_id, g.entries_read, len(g.pel), len(g.consumers)) == (sid(3), INVALID_ENTRIES_READ, 0, 0)
    assert ctx.events == [("xgroup-create", b"s")]
    assert ctx.modified_keys == [] and ctx.ready_keys == []  # an existing key: WATCH stays clean
    ctx.clear_effects()
    assert ctx.run("XGROUP", "CREATE", "s", "g", "0") == "BUSYGROUP Consumer Group name already exists"
    assert ctx.run("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM") == "BUSYGROUP Consumer Group name already exists"
    assert group(ctx) is g and ctx.events == []


@pytest.mark.parametrize("version", ALL)
def test_create_ids(version):
    ctx = setup(version)
    assert ctx.run("XGROUP", "CREATE", "s", "a", "0") == OK
    assert ctx.run("XGROUP", "CREATE", "s", "b", "5") == OK  # 5 → 5-0 (beyond last_id is fine)
    assert ctx.run("XGROUP", "CREATE", "s", "c", "2-7") == OK
    assert [group(ctx, n).last_id for n in "abc"] == [MIN_ID, sid(5), sid(2, 7)]
    for bad in ("-", "+", "x", "1-", "1-2-3", "18446744073709551616"):
        assert ctx.run("XGROUP", "CREATE", "s", "d", bad) == err(ctx, "INVALID_STREAM_ID")
    assert ctx.run("XGROUP", "CREATE", "s", "d", "$") == OK  # '$' is case-sensitive, exact
    assert list(ctx.keyspace[b"s"].groups) == [b"a", b"b", b"c", b"d"]


@pytest.mark.parametrize("version", ALL)
def test_create_on_a_missing_key(version):
    """'…automatic stream creation fails without MKSTREAM' / '…works with MKSTREAM'."""
    ctx = setup(version)
    assert ctx.run("XGROUP", "CREATE", "new", "g", "$") == KEY_MISSING
    assert b"new" not in ctx.keyspace
    assert ctx.run("XGROUP", "CREATE", "new", "g", "x", "MKSTREAM") == err(ctx, "INVALID_STREAM_ID")
    assert b"new" not in ctx.keyspace  # the ID is parsed before anything is created
    assert ctx.run("XGROUP", "CREATE", "new", "g", "$", "MKSTREAM") == OK
    stream = ctx.keyspace[b"new"]
    assert (len(stream), stream.last_id, group(ctx, key="new").last_id) == (0, MIN_ID, MIN_ID)
    assert ctx.ready_keys == [b"new"] and ctx.modified_keys == [b"new"]  # a new key: WATCH dirtied
    assert ctx.events == [("xgroup-create", b"new")]
    ctx.clear_effects()
    assert ctx.run("xgroup", "create", "new2", "g", "7-1", "mkstream") == OK
    assert group(ctx, key="new2").last_id == sid(7, 1)
    check(ctx)


@pytest.mark.parametrize("version", ALL)
def test_create_entriesread(version):
    """'XGROUP CREATE: with ENTRIESREAD parameter'."""
    ctx = setup(version)
    assert ctx.run("XGROUP", "CREATE", "s", "g", "$", "ENTRIESREAD", "-3") == (
        "ERR value for ENTRIESREAD must be positive or -1"
    )
    assert ctx.run("XGROUP", "CREATE", "s", "g", "$", "ENTRIESREAD", "x") == err(ctx, "NOT_INTEGER")
    assert ctx.run("XGROUP", "CREATE", "s", "g", "$", "ENTRIESREAD", "+1") == err(ctx, "NOT_INTEGER")
    assert ctx.run("XGROUP", "CREATE", "s", "g1", "$", "ENTRIESREAD", "0") == OK
    assert ctx.run("XGROUP", "CREATE", "s", "g2", "$", "ENTRIESREAD", "3") == OK
    assert ctx.run("XGROUP", "CREATE", "s", "g3", "$", "ENTRIESREAD", "-1") == OK
    assert ctx.run("XGROUP", "CREATE", "s", "g4", "$", "entriesread", "9", "MKSTREAM") == OK
    # Redis 8.2.2+ (#14259) stores ENTRIESREAD capped at entries-added (3 here)
    capped = 3 if ctx.profile.has("entriesread_capped") else 9
    assert [group(ctx, f"g{i}").entries_read for i in (1, 2, 3, 4)] == [0, 3, INVALID_ENTRIES_READ, capped]


@pytest.mark.parametrize("version", ALL)
def test_create_option_errors_come_first(version):
    ctx = setup(version)
    # before WRONGTYPE, the missing-key check and ID parsing
    assert ctx.run("XGROUP", "CREATE", "str", "g", "x", "FOO") == syntax(ctx, "CREATE")
    assert ctx.run("XGROUP", "CREATE", "nokey", "g", "$", "ENTRIESREAD") == syntax(ctx, "CREATE")
    assert ctx.run("XGROUP", "CREATE", "str", "g", "x", "ENTRIESREAD", "-2") == err(ctx, "ENTRIESREAD_INVALID")
    assert ctx.run("XGROUP", "CREATE", "str", "g", "$") == err(ctx, "WRONGTYPE")
    assert ctx.run("XGROUP", "CREATE", "str", "g", "$", "MKSTREAM") == err(ctx, "WRONGTYPE")
    assert ctx.run("XGROUP", "CREATE", "nokey", "g", "x") == KEY_MISSING  # key check before ID parsing


@pytest.mark.parametrize("version", ALL)
def test_create_argc_rule(version):
    ctx = setup(version)
    # 9+ arguments: the options parse, the key is checked, then the dispatch refuses the argc
    assert ctx.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM") == syntax(
        ctx, "CREATE"
    )
    assert ctx.run("XGROUP", "CREATE", "nokey", "g", "$", "ENTRIESREAD", "1", "ENTRIESREAD", "2") == KEY_MISSING
    assert ctx.run("XGROUP", "CREATE", "nokey", "g", "$", "MKSTREAM", "ENTRIESREAD", "1", "MKSTREAM") == syntax(
        ctx, "CREATE"
    )
    assert b"nokey" not in ctx.keyspace and b"g" not in ctx.keyspace[b"s"].groups
    assert ctx.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM", "ENTRIESREAD", "1") == OK  # argc 8


def test_syntax_error_quotes_the_subcommand_as_typed():
    ctx = setup()
    assert ctx.run("xgroup", "sEtId", "s", "g", "$", "MKSTREAM") == (
        "ERR unknown subcommand or wrong number of arguments for 'sEtId'. Try XGROUP HELP."
    )
    assert ctx.run("XGROUP", "create", "s", "g", "$", "FOO") == (
        "ERR unknown subcommand or wrong number of arguments for 'create'. Try XGROUP HELP."
    )


# ============================================================================================= SETID
@pytest.mark.parametrize("version", ALL)
def test_setid(version):
    ctx = setup(version)
    ctx.run("XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "2")
    ctx.clear_effects()
    assert ctx.run("XGROUP", "SETID", "s", "g", "$") == OK
    g = group(ctx)
    assert (g.last_id, g.entries_read) == (sid(3), INVALID_ENTRIES_READ)  # ENTRIESREAD omitted → -1
    assert ctx.events == [("xgroup-setid", b"s")] and ctx.modified_keys == [] and ctx.ready_keys == []
    assert ctx.run("XGROUP", "SETID", "s", "g", "2", "ENTRIESREAD", "2") == OK
    assert (g.last_id, g.entries_read) == (sid(2), 2)
    # non-strict ID: '-' and '+' are accepted
    assert ctx.run("XGROUP", "SETID", "s", "g", "-") == OK
    assert g.last_id == MIN_ID
    assert ctx.run("XGROUP", "SETID", "s", "g", "+") == OK
    assert g.last_id == MAX_ID
    assert ctx.run("XGROUP", "SETID", "s", "g", "x") == err(ctx, "INVALID_STREAM_ID")
    assert ctx.run("XGROUP", "SETID", "s", "g", "(1") == err(ctx, "INVALID_STREAM_ID")
    assert g.last_id == MAX_ID


@pytest.mark.parametrize("version", ALL)
def test_setid_leaves_the_pel_alone(version):
    ctx = setup(version)
    ctx.run("XGROUP", "CREATE", "s", "g", "0")
    ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    ctx.run("XGROUP", "SETID", "s", "g", "0")
    assert list(group(ctx).pel) == [sid(1), sid(2), sid(3)]
    check(ctx)


@pytest.mark.parametrize("version", ALL)
def test_setid_errors_in_order(version):
    ctx = setup(version)
    ctx.run("XGROUP", "CREATE", "s", "g", "0")
    assert ctx.run("XGROUP", "SETID", "s", "g", "$", "MKSTREAM") == syntax(ctx, "SETID")  # MKSTREAM is CREATE-only
    assert ctx.run("XGROUP", "SETID", "str", "g", "x", "ENTRIESREAD") == syntax(ctx, "SETID")
    assert ctx.run("XGROUP", "SETID", "str", "g", "x", "ENTRIESREAD", "-5") == err(ctx, "ENTRIESREAD_INVALID")
    assert ctx.run("XGROUP", "SETID", "str", "g", "x") == err(ctx, "WRONGTYPE")
    assert ctx.run("XGROUP", "SETID", "nokey", "g", "x") == KEY_MISSING
    assert ctx.run("XGROUP", "SETID", "s", "nog", "x") == "NOGROUP No such consumer group 'nog' for key name 's'"
    # argc 8: the options parse, then the key and group checks, then the argc rule
    assert ctx.run("XGROUP", "SETID", "s", "nog", "$", "ENTRIESREAD", "1", "ENTRIESREAD", "2") == (
        "NOGROUP No such consumer group 'nog' for key name 's'"
    )
    assert ctx.run("XGROUP", "SETID", "s", "g", "x", "ENTRIESREAD", "1", "ENTRIESREAD", "2") == syntax(ctx, "SETID")


# =========================================================================================== DESTROY
@pytest.mark.parametrize("version", ALL)
def test_destroy(version):
    ctx = setup(version)
    ctx.run("XGROUP", "CREATE", "s", "g", "0")
    ctx.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    ctx.clear_effects()
    assert ctx.run("XGROUP", "DESTROY", "s", "g") == 1
    assert b"g" not in ctx.keyspace[b"s"].groups
    assert ctx.events == [("xgroup-destroy", b"s")]
    assert ctx.ready_keys == [b"s"]  # blocked XREADGROUP clients are woken (and get NOGROUP)
    assert ctx.modified_keys == []
    ctx.clear_effects()
    assert ctx.run("XGROUP", "DESTROY", "s", "g") == 0
    assert ctx.events == [] and ctx.ready_keys == []
    assert ctx.run("XGROUP", "DESTROY", "nokey", "g") == KEY_MISSING
    assert ctx.run("XGROUP", "DESTROY", "str", "g") == err(ctx, "WRONGTYPE")
    assert len(ctx.keyspace[b"s"]) == 3  # the stream itself is untouched


# ==================================================================================== CREATECONSUMER
@pytest.mark.parametrize("version", ALL)
def test_createconsumer(version):
    """'XGROUP CREATECONSUMER: create consumer if does not exist' / '…: group must exist'."""
    ctx = setup(version)
    ctx.run("XGROUP", "CREATE", "s", "g", "0")
    ctx.clear_effects()
    ctx.now_ms = T0 + 9
    assert ctx.run("XGROUP", "CREATECONSUMER", "s", "g", "Bob") == 1
    assert ctx.run("XGROUP", "CREATECONSUMER", "s", "g", "Alice") == 1
    assert ctx.run("XGROUP", "CREATECONSUMER", "s", "g", "Bob") == 0
    assert list(group(ctx).consumers) == [b"Alice", b"Bob"]
    bob = group(ctx).consumers[b"Bob"]
    assert (bob.seen_time, bob.active_time, len(bob.pel)) == (T0 + 9, NEVER_ACTIVE, 0)
    assert ctx.events == [("xgroup-createconsumer", b"s")] * 2 and ctx.modified_keys == []
    assert ctx.run("XGROUP", "CREATECONSUMER", "s", "nog", "Bob") == "NOGROUP No such consumer group 'nog' for key name 's'"
    assert ctx.run("XGROUP", "CREATECONSUMER", "nokey", "g", "Bob") == KEY_MISSING
    assert ctx.run("XGROUP", "CREATECONSUMER", "str", "g", "Bob") == err(ctx, "WRONGTYPE")


def test_nogroup_sanitizes_names():
    ctx = setup()
    assert ctx.run("XGROUP", "CREATECONSUMER", "s", "a\r\nb", "c") == (
        "NOGROUP No such consumer group 'a  b' for key name 's'"
    )


# ======================================================================================= DELCONSUMER
@pytest.mark.parametrize("version", ALL)
def test_delconsumer_returns_its_pending_count(version):
    ctx = setup(version, n=4)
    ctx.run("XGROUP", "CREATE", "s", "g", "0")
    ctx.run("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "s", ">")
    ctx.run("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    ctx.run("XGROUP", "CREATECONSUMER", "s", "g", "carol")
    ctx.clear_effects()
    assert ctx.run("XGROUP", "DELCONSUMER", "s", "g", "alice") == 3
    assert list(group(ctx).pel) == [sid(4)]  # alice's entries are no longer pending
    assert ctx.events == [("xgroup-delconsumer", b"s")] and ctx.modified_keys == []
    ctx.clear_effects()
    assert ctx.run("XGROUP", "DELCONSUMER", "s", "g", "alice") == 0
    assert ctx.run("XGROUP", "DELCONSUMER", "s", "g", "carol") == 0
    assert ctx.events == [("xgroup-delconsumer", b"s")]  # carol existed, alice no longer did
    assert list(group(ctx).consumers) == [b"bob"]
    assert ctx.run("XGROUP", "DELCONSUMER", "s", "nog", "bob") == "NOGROUP No such consumer group 'nog' for key name 's'"
    assert ctx.run("XGROUP", "DELCONSUMER", "nokey", "g", "bob") == KEY_MISSING
    check(ctx)


# ============================================================================================== HELP
@pytest.mark.parametrize("version", ALL)
def test_help(version):
    ctx = setup(version)
    reply = ctx.run("XGROUP", "HELP")
    assert all(isinstance(line, Status) for line in reply)
    assert [line.value for line in reply] == [
        b"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        b"CREATE <key> <groupname> <id|$> [option]",
        b"    Create a new consumer group. Options are:",
        b"    * MKSTREAM",
        b"      Create the empty stream if it does not exist.",
        b"    * ENTRIESREAD entries_read",
        b"      Set the group's entries_read counter (internal use).",
        b"CREATECONSUMER <key> <groupname> <consumer>",
        b"    Create a new consumer in the specified group.",
        b"DELCONSUMER <key> <groupname> <consumer>",
        b"    Remove the specified consumer.",
        b"DESTROY <key> <groupname>",
        b"    Remove the specified group.",
        b"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        b"    Set the current group ID and entries_read counter.",
        b"HELP",
        b"    Prints this help." if version == "7.0" else b"    Print this help.",
    ]
    assert ctx.run("XGROUP", "HELP", "xxx") == "ERR wrong number of arguments for 'xgroup|help' command"


@pytest.mark.parametrize(
    "argv, command",
    [
        (["XGROUP", "CREATE", "s", "g"], "xgroup|create"),
        (["XGROUP", "SETID", "s", "g"], "xgroup|setid"),
        (["XGROUP", "DESTROY", "s"], "xgroup|destroy"),
        (["XGROUP", "DESTROY", "s", "g", "x"], "xgroup|destroy"),
        (["XGROUP", "CREATECONSUMER", "s", "g"], "xgroup|createconsumer"),
        (["XGROUP", "DELCONSUMER", "s", "g", "c", "d"], "xgroup|delconsumer"),
    ],
)
def test_table_arity(argv, command):
    ctx = setup()
    assert ctx.run(*argv) == f"ERR wrong number of arguments for '{command}' command"


@pytest.mark.parametrize("version", ALL)
def test_tokens_compare_as_c_strings(version):
    ctx = setup(version)
    assert ctx.run("XGROUP", "CREATE", "new", "g", b"$\x00", b"mkstream\x00x") == OK
    assert ctx.run("XGROUP", "SETID", "s", "g", "0") == "NOGROUP No such consumer group 'g' for key name 's'"
    ctx.run("XGROUP", "CREATE", "s", "g", b"$\x00junk")
    assert group(ctx).last_id == sid(3)
    assert ctx.run("XGROUP", "SETID", "s", "g", "0", b"ENTRIESREAD\x00z", "3") == OK
    assert (group(ctx).last_id, group(ctx).entries_read) == (MIN_ID, 3)
    assert ctx.run("XGROUP", "SETID", "s", "g", b"$\x00") == OK
    assert group(ctx).last_id == sid(3)
