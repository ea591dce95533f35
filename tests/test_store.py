import json
import os
import subprocess
import sys
import threading
import time

import duckdb
import pytest

from workbench import trace as T
from workbench.store import SCHEMA_VERSION, Store, StoreError, StoreLockedError


def _run(store, rid="run_a", status="running", **kw):
    store.start_run({"run_id": rid, "method": "vanilla", "question": "q?", "config": {"k": 1},
                     "status": status, **kw})


def test_run_and_events_round_trip(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    _run(st)
    clock = T.EventClock("run_a")
    evs = [clock.stamp(T.node_added("n1", "question", "q?")),
           clock.stamp(T.Event(T.LLM_CALL, {"prompt": "p", "output": "o", "prompt_tokens": 3,
                                            "completion_tokens": 2, "latency_ms": 1.0,
                                            "purpose": "answer", "scores": {"perplexity": 1.5}},
                               node_id="n1", llm_call_id="c1")),
           clock.stamp(T.answer("yes", node_id="n1"))]
    st.add_events(evs)
    st.update_run("run_a", status="finished", answer="yes", llm_calls=1)
    back = st.events("run_a")
    assert [e.to_dict() for e in back] == [e.to_dict() for e in evs]
    assert st.trace("run_a").answer["text"] == "yes"
    assert st.trace("run_a", upto=0).answer is None
    run = st.get_run("run_a")
    assert run["status"] == "finished" and run["config"] == {"k": 1}
    calls = st.query("SELECT call_id, perplexity FROM llm_calls WHERE run_id = 'run_a'")
    assert calls == [{"call_id": "c1", "perplexity": 1.5}]
    exported = st.export_run("run_a")
    assert exported["trace"]["nodes"]["n1"]["text"] == "q?"
    json.dumps(exported, default=str)


def test_annotations_and_delete(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    _run(st)
    aid = st.add_annotation("run_a", "node", "n1", ["retrieval miss"], "no gold passage", "ana")
    anns = st.annotations("run_a")
    assert anns[0]["id"] == aid and anns[0]["tags"] == ["retrieval miss"] and anns[0]["author"] == "ana"
    st.delete_run("run_a")
    assert st.get_run("run_a") is None and st.annotations("run_a") == []


def test_two_threads_writing_lose_nothing(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    errors = []

    def writer(rid):
        try:
            _run(st, rid)
            clock = T.EventClock(rid)
            for i in range(40):
                st.add_events([clock.stamp(T.node_added(f"n{i}", "step", f"text {i}"))])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(f"run_{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    counts = st.query("SELECT run_id, count(*) AS n FROM events GROUP BY run_id ORDER BY run_id")
    assert counts == [{"run_id": "run_0", "n": 40}, {"run_id": "run_1", "n": 40}]


def test_orphaned_running_run_becomes_interrupted(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    _run(st, "run_dead", pid=2 ** 22 + 12345)     # no such process
    _run(st, "run_live")                           # this process: still running
    st2 = Store(tmp_path / "s.duckdb")
    assert st2.get_run("run_dead")["status"] == "interrupted"
    assert st2.get_run("run_live")["status"] == "running"


def test_an_eval_whose_process_died_becomes_interrupted_and_says_how_to_resume(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    for eid, pid in (("ev_dead", 2 ** 22 + 12345), ("ev_live", os.getpid())):
        st.execute("INSERT INTO eval_batches (eval_id, created_at, status, pid) "
                   "VALUES (?, 0, 'running', ?)", [eid, pid])
    rows = {r["eval_id"]: r for r in Store(tmp_path / "s.duckdb").query(
        "SELECT eval_id, status, error FROM eval_batches")}
    assert rows["ev_dead"]["status"] == "interrupted"
    assert "eval --resume ev_dead" in rows["ev_dead"]["error"]
    assert rows["ev_live"]["status"] == "running"


def test_an_eval_resumed_while_a_store_opens_is_not_marked_interrupted(tmp_path, monkeypatch):
    """A store opening reads 'running, dead pid' and writes 'interrupted' later: a resume
    that took the eval over in between (its own pid) must keep it running."""
    import workbench.store as S
    path = tmp_path / "s.duckdb"
    st = Store(path)
    dead = 2 ** 22 + 12345
    st.execute("INSERT INTO eval_batches (eval_id, created_at, status, pid) "
               "VALUES ('ev_x', 0, 'running', ?)", [dead])

    def alive(pid):                 # the check runs between the read and the write
        st.execute("UPDATE eval_batches SET status = 'running', pid = ? WHERE eval_id = "
                   "'ev_x'", [os.getpid()])
        return pid != dead
    monkeypatch.setattr(S, "_pid_alive", alive)
    Store(path)
    row = st.query("SELECT status, pid, error FROM eval_batches")[0]
    assert row == {"status": "running", "pid": os.getpid(), "error": None}


def test_migrates_old_schema_and_keeps_data(tmp_path):
    path = tmp_path / "old.duckdb"
    from workbench.store import _MIGRATIONS
    con = duckdb.connect(str(path))
    for sql in _MIGRATIONS[1]:
        con.execute(sql)
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute("INSERT INTO runs (run_id, status, question) VALUES ('old_run', 'finished', 'q')")
    con.close()
    st = Store(path)
    assert st.schema_version() == SCHEMA_VERSION
    assert st.get_run("old_run")["question"] == "q"
    assert st.get_run("old_run")["eval_id"] is None
    assert (tmp_path / "old.duckdb.v1.bak").exists()


def test_newer_schema_is_refused_clearly(tmp_path):
    path = tmp_path / "new.duckdb"
    Store(path)
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(StoreError, match="newer than this workbench"):
        Store(path)


def test_locked_by_another_process_gives_clear_error(tmp_path):
    path = tmp_path / "locked.duckdb"
    Store(path)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         f"import duckdb, time; c = duckdb.connect({str(path)!r}); print('held', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        with pytest.raises(StoreLockedError, match="locked by another process"):
            Store(path, lock_timeout=0.5)
        assert time.monotonic() - t0 < 10
    finally:
        holder.kill()
        holder.wait()
    # once released, the data is intact and usable
    assert Store(path).schema_version() == SCHEMA_VERSION


def test_default_location_follows_workbench_home(isolated_home):
    st = Store()
    assert str(st.path).startswith(str(isolated_home))
