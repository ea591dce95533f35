"""AppTest tests for every page: empty store, populated store, live runs on the scripted
backend, stop, what-if, compare, replay, annotate, knowledge, settings and errors."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests import test_ui_support as S
from workbench import settings as settings_mod
from workbench.execution import run_to_end
from workbench.llm.prefix_store import DEFAULT_BUDGET_TOKENS
from workbench.store import Store
from workbench.ui import backend

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "streamlit_app.py")
PAGES = ["pages/ask.py", "pages/compare.py", "pages/runs.py", "pages/annotate.py",
         "pages/knowledge.py", "pages/settings.py"]


@pytest.fixture
def ui(isolated_home, monkeypatch):
    """Toy dataset and methods, scripted backend, settings pointing at them."""
    with S.toy_ui(monkeypatch):
        yield isolated_home


def app(page: str | None = None, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    if page:
        at.switch_page(page)
        at.run()
    return at


def no_errors(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def populate() -> str:
    from workbench.methods.base import RunContext
    st = Store()
    ctx = RunContext(llm=S.scripted_backend(), config=S.ToyConfig(),
                     retrievers={"bm25": S.ToyRetriever()}, dataset="ui-toy",
                     gold=S.QUESTIONS[0])
    tr = run_to_end(S.ToyMethod(), ctx, S.QUESTIONS[0].question, store=st, question_id="tq1")
    st.update_run(tr.run_id, correct=True)
    st.add_annotation(tr.run_id, "node", "s1", ["retrieval_miss"], "note " + S.XSS_SCRIPT, "tester")
    return tr.run_id


def run_ask(at: AppTest, method: str = "ui-toy", **knobs) -> AppTest:
    at.selectbox(key="ask__m").set_value(method).run()
    for k, v in knobs.items():
        key = f"ask__knobs__{method}__{k}"
        w = next(x for x in list(at.number_input) + list(at.selectbox) + list(at.toggle)
                 if x.key == key)
        w.set_value(v).run()
    at.button(key="ask_run").click().run()
    b = at.session_state["ask_batch"]
    assert b.join(20), "the run did not finish"
    at.run()
    return at


# ------------------------------------------------------------------ every page renders

@pytest.mark.parametrize("page", [None] + PAGES)
def test_page_renders_on_empty_store(ui, page):
    at = app(page)
    no_errors(at)


@pytest.mark.parametrize("page", [None] + PAGES)
def test_page_renders_on_populated_store(ui, page):
    rid = populate()
    at = app(page, run=rid)
    no_errors(at)
    if page == "pages/runs.py":
        assert "runs__view" in at.session_state
        assert len(at.session_state["runs__view"]["nodes"]) == 5


def test_home_shows_model_dataset_and_demo_questions(ui):
    at = app()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Model"] == "scripted" and metrics["Active dataset"] == "ui-toy"
    assert metrics["Questions"] == "3"
    assert any(b.label == "Ask" for b in at.button)


def test_home_demo_question_starts_a_run_on_ask(ui):
    at = app()
    at.selectbox(key="home_method").set_value("ui-toy").run()
    next(b for b in at.button if b.key == "home_q_tq1").click().run()
    b = at.session_state["ask_batch"]
    assert b.question == S.QUESTIONS[0].question and b.jobs[0].job.method == "ui-toy"
    b.join(20)
    at.run()
    no_errors(at)
    assert len(at.session_state["ask__view"]["nodes"]) == 5


# ------------------------------------------------------------------ Ask

def test_ask_run_produces_graph_inspector_and_stored_run(ui):
    at = run_ask(app("pages/ask.py"))
    no_errors(at)
    b = at.session_state["ask_batch"]
    js = b.jobs[0]
    assert js.status == "finished" and js.verdict["correct"] is True
    view = at.session_state["ask__view"]
    ids = [n["id"] for n in view["nodes"]]
    assert ids == ["q", "s0", "s1", "s2", "a"]
    states = {n["id"]: n["state"] for n in view["nodes"]}
    assert states["s0"] == "sufficient" and states["s1"] == "insufficient"
    assert {"sufficient", "insufficient"} <= {row[0] for row in view["legend"]}
    # status line and inspector (answer node selected by default)
    md = [m.value for m in at.markdown]
    assert any("finished" in m and "LLM calls" in m for m in md)
    assert any(m.startswith("**a**") for m in md)
    assert any(m.label.startswith("Perplexity") for m in at.metric)   # names its call
    run = Store().get_run(js.run_id)
    assert run["status"] == "finished" and run["correct"] is True
    # inspect a step node: evidence table with retriever/score/rank, LLM call and heatmap
    at.selectbox(key="ask__sel").set_value("s1").run()
    no_errors(at)
    frames = [df.value for df in at.dataframe] + [t.value for t in at.table]
    ev = next(f for f in frames if "retrieved" in f.columns and "passage" in f.columns)
    assert [r.split(" · ")[:2] for r in ev["retrieved"]] == [["#1", "bm25"], ["#2", "bm25"]]
    scores = next(f for f in frames if "threshold" in f.columns)
    assert scores.iloc[0]["score"] == "perplexity" and scores.iloc[0]["threshold"] == 3.0
    assert any("wb-tok" in h.proto.body for h in at.get("html"))


def test_ask_mindmap_view_uses_tree_layout(ui):
    at = run_ask(app("pages/ask.py"), method="ui-toy-mindmap")
    view = at.session_state["ask__view"]
    assert view["view"] == "mindmap"
    pos = {n["id"]: (n["x"], n["y"]) for n in view["nodes"]}
    assert pos["q"][1] < pos["s0"][1] < pos["a"][1]


def test_ask_stop_stores_interrupted(ui):
    at = app("pages/ask.py")
    at.selectbox(key="ask__m").set_value("ui-toy").run()
    next(x for x in at.number_input if x.key == "ask__knobs__ui-toy__steps").set_value(30).run()
    next(x for x in at.number_input if x.key == "ask__knobs__ui-toy__delay").set_value(0.2).run()
    at.button(key="ask_run").click().run()
    b = at.session_state["ask_batch"]
    deadline = time.time() + 10
    while not b.jobs[0].events and time.time() < deadline:
        time.sleep(0.05)
    at.run()
    assert b.running
    next(x for x in at.button if x.key == "ask_stop").click().run()
    assert b.join(10)
    at.run()
    no_errors(at)
    js = b.jobs[0]
    assert js.status == "interrupted"
    assert Store().get_run(js.run_id)["status"] == "interrupted"
    assert b.view(0).status == "interrupted"
    assert len(at.session_state["ask__view"]["nodes"]) < 32


def test_ask_whatif_slider_recolours_and_offers_rerun(ui):
    at = run_ask(app("pages/ask.py"))
    before = {n["id"]: n["color"]["background"] for n in at.session_state["ask__view"]["nodes"]}
    slider = next(s for s in at.slider if s.key.startswith("ask__wi_t_perplexity"))
    slider.set_value(float(slider.max)).run()      # everything passes
    no_errors(at)
    after = {n["id"]: n["color"]["background"] for n in at.session_state["ask__view"]["nodes"]}
    assert before["s1"] != after["s1"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["surviving paths"] == "3 / 3" and metrics["verdicts changed"] == "1"
    rerun = next(b for b in at.button if b.key == "ask__wi_rerun")
    rerun.click().run()
    b = at.session_state["ask_batch"]
    assert b.jobs[0].job.overrides["tau"] == pytest.approx(float(slider.max))
    b.join(20)


def test_ask_errors_are_readable(ui, tmp_path):
    backend.clear_override()
    s = settings_mod.load()
    s.model = str(tmp_path / "missing.gguf")
    settings_mod.save(s)
    at = app("pages/ask.py")
    at.selectbox(key="ask__m").set_value("ui-toy").run()
    at.button(key="ask_run").click().run()
    assert not at.exception
    assert any("could not be loaded" in e.value for e in at.error)
    at = app()
    assert not at.exception
    assert at.error            # the home page names the missing model


def test_ask_dataset_missing_is_a_warning(ui):
    s = settings_mod.load()
    s.dataset = "no-such-dataset"
    settings_mod.save(s)
    at = app("pages/ask.py")
    assert not at.exception
    assert at.warning and "no-such-dataset" in at.warning[0].value


def test_ask_context_overflow_is_readable(ui):
    be = S.scripted_backend()
    be.n_ctx = 12                     # every prompt overflows
    backend.set_override(be)
    at = run_ask(app("pages/ask.py"))
    assert not at.exception
    js = at.session_state["ask_batch"].jobs[0]
    assert js.status == "failed" and "n_ctx" in js.error
    assert any("context (n_ctx)" in e.value for e in at.error)
    assert Store().get_run(js.run_id)["status"] == "failed"


def test_ask_method_failure_shows_message(ui):
    backend.set_override(S.scripted_backend().__class__(rules=[], default=None))   # no rules
    at = run_ask(app("pages/ask.py"))
    assert not at.exception
    assert at.session_state["ask_batch"].jobs[0].status == "failed"
    assert any("scripted backend has no rule" in e.value for e in at.error)


# ------------------------------------------------------------------ Compare

def test_compare_two_methods_side_by_side(ui):
    at = app("pages/compare.py")
    at.selectbox(key="cmp__c0__m").set_value("ui-toy").run()
    at.selectbox(key="cmp__c1__m").set_value("ui-toy-mindmap").run()
    next(b for b in at.button if b.key == "cmp__run").click().run()
    b = at.session_state["cmp_batch"]
    assert b.join(30)
    at.run()
    no_errors(at)
    assert [j.status for j in b.jobs] == ["finished", "finished"]
    table = next(df.value for df in at.dataframe if "llm_calls" in df.value.columns)
    assert list(table["llm_calls"]) == [4, 4] and list(table["correct"]) == [True, True]
    assert "mean_ppl" in table.columns and "wall_s" in table.columns
    assert list(table["retrieval"]) == ["bm25", "bm25"]     # both toys search with BM25
    assert len(at.session_state["cmp__g0__view"]["nodes"]) == 5
    assert at.session_state["cmp__g1__view"]["view"] == "mindmap"


# ------------------------------------------------------------------ Runs

def test_runs_replay_slider_rebuilds_graph(ui):
    rid = populate()
    at = app("pages/runs.py", run=rid)
    step = next(s for s in at.slider if s.key == f"runs__step_{rid}")
    assert len(at.session_state["runs__view"]["nodes"]) == 5
    step.set_value(3).run()
    no_errors(at)
    assert 0 < len(at.session_state["runs__view"]["nodes"]) < 5


def test_runs_filters_and_delete(ui):
    rid = populate()
    at = app("pages/runs.py")
    at.selectbox(key="runs__fc").set_value("incorrect").run()
    assert any("No stored runs match" in i.value for i in at.info)
    at.selectbox(key="runs__fc").set_value("correct").run()
    at.selectbox(key="runs__fa").set_value("retrieval_miss").run()
    assert at.dataframe[0].value.shape[0] == 1
    at = app("pages/runs.py", run=rid)
    at.checkbox(key="runs__confirm").check().run()
    next(b for b in at.button if b.key == "runs__delete").click().run()
    assert Store().get_run(rid) is None


# ------------------------------------------------------------------ Annotate

def test_annotate_node_saves_and_shows_badge(ui):
    rid = populate()
    at = app("pages/annotate.py", run=rid)
    no_errors(at)
    at.session_state["ann__kind"] = "node"
    at.run()
    at.selectbox(key="ann__sel").set_value("s0").run()
    at.multiselect(key="ann__tags").set_value(["wrong_merge", "premature_final"]).run()
    at.text_area(key="ann__note").input("merged wrongly").run()
    next(b for b in at.button if b.key == "ann__save").click().run()
    no_errors(at)
    anns = Store().annotations(rid)
    new = [a for a in anns if a["target_id"] == "s0"]
    assert new and new[0]["tags"] == ["wrong_merge", "premature_final"]
    labels = {n["id"]: n["label"] for n in at.session_state["ann__view"]["nodes"]}
    assert "⚑" in labels["s0"] and "⚑" in labels["s1"]


# ------------------------------------------------------------------ Knowledge

def test_knowledge_search_and_capped_kg(ui):
    at = app("pages/knowledge.py")
    at.text_input(key="kn__q").input("Inception director").run()
    no_errors(at)
    hits = at.dataframe[0].value
    assert list(hits["rank"])[:2] == [1, 2] and "score" in hits.columns
    at.text_input(key="kn__ent").input("nolan").run()
    no_errors(at)
    view = at.session_state["kn__view"]
    more = [n for n in view["nodes"] if n["state"] == "more"]
    assert more and len(view["nodes"]) <= 12 + 1 + 1 + 1
    assert all("<script>" not in n["label"] and "<img" not in n["label"] for n in view["nodes"])


# ------------------------------------------------------------------ Settings

def test_settings_save_and_reload(ui):
    at = app("pages/settings.py")
    no_errors(at)
    at.number_input(key="set__k").set_value(7).run()
    next(b for b in at.button if b.key == "set__save").click().run()
    no_errors(at)
    assert settings_mod.load().k == 7


def test_settings_loop_stop_is_a_host_setting_the_next_runs_use(ui):
    at = app("pages/settings.py")
    no_errors(at)
    field = at.text_input(key="set__loop_stop")
    assert field.value == "24" and "repeated three times" in field.help
    field.input("0").run()
    next(b for b in at.button if b.key == "set__save").click().run()
    no_errors(at)
    assert settings_mod.load().loop_stop == 0


def test_settings_prompt_cache_is_a_mode_then_a_budget(ui):
    """-1 (automatic), 0 (previous prompt) and -2 (every prompt whole) are modes: a budget
    is typed only when fixed."""
    at = app("pages/settings.py")
    assert at.selectbox(key="set__prefix_cache_mode").value == "automatic"
    assert not [n for n in at.number_input if n.key == "set__prefix_cache"]
    at.selectbox(key="set__prefix_cache_mode").set_value("fixed budget").run()
    assert at.number_input(key="set__prefix_cache").value == DEFAULT_BUDGET_TOKENS
    at.number_input(key="set__prefix_cache").set_value(2048).run()
    next(b for b in at.button if b.key == "set__save").click().run()
    no_errors(at)
    assert settings_mod.load().prefix_cache_tokens == 2048
    at = app("pages/settings.py")
    assert at.selectbox(key="set__prefix_cache_mode").value == "fixed budget"
    at.selectbox(key="set__prefix_cache_mode").set_value("previous prompt only").run()
    next(b for b in at.button if b.key == "set__save").click().run()
    assert settings_mod.load().prefix_cache_tokens == 0
    at = app("pages/settings.py")
    at.selectbox(key="set__prefix_cache_mode").set_value("every prompt whole").run()
    next(b for b in at.button if b.key == "set__save").click().run()
    assert settings_mod.load().prefix_cache_tokens == -2
    assert app("pages/settings.py").selectbox(key="set__prefix_cache_mode").value == \
        "every prompt whole"


def test_settings_store_file_moves_the_store(ui, tmp_path, monkeypatch):
    monkeypatch.delenv("WORKBENCH_STORE", raising=False)
    populate()
    old = settings_mod.store_path()
    at = app("pages/settings.py")
    at.text_input(key="set__store").input(str(tmp_path)).run()            # a folder
    assert any("is a folder" in w.value for w in at.warning)
    next(b for b in at.button if b.key == "set__save").click().run()
    assert any("is a folder" in e.value for e in at.error)
    assert settings_mod.load().store == ""
    target = ui / "elsewhere" / "runs.duckdb"        # under the home (outside: tests/test_sharing.py)
    at.text_input(key="set__store").input(str(target)).run()
    next(b for b in at.button if b.key == "set__save").click().run()
    no_errors(at)
    assert settings_mod.store_path() == target
    runs = app("pages/runs.py")                 # the new store is empty; the old one is kept
    no_errors(runs)
    assert target.exists() and old.exists() and not Store(target).list_runs()
    assert Store(old).list_runs()
    monkeypatch.setenv("WORKBENCH_STORE", str(old))                       # the env var wins
    assert settings_mod.store_path() == old


def test_settings_marks_a_bundled_model_that_is_not_installed(ui, monkeypatch):
    import dataclasses
    from workbench.llm import registry
    gone = dataclasses.replace(registry.BUNDLED["gemma3-270m"], package="no_such_package_x")
    monkeypatch.setitem(registry.BUNDLED, "gemma3-270m", gone)
    at = app("pages/settings.py")
    no_errors(at)
    box = at.selectbox(key="set__model_pick")
    assert box.format_func("gemma3-270m").endswith("not installed")
    assert not box.format_func("smollm2-135m").endswith("not installed")
    box.set_value("gemma3-270m").run()
    assert any("gemma3-270m is not installed" in w.value for w in at.warning)


def test_settings_model_change_reloads_with_readable_error(ui, tmp_path):
    backend.clear_override()
    at = app("pages/settings.py")
    at.selectbox(key="set__model_pick").set_value("Other .gguf file…").run()
    at.text_input(key="set__model_path").input(str(tmp_path / "nope.gguf")).run()
    next(b for b in at.button if b.key == "set__save").click().run()
    assert not at.exception
    assert any("could not be loaded" in e.value for e in at.error)
    assert settings_mod.load().model.endswith("nope.gguf")


# ------------------------------------------------------------------ untrusted text

RAW_TAG = re.compile(r"(?<!\\)<\s*(script|img)", re.I)     # an unescaped tag


def test_untrusted_text_is_never_markup_in_pages(ui):
    """Payloads from a passage, a model output and a note show as text, never as tags."""
    rid = populate()
    for page in ("pages/runs.py", "pages/annotate.py"):
        at = app(page, run=rid)
        no_errors(at)
        shown = [m.value for m in at.markdown]
        if page.endswith("annotate.py"):
            assert any("alert" in m for m in shown)    # the payload is visible, as text
        for m in shown:
            assert not RAW_TAG.search(m), m
        for h in at.get("html"):
            assert "<script" not in h.proto.body and "<img" not in h.proto.body
    at = run_ask(app("pages/ask.py"))
    for m in at.markdown:
        assert not RAW_TAG.search(m.value), m.value
    view = at.session_state["ask__view"]
    # labels and pyvis titles are markup-capable and escaped; tips are text (textContent)
    for item in view["nodes"] + view["edges"]:
        for field in ("label", "title"):
            assert "<script" not in item.get(field, "") and "<img" not in item.get(field, "")
    assert any("&lt;img" in n["title"] for n in view["nodes"])      # escaped, not dropped


@pytest.mark.parametrize("kind", ["tau_calibration_mismatch", "kg_partial"])
def test_a_caveat_of_the_run_is_flagged_next_to_the_answer(ui, monkeypatch, kind):
    """A run that flags its shipped threshold as fitted for another model or dataset
    (CRP-RAG's tau_calibration_mismatch), or its KG as built from part of the corpus
    (kg_partial), shows that, escaped, next to the answer: on Ask while it runs, and on
    Runs once stored."""
    from workbench import trace as T
    inner = S.ToyMethod.run

    def run(self, ctx, question):
        yield T.custom(kind, None, tau_ppl=1.091,
                       note="tau_ppl=1.091 was calibrated elsewhere (model <b>m</b>); choose it "
                       "again: crp_tau_calibration.py")
        yield from inner(self, ctx, question)
    monkeypatch.setattr(S.ToyMethod, "run", run)
    at = run_ask(app("pages/ask.py"))
    no_errors(at)
    warn = [w.value for w in at.warning if "choose it again" in w.value]
    # markdown-escaped: the value renders as the text itself, the tag as characters
    assert len(warn) == 1 and r"tau\_ppl=1\.091" in warn[0] and r"\<b\>" in warn[0]
    rid = at.session_state["ask_batch"].jobs[0].run_id
    runs = app("pages/runs.py", run=rid)
    no_errors(runs)
    assert [w.value for w in runs.warning if "choose it again" in w.value] == warn
