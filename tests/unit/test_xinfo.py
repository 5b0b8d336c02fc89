"""XINFO STREAM / GROUPS / CONSUMERS / HELP (spec §2.15): exact RESP2 / RESP3 shapes, errors, profiles.

State is built on the model directly; times are explicit ``ctx.now_ms`` values.
"""

from __future__ import annotations

import pytest

from fake_streams.groups import ConsumerGroup
from fake_streams.ids import MIN_ID
from fake_streams.profiles import PROFILES
from fake_streams.reply import Status
from tests.support.context import DictContext
from tests.support.engine import ACTIVE, ALL, T0, F
from tests.support.groupstate import check, deliver, err, sid


def new_ctx(version="7.4", protocol=2, now=T0, n=3):
    ctx = DictContext(version, protocol=protocol, now_ms=now)
    stream = ctx.create(b"s")
    for ms in range(1, n + 1):
        stream.append(sid(ms), F)
    return ctx, stream


def add_group(stream, name, last_id=MIN_ID, entries_read=-1):
    group = ConsumerGroup(name, last_id, entries_read)
    stream.groups[name] = group
    return group


class ArgvContext(DictContext):
    """A context whose transport exposes the raw argv (so the syntax error can echo argv[1] as typed)."""

    def run(self, *argv):
        self.argv = [a if isinstance(a, bytes) else str(a).encode() for a in argv]
        return super().run(*argv)


# ---------------------------------------------------------------------------------------------- HELP


@pytest.mark.parametrize("version, footer", [("7.0", b"    Prints this help."), ("7.2", b"    Print this help."),
                                             ("7.4", b"    Print this help."), ("valkey-8.0", b"    Print this help.")])
def test_help(version, footer):
    ctx = DictContext(version)
    lines = [
        b"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        b"CONSUMERS <key> <groupname>",
        b"    Show consumers of <groupname>.",
        b"GROUPS <key>",
        b"    Show the stream consumer groups.",
        b"STREAM <key> [FULL [COUNT <count>]",
        b"    Show information about the stream.",
        b"HELP",
        footer,
    ]
    assert ctx.run("XINFO", "help") == [Status(line) for line in lines]


def test_arity():
    ctx, stream = new_ctx()
    assert ctx.run("XINFO") == "ERR wrong number of arguments for 'xinfo' command"
    assert ctx.run("XINFO", "HELP", "x") == "ERR wrong number of arguments for 'xinfo|help' command"
    assert ctx.run("XINFO", "GROUPS", "s", "x") == "ERR wrong number of arguments for 'xinfo|groups' command"
    assert ctx.run("XINFO", "CONSUMERS", "s") == "ERR wrong number of arguments for 'xinfo|consumers' command"
    assert ctx.run("XINFO", "STREAM") == "ERR wrong number of arguments for 'xinfo|stream' command"


# ---------------------------------------------------------------------------------------- key errors


@pytest.mark.parametrize(
    "argv",
    [
        ("STREAM", "nokey"),
        ("STREAM", "nokey", "bad"),  # the key is looked up before the options are read
        ("STREAM", "nokey", "FULL", "COUNT", "x"),
        ("GROUPS", "nokey"),
        ("CONSUMERS", "nokey", "g"),
    ],
)
def test_missing_key(argv):
    assert DictContext().run("XINFO", *argv) == err("NO_SUCH_KEY")


@pytest.mark.parametrize("argv", [("STREAM", "str", "bad"), ("GROUPS", "str"), ("CONSUMERS", "str", "g")])
def test_wrong_type(argv):
    ctx = DictContext()
    ctx.keyspace[b"str"] = b"x"
    assert ctx.run("XINFO", *argv) == err("WRONGTYPE")


def test_consumers_missing_group_names_the_group_first():
    ctx, stream = new_ctx()
    assert ctx.run("XINFO", "CONSUMERS", "s", "nog") == "NOGROUP No such consumer group 'nog' for key name 's'"


# ------------------------------------------------------------------------------------ STREAM options


