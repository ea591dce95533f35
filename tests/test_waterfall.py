"""The call waterfall (viz.waterfall), plain names (viz.names) and the graph fixes that go
with them, on hand-built traces: fast, no model, no Streamlit."""
from __future__ import annotations

import threading
import time

from workbench import trace as T
from workbench.viz import names as N
from workbench.viz.export import standalone_html
from workbench.viz.graph import build_view
from workbench.viz.inspect import node_details
from workbench.viz.waterfall import (call_rows, running_text, summary_text,
                                     waterfall_figure)

XSS = '<img src=x onerror="window.__xss=1">'


class _Run:
    """Events stamped by hand: ``add(event, t_ms)``."""

    def __init__(self):
        self.events: list[T.Event] = []

    def add(self, ev: T.Event, t_ms: float) -> None:
        ev.seq, ev.t_ms, ev.run_id = len(self.events), float(t_ms), "run_x"
        self.events.append(ev)

    def trace(self) -> T.Trace:
        return T.Trace.fold(self.events)


def _call(cid, node, purpose, phase, latency, *, batch=None, pt=100, ct=10, cached=0, **extra):
    d = {"prompt": "p", "output": "o", "purpose": purpose, "phase": phase, "latency_ms": latency,
         "prompt_tokens": pt,
         "completion_tokens": ct, "cached_prompt_tokens": cached, "finish_reason": "stop",
         "scores": {"perplexity": 1.25}, **extra}
    if batch:
        d["batch"] = batch
    return T.Event(T.LLM_CALL, d, node_id=node, llm_call_id=cid)


def crp_like() -> T.Trace:
    """A CRP-RAG-shaped run: a proposal call, a llama.cpp batch of three summaries in two
    groups, a replayed evaluation, a teacher-forced scoring, an answer call made before its
    node was added."""
    r = _Run()
    r.add(T.Event(T.RUN_STARTED, {"question": "Where?", "method": "crp-rag"}), 0)
    r.add(T.phase("gc"), 1)
    r.add(T.node_added("q", "question", "Where was he born?"), 2)
    r.add(_call("c1", "q", "generate", "gc", 1000, cached=40), 1100)
    r.add(T.node_added("v1", "step", "Find the director " + XSS, parents=["q"]), 1101)
    r.add(T.node_added("v2", "step", "Find his birthplace", parents=["q"]), 1102)
    r.add(T.phase("kra"), 1103)
    b = {"call": "batch_1", "mode": "llama_cpp", "groups": 2}
    r.add(_call("k1", "v1", "aggregate", "kra", 500,
                batch={**b, "group": 0, "members": [0, 1], "slot": 0, "size": 2}), 1960)
    r.add(_call("k2", "v2", "aggregate", "kra", 500,
                batch={**b, "group": 0, "members": [0, 1], "slot": 1, "size": 2}), 1960)
    r.add(_call("k3", "q", "aggregate", "kra", 300,
                batch={**b, "group": 1, "members": [2], "slot": 0, "size": 1}), 1961)
    r.add(T.phase("ag"), 1970)
    r.add(_call("e1", "v2", "evaluate", "ag", 0, replayed_from="call_old"), 1980)
    r.add(T.Event(T.LLM_SCORE, {"purpose": "p_right", "phase": "ag", "latency_ms": 20,
                                "tokens": [[1, "a", -0.1, None], [2, "b", -0.2, None]],
                                "score_id": "s1"}, node_id="v2"), 2010)
    r.add(T.phase("span"), 2020)
    r.add(_call("a1", "a4", "answer_span", "span", 200), 2300)
    r.add(T.node_added("a4", "answer_extraction", "London", parents=["v2"]), 2301)
    r.add(T.node_added("a5", "answer", "London", parents=["a4"]), 2302)
    return r.trace()


