"""Clocks: a SystemClock cannot be moved, and says how to get one that can (issue 13)."""

from __future__ import annotations

import pytest

from fake_streams import FakeStreamsServer, ManualClock, SystemClock
from fake_streams.clock import SystemClockIsNotManual


@pytest.mark.parametrize("name", ["advance", "set", "now"])
def test_manual_clock_methods_on_a_system_clock_say_what_to_do(name):
    with pytest.raises(SystemClockIsNotManual) as info:
        getattr(SystemClock(), name)
    text = str(info.value)
    assert text.startswith(f"SystemClock.{name}(): this server's clock is the wall clock")
    assert '@pytest.mark.fake_redis_streams(clock="manual")' in text
    assert "start_ms=" in text and "--fake-redis-streams-clock=manual" in text
    assert "FakeStreamsServer(clock=ManualClock(start_ms))" in text
    assert isinstance(info.value, AttributeError)  # what the bare AttributeError was: except clauses still match


def test_a_system_clock_still_has_no_advance_for_feature_checks():
    clock = SystemClock()
    assert not hasattr(clock, "advance") and not hasattr(clock, "set")
    assert hasattr(ManualClock(0), "advance")
    with pytest.raises(AttributeError, match="has no attribute 'tick'") as info:
        clock.tick  # noqa: B018  (another missing name: the ordinary error)
    assert not isinstance(info.value, SystemClockIsNotManual)


def test_the_fixture_clock_by_default_explains_how_to_ask_for_the_manual_one(fake_redis_streams):
    with pytest.raises(AttributeError, match=r'fake_redis_streams\(clock="manual"\)'):
        fake_redis_streams.clock.advance(1000)


@pytest.mark.fake_redis_streams(clock="manual", start_ms=1_000)
def test_the_manual_fixture_clock_moves(fake_redis_streams):
    assert fake_redis_streams.clock.advance(250) == 1_250


def test_a_server_s_own_system_clock_explains_too():
    server = FakeStreamsServer()
    try:
        with pytest.raises(SystemClockIsNotManual, match="server.clock.advance"):
            server.clock.advance(5)
    finally:
        server.close()
