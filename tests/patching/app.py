"""Stands in for application code: it imports redis names and builds clients at import time."""

import redis
import redis.asyncio
from redis import Redis  # bound before any test patches anything
from redis.asyncio import Redis as AsyncRedis


class WalrusStyle(Redis):
    """A Redis subclass defined at import time (walrus's Database, RQ wrappers …)."""

    def ping_twice(self) -> bool:
        return bool(self.ping() and self.ping())


class AsyncSubclass(AsyncRedis):
    pass


EARLY_CLIENT = Redis(host="early", port=6379)  # pool created at import time, no connection yet
EARLY_URL_CLIENT = redis.from_url("redis://early:6379/3")


def publish(host: str, port: int, **fields: str) -> bytes:
    return Redis(host=host, port=port).xadd("events", fields)
