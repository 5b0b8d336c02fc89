"""redis-py's own stream tests as an oracle: its sdist's tests, run unchanged against the fake over TCP.

redis-py's CI runs ``tests/test_commands.py`` and ``tests/test_asyncio/test_commands.py`` against real Redis
servers; each stream test (``test_x*``) is gated by ``skip_if_server_version_lt`` on the ``redis_version`` its
conftest reads from the server's INFO at session start. So the same tests, run against ``python -m fake_streams
serve --version P``, check the fake's replies as redis-py's authors expect them for the version the profile
reports (``INFO redis_version``: 7.4.1 on "7.4", 7.2.4 on the Valkey profiles, as the real Valkey reports).

Nothing of redis-py's is copied into this repository: :func:`redispy_source` fetches the sdist of the installed
redis-py from PyPI (``pip download --no-binary``) at test time and keeps its ``tests/`` in a cache directory.
The tests run in a subprocess (``python -m pytest <their files> -k test_x --redis-url=…``) with their own
conftest, fixtures, skip markers and pytest settings (the sdist's pyproject.toml: ``asyncio_mode = auto``); the
installed redis-py is the client (the sdist's ``redis/`` is not extracted). The outcome of every test is read
from a JUnit XML report. Those subprocesses keep their bytecode (pytest's rewritten test modules included) in a
cache directory of their own (:func:`pycache_env`), so only the first run compiles redis-py's two large test
files. Every subprocess this module starts is known to :func:`stop_all_runs` until it ends (tests/redispy
makes its runs in a background thread, :mod:`tests.redispy.background`, which stops them at the session's end),
and runs at the niceness its thread asked for (:func:`set_thread_niceness`: the background thread's runs take
only the CPU the session leaves idle).

This module knows how to fetch, serve and run; the expectations are in ``test_redispy_streams.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import redis

REPO = Path(__file__).resolve().parents[2]
#: A directory that already holds redis-py's ``tests/`` (skips the download), e.g. a git checkout at the tag.
SOURCE_ENV = "FAKE_STREAMS_REDISPY_SRC"
#: Where the fetched tests are kept between runs (default ``~/.cache/fake-redis-streams``).
CACHE_ENV = "FAKE_STREAMS_CACHE"
#: The files of redis-py's suite whose ``test_x*`` functions are the stream tests (sync and asyncio clients).
TEST_FILES = ("tests/test_commands.py", "tests/test_asyncio/test_commands.py")
SELECT = "test_x"
DOWNLOAD_TIMEOUT_S = 180
RUN_TIMEOUT_S = 600
SERVE_TIMEOUT_S = 30
#: the subprocesses started here that have not ended yet (see :func:`stop_all_runs`)
_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()
_THREAD = threading.local()


def set_thread_niceness(niceness: int) -> None:
    """The subprocesses this thread starts from now on run under ``nice -n niceness`` (where ``nice`` exists)."""
    _THREAD.niceness = niceness


def _niced(argv: List[str]) -> List[str]:
    niceness = getattr(_THREAD, "niceness", 0)
    nice = shutil.which("nice") if niceness else None
    return [nice, "-n", str(niceness), *argv] if nice else argv


def _started(proc: subprocess.Popen) -> subprocess.Popen:
    with _LIVE_LOCK:
        _LIVE.add(proc)
    return proc


def _ended(proc: subprocess.Popen) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(proc)


def stop_all_runs() -> None:
    """Terminate every subprocess of this module still running (a suite run, a served fake): the calls waiting
    on them return (a run then raises: it produced no report)."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()


def redispy_version() -> str:
    return redis.__version__


def _cache_dir() -> Path:
    root = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "fake-redis-streams")
    return Path(root) / f"redis-py-{redispy_version()}"


def pycache_env(env: Dict[str, str]) -> Dict[str, str]:
    """``env`` for a subprocess of this harness that writes and reuses bytecode in the cache directory
    (``PYTHONPYCACHEPREFIX``), also where PYTHONDONTWRITEBYTECODE is set: without it every run of redis-py's
    suite compiles and assertion-rewrites its test files again (seconds of CPU per run). Nothing is written next
    to any source file."""
    out = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out["PYTHONPYCACHEPREFIX"] = str(_cache_dir().parent / "pycache")
    return out


def _has_tests(root: Path) -> bool:
    return all((root / name).is_file() for name in (*TEST_FILES, "tests/conftest.py", "pyproject.toml"))


def redispy_source() -> Tuple[Optional[Path], str]:
    """``(directory holding redis-py's tests/, "")`` or ``(None, why not)``. Downloads the sdist at most once."""
    env = os.environ.get(SOURCE_ENV)
    if env:
        root = Path(env)
        return (root, "") if _has_tests(root) else (None, f"{SOURCE_ENV}={env!r} has no {', '.join(TEST_FILES)}")
    cache = _cache_dir()
    if _has_tests(cache):
        return cache, ""
    with tempfile.TemporaryDirectory(prefix="fake-streams-redispy-") as tmp:
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--quiet",
                f"redis=={redispy_version()}", "-d", tmp]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"could not download redis-py {redispy_version()}'s sdist ({' '.join(argv[2:])}): {exc}"
        sdists = sorted(Path(tmp).glob("redis-*.tar.gz"))
        if done.returncode != 0 or not sdists:
            return None, (f"could not download redis-py {redispy_version()}'s sdist (offline?): "
                          f"{' '.join(argv[2:])} said {(done.stderr or done.stdout).strip()[-500:]!r}")
        staged = Path(tmp) / "staged"
        why = _extract_tests(sdists[0], staged)
        if why:
            return None, why
        cache.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(cache, ignore_errors=True)
        shutil.move(str(staged), str(cache))
    return (cache, "") if _has_tests(cache) else (None, f"redis-py {redispy_version()}'s sdist ships no {TEST_FILES}")


