"""Documented differences between the Valkey 9.1.2 oracle and the fake's "7.4" profile, modelled precisely.

They apply only where Valkey 9.1.2 stands in for a profile ("7.4", "valkey-8.0"): against the "valkey-9.1"
profile, which implements these Valkey 9 behaviours (profile features ``reestimating_read_counter``,
``xread_plus_empty_nil``, ``no_multi_names_the_command``), every reply must be equal.

Valkey 9.1.2 stands in for Redis 7.4 / Valkey 8 (spec §9), but it has the newer consumer-group counter
algorithm (the one spec §4 calls R8m, with one more rule for the read counter). The fake follows 7.4, so
on these points the oracle is *expected* to differ. Rather than ignoring ``entries-read`` / ``lag`` on Valkey,
this module predicts Valkey's values from the fake's state and accepts a difference only where the real
reply equals that prediction (so a wrong fake, or a wrong model, still fails):

1. **lag after a trim past the group's position** (spec §9 item 1) and **entries_read when a tombstone lies
   between two reads** (found by a colleague: ``XADD 1,2,3; read 1; XDEL 2; XADD 4; read; read`` → Valkey
   entries-read 4 / lag 0, Redis 7.x 3 / 1). Valkey's rules, as modelled here:

   * tombstones after ``start``: the stream is not empty, ``max_deleted_entry_id`` ≠ 0-0 and
     ``start <= max_deleted_entry_id`` (7.x also requires ``first_id <= max_deleted_entry_id``);
   * distance estimate: as 7.x, except that an ID other than 0-0 below ``max_deleted_entry_id`` is unknown
     (checked after the empty-stream rule);
   * a ``>`` delivery of ``id`` adds one to a valid counter only if the group's previous last-delivered-id
     is at or after the first entry and has no tombstone after it (7.x tests the tombstones after ``id``);
     otherwise the counter becomes the estimate for ``id``;
   * lag: the 7.x formula with the two rules above.

   :class:`ValkeyCounters` keeps the Valkey read counter of every group next to the fake's (the fake's
   handlers for XREADGROUP and XGROUP CREATE/SETID are wrapped, see :func:`wrap_commands`).
2. **XREAD with ``+`` on a stream whose last ID is 0-0**: Redis 7.4 replies ``ERR the stream last element ID
   is 0-0``; Valkey 9.1.2 treats that stream as having nothing to serve (probed: nil, or the other streams'
   entries). Accepted when the real reply equals the fake's reply to the same command with those ``+`` read
   as ``0-0``.
3. **the text of a command refused inside MULTI** (profile "valkey-8.0", FAKE_STREAMS_DIFF_ALL_PROFILES): Valkey
   8.0.1 says ``ERR Command not allowed inside a transaction``, Valkey 9.1.2 names the command
   (``ERR Command 'watch' not allowed …``). Accepted only for exactly that pair of texts.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from fake_streams.commands import COMMANDS, CommandSpec
from fake_streams.errors import ReplyError
from fake_streams.groups import INVALID_ENTRIES_READ
from fake_streams.ids import MIN_ID, StreamID

#: The oracle kind these differences belong to (never applied to Redis).
ORACLE_KIND = "valkey"


# ------------------------------------------------------------------------------------- the model
def _has_tombstones(stream: Any, start: StreamID) -> bool:
    if len(stream) == 0 or stream.max_deleted_entry_id == MIN_ID:
        return False
    return start <= stream.max_deleted_entry_id


def _estimate(stream: Any, sid: StreamID) -> int:
    if stream.entries_added == 0:
        return 0
    if len(stream) == 0 and sid <= stream.last_id:
        return stream.entries_added
    if sid != MIN_ID and sid < stream.max_deleted_entry_id:
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


class ValkeyCounters:
    """Valkey 9.1.2's ``entries_read`` for each fake consumer group (keyed by the group object)."""

    def __init__(self) -> None:
        self._groups: Dict[int, Tuple[Any, int]] = {}  # id(group) -> (group kept alive, counter)
        self.hits: Dict[str, int] = {"lag/entries-read": 0, "xread-plus-0-0": 0, "no-multi-text": 0}

    def entries_read(self, group: Any) -> int:
        held = self._groups.get(id(group))
        return group.entries_read if held is None else held[1]

    def set(self, group: Any, value: int) -> None:
        self._groups[id(group)] = (group, value)

    def touch(self, group: Any) -> None:
        """Remember the counter of a group about to be read (the fake's until a delivery differs)."""
        if id(group) not in self._groups:
            self.set(group, group.entries_read)

    def delivered(self, stream: Any, group: Any, old_last: StreamID) -> None:
        """The group's cursor moved from ``old_last`` to ``group.last_id`` by ``>`` deliveries: replay them."""
        er = self.entries_read(group)
        last = old_last
        start = old_last.incr()
        if start is None:
            return
        for sid, _fields in stream.range(start, group.last_id):
            if er != INVALID_ENTRIES_READ and last >= stream.first_id and not _has_tombstones(stream, last):
                er += 1
            elif stream.entries_added:
                er = _estimate(stream, sid)
            last = sid
        self.set(group, er)

    def lag(self, stream: Any, group: Any) -> Optional[int]:
        er = self.entries_read(group)
        if stream.entries_added == 0:
            return 0
        if er != INVALID_ENTRIES_READ and not _has_tombstones(stream, group.last_id):
            return stream.entries_added - er
        estimate = _estimate(stream, group.last_id)
        return None if estimate == INVALID_ENTRIES_READ else stream.entries_added - estimate


