"""The bare connection: redis-py's own per-command cost with neither packing nor parsing.

:class:`BareConnection` is a ``redis.connection.Connection`` with no socket. ``send_command``
only records the command name; in a pipeline ``pack_commands`` returns the list of names and
``send_packed_command`` records them. ``read_response`` hands back, for the oldest recorded name,
the reply as a Python value exactly as redis-py's parser returns it: derived once per command
shape by a helper :class:`floor.FloorConnection` (same constructor arguments, so the same parser
class: hiredis when installed) from the floor's canned RESP bytes, then cached until the canned
table changes. ``can_read`` is False (no buffered data, no ``poll()``).

What remains of a command is what every connection-class fake pays at the least: the ``Redis``
command method, ``execute_command``, the pool's ``get_connection``/``release``, the reply callback
that builds the result (``parse_stream_list`` …). A fake whose direct path skips packing and
parsing (as ``fake_streams`` does) cannot cost less than this plus its own engine work, so
``fakeredis/bare`` is the best "× faster than fakeredis" any such fake can show on this machine.

Reply values are shared between reads; only the top-level list is copied for each read, because
one callback assigns into it (``parse_xautoclaim``: ``response[1] = ...``); no callback used by
the workloads mutates anything deeper (:func:`check_unchanged` verifies it after a run).
"""

from __future__ import annotations

import copy
from collections import deque
from typing import Any, Deque, Dict, List, Optional

import floor
import redis


class BareConnection(redis.connection.Connection):
    """``redis.Connection`` answering from parsed replies of ``canned=`` (a :class:`floor.Canned`)."""

    def __init__(self, canned: Optional[floor.Canned] = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.canned = canned if canned is not None else floor.Canned()
        self._helper_kwargs = kwargs
        self._helper: Optional[floor.FloorConnection] = None
        self._names: Deque[Any] = deque()
        self._source: Optional[Dict[str, bytes]] = None  # the canned table the caches were derived from
        self._cache: Dict[Any, Any] = {}
        self._cache_raw: Dict[Any, Any] = {}  # disable_decoding=True
        self.derived: Dict[Any, Any] = {}  # name -> pristine copy of the last derived value (for checks)

    def _connect(self) -> floor.InertSocket:
        return floor.InertSocket()  # carries nothing

    def disconnect(self, *args: Any, **kwargs: Any) -> None:
        self._names.clear()
        super().disconnect(*args, **kwargs)

    # ------------------------------------------------------------------------------- sending
    def send_command(self, *args: Any, **kwargs: Any) -> None:
        """O(1): records the command name only."""
        self._names.append(args[0])

    def pack_commands(self, commands: Any) -> List[Any]:
        """The names of a pipeline's commands (nothing is packed)."""
        return [args[0] for args in commands]

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        self._names.extend(command)

    def can_read(self, timeout: float = 0) -> bool:
        return False

    # ------------------------------------------------------------------------------- reading
    def read_response(self, disable_decoding: bool = False, **kwargs: Any) -> Any:
        """O(1) on a cache hit (plus a shallow copy of a top-level list)."""
        name = self._names.popleft()
        if self.canned.replies is not self._source:
            self._source = self.canned.replies
            self._cache.clear()
            self._cache_raw.clear()
        cache = self._cache_raw if disable_decoding else self._cache
        try:
            value = cache[name]
        except KeyError:
            value = cache[name] = self._derive(name, disable_decoding)
        return value[:] if type(value) is list else value

    def _derive(self, name: Any, disable_decoding: bool) -> Any:
        """Parse the canned reply of ``name`` with redis-py's parser (a floor connection's read)."""
        helper = self._helper
        if helper is None:
            helper = self._helper = floor.FloorConnection(canned=self.canned, **self._helper_kwargs)
        if helper._sock is None:
            helper.connect()  # before packing: the floor queues a reply only for a connected socket
        args = (name, self.protocol) if str(name).upper() == "HELLO" else (name,)
        helper.send_command(*args)
        value = helper.read_response(disable_decoding=disable_decoding)
        self.derived[name] = copy.deepcopy(value)
        return value

    def check_unchanged(self) -> List[Any]:
        """Names whose cached value no longer equals what was derived (a callback mutated it)."""
        return [name for name, value in self._cache.items() if name in self.derived and value != self.derived[name]]

    # redis-py >= 8 maintenance notifications would resolve the host name; nothing to resolve here.
    def activate_maint_notifications_handling_if_enabled(self, *args: Any, **kwargs: Any) -> None:
        return None

    def get_resolved_ip(self) -> Optional[str]:
        return None

    def repr_pieces(self) -> List[Any]:
        return [("bare", "parsed replies")]


def bare_client(canned: floor.Canned, protocol: Optional[int]) -> redis.Redis:
    """A ``redis.Redis`` on the bare connection; ``protocol=None`` keeps redis-py's default."""
    kwargs: Dict[str, Any] = {"connection_class": BareConnection, "canned": canned}
    if protocol is not None:
        kwargs["protocol"] = protocol
    return redis.Redis(connection_pool=redis.ConnectionPool(**kwargs))
