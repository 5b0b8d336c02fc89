"""What the engine unit tests (tests/unit/test_x*.py) share: profile lists, times, ID shorthand, checks.

The profile lists come from the profiles' features, so a new profile joins the tests that concern it:

* :data:`ALL` — every profile name; :data:`EAGER` — consumers created before serving (R7.2+);
  :data:`PLUS` — XREAD accepts ``+`` (R7.4+); :data:`ACTIVE` — consumers have active-time (R7.2+).
* :data:`T0` — the usual ``now_ms`` of a test context; :data:`F` — the one field pair of a model-built entry.
* :func:`sid` — ``StreamID(ms, seq)``.
* :func:`profile_err` — an error's text as ``ctx``'s profile renders it (the base-table text, without a
  profile: :func:`tests.support.groupstate.err`).
* :func:`check_all` — every invariant of every stream in ``ctx``'s keyspace and of its groups.
* :func:`run_checked` — ``ctx.run(*argv)``, then :func:`check_all`.

Test modules import the ones they use under their short names (``profile_err as err``, ``check_all as check``,
``run_checked as run``).
"""

from __future__ import annotations

from typing import Any, Tuple

from fake_streams.errors import ReplyError
from fake_streams.ids import StreamID
from fake_streams.profiles import PROFILES
from fake_streams.stream import Stream

from .context import DictContext


def versions_with(feature: str) -> Tuple[str, ...]:
    """The names of the profiles that have ``feature``, oldest first."""
    return tuple(name for name, profile in PROFILES.items() if profile.has(feature))


ALL: Tuple[str, ...] = tuple(PROFILES)
EAGER = versions_with("eager_consumer_creation")
PLUS = versions_with("xread_plus_id")
ACTIVE = versions_with("consumer_active_time")
T0 = 1_700_000_000_000
F = [b"f", b"v"]


def sid(ms: int, seq: int = 0) -> StreamID:
    return StreamID(ms, seq)


def profile_err(ctx: DictContext, name: str, /, **params: Any) -> str:
    """The text of error ``name`` with ``params`` as ``ctx``'s profile sends it (what ``ctx.run`` returns)."""
    return ReplyError(name, **params).render(ctx.profile.errors)


def check_all(ctx: DictContext) -> None:
    """Every invariant of every stream in the keyspace and of each of its consumer groups."""
    for value in ctx.keyspace.values():
        if isinstance(value, Stream):
            value._check()
            for group in value.groups.values():
                group._check()


def run_checked(ctx: DictContext, *argv: Any) -> Any:
    """``ctx.run(*argv)``, then :func:`check_all`."""
    reply = ctx.run(*argv)
    check_all(ctx)
    return reply
