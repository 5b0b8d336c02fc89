"""Stream values as fakeredis stores them: :class:`StreamValue` and the CONFIG view it reads node limits from.

Being a fakeredis ``BaseModel`` with ``_model_type = b"stream"`` makes TYPE, EXISTS, DEL, RENAME, EXPIRE/TTL,
COPY, ``SCAN … TYPE stream``, FLUSHALL and WRONGTYPE (for non-stream commands) work unchanged.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from ..stream import Stream
from .compat import BaseModel


class _SharedConfig:
    """The server's CONFIG dict as a stream sees it; COPY's deepcopy keeps sharing it."""

    __slots__ = ("config", "_parsed", "_limits")

    def __init__(self, config: Dict[bytes, bytes]) -> None:
        self.config = config
        self._limits: Optional[Tuple[Any, Any, Tuple[int, int]]] = None  # node_limits(): raw values, result
        self._parsed: Dict[bytes, Tuple[Any, Optional[int]]] = {}  # name -> (raw value object, its int)

    def __deepcopy__(self, memo: Any) -> _SharedConfig:
        return self

    def node_limits(self) -> Tuple[int, int]:
        """``(stream-node-max-bytes, stream-node-max-entries)`` as the CONFIG dict says now, the defaults for
        unset or non-numeric values. O(1) while both stored value objects are the ones parsed last."""
        config = self.config
        raw_bytes = config.get(b"stream-node-max-bytes")
        raw_entries = config.get(b"stream-node-max-entries")
        last = self._limits
        if last is not None and last[0] is raw_bytes and last[1] is raw_entries and raw_bytes is not None:
            return last[2]
        max_bytes = self.get_int(b"stream-node-max-bytes")
        max_entries = self.get_int(b"stream-node-max-entries")
        limits = (Stream.stream_node_max_bytes if max_bytes is None else max_bytes,
                  Stream.stream_node_max_entries if max_entries is None else max_entries)
        self._limits = (raw_bytes, raw_entries, limits)
        return limits

    def get_int(self, name: bytes) -> Optional[int]:
        """The setting as an int (None: unset or not a number). O(1) while the stored value object is
        the one parsed last (CONFIG SET stores a new one)."""
        raw = self.config.get(name)
        if raw is not None:
            parsed = self._parsed.get(name)
            if parsed is not None and parsed[0] is raw:
                return parsed[1]
        else:  # config names are case-insensitive
            raw = next((v for k, v in self.config.items() if bytes(k).lower() == name), None)
            if raw is None:
                return None
        try:
            value: Optional[int] = int(raw)
        except (TypeError, ValueError):
            value = None
        self._parsed[name] = (raw, value)
        return value


def _config_property(name: bytes, attr: str) -> property:
    """A Stream setting that reads ``CONFIG SET <name>`` live (as the server does at every append/trim),
    unless the instance was given its own value."""
    default = getattr(Stream, attr)
    own = "_own_" + attr

    def get(self: StreamValue) -> int:
        value = self.__dict__.get(own)
        if value is None and self._sf_config is not None:
            value = self._sf_config.get_int(name)
        return default if value is None else value

    def set_(self: StreamValue, value: int) -> None:
        self.__dict__[own] = value
        self.__dict__["_sf_own_limits"] = True

    return property(get, set_)


class StreamValue(Stream, BaseModel):
    """A :class:`~fake_streams.stream.Stream` as fakeredis stores it (TYPE reports ``stream``).

    ``stream-node-max-entries`` / ``stream-node-max-bytes`` follow the server's CONFIG.
    """

    _model_type = b"stream"
    _sf_config: Optional[_SharedConfig] = None
    _sf_own_limits = False  # True once either setting was given to this instance
    stream_node_max_entries = _config_property(b"stream-node-max-entries", "stream_node_max_entries")
    stream_node_max_bytes = _config_property(b"stream-node-max-bytes", "stream_node_max_bytes")

    def node_limits(self) -> Tuple[int, int]:
        """Both settings at once (each XADD reads them): one look at the CONFIG dict. O(1)."""
        config = self._sf_config
        if config is None or self._sf_own_limits:
            return self.stream_node_max_bytes, self.stream_node_max_entries
        return config.node_limits()
