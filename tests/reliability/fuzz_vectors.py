"""Random argument vectors for every stream command: mostly broken, sometimes valid.

:class:`VectorGen` (a seeded ``random.Random``, no hypothesis: ~10 µs a vector) builds a whole argv
(command name first) in one of four ways:

* **template + damage** — a plausible call built from the command's grammar, then 0–3 mutations
  (drop, duplicate, swap, insert an atom, replace by an atom, truncate);
* **option soup** — the command, a key, then 0–10 tokens from the command's own option names and values
  and the shared atoms;
* **every option everywhere** — a template with one of the command's option names (random case,
  sometimes followed by a value, sometimes with a NUL and junk after it) inserted at a random position;
* **wrong arity** — a template cut short or extended with junk.

Atoms cover what the issue asks for: huge and negative numbers (int64/uint64 edges and beyond, ``1.5``,
``0x10``, spaces, a leading ``+``), non-UTF-8 bytes, empty strings, NUL bytes, IDs at the edges
(``0-0``, ``18446744073709551615-18446744073709551615``, overflowing parts, ``ms-*``, ``(id``) and option
names in random case. Keys: two streams (``s1``, ``s2``), a string (``str``, WRONGTYPE) and a missing key.
"""

from __future__ import annotations

import random
from typing import Callable, Dict, List, Sequence, Tuple

U64 = 18446744073709551615
I64 = 9223372036854775807

KEYS = (b"s1", b"s1", b"s2", b"str", b"nokey", b"", b"\xff")
GROUPS = (b"g1", b"g1", b"g2", b"gx", b"", b"\xfe")
CONSUMERS = (b"c1", b"c2", b"cx", b"", b"\x00c")
NUMBERS = (b"0", b"1", b"2", b"3", b"10", b"100", b"-1", b"-2", b"1000", b"2147483648", b"4294967296",
           b"9007199254740993", b"%d" % I64, b"%d" % (I64 + 1), b"-%d" % (I64 + 1), b"-%d" % (I64 + 2), b"%d" % U64,
           b"%d" % (U64 + 1), b"1" * 100, b"1.5", b"1e3", b"", b" 1", b"1 ", b"+1", b"0x10", b"00", b"-0", b"\x00",
           b"1\x00", b"abc", b"\xff")
IDS = (b"0-0", b"0-1", b"1-0", b"1-1", b"1-2", b"2-0", b"3-0", b"5-0", b"10-0", b"%d-%d" % (U64, U64),
       b"%d-0" % U64, b"1-%d" % U64, b"%d-0" % (U64 + 1), b"1-%d" % (U64 + 1), b"-1-0", b"1--1", b"1", b"1-", b"-1",
       b"1-*", b"*", b"0-*", b"%d-*" % U64, b"(1-0", b"(", b"((1-0", b"(0-0", b"(%d-%d" % (U64, U64), b"1-0\x00junk",
       b" 1-0", b"1-0 ", b"01-00", b"+1-1", b"1.0-1", b"0x1-0", b"-", b"+", b"$", b">", b"", b"\xff-\xff", b"99999999999999-0")
STRINGS = (b"", b"\xff\xfe", b"\x00", b"\r\n", b"v", b"value", b"x" * 300, b"\xc3\x28", b"f\x00g", b" ")
WORDS = (b"COUNT", b"BLOCK", b"STREAMS", b"GROUP", b"NOACK", b"MAXLEN", b"MINID", b"LIMIT", b"NOMKSTREAM", b"~", b"=",
         b"IDLE", b"TIME", b"RETRYCOUNT", b"FORCE", b"JUSTID", b"LASTID", b"ENTRIESADDED", b"MAXDELETEDID",
         b"MKSTREAM", b"ENTRIESREAD", b"FULL", b"HELP", b"CREATE", b"SETID", b"DESTROY", b"CREATECONSUMER",
         b"DELCONSUMER", b"STREAM", b"GROUPS", b"CONSUMERS")

