"""The redis-py suite harness's session hooks: the runs are registered as jobs once the collection ends, and made
in a background thread only when asked (``FAKE_STREAMS_REDISPY_BACKGROUND=1``; else each test makes its own:
:mod:`tests.redispy.background`; the first job fetches redis-py's tests, :func:`tests.redispy.harness.redispy_source`:
without them — offline, no PyPI — the tests skip with the reason, and fail with FAKE_STREAMS_REQUIRE_REAL=1; CI
reaches PyPI), and stop at the session's end; the terminal summary prints each run's counts (``RESULTS``).
"""

from __future__ import annotations

from typing import Dict, List

import pytest

from . import background
from .harness import redispy_version

#: "redis-py 8.1.0 stream tests on <what>" -> "N passed, N failed, N skipped"
RESULTS: Dict[str, str] = {}


def pytest_collection_finish(session: pytest.Session) -> None:
    background.start(session.items, session.config)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    background.stop()


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not RESULTS:
        return
    terminalreporter.write_sep("=", f"redis-py {redispy_version()}'s stream tests (test_x*, sync and asyncio)")
    lines: List[str] = [f"{what:<44} {counts}" for what, counts in RESULTS.items()]
    for line in lines:
        terminalreporter.write_line(line)