@pytest.mark.parametrize(
    "opts",
    [("x",), ("FULL", "COUNT"), ("FULL", "x", "1"), ("FULL", "COUNT", "1", "x"), ("COUNT", "1", "FULL"), ("x", "COUNT", "1")],
)
def test_stream_option_shape_errors(opts):
    ctx, stream = new_ctx()
    assert ctx.run("XINFO", "STREAM", "s", *opts) == err("SUBCOMMAND_SYNTAX", subcommand="STREAM", container="XINFO")


def test_stream_option_error_echoes_the_subcommand_as_typed():
    ctx = ArgvContext()
    ctx.create(b"s")
    assert ctx.run("XINFO", "sTream", "s", "x") == "ERR unknown subcommand or wrong number of arguments for 'sTream'. Try XINFO HELP."
    assert ctx.run("XINFO", "Stream", "s", "full", "x", "1") == (
        "ERR unknown subcommand or wrong number of arguments for 'Stream'. Try XINFO HELP."
    )


@pytest.mark.parametrize("raw", ["x", "+1", "1.0", "99999999999999999999"])
def test_stream_full_count_must_be_an_integer(raw):
    ctx, stream = new_ctx()
    assert ctx.run("XINFO", "STREAM", "s", "FULL", "COUNT", raw) == err("NOT_INTEGER")


# ------------------------------------------------------------------------------------ STREAM summary


#: Redis 8.6+ (profile feature stream_idmp): six fields after recorded-first-entry-id, here at their defaults
IDMP_DEFAULTS = [(b"idmp-duration", 100), (b"idmp-maxsize", 100), (b"pids-tracked", 0), (b"iids-tracked", 0),
                 (b"iids-added", 0), (b"iids-duplicates", 0)]


def summary_pairs(stream_groups=2, version="7.4"):
    idmp = IDMP_DEFAULTS if PROFILES[version].has("stream_idmp") else []
    return [
        (b"length", 3),
        (b"radix-tree-keys", 1),
        (b"radix-tree-nodes", 2),
        (b"last-generated-id", b"3-0"),
        (b"max-deleted-entry-id", b"0-0"),
        (b"entries-added", 3),
        (b"recorded-first-entry-id", b"1-0"),
        *idmp,
        (b"groups", stream_groups),
        (b"first-entry", [b"1-0", [b"f", b"v"]]),
        (b"last-entry", [b"3-0", [b"a", b"1", b"a", b"2"]]),
    ]


def summary_ctx(version="7.4", protocol=2):
    ctx, stream = new_ctx(version, protocol, n=2)
    stream.append(sid(3), [b"a", b"1", b"a", b"2"])
    add_group(stream, b"g2")
    add_group(stream, b"g1")
    return ctx, stream


@pytest.mark.parametrize("version", ALL)
def test_stream_summary_resp2(version):
    ctx, stream = summary_ctx(version)
    flat = [x for pair in summary_pairs(version=version) for x in pair]
    assert ctx.run("XINFO", "STREAM", "s") == flat
    check(stream)


@pytest.mark.parametrize("version", ALL)
def test_stream_summary_resp3(version):
    ctx, stream = summary_ctx(version, protocol=3)
    reply = ctx.run("XINFO", "stream", "s")
    assert isinstance(reply, dict)
    assert list(reply.items()) == summary_pairs(version=version)


@pytest.mark.parametrize("protocol", [2, 3])
def test_stream_summary_of_an_empty_stream(protocol):
    ctx = DictContext(protocol=protocol)
    ctx.create(b"e")
    pairs = [
        (b"length", 0),
        (b"radix-tree-keys", 0),
        (b"radix-tree-nodes", 1),
        (b"last-generated-id", b"0-0"),
        (b"max-deleted-entry-id", b"0-0"),
        (b"entries-added", 0),
        (b"recorded-first-entry-id", b"0-0"),
        (b"groups", 0),
        (b"first-entry", None),  # nil-bulk, not an empty array
        (b"last-entry", None),
    ]
    reply = ctx.run("XINFO", "STREAM", "e")
    assert (list(reply.items()) if protocol == 3 else reply) == (pairs if protocol == 3 else [x for p in pairs for x in p])


