"""The raw test client's frame cutter (tests/tcp/conftest.py ``reply_length``): every RESP2/RESP3 reply shape the
servers send is cut at its exact end, and no proper prefix of a reply counts as a whole one."""

from __future__ import annotations

import pytest

from .conftest import reply_length

FRAMES = [
    b"+OK\r\n",
    b"-ERR unknown command 'x', with args beginning with: \r\n",
    b":-12\r\n",
    b"_\r\n",
    b",3.14\r\n",
    b"#t\r\n",
    b"(3492890328409238509324850943850943825024385\r\n",
    b"$-1\r\n",
    b"$0\r\n\r\n",
    b"$11\r\nhas\r\ninside\r\n",
    b"!21\r\nSYNTAX invalid syntax\r\n",
    b"=15\r\ntxt:Some string\r\n",
    b"*-1\r\n",
    b"*0\r\n",
    b"*2\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n$-1\r\n",
    b"%2\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n%1\r\n$1\r\nc\r\n~1\r\n_\r\n",
    b"~2\r\n+a\r\n+b\r\n",
    b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n",
    b"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*1\r\n:2\r\n",
]


@pytest.mark.parametrize("frame", FRAMES, ids=range(len(FRAMES)))
def test_a_reply_is_cut_at_its_end_and_no_prefix_is_a_reply(frame):
    assert reply_length(frame + b"+NEXT\r\n") == len(frame)
    assert [n for n in range(len(frame)) if reply_length(frame[:n])] == []
