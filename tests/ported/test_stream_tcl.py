"""Port of Redis 7.4.1 ``tests/unit/type/stream.tcl`` (spec §7.1), run on the fake and each real server.

One test per Tcl test, named after it; the docstring is the Tcl test name. Codes P / P-node / CONFIG of the
catalogue are ported here; the blocking ones (PB) live elsewhere; NP-AOF ones are listed in
:func:`test_not_portable` with the reason. Tcl's ``r`` is RESP2 only; here every test also runs in RESP3,
so map and XREAD replies are read through :func:`as_map` / :func:`stream_pairs`.

Each Python test starts from an empty keyspace, so a Tcl test that relied on state left by an earlier
test ("state: #N" in the catalogue) first repeats the commands that built that state.
"""

from __future__ import annotations

import fnmatch
import random
from typing import Any, Callable, Iterator, List, Tuple

import pytest

from tests.conformance.conftest import TARGET_PARAMS
from tests.conformance.replies import encode_args
from tests.support.budget import budget

from .conftest import (
    Err,
    as_map,
    error_matching,
    expect_error,
    ids,
    stream_pairs,
    xadd_auto,
)

U64 = 18446744073709551615


_FIRST_ORACLE = next((p.values[0].label for p in TARGET_PARAMS if p.values[0].main), None)


def _one_variant_fast(param: Any) -> Any:
    (target,) = param.values
    fast = target.protocol == 2 and target.main and target.label == _FIRST_ORACLE
    return pytest.param(target, id=param.id, marks=[*param.marks, *([] if fast else [pytest.mark.slow])])


#: For the tests on streams of thousands of entries (about 1 s per variant): their RESP3 parameters send the RESP2
#: commands again with only the reply encoding changed, and the other oracles run the same ten thousand XADDs;
#: the fast loop keeps the RESP2 variant on the first oracle (Redis 7.0), the full run every variant.
big_stream = pytest.mark.parametrize("conformance_target", [_one_variant_fast(p) for p in TARGET_PARAMS])
#: The other 10,000-entry tests (the same insert, then one XRANGE / XREVRANGE / XREAD / XDEL pattern each; those
#: commands are in the fast loop on small streams) run in the full run only; the fast loop keeps the mass insertion,
#: the whole-stream iteration and the XRANGE fuzzing.
big_stream_full_run = pytest.mark.slow