def _extract_tests(sdist: Path, dest: Path) -> str:
    """Extract the sdist's ``tests/`` tree (regular files only, no path leaving ``dest``) into ``dest``."""
    dest.mkdir(parents=True)
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            wanted = parts[1:] == ("pyproject.toml",) or (len(parts) >= 3 and parts[1] == "tests")  # their pytest config
            if not wanted or not member.isfile() or ".." in parts:
                continue
            target = dest.joinpath(*parts[1:])
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            if source is None:
                continue
            with source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
    return "" if _has_tests(dest) else f"{sdist.name} has no {', '.join(TEST_FILES)}"


class FakeServerProcess:
    """``python -m fake_streams serve --port 0 --version <profile>`` from this repository (its first stdout line
    is the URL). A context manager: stopped with SIGTERM (the server exits 0 on it)."""

    def __init__(self, profile: str, cluster: int = 0) -> None:
        self.profile = profile
        self.cluster = cluster  # > 0: ``serve --cluster N`` (the first node's URL is kept)
        self.proc: Optional[subprocess.Popen] = None
        self.url = ""
        self._stderr = tempfile.TemporaryFile(mode="w+")  # never a pipe nobody reads

    def __enter__(self) -> FakeServerProcess:
        argv = [sys.executable, "-m", "fake_streams", "serve", "--port", "0", "--version", self.profile]
        if self.cluster:
            argv += ["--cluster", str(self.cluster)]
        self.proc = _started(subprocess.Popen(_niced(argv), cwd=REPO, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                              stdin=subprocess.DEVNULL, env=pycache_env(dict(os.environ))))
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()  # blocks until the server listens (or exits)
        if not line.startswith("redis://"):
            self._stderr.seek(0)
            err = self._stderr.read()
            self.__exit__()
            raise RuntimeError(f"`{' '.join(argv)}` printed {line!r}, not a URL: {err[-1000:]}")
        self.url = line
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=SERVE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=SERVE_TIMEOUT_S)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()
        _ended(self.proc)
        self.proc = None


@dataclass
class SuiteRun:
    """The outcome of every selected redis-py test: ``"passed"``, ``"failed"`` (failure or error) or ``"skipped"``."""

    outcomes: Dict[str, str] = field(default_factory=dict)
    messages: Dict[str, str] = field(default_factory=dict)  # test -> first lines of its failure
    log: str = ""

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes.values() if o == outcome)

    def with_outcome(self, outcome: str) -> List[str]:
        return sorted(t for t, o in self.outcomes.items() if o == outcome)

    def summary(self) -> str:
        return f"{self.count('passed')} passed, {self.count('failed')} failed, {self.count('skipped')} skipped"


def run_suite(source: Path, url: str, cluster_nodes: int = 0) -> SuiteRun:
    """redis-py's stream tests from ``source`` against the server at ``url``, in a subprocess. O(tests).
    ``cluster_nodes``: ``url`` is a node of a cluster of that many masters (redis-py's suite then builds
    ``RedisCluster`` clients and skips its ``onlynoncluster`` tests)."""
    with tempfile.TemporaryDirectory(prefix="fake-streams-redispy-run-") as tmp:
        report = Path(tmp) / "junit.xml"
        cluster = [f"--redis-cluster-nodes={cluster_nodes}"] if cluster_nodes else []
        argv = [sys.executable, "-m", "pytest", *TEST_FILES, *cluster, "-k", SELECT, f"--redis-url={url}", "-q",
                "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:fake_redis_streams",
                "-W", "ignore", f"--junitxml={report}"]
        env = pycache_env({k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")})
        proc = _started(subprocess.Popen(_niced(argv), cwd=source, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                         stdin=subprocess.DEVNULL, env=env))
        try:
            stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        finally:
            _ended(proc)
        log = stdout[-4000:] + stderr[-2000:]
        if not report.is_file():
            raise RuntimeError(f"redis-py's tests produced no report (exit {proc.returncode}):\n{log}")
        run = _parse_junit(report.read_text())
    run.log = log
    if not run.outcomes:
        raise RuntimeError(f"redis-py's tests selected nothing with -k {SELECT}:\n{log}")
    return run


def _parse_junit(text: str) -> SuiteRun:
    run = SuiteRun()
    for case in ET.fromstring(text).iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                run.messages[name] = (child.get("message") or child.text or "")[:400]
                break
            if child.tag == "skipped":
                outcome = "skipped"
        run.outcomes[name] = outcome
    return run
