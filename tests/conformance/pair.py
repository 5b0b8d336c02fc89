"""The ``pair`` object: one fake and one real server, the same raw commands, compared reply by reply.

A scenario reads like a transcript::

    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same_error("XADD_ID_TOO_SMALL", "XADD", "s", "1-1", "f", "v")
    new = pair.same("XADD", "s", "*", "f", "v", normalize=ids)

Each side is a raw connection (``send_command`` + ``read_response(disable_decoding=True)``, no response
callbacks): ``redis.Connection`` for the real server, ``fake_streams.FakeStreamsConnection`` for the fake.
The fake's ManualClock is set to the real server's ``TIME`` before each command sent to the fake, so
clock-made values (auto IDs, idle and seen times) differ by loopback latency only; :mod:`.replies` has the
normalisers that absorb that difference where it is by nature.

In self-check mode (``--oracle-self-check``) there is no fake side: ``same`` only runs the real server,
and ``same_error`` still checks the real error text against the profile's table.
"""

from __future__ import annotations

import contextlib
import os
import pprint
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

from fake_streams.errors import ReplyError
from fake_streams.profiles import Profile

from .oracles import STATS, Oracle, Target, parse_info, protocol_kwargs
from .replies import (
    Err,
    IdAliases,
    Normalizer,
    capture,
    encode_args,
    expected_err,
    first_difference,
    normalizers,
    shape,
    translate,
)

#: Allowed distance between a clock-made value on the two sides (ms); see replies.ids / replies.times.
TOLERANCE_MS = int(os.environ.get("FAKE_STREAMS_TIME_TOLERANCE_MS", "250"))
#: Real-time bounds for wait_blocked() and for reading a reply sent with send() (safety nets, not sleeps).
WAIT_BLOCKED_S = 5.0
READ_TIMEOUT_S = 5.0


class PerSide:
    """An argument that differs by side (e.g. a CLIENT ID): ``pair.per_side(real=..., fake=...)``."""

    def __init__(self, real: Any, fake: Any) -> None:
        self.real = real
        self.fake = fake

    def __repr__(self) -> str:
        return f"<real {self.real!r} | fake {self.fake!r}>"


def _fmt(reply: Any) -> str:
    return pprint.pformat(reply, width=110, sort_dicts=False).replace("\n", "\n        ")


def _argv_text(argv: List[bytes]) -> str:
    return " ".join(a.decode("utf-8", "backslashreplace") if a else '""' for a in argv)


class Side:
    """One raw connection; calling it runs a command and returns its raw reply (errors as :class:`Err`)."""

    def __init__(self, name: str, conn: Any, before: Optional[Callable[[], None]] = None,
                 args: Optional[Callable[[List[bytes]], List[bytes]]] = None) -> None:
        self.name = name
        self.conn = conn
        self._before = before
        self._args = args

    def send(self, *argv: Any) -> None:
        args = encode_args(getattr(a, self.name) if isinstance(a, PerSide) else a for a in argv)
        if self._args:
            args = self._args(args)
        if self._before:
            self._before()
        self.conn.send_command(*args)

    def read(self) -> Any:
        return capture(lambda: self.conn.read_response(disable_decoding=True))

    def __call__(self, *argv: Any) -> Any:
        self.send(*argv)
        return self.read()

    def close(self) -> None:
        try:
            self.conn.disconnect()
        except Exception:
            pass


@dataclass
class _KnownDifference:
    reason: str
    expected: Any
    reproduced: int = 0


