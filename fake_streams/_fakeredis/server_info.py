"""What INFO needs from fakeredis's side of the server: :func:`snapshot` builds an :class:`~fake_streams.info.Snapshot`
(clients, pub/sub, watches, per-db key counts and TTLs, the dataset's estimated size, CONFIG, cached scripts and
function libraries of :mod:`.scripting`).

The rendering and the statistics live in :mod:`fake_streams.info`; this module only reads fakeredis's state
(lock held). O(keys) when ``with_keys`` (the Memory and Keyspace sections), else O(clients).
"""

from __future__ import annotations

import time
from typing import Any, Dict, Optional, Set, Tuple

from ..info import Snapshot, key_bytes, value_bytes
from .scripting import script_counts


def snapshot(backend: Any, blocked_clients: Any, port: int, with_keys: bool) -> Snapshot:
    """The keyspace's part of INFO, as it is now (lock held)."""
    fake = backend.fake
    sockets = list(fake.sockets)
    config: Dict[bytes, bytes] = fake.config

    def config_value(name: str) -> Optional[str]:
        raw = config.get(name.encode())
        if raw is None:
            return None
        return raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else str(raw)

    watched: Set[Any] = set()
    watching = 0
    for sock in sockets:
        watches = getattr(sock, "_watches", None)
        if watches:
            watching += 1
            watched.update((id(db), key) for key, db in watches)
    keyspace: Dict[int, Tuple[int, int, int]] = {}
    dataset = 0
    if with_keys:
        now = time.time()
        for index, db in sorted(fake.dbs.items()):
            keys = expires = 0
            ttl_ms = 0
            for key in list(db):  # iterating drops expired keys
                item = db.get(key)
                if item is None:
                    continue
                keys += 1
                if item.expireat is not None:
                    expires += 1
                    ttl_ms += max(0, int((item.expireat - now) * 1000))
                dataset += key_bytes(key) + value_bytes(item.value)
            if keys:
                keyspace[index] = (keys, expires, ttl_ms // expires if expires else 0)
    cached_scripts, functions, libraries = script_counts(fake)
    return Snapshot(
        clients=len(sockets),
        blocked=sum(1 for s in sockets if getattr(s, "_blocked", False)),
        pubsub_clients=sum(1 for s in sockets if getattr(s, "_pubsub", 0)),
        watching_clients=watching,
        watched_keys=len(watched),
        pubsub_channels=sum(1 for subs in fake.subscribers.values() if len(subs)),
        pubsub_patterns=sum(1 for subs in fake.psubscribers.values() if len(subs)),
        pubsub_shard_channels=sum(1 for subs in getattr(fake, "ssubscribers", {}).values() if len(subs)),
        keyspace=keyspace,
        dataset_bytes=dataset,
        cached_scripts=cached_scripts,
        functions=functions,
        libraries=libraries,
        config=config_value,
        blocked_clients=blocked_clients,
        port=port,
    )
