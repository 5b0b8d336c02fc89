"""The pytest plugin, run inside pytest (``pytester``): marker levels, ini, CLI, strict markers, errors,
failure report section, unpatching after a failing test, the session factory."""

from __future__ import annotations

import textwrap

import pytest

from tests.support.redis_compat import NO_RESP3

pytest_plugins = ["pytester"]

ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly")


BASE_INI = """
[pytest]
asyncio_default_fixture_loop_scope = function
"""


@pytest.fixture(autouse=True)
def _ini(pytester: pytest.Pytester) -> None:
    pytester.makeini(BASE_INI)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*ARGS, *args)


# ------------------------------------------------------------------------------------------ marker
def test_marker_on_test_class_and_module__closest_wins(pytester):
    pytester.makepyfile(
        """
        import pytest

        pytestmark = pytest.mark.fake_redis_streams(version="7.0", start_ms=1_000)

        def test_module_level(fake_redis_streams):
            assert fake_redis_streams.server.version == "7.0"
            assert fake_redis_streams.client.xadd("s", {"f": "v"}) == b"1000-0"

        @pytest.mark.fake_redis_streams(version="7.2")
        class TestClass:
            def test_class_level(self, fake_redis_streams):
                assert fake_redis_streams.server.version == "7.2"
                assert fake_redis_streams.clock.now_ms() == 1_000  # start_ms still from the module

            @pytest.mark.fake_redis_streams(version="valkey-8.0", start_ms=5)
            def test_test_level(self, fake_redis_streams):
                assert fake_redis_streams.server.version == "valkey-8.0"
                assert fake_redis_streams.clock.now_ms() == 5
        """
    )
    run(pytester).assert_outcomes(passed=3)


def test_marker_implies_the_fixture_and_is_set_up_first(pytester):
    pytester.makepyfile(
        """
        import pytest
        import redis

        @pytest.fixture
        def app_client():
            return redis.Redis(host="app-redis")   # built by another fixture: already patched

        @pytest.mark.fake_redis_streams(start_ms=42)
        def test_marked_without_argument(app_client, request):
            assert app_client.xadd("s", {"f": "v"}) == b"42-0"
            handle = request.getfixturevalue("fake_redis_streams")
            assert handle.stream("s", url="redis://app-redis").length == 1
        """
    )
    run(pytester).assert_outcomes(passed=1)


def test_unknown_marker_kwarg_is_a_type_error_at_setup(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.fake_redis_streams(verison="7.0")
        def test_typo(fake_redis_streams):
            pass

        @pytest.mark.fake_redis_streams(clock="frozen")
        def test_bad_value(fake_redis_streams):
            pass

        def test_other():
            pass
        """
    )
    result = run(pytester)
    result.assert_outcomes(errors=2, passed=1)
    result.stdout.fnmatch_lines(
        [
            "E * TypeError: fake_redis_streams got unexpected keyword argument(s) 'verison'; it takes version, clock, "
            "start_ms, patch, decode_responses, protocol, url, passthrough_hosts, assert_all_faults_triggered, "
            "topology, cluster_nodes, sentinel_master, sentinel_replicas, sentinel_port",
        ]
    )
    result.stdout.fnmatch_lines(["E * ValueError: fake_redis_streams: clock must be 'manual' or 'system', not 'frozen'"])
    assert "_options.py" not in result.stdout.str()  # the plugin's own frames are hidden


def test_marker_is_registered_for_strict_markers_with_its_signature(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.fake_redis_streams(version="7.4")
        def test_marked():
            pass
        """
    )
    run(pytester, "--strict-markers").assert_outcomes(passed=1)
    result = run(pytester, "--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.fake_redis_streams(*, version='7.4', clock=None, start_ms=None, patch=True, "
            "decode_responses=False, protocol=None, url=DEFAULT_URL, passthrough_hosts=(), "
            "assert_all_faults_triggered=True, topology='standalone', cluster_nodes=3, sentinel_master='mymaster', "
            "sentinel_replicas=1, sentinel_port=26379): configure the fake_redis_streams fixture*"
            " DEFAULT_URL is 'redis://localhost:6379/0'."
        ]
    )


def test_fixture_docstring_is_what_pytest_fixtures_shows(pytester):
    pytester.makepyfile("def test_nothing(): pass")
    result = run(pytester, "--fixtures")
    result.stdout.fnmatch_lines(
        [
            "fake_redis_streams*",
            "    A fresh in-memory Redis Streams server for this test (profile \"7.4\" by default).",
        ]
    )
    result.stdout.fnmatch_lines(["fake_redis_streams_factory*session*", "    Make longer-lived fake servers*"])


