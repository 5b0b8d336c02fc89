"""The pure RDB codec (fake_streams.rdb): primitives, containers, every type, payloads captured from real servers.

The captured payloads are DUMP replies of Redis 7.0.15 and Valkey 9.1.2 (values set up as in
``_CAPTURED_SETUP``); each must decode to the expected contents and encode back to the same bytes.
"""

from __future__ import annotations

import math
import random

import pytest

from fake_streams.rdb import (
    Encodings,
    PayloadFormatError,
    PayloadVersionError,
    Value,
    dump_payload,
    format_for,
    intset,
    listpack,
    lzf,
    objects,
    ziplist,
)
from fake_streams.rdb.crc64 import crc64
from fake_streams.rdb.payload import RdbFormat, check_footer, frame, load_payload
from fake_streams.rdb.rdbio import Reader, Writer
from fake_streams.rdb.values import EntryData, NodeData, StreamData
from tests.support.budget import budget

_CAPTURED_SETUP = """
SET big abcabc... (abc * 20)
ZADD z 1 a 2.5 b 0.1 c
SADD s x y
RPUSH l a 7 -4000 xxx... (x * 70)
HSET h f v n 12
XADD x 1-1 a 1; XADD x 1-2 a 2 b 3; XADD x 2-0 a 9; XDEL x 1-2; XGROUP CREATE x g 0
XREADGROUP GROUP g c1 COUNT 1 STREAMS x >; XCLAIM x g c1 0 1-1 TIME 1700000000000 RETRYCOUNT 3
"""
REDIS_70 = {
    "big": bytes.fromhex("00c30b3c0361626361e02d020162630a006f6029e4afd764ac"),
    "z": bytes.fromhex("11c3232c0d2c000000060081630293302e3130e005000f3114816102010181620283322e3504ff0a00abd762dc832dddfd"),
    "s": bytes.fromhex("0202017901780a000cdf6b3db330bcf0"),
    "l": bytes.fromhex("120102c3184058105800000004008161020701d06002e04678e03c000148ff0a00c8b0f0e62cd48e71"),
    "h": bytes.fromhex("1012120000000400816602817602816e020c01ff0a0001369481d35b8974"),
    "x": bytes.fromhex(
        "130110000000000000000100000000000000013b3b0000001800020101010101816102000102010001000101010401010100010101"
        "020181610202018162020301080102010101dfff0209010401ff0202000101010203010167010181ffffffffffffffff0100000000"
        "0000000100000000000000010068e5cf8b01000003010263313bb50032a201000001000000000000000100000000000000010a0022"
        "58464b08da129b"),
}
VALKEY_91 = {
    "big": bytes.fromhex("00c30b3c0361626361e02d020162635000a04ae07531850358"),
    "z": bytes.fromhex("111c1c000000060081630283302e3104816102010181620283322e3504ff50002f825ff872050354"),
    "s": bytes.fromhex("140d0d0000000200817802817902ff5000ba652f89b43519f7"),
    "l": bytes.fromhex("120102c3184058105800000004008161020701d06002e04678e03c000148ff5000079a3977b286e985"),
    "h": bytes.fromhex("1012120000000400816602817602816e020c01ff5000ce1c5d104d09ee80"),
    "x": bytes.fromhex(
        "150110000000000000000100000000000000013b3b0000001800020101010101816102000102010001000101010401010100010101"
        "020181610202018162020301080102010101dfff0209010401ff0202000101010203010167010181ffffffffffffffff0100000000"
        "0000000100000000000000010068e5cf8b010000030102633146b50032a201000046b50032a201000001000000000000000100000000"
        "00000001500059bdaaaa59f6636b"),
}
#: random corruptions per captured payload
MUTATIONS = budget(fast=60, full=300)
#: Valkey 9 writes RDB version 80 and loads it: a format like the valkey-8.0 profile's that also accepts 80
_VALKEY_9 = RdbFormat(80, format_for("valkey-8.0").accepted | {80}, 21, 21, True)


def test_crc64_check_value():
    assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA
    assert crc64(b"") == 0
    assert crc64(b"6789", crc64(b"12345")) == crc64(b"123456789")


