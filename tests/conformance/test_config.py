"""CONFIG GET / SET / RESETSTAT / REWRITE / HELP as the real servers answer them, RESP2 and RESP3.

Redis 7.x and Valkey 8.0 answer CONFIG GET in hash-table order (a new order in every process); Valkey 9.1 sorts
by name, and so does the fake: against Redis the real reply is compared sorted. The oracles run with
``--port``, ``--bind``, ``--dir``, ``--save ''`` and ``--protected-mode no``: those values are normalised in the
comparison only. The Valkey 9.1.2 oracle stands in for the 7.4 and valkey-8.0 profiles: where their parameter
tables (from Redis 7.4.1's / Valkey 8.0.1's ``config.c``) differ from Valkey 9.1's, only what they share is
compared; the Valkey 9.1 table itself is compared with the live server whole.
"""

import contextlib

import pytest

from fake_streams.config import help_lines, table_for

from .oracles import parse_info
from .replies import expected_err

#: What the oracles' command lines set (tests/conformance/oracles.py): not the servers' defaults.
STARTED_WITH = (b"port", b"bind", b"dir", b"save", b"protected-mode")


def _pairs(reply):
    if isinstance(reply, dict):
        return list(reply.items())
    return [(reply[i], reply[i + 1]) for i in range(0, len(reply), 2)]


def _rebuild(like, pairs):
    if isinstance(like, dict):
        return dict(pairs)
    return [x for kv in pairs for x in kv]


def in_fake_order(real, fake, pair):
    """The real CONFIG GET reply in the fake's order (Redis answers in hash-table order) with the values of the
    oracle's command-line options replaced by the fake's."""
    if not isinstance(real, (dict, list)):
        return real
    fake_values = dict(_pairs(fake)) if isinstance(fake, (dict, list)) else {}
    pairs = [(k, fake_values.get(k, v) if k.lower() in STARTED_WITH else v) for k, v in _pairs(real)]
    if pair.oracle.kind == "redis":
        pairs.sort()
    return _rebuild(real, pairs)


def _real_values(pair, names):
    reply = pair.real("CONFIG", "GET", *names)
    return dict(_pairs(reply))


@contextlib.contextmanager
def restoring(pair, *names):
    """Put the real server's values of ``names`` back afterwards (the oracle lives for the whole session)."""
    before = _real_values(pair, names)
    try:
        yield
    finally:
        args = [x for kv in before.items() for x in kv]
        if args:
            pair.real("CONFIG", "SET", *args)


def _fake_help(pair):
    return [line for line in help_lines(pair.profile.server)]


@contextlib.contextmanager
def declared(pair, name, value):
    """Where the profile's table (from its server's source) answers CONFIG SET ``name value`` otherwise than the
    Valkey 9.1 oracle's, the fake is held to its own table's answer (a declared difference); else to the oracle's."""
    if pair.oracle.kind == "redis" or _tables_agree(pair, name, value):
        yield
        return
    err, _ = _table(pair).set([name.encode(), value.encode()], {})
    with pair.known_difference(oracle="valkey-9.1", expected=b"OK" if err is None else expected_err(err),
                               reason=f"{name} differs between {pair.profile.name}'s config.c and Valkey 9.1.2"):
        yield


def _tables_agree(pair, name, value):
    """Whether the profile's table and the oracle's give CONFIG SET ``name value`` the same answer."""
    argv = [name.encode(), value.encode()]
    mine, theirs = {}, {}
    return _table(pair).set(argv, mine)[0] == _oracle_table(pair).set(argv, theirs)[0] and mine == theirs


def _table(pair):
    return table_for(pair.profile.name, pair.profile.server)


def _oracle_table(pair):
    return table_for("7.0" if pair.oracle.kind == "redis" else "valkey-9.1", pair.oracle.kind)


def _shared_rows(pair):
    """Parameters whose table row is the same for the fake's profile and the oracle's version."""
    mine, theirs = _table(pair), _oracle_table(pair)
    out = []
    for key, param in mine.entries.items():
        other = theirs.entries.get(key)
        if other is not None and other == param:
            out.append(param)
    return out


def test_config_get_star_is_the_servers_table(pair):
    """``CONFIG GET *``: every parameter and alias with its default (the oracle's own version's table)."""
    if pair.oracle.kind == "redis":
        pair.same("CONFIG", "GET", "*", normalize=in_fake_order)
        return
    real = pair.real("CONFIG", "GET", "*")
    table = _oracle_table(pair)
    want = dict(table.get([b"*"], {}))
    got = {k: (want.get(k, v) if k in STARTED_WITH else v) for k, v in _pairs(real)}
    assert got == want
    assert [k for k, _ in _pairs(real)] == sorted(want)  # Valkey 9.1 answers sorted by name, as the fake does
    if pair.fake is not None:
        fake = dict(_pairs(pair.fake("CONFIG", "GET", "*")))
        assert fake == dict(_table(pair).get([b"*"], {}))


