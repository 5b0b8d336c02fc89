"""INFO commandstats / errorstats / ``total_error_replies`` after scripts whose commands fail, fake vs real.

Measured on Redis 7.0.15 and Valkey 9.1.2 (RESP2 and RESP3); both count the same way:

* a command a script calls counts its call, its failure and its error when it runs, whether ``redis.call`` raises
  the error or ``redis.pcall`` hands it to the script (swallowed, returned or re-raised);
* the error table redis.call / redis.pcall give carries ``ignore_error_stats_update = true``: raised or returned
  as the script's reply it is a failed call of EVAL / FCALL but no second error (a table the script builds with
  the flag, too); its text re-raised (``error(e.err)``) or rebuilt (``redis.error_reply``) counts again;
* a command refused before it runs (unknown, arity, not allowed from scripts, ACL, a write from a read-only
  script) counts its error and a rejected call of that command (none for an unknown command or subcommand);
  ``redis.call()`` / a table argument is a Lua error, counted only when it becomes EVAL's reply;
* errors inside an array / map reply: each flagged one is a failed call of EVAL, the others count in
  errorstats and make EVAL fail once more.

Valkey 9.1 counts a script's ACL refusal as ``NOPERM`` (the script still sees ``ERR ACL failure in script``);
Valkey 8.0's source counts the text's ``ERR`` as Redis does, so the valkey-8.0 stand-in compares with NOPERM
read as ERR. Texts go through :func:`.lua_texts.valkey_8_texts` as in ``test_lua.py``.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import pytest

from .lua_texts import valkey_8_texts
from .oracles import parse_info

INCR_S = "return redis.call('INCR', KEYS[1])"
SCENARIOS: Dict[str, List[Tuple[object, ...]]] = {
    "call_raises": [("EVAL", INCR_S, 1, "s")],
    "pcall_swallowed": [("EVAL", "redis.pcall('INCR', KEYS[1]) return 1", 1, "s")],
    "pcall_returned": [("EVAL", "return redis.pcall('INCR', KEYS[1])", 1, "s")],
    "pcall_reraised": [("EVAL", "local e = redis.pcall('INCR', KEYS[1]) error(e)", 1, "s")],
    "pcall_text_reraised": [("EVAL", "local e = redis.pcall('INCR', KEYS[1]) error(e.err)", 1, "s")],
    "pcall_rebuilt": [("EVAL", "local e = redis.pcall('INCR', KEYS[1]) return redis.error_reply(e.err)", 1, "s")],
    "pcall_flag_visible": [("EVAL", "return tostring(redis.pcall('INCR', KEYS[1]).ignore_error_stats_update)", 1,
                            "s")],
    "lua_pcall_of_call": [("EVAL", "local ok, e = pcall(redis.call, 'INCR', KEYS[1]) return e", 1, "s")],
    "own_flagged_table": [("EVAL", "return {err='MINE x', ignore_error_stats_update=true}", 0)],
    "own_table_flag_not_boolean": [("EVAL", "return {err='MINE x', ignore_error_stats_update=1}", 0)],
    "pcalls_then_success": [("EVAL", "redis.pcall('INCR', KEYS[1]) redis.pcall('LPUSH', KEYS[1], 'x') "
                                     "return redis.call('GET', 'k')", 1, "s")],
    "pcall_then_lua_error": [("EVAL", "redis.pcall('INCR', KEYS[1]) error('x')", 1, "s")],
    "lua_error": [("EVAL", "error('boom')", 0)],
    "errors_in_array": [("EVAL", "return {redis.error_reply('MY e'), 1, redis.error_reply('MY f')}", 0)],
    "flagged_errors_in_array": [("EVAL", "return {redis.pcall('INCR', KEYS[1]), redis.pcall('INCR', KEYS[1])}", 1,
                                 "s")],
    "mixed_errors_in_array": [("EVAL", "return {redis.error_reply('MY e'), redis.pcall('INCR', KEYS[1])}", 1, "s")],
    "flagged_error_in_map": [("EVAL", "redis.setresp(3) return {map={a=redis.pcall('INCR', KEYS[1])}}", 1, "s")],
    "arity_call": [("EVAL", "return redis.call('INCR')", 0)],
    "arity_pcall": [("EVAL", "redis.pcall('INCR') return 1", 0)],
    "unknown_call": [("EVAL", "return redis.call('NOPE')", 0)],
    "unknown_pcall": [("EVAL", "redis.pcall('NOPE') return 1", 0)],
    "unknown_subcommand_pcall": [("EVAL", "redis.pcall('XINFO', 'NOPE') return 1", 0)],
    "noscript_pcall": [("EVAL", "redis.pcall('MULTI') return 1", 0)],
    "write_from_ro_pcall": [("EVAL_RO", "redis.pcall('SET', 'k', '2') return 1", 0)],
    "write_from_ro_call": [("EVAL_RO", "return redis.call('SET', 'k', '2')", 0)],
    "no_args_pcall": [("EVAL", "redis.pcall() return 1", 0)],
    "no_args_call": [("EVAL", "return redis.call()", 0)],
    "table_arg_call": [("EVAL", "return redis.call('GET', {})", 0)],
    "multi_exec_eval": [("MULTI",), ("EVAL", INCR_S, 1, "s"), ("EVAL", "redis.pcall('INCR', KEYS[1]) return 1", 1, "s"),
                        ("EXEC",)],
    "fcall": [("FUNCTION", "LOAD", "REPLACE", "#!lua name=statslib\n"
               "redis.register_function('f', function(k) return redis.call('INCR', k[1]) end)\n"
               "redis.register_function('g', function(k) redis.pcall('INCR', k[1]) return 1 end)\n"
               "redis.register_function{function_name='h', callback=function(k) return redis.call('INCR', k[1]) end, "
               "flags={'no-writes'}}"),
              ("FCALL", "f", 1, "s"), ("FCALL", "g", 1, "s"), ("FCALL_RO", "h", 1, "s")],
}
#: ACL refusals run by a user allowed EVAL and GET on keys k*
ACL_SCENARIOS: Dict[str, List[Tuple[object, ...]]] = {
    "acl_command_call": [("EVAL", "return redis.call('SET', 'k', '2')", 0)],
    "acl_command_pcall": [("EVAL", "redis.pcall('SET', 'k', '2') return 1", 0)],
    "acl_command_pcall_returned": [("EVAL", "return redis.pcall('SET', 'k', '2')", 0)],
    "acl_key_pcall": [("EVAL", "redis.pcall('GET', 'other') return 1", 0)],
}
COUNTED = {"eval", "eval_ro", "fcall", "fcall_ro", "incr", "lpush", "set", "get", "multi", "exec", "xinfo",
           "xinfo|nope", "nope"}


def _counts(text: bytes) -> Dict[str, str]:
    """The fields that count script errors: errorstat_*, total_error_replies, and calls / rejected_calls /
    failed_calls of the commands the scenarios run."""
    out = {}
    for key, value in parse_info(text).items():
        if key.startswith("errorstat_") or key == "total_error_replies":
            out[key] = value
        elif key.startswith("cmdstat_") and key[8:] in COUNTED:
            fields = dict(kv.split("=") for kv in value.split(","))
            out[key] = ",".join(f"{k}={fields[k]}" for k in ("calls", "rejected_calls", "failed_calls"))
    return out


def _noperm_as_err(counts: Dict[str, str]) -> Dict[str, str]:
    """Valkey 9.1's errorstats of a script ACL refusal as Valkey 8.0 counts them (its text's ERR)."""
    out = dict(counts)
    noperm = out.pop("errorstat_NOPERM", None)
    if noperm is not None:
        total = int(noperm.split("=")[1]) + int(out.get("errorstat_ERR", "count=0").split("=")[1])
        out["errorstat_ERR"] = f"count={total}"
        out = dict(sorted(out.items()))
    return out


def _compare_counts(pair) -> None:
    real = pair.real("INFO", "commandstats", "errorstats", "stats")
    assert isinstance(real, bytes), real
    if pair.fake is None:  # --oracle-self-check: the real server only
        return
    real_counts, fake_counts = _counts(real), _counts(pair.fake("INFO", "commandstats", "errorstats", "stats"))
    if pair.target.kind == "valkey" and not pair.profile.has("script_acl_counts_noperm"):
        real_counts = _noperm_as_err(real_counts)
    assert dict(sorted(fake_counts.items())) == dict(sorted(real_counts.items()))


@pytest.fixture
def lua_pair(pair):
    return valkey_8_texts(pair)


def _prepare(pair) -> None:
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same("SET", "k", "1")
    pair.same("CONFIG", "RESETSTAT")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_script_errors_count_like_the_server(lua_pair, name):
    _prepare(lua_pair)
    for argv in SCENARIOS[name]:
        lua_pair.same(*argv)
    _compare_counts(lua_pair)


@pytest.mark.parametrize("name", sorted(ACL_SCENARIOS))
def test_script_acl_refusals_count_like_the_server(lua_pair, name):
    lua_pair.same("ACL", "SETUSER", "statsuser", "on", ">pw", "-@all", "+eval", "+get", "~k*")
    user = lua_pair.connect()
    user.same("AUTH", "statsuser", "pw")
    _prepare(lua_pair)
    try:
        for argv in ACL_SCENARIOS[name]:
            user.same(*argv)
        _compare_counts(lua_pair)
    finally:
        lua_pair.real("ACL", "DELUSER", "statsuser")  # the real server outlives the test