# ------------------------------------------------------------------ wrapping the fake's handlers
def wrap_commands(counters: ValkeyCounters) -> Dict[str, CommandSpec]:
    """The fake's command table with XREADGROUP and XGROUP CREATE/SETID reporting to ``counters``.

    The handlers themselves are unchanged (same arguments, same reply, same exceptions).
    """
    from fake_streams.commands.xread import parse_read_options

    table = dict(COMMANDS)

    def xreadgroup(ctx: Any, args: List[bytes], _orig: Callable = table["xreadgroup"].handler) -> Any:
        watched: Dict[int, Tuple[Any, Any, StreamID]] = {}
        try:
            opts = parse_read_options(ctx, args, True)
            for key in opts.keys(args):
                stream = ctx.lookup(key)
                group = stream.groups.get(opts.group) if stream is not None else None
                if group is not None:
                    counters.touch(group)
                    watched.setdefault(id(group), (stream, group, group.last_id))
        except ReplyError:
            watched = {}
        reply = _orig(ctx, args)
        for stream, group, old_last in watched.values():
            if group.last_id > old_last:
                counters.delivered(stream, group, old_last)
        return reply

    def group_setter(name: str) -> Callable:
        orig = table[name].handler

        def handler(ctx: Any, args: List[bytes]) -> Any:
            reply = orig(ctx, args)
            stream = ctx.lookup(args[0])
            group = stream.groups.get(args[1]) if stream is not None else None
            if group is not None:
                counters.set(group, group.entries_read)
            return reply

        return handler

    table["xreadgroup"] = _replace(table["xreadgroup"], xreadgroup)
    for name in ("xgroup|create", "xgroup|setid"):
        table[name] = _replace(table[name], group_setter(name))
    return table


def _replace(spec: CommandSpec, handler: Callable) -> CommandSpec:
    from dataclasses import replace

    return replace(spec, handler=handler)


