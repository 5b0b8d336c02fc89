"""The request parser of the TCP server: inline and multibulk requests, as the server reads them.

:class:`RequestParser` turns the bytes a client sends into argument vectors, one request at a time
(:meth:`RequestParser.next`), with the server's rules (networking.c's ``processInlineBuffer`` /
``processMultibulkBuffer``, read and re-written here):

* a request starting with ``*`` is a multibulk: ``*<count>\\r\\n`` then ``count`` times
  ``$<len>\\r\\n<len bytes>\\r\\n``. A count ≤ 0 is an empty request (skipped). The line ends at the first
  ``\\r`` and the byte after it is skipped unseen; the two bytes after a bulk are skipped unseen too.
* anything else is an inline request: one line up to ``\\n`` (a ``\\r`` before it dropped), split like
  ``sdssplitargs`` (blanks, ``"…"`` with ``\\n \\r \\t \\b \\a \\xHH`` escapes, ``'…'`` with ``\\'``, a
  closing quote followed by a non-blank is an error). An empty line is skipped.
* the server looks for a line's end with ``strchr``: a NUL before it hides it (the request waits for
  more input, up to the 64 KiB limit).
* errors raise :class:`ProtocolError` with the server's text; the server answers
  ``-ERR Protocol error: <text>`` and closes the connection after writing what came before.

Limits (:class:`Limits`, read from CONFIG by the server): ``proto-max-bulk-len`` (a longer bulk is an
invalid bulk length), 64 KiB for an inline line or a count line still without its end, and, while
``requirepass`` is set and the client has not authenticated, 10 arguments / 16384-byte bulks.
``client-query-buffer-limit`` is the connection's business (:attr:`RequestParser.buffered`).

Cost: linear in the bytes received. A partial request keeps its parsed arguments and its position;
a bulk still missing bytes collects the chunks that arrive in a list and joins them once it is
complete (no copy of the buffer per chunk), so a 64 MiB argument costs two copies of it. A complete request
of the common shape (``*N`` with N ≤ 9, bulks up to 99 bytes, lengths spelled canonically) is read with one
slice and one dict look-up per header line; every other request by the general rules above. A pipeline of one
command (:meth:`RequestParser.take_run`: the requests repeating a given beginning byte for byte, as the TCP path
of plain XADDs asks) is read in one scan: per request one ``startswith`` and one slice per remaining argument.
"""

from __future__ import annotations

from typing import Callable, FrozenSet, List, Optional, Tuple

__all__ = ["INLINE_MAX_SIZE", "Limits", "ProtocolError", "RequestParser"]

#: PROTO_INLINE_MAX_SIZE: the longest inline request, and the longest count line without its ``\\r``
INLINE_MAX_SIZE = 64 * 1024
_INT_MAX = 2**31 - 1
_LL_MIN, _LL_MAX = -(2**63), 2**63 - 1
#: arguments / bulk length an unauthenticated client may send while a password is required
_UNAUTH_MAX_ARGS = 10
_UNAUTH_MAX_BULK = 16384


#: ``*N\r\n`` → N for N in 1..9 and ``$L\r\n`` → L for L in 0..99, in the one spelling the fast path of
#: :meth:`RequestParser.next` reads (``$5\r\n``; ``$05``/``$5\rX`` take the general path)
_COUNT_LINES = {b"*%d\r\n" % n: n for n in range(1, 10)}
_BULK_LINES = {b"$%d\r\n" % n: n for n in range(100)}


class ProtocolError(Exception):
    """A malformed request: ``text`` is what follows ``Protocol error: `` in the reply."""

    def __init__(self, text: bytes) -> None:
        super().__init__(text)
        self.text = text


class Limits:
    """The parser's limits, shared by the server's connections; it refreshes them from CONFIG
    (``proto-max-bulk-len``)."""

    __slots__ = ("max_bulk_len", "inline_max")

    def __init__(self, max_bulk_len: int = 512 * 1024 * 1024, inline_max: int = INLINE_MAX_SIZE) -> None:
        self.max_bulk_len = max_bulk_len
        self.inline_max = inline_max


def string_to_ll(raw: bytes) -> Optional[int]:
    """``string2ll``: a decimal int64 with no sign but ``-``, no leading zeros, no blanks; else None."""
    if raw.isdigit():
        if raw[0] == 48 and len(raw) > 1:
            return None
        value = int(raw)
        return value if value <= _LL_MAX else None
    if len(raw) > 1 and raw[0] == 45 and raw[1:].isdigit() and raw[1] != 48:
        value = -int(raw[1:])
        return value if value >= _LL_MIN else None
    return None


