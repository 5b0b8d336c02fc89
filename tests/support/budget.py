"""The fast loop and the full run: which tests run, and how much random work a test does.

``python -m pytest`` is the fast loop: tests marked ``@pytest.mark.slow`` are deselected, and every
:func:`budget` is its small value. ``python -m pytest --run-slow`` (or ``FAKE_STREAMS_SLOW=1`` in the
environment; ``.ci/run`` does it) runs everything with the full values. An explicit ``-m`` expression that
names ``slow``, or a test named by its node id (``file.py::test_x``), runs its slow tests without the flag.

Use it in a test module::

    from tests.support.budget import budget

    STEPS = budget(fast=1_000, full=10_000)          # a size: small in the loop, full in CI

    @pytest.mark.slow                                # a test (or parameter) that only the full run needs
    def test_everything_again(): ...

Rules of thumb (CONTRIBUTING.md): a default test takes well under a second; each command and each real
server stays compared in the fast loop; ``slow`` is for repetitions and long budgets, never for the only
test of something.
"""

from __future__ import annotations

import os
from typing import TypeVar

#: the environment variable behind ``--run-slow`` (tests/conftest.py sets it before test modules import)
SLOW_ENV = "FAKE_STREAMS_SLOW"

T = TypeVar("T")


def full_run() -> bool:
    """True in the full run (``--run-slow`` / ``FAKE_STREAMS_SLOW=1``), False in the fast loop."""
    return os.environ.get(SLOW_ENV, "").strip().lower() not in ("", "0", "false", "no")


def budget(fast: T, full: T) -> T:
    """``full`` in the full run, else ``fast``. Decided when called: call it in a test module (at import,
    which comes after tests/conftest.py has read ``--run-slow``) or in a test, not at a conftest's import."""
    return full if full_run() else fast
