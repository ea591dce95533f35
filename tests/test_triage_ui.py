"""Triage on the pages (AppTest): Ask and Compare show the class and highlight the breaking
node; the inspector lists a node's gold evidence; Annotate pre-fills the class and node,
stores the person's label apart and shows the agreement; the graph overlay itself."""
from __future__ import annotations

import pytest

from tests import test_ui_support as S
from tests.test_ui_pages import app, no_errors, populate, run_ask, ui  # noqa: F401 (fixture)
from workbench.store import Store
from workbench.triage import store as TS
from workbench.viz.graph import build_view


@pytest.fixture
def gold_toy(ui, monkeypatch):    # noqa: F811
    """tq1 with two gold passages, one of them (Interstellar) never retrieved, and a gold
    answer the toy method does not give: a partial retrieval breaking at step s2."""
    q = S.QUESTIONS[0]
    monkeypatch.setattr(q, "gold_titles", ["Inception", "Interstellar"])
    monkeypatch.setattr(q, "answers", ["Hans Zimmer"])
    return ui


def _labels(view):
    return {n["id"]: n["label"] for n in view["nodes"]}


def test_ask_shows_class_and_breaking_node_and_the_inspector_lists_gold(gold_toy):
    at = run_ask(app("pages/ask.py"))
    no_errors(at)
    md = " ".join(m.value for m in at.markdown)
    assert "Failure class **partial retrieval**" in md
    assert "Chain breaks at **s2** (step)" in md
    labels = _labels(at.session_state["ask__view"])
    assert "✖ breaks here" in labels["s2"] and "★ gold 1/2" in labels["s0"]
    legend = {row[0] for row in at.session_state["ask__view"]["legend"]}
    assert {"gold", "break"} <= legend
    at.selectbox(key="ask__sel").set_value("s2").run()
    no_errors(at)
    md = " ".join(m.value for m in at.markdown).replace("\\", "")
    assert "Gold evidence held here" in md and "hop 1: Inception (by title, rank 1)" in md
    assert "**The chain breaks here**" in md
    rid = at.session_state["ask_batch"].jobs[0].run_id
    row = Store().query("SELECT failure_class, break_node FROM triage WHERE run_id = ?", [rid])
    assert row == [{"failure_class": "partial_retrieval", "break_node": "s2"}]


def test_compare_columns_show_their_class(gold_toy):
    at = app("pages/compare.py")
    at.selectbox(key="cmp__c0__m").set_value("ui-toy").run()
    at.selectbox(key="cmp__c1__m").set_value("ui-toy-mindmap").run()
    next(b for b in at.button if b.key == "cmp__run").click().run()
    assert at.session_state["cmp_batch"].join(30)
    at.run()
    no_errors(at)
    md = [m.value for m in at.markdown]
    assert sum("Failure class **partial retrieval**" in m for m in md) == 2
    for i in (0, 1):
        assert "✖ breaks here" in _labels(at.session_state[f"cmp__g{i}__view"])["s2"]


def test_annotate_prefills_the_suggestion_and_stores_the_label_apart(gold_toy):
    rid = populate()
    Store().update_run(rid, correct=False)
    at = app("pages/annotate.py", run=rid)
    no_errors(at)
    assert at.selectbox(key=f"ann__fc_{rid}").value == "partial_retrieval"
    assert at.selectbox(key=f"ann__fn_{rid}").value == "s2"
    assert "✖ breaks here" in _labels(at.session_state["ann__view"])["s2"]
    # the taxonomy suggestion names the breaking node
    assert any("node s2: Retrieval miss" in c.value for c in at.caption)
    # the person changes the class: stored apart, the suggestion stays
    at.selectbox(key=f"ann__fc_{rid}").set_value("reasoning_error").run()
    next(b for b in at.button if b.key == "ann__fsave").click().run()
    no_errors(at)
    assert TS.get_label(Store(), rid)["failure_class"] == "reasoning_error"
    assert TS.get(Store(), rid).failure_class == "partial_retrieval"
    a = TS.agreement(Store())
    assert a["class_agreement"] == 0.0 and a["node_agreement"] == 1.0
    at = app("pages/annotate.py", run=rid)
    assert at.selectbox(key=f"ann__fc_{rid}").value == "reasoning_error"   # the label wins
    assert any("agreement with the suggestion: class 0%" in c.value.lower() for c in at.caption)


def test_overlay_escapes_untrusted_explanations():
    from workbench import trace as T
    from workbench.triage import triage
    evs = [T.Event(T.RUN_STARTED, {"question": "q", "gold": {
        "answers": ["x"], "gold_titles": ["<b>T</b>", "Other"]}}),
        T.node_added("q", "question", "q"),
        T.node_added("r", "retrieval", S.XSS_SCRIPT, parents=["q"], query=S.XSS_SCRIPT),
        T.Event(T.RETRIEVED, {"query": S.XSS_SCRIPT, "hits": [
            {"id": "1", "title": "<b>T</b>", "text": "t", "rank": 1}]}, node_id="r"),
        T.node_added("r2", "retrieval", S.XSS_IMG, parents=["r"], query=S.XSS_IMG),
        T.Event(T.RETRIEVED, {"query": S.XSS_IMG, "hits": []}, node_id="r2"),
        T.node_added("a", "answer", "y", parents=["r2"]), T.answer("y", node_id="a"),
        T.Event(T.RUN_FINISHED, {"status": "finished"})]
    tr = T.Trace.fold(evs)
    t = triage(tr)
    assert t.failure_class == "partial_retrieval" and t.break_node == "r2"
    view = build_view(tr, triage=t.overlay())
    nodes = {n["id"]: n for n in view["nodes"]}
    assert "<b>T</b>" not in nodes["r"]["title"] and "&lt;b&gt;T&lt;/b&gt;" in nodes["r"]["title"]
    assert ["gold evidence", "hop 1: <b>T</b> (by title, rank 1)"] in nodes["r"]["tip"]["rows"]
    assert "<img" not in nodes["r2"]["title"] and "onerror" in nodes["r2"]["title"]
    why = dict(nodes["r2"]["tip"]["rows"])["chain breaks here"]
    assert S.XSS_IMG[:20] in why                    # raw in the tip: drawn with textContent
