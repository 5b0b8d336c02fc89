"""The values the codec reads and writes: plain data, no engine or fakeredis types.

A :class:`Value` is ``kind`` + ``data``:

* ``"string"`` — bytes;
* ``"list"`` — list of bytes, head first;
* ``"set"`` — list of distinct bytes (the order of a listpack set; any order for the others);
* ``"zset"`` — list of ``(member, score)`` pairs, distinct members (any order: the encoders sort);
* ``"hash"`` — list of ``(field, value)`` pairs, distinct fields, in insertion order; ``field_ttls``
  maps fields with a TTL to their absolute expiry (Unix ms; Redis 7.4's hash field expiration);
* ``"stream"`` — a :class:`StreamData`.

:class:`Encodings` is the part of the server's CONFIG that decides the compact encodings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

StreamIDPair = Tuple[int, int]


@dataclass
class Value:
    kind: str
    data: Any
    field_ttls: Dict[bytes, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Encodings:
    """``*-max-listpack-*`` / ``set-max-intset-entries`` / ``list-max-listpack-size`` / ``rdbcompression``."""

    list_max_listpack_size: int = -2
    set_max_intset_entries: int = 512
    set_max_listpack_entries: int = 128
    set_max_listpack_value: int = 64
    zset_max_listpack_entries: int = 128
    zset_max_listpack_value: int = 64
    hash_max_listpack_entries: int = 512
    hash_max_listpack_value: int = 64
    rdbcompression: bool = True


@dataclass
class EntryData:
    """One entry of a node's listpack: live or a tombstone (``deleted``), fields ``[f1, v1, ...]``."""

    id: StreamIDPair
    fields: List[bytes]
    deleted: bool = False


@dataclass
class NodeData:
    """One listpack macro node: its master ID (the rax key), master field names and entries in order."""

    master: StreamIDPair
    master_fields: List[bytes]
    entries: List[EntryData]


@dataclass
class PendingData:
    """One PEL row of a group: entry ID, last delivery time (Unix ms), delivery count, owner name."""

    id: StreamIDPair
    delivery_time: int
    delivery_count: int
    consumer: Optional[bytes]  # None: owner-less (NACKed, listed in GroupData.nacked), or while a payload is read


@dataclass
class ConsumerData:
    name: bytes
    seen_time: int
    active_time: int  # -1: never active; for payloads without it, the seen time (as the server does)


@dataclass
class GroupData:
    name: bytes
    last_id: StreamIDPair
    entries_read: int  # -1: unknown
    pending: List[PendingData]  # ascending IDs
    consumers: List[ConsumerData]  # ascending names
    #: the owner-less (NACKed, Redis 8.8) rows' IDs in NACK order; those rows have ``consumer`` None
    nacked: List[StreamIDPair] = field(default_factory=list)


@dataclass
class IdmpData:
    """A stream's IDMP state (Redis 8.6, RDB_TYPE_STREAM_LISTPACKS_4): IDMP-DURATION (s), IDMP-MAXSIZE, per
    producer ID its tracked idempotent IDs oldest first with their entry IDs, and the two counters."""

    duration: int
    maxsize: int
    producers: List[Tuple[bytes, List[Tuple[bytes, StreamIDPair]]]]  # ascending producer IDs
    iids_added: int = 0
    iids_duplicates: int = 0


@dataclass
class StreamData:
    nodes: List[NodeData]
    length: int
    last_id: StreamIDPair
    first_id: StreamIDPair
    max_deleted_entry_id: StreamIDPair
    entries_added: int
    groups: List[GroupData] = field(default_factory=list)
    #: whether the payload had entries_added / max_deleted / group entries_read (RDB_TYPE_STREAM_LISTPACKS_2+);
    #: False for Redis 5/6 payloads: the loader estimates them as the server does
    has_counters: bool = True
    #: Redis 8.6's IDMP state (written and read with RDB_TYPE_STREAM_LISTPACKS_4 only); None: not in the payload
    idmp: Optional[IdmpData] = None
