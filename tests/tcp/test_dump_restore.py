"""DUMP / RESTORE over TCP: the crafted-pickle payload fakeredis used to unpickle, in the served fake and in
the ``python -m fake_streams serve`` process; a real-format payload round trip over the wire."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile

import redis

from .conftest import WAIT_S, module_process

EXPECTED = b"-ERR DUMP payload version or checksum are wrong\r\n"


class _CreatesAFile:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _pickle_payload(path: str) -> bytes:
    body = pickle.dumps(_CreatesAFile(path))
    return hashlib.sha1(body).digest() + body


def test_crafted_pickle_over_tcp_runs_nothing(served, raw, tmp_path):
    marker = str(tmp_path / "ran")
    client = raw(served.port)
    assert client.call("RESTORE", "k", "0", _pickle_payload(marker)) == EXPECTED
    assert client.call("EXISTS", "k") == b":0\r\n"
    assert not os.path.exists(marker)


def test_dump_restore_round_trip_over_tcp(served, raw):
    client = raw(served.port)
    client.call("XADD", "s", "1-1", "f", "v")
    client.call("XGROUP", "CREATE", "s", "g", "0")
    dumped = client.call("DUMP", "s")
    assert dumped.startswith(b"$")
    payload = dumped[dumped.index(b"\r\n") + 2:-2]
    assert payload[0] == 21  # RDB_TYPE_STREAM_LISTPACKS_3 (profile 7.4)
    assert client.call("RESTORE", "copy", "0", payload) == b"+OK\r\n"
    assert client.call("XINFO", "GROUPS", "copy") == client.call("XINFO", "GROUPS", "s")


def test_crafted_pickle_in_the_serve_process_runs_nothing():
    with tempfile.TemporaryDirectory() as tmp:
        marker = os.path.join(tmp, "ran")
        proc = module_process("serve", "--port", "0", "--version", "7.0", "--clock", "manual")
        try:
            url = proc.stdout.readline().strip()  # real-time: the first stdout line is the URL, flushed
            client = redis.Redis.from_url(url, socket_timeout=WAIT_S)
            try:
                client.restore("k", 0, _pickle_payload(marker))
                raise AssertionError("RESTORE of a pickle was accepted")
            except redis.ResponseError as exc:
                assert str(exc) == "DUMP payload version or checksum are wrong"
            assert client.exists("k") == 0
            client.set("v", "x" * 100)
            assert client.restore("w", 0, client.dump("v")) == b"OK" and client.get("w") == b"x" * 100
            client.close()
        finally:
            proc.terminate()
            proc.communicate(timeout=WAIT_S)  # real-time: the process exits on SIGTERM
        assert not os.path.exists(marker)
