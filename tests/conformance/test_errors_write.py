"""Error replies of the generic checks and of XADD / XTRIM / XRANGE / XDEL / XSETID (spec §1, §2.1–2.5, §2.8).

One test per behaviour. Each error is checked with its exact text from the profile's table on both sides,
and, where it matters, that the failed command changed nothing.
"""

MAX_ID = "18446744073709551615-18446744073709551615"


def test_wrong_arity__full_lowercase_command_name(pair):
    pair.same_error("WRONG_ARITY", "XLEN", command="xlen")
    pair.same_error("WRONG_ARITY", "XGROUP", "CREATE", "s", "g", command="xgroup|create")
    pair.same_error("WRONG_ARITY", "XINFO", "HELP", "extra", command="xinfo|help")


def test_unknown_container_subcommand__name_as_typed(pair):
    pair.same_error("UNKNOWN_SUBCOMMAND", "XGROUP", "foo", subcommand="foo", container="XGROUP")
    pair.same_error("UNKNOWN_SUBCOMMAND", "xinfo", "Bar", "k", subcommand="Bar", container="XINFO")


def test_unknown_command__name_and_first_arguments_quoted(pair):
    pair.same_error("UNKNOWN_COMMAND", "FOOBAR", "a", "b", command="FOOBAR", args="'a' 'b' ")
    pair.same_error("UNKNOWN_COMMAND", "xfoo", command="xfoo", args="")


def test_subcommand_option_errors__name_as_typed(pair):
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same("XGROUP", "CREATE", "s", "g", "$")
    pair.same_error("SUBCOMMAND_SYNTAX", "XGROUP", "SETID", "s", "g", "$", "MKSTREAM",
                    subcommand="SETID", container="XGROUP")
    pair.same_error("SUBCOMMAND_SYNTAX", "XINFO", "stream", "s", "FOO", subcommand="stream", container="XINFO")


def test_unknown_option__syntax_error_before_key_lookup(pair):
    pair.same_error("SYNTAX", "XRANGE", "nosuchkey", "-", "+", "FOO")
    pair.same_error("SYNTAX", "XRANGE", "nosuchkey", "-", "+", "COUNT")
    pair.same_error("SYNTAX", "XTRIM", "nosuchkey", "FOO", "1")
    pair.same_error("SYNTAX", "XREAD", "COUNT", "1", "COUNT", "2")  # no STREAMS


def test_count_not_an_integer(pair):
    pair.same_error("NOT_INTEGER", "XRANGE", "s", "-", "+", "COUNT", "x")
    pair.same_error("NOT_INTEGER", "XRANGE", "s", "-", "+", "COUNT", "+5")  # string2ll: no '+'
    pair.same_error("NOT_INTEGER", "XADD", "s", "MAXLEN", "abc", "*", "f", "v")
    pair.same("EXISTS", "s")


def test_invalid_ids(pair):
    pair.same_error("INVALID_STREAM_ID", "XADD", "s", "-5", "f", "v")
    pair.same_error("INVALID_STREAM_ID", "XADD", "s", "1-2-3", "f", "v")
    pair.same_error("INVALID_STREAM_ID", "XADD", "s", "+", "f", "v")  # strict
    pair.same_error("INVALID_STREAM_ID", "XRANGE", "s", "(", "+")
    pair.same_error("INVALID_STREAM_ID", "XRANGE", "s", "(-", "+")
    pair.same("EXISTS", "s")


def test_exclusive_interval_bounds_that_cannot_move(pair):
    pair.same_error("INVALID_START_ID", "XRANGE", "s", f"({MAX_ID}", "+")
    pair.same_error("INVALID_END_ID", "XRANGE", "s", "-", "(0-0")
    # XREVRANGE parses its start (argv[3]) first
    pair.same_error("INVALID_START_ID", "XREVRANGE", "s", "(0-0", f"({MAX_ID}")


def test_trim_strategy_given_twice(pair):
    pair.same_error("STRATEGY_TWICE", "XADD", "s", "MAXLEN", "1", "MINID", "1", "*", "f", "v")
    pair.same_error("STRATEGY_TWICE", "XADD", "s", "MAXLEN", "1", "MAXLEN", "2", "*", "f", "v")
    pair.same_error("STRATEGY_TWICE", "XTRIM", "s", "MINID", "1", "MAXLEN", "1")
    pair.same("EXISTS", "s")


def test_negative_maxlen_and_limit(pair):
    pair.same_error("MAXLEN_NEGATIVE", "XADD", "s", "MAXLEN", "-1", "*", "f", "v")
    pair.same_error("MAXLEN_NEGATIVE", "XTRIM", "s", "MAXLEN", "~", "-1")
    pair.same_error("LIMIT_NEGATIVE", "XADD", "s", "MAXLEN", "~", "1", "LIMIT", "-1", "*", "f", "v")
    pair.same("EXISTS", "s")


