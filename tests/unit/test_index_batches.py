"""The batch reads of the sorted indexes (``IdIndex.slice_k``, ``EntryIndex.fields_sorted``) against plain
per-key lookups, across chunk boundaries and with holes (XAUTOCLAIM's windowed scan uses them)."""

from __future__ import annotations

import random

import pytest

from fake_streams.entryindex import EntryIndex
from fake_streams.idindex import LOAD, IdMap


def _filled(rnd: random.Random, n: int):
    entries, pel = EntryIndex(), IdMap()
    keys = sorted(rnd.sample(range(1, 8 * n), n))
    for k in keys:
        entries.append_entry(k, b"%d-0" % k, (b"f", b"%d" % k))
    pel.extend_k(list(keys), [b"v%d" % k for k in keys])
    for k in rnd.sample(keys, n // 5):  # holes: chunks shrink, merge or go
        entries.pop_k(k)
        pel.pop_k(k)
    return entries, pel


@pytest.mark.parametrize("seed", range(6))
def test_slice_and_fields_sorted_match_single_lookups(seed):
    rnd = random.Random(seed)
    entries, pel = _filled(rnd, rnd.choice([50, 3 * LOAD]))
    live = [k for k, _ in pel.scan_k(0)]
    for _ in range(200):
        lo, limit, inclusive = rnd.randrange(0, live[-1] + 5), rnd.choice([1, 2, 11, 700, 5000]), rnd.random() < 0.5
        keys, vals = pel.slice_k(lo, limit, inclusive)
        want = [k for k in live if (k >= lo if inclusive else k > lo)][:limit]
        assert keys == want and vals == [pel.get_k(k) for k in want]
        probe = sorted(rnd.sample(range(0, live[-1] + 10), rnd.choice([1, 5, 40])))
        assert entries.fields_sorted(probe) == [entries.get_k(k) for k in probe]
        run = live[rnd.randrange(len(live)):][: rnd.choice([1, 10, 1200])]  # neighbours: the slice-compare case
        assert entries.fields_sorted(run) == [entries.get_k(k) for k in run]


@pytest.mark.parametrize("seed", range(6))
def test_drop_run_removes_present_neighbours_as_pop_run_does(seed):
    # drop_run knows its keys are present (one owner's PEL entries) and checks a run from its two ends only: where
    # pop_run takes the keys it takes them too (same index left), and where pop_run refuses (not neighbours in one
    # chunk) it refuses and changes nothing
    rnd = random.Random(seed)
    _, dropped = _filled(rnd, rnd.choice([50, 3 * LOAD]))
    rnd = random.Random(seed)
    _, popped = _filled(rnd, rnd.choice([50, 3 * LOAD]))
    for _ in range(300):
        live = [k for k, _ in dropped.scan_k(0)]
        if not live:
            break
        at = rnd.randrange(len(live)) if rnd.random() < 0.8 else 0  # (0: the smallest keys, found without a seek)
        if rnd.random() < 0.7:
            keys = live[at:at + rnd.choice([1, 2, 10, 40])]  # neighbours (maybe across a chunk boundary)
        else:
            keys = sorted(rnd.sample(live, min(len(live), rnd.choice([2, 5]))))  # present, maybe not neighbours
        taken = popped.pop_run(keys)
        assert dropped.drop_run(keys) is (taken is not None)
        assert list(dropped.scan_k(0)) == list(popped.scan_k(0))
        dropped._check()


@pytest.mark.parametrize("seed", range(6))
def test_slice_near_matches_slice_k_whatever_the_position_it_is_given(seed):
    # slice_near takes a position where its start key was seen: right (used, no seek), stale after removals and
    # inserts, of another key, out of range or unknown (sought): the same slice as slice_k every time, and the
    # position it returns holds the last key returned (or is unknown: a slice over several chunks)
    rnd = random.Random(seed)
    _, pel = _filled(rnd, rnd.choice([50, 3 * LOAD]))
    near, lo = (-1, 0), 0
    for _ in range(400):
        live = [k for k, _ in pel.scan_k(0)]
        if near == (-1, 0) or rnd.random() < 0.3:  # else the next slice starts where the last one ended (a cursor loop)
            lo = rnd.choice(live) if rnd.random() < 0.9 else rnd.randrange(0, live[-1] + 5)
        if rnd.random() < 0.3:
            near = rnd.choice([(-1, 0), (0, 0), (len(pel._keys), 0), (0, 10**6), (rnd.randrange(len(pel._keys)), 3)])
        limit = rnd.choice([1, 2, 11, 700])
        keys, vals, at = pel.slice_near(lo, limit, near)
        assert (keys, vals) == pel.slice_k(lo, limit)
        if at != (-1, 0):
            assert pel._keys[at[0]][at[1]] == keys[-1]
        near, lo = at, keys[-1] if keys else lo
        if rnd.random() < 0.3 and len(live) > 10:  # the PEL changes before the next slice: a stale position
            pel.pop_k(rnd.choice(live))
        elif rnd.random() < 0.2:
            k = rnd.randrange(0, live[-1] + 5)
            if not pel.has_k(k):
                pel.set_k(k, b"v%d" % k)
