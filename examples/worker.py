"""A small order worker on Redis Streams: a producer, a consumer group and crash recovery.

* :func:`publish` appends an order to the ``orders`` stream (XADD, capped with MAXLEN ~).
* :class:`Worker` reads new orders as one consumer of the ``workers`` group (XREADGROUP, BLOCK),
  calls ``handle(order)`` and acknowledges it (XACK) only when the handler returned — at-least-once:
  an order whose handler raised, or whose worker crashed, stays pending.
* :meth:`Worker.recover` takes over orders that have been pending longer than ``min_idle_ms``
  (XAUTOCLAIM) and retries them; an order delivered ``max_deliveries`` times goes to the
  ``orders:dead`` stream instead (and is acknowledged, so it stops coming back).

Nothing here knows about tests: :func:`connect` builds its own client from ``REDIS_URL``, as
application code does. ``examples/test_worker.py`` shows how to test it with the
``fake_redis_streams`` fixture.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import redis

STREAM = "orders"
GROUP = "workers"
DEAD = "orders:dead"

Order = Dict[str, str]


def connect(url: Optional[str] = None) -> redis.Redis:
    """The application's client. ``socket_timeout`` must exceed BLOCK: redis-py 8 defaults to 5 s."""
    url = url or os.environ.get("REDIS_URL", "redis://localhost:6379/0")
    return redis.Redis.from_url(url, decode_responses=True, socket_timeout=30)


def publish(r: redis.Redis, order: Order) -> str:
    """Append ``order``; returns its entry ID."""
    return r.xadd(STREAM, order, maxlen=100_000, approximate=True)


def ensure_group(r: redis.Redis) -> None:
    """Create the consumer group (and the stream) once; later calls are no-ops."""
    try:
        r.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if not str(exc).startswith("BUSYGROUP"):
            raise


class Worker:
    """One consumer of the ``workers`` group."""

    def __init__(
        self,
        r: redis.Redis,
        name: str,
        handle: Callable[[Order], Any],
        *,
        block_ms: int = 5_000,
        batch: int = 10,
        min_idle_ms: int = 60_000,
        max_deliveries: int = 3,
    ) -> None:
        self.r = r
        self.name = name
        self.handle = handle
        self.block_ms = block_ms
        self.batch = batch
        self.min_idle_ms = min_idle_ms
        self.max_deliveries = max_deliveries

    def poll_once(self) -> int:
        """Wait up to ``block_ms`` for new orders, process them; returns how many were acknowledged."""
        reply = self.r.xreadgroup(GROUP, self.name, {STREAM: ">"}, count=self.batch, block=self.block_ms)
        entries = _entries_of(reply)
        return sum(self._process(entry_id, fields) for entry_id, fields in entries)

    def recover(self) -> int:
        """Claim orders pending longer than ``min_idle_ms`` (a crashed or stuck consumer) and retry them.

        Returns how many were acknowledged (processed, or moved to the dead-letter stream).
        """
        done, cursor = 0, "0-0"
        while True:
            reply = self.r.xautoclaim(STREAM, GROUP, self.name, self.min_idle_ms, start_id=cursor, count=self.batch)
            cursor, claimed = reply[0], reply[1]
            if claimed:
                counts = self._delivery_counts([entry_id for entry_id, _ in claimed])
                for entry_id, fields in claimed:
                    if fields is None:  # deleted while pending (redis-py < 5 shape)
                        continue
                    if counts.get(entry_id, 0) > self.max_deliveries:
                        done += self._dead_letter(entry_id, fields)
                    else:
                        done += self._process(entry_id, fields)
            if cursor in ("0-0", b"0-0"):
                return done

    # ------------------------------------------------------------------------------------ private
    def _process(self, entry_id: str, fields: Order) -> int:
        try:
            self.handle(fields)
        except Exception:
            return 0  # stays pending: recover() retries it later
        self.r.xack(STREAM, GROUP, entry_id)
        return 1

    def _dead_letter(self, entry_id: str, fields: Order) -> int:
        pipe = self.r.pipeline(transaction=True)
        pipe.xadd(DEAD, {**fields, "original_id": entry_id})
        pipe.xack(STREAM, GROUP, entry_id)
        pipe.execute()
        return 1

    def _delivery_counts(self, ids: List[str]) -> Dict[str, int]:
        rows = self.r.xpending_range(STREAM, GROUP, min=ids[0], max=ids[-1], count=len(ids) + 100)
        return {row["message_id"]: row["times_delivered"] for row in rows}


def _entries_of(reply: Any) -> List[Tuple[str, Order]]:
    """XREADGROUP's entries for our one stream, whatever the protocol (RESP2 list / RESP3 dict)."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return [e for batch in reply.values() for e in batch[0]] if reply else []
    return [e for _, batch in reply for e in batch]
