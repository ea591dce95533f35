"""One runner per eval: a lease recorded in the store (``eval_leases``, schema v6).

Two ``eval --resume`` of one eval both passed the old "is its pid alive" check (the first
had not yet marked the eval running), so both wrote its items: the second died on a
duplicate key, and its cleanup marked the eval failed while the first still ran. Now a
runner takes the eval's lease when it starts or resumes the eval, and gives it back when
its run ends; a second runner finds a live holder and stops before it writes anything.

A holder that died leaves its row behind (kill -9 runs no cleanup), so a lease counts only
while its holder lives: on this host, while its pid is alive (in this process, while the
runner that took it exists); on another host, while its heartbeat is newer than
:data:`LEASE_TIMEOUT_S`. A lease that is not live is taken over.
"""
from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

from ..store import Store, StoreError, _pid_alive

HEARTBEAT_S = 30.0
# another host's holder is presumed dead after this long without a heartbeat: long enough
# for a store busy with other writers to delay a few beats
LEASE_TIMEOUT_S = 300.0

# tokens of the leases this process holds: a lease row with our pid but a token not here
# belongs to a runner of ours that is gone
_HELD: set[str] = set()


class EvalBusy(StoreError):
    """The eval is being run by another live runner."""


def hostname() -> str:
    return socket.gethostname()


def _live(row: dict[str, Any]) -> bool:
    if row["host"] == hostname():
        return row["token"] in _HELD if row["pid"] == os.getpid() else _pid_alive(row["pid"])
    return time.time() - (row["heartbeat_at"] or 0.0) < LEASE_TIMEOUT_S


def _busy(row: dict[str, Any]) -> EvalBusy:
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["started_at"] or 0))
    return EvalBusy(f"eval {row['eval_id']} is being run by pid {row['pid']} on {row['host']} "
                    f"(since {since}); wait for it to finish, or stop that process and resume "
                    f"again")


def _row(con: Any, eval_id: str) -> dict[str, Any] | None:
    cur = con.execute("SELECT eval_id, token, pid, host, started_at, heartbeat_at "
                      "FROM eval_leases WHERE eval_id = ?", [eval_id])
    r = cur.fetchone()
    return dict(zip([d[0] for d in cur.description], r)) if r else None


def _check(con: Any, eval_id: str, token: str | None) -> dict[str, Any] | None:
    """The eval's lease row; EvalBusy when another live runner holds it."""
    row = _row(con, eval_id)
    if row is not None and row["token"] != token and _live(row):
        raise _busy(row)
    if row is None:
        # an eval left running by a workbench without leases (before schema v6)
        b = con.execute("SELECT status, pid FROM eval_batches WHERE eval_id = ?",
                        [eval_id]).fetchone()
        if b and b[0] == "running" and b[1] != os.getpid() and _pid_alive(b[1]):
            raise EvalBusy(f"eval {eval_id} is being run by pid {b[1]} on {hostname()}; wait "
                           f"for it to finish, or stop that process and resume again")
    return row


def check(store: Store, eval_id: str) -> None:
    """EvalBusy when a live runner holds the eval (a quick test before loading anything)."""
    with store._conn() as con:
        _check(con, eval_id, None)


def acquire(store: Store, eval_id: str, token: str) -> None:
    """Take (or renew) the eval's lease for ``token``; EvalBusy when another live runner
    holds it. One transaction: DuckDB lets one process write the file at a time, so two
    runners cannot both see the lease free."""
    now = time.time()
    with store._tx() as con:
        row = _check(con, eval_id, token)
        started = row["started_at"] if row is not None and row["token"] == token else now
        con.execute("INSERT OR REPLACE INTO eval_leases (eval_id, token, pid, host, started_at, "
                    "heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)",
                    [eval_id, token, os.getpid(), hostname(), started, now])
    _HELD.add(token)


def release(store: Store, eval_id: str, token: str) -> None:
    _HELD.discard(token)
    try:
        store.execute("DELETE FROM eval_leases WHERE eval_id = ? AND token = ?", [eval_id, token])
    except StoreError:      # the row left behind is not live (its token is no longer held)
        pass


def forget(token: str) -> None:
    """A runner that is gone holds nothing (its row, if any, is then taken over)."""
    _HELD.discard(token)


class Heartbeat:
    """Renews the lease's heartbeat every ``every_s`` while a run goes on, so a runner on
    another host can tell a live holder from a dead one."""

    def __init__(self, store: Store, eval_id: str, token: str, every_s: float = HEARTBEAT_S):
        self._stop = threading.Event()
        self._args = (store, eval_id, token, every_s)
        self._thread = threading.Thread(target=self._beat, name=f"lease-{eval_id}", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        store, eval_id, token, every_s = self._args
        while not self._stop.wait(every_s):
            try:
                store.execute("UPDATE eval_leases SET heartbeat_at = ? WHERE eval_id = ? AND "
                              "token = ?", [time.time(), eval_id, token])
            except StoreError:      # the store is busy: the next beat tries again
                pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
