"""Shortcuts of the hot paths (issue 8) answer exactly as the general code does.

* ``ids.remember_keys``: XREADGROUP notes the IDs it delivered; XACK looks them up instead of parsing.
* ``StreamValue.node_limits``: the node settings read once per XADD, following CONFIG SET at once.
"""

from __future__ import annotations

import pytest
import redis

from fake_streams import FakeStreamsServer, ids
from fake_streams.clock import ManualClock
from fake_streams.errors import ReplyError
from tests.conftest import get_connection


@pytest.fixture
def client():
    server = FakeStreamsServer(clock=ManualClock(1_000))
    yield server.client()
    server.close()


def test_remembered_keys_parse_like_the_parser():
    raws = [b"1-0", b"18446744073709551615-18446744073709551615", b"5-3", b"12"]
    expected = [ids.parse_strict_key(raw) for raw in raws]
    ids.remember_keys(raws[:3], expected[:3])
    assert ids.parse_strict_keys(raws) == expected
    with pytest.raises(ReplyError):
        ids.parse_strict_keys([b"5-3", b"bad"])


def test_xack_after_xreadgroup_uses_the_delivered_ids(client):
    for _ in range(5):
        client.xadd("s", {"f": "v"})
    client.xgroup_create("s", "g", "0")
    got = [sid for sid, _ in client.xreadgroup("g", "c", {"s": ">"}, count=3)[0][1]]
    assert all(sid in ids._RECENT for sid in got)
    with pytest.raises(redis.ResponseError, match="Invalid stream ID"):
        client.xack("s", "g", got[0], "nope")
    assert client.xpending("s", "g")["pending"] == 3  # an invalid ID acknowledges nothing
    assert client.xack("s", "g", got[2], got[0], got[0], "999-0") == 2
    assert [e["message_id"] for e in client.xpending_range("s", "g", "-", "+", 10)] == [got[1]]


def test_remembered_ids_stay_bounded(client):
    for _ in range(300):
        client.xadd("s", {"f": "v"})
    client.xgroup_create("s", "g", "0")
    for _ in range(ids.RECENT_MAX // 50 + 10):
        client.xgroup_setid("s", "g", "0")
        client.xreadgroup("g", "c", {"s": ">"}, count=300)
        client.xadd("s", {"f": "v"})
    assert len(ids._RECENT) <= ids.RECENT_MAX + 300


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
        assert [(sid[0] << 64) | sid[1] for sid in index] == sorted(model)
        index._check()