def test_bars_sit_on_the_run_clock_batches_by_group():
    rows = {r["id"]: r for r in call_rows(crp_like())}
    assert set(rows) == {"c1", "k1", "k2", "k3", "e1", "s1", "a1"}
    # a plain call ends when its event was stamped and started its latency earlier
    assert (rows["c1"]["start_ms"], rows["c1"]["end_ms"]) == (100.0, 1100.0)
    # a batch's events all come after the batch: group 1 ran 300 ms before the first event,
    # group 0 (both sequences side by side) the 500 ms before that
    assert rows["k3"]["end_ms"] == 1960.0 and rows["k3"]["start_ms"] == 1660.0
    assert rows["k1"]["start_ms"] == rows["k2"]["start_ms"] == 1160.0
    assert rows["k1"]["end_ms"] == 1660.0
    assert "batch of 2 (one llama.cpp batch), group 1 of 2" == rows["k1"]["batch"]
    assert rows["c1"]["cached_share"] == 0.4
    # statuses and plain words
    assert rows["e1"]["status"] == "replayed" and rows["c1"]["status"] == "fresh"
    assert rows["k1"]["phase_name"] == "knowledge retrieval and aggregation"
    assert rows["e1"]["call"] == "sufficiency evaluation"
    assert rows["s1"]["type"] == "score" and rows["s1"]["completion_tokens"] == 2
    # the answer-span call came before its node existed: it is still that node's bar
    assert rows["a1"]["node_id"] == "a4" and rows["a1"]["call"] == "short-answer extraction"
    order = [r["id"] for r in call_rows(crp_like())]
    assert order.index("c1") < order.index("k1") < order.index("k3") < order.index("e1")


def test_sequential_groups_and_traces_without_times():
    r = _Run()
    r.add(T.node_added("n", "step", "s"), 0)
    b = {"call": "b", "mode": "sequential", "groups": 1, "group": 0, "members": [0, 1],
         "size": 2}
    r.add(_call("x", "n", "read", "act", 400, batch={**b, "slot": 0}), 1000)
    r.add(_call("y", "n", "read", "act", 600, batch={**b, "slot": 1}), 1000)
    rows = {x["id"]: x for x in call_rows(r.trace())}
    # one after another: x from 0 to 400, y from 400 to 1000
    assert (rows["x"]["start_ms"], rows["x"]["end_ms"]) == (0.0, 400.0)
    assert (rows["y"]["start_ms"], rows["y"]["end_ms"]) == (400.0, 1000.0)
    # a trace restored from a dict of an older run carries no times: end to end by order
    d = r.trace().to_dict()
    for c in d["llm_calls"].values():
        c.pop("t_ms")
    rows = {x["id"]: x for x in call_rows(T.Trace.from_dict(d))}
    assert rows["y"]["start_ms"] == rows["x"]["end_ms"] == 400.0


def test_figure_one_bar_per_call_phases_spelled_out_text_escaped():
    tr = crp_like()
    fig = waterfall_figure(tr, selected="v2")
    bars = [t for t in fig.data if t.type == "bar" and t.x and t.x[0] is not None]
    assert sum(len(t.x) for t in bars) == 7
    names = [t.name for t in bars]
    assert names == ["graph construction", "knowledge retrieval and aggregation",
                     "answer generation", "short-answer extraction"]
    assert not {"gc", "kra", "ag", "span"} & set(names)
    # a click hands back the node: customdata[0] is the node id of every bar
    nodes = {cd[0] for t in bars for cd in t.customdata}
    assert nodes == {"q", "v1", "v2", "a4"}
    # the replayed call takes no time but is drawn, hatched; the legend says what hatching is
    ag = next(t for t in bars if t.name == "answer generation")
    assert min(ag.x) > 0 and "/" in list(ag.marker.pattern.shape)
    assert any("replayed" in (t.name or "") for t in fig.data)
    # hover text is HTML for plotly: the node's text is escaped
    hover = " ".join(h for t in bars for h in t.hovertext)
    assert XSS not in hover and "&lt;img" in hover
    assert "40 cached, 40%" in hover
    # the selected node's bars are outlined
    kra = next(t for t in bars if t.name.startswith("knowledge"))
    widths = dict(zip([cd[0] for cd in kra.customdata], kra.marker.line.width))
    assert widths["v2"] > widths["v1"]
    assert "7" not in summary_text(tr).split(" LLM")[0]        # six calls and one scoring
    assert summary_text(tr).startswith("6 LLM call(s) · 1 teacher-forced scoring(s)")


