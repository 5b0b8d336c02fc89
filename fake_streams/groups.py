"""Consumer groups (``streamCG``, ``streamConsumer``, ``streamNACK`` in stream.h) and the lag arithmetic of spec §4.

No RESP, no keys, no clock: every method that needs the time takes ``now_ms``.

Structures and costs (n = PEL size, c = number of consumers, L = chunk size of :mod:`~fake_streams.idindex`):

* ``ConsumerGroup.pel`` — :class:`~fake_streams.idindex.IdMap` ``key → PendingEntry`` keyed by the
  128-bit ID (``ms << 64 | seq``, the order of the server's big-endian rax keys): lookup O(log n);
  insert/remove O(log n + L); a ``>`` delivery (IDs above every pending one) appends in O(1);
  range scans O(log n + k). As a mapping it takes and yields ``StreamID`` (``pel[sid]``, ``items()``).
* ``ConsumerGroup.consumers`` — SortedDict ``name → Consumer`` in byte-wise (memcmp) order.
* ``Consumer.pel`` — the same kind of map holding the *same* objects as the group PEL.

Each :class:`PendingEntry` keeps the entry's encoded ID (``id_bytes``, shared with the stream) so that
XPENDING / XCLAIM JUSTID / XAUTOCLAIM replies need no encoding. Methods ending in ``_k`` take 128-bit keys.

Owner-less (NACKed) entries (Redis 8.8 XNACK; addendum streams-redis8.md §2.11, §2.12): every group has a
stand-in owner, ``ConsumerGroup.nacked`` (a :class:`NackedOwner` named ``b""``, never in ``consumers``), whose PEL
is the group's *NACK zone* (:class:`NackZone`): the owner-less entries by ID, plus their FIFO order (the order
XREADGROUP … CLAIM serves them; a re-NACK moves an entry to the tail). Because the zone is an owner's PEL, every
path that moves or removes a pending entry (XACK, XCLAIM, XAUTOCLAIM, a ``>`` redelivery, DELREF) keeps it right
without knowing about NACKs. An owner-less entry has delivery time 0.

Invariants (``ConsumerGroup._check``): every group PEL entry is owned by exactly one consumer or by the stand-in
and sits in that owner's PEL under the same ID; those PELs hold nothing else; their sizes add up to the group
PEL size; the zone's FIFO order holds exactly its keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, AbstractSet, Dict, List, Optional, Tuple

from sortedcontainers import SortedDict

from .idindex import IdMap
from .ids import MIN_ID, StreamID, key_of

if TYPE_CHECKING:
    from .stream import Stream

#: ``SCG_INVALID_ENTRIES_READ``: entries_read is unknown (shown as nil).
INVALID_ENTRIES_READ = -1
#: ``active_time`` of a consumer that never read or claimed successfully.
NEVER_ACTIVE = -1
_new_object = object.__new__
#: deliveries of at most this many entries note their IDs for the XACK that usually follows
#: (:meth:`ConsumerGroup.delivered_keys`)
REMEMBER_MAX = 1024
#: a group forgets every delivery it noted once they hold more than this many IDs (bounded memory, O(1) amortized)
RECENT_MAX = 16384


class PendingEntry:
    """``streamNACK``: one delivered, not yet acknowledged entry."""

    __slots__ = ("delivery_time", "delivery_count", "consumer", "id_bytes")

    def __init__(self, delivery_time: int, delivery_count: int, consumer: Consumer, id_bytes: bytes = b"") -> None:
        self.delivery_time = delivery_time  # absolute Unix ms of the last delivery
        self.delivery_count = delivery_count
        self.consumer = consumer  # the owner
        self.id_bytes = id_bytes  # the entry ID's wire form b"<ms>-<seq>"

    @classmethod
    def delivered(cls, now_ms: int, consumer: Consumer, encs: List[bytes]) -> List[PendingEntry]:
        """``PendingEntry(now_ms, 1, consumer, enc)`` for each of ``encs``, without a Python-level ``__init__``
        call each (a batch delivery). O(k)."""
        out: List[PendingEntry] = []
        append = out.append
        for enc in encs:
            nack: PendingEntry = _new_object(cls)
            nack.delivery_time = now_ms
            nack.delivery_count = 1
            nack.consumer = consumer
            nack.id_bytes = enc
            append(nack)
        return out

    def idle(self, now_ms: int) -> int:
        """Milliseconds since the last delivery, never negative (an owner-less entry: ``now_ms``, its delivery time
        being 0 — it satisfies every min-idle-time)."""
        return max(0, now_ms - self.delivery_time)

    def reported_idle(self, now_ms: int) -> int:
        """The idle time XPENDING and XREADGROUP … CLAIM report: ``-1`` for an owner-less (NACKed) entry (Redis 8.8:
        its delivery time is 0), else :meth:`idle`."""
        return -1 if self.consumer.nacked else max(0, now_ms - self.delivery_time)

    def redeliver(self, now_ms: int) -> None:
        """A history read returned the entry again (spec §2.10): it counts as one more delivery. O(1)."""
        self.delivery_time = now_ms
        self.delivery_count += 1

    def __repr__(self) -> str:
        return (
            f"PendingEntry(delivery_time={self.delivery_time}, delivery_count={self.delivery_count}, "
            f"consumer={self.consumer.name!r})"
        )


class Consumer:
    """``streamConsumer``: a named reader inside a group, with its own view of the group PEL."""

    __slots__ = ("name", "seen_time", "active_time", "pel")
    #: True only for a group's stand-in owner of its NACKed entries (:class:`NackedOwner`)
    nacked = False

    def __init__(self, name: bytes, now_ms: int) -> None:
        self.name = name
        self.seen_time = now_ms  # last attempted read/claim
        self.active_time = NEVER_ACTIVE  # last successful read/claim (R7.2+)
        self.pel: IdMap[PendingEntry] = IdMap()

    def __repr__(self) -> str:
        return f"Consumer(name={self.name!r}, pending={len(self.pel)}, seen_time={self.seen_time}, active_time={self.active_time})"


class NackZone(IdMap[PendingEntry]):
    """A group's owner-less entries (the PEL of its :class:`NackedOwner`): an :class:`IdMap` by ID that also keeps
    ``order``, the keys in the order they were NACKed (FIFO; :meth:`ConsumerGroup.nack_k` moves a re-NACKed key
    to the tail). Every add and remove of the map updates ``order``: O(1) more per key."""

    __slots__ = ("order",)

    def __init__(self) -> None:
        super().__init__()
        self.order: Dict[int, PendingEntry] = {}

    def append_k(self, k: int, value: PendingEntry) -> None:
        super().append_k(k, value)
        self.order[k] = value

    def set_k(self, k: int, value: PendingEntry) -> None:
        super().set_k(k, value)
        self.order[k] = value

    def extend_k(self, keys: List[int], values: List[PendingEntry]) -> None:
        super().extend_k(keys, values)
        self.order.update(zip(keys, values))

    def pop_k(self, k: int) -> Optional[PendingEntry]:
        value = super().pop_k(k)
        self.order.pop(k, None)
        return value

    def pop_sorted(self, keys: List[int]) -> Tuple[List[int], List[PendingEntry]]:
        removed, values = super().pop_sorted(keys)
        order = self.order
        for k in removed:
            order.pop(k, None)
        return removed, values

    def pop_run(self, keys: List[int]) -> Optional[List[PendingEntry]]:
        values = super().pop_run(keys)
        if values is not None:
            order = self.order
            for k in keys:
                order.pop(k, None)
        return values

    def drop_run(self, keys: List[int]) -> bool:
        if not super().drop_run(keys):
            return False
        order = self.order
        for k in keys:
            order.pop(k, None)
        return True

    def fifo(self) -> List[Tuple[int, PendingEntry]]:
        """``(key, entry)`` in NACK order, oldest NACK first. O(z)."""
        return list(self.order.items())


class NackedOwner(Consumer):
    """The stand-in owner of a group's NACKed entries: name ``b""`` (what XPENDING and XINFO show as their
    consumer), never a member of ``ConsumerGroup.consumers``, its PEL a :class:`NackZone`."""

    __slots__ = ()
    nacked = True

    def __init__(self) -> None:
        super().__init__(b"", NEVER_ACTIVE)
        self.pel = NackZone()


class ConsumerGroup:
    """``streamCG``: delivery cursor, pending entries and consumers of one group.

    It also notes the IDs of its recent deliveries (at most :data:`REMEMBER_MAX` each): an XACK naming
    what a consumer just read gets their keys from :meth:`delivered_keys` instead of parsing them.
    """

    __slots__ = ("name", "last_id", "entries_read", "pel", "consumers", "nacked", "_recent", "_recent_size")

    def __init__(self, name: bytes, last_id: StreamID, entries_read: int = INVALID_ENTRIES_READ) -> None:
        self.name = name
        self.last_id = last_id  # "last-delivered-id"
        self.entries_read = entries_read  # INVALID_ENTRIES_READ = unknown
        self.pel: IdMap[PendingEntry] = IdMap()
        self.consumers: SortedDict[bytes, Consumer] = SortedDict()
        self.nacked = NackedOwner()  # owner of the NACKed entries (Redis 8.8); its PEL is the NACK zone
        # recent deliveries: first wire ID → (the wire IDs, their keys); _recent_size counts the IDs
        self._recent: Dict[bytes, Tuple[List[bytes], List[int]]] = {}
        self._recent_size = 0

    # ------------------------------------------------------ delivered IDs
    def _remember(self, encs: List[bytes], keys: List[int]) -> None:
        """Note that the wire IDs ``encs`` (canonical, ascending, distinct, at least one) have the ``keys``; both
        lists are kept as they are (the caller does not change them afterwards). O(1) amortized."""
        if self._recent_size > RECENT_MAX:
            self._recent.clear()
            self._recent_size = 0
        self._recent[encs[0]] = (encs, keys)
        self._recent_size += len(keys)

    def delivered_keys(self, raws: List[bytes]) -> Optional[List[int]]:
        """The 128-bit keys of ``raws`` when they are the first ``len(raws)`` IDs of one recent delivery of this
        group (then they are canonical, ascending and distinct, and the keys are what
        :func:`~fake_streams.ids.parse_strict_keys` gives), else ``None``. The caller must not change the
        returned list. O(k): one dict lookup and a list compare (identical bytes objects compare at once).
        """
        batch = self._recent.get(raws[0]) if raws else None
        if batch is not None:
            encs, keys = batch
            n = len(raws)
            if n == len(encs):
                if raws == encs:
                    return keys
            elif n < len(encs) and raws == encs[:n]:
                return keys[:n]
        return None

    # ------------------------------------------------------------- consumers
    def get_consumer(self, name: bytes) -> Optional[Consumer]:
        """O(log c)."""
        return self.consumers.get(name)

    def create_consumer(self, name: bytes, now_ms: int) -> Consumer:
        """``streamCreateConsumer``: a new consumer (``seen_time = now``, never active). O(log c)."""
        consumer = Consumer(name, now_ms)
        self.consumers[name] = consumer
        return consumer

    def lookup_or_create(self, name: bytes, now_ms: int) -> Tuple[Consumer, bool]:
        """The consumer called ``name``, created if missing; returns ``(consumer, created)``. O(log c)."""
        consumer = self.consumers.get(name)
        if consumer is not None:
            return consumer, False
        return self.create_consumer(name, now_ms), True

    def seen(self, name: bytes, now_ms: int) -> Tuple[Consumer, bool]:
        """``streamLookupConsumer`` + create for a read or claim attempt: ``seen_time = now``. O(log c).

        Returns ``(consumer, created)``; the caller sends ``xgroup-createconsumer`` when created.
        """
        consumer = self.consumers.get(name)  # (= lookup_or_create, inlined: every read and claim asks)
        if consumer is None:
            return self.create_consumer(name, now_ms), True
        consumer.seen_time = now_ms
        return consumer, False

    def delete_consumer(self, name: bytes) -> int:
        """``streamDelConsumer``: drop the consumer and its pending entries; returns how many it had. O(k log n)."""
        consumer = self.consumers.pop(name, None)
        if consumer is None:
            return 0
        pending = len(consumer.pel)
        pop = self.pel.pop_k
        for k in consumer.pel.iter_keys():
            pop(k)
        return pending

    # ------------------------------------------------------------------ PEL
    def deliver(self, sid: StreamID, consumer: Consumer, now_ms: int) -> PendingEntry:
        """Record a ``>`` delivery of ``sid`` to ``consumer`` (spec §2.9 step 3). O(log n + L).

        A new NACK starts at count 1; an ID already pending (after XGROUP SETID moved the cursor back)
        moves to ``consumer`` with its count *reset* to 1.
        """
        return self.deliver_k(key_of(sid), sid.encode(), consumer, now_ms)

    def deliver_k(self, k: int, id_bytes: bytes, consumer: Consumer, now_ms: int) -> PendingEntry:
        """:meth:`deliver` by 128-bit key, with the encoded ID. O(1) amortized for an ID above every pending one."""
        pel = self.pel
        last = pel.last_k()
        if last is None or k > last:
            nack = PendingEntry(now_ms, 1, consumer, id_bytes)
            pel.append_k(k, nack)
        else:
            pending = pel.get_k(k)
            if pending is None:
                nack = PendingEntry(now_ms, 1, consumer, id_bytes)
                pel.set_k(k, nack)
            else:
                nack = pending
                if nack.consumer is not consumer:
                    nack.consumer.pel.pop_k(k)
                nack.consumer = consumer
                nack.delivery_time = now_ms
                nack.delivery_count = 1
        consumer.pel.set_k(k, nack)
        return nack

    def deliver_batch(self, keys: List[int], encs: List[bytes], consumer: Consumer, now_ms: int) -> None:
        """:meth:`deliver_k` for each of ``keys`` (ascending) in order. O(k) when every key is above the
        pending ones (the usual ``>`` read), else O(k (log n + L)).
        """
        if not keys:
            return
        if len(keys) <= REMEMBER_MAX:  # a consumer loop's read: its XACK will name these IDs
            self._remember(encs, keys)
        pel = self.pel
        last = pel.last_k()
        if last is not None and keys[0] <= last:
            for k, enc in zip(keys, encs):
                self.deliver_k(k, enc, consumer, now_ms)
            return
        nacks = PendingEntry.delivered(now_ms, consumer, encs)
        pel.extend_k(keys, nacks)
        consumer.pel.extend_k(keys, nacks)  # a consumer PEL is part of the group PEL: all below keys[0] too

    def assign_k(self, k: int, nack: PendingEntry, consumer: Consumer) -> None:
        """Move the existing NACK of 128-bit key ``k`` to ``consumer`` (XCLAIM). O(log n + L)."""
        if nack.consumer is not consumer:
            nack.consumer.pel.pop_k(k)
            nack.consumer = consumer
            consumer.pel.set_k(k, nack)

    def assign_batch(self, keys: List[int], nacks: List[PendingEntry], consumer: Consumer) -> None:
        """:meth:`assign_k` of each ``(key, nack)``; ``keys`` ascending, distinct. O(k) plus one seek per run of
        neighbouring keys in each previous owner's PEL, and O(k (log n + L)) unless the keys are above
        every key ``consumer`` has pending (then they are appended).
        """
        first = nacks[0].consumer
        if first is consumer:
            for nack in nacks:
                if nack.consumer is not first:
                    break
            else:
                return  # (all owned by the claimer already)
        else:
            for nack in nacks:  # the owner check and the new owner in one pass
                if nack.consumer is not first:
                    for done in nacks:  # a second owner: undo the prefix, the general case below does it all
                        if done is nack:
                            break
                        done.consumer = first
                    break
                nack.consumer = consumer
            else:  # one previous owner (the common case): no per-entry lists
                self._move_run(first, keys, nacks, consumer)
                return
        self._assign_owners(keys, nacks, consumer)

    def claim_batch(self, keys: List[int], nacks: List[PendingEntry], consumer: Consumer, now_ms: int,
                    counted: int) -> None:
        """XAUTOCLAIM's claim of each ``(key, nack)`` (``keys`` ascending, distinct): delivery time ``now_ms``, delivery
        count + ``counted`` (1; 0 with JUSTID), then :meth:`assign_batch` to ``consumer``. With one previous owner
        other than ``consumer`` (a claim loop's usual window) the owner check, the new owner and the delivery fields
        are set in one pass over the entries and that owner's run moves at once (:meth:`_move_run`). O(k) plus the
        move (see :meth:`assign_batch`)."""
        first = nacks[0].consumer
        if first is not consumer:
            for nack in nacks:
                if nack.consumer is not first:
                    break
                nack.consumer = consumer
                nack.delivery_time = now_ms
                nack.delivery_count += counted
            else:
                self._move_run(first, keys, nacks, consumer)
                return
            at = nacks.index(nack)  # a second previous owner: the prefix's owners back, the rest as below
            for done in nacks[:at]:
                done.consumer = first
            nacks_left = nacks[at:]
        else:
            nacks_left = nacks
        for nack in nacks_left:
            nack.delivery_time = now_ms
            nack.delivery_count += counted
        self.assign_batch(keys, nacks, consumer)

    def _move_run(self, owner: Consumer, keys: List[int], nacks: List[PendingEntry], consumer: Consumer) -> None:
        """Move ``keys`` (ascending, all in ``owner``'s PEL) with their ``nacks`` (already owned by ``consumer``) from
        ``owner``'s PEL to ``consumer``'s: one run removed when they are neighbours in one chunk, appended when above
        the claimer's keys."""
        if not owner.pel.drop_run(keys):  # not neighbours in one chunk of the old owner's PEL
            owner.pel.pop_sorted(keys)
        pel = consumer.pel
        if pel._maxes and keys[0] <= pel._maxes[-1]:  # (= _add_owned: extend_k when above its keys)
            self._add_owned(consumer, keys, nacks)
        else:
            pel.extend_k(keys, nacks)

    def _assign_owners(self, keys: List[int], nacks: List[PendingEntry], consumer: Consumer) -> None:
        """:meth:`assign_batch`'s general case: entries of several owners (the claimer's own among them)."""
        moved_k: List[int] = []
        moved_n: List[PendingEntry] = []
        previous: List[Consumer] = []
        for k, nack in zip(keys, nacks):
            if nack.consumer is not consumer:
                moved_k.append(k)
                moved_n.append(nack)
                previous.append(nack.consumer)
                nack.consumer = consumer
        if not moved_k:
            return
        first = previous[0]
        if all(owner is first for owner in previous):
            first.pel.pop_sorted(moved_k)
        else:
            owned: Dict[Consumer, List[int]] = {}
            for k, owner in zip(moved_k, previous):
                owned.setdefault(owner, []).append(k)
            for owner, ks in owned.items():
                owner.pel.pop_sorted(ks)
        self._add_owned(consumer, moved_k, moved_n)

    @staticmethod
    def _add_owned(consumer: Consumer, keys: List[int], nacks: List[PendingEntry]) -> None:
        """Put ``keys`` (ascending) with their ``nacks`` in ``consumer``'s PEL: appended when above its keys, O(k),
        else inserted one by one, O(k (log n + L))."""
        pel = consumer.pel
        last = pel.last_k()
        if last is None or keys[0] > last:
            pel.extend_k(keys, nacks)
        else:
            for k, nack in zip(keys, nacks):
                pel.set_k(k, nack)

    def _pop_owned(self, removed: List[int], nacks: List[PendingEntry]) -> None:
        """Remove the keys ``removed`` (ascending), just taken from the group PEL with their ``nacks``, from their
        owners' PELs. One ``pop_sorted`` per owner."""
        owned: Dict[Consumer, List[int]] = {}
        for k, nack in zip(removed, nacks):
            owned.setdefault(nack.consumer, []).append(k)
        for consumer, ks in owned.items():
            consumer.pel.pop_sorted(ks)

    def remove_pending_many(self, keys: List[int], ascending: bool = False) -> int:
        """XACK: remove every pending key of ``keys`` (any order, repeats allowed) from the group PEL and its
        owner's; returns how many distinct keys were pending. O(k log k) plus one seek per run of
        neighbouring keys in each PEL; ``ascending``: the keys are already ascending and distinct (not changed
        here), no sort — O(log n + L + k) for an XACK of one delivery (one run in each PEL).
        """
        if len(keys) > 1 and not ascending:
            keys = sorted(keys)
        pel = self.pel
        nacks = pel.pop_run(keys) if len(keys) > 1 else None  # (pop_sorted's first try, without its copy of keys)
        if nacks is not None:
            removed = keys
        else:
            removed, nacks = pel.pop_sorted(keys)
            if not removed:
                return 0
        first = nacks[0].consumer
        for nack in nacks:
            if nack.consumer is not first:  # several owners: one pop_sorted each
                self._pop_owned(removed, nacks)
                break
        else:  # one owner (the XACK of a consumer's read)
            owned = first.pel
            if owned.pop_run(removed) is None:
                owned.pop_sorted(removed)
        return len(removed)

    def remove_pending_k(self, k: int) -> bool:
        """Remove key ``k`` from the group PEL and its owner's PEL (XCLAIM of a deleted entry): whether it was
        pending. O(log n + L)."""
        nack = self.pel.pop_k(k)
        if nack is None:
            return False
        nack.consumer.pel.pop_k(k)
        return True

    # ------------------------------------------------------------ NACK zone
    @property
    def nack_zone(self) -> NackZone:
        """The owner-less entries (Redis 8.8): the stand-in owner's PEL. ``len()`` is XINFO's ``nacked-count``."""
        zone = self.nacked.pel
        assert isinstance(zone, NackZone)
        return zone

    def nack_k(self, k: int, nack: PendingEntry) -> None:
        """XNACK of the pending entry at key ``k``: owner-less (out of its owner's PEL), delivery time 0, at the tail of
        the NACK zone (also when it was NACKed already). The caller sets the delivery count. O(log n + L)."""
        zone = self.nack_zone
        if nack.consumer is self.nacked:
            zone.order.pop(k, None)
            zone.order[k] = nack
        else:
            nack.consumer.pel.pop_k(k)
            nack.consumer = self.nacked
            zone.set_k(k, nack)
        nack.delivery_time = 0

    def nack_new_k(self, k: int, id_bytes: bytes, delivery_count: int) -> PendingEntry:
        """XNACK … FORCE of an ID not pending: a new owner-less entry (delivery time 0) at the tail of the NACK zone.
        O(log n + L)."""
        nack = PendingEntry(0, delivery_count, self.nacked, id_bytes)
        self.pel.set_k(k, nack)
        self.nack_zone.set_k(k, nack)
        return nack

    # --------------------------------------------------------------- checks
    def _check(self) -> None:
        """Assert the ownership invariants. O(n + c)."""
        self.pel._check()
        owned = 0
        owners = [(name, c) for name, c in self.consumers.items()] + [(b"", self.nacked)]
        for name, consumer in owners:
            consumer.pel._check()
            assert consumer.name == name
            for sid, nack in consumer.pel.items():
                assert self.pel.get(sid) is nack, (name, sid)
                assert nack.consumer is consumer, (name, sid)
            owned += len(consumer.pel)
        assert owned == len(self.pel), (owned, len(self.pel))
        zone = self.nack_zone
        assert set(zone.order) == set(zone.iter_keys()), "NACK order out of step"
        for sid, nack in self.pel.items():
            assert nack.id_bytes == sid.encode(), (sid, nack.id_bytes)
            if nack.consumer.nacked:
                assert nack.consumer is self.nacked, sid
            else:
                assert self.consumers.get(nack.consumer.name) is nack.consumer, sid

    def __repr__(self) -> str:
        return (
            f"ConsumerGroup(name={self.name!r}, last_id={self.last_id}, entries_read={self.entries_read}, "
            f"pending={len(self.pel)}, nacked={len(self.nacked.pel)}, consumers={len(self.consumers)})"
        )


# ---------------------------------------------------------------------------------------------------
# groups of a stream (``streamCreateCG`` / XGROUP DESTROY)


def create_group(
    stream: Stream, name: bytes, last_id: StreamID, entries_read: int = INVALID_ENTRIES_READ
) -> Optional[ConsumerGroup]:
    """``streamCreateCG``: add a group with no consumers and an empty PEL; ``None`` if ``name`` exists. O(log g)."""
    if name in stream.groups:
        return None
    group = ConsumerGroup(name, last_id, entries_read)
    stream.groups[name] = group
    return group


def destroy_group(stream: Stream, name: bytes) -> bool:
    """Drop the group with its PEL and consumers; False if there was none. O(log g) (the PEL is freed by the GC)."""
    return stream.groups.pop(name, None) is not None


# ---------------------------------------------------------------------------------------------------
# entries_read and lag (spec §4.1–4.3; R7.0–R7.4 and Valkey 8 algorithm, and Valkey 9's)
#
# ``reestimate`` selects Valkey 9.1's rules (profile feature ``reestimating_read_counter``, observed on Valkey
# 9.1.2): a deleted ID at or after ``start`` counts as a tombstone even when it lies before the first entry;
# an ID other than 0-0 below max-deleted-entry-id has no known distance; a ``>`` delivery adds one to a valid
# counter only when the group's previous position is at or after the first entry with no tombstone after it,
# otherwise the counter is re-estimated for the delivered ID.


def has_tombstones(stream: Stream, start: StreamID, reestimate: bool = False) -> bool:
    """``streamRangeHasTombstones(s, start, +inf)``: may a deleted entry lie at or after ``start``? O(1)."""
    if len(stream) == 0 or stream.max_deleted_entry_id == MIN_ID:
        return False
    if not reestimate and stream.first_id > stream.max_deleted_entry_id:
        return False
    return start <= stream.max_deleted_entry_id


def estimate_distance(stream: Stream, sid: StreamID, reestimate: bool = False) -> int:
    """``streamEstimateDistanceFromFirstEverEntry``: entries added up to ``sid``, or -1 when unknown. O(1)."""
    if stream.entries_added == 0:
        return 0
    if len(stream) == 0 and sid <= stream.last_id:
        return stream.entries_added
    if reestimate and sid != MIN_ID and sid < stream.max_deleted_entry_id:
        return INVALID_ENTRIES_READ
    if sid == stream.last_id:
        return stream.entries_added
    if sid > stream.last_id:
        return INVALID_ENTRIES_READ
    if stream.max_deleted_entry_id == MIN_ID or stream.max_deleted_entry_id < stream.first_id:
        if sid < stream.first_id:
            return stream.entries_added - len(stream)
        if sid == stream.first_id:
            return stream.entries_added - len(stream) + 1
    return INVALID_ENTRIES_READ


def counter_usable(stream: Stream, group: ConsumerGroup, behind_first_estimated: bool) -> bool:
    """Whether the group's ``entries_read`` counter may be used as it is (else it is estimated from the IDs):
    it is valid, and (Redis 8.0+, #13958, ``behind_first_estimated``) the stream is not empty and the group's
    last ID is not behind its first entry (the empty-stream rule measured on Redis 8.2.3: lag 0). O(1)."""
    if group.entries_read == INVALID_ENTRIES_READ:
        return False
    return not behind_first_estimated or (len(stream) > 0 and group.last_id >= stream.first_id)


def group_lag(stream: Stream, group: ConsumerGroup, behind_first_estimated: bool = False,
              reestimate: bool = False) -> Optional[int]:
    """``streamReplyWithCGLag``: entries not yet delivered to the group, or ``None`` (nil) when unknown. O(1).

    ``behind_first_estimated``: the Redis 8 feature ``lag_behind_first_estimated`` (:func:`counter_usable`);
    ``reestimate``: Valkey 9.1's ``reestimating_read_counter`` (tombstone rules of :func:`has_tombstones`)."""
    if stream.entries_added == 0:
        return 0
    if reestimate:
        usable = group.entries_read != INVALID_ENTRIES_READ and not has_tombstones(stream, group.last_id, True)
    else:
        usable = counter_usable(stream, group, behind_first_estimated) and not has_tombstones(stream, group.last_id)
    if usable:
        return stream.entries_added - group.entries_read
    estimate = estimate_distance(stream, group.last_id, reestimate)
    if estimate == INVALID_ENTRIES_READ:
        return None
    return stream.entries_added - estimate


def lag_of(stream: Stream, group: ConsumerGroup, features: AbstractSet[str]) -> Optional[int]:
    """:func:`group_lag` under a profile's ``features`` (Redis 8's and Valkey 9's lag rules). O(1)."""
    return group_lag(stream, group, "lag_behind_first_estimated" in features, "reestimating_read_counter" in features)


def advance_entries_read(stream: Stream, group: ConsumerGroup, sid: StreamID, behind_first_estimated: bool = False,
                         reestimate: bool = False) -> None:
    """Update ``entries_read`` when ``>`` delivery moves the cursor to ``sid`` (spec §2.9 step 1). O(1).

    The caller then sets ``group.last_id = sid`` (before the next entry of the same delivery). The flags as in
    :func:`group_lag`.
    """
    if reestimate:  # Valkey 9.1: counts on only from a known position
        counts_on = (group.entries_read != INVALID_ENTRIES_READ and group.last_id >= stream.first_id
                     and not has_tombstones(stream, group.last_id, True))
    else:  # Redis 8 looks for tombstones from the group's last ID (the entry before ``sid``), 7.x from ``sid``
        since = group.last_id if behind_first_estimated else sid
        counts_on = counter_usable(stream, group, behind_first_estimated) and not has_tombstones(stream, since)
    if counts_on:
        group.entries_read += 1
    elif stream.entries_added:
        group.entries_read = estimate_distance(stream, sid, reestimate)