def test_limit_rules(pair):
    pair.same_error("LIMIT_WITHOUT_STRATEGY", "XADD", "s", "LIMIT", "5", "*", "f", "v")
    pair.same_error("LIMIT_WITHOUT_APPROX", "XADD", "s", "MAXLEN", "=", "5", "LIMIT", "10", "*", "f", "v")
    pair.same_error("LIMIT_WITHOUT_APPROX", "XTRIM", "s", "MAXLEN", "5", "LIMIT", "0")
    pair.same_error("XTRIM_NO_STRATEGY", "XTRIM", "s", "LIMIT", "0")
    pair.same("EXISTS", "s")


def test_xadd_exhausted_stream(pair):
    pair.same("XADD", "s", MAX_ID, "f", "v")
    pair.same_error("XADD_ID_EXHAUSTED", "XADD", "s", "*", "f", "v")
    pair.same_error("XADD_ID_EXHAUSTED", "XADD", "s", "5-*", "f", "v")
    pair.same("XLEN", "s")


def test_xadd_partial_id_with_maximal_seq(pair):
    # R7.0 sends a stale-errno text here (observed on 7.0.15: "Elements are too large"); the profile knows
    pair.same("XADD", "s", "5-18446744073709551615", "f", "v")
    pair.same_error("XADD_PARTIAL_ID_OVERFLOW", "XADD", "s", "5-*", "f", "v")
    pair.same("XLEN", "s")


def test_xadd_nomkstream_missing_key_and_wrongtype_order(pair):
    pair.same("XADD", "s", "NOMKSTREAM", "*", "f", "v")
    pair.same("EXISTS", "s")
    pair.same("SET", "str", "x")
    pair.same_error("XADD_ID_ZERO", "XADD", "str", "0", "f", "v")  # checked before the key lookup
    pair.same_error("WRONGTYPE", "XADD", "str", "NOMKSTREAM", "*", "f", "v")


def test_xtrim_argument_errors_win_over_missing_key(pair):
    pair.same("XTRIM", "nosuchkey", "MAXLEN", "0")
    pair.same_error("SYNTAX", "XTRIM", "nosuchkey", "NOMKSTREAM", "MAXLEN", "0")
    pair.same("SET", "str", "x")
    pair.same_error("WRONGTYPE", "XTRIM", "str", "MAXLEN", "0")


def test_xdel_bad_id_deletes_nothing(pair):
    pair.same("XDEL", "nosuchkey", "not-an-id")  # key lookup first: 0
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same_error("INVALID_STREAM_ID", "XDEL", "s", "1-1", "bad")
    pair.same("XLEN", "s")


def test_xsetid_errors(pair):
    pair.same_error("NO_SUCH_KEY", "XSETID", "nosuchkey", "1-1")
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same("XADD", "s", "2-1", "f", "v")
    pair.same_error("ENTRIES_ADDED_NEGATIVE", "XSETID", "s", "5-0", "ENTRIESADDED", "-1")
    pair.same_error("XSETID_BELOW_GIVEN_MAX_DELETED", "XSETID", "s", "5-0", "ENTRIESADDED", "9", "MAXDELETEDID", "6-0")
    pair.same_error("SYNTAX", "XSETID", "s", "5-0", "0")
    pair.same_error("XSETID_BELOW_TOP", "XSETID", "s", "2-0")
    pair.same_error("XSETID_ENTRIES_ADDED_SMALL", "XSETID", "s", "3-0", "ENTRIESADDED", "1")
    pair.same("XINFO", "STREAM", "s")


def test_xsetid_below_max_deleted_entry_id(pair):
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same("XADD", "s", "2-1", "f", "v")
    pair.same("XDEL", "s", "2-1")
    if pair.profile.has("xsetid_checks_max_deleted"):
        pair.same_error("XSETID_BELOW_MAX_DELETED", "XSETID", "s", "1-5")
    else:  # R7.0 allows it (spec §6 row 11)
        pair.same("XSETID", "s", "1-5")
    pair.same("XINFO", "STREAM", "s")


def test_wrongtype_on_every_write_command(pair):
    pair.same("SET", "str", "x")
    pair.same_error("WRONGTYPE", "XTRIM", "str", "MAXLEN", "0")
    pair.same_error("WRONGTYPE", "XDEL", "str", "1-1")
    pair.same_error("WRONGTYPE", "XRANGE", "str", "-", "+")
    pair.same_error("WRONGTYPE", "XREVRANGE", "str", "+", "-")
    pair.same_error("WRONGTYPE", "XSETID", "str", "1-1")
