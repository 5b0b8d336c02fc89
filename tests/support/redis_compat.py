"""Test-side shims for older redis-py lines (the suite supports redis-py >= 4.6; see tox.ini).

* :func:`record_status_codes` — newer redis-py keeps the error code its parser strips (``-ERR x`` arrives as
  ``ResponseError("x")`` with ``status_code == "ERR"``), which the conformance harness uses to tell
  ``-ERR x`` from ``-x`` (tests/conformance/replies.py ``Err.code``). Older lines drop it; the shim makes
  their ``parse_error`` record it the same way, on the real side, the fake side and ``expected_err`` alike
  (all three go through redis-py's ``parse_error``). Nothing else about the exceptions changes.
* :data:`NO_RESP3` — the reason RESP3 cases skip on redis-py 4.x (empty when RESP3 is there); the real-server
  harness decides with it in one place (tests/conformance/oracles.py ``client_limitation``).
* :data:`NO_SETINFO` — connection kwargs that skip the CLIENT SETINFO of the handshake (``lib_name=None``,
  ``lib_version=None``; empty on redis-py 4.x, which sends none and has no such arguments).
* :func:`with_cluster_errors` — a connection given the parser redis-py's RedisCluster gives its own where it has
  one (before 6.0 the only parser that raises MovedError, AskError, TryAgainError, ClusterDownError …).
* :func:`async_failover_retry` — asyncio client kwargs retrying a command after a sentinel failover dropped its
  connection, the same on every line (redis-py 8 retries by default, with backoff; older lines retry nothing
  unless told).
* :data:`RETRY_ASKS_SENTINEL` — whether a Sentinel-managed connection (sync or asyncio) that reconnects inside a
  command's retry asks the sentinels again (before 6.1) or reconnects to the address it had (6.1 on).
* :func:`default_retry_without_waits` — a sync client's default retry (attempts, errors) without its
  backoff waits.
* :func:`aclose` — ``await aclose(client)``: ``aclose()`` where the asyncio client has it (redis-py >= 5.0.1),
  else ``close()``.
"""

from __future__ import annotations

import inspect
from typing import Any, Dict, List

import redis
import redis.exceptions

#: redis-py's (major, minor)
REDIS_PY = tuple(int(p) for p in redis.__version__.split(".")[:2])
#: Why this redis-py cannot speak RESP3, or "" (``protocol=`` arrived in redis-py 5.0; 4.x is RESP2 only).
NO_RESP3 = "" if REDIS_PY >= (5, 0) else (
    f"redis-py {REDIS_PY[0]}.{REDIS_PY[1]} has no RESP3 (the protocol= argument arrives in redis-py 5.0)")
#: Connection kwargs for a handshake without CLIENT SETINFO (``lib_name=`` arrived with it in redis-py 5.0).
NO_SETINFO: Dict[str, Any] = {"lib_name": None, "lib_version": None} if REDIS_PY >= (5, 0) else {}
#: True when this redis-py records the stripped error code itself (``ResponseError.status_code``).
HAS_STATUS_CODE = hasattr(redis.exceptions.ResponseError("x"), "status_code")


def _parser_bases() -> List[type]:
    """The classes that define ``parse_error`` in this redis-py (sync and asyncio parsers)."""
    found: List[type] = []
    for module_name in ("redis._parsers.base", "redis.connection", "redis.asyncio.connection"):
        try:
            module = __import__(module_name, fromlist=["BaseParser"])
        except ImportError:
            continue
        cls = getattr(module, "BaseParser", None)
        if isinstance(cls, type) and "parse_error" in vars(cls) and cls not in found:
            found.append(cls)
    return found


def record_status_codes() -> None:
    """On a redis-py without ``status_code``: make ``parse_error`` set it to the code it strips (idempotent)."""
    if HAS_STATUS_CODE:
        return
    for cls in _parser_bases():
        original = vars(cls)["parse_error"]
        if getattr(original, "_records_status_code", False):
            continue
        parse = original.__func__

        def parse_error(klass: Any, response: str, _parse: Any = parse) -> Any:
            exc = _parse(klass, response)
            code = response.split(" ")[0]
            exc.status_code = code if code in klass.EXCEPTION_CLASSES else None
            return exc

        shim = classmethod(parse_error)
        shim._records_status_code = True  # type: ignore[attr-defined]
        cls.parse_error = shim  # type: ignore[attr-defined]


async def aclose(client: Any) -> None:
    """Close an asyncio client (or pubsub / pipeline): ``aclose()`` when it exists, else ``close()``."""
    close = getattr(client, "aclose", None) or client.close
    result = close()
    if inspect.isawaitable(result):
        await result


def close_sentinel(app: Any) -> None:
    """Close a sync ``redis.sentinel.Sentinel``: ``close()`` where it has one (redis-py 8), else each of its
    sentinel clients (4.6–7.x have no ``Sentinel.close``)."""
    close = getattr(app, "close", None)
    if close is not None:
        close()
        return
    for client in list(app.sentinels):
        client.close()


def with_cluster_errors(conn: Any) -> Any:
    """``conn`` with RedisCluster's ``ClusterParser`` where this redis-py has one (< 6.0); returns ``conn``."""
    import redis.cluster

    parser = getattr(redis.cluster, "ClusterParser", None)
    if parser is not None:
        conn.set_parser(parser)
    return conn



#: redis-py's send (sync and asyncio) reconnects a dropped connection with ``connect_check_health`` from 6.1 on
#: (redis-py #3557), which a Sentinel-managed connection does not override: a command retried after its connection to a
#: demoted master dropped reconnects to that address (now a replica: a write gets READONLY, turned into
#: ConnectionError("The previous master is now a slave")). Before 6.1 the send called ``connect()``, which asks
#: the sentinels. (A command sent after the drop, on a connection the pool checks out, asks them on every line.)
RETRY_ASKS_SENTINEL = REDIS_PY < (6, 1)


def async_failover_retry() -> Dict[str, Any]:
    """kwargs for a ``redis.asyncio`` client that retry a command 3 times, without backoff, once its connection
    dropped (ConnectionError): the same on every redis-py line (8.x retries by default, with a backoff; before
    8.0 the asyncio client retries nothing unless told)."""
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    return {"retry": Retry(NoBackoff(), 3), "retry_on_error": [redis.exceptions.ConnectionError]}


def default_retry_without_waits() -> Dict[str, Any]:
    """kwargs for a sync client (or a Sentinel's ``sentinel_kwargs``) that keep this redis-py's default retry of a
    failed command — as many attempts, on the same errors — without the waits between them (6.0 on: retries with
    an exponential backoff of up to seconds; before 6.0 no retry, and then nothing changes): for a test that
    compares what a client ends with against a server that is gone, not how long it waited."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    probe = redis.Redis()  # no connection is made
    retry = probe.get_connection_kwargs().get("retry")
    probe.close()
    retries = getattr(retry, "_retries", 0)
    if retry is None or not retries:
        return {}
    return {"retry": Retry(NoBackoff(), retries, tuple(getattr(retry, "_supported_errors", ())))}
