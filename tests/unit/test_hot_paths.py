"""Shortcuts of the hot paths (issue 8) answer exactly as the general code does.

* ``ConsumerGroup.delivered_keys``: XREADGROUP notes in the group the IDs it delivered; XACK of those IDs
  takes their keys instead of parsing them.
* ``StreamValue.node_limits``: the node settings read once per XADD, following CONFIG SET at once.
"""

from __future__ import annotations

import pytest
import redis

from fake_streams import FakeStreamsServer, groups, ids
from fake_streams.clock import ManualClock
from fake_streams.errors import ReplyError
from fake_streams.groups import ConsumerGroup
from tests.conftest import get_connection
from tests.support.budget import budget
from tests.support.context import DictContext


@pytest.fixture
def client():
    server = FakeStreamsServer(clock=ManualClock(1_000))
    yield server.client()
    server.close()


def test_remembered_keys_parse_like_the_parser():
    raws = [b"1-0", b"5-3", b"18446744073709551615-18446744073709551615"]
    expected = [ids.parse_strict_key(raw) for raw in raws]
    group, other = ConsumerGroup(b"g", ids.MIN_ID), ConsumerGroup(b"h", ids.MIN_ID)
    consumer = group.create_consumer(b"c", 0)
    group.deliver_batch(list(expected), list(raws), consumer, 0)
    assert group.delivered_keys(list(raws)) == expected
    assert group.delivered_keys(raws[:2]) == expected[:2]  # the first IDs of a delivery
    assert group.delivered_keys(raws[1:]) is None  # anything else is parsed
    assert group.delivered_keys(raws + [b"9-9"]) is None
    assert group.delivered_keys([b"1-0", b"5-3", b"7-0"]) is None
    assert group.delivered_keys([]) is None
    assert other.delivered_keys(list(raws)) is None  # each group notes its own deliveries
    assert ids.parse_strict_keys(raws + [b"12"]) == expected + [12 << 64]
    with pytest.raises(ReplyError):
        ids.parse_strict_keys([b"5-3", b"bad"])


def test_xack_after_xreadgroup_uses_the_delivered_ids(client):
    for _ in range(5):
        client.xadd("s", {"f": "v"})
    client.xgroup_create("s", "g", "0")
    got = [sid for sid, _ in client.xreadgroup("g", "c", {"s": ">"}, count=3)[0][1]]
    assert _stream(client, b"s").groups[b"g"].delivered_keys(list(got)) == ids.parse_strict_keys(got)
    with pytest.raises(redis.ResponseError, match="Invalid stream ID"):
        client.xack("s", "g", got[0], "nope")
    assert client.xpending("s", "g")["pending"] == 3  # an invalid ID acknowledges nothing
    assert client.xack("s", "g", got[2], got[0], got[0], "999-0") == 2
    assert [e["message_id"] for e in client.xpending_range("s", "g", "-", "+", 10)] == [got[1]]
    client.xgroup_setid("s", "g", "0")
    got = [sid for sid, _ in client.xreadgroup("g", "c", {"s": ">"}, count=4)[0][1]]
    assert client.xack("s", "g", *got[:2]) == 2  # the first IDs of the delivery (remembered)
    assert client.xack("s", "g", *got) == 2
    assert client.xpending("s", "g")["pending"] == 0


