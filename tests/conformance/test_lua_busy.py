"""The busy-script model, fake vs real: BUSY to other clients after busy-reply-threshold, SCRIPT KILL, NOTBUSY.

A small threshold (CONFIG SET busy-reply-threshold 100) keeps these fast; the waits are the servers' own.
"""

from __future__ import annotations

import pytest

from .lua_texts import valkey_8_texts


@pytest.fixture
def busy_pair(pair):
    valkey_8_texts(pair).same("CONFIG", "SET", "busy-reply-threshold", "100")
    _no_clock_sync(pair)
    yield pair
    try:  # a failed test must not leave the shared real server running a script
        pair.oracle.command("SCRIPT", "KILL")
    except Exception:
        pass
    pair.oracle.command("CONFIG", "SET", "busy-reply-threshold", "5000")


def _no_clock_sync(pair):
    """The harness reads the real server's TIME before each fake command; a busy server answers that with
    BUSY too, and nothing here depends on the clock."""
    if pair.fake is not None:
        pair.fake._before = None


def test_looping_script_is_busy_then_killed(busy_pair):
    pair = busy_pair
    pair.same("SCRIPT", "KILL")  # NOTBUSY: nothing runs
    runner = pair.connect()
    _no_clock_sync(runner)
    runner.send("EVAL", "local i = 0 while true do i = i + 1 end", 0)  # real-time: loops until SCRIPT KILL
    pair.same("PING")  # BUSY once the threshold has passed (both servers hold the client until then)
    pair.same("GET", "k")
    pair.same("FUNCTION", "KILL")  # a script, not a function: BUSY
    pair.same("SCRIPT", "KILL")
    runner.read()  # the script's caller: ERR Script killed by user with SCRIPT KILL... script: …
    pair.same("PING")
    pair.same("SCRIPT", "KILL")


def test_looping_function_is_busy_then_killed(busy_pair):
    pair = busy_pair
    pair.same("FUNCTION", "FLUSH")
    pair.same("FUNCTION", "LOAD", "#!lua name=spin\nredis.register_function('spin', function()\n"
                                  "  local i = 0 while true do i = i + 1 end end)")
    runner = pair.connect()
    _no_clock_sync(runner)
    runner.send("FCALL", "spin", 0)  # real-time: loops until FUNCTION KILL
    pair.same("PING")  # BUSY (the FUNCTION KILL variant)
    pair.same("SCRIPT", "KILL")  # a function, not a script: BUSY
    pair.loosely("FUNCTION", "STATS", reason="running_script's duration_ms is the servers' own clock")
    pair.same("FUNCTION", "KILL")
    runner.read()
    pair.same("FUNCTION", "KILL")
    pair.same("FUNCTION", "FLUSH")


def test_shutdown_arguments_and_busy(busy_pair):
    pair = busy_pair
    pair.same("SHUTDOWN", "BOGUS")
    pair.same("SHUTDOWN", "NOSAVE", "SAVE")
    pair.same("SHUTDOWN", "ABORT", "NOW")
    pair.same("SHUTDOWN", "ABORT")
    pair.same("MULTI")
    pair.same("SHUTDOWN", "NOSAVE")  # not allowed inside a transaction
    pair.same("EXEC")  # EXECABORT
    runner = pair.connect()
    _no_clock_sync(runner)
    runner.send("EVAL", "while true do end", 0)  # real-time: loops until SCRIPT KILL
    pair.same("PING")
    pair.same("SHUTDOWN")  # without NOSAVE: BUSY
    pair.same("SCRIPT", "KILL")
    runner.read()