@pytest.mark.parametrize("size", [1, 2, 3, 21, 100, 5000])
def test_lzf_round_trip(size):
    rnd = random.Random(size)
    for data in (bytes(rnd.randrange(4) for _ in range(size)), b"ab" * size, bytes(rnd.randrange(256) for _ in range(size))):
        packed = lzf.compress(data, len(data) + len(data) // 32 + 8)  # worst case: one control byte per 32
        assert packed is not None
        assert lzf.decompress(packed, len(data)) == data


def test_lzf_compress_refuses_what_does_not_fit():
    data = bytes(range(256))  # incompressible
    assert lzf.compress(data, len(data) - 4) is None


def test_lzf_decompress_rejects_bad_streams():
    assert lzf.decompress(b"\x20\x05", 3) is None  # back-reference before the start
    assert lzf.decompress(b"\x05abc", 6) is None  # truncated literal run
    assert lzf.decompress(b"\x00a", 2) is None  # shorter than announced
    assert lzf.decompress(b"\x00a\x20\x00", 2) is None  # longer than announced


def test_lzf_matches_the_server_compressor():
    # Redis 7.0's DUMP of SET big (abc * 20): 0xC3 <clen 11> <len 60> + compressed bytes
    body = REDIS_70["big"]
    assert body[1] == 0xC3
    packed = body[4:4 + 11]
    assert lzf.compress(b"abc" * 20, 60 - 4) == packed


@pytest.mark.parametrize("value", [0, 127, 128, -1, -4096, 4095, 4096, -32768, 32767, 32768, -8388608, 8388607,
                                   8388608, -(1 << 31), (1 << 31) - 1, 1 << 31, -(1 << 63), (1 << 63) - 1])
def test_listpack_integers_round_trip(value):
    blob = listpack.encode([value, b"%d" % value])
    assert listpack.decode(blob) == [value, value]  # integer text is stored as an integer


@pytest.mark.parametrize("size", [0, 1, 63, 64, 4095, 4096, 20000])
def test_listpack_strings_round_trip(size):
    raw = b"s" * size
    assert listpack.decode(listpack.encode([raw, b"-0", b"01", b"+1"])) == [raw, b"-0", b"01", b"+1"]


def test_listpack_decode_rejects_corruption():
    good = listpack.encode([b"abc", 5, b"x" * 200])
    listpack.decode(good)
    for bad in (good[:-1], good[:-1] + b"\x00", b"\x00" + good[1:], good[:6] + b"\x99" + good[7:],
                good[:4] + b"\x09\x00" + good[6:], good[:10] + b"\xfe" + good[11:]):
        with pytest.raises(PayloadFormatError):
            listpack.decode(bad)


def test_intset_widths_and_checks():
    for values in ([1, 2, 3], [-70000, 5], [1 << 40, -(1 << 63)]):
        assert intset.decode(intset.encode(values)) == sorted(values)
    assert intset.encode([1, 2])[:4] == b"\x02\x00\x00\x00"
    assert intset.encode([1, 70000])[:4] == b"\x04\x00\x00\x00"
    with pytest.raises(PayloadFormatError):
        intset.decode(b"\x02\x00\x00\x00\x02\x00\x00\x00\x05\x00\x01\x00")  # not ascending
    with pytest.raises(PayloadFormatError):
        intset.decode(b"\x03\x00\x00\x00\x01\x00\x00\x00\x05\x00\x00")  # bad width


def _ziplist(entries):
    """A ziplist as Redis 6 wrote it (strings < 64 bytes and small ints only; enough for the decoder test)."""
    body = b""
    prev = 0
    offsets = []
    for e in entries:
        offsets.append(10 + len(body))
        if isinstance(e, int):
            enc = bytes((0xF1 + e,)) if 0 <= e <= 12 else b"\xfe" + (e & 0xFF).to_bytes(1, "little")
        else:
            enc = bytes((len(e),)) + e
        item = bytes((prev,)) + enc
        prev = len(item)
        body += item
    total = 10 + len(body) + 1
    tail = offsets[-1] if offsets else 10
    return total.to_bytes(4, "little") + tail.to_bytes(4, "little") + len(entries).to_bytes(2, "little") + body + b"\xff"


def test_ziplist_and_zipmap_decode():
    assert ziplist.decode(_ziplist([b"a", 3, -5, b"hello"])) == [b"a", 3, -5, b"hello"]
    with pytest.raises(PayloadFormatError):
        ziplist.decode(_ziplist([b"a", b"b"])[:-2] + b"\xff")
    zipmap = b"\x02" + b"\x03foo\x03\x00bar" + b"\x01k\x02\x01vv\x00" + b"\xff"
    assert ziplist.decode_zipmap(zipmap) == [(b"foo", b"bar"), (b"k", b"vv")]


def _old_payload(type_byte: int, body: bytes) -> bytes:
    return frame(bytes((type_byte,)) + body, 9)  # a Redis 6 payload (RDB 9)


def test_old_encodings_load():
    fmt = format_for("7.0")
    w = Writer()
    w.string(_ziplist([b"a", 1, b"b", 2]))
    assert load_payload(_old_payload(objects.TYPE_LIST_ZIPLIST, w.getvalue()), fmt).data == [b"a", b"1", b"b", b"2"]
    assert load_payload(_old_payload(objects.TYPE_HASH_ZIPLIST, w.getvalue()), fmt).data == [(b"a", b"1"), (b"b", b"2")]
    assert load_payload(_old_payload(objects.TYPE_ZSET_ZIPLIST, w.getvalue()), fmt).data == [(b"a", 1.0), (b"b", 2.0)]
    w = Writer()
    w.length(2)
    w.string(_ziplist([b"a"]))
    w.string(_ziplist([b"b", b"c"]))
    assert load_payload(_old_payload(objects.TYPE_LIST_QUICKLIST, w.getvalue()), fmt).data == [b"a", b"b", b"c"]
    w = Writer()
    w.length(1)
    w.string(b"m")
    w.byte(3)
    w.raw(b"1.5")
    assert load_payload(_old_payload(objects.TYPE_ZSET, w.getvalue()), fmt).data == [(b"m", 1.5)]


def test_captured_payloads_decode_to_their_contents():
    for table, fmt in ((REDIS_70, format_for("7.0")), (VALKEY_91, _VALKEY_9)):
        assert load_payload(table["big"], fmt) == Value("string", b"abc" * 20)
        assert sorted(load_payload(table["z"], fmt).data) == [(b"a", 1.0), (b"b", 2.5), (b"c", 0.1)]
        assert sorted(load_payload(table["s"], fmt).data) == [b"x", b"y"]
        assert load_payload(table["l"], fmt).data == [b"a", b"7", b"-4000", b"x" * 70]
        assert load_payload(table["h"], fmt).data == [(b"f", b"v"), (b"n", b"12")]
        s = load_payload(table["x"], fmt).data
        assert [(e.id, e.fields, e.deleted) for n in s.nodes for e in n.entries] == [
            ((1, 1), [b"a", b"1"], False), ((1, 2), [b"a", b"2", b"b", b"3"], True), ((2, 0), [b"a", b"9"], False)]
        assert (s.length, s.last_id, s.first_id, s.max_deleted_entry_id, s.entries_added) == (2, (2, 0), (1, 1), (1, 2), 3)
        (group,) = s.groups
        assert group.name == b"g" and group.last_id == (1, 1)
        assert [(p.id, p.delivery_time, p.delivery_count, p.consumer) for p in group.pending] == [
            ((1, 1), 1700000000000, 3, b"c1")]
        assert [c.name for c in group.consumers] == [b"c1"]


def test_captured_payloads_encode_back_to_the_same_bytes():
    for table, fmt in ((REDIS_70, format_for("7.0")), (VALKEY_91, _VALKEY_9)):
        for name, payload in table.items():
            assert dump_payload(load_payload(payload, fmt), fmt) == payload, name


def test_footer_checks():
    payload = REDIS_70["s"]
    assert check_footer(payload, format_for("7.0")) == payload[:-10]
    with pytest.raises(PayloadVersionError):
        check_footer(payload[:-1] + bytes((payload[-1] ^ 1,)), format_for("7.0"))  # CRC
    with pytest.raises(PayloadVersionError):
        check_footer(frame(payload[:-10], 11), format_for("7.0"))  # 7.2's version on 7.0
    with pytest.raises(PayloadVersionError):
        check_footer(payload[:9], format_for("7.0"))
    assert load_payload(frame(payload[:-10], 11), format_for("7.2")).data == [b"y", b"x"]
    with pytest.raises(PayloadVersionError):
        load_payload(VALKEY_91["s"], format_for("valkey-8.0"))  # RDB 80 is Valkey 9's


def test_types_the_server_does_not_know_are_bad_data():
    # a 7.2 set listpack (type 20) framed with 7.0's version: 7.0 has no such type
    body = VALKEY_91["s"][:-10]
    with pytest.raises(PayloadFormatError):
        load_payload(frame(body, 10), format_for("7.0"))
    assert sorted(load_payload(frame(body, 10), format_for("7.2")).data) == [b"x", b"y"]
    for type_byte in (6, 7, 8, 22, 25, 99, 255):
        with pytest.raises(PayloadFormatError):
            load_payload(frame(bytes((type_byte,)) + b"\x00", 10), format_for("7.2"))


def test_empty_and_duplicate_values_are_bad_data():
    fmt = format_for("7.2")
    for type_byte, body in ((objects.TYPE_LIST_QUICKLIST_2, b"\x00"), (objects.TYPE_SET, b"\x00"),
                            (objects.TYPE_SET, b"\x02\x01a\x01a"), (objects.TYPE_HASH, b"\x02\x01a\x01b\x01a\x01c"),
                            (objects.TYPE_ZSET_2, b"\x00")):
        with pytest.raises(PayloadFormatError):
            load_payload(frame(bytes((type_byte,)) + body, 11), fmt)


def test_zset_score_text_per_version():
    assert objects.score_element(0.1, modern=False) == b"0.10000000000000001"
    assert objects.score_element(0.1, modern=True) == b"0.1"
    assert objects.score_element(3.0, modern=True) == 3
    assert objects.score_element(-0.0, modern=True) == 0
    assert objects.score_element(math.inf, modern=True) == b"inf"
    assert objects.score_element(1e20, modern=True) == b"1e+20"
    assert objects.score_element(1.5e-7, modern=True) == b"1.5e-7"
    assert objects.score_element(123.456, modern=True) == b"123.456"
    assert objects.score_element(0.000123, modern=True) == b"0.000123"
    assert objects.score_element(-2.5e300, modern=True) == b"-2.5e+300"


def test_encodings_follow_the_limits():
    fmt = format_for("7.2")
    small = Encodings(set_max_intset_entries=2, set_max_listpack_entries=2, zset_max_listpack_entries=1,
                      hash_max_listpack_entries=1, rdbcompression=False)
    assert dump_payload(Value("set", [b"1", b"2"]), fmt)[0] == objects.TYPE_SET_INTSET
    assert dump_payload(Value("set", [b"1", b"2", b"3"]), fmt, small)[0] == objects.TYPE_SET
    assert dump_payload(Value("set", [b"a", b"2"]), fmt, small)[0] == objects.TYPE_SET_LISTPACK
    assert dump_payload(Value("set", [b"a", b"2"]), format_for("7.0"), small)[0] == objects.TYPE_SET
    assert dump_payload(Value("zset", [(b"a", 1.0), (b"b", 2.0)]), fmt, small)[0] == objects.TYPE_ZSET_2
    assert dump_payload(Value("hash", [(b"a", b"1"), (b"b", b"2")]), fmt, small)[0] == objects.TYPE_HASH
    assert dump_payload(Value("hash", [(b"a", b"1" * 65)]), fmt)[0] == objects.TYPE_HASH
    big = Value("string", b"z" * 100)
    assert dump_payload(big, fmt, small) == frame(b"\x00\x40\x64" + b"z" * 100, 11)  # rdbcompression no


def test_quicklist_nodes():
    items = [b"v%04d" % i for i in range(3000)]
    for modern in (False, True):
        nodes = objects.quicklist_nodes(items, -2, modern)
        assert [x for _, node in nodes for x in node] == items
        assert all(len(listpack.encode(node)) <= 8192 for _, node in nodes)
        assert len(nodes) > 1
    plain = objects.quicklist_nodes([b"a", b"x" * 9000, b"b"], -2, True)
    assert [c for c, _ in plain] == [objects.CONTAINER_PACKED, objects.CONTAINER_PLAIN, objects.CONTAINER_PACKED]
    assert len(objects.quicklist_nodes(items[:5], 2, True)) == 3  # count fill: 2 per node


def _stream(entries, groups=()):
    node = NodeData((1, 0), [b"f"], [EntryData(sid, fields, deleted) for sid, fields, deleted in entries])
    live = [e for e in node.entries if not e.deleted]
    return StreamData([node], len(live), node.entries[-1].id, live[0].id if live else (0, 0), (0, 0),
                      len(node.entries), list(groups))


def test_stream_round_trip_with_tombstones_and_other_fields():
    data = _stream([((1, 0), [b"f", b"1"], False), ((1, 5), [b"f", b"x" * 30], True),
                    ((3, 0), [b"g", b"1", b"h", b"-7"], False)])
    for profile in ("7.0", "7.4"):
        fmt = format_for(profile)
        payload = dump_payload(Value("stream", data), fmt)
        assert payload[0] == fmt.stream_type
        back = load_payload(payload, fmt).data
        assert back.nodes == data.nodes and back.length == 2


def test_stream_bad_node_contents_are_bad_data():
    fmt = format_for("7.4")
    good = dump_payload(Value("stream", _stream([((1, 0), [b"f", b"1"], False), ((1, 1), [b"f", b"2"], False)])),
                        fmt, Encodings(rdbcompression=False))
    load_payload(good, fmt)
    # the listpack sits after: type, #nodes, 0x10 + 16-byte key, length byte
    lp_at = 1 + 1 + 17 + 1
    blob = bytearray(good[lp_at:lp_at + good[lp_at - 1]])
    cases = []
    for index, replacement in ((0, 5), (1, 3), (6, 9)):  # live count, deleted count, an entry's flags
        items = listpack.decode(bytes(blob))
        items[index] = replacement
        cases.append(listpack.encode(items))
    for lp in cases:
        bad = good[:lp_at - 1] + bytes((len(lp),)) + lp + good[lp_at + len(blob):-10]
        with pytest.raises(PayloadFormatError):
            load_payload(frame(bad, 12), fmt)


def test_mutated_payloads_only_ever_give_the_two_errors():
    """Random corruption (with a fixed-up CRC) is refused or loads; nothing else escapes the decoder."""
    rnd = random.Random(14)
    fmt = _VALKEY_9
    for payload in VALKEY_91.values():
        body = payload[:-10]
        for _ in range(MUTATIONS):
            mutated = bytearray(body)
            for _ in range(rnd.randrange(1, 4)):
                if not mutated:
                    break
                if rnd.random() < 0.7:
                    mutated[rnd.randrange(len(mutated))] = rnd.randrange(256)
                else:
                    del mutated[rnd.randrange(len(mutated)):]
            try:
                load_payload(frame(bytes(mutated), 11), fmt)
            except PayloadFormatError:
                pass


def test_reader_never_reads_past_the_buffer():
    with pytest.raises(PayloadFormatError):
        Reader(b"\x05abc").string()
    with pytest.raises(PayloadFormatError):
        Reader(b"\xc3\x05\x0aab").string()  # LZF: compressed bytes missing
    with pytest.raises(PayloadFormatError):
        Reader(b"\x81\x00").length()


def test_stream_node_must_start_with_its_master_entry():
    fmt = format_for("7.4")
    for entries in ([((1, 1), [b"f", b"1"], False)], [((1, 0), [b"g", b"1"], False)]):
        data = _stream(entries)
        data.nodes[0].master_fields = [b"f"]
        with pytest.raises(PayloadFormatError):
            load_payload(dump_payload(Value("stream", data), fmt), fmt)


def test_hash_field_ttls_in_the_74_format():
    fmt = format_for("7.4")
    ttls = {b"b": 1_800_000_000_500, b"c": 1_800_000_000_000}
    value = Value("hash", [(b"a", b"1"), (b"b", b"2"), (b"c", b"x")], ttls)
    payload = dump_payload(value, fmt)
    assert payload[0] == objects.TYPE_HASH_LISTPACK_EX
    w = Writer()
    w.ms_time(1_800_000_000_000)  # the next expiry, then triples: soonest TTL first, fields without one last
    w.string(listpack.encode([b"c", b"x", 1_800_000_000_000, b"b", 2, 1_800_000_000_500, b"a", 1, 0]))
    assert payload[1:-10] == w.getvalue()
    back = load_payload(payload, fmt)
    assert sorted(back.data) == sorted(value.data) and back.field_ttls == ttls
    big = dump_payload(value, fmt, Encodings(hash_max_listpack_entries=1))
    assert big[0] == objects.TYPE_HASH_METADATA
    back = load_payload(big, fmt)
    assert back.data == value.data and back.field_ttls == ttls
    assert dump_payload(value, format_for("7.2"))[0] == objects.TYPE_HASH_LISTPACK  # no field TTLs before 7.4
    pre_ga = Writer()
    pre_ga.length(1)
    pre_ga.length(1_800_000_000_000)  # absolute
    pre_ga.string(b"f")
    pre_ga.string(b"v")
    back = load_payload(frame(bytes((objects.TYPE_HASH_METADATA_PRE_GA,)) + pre_ga.getvalue(), 12), fmt)
    assert back.data == [(b"f", b"v")] and back.field_ttls == {b"f": 1_800_000_000_000}


def test_fpconv_is_grisu2_not_the_shortest_repr():
    # Valkey 9.1.2 writes these scores so (checked on the server); Python's repr gives ...966e-305 / ...51.88
    assert objects.score_element(2.3671384828449966e-305, modern=True) == b"2.3671384828449965e-305"
    assert objects.score_element(123748370228151.88, modern=True) == b"123748370228151.87"
    assert objects.score_element(-8.299932397678361e18, modern=True) == b"-8299932397678361000"  # stored as an int
    assert listpack.decode(listpack.encode([objects.score_element(-8.299932397678361e18, True)])) == [
        -8299932397678361000]
