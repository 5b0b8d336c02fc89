"""Options of the ``fake_redis_streams`` fixture: marker kwargs, ini keys, command-line flags.

Precedence, lowest first: defaults, ini ``fake_redis_streams_<name>``, command line
``--fake-redis-streams-<name>``, then markers from the farthest (module) to the closest (test).
An unknown marker kwarg is a TypeError; a bad value is a ValueError — both at setup.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from fake_streams.profiles import PROFILES

MARKER = "fake_redis_streams"


def redis_py_version() -> Tuple[int, int]:
    """redis-py's (major, minor); imports redis, so only called once a test asks for the fixture."""
    import redis

    return tuple(int(p) for p in redis.__version__.split(".")[:2])  # type: ignore[return-value]


def redis_py_has_protocol() -> bool:
    """redis-py 5.0 added the ``protocol=`` connection argument (RESP3); 4.x takes none and speaks RESP2 only."""
    return redis_py_version() >= (5, 0)

#: name -> (default, help); the marker takes exactly these keyword-only arguments
FIELDS: Dict[str, Tuple[Any, str]] = {
    "version": ("7.4", f"server profile to emulate: {', '.join(PROFILES)}"),
    "clock": (None, "'system' (wall clock) or 'manual' (stands still until .clock.advance(ms)); default: "
                    "'manual' when start_ms is given, else 'system'"),
    "start_ms": (None, "start time of the manual clock in Unix ms (default: now)"),
    "patch": (True, "route every redis-py client the code under test builds to the fake servers"),
    "decode_responses": (False, "decode_responses of .client and .async_client()"),
    "protocol": (None, "RESP protocol (2 or 3) of .client and .async_client(); default: redis-py's"),
    "url": ("redis://localhost:6379/0", "address of .server / .client (other addresses are other servers)"),
    "passthrough_hosts": ((), "hosts ('host', 'host:port', 'unix:/path') that keep real connections while patched"),
    "assert_all_faults_triggered": (True, "fail the test if a fault armed with fail_next() never fired"),
    "topology": ("standalone", "'standalone', 'cluster' (cluster_nodes masters at the url's port and the ports "
                               "after it, for redis.cluster.RedisCluster) or 'sentinel' (a master at the url, "
                               "sentinel_replicas replicas at the ports after it, a sentinel at sentinel_port)"),
    "cluster_nodes": (3, "number of masters of topology='cluster' (1 or more)"),
    "sentinel_master": ("mymaster", "the master's name of topology='sentinel'"),
    "sentinel_replicas": (1, "number of replicas of topology='sentinel' (0 or more)"),
    "sentinel_port": (26379, "the sentinel's port of topology='sentinel' (on the url's host)"),
}
#: options settable from ini and the command line (name -> CLI help); the rest are ini-only
CLI = ("version", "clock", "start_ms", "patch", "protocol", "url", "topology", "cluster_nodes", "sentinel_master",
       "sentinel_replicas", "sentinel_port")
#: defaults shown by name in the marker's signature: pytest cuts a ``markers`` line at its first ``:`` into
#: signature and description (pytest >= 9.1 strips the description, so ``'redis://...'`` would read
#: ``'redis: //...'``); their values follow in the description
_NAMED_DEFAULTS = {n: f"DEFAULT_{n.upper()}" for n, (d, _) in FIELDS.items() if ":" in repr(d)}
SIGNATURE = "fake_redis_streams(*, " + ", ".join(
    f"{n}={_NAMED_DEFAULTS.get(n) or repr(d)}" for n, (d, _) in FIELDS.items()) + ")"