class Pair:
    """Runs raw commands on a real server and on the fake and compares the replies (RESP2 or RESP3).

    Public surface: ``same``, ``same_error``, ``loosely``, ``known_difference``, ``real`` / ``fake`` (one
    side), ``send`` / ``read`` (split a command, for blocking), ``connect`` (another client pair),
    ``wait_blocked``, ``require``, and the attributes ``profile``, ``protocol``, ``oracle``, ``clock``,
    ``server`` (the FakeStreamsServer), ``tolerance_ms`` and ``alias`` (fake ID -> real ID).
    """

    def __init__(self, target: Target, oracle: Oracle, profile: Profile, fake_server: Any, clock: Any,
                 fake_connection_class: Any, shared: Optional[Pair] = None) -> None:
        self.target = target
        self.oracle = oracle
        self.profile = profile
        self.protocol = target.protocol
        self.server = fake_server
        self.clock = clock
        self.tolerance_ms = TOLERANCE_MS
        self.self_check = fake_server is None
        self._fake_connection_class = fake_connection_class
        # aliases and known differences are shared by every client pair of one test
        self.aliases: IdAliases = shared.aliases if shared else IdAliases()
        self.alias: Dict[bytes, bytes] = self.aliases.fake_to_real
        self._unalias: Dict[bytes, bytes] = self.aliases.real_to_fake
        self._known: List[_KnownDifference] = shared._known if shared else []
        self._children: List[Pair] = []
        self._root: Pair = shared._root if shared else self
        self._fake_control: Optional[Side] = None
        self.real = Side("real", oracle.connect(self.protocol), args=self.aliases.to_real_args)
        self.fake: Optional[Side] = None
        if fake_server is not None:
            conn = fake_connection_class(server=fake_server, **protocol_kwargs(self.protocol))
            self.fake = Side("fake", conn, before=self.sync_clock)

    # -- setup / teardown ---------------------------------------------------------------------

    def connect(self) -> Pair:
        """Another client on each side (same servers, same aliases): for blocking scenarios."""
        child = Pair(self.target, self.oracle, self.profile, self.server, self.clock,
                     self._fake_connection_class, shared=self)
        self._children.append(child)
        return child

    def close(self) -> None:
        for child in self._children:
            child.close()
        if self._fake_control is not None:
            self._fake_control.close()
        self.real.close()
        if self.fake is not None:
            self.fake.close()

    def sync_clock(self) -> None:
        """Set the fake's ManualClock to the real server's clock (``TIME``), keeping the two in step."""
        if self.clock is not None:
            self.clock.set(self.oracle.time_ms())

    @property
    def stands_in(self) -> bool:
        """The oracle stands in for this profile (Valkey 9.1.2 for "7.4" / "valkey-8.0"): declared differences
        apply. False where the profile emulates the oracle exactly."""
        return not self.target.exact

    def require(self, feature: str, reason: str = "") -> None:
        """Skip this parameter unless the profile has ``feature`` (see fake_streams.profiles.FEATURES)."""
        if not self.profile.has(feature):
            pytest.skip(reason or f"profile {self.profile.name} lacks {feature}")

    # -- ID aliases (replies.ids) ---------------------------------------------------------------

    def add_alias(self, real_id: bytes, fake_id: bytes) -> bool:
        """Record that ``real_id`` (real server) and ``fake_id`` (fake) name the same entry; False if either
        is already paired with another ID."""
        return self.aliases.add(real_id, fake_id)

    # -- comparisons ----------------------------------------------------------------------------

    def _count(self, kind: str) -> None:
        t = self.target
        STATS[(t.label, t.profile or "-", t.protocol, "self_check" if self.self_check else kind)] += 1

    def per_side(self, real: Any, fake: Any) -> PerSide:
        """An argument sent as ``real`` to the real server and as ``fake`` to the fake."""
        return PerSide(real, fake)

    def _where(self, argv: tuple) -> str:
        return (f"{' '.join(repr(a) if isinstance(a, PerSide) else _argv_text(encode_args([a])) for a in argv)}\n    oracle {self.oracle.label} ({self.oracle.binary}), "
                f"fake profile {self.profile.name}, RESP{self.protocol}")

    def _run_both(self, argv: tuple) -> tuple[Any, Any]:
        """Real first (so the fake's clock is synced after the real command ran), then the fake."""
        real = translate(self.real(*argv), self._unalias)
        fake = self.fake(*argv) if self.fake is not None else None
        return real, fake

    def _normalize(self, real: Any, fake: Any, normalize: Any) -> Any:
        if self.fake is not None:
            for fn in normalizers(normalize):
                real = fn(real, fake, self)
        return real

    def same(self, *argv: Any, normalize: Normalizer | List[Normalizer] | None = None) -> Any:
        """Run ``argv`` on both; the raw replies must be equal. Returns the reply (the fake's)."""
        real, fake = self._run_both(argv)
        return self._compare(argv, real, fake, "same", normalize)

    def _compare(self, argv: tuple, real: Any, fake: Any, kind: str, normalize: Any) -> Any:
        __tracebackhide__ = True
        if self._known:
            return self._compare_known(argv, real, fake, normalize)
        real = self._normalize(real, fake, normalize)
        self._count(kind)
        if self.fake is None:
            return real
        diff = first_difference(real, fake)
        if diff:
            pytest.fail(f"replies differ for {self._where(argv)}\n  real: {_fmt(real)}\n  fake: {_fmt(fake)}\n"
                        f"  {diff}", pytrace=False)
        return fake

    def same_error(self, key: str, /, *argv: Any, **params: Any) -> Err:
        """Run ``argv`` on both; each must reply with the error ``key`` of ``profile.errors``, formatted with
        ``params`` (compared as redis-py delivers it: same class, stripped code and remaining text)."""
        __tracebackhide__ = True
        real, fake = self._run_both(argv)
        return self._check_error(key, params, argv, real, fake)

    def error(self, key: str, /, **params: Any) -> Err:
        """The error value ``key`` of this profile as the harness sees it (e.g. a known_difference's spec'd value)."""
        return expected_err(ReplyError(key, **params).render(self.profile.errors))

    def _check_error(self, key: str, params: Dict[str, Any], argv: tuple, real: Any, fake: Any) -> Err:
        __tracebackhide__ = True
        if self._known:
            raise TypeError("same_error inside known_difference: use pair.same with expected=pair.error(key)")
        want = self.error(key, **params)
        self._count("same_error")
        problems = []
        if real != want:
            problems.append(f"  real: {_fmt(real)}")
        if self.fake is not None and fake != want:
            problems.append(f"  fake: {_fmt(fake)}")
        if problems:
            pytest.fail(f"expected error {key} = {want.full!r} for {self._where(argv)}\n" + "\n".join(problems),
                        pytrace=False)
        return want

    def loosely(self, *argv: Any, reason: str, normalize: Normalizer | List[Normalizer] | None = None) -> Any:
        """Run ``argv`` on both and compare the structure only (types, lengths). ``reason`` is mandatory."""
        __tracebackhide__ = True
        if not reason or not reason.strip():
            raise ValueError("pair.loosely(...) needs a reason=... saying why an exact comparison is impossible")
        real, fake = self._run_both(argv)
        real = self._normalize(real, fake, normalize)
        self._count("loosely")
        if self.fake is None:
            return real
        diff = first_difference(shape(real), shape(fake))
        if diff:
            pytest.fail(f"reply structures differ ({reason}) for {self._where(argv)}\n  real: {_fmt(real)}\n"
                        f"  fake: {_fmt(fake)}\n  {diff} (structure)", pytrace=False)
        return fake

    @contextlib.contextmanager
    def known_difference(self, oracle: str, reason: str, expected: Any) -> Iterator[None]:
        """Inside the block, when this pair's oracle is ``oracle`` (e.g. ``"valkey-9.1"``), the fake is
        compared with the spec'd value ``expected`` instead of the real reply. ``expected`` is a value or a
        function of the real reply (e.g. ``replies.set_field(b"lag", 3)``). The real reply must differ
        from it at least once in the block (so a fixed oracle is noticed). Other oracles, and the profile that
        emulates this oracle exactly (``target.exact``, e.g. "valkey-9.1" on Valkey 9.1.2): no effect, the
        replies must be equal."""
        __tracebackhide__ = True
        if not reason or not reason.strip():
            raise ValueError("pair.known_difference(...) needs a reason")
        if self.target.exact or _norm_label(self.oracle.label) != _norm_label(oracle):
            yield
            return
        kd = _KnownDifference(reason, expected)
        self._known.append(kd)
        try:
            yield
        finally:
            self._known.remove(kd)
        if not kd.reproduced:
            pytest.fail(f"known difference with {oracle} did not show ({reason}); the oracle now agrees "
                        f"with the spec: remove the known_difference declaration", pytrace=False)

    def _compare_known(self, argv: tuple, real: Any, fake: Any, normalize: Any) -> Any:
        __tracebackhide__ = True
        kd = self._known[-1]
        spec = kd.expected(real) if callable(kd.expected) else kd.expected
        real = self._normalize(real, fake, normalize)
        spec = self._normalize(spec, fake, normalize)
        if first_difference(real, spec):
            kd.reproduced += 1
        self._count("known_difference")
        if self.fake is None:
            return spec
        diff = first_difference(spec, fake)
        if diff:
            pytest.fail(f"fake differs from the spec'd value (known difference with {self.oracle.label}: "
                        f"{kd.reason}) for {self._where(argv)}\n  real: {_fmt(real)}\n  spec: {_fmt(spec)}\n"
                        f"  fake: {_fmt(fake)}\n  {diff}", pytrace=False)
        return fake

    # -- split commands (blocking) --------------------------------------------------------------

    def send(self, *argv: Any) -> None:
        """Send ``argv`` to both sides without waiting for the replies (e.g. a BLOCK read); :meth:`read`
        collects and compares them. The fake side runs in a reader thread, wherever the fake blocks."""
        self._pending = argv
        self.real.send(*argv)
        if self.fake is not None:
            box: Dict[str, Any] = {}
            fake = self.fake

            def run() -> None:
                try:
                    box["reply"] = fake(*argv)
                except BaseException as exc:  # handed to read()
                    box["exc"] = exc

            thread = threading.Thread(target=run, name="conformance-fake-reader", daemon=True)
            thread.start()
            self._reader = (thread, box)

    def read(self, normalize: Normalizer | List[Normalizer] | None = None) -> Any:
        """Read the replies of the last :meth:`send` on both sides and compare them exactly."""
        __tracebackhide__ = True
        real, fake = self._collect()
        return self._compare(self._pending, real, fake, "same", normalize)

    def _collect(self) -> tuple[Any, Any]:
        __tracebackhide__ = True
        real = translate(self.real.read(), self._unalias)
        fake = None
        if self.fake is not None:
            thread, box = self._reader
            thread.join(READ_TIMEOUT_S)  # real-time: bounded wait for the fake's reader thread
            if thread.is_alive():
                pytest.fail(f"the fake did not reply within {READ_TIMEOUT_S}s to {self._where(self._pending)}\n"
                            f"  real replied: {_fmt(real)}", pytrace=False)
            if "exc" in box:
                raise box["exc"]
            fake = box["reply"]
        return real, fake

    def read_error(self, key: str, /, **params: Any) -> Err:
        """Like :meth:`read`, but both replies must be the error ``key`` (see :meth:`same_error`)."""
        __tracebackhide__ = True
        real, fake = self._collect()
        return self._check_error(key, params, self._pending, real, fake)

    def client_id(self) -> PerSide:
        """This client's ``CLIENT ID`` on each side, as a per-side argument (e.g. for CLIENT UNBLOCK)."""
        return PerSide(self.real("CLIENT", "ID"), self.fake("CLIENT", "ID") if self.fake is not None else None)

    def wait_blocked(self, count: int = 1) -> None:
        """Wait until ``count`` clients are blocked on each side: ``INFO clients`` ``blocked_clients`` on the
        real server and on the fake (or the fake's ``server.blocked()`` when it has one). Bounded by
        WAIT_BLOCKED_S of real time."""
        __tracebackhide__ = True
        deadline = time.monotonic() + WAIT_BLOCKED_S
        while True:
            real_n = self.oracle.blocked_clients()
            fake_n = count if self.server is None else self._root._fake_blocked_clients()
            if real_n >= count and fake_n >= count:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"waited {WAIT_BLOCKED_S}s for {count} blocked client(s): real has {real_n}, "
                            f"fake has {fake_n}", pytrace=False)
            time.sleep(0.005)  # real-time: polling observable state of another thread/process, bounded above

    def _fake_blocked_clients(self) -> int:
        blocked = getattr(self.server, "blocked", None)
        if callable(blocked):
            return len(blocked())
        if self._fake_control is None:
            conn = self._fake_connection_class(server=self.server, **protocol_kwargs(2))
            self._fake_control = Side("fake-control", conn)
        reply = self._fake_control("INFO", "clients")
        return int(parse_info(reply).get("blocked_clients", "0")) if isinstance(reply, bytes) else 0


def _norm_label(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")