def test_stream_summary_after_every_entry_was_deleted():
    ctx, stream = new_ctx(n=2)
    stream.delete(sid(1))
    stream.delete(sid(2))
    reply = ctx.run("XINFO", "STREAM", "s")
    fields = dict(zip(reply[::2], reply[1::2]))
    assert fields[b"length"] == 0
    assert fields[b"last-generated-id"] == b"2-0"
    assert fields[b"max-deleted-entry-id"] == b"2-0"
    assert fields[b"entries-added"] == 2
    assert fields[b"recorded-first-entry-id"] == b"0-0"
    assert (fields[b"first-entry"], fields[b"last-entry"]) == (None, None)


def test_stream_summary_first_and_last_skip_deleted_entries():
    ctx, stream = new_ctx(n=4)
    stream.delete(sid(1))
    stream.delete(sid(4))
    reply = ctx.run("XINFO", "STREAM", "s")
    fields = dict(zip(reply[::2], reply[1::2]))
    assert fields[b"first-entry"] == [b"2-0", F]
    assert fields[b"last-entry"] == [b"3-0", F]
    assert fields[b"recorded-first-entry-id"] == b"2-0"
    assert fields[b"max-deleted-entry-id"] == b"4-0"


def test_radix_tree_fields_come_from_the_node_model():
    # five one-entry nodes 1-0 ... 5-0 -> 5 keys, 12 rax nodes (spec §5.3, verified on a server)
    ctx = DictContext()
    stream = ctx.create(b"s")
    stream.stream_node_max_entries = 1
    for ms in range(1, 6):
        stream.append(sid(ms), F)
    reply = ctx.run("XINFO", "STREAM", "s")
    assert reply[2:6] == [b"radix-tree-keys", 5, b"radix-tree-nodes", 12]
    assert (stream.radix_tree_keys, stream.radix_tree_nodes) == (5, 12)


# --------------------------------------------------------------------------------------- STREAM FULL


def full_ctx(version="7.4", protocol=2):
    """Entries 1-0..3-0; group g1 read 1-0, 2-0 (alice 1-0, bob 2-0); group g0 untouched; consumer zed idle."""
    ctx, stream = new_ctx(version, protocol)
    g1 = add_group(stream, b"g1")
    deliver(stream, g1, b"bob", [sid(1), sid(2)], T0 - 500)
    deliver(stream, g1, b"alice", [sid(1)], T0 - 100)  # re-delivery after a SETID: count reset to 1
    g1.pel[sid(2)].delivery_count = 3
    zed, _ = g1.lookup_or_create(b"zed", T0 - 50)
    add_group(stream, b"g0")
    return ctx, stream


def full_pairs(with_active):
    def consumer(name, seen, active, pending):
        fields = [(b"name", name), (b"seen-time", seen)]
        if with_active:
            fields.append((b"active-time", active))
        return fields + [(b"pel-count", len(pending)), (b"pending", pending)]

    g0 = [
        (b"name", b"g0"),
        (b"last-delivered-id", b"0-0"),
        (b"entries-read", None),
        (b"lag", 3),
        (b"pel-count", 0),
        (b"pending", []),
        (b"consumers", []),
    ]
    g1 = [
        (b"name", b"g1"),
        (b"last-delivered-id", b"2-0"),
        (b"entries-read", 2),
        (b"lag", 1),
        (b"pel-count", 2),
        (b"pending", [[b"1-0", b"alice", T0 - 100, 1], [b"2-0", b"bob", T0 - 500, 3]]),
        (
            b"consumers",
            [
                consumer(b"alice", T0 - 100, T0 - 100, [[b"1-0", T0 - 100, 1]]),
                consumer(b"bob", T0 - 500, T0 - 500, [[b"2-0", T0 - 500, 3]]),
                consumer(b"zed", T0 - 50, -1, []),
            ],
        ),
    ]
    head = [
        (b"length", 3),
        (b"radix-tree-keys", 1),
        (b"radix-tree-nodes", 2),
        (b"last-generated-id", b"3-0"),
        (b"max-deleted-entry-id", b"0-0"),
        (b"entries-added", 3),
        (b"recorded-first-entry-id", b"1-0"),
        (b"entries", [[b"1-0", F], [b"2-0", F], [b"3-0", F]]),
    ]
    return head, g0, g1