# ------------------------------------------------------------------------- reply normalisers
def _i64(value: int) -> int:
    """As the server sends a long long (its counters wrap past 2^63 - 1)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def _map_items(reply: Any) -> Optional[List[Tuple[Any, Any]]]:
    if isinstance(reply, dict):
        return list(reply.items())
    if isinstance(reply, list) and len(reply) % 2 == 0 and all(isinstance(k, bytes) for k in reply[::2]):
        return list(zip(reply[::2], reply[1::2]))
    return None


def _get(reply: Any, field: bytes) -> Any:
    for k, v in _map_items(reply) or ():
        if k == field:
            return v
    return None


def _set(reply: Any, field: bytes, value: Any) -> Any:
    if isinstance(reply, dict):
        return {k: (value if k == field else v) for k, v in reply.items()}
    out = list(reply)
    for i in range(0, len(out), 2):
        if out[i] == field:
            out[i + 1] = value
    return out


def lag_normalizer(counters: ValkeyCounters, key: bytes, full: bool) -> Callable[[Any, Any, Any], Any]:
    """For ``XINFO GROUPS key`` (``full=False``) or ``XINFO STREAM key FULL`` (``full=True``) on Valkey:
    a group's ``entries-read`` / ``lag`` may differ from the fake's iff the real pair equals the model's."""

    def normalize(real: Any, fake: Any, duo: Any) -> Any:
        stream = duo.fake_stream(key)
        if stream is None:
            return real
        if full:
            real_groups, fake_groups = _get(real, b"groups"), _get(fake, b"groups")
        else:
            real_groups, fake_groups = real, fake
        if not (isinstance(real_groups, list) and isinstance(fake_groups, list)) or len(real_groups) != len(fake_groups):
            return real
        changed = False
        out = []
        for r, f in zip(real_groups, fake_groups):
            name = _get(f, b"name")
            group = stream.groups.get(name) if isinstance(name, bytes) else None
            if group is not None and _map_items(r) is not None and _get(r, b"name") == name:
                er = counters.entries_read(group)
                lag = counters.lag(stream, group)
                model = (None if er == INVALID_ENTRIES_READ else _i64(er), None if lag is None else _i64(lag))
                seen = (_get(r, b"entries-read"), _get(r, b"lag"))
                mine = (_get(f, b"entries-read"), _get(f, b"lag"))
                if seen != mine and seen == model:
                    r = _set(_set(r, b"entries-read", mine[0]), b"lag", mine[1])
                    counters.hits["lag/entries-read"] += 1
                    changed = True
            out.append(r)
        if not changed:
            return real
        return _set(real, b"groups", out) if full else out

    return normalize


def xread_plus_normalizer(counters: ValkeyCounters, protocol: int, argv: List[bytes]) -> Callable[[Any, Any, Any], Any]:
    """``XREAD … STREAMS k… +…`` on Valkey where a named stream's last ID is 0-0 (see the module docstring)."""

    def normalize(real: Any, fake: Any, duo: Any) -> Any:
        want = duo.profile.errors["XREAD_LAST_ID_ZERO"]
        if not (hasattr(fake, "full") and fake.full == want):  # the real reply may be an error too (WRONGTYPE of a later key)
            return real
        upper = [a.upper() for a in argv]
        if b"STREAMS" not in upper:
            return real
        at = upper.index(b"STREAMS") + 1  # the option scan stops at the first STREAMS
        half = (len(argv) - at) // 2
        keys, ids = argv[at:at + half], argv[at + half:]
        alt = list(argv)
        for i, (k, raw) in enumerate(zip(keys, ids)):
            stream = duo.fake_stream(k)
            if raw == b"+" and stream is not None and stream.last_id == MIN_ID:
                alt[at + half + i] = b"0-0"
        if alt == list(argv):
            return real
        expected = duo.fake(protocol, alt)
        if real == expected:
            counters.hits["xread-plus-0-0"] += 1
            return fake
        return real

    return normalize


def no_multi_text_normalizer(counters: ValkeyCounters) -> Callable[[Any, Any, Any], Any]:
    """A MULTI / WATCH / SAVE refused inside MULTI: Valkey 9.1.2's text naming the command for Valkey 8.0.1's."""
    fake_text = "ERR Command not allowed inside a transaction"

    def normalize(real: Any, fake: Any, duo: Any) -> Any:
        full = getattr(real, "full", None)
        if getattr(fake, "full", None) != fake_text or not isinstance(full, str):
            return real
        head, _, tail = full.partition("' not allowed inside a transaction")
        if not tail and head.startswith("ERR Command '") and full.endswith("' not allowed inside a transaction"):
            counters.hits["no-multi-text"] += 1
            return fake
        return real

    return normalize

