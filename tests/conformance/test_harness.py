"""The harness itself: comparison rules, normalisers, and a cross-check of the two oracles with each other.

The cross-check runs the Pair machinery with Valkey standing where the fake normally stands, on
commands where Redis 7.0 and Valkey 9.1 agree (spec §6/§9), and shows that a real difference (XINFO
CONSUMERS gained ``inactive`` in 7.2) is caught. It needs both servers and no fake.
"""

from __future__ import annotations

import pytest

from fake_streams.profiles import get_profile
from tests.support.redis_compat import NO_RESP3

from .conftest import oracle_of, protocol_param
from .oracles import PROTOCOLS, Target
from .pair import Pair
from .replies import Err, WireMapParser, expected_err, first_difference, ids, set_field, shape, times


class _Aliases:
    """Just what the normalisers use of a pair."""

    tolerance_ms = 250

    def __init__(self):
        self.pairs = {}

    def add_alias(self, real_id, fake_id):
        return self.pairs.setdefault(fake_id, real_id) == real_id


def test_first_difference__strict_types_and_wire_order():
    assert first_difference([b"a", 1, None], [b"a", 1, None]) is None
    assert "type int != bool" in first_difference(1, True)
    assert "type bytes != str" in first_difference(b"a", "a")
    assert "map key #0" in first_difference({b"a": 1, b"b": 2}, {b"b": 2, b"a": 1})
    assert "length 2 != 3" in first_difference([1, 2], [1, 2, 3])
    assert "at [1][0]" in first_difference([1, [b"x"]], [1, [b"y"]])


def test_errors_compare_as_redis_py_delivers_them():
    assert expected_err("ERR syntax error") == Err("ResponseError", "ERR", "syntax error")
    assert expected_err("WRONGTYPE Operation against a key holding the wrong kind of value").code is None
    # the code redis-py strips is kept, so "-ERR x" and "-x" stay distinguishable
    assert expected_err("ERR x") != expected_err("x")
    assert expected_err("ERR syntax error").full == "ERR syntax error"


def test_shape__types_and_lengths_only():
    assert shape([b"1-1", [b"f", b"v"]]) == shape([b"9-9", [b"g", b"w"]])
    assert shape([b"1-1"]) != shape([b"1-1", b"2-2"])
    assert shape({b"a": 1}) != shape([b"a", 1])


def test_ids_normaliser__pairs_clock_made_ids_only():
    p = _Aliases()
    real = [b"1700000000100-0", b"5-0"]
    fake = [b"1700000000099-0", b"5-1"]
    assert ids(real, fake, p) == [b"1700000000099-0", b"5-0"]  # small explicit IDs are never paired
    assert p.pairs == {b"1700000000099-0": b"1700000000100-0"}
    assert ids([b"1700000009999-0"], [b"1700000000099-0"], p) == [b"1700000009999-0"]  # too far apart


def test_times_normaliser__only_time_fields_within_tolerance():
    p = _Aliases()
    real = {b"name": b"c", b"pending": 1, b"idle": 12, b"inactive": -1}
    fake = {b"name": b"c", b"pending": 1, b"idle": 3, b"inactive": -1}
    assert times(real, fake, p) == fake
    assert times({b"pending": 2}, {b"pending": 1}, p) == {b"pending": 2}  # counts are not times
    assert times([b"name", b"c", b"idle", 900], [b"name", b"c", b"idle", 1], p)[3] == 900  # beyond tolerance
    assert times([[b"1-0", b"c", 10, 1]], [[b"1-0", b"c", 4, 1]], p) == [[b"1-0", b"c", 4, 1]]
    assert times([[b"1-0", b"c", 10, 2]], [[b"1-0", b"c", 4, 1]], p) == [[b"1-0", b"c", 4, 2]]


def test_set_field__resp2_and_resp3():
    fix = set_field(b"lag", 3)
    assert fix([{b"name": b"g", b"lag": None}]) == [{b"name": b"g", b"lag": 3}]
    assert fix([[b"name", b"g", b"lag", None]]) == [[b"name", b"g", b"lag", 3]]


# ---------------------------------------------------------------------------------------------
# Redis 7.0 vs Valkey 9.1 through the Pair machinery (Valkey on the "fake" side)


@pytest.fixture(params=[protocol_param(p, p, f"resp{p}") for p in PROTOCOLS])
def cross(request, oracle_pool):
    targets = {}
    for kind, label in (("redis", "redis7.0"), ("valkey", "valkey9.1")):
        targets[kind] = oracle_of(oracle_pool, Target(kind, label, "7.0", request.param, True))
    redis_oracle, valkey_oracle = targets["redis"], targets["valkey"]
    redis_oracle.reset()
    valkey_oracle.reset()
    target = Target("redis", "redis7.0", "vs-valkey9.1", request.param, True)

    def valkey_connection(server, protocol=2):  # Pair passes no protocol= for RESP2 on redis-py 4.x
        return server.connect(protocol)

    p = Pair(target, redis_oracle, get_profile("7.0"), valkey_oracle, None, valkey_connection)
    yield p
    p.close()


