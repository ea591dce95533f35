"""The Counterfactual tab on Runs: pick a node of a stored run, drop one of its evidence items,
run, and see the original and the counterfactual side by side (workbench/ui/whatif_view.py),
on the toy UI with the scripted backend."""
from __future__ import annotations

import os
import time
from typing import Iterator

import pytest

from tests import test_ui_support as S
from tests.test_ui_pages import RAW_TAG, app, no_errors, populate
from workbench import trace as T
from workbench.methods.base import RunContext
from workbench.execution import run_to_end
from workbench.store import Store
from workbench.ui import backend
from workbench.ui import whatif_view as WV

WRONG = "Hans Zimmer"


class ToyCF(S.ToyMethod):
    """The toy method with what-if hooks: each step's evaluation and the final answer read
    the ids of the passages retrieved, so a change of evidence reaches them."""
    name = "ui-toy-cf"
    title = "UI toy with what-if hooks"
    whatif_nodes = {"evidence": r"s\d+", "step": r"s\d+", "sufficiency": r"s\d+"}

    def run(self, ctx: RunContext, question: str) -> Iterator[T.Event]:
        cfg = ctx.config
        yield ctx.set_phase("plan")
        yield T.node_added("q", "question", question, state="created")
        steps, ids = [], []
        for i in range(cfg.steps):
            sid = f"s{i}"
            steps.append(sid)
            yield ctx.set_phase("retrieve")
            text = ctx.whatif.step(sid, f"Step {i}: find who is involved ({i})")
            yield T.node_added(sid, "step", text, parents=["q"], layer=1, state="created")
            hits = yield from ctx.retrieve(sid, question, cfg.k, "bm25")
            ids += [h.id for h in hits]
            yield T.node_updated(sid, "retrieved")
            comp = yield from ctx.generate(
                "evaluate", f"evaluate step {i % 3}: {question} [{' '.join(h.id for h in hits)}]",
                node_id=sid)
            ok = ctx.whatif.verdict(sid, "sufficiency", comp.scores().perplexity < cfg.tau)
            yield T.node_updated(sid, "sufficient" if ok else "insufficient")
        yield ctx.set_phase("answer")
        comp = yield from ctx.generate("answer", f"final answer: {question} | evidence: "
                                       f"{' '.join(ids)}", node_id="a")
        yield T.node_added("a", "answer", comp.text, parents=steps, layer=2, state="answered")
        yield T.answer(comp.text, node_id="a")


def rules() -> list[dict]:
    # the answer goes wrong once step 0 no longer starts with passage p1
    return [{"match": r"final answer: .*\| evidence: (?!p1)", "regex": True, "text": WRONG,
             "logprob": -0.3}] + S.scripted_rules()


def _backend():
    from workbench.ui.backend import DemoScriptedBackend
    return DemoScriptedBackend.from_table(rules(), default="I don't know.")


# As a plug-in of a `streamlit run` subprocess (tests/test_browser_whatif.py).
if __name__ in os.environ.get("WORKBENCH_UI_PLUGINS", "").split(","):
    from workbench.ui import data as _uidata
    _uidata.register_method(ToyCF)


@pytest.fixture
def ui(isolated_home, monkeypatch):
    from workbench.methods import _REGISTRY
    from workbench.ui import data as uidata
    with S.toy_ui(monkeypatch):
        uidata.register_method(ToyCF)
        backend.set_override(_backend())
        try:
            yield isolated_home
        finally:
            _REGISTRY.pop(ToyCF.name, None)


def stored_run(llm=None) -> str:
    st = Store()
    ctx = RunContext(llm=llm or _backend(), config=S.ToyConfig(),
                     retrievers={"bm25": S.ToyRetriever()},
                     dataset="ui-toy", gold=S.QUESTIONS[0])
    tr = run_to_end(ToyCF(), ctx, S.QUESTIONS[0].question, store=st, question_id="tq1")
    assert tr.status == "finished" and tr.answer["text"].startswith(S.ANSWER)
    st.update_run(tr.run_id, correct=True)
    return tr.run_id


def n_runs() -> int:
    return Store().query("SELECT count(*) AS n FROM runs")[0]["n"]


def pick(at, rid: str, node: str):
    at.selectbox(key=f"runs__cf_node_{rid}").set_value(node).run()
    return at


