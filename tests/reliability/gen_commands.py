"""Random stream commands for the stateful differential test, drawn with hypothesis from the current state.

Each ``draw_<family>(d, world)`` returns one argv (``List[bytes]``, command name first); arguments come from
gen_args.py. Valid arguments dominate, but every family also draws invalid ones (bad IDs, bad numbers,
unknown options, wrong arity, random case), and :func:`mutate` damages a share of all commands.

Nothing here may make the real server block on a step's own connection: BLOCK appears only with an invalid
timeout, or inside MULTI (where nothing blocks); :func:`blocks_risk` is the final guard after mutations. Reads
that do block come from :func:`draw_block` and run on a side client (test_stateful_differential.py).
"""

from __future__ import annotations

from typing import Callable, List

from hypothesis import strategies as st

from fake_streams.ids import StreamID

from .gen_args import (
    BACKDATE,
    BAD_NUMBERS,
    CLOCK_MS,
    FUTURE_MS,
    GROUPS,
    IDLE_FILTER,
    KEYS,
    MIN_IDLE,
    MISSING_KEY,
    STRING_KEY,
    World,
    case,
    chance,
    consumer_name,
    fields,
    group_key,
    group_name,
    key,
    number,
    one,
    position,
    range_bound,
    some_id,
    trim_args,
    xadd_id,
)


# ---------------------------------------------------------------------------------------- families
def draw_xadd(d: Callable, world: World) -> List[bytes]:
    k = key(d)
    opts: List[bytes] = []
    if chance(d, 8):
        opts.append(case(d, b"NOMKSTREAM"))
    opts += trim_args(d, world, k, xtrim=False)
    if chance(d, 5):
        opts.insert(position(d, 0, len(opts)), case(d, b"NOMKSTREAM"))
    return [b"XADD", k, *opts, xadd_id(d, world, k), *fields(d)]


def draw_xtrim(d: Callable, world: World) -> List[bytes]:
    k = key(d)
    args = trim_args(d, world, k, xtrim=True)
    if chance(d, 4):
        args = args[:1]
    return [b"XTRIM", k, *args]


def draw_xdel(d: Callable, world: World) -> List[bytes]:
    k = key(d)
    return [b"XDEL", k, *[some_id(d, world, k) for _ in range(one(d, (1, 1, 2, 3)))]]


def draw_xrange(d: Callable, world: World) -> List[bytes]:
    k = key(d)
    rev = chance(d, 40)
    a, b = range_bound(d, world, k, True), range_bound(d, world, k, False)
    argv = [b"XREVRANGE", k, b, a] if rev else [b"XRANGE", k, a, b]
    if chance(d, 40):
        argv += [case(d, b"COUNT"), number(d, (b"0", b"1", b"2", b"3", b"10"))]
    return argv


def draw_xlen(d: Callable, world: World) -> List[bytes]:
    return [b"XLEN", key(d)]


def read_count(d: Callable) -> List[bytes]:
    return [case(d, b"COUNT"), number(d, (b"0", b"1", b"2", b"3", b"100"))] if chance(d, 40) else []


def block_arg(d: Callable, in_multi: bool) -> List[bytes]:
    """BLOCK with a valid timeout only inside MULTI (never blocks there); else an invalid timeout, rarely."""
    if in_multi and chance(d, 40):
        return [case(d, b"BLOCK"), one(d, (b"0", b"1", b"100"))]
    if chance(d, 3):
        return [case(d, b"BLOCK"), one(d, (b"-1", b"abc", b"", b"-9223372036854775808", b"1.5"))]
    return []


def draw_xread(d: Callable, world: World, in_multi: bool = False, plus: bool = True) -> List[bytes]:
    keys = [key(d) for _ in range(one(d, (1, 1, 1, 2, 3)))]
    ids = []
    for k in keys:
        special = (b"$", b"+", b"0", b"0-0") if plus else (b"$", b"0", b"0-0")
        stream = world.stream_of(k)
        if plus and stream is not None and stream.last_id == StreamID(0, 0) and chance(d, 50):
            ids.append(b"+")  # "+" on a stream whose last ID is 0-0 (an oracle difference, see known_differences)
            continue
        ids.append(one(d, special) if chance(d, 50) else some_id(d, world, k))
    opts = read_count(d) + block_arg(d, in_multi)
    if chance(d, 3):
        opts.append(case(d, one(d, (b"NOACK", b"GROUP"))))
    if chance(d, 3):
        ids = ids[:-1]  # unbalanced
    return [b"XREAD", *opts, case(d, b"STREAMS"), *keys, *ids]