def test_call_in_flight_is_a_bar_and_a_line():
    tr = crp_like()
    tr.phase = "ag"
    run = {"start_ms": 2400.0, "elapsed_ms": 12_300.0, "what": "LLM call", "tokens": 17,
           "partial": "Lon" + XSS}
    assert running_text(tr, run) == ("Running now: LLM call (answer generation) for 12.3 s, "
                                     "17 tokens so far")
    fig = waterfall_figure(tr, running=run)
    now = next(t for t in fig.data if t.name == "running now")
    assert now.base[0] == 2.4 and abs(now.x[0] - 12.3) < 1e-9
    assert XSS not in now.hovertext[0]
    assert fig.layout.xaxis.range[1] >= 14.7          # the axis reaches the call's present
    assert running_text(tr, None) == ""


def test_live_runner_reports_the_call_in_flight():
    """TokenTap marks a call as running while the backend works on it; in_flight puts it on
    the run's clock and forgets it when the call returns."""
    from workbench.llm.scripted import ScriptedBackend
    from workbench.ui import live

    gate, entered = threading.Event(), threading.Event()

    class Slow(ScriptedBackend):
        def generate(self, messages, params=None, on_token=None):
            entered.set()
            gate.wait(5)
            return super().generate(messages, params)

    js = live.JobState(live.Job("m"))
    js.clock0 = time.monotonic() - 1.0           # the run started a second ago
    b = live.LiveBatch.__new__(live.LiveBatch)
    b.jobs = [js]
    tap = live.TokenTap(Slow(default="ok"), js)
    th = threading.Thread(target=tap.generate, args=("hello",))
    th.start()
    assert entered.wait(5)
    time.sleep(0.05)
    f = b.in_flight(0)
    assert f is not None and f["what"] == "LLM call"
    assert 900 < f["start_ms"] < 1500 and f["elapsed_ms"] >= 40
    gate.set()
    th.join(5)
    assert b.in_flight(0) is None
    # a batch is marked in flight while it runs and forgotten when it returns
    from workbench.llm.base import GenRequest
    gate.set()
    out = tap.generate_many([GenRequest("a"), GenRequest("b")])
    assert [c.text for c in out] == ["ok", "ok"] and js.call_started is None


def test_live_runner_reports_a_search_between_calls():
    """A run between LLM calls, searching (a dense index is built on its first search, for
    minutes on a small CPU), says so on the page instead of showing no sign of life."""
    from workbench.ui import live
    from workbench.viz.waterfall import busy_text

    gate, entered = threading.Event(), threading.Event()

    class SlowIndex:
        name = "dense"

        def search(self, query, k=5):
            entered.set()
            gate.wait(5)
            return ["hit"] * k

    js = live.JobState(live.Job("m"))
    b = live.LiveBatch.__new__(live.LiveBatch)
    b.jobs = [js]
    tap = live.RetrieverTap(SlowIndex(), js, "dense")
    assert b.busy(0) is None and tap.name == "dense"      # other attributes are the inner's
    th = threading.Thread(target=tap.search, args=("who?", 2))
    th.start()
    assert entered.wait(5)
    time.sleep(0.05)
    busy = b.busy(0)
    assert busy is not None and busy["what"] == "retrieval (dense)" and busy["elapsed_ms"] >= 40
    gate.set()
    th.join(5)
    assert b.busy(0) is None
    assert busy_text(None) == ""
    assert busy_text({"what": "retrieval (bm25)", "elapsed_ms": 1200}) == \
        "Running now: retrieval (bm25) for 1.2 s, no LLM call in flight"
    assert "built over the whole corpus on its first use" in busy_text(
        {"what": "retrieval (dense)", "elapsed_ms": 35_000})


def _busy_script():
    import streamlit as st

    from tests.test_waterfall import crp_like
    from workbench.ui.waterfall_view import waterfall
    waterfall(crp_like(), key="wf", busy=st.session_state.get("busy"))