GET_ARGS = [
    ("maxmemory",), ("MAXMEMORY",), ("maxmemory*",), ("MAXMEMORY", "maxmemory*"), ("maxmemory*", "MAXMEMORY"),
    ("maxmemory", "maxmemory"), ("Hash-Max-Ziplist-Entries",), ("hash-max-*",), ("stream-node-max-*",),
    ("notify-keyspace-events",), ("nosuch",), ("nosuch*",), ("nosuch", "hz"), ("slave-read-only", "replica-read-only"),
    ("*max-listpack-entr[i]es",), ("[hz]z",), ("h?",), ("maxmemory-polic?",), ("lua-time-limit", "busy-reply-threshold"),
    ("zset-max-*", "list-max-*"), ("set-max-*",), ("databases", "appendonly", "appendfsync"), ("*MAXMEMORY-POLICY",),
    ("stream-node-max-bytes", "STREAM-node-max-bytes"), ("maxmemory-[^c]*",), ("hz", "h[a-z]"),
    ("key-load-delay",), ("key-load-*",), ("KEY-LOAD-DELAY", "key-load-delay"),  # hidden: by exact name only
    ("hash-max-listpack-entries", "hash-max-*"), ("h\\z",), ("",),
]


@pytest.mark.parametrize("args", GET_ARGS, ids=lambda a: "+".join(a))
def test_config_get_patterns(pair, args):
    pair.same("CONFIG", "GET", *args, normalize=in_fake_order)


VALID_SETS = [
    ("maxmemory", ["1kb", "1mb", "1gb", "1g", "100k", "1b", "01", "", "18446744073709551615", "20000000000gb",
                   "1" * 130, "18446744073709551616", "0"]),  # overflow: saturated on Redis, refused on Valkey 9
    ("maxmemory-clients", ["10%", "0%", "100%", "1mb", "01%", "18446744073709551615", "18446744073709551516",
                           "18446744073709551515", "9223372036854775808", "0"]),  # past int64: a percentage
    ("repl-backlog-size", ["1", "16385", "1mb"]),
    ("notify-keyspace-events", ["KEA", "Ex", "g$lshzxet", "A", "Am", "KEt", "", "AKEm", "zz", "An", "gnK",
                                "d", "Ag$lshzxetdnKEm", "mmKK", ""]),
    ("hz", ["0", "9999", "10"]),
    ("activerehashing", ["NO", "yes"]),
    ("activedefrag", ["YES", "no"]),  # the builds here have no defragmenting allocator
    ("loglevel", ["VERBOSE", "notice"]),
    ("appendfsync", ["ALWAYS", "everysec"]),
    ("maxmemory-policy", ["ALLKEYS-LRU", "volatile-ttl", "noeviction"]),
    ("save", ["100 10", "0100 10 5 3", ""]),
    ("client-output-buffer-limit", ["normal 0 0 0", "replica 1mb 2mb 3", "pubsub 1 2 3 normal 4k 5kb 6",
                                    "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"]),
    ("oom-score-adj-values", ["1 2 3", "-2000 0 2000", "0 200 800"]),
    ("latency-tracking-info-percentiles", ["50 99 99.9", "1.5 100 0", "", "1e2 .5 99.99999", "+50 -0", "inf",
                                           "-INF", "nan", "1e400", "1e-400", "1e-310", "5.", ".", "50 99 99.9"]),
    ("latency-tracking-info-percentiles", ["0x10", "0x1p3", "50 99 99.9"]),  # hex floats: Redis 7.x, Valkey 8
    ("lua-time-limit", ["100", "5000"]),
    ("hash-max-ziplist-entries", ["5", "512"]),
    ("list-max-listpack-size", ["-5", "7", "-2"]),
    ("stream-node-max-bytes", ["4kb", "0", "4096"]),
    ("stream-node-max-entries", ["0", "100"]),
    ("slowlog-log-slower-than", ["-1", "10000"]),
    ("proto-max-bulk-len", ["1mb", "512mb"]),
    ("shutdown-on-sigterm", ["save now", "NOSAVE force", "default"]),
    ("requirepass", [""]),
]


