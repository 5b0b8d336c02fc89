"""The request parser on the wire: inline and multibulk requests, malformed input, limits — byte for byte
against redis-server 7.0.15.

Each case opens a fresh connection to the served fake (profile 7.0) and to the real server, sends the same
bytes, half-closes (the server then sees end of input after them) and reads until the server closes: the
whole byte stream must be equal — the replies to what came before a malformed request, the
``-ERR Protocol error: …`` line, and nothing after it.
"""

from __future__ import annotations

import socket
from typing import List, Tuple

import pytest

from fake_streams import FakeStreamsServer, ManualClock
from fake_streams.tcp import ProtocolError, RequestParser, serve
from fake_streams.tcp.protocol import Limits, split_inline, string_to_ll

from .conftest import WAIT_S

BIG = 70 * 1024  # past the 64 KiB inline limit

CASES: List[Tuple[str, bytes]] = [
    ("inline ping", b"PING\r\n"),
    ("inline without CR", b"PING\nECHO hi\n"),
    ("inline args", b"ECHO   hello\r\nSET k v\r\nGET k\r\n"),
    ("inline empty lines", b"\r\n\n  \r\nPING\r\n"),
    ("inline double quotes", b'ECHO "a b\\x41\\n\\t\\"\\\\z"\r\n'),
    ("inline single quotes", b"ECHO 'it\\'s \\n'\r\n"),
    ("inline bad hex escape", b'ECHO "\\xzz"\r\n'),
    ("inline quote glued", b'ECHO "a"b\r\n'),
    ("inline single quote glued", b"ECHO 'a'b\r\n"),
    ("inline unbalanced", b'SET k "abc\r\nPING\r\n'),
    ("inline unbalanced single", b"SET k 'abc\r\n"),
    ("inline quote in token", b'ECHO a"b c"\r\n'),
    ("inline NUL hides the newline", b"ECHO a\x00b c\r\nPING\r\n"),
    ("inline NUL then too big", b"ECHO a\x00" + b"b" * BIG),
    ("NUL in the count line", b"*1\x00\r\n$4\r\nPING\r\n"),
    ("NUL in a bulk length line", b"*1\r\n$4\x00\r\nPING\r\n"),
    ("inline vertical tab", b"ECHO \x0ba\r\nECHO a\x0bb\r\n"),
    ("inline unknown", b"FOO bar\r\n"),
    ("inline dollar", b"$3\r\nabc\r\n"),
    ("inline too big", b"A" * BIG),
    ("inline long but ended", b"ECHO " + b"x" * 60000 + b"\r\n"),
    ("multibulk invalid count", b"*abc\r\n"),
    ("multibulk empty count", b"*\r\n"),
    ("multibulk leading zero", b"*01\r\n$4\r\nPING\r\n"),
    ("multibulk plus sign", b"*+1\r\n$4\r\nPING\r\n"),
    ("multibulk over INT_MAX", b"*3000000000\r\n"),
    ("multibulk large count", b"*2000000\r\n"),
    ("multibulk negative count", b"*-1\r\nPING\r\n"),
    ("multibulk zero count", b"*0\r\n*1\r\n$4\r\nPING\r\n"),
    ("negative bulk", b"*1\r\n$-5\r\n"),
    ("bulk leading zero", b"*1\r\n$04\r\nPING\r\n"),
    ("bulk empty length", b"*1\r\n$\r\nPING\r\n"),
    ("bulk not a dollar", b"*1\r\n:5\r\n"),
    ("bulk not a dollar: CR", b"*1\r\n\r\n"),
    ("huge bulk", b"*1\r\n$999999999999\r\n"),
    ("bulk over 512 MB", b"*1\r\n$536870913\r\n"),
    ("too big count line", b"*" + b"1" * BIG),
    ("too big bulk count line", b"*1\r\n$" + b"1" * BIG),
    ("unchecked CRLF after a bulk", b"*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n"),
    ("unchecked LF after the count", b"*1\rX$4\r\nPING\r\n"),
    ("NUL in a bulk", b"*2\r\n$4\r\nECHO\r\n$3\r\na\x00b\r\n"),
    ("pipeline then error", b"*1\r\n$4\r\nPING\r\nPING\r\n*x\r\nPING\r\n"),
    ("incomplete request", b"*2\r\n$4\r\nECHO\r\n$3\r\nab"),
    ("incomplete count", b"*2"),
    ("mixed", b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nECHO there\r\n*1\r\n$4\r\nPING\r\n"),
    ("empty command name", b'""\r\n*1\r\n$0\r\n\r\n'),
    ("quit then more", b"PING\r\nQUIT\r\nPING\r\n"),
    # the edges of the parser's fast path (one-digit counts, bulks of 0..99 bytes spelled exactly so)
    ("fast shape pipeline", b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n*2\r\n$4\r\nECHO\r\n$99\r\n" + b"x" * 99
     + b"\r\n*2\r\n$4\r\nECHO\r\n$100\r\n" + b"y" * 100 + b"\r\n*2\r\n$4\r\nECHO\r\n$10\r\n0123456789\r\n"),
    ("fast shape: unchecked LF after a bulk length", b"*2\r\n$4\rXECHO\r\n$2\rYhi\r\n"),
    ("fast shape: CRLF inside a bulk", b"*2\r\n$4\r\nECHO\r\n$6\r\n\r\n*1\r\n\r\n*1\r\n$4\r\nPING\r\n"),
    ("fast shape: count 10 and more", b"*10\r\n" + b"$1\r\nx\r\n" * 10 + b"*12\r\n$4\r\nECHO\r\n" + b"$1\r\nx\r\n" * 11),
    ("fast shape then an error", b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n:2\r\nhi\r\n"),
]


def _exchange(port: int, payload: bytes) -> Tuple[bytes, bool]:
    """Send ``payload``, half-close, read until the server closes: (bytes, closed)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
    try:
        try:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
        except OSError:  # closed by the server before it took everything (a limit): read what it wrote
            pass
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except OSError:
                return b"".join(chunks), True
            if not chunk:
                return b"".join(chunks), True
            chunks.append(chunk)
    finally:
        sock.close()


@pytest.fixture(scope="module")
def fake_port():
    fake = FakeStreamsServer(version="7.0", clock=ManualClock(1_700_000_000_000))
    handle = serve(fake)
    yield handle.port
    handle.close()
    fake.close()


@pytest.mark.real
@pytest.mark.parametrize("name, payload", CASES, ids=[c[0] for c in CASES])
def test_the_same_bytes_as_the_real_server(real_redis, fake_port, name, payload):
    real = real_redis()
    real_port = real.connection_pool.connection_kwargs["port"]
    assert _exchange(fake_port, payload) == _exchange(real_port, payload)


@pytest.mark.real
@pytest.mark.parametrize("setting, payload", [
    ("proto-max-bulk-len", b"*1\r\n$1048577\r\n"),
    ("proto-max-bulk-len", b"*2\r\n$4\r\nECHO\r\n$1048576\r\n" + b"x" * 1048576 + b"\r\n"),
    ("client-query-buffer-limit", b"*2\r\n$4\r\nECHO\r\n$1500000\r\n" + b"x" * 1200000),
], ids=["bulk over the limit", "bulk at the limit", "query buffer over the limit"])
def test_limits_set_with_config(real_redis, fake_port, setting, payload):
    real = real_redis()
    real_port = real.connection_pool.connection_kwargs["port"]
    fake = __import__("redis").Redis(port=fake_port)
    try:
        for client in (real, fake):
            client.config_set(setting, "1mb")
        assert _exchange(fake_port, payload) == _exchange(real_port, payload)
    finally:
        for client in (real, fake):
            client.config_set(setting, "512mb" if setting == "proto-max-bulk-len" else "1gb")
        fake.close()


# ------------------------------------------------------------------------------------ the parser alone
def _parse_all(parser: RequestParser) -> list:
    out = []
    while True:
        argv = parser.next()
        if argv is None:
            return out
        out.append(argv)


def _run_chunks(chunks) -> tuple:
    """The requests a parser reads from ``chunks`` fed one by one, then its error text or what it buffers."""
    parser = RequestParser(Limits())
    out: list = []
    for chunk in chunks:
        parser.feed(chunk)
        try:
            while (argv := parser.next()) is not None:
                out.append(argv)
        except ProtocolError as exc:
            return out, exc.text
    return out, parser.buffered


def test_parser_byte_by_byte_equals_parser_at_once():
    data = (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nva\r\nl\r\nECHO 'a b' \"c\\x41\"\r\n*0\r\n"
            b"*1\r\n$4\r\nPING\r\n")
    whole = RequestParser(Limits())
    whole.feed(data)
    expected = _parse_all(whole)
    assert expected == [[b"SET", b"k", b"va\r\nl"], [b"ECHO", b"a b", b"cA"], [], [b"PING"]]
    pieces = RequestParser(Limits())
    got: list = []
    for i in range(len(data)):
        pieces.feed(data[i:i + 1])
        got.extend(_parse_all(pieces))
    assert got == expected


@pytest.mark.parametrize("data", [
    b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n*1\r\n$2\r\nhi\r\n*3\r\n$1\r\na\r\n$10\r\n0123456789\r\n$99\r\n" + b"z" * 99 + b"\r\n",
    b"*2\r\n$4\rXECHO\r\n$2\rYhi\r\n*1\rZ$4\r\nPING\r\n",  # the byte after a CR is not looked at
    b"*2\r\n$4\r\nECHO\r\n$6\r\n\r\n*1\r\n\r\n",  # CRLF inside a bulk
    b"*1\r\n$4\r\nPING\r\n*1\r\n$04\r\nPING\r\n",  # a leading zero: the error after the first request
    b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1",  # the second request incomplete
])
def test_fast_path_equals_the_general_path(data):
    """Whole (the fast path reads complete common-shape requests) vs byte by byte (the general path, which
    keeps partial requests): the same requests, then the same error or the same wait for more input."""
    whole = _run_chunks([data])
    assert whole == _run_chunks([data[i:i + 1] for i in range(len(data))])
    assert whole[0]  # the first request is read in both


def _random_request(rnd) -> bytes:
    """A multibulk request of the common shape or near it: CR LF / CR inside bulks, bulks of 99 and 100 bytes or
    more, a leading zero, a stray byte after a CR, a count of 10, a request cut short."""
    count = rnd.choice([1, 2, 5, 9, 10])
    parts = [b"*%d\r\n" % count]
    for _ in range(count):
        body = bytes(rnd.choice(b"ab\r\n*$") for _ in range(rnd.choice([0, 1, 3, 99, 100, 130])))
        head = rnd.choice([b"$%d\r\n" % len(body)] * 8 + [b"$0%d\r\n" % len(body), b"$%d\rX" % len(body)])
        parts.append(head + body + rnd.choice([b"\r\n"] * 8 + [b"XY"]))
    data = b"".join(parts)
    return data[:rnd.randrange(len(data))] if rnd.random() < 0.1 else data


@pytest.mark.parametrize("seed", range(6))
def test_random_requests_whole_equal_byte_by_byte(seed):
    """Requests of the common shape or near it, read whole (the fast path of RequestParser.next) and byte by byte
    (the general path): the same requests, errors and waits, for each request alone and for all in one buffer."""
    import random

    rnd = random.Random(seed)
    run = _run_chunks

    for _ in range(60):
        request = _random_request(rnd)
        assert run([request]) == run([request[i:i + 1] for i in range(len(request))])
    pipeline = b"".join(_random_request(rnd) for _ in range(5))
    assert run([pipeline]) == run([pipeline[i:i + 1] for i in range(len(pipeline))])


def test_fast_path_keeps_a_small_proto_max_bulk_len():
    parser = RequestParser(Limits(max_bulk_len=3))
    parser.feed(b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n")
    with pytest.raises(ProtocolError, match="invalid bulk length"):
        parser.next()


def test_a_large_bulk_is_joined_once():
    parser = RequestParser(Limits())
    value = b"v" * (3 * 1024 * 1024)
    request = b"*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n" % (len(value), value)
    for i in range(0, len(request), 65536):
        parser.feed(request[i:i + 65536])
        if i + 65536 < len(request):
            assert parser.next() is None and parser.awaiting_bulk
    assert parser.next() == [b"ECHO", value]
    assert parser.buffered == 0


def test_unauthenticated_limits():
    required = [True]
    parser = RequestParser(Limits(), auth_required=lambda: required[0])
    parser.feed(b"*11\r\n")
    with pytest.raises(ProtocolError, match="unauthenticated multibulk length"):
        parser.next()
    parser = RequestParser(Limits(), auth_required=lambda: required[0])
    parser.feed(b"*2\r\n$4\r\nECHO\r\n$16385\r\n")
    with pytest.raises(ProtocolError, match="unauthenticated bulk length"):
        parser.next()
    required[0] = False
    parser = RequestParser(Limits(), auth_required=lambda: required[0])
    parser.feed(b"*11\r\n")
    assert parser.next() is None


@pytest.mark.parametrize("raw, value", [
    (b"0", 0), (b"12", 12), (b"-3", -3), (b"9223372036854775807", 2**63 - 1), (b"-9223372036854775808", -(2**63)),
    (b"", None), (b"01", None), (b"-0", None), (b"+1", None), (b" 1", None), (b"1 ", None),
    (b"9223372036854775808", None), (b"-", None), (b"1a", None),
])
def test_string_to_ll(raw, value):
    assert string_to_ll(raw) == value


@pytest.mark.parametrize("line, argv", [
    (b"a b  c", [b"a", b"b", b"c"]),
    (b'"a\\"b"', [b'a"b']),
    (b"'a\\'b'", [b"a'b"]),
    (b'"unterminated', None),
    (b"'x'y", None),
    (b"\x0ba", [b"a"]),
    (b"a\x0bb", [b"a\x0bb"]),
    (b'x"y z"', [b"xy z"]),
    (b"", []),
])
def test_split_inline(line, argv):
    assert split_inline(line) == argv




@pytest.mark.real
@pytest.mark.parametrize("payload", [b"*11\r\n", b"*2\r\n$4\r\nECHO\r\n$16385\r\n", b"*2\r\n$4\r\nECHO\r\n$16384\r\n",
                                     b"AUTH pw\r\n*11\r\n"], ids=["args", "bulk", "bulk at the limit", "after AUTH"])
def test_unauthenticated_limits_as_the_real_server(real_redis, fake_port, payload):
    import redis

    real = real_redis()
    real_port = real.connection_pool.connection_kwargs["port"]
    fake = redis.Redis(port=fake_port)
    try:
        for client in (real, fake):
            client.config_set("requirepass", "pw")
        assert _exchange(fake_port, payload) == _exchange(real_port, payload)
    finally:
        for client in (real, fake):
            client.config_set("requirepass", "")
        fake.close()


_XADD_HEAD = b"$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n"


def _xadd_like(rnd) -> bytes:
    """A request near `XADD s * f v …`: other key, name case, count, a leading zero, a 100-byte bulk, a cut."""
    args = [rnd.choice([b"XADD"] * 6 + [b"xadd"]), rnd.choice([b"s"] * 6 + [b"t"]), rnd.choice([b"*"] * 6 + [b"1-1"])]
    args += [rnd.choice([b"f", b"", b"v" * 99, b"v" * 100, b"\r\n"]) for _ in range(rnd.choice([2, 2, 4, 6, 1, 8]))]
    data = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    if rnd.random() < 0.05:
        data = data.replace(b"$1\r\nf", b"$01\r\nf", 1)
    return data[:rnd.randrange(len(data))] if rnd.random() < 0.05 else data


@pytest.mark.parametrize("seed", range(6))
def test_a_run_scan_reads_what_next_reads(seed):
    """RequestParser.take_run (the TCP plain-XADD run) against next(): the same requests, taken while they repeat
    the head exactly and have an accepted count; the first other one (or a partial one) is left for next()."""
    import random

    rnd = random.Random(seed)
    counts = frozenset((5, 7, 9))
    for _ in range(40):
        data = b"".join(_xadd_like(rnd) for _ in range(rnd.choice([1, 3, 20])))
        expected = _run_chunks([data])
        parser = RequestParser(Limits())
        parser.feed(data)
        got: list = []
        while True:
            tails, starts = parser.take_run(_XADD_HEAD, 3, counts)
            assert len(tails) == len(starts)
            got += [[b"XADD", b"s", b"*", *tail] for tail in tails]
            try:
                argv = parser.next()
            except ProtocolError as exc:
                got = (got, exc.text)
                break
            if argv is None:
                got = (got, parser.buffered)
                break
            got.append(argv)
        assert got == expected
    parser = RequestParser(Limits())
    first, second = (b"*5\r\n" + _XADD_HEAD + b"$1\r\nf\r\n$1\r\n%d\r\n" % i for i in range(2))
    parser.feed(first + second + b"*1\r\n$4\r\nPING\r\n")
    tails, starts = parser.take_run(_XADD_HEAD, 3, counts)
    assert tails == [[b"f", b"0"], [b"f", b"1"]] and starts == [0, len(first)]
    parser.rewind(starts[1])  # a refused XADD: read again by next()
    assert parser.next() == [b"XADD", b"s", b"*", b"f", b"1"] and parser.next() == [b"PING"]
