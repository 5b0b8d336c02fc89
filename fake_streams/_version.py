"""The package version, from one source: the ``version`` in ``pyproject.toml``.

* Running from a source checkout (``pyproject.toml`` of this project beside the package): read it there, so a
  version bump shows at once, whatever copy of the distribution is installed in site-packages.
* Installed (a wheel, an sdist install): the installed distribution's metadata, which the build wrote from
  that same ``pyproject.toml``.
* Neither (the package copied somewhere by hand): ``"0+unknown"``.

``fake_streams.__version__`` calls :func:`version` on first access (``importlib.metadata`` is not imported
by ``import fake_streams``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

DISTRIBUTION = "fake-redis-streams"
UNKNOWN = "0+unknown"

_PROJECT_TABLE = re.compile(r"^\[project\][ \t]*$(.*?)(?=^\[|\Z)", re.M | re.S)


def _string_key(table: str, key: str) -> Optional[str]:
    match = re.search(rf"^{key}\s*=\s*[\"']([^\"']+)[\"']", table, re.M)
    return match.group(1) if match else None


def from_pyproject(path: Path) -> Optional[str]:
    """The ``[project]`` version in ``path`` if that file is this project's, else None."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    table = _PROJECT_TABLE.search(text)
    if table is None or _string_key(table.group(1), "name") != DISTRIBUTION:
        return None
    return _string_key(table.group(1), "version")


def from_metadata() -> Optional[str]:
    """The installed distribution's version, or None when it is not installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        return installed_version(DISTRIBUTION)
    except PackageNotFoundError:
        return None


def version() -> str:
    return from_pyproject(Path(__file__).resolve().parent.parent / "pyproject.toml") or from_metadata() or UNKNOWN