def flat(pairs):
    out = []
    for k, v in pairs:
        out += [k, v]
    return out


def _without_nacked_count(reply):
    """Redis 8.8's ``nacked-count`` (0 here: nothing NACKed) checked right after each group's ``pel-count`` (a choice,
    docs/redis8-choices.md) and taken out."""
    if isinstance(reply, dict):
        for group in reply[b"groups"]:
            keys = list(group)
            assert keys[keys.index(b"pel-count") + 1] == b"nacked-count" and group.pop(b"nacked-count") == 0
        return reply
    groups = reply[reply.index(b"groups") + 1]
    for i, group in enumerate(groups):
        at = group.index(b"pel-count") + 2
        assert group[at:at + 2] == [b"nacked-count", 0]
        groups[i] = group[:at] + group[at + 2:]
    return reply


def full_reply(ctx, *argv):
    """XINFO STREAM FULL with the Redis 8.6 IDMP fields checked (defaults, right after recorded-first-entry-id:
    a choice, docs/redis8-choices.md) and taken out, so the 7.x layout checks below apply to every profile."""
    reply = ctx.run(*argv)
    if ctx.profile.has("xnack"):
        reply = _without_nacked_count(reply)
    if not ctx.profile.has("stream_idmp"):
        return reply
    if isinstance(reply, dict):
        items = list(reply.items())
        assert items[7:13] == IDMP_DEFAULTS
        return dict(items[:7] + items[13:])
    assert [tuple(reply[i:i + 2]) for i in range(14, 26, 2)] == IDMP_DEFAULTS
    return reply[:14] + reply[26:]


@pytest.mark.parametrize("version", ALL)
def test_stream_full_resp2(version):
    ctx, stream = full_ctx(version)
    head, g0, g1 = full_pairs(ctx.profile.has("consumer_active_time"))
    g1 = [(k, [flat(c) for c in v] if k == b"consumers" else v) for k, v in g1]
    expected = flat(head) + [b"groups", [flat(g0), flat(g1)]]
    assert full_reply(ctx, "XINFO", "STREAM", "s", "FULL") == expected
    assert len(expected) == 18 and len(flat(g1)) == 14
    assert len(full_reply(ctx, "XINFO", "STREAM", "s", "FULL")[17][1][13][0]) == (10 if version in ACTIVE else 8)
    check(stream)


@pytest.mark.parametrize("version", ALL)
def test_stream_full_resp3(version):
    ctx, stream = full_ctx(version, protocol=3)
    head, g0, g1 = full_pairs(ctx.profile.has("consumer_active_time"))
    reply = full_reply(ctx, "XINFO", "STREAM", "s", "full")
    assert list(reply)[:8] == [k for k, _ in head] and list(reply)[8] == b"groups" and len(reply) == 9
    for k, v in head:
        assert reply[k] == v
    groups = reply[b"groups"]
    assert [list(g.items()) for g in groups[:1]] == [g0]
    got_g1 = groups[1]
    assert list(got_g1) == [k for k, _ in g1]
    consumers = got_g1.pop(b"consumers")
    assert list(got_g1.items()) == [p for p in g1 if p[0] != b"consumers"]
    assert [list(c.items()) for c in consumers] == dict(g1)[b"consumers"]


def count_ctx(n=15, consumers=12):
    ctx, stream = new_ctx(n=n)
    group = add_group(stream, b"g")
    deliver(stream, group, b"c00", [sid(i) for i in range(1, n + 1)], T0)
    for i in range(1, consumers):
        group.lookup_or_create(b"c%02d" % i, T0)
    return ctx, stream


@pytest.mark.parametrize("opts, shown", [((), 10), (("COUNT", "3"), 3), (("count", "0"), 15), (("COUNT", "-1"), 10),
                                         (("COUNT", "-9223372036854775808"), 10), (("COUNT", "100"), 15)])
