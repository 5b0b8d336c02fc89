"""A real server and a fresh fake side by side, for long random command sequences.

:class:`Duo` is the reliability layer's version of the conformance ``Pair`` (tests/conformance/pair.py):
same raw runner (its ``Side``: ``send_command`` + ``read_response(disable_decoding=True)``), same reply values
(:mod:`tests.conformance.replies`: errors become :class:`Err`, strict comparison, the ``ids`` / ``times``
normalisers), same clock rule (the fake's ManualClock is set to the real server's ``TIME`` before a command
reaches the fake). What it adds for the state machine and the fuzzer:

* one connection per protocol on each side (RESP2 and RESP3 mixed in one sequence, one keyspace); on
  redis-py 4.x, which has no RESP3, a sequence's RESP3 steps run as RESP2 on both sides (:func:`wire_protocol`),
  so a seeded sequence keeps its commands and the comparison stays exact;
* the tolerance for clock-made values is small (20 ms) plus the measured uncertainty: the longest time seen
  between sending a command to the real server and reading its ``TIME`` afterwards (a stalled process widens
  it instead of failing the comparison);
* no pytest.fail: :meth:`Duo.compare` returns the first difference and the caller decides;
* a transcript of every command sent, to print the minimal sequence of a failure.

Costs per command: one round trip to the real server, one ``TIME`` round trip when syncing, one in-memory
fake call.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from fake_streams import FakeStreamsConnection, FakeStreamsServer, ManualClock
from tests.conformance.oracles import Oracle, client_limitation, protocol_kwargs
from tests.conformance.pair import Side
from tests.conformance.replies import Err, IdAliases, encode_args, first_difference, translate

Normalizer = Callable[[Any, Any, Any], Any]

#: Base tolerance (ms) for clock-made values; the measured clock uncertainty is added (see Duo.tolerance_ms).
BASE_TOLERANCE_MS = int(os.environ.get("FAKE_STREAMS_DIFF_TOLERANCE_MS", "20"))
#: stream-node-max-* as a fresh server has them (restored on the real server after each sequence)
NODE_DEFAULTS = ((b"stream-node-max-entries", b"100"), (b"stream-node-max-bytes", b"4096"))


def argv_text(argv: Sequence[bytes]) -> str:
    """``XADD s 1-0 f v`` with non-printable bytes escaped and empty arguments shown as ``""``."""
    out = []
    for a in argv:
        text = a.decode("utf-8", "backslashreplace") if a else '""'
        if any(ch.isspace() or not ch.isprintable() for ch in text):
            text = repr(a)
        out.append(text)
    return " ".join(out)


def wire_protocol(protocol: int) -> int:
    """The protocol a step really speaks: ``protocol``, or 2 where redis-py cannot speak it (RESP3 on 4.x)."""
    return 2 if client_limitation(protocol) else protocol


class Duo:
    """A running real server (an :class:`Oracle`) and a new :class:`FakeStreamsServer` of ``profile``.

    The real keyspace is flushed at construction; the fake is new. ``alias`` maps a fake clock-made ID to
    the real one (filled by :func:`tests.conformance.replies.ids`), so arguments naming a fake ID reach the
    real server as the real ID and real replies are translated back.
    """

    def __init__(self, oracle: Oracle, profile: str, *, commands: Any = None,
                 tolerance_ms: int = BASE_TOLERANCE_MS) -> None:
        self.oracle = oracle
        self.profile_name = profile
        self.base_tolerance_ms = tolerance_ms
        #: the largest time between sending a command to the real server and reading its clock afterwards:
        #: how far apart the two sides' "now" can be (a stalled process makes it large)
        self.max_uncertainty_ms = 0
        oracle.reset()
        self.clock = ManualClock(oracle.time_ms())
        self.server = FakeStreamsServer(version=profile, clock=self.clock, commands=commands)
        self.profile = self.server.profile
        self.aliases = IdAliases()
        self.alias: Dict[bytes, bytes] = self.aliases.fake_to_real  # fake ID -> real ID
        self._unalias: Dict[bytes, bytes] = self.aliases.real_to_fake  # real ID -> fake ID
        self.transcript: List[str] = []
        self._real: Dict[int, Side] = {}
        self._fake: Dict[int, Side] = {}
        self.commands_sent = 0

    # -------------------------------------------------------------------------------- plumbing
    def _side(self, side: str, protocol: int) -> Side:
        """The raw runner (the conformance harness's :class:`~tests.conformance.pair.Side`) of ``side`` for
        ``protocol``, made on first use; the real one translates fake IDs in the arguments."""
        protocol = wire_protocol(protocol)
        pool = self._real if side == "real" else self._fake
        runner = pool.get(protocol)
        if runner is None:
            if side == "real":
                runner = Side("real", self.oracle.connect(protocol), args=self.aliases.to_real_args)
            else:
                conn = FakeStreamsConnection(server=self.server, **protocol_kwargs(protocol))
                conn.connect()
                runner = Side("fake", conn)
            pool[protocol] = runner
        return runner

    @property
    def tolerance_ms(self) -> int:
        """Allowed distance between clock-made values of the two sides (used by replies.ids / replies.times):
        the base tolerance plus the largest clock uncertainty seen so far in this sequence."""
        return self.base_tolerance_ms + self.max_uncertainty_ms

    def sync_clock(self) -> None:
        """The fake's ManualClock := the real server's ``TIME`` (ms)."""
        self.clock.set(self.oracle.time_ms())

    def add_alias(self, real_id: bytes, fake_id: bytes) -> bool:
        """Pair a real and a fake clock-made ID (a bijection); False if either is paired elsewhere."""
        return self.aliases.add(real_id, fake_id)

    # ---------------------------------------------------------------------------------- running
    def real(self, protocol: int, argv: Sequence[Any]) -> Any:
        """Run on the real server only (arguments translated); the reply in the fake's ID terms."""
        return translate(self._side("real", protocol)(*argv), self._unalias)

    def fake(self, protocol: int, argv: Sequence[Any], sync: bool = False) -> Any:
        """Run on the fake only (after syncing its clock if ``sync``)."""
        if sync:
            self.sync_clock()
        return self._side("fake", protocol)(*argv)

    def run(self, protocol: int, argv: Sequence[Any], sync: bool = True, log: bool = True,
            clock_hint: Optional[Callable[[Any], Optional[int]]] = None) -> Tuple[Any, Any]:
        """Real first, then the fake: ``(real, fake)``.

        The fake's clock is synced to the real server's ``TIME`` after the real command ran, or, when
        ``clock_hint(real_reply)`` gives a time (the ms of an ID the real server just generated), set to
        that time: then ``XADD *`` makes the same ID on both sides, and what depends on ID bytes (rax node
        counts, listpack deltas and so node boundaries) stays comparable.
        """
        if log:
            self.transcript.append(f"[RESP{wire_protocol(protocol)}] {argv_text(encode_args(argv))}")
        self.commands_sent += 1
        started = time.monotonic()
        real = self.real(protocol, argv)
        hint = clock_hint(real) if clock_hint is not None else None
        if hint is not None:
            self.clock.set(hint)
        elif sync:
            self.sync_clock()
        if hint is not None or sync:
            elapsed_ms = int((time.monotonic() - started) * 1000) + 1
            self.max_uncertainty_ms = max(self.max_uncertainty_ms, elapsed_ms)
        fake = self.fake(protocol, argv)
        return real, fake

    def compare(self, real: Any, fake: Any, normalize: Sequence[Normalizer] = ()) -> Optional[str]:
        """``None`` if equal after the normalisers (applied to the real reply in order), else the difference."""
        for fn in normalize:
            real = fn(real, fake, self)
        diff = first_difference(real, fake)
        if diff:
            return f"{diff}\n  real: {real!r}\n  fake: {fake!r}"
        return None

    def set_node_config(self, max_entries: int, max_bytes: int) -> None:
        for side in ("real", "fake"):
            for name, value in ((b"stream-node-max-entries", max_entries), (b"stream-node-max-bytes", max_bytes)):
                reply = self.real(2, [b"CONFIG", b"SET", name, value]) if side == "real" else \
                    self.fake(2, [b"CONFIG", b"SET", name, value])
                assert not isinstance(reply, Err), (side, name, reply)

    def close(self) -> None:
        for name, value in NODE_DEFAULTS:
            try:
                self.oracle.command(b"CONFIG", b"SET", name, value)
            except Exception:
                pass
        for pool in (self._real, self._fake):
            for runner in pool.values():
                runner.close()
            pool.clear()
        self.server.close()

    def fake_stream(self, key: bytes) -> Any:
        """The fake's stream object at ``key`` in db 0 (``None`` if missing or not a stream)."""
        from fake_streams.stream import Stream

        with self.server.backend.lock:
            item = self.server.backend.fake.dbs[0].get(key)
        value = None if item is None else item.value
        return value if isinstance(value, Stream) else None
