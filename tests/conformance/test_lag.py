"""Consumer-group lag and entries-read as XINFO shows them (spec §4.2, §9)."""

from .replies import set_field


def _group_read_to_3_then_tombstone_at_4_trimmed_away(pair):
    for i in (1, 2, 3):
        pair.same("XADD", "s", f"{i}-0", "f", "v")
    pair.same("XGROUP", "CREATE", "s", "g", "0")
    pair.same("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    for i in (4, 5, 6):
        pair.same("XADD", "s", f"{i}-0", "f", "v")
    pair.same("XDEL", "s", "4-0")  # max-deleted-entry-id 4-0 lies after the group's last-delivered-id 3-0
    pair.same("XTRIM", "s", "MAXLEN", "2")  # ... and is trimmed away with 1-0..3-0


def test_lag_after_trim_past_the_group_position(pair):
    _group_read_to_3_then_tombstone_at_4_trimmed_away(pair)
    with pair.known_difference(oracle="valkey-9.1", expected=set_field(b"lag", 3),
                               reason="spec §9 item 1: Valkey 9.1.2 reports lag nil here, Redis 7.4.1 and "
                                      "Valkey 8.0.1 report 3; the 7.4 / Valkey 8 profiles follow them"):
        pair.same("XINFO", "GROUPS", "s")
    pair.same("XINFO", "STREAM", "s")


def test_lag_of_a_group_that_read_everything_is_zero(pair):
    for i in (1, 2, 3):
        pair.same("XADD", "s", f"{i}-0", "f", "v")
    pair.same("XGROUP", "CREATE", "s", "g", "0")
    pair.same("XGROUP", "CREATE", "s", "late", "$")
    pair.same("XINFO", "GROUPS", "s")
    pair.same("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    pair.same("XINFO", "GROUPS", "s")
    pair.same("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    pair.same("XINFO", "GROUPS", "s")


def test_entries_read_with_a_tombstone_between_two_reads(pair):
    """Found by the stateful differential: XDEL of an ID the group already passed, then two reads. Redis 7.x
    (the 7.4 / Valkey 8 profiles) counts on: 2 / 2, then 3 / 1; Valkey 9.1.2 (the valkey-9.1 profile)
    re-estimates: nil / nil, then 4 / 0."""
    for i in (1, 2, 3):
        pair.same("XADD", "s", f"{i}-0", "f", "v")
    pair.same("XGROUP", "CREATE", "s", "g", "0")
    pair.same("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    pair.same("XDEL", "s", "2-0")
    pair.same("XADD", "s", "4-0", "f", "v")
    for entries_read, lag in ((2, 2), (3, 1)):
        pair.same("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
        spec = lambda real, er=entries_read, lg=lag: set_field(b"lag", lg)(set_field(b"entries-read", er)(real))  # noqa: E731
        with pair.known_difference(oracle="valkey-9.1", expected=spec,
                                   reason="Redis 7.0.15 / 7.4.1 and Valkey 8.0.1 count a valid entries-read on "
                                          "past the tombstone; Valkey 9.1.2 re-estimates it"):
            pair.same("XINFO", "GROUPS", "s")
