"""Fixtures of the redis-py suite harness: the session's oracles (shared with tests/conformance) and the counts.

``redispy_source`` fetches redis-py's tests once per session (:func:`tests.redispy.harness.redispy_source`);
without them (offline, no PyPI) the tests skip with the reason, and fail with FAKE_STREAMS_REQUIRE_REAL=1 (CI
reaches PyPI). The terminal summary prints each run's counts (``RESULTS``).
"""

from __future__ import annotations

from typing import Dict, List

import pytest

from tests.conformance import conftest as _conformance
from tests.conformance.conftest import oracle_pool  # noqa: F401  (fixture)

from .harness import redispy_source as _fetch
from .harness import redispy_version

#: "redis-py 8.1.0 stream tests on <what>" -> "N passed, N failed, N skipped"
RESULTS: Dict[str, str] = {}


@pytest.fixture(scope="session")
def redispy_source():
    root, why = _fetch()
    if root is None:
        _conformance.missing_oracle(why)
    return root


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not RESULTS:
        return
    terminalreporter.write_sep("=", f"redis-py {redispy_version()}'s stream tests (test_x*, sync and asyncio)")
    lines: List[str] = [f"{what:<44} {counts}" for what, counts in RESULTS.items()]
    for line in lines:
        terminalreporter.write_line(line)
