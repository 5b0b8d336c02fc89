"""Commands a transaction refuses (CMD_NO_MULTI): Redis answers a nested MULTI / a WATCH inside MULTI and goes
on; Valkey refuses them as SAVE, flags the transaction and EXEC aborts (multi.c, server.c processCommand)."""

import pytest

from .replies import expected_err

#: Valkey 8.0.1's text (server.c processCommand); Valkey 9.1.2 names the command ("Command 'multi' not …").
VALKEY_8_TEXT = expected_err("ERR Command not allowed inside a transaction")


def _refused(pair, *argv):
    """``argv`` refused inside MULTI: Redis's own text, Valkey 8.0.1's where the oracle is Valkey 9.1.2."""
    if pair.profile.server == "valkey" or argv[0] == "SAVE":
        with pair.known_difference(oracle="valkey-9.1", expected=VALKEY_8_TEXT,
                                   reason="Valkey 8.0.1 says 'Command not allowed inside a transaction'; Valkey "
                                          "9.1.2 names the command"):
            pair.same(*argv)
        return
    pair.same(*argv)


def _redis_rules_need_redis(pair):
    if pair.profile.server == "redis" and pair.oracle.kind == "valkey":
        pytest.skip("Valkey 9.1.2 aborts where Redis 7.4.1 answers and goes on (multi.c multiCommand/watchCommand); "
                    "Redis's rule is compared with Redis 7.0.15")


def test_nested_multi(pair):
    _redis_rules_need_redis(pair)
    pair.same("MULTI")
    _refused(pair, "MULTI")
    pair.same("SET", "a", "1")
    pair.same("EXEC")  # Redis: [OK]; Valkey: EXECABORT
    pair.same("GET", "a")


def test_watch_inside_multi(pair):
    _redis_rules_need_redis(pair)
    pair.same("MULTI")
    _refused(pair, "WATCH", "x")
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same("EXEC")
    pair.same("XLEN", "s")


def test_save_inside_multi_aborts_everywhere(pair):
    pair.same("MULTI")
    _refused(pair, "SAVE")
    pair.same("SET", "a", "1")
    pair.same("EXEC")
    pair.same("EXISTS", "a")


def test_refused_commands_with_a_wrong_arity_give_the_arity_error(pair):
    pair.same("MULTI")
    pair.same("MULTI", "x")
    pair.same("WATCH")
    pair.same("SET", "a", "1")
    pair.same("EXEC")
    pair.same("WATCH", "a")  # outside MULTI: fine
    pair.same("MULTI")
    pair.same("DISCARD")


def test_swapdb_dirties_the_watched_keys_of_both_databases(pair):
    """touchAllWatchedKeysInDb: a key watched in one of the swapped databases that exists in either is dirtied
    (also when the other database was never used)."""
    other = pair.connect()
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same("WATCH", "s")
    other.same("SWAPDB", "0", "7")
    pair.same("MULTI")
    pair.same("XLEN", "s")
    pair.same("EXEC")  # nil
    pair.same("WATCH", "nokey")  # exists in neither: not dirtied
    other.same("SWAPDB", "0", "7")
    pair.same("MULTI")
    pair.same("XLEN", "s")
    pair.same("EXEC")
