"""Several people, one model: the fair queue in front of the shared model, a waiting run's
place in line, and cancelling a wait (the live runner and the Ask page)."""
from __future__ import annotations

import threading
import time

import pytest

from tests import test_ui_support as S
from workbench.llm.locked import LockedBackend, ModelQueue, WaitCancelled
from workbench.store import Store
from workbench.ui import live
from workbench.ui.model_status import place_in_line


def _until(cond, timeout: float = 5.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.005)
    return cond()


class _Waiter:
    """A thread that joins the queue (so the order of joining is the test's) and waits."""

    def __init__(self, q: ModelQueue, name: str, log: list, kind: str = "run"):
        self.q, self.name, self.log, self.kind = q, name, log, kind
        self.ticket = None
        self.error: BaseException | None = None
        self._joined = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self._joined.wait(5)

    def _run(self) -> None:
        self.ticket = self.q.join(self.kind, self.name)
        self._joined.set()
        try:
            self.q.wait(self.ticket)
        except WaitCancelled as e:
            self.error = e
            return
        self.log.append(self.name)
        self.q.release()


# ------------------------------------------------------------------ the queue itself

def test_uncontended_ticket_is_granted_at_once():
    q = ModelQueue()
    t = q.join("run", "me")
    assert t.granted is not None and t.position == 0 and not t.waiting
    assert q.wait(t) is True
    q.release()
    assert q.holder is None


def test_waiters_get_the_model_in_the_order_they_asked_and_see_their_place():
    q = ModelQueue()
    log: list[str] = []
    assert q.acquire()                       # this thread holds the model
    ws = [_Waiter(q, f"w{i}", log) for i in range(5)]
    assert [w.ticket.position for w in ws] == [1, 2, 3, 4, 5]
    assert [t.label for t in ws[2].ticket.ahead()[1:]] == ["w0", "w1"]
    assert [t.label for t in q.line()] == [f"w{i}" for i in range(5)]
    q.release()
    for w in ws:
        w.thread.join(5)
    assert log == [f"w{i}" for i in range(5)]
    assert q.holder is None and not q.line()


def test_cancel_removes_a_waiter_and_the_next_moves_up_and_gets_the_model():
    q = ModelQueue()
    log: list[str] = []
    q.acquire()
    a, b, c = (_Waiter(q, n, log) for n in "abc")
    b.ticket.cancel()
    b.thread.join(5)
    assert isinstance(b.error, WaitCancelled) and not b.thread.is_alive()
    assert [t.label for t in q.line()] == ["a", "c"]
    assert c.ticket.position == 2
    # cancelling the head while the model is free lets the one behind it in
    q.release()
    _until(lambda: log == ["a", "c"])
    assert log == ["a", "c"]
    # cancelling once granted changes nothing
    t = q.join()
    t.cancel()
    assert not t.cancelled and q.holder is t
    q.release()


def test_cancel_of_the_head_wakes_the_next_when_the_model_is_free():
    q = ModelQueue()
    log: list[str] = []
    q.acquire()
    a, b = _Waiter(q, "a", log), _Waiter(q, "b", log)
    # a is at the head; it leaves in the same moment the model comes free
    with q._cv:
        a.ticket.cancelled = True
        q._holder, q._depth = None, 0         # released without notifying anyone
    a.ticket.cancel()                          # the cancel's wake-up alone must move b on
    assert _until(lambda: log == ["b"]), log
    assert isinstance(a.error, WaitCancelled)


def test_holder_reenters_past_waiters_without_deadlock():
    q = ModelQueue()
    log: list[str] = []
    with q:                                   # a run holds the model ...
        w = _Waiter(q, "w", log)
        for _ in range(3):                    # ... and makes its own calls meanwhile
            assert q.acquire(timeout=1)
            q.release()
        t = q.join("call")
        assert t.granted is not None
        q.release()
        assert w.ticket.waiting
    w.thread.join(5)
    assert log == ["w"]


def test_timeout_and_nonblocking_acquire_leave_the_line():
    q = ModelQueue()
    q.acquire()
    out: list = []
    th = threading.Thread(target=lambda: out.append((q.acquire(blocking=False),
                                                     q.acquire(timeout=0.05), q.line())))
    th.start()
    th.join(5)
    assert out == [(False, False, [])]
    with pytest.raises(RuntimeError, match="does not hold"):
        threading_release_from_other_thread(q)
    q.release()


