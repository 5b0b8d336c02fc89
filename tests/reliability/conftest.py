"""Fixtures and settings of the reliability suite (stateful differential, fuzzing, isolation).

The real servers are the conformance layer's oracles (:mod:`tests.conformance.oracles`), started once per
session by the same ``oracle_pool`` fixture (imported below), so running this directory with the rest costs
no extra server start. Sizes come from environment variables; the defaults are the CI sizes of issue 6 in the
full run (``--run-slow``, as .ci/run does) and smaller ones in the fast loop (:mod:`tests.support.budget`):

==================================  =======  ====  ==============================================
variable                            full     fast  meaning
==================================  =======  ====  ==============================================
FAKE_STREAMS_DIFF_STEPS             10000    250   state-machine steps per oracle pair (3 full, 2 fast)
FAKE_STREAMS_DIFF_STEPS_PER_EXAMPLE 50       50    longest command sequence of one example
FAKE_STREAMS_DIFF_ALL_PROFILES      off      off   1: also Valkey 9.1.2 vs the "valkey-8.0" profile
FAKE_STREAMS_FUZZ_VECTORS           100000   10000 fuzz vectors in process (all profiles × protocols)
FAKE_STREAMS_FUZZ_TRANSPORT_SHARE   0.2      0.2   share of them sent through the real transport
FAKE_STREAMS_FUZZ_REAL_VECTORS      5000     1000  fuzz vectors also sent to each real server
FAKE_STREAMS_FUZZ_SEED              (none)         fixed fuzz seed (CI: 20240601; locally random)
FAKE_STREAMS_ISOLATION_TESTS        200      50    generated tests in the isolation run
==================================  =======  ====  ==============================================

A long run (≥ 20,000 steps against each server; about 4 minutes per server here)::

    FAKE_STREAMS_DIFF_STEPS=20000 python -m pytest tests/reliability/test_stateful_differential.py -k stateful

Randomness: derandomized (fixed seeds) when ``CI`` or ``FAKE_STREAMS_REQUIRE_REAL`` is set, random
otherwise; a failing run prints its seed.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

from tests.conformance.conftest import oracle_pool  # noqa: F401  (the session's real servers)
from tests.conformance.oracles import require_real

#: figures printed at the end of the session (steps, vectors, comparisons, known differences …)
FIGURES: Counter = Counter()


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    return float(raw) if raw else default


def derandomized() -> bool:
    """CI runs are reproducible: fixed hypothesis seed and fixed fuzz seed."""
    return require_real() or os.environ.get("CI", "").strip() not in ("", "0", "false", "no")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not FIGURES:
        return
    terminalreporter.write_sep("=", "reliability figures")
    for name in sorted(FIGURES):
        terminalreporter.write_line(f"{name:<60}{FIGURES[name]:>12,}")


@pytest.fixture
def figures() -> Counter:
    return FIGURES
