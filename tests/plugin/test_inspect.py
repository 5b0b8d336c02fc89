"""Frozen inspection views, their reprs, assertion helpers and the supported-commands table."""

from __future__ import annotations

import pytest

from fake_streams import FakeStreamsServer, ManualClock
from fake_streams.inspect import (
    ConsumerView,
    Entry,
    GroupView,
    Pending,
    StreamView,
    assert_all_acked,
    group_view,
    render,
    stream_keys,
    stream_view,
    supported_commands_markdown,
)


@pytest.fixture
def srv():
    server = FakeStreamsServer(version="7.4", clock=ManualClock(1_000))
    yield server
    server.close()


@pytest.fixture
def orders(srv):
    """orders: 3 entries; group workers: alice got 2 (acked one), bob none; clock moved 30 s after."""
    r = srv.client()
    for sku in ("A", "B", "C"):
        r.xadd("orders", {"sku": sku})
    r.xgroup_create("orders", "workers", id="0")
    r.xgroup_createconsumer("orders", "workers", "bob")
    r.xreadgroup("workers", "alice", {"orders": ">"}, count=2)
    r.xack("orders", "workers", "1000-0")
    srv.clock.advance(30_000)
    yield r
    r.close()


def test_stream_view_is_a_frozen_copy_with_a_constructor_repr(srv, orders):
    view = stream_view(srv, "orders")
    assert view == StreamView(
        key="orders",
        db=0,
        length=3,
        first_id="1000-0",
        last_id="1000-2",
        max_deleted_entry_id="0-0",
        entries_added=3,
        entries=(
            Entry("1000-0", {"sku": "A"}),
            Entry("1000-1", {"sku": "B"}),
            Entry("1000-2", {"sku": "C"}),
        ),
        groups=(
            GroupView(
                stream="orders",
                name="workers",
                last_id="1000-1",
                entries_read=2,
                lag=1,
                consumers=(
                    ConsumerView(name="alice", pending=1, idle_ms=30_000, inactive_ms=30_000, seen_time=1000, active_time=1000),
                    ConsumerView(name="bob", pending=0, idle_ms=30_000, inactive_ms=-1, seen_time=1000, active_time=-1),
                ),
                pending=(Pending("1000-1", "alice", 1, 30_000, 1000),),
            ),
        ),
    )
    assert eval(repr(view)) == view  # noqa: S307 - the repr reads like the constructor call
    assert view.entries[0] == ("1000-0", {"sku": "A"})  # entries compare equal to plain tuples
    assert view.ids == ("1000-0", "1000-1", "1000-2")
    with pytest.raises(AttributeError):
        view.length = 0  # type: ignore[misc]
    orders.xadd("orders", {"sku": "D"})
    assert view.length == 3  # a copy: later writes do not show


def test_group_view_and_consumer_lookup(srv, orders):
    group = group_view(srv, "orders", "workers")
    assert group.pending_ids == ("1000-1",)
    assert group.consumer("alice").pending == 1
    with pytest.raises(LookupError) as excinfo:
        group.consumer("carol")
    assert str(excinfo.value) == (
        "Group 'workers' of stream 'orders' has no consumer 'carol'. Its consumers are:\n"
        "- 'alice' (1 pending)\n"
        "- 'bob' (0 pending)"
    )


def test_lookup_errors_list_what_is_there(srv, orders):
    orders.set("plain", "x")
    with pytest.raises(LookupError) as excinfo:
        stream_view(srv, "ordres")
    assert str(excinfo.value) == (
        "There is no stream at 'ordres' in db 0 of " + repr(srv) + ". The streams there are:\n- 'orders'"
    )
    with pytest.raises(LookupError) as excinfo:
        stream_view(srv, "plain")
    assert "There is a key of type 'string', not a stream, at 'plain'" in str(excinfo.value)
    with pytest.raises(LookupError) as excinfo:
        group_view(srv, "orders", "nope")
    assert str(excinfo.value) == "Stream 'orders' (db 0) has no consumer group 'nope'. Its groups are:\n- 'workers'"
    with pytest.raises(LookupError) as excinfo:
        stream_view(srv, "orders", db=1)
    assert str(excinfo.value).endswith("The streams there are:\n(none)")


