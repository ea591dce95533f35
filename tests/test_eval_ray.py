"""The Ray executor on a local Ray cluster of 2 worker processes: scripted and real-model
items, a worker killed mid-run (its items run again, or are stored as failed with the
cause), and the driver killed and resumed from the CLI with exactly N items."""
import json
import os
import signal
import socket
import threading
import time

import psutil
import pytest

from workbench.eval import metrics as M
from workbench.eval.runner import EvalRunner, EvalSpec
from workbench.store import Store

from tests.conftest import FAST_MODEL
from tests.test_eval_helpers import answer_rules
from tests.test_eval_runner import _cli, _import_toy, assert_resumed_exactly_n

ray = pytest.importorskip("ray")

TOY = {"dataset": "tests.test_eval_helpers:toy_dataset",
       "methods": "tests.test_eval_helpers:toy_methods"}


@pytest.fixture(scope="module")
def cluster():
    """A local Ray instance with room for 2 workers, shared by this module's tests (the
    executor joins a running instance instead of starting its own)."""
    import logging
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=100 * 1024 * 1024, logging_level=logging.WARNING)
    yield
    ray.shutdown()


class WorkerKiller:
    """Kills the first eval worker seen running an item (Ray titles the actor's process
    ``ray::EvalWorker.run`` while it runs one), looking only among this process's
    descendants."""

    def __init__(self, timeout_s: float = 120):
        self.killed: int | None = None
        self.deadline = time.monotonic() + timeout_s
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while self.killed is None and time.monotonic() < self.deadline:
            for p in psutil.Process().children(recursive=True):
                try:
                    title = (p.cmdline() or [""])[0]
                except psutil.Error:
                    continue
                if title.startswith("ray::EvalWorker.run"):
                    p.kill()
                    self.killed = p.pid
                    return
            time.sleep(0.02)


def _scripted_spec(delay_ms: int) -> dict:
    return {"kind": "scripted", "table": answer_rules(), "default": "grey", "delay_ms": delay_ms}


def _check_scripted(rows: list[dict]) -> None:
    """toy-llm over q000..q005: item i right for even i, UNKNOWN (a wrong answer for
    toy-llm) for i % 5 == 3, "purple" for the other odd ones."""
    assert [r["question_id"] for r in rows] == [f"q{i:03d}" for i in range(6)]
    for i, r in enumerate(rows):
        assert r["status"] == "finished" and r["correct"] == (i % 2 == 0), r
        assert r["em"] == (1.0 if i % 2 == 0 else 0.0) and r["llm_calls"] == 1


def test_ray_eval_survives_a_killed_worker_scripted_and_smollm2(cluster, tmp_path):
    st = Store(tmp_path / "s.duckdb")
    # 6 scripted items, 0.4 s each, 2 workers: one worker is killed while it runs one
    killer = WorkerKiller()
    r1 = EvalRunner.new(st, EvalSpec("toy", ["toy-llm"], judge="off", limit=6),
                        backend_spec=_scripted_spec(400), factories=TOY, workers=2,
                        executor="ray")
    assert r1._mode() == "ray"
    res = r1.run()
    killer.thread.join(1)
    assert killer.killed is not None and not psutil.pid_exists(killer.killed)
    assert res.status == "finished" and res.n_new == 6
    # 2 items with SmolLM2 through the same cluster, a worker killed mid-item again
    killer = WorkerKiller()
    spec = EvalSpec("demo", ["vanilla"], judge="off", limit=2, sets={"answer_max_tokens": 8})
    r2 = EvalRunner.new(st, spec, backend_spec={"kind": "settings", "overrides": {
        "model": FAST_MODEL, "n_ctx": 1024}}, workers=2, executor="ray")
    assert r2.run().status == "finished"
    killer.thread.join(1)
    assert killer.killed is not None

    rows = st.query("SELECT * FROM eval_items ORDER BY eval_id = ?, question_id", [r2.eval_id])
    assert len(rows) == 8 and len({r["item_key"] for r in rows}) == 8
    _check_scripted([r for r in rows if r["eval_id"] == r1.eval_id])
    # both actors run on this machine: their items say they ran beside each other
    assert max(r["items_at_once"] for r in rows if r["eval_id"] == r1.eval_id) == 2
    real = [r for r in rows if r["eval_id"] == r2.eval_id]
    runs = {x["run_id"]: x for x in st.query("SELECT * FROM runs WHERE eval_id = ?", [r2.eval_id])}
    assert len(runs) == 2
    from workbench.datasets import load_dataset
    questions = {q.id: q for q in load_dataset("demo").questions}
    for it in real:
        run = runs[it["run_id"]]
        assert it["status"] in ("finished", "refused") and it["llm_calls"] >= 1
        assert run["model_name"] == FAST_MODEL and run["pid"] != os.getpid()
        # the stored metrics are those of the stored answer against the gold
        q = questions[it["question_id"]]
        s = M.score_answer(q.question, run["answer"] or "", q.answers, q.aliases,
                           refused=it["refused"], qtype=q.type or "", meta=q.meta)
        assert (it["em"], it["f1"], it["correct"]) == (s.em, pytest.approx(s.f1), s.correct)
        # the actor's model is in the actor's process: no model worker process of its own
        model = st.events(it["run_id"])[0].data["model"]
        assert "worker_pid" not in (model.get("extra") or {})
        call = next(iter(st.trace(it["run_id"]).llm_calls.values()))
        assert call["tokens"] and all(t[2] is not None for t in call["tokens"])
    assert all(b["status"] == "finished" for b in st.query("SELECT status FROM eval_batches"))


