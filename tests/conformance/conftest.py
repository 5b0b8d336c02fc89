"""Fixtures of the differential layer: session-wide oracles, the ``pair`` fixture, the comparison summary.

``pair`` is parametrised over (oracle × fake profile × protocol): ids ``redis7.0-resp2``,
``valkey9.1-resp3`` (profile valkey-9.1, the exact one), ``valkey9.1-as-7.4-resp2``, ``valkey9.1-as-valkey8.0-resp2``
(the stand-ins; the second one only in the full run) … Each test gets an empty real
keyspace (FLUSHALL) and a new ``FakeStreamsServer(version=<profile>, clock=ManualClock(<server TIME>))``.
Every test that uses ``pair`` is marked ``real`` (deselect with ``-m "not real"``).

Without an oracle the test skips with the reason; with FAKE_STREAMS_REQUIRE_REAL=1 it fails instead.
A protocol the installed redis-py cannot speak (RESP3 on redis-py 4.x) is a skip mark on the parameter
(:func:`target_param`), never a failure: the client library lacks it, no server is missing.
Until the fake's transport exists the tests skip too, unless ``--oracle-self-check`` (or
FAKE_STREAMS_ORACLE_SELF_CHECK=1) runs them against the real servers alone.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Tuple

import pytest

from fake_streams.clock import ManualClock
from fake_streams.profiles import get_profile
from tests.support.redis_compat import record_status_codes

from .oracles import (
    SELF_CHECK_ENV,
    OraclePool,
    Target,
    client_limitation,
    discover_targets,
    require_real,
    summary_lines,
)
from .pair import Pair

record_status_codes()  # older redis-py: keep the stripped error code, as Err.code needs (tests/support)
TARGETS = discover_targets()
_POOL = OraclePool()


def protocol_param(value: Any, protocol: int, id: str) -> Any:
    """``pytest.param(value, id=id)``, skipped with the reason when redis-py cannot speak ``protocol``."""
    why = client_limitation(protocol)
    return pytest.param(value, id=id, marks=[pytest.mark.skip(reason=why)] if why else [])


def target_param(target: Target) -> Any:
    """A :class:`Target` as a fixture parameter (see :func:`protocol_param`)."""
    return protocol_param(target, target.protocol, target.id)


TARGET_PARAMS = [target_param(t) for t in TARGETS]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--oracle-self-check", action="store_true", default=False,
                     help="conformance: run the scenarios on the real servers only (no fake side) "
                          "to check the harness and the expected error texts")


def self_check_mode(config: pytest.Config) -> bool:
    try:
        opt = config.getoption("--oracle-self-check")
    except ValueError:  # option not registered (conftest not an initial one)
        opt = False
    return bool(opt) or os.environ.get(SELF_CHECK_ENV, "").strip() not in ("", "0", "false", "no")


def fake_api() -> Tuple[Optional[Any], Optional[Any], str]:
    """``(FakeStreamsServer, FakeStreamsConnection, why_missing)`` from the fake_streams package."""
    try:
        import fake_streams

        return fake_streams.FakeStreamsServer, fake_streams.FakeStreamsConnection, ""
    except (ImportError, AttributeError) as exc:
        first = f"{type(exc).__name__}: {exc}"
    try:
        from fake_streams.connection import FakeStreamsConnection
        from fake_streams.server import FakeStreamsServer

        return FakeStreamsServer, FakeStreamsConnection, ""
    except Exception as exc:  # the transport is written by another helper; any failure means "not yet"
        return None, None, f"{first}; {type(exc).__name__}: {exc}"


def missing_oracle(reason: str) -> None:
    __tracebackhide__ = True
    if require_real():
        pytest.fail(f"{reason} (FAKE_STREAMS_REQUIRE_REAL=1 makes a missing real server a failure)", pytrace=False)
    pytest.skip(reason)


def oracle_of(oracle_pool: Any, target: Any) -> Any:
    """The running oracle of ``target``; a server that cannot start is :func:`missing_oracle`."""
    __tracebackhide__ = True
    try:
        return oracle_pool.get(target)
    except LookupError as exc:
        missing_oracle(str(exc))


@pytest.fixture(scope="session")
def oracle_pool():
    yield _POOL
    _POOL.stop_all()


@pytest.fixture(params=TARGET_PARAMS)
def conformance_target(request):
    return request.param


@pytest.fixture
def pair(request, conformance_target, oracle_pool):
    """A fake and a real server under one protocol; see tests/conformance/README.md."""
    target = conformance_target
    oracle = oracle_of(oracle_pool, target)
    self_check = self_check_mode(request.config)
    server_cls, conn_cls, why = fake_api()
    if not self_check and server_cls is None:
        pytest.skip(f"fake side not available yet ({why}); run with --oracle-self-check to check the oracles alone")
    oracle.reset()
    profile = get_profile(target.profile)
    fake_server = clock = None
    if not self_check:
        clock = ManualClock(oracle.time_ms())
        fake_server = server_cls(version=target.profile, clock=clock)
    p = Pair(target, oracle, profile, fake_server, clock, conn_cls)
    try:
        yield p
    finally:
        p.close()
        close = getattr(fake_server, "close", None)
        if callable(close):
            close()


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    for item in items:
        if "pair" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    lines = summary_lines()
    if not lines:
        return
    mode = "real servers only (self-check)" if self_check_mode(config) else "fake vs real, raw replies"
    terminalreporter.write_sep("=", f"conformance comparisons ({mode})")
    for line in lines:
        terminalreporter.write_line(line)