# ------------------------------------------------------------------------------------- ini and CLI
def test_ini_then_cli_then_marker(pytester, monkeypatch):
    pytester.makeini(
        BASE_INI + textwrap.dedent("""
        fake_redis_streams_version = 7.0
        fake_redis_streams_clock = manual
        fake_redis_streams_start_ms = 7000
        fake_redis_streams_decode_responses = true
        fake_redis_streams_url = redis://cache:6390/2
        fake_redis_streams_passthrough_hosts =
            real-redis
            other:6380
        """)
    )
    pytester.makepyfile(
        """
        import os
        import pytest
        import redis

        def test_ini(fake_redis_streams):
            assert fake_redis_streams.server.version == os.environ["EXPECTED_VERSION"]
            assert fake_redis_streams.clock.now_ms() == 7000
            assert fake_redis_streams.client.xadd("s", {"f": "v"}) == "7000-0"     # decoded
            assert fake_redis_streams.stream("s").db == 2
            assert redis.Redis(host="cache", port=6390, db=2).xlen("s") == 1
            assert fake_redis_streams.options.passthrough_hosts == ("real-redis", "other:6380")
            assert redis.Redis(host="real-redis").connection_pool.connection_class is redis.Connection

        @pytest.mark.fake_redis_streams(version="7.4", decode_responses=False)
        def test_marker_over_all(fake_redis_streams):
            assert fake_redis_streams.server.version == "7.4"
            assert fake_redis_streams.client.xadd("s", {"f": "v"}) == b"7000-0"
        """
    )
    monkeypatch.setenv("EXPECTED_VERSION", "7.0")
    run(pytester).assert_outcomes(passed=2)
    monkeypatch.setenv("EXPECTED_VERSION", "7.2")
    run(pytester, "--fake-redis-streams-version=7.2").assert_outcomes(passed=2)  # CLI over ini, marker over CLI


def test_cli_patch_off_and_protocol(pytester):
    pytester.makepyfile(
        """
        import redis

        def test_no_patch(fake_redis_streams):
            assert redis.Redis().connection_pool.connection_class is redis.Connection
            assert fake_redis_streams.client.connection_pool.connection_kwargs["protocol"] == 3
        """
    )
    result = run(pytester, "--fake-redis-streams-patch=no", "--fake-redis-streams-protocol=3")
    if NO_RESP3:  # redis-py 4.x: refused at setup with the reason
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["E * ValueError: fake_redis_streams: protocol=3 needs redis-py >= 5.0*"])
    else:
        result.assert_outcomes(passed=1)
    result = run(pytester, "--fake-redis-streams-protocol=4")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["E * ValueError: fake_redis_streams: protocol must be 2 or 3, not 4"])


def test_protocol_2_on_every_redis_py_line(pytester):
    """protocol=2 works on redis-py 4.x too (which has no protocol= argument and speaks RESP2)."""
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.fake_redis_streams(protocol=2)
        @pytest.mark.asyncio
        async def test_resp2(fake_redis_streams):
            assert fake_redis_streams.client.xadd("s", {"f": "v"}, id="1-1") == b"1-1"
            assert await fake_redis_streams.async_client().xlen("s") == 1
        """
    )
    run(pytester).assert_outcomes(passed=1)


def test_start_ms_with_system_clock_is_refused(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.fake_redis_streams(clock="system", start_ms=5)
        def test_conflict(fake_redis_streams):
            pass
        """
    )
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["E * ValueError: fake_redis_streams: start_ms=5 needs clock='manual', not clock='system'"])


