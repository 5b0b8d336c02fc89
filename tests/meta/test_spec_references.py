"""Every ``spec §…`` reference in the code names a place that exists in ``docs/spec/streams.md``.

The convention (CONTRIBUTING.md, docs/README.md): ``spec §N`` / ``spec §N.M`` is the heading ``## N.`` /
``### N.M`` of docs/spec/streams.md; ``§A–B`` is a range of them; ``§6 row K`` is row K of §6's version table;
``§N.M step K`` / ``§N item K`` is the numbered list item K of that section. One ``spec`` word covers the
``§`` references that follow it in the same clause (``spec §2.6, §2.9, §3``; ``spec §2.1 step 14, §6 row 12``).

Scanned: every ``.py`` file under fake_streams/, pytest_plugin/, tests/ and benchmarks/ (but this one).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "spec" / "streams.md"
SCANNED = ("fake_streams", "pytest_plugin", "tests", "benchmarks")

#: "spec" then the clause it governs: up to a closing bracket, a semicolon or a sentence end
_CLAUSE = re.compile(r"\bspec\s+(§.*?)(?=[);:]|\.\s|\.$|$)", re.S | re.M)
#: one reference inside a clause: §2.3, §2.3–2.5, §6 row 12, §2.1 step 14, §9 item 1
_REF = re.compile(r"§(\d+(?:\.\d+)?)(?:\s*[–-]\s*§?(\d+(?:\.\d+)?))?(?:\s+(row|step|item)s?\s+(\d+)(?:\s*[–-]\s*(\d+))?)?")
_HEADING = re.compile(r"^#{2,4}\s+(\d+(?:\.\d+)?)\.?\s", re.M)


def sections(text: str) -> Dict[str, str]:
    """Section number → its text (up to the next heading of any level)."""
    found = list(_HEADING.finditer(text))
    out: Dict[str, str] = {}
    for i, match in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(text)
        out[match.group(1)] = text[match.end():end]
    return out


def whole_section(number: str, parts: Dict[str, str]) -> str:
    """A section's text including its subsections (``6`` → ``6`` and ``6.x``)."""
    return "".join(body for key, body in parts.items() if key == number or key.startswith(number + "."))


def has_row(body: str, k: int) -> bool:
    return re.search(rf"^\|\s*{k}\s*\|", body, re.M) is not None


def has_item(body: str, k: int) -> bool:
    return re.search(rf"^\s*{k}\.\s", body, re.M) is not None


def problems_of(clause: str, parts: Dict[str, str]) -> List[str]:
    """What in one ``spec …`` clause does not resolve (empty when everything does)."""
    bad: List[str] = []
    refs = list(_REF.finditer(clause))
    if not refs:
        return [f"no section number in {clause!r}"]
    for ref in refs:
        start, end, kind, first, last = ref.groups()
        for number in filter(None, (start, end)):
            if number not in parts:
                bad.append(f"§{number}: no such heading")
        if kind and start in parts:
            body = whole_section(start, parts)
            check = has_row if kind == "row" else has_item
            for k in range(int(first), int(last or first) + 1):
                if not check(body, k):
                    bad.append(f"§{start} {kind} {k}: not in that section")
    return bad


def references() -> List[Tuple[str, int, str]]:
    """``(path, line, clause)`` of every ``spec §`` clause in the scanned trees."""
    out: List[Tuple[str, int, str]] = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path.resolve() == Path(__file__).resolve():
                continue  # this file's docstring and cases talk about the notation itself
            text = path.read_text(encoding="utf-8")
            for match in _CLAUSE.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                out.append((str(path.relative_to(ROOT)), line, " ".join(match.group(1).split())))
    return out


def test_the_spec_is_in_the_repository():
    assert SPEC.is_file(), "docs/spec/streams.md is missing"
    assert (ROOT / "docs" / "spec" / "streams-redis8.md").is_file()


def test_the_code_cites_the_spec():
    """The scan finds the references (a broken pattern would make the next test pass on nothing)."""
    found = references()
    assert len(found) >= 29
    assert {path.split("/")[0] for path, _, _ in found} >= {"fake_streams", "tests"}


def test_every_spec_reference_resolves():
    parts = sections(SPEC.read_text(encoding="utf-8"))
    unresolved = [f"{path}:{line}: spec {clause}: {'; '.join(bad)}"
                  for path, line, clause in references() if (bad := problems_of(clause, parts))]
    assert not unresolved, "references that name nothing in docs/spec/streams.md:\n" + "\n".join(unresolved)


@pytest.mark.parametrize(
    "clause, expected",
    [
        ("§2.1 step 14, §6 row 12", []),
        ("§2.3–2.5", []),
        ("§4.1–4.3", []),
        ("§3.2, §6 row 7", []),
        ("§9 item 2", []),
        ("§2.16", ["§2.16: no such heading"]),
        ("§2.3–2.17", ["§2.17: no such heading"]),
        ("§6 row 99", ["§6 row 99: not in that section"]),
        ("§2.9 step 40", ["§2.9 step 40: not in that section"]),
        ("§9.1", ["§9.1: no such heading"]),
    ],
)
def test_the_checker_itself(clause, expected):
    assert problems_of(clause, sections(SPEC.read_text(encoding="utf-8"))) == expected
