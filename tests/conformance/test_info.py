"""INFO as the real servers report it: sections, field names in order, and the values that mean something.

Redis 7.0.15 (profile 7.0) and Valkey 9.1.2 (profile valkey-9.1) are compared field list by field list, every
section (the oracle's exact profile: ``pair.target.exact``). Valkey 9.1.2 also stands in for the valkey-8.0 profile: the
profile's fields (Valkey 8.0.1's ``genValkeyInfoString``) must appear in the real server's report in the same
order, and the real server's other fields must be ones added after 8.0.1 (:data:`VALKEY_AFTER_8_0`). The 7.4
profile's field names come from the 7.4.1 source (no Redis 7.4 here): with the Valkey oracle only its values
are compared.
"""

from typing import Dict, List, Tuple

import pytest

from .oracles import parse_info

#: Fields and sections Valkey 9.1.2 reports that Valkey 8.0.1's source does not have.
VALKEY_AFTER_8_0 = {
    "valkey_release_stage", "clients_hz", "paused_reason", "paused_actions", "paused_timeout_milliseconds",
    "mem_replicas_repl_buffer", "mem_cluster_slot_import", "mem_cluster_slot_export",
    "slot_migration_fork_in_progress", "total_net_cluster_slot_import_bytes", "total_net_cluster_slot_export_bytes",
    "expired_fields", "expired_keys_with_volatile_items_stale_perc", "io_threaded_accept_processed",
    "acl_access_denied_auth", "acl_access_denied_cmd", "acl_access_denied_key", "acl_access_denied_channel",
    "acl_access_denied_tls_cert", "acl_access_denied_db", "used_active_time_main_thread", "module",
    "# TLS", "# Cluster Info", "# Scripting Engines", "tls_server_cert_serial", "tls_server_cert_expires_in_seconds",
    "tls_client_cert_serial", "tls_client_cert_expires_in_seconds", "tls_ca_cert_serial",
    "tls_ca_cert_expires_in_seconds", "engines_count", "engines_total_used_memory", "engines_total_memory_overhead",
    "engine_0",
}
#: Sections whose lines depend on what ran before (the harness's own commands count on the real side).
HISTORY = {"# Commandstats", "# Latencystats", "# Errorstats", "# Keyspace", "# Modules"}
ARGS = [(), ("default",), ("all",), ("everything",), ("server", "clients"), ("SERVER", "Memory"), ("no-such",),
        ("stats", "cpu", "replication", "persistence"), ("cluster", "keyspace"), ("commandstats",)]


def layout(text: bytes) -> List[Tuple[str, List[str]]]:
    """``[(section title, [field names])]`` of an INFO reply."""
    out: List[Tuple[str, List[str]]] = []
    for line in text.decode().split("\r\n"):
        if line.startswith("# "):
            out.append((line, []))
        elif line:
            assert out, f"a field before any section: {line!r}"
            out[-1][1].append(line.split(":", 1)[0])
    return out


def _both(pair, *argv):
    real = pair.real(*argv)
    fake = pair.fake(*argv) if pair.fake is not None else None
    assert isinstance(real, bytes), real
    return real, fake


def _compare_layouts(pair, real: bytes, fake: bytes, argv) -> None:
    real_l, fake_l = layout(real), layout(fake)
    if pair.target.exact:
        assert [t for t, _ in fake_l] == [t for t, _ in real_l], argv
        for (title, rf), (_, ff) in zip(real_l, fake_l):
            if title not in HISTORY:
                assert ff == rf, f"{title} of INFO {argv}"
        return
    if pair.profile.name != "valkey-8.0":
        return  # 7.4's fields are the 7.4.1 source's (see the module docstring)
    assert [t for t, _ in fake_l] == [t for t, _ in real_l if t not in VALKEY_AFTER_8_0], argv
    real_fields = dict(real_l)
    for title, ff in fake_l:
        if title in HISTORY:
            continue
        rf = [f for f in real_fields[title] if f not in VALKEY_AFTER_8_0]
        assert ff == rf, f"{title} of INFO {argv}"


@pytest.mark.parametrize("args", ARGS, ids=lambda a: "-".join(a) or "bare")
def test_info_sections_and_field_names_in_order(pair, args):
    pair.same("SET", "k", "v")
    real, fake = _both(pair, "INFO", *args)
    if fake is not None:
        _compare_layouts(pair, real, fake, args)
        assert fake.endswith(b"\r\n") or fake == b""
        assert (real == b"") == (fake == b"")


def test_info_unknown_section_is_empty(pair):
    pair.same("INFO", "no-such-section")


def _values(pair, *sections: str) -> Tuple[Dict[str, str], Dict[str, str]]:
    real, fake = _both(pair, "INFO", *sections)
    return parse_info(real), parse_info(fake) if fake is not None else {}