def run_cf(at):
    at.button(key="runs__cf_run").click().run()
    job = at.session_state["runs__cf_job"]
    assert job.join(30), "the counterfactual did not finish"
    at.run()
    at.run()          # the job's panel opens the new run
    return job


def texts(at) -> list[str]:
    return [m.value for m in [*at.markdown, *at.caption, *at.info, *at.error, *at.warning]]


def test_drop_one_evidence_item_stores_a_child_run_and_shows_both_sides(ui):
    rid = stored_run()
    at = app("pages/runs.py", run=rid)
    no_errors(at)
    tabs = [t.label for t in at.tabs]
    assert "Counterfactual" in tabs and "What-if" in tabs
    # the tab follows the inspector's node until one is picked here
    assert at.selectbox(key=f"runs__cf_node_{rid}").value == at.session_state["runs__node"]
    pick(at, rid, "s0")
    drops = [c for c in at.checkbox if c.key.startswith(f"runs__cf_{rid}_s0__drop_")]
    assert [c.label.split(" ")[0] for c in drops] == ["p1", "p3"]
    assert at.radio(key=f"runs__cf_{rid}_s0__verdict").options == [
        WV.KEEP, "sufficient", "insufficient"]                  # only this node's kind
    assert at.button(key="runs__cf_run").disabled               # nothing chosen yet
    drops[0].check().run()
    before = n_runs()
    job = run_cf(at)
    no_errors(at)
    assert job.status == "done", job.error
    res = job.result
    # a child run, stored with its parent; only the calls downstream of s0 ran on the model
    child = Store().get_run(res.run_id)
    assert n_runs() == before + 1 and child["parent_run_id"] == rid
    assert Store().get_run(rid) is not None                     # nothing deleted
    assert res.fresh_calls == 2 and res.replayed_calls == 2
    assert {f["node"] for f in res.fresh} == {"s0", "a"}
    assert res.answer == WRONG and child["correct"] is False
    # the page now shows the child run, with the original beside it
    assert at.query_params["run"] in (res.run_id, [res.run_id])
    shown = texts(at)
    assert any(s.startswith("##### Counterfactual of run") and rid in s.replace("\\", "")
               for s in shown), shown[:8]
    assert any("Dropped evidence p1 from node s0" in s.replace("\\", "") for s in shown)
    assert any(WRONG in s for s in shown) and any(S.ANSWER in s for s in shown)
    heads = [s for s in shown if s.startswith(("**Original**", "**Counterfactual**"))]
    assert len(heads) == 2 and ":green[**correct**]" in heads[0] \
        and ":red[**incorrect**]" in heads[1], heads
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Fresh calls"] == "2" and metrics["Replayed calls"] == "2", metrics
    assert any("2 fresh · 2 replayed" in s for s in shown)
    view = at.session_state["runs__cf_view"]
    marked = {n["id"] for n in view["nodes"] if n.get("cf_changed")}
    assert {"s0", "a"} <= marked and "s1" not in marked
    assert any("✎ intervened" in n["label"] for n in view["nodes"] if n["id"] == "s0")
    # the runs list names the parent of the counterfactual
    table = next(d for d in at.dataframe if "counterfactual of" in d.value.columns)
    col = table.value.set_index("run")["counterfactual of"]
    assert col[res.run_id] == rid and col[rid] == ""
    # and a button opens the original again
    at.button(key="runs__cf_parent").click().run()
    no_errors(at)
    assert at.query_params["run"] in (rid, [rid])
    assert not any(s.startswith("##### Counterfactual of run") for s in texts(at))


