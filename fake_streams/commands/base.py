"""What a command handler sees and returns: the :class:`Context` protocol, :class:`CommandSpec` and :class:`BlockRequest`.

A handler is a plain function ``handler(ctx, args) -> reply`` where ``args`` are the raw ``bytes``
arguments after the command name (and after the subcommand name for XGROUP/XINFO). It parses
left to right in the server's order, raises :class:`~fake_streams.errors.ReplyError` for error
replies *before* changing anything, and returns a reply built with :mod:`fake_streams.reply`.
Handlers run under the server lock; they never read a clock (``ctx.now_ms``) and never import
fakeredis. The transport that implements :class:`Context` lives in ``fake_streams.server`` /
the fakeredis adapter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, FrozenSet, List, Optional, Protocol, Sequence, Union

from ..errors import ReplyError
from ..ids import parse_i64
from ..reply import Reply

if TYPE_CHECKING:
    from ..groups import Consumer, ConsumerGroup
    from ..profiles import Profile
    from ..stream import Stream
    from .xread import SavedRead


class Context(Protocol):
    """The server-side state one command execution may use (handlers only read these; plain attributes
    satisfy the protocol as well as properties do)."""

    @property
    def profile(self) -> Profile:
        """The emulated server version."""

    @property
    def protocol(self) -> int:
        """RESP version of the reply being built (2 or 3; inside Lua, the script's RESP mode)."""

    @property
    def now_ms(self) -> int:
        """The command's "now" in Unix ms (one snapshot per execution unit on time_snapshot profiles)."""

    @property
    def in_multi(self) -> bool:
        """True while a queued command runs inside EXEC."""

    @property
    def from_script(self) -> bool:
        """True while the command runs from a script (``redis.call``)."""

    @property
    def argv(self) -> List[bytes]:
        """The whole command as the client typed it (name, subcommand and arguments), for errors that quote argv[1]."""

    def lookup(self, key: bytes) -> Optional[Stream]:
        """The stream at ``key``; ``None`` if missing (or expired); raises WRONGTYPE if it holds another type."""

    def create(self, key: bytes) -> Stream:
        """Store a new empty stream at ``key`` (which must be missing) and return it."""

    def modified(self, key: bytes) -> None:
        """``signalModifiedKey``: the value at ``key`` changed (dirties WATCH)."""

    def signal_ready(self, key: bytes) -> None:
        """``signalKeyAsReady``: clients blocked on ``key`` may now be served (XADD, XGROUP DESTROY, MKSTREAM)."""

    def notify(self, event: str, key: bytes) -> None:
        """Keyspace notification ``event`` (e.g. ``"xadd"``) of class stream for ``key``."""


@dataclass
class BlockRequest:
    """Returned by XREAD/XREADGROUP when nothing can be served and the client may block.

    The blocking layer parks the client on ``keys`` and, when one of them is signalled, runs
    ``args`` again through the same handler (Redis 7.2+ re-execution; ``$`` already rewritten to
    the ID it resolved to). ``timeout_ms`` 0 means forever. ``unblock_on_nokey`` is set for
    XREADGROUP (deletion or a type change of a key also wakes it).
    """

    keys: List[bytes]
    timeout_ms: int
    args: List[bytes]
    unblock_on_nokey: bool = False
    #: state for the R7.0 serve-from-saved-state model (see fake_streams.commands.xread)
    saved: Optional[SavedRead] = None
    #: XREADGROUP … CLAIM: re-run the command after this many ms (a pending entry becomes claimable then),
    #: as if a key had been signalled; ``None`` = only keys and the timeout wake the client
    recheck_ms: Optional[int] = None


#: ``handler(ctx, args)``: a reply, or (XREAD/XREADGROUP) a request to block
Handler = Callable[[Context, List[bytes]], Union[Reply, BlockRequest]]


@dataclass(frozen=True)
class CommandSpec:
    """One command (or container subcommand), as ``src/commands/*.json`` describes it.

    ``name`` is the lower-case full name (``"xadd"``, ``"xgroup|create"``); ``arity`` is Redis's
    (negative = minimum, counting the command name and, for subcommands, the subcommand name).
    """

    name: str
    arity: int
    flags: FrozenSet[str]
    handler: Optional[Handler]
    since: str = "5.0.0"
    summary: str = ""
    complexity: str = ""
    #: the profile feature the command needs (``profile.has(feature)``); other profiles answer ``unknown command``
    feature: Optional[str] = None

    def arity_ok(self, argc: int) -> bool:
        """Whether ``argc`` (the full argv length, names included) satisfies the arity."""
        return argc == self.arity if self.arity >= 0 else argc >= -self.arity


def spec(name: str, arity: int, flags: str, handler: Optional[Handler], **kw: str) -> CommandSpec:
    """Shorthand: ``spec("xadd", -5, "write denyoom fast", xadd)``."""
    return CommandSpec(name=name, arity=arity, flags=frozenset(flags.split()), handler=handler, **kw)


def seen_consumer(ctx: Context, key: bytes, group: ConsumerGroup, name: bytes, now_ms: Optional[int] = None) -> Consumer:
    """``streamLookupConsumer`` + ``streamCreateConsumer`` for a read or claim (XREADGROUP, XCLAIM, XAUTOCLAIM):
    the consumer ``name`` of ``group`` (the stream at ``key``), created if missing with the event
    ``xgroup-createconsumer``; its ``seen_time`` becomes now (``now_ms``: the handler's own ``ctx.now_ms``, if it
    has read it already). O(log c)."""
    consumer, created = group.seen(name, ctx.now_ms if now_ms is None else now_ms)
    if created:
        ctx.notify("xgroup-createconsumer", key)
    return consumer


def cstr(raw: bytes) -> bytes:
    """The argument as a C string sees it (up to the first NUL): how the server compares option names and tokens."""
    nul = raw.find(b"\0")
    return raw if nul < 0 else raw[:nul]


def parse_count(raw: bytes) -> int:
    """An integer argument parsed with ``getLongLongFromObjectOrReply`` (NOT_INTEGER on failure). O(len)."""
    if raw.isdigit() and len(raw) < 19 and (raw[0] != 0x30 or len(raw) == 1):  # canonical, fits: no parser call
        return int(raw)
    value = parse_i64(raw)
    if value is None:
        raise ReplyError("NOT_INTEGER")
    return value


__all__: Sequence[str] = ["BlockRequest", "CommandSpec", "Context", "Handler", "cstr", "parse_count", "seen_consumer", "spec"]
