"""Port of Redis 7.0.15 ``tests/unit/dump.tcl`` (the DUMP/RESTORE part; MIGRATE is out of scope), through ``pair``.

One test per Tcl test, named after it; the docstring is the Tcl test name. Each side RESTOREs its own DUMP
(the payloads differ only in the footer's RDB version on Valkey 9). TTLs follow each server's clock, so
they are checked per side with the Tcl test's ranges. "RESTORE can set LRU / LFU" read OBJECT IDLETIME /
FREQ under an LRU/LFU maxmemory-policy: listed in :data:`NOT_PORTABLE`.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from .conftest import error_matching


def _dump_each(pair: Any, key: str) -> dict:
    return {side.name: side("DUMP", key) for side in (pair.real, pair.fake)}


def _restore_each(pair: Any, key: str, ttl: Any, dumps: dict, *options: str) -> None:
    for side in (pair.real, pair.fake):
        ttl_arg = ttl(side) if callable(ttl) else ttl
        assert side("RESTORE", key, ttl_arg, dumps[side.name], *options) == b"OK", side.name


def _pttl_each(pair: Any, key: str) -> list:
    return [side("PTTL", key) for side in (pair.real, pair.fake)]


def test_dump_restore_are_able_to_serialize_unserialize_a_simple_key(pair):
    """DUMP / RESTORE are able to serialize / unserialize a simple key"""
    pair.same("SET", "foo", "bar")
    dumps = _dump_each(pair, "foo")
    pair.same("DEL", "foo")
    pair.same("EXISTS", "foo")
    _restore_each(pair, "foo", "0", dumps)
    pair.same("TTL", "foo")
    pair.same("GET", "foo")


def _restore_with_ttl(pair: Any, ttl: Any, low: int, high: int, *options: str) -> None:
    """SET foo bar, DUMP, DEL, RESTORE with ``ttl``: each side's PTTL within ``low..high``, the value back."""
    pair.same("SET", "foo", "bar")
    dumps = _dump_each(pair, "foo")
    pair.same("DEL", "foo")
    _restore_each(pair, "foo", ttl, dumps, *options)
    assert all(low <= pttl <= high for pttl in _pttl_each(pair, "foo"))
    pair.same("GET", "foo")


def test_restore_can_set_an_arbitrary_expire_to_the_materialized_key(pair):
    """RESTORE can set an arbitrary expire to the materialized key"""
    _restore_with_ttl(pair, "5000", 3000, 5000)


def test_restore_can_set_an_expire_that_overflows_a_32_bit_integer(pair):
    """RESTORE can set an expire that overflows a 32 bit integer"""
    _restore_with_ttl(pair, "2569591501", 2569591501 - 3000, 2569591501)


def test_restore_can_set_an_absolute_expire(pair):
    """RESTORE can set an absolute expire"""
    _restore_with_ttl(pair, lambda side: str(int(time.time() * 1000) + 3000), 2000, 3100, "absttl")


def test_restore_with_absttl_in_the_past(pair):
    """RESTORE with ABSTTL in the past (the Tcl test looks with DEBUG OBJECT: the key is not there)"""
    pair.same("SET", "foo", "bar")
    dumps = _dump_each(pair, "foo")
    _restore_each(pair, "foo", lambda side: str(int(time.time() * 1000) - 3000), dumps, "absttl", "REPLACE")
    pair.same("EXISTS", "foo")


def test_restore_returns_an_error_of_the_key_already_exists(pair):
    """RESTORE returns an error of the key already exists"""
    pair.same("SET", "foo", "bar")
    error_matching(pair, "*BUSYKEY*", "RESTORE", "foo", "0", "...")


def test_restore_can_overwrite_an_existing_key_with_replace(pair):
    """RESTORE can overwrite an existing key with REPLACE"""
    pair.same("SET", "foo", "bar1")
    first = _dump_each(pair, "foo")
    pair.same("SET", "foo", "bar2")
    second = _dump_each(pair, "foo")
    pair.same("DEL", "foo")
    _restore_each(pair, "foo", "0", first)
    _restore_each(pair, "foo", "0", second, "replace")
    pair.same("GET", "foo")


def test_restore_can_detect_a_syntax_error_for_unrecongized_options(pair):
    """RESTORE can detect a syntax error for unrecongized options"""
    error_matching(pair, "*syntax*", "RESTORE", "foo", "0", "...", "invalid-option")


def test_dump_of_non_existing_key_returns_nil(pair):
    """DUMP of non existing key returns nil"""
    pair.same("DUMP", "nonexisting_key")


NOT_PORTABLE = {
    "RESTORE can set LRU": "NP-OBJECT: reads OBJECT IDLETIME under maxmemory-policy allkeys-lru",
    "RESTORE can set LFU": "NP-OBJECT: reads OBJECT FREQ under maxmemory-policy allkeys-lfu",
}


@pytest.mark.parametrize("name", sorted(NOT_PORTABLE))
def test_not_portable(name):
    """Tcl tests of dump.tcl not run here (reason in the skip message); MIGRATE ones are out of scope."""
    pytest.skip(f"{name!r}: {NOT_PORTABLE[name]}")