def test_a_bad_choice_is_a_clear_message_and_writes_nothing(ui):
    rid = stored_run()
    at = pick(app("pages/runs.py", run=rid), rid, "q")
    # the question node takes no change: said, and no button
    assert any("takes no change" in s and "s0, s1, s2" in s for s in texts(at))
    assert not any(b.key == "runs__cf_run" for b in at.button)
    # an unknown dataset passage id: the re-run refuses, nothing is stored
    pick(at, rid, "s1")
    at.text_input(key=f"runs__cf_{rid}_s1__addid").input("p404").run()
    before = n_runs()
    job = run_cf(at)
    assert job.status == "failed" and "has no passage p404" in job.error
    errs = [e.value for e in at.error]
    assert errs and "p404" in errs[0] and "Nothing was stored" in errs[0], errs
    assert n_runs() == before
    # a method that declares nothing: a verdict it never takes is refused after the re-run
    plain = populate()
    at = pick(app("pages/runs.py", run=plain), plain, "s0")
    at.radio(key=f"runs__cf_{plain}_s0__verdict").set_value("pass").run()
    before = n_runs()
    job = run_cf(at)
    assert job.status == "failed" and "cannot take a verdict intervention" in job.error
    assert any("cannot take a verdict" in e.value for e in at.error)
    assert n_runs() == before


def test_hostile_text_is_escaped_in_the_counterfactual_view(ui):
    rid = stored_run()
    at = pick(app("pages/runs.py", run=rid), rid, "s0")
    at.text_area(key=f"runs__cf_{rid}_s0__add").input("Nolan " + S.XSS_SCRIPT).run()
    # passages with payloads are listed as text in the form
    for s in texts(at):
        assert not RAW_TAG.search(s), s
    assert any("onerror" in s for s in texts(at))
    job = run_cf(at)
    no_errors(at)
    assert job.status == "done", job.error
    shown = texts(at)
    assert any("Added a passage to node s0" in s.replace("\\", "") for s in shown)
    assert any("alert" in s for s in shown)                     # visible, as text
    for s in shown:
        assert not RAW_TAG.search(s), s
    for lab in [c.label for c in at.checkbox]:
        assert not RAW_TAG.search(lab), lab
    view = at.session_state["runs__cf_view"]
    for item in view["nodes"] + view["edges"]:
        for field in ("label", "title"):
            assert "<script" not in item.get(field, "") and "<img" not in item.get(field, "")
    ev = next(d for d in at.dataframe if "change" in d.value.columns).value
    assert "added:1" in set(ev["evidence"])                     # the added passage, as a cell


def test_intervention_words_and_costs():
    parent = T.Trace.fold([T.node_added("v2", "step", "Where was Nolan born?")])
    words = WV.intervention_words({"node": "v2", "drop": ["d1"], "add": ["x"], "add_ids": [],
                                   "step": "new", "verdict": "insufficient"},
                                  [{"part": "verdict", "kind": "sufficiency", "before": True,
                                    "after": False}], parent)
    assert words[0] == "Dropped evidence d1 from node v2 (step)."
    assert "“Where was Nolan born?” → “new”" in words[2]
    assert words[3].endswith("to insufficient (it was sufficient).")
    child = T.Trace()
    child.llm_calls = {"c1": {"replayed_from": "p1", "prompt_tokens": 5, "completion_tokens": 1},
                       "c2": {"node_id": "v2", "purpose": "answer", "prompt_tokens": 7,
                              "completion_tokens": 3, "latency_ms": 1500.0}}
    parent.llm_calls = {"p1": {"latency_ms": 2000.0}}
    c = WV.call_costs(parent, child)
    assert (c["fresh"], c["replayed"], c["fresh_tokens"], c["replayed_tokens"]) == (1, 1, 10, 6)
    assert c["fresh_s"] == 1.5 and c["saved_s"] == 2.0 and c["fresh_nodes"] == ["v2"]


@pytest.mark.parametrize("method,node,want", [
    ("crp-rag", "v3", (True, True, ["sufficient", "insufficient"])),
    ("par-rag", "vf2", (False, False, ["pass", "fail"])),
    ("par-rag", "s1", (False, True, [])),
    ("coggrag", "0.1", (True, True, ["pass", "fail"])),
    ("frag", "st:rerank", (True, False, [])),
    ("vanilla", "a", (False, False, [])),
    ("standard-rag", "r11'", (True, True, [])),
])
def test_node_options_per_method(method, node, want):
    o = WV.node_options(method, None, T.Node(node, "step", ""))
    assert (o["evidence"], o["step"], o["verdicts"]) == want and o["known"]