#: per command: its option names (flags and options that take values), used for "every option everywhere"
OPTIONS: Dict[bytes, Tuple[bytes, ...]] = {
    b"XADD": (b"NOMKSTREAM", b"MAXLEN", b"MINID", b"~", b"=", b"LIMIT", b"*"),
    b"XTRIM": (b"MAXLEN", b"MINID", b"~", b"=", b"LIMIT"),
    b"XDEL": (),
    b"XRANGE": (b"COUNT", b"-", b"+"),
    b"XREVRANGE": (b"COUNT", b"-", b"+"),
    b"XLEN": (),
    b"XREAD": (b"COUNT", b"BLOCK", b"STREAMS", b"$", b"+", b"GROUP", b"NOACK", b">"),
    b"XREADGROUP": (b"GROUP", b"COUNT", b"BLOCK", b"NOACK", b"STREAMS", b">", b"$", b"+"),
    b"XSETID": (b"ENTRIESADDED", b"MAXDELETEDID"),
    b"XACK": (),
    b"XPENDING": (b"IDLE", b"-", b"+"),
    b"XCLAIM": (b"IDLE", b"TIME", b"RETRYCOUNT", b"FORCE", b"JUSTID", b"LASTID"),
    b"XAUTOCLAIM": (b"COUNT", b"JUSTID"),
    b"XGROUP": (b"CREATE", b"SETID", b"DESTROY", b"CREATECONSUMER", b"DELCONSUMER", b"HELP", b"MKSTREAM",
                b"ENTRIESREAD", b"$"),
    b"XINFO": (b"STREAM", b"GROUPS", b"CONSUMERS", b"HELP", b"FULL", b"COUNT"),
}
COMMAND_NAMES: Tuple[bytes, ...] = tuple(OPTIONS)


