"""Which node serves a command in a cluster (cluster.c ``getNodeByQuery`` + ``clusterRedirectClient``): the error
line a node answers instead of running a command whose keys it does not serve, or None.

* keys of different slots in one command (or in one transaction, checked at EXEC) → ``CROSSSLOT``;
* a slot no node serves → ``CLUSTERDOWN Hash slot not served``; the cluster state ``fail`` → ``CLUSTERDOWN The
  cluster is down``;
* a slot this node is migrating, every key missing here → ``ASK slot ip:port`` of the target; some of them
  here, some not → ``TRYAGAIN`` (the keys are half moved);
* a slot this node is importing, the client said ``ASKING`` → served (``TRYAGAIN`` for several keys not all here);
* a slot of another node → ``MOVED slot ip:port``.

Inside a script (``redis.call``), :func:`script_refusal` turns the same verdict into the script's errors.

Costs: O(keys) slot computations plus, during a migration of the slot, one key lookup per key.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple, Optional, Sequence, Tuple

from ..errors import ERRORS
from .slots import key_slot

CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot"
TRYAGAIN = "TRYAGAIN Multiple keys request during rehashing of slot"
DOWN = ERRORS["CLUSTER_DOWN"]
UNBOUND = ERRORS["CLUSTER_UNBOUND"]


class Route(NamedTuple):
    """``getNodeByQuery``'s answer: ``code`` one of the ``CODE_*`` names (``CODE_OK``: served here), ``slot`` the
    hash slot of the keys (-1: no key, or not known because the request failed before), ``node`` the node named
    in a ``MOVED`` / ``ASK``."""

    code: str
    slot: int = -1
    node: Any = None


CODE_OK, CODE_CROSSSLOT, CODE_UNBOUND, CODE_DOWN = "ok", "crossslot", "unbound", "down"
CODE_ASK, CODE_TRYAGAIN, CODE_MOVED = "ask", "tryagain", "moved"
_SERVED_NO_KEY = Route(CODE_OK)


def route(me: Any, commands: Iterable[Sequence[bytes]], asking: bool, has_key: Callable[[bytes], bool]) -> Route:
    """Where the keys of ``commands`` (the key lists of one command, or of every command queued in a transaction)
    are served, seen from node ``me``: :data:`CODE_OK` when ``me`` serves them (with their slot)."""
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
                    return Route(CODE_UNBOUND)
                if owner is me and slot in me.migrating:
                    migrating = True
                elif slot in me.importing:
                    importing = True
            elif key != first:
                if this_slot != slot:
                    return Route(CODE_CROSSSLOT)
                multiple = True
            if migrating or importing:
                if has_key(key):
                    existing += 1
                else:
                    missing += 1
    if owner is None:  # no key at all: served here
        return _SERVED_NO_KEY
    if not cluster.state_ok:
        return Route(CODE_DOWN)
    if migrating and missing:
        if existing:
            return Route(CODE_TRYAGAIN, slot)
        return Route(CODE_ASK, slot, me.migrating[slot])
    if importing and asking:
        return Route(CODE_TRYAGAIN, slot) if multiple and missing else Route(CODE_OK, slot)
    if owner is not me:
        return Route(CODE_MOVED, slot, owner)
    return Route(CODE_OK, slot)


def refusal_line(found: Route) -> Optional[str]:
    """The error line a node answers a client's command with (``clusterRedirectClient``), None when served."""
    code = found.code
    if code == CODE_OK:
        return None
    if code == CODE_CROSSSLOT:
        return CROSSSLOT
    if code == CODE_UNBOUND:
        return UNBOUND
    if code == CODE_DOWN:
        return DOWN
    if code == CODE_TRYAGAIN:
        return TRYAGAIN
    node = found.node
    if code == CODE_ASK:
        return f"ASK {found.slot} {node.announced_ip}:{node.port}"
    return ERRORS["CLUSTER_MOVED"].format(slot=found.slot, address=f"{node.announced_ip}:{node.port}")


