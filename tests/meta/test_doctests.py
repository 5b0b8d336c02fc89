"""The examples in the docstrings of ``fake_streams`` and ``pytest_plugin`` run, and show what they print.

One test per docstring that has examples (``fake_streams.clock.ManualClock``, ``fake_streams.patching.patch_redis``
…), found by walking both packages, so a new module's examples are collected without a list to update. Each
docstring runs in a fresh namespace of its module, with doctest's default options (exact output). A test
that must find at least the examples known today guards against the walk silently finding none.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from types import ModuleType
from typing import Iterator, List

import pytest

import fake_streams
import pytest_plugin

PACKAGES = (fake_streams, pytest_plugin)
#: docstrings with examples when this test was written (more may come)
KNOWN = {
    "fake_streams",
    "fake_streams.clock.ManualClock",
    "fake_streams.errors.ReplyError",
    "fake_streams.inspect",
    "fake_streams.patching.address_of",
    "fake_streams.patching.parse_address",
    "fake_streams.patching.patch_redis",
    "fake_streams.server.FakeStreamsServer",
    "fake_streams.tcp",
}


def modules() -> Iterator[ModuleType]:
    for package in PACKAGES:
        yield package
        if hasattr(package, "__path__"):
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                if not info.name.endswith(".__main__"):
                    yield importlib.import_module(info.name)


def examples() -> List[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    found: dict = {}
    for module in modules():
        for test in finder.find(module):
            if not test.examples:
                continue
            found.setdefault(test.name, test)  # a class re-exported by its package is found once, by its own name
    return sorted(found.values(), key=lambda t: t.name)


EXAMPLES = examples()


def test_the_walk_finds_the_known_examples():
    assert KNOWN <= {t.name for t in EXAMPLES}
    assert sum(len(t.examples) for t in EXAMPLES) >= 30


@pytest.mark.parametrize("test", EXAMPLES, ids=lambda t: t.name)
def test_docstring_examples(test: doctest.DocTest):
    output: List[str] = []
    runner = doctest.DocTestRunner()
    test.globs = dict(test.globs)  # each run gets its own copy of the module namespace
    result = runner.run(test, out=output.append, clear_globs=True)
    assert result.failed == 0, "".join(output)
