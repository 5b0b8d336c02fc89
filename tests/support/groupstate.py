"""Consumer-group state built directly on the model, for engine unit tests that must not depend on XADD /
XGROUP / XREADGROUP (times are explicit ``now`` values)."""

from __future__ import annotations

from typing import Iterable

from fake_streams.errors import ERRORS
from fake_streams.groups import Consumer, ConsumerGroup, advance_entries_read
from fake_streams.ids import StreamID
from fake_streams.stream import Stream

from .engine import sid

__all__ = ["check", "deliver", "err", "pel", "sid"]


def deliver(stream: Stream, group: ConsumerGroup, name: bytes, ids: Iterable[StreamID], now: int) -> Consumer:
    """What XREADGROUP ``>`` does to the group for ``ids`` (consumer created if missing)."""
    consumer, _ = group.lookup_or_create(name, now)
    for s in ids:
        if s > group.last_id:
            advance_entries_read(stream, group, s)
            group.last_id = s
        group.deliver(s, consumer, now)
    consumer.seen_time = now
    consumer.active_time = now
    return consumer


def check(stream: Stream) -> None:
    """Every invariant of the stream and of its groups."""
    stream._check()
    for group in stream.groups.values():
        group._check()


def pel(group: ConsumerGroup) -> dict:
    """Group PEL as ``{id: (owner, delivery_time, delivery_count)}``."""
    return {s: (n.consumer.name, n.delivery_time, n.delivery_count) for s, n in group.pel.items()}


def err(name: str, /, **params: object) -> str:
    """The base-table error text ``name`` with its parameters filled in."""
    text = ERRORS[name]
    return text.format(**params) if params else text
