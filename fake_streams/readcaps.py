"""XREAD / XREADGROUP ``MAXCOUNT`` / ``MAXSIZE`` (Redis 8.10; addendum streams-redis8.md §2.13; profile feature
``read_caps``): the budget one read spends across all its streams.

* ``MAXCOUNT n`` — at most ``n`` entries in the whole reply; the streams are served in argument order, each at
  most ``min(COUNT, what is left)`` (``COUNT 3 MAXCOUNT 4`` over two 3-entry streams: 3 + 1).
* ``MAXSIZE b`` — the reply, in the client's protocol (RESP2 or RESP3) and with every header counted, stays
  within ``b`` bytes: before each entry the size of the reply *with* it is computed; an entry that would pass
  ``b`` is not taken (nor delivered, claimed or counted as a redelivery), and nothing after it is — except that
  the first entry of the reply is always taken (``MAXSIZE 1`` still answers one entry).

Once the budget is spent the later streams serve nothing and are left out of the reply (consumers are still
looked up and created as without the caps). Choices where the sources are silent: docs/redis8-choices.md
("MAXCOUNT / MAXSIZE"). :class:`ReadBudget` is O(1) per entry besides :func:`reply_size` (O(bytes of it)).
"""

from __future__ import annotations

from typing import Any, Optional


def _digits(n: int) -> int:
    return len(b"%d" % n)


def reply_size(value: Any, resp3: bool) -> int:
    """Bytes of ``value`` (an entry reply: bulks, arrays, integers, ``None``) as XREAD's reply writes it; a
    ``None`` is a deleted history entry's nil-array (``*-1`` / ``_``). O(elements)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        n = len(value)
        return 5 + _digits(n) + n  # $<n>\r\n<bytes>\r\n
    if isinstance(value, list):
        return 3 + _digits(len(value)) + sum(reply_size(item, resp3) for item in value)
    if isinstance(value, int):
        return 3 + _digits(value)
    if value is None:
        return 3 if resp3 else 5
    raise TypeError(f"no entry reply part: {type(value).__name__}")


class ReadBudget:
    """What is left of one read's MAXCOUNT / MAXSIZE. Call :meth:`open` per served stream, :meth:`take` per
    candidate entry (in reply order), :meth:`close` after the stream; ``spent`` once nothing more may go in."""

    __slots__ = ("left", "maxsize", "resp3", "streams", "bytes_closed", "entries", "key_bytes", "in_stream",
                 "stream_bytes", "full")

    def __init__(self, maxcount: Optional[int], maxsize: Optional[int], protocol: int) -> None:
        self.left = maxcount  # entries still allowed; None = no MAXCOUNT
        self.maxsize = maxsize
        self.resp3 = protocol == 3
        self.streams = 0  # streams closed into the reply
        self.bytes_closed = 0  # their headers and entries
        self.entries = 0  # entries taken in the whole reply
        self.key_bytes = 0  # the open stream's key (bulk) and RESP2 pair header
        self.in_stream = 0  # entries of the open stream
        self.stream_bytes = 0  # their bytes
        self.full = False  # an entry did not fit MAXSIZE

    @property
    def spent(self) -> bool:
        return self.full or self.left == 0

    def limit(self, count: int) -> int:
        """The most entries the next stream may serve, for a per-stream COUNT ``count`` (0 = no limit). O(1)."""
        if self.left is None:
            return count
        return min(count, self.left) if count else self.left

    def open(self, key: bytes) -> None:
        self.key_bytes = reply_size(key, self.resp3) + (0 if self.resp3 else 4)  # RESP2: *2\r\n key entries
        self.in_stream = 0
        self.stream_bytes = 0

    def _size_with(self, entry_bytes: int) -> int:
        m = self.in_stream + 1
        return (3 + _digits(self.streams + 1) + self.bytes_closed + self.key_bytes + 3 + _digits(m)
                + self.stream_bytes + entry_bytes)

    def take(self, entry: Any) -> bool:
        """Whether ``entry`` goes into the reply (then it is counted); False once the budget is spent. O(entry)."""
        if self.spent:
            return False
        if self.maxsize is not None:
            size = reply_size(entry, self.resp3)
            if self.entries and self._size_with(size) > self.maxsize:
                self.full = True
                return False
            self.stream_bytes += size
        self.in_stream += 1
        self.entries += 1
        if self.left is not None:
            self.left -= 1
        return True

    def close(self) -> None:
        """The open stream is in the reply (with the entries taken; a history read's may be none)."""
        self.streams += 1
        self.bytes_closed += self.key_bytes + 3 + _digits(self.in_stream) + self.stream_bytes
