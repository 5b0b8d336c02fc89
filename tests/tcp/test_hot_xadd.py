"""The TCP server's own path for plain XADDs (``TcpClient.take_plain_xadds`` / ``run_plain_xadds``, one client's run
and the runs of the clients read in one pass) against the general path.

The same transcript of raw requests runs on two served fakes on the same ManualClock time, one with the
direct paths on and one with ``server.fast_path = False`` (every command through fakeredis's dispatch and
``FakeStreamsServer.execute``); every reply's bytes must match, and so must what the side effects show:
the stream's DUMP (node layout and every counter), WATCH, a woken blocked reader, keyspace events,
OBJECT IDLETIME / FREQ, INFO commandstats, CLIENT INFO's ``cmd`` and Valkey's ``tot-cmds``.
"""

from __future__ import annotations

import re
from typing import Any, Callable, List

import pytest

from fake_streams import FakeStreamsServer
from fake_streams._fakeredis import tcp as adapter_tcp
from fake_streams.clock import ManualClock
from fake_streams.tcp import serve
from tests.conftest import START_MS
from tests.tcp.conftest import RawClient, blocked_clients, resp_command, wait_until

LONG = "18446744073709551615"


def _pipeline(client: RawClient, *commands: List[Any]) -> List[bytes]:
    """Send every command in one write, then read one reply each."""
    client.sock.sendall(b"".join(resp_command(*command) for command in commands))
    return [client.read() for _ in commands]


def _commandstats(info: bytes, name: str) -> bytes:
    """``calls=…,failed_calls=…,rejected_calls=…`` of ``cmdstat_<name>`` (usec varies)."""
    found = re.search(rb"cmdstat_" + name.encode() + rb":calls=(\d+),.*?rejected_calls=(\d+),failed_calls=(\d+)",
                      info)
    return b"" if found is None else b"/".join(found.groups())


def _client_fields(line: bytes) -> List[bytes]:
    return [field for field in line.split() if field.startswith((b"cmd=", b"tot-cmds=", b"flags=", b"argv-mem="))]


