"""``fake_redis_streams.serve()``: the test's server over TCP, sharing state with in-process clients."""

from __future__ import annotations

import subprocess
import sys

import redis


def test_a_subprocess_reaches_the_served_server(fake_redis_streams):
    url = fake_redis_streams.serve()
    assert url.startswith("redis://127.0.0.1:")
    fake_redis_streams.client.xadd("orders", {"id": "1"}, id="1-0")
    code = (
        "import redis, sys\n"
        "r = redis.Redis.from_url(sys.argv[1])\n"
        "print(r.xrange('orders'))\n"
        "r.xadd('orders', {'id': '2'}, id='2-0')\n"
    )
    out = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[(b'1-0', {b'id': b'1'})]"
    assert fake_redis_streams.client.xlen("orders") == 2


def test_patched_in_process_clients_of_the_served_url_share_its_state(fake_redis_streams):
    url = fake_redis_streams.serve()
    fake_redis_streams.client.xadd("orders", {"id": "1"}, id="1-0")
    other = redis.Redis.from_url(url)
    try:
        assert other.xlen("orders") == 1
    finally:
        other.close()


def test_served_port_is_closed_at_teardown(pytester):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")  # (pytest-asyncio's warning)
    pytester.makepyfile(
        """
        import socket
        import pytest

        URLS = []

        def test_serve(fake_redis_streams):
            URLS.append(fake_redis_streams.serve())

        def test_after_teardown():
            host, port = URLS[0].split("//")[1].split("/")[0].split(":")
            with pytest.raises(OSError):
                socket.create_connection((host, int(port)), timeout=1).close()
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