@pytest.mark.parametrize("name,values", VALID_SETS, ids=[n for n, _ in VALID_SETS])
def test_config_set_then_get(pair, name, values):
    with restoring(pair, name):
        for value in values:
            with declared(pair, name, value):
                pair.same("CONFIG", "SET", name, value)
            if _tables_agree(pair, name, value):  # else the next value both take brings the two sides together
                pair.same("CONFIG", "GET", name, normalize=in_fake_order)


INVALID_SETS = [
    ("maxmemory", "abc"), ("maxmemory", "-1"), ("maxmemory", "1.5mb"), ("maxmemory", " 1"), ("maxmemory", "+1"),
    ("maxmemory", "0x10"), ("MAXMEMORY", "abc"), ("maxmemory-clients", "101%"), ("maxmemory-clients", "-1"),
    ("maxmemory-clients", "50%x"), ("maxmemory-clients", "1.5%"), ("maxmemory-clients", "-5%"),
    ("maxmemory-clients", "-0%"), ("maxmemory-clients", "%"), ("hz", "-0"), ("hz", "-5"), ("hz", "1.5"), ("hz", ""),
    ("hz", "+1"), ("hz", "01"), ("hz", "100000000000"), ("hz", "9223372036854775808"), ("appendonly", "maybe"),
    ("appendonly", ""), ("maxmemory-policy", "foo"), ("maxmemory-policy", ""), ("loglevel", "foo"),
    ("notify-keyspace-events", "KEAq"), ("save", "100"), ("save", "100 abc"), ("save", "0 10"),
    ("client-output-buffer-limit", "foo 0 0 0"), ("client-output-buffer-limit", "normal 0 0"),
    ("client-output-buffer-limit", "normal x 0 0"), ("client-output-buffer-limit", "master 0 0 0"),
    ("oom-score-adj-values", "0 200"), ("oom-score-adj-values", "0 200 3000"),
    ("latency-tracking-info-percentiles", "50 101"), ("latency-tracking-info-percentiles", "abc"),
    ("proto-max-bulk-len", "1kb"), ("slowlog-log-slower-than", "-5"), ("lfu-log-factor", "-1"),
    ("hash-max-ziplist-entries", "abc"), ("shutdown-on-sigterm", "save nosave"), ("shutdown-on-sigint", "bogus"),
    ("nosuch", "1"), ("daemonize", "yes"), ("enable-debug-command", "yes"), ("dir", "/nonexistent/x"),
    ("port", "abc"), ("dbfilename", "x.rdb"), ("replicaof", "no one"), ("save", " 100 10"), ("save", "100 10 "),
    ("save", "100\t10"), ("shutdown-on-sigint", "save  force"), ("latency-tracking-info-percentiles", "50  99"),
    ("client-output-buffer-limit", "normal 0 0  0"), ("oom-score-adj-values", "1 2  3"),
    ("bind", "127.0.0.1  ::1"), ("bind", " ".join(["127.0.0.1"] * 17)),  # refused before the server binds
]


@pytest.mark.parametrize("name,value", INVALID_SETS, ids=[f"{n}={v}" for n, v in INVALID_SETS])
def test_config_set_refusals(pair, name, value):
    before = pair.same("CONFIG", "GET", name, normalize=in_fake_order)
    with declared(pair, name, value):
        pair.same("CONFIG", "SET", name, value)
    assert pair.same("CONFIG", "GET", name, normalize=in_fake_order) == before


MULTI_SETS = [
    ("maxmemory", "10", "hz", "abc"),  # a bad value after a good one: nothing is set
    ("maxmemory", "10", "daemonize", "no"),
    ("maxmemory", "abc", "nosuch", "1"),  # names are checked before values
    ("daemonize", "yes", "nosuch", "1"),  # the first problem with a name wins
    ("nosuch", "1", "daemonize", "yes"),
    ("maxmemory", "abc", "daemonize", "yes"),
    ("maxmemory", "1", "maxmemory", "2"),
    ("maxmemory", "1", "MAXMEMORY", "2"),
    ("maxmemory", "1", "hz", "20", "maxmemory", "x"),
    ("hash-max-ziplist-entries", "5", "hash-max-listpack-entries", "6"),  # an alias is not a repeat: the last wins
    ("hash-max-listpack-entries", "7", "hash-max-ziplist-entries", "8"),
    ("maxmemory", "1mb", "hz", "20", "notify-keyspace-events", "Kx"),
    ("a", "1", "b"),
    ("maxmemory", "1", "hz"),
]


