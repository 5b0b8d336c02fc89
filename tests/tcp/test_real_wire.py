"""Raw bytes on the wire: the served fake (profile 7.0) against redis-server 7.0.15, command by command.

Both sides get the same commands on plain sockets; each reply's bytes must be equal (HELLO's client
``id`` aside). Explicit IDs keep the replies free of time.
"""

from __future__ import annotations

import re

import pytest

from fake_streams import FakeStreamsServer, ManualClock
from fake_streams.tcp import serve

pytestmark = pytest.mark.real

SCRIPT = [
    "XADD s 1-1 a b",
    "XADD s 2-0 a b c d",
    "XADD s 1-0 a b",                     # error
    "XADD nope NOMKSTREAM * a b",         # nil-bulk
    "XRANGE s - +",
    "XRANGE s - + COUNT 0",               # nil-array
    "XREVRANGE s + - COUNT 1",
    "XREAD STREAMS s 9-0",                # nil-array
    "XREAD COUNT 1 STREAMS s 0",
    "XLEN s",
    "XGROUP CREATE s g 0",
    "XGROUP CREATE s g 0",                # BUSYGROUP
    "XREADGROUP GROUP g c COUNT 1 STREAMS s >",
    "XDEL s 1-1",
    "XREADGROUP GROUP g c STREAMS s 0",   # deleted history entry: [id, nil-array]
    "XGROUP CREATE s g2 $",
    "XPENDING s g2",                      # empty summary: nil, nil, nil-array
    "XINFO STREAM s",
    "XINFO GROUPS s",
    "XINFO HELP",                         # status lines
    "XCLAIM s g c3 0 1-1 JUSTID",
    "XSETID s 5-0",
    "MULTI",
    "XREAD STREAMS s 9-0",
    "XLEN s",
    "EXEC",                               # [nil-array, int]
    "XFOO bar",
    "XGROUP FOO",
    "XADD s",
    "TYPE s",
    "GET s",                              # WRONGTYPE
    "XADD t 1-0 h w",
    "XREAD STREAMS s t s 0 0 0",          # a key named twice: two pairs for it (RESP2 and, below, RESP3)
    "XREADGROUP GROUP g c STREAMS s s 0 0",
    "HELLO 3",
    "XREAD STREAMS s t s 0 0 0",          # %3: the map repeats the key (F7)
    "XREAD STREAMS s t s 0 0 5-0",        # the repeated key's pairs differ
    "XREADGROUP GROUP g c STREAMS s s 0 0",
    "XREADGROUP GROUP g c STREAMS t t > 0",  # one served stream per pair: `>` then history
    "MULTI",
    "XREAD STREAMS s s 0 0",
    "EXEC",                               # repeated-key map inside EXEC
    "XINFO STREAM s",
    "XINFO GROUPS s",
    "XREAD STREAMS s 9-0",
    "XREADGROUP GROUP g c STREAMS s 0",
    "XPENDING s g2",
    "XRANGE s - + COUNT 0",
    "XADD nope NOMKSTREAM * a b",
    "XINFO HELP",
    "XADD s 1-0 a b",
    "HELLO 2",
]


def _mask_client_id(reply: bytes) -> bytes:
    return re.sub(rb"\$2\r\nid\r\n:\d+\r\n", b"$2\r\nid\r\n:N\r\n", reply)


def test_raw_bytes_equal_a_real_server(real_redis, raw):
    real = real_redis()
    real.flushall()
    real_port = real.connection_pool.connection_kwargs["port"]
    fake = FakeStreamsServer(version="7.0", clock=ManualClock(1_700_000_000_000))
    handle = serve(fake)
    try:
        ours, theirs = raw(handle.port), raw(real_port)
        diffs = []
        for line in SCRIPT:
            args = line.split()
            a, b = _mask_client_id(ours.call(*args)), _mask_client_id(theirs.call(*args))
            if a != b:
                diffs.append(f"{line}\n  fake: {a!r}\n  real: {b!r}")
        assert not diffs, "\n".join(diffs)
    finally:
        handle.close()
        fake.close()
    assert not fake.internal_errors