class VectorGen:
    """Seeded generator of argument vectors; ``ids_of(key)`` may supply IDs that exist right now."""

    def __init__(self, seed: int, ids_of: Callable[[bytes], Sequence[bytes]] = lambda key: ()) -> None:
        self.rng = random.Random(seed)
        self.ids_of = ids_of
        self._templates = {name: getattr(self, "_t_" + name.decode().lower()) for name in COMMAND_NAMES}

    # ---------------------------------------------------------------------------------- atoms
    def pick(self, seq: Sequence[bytes]) -> bytes:
        return seq[self.rng.randrange(len(seq))]

    def case(self, word: bytes) -> bytes:
        r = self.rng.random()
        if r < 0.5:
            return word
        if r < 0.7:
            return word.lower()
        if r < 0.9:
            return bytes(c ^ 0x20 if 65 <= (c & 0xDF) <= 90 and self.rng.random() < 0.5 else c for c in word)
        return word + b"\x00" + self.pick((b"", b"junk", b"\xff"))  # C-string compare: text after NUL is ignored

    def key(self) -> bytes:
        return self.pick(KEYS)

    def num(self) -> bytes:
        return self.pick(NUMBERS) if self.rng.random() < 0.5 else self.pick(NUMBERS[:6])

    def sid(self, key: bytes = b"s1") -> bytes:
        r = self.rng.random()
        if r < 0.35:
            live = self.ids_of(key)
            if live:
                return self.pick(live)
        if r < 0.5:
            return b"%d-%d" % (self.rng.randrange(12), self.rng.randrange(4))
        return self.pick(IDS)

    def atom(self, key: bytes = b"s1") -> bytes:
        kind = self.rng.randrange(6)
        if kind == 0:
            return self.num()
        if kind == 1:
            return self.sid(key)
        if kind == 2:
            return self.pick(STRINGS)
        if kind == 3:
            return self.case(self.pick(WORDS))
        if kind == 4:
            return self.pick(KEYS + GROUPS + CONSUMERS)
        return bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 6)))

    # ------------------------------------------------------------------------------ templates
    def _t_xadd(self, k: bytes) -> List[bytes]:
        out = [k]
        if self.rng.random() < 0.2:
            out.append(self.case(b"NOMKSTREAM"))
        if self.rng.random() < 0.4:
            out += self._trim(k)
        out.append(self.pick((b"*", b"*", b"*-*")) if self.rng.random() < 0.5 else self.sid(k))
        for _ in range(self.rng.choice((1, 1, 2, 3))):
            out += [self.pick(STRINGS), self.pick(STRINGS)]
        return out

    def _trim(self, k: bytes) -> List[bytes]:
        minid = self.rng.random() < 0.4
        out = [self.case(b"MINID" if minid else b"MAXLEN")]
        if self.rng.random() < 0.5:
            out.append(self.pick((b"~", b"=")))
        out.append(self.sid(k) if minid else self.num())
        if self.rng.random() < 0.3:
            out += [self.case(b"LIMIT"), self.num()]
        return out

    def _t_xtrim(self, k: bytes) -> List[bytes]:
        return [k] + self._trim(k)

    def _t_xdel(self, k: bytes) -> List[bytes]:
        return [k] + [self.sid(k) for _ in range(self.rng.choice((1, 1, 2, 4)))]

    def _range(self, k: bytes) -> List[bytes]:
        out = [k, self.pick((b"-", b"-", b"+")) if self.rng.random() < 0.5 else self.sid(k),
               self.pick((b"+", b"+", b"-")) if self.rng.random() < 0.5 else self.sid(k)]
        if self.rng.random() < 0.4:
            out += [self.case(b"COUNT"), self.num()]
        return out

    _t_xrange = _range
    _t_xrevrange = _range

    def _t_xlen(self, k: bytes) -> List[bytes]:
        return [k]

    def _streams(self, special: Sequence[bytes]) -> List[bytes]:
        keys = [self.key() for _ in range(self.rng.choice((1, 1, 2, 3)))]
        ids = [self.pick(special) if self.rng.random() < 0.5 else self.sid(k) for k in keys]
        return [self.case(b"STREAMS"), *keys, *ids]

    def _read_opts(self) -> List[bytes]:
        out: List[bytes] = []
        if self.rng.random() < 0.4:
            out += [self.case(b"COUNT"), self.num()]
        if self.rng.random() < 0.15:
            out += [self.case(b"BLOCK"), self.num()]
        return out

    def _t_xread(self, k: bytes) -> List[bytes]:
        return self._read_opts() + self._streams((b"$", b"+", b"0", b">"))

    def _t_xreadgroup(self, k: bytes) -> List[bytes]:
        out = [self.case(b"GROUP"), self.pick(GROUPS), self.pick(CONSUMERS)] + self._read_opts()
        if self.rng.random() < 0.2:
            out.append(self.case(b"NOACK"))
        return out + self._streams((b">", b">", b"0", b"$", b"+"))

    def _t_xsetid(self, k: bytes) -> List[bytes]:
        out = [k, self.sid(k)]
        if self.rng.random() < 0.4:
            out += [self.case(b"ENTRIESADDED"), self.num()]
        if self.rng.random() < 0.4:
            out += [self.case(b"MAXDELETEDID"), self.sid(k)]
        return out

    def _t_xack(self, k: bytes) -> List[bytes]:
        return [k, self.pick(GROUPS)] + [self.sid(k) for _ in range(self.rng.choice((1, 1, 2, 3)))]

    def _t_xpending(self, k: bytes) -> List[bytes]:
        out = [k, self.pick(GROUPS)]
        if self.rng.random() < 0.3:
            return out
        if self.rng.random() < 0.3:
            out += [self.case(b"IDLE"), self.num()]
        out += [self.pick((b"-", b"+")) if self.rng.random() < 0.5 else self.sid(k),
                self.pick((b"+", b"-")) if self.rng.random() < 0.5 else self.sid(k), self.num()]
        if self.rng.random() < 0.4:
            out.append(self.pick(CONSUMERS))
        return out

    def _t_xclaim(self, k: bytes) -> List[bytes]:
        out = [k, self.pick(GROUPS), self.pick(CONSUMERS), self.num()]
        out += [self.sid(k) for _ in range(self.rng.choice((1, 1, 2, 3)))]
        for _ in range(self.rng.choice((0, 1, 2, 3))):
            opt = self.pick(OPTIONS[b"XCLAIM"])
            out.append(self.case(opt))
            if opt in (b"IDLE", b"TIME", b"RETRYCOUNT"):
                out.append(self.num())
            elif opt == b"LASTID":
                out.append(self.sid(k))
        return out

    def _t_xautoclaim(self, k: bytes) -> List[bytes]:
        out = [k, self.pick(GROUPS), self.pick(CONSUMERS), self.num(), self.sid(k)]
        if self.rng.random() < 0.4:
            out += [self.case(b"COUNT"), self.num()]
        if self.rng.random() < 0.3:
            out.append(self.case(b"JUSTID"))
        return out

    def _t_xgroup(self, k: bytes) -> List[bytes]:
        sub = self.pick((b"CREATE", b"CREATE", b"SETID", b"DESTROY", b"CREATECONSUMER", b"DELCONSUMER", b"HELP",
                         b"BOGUS", b"\xff"))
        out = [self.case(sub)]
        if sub == b"HELP":
            return out
        out += [k, self.pick(GROUPS)]
        if sub in (b"CREATE", b"SETID"):
            out.append(self.pick((b"$", b"0")) if self.rng.random() < 0.5 else self.sid(k))
            if sub == b"CREATE" and self.rng.random() < 0.4:
                out.append(self.case(b"MKSTREAM"))
            if self.rng.random() < 0.3:
                out += [self.case(b"ENTRIESREAD"), self.num()]
        elif sub in (b"CREATECONSUMER", b"DELCONSUMER"):
            out.append(self.pick(CONSUMERS))
        return out

    def _t_xinfo(self, k: bytes) -> List[bytes]:
        sub = self.pick((b"STREAM", b"STREAM", b"GROUPS", b"CONSUMERS", b"HELP", b"BOGUS"))
        out = [self.case(sub)]
        if sub == b"HELP":
            return out
        out.append(k)
        if sub == b"STREAM" and self.rng.random() < 0.5:
            out.append(self.case(b"FULL"))
            if self.rng.random() < 0.5:
                out += [self.case(b"COUNT"), self.num()]
        elif sub == b"CONSUMERS":
            out.append(self.pick(GROUPS))
        return out

    # ---------------------------------------------------------------------------------- shapes
    def template(self, name: bytes) -> List[bytes]:
        k = self.key()
        return [self.case(name) if self.rng.random() < 0.2 else name] + self._templates[name](k)

    def mutate(self, argv: List[bytes]) -> List[bytes]:
        if len(argv) < 2:
            return argv + [self.atom()]
        op = self.rng.randrange(6)
        i = self.rng.randrange(1, len(argv))
        out = list(argv)
        if op == 0:
            del out[i]
        elif op == 1:
            out.insert(i, out[i])
        elif op == 2:
            j = self.rng.randrange(1, len(out))
            out[i], out[j] = out[j], out[i]
        elif op == 3:
            out.insert(self.rng.randrange(1, len(out) + 1), self.atom())
        elif op == 4:
            out[i] = self.atom()
        else:
            out = out[:i]
        return out

    def vector(self) -> List[bytes]:
        """One argv (command name first)."""
        name = self.pick(COMMAND_NAMES)
        shape = self.rng.random()
        if shape < 0.4:
            argv = self.template(name)
            for _ in range(self.rng.choice((0, 1, 1, 2, 3))):
                argv = self.mutate(argv)
            return argv
        if shape < 0.65:
            k = self.key()
            vocab = OPTIONS[name]
            soup = [self.case(self.pick(vocab)) if vocab and self.rng.random() < 0.5 else self.atom(k)
                    for _ in range(self.rng.randrange(11))]
            if name in (b"XGROUP", b"XINFO") and self.rng.random() < 0.7:
                soup.insert(0, self.case(self.pick(vocab[:6])))
            return [name, k, *soup] if name not in (b"XGROUP", b"XINFO") else [name, *soup]
        if shape < 0.9:
            argv = self.template(name)
            opt = self.case(self.pick(OPTIONS[name] or WORDS))
            at = self.rng.randrange(1, len(argv) + 1)
            extra = [opt] + ([self.atom()] if self.rng.random() < 0.5 else [])
            return argv[:at] + extra + argv[at:]
        argv = self.template(name)
        if self.rng.random() < 0.6:
            return argv[: self.rng.randrange(1, len(argv) + 1)]
        return argv + [self.atom() for _ in range(self.rng.randrange(1, 4))]


def cstr_upper(raw: bytes) -> bytes:
    nul = raw.find(b"\x00")
    return (raw if nul < 0 else raw[:nul]).upper()


def may_block(argv: Sequence[bytes]) -> bool:
    """An XREAD/XREADGROUP naming BLOCK (as the server compares it): must not reach a server outside MULTI."""
    if not argv or cstr_upper(argv[0]) not in (b"XREAD", b"XREADGROUP"):
        return False
    return any(cstr_upper(a) == b"BLOCK" for a in argv[1:])