# ------------------------------------------------------------------------- failures and teardown
def test_failure_report_section_lists_streams_groups_and_pel(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.fake_redis_streams(start_ms=1_000)
        def test_forgets_to_ack(fake_redis_streams):
            r = fake_redis_streams.client
            r.xadd("orders", {"sku": "A"})
            r.xadd("orders", {"sku": "B"})
            r.xgroup_create("orders", "workers", id="0")
            r.xreadgroup("workers", "alice", {"orders": ">"}, count=1)
            fake_redis_streams.clock.advance(60_000)
            fake_redis_streams.assert_all_acked("orders", "workers")

        def test_passes(fake_redis_streams):
            fake_redis_streams.client.xadd("other", {"f": "v"})
        """
    )
    result = run(pytester)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: The following entries were delivered but never acknowledged (XACK) in stream "
            "'orders', group 'workers':",
            "E       - stream 'orders' group 'workers': 1000-0 consumer='alice' delivery_count=1 idle_ms=60000",
            "E       If this is on purpose, assert on fake_redis_streams.group(stream, group).pending instead.",
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(
        [
            "*- Captured fake-redis-streams call -*",
            "redis://localhost:6379  (profile 7.4, ManualClock(61000))",
            "  db 0 stream 'orders': length=2 first_id=1000-0 last_id=1000-1 entries_added=2 max_deleted_entry_id=0-0",
            "    1000-0 {'sku': 'A'}",
            "    1000-1 {'sku': 'B'}",
            "    group 'workers': last_id=1000-0 entries_read=1 lag=1 pending=1",
            "      consumer 'alice': pending=1 idle_ms=60000 inactive_ms=60000",
            "      PEL 1000-0 consumer='alice' delivery_count=1 idle_ms=60000",
        ],
        consecutive=True,
    )
    assert "stream 'other'" not in result.stdout.str()  # passing tests add no section


def test_unpatched_after_a_failing_test(pytester):
    pytester.makepyfile(
        """
        import redis

        def test_fails(fake_redis_streams):
            assert redis.Redis().connection_pool.connection_class is not redis.Connection
            raise RuntimeError("boom")

        def test_next_is_unpatched():
            assert "connection_class" not in vars(redis.ConnectionPool)
            assert redis.Redis().connection_pool.connection_class is redis.Connection
        """
    )
    run(pytester).assert_outcomes(failed=1, passed=1)


def test_state_never_leaks_between_tests(pytester):
    pytester.makepyfile(
        """
        import pytest
        import redis

        CLIENT = redis.Redis(host="shared")   # module-level, like an app's global

        @pytest.mark.parametrize("n", range(3))
        def test_fresh(fake_redis_streams, n):
            assert CLIENT.xlen("s") == 0
            CLIENT.xadd("s", {"n": n})
            assert fake_redis_streams.client.xlen("s") == 0   # .client is localhost, another server
        """
    )
    run(pytester).assert_outcomes(passed=3)


def test_unfired_faults_fail_the_test_at_teardown(pytester):
    pytester.makepyfile(
        """
        import pytest

        def test_armed_never_fired(fake_redis_streams):
            fake_redis_streams.faults.fail_next("XACK", times=2, error="ERR injected")

        def test_optional(fake_redis_streams):
            fake_redis_streams.faults.fail_next("XACK", optional=True)

        @pytest.mark.fake_redis_streams(assert_all_faults_triggered=False)
        def test_opt_out(fake_redis_streams):
            fake_redis_streams.faults.fail_next("XACK")

        def test_failed_test_reports_only_its_failure(fake_redis_streams):
            fake_redis_streams.faults.fail_next("XACK")
            assert False, "own failure"
        """
    )
    result = run(pytester)
    result.assert_outcomes(passed=3, errors=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "The following faults were armed but never fired:",
            "- XACK x2 -> 'ERR injected'",
            "If this is on purpose, pass optional=True to fail_next() or use "
            "@pytest.mark.fake_redis_streams(assert_all_faults_triggered=False).",
        ],
        consecutive=True,
    )


def test_async_clients_are_closed_at_teardown(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.asyncio
        async def test_async(fake_redis_streams):
            client = fake_redis_streams.async_client(decode_responses=True)
            assert await client.xadd("s", {"f": "v"}, id="1-1") == "1-1"
            assert fake_redis_streams.client.xlen("s") == 1
        """
    )
    run(pytester, "-W", "error::ResourceWarning").assert_outcomes(passed=1)


def test_session_factory_gives_a_server_per_module(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.fixture(scope="module")
        def streams(fake_redis_streams_factory):
            handle = fake_redis_streams_factory(version="7.2", start_ms=10, patch=False)
            yield handle
            handle.close()

        def test_first(streams):
            assert streams.client.xadd("s", {"f": "v"}) == b"10-0"

        def test_second_sees_the_first(streams):
            assert streams.client.xlen("s") == 1
            assert streams.server.version == "7.2"
        """
    )
    run(pytester).assert_outcomes(passed=2)


def test_failure_report_lists_faults_and_other_servers(pytester):
    pytester.makepyfile(
        """
        import redis

        def test_fails(fake_redis_streams):
            redis.Redis(host="cache", db=1).xadd("jobs", {"f": "v"}, id="5-0")
            fake_redis_streams.faults.fail_next("XLEN", error="ERR injected")
            fake_redis_streams.faults.fail_next("XACK", optional=True)
            try:
                fake_redis_streams.client.xlen("s")
            except redis.ResponseError:
                pass
            assert False
        """
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- Captured fake-redis-streams call -*",
            "redis://localhost:6379  (profile 7.4, SystemClock())",
            "  no streams",
            "redis://cache:6379  (profile 7.4, SystemClock())",
            "  db 1 stream 'jobs': length=1 first_id=5-0 last_id=5-0 entries_added=1 max_deleted_entry_id=0-0",
            "    5-0 {'f': 'v'}",
            "faults of localhost:6379:",
            "- armed: XACK x1 -> 'ERR injected failure'",
            "- fired: XLEN s (client *) -> ERR injected",
        ],
        consecutive=True,
    )