MEANINGFUL = ("role", "cluster_enabled", "maxmemory", "maxmemory_human", "maxmemory_policy",
              "blocked_clients", "clients_in_timeout_table", "total_blocking_keys", "total_blocking_keys_on_nokey",
              "watching_clients", "total_watched_keys", "pubsub_clients", "redis_version", "server_name",
              "redis_mode", "server_mode", "tracking_clients", "connected_slaves", "master_repl_offset", "loading",
              "aof_enabled", "rdb_bgsave_in_progress", "pubsub_channels", "pubsub_patterns", "repl_backlog_active",
              "arch_bits", "process_supervised", "hz", "configured_hz", "cluster_connections", "maxclients",
              "mem_not_counted_for_evict", "evicted_keys", "sync_full", "master_failover_state",
              "second_repl_offset", "io_threads_active")


IDENTITY = {"redis_version", "server_name", "server_mode", "redis_mode"}


def _meaningful(pair, real: Dict[str, str], fake: Dict[str, str]) -> None:
    if pair.fake is None:
        return
    for name in MEANINGFUL:
        if name in real:
            if name in IDENTITY and pair.profile.name == "7.4":
                continue  # Valkey names itself where the 7.4 profile is Redis 7.4.1
            assert fake.get(name) == real[name], f"{name}: real {real[name]!r}, fake {fake.get(name)!r}"
    # the real side has one client more: the harness's control connection (oracles.Oracle.control)
    assert int(fake["connected_clients"]) == int(real["connected_clients"]) - 1


def test_info_live_values_clients_memory_policy_keyspace(pair):
    pair.same("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    pair.same("CONFIG", "SET", "maxmemory", "104857600")
    pair.same("SET", "a", "1")
    pair.same("SET", "b", "2", "EX", "1000")
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same("SELECT", "3")
    pair.same("XADD", "t", "1-1", "f", "v")
    pair.same("SELECT", "0")
    watcher = pair.connect()
    watcher.same("WATCH", "a", "b")
    reader = pair.connect()
    reader.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    group_reader = pair.connect()
    group_reader.same("XGROUP", "CREATE", "s", "g", "$")
    group_reader.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "100000", "STREAMS", "s", ">")
    pair.wait_blocked(2)
    real, fake = _values(pair, "everything")
    _meaningful(pair, real, fake)
    if pair.fake is not None:
        for db in ("db0", "db3"):
            r, f = real[db].split(","), fake[db].split(",")
            assert f[:2] == r[:2], db  # keys, expires (avg_ttl is the server's running estimate)
            if pair.target.exact:
                assert len(f) == len(r)
        assert int(fake["used_memory"]) > int(fake["used_memory_startup"])
        assert fake["used_memory_human"].endswith(("K", "M"))
    pair.same("CONFIG", "SET", "maxmemory", "0")
    pair.same("CONFIG", "SET", "maxmemory-policy", "noeviction")
    pair.same("XADD", "s", "2-1", "f", "v")
    reader.read()
    group_reader.read()


def test_info_used_memory_grows_with_a_stream(pair):
    if pair.fake is None:
        pytest.skip("fake side only")
    before = int(parse_info(pair.fake("INFO", "memory"))["used_memory"])
    for i in range(1, 200):
        pair.fake("XADD", "s", f"{i}-1", "field", "v" * 50)
    after = int(parse_info(pair.fake("INFO", "memory"))["used_memory"])
    assert after - before > 199 * 50


def _cmdstats(text: bytes, names) -> Dict[str, Dict[str, str]]:
    out = {}
    for key, value in parse_info(text).items():
        if key.startswith("cmdstat_") and key[8:] in names:
            out[key] = {k: v for k, v in (kv.split("=") for kv in value.split(",")) if k != "usec" and
                        k != "usec_per_call"}
    return out


STAT_COMMANDS = {"xadd", "xgroup|create", "xreadgroup", "xack", "set", "get", "incr", "exec", "multi", "object",
                 "object|encoding", "xinfo", "xlen", "lpush"}


def test_info_commandstats_and_errorstats_count_like_the_server(pair):
    pair.same("CONFIG", "RESETSTAT")
    pair.same("XADD", "s", "1-1", "f", "v")
    pair.same("XADD", "s", "1-1", "f", "v")  # failed call
    pair.same("XADD", "s")  # rejected: arity
    pair.same("XINFO", "NOPE")  # rejected: unknown subcommand
    pair.same("XGROUP", "CREATE", "s", "g", "0")
    pair.same("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    pair.same("XACK", "s", "g", "1-1")
    pair.same("SET", "x", "1")
    pair.same("INCR", "x")
    pair.same("LPUSH", "x", "a")  # WRONGTYPE: failed
    pair.same("NOSUCHCOMMAND")  # errorstats only
    pair.same("MULTI")
    pair.same("XLEN", "s")
    pair.same("GET", "x")
    pair.same("EXEC")
    pair.same("OBJECT", "ENCODING", "x")
    real, fake = _both(pair, "INFO", "commandstats", "errorstats")
    if fake is None:
        return
    assert _cmdstats(fake, STAT_COMMANDS) == _cmdstats(real, STAT_COMMANDS)
    real_e = {k: v for k, v in parse_info(real).items() if k.startswith("errorstat_")}
    fake_e = {k: v for k, v in parse_info(fake).items() if k.startswith("errorstat_")}
    assert fake_e == real_e
    real_s, fake_s = _values(pair, "stats")
    assert fake_s["total_error_replies"] == real_s["total_error_replies"]