def draw_xreadgroup(d: Callable, world: World, in_multi: bool = False) -> List[bytes]:
    keys = [group_key(d, world)] + [key(d) for _ in range(one(d, (0, 0, 0, 1)))]
    g = group_name(d, world, keys[0])
    c = consumer_name(d)
    ids = []
    for k in keys:
        roll = d(st.integers(0, 9))
        if roll < 6:
            ids.append(b">")
        elif roll < 8:
            ids.append(one(d, (b"0", b"0-0")))
        elif roll < 9:
            ids.append(some_id(d, world, k, g))
        else:
            ids.append(one(d, (b"$", b"+")))
    opts: List[bytes] = []
    parts = [read_count(d), block_arg(d, in_multi), [case(d, b"NOACK")] if chance(d, 20) else []]
    for part in parts:
        opts += part
    group_opt = [case(d, b"GROUP"), g, c]
    if chance(d, 5):
        group_opt = []  # missing GROUP
    at = position(d, 0, len(opts)) if chance(d, 10) else 0
    opts[at:at] = group_opt
    return [b"XREADGROUP", *opts, case(d, b"STREAMS"), *keys, *ids]


def draw_xsetid(d: Callable, world: World) -> List[bytes]:
    k = key(d)
    last = world.last_id(k)
    live = world.live_ids(k)
    roll = d(st.integers(0, 9))
    if roll < 3 and last.ms < CLOCK_MS:
        new = b"%d-%d" % (last.ms + d(st.integers(0, 3)), d(st.integers(0, 5)))
    elif roll < 5 and live:
        new = live[-1]
    elif roll < 6:
        new = b"%d-%d" % (FUTURE_MS, d(st.integers(0, 3)))
    else:
        new = some_id(d, world, k)
    argv = [b"XSETID", k, new]
    if chance(d, 40):
        stream = world.stream_of(k)
        size = len(stream) if stream is not None else 0
        added = b"%d" % (max(0, size - 1) + 7 * d(st.integers(0, 4))) if not chance(d, 8) else one(d, BAD_NUMBERS)
        argv += [case(d, b"ENTRIESADDED"), added]
    if chance(d, 30):
        argv += [case(d, b"MAXDELETEDID"), some_id(d, world, k)]
    return argv


def draw_xgroup(d: Callable, world: World) -> List[bytes]:
    k = key(d)
    sub = one(d, (b"CREATE", b"CREATE", b"CREATE", b"SETID", b"SETID", b"DESTROY", b"CREATECONSUMER",
                  b"CREATECONSUMER", b"DELCONSUMER", b"HELP", b"NOSUCH"))
    g = group_name(d, world, k)
    if sub == b"HELP":
        return [b"XGROUP", case(d, sub)] + ([b"extra"] if chance(d, 10) else [])
    if sub in (b"CREATE", b"SETID"):
        start = one(d, (b"$", b"0", b"0-0")) if chance(d, 50) else some_id(d, world, k)
        argv = [b"XGROUP", case(d, sub), k, g, start]
        if sub == b"CREATE" and chance(d, 40):
            argv.append(case(d, b"MKSTREAM"))
        if chance(d, 30):
            argv += [case(d, b"ENTRIESREAD"), number(d, (b"-1", b"0", b"1", b"2", b"3", b"10", b"-2"))]
        return argv
    if sub == b"DESTROY":
        return [b"XGROUP", case(d, sub), k, g]
    return [b"XGROUP", case(d, sub), k, g, consumer_name(d)]


def draw_xack(d: Callable, world: World) -> List[bytes]:
    k = group_key(d, world)
    g = group_name(d, world, k)
    return [b"XACK", k, g, *[some_id(d, world, k, g) for _ in range(one(d, (1, 1, 2, 3)))]]