class Options:
    """The resolved, validated options (keyword-only; see :data:`FIELDS`)."""

    __slots__ = tuple(FIELDS) + ("explicit",)
    # the fields (set from FIELDS in __init__), as _validate leaves them
    version: str
    clock: Optional[str]
    start_ms: Optional[int]
    patch: bool
    decode_responses: bool
    protocol: Optional[int]
    url: str
    passthrough_hosts: Tuple[str, ...]
    assert_all_faults_triggered: bool
    topology: str
    cluster_nodes: int
    sentinel_master: str
    sentinel_replicas: int
    sentinel_port: int

    def __init__(self, explicit: Optional[Dict[str, Any]] = None, **kwargs: Any) -> None:
        __tracebackhide__ = True
        unknown = sorted(set(kwargs) - set(FIELDS))
        if unknown:
            raise TypeError(
                f"fake_redis_streams got unexpected keyword argument(s) {', '.join(map(repr, unknown))}; "
                f"it takes {', '.join(FIELDS)}"
            )
        for name, (default, _) in FIELDS.items():
            setattr(self, name, kwargs.get(name, default))
        #: what the markers set explicitly (the dual run skips tests pinned to the manual clock)
        self.explicit: Dict[str, Any] = dict(explicit or {})
        self._validate()

    def _validate(self) -> None:
        __tracebackhide__ = True
        if self.version not in PROFILES:
            raise ValueError(f"fake_redis_streams: unknown version {self.version!r}; choose one of {', '.join(PROFILES)}")
        if self.start_ms is not None:
            self.start_ms = _int("start_ms", self.start_ms)
            if self.clock is None:
                self.clock = "manual"
            elif self.clock != "manual":
                raise ValueError(f"fake_redis_streams: start_ms={self.start_ms} needs clock='manual', not clock={self.clock!r}")
        if self.clock is None:
            self.clock = "system"
        if self.clock not in ("manual", "system"):
            raise ValueError(f"fake_redis_streams: clock must be 'manual' or 'system', not {self.clock!r}")
        if self.protocol is not None:
            self.protocol = _int("protocol", self.protocol)
            if self.protocol not in (2, 3):
                raise ValueError(f"fake_redis_streams: protocol must be 2 or 3, not {self.protocol!r}")
            if self.protocol == 3 and not redis_py_has_protocol():
                raise ValueError(f"fake_redis_streams: protocol=3 needs redis-py >= 5.0; redis-py "
                                 f"{'.'.join(map(str, redis_py_version()))} speaks RESP2 only")
        for name in ("patch", "decode_responses", "assert_all_faults_triggered"):
            setattr(self, name, _bool(name, getattr(self, name)))
        if isinstance(self.passthrough_hosts, str):
            self.passthrough_hosts = (self.passthrough_hosts,)
        self.passthrough_hosts = tuple(str(h) for h in self.passthrough_hosts)
        if self.topology not in ("standalone", "cluster", "sentinel"):
            raise ValueError(f"fake_redis_streams: topology must be 'standalone', 'cluster' or 'sentinel', not "
                             f"{self.topology!r}")
        self.sentinel_master = str(self.sentinel_master)
        self.sentinel_replicas = _int("sentinel_replicas", self.sentinel_replicas)
        if self.sentinel_replicas < 0:
            raise ValueError(f"fake_redis_streams: sentinel_replicas must be 0 or more, not {self.sentinel_replicas}")
        self.sentinel_port = _int("sentinel_port", self.sentinel_port)
        self.cluster_nodes = _int("cluster_nodes", self.cluster_nodes)
        if self.cluster_nodes < 1:
            raise ValueError(f"fake_redis_streams: cluster_nodes must be 1 or more, not {self.cluster_nodes}")
        if "://" not in str(self.url):
            raise ValueError(f"fake_redis_streams: url must look like redis://host:port/db, not {self.url!r}")

    def as_dict(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS}

    def client_kwargs(self) -> Dict[str, Any]:
        """Keyword arguments of ``.client`` / ``.async_client()``: decode_responses, and protocol when set
        (not on redis-py 4.x, which has no such argument: protocol 2 is what it speaks, 3 is refused above)."""
        out: Dict[str, Any] = {"decode_responses": self.decode_responses}
        if self.protocol is not None and redis_py_has_protocol():
            out["protocol"] = self.protocol
        return out

    def __repr__(self) -> str:
        return "Options(" + ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items()) + ")"


def _int(name: str, value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"fake_redis_streams: {name} must be an integer, not {value!r}") from None


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"fake_redis_streams: {name} must be true or false, not {value!r}")


