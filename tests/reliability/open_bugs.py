"""Divergences found by this suite, reported, and not fixed yet: recognised so that runs stay green while
the report is open, and counted in the figures ("open bug …"). Each entry names its FINDINGS.md item.

Delete an entry once its fix lands: the suite then compares that case exactly again.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence


def _cstr_upper(raw: bytes) -> bytes:
    nul = raw.find(b"\x00")
    return (raw if nul < 0 else raw[:nul]).upper()


def _streams_keys(argv: Sequence[bytes]) -> Sequence[bytes]:
    upper = [_cstr_upper(a) for a in argv]
    if b"STREAMS" not in upper:
        return ()
    at = upper.index(b"STREAMS") + 1
    half = (len(argv) - at) // 2
    return argv[at:at + half]


def open_bug(argv: Sequence[bytes], real: Any, fake: Any, protocol: int) -> Optional[str]:
    """The FINDINGS.md id of an open bug explaining ``real`` vs ``fake`` for ``argv``, else None."""
    # F7: XREAD/XREADGROUP naming a key twice, RESP3: the servers send a map with the key twice (%3 for
    # `STREAMS s1 s3 s1`); the fake builds a Python dict (reply.keyed_reply), so it sends %2. redis-py's
    # hiredis parser then makes something else again of the servers' map (duplicate keys).
    if protocol == 3 and argv and _cstr_upper(argv[0]) in (b"XREAD", b"XREADGROUP") \
            and isinstance(real, dict) and isinstance(fake, dict):
        keys = list(_streams_keys(argv))
        if len(set(keys)) < len(keys):
            return "F7 RESP3 map with a repeated key"
    return None
