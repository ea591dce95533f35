"""The share of the CPU that other work took (workbench/cpu_share.py), on this machine's /proc."""
import os
import subprocess
import sys
import time

import pytest

from workbench import cpu_share
from workbench.cpu_share import CpuSample, Meter, describe, others_share

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="needs Linux /proc")

BUSY = "import time\nt = time.time()\nwhile time.time() - t < {s}: pass\n"


def test_the_share_is_the_busy_time_outside_our_tree_over_all_time():
    a = CpuSample(total=1000, busy=300, own=100)
    b = CpuSample(total=2000, busy=1100, own=500)     # 800 busy, 400 of them ours
    assert others_share(a, b) == 0.4
    assert others_share(a, CpuSample(2000, 700, 500)) == 0.0      # never below zero
    assert others_share(a, a) is None and others_share(None, b) is None


def _busy(n: int, seconds: float) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", BUSY.format(s=seconds)]) for _ in range(n)]


def test_busy_processes_count_as_ours_in_our_tree_and_as_others_outside_it():
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        time.sleep(0.3)                       # the idle process has started
        mine, theirs = cpu_share.sample(), cpu_share.sample(root=idle.pid)
        procs = _busy(os.cpu_count() or 1, 1.5)
        time.sleep(1.0)
        mine_share = others_share(mine, cpu_share.sample())
        their_share = others_share(theirs, cpu_share.sample(root=idle.pid))
        for p in procs:
            p.wait()
    finally:
        idle.kill()
        idle.wait()
    # every core was busy with our children: other work took little, seen from this process,
    # and most of the machine, seen from a process that is not their parent
    assert mine_share is not None and their_share is not None
    assert their_share > 0.6
    assert mine_share < their_share - 0.4


def test_a_meter_says_when_timings_overstate_the_cost():
    m = Meter()
    # busy processes that are not ours: their parent exits at once, so they are orphaned
    spawn = ("import subprocess, sys\n"
             f"for _ in range({os.cpu_count() or 1}):\n"
             f"    subprocess.Popen([sys.executable, '-c', {BUSY.format(s=1.2)!r}])\n")
    subprocess.run([sys.executable, "-c", spawn], check=True)
    time.sleep(1.0)
    share = m.share()
    text = describe(share)
    assert text.startswith("CPU taken by other work meanwhile: ")
    assert share > cpu_share.CONTENDED and "overstate" in text
    time.sleep(0.5)                          # let the orphans finish before the next test