def _transcript(server: FakeStreamsServer, raw: Callable[[int], RawClient]) -> List[Any]:
    out: List[Any] = []
    with serve(server) as handle:
        c, watcher, reader, listener = (raw(handle.port) for _ in range(4))
        out.append(c.call("XADD", "s", "1-0", "a", "1"))  # creates the stream (the general path)
        out += [c.call("XADD", "s", "*", "f", "v") for _ in range(3)]  # singles
        out += _pipeline(c, *[["XADD", "s", "*", "f", i] for i in range(5)], ["XADD", "t", "*", "f", "v"],
                         ["XADD", "s", "*", "g", "w", "h", "x"], ["XADD", "s", "MAXLEN", "~", "5", "*", "f", "v"],
                         ["xadd", "s", "*", "f", "v"], ["XADD", "s", "*", "f"], ["PING"])
        out.append(_client_fields(c.call("CLIENT", "INFO")))
        # another client's CLIENT LIST shows the run's last command (argv-mem: its arguments' bytes)
        c_id = c.call("CLIENT", "ID")[1:-2]
        out += _pipeline(c, ["XADD", "s", "*", "f", "1"], ["XADD", "s", "*", "f", "22"], ["XADD", "s", "*", "f", "333"])
        out.append(_client_fields(watcher.call("CLIENT", "LIST", "ID", c_id)))
        out.append(c.call("CONFIG", "SET", "stream-node-max-entries", "3"))
        out += _pipeline(c, *[["XADD", "s", "*", "f", i] for i in range(10)])
        out.append(c.call("DUMP", "s"))
        out.append(c.call("XINFO", "STREAM", "s"))
        # the ID space ends: the first of the run gets the last ID, the others the general path's error
        out.append(c.call("XADD", "m", f"{LONG}-18446744073709551614", "f", "v"))
        out += _pipeline(c, *[["XADD", "m", "*", "f", i] for i in range(3)], ["XLEN", "m"])
        out.append(c.call("XADD", "m2", f"{LONG}-{LONG}", "f", "v"))
        out += _pipeline(c, ["XADD", "m2", "*", "f", "v"], ["XADD", "s", "*", "f", "v"])
        # WATCH: dirtied by a run of plain XADDs from another client
        out.append(watcher.call("WATCH", "s"))
        out.append(c.call("XADD", "s", "*", "f", "w"))
        out += _pipeline(watcher, ["MULTI"], ["XLEN", "s"], ["EXEC"])
        # a blocked reader: served by the XADD (the plain path steps aside while a client is blocked)
        reader.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
        wait_until(lambda: blocked_clients(server) == 1, "the reader to block")  # real-time: the loop thread
        out += _pipeline(c, ["XADD", "s", "*", "r", "1"], ["XADD", "s", "*", "r", "2"])
        out.append(reader.read())
        # keyspace events: sent as the general path sends them
        out.append(c.call("CONFIG", "SET", "notify-keyspace-events", "Et"))
        out.append(listener.call("PSUBSCRIBE", "__keyevent@0__:*"))
        out += _pipeline(c, ["XADD", "s", "*", "e", "1"], ["XADD", "s", "*", "e", "2"])
        out += [listener.read(), listener.read()]
        out.append(c.call("CONFIG", "SET", "notify-keyspace-events", ""))
        # OBJECT IDLETIME after the clock moved, then FREQ under an LFU policy (a fresh key: 5 + one touch)
        server.clock.advance(7000)
        out.append(c.call("OBJECT", "IDLETIME", "s"))
        out.append(c.call("XADD", "s", "*", "f", "v"))
        out.append(c.call("OBJECT", "IDLETIME", "s"))
        out.append(c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"))
        out.append(c.call("XADD", "lfu", "*", "f", "v"))
        out.append(c.call("XADD", "lfu", "*", "f", "v"))
        out.append(c.call("OBJECT", "FREQ", "lfu"))
        out.append(c.call("CONFIG", "SET", "maxmemory-policy", "noeviction"))
        out.append(_client_fields(c.call("CLIENT", "INFO")))
        out.append(c.call("DUMP", "s"))
        info = c.call("INFO", "commandstats")
        out += [_commandstats(info, "xadd"), _commandstats(info, "xlen")]
        out.append(c.call("INFO", "errorstats").split(b"\r\n", 1)[1])
    return out


def _count_plain_runs(monkeypatch: Any, taken: List[int], batches: List[int], repeated: List[int]) -> None:
    """Record, per run of plain XADDs the plain path answered, how many commands it took (``taken``), per call of
    the runner how many clients' runs it was given (``batches``), and each run taken as a client's XADD again
    (``repeated``: ``TcpClient.defer_repeated_xadds``)."""
    plain = adapter_tcp.run_plain_xadds
    again = adapter_tcp.TcpClient.defer_repeated_xadds

    def counting_again(self: Any, parser: Any, runs: List[Any]) -> bool:
        done = again(self, parser, runs)
        if done:
            repeated.append(len(runs[-1][2]))
        return done

    def counting(runs: List[Any]) -> Any:
        wires = [run[6] for run in runs]
        before = [wire.commands for wire in wires]
        left = plain(runs)
        taken.extend(wire.commands - count for wire, count in zip(wires, before) if wire.commands > count)
        batches.append(len(runs))
        return left

    monkeypatch.setattr(adapter_tcp, "run_plain_xadds", counting)
    monkeypatch.setattr(adapter_tcp.TcpClient, "run_plain_xadds", staticmethod(counting))
    monkeypatch.setattr(adapter_tcp.TcpClient, "defer_repeated_xadds", counting_again)


def _on_both_paths(transcript: Callable[..., List[Any]], raw: Any, monkeypatch: Any, version: str) -> Any:
    """``transcript(server, raw)`` on a served fake with the direct paths on, then on one with them off (every command
    through the general path, which must take no plain run): ``(transcripts, commands per plain run, runs per call of
    the runner, runs taken as a client's XADD again)`` of the first."""
    taken: List[int] = []
    batches: List[int] = []
    repeated: List[int] = []
    _count_plain_runs(monkeypatch, taken, batches, repeated)
    transcripts = []
    for fast in (True, False):
        server = FakeStreamsServer(version=version, clock=ManualClock(START_MS))
        server.fast_path = fast
        try:
            transcripts.append(transcript(server, raw))
        finally:
            server.close()
        if fast:
            runs, fast_batches, fast_repeated = list(taken), list(batches), list(repeated)
            taken[:], batches[:], repeated[:] = [], [], []
    assert not taken and not repeated  # the general path's run took none
    return transcripts, runs, fast_batches, fast_repeated


@pytest.mark.parametrize("version", ["7.0", "7.4", "valkey-8.0", "8.6", "8.10", "valkey-9.1"])
def test_plain_xadds_answer_and_act_as_the_general_path(raw, monkeypatch, version):
    transcripts, runs, _, repeated = _on_both_paths(_transcript, raw, monkeypatch, version)
    assert transcripts[0] == transcripts[1]
    assert repeated.count(1) >= 2 and max(repeated) >= 5  # singles and pipelines read as the client's XADD again
    assert max(runs) >= 5 and runs.count(1) >= 3  # pipelined runs and single XADDs took the plain path
    assert sum(runs) >= 25
    if version.startswith("valkey"):
        assert any(field.startswith(b"tot-cmds=") for field in transcripts[0][-5])


def _one_pass_transcript(server: FakeStreamsServer, raw: Callable[[int], RawClient]) -> List[Any]:
    """Clients whose requests the loop reads in one pass: the loop is held (the server lock taken while a first
    client's XLEN waits for it) while the others send, so that one ``epoll_wait`` returns them all, in the order
    they sent. Their XADDs run as one batch (other keys, another database, a run followed by another command,
    a refused XADD amid them) and must answer and act as one by one."""
    out: List[Any] = []
    with serve(server) as handle:
        clients = [raw(handle.port) for _ in range(7)]
        holder, a, b, c, d, e, f = clients
        out.append(a.call("XADD", "s", "1-0", "f", "v"))
        out.append(b.call("XADD", "t", "1-0", "f", "v"))
        out.append(c.call("SELECT", "1"))
        out.append(c.call("XADD", "s", "1-0", "other", "db"))
        out.append(e.call("XADD", "m", f"{LONG}-18446744073709551614", "f", "v"))
        out.append(f.call("WATCH", "s"))
        for rounds in range(2):
            with server.backend.lock:
                seen = _bytes_read(handle, holder)
                holder.send("XLEN", "s")
                wait_until(lambda seen=seen: _bytes_read(handle, holder) > seen, "the loop to read the holder")  # real-time
                a.sock.sendall(resp_command("XADD", "s", "*", "f", "a1") + resp_command("XADD", "s", "*", "f", "a2"))
                b.send("XADD", "t", "*", "f", "b1")
                c.send("XADD", "s", "*", "f", "c1")  # database 1's s
                d.sock.sendall(resp_command("XADD", "s", "*", "f", "d1") + resp_command("XLEN", "s")
                               + resp_command("XADD", "s", "*", "f", "d2"))
                e.sock.sendall(resp_command("XADD", "m", "*", "f", "e1") + resp_command("XADD", "m", "*", "f", "e2")
                               + resp_command("XADD", "m", "*", "f", "e3"))
                a.send("XADD", "s", "*", "g", "a3") if rounds else f.send("XADD", "s", "*", "f", "f1")
            out.append(holder.read())
            out += [a.read(), a.read(), b.read(), c.read(), d.read(), d.read(), d.read(), e.read(), e.read(), e.read()]
            out.append(a.read() if rounds else f.read())
        out.append(f.call("MULTI"))
        out.append(f.call("EXEC"))
        out += [a.call("XRANGE", "s", "-", "+"), b.call("XRANGE", "t", "-", "+"), c.call("XRANGE", "s", "-", "+")]
        out.append(a.call("DUMP", "s"))
        out.append(_client_fields(holder.call("CLIENT", "LIST")))
        info = a.call("INFO", "commandstats")
        out += [_commandstats(info, "xadd"), _commandstats(info, "xlen")]
        out.append(a.call("INFO", "errorstats").split(b"\r\n", 1)[1])
    return out


def _bytes_read(handle: Any, client: RawClient) -> int:
    """How many bytes of ``client``'s the loop has received (its connection counts them)."""
    port = client.sock.getsockname()[1]
    return sum(conn.bytes_in for conn in list(handle.connections.values()) if conn.peer.endswith(f":{port}"))


@pytest.mark.parametrize("version", ["7.4", "valkey-9.1"])
def test_plain_xadds_of_clients_read_in_one_pass_run_as_one_by_one(raw, monkeypatch, version):
    transcripts, _, fast_batches, _ = _on_both_paths(_one_pass_transcript, raw, monkeypatch, version)
    assert transcripts[0] == transcripts[1]
    assert max(fast_batches) >= 4  # the pass's runs of several clients went to the runner together (a to d)


def test_a_run_stops_at_a_request_still_arriving(served, raw):
    c = raw(served.port)
    c.call("XADD", "s", "1-0", "f", "v")
    whole = resp_command("XADD", "s", "*", "f", "1")
    second = resp_command("XADD", "s", "*", "f", "2")
    c.sock.sendall(whole + second[:7])  # the second request cut inside its first bulk
    assert c.read() == b"$15\r\n%d-0\r\n" % START_MS
    c.sock.sendall(second[7:])
    assert c.read() == b"$15\r\n%d-1\r\n" % START_MS
    assert c.call("XLEN", "s") == b":3\r\n"


def test_a_protocol_error_behind_a_run_is_answered_after_it(served, raw):
    c = raw(served.port)
    c.call("XADD", "s", "1-0", "f", "v")
    c.sock.sendall(resp_command("XADD", "s", "*", "f", "1") + b"*1\r\n$-5\r\n")
    assert c.read() == b"$15\r\n%d-0\r\n" % START_MS
    assert c.read() == b"-ERR Protocol error: invalid bulk length\r\n"
    assert c.closed_by_peer()
