"""``EntryIndex``'s frozen chunks (a filled chunk becomes a tuple in every column, so the garbage collector untracks
it) against a plain model of the entries: random appends (one at a time and in batches), deletions anywhere
(``pop_k``: XDEL) and from the front (``pop_front``: trimming), with every read compared after each step, the
layout invariants checked (only chunks before the last are frozen), and the slices handed out to be kept
(``slice_after``, ``fields_sorted``) fresh lists whatever the chunk."""

from __future__ import annotations

import gc
import random
from bisect import bisect_left, bisect_right

import pytest

from fake_streams.entryindex import EntryIndex
from fake_streams.idindex import LOAD


def _enc(k: int) -> bytes:
    return b"%d-%d" % (k >> 64, k & ((1 << 64) - 1))


def _fields(k: int):
    return (b"f", b"%d" % k)


def _compare(index: EntryIndex, model: list, rnd: random.Random) -> None:
    index._check()
    assert len(index) == len(model)
    assert list(index.iter_keys()) == model
    if not model:
        assert index.first_entry() is None and index.last_entry() is None
        return
    assert index.first_entry() == (model[0], _enc(model[0]), _fields(model[0]))
    assert index.last_entry() == (model[-1], _enc(model[-1]), _fields(model[-1]))
    top = model[-1] + 3
    live = set(model)
    for _ in range(12):
        k = rnd.randrange(0, top)
        count = rnd.choice([0, 1, 10, 700, 2500])
        after = model[bisect_right(model, k):]
        want = after[:count] if count else after
        keys, encs, vals = index.slice_after(k, count)
        assert (keys, encs, vals) == (want, [_enc(x) for x in want], [_fields(x) for x in want])
        assert type(keys) is list and type(encs) is list and type(vals) is list
        lo, hi = sorted((rnd.randrange(0, top), rnd.randrange(0, top)))
        inside = model[bisect_left(model, lo):bisect_right(model, hi)]
        expect = [[_enc(x), list(_fields(x))] for x in inside]
        assert index.reply_range(lo, hi, count) == (expect[:count] if count else expect)
        back = expect[::-1]
        assert index.reply_range_rev(lo, hi, count) == (back[:count] if count else back)
        assert [x for x, _ in index.scan_k(lo, hi)] == inside
        assert [x for x, _ in index.rscan_k(hi, lo)] == inside[::-1]
        assert index.count_below(k, 10**9) == bisect_left(model, k)
        start = rnd.randrange(len(model))
        run = model[start:start + rnd.choice([1, 10, 1200])]  # neighbours: the slice-compare case
        found = index.fields_sorted(run)
        assert found == [_fields(x) for x in run] and type(found) is list
        probe = sorted(set(rnd.sample(range(top), min(top, 30))))
        assert index.fields_sorted(probe) == [_fields(x) if x in live else None for x in probe]
        assert index.entry_k(k) == ((_enc(k), _fields(k)) if k in live else None)


@pytest.mark.parametrize("seed", range(5))
def test_frozen_chunks_read_and_change_as_the_model(seed):
    rnd = random.Random(seed)
    index, model = EntryIndex(), []
    nxt = 1
    for step in range(30):
        op = rnd.random()
        if op < 0.45:  # appends, one at a time or a batch (a pipeline's run)
            n = rnd.choice([1, 7, 300, 1500, 2 * LOAD + 3])
            keys = [nxt + 3 * i + rnd.randrange(3) for i in range(n)]
            nxt = keys[-1] + 1
            if rnd.random() < 0.5:
                for k in keys:
                    assert index.append_entry(k, _enc(k), _fields(k)) == len(model) + 1
                    model.append(k)
            else:
                assert index.extend_entries(keys, [_enc(k) for k in keys], [_fields(k) for k in keys]) \
                    == len(model) + n
                model += keys
        elif op < 0.8 and model:  # XDEL: anywhere, often many in one chunk (merges, emptied chunks, the last one)
            gone = rnd.sample(model, min(len(model), rnd.choice([1, 50, 900])))
            for k in gone:
                assert index.pop_k(k) == _fields(k)
            gone_set = set(gone)
            model = [k for k in model if k not in gone_set]
            assert index.pop_k(nxt + 10) is None
        elif model:  # trimming from the front
            n = rnd.randrange(1, min(len(model), 2 * LOAD) + 1)
            index.pop_front(n)
            del model[:n]
        _compare(index, model, rnd)


def test_filled_chunks_are_frozen_and_untracked():
    """What the freeze is for: after collections, a filled chunk is not tracked by the garbage collector (a full
    collection does not walk its entries); the last chunk is a list that appends extend."""
    index = EntryIndex()
    for k in range(1, 3 * LOAD + 2):
        index.append_entry(k, _enc(k), _fields(k))
    index.extend_entries([10**6 + i for i in range(2 * LOAD)], [_enc(10**6 + i) for i in range(2 * LOAD)],
                         [_fields(10**6 + i) for i in range(2 * LOAD)])
    gc.collect()
    gc.collect()  # (a chunk of field tuples younger than its fields is looked at before them in one collection)
    *before, last = index._columns()[0]
    assert type(last) is list and len(before) == 5  # 3,001 appended: 1,000 ×3, then 1 + 999, 1,000, 1
    for outer in index._columns():
        for chunk in outer[:-1]:
            assert type(chunk) is tuple and not gc.is_tracked(chunk)
    index._check()