def test_ask_inspector_opens_the_counterfactual_tab_on_runs(ui):
    from tests.test_ui_pages import run_ask
    at = run_ask(app("pages/ask.py"), method=ToyCF.name)
    no_errors(at)
    rid = at.session_state["ask_batch"].jobs[0].run_id
    at.selectbox(key="ask__sel").set_value("s1").run()
    at.button(key="ask__cf_open").click().run()
    no_errors(at)
    # Runs opened on that run, its Counterfactual tab on the node picked in Ask
    assert at.query_params["run"] in (rid, [rid])
    assert at.selectbox(key=f"runs__cf_node_{rid}").value == "s1"
    assert any(c.key.startswith(f"runs__cf_{rid}_s1__drop_") for c in at.checkbox)
    assert at.session_state[f"runs__cf_tab_{rid}"] is True      # the tab in front


def test_attribution_heat_strip_on_the_evidence(ui):
    rid = stored_run()
    at = pick(app("pages/runs.py", run=rid), rid, "s0")
    before = n_runs()
    at.button(key=f"runs__cf_{rid}_s0__attr").click().run()
    job = at.session_state["runs__cf_job"]
    assert job.join(30) and job.status == "done", job.error
    at.run()
    at.run()
    no_errors(at)
    assert n_runs() == before                                   # measured, not stored
    att = at.session_state[f"runs__cf_attr_{rid}_s0"]
    by = {e.evidence_id: e for e in att.items}
    assert by["p1"].answer_changed and by["p1"].correctness_changed
    assert not by["p3"].answer_changed and att.drop_all is not None
    strip = [h.proto.body for h in at.get("html") if "wb-attr-strip" in h.proto.body]
    assert strip and strip[0].count('class="wb-attr-cell"') == 3
    assert WV.HEAT["both"][0] in strip[0] and WV.HEAT["none"][0] in strip[0]
    assert "<script" not in strip[0] and "<img" not in strip[0]
    table = next(d for d in at.dataframe if "answer changes" in d.value.columns).value
    assert list(table["evidence"]) == ["p1", "p3", "(all dropped)"]
    assert list(table["correctness changes"]) == ["yes", "no", "no"]


def test_a_visitor_may_run_one_and_it_waits_its_turn_for_the_model(ui, monkeypatch):
    """Shared mode: a visitor runs a counterfactual like an Ask run (deleting stays the
    host's); while another run holds the model it waits in line, and Cancel leaves the line
    with nothing run or stored."""
    import threading
    monkeypatch.setenv("WORKBENCH_SHARED", "1")
    rid = stored_run()
    at = pick(app("pages/runs.py", run=rid), rid, "s0")
    assert at.checkbox(key="runs__confirm").disabled                # delete: host only
    drops = [c for c in at.checkbox if c.key.startswith(f"runs__cf_{rid}_s0__drop_")]
    drops[0].check().run()
    held, release = threading.Event(), threading.Event()

    def other_run():
        with backend._LLM_LOCK.hold("run", "another session"):
            held.set()
            release.wait(30)
    th = threading.Thread(target=other_run, daemon=True)
    th.start()
    assert held.wait(5)
    before = n_runs()
    try:
        at.button(key="runs__cf_run").click().run()
        job = at.session_state["runs__cf_job"]
        assert job.status == "waiting" and job.running
        at.run()
        assert any("Waiting for the model" in i.value for i in at.info), \
            [i.value for i in at.info]
        at.button(key="runs__cf_cancel").click().run()
        assert job.join(10) and job.status == "cancelled"
    finally:
        release.set()
        th.join(5)
    at.run()
    assert any("Cancelled while waiting" in e.value for e in at.error)
    assert n_runs() == before
    # with the model free, the visitor's counterfactual runs and is stored
    job = run_cf(at)
    assert job.status == "done", job.error
    assert Store().get_run(job.result.run_id)["parent_run_id"] == rid


