"""Shared mode on the other pages: a visitor may ask, compare, browse and annotate, but the
host-level actions (deleting runs or annotations, starting or resuming an eval, building
a retrieval index, restarting the model) are the host's. A visitor sees the control
disabled with "host only in shared mode: unlock on Settings", and a click sent anyway (a
browser can send one for a disabled button) changes nothing; a session unlocked with the
admin token can; local mode is as before."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests import test_ui_support as S
from tests.test_ui_pages import populate
from workbench import settings as settings_mod
from workbench.store import Store
from workbench.ui import access, backend

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "streamlit_app.py")
TOKEN = "correct-horse-battery-staple-42"
WHO = ["visitor", "host", "local"]


@pytest.fixture
def ui(isolated_home, monkeypatch):
    monkeypatch.setenv("WORKBENCH_ADMIN_TOKEN", TOKEN)
    with S.toy_ui(monkeypatch):
        yield isolated_home


def session(who: str, monkeypatch, page: str, **query) -> AppTest:
    """A browser session on ``page``: a visitor of a shared workbench, the host who unlocked
    this session on Settings with the admin token, or the one local user."""
    if who == "local":
        monkeypatch.delenv("WORKBENCH_SHARED", raising=False)
    else:
        monkeypatch.setenv("WORKBENCH_SHARED", "1")
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    if who == "host":
        at.switch_page("pages/settings.py")
        at.run()
        at.text_input(key="set__token").input(TOKEN).run()
        at.button(key="set__unlock").click().run()
        assert any("unlocked" in s.value for s in at.success)
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def locked_note(at: AppTest, label: str) -> bool:
    return any(label in c.value and access.HOST_ONLY_NOTE in c.value for c in at.caption)


def button(at: AppTest, key: str):
    return next(b for b in at.button if b.key == key)


def press(w, value=True):
    """Set a widget's value as a browser would send it, disabled or not: AppTest refuses to
    touch a disabled widget, a hand-made websocket message does not ask."""
    w._value = value
    return w


def test_host_only_is_true_locally_and_for_an_unlocked_session(monkeypatch):
    def script():
        import streamlit as st
        from workbench.ui import access
        if st.session_state.get("unlock"):
            access.unlock("correct-horse-battery-staple-42")
        st.session_state["may"] = access.host_only("Doing it")

    monkeypatch.setenv("WORKBENCH_ADMIN_TOKEN", TOKEN)
    monkeypatch.delenv("WORKBENCH_SHARED", raising=False)
    at = AppTest.from_function(script).run()
    assert at.session_state["may"] is True and not at.caption
    monkeypatch.setenv("WORKBENCH_SHARED", "1")
    at = AppTest.from_function(script).run()
    assert at.session_state["may"] is False
    assert [c.value for c in at.caption] == [
        ":material/lock: Doing it: host only in shared mode: unlock on Settings"]
    at.session_state["unlock"] = True
    at.run()
    assert at.session_state["may"] is True


# ------------------------------------------------------------------ Runs: delete a run

def test_deleting_a_run_is_the_hosts(ui, monkeypatch):
    for who in WHO:
        _delete_run(who, monkeypatch)


def _delete_run(who, monkeypatch):
    rid = populate()
    at = session(who, monkeypatch, "pages/runs.py", run=rid)
    allowed = who != "visitor"
    assert locked_note(at, "Deleting runs") is not allowed
    assert button(at, "runs__delete").disabled                 # until confirmed
    assert at.checkbox(key="runs__confirm").disabled is not allowed
    press(at.checkbox(key="runs__confirm")).run()              # a visitor's: forged
    assert button(at, "runs__delete").disabled is not allowed
    press(button(at, "runs__delete")).run()                    # likewise
    assert not at.exception, [e.value for e in at.exception]
    assert (Store().get_run(rid) is None) is allowed


# ------------------------------------------------------------------ Annotate

def test_deleting_an_annotation_is_the_hosts_and_annotating_everyones(ui, monkeypatch):
    for who in WHO:
        _annotate_and_delete(who, monkeypatch)


def _annotate_and_delete(who, monkeypatch):
    rid = populate()
    at = session(who, monkeypatch, "pages/annotate.py", run=rid)
    allowed = who != "visitor"
    # every session may annotate
    at.multiselect(key="ann__tags").set_value(["retrieval_miss"]).run()
    at.text_area(key="ann__note").input(f"by the {who}").run()
    button(at, "ann__save").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    notes = {a["note"]: a["id"] for a in Store().annotations(rid)}
    assert f"by the {who}" in notes and len(notes) == 2
    # deleting one is the host's
    assert locked_note(at, "Deleting annotations") is not allowed
    first = next(i for n, i in notes.items() if n != f"by the {who}")
    delete = button(at, f"ann__del_{first}")
    assert delete.disabled is not allowed
    press(delete).run()                                        # a visitor's: forged
    assert not at.exception, [e.value for e in at.exception]
    left = {a["id"] for a in Store().annotations(rid)}
    assert (first not in left) is allowed and len(left) == (1 if allowed else 2)


# ------------------------------------------------------------------ Evaluate

@pytest.fixture
def eval_calls(ui, monkeypatch):
    """jobs.start recorded instead of run (the page's launch and resume both call it), and
    an interrupted eval in the store to resume."""
    from tests.test_eval_helpers import ToyDataset, answer_rules, toy_methods
    from workbench.eval import jobs
    from workbench.eval.runner import EvalRunner, EvalSpec
    from workbench.llm.scripted import ScriptedBackend
    st = Store()
    r = EvalRunner.new(st, EvalSpec("toy", ["toy-llm"], judge="off", limit=2),
                       backend=ScriptedBackend.from_table(answer_rules(), default="grey"),
                       dataset=ToyDataset(), method_classes=toy_methods())
    r.run()
    st.execute("UPDATE eval_batches SET status = 'interrupted'")
    calls: list[dict] = []

    def start(spec, *, store, resume=None, **kw):
        calls.append({"spec": spec, "resume": resume, **kw})
        return jobs.Job(f"job_fake{len(calls)}", spec, resume)

    monkeypatch.setattr(jobs, "start", start)
    settings = settings_mod.load()
    settings.dataset = "demo"                 # the page lists real datasets and methods
    settings_mod.save(settings)
    return calls


def eval_page(who: str, monkeypatch) -> AppTest:
    at = session(who, monkeypatch, "pages/7_Evaluate.py")
    next(m for m in at.multiselect if m.label == "Methods").set_value(["ui-toy"]).run()
    return at


def test_starting_an_eval_is_the_hosts(eval_calls, monkeypatch):
    for who in WHO:
        eval_calls.clear()
        _launch(who, monkeypatch, eval_calls)


def _launch(who, monkeypatch, eval_calls):
    at = eval_page(who, monkeypatch)
    allowed = who != "visitor"
    assert locked_note(at, "Starting or resuming evals") is not allowed
    launch = next(b for b in at.button if b.label == "Launch eval")
    assert launch.disabled is not allowed
    press(launch).run()                                        # a visitor's: forged
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert len(eval_calls) == (1 if allowed else 0)
    assert ("eval_job" in at.session_state) is allowed
    if allowed:
        assert eval_calls[0]["spec"].methods == ["ui-toy"] and eval_calls[0]["resume"] is None


def test_resuming_an_eval_is_the_hosts(eval_calls, monkeypatch):
    (ev,) = Store().query("SELECT eval_id FROM eval_batches")
    for who in WHO:
        eval_calls.clear()
        at = eval_page(who, monkeypatch)
        allowed = who != "visitor"
        resume = next(b for b in at.button if b.label == "Resume")
        assert resume.disabled is not allowed
        press(resume).run()                                    # a visitor's: forged
        assert not at.exception, [e.value for e in at.exception]
        assert [c["resume"] for c in eval_calls] == ([ev["eval_id"]] if allowed else []), who


# ------------------------------------------------------------------ Knowledge: building an index

def _no_index(tmp_path: Path, monkeypatch, name: str) -> Path:
    """The demo dataset with no BM25 index built yet, in memory or on disk: its cache file."""
    from workbench import datasets
    from workbench.datasets import bm25_cache_path, load_dataset
    from workbench.knowledge.bm25 import BM25Params
    from workbench.ui import data as uidata
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / name))
    datasets.clear_cache()
    for k in [k for k in uidata._CACHE if k[0] == "demo"]:     # the pages' cache too
        uidata._CACHE.pop(k)
    f = bm25_cache_path(load_dataset("demo").corpus_hash, BM25Params())
    assert not f.exists()
    return f


@pytest.fixture
def fresh_demo_cache(ui, tmp_path, monkeypatch):
    s = settings_mod.load()
    s.dataset, s.retriever = "demo", "bm25"
    settings_mod.save(s)
    yield _no_index(tmp_path, monkeypatch, "cache")
    from workbench import datasets
    datasets.clear_cache()


def search(at: AppTest, text: str) -> AppTest:
    at.text_input(key="kn__q").input(text).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def hits(at: AppTest):
    return [d.value for d in at.dataframe if "rank" in d.value.columns]


def test_building_a_retrieval_index_is_the_hosts(fresh_demo_cache, tmp_path, monkeypatch):
    at = search(session("visitor", monkeypatch, "pages/knowledge.py"), "Inception director")
    assert locked_note(at, "Building the bm25 index")
    assert not hits(at) and not fresh_demo_cache.exists()     # nothing built for a visitor
    host = search(session("host", monkeypatch, "pages/knowledge.py"), "Inception director")
    assert hits(host) and fresh_demo_cache.is_file() and not locked_note(host, "Building")
    at = search(session("visitor", monkeypatch, "pages/knowledge.py"), "Inception director")
    assert hits(at) and not locked_note(at, "Building")      # built: every visitor searches
    f = _no_index(tmp_path, monkeypatch, "cache2")
    at = search(session("local", monkeypatch, "pages/knowledge.py"), "Inception director")
    assert hits(at) and f.is_file() and not locked_note(at, "Building")


def test_a_dataset_knows_which_indexes_are_built(fresh_demo_cache):
    from workbench.datasets import load_dataset
    ds = load_dataset("demo")
    assert not ds.retriever_built("bm25") and not ds.retriever_built("hybrid")
    assert not ds.retriever_built("nonsense")
    ds.retriever("bm25")
    assert ds.retriever_built("bm25")                          # in memory
    from workbench import datasets
    datasets.clear_cache()
    assert load_dataset("demo").retriever_built("bm25")        # on disk


def test_the_dense_cache_file_is_found_without_loading_the_model():
    from workbench.knowledge import dense
    try:
        emb = dense.get_embedder()
    except (dense.ModelNotFoundError, ImportError) as e:
        pytest.skip(f"no embedding model: {e}")
    assert dense.cached_embeddings_file("abc123") == dense.cache_path("abc123", emb)
    assert dense.cached_embeddings_file("abc123", "/no/such/model") is None


# ------------------------------------------------------------------ the model's restart button

def _crashed_run():
    import streamlit as st
    from workbench.ui import access
    from workbench.ui import model_status as MS
    if st.session_state.get("unlock"):
        access.unlock("correct-horse-battery-staple-42")
    MS.crash_notice("model process crashed: SIGSEGV", key="t")


def test_restarting_the_model_is_the_hosts(monkeypatch):
    monkeypatch.setenv("WORKBENCH_ADMIN_TOKEN", TOKEN)
    for who in WHO:
        _restart(who, monkeypatch)


def _restart(who, monkeypatch):
    restarts = []
    monkeypatch.setattr(backend, "restart_model", lambda: restarts.append(1) or True)
    if who == "local":
        monkeypatch.delenv("WORKBENCH_SHARED", raising=False)
    else:
        monkeypatch.setenv("WORKBENCH_SHARED", "1")
    at = AppTest.from_function(_crashed_run)
    at.session_state["unlock"] = who == "host"
    at.run()
    allowed = who != "visitor"
    assert any("crashed during this run" in w.value for w in at.warning)
    assert locked_note(at, "Restarting the model") is not allowed
    b = button(at, "t__restart_model")
    assert b.disabled is not allowed
    press(b).run()                                             # a visitor's: forged
    assert not at.exception, [e.value for e in at.exception]
    assert len(restarts) == (1 if allowed else 0)
    assert any("restarted" in s.value for s in at.success) is allowed


# ------------------------------------------------------------------ the pages check again

@pytest.fixture
def every_click_honoured(monkeypatch):
    """A Streamlit that reports the host-only controls as pressed whatever they show: this
    Streamlit drops a disabled widget's value itself, so this checks that each page also
    asks :func:`access.host_only` where it acts (another Streamlit, or a control enabled on
    the run before the session was locked)."""
    import streamlit
    from streamlit.delta_generator import DeltaGenerator
    forced = ("runs__delete", "runs__confirm", "ann__del_", "t__restart_model",
              "Launch eval", "Resume")

    def wrap(orig):
        def widget(self, label, *a, **kw):
            value = orig(self, label, *a, **kw)
            hit = any(str(kw.get("key") or "").startswith(f) or label == f for f in forced)
            return True if hit else value
        return widget

    for name in ("button", "checkbox"):
        w = wrap(getattr(DeltaGenerator, name))
        monkeypatch.setattr(DeltaGenerator, name, w)
        monkeypatch.setattr(streamlit, name, lambda *a, _w=w, **kw: _w(streamlit._main, *a, **kw))


def test_the_pages_check_again_where_they_act(eval_calls, every_click_honoured, monkeypatch):
    rid = populate()
    n_anns = len(Store().annotations(rid))
    acted = {}
    session("visitor", monkeypatch, "pages/annotate.py", run=rid)
    acted["annotation deleted"] = len(Store().annotations(rid)) < n_anns
    session("visitor", monkeypatch, "pages/7_Evaluate.py")
    acted["eval started or resumed"] = bool(eval_calls)
    restarts = []
    monkeypatch.setattr(backend, "restart_model", lambda: restarts.append(1) or True)
    AppTest.from_function(_crashed_run).run()
    acted["model restarted"] = bool(restarts)
    session("visitor", monkeypatch, "pages/runs.py", run=rid)
    acted["run deleted"] = Store().get_run(rid) is None
    assert not any(acted.values()), acted
    # the harness itself: the unlocked host's pages act on the same forced clicks
    session("host", monkeypatch, "pages/runs.py", run=rid)
    assert Store().get_run(rid) is None