def draw_xpending(d: Callable, world: World) -> List[bytes]:
    k = group_key(d, world)
    g = group_name(d, world, k)
    if chance(d, 35):
        return [b"XPENDING", k, g]
    argv = [b"XPENDING", k, g]
    if chance(d, 30):
        argv += [case(d, b"IDLE"), one(d, IDLE_FILTER) if chance(d, 90) else one(d, BAD_NUMBERS)]
    argv += [range_bound(d, world, k, True), range_bound(d, world, k, False),
             number(d, (b"0", b"1", b"2", b"10", b"100"))]
    if chance(d, 40):
        argv.append(consumer_name(d))
    return argv


def draw_xclaim(d: Callable, world: World) -> List[bytes]:
    k = group_key(d, world)
    g = group_name(d, world, k)
    argv = [b"XCLAIM", k, g, consumer_name(d), one(d, MIN_IDLE) if chance(d, 95) else one(d, BAD_NUMBERS)]
    argv += [some_id(d, world, k, g) for _ in range(one(d, (1, 1, 2, 3)))]
    now = world.now_ms()
    for _ in range(one(d, (0, 0, 1, 1, 2, 3))):
        opt = one(d, (b"IDLE", b"TIME", b"RETRYCOUNT", b"FORCE", b"JUSTID", b"LASTID", b"BOGUS"))
        argv.append(case(d, opt))
        if opt == b"IDLE":
            argv.append(one(d, BACKDATE) if chance(d, 90) else one(d, BAD_NUMBERS))
        elif opt == b"TIME":
            argv.append(one(d, (b"%d" % (now - 3_000_000), b"%d" % (now + 86_400_000), b"1000", b"0", b"-5",
                                b"9223372036854775807", b"abc")))
        elif opt == b"RETRYCOUNT":
            argv.append(number(d, (b"0", b"1", b"5", b"-1")))
        elif opt == b"LASTID":
            argv.append(some_id(d, world, k, g))
    return argv


def draw_xautoclaim(d: Callable, world: World) -> List[bytes]:
    k = group_key(d, world)
    g = group_name(d, world, k)
    start = one(d, (b"0", b"0-0", b"-")) if chance(d, 50) else some_id(d, world, k, g)
    argv = [b"XAUTOCLAIM", k, g, consumer_name(d), one(d, MIN_IDLE) if chance(d, 95) else one(d, BAD_NUMBERS), start]
    if chance(d, 40):
        argv += [case(d, b"COUNT"), number(d, (b"1", b"2", b"3", b"100", b"0"), bad_percent=15)]
    if chance(d, 30):
        argv.append(case(d, b"JUSTID"))
    return argv


def draw_xinfo(d: Callable, world: World) -> List[bytes]:
    k = key(d)
    sub = one(d, (b"STREAM", b"STREAM", b"GROUPS", b"CONSUMERS", b"CONSUMERS", b"HELP", b"NOSUCH"))
    if sub == b"STREAM":
        argv = [b"XINFO", case(d, sub), k]
        roll = d(st.integers(0, 9))
        if roll < 4:
            argv.append(case(d, b"FULL"))
            if chance(d, 50):
                argv += [case(d, b"COUNT"), number(d, (b"0", b"1", b"2", b"5"))]
        elif roll < 5:
            argv.append(one(d, (b"FULL", b"COUNT", b"bogus")))
        return argv
    if sub == b"GROUPS":
        return [b"XINFO", case(d, sub), k]
    if sub == b"CONSUMERS":
        return [b"XINFO", case(d, sub), k, group_name(d, world, k)]
    return [b"XINFO", case(d, sub)]


def draw_generic(d: Callable, world: World) -> List[bytes]:
    """Keyspace commands served by fakeredis, mixed in: DEL, and a non-stream value for WRONGTYPE."""
    roll = d(st.integers(0, 9))
    if roll < 5:
        return [b"DEL", key(d)]
    if roll < 7:
        return [b"SET", one(d, (STRING_KEY, MISSING_KEY)), b"a string"]
    return [b"TYPE", key(d)]