def test_items_of_a_worker_that_dies_every_try_are_failed_with_the_cause(cluster, tmp_path):
    st = Store(tmp_path / "s.duckdb")
    killer = WorkerKiller()
    r = EvalRunner.new(st, EvalSpec("toy", ["toy-llm"], judge="off", limit=6),
                       backend_spec=_scripted_spec(400), factories=TOY, workers=2,
                       executor="ray", ray={"retries": 0})
    assert r.run().n_done == 6
    rows = st.query("SELECT i.question_id, i.status, i.correct, r.error, r.status AS run_status "
                    "FROM eval_items i JOIN runs r USING (run_id) ORDER BY 1")
    failed = [x for x in rows if x["status"] == "failed"]
    assert killer.killed is not None and 1 <= len(failed) <= 2      # its in-flight items
    for x in failed:
        assert x["run_status"] == "failed" and not x["correct"]
        assert "Ray worker died while running the item" in x["error"]
        assert f"pid {killer.killed}" in x["error"]
    assert all(x["status"] == "finished" for x in rows if x not in failed)
    # resume --retry-failed runs exactly those again
    r2 = EvalRunner.resume(st, r.eval_id, backend_spec=_scripted_spec(0), factories=TOY,
                           workers=2, executor="ray")
    assert r2.retry_failed() == len(failed)
    assert r2.run().n_new == len(failed)
    _check_scripted(st.query("SELECT * FROM eval_items ORDER BY question_id"))
    assert st.query("SELECT count(*) AS n FROM runs")[0]["n"] == 6


def test_a_worker_that_cannot_start_names_the_cause(cluster, tmp_path):
    st = Store(tmp_path / "s.duckdb")
    r = EvalRunner.new(st, EvalSpec("demo", ["vanilla"], judge="off", limit=1),
                       backend_spec={"kind": "settings", "overrides": {
                           "model": str(tmp_path / "missing.gguf")}},
                       workers=1, executor="ray")
    with pytest.raises(RuntimeError, match="could not start.*missing.gguf"):
        r.run()
    assert st.query("SELECT status FROM eval_batches")[0]["status"] == "failed"


def test_cli_driver_killed_then_resume_gives_exactly_n(tmp_path, isolated_home):
    """The driver (which starts its own local Ray instance) is killed with SIGKILL
    mid-eval; `eval --resume --executor ray` finishes with each item once."""
    n = 40
    _import_toy(isolated_home, n)
    table = tmp_path / "table.json"
    table.write_text(json.dumps({"rules": [{"match": "item1?", "text": "place1"}],
                                 "default": "nowhere", "delay_ms": 150}))
    ray_args = ["--executor", "ray", "--workers", "2", "--no-progress"]
    p = _cli(["--dataset", "toyq", "--methods", "vanilla", "--scripted", str(table),
              "--judge", "off", *ray_args], isolated_home, start_new_session=True)
    st = Store()
    deadline = time.monotonic() + 120
    stored = 0
    try:
        while time.monotonic() < deadline and p.poll() is None and stored < 3:
            time.sleep(0.3)
            try:
                stored = st.query("SELECT count(*) AS n FROM eval_items")[0]["n"]
            except Exception:      # the writer holds the file for a moment
                continue
        assert p.poll() is None, p.communicate()
        os.kill(p.pid, signal.SIGKILL)
        p.communicate()
    finally:
        try:          # the Ray processes the killed driver started (its own session)
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    before = st.query("SELECT count(*) AS n FROM eval_items")[0]["n"]
    assert 3 <= before < n
    assert st.query("SELECT status FROM eval_batches")[0]["status"] == "running"
    p2 = _cli(["--resume", "--scripted", str(table), *ray_args], isolated_home,
              start_new_session=True)
    try:
        out, err = p2.communicate(timeout=240)
    finally:
        try:
            os.killpg(p2.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert p2.returncode == 0, err
    assert f"{before} already done" in err
    assert_resumed_exactly_n(st, n)


def test_cli_unreachable_cluster_is_one_clear_error(tmp_path, isolated_home):
    table = tmp_path / "table.json"
    table.write_text(json.dumps({"rules": [], "default": "x"}))
    with socket.socket() as s:          # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = _cli(["--dataset", "demo", "--methods", "vanilla", "--limit", "1", "--scripted",
              str(table), "--judge", "off", "--executor", "ray", "--ray-address",
              f"127.0.0.1:{port}", "--no-progress"], isolated_home)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 2, err
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in err and "Traceback" not in err
