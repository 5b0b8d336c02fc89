"""fake_streams.ids: the ID grammar of spec §1.2 and the arithmetic of §1.3.

Expected values are the server's (spec §1.2 **[verified]** examples; re-checked on Redis 7.0.15 and
Valkey 9.1.2 with ``XADD q <id> a 1``).
"""

from __future__ import annotations

import pytest

from fake_streams.errors import ReplyError
from fake_streams.ids import (
    MAX_ID,
    MIN_ID,
    U64_MAX,
    StreamID,
    next_id,
    parse_i64,
    parse_id,
    parse_interval_id,
    parse_range_end,
    parse_range_start,
    parse_strict_id,
    parse_u64,
    parse_xadd_id,
)


def _key(fn, *args):
    with pytest.raises(ReplyError) as exc:
        fn(*args)
    return exc.value.key


# --------------------------------------------------------------------------- integers


@pytest.mark.parametrize(
    "raw, value",
    [
        (b"0", 0),
        (b"-1", -1),
        (b"9223372036854775807", 2**63 - 1),
        (b"-9223372036854775808", -(2**63)),
        (b"+5", None),
        (b"05", None),
        (b"-0", None),
        (b" 5", None),
        (b"5 ", None),
        (b"", None),
        (b"-", None),
        (b"9223372036854775808", None),
        (b"-9223372036854775809", None),
        (b"1.5", None),
        (b"\xd9\xa3", None),  # a non-ASCII digit
    ],
)
def test_parse_i64_is_string2ll(raw, value):
    assert parse_i64(raw) == value


@pytest.mark.parametrize(
    "raw, value",
    [
        (b"5", 5),
        (b" 5", 5),
        (b"\t9", 9),
        (b"\n18", 18),
        (b"+6", 6),
        (b"007", 7),
        (b"00000000000000000000000000016", 16),
        (b"18446744073709551615", U64_MAX),
        (b"18446744073709551616", None),
        (b"-18446744073709551615", 1),  # strtoull negates modulo 2**64 once string2ll overflowed
        (b"-0", 0),
        (b"-5", None),  # string2ll parsed it: negative is refused
        (b"5 ", None),
        (b"0x10", None),
        (b"", None),
        (b"+", None),
        (b" ", None),
    ],
)
def test_parse_u64_is_string2ull(raw, value):
    assert parse_u64(raw) == value


# --------------------------------------------------------------------------- ID grammar


@pytest.mark.parametrize(
    "raw, sid",
    [
        (b" 5", StreamID(5, 0)),
        (b"+6", StreamID(6, 0)),
        (b"007-1", StreamID(7, 1)),
        (b"8--18446744073709551615", StreamID(8, 1)),
        (b"\t9", StreamID(9, 0)),
        (b"10-+3", StreamID(10, 3)),
        (b"11- 4", StreamID(11, 4)),
        (b"15-18446744073709551615", StreamID(15, U64_MAX)),
        (b"18446744073709551615-18446744073709551615", MAX_ID),
        (b"17-00000000000000000000000000001", StreamID(17, 1)),
        (b"20--0", StreamID(20, 0)),
        (b"0", MIN_ID),
    ],
)
def test_strict_id_accepts_what_the_server_accepts(raw, sid):
    assert parse_strict_id(raw) == sid
    assert parse_xadd_id(raw) == (sid, True)


@pytest.mark.parametrize(
    "raw",
    [b"1--5", b"-5", b"5-", b"1-2-3", b"5 ", b"18446744073709551616", b"x", b"", b"13- *", b"0x10", b"14-0x1",
     b"-", b"+", b"-0", b"1" * 128, b"1-" + b"0" * 126, b"5-*", b"*"],
)
def test_strict_id_rejects(raw):
    if raw != b"5-*":
        assert _key(parse_strict_id, raw) == "INVALID_STREAM_ID"
    if raw not in (b"5-*",):
        assert _key(parse_xadd_id, raw) == "INVALID_STREAM_ID"


