"""The fast loop / full run switch (tests/support/budget.py, tests/conftest.py) does what CONTRIBUTING.md says."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import _asked_for, _repeats_a_target
from tests.support import budget as budget_module
from tests.support.budget import SLOW_ENV, budget, full_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("value, full", [("", False), ("0", False), ("no", False), ("false", False),
                                         ("1", True), ("yes", True), ("TRUE", True)])
def test_budget_follows_the_environment(monkeypatch, value, full):
    monkeypatch.setenv(SLOW_ENV, value)
    assert full_run() is full
    assert budget(fast=10, full=1000) == (1000 if full else 10)


def test_the_slow_marker_is_registered(pytestconfig):
    assert any(line.startswith("slow:") for line in pytestconfig.getini("markers"))


def test_this_session_holds_slow_tests_only_when_asked(request):
    """The fast loop deselects every slow test that the command line did not ask for by name or by -m."""
    slow = [item for item in request.session.items if item.get_closest_marker("slow")]
    if full_run():
        return
    assert all(_asked_for(request.config, item) for item in slow), [item.nodeid for item in slow][:5]


def test_a_second_profile_on_the_same_oracle_is_slow_outside_tests_conformance(request):
    repeated = [item for item in request.session.items if _repeats_a_target(item)]
    assert all(item.get_closest_marker("slow") for item in repeated)
    # inside tests/conformance only the second stand-in (Target.repeat) is: the first stays in the fast loop
    assert all(item.callspec.params["conformance_target"].repeat for item in repeated
               if "tests/conformance/" in item.nodeid)


def test_ci_runs_the_slow_tests_with_real_servers_required():
    script = (ROOT / ".ci" / "run").read_text()
    runs = [line for line in script.splitlines() if line.startswith("python -m pytest")]
    assert runs and all("--run-slow" in line for line in runs), runs
    assert "export FAKE_STREAMS_REQUIRE_REAL=1" in script


def test_the_module_documents_its_environment_variable():
    assert SLOW_ENV in (budget_module.__doc__ or "")
