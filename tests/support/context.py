"""A minimal in-memory :class:`fake_streams.commands.base.Context` for engine unit tests (no transport).

>>> ctx = DictContext()
>>> from fake_streams.commands import COMMANDS
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from fake_streams.errors import ReplyError
from fake_streams.profiles import Profile, get_profile
from fake_streams.stream import Stream


class DictContext:
    """Keyspace = a dict; records modified/ready/notify calls so tests can assert them."""

    def __init__(self, version: str | Profile | None = None, protocol: int = 2, now_ms: int = 1_000_000) -> None:
        self.profile = get_profile(version)
        self.protocol = protocol
        self.now_ms = now_ms
        self.in_multi = False
        self.from_script = False
        self.argv: List[bytes] = []
        self.keyspace: Dict[bytes, Any] = {}
        self.modified_keys: List[bytes] = []
        self.ready_keys: List[bytes] = []
        self.events: List[tuple] = []

    def lookup(self, key: bytes) -> Optional[Stream]:
        value = self.keyspace.get(key)
        if value is not None and not isinstance(value, Stream):
            raise ReplyError("WRONGTYPE")
        return value

    def create(self, key: bytes) -> Stream:
        assert key not in self.keyspace, key
        stream = Stream()
        self.keyspace[key] = stream
        return stream

    def modified(self, key: bytes) -> None:
        self.modified_keys.append(key)

    def signal_ready(self, key: bytes) -> None:
        self.ready_keys.append(key)

    def notify(self, event: str, key: bytes) -> None:
        self.events.append((event, key))

    def clear_effects(self) -> None:
        """Forget the recorded side effects (modified keys, ready keys, events): a test's setup is done."""
        self.modified_keys.clear()
        self.ready_keys.clear()
        self.events.clear()

    def run(self, *argv: Any) -> Any:
        """Run one command by name through the COMMANDS table (arity checked), returning its reply.

        Errors come back as the rendered error text (a ``str``), like a server reply line without ``-``.
        """
        from fake_streams.commands import COMMANDS, CONTAINERS

        args = [a if isinstance(a, bytes) else str(a).encode() for a in argv]
        name = args[0].decode().lower()
        rest = args[1:]
        if name in CONTAINERS and rest:
            name = f"{name}|{rest[0].decode().lower()}"
            rest = rest[1:]
        spec = COMMANDS[name]
        self.argv = args
        if not spec.arity_ok(len(args)):
            return ReplyError("WRONG_ARITY", command=name).render(self.profile.errors)
        try:
            return spec.handler(self, rest)
        except ReplyError as exc:
            return exc.render(self.profile.errors)