def test_stream_full_count(opts, shown):
    ctx, stream = count_ctx()
    reply = ctx.run("XINFO", "STREAM", "s", "FULL", *opts)
    fields = dict(zip(reply[::2], reply[1::2]))
    assert [e[0] for e in fields[b"entries"]] == [b"%d-0" % i for i in range(1, shown + 1)]
    group = dict(zip(fields[b"groups"][0][::2], fields[b"groups"][0][1::2]))
    assert group[b"pel-count"] == 15
    assert [p[0] for p in group[b"pending"]] == [b"%d-0" % i for i in range(1, shown + 1)]
    assert len(group[b"consumers"]) == 12  # every consumer, whatever COUNT says
    c00 = dict(zip(group[b"consumers"][0][::2], group[b"consumers"][0][1::2]))
    assert c00[b"pel-count"] == 15
    assert [p[0] for p in c00[b"pending"]] == [b"%d-0" % i for i in range(1, shown + 1)]


def test_stream_full_of_an_empty_stream():
    ctx = DictContext()
    ctx.create(b"e")
    assert ctx.run("XINFO", "STREAM", "e", "FULL") == [
        b"length", 0, b"radix-tree-keys", 0, b"radix-tree-nodes", 1, b"last-generated-id", b"0-0",
        b"max-deleted-entry-id", b"0-0", b"entries-added", 0, b"recorded-first-entry-id", b"0-0",
        b"entries", [], b"groups", [],
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------- GROUPS


def test_groups_none():
    ctx, stream = new_ctx()
    assert ctx.run("XINFO", "GROUPS", "s") == []


@pytest.mark.parametrize("version", ALL)
def test_groups_resp2(version):
    ctx, stream = full_ctx(version)
    assert ctx.run("XINFO", "GROUPS", "s") == [
        [b"name", b"g0", b"consumers", 0, b"pending", 0, b"last-delivered-id", b"0-0", b"entries-read", None, b"lag", 3],
        [b"name", b"g1", b"consumers", 3, b"pending", 2, b"last-delivered-id", b"2-0", b"entries-read", 2, b"lag", 1],
    ]


def test_groups_resp3():
    ctx, stream = full_ctx(protocol=3)
    reply = ctx.run("XINFO", "GROUPS", "s")
    assert [list(g.items()) for g in reply] == [
        [(b"name", b"g0"), (b"consumers", 0), (b"pending", 0), (b"last-delivered-id", b"0-0"), (b"entries-read", None), (b"lag", 3)],
        [(b"name", b"g1"), (b"consumers", 3), (b"pending", 2), (b"last-delivered-id", b"2-0"), (b"entries-read", 2), (b"lag", 1)],
    ]


def groups_lag(stream, ctx):
    (g,) = ctx.run("XINFO", "GROUPS", "s")
    return g[9], g[11]  # entries-read, lag


def test_groups_lag_sanity():
    # test "Consumer group read counter and lag sanity": 5 entries, group at 0
    ctx, stream = new_ctx(n=5)
    group = add_group(stream, b"g")
    assert groups_lag(stream, ctx) == (None, 5)
    deliver(stream, group, b"c", [sid(1)], T0)
    assert groups_lag(stream, ctx) == (1, 4)
    deliver(stream, group, b"c", [sid(i) for i in range(2, 6)], T0)
    assert groups_lag(stream, ctx) == (5, 0)
    stream.append(sid(6), F)
    assert groups_lag(stream, ctx) == (5, 1)


def test_groups_lag_unknown_with_a_tombstone_ahead():
    # test "Consumer group lag with XDELs": nil until the group reaches the last ID
    ctx, stream = new_ctx(n=5)
    group = add_group(stream, b"g")
    stream.delete(sid(3))
    assert groups_lag(stream, ctx) == (None, None)
    deliver(stream, group, b"c", [sid(1), sid(2)], T0)
    assert groups_lag(stream, ctx) == (None, None)
    deliver(stream, group, b"c", [sid(4)], T0)
    assert groups_lag(stream, ctx) == (None, None)
    deliver(stream, group, b"c", [sid(5)], T0)
    assert groups_lag(stream, ctx) == (5, 0)


def test_groups_lag_of_an_empty_stream():
    ctx = DictContext()
    stream = ctx.create(b"s")
    add_group(stream, b"g")
    assert groups_lag(stream, ctx) == (None, 0)


# ------------------------------------------------------------------------------------------- CONSUMERS


def consumers_ctx(version="7.4", protocol=2):
    ctx, stream = new_ctx(version, protocol)
    group = add_group(stream, b"g")
    deliver(stream, group, b"b", [sid(1), sid(2)], T0 - 300)
    deliver(stream, group, b"ab", [sid(3)], T0 - 200)
    group.consumers[b"b"].seen_time = T0 - 100  # attempted later without success
    a, _ = group.lookup_or_create(b"a", T0 - 1000)  # created, never active
    B, _ = group.lookup_or_create(b"B", T0)
    return ctx, stream


@pytest.mark.parametrize("version", ACTIVE)
def test_consumers_resp2(version):
    ctx, stream = consumers_ctx(version)
    assert ctx.run("XINFO", "CONSUMERS", "s", "g") == [
        [b"name", b"B", b"pending", 0, b"idle", 0, b"inactive", -1],
        [b"name", b"a", b"pending", 0, b"idle", 1000, b"inactive", -1],
        [b"name", b"ab", b"pending", 1, b"idle", 200, b"inactive", 200],
        [b"name", b"b", b"pending", 2, b"idle", 100, b"inactive", 300],
    ]


def test_consumers_r70_has_no_inactive():
    ctx, stream = consumers_ctx("7.0")
    assert ctx.run("XINFO", "CONSUMERS", "s", "g") == [
        [b"name", b"B", b"pending", 0, b"idle", 0],
        [b"name", b"a", b"pending", 0, b"idle", 1000],
        [b"name", b"ab", b"pending", 1, b"idle", 200],
        [b"name", b"b", b"pending", 2, b"idle", 100],
    ]


@pytest.mark.parametrize("version", ALL)
def test_consumers_resp3(version):
    ctx, stream = consumers_ctx(version, protocol=3)
    reply = ctx.run("XINFO", "CONSUMERS", "s", "g")
    assert all(isinstance(c, dict) for c in reply)
    keys = [b"name", b"pending", b"idle"] + ([b"inactive"] if version in ACTIVE else [])
    assert [list(c) for c in reply] == [keys] * 4
    assert reply[3][b"idle"] == 100


def test_consumers_idle_grows_with_now_and_is_clamped_inactive_is_not():
    ctx, stream = consumers_ctx()
    ctx.now_ms = T0 + 60_000
    reply = ctx.run("XINFO", "CONSUMERS", "s", "g")
    assert [(c[5], c[7]) for c in reply] == [(60_000, -1), (61_000, -1), (60_200, 60_200), (60_100, 60_300)]
    ctx.now_ms = T0 - 250  # the clock went backwards
    reply = ctx.run("XINFO", "CONSUMERS", "s", "g")
    assert [(c[5], c[7]) for c in reply] == [(0, -1), (750, -1), (0, -50), (0, 50)]


def test_consumers_of_a_group_without_consumers():
    ctx, stream = new_ctx()
    add_group(stream, b"g")
    assert ctx.run("XINFO", "CONSUMERS", "s", "g") == []


def test_xinfo_changes_nothing():
    ctx, stream = consumers_ctx()
    group = stream.groups[b"g"]
    before = {n: (c.seen_time, c.active_time, list(c.pel)) for n, c in group.consumers.items()}
    ctx.now_ms = T0 + 5
    for argv in (("STREAM", "s"), ("STREAM", "s", "FULL"), ("GROUPS", "s"), ("CONSUMERS", "s", "g")):
        ctx.run("XINFO", *argv)
    assert {n: (c.seen_time, c.active_time, list(c.pel)) for n, c in group.consumers.items()} == before
    assert ctx.events == [] and ctx.modified_keys == []
    check(stream)


# ------------------------------------------------------------------- through the full command path


@pytest.mark.parametrize("version", ACTIVE)
def test_ported_consumer_seen_time_and_active_time(version):
    # stream-cgroups.tcl "Consumer seen-time and active-time" with exact values (the waits are now_ms steps)
    ctx = DictContext(version, now_ms=T0)
    ctx.run("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    ctx.run("XREADGROUP", "GROUP", "mygroup", "Alice", "COUNT", "1", "STREAMS", "mystream", ">")
    ctx.now_ms += 100
    assert ctx.run("XINFO", "CONSUMERS", "mystream", "mygroup") == [[b"name", b"Alice", b"pending", 0, b"idle", 100, b"inactive", -1]]
    ctx.run("XADD", "mystream", "*", "f", "v")
    ctx.run("XREADGROUP", "GROUP", "mygroup", "Alice", "COUNT", "1", "STREAMS", "mystream", ">")
    assert ctx.run("XINFO", "CONSUMERS", "mystream", "mygroup") == [[b"name", b"Alice", b"pending", 1, b"idle", 0, b"inactive", 0]]
    ctx.now_ms += 100
    ctx.run("XREADGROUP", "GROUP", "mygroup", "Alice", "COUNT", "1", "STREAMS", "mystream", ">")
    assert ctx.run("XINFO", "CONSUMERS", "mystream", "mygroup") == [[b"name", b"Alice", b"pending", 1, b"idle", 0, b"inactive", 100]]


def test_ported_xinfo_full_output():
    # stream-cgroups.tcl "XINFO FULL output" (7.4 shapes), with exact times
    ctx = DictContext(now_ms=T0)
    for ms, field in ((100, "a"), (101, "b"), (102, "c"), (103, "e"), (104, "f")):
        ctx.run("XADD", "x", ms, field, "1")
    ctx.run("XGROUP", "CREATE", "x", "g1", "0")
    ctx.run("XGROUP", "CREATE", "x", "g2", "0")
    ctx.run("XREADGROUP", "GROUP", "g1", "Alice", "COUNT", "1", "STREAMS", "x", ">")
    ctx.run("XREADGROUP", "GROUP", "g1", "Bob", "COUNT", "1", "STREAMS", "x", ">")
    ctx.run("XREADGROUP", "GROUP", "g1", "Bob", "NOACK", "COUNT", "1", "STREAMS", "x", ">")
    ctx.run("XREADGROUP", "GROUP", "g2", "Charlie", "COUNT", "4", "STREAMS", "x", ">")
    ctx.run("XDEL", "x", "103")
    reply = ctx.run("XINFO", "STREAM", "x", "FULL")
    assert len(reply) == 18
    info = dict(zip(reply[::2], reply[1::2]))
    assert info[b"length"] == 4
    assert [e[0] for e in info[b"entries"]] == [b"100-0", b"101-0", b"102-0", b"104-0"]
    g1, g2 = [dict(zip(g[::2], g[1::2])) for g in info[b"groups"]]
    assert g1[b"pending"] == [[b"100-0", b"Alice", T0, 1], [b"101-0", b"Bob", T0, 1]]
    assert g2[b"pending"] == [[b"%d-0" % ms, b"Charlie", T0, 1] for ms in (100, 101, 102, 103)]
    assert (g1[b"last-delivered-id"], g1[b"entries-read"], g1[b"lag"]) == (b"102-0", 3, None)
    alice, bob = [dict(zip(c[::2], c[1::2])) for c in g1[b"consumers"]]
    assert alice == {b"name": b"Alice", b"seen-time": T0, b"active-time": T0, b"pel-count": 1, b"pending": [[b"100-0", T0, 1]]}
    assert (bob[b"name"], bob[b"pel-count"]) == (b"Bob", 1)
    reply = ctx.run("XINFO", "STREAM", "x", "FULL", "COUNT", "1")
    assert len(reply) == 18
    info = dict(zip(reply[::2], reply[1::2]))
    assert len(info[b"entries"]) == 1
    g1 = dict(zip(info[b"groups"][0][::2], info[b"groups"][0][1::2]))
    assert len(g1[b"pending"]) == 1
    assert len(g1[b"consumers"][0][9]) == 1
