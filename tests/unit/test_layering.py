"""Import layering: fakeredis only inside the adapter package, neither redis nor fakeredis in the engine, and
no import cycles inside the adapter (each of its modules imports only those its docstring lists above it)."""

from __future__ import annotations

import ast
import pathlib
from typing import Dict, Iterator, Set, Tuple

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fake_streams"
ADAPTER = PACKAGE / "_fakeredis"
#: The pure engine: the data model, the command handlers and their replies, no transport.
ENGINE = ("stream.py", "entryindex.py", "idindex.py", "ids.py", "groups.py", "nodes.py", "errors.py", "reply.py",
          "profiles.py", "clock.py", "inspect.py", "commands")


def _modules(root: pathlib.Path) -> Iterator[pathlib.Path]:
    yield from sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: pathlib.Path) -> Iterator[Tuple[int, str]]:
    """``(level, dotted name)`` of every import in ``path`` (``level`` > 0: relative), at any depth."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield 0, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level and node.module is None:  # from . import x
                for alias in node.names:
                    yield node.level, alias.name
            else:
                yield node.level, node.module or ""


def _top(name: str) -> str:
    return name.split(".", 1)[0]


@pytest.mark.parametrize("path", [p for p in _modules(ROOT / "fake_streams") if ADAPTER not in p.parents]
                         + list(_modules(ROOT / "pytest_plugin")), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_adapter_imports_fakeredis(path: pathlib.Path) -> None:
    offending = [name for level, name in _imports(path) if level == 0 and _top(name) == "fakeredis"]
    assert not offending, f"{path.relative_to(ROOT)} imports {offending}: fakeredis belongs in fake_streams/_fakeredis/"


@pytest.mark.parametrize("path", [p for name in ENGINE for p in ([PACKAGE / name] if name.endswith(".py")
                                                                 else list(_modules(PACKAGE / name)))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_engine_imports_neither_redis_nor_fakeredis(path: pathlib.Path) -> None:
    offending = [name for level, name in _imports(path) if level == 0 and _top(name) in ("redis", "fakeredis")]
    assert not offending, f"{path.relative_to(ROOT)} imports {offending}: the engine is pure"
    relative = [name for level, name in _imports(path) if level and _top(name) in ("_fakeredis", "connection")]
    assert not relative, f"{path.relative_to(ROOT)} imports the transport ({relative})"


def _adapter_graph() -> Dict[str, Set[str]]:
    """Module-level imports between the adapter's modules (``from . import x`` and ``from .x import …``)."""
    graph: Dict[str, Set[str]] = {}
    for path in _modules(ADAPTER):
        name = path.stem
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps = graph.setdefault(name, set())
        for node in tree.body:  # module level only: a function-level import cannot make a cycle at import time
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                targets = [a.name for a in node.names] if node.module is None else [_top(node.module)]
                deps.update(t for t in targets if (ADAPTER / f"{t}.py").exists() and t != name)
    return graph


def test_the_adapter_package_has_no_import_cycle() -> None:
    graph = _adapter_graph()
    graph.pop("__init__", None)
    state: Dict[str, int] = {}

    def visit(node: str, path: Tuple[str, ...]) -> None:
        if state.get(node) == 2:
            return
        assert state.get(node) != 1, f"import cycle in fake_streams/_fakeredis: {' -> '.join(path + (node,))}"
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            visit(dep, path + (node,))
        state[node] = 2

    for node in sorted(graph):
        visit(node, ())


def test_the_cycle_check_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above sees a cycle when there is one."""
    monkeypatch.setattr(f"{__name__}._adapter_graph", lambda: {"a": {"b"}, "b": {"a"}})
    with pytest.raises(AssertionError, match="import cycle"):
        test_the_adapter_package_has_no_import_cycle()
