"""Hash slots, hash tags, the slot split of ``redis-cli --cluster create`` and the key positions of commands."""

from __future__ import annotations

import pytest

from fake_streams.topology.keys import command_keys, has_keys
from fake_streams.topology.slots import SLOTS, crc16, hashed_part, key_slot, split_slots


def test_crc16_xmodem_check_value():
    assert crc16(b"123456789") == 0x31C3  # the CRC16/XMODEM check value (Redis Cluster spec)


@pytest.mark.parametrize("key, slot", [
    (b"foo", 12182), (b"bar", 5061), (b"foo{bar}", 5061), (b"{user1000}.following", 3443),
    (b"{user1000}.followers", 3443), (b"", 0),
])
def test_key_slot(key, slot):
    assert key_slot(key) == slot


@pytest.mark.parametrize("key, part", [
    (b"{a}b", b"a"), (b"x{a}{b}", b"a"), (b"{}a", b"{}a"), (b"a{", b"a{"), (b"a}b{", b"a}b{"),
    (b"{{a}}", b"{a"), (b"a{b}c", b"b"),
])
def test_hash_tags(key, part):
    assert hashed_part(key) == part


def test_split_as_redis_cli():
    assert split_slots(1) == [(0, 16383)]
    assert split_slots(3) == [(0, 5460), (5461, 10922), (10923, 16383)]
    for n in (2, 5, 6, 7, 100):
        ranges = split_slots(n)
        assert ranges[0][0] == 0 and ranges[-1][1] == SLOTS - 1
        assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:]))
    with pytest.raises(ValueError):
        split_slots(0)


@pytest.mark.parametrize("argv, keys", [
    ([b"DEL", b"a", b"b", b"c"], [b"a", b"b", b"c"]),
    ([b"MSET", b"a", b"1", b"b", b"2"], [b"a", b"b"]),
    ([b"BLPOP", b"a", b"b", b"0"], [b"a", b"b"]),
    ([b"EVAL", b"return 1", b"2", b"a", b"b", b"argv"], [b"a", b"b"]),
    ([b"EVAL", b"return 1", b"3", b"a"], []),
    ([b"ZUNIONSTORE", b"d", b"2", b"a", b"b", b"WEIGHTS", b"1", b"2"], [b"d", b"a", b"b"]),
    ([b"ZUNION", b"2", b"a", b"b"], [b"a", b"b"]),
    ([b"BLMPOP", b"0", b"2", b"a", b"b", b"LEFT"], [b"a", b"b"]),
    ([b"SORT", b"a", b"BY", b"w", b"STORE", b"d"], [b"a", b"d"]),
    ([b"BITOP", b"AND", b"d", b"a", b"b"], [b"d", b"a", b"b"]),
    ([b"RENAME", b"a", b"b"], [b"a", b"b"]),
    ([b"OBJECT", b"ENCODING", b"k"], [b"k"]),
    ([b"MEMORY", b"USAGE", b"k"], [b"k"]),
    ([b"MEMORY", b"STATS"], []),
])
def test_command_keys(argv, keys):
    from fake_streams._fakeredis.compat import get_command_info

    assert command_keys(argv, get_command_info(argv[0].lower())) == keys


def test_has_keys():
    from fake_streams._fakeredis.compat import get_command_info

    assert has_keys(b"get", get_command_info(b"get"))
    assert has_keys(b"eval", get_command_info(b"eval"))
    assert not has_keys(b"ping", get_command_info(b"ping"))
