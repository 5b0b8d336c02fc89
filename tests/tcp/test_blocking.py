"""Blocking reads over TCP: a TCP client parks in the same sync session path as an in-process client.

Every wait for another thread is bounded (WAIT_S) and carries a ``# real-time`` note.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, List

import pytest
import redis

from fake_streams.tcp import serve

from .conftest import WAIT_S, blocked_clients, wait_until


def in_thread(call: Callable[[], Any]) -> tuple:
    """Run ``call`` in a thread; returns (thread, results) where results gets the value or the exception."""
    results: List[Any] = []

    def run() -> None:
        try:
            results.append(call())
        except Exception as exc:
            results.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, results


@pytest.fixture
def tcp_client(served):
    made: List[Any] = []

    def make(**kwargs: Any) -> Any:
        client = redis.Redis.from_url(served.url, **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def test_xread_block_woken_by_an_in_process_xadd(served, tcp_client, make_client):
    thread, results = in_thread(lambda: tcp_client().xread({"s": "$"}, block=0))
    wait_until(lambda: blocked_clients(served.server) == 1, "the TCP client to block")  # real-time: other thread
    make_client().xadd("s", {"k": "v"}, id="1-0")
    thread.join(WAIT_S)  # real-time: the woken thread replies
    assert results == [[[b"s", [(b"1-0", {b"k": b"v"})]]]]


def test_xreadgroup_block_woken_by_another_tcp_client(served, tcp_client):
    admin = tcp_client()
    admin.xgroup_create("s", "g", id="$", mkstream=True)
    thread, results = in_thread(lambda: tcp_client().xreadgroup("g", "c", {"s": ">"}, block=0))
    wait_until(lambda: blocked_clients(served.server) == 1, "the TCP client to block")  # real-time: other thread
    admin.xadd("s", {"k": "v"}, id="5-0")
    thread.join(WAIT_S)  # real-time: the woken thread replies
    assert results == [[[b"s", [(b"5-0", {b"k": b"v"})]]]]
    assert admin.xpending("s", "g")["pending"] == 1


def test_block_timeout_follows_the_manual_clock(served, tcp_client):
    thread, results = in_thread(lambda: tcp_client().xread({"s": "$"}, block=5000))
    wait_until(lambda: blocked_clients(served.server) == 1, "the TCP client to block")  # real-time: other thread
    served.server.clock.advance(4999)
    assert thread.is_alive()
    served.server.clock.advance(1)
    thread.join(WAIT_S)  # real-time: the timed-out thread replies
    assert results and not results[0]  # nil (redis-py: [] / None depending on version)


def test_close_releases_blocked_tcp_clients_and_joins_threads(server, make_client):
    handle = serve(server)
    blocked = [in_thread(lambda: redis.Redis.from_url(handle.url).xread({"s": "$"}, block=0)) for _ in range(3)]
    wait_until(lambda: blocked_clients(server) == 3, "three TCP clients to block")  # real-time: other threads
    handle.close()
    for thread, results in blocked:
        thread.join(WAIT_S)  # real-time: released threads return
        assert len(results) == 1 and isinstance(results[0], redis.ConnectionError)
    assert blocked_clients(server) == 0
    assert not [t for t in threading.enumerate() if t.name.startswith("fake-streams-tcp")]
    assert make_client().xadd("s", {"still": "served"}, id="1-0") == b"1-0"  # in-process clients unaffected


def test_server_close_releases_blocked_tcp_clients(server):
    handle = serve(server)
    try:
        thread, results = in_thread(lambda: redis.Redis.from_url(handle.url).xread({"s": "$"}, block=0))
        wait_until(lambda: blocked_clients(server) == 1, "the TCP client to block")  # real-time: other thread
        server.close()
        thread.join(WAIT_S)  # real-time: the released thread returns
        assert len(results) == 1 and isinstance(results[0], redis.ConnectionError)
    finally:
        handle.close()


def test_client_disconnecting_while_blocked(served, make_client):
    import socket

    from .conftest import resp_command

    sock = socket.create_connection(("127.0.0.1", served.port), timeout=WAIT_S)
    sock.sendall(resp_command("XREAD", "BLOCK", "0", "STREAMS", "s", "$"))
    wait_until(lambda: blocked_clients(served.server) == 1, "the raw client to block")  # real-time: server thread
    sock.close()  # the server notices the hang-up and drops the blocked client, as a real one does
    wait_until(lambda: served.clients == 0, "the connection to go")  # real-time: server thread
    assert blocked_clients(served.server) == 0


def test_a_hung_up_consumer_is_not_served(served, tcp_client, make_client):
    """A worker killed while blocked in XREADGROUP must not swallow the next entry (it would stay pending)."""
    import socket

    from .conftest import resp_command

    local = make_client()
    local.xgroup_create("s", "g", id="$", mkstream=True)
    ghost = socket.create_connection(("127.0.0.1", served.port), timeout=WAIT_S)
    ghost.sendall(resp_command("XREADGROUP", "GROUP", "g", "dead", "BLOCK", "0", "STREAMS", "s", ">"))
    wait_until(lambda: blocked_clients(served.server) == 1, "the ghost to block")  # real-time: server thread
    ghost.close()
    wait_until(lambda: blocked_clients(served.server) == 0, "the ghost to go")  # real-time: server thread
    thread, results = in_thread(lambda: tcp_client().xreadgroup("g", "alive", {"s": ">"}, block=0))
    wait_until(lambda: blocked_clients(served.server) == 1, "the live worker to block")  # real-time: other thread
    local.xadd("s", {"k": "v"}, id="1-0")
    thread.join(WAIT_S)  # real-time: the woken thread replies
    assert results == [[[b"s", [(b"1-0", {b"k": b"v"})]]]]
    pending = {c["name"]: c["pending"] for c in local.xinfo_consumers("s", "g")}
    assert pending == {b"alive": 1, b"dead": 0}  # XREADGROUP created "dead" before blocking, as the server does


def test_client_kill_disconnects_a_tcp_client(served, tcp_client, make_client):
    victim = tcp_client()
    victim.ping()
    try:
        killed = make_client().client_kill_filter(_id=victim.client_id())
    except redis.ResponseError as exc:
        pytest.skip(f"this fakeredis has no CLIENT KILL: {exc}")
    assert killed == 1
    wait_until(lambda: served.clients == 0, "the killed connection to go")  # real-time: server thread
