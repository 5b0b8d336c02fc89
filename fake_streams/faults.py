"""Fault injection: make commands fail, drop connections, take a server down — to test retries,
reconnects and at-least-once handling.

A :class:`Faults` object sits on a server (``server.faults``); the transport calls
:meth:`Faults.on_command` before every command. A returned error line is the command's reply; a
raised ``redis.exceptions.ConnectionError`` drops the connection (the client sees a
ConnectionError; redis-py may reconnect and retry, exactly as against a real server)::

    faults = Faults.install(server)
    faults.fail_next("XACK", times=2, error="ERR injected")     # the next two XACKs get an error reply
    faults.fail_next("XADD", error=ConnectionError)             # the next XADD loses its connection
    faults.drop(client)                                          # each open connection of client: next command dropped
    with faults.outage():                                        # every command and connect fails meanwhile
        ...

Faults fire *before* the command runs: the failed command has no effect. While no rule is armed
(:attr:`Faults.idle`), the server treats the object as absent: stream commands keep their direct path
(``fake_streams._fakeredis.fastpath``), so the pytest fixture can install a ``Faults`` on every server at no
cost. Every firing is recorded in :attr:`Faults.fired`; :meth:`Faults.unfired` lists armed, non-optional rules that never fired
(the pytest fixture fails the test with them at teardown).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, FrozenSet, Iterator, List, Optional, Sequence, Union

import redis.exceptions

__all__ = ["Faults", "Fired", "Rule"]

ErrorSpec = Union[str, type, BaseException]


def _is_connection_error(error: Any) -> bool:
    if isinstance(error, type):
        return issubclass(error, (ConnectionError, redis.exceptions.ConnectionError))
    return isinstance(error, (ConnectionError, redis.exceptions.ConnectionError))


@dataclass
class Rule:
    """One armed fault: ``command`` (``"XACK"``, ``"XGROUP CREATE"``, ``"*"``) fails ``remaining`` more times."""

    command: str
    remaining: int
    error: ErrorSpec
    client_ids: Optional[FrozenSet[int]] = None
    match: Optional[Callable[[List[bytes]], bool]] = None
    optional: bool = False
    fired: int = 0

    def matches(self, client_id: Any, argv: Sequence[bytes]) -> bool:
        if self.remaining <= 0:
            return False
        if self.client_ids is not None and client_id not in self.client_ids:
            return False
        if self.command != "*":
            words = self.command.lower().split()
            typed = [bytes(a).decode("utf-8", "replace").lower() for a in argv[: len(words)]]
            if typed != words:
                return False
        return self.match is None or bool(self.match(list(argv)))

    def describe(self) -> str:
        what = "a dropped connection" if _is_connection_error(self.error) else repr(self.error)
        who = "" if self.client_ids is None else f" (clients {sorted(self.client_ids)})"
        return f"{self.command} x{self.remaining} -> {what}{who}"


@dataclass(frozen=True)
class Fired:
    """One injected failure: the command as typed, the client id, and what it got."""

    argv: List[bytes] = field(hash=False)
    client_id: Any
    outcome: str


class Faults:
    """The fault rules of one server (thread-safe). See the module docstring."""

    def __init__(self, server: Any = None) -> None:
        self._server_ref = None if server is None else weakref.ref(server)
        self.rules: List[Rule] = []
        self.fired: List[Fired] = []
        #: True while no rule has a failure left to inject: :meth:`on_command` would answer None to every
        #: command, so the transport may skip it (read without the lock; kept by :meth:`_rules_changed`)
        self.idle = True
        self._lock = threading.Lock()

    @property
    def server(self) -> Any:
        """The server these faults are installed on (None: none). Held weakly, since the server holds its
        faults: no reference cycle keeps a closed server for the cyclic garbage collector (issue 13)."""
        return None if self._server_ref is None else self._server_ref()

    def _rules_changed(self) -> None:
        """Recompute :attr:`idle` (lock held) after rules were armed, fired or cleared; spent rules are kept
        (``describe``/``unfired`` report them). O(rules)."""
        self.idle = not any(r.remaining > 0 for r in self.rules)

    @classmethod
    def install(cls, server: Any) -> Faults:
        """The :class:`Faults` of ``server``, attached on first use."""
        current = getattr(server, "faults", None)
        if isinstance(current, cls):
            return current
        faults = cls(server)
        server.faults = faults
        return faults

    # ------------------------------------------------------------------------------------ arming
    def fail_next(
        self,
        command: str = "*",
        times: int = 1,
        error: ErrorSpec = "ERR injected failure",
        *,
        client: Any = None,
        match: Optional[Callable[[List[bytes]], bool]] = None,
        optional: bool = False,
    ) -> Rule:
        """Make the next ``times`` calls of ``command`` fail.

        ``error`` is an error line as the server writes it (``"ERR …"``, ``"BUSY …"``, ``"NOGROUP …"``:
        the client raises the matching ResponseError subclass), or ``ConnectionError`` (the class or
        an instance, builtin or redis-py's) to drop the connection instead. ``client`` limits the
        rule to the connections a client (redis.Redis / asyncio Redis / connection) has open now;
        ``match(argv)`` narrows it further (``lambda argv: argv[1] == b"orders"``). ``optional``
        rules may stay unfired without failing the test.
        """
        if times < 1:
            raise ValueError("times must be >= 1")
        if not isinstance(error, str) and not _is_connection_error(error):
            raise TypeError(f"error must be an error line such as 'ERR oops' or ConnectionError, not {error!r}")
        if isinstance(error, str) and (not error or error.startswith("-") or "\r" in error or "\n" in error):
            raise ValueError(f"error must be one line without the leading '-', such as 'ERR oops'; got {error!r}")
        ids = None if client is None else frozenset(client_ids(client))
        rule = Rule(command.strip() or "*", times, error, ids, match, optional)
        with self._lock:
            self.rules.append(rule)
            self._rules_changed()
        return rule

    def drop(self, client: Any) -> List[Rule]:
        """Drop every connection ``client`` has open now: the next command on each fails with ConnectionError.

        (The drop shows when the connection is next used, as a server-side close does.)
        """
        ids = client_ids(client)
        if not ids:
            raise ValueError(f"{client!r} has no open connection to drop (run a command on it first)")
        rules = [Rule("*", 1, redis.exceptions.ConnectionError, frozenset({i})) for i in ids]
        with self._lock:
            self.rules.extend(rules)
            self._rules_changed()
        return rules

    def clear(self) -> None:
        """Disarm every rule (the history in :attr:`fired` is kept)."""
        with self._lock:
            self.rules.clear()
            self._rules_changed()

    # ------------------------------------------------------------------------------ server down
    def server_down(self) -> None:
        """Take the server down: connects and commands fail with ConnectionError until :meth:`server_up`."""
        self.server.connected = False

    def server_up(self) -> None:
        self.server.connected = True

    @contextlib.contextmanager
    def outage(self) -> Iterator[None]:
        """The server is down inside the block, up again after it."""
        self.server_down()
        try:
            yield
        finally:
            self.server_up()

    # ------------------------------------------------------------------------------- transport
    def on_command(self, client_id: Any, argv: Sequence[bytes]) -> Optional[str]:
        """Called by the transport before each command: an error line to reply with, ``None`` to run it.

        Raises ``redis.exceptions.ConnectionError`` when the connection is to be dropped. O(rules).
        """
        with self._lock:
            rule = next((r for r in self.rules if r.matches(client_id, argv)), None)
            if rule is None:
                return None
            rule.remaining -= 1
            rule.fired += 1
            if not rule.remaining:
                self._rules_changed()
            dropped = _is_connection_error(rule.error)
            outcome = "connection dropped" if dropped else str(rule.error)
            self.fired.append(Fired(list(argv), client_id, outcome))
        if dropped:
            error = rule.error
            message = str(error) if isinstance(error, BaseException) and str(error) else "Connection dropped (fake_streams fault injection)"
            raise redis.exceptions.ConnectionError(message)
        return str(rule.error)

    # ------------------------------------------------------------------------------- reporting
    def unfired(self) -> List[Rule]:
        """Armed, non-optional rules with failures left to inject."""
        with self._lock:
            return [r for r in self.rules if r.remaining > 0 and not r.optional]

    def describe(self) -> str:
        with self._lock:
            armed = [f"- armed: {r.describe()}" for r in self.rules if r.remaining > 0]
            fired = [f"- fired: {_argv_text(f.argv)} (client {f.client_id}) -> {f.outcome}" for f in self.fired]
        return "\n".join(armed + fired)

    def __repr__(self) -> str:
        return f"Faults(armed={sum(1 for r in self.rules if r.remaining > 0)}, fired={len(self.fired)})"


def _argv_text(argv: Sequence[bytes]) -> str:
    return " ".join(bytes(a).decode("utf-8", "replace") for a in argv[:4]) + (" …" if len(argv) > 4 else "")


# -------------------------------------------------------------------------------------- client ids
def client_ids(client: Any) -> List[int]:
    """The server-side client ids (CLIENT ID) of the connections ``client`` has open now.

    ``client`` is a redis.Redis / redis.asyncio.Redis (its pool's connections), a pool, or a connection.
    """
    conns: List[Any] = []
    pool = getattr(client, "connection_pool", None) or (client if hasattr(client, "_available_connections") else None)
    if pool is not None:
        conns += list(getattr(pool, "_available_connections", ()) or ())
        conns += list(getattr(pool, "_in_use_connections", ()) or ())
    own = getattr(client, "connection", None)
    if own is not None:
        conns.append(own)
    if pool is None and own is None:
        conns.append(client)
    ids = []
    for conn in conns:
        sock = getattr(conn, "_sock", None)
        info = getattr(sock, "_client_info", None)
        if info is not None and info.get("id") is not None:
            ids.append(int(info.get("id")))
    return ids