def test_the_counterfactual_graph_grows_on_the_page_while_it_runs(ui):
    """While the re-run runs, its panel draws the graph so far and counts replayed and fresh
    calls; the model call after the change is held until the page has been looked at."""
    import threading
    rid = stored_run()
    gate = threading.Event()
    inner = _backend()

    class Held:                     # the scripted backend, holding the final answer call
        def __getattr__(self, name):
            return getattr(inner, name)

        def generate(self, messages, params=None, on_token=None):
            if "final answer" in str(messages):
                gate.wait(30)
            return inner.generate(messages, params, on_token)
    backend.set_override(Held())
    at = pick(app("pages/runs.py", run=rid), rid, "s0")
    [c for c in at.checkbox if c.key.startswith(f"runs__cf_{rid}_s0__drop_")][0].check().run()
    try:
        at.button(key="runs__cf_run").click().run()
        job = at.session_state["runs__cf_job"]
        steps = S.ToyConfig().steps
        deadline = time.time() + 20        # every step's evaluation made; the answer is held
        while time.time() < deadline and \
                len(T.Trace.fold(list(job.live)).llm_calls) < steps:
            time.sleep(0.05)
        at.run()
        no_errors(at)
        so_far = [c.value for c in at.caption if c.value.startswith("So far:")]
        assert so_far, texts(at)[:10]
        # s0's evaluation saw other evidence (fresh), the later steps' are unchanged
        # (replayed); the answer call is held
        assert f"{steps - 1} call{'' if steps == 2 else 's'} replayed" in so_far[0] \
            and "1 run on the model" in so_far[0], so_far
        live = at.session_state["runs__cf_live__view"]
        assert {"q", "s0", "s1"} <= {n["id"] for n in live["nodes"]} and "a" not in \
            {n["id"] for n in live["nodes"]}
        assert job.running
    finally:
        gate.set()
    assert job.join(30) and job.status == "done", job.error
    assert WV.call_costs(None, T.Trace.fold(job.live))["fresh"] == job.result.fresh_calls


def test_surrogate_rows_carry_the_weight_and_colour_by_it():
    from workbench.analysis.attribute import SURROGATE, Attribution, ItemEffect
    att = Attribution("run_x", "s0", "toy", "Tokyo", True, estimator=SURROGATE, samples=20,
                      fit_r2=0.9, scored_output="Tokyo")
    att.items = [ItemEffect(pid, f"Doc {pid}", None, False, None, False, 0, 0, "", None, w)
                 for pid, w in (("p1", 2.4), ("p2", 0.3), ("p3", -0.1))]
    rows = WV.attribution_rows(att)
    assert [r["heat"] for r in rows] == ["answer", "none", "none"]
    assert [r["weight (Δ log-prob kept)"] for r in rows] == [2.4, 0.3, -0.1]
    assert all("answer changes" not in r for r in rows)     # not measured one by one


def _path_attribution(at):
    at.button(key="runs__cf_path").click().run()
    job = at.session_state["runs__cf_job"]
    assert job.join(30) and job.status == "done", job.error
    at.run()
    at.run()
    no_errors(at)
    table = next(d.value for d in at.dataframe if "answer without its evidence" in d.value.columns)
    view = at.session_state["runs__cf_pathgraph__view"]
    return table, [n["id"] for n in view["nodes"] if "⇐ answer depends" in n["label"]], view


def test_which_nodes_the_answer_depends_on_is_marked_on_the_graph(ui):
    """One re-run per node of the answer's path without any of its evidence, nothing stored.
    The toy's answer reads only the evidence ids: with the default rules it goes wrong when
    they do not start with p1, which no single node's drop causes (the next step's p1 comes
    first); with a rule that wants all six ids, every step holds it up."""
    import re
    from workbench.ui.backend import DemoScriptedBackend
    rid = stored_run()
    before = n_runs()
    table, marked, view = _path_attribution(app("pages/runs.py", run=rid))
    assert n_runs() == before
    assert list(table["node"]) == ["s0", "s1", "s2"]
    assert list(table["answer changes"]) == ["no", "no", "no"] and marked == []
    six = [{"match": r"final answer: .*\| evidence: (?:\S+ ){0,4}\S+$", "regex": True,
            "text": WRONG, "logprob": -0.3}] + S.scripted_rules()
    be = DemoScriptedBackend.from_table(six, default="I don't know.")
    backend.set_override(be)
    rid = stored_run(DemoScriptedBackend.from_table(six, default="I don't know."))
    at = app("pages/runs.py", run=rid)
    table, marked, view = _path_attribution(at)
    assert list(table["answer changes"]) == ["yes", "yes", "yes"]
    assert marked == ["s0", "s1", "s2"]
    assert any(k == "depends" for k, *_ in view["legend"])
    assert any(re.search(r"without the evidence of s0, s1, s2", c.value) for c in at.caption)