# ------------------------------------------------------------------------------------ registration
def addoption(parser: Any) -> None:
    group = parser.getgroup("fake-redis-streams", "fake-redis-streams (in-memory Redis Streams server)")
    for name in CLI:
        group.addoption(
            f"--fake-redis-streams-{name.replace('_', '-')}",
            dest=f"fake_redis_streams_{name}",
            default=None,
            metavar=name.upper(),
            help=FIELDS[name][1] + f" (ini: fake_redis_streams_{name})",
        )
    group.addoption(
        "--fake-redis-streams-real",
        dest="fake_redis_streams_real",
        default=None,
        metavar="URL",
        help="run the tests against the real server at URL (redis://host:port; flushed before each test) "
        "instead of the fake; tests that need the fake's clock, inspection or faults are skipped "
        "(ini: fake_redis_streams_real)",
    )
    for name, (_, text) in FIELDS.items():
        kind = "linelist" if name == "passthrough_hosts" else "string"
        parser.addini(f"fake_redis_streams_{name}", text, type=kind, default=None)
    parser.addini("fake_redis_streams_real", "URL of a real server for the dual run (see --fake-redis-streams-real)",
                  default=None)


_CONFIGURED: Any = None  # the pytest StashKey of configured()'s result (made on first use: pytest imported)


def configured(config: Any) -> Dict[str, Any]:
    """The options set in ini files and on the command line (CLI wins): read once per session (neither changes
    while it runs; every test asks), a fresh copy each time."""
    global _CONFIGURED
    stash = getattr(config, "stash", None)
    if stash is None:  # not a pytest Config (a stand-in): read it
        return _read_configured(config)
    if _CONFIGURED is None:
        import pytest

        _CONFIGURED = pytest.StashKey[Dict[str, Any]]()
    cached = stash.get(_CONFIGURED, None)
    if cached is None:
        cached = stash[_CONFIGURED] = _read_configured(config)
    return dict(cached)


def _read_configured(config: Any) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for name in FIELDS:
        value = config.getini(f"fake_redis_streams_{name}")
        if value not in (None, "", []):
            out[name] = tuple(value) if isinstance(value, list) else value
    for name in CLI:
        value = config.getoption(f"fake_redis_streams_{name}", None)
        if value is not None:
            out[name] = value
    return out


def real_url(config: Any) -> Optional[str]:
    value = config.getoption("fake_redis_streams_real", None) or config.getini("fake_redis_streams_real")
    return value or None


def resolve(config: Any, node: Any = None, **overrides: Any) -> Options:
    """Options for ``node``: ini/CLI, then its markers (farthest first), then ``overrides``. A test without a marker
    and no overrides gets the session's default Options, built once (nothing changes an Options once made)."""
    __tracebackhide__ = True
    explicit: Dict[str, Any] = {}
    if node is not None:
        marks: List[Any] = list(node.iter_markers(MARKER))
        for mark in reversed(marks):  # iter_markers yields the closest first
            if mark.args:
                raise TypeError(f"fake_redis_streams takes keyword arguments only; got positional {mark.args!r}")
            explicit.update(mark.kwargs)
    explicit.update(overrides)
    if not explicit:
        return _session_default(config)
    merged = configured(config)
    merged.update(explicit)
    return Options(explicit=explicit, **merged)


_DEFAULT: Any = None  # the pytest StashKey of _session_default()'s result (made on first use)


def _session_default(config: Any) -> Options:
    """The Options of ini/CLI alone (a test without a marker), made once per session."""
    global _DEFAULT
    stash = getattr(config, "stash", None)
    if stash is None:  # not a pytest Config (a stand-in): build it
        return Options(explicit={}, **configured(config))
    if _DEFAULT is None:
        import pytest

        _DEFAULT = pytest.StashKey[Options]()
    options = stash.get(_DEFAULT, None)
    if options is None:
        options = stash[_DEFAULT] = Options(explicit={}, **configured(config))
    return options  # type: ignore[no-any-return]


def marker_line() -> str:
    """The ``markers`` ini line: ``signature: description`` (no ``:`` before the separator)."""
    named = "".join(f" {name} is {FIELDS[field][0]!r}." for field, name in _NAMED_DEFAULTS.items())
    return (
        f"{SIGNATURE}: configure the fake_redis_streams fixture for this test, class or module "
        f"(the closest marker wins; the marker implies the fixture).{named}"
    )


__all__ = ["CLI", "FIELDS", "MARKER", "Options", "addoption", "configured", "marker_line", "real_url", "resolve"]