def _glob(text: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(text, pattern)


def sid(raw: bytes) -> Tuple[int, int]:
    """A stream ID as ``(ms, seq)`` for ordering (Tcl ``streamCompareID``)."""
    ms, _, seq = raw.partition(b"-")
    return int(ms), int(seq)


def next_id(raw: bytes) -> bytes:
    """Tcl ``streamNextID``: seq + 1 (no overflow handling, like the Tcl helper)."""
    ms, seq = sid(raw)
    return b"%d-%d" % (ms, seq + 1)


def queued(p: Any, commands: List[Tuple[Any, ...]]) -> None:
    """Queue ``commands`` inside an open MULTI on both sides, pipelined (each must reply QUEUED).

    Tcl's ``r multi; r XADD ...`` × 10,000 without 10,000 round trips. The fake's clock is not synced
    per queued command (nothing reads it before EXEC, which goes through ``pair.same`` and is synced).
    """
    __tracebackhide__ = True
    sides = [("real", p.real.send, p.real.read)]
    if p.fake is not None:
        sides.append(("fake", lambda *a: p.fake.conn.send_command(*encode_args(a)), p.fake.read))
    for name, send, read in sides:
        for argv in commands:
            send(*argv)
        replies = [read() for _ in commands]
        bad = [(commands[i], r) for i, r in enumerate(replies) if r != b"QUEUED"]
        assert not bad, f"{name}: not queued: {bad[:3]}"


def insert_into_stream_key(p: Any, key: str, count: int = 10000, seed: int = 0) -> list:
    """Tcl ``insert_into_stream_key``: MULTI, ``count`` × ``XADD key * item j`` (10% with an extra field), EXEC."""
    rng = random.Random(seed)
    commands = []
    for j in range(count):
        if rng.random() < 0.9:
            commands.append(("XADD", key, "*", "item", j))
        else:
            commands.append(("XADD", key, "*", "item", j, "otherfield", "foo"))
    p.same("MULTI")
    queued(p, commands)
    return p.same("EXEC", normalize=ids)


def each_side(p: Any) -> Iterator[Tuple[str, Callable[..., Any]]]:
    """The real server and the fake one by one (raw replies, no comparison): for loops whose arguments are
    computed from IDs the two sides made from their own clocks (an ID + 1 is no alias of anything)."""
    yield "real", p.real
    if p.fake is not None:
        yield "fake", p.fake


def rax_nodes_from_two_clocks(real: Any, fake: Any, pair: Any) -> Any:
    """``radix-tree-nodes`` counts rax nodes over the bytes of the node master IDs (spec §5.3); with ``XADD *``
    those IDs come from two different clocks, so the count may differ by nature. Take the fake's value."""
    r, f = as_map(real), as_map(fake)
    if b"radix-tree-nodes" not in r or b"radix-tree-nodes" not in f:
        return real
    if isinstance(real, dict):
        return {k: (f[k] if k == b"radix-tree-nodes" else v) for k, v in real.items()}
    out = list(real)
    i = out.index(b"radix-tree-nodes")
    out[i + 1] = f[b"radix-tree-nodes"]
    return out


@pytest.fixture
def node_max_entries(pair):
    """``r config set stream-node-max-entries N`` on both sides; restores the real server's default after.

    Skips when the fake does not accept the CONFIG SET (the catalogue's CONFIG code: not portable then)."""
    changed = []

    def set_entries(n: int) -> None:
        real = pair.real("CONFIG", "SET", "stream-node-max-entries", n)
        changed.append(n)
        assert real == b"OK", real
        if pair.fake is not None:
            fake = pair.fake("CONFIG", "SET", "stream-node-max-entries", n)
            if isinstance(fake, Err):
                pytest.skip(f"fake does not accept CONFIG SET stream-node-max-entries ({fake.full})")
            assert fake == b"OK", fake

    yield set_entries
    if changed:
        pair.oracle.command("CONFIG", "SET", "stream-node-max-entries", "100")


# ---------------------------------------------------------------------------------------------
# XADD


def test_xadd_wrong_number_of_args(pair):
    """XADD wrong number of args"""
    error_matching(pair, "*wrong number of arguments for 'xadd' command", "XADD", "mystream")
    error_matching(pair, "*wrong number of arguments for 'xadd' command", "XADD", "mystream", "*")
    error_matching(pair, "*wrong number of arguments for 'xadd' command", "XADD", "mystream", "*", "field")


def test_xadd_can_add_entries_into_a_stream_that_xrange_can_fetch(pair):
    """XADD can add entries into a stream that XRANGE can fetch"""
    xadd_auto(pair, "mystream", "*", "item", "1", "value", "a")
    xadd_auto(pair, "mystream", "*", "item", "2", "value", "b")
    assert pair.same("XLEN", "mystream") == 2
    items = pair.same("XRANGE", "mystream", "-", "+")
    assert items[0][1] == [b"item", b"1", b"value", b"a"]
    assert items[1][1] == [b"item", b"2", b"value", b"b"]


def test_xadd_ids_are_incremental(pair):
    """XADD IDs are incremental"""
    id1 = xadd_auto(pair, "mystream", "*", "item", "1", "value", "a")
    id2 = xadd_auto(pair, "mystream", "*", "item", "2", "value", "b")
    id3 = xadd_auto(pair, "mystream", "*", "item", "3", "value", "c")
    assert sid(id1) < sid(id2)
    assert sid(id2) < sid(id3)


def test_xadd_ids_are_incremental_when_ms_is_the_same_as_well(pair):
    """XADD IDs are incremental when ms is the same as well"""
    pair.same("MULTI")
    pair.same("XADD", "mystream", "*", "item", "1", "value", "a")
    pair.same("XADD", "mystream", "*", "item", "2", "value", "b")
    pair.same("XADD", "mystream", "*", "item", "3", "value", "c")
    id1, id2, id3 = pair.same("EXEC", normalize=ids)
    assert sid(id1) < sid(id2)
    assert sid(id2) < sid(id3)


def test_xadd_ids_correctly_report_an_error_when_overflowing(pair):
    """XADD IDs correctly report an error when overflowing"""
    pair.same("DEL", "mystream")
    pair.same("XADD", "mystream", f"{U64}-{U64}", "a", "b")
    error_matching(pair, "ERR*", "XADD", "mystream", "*", "c", "d")


def test_xadd_auto_generated_sequence_is_incremented_for_last_id(pair):
    """XADD auto-generated sequence is incremented for last ID"""
    pair.same("DEL", "mystream")
    id1 = pair.same("XADD", "mystream", "123-456", "item", "1", "value", "a")
    id2 = pair.same("XADD", "mystream", "123-*", "item", "2", "value", "b")
    assert sid(id2)[1] == 457
    assert sid(id1) < sid(id2)


def test_xadd_auto_generated_sequence_is_zero_for_future_timestamp_id(pair):
    """XADD auto-generated sequence is zero for future timestamp ID"""
    pair.same("DEL", "mystream")
    id1 = pair.same("XADD", "mystream", "123-456", "item", "1", "value", "a")
    id2 = pair.same("XADD", "mystream", "789-*", "item", "2", "value", "b")
    assert sid(id2)[1] == 0
    assert sid(id1) < sid(id2)


def test_xadd_auto_generated_sequence_cant_be_smaller_than_last_id(pair):
    """XADD auto-generated sequence can't be smaller than last ID"""
    pair.same("DEL", "mystream")
    pair.same("XADD", "mystream", "123-456", "item", "1", "value", "a")
    error_matching(pair, "ERR*", "XADD", "mystream", "42-*", "item", "2", "value", "b")


def test_xadd_auto_generated_sequence_cant_overflow(pair):
    """XADD auto-generated sequence can't overflow"""
    pair.same("DEL", "mystream")
    pair.same("XADD", "mystream", f"1-{U64}", "a", "b")
    # R7.0 sends a stale-errno text here, R7.2+ "equal or smaller" (spec §6 row 12); both match ERR*
    error_matching(pair, "ERR*", "XADD", "mystream", "1-*", "c", "d")
    expect_error(pair, "XADD_PARTIAL_ID_OVERFLOW", "XADD", "mystream", "1-*", "c", "d")


def test_xadd_0_star_should_succeed(pair):
    """XADD 0-* should succeed"""
    pair.same("DEL", "mystream")
    new = pair.same("XADD", "mystream", "0-*", "a", "b")
    assert sid(new)[1] == 1


def _xadd_many_trimmed(p: Any, trim: List[str], seed: int) -> None:
    rng = random.Random(seed)
    for j in range(1000):
        field = "xitem" if rng.random() < 0.9 else "yitem"
        xadd_auto(p, "mystream", *trim, "*", field, j)


def test_xadd_with_maxlen_option(pair):
    """XADD with MAXLEN option"""
    pair.same("DEL", "mystream")
    _xadd_many_trimmed(pair, ["MAXLEN", "5"], seed=11)
    assert pair.same("XLEN", "mystream") == 5
    res = pair.same("XRANGE", "mystream", "-", "+")
    assert [int(entry[1][1]) for entry in res] == [995, 996, 997, 998, 999]


def test_xadd_with_maxlen_option_and_the_equal_argument(pair):
    """XADD with MAXLEN option and the '=' argument"""
    pair.same("DEL", "mystream")
    _xadd_many_trimmed(pair, ["MAXLEN", "=", "5"], seed=12)
    assert pair.same("XLEN", "mystream") == 5


def test_xadd_with_maxlen_option_and_the_tilde_argument(pair):
    """XADD with MAXLEN option and the '~' argument"""
    pair.same("DEL", "mystream")
    # Tcl: `r config set stream-node-max-entries 100` — the default value, so no CONFIG is needed here.
    _xadd_many_trimmed(pair, ["MAXLEN", "~", "555"], seed=13)
    assert pair.same("XLEN", "mystream") == 600


def test_xadd_with_nomkstream_option(pair):
    """XADD with NOMKSTREAM option"""
    pair.same("DEL", "mystream")
    assert pair.same("XADD", "mystream", "NOMKSTREAM", "*", "item", "1", "value", "a") is None
    assert pair.same("EXISTS", "mystream") == 0
    xadd_auto(pair, "mystream", "*", "item", "1", "value", "a")
    xadd_auto(pair, "mystream", "NOMKSTREAM", "*", "item", "2", "value", "b")
    assert pair.same("XLEN", "mystream") == 2
    items = pair.same("XRANGE", "mystream", "-", "+")
    assert items[0][1] == [b"item", b"1", b"value", b"a"]
    assert items[1][1] == [b"item", b"2", b"value", b"b"]


def test_xadd_with_minid_option(pair):
    """XADD with MINID option"""
    pair.same("DEL", "mystream")
    rng = random.Random(15)
    for j in range(1, 1001):
        minid = 1000 if j < 5 else j - 5
        field = "xitem" if rng.random() < 0.9 else "yitem"
        pair.same("XADD", "mystream", "MINID", minid, j, field, j)
    assert pair.same("XLEN", "mystream") == 6
    res = pair.same("XRANGE", "mystream", "-", "+")
    assert [int(entry[1][1]) for entry in res] == list(range(995, 1001))


def test_xtrim_with_minid_option(pair):
    """XTRIM with MINID option"""
    pair.same("DEL", "mystream")
    for i in range(1, 6):
        pair.same("XADD", "mystream", f"{i}-0", "f", "v")
    pair.same("XTRIM", "mystream", "MINID", "=", "3-0")
    assert pair.same("XRANGE", "mystream", "-", "+") == [
        [b"3-0", [b"f", b"v"]],
        [b"4-0", [b"f", b"v"]],
        [b"5-0", [b"f", b"v"]],
    ]


def test_xtrim_with_minid_option_big_delta_from_master_record(pair):
    """XTRIM with MINID option, big delta from master record"""
    pair.same("DEL", "mystream")
    pair.same("XADD", "mystream", "1-0", "f", "v")
    pair.same("XADD", "mystream", "1641544570597-0", "f", "v")
    pair.same("XADD", "mystream", "1641544570597-1", "f", "v")
    pair.same("XTRIM", "mystream", "MINID", "1641544570597-0")
    assert pair.same("XRANGE", "mystream", "-", "+") == [
        [b"1641544570597-0", [b"f", b"v"]],
        [b"1641544570597-1", [b"f", b"v"]],
    ]


def _assert_items_in_order(items: list) -> None:
    for j, entry in enumerate(items):
        assert entry[1][:2] == [b"item", str(j).encode()], (j, entry)


@big_stream
def test_xadd_mass_insertion_and_xlen(pair):
    """XADD mass insertion and XLEN"""
    pair.same("DEL", "mystream")
    insert_into_stream_key(pair, "mystream")
    items = pair.same("XRANGE", "mystream", "-", "+")
    assert len(items) == 10000
    _assert_items_in_order(items)
    assert pair.same("XLEN", "mystream") == 10000


def test_xadd_with_id_0_0(pair):
    """XADD with ID 0-0"""
    pair.same("DEL", "otherstream")
    assert isinstance(pair.same("XADD", "otherstream", "0-0", "k", "v"), Err)  # Tcl: catch {...} err
    assert pair.same("EXISTS", "otherstream") == 0


def test_xadd_with_limit_delete_entries_no_more_than_limit(pair):
    """XADD with LIMIT delete entries no more than limit"""
    pair.same("DEL", "yourstream")
    for _ in range(3):
        xadd_auto(pair, "yourstream", "*", "xitem", "v")
    xadd_auto(pair, "yourstream", "MAXLEN", "~", "0", "limit", "1", "*", "xitem", "v")
    assert pair.same("XLEN", "yourstream") == 4


# ---------------------------------------------------------------------------------------------
# XRANGE / XREVRANGE / XREAD over the 10,000-entry stream of "XADD mass insertion and XLEN"


@big_stream_full_run
@big_stream
def test_xrange_count_works_as_expected(pair):
    """XRANGE COUNT works as expected"""
    insert_into_stream_key(pair, "mystream")  # state of "XADD mass insertion and XLEN"
    assert len(pair.same("XRANGE", "mystream", "-", "+", "COUNT", "10")) == 10


@big_stream_full_run
@big_stream
def test_xrevrange_count_works_as_expected(pair):
    """XREVRANGE COUNT works as expected"""
    insert_into_stream_key(pair, "mystream")  # state of "XADD mass insertion and XLEN"
    assert len(pair.same("XREVRANGE", "mystream", "+", "-", "COUNT", "10")) == 10


@big_stream
def test_xrange_can_be_used_to_iterate_the_whole_stream(pair):
    """XRANGE can be used to iterate the whole stream"""
    insert_into_stream_key(pair, "mystream")  # state of "XADD mass insertion and XLEN"
    # The next start is streamNextID(last ID of the page): an ID computed from each side's own auto IDs,
    # so the loop runs on each side separately (the content itself was compared by insert/XRANGE above).
    for name, run in each_side(pair):
        last_id = b"-"
        j = 0
        while True:
            elements = run("XRANGE", "mystream", last_id, "+", "COUNT", "100")
            assert not isinstance(elements, Err), (name, elements)
            if not elements:
                break
            for e in elements:
                assert e[1][:2] == [b"item", str(j).encode()], (name, j, e)
                j += 1
            last_id = next_id(elements[-1][0])
        assert j == 10000, name


@big_stream_full_run
@big_stream
def test_xrevrange_returns_the_reverse_of_xrange(pair):
    """XREVRANGE returns the reverse of XRANGE"""
    insert_into_stream_key(pair, "mystream")  # state of "XADD mass insertion and XLEN"
    forward = pair.same("XRANGE", "mystream", "-", "+")
    backward = pair.same("XREVRANGE", "mystream", "+", "-")
    assert forward == list(reversed(backward))


def test_xrange_exclusive_ranges(pair):
    """XRANGE exclusive ranges"""
    ids = ["0-1", f"0-{U64}", "1-0", "42-0", "42-42", f"{U64}-{U64 - 1}", f"{U64}-{U64}"]
    total = len(ids)
    pair.same("MULTI")
    pair.same("DEL", "vipstream")
    for i in ids:
        pair.same("XADD", "vipstream", i, "foo", "bar")
    pair.same("EXEC")
    assert len(pair.same("XRANGE", "vipstream", "-", "+")) == total
    assert len(pair.same("XRANGE", "vipstream", f"({ids[0]}", "+")) == total - 1
    assert len(pair.same("XRANGE", "vipstream", "-", f"({ids[total - 1]}")) == total - 1
    assert len(pair.same("XRANGE", "vipstream", "(0-1", "(1-0")) == 1
    assert len(pair.same("XRANGE", "vipstream", "(1-0", "(42-42")) == 1
    error_matching(pair, "ERR*", "XRANGE", "vipstream", "(-", "+")
    error_matching(pair, "ERR*", "XRANGE", "vipstream", "-", "(+")
    error_matching(pair, "ERR*", "XRANGE", "vipstream", f"({U64}-{U64}", "+")
    error_matching(pair, "ERR*", "XRANGE", "vipstream", "-", "(0-0")


@big_stream_full_run
@big_stream
def test_xread_with_non_empty_stream(pair):
    """XREAD with non empty stream"""
    insert_into_stream_key(pair, "mystream")  # state of "XADD mass insertion and XLEN"
    res = stream_pairs(pair.same("XREAD", "COUNT", "1", "STREAMS", "mystream", "0-0"))
    assert res[0][1][0][1][:2] == [b"item", b"0"]


def test_non_blocking_xread_with_empty_streams(pair):
    """Non blocking XREAD with empty streams"""
    res = pair.same("XREAD", "STREAMS", "s1{t}", "s2{t}", "0-0", "0-0")
    assert res is None  # Tcl {}: nil array (RESP2 *-1, RESP3 _)


@big_stream_full_run
@big_stream
def test_xread_with_non_empty_second_stream(pair):
    """XREAD with non empty second stream"""
    insert_into_stream_key(pair, "mystream{t}")
    res = stream_pairs(pair.same("XREAD", "COUNT", "1", "STREAMS", "nostream{t}", "mystream{t}", "0-0", "0-0"))
    assert res[0][0] == b"mystream{t}"
    assert res[0][1][0][1][:2] == [b"item", b"0"]


# ---------------------------------------------------------------------------------------------
# XREAD '+' (R7.4+ / Valkey 8): on R7.0 '+' is an invalid ID (spec §6 row 1)


def _plus_or_skip(p: Any, *argv: Any) -> None:
    """On a profile without XREAD '+', assert the spec'd R7.0 reply (invalid ID) to ``argv``, then skip."""
    if p.profile.has("xread_plus_id"):
        return
    expect_error(p, "INVALID_STREAM_ID", *argv)
    pytest.skip(f"XREAD '+' is R7.4+/Valkey 8 (profile {p.profile.name}: invalid ID, asserted)")


def test_xread_last_element_from_non_empty_stream(pair):
    """XREAD last element from non-empty stream"""
    pair.same("DEL", "lestream")
    pair.same("XADD", "lestream", "1-0", "k1", "v1")
    pair.same("XADD", "lestream", "2-0", "k2", "v2")
    pair.same("XADD", "lestream", "3-0", "k3", "v3")
    _plus_or_skip(pair, "XREAD", "STREAMS", "lestream", "+")
    res = stream_pairs(pair.same("XREAD", "STREAMS", "lestream", "+"))
    assert res == [[b"lestream", [[b"3-0", [b"k3", b"v3"]]]]]
    pair.same("XADD", "lestream", f"3-{U64 - 1}", "k4", "v4")
    pair.same("XADD", "lestream", f"3-{U64}", "k5", "v5")
    res = stream_pairs(pair.same("XREAD", "STREAMS", "lestream", "+"))
    assert res == [[b"lestream", [[f"3-{U64}".encode(), [b"k5", b"v5"]]]]]


def test_xread_last_element_from_empty_stream(pair):
    """XREAD last element from empty stream"""
    pair.same("DEL", "lestream")
    _plus_or_skip(pair, "XREAD", "STREAMS", "lestream", "+")
    assert pair.same("XREAD", "STREAMS", "lestream", "+") is None
    pair.same("XADD", "lestream", "1-0", "k1", "v1")
    pair.same("XDEL", "lestream", "1-0")
    assert pair.same("XREAD", "STREAMS", "lestream", "+") is None


def test_xread_last_element_blocking_from_non_empty_stream(pair):
    """XREAD last element blocking from non-empty stream"""
    pair.same("DEL", "lestream")
    pair.same("XADD", "lestream", "1-0", "k1", "v1")
    pair.same("XADD", "lestream", "2-0", "k2", "v2")
    pair.same("XADD", "lestream", "3-0", "k3", "v3")
    _plus_or_skip(pair, "XREAD", "BLOCK", "1000000", "STREAMS", "lestream", "+")
    res = stream_pairs(pair.same("XREAD", "BLOCK", "1000000", "STREAMS", "lestream", "+"))
    assert res == [[b"lestream", [[b"3-0", [b"k3", b"v3"]]]]]


def test_xread_last_element_from_multiple_streams(pair):
    """XREAD last element from multiple streams"""
    pair.same("DEL", "{lestream}1")
    pair.same("XADD", "{lestream}1", "1-0", "k1", "v1")
    pair.same("XADD", "{lestream}1", "2-0", "k2", "v2")
    pair.same("XADD", "{lestream}1", "3-0", "k3", "v3")
    pair.same("DEL", "{lestream}2")
    pair.same("XADD", "{lestream}2", "1-0", "k1", "v4")
    pair.same("XADD", "{lestream}2", "2-0", "k2", "v5")
    pair.same("XADD", "{lestream}2", "3-0", "k3", "v6")
    argv = ("XREAD", "STREAMS", "{lestream}1", "{lestream}2", "{lestream}3", "+", "+", "+")
    _plus_or_skip(pair, *argv)
    res = stream_pairs(pair.same(*argv))
    assert res == [
        [b"{lestream}1", [[b"3-0", [b"k3", b"v3"]]]],
        [b"{lestream}2", [[b"3-0", [b"k3", b"v6"]]]],
    ]


def test_xread_last_element_with_count_greater_than_1(pair):
    """XREAD last element with count > 1"""
    pair.same("DEL", "lestream")
    pair.same("XADD", "lestream", "1-0", "k1", "v1")
    pair.same("XADD", "lestream", "2-0", "k2", "v2")
    pair.same("XADD", "lestream", "3-0", "k3", "v3")
    _plus_or_skip(pair, "XREAD", "COUNT", "3", "STREAMS", "lestream", "+")
    res = stream_pairs(pair.same("XREAD", "COUNT", "3", "STREAMS", "lestream", "+"))
    assert res == [[b"lestream", [[b"3-0", [b"k3", b"v3"]]]]]


# ---------------------------------------------------------------------------------------------
# XDEL


def test_xdel_basic_test(pair):
    """XDEL basic test"""
    pair.same("DEL", "somestream")
    xadd_auto(pair, "somestream", "*", "foo", "value0")
    mid = xadd_auto(pair, "somestream", "*", "foo", "value1")
    xadd_auto(pair, "somestream", "*", "foo", "value2")
    pair.same("XDEL", "somestream", mid)
    assert pair.same("XLEN", "somestream") == 2
    result = pair.same("XRANGE", "somestream", "-", "+")
    assert result[0][1][1] == b"value0"
    assert result[1][1][1] == b"value2"


def test_xdel_multiply_id_test(pair):
    """XDEL multiply id test"""
    pair.same("DEL", "somestream")
    for seq, (f, v) in enumerate([("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 5)], start=1):
        pair.same("XADD", "somestream", f"1-{seq}", f, v)
    assert pair.same("XLEN", "somestream") == 5
    assert pair.same("XDEL", "somestream", "1-1", "1-4", "1-5", "2-1") == 3
    assert pair.same("XLEN", "somestream") == 2
    result = pair.same("XRANGE", "somestream", "-", "+")
    assert as_map(result[0][1])[b"b"] == b"2"
    assert as_map(result[1][1])[b"c"] == b"3"


@big_stream_full_run
@big_stream
def test_xdel_fuzz_test(pair):
    """XDEL fuzz test"""
    pair.same("DEL", "somestream")
    added = []
    x = 0
    while True:
        added.append(xadd_auto(pair, "somestream", "*", "item", x))
        x += 1
        info = as_map(pair.same("XINFO", "STREAM", "somestream", normalize=[ids, rax_nodes_from_two_clocks]))
        if info[b"radix-tree-keys"] > 20:
            break
    assert pair.same("XLEN", "somestream") == x
    random.Random(45).shuffle(added)
    for entry_id in added:
        assert pair.same("XDEL", "somestream", entry_id) == 1
        x -= 1
        assert pair.same("XLEN", "somestream") == x
        if x % 100 == 0:
            assert len(pair.same("XRANGE", "somestream", "-", "+")) == x


def _stream_simulate_xrange(items: list, start: bytes, end: bytes) -> list:
    lo, hi = sid(start), sid(end)
    return [i for i in items if lo <= sid(i[0]) <= hi]


def _stream_random_id(rng: random.Random, min_id: bytes, max_id: bytes) -> bytes:
    min_ms, max_ms = sid(min_id)[0], sid(max_id)[0]
    ms = min_ms + rng.randrange(max_ms - min_ms + 1)
    return b"%d-%d" % (ms, rng.randrange(1000))


@big_stream
def test_xrange_fuzzing(pair):
    """XRANGE fuzzing"""
    insert_into_stream_key(pair, "mystream{t}")  # state of "XREAD with non empty second stream"
    pair.same("XRANGE", "mystream{t}", "-", "+")
    # Random bounds between the first and last IDs are not aliases of anything, and each side made its
    # IDs from its own clock: check each side against the Tcl-style simulation over its own entries.
    # (The real side checks the server and the simulation: once per server, RESP2, in the fast loop.)
    for name, run in each_side(pair):
        rng = random.Random(46)
        items = run("XRANGE", "mystream{t}", "-", "+")
        low_id, high_id = items[0][0], items[-1][0]
        for _ in range(budget(fast=10, full=100)):
            start = _stream_random_id(rng, low_id, high_id)
            end = _stream_random_id(rng, low_id, high_id)
            got = run("XRANGE", "mystream{t}", start, end)
            assert got == _stream_simulate_xrange(items, start, end), f"{name}: XRANGE fuzzing mismatch {start} - {end}"


def test_xrevrange_regression_test_for_issue_5006(pair):
    """XREVRANGE regression test for issue #5006"""
    pair.same("XADD", "teststream", "1234567891230", "key1", "value1")
    pair.same("XADD", "teststream", "1234567891240", "key2", "value2")
    pair.same("XADD", "teststream", "1234567891250", "key3", "value3")
    pair.same("XADD", "teststream2", "1234567891230", "key1", "value1")
    pair.same("XADD", "teststream2", "1234567891240", "key1", "value2")
    pair.same("XADD", "teststream2", "1234567891250", "key1", "value3")
    assert pair.same("XREVRANGE", "teststream", "1234567891245", "-") == [
        [b"1234567891240-0", [b"key2", b"value2"]],
        [b"1234567891230-0", [b"key1", b"value1"]],
    ]
    assert pair.same("XREVRANGE", "teststream2", "1234567891245", "-") == [
        [b"1234567891240-0", [b"key1", b"value2"]],
        [b"1234567891230-0", [b"key1", b"value1"]],
    ]


def test_xread_streamid_edge_no_blocking(pair):
    """XREAD streamID edge (no-blocking)"""
    pair.same("DEL", "x")
    pair.same("XADD", "x", "1-1", "f", "v")
    pair.same("XADD", "x", f"1-{U64}", "f", "v")
    pair.same("XADD", "x", "2-1", "f", "v")
    res = stream_pairs(pair.same("XREAD", "BLOCK", "0", "STREAMS", "x", f"1-{U64}"))
    assert res[0][1][0] == [b"2-1", [b"f", b"v"]]


def test_xadd_streamid_edge(pair):
    """XADD streamID edge"""
    pair.same("DEL", "x")
    pair.same("XADD", "x", f"2577343934890-{U64}", "f", "v")  # we need the timestamp to be in the future
    pair.same("XADD", "x", "*", "f2", "v2")
    assert pair.same("XRANGE", "x", "-", "+") == [
        [f"2577343934890-{U64}".encode(), [b"f", b"v"]],
        [b"2577343934891-0", [b"f2", b"v2"]],
    ]


# ---------------------------------------------------------------------------------------------
# XTRIM / LIMIT


def test_xtrim_with_maxlen_option_basic_test(pair):
    """XTRIM with MAXLEN option basic test"""
    pair.same("DEL", "mystream")
    _xadd_many_trimmed(pair, [], seed=51)
    pair.same("XTRIM", "mystream", "MAXLEN", "666")
    assert pair.same("XLEN", "mystream") == 666
    pair.same("XTRIM", "mystream", "MAXLEN", "=", "555")
    assert pair.same("XLEN", "mystream") == 555
    pair.same("XTRIM", "mystream", "MAXLEN", "~", "444")
    assert pair.same("XLEN", "mystream") == 500
    pair.same("XTRIM", "mystream", "MAXLEN", "~", "400")
    assert pair.same("XLEN", "mystream") == 400


def test_xadd_with_limit_consecutive_calls(pair, node_max_entries):
    """XADD with LIMIT consecutive calls"""
    pair.same("DEL", "mystream")
    node_max_entries(10)
    for _ in range(100):
        xadd_auto(pair, "mystream", "*", "xitem", "v")
    xadd_auto(pair, "mystream", "MAXLEN", "~", "55", "LIMIT", "30", "*", "xitem", "v")
    assert pair.same("XLEN", "mystream") == 71
    xadd_auto(pair, "mystream", "MAXLEN", "~", "55", "LIMIT", "30", "*", "xitem", "v")
    assert pair.same("XLEN", "mystream") == 62


def test_xtrim_with_tilde_is_limited(pair, node_max_entries):
    """XTRIM with ~ is limited"""
    pair.same("DEL", "mystream")
    node_max_entries(1)
    for _ in range(102):
        xadd_auto(pair, "mystream", "*", "xitem", "v")
    pair.same("XTRIM", "mystream", "MAXLEN", "~", "1")
    assert pair.same("XLEN", "mystream") == 2


def test_xtrim_without_tilde_is_not_limited(pair):
    """XTRIM without ~ is not limited"""
    pair.same("DEL", "mystream")
    # Tcl sets stream-node-max-entries 1 first; an exact trim removes down to MAXLEN whatever the node
    # size (catalogue: CONFIG, value-irrelevant), so this runs with the default.
    for _ in range(102):
        xadd_auto(pair, "mystream", "*", "xitem", "v")
    pair.same("XTRIM", "mystream", "MAXLEN", "1")
    assert pair.same("XLEN", "mystream") == 1


def test_xtrim_without_tilde_and_with_limit(pair):
    """XTRIM without ~ and with LIMIT"""
    pair.same("DEL", "mystream")
    # Tcl sets stream-node-max-entries 1 first; the LIMIT-without-~ error does not depend on it.
    for _ in range(102):
        xadd_auto(pair, "mystream", "*", "xitem", "v")
    error_matching(pair, "ERR*", "XTRIM", "mystream", "MAXLEN", "1", "LIMIT", "30")


def test_xtrim_with_limit_delete_entries_no_more_than_limit(pair, node_max_entries):
    """XTRIM with LIMIT delete entries no more than limit"""
    pair.same("DEL", "mystream")
    node_max_entries(2)
    for _ in range(3):
        xadd_auto(pair, "mystream", "*", "xitem", "v")
    assert pair.same("XTRIM", "mystream", "MAXLEN", "~", "0", "LIMIT", "1") == 0
    assert pair.same("XTRIM", "mystream", "MAXLEN", "~", "0", "LIMIT", "2") == 2


# ---------------------------------------------------------------------------------------------
# XSETID, entries-added, recorded-first-entry-id, max-deleted-entry-id


def _empty_stream_with_history(p: Any) -> None:
    """State of "XADD can CREATE an empty stream" and "XSETID can set a specific ID"."""
    xadd_auto(p, "mystream", "MAXLEN", "0", "*", "a", "b")
    p.same("XSETID", "mystream", "200-0")


def test_xadd_can_create_an_empty_stream(pair):
    """XADD can CREATE an empty stream"""
    xadd_auto(pair, "mystream", "MAXLEN", "0", "*", "a", "b")
    assert as_map(pair.same("XINFO", "STREAM", "mystream"))[b"length"] == 0


def test_xsetid_can_set_a_specific_id(pair):
    """XSETID can set a specific ID"""
    xadd_auto(pair, "mystream", "MAXLEN", "0", "*", "a", "b")  # state of "XADD can CREATE an empty stream"
    pair.same("XSETID", "mystream", "200-0")
    reply = as_map(pair.same("XINFO", "STREAM", "mystream"))
    assert reply[b"last-generated-id"] == b"200-0"
    assert reply[b"entries-added"] == 1


def test_xsetid_cannot_setid_with_smaller_id(pair):
    """XSETID cannot SETID with smaller ID"""
    _empty_stream_with_history(pair)
    xadd_auto(pair, "mystream", "*", "a", "b")
    err = pair.same("XSETID", "mystream", "1-1")
    xadd_auto(pair, "mystream", "MAXLEN", "0", "*", "a", "b")
    assert isinstance(err, Err) and _glob(err.full, "ERR *smaller*"), err


def test_xsetid_cannot_setid_on_non_existent_key(pair):
    """XSETID cannot SETID on non-existent key"""
    assert pair.same("XSETID", "stream", "1-1").full == "ERR no such key"


def test_xsetid_cannot_run_with_an_offset_but_without_a_maximal_tombstone(pair):
    """XSETID cannot run with an offset but without a maximal tombstone"""
    assert pair.same("XSETID", "stream", "1-1", "0").full == "ERR syntax error"


def test_xsetid_cannot_run_with_a_maximal_tombstone_but_without_an_offset(pair):
    """XSETID cannot run with a maximal tombstone but without an offset"""
    assert pair.same("XSETID", "stream", "1-1", "0-0").full == "ERR syntax error"


def test_xsetid_errors_on_negstive_offset(pair):
    """XSETID errors on negstive offset"""
    err = pair.same("XSETID", "stream", "1-1", "ENTRIESADDED", "-1", "MAXDELETEDID", "0-0")
    assert isinstance(err, Err) and _glob(err.full, "ERR *must be positive"), err


def test_xsetid_cannot_set_the_maximal_tombstone_with_larger_id(pair):
    """XSETID cannot set the maximal tombstone with larger ID"""
    pair.same("DEL", "x")
    pair.same("XADD", "x", "1-0", "a", "b")
    err = pair.same("XSETID", "x", "1-0", "ENTRIESADDED", "1", "MAXDELETEDID", "2-0")
    xadd_auto(pair, "mystream", "MAXLEN", "0", "*", "a", "b")
    assert isinstance(err, Err) and _glob(err.full, "ERR *smaller*"), err


def test_xsetid_cannot_set_the_offset_to_less_than_the_length(pair):
    """XSETID cannot set the offset to less than the length"""
    pair.same("DEL", "x")
    pair.same("XADD", "x", "1-0", "a", "b")
    err = pair.same("XSETID", "x", "1-0", "ENTRIESADDED", "0", "MAXDELETEDID", "0-0")
    xadd_auto(pair, "mystream", "MAXLEN", "0", "*", "a", "b")
    assert isinstance(err, Err) and _glob(err.full, "ERR *smaller*"), err


def test_xsetid_cannot_set_smaller_id_than_current_maxdeletedid(pair):
    """XSETID cannot set smaller ID than current MAXDELETEDID"""
    pair.same("DEL", "x")
    pair.same("XADD", "x", "1-1", "a", "1")
    pair.same("XADD", "x", "1-2", "b", "2")
    pair.same("XADD", "x", "1-3", "c", "3")
    pair.same("XDEL", "x", "1-2")
    pair.same("XDEL", "x", "1-3")
    reply = as_map(pair.same("XINFO", "STREAM", "x"))
    assert reply[b"max-deleted-entry-id"] == b"1-3"
    if not pair.profile.has("xsetid_checks_max_deleted"):
        # R7.0 has no such check (spec §6 row 11): the XSETID is accepted
        assert pair.same("XSETID", "x", "1-2") == b"OK"
        return
    err = pair.same("XSETID", "x", "1-2")
    assert isinstance(err, Err) and _glob(err.full, "ERR *smaller*"), err
    expect_error(pair, "XSETID_BELOW_MAX_DELETED", "XSETID", "x", "1-2")


def test_xadd_advances_the_entries_added_counter_and_sets_the_recorded_first_entry_id(pair):
    """XADD advances the entries-added counter and sets the recorded-first-entry-id"""
    pair.same("DEL", "x")
    pair.same("XADD", "x", "1-0", "data", "a")
    reply = as_map(pair.same("XINFO", "STREAM", "x", "FULL"))
    assert reply[b"entries-added"] == 1
    assert reply[b"recorded-first-entry-id"] == b"1-0"
    pair.same("XADD", "x", "2-0", "data", "a")
    reply = as_map(pair.same("XINFO", "STREAM", "x", "FULL"))
    assert reply[b"entries-added"] == 2
    assert reply[b"recorded-first-entry-id"] == b"1-0"


def test_xdel_trim_are_reflected_by_recorded_first_entry(pair):
    """XDEL/TRIM are reflected by recorded first entry"""
    pair.same("DEL", "x")
    for i in range(1, 6):
        pair.same("XADD", "x", f"{i}-0", "data", "a")
    reply = as_map(pair.same("XINFO", "STREAM", "x", "FULL"))
    assert reply[b"entries-added"] == 5
    assert reply[b"recorded-first-entry-id"] == b"1-0"
    pair.same("XDEL", "x", "2-0")
    assert as_map(pair.same("XINFO", "STREAM", "x", "FULL"))[b"recorded-first-entry-id"] == b"1-0"
    pair.same("XDEL", "x", "1-0")
    assert as_map(pair.same("XINFO", "STREAM", "x", "FULL"))[b"recorded-first-entry-id"] == b"3-0"
    pair.same("XTRIM", "x", "MAXLEN", "=", "2")
    assert as_map(pair.same("XINFO", "STREAM", "x", "FULL"))[b"recorded-first-entry-id"] == b"4-0"


def test_maximum_xdel_id_behaves_correctly(pair):
    """Maximum XDEL ID behaves correctly"""
    pair.same("DEL", "x")
    pair.same("XADD", "x", "1-0", "data", "a")
    pair.same("XADD", "x", "2-0", "data", "b")
    pair.same("XADD", "x", "3-0", "data", "c")
    assert as_map(pair.same("XINFO", "STREAM", "x", "FULL"))[b"max-deleted-entry-id"] == b"0-0"
    pair.same("XDEL", "x", "2-0")
    assert as_map(pair.same("XINFO", "STREAM", "x", "FULL"))[b"max-deleted-entry-id"] == b"2-0"
    pair.same("XDEL", "x", "1-0")
    assert as_map(pair.same("XINFO", "STREAM", "x", "FULL"))[b"max-deleted-entry-id"] == b"2-0"


def test_xadd_with_artial_id_with_maximal_seq(pair):
    """XADD with artial ID with maximal seq"""
    pair.same("DEL", "x")
    pair.same("XADD", "x", f"1-{U64}", "f1", "v1")
    # R7.0 sends a stale-errno text instead (spec §6 row 12); the profile table holds each version's text
    err = expect_error(pair, "XADD_PARTIAL_ID_OVERFLOW", "XADD", "x", "1-*", "f2", "v2")
    if pair.profile.spec_key != "R7.0":
        assert _glob(err.full, "*The ID specified in XADD is equal or smaller*"), err


# ---------------------------------------------------------------------------------------------
# HELP arity


def test_xgroup_help_should_not_have_unexpected_options(pair):
    """XGROUP HELP should not have unexpected options"""
    error_matching(pair, "*wrong number of arguments for 'xgroup|help' command", "XGROUP", "help", "xxx")


def test_xinfo_help_should_not_have_unexpected_options(pair):
    """XINFO HELP should not have unexpected options"""
    error_matching(pair, "*wrong number of arguments for 'xinfo|help' command", "XINFO", "help", "xxx")


# ---------------------------------------------------------------------------------------------
# Not portable (catalogue codes NP-AOF); the blocking (PB) tests are ported with the blocking suite.

NOT_PORTABLE = {
    "XADD with MAXLEN > xlen can propagate correctly": "NP-AOF: needs appendonly + DEBUG LOADAOF",
    "XADD with MINID > lastid can propagate correctly": "NP-AOF: needs appendonly + DEBUG LOADAOF",
    "XADD with ~ MAXLEN can propagate correctly": "NP-AOF: needs appendonly + DEBUG LOADAOF",
    "XADD with ~ MAXLEN and LIMIT can propagate correctly": "NP-AOF: needs appendonly + DEBUG LOADAOF",
    "XADD with ~ MINID can propagate correctly": "NP-AOF: needs appendonly + DEBUG LOADAOF",
    "XADD with ~ MINID and LIMIT can propagate correctly": "NP-AOF: needs appendonly + DEBUG LOADAOF",
    "XTRIM with ~ MAXLEN can propagate correctly": "NP-AOF: needs appendonly + DEBUG LOADAOF",
    "Empty stream can be rewrite into AOF correctly": "NP-AOF: needs BGREWRITEAOF + DEBUG LOADAOF",
    "Stream can be rewrite into AOF correctly after XDEL lastid": "NP-AOF: needs BGREWRITEAOF + DEBUG LOADAOF",
}


@pytest.mark.parametrize("name", sorted(NOT_PORTABLE))
def test_not_portable(name):
    """Tcl tests of stream.tcl that cannot run against an in-memory fake (reason in the skip message)."""
    pytest.skip(f"{name!r}: {NOT_PORTABLE[name]}")
