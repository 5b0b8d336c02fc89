"""``python -m fake_streams demo`` (the README's first command) and the CLI's help.

The demo runs on the embedded server under a manual clock, so its output is golden: compared whole.
"""

from __future__ import annotations

import io

import pytest

from fake_streams.__main__ import main
from fake_streams.demo import run

from .conftest import WAIT_S, module_process

GOLDEN_7_4 = """\
fake-redis-streams demo: profile 7.4 (redis 7.4.1), embedded server, manual clock at 1700000000000

1. Orders come in; two workers share them through a consumer group
  t+0.0    producer  XADD orders * order 1001  -> 1700000000000-0
  t+0.0    producer  XADD orders * order 1002  -> 1700000000000-1
  t+0.0    producer  XADD orders * order 1003  -> 1700000000000-2
  t+0.0    producer  XADD orders * order 1004  -> 1700000000000-3
  t+0.0    setup     XGROUP CREATE orders workers 0  -> OK
  t+0.1    alice     XREADGROUP ... COUNT 2 >  -> 1700000000000-0, 1700000000000-1 (orders 1001, 1002)
  t+0.1    alice     ships orders 1001, 1002, XACK  -> 2
  t+0.1    bob       XREADGROUP ... COUNT 2 >  -> 1700000000000-2, 1700000000000-3 (orders 1003, 1004)
  t+0.1    bob       *** crashes before acknowledging: his 2 entries stay pending ***

2. Work goes on without bob
  t+0.2    producer  XADD orders * order 1005  -> 1700000000200-0
  t+0.2    producer  XADD orders * order 1006  -> 1700000000200-1
  t+0.2    alice     XREADGROUP ... >  -> 1700000000200-0, 1700000000200-1; ships, XACK  -> 2
  t+0.2    monitor   XPENDING orders workers  -> 2 pending (bob: 2)

3. A minute later (ManualClock.advance: no waiting), a recovery pass
  t+60.2   clock     advance(60_000)
  t+60.2   monitor   1700000000000-2  owner bob  idle 60100 ms  delivered 1x
  t+60.2   monitor   1700000000000-3  owner bob  idle 60100 ms  delivered 1x
  t+60.2   alice     XAUTOCLAIM orders workers alice 30000 0-0  -> 1700000000000-2, 1700000000000-3 (next 0-0)
  t+60.2   monitor   1700000000000-2  owner alice  idle 0 ms  delivered 2x
  t+60.2   monitor   1700000000000-3  owner alice  idle 0 ms  delivered 2x
  t+60.3   alice     ships orders 1003, 1004, XACK  -> 2

4. Final state
  XPENDING orders workers: pending=0  min=nil  max=nil  consumers=[]
  XINFO GROUPS orders: name=workers  consumers=2  pending=0  last-delivered-id=1700000000200-1  entries-read=6  lag=0
  XINFO CONSUMERS orders workers: name=alice  pending=0  idle=100  inactive=100
  XINFO CONSUMERS orders workers: name=bob  pending=0  idle=60200  inactive=60200

Every order shipped once, bob's two after the recovery pass; no server, no sleep.
"""


def test_demo_output_is_golden():
    out = io.StringIO()
    assert run("7.4", out) == 0
    assert out.getvalue() == GOLDEN_7_4


def test_demo_as_a_module_exits_0():
    proc = module_process("demo")
    out, err = proc.communicate(timeout=WAIT_S * 3)  # real-time: a subprocess runs to its end
    assert (proc.returncode, err) == (0, "")
    assert out == GOLDEN_7_4


@pytest.mark.parametrize("version", ["7.0", "7.2", "valkey-8.0"])
def test_demo_on_every_profile(version):
    out = io.StringIO()
    assert run(version, out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"fake-redis-streams demo: profile {version} ")
    bob = next(line for line in lines if "XINFO CONSUMERS" in line and "name=bob" in line)
    assert "pending=0  idle=60200" in bob
    assert ("inactive=60200" in bob) == (version != "7.0")  # XINFO CONSUMERS 'inactive' is 7.2+
    assert lines[-1] == "Every order shipped once, bob's two after the recovery pass; no server, no sleep."


@pytest.mark.parametrize("argv", [["--help"], ["serve", "--help"], ["demo", "--help"]])
def test_help(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    assert "usage: python -m fake_streams" in capsys.readouterr().out


def test_a_command_is_required(capsys):
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
