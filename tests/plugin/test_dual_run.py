"""The dual run: ``--fake-redis-streams-real=URL`` runs the same tests against a real redis-server.

Uses the session's ``real_redis`` (tests/conftest.py: Debian's redis-server on a free port; skipped
without it, a failure with FAKE_STREAMS_REQUIRE_REAL=1).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.real

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
INI = """
[pytest]
asyncio_default_fixture_loop_scope = function
"""


@pytest.fixture
def real_url(real_redis) -> str:
    client = real_redis()
    return f"redis://127.0.0.1:{client.connection_pool.connection_kwargs['port']}/0"


def test_plugin_against_a_real_server(pytester, real_url, real_redis):
    pytester.makeini(INI)
    pytester.makepyfile(
        """
        import pytest
        import redis

        def test_writes(fake_redis_streams):
            assert fake_redis_streams.real
            fake_redis_streams.client.xadd("s", {"f": "v"})
            redis.Redis(host="prod-redis", port=6379, db=0).xadd("s", {"f": "w"})   # patched: redirected
            assert fake_redis_streams.client.xlen("s") == 2

        def test_flushed_before_each_test(fake_redis_streams):
            assert fake_redis_streams.client.dbsize() == 0

        def test_clock_is_fake_only(fake_redis_streams):
            fake_redis_streams.clock.advance(1)

        def test_faults_are_fake_only(fake_redis_streams):
            fake_redis_streams.faults.fail_next("XACK")

        @pytest.mark.fake_redis_streams(clock="manual")
        def test_manual_clock_marker_skips_at_setup(fake_redis_streams):
            raise AssertionError("never runs")

        @pytest.mark.fake_redis_streams(version="valkey-8.0")
        def test_other_profile_skips(fake_redis_streams):
            raise AssertionError("never runs")

        @pytest.mark.fake_redis_streams(patch=False)
        def test_patch_off(fake_redis_streams):
            assert redis.Redis(host="prod-redis").connection_pool.connection_class is redis.Connection
            injected = redis.Redis.from_url("redis://prod-redis", connection_class=fake_redis_streams.connection_class)
            injected.set("k", "v")
            assert fake_redis_streams.client.get("k") == b"v"
            injected.close()

        @pytest.mark.asyncio
        async def test_async(fake_redis_streams):
            client = fake_redis_streams.async_client(decode_responses=True)
            assert await client.xadd("s", {"f": "v"}, id="1-1") == "1-1"
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs", f"--fake-redis-streams-real={real_url}")
    result.assert_outcomes(passed=4, skipped=4)
    result.stdout.fnmatch_lines_random(
        [
            "SKIPPED * fake_redis_streams: the clock (.clock) needs the fake server; this run uses the real server "
            f"{real_url} (--fake-redis-streams-real)",
            "SKIPPED * fake_redis_streams: fault injection (.faults) needs the fake server*",
            "SKIPPED * fake_redis_streams: the test uses the manual clock (clock='manual' / start_ms), which a real "
            "server cannot follow",
            "SKIPPED * fake_redis_streams: the test is written for profile 'valkey-8.0'; the real server is redis 7.*",
        ]
    )
    assert real_redis().xlen("s") == 1  # the last test's write; the next run flushes it


def test_examples_pass_against_the_real_server(pytester, real_url):
    pytester.makeini(INI)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs", str(EXAMPLES), f"--fake-redis-streams-real={real_url}")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0, result.stdout.str()
    assert outcomes["passed"] >= 3 and outcomes["skipped"] >= 1
    result.stdout.fnmatch_lines(["SKIPPED * the test uses the manual clock*"])


def test_unreachable_real_server_fails_setup(pytester):
    pytester.makeini(INI)
    pytester.makepyfile("def test_x(fake_redis_streams): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", "--fake-redis-streams-real=redis://127.0.0.1:1/0")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fake_redis_streams: cannot reach the real server redis://127.0.0.1:1/0*"])