@pytest.mark.parametrize("args", MULTI_SETS, ids=lambda a: "+".join(a))
def test_config_multi_set_is_all_or_nothing(pair, args):
    names = ("maxmemory", "hz", "hash-max-listpack-entries", "notify-keyspace-events")
    with restoring(pair, *names):
        pair.same("CONFIG", "SET", *args)
        pair.same("CONFIG", "GET", *names, normalize=in_fake_order)


def test_config_other_subcommands_and_arity(pair):
    help_differs = contextlib.nullcontext() if pair.profile.server == pair.oracle.kind else pair.known_difference(
        oracle="valkey-9.1", expected=lambda real: _fake_help(pair),
        reason="Redis's CONFIG HELP ends 'Prints this help.', Valkey's 'Print this help.'")
    with help_differs:
        pair.same("CONFIG", "HELP")
        pair.same("config", "help")
    pair.same("CONFIG", "HELP", "x")
    pair.same("CONFIG", "REWRITE")
    pair.same("CONFIG", "REWRITE", "x")
    pair.same("CONFIG", "RESETSTAT")
    pair.same("CONFIG", "RESETSTAT", "x")
    pair.same("CONFIG", "GET")
    pair.same("CONFIG", "SET")
    pair.same("CONFIG", "SET", "maxmemory")
    pair.same("CONFIG")
    pair.same("CONFIG", "FOO")
    pair.same("CONFIG", "foo", "bar")


def test_config_in_a_transaction(pair):
    with restoring(pair, "maxmemory"):
        pair.same("MULTI")
        pair.same("CONFIG", "SET", "maxmemory", "2mb")
        pair.same("CONFIG", "GET", "maxmemory")
        pair.same("CONFIG", "SET", "maxmemory", "abc")
        pair.same("EXEC")
        pair.same("MULTI")
        pair.same("CONFIG", "GET")  # wrong arity: refused at queue time
        pair.same("EXEC")


def test_config_resetstat_zeroes_info_counters(pair):
    pair.same("SET", "k", "v")
    pair.same("GET", "k", "x")
    pair.same("CONFIG", "RESETSTAT")
    real = parse_info(pair.real("INFO", "stats"))
    assert real["total_error_replies"] == "0"
    if pair.fake is not None:
        fake = parse_info(pair.fake("INFO", "stats"))
        for field in ("total_error_replies", "keyspace_hits", "keyspace_misses", "expired_keys"):
            assert fake[field] == real[field], field


def test_every_parameter_refuses_what_it_cannot_parse(pair):
    """Each shared parameter that is not free text gets a value it cannot take, and numbers just outside their
    bounds: the same refusal (or, for Valkey's unsigned parameters and -1, the same acceptance)."""
    snapshot = dict(_pairs(pair.real("CONFIG", "GET", "*")))
    try:
        for param in _shared_rows(pair):
            if param.hidden or param.kind in ("str", "bind"):
                continue
            values = ["x?z"]
            if param.kind in ("int", "mem") and "I" not in param.flags and "P" not in param.flags:
                if param.lo > -2 ** 63:
                    values.append(str(param.lo - 1))
                if param.hi < 2 ** 63 - 1:
                    values.append(str(param.hi + 1))
            for value in values:
                pair.same("CONFIG", "SET", param.name, value)
    finally:
        after = dict(_pairs(pair.real("CONFIG", "GET", "*")))
        changed = [x for k, v in snapshot.items() if after.get(k) != v for x in (k, v)]
        if changed:  # values both sides took (Valkey's unsigned parameters take -1): put back
            pair.real("CONFIG", "SET", *changed)


def test_listpack_limits_reach_object_encoding(pair):
    with restoring(pair, "hash-max-listpack-entries"):
        pair.same("CONFIG", "SET", "hash-max-ziplist-entries", "2")
        pair.same("HSET", "h", "a", "1", "b", "2")
        pair.same("OBJECT", "ENCODING", "h")
        pair.same("HSET", "h", "c", "3")
        pair.same("OBJECT", "ENCODING", "h")


def test_stream_node_limits_reach_the_engine(pair):
    with restoring(pair, "stream-node-max-entries"):
        pair.same("CONFIG", "SET", "stream-node-max-entries", "2")
        for i in range(1, 6):
            pair.same("XADD", "s", f"{i}-1", "f", "v")
        full = pair.same("XINFO", "STREAM", "s", "FULL", normalize=_radix_only)
        assert full is not None


def _radix_only(real, fake, pair):
    """XINFO STREAM FULL's radix-tree counts (``radix-tree-keys``: one per node) are what the limit changes."""
    return real