def refusal(me: Any, commands: Iterable[Sequence[bytes]], asking: bool, has_key: Callable[[bytes], bool]) -> Optional[str]:
    """The redirection/error for running ``commands`` on node ``me`` (see :func:`route`); None when ``me`` serves
    them."""
    return refusal_line(route(me, commands, asking, has_key))


#: the errors a command called from a script gets instead (scriptVerifyClusterState; "ERR " added as for every
#: script error without a code)
SCRIPT_DOWN = "ERR Script attempted to execute a command while the cluster is down"
SCRIPT_NON_LOCAL = "ERR Script attempted to access a non local key in a cluster node"
SCRIPT_CROSS_SLOT = "ERR Script attempted to access keys that do not hash to the same slot"
#: Redis 7.4 / Valkey 8.0+: the refusals 7.0 answered as a non-local key have their own texts
SCRIPT_UNBOUND = "ERR Script attempted to access a slot not served"
SCRIPT_COMMAND_CROSS_SLOT = "ERR Command '{command}' in script attempted to access keys that don't hash to the same slot"
SCRIPT_UNSTABLE = ("ERR Unable to execute command '{command}' in script because undeclared keys were accessed during "
                   "rehashing of the slot")
#: Valkey 9.1 (its Lua engine calls commands through the module API): that API's texts
MODULE_DOWN = "ERR Can not execute a command '{command}' while the cluster is down"
MODULE_NON_LOCAL = "ERR Attempted to access a non local key in a cluster node"


def script_refusal(found: Route, script_slot: int, cross_slot_allowed: bool, command: str,
                   named: bool, module: bool = False) -> Tuple[Optional[str], int]:
    """``scriptVerifyClusterState``: a command a script calls on this node (``command``: its full name, as
    ``xinfo|stream``), routed as ``found``; the script's slot so far ``script_slot`` (-1: none yet).
    ``(error or None, the script's slot after the command)``.

    A key this node does not serve now (another node's, being migrated away, several slots in one command, a
    slot nobody serves) is a non-local access, a cluster that is down has its own error; ``named`` (Redis 7.4,
    Valkey 8.0+): several slots in one command, a half-migrated slot and an unserved slot get their own texts,
    naming the command; ``module`` (Valkey 9.1): the module API's texts instead (cluster down, naming the
    command; everything else non-local). Then a slot other than the script's is refused, unless the script may
    cross slots (no shebang, or the ``allow-cross-slot-keys`` flag); the first slot a script reaches becomes its
    slot."""
    code = found.code
    if module and code != CODE_OK:
        return (MODULE_DOWN.format(command=command) if code == CODE_DOWN else MODULE_NON_LOCAL), script_slot
    if code == CODE_DOWN:
        return SCRIPT_DOWN, script_slot
    if code != CODE_OK:
        if named and code == CODE_CROSSSLOT:
            return SCRIPT_COMMAND_CROSS_SLOT.format(command=command), script_slot
        if named and code == CODE_TRYAGAIN:
            return SCRIPT_UNSTABLE.format(command=command), script_slot
        if named and code == CODE_UNBOUND:
            return SCRIPT_UNBOUND, script_slot
        return SCRIPT_NON_LOCAL, script_slot
    if found.slot == -1 or cross_slot_allowed:
        return None, script_slot
    if script_slot == -1:
        return None, found.slot
    if script_slot != found.slot:
        return SCRIPT_CROSS_SLOT, script_slot
    return None, script_slot


__all__ = ["CODE_ASK", "CODE_CROSSSLOT", "CODE_DOWN", "CODE_MOVED", "CODE_OK", "CODE_TRYAGAIN", "CODE_UNBOUND",
           "CROSSSLOT", "DOWN", "MODULE_DOWN", "MODULE_NON_LOCAL", "SCRIPT_COMMAND_CROSS_SLOT", "SCRIPT_CROSS_SLOT",
           "SCRIPT_DOWN", "SCRIPT_NON_LOCAL", "SCRIPT_UNBOUND", "SCRIPT_UNSTABLE", "TRYAGAIN", "UNBOUND", "Route",
           "refusal", "refusal_line", "route", "script_refusal"]
