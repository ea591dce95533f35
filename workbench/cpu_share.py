"""How much of the machine's CPU other work took while something ran.

A wall time measures a method only when nothing else competed for the cores: on 2 cores, a
test run or a second eval beside an eval roughly doubles its seconds per question. The load
average cannot tell: it counts processes waiting on the disk too, and read 1.6 on an idle
machine here. So this reads Linux's CPU counters (``/proc/stat``: every core's busy, idle
and steal time) and the CPU time of this process and all its descendants (the model worker
included), and takes the share of the machine's CPU time that went to anything else,
hypervisor steal included, over an interval.

Where ``/proc`` is missing (not Linux) every figure is ``None``: unknown, not zero.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# Above this share of the CPU taken by other work, a wall time overstates the method's cost
CONTENDED = 0.2

_PROC = Path("/proc")


@dataclass(frozen=True)
class CpuSample:
    total: int          # CPU time of all cores, in clock ticks
    busy: int           # ... not idle (steal included: time the cores were not ours)
    own: int            # this process and its descendants


def _tree_ticks(root: int) -> int:
    """utime + stime + cutime + cstime summed over ``root`` and its descendants (a child's
    time moves to its parent's cutime when it is reaped, so the sum survives that)."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for d in _PROC.iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:             # the process ended meanwhile
            continue
        # the command name (field 2) may hold spaces and parentheses: split after its end
        fields = stat[stat.rindex(")") + 2:].split()
        pid = int(d.name)
        children.setdefault(int(fields[1]), []).append(pid)
        ticks[pid] = sum(int(x) for x in fields[11:15])
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total


def sample(root: int | None = None) -> CpuSample | None:
    """The counters now; ``root`` is the process whose tree counts as ours (default: this one)."""
    try:
        first = (_PROC / "stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if first[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal (guest time is already in user)
    vals = [int(x) for x in first[1:9]]
    total = sum(vals)
    busy = total - vals[3] - vals[4]
    return CpuSample(total, busy, _tree_ticks(os.getpid() if root is None else root))


def others_share(before: CpuSample | None, after: CpuSample | None) -> float | None:
    """Share of the machine's CPU time between two samples that went to other work."""
    if before is None or after is None or after.total <= before.total:
        return None
    others = (after.busy - before.busy) - (after.own - before.own)
    return round(min(max(others / (after.total - before.total), 0.0), 1.0), 3)


class Meter:
    """Other work's share of the CPU since the meter was made (for a benchmark's whole run)."""

    def __init__(self) -> None:
        self.start = sample()

    def share(self) -> float | None:
        return others_share(self.start, sample())


def describe(share: float | None) -> str:
    """A benchmark's line for a :class:`Meter` reading."""
    if share is None:
        return "CPU taken by other work: unknown (no /proc/stat)"
    warn = (": the timings overstate the cost, run again on a quiet machine"
            if share > CONTENDED else "")
    return f"CPU taken by other work meanwhile: {share:.0%}{warn}"