def test_the_oracles_own_table_refuses_as_it_does(pair):
    """The table of the oracle's own version (Redis 7.0.15, Valkey 9.1.2), checked whole against the live server:
    every parameter that is not free text, a value it cannot take and numbers just outside its bounds."""
    table = _oracle_table(pair)
    snapshot = dict(_pairs(pair.real("CONFIG", "GET", "*")))
    mismatches = []
    try:
        for param in table.entries.values():
            if param.kind in ("str", "bind"):
                continue
            values = ["x?z"]
            if param.kind in ("int", "mem") and not param.refusal:
                values += [str(param.lo - 1)] if param.lo > -2 ** 63 else []
                values += [str(param.hi + 1)] if param.hi < 2 ** 63 - 1 else []
            for value in values:
                real = pair.real("CONFIG", "SET", param.name, value)
                err, _ = table.set([param.name.encode(), value.encode()], {})
                want = b"OK" if err is None else expected_err(err)
                if real != want:
                    mismatches.append((param.name, value, real, want))
    finally:
        after = dict(_pairs(pair.real("CONFIG", "GET", "*")))
        changed = [x for k, v in snapshot.items() if after.get(k) != v for x in (k, v)]
        if changed:
            pair.real("CONFIG", "SET", *changed)
    assert mismatches == []


def test_config_is_refused_in_scripts(pair):
    """CONFIG is ``noscript``: redis.call refuses it (the wording of a script error belongs to the Lua layer)."""
    for script in ("return redis.call('config', 'get', 'hz')", "return redis.call('config', 'set', 'hz', '10')"):
        reply = pair.loosely("EVAL", script, "0", reason="script errors carry the script's sha and line")
        if pair.fake is not None:
            word = "Valkey" if pair.profile.has("valkey_9_script_texts") else "Redis"  # Valkey 9.1.2 says Valkey
            assert reply.text.startswith(f"This {word} command is not allowed from script"), reply
    pair.same("CONFIG", "GET", "hz")


def test_every_parameter_takes_its_own_value_back(pair):
    """Each shared mutable parameter set to the value it has (as CONFIG GET shows it): both accept it and show
    the same value after (what a library does when it saves a setting and restores it)."""
    current = dict(_pairs(pair.real("CONFIG", "GET", "*")))
    for param in _shared_rows(pair):
        key = param.name.encode()
        if param.hidden or param.refusal or key in STARTED_WITH or key not in current:
            continue
        pair.same("CONFIG", "SET", param.name, current[key])
        pair.same("CONFIG", "GET", param.name, normalize=in_fake_order)


#: enum parameters whose values act on the process (oom_score_adj of the real server)
ENUMS_WITH_EFFECTS = {"oom-score-adj"}


def test_every_enum_takes_each_of_its_values(pair):
    """Each shared mutable enum parameter, every value in upper case: the value shown after, then put back."""
    current = dict(_pairs(pair.real("CONFIG", "GET", "*")))
    for param in _shared_rows(pair):
        if param.kind != "enum" or param.hidden or param.refusal or param.name in ENUMS_WITH_EFFECTS:
            continue
        try:
            for value in param.values:
                pair.same("CONFIG", "SET", param.name, value.upper())
                pair.same("CONFIG", "GET", param.name, normalize=in_fake_order)
        finally:
            pair.real("CONFIG", "SET", param.name, current[param.name.encode()])


def test_info_follows_config_set(pair):
    names = ("hz", "maxclients", "maxmemory", "maxmemory-policy")
    with restoring(pair, *names):
        pair.same("CONFIG", "SET", "hz", "20", "maxclients", "5000", "maxmemory", "100mb",
                  "maxmemory-policy", "volatile-lfu")
        real = {**parse_info(pair.real("INFO", "server")), **parse_info(pair.real("INFO", "clients")),
                **parse_info(pair.real("INFO", "memory"))}
        assert (real["hz"], real["configured_hz"], real["maxclients"]) == ("20", "20", "5000")
        assert (real["maxmemory"], real["maxmemory_human"], real["maxmemory_policy"]) == (
            "104857600", "100.00M", "volatile-lfu")
        if pair.fake is not None:
            fake = {**parse_info(pair.fake("INFO", "server")), **parse_info(pair.fake("INFO", "clients")),
                    **parse_info(pair.fake("INFO", "memory"))}
            for field in ("hz", "configured_hz", "maxclients", "maxmemory", "maxmemory_human", "maxmemory_policy"):
                assert fake[field] == real[field], field
