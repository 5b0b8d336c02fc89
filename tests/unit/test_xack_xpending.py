"""XACK and XPENDING (spec §2.11, §2.12): order of checks, every error text, summary and extended forms,
IDLE filtering, exclusive bounds, and every example of the two XACK lessons in the seed documents.
"""

from __future__ import annotations

import pytest

from fake_streams.reply import OK
from tests.support.context import DictContext
from tests.support.engine import ALL, T0, sid
from tests.support.engine import check_all as check
from tests.support.engine import profile_err as err


def setup(version="7.4", n=4):
    """``s`` with entries 1-0..n-0, group ``g`` at 0; alice read 1-0, 2-0 at T0; bob the rest at T0+100."""
    ctx = DictContext(version, now_ms=T0)
    for i in range(1, n + 1):
        ctx.run("XADD", "s", f"{i}-0", "f", str(i))
    ctx.run("XGROUP", "CREATE", "s", "g", "0")
    ctx.run("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    ctx.now_ms = T0 + 100
    ctx.run("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    ctx.keyspace[b"str"] = "a string"
    ctx.clear_effects()
    return ctx


def group(ctx):
    return ctx.keyspace[b"s"].groups[b"g"]


# ============================================================================================== XACK
@pytest.mark.parametrize("version", ALL)
def test_xack_removes_from_group_and_consumer_pel(version):
    """'XACK is able to remove items from the consumer/group PEL'."""
    ctx = setup(version)
    assert ctx.run("XACK", "s", "g", "1-0") == 1
    assert list(group(ctx).pel) == [sid(2), sid(3), sid(4)]
    assert list(group(ctx).consumers[b"alice"].pel) == [sid(2)]
    assert len(ctx.keyspace[b"s"]) == 4  # the stream keeps the entry
    assert ctx.events == [] and ctx.modified_keys == []
    check(ctx)


@pytest.mark.parametrize("version", ALL)
def test_xack_counts_each_id_once(version):
    """'XACK can't remove the same item multiple times' / '…accept multiple arguments'."""
    ctx = setup(version)
    assert ctx.run("XACK", "s", "g", "1-0", "1-0", "1") == 1  # 1 → 1-0: still the same ID
    assert ctx.run("XACK", "s", "g", "1-0") == 0
    assert ctx.run("XACK", "s", "g", "1-0", "2-0", "9-0") == 1
    assert ctx.run("XACK", "s", "g", "3-0", "4") == 2
    assert len(group(ctx).pel) == 0
    check(ctx)


@pytest.mark.parametrize("version", ALL)
def test_xack_invalid_id_acknowledges_nothing(version):
    """'XACK should fail if got at least one invalid ID'."""
    ctx = setup(version)
    for bad in ("invalid-id", "-", "+", "1-2-3", "(1", "*"):
        assert ctx.run("XACK", "s", "g", "1-0", bad) == err(ctx, "INVALID_STREAM_ID")
    assert len(group(ctx).pel) == 4
    assert ctx.run("XACK", "s", "g", "1-0") == 1


@pytest.mark.parametrize("version", ALL)
def test_xack_missing_key_or_group_is_zero_before_id_validation(version):
    ctx = setup(version)
    assert ctx.run("XACK", "nokey", "g", "x") == 0
    assert ctx.run("XACK", "s", "nog", "x") == 0
    assert ctx.run("XACK", "str", "g", "x") == err(ctx, "WRONGTYPE")


# ========================================================================================== XPENDING
@pytest.mark.parametrize("version", ALL)
def test_summary(version):
    """'XPENDING only group': count, smallest, greatest, per-consumer counts as bulk strings."""
    ctx = setup(version)
    ctx.run("XGROUP", "CREATECONSUMER", "s", "g", "carol")  # no pending entries: not listed
    assert ctx.run("XPENDING", "s", "g") == [4, b"1-0", b"4-0", [[b"alice", b"2"], [b"bob", b"2"]]]
    ctx.run("XACK", "s", "g", "1-0", "4-0")
    assert ctx.run("XPENDING", "s", "g") == [2, b"2-0", b"3-0", [[b"alice", b"1"], [b"bob", b"1"]]]


@pytest.mark.parametrize("version", ALL)
def test_summary_of_an_empty_pel(version):
    ctx = setup(version)
    ctx.run("XGROUP", "CREATE", "s", "empty", "$")
    assert ctx.run("XPENDING", "s", "empty") == [0, None, None, None]


@pytest.mark.parametrize("version", ALL)
def test_extended(version):
    """'XPENDING is able to return pending items' / '…can return single consumer items'."""
    ctx = setup(version)
    ctx.now_ms = T0 + 250
    assert ctx.run("XPENDING", "s", "g", "-", "+", "10") == [
        [b"1-0", b"alice", 250, 1],
        [b"2-0", b"alice", 250, 1],
        [b"3-0", b"bob", 150, 1],
        [b"4-0", b"bob", 150, 1],
    ]
    assert ctx.run("XPENDING", "s", "g", "-", "+", "10", "bob") == [[b"3-0", b"bob", 150, 1], [b"4-0", b"bob", 150, 1]]
    assert ctx.run("XPENDING", "s", "g", "-", "+", "10", "nobody") == []
    assert ctx.run("XPENDING", "s", "g", "-", "+", "1") == [[b"1-0", b"alice", 250, 1]]
    assert ctx.run("XPENDING", "s", "g", "-", "+", "0") == []
    assert ctx.run("XPENDING", "s", "g", "-", "+", "-3") == []  # negative COUNT → 0
    assert ctx.run("XPENDING", "s", "g", "2", "3", "10") == [[b"2-0", b"alice", 250, 1], [b"3-0", b"bob", 150, 1]]
    assert ctx.run("XPENDING", "s", "g", "3", "2", "10") == []


@pytest.mark.parametrize("version", ALL)
def test_extended_idle_is_never_negative_and_delivery_counts(version):
    ctx = setup(version)
    ctx.run("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")  # history: count 2, time T0+100
    ctx.now_ms = T0 + 50  # a clock that went back
    assert ctx.run("XPENDING", "s", "g", "-", "+", "2") == [[b"1-0", b"alice", 0, 2], [b"2-0", b"alice", 0, 2]]


def test_extended_rows_are_what_the_model_reports():
    # the no-IDLE form builds its rows inline (no reported_idle / as_i64 calls): the same values as the model's
    # methods, for an owner-less entry (idle -1), a delivery time ahead of the clock (idle 0), and counts at and
    # past the int64 limits (wrapped as addReplyLongLong sends them)
    from fake_streams.ids import key_of
    from fake_streams.reply import I64_MAX, as_i64

    ctx = setup(n=6)
    ctx.run("XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s", ">")
    g = group(ctx)
    nacks = dict(g.pel.items())
    nacks[sid(1)].delivery_count = I64_MAX
    nacks[sid(2)].delivery_count = I64_MAX + 1
    nacks[sid(3)].delivery_count = -I64_MAX - 1
    nacks[sid(4)].delivery_time = T0 + 10_000  # ahead of the clock
    g.nack_k(key_of(sid(5)), nacks[sid(5)])  # owner-less
    ctx.now_ms = T0 + 500
    expected = [[n.id_bytes, n.consumer.name, n.reported_idle(ctx.now_ms), as_i64(n.delivery_count)]
                for n in g.pel.values()]
    assert ctx.run("XPENDING", "s", "g", "-", "+", "10") == expected
    assert [row[2:] for row in expected[:5]] == [[500, I64_MAX], [500, -I64_MAX - 1], [400, -I64_MAX - 1],
                                                 [0, 1], [-1, 1]]
    # the IDLE form (per-entry method calls) agrees where its filter passes everything
    assert ctx.run("XPENDING", "s", "g", "IDLE", "0", "-", "+", "10") == expected


@pytest.mark.parametrize("version", ALL)
def test_exclusive_ranges(version):
    """'XPENDING with exclusive range intervals works as expected'."""
    ctx = setup(version)
    ids = [row[0] for row in ctx.run("XPENDING", "s", "g", "(1-0", "(4-0", "10")]
    assert ids == [b"2-0", b"3-0"]
    assert ctx.run("XPENDING", "s", "g", "(18446744073709551615-18446744073709551615", "+", "10") == (
        "ERR invalid start ID for the interval"
    )
    assert ctx.run("XPENDING", "s", "g", "-", "(0-0", "10") == "ERR invalid end ID for the interval"
    assert ctx.run("XPENDING", "s", "g", "(", "+", "10") == err(ctx, "INVALID_STREAM_ID")
    assert ctx.run("XPENDING", "s", "g", "(-", "+", "10") == err(ctx, "INVALID_STREAM_ID")
    assert ctx.run("XPENDING", "s", "g", "-", "(+", "10") == err(ctx, "INVALID_STREAM_ID")
    assert [r[0] for r in ctx.run("XPENDING", "s", "g", "2", "3", "10")] == [b"2-0", b"3-0"]  # 3 → 3-max


@pytest.mark.parametrize("version", ALL)
def test_idle_filter(version):
    """'XPENDING with IDLE': filtered entries do not consume COUNT."""
    ctx = setup(version)
    ctx.now_ms = T0 + 150
    assert ctx.run("XPENDING", "s", "g", "IDLE", "99999999", "-", "+", "10") == []
    assert ctx.run("XPENDING", "s", "g", "IDLE", "99999999", "-", "+", "10", "alice") == []
    assert ctx.run("XPENDING", "s", "g", "IDLE", "100", "-", "+", "10") == [
        [b"1-0", b"alice", 150, 1],
        [b"2-0", b"alice", 150, 1],
    ]
    assert ctx.run("XPENDING", "s", "g", "IDLE", "50", "-", "+", "3") == [
        [b"1-0", b"alice", 150, 1],
        [b"2-0", b"alice", 150, 1],
        [b"3-0", b"bob", 50, 1],
    ]
    assert ctx.run("XPENDING", "s", "g", "idle", "100", "(1-0", "+", "1", "alice") == [[b"2-0", b"alice", 150, 1]]
    assert ctx.run("XPENDING", "s", "g", "IDLE", "1", "-", "+", "10", "bob") == [
        [b"3-0", b"bob", 50, 1],
        [b"4-0", b"bob", 50, 1],
    ]
    assert len(ctx.run("XPENDING", "s", "g", "IDLE", "0", "-", "+", "10")) == 4  # 0 = no filter
    # a negative min-idle is not clamped: it filters only deliveries in the future
    ctx.now_ms = T0 + 20
    assert ctx.run("XPENDING", "s", "g", "IDLE", "-5", "-", "+", "10") == [
        [b"1-0", b"alice", 20, 1],
        [b"2-0", b"alice", 20, 1],
    ]


@pytest.mark.parametrize(
    "args, name",
    [
        (["a"], "SYNTAX"),  # argc 4
        (["a", "b"], "SYNTAX"),  # argc 5
        (["-", "+", "10", "c", "x", "y", "z"], "SYNTAX"),  # argc 10
        (["IDLE", "x", "-", "+"], "NOT_INTEGER"),  # IDLE parsed before the argc check
        (["IDLE", "10", "-", "+"], "SYNTAX"),  # IDLE needs start end count
        (["IDLE", "10", "-"], "SYNTAX"),
        (["-", "+", "x"], "NOT_INTEGER"),
        (["-", "+", "05"], "NOT_INTEGER"),
        (["x", "+", "x"], "NOT_INTEGER"),  # count before start
        (["x", "+", "10"], "INVALID_STREAM_ID"),
        (["x", "y", "10"], "INVALID_STREAM_ID"),  # start before end
        (["-", "y", "10"], "INVALID_STREAM_ID"),
        (["-", "+", "10", "IDLE"], None),  # IDLE only counts as argv[3]: here it is a consumer name
    ],
)
@pytest.mark.parametrize("version", ALL)
def test_argument_errors_come_before_the_key(version, args, name):
    ctx = setup(version)
    for key in ("s", "nokey", "str"):
        reply = ctx.run("XPENDING", key, "g", *args)
        if name is not None:
            assert reply == err(ctx, name)
        elif key == "s":
            assert reply == []
    assert ctx.run("XPENDING", "s", "g", "-", "+", "10", "IDLE") == []


@pytest.mark.parametrize("version", ALL)
def test_extra_arguments_are_ignored(version):
    ctx = setup(version)
    ctx.now_ms = T0 + 100
    assert ctx.run("XPENDING", "s", "g", "-", "+", "10", "alice", "junk") == [
        [b"1-0", b"alice", 100, 1],
        [b"2-0", b"alice", 100, 1],
    ]
    assert len(ctx.run("XPENDING", "s", "g", "-", "+", "10", "alice", "junk", "more")) == 2
    assert len(ctx.run("XPENDING", "s", "g", "IDLE", "0", "-", "+", "10", "bob")) == 2


@pytest.mark.parametrize("version", ALL)
def test_key_errors(version):
    ctx = setup(version)
    assert ctx.run("XPENDING", "str", "g") == err(ctx, "WRONGTYPE")
    assert ctx.run("XPENDING", "nokey", "g") == "NOGROUP No such key 'nokey' or consumer group 'g'"
    assert ctx.run("XPENDING", "s", "nog") == "NOGROUP No such key 's' or consumer group 'nog'"
    assert ctx.run("XPENDING", "s", "nog", "-", "+", "10") == "NOGROUP No such key 's' or consumer group 'nog'"


@pytest.mark.parametrize("version", ALL)
def test_xpending_touches_nothing(version):
    ctx = setup(version)
    alice = group(ctx).consumers[b"alice"]
    before = (alice.seen_time, alice.active_time, {s: (n.delivery_time, n.delivery_count) for s, n in group(ctx).pel.items()})
    ctx.now_ms = T0 + 999
    ctx.run("XPENDING", "s", "g")
    ctx.run("XPENDING", "s", "g", "-", "+", "10", "alice")
    after = (alice.seen_time, alice.active_time, {s: (n.delivery_time, n.delivery_count) for s, n in group(ctx).pel.items()})
    assert after == before and ctx.events == [] and ctx.modified_keys == []


# =========================================================================================== seeds
def orders_lesson(ctx, n):
    """The setup of the 'Acknowledging Messages (XACK)' lesson's examples."""
    rows = [("1-1", "1001", "250"), ("2-1", "1002", "75"), ("3-1", "1003", "40")][:n]
    for sid_text, order_id, amount in rows:
        assert ctx.run("XADD", "orders:stream", sid_text, "order_id", order_id, "amount", amount) == sid_text.encode()
    assert ctx.run("XGROUP", "CREATE", "orders:stream", "order-processors", "0") == OK
    reply = ctx.run("XREADGROUP", "GROUP", "order-processors", "worker-1", "COUNT", str(n), "STREAMS", "orders:stream", ">")
    expected = [[r[0].encode(), [b"order_id", r[1].encode(), b"amount", r[2].encode()]] for r in rows]
    assert reply == [[b"orders:stream", expected]]


@pytest.mark.parametrize("version", ALL)
def test_seed_xack_lesson_example_1(version):
    ctx = DictContext(version, now_ms=T0)
    orders_lesson(ctx, 2)
    assert ctx.run("XPENDING", "orders:stream", "order-processors") == [2, b"1-1", b"2-1", [[b"worker-1", b"2"]]]


@pytest.mark.parametrize("version", ALL)
def test_seed_xack_lesson_example_2(version):
    ctx = DictContext(version, now_ms=T0)
    orders_lesson(ctx, 2)
    assert ctx.run("XACK", "orders:stream", "order-processors", "1-1") == 1
    assert ctx.run("XPENDING", "orders:stream", "order-processors") == [1, b"2-1", b"2-1", [[b"worker-1", b"1"]]]
    assert ctx.run("XLEN", "orders:stream") == 2


@pytest.mark.parametrize("version", ALL)
def test_seed_xack_lesson_example_3(version):
    ctx = DictContext(version, now_ms=T0)
    orders_lesson(ctx, 3)
    assert ctx.run("XACK", "orders:stream", "order-processors", "1-1", "2-1", "3-1") == 3
    assert ctx.run("XACK", "orders:stream", "order-processors", "1-1") == 0
    assert ctx.run("XPENDING", "orders:stream", "order-processors") == [0, None, None, None]


@pytest.mark.parametrize("version", ALL)
def test_seed_xack_lesson_mistakes(version):
    ctx = DictContext(version, now_ms=T0)
    # Mistake 1: XACK on a key that is not a stream
    ctx.keyspace[b"orders:stream"] = "not-a-stream"
    assert ctx.run("XACK", "orders:stream", "order-processors", "1-1") == (
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    )
    # Mistake 2: forgetting to XACK leaves the entry pending
    assert ctx.run("XADD", "notifications:stream", "1-1", "type", "email", "to", "user1@example.com") == b"1-1"
    assert ctx.run("XGROUP", "CREATE", "notifications:stream", "mailer", "0") == OK
    assert ctx.run("XREADGROUP", "GROUP", "mailer", "worker-1", "COUNT", "1", "STREAMS", "notifications:stream", ">") == [
        [b"notifications:stream", [[b"1-1", [b"type", b"email", b"to", b"user1@example.com"]]]]
    ]
    assert ctx.run("XPENDING", "notifications:stream", "mailer") == [1, b"1-1", b"1-1", [[b"worker-1", b"1"]]]


@pytest.mark.parametrize("version", ALL)
def test_seed_xack_lesson_claims_and_exercises(version):
    """Unknown IDs are not an error; XACK never changes XLEN; acknowledging two of three leaves one."""
    ctx = DictContext(version, now_ms=T0)
    for s in ("1-1", "2-1", "3-1"):
        ctx.run("XADD", "tasks:stream", s, "n", s)
    ctx.run("XGROUP", "CREATE", "tasks:stream", "workers", "0")
    ctx.run("XREADGROUP", "GROUP", "workers", "w1", "STREAMS", "tasks:stream", ">")
    assert ctx.run("XACK", "tasks:stream", "workers", "1-1", "2-1") == 2
    assert ctx.run("XPENDING", "tasks:stream", "workers") == [1, b"3-1", b"3-1", [[b"w1", b"1"]]]
    assert ctx.run("XACK", "tasks:stream", "workers", "9-1") == 0
    assert ctx.run("XLEN", "tasks:stream") == 3
    assert ctx.run("XACK", "tasks:stream", "workers", "3-1") == 1
    assert ctx.run("XLEN", "tasks:stream") == 3


@pytest.mark.parametrize("version", ALL)
def test_seed_acknowledging_messages_tutorial(version):
    """The second XACK lesson ('Acknowledging Messages' tutorial): read one, ack it, check what is pending."""
    ctx = DictContext(version, now_ms=T0)
    for i in (0, 1, 2):
        ctx.run("XADD", "orders", f"169123456789{i}-0", "status", "pending")
    ctx.run("XGROUP", "CREATE", "orders", "processors", "0")
    assert ctx.run("XREADGROUP", "GROUP", "processors", "worker-1", "COUNT", "1", "STREAMS", "orders", ">") == [
        [b"orders", [[b"1691234567890-0", [b"status", b"pending"]]]]
    ]
    assert ctx.run("XACK", "orders", "processors", "1691234567890-0") == 1
    assert ctx.run("XPENDING", "orders", "processors", "-", "+", "10") == []
    # "Acknowledge multiple at once", after the other two were delivered
    ctx.run("XREADGROUP", "GROUP", "processors", "worker-1", "STREAMS", "orders", ">")
    ctx.now_ms = T0 + 30
    assert ctx.run("XPENDING", "orders", "processors", "-", "+", "10") == [
        [b"1691234567891-0", b"worker-1", 30, 1],
        [b"1691234567892-0", b"worker-1", 30, 1],
    ]
    assert ctx.run("XACK", "orders", "processors", "1691234567890-0", "1691234567891-0", "1691234567892-0") == 2
    assert ctx.run("XPENDING", "orders", "processors", "-", "+", "10") == []
    assert ctx.run("XLEN", "orders") == 3  # the entries stay in the stream


def test_idle_token_compares_as_a_c_string():
    ctx = setup()
    assert len(ctx.run("XPENDING", "s", "g", b"IDLE\x00", "0", "-", "+", "10")) == 4
