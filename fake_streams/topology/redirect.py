"""Which node serves a command in a cluster (cluster.c ``getNodeByQuery`` + ``clusterRedirectClient``): the error
line a node answers instead of running a command whose keys it does not serve, or None.

* keys of different slots in one command (or in one transaction, checked at EXEC) → ``CROSSSLOT``;
* a slot no node serves → ``CLUSTERDOWN Hash slot not served``; the cluster state ``fail`` → ``CLUSTERDOWN The
  cluster is down``;
* a slot this node is migrating, every key missing here → ``ASK slot ip:port`` of the target; some of them
  here, some not → ``TRYAGAIN`` (the keys are half moved);
* a slot this node is importing, the client said ``ASKING`` → served (``TRYAGAIN`` for several keys not all here);
* a slot of another node → ``MOVED slot ip:port``.

Costs: O(keys) slot computations plus, during a migration of the slot, one key lookup per key.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence

from ..errors import ERRORS
from .slots import key_slot

CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot"
TRYAGAIN = "TRYAGAIN Multiple keys request during rehashing of slot"
DOWN = ERRORS["CLUSTER_DOWN"]
UNBOUND = ERRORS["CLUSTER_UNBOUND"]


def refusal(me: Any, commands: Iterable[Sequence[bytes]], asking: bool, has_key: Callable[[bytes], bool]) -> Optional[str]:
    """The redirection/error for running ``commands`` (the key lists of one command, or of every command queued
    in a transaction) on node ``me``; None when ``me`` serves them."""
    cluster = me.cluster
    first: Optional[bytes] = None
    slot = -1
    owner = None
    migrating = importing = multiple = False
    missing = existing = 0
    for keys in commands:
        for key in keys:
            this_slot = key_slot(key)
            if first is None:
                first, slot = key, this_slot
                owner = cluster.owners[slot]
                if owner is None:
                    return UNBOUND
                if owner is me and slot in me.migrating:
                    migrating = True
                elif slot in me.importing:
                    importing = True
            elif key != first:
                if this_slot != slot:
                    return CROSSSLOT
                multiple = True
            if migrating or importing:
                if has_key(key):
                    existing += 1
                else:
                    missing += 1
    if owner is None:  # no key at all: served here
        return None
    if not cluster.state_ok:
        return DOWN
    if migrating and missing:
        if existing:
            return TRYAGAIN
        target = me.migrating[slot]
        return f"ASK {slot} {target.announced_ip}:{target.port}"
    if importing and asking:
        return TRYAGAIN if multiple and missing else None
    if owner is not me:
        return ERRORS["CLUSTER_MOVED"].format(slot=slot, address=f"{owner.announced_ip}:{owner.port}")
    return None


__all__ = ["CROSSSLOT", "DOWN", "TRYAGAIN", "UNBOUND", "refusal"]