def test_remembered_ids_stay_bounded(client, monkeypatch):
    monkeypatch.setattr(groups, "RECENT_MAX", 2000)
    for _ in range(300):
        client.xadd("s", {"f": "v"})
    client.xgroup_create("s", "g", "0")
    group = _stream(client, b"s").groups[b"g"]
    for _ in range(2000 // 50 + 10):
        client.xgroup_setid("s", "g", "0")
        client.xreadgroup("g", "c", {"s": ">"}, count=300)
        client.xadd("s", {"f": "v"})
        assert group._recent_size <= 2000 + 400
    assert sum(len(keys) for _, keys in group._recent.values()) <= 2000 + 400


def test_node_limits_follow_config_set(client):
    client.config_set("stream-node-max-entries", 2)
    for _ in range(4):
        client.xadd("t", {"f": "v"})
    stream = _stream(client, b"t")
    assert stream.node_limits() == (4096, 2) and len(stream._nodes) == 2
    client.config_set("stream-node-max-entries", 100)
    client.config_set("stream-node-max-bytes", 10)
    assert stream.node_limits() == (10, 100)
    client.xadd("t", {"f": "v"})
    assert len(stream._nodes) == 3  # the byte limit now opens a node per entry
    stream.stream_node_max_entries = 7  # an instance's own setting wins over CONFIG
    assert stream.node_limits() == (10, 7)


def _stream(client, key):
    conn = get_connection(client)  # redis-py < 5.3 wants a command name
    try:
        return conn._sock._server.dbs[0].get(key).value
    finally:
        client.connection_pool.release(conn)


@pytest.mark.parametrize("seed", range(40))
def test_pop_sorted_runs_match_a_dict_model(seed):
    """IdMap.pop_sorted: the side-by-side shortcut and the general walk remove exactly the present keys."""
    import random

    from fake_streams.idindex import LOAD, IdMap

    rnd = random.Random(seed)
    present = sorted(rnd.sample(range(10 * LOAD), rnd.randint(1, 5 * LOAD)))
    index = IdMap()
    index.extend_k(present, [f"v{k}" for k in present])
    model = {k: f"v{k}" for k in present}
    for _ in range(30):
        if rnd.random() < 0.5 and model:  # a run of neighbours, as an XACK of one delivery names
            ordered = sorted(model)
            start = rnd.randrange(len(ordered))
            keys = ordered[start:start + rnd.randint(1, 12)]
        else:
            keys = sorted(rnd.choice(range(10 * LOAD)) for _ in range(rnd.randint(1, 12)))
        removed, values = index.pop_sorted(keys)
        expected = sorted(set(k for k in keys if k in model))
        assert removed == expected and values == [model.pop(k) for k in expected]
        assert [ids.key_of(sid) for sid in index] == sorted(model)
        index._check()


# ------------------------------------------- Stream.add_next (XADD key * …) against the general add
def _reference_add_next(stream, fields, now, limits):
    """streamNextID (StreamID.incr) + Stream.add: what add_next must equal."""
    from fake_streams.ids import MAX_ID, make_id
    from fake_streams.nodes import LISTPACK_MAX_SIZE

    last = stream.last_id
    if last == MAX_ID:
        raise ReplyError("XADD_ID_EXHAUSTED")
    sid = make_id(now, 0) if now > last[0] else last.incr()
    total = sum(map(len, fields))
    if total > LISTPACK_MAX_SIZE:
        raise ReplyError("ELEMENTS_TOO_LARGE")
    enc = b"%d-%d" % sid
    stream.add(sid, ids.key_of(sid), enc, fields, total, limits)
    return enc


@pytest.mark.parametrize("seed", range(12))
def test_add_next_matches_the_general_add(seed):
    import random

    from fake_streams.ids import make_id
    from fake_streams.stream import Stream

    rnd = random.Random(seed)
    values = [b"", b"v", b"12", b"-3", b"007", b"x" * 63, b"y" * 64, b"9" * 20, b"u:1234", b"z" * 300]
    names = [[b"user", b"action"], [b"a"], [b"user", b"act"], [b"1", b"2", b"3"]]
    limits = rnd.choice([None, (4096, 100), (0, 0), (300, 7), (100_000, 1000)])
    fast, slow = Stream(), Stream()
    now = 1_000
    for _step in range(600):
        roll = rnd.random()
        if roll < 0.3:
            now += rnd.choice([1, 2, 200, 5_000])
        elif roll < 0.33 and len(fast):  # tombstones: the tail node may hold deleted entries only
            victim = rnd.choice([sid for sid, _ in fast.range(make_id(0, 0), fast.last_id)])
            assert fast.delete(victim) == slow.delete(victim)
        elif roll < 0.34:  # a clock behind last_id: the sequence goes on
            now -= 50
        row = rnd.choice(names)
        fields = [item for name in row for item in (name, rnd.choice(values))]
        assert fast.add_next(list(fields), now, limits) == _reference_add_next(slow, list(fields), now, limits)
    assert fast.node_layout() == slow.node_layout()
    assert fast.range(make_id(0, 0), fast.last_id) == slow.range(make_id(0, 0), slow.last_id)
    assert (fast.last_id, fast.first_id, fast.entries_added) == (slow.last_id, slow.first_id, slow.entries_added)
    fast._check()


def test_add_next_errors_change_nothing(monkeypatch):
    from fake_streams import stream as stream_module
    from fake_streams.ids import U64_MAX, make_id
    from fake_streams.stream import Stream

    s = Stream()
    s.add_next([b"f", b"v"], 5)
    s.last_id = make_id(U64_MAX, U64_MAX)
    with pytest.raises(ReplyError) as exc:
        s.add_next([b"f", b"v"], 10)
    assert exc.value.key == "XADD_ID_EXHAUSTED"
    s.last_id = make_id(U64_MAX, U64_MAX - 1)
    assert s.add_next([b"f", b"v"], 10) == b"%d-%d" % (U64_MAX, U64_MAX)
    s.last_id = make_id(7, U64_MAX)
    assert s.add_next([b"f", b"v"], 3) == b"8-0"
    monkeypatch.setattr(stream_module, "LISTPACK_MAX_SIZE", 100)  # instead of a 1 GiB entry
    big = b"x" * 100
    before = (s.last_id, len(s), s.node_layout())
    with pytest.raises(ReplyError) as exc:
        s.add_next([b"f", big], 100)
    assert exc.value.key == "ELEMENTS_TOO_LARGE"
    assert (s.last_id, len(s), s.node_layout()) == before


# ------------------------------ XREADGROUP GROUP g c [COUNT n] STREAMS key > and XACK: fast vs general
def _ctx(profile, protocol):
    """tests.support.context.DictContext with a non-stream key (``str``, for WRONGTYPE) and ``now`` at 1000."""
    ctx = DictContext(profile, protocol, now_ms=1_000)
    ctx.argv = [b"XREADGROUP"]
    ctx.keyspace[b"str"] = "not a stream"
    return ctx


def _state(ctx):
    out = {}
    for key, stream in ctx.keyspace.items():
        if isinstance(stream, str):
            continue
        stream._check()
        out[key] = stream.range(ids.MIN_ID, ids.MAX_ID)
        for name, group in stream.groups.items():
            group._check()
            out[key, name] = (
                group.last_id,
                group.entries_read,
                [(sid, n.delivery_time, n.delivery_count, n.consumer.name, n.id_bytes) for sid, n in group.pel.items()],
                [(c.name, c.seen_time, c.active_time, list(c.pel.keys())) for c in group.consumers.values()],
            )
    return out


def _outcome(handler, ctx, args):
    try:
        return handler(ctx, list(args))
    except ReplyError as exc:
        return ("error", exc.key, str(exc))


@pytest.mark.parametrize("seed", range(budget(fast=4, full=16)))
def test_xreadgroup_new_entries_fast_path_matches_the_general_path(seed):
    import random

    from fake_streams.commands import COMMANDS
    from fake_streams.commands.xread import _xread_generic

    rnd = random.Random(seed)
    profile = rnd.choice(["7.0", "7.2", "7.4", "valkey-8.0"])
    protocol = rnd.choice([2, 3])
    fast, slow = _ctx(profile, protocol), _ctx(profile, protocol)
    xadd, xdel, xack = COMMANDS["xadd"].handler, COMMANDS["xdel"].handler, COMMANDS["xack"].handler
    create, setid = COMMANDS["xgroup|create"].handler, COMMANDS["xgroup|setid"].handler
    general_ack_keys = ids.parse_strict_keys

    def both(handler, args):
        a, b = _outcome(handler, fast, args), _outcome(handler, slow, args)
        assert a == b, args
        return a

    both(xadd, [b"s", b"*", b"f", b"v"])
    both(create, [b"s", b"g", b"0"])
    both(create, [b"s", b"h", b"$"])
    delivered = []
    for _step in range(400):
        roll = rnd.random()
        fast.now_ms = slow.now_ms = fast.now_ms + rnd.choice([0, 1, 7])
        if roll < 0.3:
            both(xadd, [b"s", b"*", b"f", b"%d" % rnd.randrange(100)])
        elif roll < 0.35:
            both(xadd, [b"s", b"*", b"a", b"1", b"b", b"x" * rnd.randrange(200)])
        elif roll < 0.4 and delivered:
            both(xdel, [b"s", rnd.choice(delivered)])
        elif roll < 0.45:
            both(setid, [b"s", rnd.choice([b"g", b"h"]), rnd.choice([b"0", b"$", b"1000"])])
        elif roll < 0.6 and delivered:  # XACK: a delivery's first IDs (remembered) or any IDs (parsed)
            raws = delivered[: rnd.randint(1, len(delivered))] if rnd.random() < 0.7 else rnd.sample(delivered, min(2, len(delivered)))
            if rnd.random() < 0.1:
                raws = raws + [b"bad"]
            args = [b"s", rnd.choice([b"g", b"h", b"nogroup"]), *raws]
            a = _outcome(xack, fast, args)
            saved = ConsumerGroup.delivered_keys
            ConsumerGroup.delivered_keys = lambda self, raws: None  # every ID parsed
            try:
                b = _outcome(xack, slow, args)
            finally:
                ConsumerGroup.delivered_keys = saved
            assert a == b, args
            assert ids.parse_strict_keys is general_ack_keys
        else:
            group = rnd.choice([b"g", b"g", b"h", b"missing"])
            key = rnd.choice([b"s"] * 8 + [b"nokey", b"str"])
            consumer = rnd.choice([b"c1", b"c2", b"c3"])
            group_tok = rnd.choice([b"GROUP", b"group"])
            if rnd.random() < 0.8:
                count = rnd.choice([b"1", b"3", b"10", b"0", b"-2", b"abc", b"007", b"50"])
                args = [group_tok, group, consumer, rnd.choice([b"COUNT", b"count"]), count,
                        rnd.choice([b"STREAMS", b"streams"]), key, b">"]
            else:
                args = [group_tok, group, consumer, b"STREAMS", key, b">"]
            fast.events.clear()
            slow.events.clear()
            a = _outcome(COMMANDS["xreadgroup"].handler, fast, args)
            b = _outcome(lambda ctx, args: _xread_generic(ctx, args, is_group=True), slow, args)
            assert a == b, args
            assert type(a) is type(b) and fast.events == slow.events
            if isinstance(a, (list, dict)):
                entries = a[0][1] if isinstance(a, list) else a[key]
                delivered = [e[0] for e in entries] or delivered
                entries.append("mutated")  # replies are fresh lists
                if entries[:-1]:
                    entries[0][1].append(b"mutated")
        assert _state(fast) == _state(slow)


# ------------------------------------------------ XADD key MAXLEN ~ n * …: parse shortcut, trim shortcut
def _general_parse_xadd_args(args):
    """parse_xadd_args without its MAXLEN ~ shortcut."""
    from fake_streams.commands.xadd_xtrim import parse_add_trim_args

    targs = parse_add_trim_args(args, xadd=True)
    nitems = len(args) - targs.id_pos - 1
    if nitems < 2 or nitems % 2:
        raise ReplyError("WRONG_ARITY", command="xadd")
    if targs.sid == ids.MIN_ID and targs.seq_given:
        raise ReplyError("XADD_ID_ZERO")
    return targs


@pytest.mark.parametrize("seed", range(6))
def test_xadd_maxlen_approx_parse_matches_the_option_scan(seed):
    import random

    from fake_streams.commands.xadd_xtrim import parse_xadd_args

    rnd = random.Random(seed)
    for _ in range(500):
        args = [b"k", rnd.choice([b"MAXLEN", b"maxlen", b"MaxLen", b"MINID", b"LIMIT"]),
                rnd.choice([b"~", b"~", b"=", b"~\0x", b"5"]),
                rnd.choice([b"0", b"1", b"10", b"1000", b"-1", b"abc", b"007", b"99999999999999999999"]),
                rnd.choice([b"*", b"*", b"1-1", b"0-0", b"LIMIT"])]
        args += [b"f", b"v"] * rnd.randint(0, 3) + [b"x"] * rnd.randint(0, 1)
        a, b = _outcome(lambda _, a: parse_xadd_args(a), None, args), _outcome(lambda _, a: _general_parse_xadd_args(a), None, args)
        assert a == b and type(a) is type(b), args


@pytest.mark.parametrize("seed", range(12))
def test_trim_shortcut_matches_the_node_walk(seed):
    import copy
    import random

    from fake_streams.stream import Stream

    rnd = random.Random(seed)
    stream = Stream(node_max_entries=rnd.choice([3, 10, 100]), node_max_bytes=rnd.choice([0, 200, 4096]))
    now = 1
    for _ in range(400):
        now += rnd.choice([0, 1])
        stream.add_next([b"f", b"%d" % rnd.randrange(1000)], now)
        if len(stream) and rnd.random() < 0.2:
            victim = rnd.choice([sid for sid, _ in stream.range(ids.MIN_ID, ids.MAX_ID)])
            stream.delete(victim)
        if rnd.random() < 0.3:
            maxlen = rnd.choice([0, 1, 5, 50, 200, len(stream), len(stream) - 1, len(stream) - 20])
            maxlen = max(0, maxlen)
            limit = rnd.choice([None, None, 0, 5, 30])
            ref = copy.deepcopy(stream)
            assert stream.trim(maxlen, None, True, limit) == ref._trim_walk(maxlen, None, True, limit)
            assert stream.node_layout() == ref.node_layout()
            assert stream.range(ids.MIN_ID, ids.MAX_ID) == ref.range(ids.MIN_ID, ids.MAX_ID)
            assert stream.first_id == ref.first_id
            stream._check()


# ---------------------------------------------------- XRANGE key start end COUNT n: shortcut vs general
@pytest.mark.parametrize("seed", range(8))
def test_xrange_count_shortcut_matches_the_general_path(seed):
    import random

    from fake_streams.commands import COMMANDS
    from fake_streams.commands.xrange import _range

    rnd = random.Random(seed)
    ctx = _ctx("7.4", 2)
    xadd, xdel = COMMANDS["xadd"].handler, COMMANDS["xdel"].handler
    for i in range(rnd.choice([0, 5, 1500, 3000])):
        ctx.now_ms += rnd.choice([0, 1])
        xadd(ctx, [b"s", b"*", b"f", b"%d" % i])
    stream = ctx.keyspace.get(b"s")
    live = [sid for sid, _ in stream.range(ids.MIN_ID, ids.MAX_ID)] if stream is not None else []
    for sid in rnd.sample(live, len(live) // 4):
        xdel(ctx, [b"s", sid.encode()])
    live = [sid for sid, _ in stream.range(ids.MIN_ID, ids.MAX_ID)] if stream is not None else []

    def some_id():
        if live and rnd.random() < 0.7:
            sid = rnd.choice(live)
            return rnd.choice([sid.encode(), b"%d" % sid.ms, b"(" + sid.encode(), b"%d-%d" % (sid.ms, sid.seq + 1)])
        return rnd.choice([b"-", b"+", b"0", b"bad", b"99999999999999-0", b"1-x"])

    for _ in range(300):
        args = [rnd.choice([b"s", b"s", b"nokey", b"str"]), some_id(), some_id(),
                rnd.choice([b"COUNT", b"count", b"LIMIT"]),
                rnd.choice([b"1", b"10", b"100", b"1000", b"0", b"-1", b"x", b"07", b"5000"])]
        a = _outcome(COMMANDS["xrange"].handler, ctx, args)
        b = _outcome(lambda c, a: _range(c, a, rev=False), ctx, args)
        assert a == b, args
        if isinstance(a, list) and a and isinstance(a[0], list) and stream is not None:
            lo, hi = ids.parse_range_start(args[1]), ids.parse_range_end(args[2])
            want = [[sid.encode(), fields] for sid, fields in stream.range(lo, hi, int(args[4]))]
            assert a == want
            a[0][1].append(b"mutated")  # fresh lists
            assert stream.range(lo, hi, 1)[0][1] == want[0][1]  # the stream's fields are untouched


@pytest.mark.parametrize("seed", range(6))
def test_pipelined_xadd_stores_entries_as_single_xadds_do(seed):
    """A pipeline's XADDs reach the stream with their arguments as a tuple (``fastpath.pack_commands``); the
    entries must be sized, split into nodes and stored exactly as the same XADDs sent one by one: same node
    layout (SAMEFIELDS sizes, ``stream-node-max-bytes`` splits), same DUMP payload, field names shared with
    the node's master entry."""
    import random

    rnd = random.Random(seed)
    values = [b"", b"v", b"12", b"-3", b"007", b"x" * 63, b"y" * 64, b"9" * 20, b"u:1234", b"z" * 300]
    names = [[b"user", b"action"], [b"a"], [b"user", b"act"]]
    rows = []
    for _ in range(150):
        row = rnd.choice(names) if rnd.random() < 0.3 else names[0]
        rows.append({name: rnd.choice(values) for name in row})
    max_bytes = rnd.choice([b"4096", b"500", b"0"])
    outcome = []
    for pipelined in (False, True):
        server = FakeStreamsServer(clock=ManualClock(1_000))
        client = server.client()
        client.config_set("stream-node-max-bytes", max_bytes)
        if pipelined:
            pipe = client.pipeline(transaction=False)
            for fields in rows:
                pipe.xadd("s", fields)
            added = pipe.execute()
        else:
            added = [client.xadd("s", fields) for fields in rows]
        stream = _stream(client, b"s")
        shared = [entry_fields[0] is node_names[0] for node_names, entry_fields in _master_and_entries(stream)]
        outcome.append((added, stream.node_layout(), client.dump("s"), shared))
        server.close()
    assert outcome[1] == outcome[0]
    assert any(outcome[0][3])  # the single XADDs do share the master's names (what the test compares)


def _master_and_entries(stream):
    """``(master field names, stored fields)`` of each live entry whose names are its node's master names."""
    for node, entries in stream.node_contents():
        for _key, fields, deleted in entries:
            if not deleted and tuple(fields[0::2]) == node.master_fields:
                yield node.master_fields, fields
