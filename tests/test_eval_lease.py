"""One runner per eval: a second resumer of a running eval stops at once without touching
it; a lease whose holder died (kill -9) or whose other-host heartbeat went stale is taken
over."""
import json
import os
import socket
import time

import pytest

from workbench.eval import lease
from workbench.eval.runner import EvalInterrupted, EvalRunner, EvalSpec
from workbench.store import Store

from tests.test_eval_helpers import ToyDataset, toy_methods
from tests.test_eval_runner import (_backend, _cli, _import_toy, _runner,
                                    assert_resumed_exactly_n, kill_after_stored)


def _resume(st, eval_id):
    return EvalRunner.resume(st, eval_id, backend=_backend(), dataset=ToyDataset(),
                             method_classes=toy_methods())


def _interrupted(st, after=2):
    r = _runner(st, EvalSpec("toy", ["toy-llm"], judge="off"))
    with pytest.raises(EvalInterrupted):
        r.run(lambda p: (_ for _ in ()).throw(KeyboardInterrupt) if p.session_done == after
              else None)
    return r


def _state(st, eval_id):
    return (st.query("SELECT status, pid, n_done, error FROM eval_batches WHERE eval_id = ?",
                     [eval_id])[0],
            st.query("SELECT count(*) AS n FROM eval_items")[0]["n"],
            st.query("SELECT count(*) AS n FROM runs")[0]["n"])


def test_a_second_resumer_stops_at_once_and_changes_nothing(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    r = _interrupted(st)
    first = _resume(st, r.eval_id)
    before = _state(st, r.eval_id)
    with pytest.raises(lease.EvalBusy, match=f"eval {r.eval_id} is being run by pid "
                                             f"{os.getpid()} on {socket.gethostname()}"):
        _resume(st, r.eval_id)
    assert _state(st, r.eval_id) == before
    res = first.run()
    assert res.status == "finished" and res.n_new == r.n_planned - 2
    assert st.query("SELECT count(DISTINCT item_key) AS k, count(*) AS n FROM eval_items")[0] \
        == {"k": r.n_planned, "n": r.n_planned}
    # the finished run gave its lease back: nothing is held, and a later resume may start
    assert st.query("SELECT count(*) AS n FROM eval_leases")[0]["n"] == 0
    _resume(st, r.eval_id)


def test_a_runner_that_lost_the_lease_writes_nothing(tmp_path):
    """Two runners built before either ran (the race the old pid check lost): the one that
    did not get the lease fails before its first write, and marks nothing failed."""
    st = Store(tmp_path / "s.duckdb")
    r = _interrupted(st)
    first = _resume(st, r.eval_id)
    lease.forget(first.lease_token)            # as if `first` had not taken it yet ...
    second = _resume(st, r.eval_id)            # ... so this one can take it over
    before = _state(st, r.eval_id)
    with pytest.raises(lease.EvalBusy):
        first.run()
    assert _state(st, r.eval_id) == before
    assert second.run().status == "finished"


def test_another_hosts_lease_holds_until_its_heartbeat_is_stale(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    r = _interrupted(st)
    now = time.time()
    st.execute("INSERT INTO eval_leases VALUES (?, 'tok', 4242, 'elsewhere', ?, ?)",
               [r.eval_id, now - 60, now - 5])
    with pytest.raises(lease.EvalBusy, match="being run by pid 4242 on elsewhere"):
        _resume(st, r.eval_id)
    st.execute("UPDATE eval_leases SET heartbeat_at = ?",
               [now - lease.LEASE_TIMEOUT_S - 1])
    assert _resume(st, r.eval_id).run().status == "finished"


def test_the_heartbeat_renews_the_lease_while_a_run_goes_on(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    r = _interrupted(st)
    runner = _resume(st, r.eval_id)
    st.execute("UPDATE eval_leases SET heartbeat_at = 0")
    beat = lease.Heartbeat(st, r.eval_id, runner.lease_token, every_s=0.05)
    try:
        deadline = time.monotonic() + 30
        while st.query("SELECT heartbeat_at FROM eval_leases")[0]["heartbeat_at"] == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        beat.stop()


def _batch(st: Store) -> dict:
    for _ in range(100):
        try:
            return st.query("SELECT status, pid, error FROM eval_batches")[0]
        except Exception:     # noqa: BLE001  (the winner's writer holds the file for a moment)
            time.sleep(0.1)
    return st.query("SELECT status, pid, error FROM eval_batches")[0]


def test_cli_killed_holder_then_two_resumers_at_once(tmp_path, isolated_home):
    """kill -9 leaves a lease behind: a resume takes it over. Of two `eval --resume` started
    together, one runs; the other exits at once (exit 2, one line naming the winner's pid and
    host) without marking the eval failed or writing a row; the winner stores every item once."""
    from workbench.methods import all_methods
    if "vanilla" not in all_methods():
        pytest.skip("the vanilla baseline has not landed")
    n = 60
    _import_toy(isolated_home, n)
    table = tmp_path / "table.json"
    table.write_text(json.dumps({"rules": [{"match": "item1?", "text": "place1"}],
                                 "default": "nowhere", "delay_ms": 400}))
    p = _cli(["--dataset", "toyq", "--methods", "vanilla", "--scripted", str(table),
              "--judge", "off"], isolated_home)
    st = Store()
    kill_after_stored(p, st, 3)
    eval_id = st.query("SELECT eval_id FROM eval_batches")[0]["eval_id"]
    assert st.query("SELECT pid FROM eval_leases")[0]["pid"] == p.pid     # left behind

    args = ["--resume", eval_id, "--scripted", str(table), "--no-progress"]
    both = [_cli(args, isolated_home), _cli(args, isolated_home)]
    deadline = time.monotonic() + 120
    while all(x.poll() is None for x in both):
        assert time.monotonic() < deadline, "neither resumer was refused"
        time.sleep(0.1)
    loser = next(x for x in both if x.poll() is not None)
    winner = next(x for x in both if x is not loser)
    out, err = loser.communicate()
    assert loser.returncode == 2, err
    assert err.strip().splitlines() == [err.strip()] and "Traceback" not in err
    assert f"eval {eval_id} is being run by pid {winner.pid} on {socket.gethostname()}" in err
    assert winner.poll() is None, "the winner ended before the loser was refused"
    # The winner takes the lease before it marks the eval running, so the loser can be
    # refused in between: wait for the winner's mark, then check nothing else changed it.
    deadline = time.monotonic() + 60
    while (b := _batch(st))["pid"] != winner.pid and time.monotonic() < deadline:
        time.sleep(0.1)
    assert b == {"status": "running", "pid": winner.pid, "error": None}
    out, err = winner.communicate(timeout=180)
    assert winner.returncode == 0, err
    assert_resumed_exactly_n(st, n)
