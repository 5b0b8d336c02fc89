"""``fake_streams.__version__``: the pyproject version in a source checkout, the metadata's when installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fake_streams
from fake_streams import _version

ROOT = Path(fake_streams.__file__).resolve().parent.parent


def pyproject_version() -> str:
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["version"]


def test_source_checkout_reports_the_pyproject_version():
    assert (ROOT / "pyproject.toml").is_file(), "tests run from a source checkout"
    assert fake_streams.__version__ == pyproject_version()
    assert "__version__" not in fake_streams.__all__


def test_an_unknown_attribute_is_still_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
        fake_streams.no_such_thing  # noqa: B018


def test_pyproject_of_another_project_is_not_read(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "something-else"\nversion = "9.9"\n')
    assert _version.from_pyproject(tmp_path / "pyproject.toml") is None
    assert _version.from_pyproject(tmp_path / "missing.toml") is None
    (tmp_path / "ours.toml").write_text('[tool.x]\nversion = "1"\n\n[project]\nversion = "2.3.4"\n'
                                        'name = "fake-redis-streams"\n\n[tool.y]\nversion = "5"\n')
    assert _version.from_pyproject(tmp_path / "ours.toml") == "2.3.4"


def _import_from(site: Path, cwd: Path) -> str:
    """``fake_streams.__version__`` in a fresh interpreter that finds the package in ``site`` first."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import fake_streams; "
            "assert fake_streams.__file__.startswith(sys.argv[1]), fake_streams.__file__; "
            "print(fake_streams.__version__)")
    done = subprocess.run([sys.executable, "-c", code, str(site)], cwd=cwd, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_installed_copy_reports_its_metadata_version(tmp_path):
    """What pip makes of a wheel: the package directory and a ``.dist-info`` beside it, no pyproject.toml."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "fake_streams", site / "fake_streams",
                    ignore=shutil.ignore_patterns("__pycache__"))
    info = site / "fake_redis_streams-9.8.7.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-redis-streams\nVersion: 9.8.7\n")
    assert _import_from(site, tmp_path) == "9.8.7"
    shutil.rmtree(info)  # a copy with no metadata of its own: the metadata of another install, or unknown
    assert _import_from(site, tmp_path) == (_version.from_metadata() or _version.UNKNOWN)