#: databases the keyspace family moves keys to (db 0 is the one the state checks look at)
OTHER_DBS = (b"1", b"2")


def draw_keyspace(d: Callable, world: World) -> List[bytes]:
    """Keyspace commands fakeredis serves on stream keys: RENAME(NX), COPY (REPLACE, DB), MOVE, SWAPDB, FLUSHDB,
    EXPIRE (long TTLs or 0 / negative: never one that could run out between the two sides' commands), PERSIST,
    EXISTS. Streams moved to another database come back through SWAPDB, MOVE back is drawn in a SELECT step."""
    roll = d(st.integers(0, 19))
    k = key(d)
    if roll < 4:
        return [case(d, one(d, (b"RENAME", b"RENAMENX"))), k, key(d)]
    if roll < 8:
        argv = [b"COPY", k, key(d)]
        if chance(d, 40):
            argv += [case(d, b"DB"), one(d, (b"0",) + OTHER_DBS)]
        if chance(d, 40):
            argv.append(case(d, b"REPLACE"))
        return argv
    if roll < 10:
        return [b"MOVE", k, one(d, OTHER_DBS)]
    if roll < 12:
        return [b"SWAPDB", b"0", one(d, OTHER_DBS)] if not chance(d, 20) else [b"SWAPDB", one(d, OTHER_DBS), b"0"]
    if roll < 13 and chance(d, 30):
        return [b"FLUSHDB"]
    if roll < 16:
        ttl = one(d, (b"100000", b"3600", b"0", b"-1", b"86400000"))
        argv = [case(d, one(d, (b"EXPIRE", b"PEXPIRE"))), k, ttl]
        if chance(d, 20):
            argv.append(case(d, one(d, (b"NX", b"XX", b"GT", b"LT"))))
        return argv
    if roll < 18:
        return [b"PERSIST", k]
    return [b"EXISTS", k, key(d)]


#: scripts around one command whose argv is the script's ARGV: redis.call, redis.pcall, the error table caught
#: (``r.err``), pcall of redis.call (the raised error table), the reply passed through Lua's conversions
LUA_SCRIPTS = (
    b"return redis.call(unpack(ARGV))",
    b"return redis.pcall(unpack(ARGV))",
    b"local r = redis.pcall(unpack(ARGV)) if type(r) == 'table' and r.err then return {'caught', r.err} end "
    b"return r",
    b"local ok, e = pcall(redis.call, unpack(ARGV)) if ok then return {'ok', e} end "
    b"return {'raised', type(e) == 'table' and e.err or tostring(e)}",
    b"local r = redis.call(unpack(ARGV)) if type(r) == 'table' then return #r end return r",
)
#: the families a script's command comes from (no clock-made argument, nothing that blocks)
LUA_INNER = ("xadd", "xadd", "xtrim", "xdel", "xrange", "xlen", "xack", "xgroup", "xsetid", "xpending", "generic")


def draw_lua(d: Callable, world: World) -> List[bytes]:
    """EVAL of one of :data:`LUA_SCRIPTS` on a stream (or other) command drawn from :data:`LUA_INNER`: replies
    converted to Lua and back, error replies as tables, raised errors with the script's texts."""
    inner = FAMILIES[one(d, LUA_INNER)](d, world)
    if any(_clock_made(a) or a == b"*" for a in inner[1:]):  # the script's own clock: IDs would differ
        inner = draw_xlen(d, world)
    if chance(d, 10):
        inner = [case(d, inner[0]), *inner[1:]]
    numkeys = b"1" if len(inner) > 1 and chance(d, 50) else b"0"
    keys = [inner[1]] if numkeys == b"1" else []
    return [b"EVAL", one(d, LUA_SCRIPTS), numkeys, *keys, *inner]


