"""Error replies of XREAD / XREADGROUP / XGROUP / XINFO / XPENDING / XCLAIM / XAUTOCLAIM, including the
errors a blocked client receives (spec §2.6–2.15, §3, §6)."""


def _stream_with_group(pair, key="s", group="g"):
    pair.same("XADD", key, "1-1", "f", "v")
    pair.same("XGROUP", "CREATE", key, group, "0")


def test_xread_unbalanced_streams(pair):
    pair.same_error("UNBALANCED_XREAD", "XREAD", "STREAMS", "s1", "s2", "0")
    pair.same_error("UNBALANCED_XREADGROUP", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s1", "s2", ">")


def test_xread_group_only_options(pair):
    pair.same_error("XREAD_GROUP_OPTION", "XREAD", "GROUP", "g", "c", "STREAMS", "s", "0")
    pair.same_error("XREAD_NOACK_OPTION", "XREAD", "NOACK", "STREAMS", "s", "0")
    pair.same_error("XREAD_GT_ID", "XREAD", "STREAMS", "s", ">")
    pair.same_error("XREADGROUP_MISSING_GROUP", "XREADGROUP", "COUNT", "1", "COUNT", "1", "STREAMS", "s", ">")


def test_xread_block_timeouts(pair):
    pair.same_error("TIMEOUT_NOT_INTEGER", "XREAD", "BLOCK", "abc", "STREAMS", "s", "0")
    pair.same_error("TIMEOUT_NEGATIVE", "XREAD", "BLOCK", "-1", "STREAMS", "s", "0")
    pair.same("XADD", "s", "1-1", "f", "v")
    if pair.profile.has("block_timeout_range_check"):
        pair.same_error("TIMEOUT_OUT_OF_RANGE", "XREAD", "BLOCK", "9223372036854775807", "STREAMS", "s", "0")
    else:  # 7.0.15 has no overflow check: with data there it simply serves (without data it would block)
        pair.same("XREAD", "BLOCK", "9223372036854775807", "STREAMS", "s", "0")


def test_xreadgroup_missing_key_or_group(pair):
    pair.same_error("XREADGROUP_NOGROUP", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "nosuchkey", ">",
                    key="nosuchkey", group="g")
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same_error("XREADGROUP_NOGROUP", "XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">",
                    key="s", group="nog")


def test_xreadgroup_special_ids(pair):
    _stream_with_group(pair)
    pair.same_error("XREADGROUP_DOLLAR", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$")
    if pair.profile.has("xread_plus_id"):
        pair.same_error("XREADGROUP_PLUS", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+")
    else:
        pair.same_error("INVALID_STREAM_ID", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+")
    pair.same("XINFO", "GROUPS", "s")


def test_xread_plus_on_stream_whose_last_id_is_zero(pair):
    pair.same("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    if not pair.profile.has("xread_plus_id"):
        pair.same_error("INVALID_STREAM_ID", "XREAD", "STREAMS", "s", "+")
        return
    with pair.known_difference(oracle="valkey-9.1", expected=pair.error("XREAD_LAST_ID_ZERO"),
                               reason="Valkey 9.1.2 replies nil here (observed); Redis 7.4.1 and Valkey 8.0.1 "
                                      "reply the error (spec §2.6, §6 row 1)"):
        pair.same("XREAD", "STREAMS", "s", "+")


def test_xread_block_in_a_script(pair):
    script = "return redis.pcall('XREAD', 'BLOCK', '0', 'STREAMS', 's', '$')"
    if pair.profile.has("block_allowed_in_scripts"):
        pair.same("EVAL", script, "0")  # non-blocking: nil
    else:
        pair.same_error("BLOCK_IN_SCRIPT", "EVAL", script, "0", command="XREAD")


def test_xgroup_errors(pair):
    pair.same_error("XGROUP_KEY_MISSING", "XGROUP", "CREATE", "nosuchkey", "g", "$")
    pair.same_error("XGROUP_KEY_MISSING", "XGROUP", "DESTROY", "nosuchkey", "g")
    pair.same_error("ENTRIESREAD_INVALID", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM", "ENTRIESREAD", "-2")
    pair.same("EXISTS", "s")
    pair.same("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    pair.same_error("BUSYGROUP", "XGROUP", "CREATE", "s", "g", "$")
    pair.same_error("NOGROUP_FOR_KEY", "XGROUP", "SETID", "s", "nog", "$", key="s", group="nog")
    pair.same_error("NOGROUP_FOR_KEY", "XGROUP", "CREATECONSUMER", "s", "nog", "c", key="s", group="nog")
    pair.same_error("NOGROUP_FOR_KEY", "XINFO", "CONSUMERS", "s", "nog", key="s", group="nog")


def test_xinfo_missing_key(pair):
    pair.same_error("NO_SUCH_KEY", "XINFO", "STREAM", "nosuchkey")
    pair.same_error("NO_SUCH_KEY", "XINFO", "GROUPS", "nosuchkey")


def test_nogroup_for_pending_and_claims(pair):
    pair.same_error("NOGROUP", "XPENDING", "nosuchkey", "g", key="nosuchkey", group="g")
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same_error("NOGROUP", "XCLAIM", "s", "nog", "c", "0", "1-1", key="s", group="nog")
    pair.same_error("NOGROUP", "XAUTOCLAIM", "s", "nog", "c", "0", "0", key="s", group="nog")


def test_xclaim_argument_errors(pair):
    _stream_with_group(pair)
    pair.same_error("XCLAIM_MIN_IDLE", "XCLAIM", "s", "g", "c", "abc", "1-1")
    pair.same_error("XCLAIM_IDLE", "XCLAIM", "s", "g", "c", "0", "1-1", "IDLE", "abc")
    pair.same_error("XCLAIM_TIME", "XCLAIM", "s", "g", "c", "0", "1-1", "TIME", "abc")
    pair.same_error("XCLAIM_RETRYCOUNT", "XCLAIM", "s", "g", "c", "0", "1-1", "RETRYCOUNT", "abc")
    pair.same_error("XCLAIM_UNKNOWN_OPTION", "XCLAIM", "s", "g", "c", "0", "1-1", "FOO", option="FOO")
    pair.same_error("XCLAIM_UNKNOWN_OPTION", "XCLAIM", "s", "g", "c", "0", "1-1", "IDLE", option="IDLE")
    pair.same("XINFO", "GROUPS", "s")


def test_xautoclaim_argument_errors(pair):
    _stream_with_group(pair)
    pair.same_error("XAUTOCLAIM_MIN_IDLE", "XAUTOCLAIM", "s", "g", "c", "abc", "0")
    pair.same_error("XAUTOCLAIM_COUNT", "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "0")
    pair.same_error("XAUTOCLAIM_COUNT", "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "abc")
    pair.same_error("XAUTOCLAIM_COUNT", "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "576460752303423488")
    pair.same_error("XAUTOCLAIM_COUNT_MEMORY", "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "576460752303423487")
    pair.same_error("INVALID_START_ID", "XAUTOCLAIM", "s", "g", "c", "0", "(18446744073709551615-18446744073709551615")
    pair.same("XINFO", "GROUPS", "s")


# ---------------------------------------------------------------------------------------------
# Errors a blocked client receives (spec §3, §6 rows 5-6)


def test_blocked_xreadgroup__group_destroyed(pair):
    pair.same("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = pair.connect()
    reader.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    pair.wait_blocked(1)
    pair.same("XGROUP", "DESTROY", "s", "g")
    if pair.profile.has("blocked_reprocess"):
        reader.read_error("XREADGROUP_NOGROUP", key="s", group="g")
    else:
        reader.read_error("BLOCKED_NOGROUP_R70")


def test_blocked_xreadgroup__key_deleted(pair):
    pair.same("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = pair.connect()
    reader.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    pair.wait_blocked(1)
    pair.same("DEL", "s")
    if pair.profile.has("blocked_reprocess"):
        reader.read_error("XREADGROUP_NOGROUP", key="s", group="g")
    else:
        reader.read_error("BLOCKED_KEY_GONE_R70")


def test_blocked_xread__client_unblock_error(pair):
    reader = pair.connect()
    reader_id = reader.client_id()
    reader.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    pair.wait_blocked(1)
    pair.same("CLIENT", "UNBLOCK", reader_id, "ERROR")
    reader.read_error("UNBLOCKED_BY_CLIENT")


def test_unknown_command_from_a_script(pair):
    script = "return redis.pcall('nosuchcmd', 'x')"
    if pair.profile.server == "valkey" or pair.oracle.kind == "redis":
        pair.same_error("SCRIPT_UNKNOWN_COMMAND", "EVAL", script, "0")
    else:
        with pair.known_difference(oracle="valkey-9.1", expected=pair.error("SCRIPT_UNKNOWN_COMMAND"),
                                   reason="the 7.4 profile is Redis, which says 'Unknown Redis command'; "
                                          "the Valkey oracle dropped 'Redis' from the text"):
            pair.same("EVAL", script, "0")
