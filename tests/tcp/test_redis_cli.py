"""redis-cli (Debian's redis-tools) talking to the served fake: what a developer sees at a terminal.

``--no-raw`` makes redis-cli show reply types (quoted bulk strings, bare status, ``(error)``, ``(nil)``,
``(integer)``, RESP3 maps ``1#``), so the goldens check the wire types too.
"""

from __future__ import annotations

import subprocess

import pytest


@pytest.fixture
def cli(redis_cli, served):
    def run(*args: str, resp3: bool = False) -> str:
        command = [redis_cli, "--no-raw", "-h", "127.0.0.1", "-p", str(served.port), *(["-3"] if resp3 else []), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout

    return run


def test_stream_commands(cli):
    assert cli("XADD", "s", "1-0", "f", "v") == '"1-0"\n'
    assert cli("XADD", "s", "*", "g", "w") == '"1700000000000-0"\n'  # the server's ManualClock
    assert cli("XRANGE", "s", "-", "+") == (
        '1) 1) "1-0"\n   2) 1) "f"\n      2) "v"\n'
        '2) 1) "1700000000000-0"\n   2) 1) "g"\n      2) "w"\n'
    )
    assert cli("XGROUP", "CREATE", "s", "g", "0") == "OK\n"
    assert cli("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">") == (
        '1) 1) "s"\n   2) 1) 1) "1-0"\n         2) 1) "f"\n            2) "v"\n'
    )
    assert cli("XPENDING", "s", "g") == '1) (integer) 1\n2) "1-0"\n3) "1-0"\n4) 1) 1) "c"\n      2) "1"\n'
    assert cli("XREAD", "STREAMS", "s", "$") == "(nil)\n"


def test_error(cli):
    assert cli("XADD", "s", "1-0", "f", "v") == '"1-0"\n'
    assert cli("XADD", "s", "1-0", "f", "v") == (
        "(error) ERR The ID specified in XADD is equal or smaller than the target stream top item\n"
    )
    assert cli("XGROUP", "CREATE", "missing", "g", "$") == (
        "(error) ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use "
        "the MKSTREAM option to create an empty stream automatically.\n"
    )


def test_resp3(cli):
    cli("XADD", "s", "1-0", "f", "v")
    assert cli("XINFO", "STREAM", "s", resp3=True) == (
        ' 1# "length" => (integer) 1\n'
        ' 2# "radix-tree-keys" => (integer) 1\n'
        ' 3# "radix-tree-nodes" => (integer) 2\n'
        ' 4# "last-generated-id" => "1-0"\n'
        ' 5# "max-deleted-entry-id" => "0-0"\n'
        ' 6# "entries-added" => (integer) 1\n'
        ' 7# "recorded-first-entry-id" => "1-0"\n'
        ' 8# "groups" => (integer) 0\n'
        ' 9# "first-entry" => \n    1) "1-0"\n    2) 1) "f"\n       2) "v"\n'
        '10# "last-entry" => \n    1) "1-0"\n    2) 1) "f"\n       2) "v"\n'
    )
    assert cli("XREAD", "STREAMS", "s", "0", resp3=True) == '1# "s" => \n   1) 1) "1-0"\n      2) 1) "f"\n         2) "v"\n'
    assert cli("XREAD", "STREAMS", "s", "$", resp3=True) == "(nil)\n"


def test_state_written_by_redis_cli_is_seen_in_process(cli, make_client):
    cli("XADD", "jobs", "7-0", "task", "resize")
    assert make_client().xrange("jobs") == [(b"7-0", {b"task": b"resize"})]
