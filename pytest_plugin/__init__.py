"""pytest plugin of fake-redis-streams: the ``fake_redis_streams`` fixture, its marker and options.

Loaded through the ``pytest11`` entry point; nothing is patched until a test uses the fixture.
The logic lives in private modules: ``_options`` (marker / ini / CLI), ``_fixture`` (the handle),
``_real`` (the dual run against a real server). Start-up imports only ``_options`` (and
``fake_streams.profiles``): redis, fakeredis and the engine are imported when a test first asks for
the fixture, so a suite that never does pays (almost) nothing for the plugin being installed.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Union

import pytest

from . import _options

if TYPE_CHECKING:  # pragma: no cover
    from ._fixture import FakeRedisStreams
    from ._real import RealRedisStreams

__all__ = ["FakeRedisStreams", "RealRedisStreams", "fake_redis_streams", "fake_redis_streams_factory"]

_HANDLE = pytest.StashKey[Any]()
_FAILED = pytest.StashKey[bool]()
Handle = Union["FakeRedisStreams", "RealRedisStreams"]


def __getattr__(name: str) -> Any:
    """``FakeRedisStreams`` / ``RealRedisStreams`` for type hints, imported on first use."""
    if name == "FakeRedisStreams":
        from ._fixture import FakeRedisStreams

        return FakeRedisStreams
    if name == "RealRedisStreams":
        from ._real import RealRedisStreams

        return RealRedisStreams
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def pytest_addoption(parser: Any) -> None:
    _options.addoption(parser)


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", _options.marker_line())


def pytest_unconfigure(config: Any) -> None:
    """End of the session: close the servers shared by address (``FakeStreamsConnection`` without ``bind``
    or a network), so nothing of ours outlives the session (each test's own servers went at its teardown)."""
    server_module = sys.modules.get("fake_streams.server")  # never imported: nothing to release
    if server_module is not None:
        server_module.FakeStreamsServer.reset_registry()


def pytest_collection_modifyitems(items: List[Any]) -> None:
    """The marker implies the fixture (set up first, so the test's other fixtures see the fake)."""
    for item in items:
        names = getattr(item, "fixturenames", None)
        if names is not None and _options.MARKER not in names and item.get_closest_marker(_options.MARKER):
            names.insert(0, _options.MARKER)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: Any, call: Any) -> None:
    """A failing test's report gets a section with the streams, groups and PELs it left behind."""
    if call.excinfo is None or call.excinfo.errisinstance(pytest.skip.Exception):
        return
    item.stash[_FAILED] = True
    handle = item.stash.get(_HANDLE, None)
    if handle is None or call.when == "teardown":
        return
    try:
        text = handle.report()
    except Exception as exc:  # never hide the test's own failure behind a reporting problem
        text = f"(could not render the fake servers: {type(exc).__name__}: {exc})"
    if text:
        item.add_report_section(call.when, "fake-redis-streams", text)


def _open(config: Any, options: _options.Options) -> Handle:
    __tracebackhide__ = True
    url = _options.real_url(config)
    if url is None:
        from ._fixture import FakeRedisStreams

        return FakeRedisStreams(options)
    from ._real import RealRedisStreams, skip_reason

    handle = RealRedisStreams(options, url)
    reason = skip_reason(options, handle.server_version)
    if reason:
        handle._shutdown()
        pytest.skip(reason)
    return handle


@pytest.fixture
def fake_redis_streams(request: Any) -> Iterator[Handle]:
    """A fresh in-memory Redis Streams server for this test (profile "7.4" by default).

    ``.client`` (sync redis.Redis), ``.async_client(**kw)`` (redis.asyncio.Redis), ``.url``,
    ``.server`` (FakeStreamsServer), ``.server_for(url)``, ``.clock`` (``.advance(ms)`` when manual),
    frozen views ``.stream(key)`` / ``.group(key, name)`` / ``.assert_all_acked()``, and ``.faults``
    (``fail_next("XACK")``, ``drop(client)``, ``outage()``). While the test runs, every redis-py client
    the code under test builds reaches a fake server too (each host:port its own; ``patch=False``
    turns this off). Configure with ``@pytest.mark.fake_redis_streams(version=, clock="manual"|"system",
    start_ms=, patch=, decode_responses=, protocol=, url=, passthrough_hosts=)`` on a test, class or
    module, ini ``fake_redis_streams_*`` or ``--fake-redis-streams-*``. A failing test's report lists
    the streams, groups and pending entries; ``--fake-redis-streams-real=URL`` runs against a real server.
    """
    __tracebackhide__ = True
    handle = _open(request.config, _options.resolve(request.config, request.node))
    request.node.stash[_HANDLE] = handle
    try:
        yield handle
    finally:
        request.node.stash[_HANDLE] = None
        failed = request.node.stash.get(_FAILED, False)
        problems = handle._shutdown(check_faults=not failed)
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


class Factory:
    """``fake_redis_streams_factory(**options)`` → a handle like the fixture's, alive until ``.close()``."""

    def __init__(self, config: Any) -> None:
        self._config = config
        self._handles: List[Handle] = []

    def __call__(self, **options: Any) -> Handle:
        __tracebackhide__ = True
        handle = _open(self._config, _options.resolve(self._config, None, **options))
        self._handles.append(handle)
        return handle

    def _close_all(self) -> Dict[int, List[str]]:
        return {id(h): h._shutdown() for h in self._handles}


@pytest.fixture(scope="session")
def fake_redis_streams_factory(pytestconfig: Any) -> Iterator[Factory]:
    """Make longer-lived fake servers: ``fake_redis_streams_factory(**options)`` returns a handle like
    ``fake_redis_streams`` (same options as the marker; ``patch=True`` patches until it is closed).

    Close it yourself (``handle.close()``, e.g. at the end of a module-scoped fixture); whatever is
    still open is closed at the end of the session::

        @pytest.fixture(scope="module")
        def streams(fake_redis_streams_factory):
            handle = fake_redis_streams_factory(version="7.2", patch=False)
            yield handle
            handle.close()
    """
    factory = Factory(pytestconfig)
    yield factory
    factory._close_all()
