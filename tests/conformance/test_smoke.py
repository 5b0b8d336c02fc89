"""Smoke scenarios proving the harness: stream basics with explicit IDs, an auto ID, a few errors."""

from .replies import ids


def test_xadd_explicit_ids__reply_is_the_id(pair):
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same("XADD", "s", "1-2", "f1", "v1", "f2", "v2")
    pair.same("XADD", "s", "5", "f", "v")  # seq defaults to 0
    pair.same("XLEN", "s")


def test_xlen__missing_key_is_zero(pair):
    pair.same("XLEN", "nosuchkey")


def test_xrange__all_count_and_exclusive_bounds(pair):
    for i in range(1, 6):
        pair.same("XADD", "s", f"{i}-0", "n", str(i))
    pair.same("XRANGE", "s", "-", "+")
    pair.same("XRANGE", "s", "-", "+", "COUNT", "2")
    pair.same("XRANGE", "s", "(2-0", "4")
    pair.same("XRANGE", "s", "3", "2")
    pair.same("XRANGE", "nosuchkey", "-", "+")


def test_xadd_auto_id__paired_and_usable_in_later_commands(pair):
    pair.same("XADD", "s", "1-1", "f", "v")
    new = pair.same("XADD", "s", "*", "f", "v", normalize=ids)
    pair.same("XRANGE", "s", new, "+")
    pair.same("XRANGE", "s", "-", "+")
    pair.same("XLEN", "s")


def test_xadd_id_not_greater_than_top__error(pair):
    pair.same("XADD", "s", "2-0", "f", "v")
    pair.same_error("XADD_ID_TOO_SMALL", "XADD", "s", "2-0", "f", "v")
    pair.same_error("XADD_ID_TOO_SMALL", "XADD", "s", "1-5", "f", "v")
    pair.same("XLEN", "s")


def test_xadd_zero_id_and_bad_id__errors(pair):
    pair.same_error("XADD_ID_ZERO", "XADD", "s", "0-0", "f", "v")
    pair.same_error("INVALID_STREAM_ID", "XADD", "s", "1-x", "f", "v")
    pair.same("EXISTS", "s")


def test_stream_command_on_a_string__wrongtype(pair):
    pair.same("SET", "str", "x")
    pair.same_error("WRONGTYPE", "XLEN", "str")
    pair.same_error("WRONGTYPE", "XADD", "str", "1-1", "f", "v")


def test_xadd_arity__wrong_number_of_arguments(pair):
    pair.same_error("WRONG_ARITY", "XADD", "s", "1-1", command="xadd")
    pair.same_error("WRONG_ARITY", "XADD", "s", "1-1", "f", "v", "g", command="xadd")


def test_xread_naming_a_key_twice__one_pair_per_served_stream(pair):
    """RESP3 sends a map that repeats the key (the harness keeps every pair: replies.WireMapParser on the
    real side, reply.RepeatedKeyMap on the fake side); RESP2 an array with the key twice. Was F7."""
    pair.same("XADD", "s", "1-0", "f", "v")
    pair.same("XADD", "s", "2-0", "f", "w")
    pair.same("XADD", "t", "1-0", "g", "x")
    pair.same("XREAD", "STREAMS", "s", "t", "s", "0", "0", "0")
    pair.same("XREAD", "STREAMS", "s", "s", "0", "1-0")  # the two pairs of `s` differ
    pair.same("XREAD", "STREAMS", "s", "s", "2-0", "0")  # the first has nothing: one pair only
    pair.same("XGROUP", "CREATE", "s", "g", "0")
    pair.same("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "s", ">", "0")
    pair.same("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "s", "0", "0")