def test_cross_check__oracles_agree_on_basics(cross):
    cross.same("XADD", "s", "1-1", "f", "v")
    cross.same("XADD", "s", "1-2", "a", "1", "b", "2")
    cross.same("XRANGE", "s", "-", "+")
    cross.same("XREVRANGE", "s", "+", "-", "COUNT", "1")
    auto = cross.same("XADD", "s", "*", "f", "v", normalize=ids)
    cross.same("XRANGE", "s", auto, "+")  # the argument reaches each server as its own ID
    cross.same("XINFO", "STREAM", "s")
    cross.same("XGROUP", "CREATE", "s", "g", "0")
    cross.same("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    cross.same("XPENDING", "s", "g")
    cross.same("XPENDING", "s", "g", "-", "+", "10", normalize=times)
    cross.same("XACK", "s", "g", "1-1")
    cross.same_error("BUSYGROUP", "XGROUP", "CREATE", "s", "g", "$")
    cross.same_error("XADD_ID_TOO_SMALL", "XADD", "s", "1-1", "f", "v")
    cross.same("SET", "str", "x")
    cross.same_error("WRONGTYPE", "XLEN", "str")
    cross.loosely("XADD", "s", "*", "f", "v", reason="auto ID from two unrelated clocks")


def test_cross_check__a_real_difference_is_reported(cross):
    cross.same("XADD", "s", "1-1", "f", "v")
    cross.same("XGROUP", "CREATE", "s", "g", "0")
    cross.same("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    with pytest.raises(pytest.fail.Exception, match="replies differ"):
        cross.same("XINFO", "CONSUMERS", "s", "g", normalize=times)  # 7.2+ added 'inactive' (spec §6 row 9)
    with pytest.raises(pytest.fail.Exception, match="expected error"):
        cross.same_error("UNBALANCED_XREAD", "XREAD", "STREAMS", "s")  # 7.0 and 7.2+ texts differ


def test_cross_check__known_difference_compares_with_the_spec_value(cross):
    cross.same("XADD", "s", "1-1", "f", "v")
    cross.same("XGROUP", "CREATE", "s", "g", "0")
    cross.same("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    # Valkey 9.1 ("fake" side here) has inactive, Redis 7.0 has not: declare it, with the spec'd value
    fix = set_field(b"idle", 0)
    with cross.known_difference(oracle="redis-7.0", reason="harness test: 7.0 has no 'inactive' field",
                                expected=lambda real: _with_inactive(fix(real))):
        cross.same("XINFO", "CONSUMERS", "s", "g", normalize=times)
    with pytest.raises(pytest.fail.Exception, match="did not show"):
        with cross.known_difference(oracle="redis-7.0", reason="harness test: identical replies",
                                    expected=lambda real: real):
            cross.same("XLEN", "s")


def _with_inactive(reply):
    """Add ``inactive`` after ``idle`` (0 for the one consumer above, made idle 0 as well)."""
    (consumer,) = reply
    if isinstance(consumer, dict):
        return [{**consumer, b"inactive": 0}]
    return [consumer + [b"inactive", 0]]


@pytest.mark.skipif(WireMapParser is None, reason=NO_RESP3 or "no RESP3 parser")
def test_wire_map_parser__keeps_a_repeated_key_and_capture_shows_it():
    """The real side's RESP3 parser keeps every pair of a map with a repeated key; nested maps too."""
    import io

    from redis._parsers.socket import SocketBuffer

    from fake_streams.reply import RepeatedKeyMap

    from .replies import REPEATED_KEYS, WireMapParser, capture

    wire = b"*2\r\n%2\r\n$1\r\ns\r\n:1\r\n$1\r\ns\r\n:2\r\n%1\r\n$1\r\nk\r\n:3\r\n"

    class Sock:
        def __init__(self) -> None:
            self.data = io.BytesIO(wire)

        def recv(self, n: int) -> bytes:
            return self.data.read(n)

        def settimeout(self, t: object) -> None:
            pass

    parser = WireMapParser(socket_read_size=7)  # small reads: a map split across reads
    parser._sock = Sock()
    parser._buffer = SocketBuffer(parser._sock, 7, 10)
    parser.encoder = None
    got = parser.read_response(disable_decoding=True)
    assert isinstance(got[0], RepeatedKeyMap) and got[0].pairs == [(b"s", 1), (b"s", 2)]
    assert type(got[1]) is dict and got[1] == {b"k": 3}
    assert capture(lambda: got) == [{REPEATED_KEYS: [[b"s", 1], [b"s", 2]]}, {b"k": 3}]