def threading_release_from_other_thread(q: ModelQueue) -> None:
    err: list[BaseException] = []

    def run() -> None:
        try:
            q.release()
        except RuntimeError as e:
            err.append(e)
    th = threading.Thread(target=run)
    th.start()
    th.join(5)
    if err:
        raise err[0]


class _Exclusive:
    """A model that notices two calls at once."""

    def __init__(self):
        self.inside = 0
        self.overlaps = 0
        self.calls = 0

    def generate(self, messages, params=None):
        self.inside += 1
        self.overlaps += self.inside > 1
        time.sleep(0.0005)
        self.calls += 1
        self.inside -= 1
        return "ok"


def test_locked_backend_calls_from_many_threads_never_overlap_and_all_finish():
    inner = _Exclusive()
    be = LockedBackend(inner)
    assert isinstance(be.queue, ModelQueue)

    def worker() -> None:
        for _ in range(40):
            be.generate("hi")
    ths = [threading.Thread(target=worker, daemon=True) for _ in range(8)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(20)
    assert not any(th.is_alive() for th in ths), "deadlock"
    assert inner.calls == 320 and inner.overlaps == 0


def test_locked_backend_serves_waiting_callers_first_come_first_served():
    """The property a plain RLock lacks: callers of generate() get the model in order."""
    release = threading.Event()
    order: list[str] = []

    class Inner:
        def generate(self, messages, params=None):
            if messages == "first":
                release.wait(5)
            order.append(messages)
            return messages

    be = LockedBackend(Inner())
    ths = [threading.Thread(target=be.generate, args=("first",), daemon=True)]
    ths[0].start()
    assert _until(lambda: be.queue.holder is not None)
    for i in range(6):
        th = threading.Thread(target=be.generate, args=(f"c{i}",), daemon=True)
        th.start()
        ths.append(th)
        assert _until(lambda: len(be.queue.line()) == i + 1)
    release.set()
    for th in ths:
        th.join(5)
    assert order == ["first"] + [f"c{i}" for i in range(6)]


# ------------------------------------------------------------------ what the page says

def test_place_in_line_wording():
    class T:
        def __init__(self, kind):
            self.kind = kind
    assert place_in_line([]) == "Waiting for the model: next in line."
    assert place_in_line([T("run")]) == "Waiting for the model: 2nd in line, 1 run ahead."
    assert place_in_line([T("run"), T("run")]) == \
        "Waiting for the model: 3rd in line, 2 runs ahead."
    assert place_in_line([T("call"), T("run"), T("run")]) == \
        "Waiting for the model: 4th in line, 2 runs and 1 other model call ahead."
    assert place_in_line([T("run")] * 10).startswith("Waiting for the model: 11th in line")


# ------------------------------------------------------------------ the live runner

@pytest.fixture
def toy(isolated_home):
    S.register()
    yield
    S.unregister()


def _batch(be, store, **knobs) -> live.LiveBatch:
    from workbench import settings as settings_mod
    q = S.QUESTIONS[0]
    return live.LiveBatch([live.Job("ui-toy", knobs, "ui-toy")], q.question, question_id=q.id,
                          dataset="ui-toy", llm=be, store=store,
                          settings=settings_mod.load()).start()


def test_live_runs_wait_their_turn_report_their_place_and_cancel_cleanly(toy, tmp_path):
    from workbench.ui.backend import LockedBackend as UILocked
    be = LockedBackend(S.scripted_backend())          # a queue of its own, not the UI's
    assert not isinstance(be, UILocked)
    store = Store(tmp_path / "q.duckdb")
    t0 = time.monotonic()
    a = _batch(be, store, steps=20, delay=0.1)        # holds the model about 2 s
    assert a.wait_first_node(5)
    first_node_s = time.monotonic() - t0
    b = _batch(be, store)
    # c only once b is in line: started together, their threads may queue in either order
    assert _until(lambda: b.jobs[0].status == "waiting")
    c = _batch(be, store)
    assert _until(lambda: b.jobs[0].status == "waiting" and c.jobs[0].status == "waiting")
    tb, tc = b.ticket(0), c.ticket(0)
    assert tb.position == 1 and tc.position == 2
    assert place_in_line(tc.ahead()) == "Waiting for the model: 3rd in line, 2 runs ahead."
    t1 = time.monotonic()
    assert b.wait_first_node(5) is False and time.monotonic() - t1 < 1.0   # no 5 s stall
    b.stop()                                          # Cancel: leaves the line at once
    assert b.join(2), "a cancelled wait did not end"
    jb = b.jobs[0]
    assert jb.status == "interrupted" and "waiting for the model" in jb.error
    assert jb.run_id is None and b.ticket(0) is None
    assert _until(lambda: c.ticket(0) is not None and c.ticket(0).position == 1)
    assert a.running                                  # the run ahead is untouched
    assert a.join(30) and c.join(30)
    assert a.jobs[0].status == "finished" and c.jobs[0].status == "finished"
    assert c.jobs[0].started < a.jobs[0].ended        # c waited for a ...
    assert c.jobs[0].first_node_s >= a.jobs[0].ended - c.jobs[0].started - 0.05   # ... then ran
    runs = store.list_runs(limit=10)
    assert sorted(r["status"] for r in runs) == ["finished", "finished"]  # b was never stored
    assert be.queue.holder is None and not be.queue.line()
    assert first_node_s < 1.0


def test_live_stop_of_a_running_run_still_frees_the_model(toy, tmp_path):
    be = LockedBackend(S.scripted_backend())
    store = Store(tmp_path / "q.duckdb")
    a = _batch(be, store, steps=30, delay=0.1)
    assert a.wait_first_node(5)
    b = _batch(be, store)
    assert _until(lambda: b.jobs[0].status == "waiting")
    a.stop()
    assert a.join(5) and a.jobs[0].status == "interrupted"
    assert b.join(10) and b.jobs[0].status == "finished"
    assert {r["status"] for r in store.list_runs(limit=10)} == {"interrupted", "finished"}


# ------------------------------------------------------------------ the Ask page

@pytest.fixture
def ask_behind_another(isolated_home, monkeypatch):
    """The Ask page (AppTest) with a run started while another session holds the model;
    yields (app, batch, let_go) where let_go() ends the other session's turn."""
    from streamlit.testing.v1 import AppTest

    from tests.test_ui_pages import APP
    from workbench.ui import backend
    held, done = threading.Event(), threading.Event()

    def other_session() -> None:
        with backend._LLM_LOCK.hold("run", "someone else's run"):
            held.set()
            done.wait(30)
    th = threading.Thread(target=other_session, daemon=True)
    with S.toy_ui(monkeypatch):
        th.start()
        try:
            assert held.wait(5)
            at = AppTest.from_file(APP, default_timeout=60)
            at.run()
            at.switch_page("pages/ask.py")
            at.run()
            at.selectbox(key="ask__m").set_value("ui-toy").run()
            at.button(key="ask_run").click().run()
            b = at.session_state["ask_batch"]
            assert _until(lambda: b.jobs[0].status == "waiting")
            at.run()
            assert not at.exception
            infos = [e.value for e in at.info]
            assert "Waiting for the model: 2nd in line, 1 run ahead." in infos, infos
            yield at, b, done.set
        finally:
            done.set()
            th.join(5)


def _waiting_shown(at) -> list[str]:
    return [e.value for e in at.info if e.value.startswith("Waiting for the model")]


def test_ask_page_cancel_ends_the_wait_and_stores_nothing(ask_behind_another):
    from workbench.ui import backend
    at, b, _ = ask_behind_another
    assert not [x for x in at.button if x.key == "ask_stop"]
    at.button(key="ask_cancel").click().run()
    assert b.join(5)
    at.run()
    assert not at.exception and not at.error
    js = b.jobs[0]
    assert js.status == "interrupted" and js.run_id is None
    assert not _waiting_shown(at)
    assert any("Cancelled while waiting for the model" in e.value for e in at.info)
    assert Store().list_runs(limit=5) == []
    assert backend._LLM_LOCK.line() == []


def test_ask_page_runs_when_its_turn_comes(ask_behind_another):
    at, b, let_go = ask_behind_another
    let_go()
    assert b.join(20)
    at.run()
    assert not at.exception and not at.error
    js = b.jobs[0]
    assert js.status == "finished" and not _waiting_shown(at)
    assert Store().get_run(js.run_id)["status"] == "finished"
    assert len(at.session_state["ask__view"]["nodes"]) == 5
