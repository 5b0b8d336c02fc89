"""benchmarks/loads.py measures what it says: the control keeps the engine's shape of data, ``--release`` closes
each load's handle as the fixture's teardown does, and the runs' summary takes the control's extra seconds off."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def loads():
    sys.path.insert(0, str(ROOT / "benchmarks"))  # loads.py imports its neighbour report.py
    try:
        spec = importlib.util.spec_from_file_location("bench_loads", ROOT / "benchmarks" / "loads.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_the_control_keeps_what_the_engine_keeps_per_entry(loads):
    """Same entries, same chunking (1000, frozen to tuples), the key ``ms << 64 | seq``, the ID's bytes, the
    stored field tuple of the engine's entry index (names shared, values fresh bytes)."""
    from fake_streams import FakeStreamsServer

    control = loads.Control()
    control.load(2500)
    assert [len(chunk) for chunk in control.chunks] == [1000, 1000, 500]
    assert all(type(chunk) is tuple for chunk in control.chunks)
    key, id_bytes, fields = control.chunks[2][-1]
    ms, seq = (int(part) for part in id_bytes.split(b"-"))
    assert key == ms << 64 | seq and seq == 2500
    server = FakeStreamsServer()
    client = server.client(protocol=2)
    loads.load(client, 2500)
    [(_, stored)] = client.xrevrange("s", count=1)
    assert fields == (b"user", b"u:1234", b"action", b"click")
    assert list(fields[0::2]) == list(stored) and list(fields[1::2]) == list(stored.values())
    assert client.xlen("s") == 2500
    first, other = control.chunks[0][0][2], control.chunks[0][1][2]
    assert first[0] is other[0] and first[1] is not other[1]  # names shared, values fresh
    server.close()


@pytest.mark.parametrize("released", [False, True])
def test_release_closes_each_handle_as_the_fixture_teardown_does(loads, monkeypatch, released):
    closed = []
    monkeypatch.setattr(loads, "release", lambda owner: (closed.append(owner), owner.close()))
    rows = loads.one_run("fixture", 1500, 2, released, quiet=True)
    assert len(rows) == 2 and all(row["cpu"] > 0 and len(row["gc"]) == 3 for row in rows)
    assert len(closed) == (2 if released else 0)
    assert all(handle._closed for handle in closed)


def test_the_summary_takes_the_control_s_extra_seconds_off(loads, monkeypatch, capsys):
    """``--runs 1 --via fixture,control``: net = (last − control's extra) ÷ first."""
    fake = {"fixture": [{"cpu": 10.0}, {"cpu": 13.0}], "control": [{"cpu": 2.0}, {"cpu": 4.0}]}
    for rows in fake.values():
        for row in rows:
            row.update(user=row["cpu"], system=0.0, faults=0, gc=[0.0, 0.0, 0.0], collections=[0, 0, 0])

    class Done:
        def __init__(self, via):
            import json
            self.stdout = json.dumps(fake[via])

    monkeypatch.setattr(loads.subprocess, "run", lambda command, **kw: Done(command[command.index("--via") + 1]))
    monkeypatch.setattr(sys, "argv", ["loads.py", "--runs", "1", "--loads", "2", "--via", "fixture,control"])
    assert loads.main() == 0
    out = capsys.readouterr().out
    assert "net ÷ first median 1.10× (1.10)" in out  # (13 − (4 − 2)) ÷ 10
    assert "extra +3.00 s; control's extra +2.00 s" in out