def draw_block(d: Callable, world: World) -> List[bytes]:
    """A read that blocks a side client (a valid timeout: 0 or ten minutes), served later by the steps that follow."""
    timeout = one(d, (b"0", b"600000"))
    if chance(d, 50):
        k = group_key(d, world)
        g = group_name(d, world, k)
        opts = [case(d, b"COUNT"), b"2"] if chance(d, 30) else []
        if chance(d, 15):
            opts.append(case(d, b"NOACK"))
        return [b"XREADGROUP", case(d, b"GROUP"), g, consumer_name(d), *opts, case(d, b"BLOCK"), timeout,
                case(d, b"STREAMS"), k, b">"]
    keys = [key(d) for _ in range(one(d, (1, 1, 2)))]
    ids = [b"$" if chance(d, 70) else b"%d-0" % FUTURE_MS for _ in keys]
    return [b"XREAD", case(d, b"BLOCK"), timeout, case(d, b"STREAMS"), *keys, *ids]


def draw_garbage(d: Callable, world: World) -> List[bytes]:
    """Wrong arity and unknown subcommands for every stream command."""
    name = one(d, (b"XADD", b"XTRIM", b"XDEL", b"XRANGE", b"XREVRANGE", b"XLEN", b"XREAD", b"XREADGROUP",
                   b"XSETID", b"XACK", b"XPENDING", b"XCLAIM", b"XAUTOCLAIM", b"XGROUP", b"XINFO"))
    n = d(st.integers(0, 3))
    return [name, *[one(d, KEYS + GROUPS + (b"", b"\xff", b"0", b"create", b"STREAM")) for _ in range(n)]]


FAMILIES = {
    "xadd": draw_xadd,
    "xtrim": draw_xtrim,
    "xdel": draw_xdel,
    "xrange": draw_xrange,
    "xlen": draw_xlen,
    "xread": draw_xread,
    "xreadgroup": draw_xreadgroup,
    "xsetid": draw_xsetid,
    "xgroup": draw_xgroup,
    "xack": draw_xack,
    "xpending": draw_xpending,
    "xclaim": draw_xclaim,
    "xautoclaim": draw_xautoclaim,
    "xinfo": draw_xinfo,
    "generic": draw_generic,
    "garbage": draw_garbage,
    "keyspace": draw_keyspace,
    "lua": draw_lua,
}

ATOMS = (b"", b"\xff\xfe", b"-1", b"0", b"1", b"18446744073709551616", b"COUNT", b"STREAMS", b"LIMIT", b"~", b"=",
         b"*", b"$", b">", b"+", b"-", b"0-0", b"MAXLEN", b"JUSTID", b"FORCE", b"s1", b"g1", b"alice", b"\x00")


def mutate(d: Callable, argv: List[bytes]) -> List[bytes]:
    """Damage ``argv`` once (never the command name): drop, duplicate, insert an atom, swap or replace."""
    if len(argv) < 2:
        return argv
    out = list(argv)
    op = d(st.integers(0, 4))
    i = position(d, 1, len(out) - 1)
    if op == 0:
        del out[i]
    elif op == 1:
        out.insert(i, out[i])
    elif op == 2:
        out.insert(position(d, 1, len(out)), one(d, ATOMS))
    elif op == 3:
        j = position(d, 1, len(out) - 1)
        if _clock_made(out[i]) or _clock_made(out[j]):
            del out[i]  # a clock-made ID may only be used with its own key (see World)
        else:
            out[i], out[j] = out[j], out[i]
    else:
        out[i] = one(d, ATOMS)
    return out


def _clock_made(token: bytes) -> bool:
    ms = token.lstrip(b"(").split(b"-", 1)[0]
    return ms.isdigit() and CLOCK_MS <= int(ms) < FUTURE_MS


def _cstr_upper(raw: bytes) -> bytes:
    nul = raw.find(b"\x00")
    return (raw if nul < 0 else raw[:nul]).upper()


def blocks_risk(argv: List[bytes]) -> bool:
    """Could this XREAD/XREADGROUP block a real server (a BLOCK followed by a non-negative integer)?"""
    if not argv or argv[0].upper() not in (b"XREAD", b"XREADGROUP"):
        return False
    for i, a in enumerate(argv[1:-1], start=1):
        if _cstr_upper(a) == b"BLOCK":
            nxt = argv[i + 1].strip()
            if nxt.lstrip(b"+").isdigit() or nxt == b"-0":
                return True
    return False
