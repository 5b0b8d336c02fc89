"""Ported Redis tests (tests/unit/type/stream*.tcl) and the seed documents' examples, run through ``pair``.

The ``pair`` fixture and its oracles come from :mod:`tests.conformance.conftest` (imported below, so the
fixtures are the same objects and the real servers are started once per session whichever directory runs).
Self-check mode (real servers only, no fake side): ``FAKE_STREAMS_ORACLE_SELF_CHECK=1``; the
``--oracle-self-check`` option exists only when tests/conformance's conftest is loaded too.

The helpers below translate Tcl idioms: ``assert_error <glob>`` (:func:`error_matching`), ``dict get`` on a
RESP2 flat map or a RESP3 map (:func:`as_map`), XREAD's ``{{key entries} ...}`` in either protocol
(:func:`stream_pairs`), and ``after <ms>`` (:func:`let_time_pass`).
"""

from __future__ import annotations

import fnmatch
import time
from typing import Any, Dict, List, Optional

import pytest

from fake_streams.errors import ReplyError
from tests.conformance import conftest as _conformance
from tests.conformance.conftest import conformance_target, oracle_pool, pair  # noqa: F401  (fixtures)
from tests.conformance.oracles import summary_lines
from tests.conformance.replies import REPEATED_KEYS, Err, expected_err, ids

__all__ = [
    "Err",
    "as_map",
    "error_matching",
    "expect_error",
    "fields_of",
    "flat_len",
    "ids",
    "let_time_pass",
    "stream_pairs",
    "xadd_auto",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    for item in items:
        if "pair" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if config.pluginmanager.is_registered(_conformance):
        return  # tests/conformance's conftest prints the same table
    lines = summary_lines()
    if not lines:
        return
    mode = "real servers only (self-check)" if _conformance.self_check_mode(config) else "fake vs real, raw replies"
    terminalreporter.write_sep("=", f"conformance comparisons, ported tests ({mode})")
    for line in lines:
        terminalreporter.write_line(line)


# ---------------------------------------------------------------------------------------------
# Commands


def xadd_auto(p: Any, *argv: Any) -> Any:
    """``XADD`` whose ID is made from the clock (``*``): the two sides' IDs are paired (replies.ids)."""
    return p.same("XADD", *argv, normalize=ids)


def expect_error(p: Any, key: str, /, *argv: Any, **params: Any) -> Err:
    """Both sides reply with the error ``key`` of the profile's table, formatted with ``params``.

    Like ``pair.same_error`` but accepts a ``key=`` parameter (NOGROUP texts name the key), which
    ``same_error``'s own first parameter would swallow.
    """
    __tracebackhide__ = True
    want = expected_err(ReplyError(key, **params).render(p.profile.errors))
    got = p.same(*argv)
    assert got == want, f"expected {want!r}, got {got!r}"
    return got


def error_matching(p: Any, pattern: str, *argv: Any) -> Err:
    """Tcl ``assert_error <pattern> {r ...}``: an error whose full text (``ERR ...``) matches the glob.

    The two sides are also compared exactly (``pair.same``), so the glob only states what the Tcl test
    states; the real server fixes the rest of the text.
    """
    __tracebackhide__ = True
    got = p.same(*argv)
    assert isinstance(got, Err), f"expected an error matching {pattern!r}, got {got!r}"
    assert fnmatch.fnmatchcase(got.full, pattern), f"error {got.full!r} does not match {pattern!r}"
    return got


# ---------------------------------------------------------------------------------------------
# Reply shapes (Tcl sees RESP2; the ports run RESP2 and RESP3)


def as_map(reply: Any) -> Dict[bytes, Any]:
    """Tcl ``dict get``: a RESP3 map as is, a RESP2 flat ``[k1, v1, k2, v2, ...]`` array as a dict."""
    if isinstance(reply, dict):
        return reply
    assert isinstance(reply, list) and len(reply) % 2 == 0, f"not a map reply: {reply!r}"
    return {reply[i]: reply[i + 1] for i in range(0, len(reply), 2)}


def flat_len(reply: Any) -> int:
    """Tcl ``llength`` of a map reply as RESP2 sends it (2 per field)."""
    return 2 * len(reply) if isinstance(reply, dict) else len(reply)


def stream_pairs(reply: Any) -> Optional[List[List[Any]]]:
    """XREAD / XREADGROUP reply as Tcl sees it: ``[[key, entries], ...]`` (RESP3 sends a map); nil stays None."""
    if isinstance(reply, dict):
        if REPEATED_KEYS in reply:  # a RESP3 map naming a key twice, as captured (tests/conformance/replies.py)
            return reply[REPEATED_KEYS]
        return [[k, v] for k, v in reply.items()]
    return reply


def fields_of(entry: List[Any]) -> List[bytes]:
    """``lindex $entry 1``: the field/value list of ``[id, [f, v, ...]]``."""
    return entry[1]


def let_time_pass(ms: int) -> None:
    """Tcl ``after <ms>`` before a command that needs idle time (XCLAIM / XAUTOCLAIM / XPENDING IDLE).

    The fake's ManualClock needs no waiting: ``pair`` sets it to the real server's ``TIME`` before every
    command sent to the fake, so the fake sees exactly the time that passed on the real server.
    """
    time.sleep(ms / 1000)  # real-time: the real server's PEL idle times must grow past min-idle-time