def test_waterfall_view_says_a_search_runs_between_calls():
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_function(_busy_script, default_timeout=30)
    at.session_state["busy"] = {"what": "retrieval (dense)", "elapsed_ms": 40_000.0}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    caps = [c.value.replace("\\", "") for c in at.caption]      # markdown-escaped source
    assert any(c.startswith("Running now: retrieval (dense) for 40.0 s, no LLM call in flight")
               for c in caps), caps


def test_plain_names_and_no_spec_references_in_exports():
    assert N.phase_name("kra") == "knowledge retrieval and aggregation"
    assert N.phase_name("my_phase") == "my phase"          # unknown: shown, readable
    assert N.call_name("evaluate:retry") == "sufficiency evaluation (retry)"
    assert N.event_name("node_aggregated") == "knowledge aggregated"
    assert N.plain_text("the root is not scored (spec §7 gap 11)") == "the root is not scored"
    assert N.plain_text("not stated (spec §7.7: none)") == "not stated (none)"
    r = _Run()
    r.add(T.Event(T.RUN_STARTED, {"question": "Q", "method": "crp-rag"}), 0)
    r.add(T.node_added("q", "question", "Q"), 1)
    r.add(T.node_updated("q", "sufficient", assumed_sufficient=True,
                         note="the root is not scored (spec §7 gap 11)"), 2)
    tr = r.trace()
    assert node_details(tr, "q")["attrs"]["note"] == "the root is not scored"
    html = standalone_html({"events": [e.to_dict() for e in r.events], "run": {}})
    assert "§" not in html and "the root is not scored" in html


def test_graph_says_which_london_merged_badge_legend_and_edges_around_nodes():
    tr = crp_like()
    tr.apply(T.node_updated("v2", merged_from=["p1", "p2"]))
    view = build_view(tr)
    labels = {n["id"]: n["label"] for n in view["nodes"]}
    assert labels["a4"].startswith("Extracted short answer:\nLondon")
    assert labels["a5"].startswith("Answer:\nLondon")
    assert "⊕2 merged" in labels["v2"]
    assert any(lbl.startswith("⊕ merged") for _, lbl, *_ in view["legend"])
    tips = {n["id"]: dict(n["tip"]["rows"]) for n in view["nodes"]}
    assert tips["a4"]["kind"] == "short answer extracted from the long answer"
    # a chain q -> s -> a with an edge q -> a: that edge would run through s, label and all
    chain = T.Trace.fold([T.node_added("q", "question", "Q"),
                          T.node_added("s", "step", "S", parents=["q"]),
                          T.node_added("a", "answer", "A", parents=["s"]),
                          T.edge_added("q", "a")])
    edges = {e["id"]: e for e in build_view(chain)["edges"]}
    assert edges["q->a:next"].get("smooth", {}).get("type") == "curvedCW"
    assert "smooth" not in edges["q->s:next"] and "smooth" not in edges["s->a:next"]
    # no shape that draws its label under itself, where outgoing edges run
    assert not {n["shape"] for n in view["nodes"]} & {"diamond", "dot", "star", "triangle"}


def _waterfall_script():
    import streamlit as st

    from tests.test_waterfall import crp_like
    from workbench.ui.waterfall_view import waterfall
    waterfall(crp_like(), key="wf", running=st.session_state.get("running"))


def test_waterfall_view_draws_the_chart_and_says_what_runs():
    import json

    from streamlit.testing.v1 import AppTest
    at = AppTest.from_function(_waterfall_script, default_timeout=30)
    at.session_state["running"] = {"start_ms": 2400.0, "elapsed_ms": 5000.0, "what": "LLM call"}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    charts = at.get("plotly_chart")
    assert len(charts) == 1
    fig = json.loads(charts[0].proto.spec)
    assert sum(len(t["x"]) for t in fig["data"] if t.get("x") and t["x"][0] is not None) == 8
    caps = [c.value.replace("\\", "") for c in at.caption]      # markdown-escaped source
    assert any(c.startswith("Running now: LLM call (short-answer extraction) for 5.0 s")
               for c in caps), caps
    assert any(c.startswith("6 LLM call(s) · 1 teacher-forced scoring(s)") for c in caps), caps