_ESCAPES = {ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t", ord("b"): b"\b", ord("a"): b"\a"}
_HEX = frozenset(b"0123456789abcdefABCDEF")
_BLANKS = frozenset(b" \n\r\t\x0b\x0c")  # isspace() in the C locale
_TOKEN_ENDS = frozenset(b" \n\r\t")  # what ends an unquoted token (a NUL ends the line before)


def split_inline(line: bytes) -> Optional[List[bytes]]:
    """``sdssplitargs`` of one inline line; None for unbalanced quotes. O(len(line))."""
    if b'"' not in line and b"'" not in line and b"\x0b" not in line and b"\x0c" not in line:
        return line.split()
    args: List[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in _BLANKS:
            i += 1
        if i >= n:
            return args
        current = bytearray()
        in_double = in_single = False
        while True:
            c = line[i] if i < n else 0
            if in_double:
                if c == 92 and i + 3 < n and line[i + 1] == 120 and line[i + 2] in _HEX and line[i + 3] in _HEX:
                    current.append(int(line[i + 2:i + 4], 16))
                    i += 3
                elif c == 92 and i + 1 < n:
                    i += 1
                    current += _ESCAPES.get(line[i], line[i:i + 1])
                elif c == 34:
                    if i + 1 < n and line[i + 1] not in _BLANKS:
                        return None
                    i += 1
                    break
                elif i >= n:
                    return None
                else:
                    current.append(c)
            elif in_single:
                if c == 92 and i + 1 < n and line[i + 1] == 39:
                    i += 1
                    current.append(39)
                elif c == 39:
                    if i + 1 < n and line[i + 1] not in _BLANKS:
                        return None
                    i += 1
                    break
                elif i >= n:
                    return None
                else:
                    current.append(c)
            else:
                if i >= n or c in _TOKEN_ENDS:
                    i += 1
                    break
                if c == 34:
                    in_double = True
                elif c == 39:
                    in_single = True
                else:
                    current.append(c)
            i += 1
        args.append(bytes(current))


def _line_end(buf: bytes, char: bytes, pos: int) -> int:
    """``strchr(buf + pos, char)``: the index of ``char``, -1 if absent or after a NUL. O(line)."""
    end = buf.find(char, pos)
    if end < 0 or buf.find(b"\0", pos, end) >= 0:
        return -1
    return end


def _short_bulks(buf: bytes, at: int, count: int, out: List[bytes]) -> int:
    """Read ``count`` bulks of the common shape (``$L\\r\\n`` with L in 0..99 spelled canonically, all bytes present)
    from ``buf[at:]`` into ``out``; the position after them, or -1 (another shape, or incomplete: ``out`` then holds
    the bulks read before). One slice and one dict look-up per bulk; the two bytes after a bulk are skipped unseen,
    as the server skips them."""
    size = len(buf)
    append = out.append
    for _ in range(count):
        length = _BULK_LINES.get(buf[at:at + 4])
        if length is None:
            length = _BULK_LINES.get(buf[at:at + 5])
            if length is None:
                return -1
            at += 5
        else:
            at += 4
        end = at + length
        if end + 2 > size:
            return -1
        append(buf[at:end])
        at = end + 2
    return at


class RequestParser:
    """One connection's request parser. :meth:`feed` the received bytes, then call :meth:`next` until it
    answers None (no complete request yet); ``[]`` is an empty request, to be skipped. ``auth_required()``
    says whether the connection must still authenticate (the smaller limits apply)."""

    __slots__ = ("limits", "auth_required", "_buf", "_pos", "_argv", "_left", "_bulklen", "_chunks", "_chunked", "_need", "_error")

    def __init__(self, limits: Limits, auth_required: Optional[Callable[[], bool]] = None) -> None:
        self.limits = limits
        self.auth_required = auth_required
        self._buf = b""  # received, not yet consumed from _pos on
        self._pos = 0
        self._argv: Optional[List[bytes]] = None  # the arguments of a multibulk request being read
        self._left = 0  # its arguments still to read
        self._bulklen = -1  # the length of the bulk being read (-1: its $ line comes next)
        self._chunks: List[bytes] = []  # bytes received while a bulk waits for _need more
        self._chunked = 0
        self._need = 0
        self._error: Optional[ProtocolError] = None  # raised again by every later call

    def mark(self) -> Optional[int]:
        """Where the next request starts, if between requests (for :meth:`rewind`), else None."""
        return self._pos if self._argv is None and not self._need and self._error is None else None

    def rewind(self, mark: int) -> None:
        """Un-read the complete request :meth:`next` returned since :meth:`mark` gave ``mark``."""
        self._pos = mark

    def take_run(self, head: bytes, skip: int, counts: FrozenSet[int]) -> Tuple[List[List[bytes]], List[int]]:
        """The requests coming next that repeat a known beginning, read in one scan (a pipeline of one command):
        ``(tails, starts)`` — per request its arguments after the first ``skip`` (a fresh list) and the position it
        starts at (for :meth:`rewind`), in order. A request is taken while it is whole and of the common shape
        (``*N`` with N in ``counts``, all ≤ 9, and bulks of at most 99 bytes spelled canonically, as :meth:`next`'s
        fast path reads them) and its bytes after the count line are ``head`` exactly (its first ``skip`` bulks,
        e.g. ``$4\\r\\nXADD\\r\\n$1\\r\\ns\\r\\n$1\\r\\n*\\r\\n``); the first other one (or a partial one, or any
        state but between requests) ends the run, nothing of it consumed. O(bytes taken): per request one
        ``startswith`` and one slice and dict look-up per bulk after ``head``."""
        tails: List[List[bytes]] = []
        starts: List[int] = []
        buf, at = self._buf, self._pos
        count = _COUNT_LINES.get(buf[at:at + 4])
        if (count not in counts or not buf.startswith(head, at + 4) or self._argv is not None or self._need
                or self._error is not None or self.limits.max_bulk_len < max(99, len(head))):
            return tails, starts  # (the first request checked before any set-up: most calls that take none end here)
        size, shift = len(buf), 4 + len(head)
        get, bulk = _COUNT_LINES.get, _BULK_LINES.get
        startswith, add_tail, add_start = buf.startswith, tails.append, starts.append
        while True:  # (_short_bulks inlined: this loop runs per request of a pipeline)
            pos = at + shift
            tail: List[bytes] = []
            for _ in range(count - skip):
                length = bulk(buf[pos:pos + 4])
                if length is None:
                    length = bulk(buf[pos:pos + 5])
                    if length is None:
                        break
                    pos += 5
                else:
                    pos += 4
                end = pos + length
                if end + 2 > size:
                    break
                tail.append(buf[pos:end])
                pos = end + 2
            else:
                add_tail(tail)
                add_start(at)
                at = pos
                if at < size:
                    count = get(buf[at:at + 4])
                    if count in counts and startswith(head, at + 4):
                        continue
            break
        self._pos = at
        return tails, starts

    @property
    def has_input(self) -> bool:
        """Received bytes are waiting to be parsed."""
        return self._pos < len(self._buf)

    @property
    def awaiting_bulk(self) -> bool:
        """A bulk's length is known and its bytes are still arriving (read in larger chunks)."""
        return self._need > 0

    @property
    def buffered(self) -> int:
        """Bytes received and not yet consumed (the query buffer's length)."""
        return len(self._buf) - self._pos + self._chunked

    def feed(self, data: bytes) -> int:
        """Add received bytes; returns :attr:`buffered` after them. O(len(data)) (amortised: a waiting bulk joins
        its chunks once)."""
        if self._need:
            self._chunks.append(data)
            self._chunked += len(data)
            if self._chunked < self._need:
                return len(self._buf) - self._pos + self._chunked
            self._buf = b"".join([self._buf[self._pos:], *self._chunks])
            self._chunks, self._chunked, self._need, self._pos = [], 0, 0, 0
        elif self._pos >= len(self._buf):
            self._buf, self._pos = data, 0
        else:
            self._buf = self._buf[self._pos:] + data  # the rest of a short line or header: bounded by the limits
            self._pos = 0
        return len(self._buf)

    def next(self) -> Optional[List[bytes]]:
        """The next complete request's arguments, ``[]`` for an empty one, None if incomplete.
        Raises :class:`ProtocolError`. O(size of the request); the common case (decimal lengths, the whole
        request received) is one ``find`` per line and one slice per argument."""
        buf, pos = self._buf, self._pos
        if self._argv is None and self._error is None and not self._need:
            # the common shape, whole: '*N\r\n' (N in 1..9) and bulks '$L\r\n' (L in 0..99) written exactly so; one
            # slice + dict look-up per header; within every limit (10 arguments, 16 KiB bulks, proto-max-bulk-len
            # >= 1 MB); anything else (or a request not all here) is read below, from the same position
            count = _COUNT_LINES.get(buf[pos:pos + 4])
            if count is not None:
                argv: List[bytes] = []
                at = _short_bulks(buf, pos + 4, count, argv)
                if at >= 0 and self.limits.max_bulk_len >= 99:
                    self._pos = at
                    return argv
            elif pos >= len(buf):
                return None
        elif self._need:
            return None
        if self._error is not None:
            raise self._error
        try:
            return self._next()
        except ProtocolError as exc:
            self._error = exc
            raise

    def _next(self) -> Optional[List[bytes]]:
        buf, pos = self._buf, self._pos
        size = len(buf)
        argv = self._argv
        if argv is None:
            if pos >= size:
                return None
            if buf[pos] != 42:  # not '*': inline
                return self._inline(buf, pos)
            end = buf.find(b"\r", pos)
            if end < 0 or end + 2 > size:
                return self._incomplete_line(buf, pos, end, b"too big mbulk count string")
            raw = buf[pos + 1:end]
            if raw.isdigit() and (raw[0] != 48 or len(raw) == 1) and len(raw) < 10:
                count = int(raw)
            else:
                if b"\0" in raw:  # strchr stops at the NUL: no line end yet
                    return self._incomplete_line(buf, pos, -1, b"too big mbulk count string")
                value = string_to_ll(raw)
                if value is None or value > _INT_MAX:
                    raise ProtocolError(b"invalid multibulk length")
                count = value
            if count > _UNAUTH_MAX_ARGS and self._unauthenticated():
                raise ProtocolError(b"unauthenticated multibulk length")
            pos = end + 2
            if count <= 0:
                self._pos = pos
                return []
            argv, left, bulklen = [], count, -1
            self._argv = argv
        else:
            left, bulklen = self._left, self._bulklen
        append = argv.append
        max_bulk = self.limits.max_bulk_len
        while left:
            if bulklen < 0:
                end = buf.find(b"\r", pos)
                if end < 0 or end + 2 > size:
                    self._pos, self._left, self._bulklen = pos, left, -1
                    return self._incomplete_line(buf, pos, end, b"too big bulk count string", partial=True)
                if buf[pos] != 36:  # '$'
                    if b"\0" in buf[pos:end]:
                        self._pos, self._left, self._bulklen = pos, left, -1
                        return self._incomplete_line(buf, pos, -1, b"too big bulk count string", partial=True)
                    raise ProtocolError(b"expected '$', got '%s'" % buf[pos:pos + 1])
                raw = buf[pos + 1:end]
                if raw.isdigit() and (raw[0] != 48 or len(raw) == 1) and len(raw) < 19:
                    bulklen = int(raw)
                else:
                    if b"\0" in raw:
                        self._pos, self._left, self._bulklen = pos, left, -1
                        return self._incomplete_line(buf, pos, -1, b"too big bulk count string", partial=True)
                    value = string_to_ll(raw)
                    if value is None or value < 0:
                        raise ProtocolError(b"invalid bulk length")
                    bulklen = value
                if bulklen > max_bulk:
                    raise ProtocolError(b"invalid bulk length")
                if bulklen > _UNAUTH_MAX_BULK and self._unauthenticated():
                    raise ProtocolError(b"unauthenticated bulk length")
                pos = end + 2
            if size - pos < bulklen + 2:
                self._need = bulklen + 2 - (size - pos)
                self._pos, self._left, self._bulklen = pos, left, bulklen
                return None
            append(buf[pos:pos + bulklen])
            pos += bulklen + 2
            bulklen = -1
            left -= 1
        self._pos, self._left, self._bulklen = pos, 0, -1
        self._argv = None
        return argv

    def _incomplete_line(self, buf: bytes, pos: int, end: int, too_big: bytes,
                         partial: bool = False) -> Optional[List[bytes]]:
        """A count line without its end (``end`` < 0: none seen) or its ``\\n``: wait (None: no request yet), or the
        limit's error."""
        if end < 0 and len(buf) - pos > self.limits.inline_max:
            raise ProtocolError(too_big)
        if not partial:
            self._pos = pos
        return None

    def _inline(self, buf: bytes, pos: int) -> Optional[List[bytes]]:
        newline = _line_end(buf, b"\n", pos)
        if newline < 0:
            if len(buf) - pos > self.limits.inline_max:
                raise ProtocolError(b"too big inline request")
            return None
        end = newline - 1 if newline > pos and buf[newline - 1] == 13 else newline
        argv = split_inline(buf[pos:end])
        if argv is None:
            raise ProtocolError(b"unbalanced quotes in request")
        self._pos = newline + 1
        return argv

    def _unauthenticated(self) -> bool:
        check = self.auth_required
        return check is not None and check()