def test_length_limit_is_127_bytes():
    ok = b"0" * 125 + b"-1"  # 127 bytes
    assert parse_strict_id(ok) == StreamID(0, 1)
    assert _key(parse_strict_id, b"0" + ok) == "INVALID_STREAM_ID"


def test_xadd_ms_star_form():
    assert parse_xadd_id(b"12-*") == (StreamID(12, 0), False)
    assert parse_xadd_id(b"0-*") == (StreamID(0, 0), False)
    assert _key(parse_xadd_id, b"*-1") == "INVALID_STREAM_ID"
    assert _key(parse_strict_id, b"12-*") == "INVALID_STREAM_ID"  # only XADD knows ms-*


def test_missing_seq_fills_in():
    assert parse_strict_id(b"5") == StreamID(5, 0)
    assert parse_id(b"5", U64_MAX) == StreamID(5, U64_MAX)


def test_non_strict_accepts_minus_and_plus():
    assert parse_id(b"-") == MIN_ID
    assert parse_id(b"+") == MAX_ID


# --------------------------------------------------------------------------- intervals


def test_interval_ids():
    assert parse_interval_id(b"(5-1", 0) == (StreamID(5, 1), True)
    assert parse_interval_id(b"5", U64_MAX) == (StreamID(5, U64_MAX), False)
    assert parse_interval_id(b"-", 0) == (MIN_ID, False)
    for raw in (b"(", b"(-", b"(+", b"((1"):
        assert _key(parse_interval_id, raw, 0) == "INVALID_STREAM_ID"


def test_range_bounds():
    assert parse_range_start(b"(0-1") == StreamID(0, 2)
    assert parse_range_end(b"(1-0") == StreamID(0, U64_MAX)
    assert parse_range_start(b"(0-18446744073709551615") == StreamID(1, 0)
    assert parse_range_end(b"1234567891245") == StreamID(1234567891245, U64_MAX)
    assert parse_range_start(b"1234567891245") == StreamID(1234567891245, 0)
    assert parse_range_start(b"-") == MIN_ID
    assert parse_range_end(b"+") == MAX_ID
    assert _key(parse_range_end, b"(0-0") == "INVALID_END_ID"
    assert _key(parse_range_start, b"(18446744073709551615-18446744073709551615") == "INVALID_START_ID"
    assert _key(parse_range_start, b"(-") == "INVALID_STREAM_ID"


# --------------------------------------------------------------------------- arithmetic


def test_incr_decr_wrap():
    assert StreamID(1, 5).incr() == StreamID(1, 6)
    assert StreamID(1, U64_MAX).incr() == StreamID(2, 0)
    assert MAX_ID.incr() is None
    assert StreamID(2, 0).decr() == StreamID(1, U64_MAX)
    assert StreamID(2, 3).decr() == StreamID(2, 2)
    assert MIN_ID.decr() is None


def test_next_id_never_goes_backwards():
    assert next_id(MIN_ID, 1000) == StreamID(1000, 0)
    assert next_id(StreamID(1000, 4), 1000) == StreamID(1000, 5)
    assert next_id(StreamID(2000, 4), 1000) == StreamID(2000, 5)  # clock behind
    assert next_id(StreamID(2000, U64_MAX), 1000) == StreamID(2001, 0)  # "XADD streamID edge"
    assert next_id(MAX_ID, 1000) is None


def test_order_and_encoding():
    assert StreamID(1, U64_MAX) < StreamID(2, 0)
    assert StreamID(5, 1).encode() == b"5-1"
    assert MAX_ID.encode() == b"18446744073709551615-18446744073709551615"
    assert str(StreamID(3, 4)) == "3-4"


def test_id_text_after_nul_is_ignored():
    """The server parses IDs as C strings: XADD q '5\\0zz' → 5-0 (checked on Redis 7.0.15 / Valkey 9.1.2)."""
    assert parse_strict_id(b"5\x00zz") == StreamID(5, 0)
