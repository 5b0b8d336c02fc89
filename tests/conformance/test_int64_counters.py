"""The server's int64 counters wrap past 2^63 - 1: delivery counts (XCLAIM RETRYCOUNT, re-deliveries), entries-added
(XSETID ENTRIESADDED), entries-read (XGROUP SETID ENTRIESREAD) — never a bulk string or a growing integer."""

from .replies import set_field, times

MAX = "9223372036854775807"


def test_delivery_count_wraps_like_the_servers_int64(pair):
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same("XGROUP", "CREATE", "s", "g", "0")
    pair.same("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    pair.same("XCLAIM", "s", "g", "c", "0", "1-1", "RETRYCOUNT", MAX, "IDLE", "5000")
    pair.same("XPENDING", "s", "g", "-", "+", "10", normalize=times)
    pair.same("XCLAIM", "s", "g", "c", "0", "1-1", "IDLE", "5000")  # one more delivery: -2^63
    pair.same("XPENDING", "s", "g", "-", "+", "10", normalize=times)
    pair.same("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    pair.same("XAUTOCLAIM", "s", "g", "c2", "0", "0")
    pair.same("XPENDING", "s", "g", "-", "+", "10", "c2", normalize=times)
    pair.same("XINFO", "STREAM", "s", "FULL", normalize=times)


def test_entries_added_and_entries_read_wrap(pair):
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same("XGROUP", "CREATE", "s", "g", "0")
    pair.same("XSETID", "s", "1-1", "ENTRIESADDED", MAX, "MAXDELETEDID", "0-0")
    pair.same("XADD", "s", "2-1", "f", "v")
    pair.same("XINFO", "STREAM", "s")
    pair.same("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", MAX)
    pair.same("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    spec = lambda real: set_field(b"lag", 0)(set_field(b"entries-read", -(2 ** 63))(real))  # noqa: E731
    with pair.known_difference(oracle="valkey-9.1", expected=spec,
                               reason="Redis 7.0.15/7.4.1 and Valkey 8.0.1 (t_stream.c streamReplyWithRange) "
                                      "increment a valid entries-read: MAX + 1 wraps to -2^63, lag 0; Valkey "
                                      "9.1.2 re-estimates it (MAX)"):
        pair.same("XINFO", "GROUPS", "s")