def test_undecodable_bytes_stay_bytes(srv):
    r = srv.client()
    r.xadd(b"bin\xff", {b"f\xfe": b"\x00\xff"}, id="1-1")
    view = stream_view(srv, b"bin\xff")
    assert view.key == b"bin\xff" and view.entries == (("1-1", {b"f\xfe": b"\x00\xff"}),)
    assert stream_keys(srv) == [(0, b"bin\xff")]
    r.close()


def test_assert_all_acked_message(srv, orders):
    with pytest.raises(AssertionError) as excinfo:
        assert_all_acked(srv)
    assert str(excinfo.value) == (
        "The following entries were delivered but never acknowledged (XACK):\n"
        "- stream 'orders' group 'workers': 1000-1 consumer='alice' delivery_count=1 idle_ms=30000\n"
        "If this is on purpose, assert on fake_redis_streams.group(stream, group).pending instead."
    )
    orders.xack("orders", "workers", "1000-1")
    assert_all_acked(srv)
    assert_all_acked(srv, "orders", "workers")


def test_lag_unknown_is_none(srv):
    r = srv.client()
    for i in range(3):
        r.xadd("s", {"i": i}, id=f"1-{i}")
    r.xgroup_create("s", "g", id="0")
    r.xdel("s", "1-1")
    assert group_view(srv, "s", "g").lag is None  # tombstone after the cursor: XINFO shows nil
    r.close()


def test_render_is_the_failure_section_text(srv, orders):
    text = render({"localhost:6379": srv})
    assert text.splitlines()[1:] == [
        "  db 0 stream 'orders': length=3 first_id=1000-0 last_id=1000-2 entries_added=3 max_deleted_entry_id=0-0",
        "    1000-0 {'sku': 'A'}",
        "    1000-1 {'sku': 'B'}",
        "    1000-2 {'sku': 'C'}",
        "    group 'workers': last_id=1000-1 entries_read=2 lag=1 pending=1",
        "      consumer 'alice': pending=1 idle_ms=30000 inactive_ms=30000",
        "      consumer 'bob': pending=0 idle_ms=30000 inactive_ms=-1",
        "      PEL 1000-1 consumer='alice' delivery_count=1 idle_ms=30000",
    ]
    short = render({"localhost:6379": srv}, max_entries=1).splitlines()
    assert short[2:4] == ["    ... 2 earlier entries", "    1000-2 {'sku': 'C'}"]


def test_supported_commands_markdown_is_generated_from_the_table():
    text = supported_commands_markdown()
    assert "| `XADD` | -5 | denyoom fast write | 5.0.0 |" in text
    assert "| `XGROUP CREATECONSUMER` | 5 |" in text
    assert "`XINFO` |" not in text  # containers are not rows; their subcommands are
    assert "| behaviour | commands | 7.0 | 7.2 | 7.4 | valkey-8.0 |" in text
    assert "| XREAD accepts '+' for the last entry; XREADGROUP '+' has its own error | XREAD, XREADGROUP | — | — | yes | yes |" in text
    only = supported_commands_markdown(["7.4"])
    assert "| behaviour | commands | 7.4 |" in only


def test_fixture_views_follow_url_and_db(fake_redis_streams):
    import redis

    redis.Redis(host="other", db=3).xadd("s", {"f": "v"}, id="1-1")
    fake_redis_streams.client.xadd("s", {"f": "w"}, id="2-2")
    assert fake_redis_streams.stream("s").ids == ("2-2",)
    assert fake_redis_streams.stream("s", url="redis://other/3").ids == ("1-1",)
    assert fake_redis_streams.stream("s", url="redis://other", db=3).ids == ("1-1",)
    assert fake_redis_streams.streams(url="redis://other/3") == ["s"]
    assert fake_redis_streams.streams(db=3) == []
    assert sorted(fake_redis_streams.servers()) == ["localhost:6379", "other:6379"]
