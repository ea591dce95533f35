"""One node, one number: the graph label, the inspector headline and the score table show a
node's stored score with one rounding rule, say which call it was read from, and the score
table renders without Arrow type errors."""
from __future__ import annotations

import logging

import pytest
from streamlit.testing.v1 import AppTest

from workbench import trace as T
from workbench.viz.graph import build_view
from workbench.viz.inspect import (fmt_score, headline_scores, node_call_ids, node_details,
                                   score_source)


def _call(cid, node, purpose, ppl, n=3):
    lp = -__import__("math").log(ppl)
    return T.Event(T.LLM_CALL, {"prompt": "p", "output": "o", "purpose": purpose,
                                "latency_ms": 5.0, "prompt_tokens": 1, "completion_tokens": n,
                                "tokens": [[1, "x", lp, None]] * n,
                                "scores": {"perplexity": ppl, "confidence": 1 / ppl}},
                   node_id=node, llm_call_id=cid)


def toy_trace() -> T.Trace:
    """A CRP-like step node with a summary and an evaluation call (scored from the latter,
    call id recorded), and an answer node without a call of its own whose score is read
    from the step call of v2 (old-style: no call id, found by value)."""
    evs = [T.node_added("q", "question", "Where?"),
           T.node_added("v2", "step", "step <b>two</b>", parents=["q"]),
           _call("c1", "v2", "aggregate", 1.4),
           _call("c2", "v2", "evaluate", 1.12873),
           _call("c3", "v2", "reason", 1.217),
           T.node_scored("v2", {"perplexity": 1.12873, "confidence": round(1 / 1.12873, 4),
                                "extra": 0.5}, {"perplexity": 1.5}, call_id="c2"),
           T.node_added("a4", "answer", "Nolan", parents=["v2"]),
           T.node_scored("a4", {"perplexity": round(1.217, 4),
                                "confidence": round(1 / 1.217, 4)}),
           T.answer("Nolan", node_id="a4")]
    return T.Trace.fold(evs)


def test_scores_name_their_call_and_share_one_rounding():
    tr = toy_trace()
    v2, a4 = tr.nodes["v2"], tr.nodes["a4"]
    assert score_source(tr, v2, "perplexity")["call_id"] == "c2"      # recorded
    assert score_source(tr, a4, "perplexity")["call_id"] == "c3"      # found by value
    assert score_source(tr, v2, "extra") is None                       # method's own number
    h = headline_scores(tr, v2)
    assert [x["label"] for x in h] == ["perplexity of the sufficiency evaluation call",
                                       "confidence of the sufficiency evaluation call"]
    assert h[0]["text"] == fmt_score(1.12873) == "1.129"
    ha = headline_scores(tr, a4)
    assert ha[0]["label"] == "perplexity of the step call"
    assert "node v2" in ha[0]["source"] and "3 generated tokens" in ha[0]["source"]
    labels = {n["id"]: n["label"] for n in build_view(tr)["nodes"]}
    assert "perplexity 1.129" in labels["v2"] and "perplexity 1.217" in labels["a4"]
    rows = {r["score"]: r for r in node_details(tr, "v2")["scores"]}
    assert rows["perplexity"]["value"] == 1.12873 and rows["extra"]["threshold"] is None
    assert rows["extra"]["source"].startswith("computed by the method")


def test_score_table_columns_have_one_type():
    import pandas as pd
    import pyarrow as pa
    rows = node_details(toy_trace(), "v2")["scores"]
    df = pd.DataFrame(rows)
    table = pa.Table.from_pandas(df)       # raised ArrowTypeError with "–" among floats
    assert pa.types.is_floating(table.schema.field("threshold").type)


def _render_inspector_script():
    import streamlit as st

    from tests.test_node_scores import toy_trace
    from workbench.ui.inspector import inspector
    tr = toy_trace()
    for nid in st.session_state.get("nodes", ["v2"]):
        inspector(tr, nid, key=f"t_{nid}")


class _Grab(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def test_inspector_score_table_with_missing_threshold_logs_no_arrow_error():
    grab = _Grab()
    loggers = [logging.getLogger("streamlit.dataframe_util"), logging.getLogger()]
    old = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(grab)
        lg.setLevel(logging.DEBUG)
    try:
        at = AppTest.from_function(_render_inspector_script, default_timeout=30)
        at.session_state["nodes"] = ["v2", "a4"]
        at.run()
    finally:
        for lg, lv in zip(loggers, old):
            lg.removeHandler(grab)
            lg.setLevel(lv)
    assert not at.exception, [e.value for e in at.exception]
    bad = [r for r in grab.records if r.exc_info or "Arrow" in r.getMessage()]
    assert not bad, [r.getMessage() for r in bad]
    heads = [(m.label, m.value) for m in at.metric]
    # short metric labels (a long one is cut off in the inspector's column), each followed
    # by a line that names the call the number was read from
    assert ("Perplexity", "1.129") in heads and ("Perplexity", "1.217") in heads
    caps = [c.value.replace("\\", "") for c in at.caption]     # markdown-escaped
    assert any(c.startswith("Perplexity 1.129 and confidence 0.886 of the sufficiency "
                            "evaluation call") for c in caps), caps
    assert any(c.startswith("Perplexity 1.217 and confidence 0.822 of the step call of node "
                            "v2") for c in caps), caps
    assert not any(lbl == "LLM calls" and v == "0" for lbl, v in heads)
    assert any("No LLM call of its own" in c.value for c in at.caption)


# ------------------------------------------------------------------ the real model

QID = "q001"
SMALL = {
    "vanilla": {"answer_max_tokens": 12},
    "standard-rag": {"retriever": "bm25", "top_k": 2, "answer_max_tokens": 12},
    "ircot": {"retriever": "bm25", "k_per_step": 2, "max_docs": 2, "max_steps": 1,
              "cot_max_tokens": 16, "answer_max_tokens": 12},
    "crp-rag": {"retriever": "bm25", "samples_per_sink": 1, "max_iterations": 1,
                "max_nodes": 2, "top_k": 2, "gen_max_tokens": 24, "summary_max_tokens": 24,
                "eval_max_tokens": 8, "step_max_tokens": 12, "answer_max_tokens": 24},
    "par-rag": {"dense_retriever": "bm25", "top_k": 2, "max_plan_steps": 1,
                "plan_max_tokens": 80, "read_max_tokens": 12, "refine_max_tokens": 16,
                "final_max_tokens": 12, "context_tokens": 400},
    "frag": {"path_top_u": 8},
    "coggrag": {"max_level": 1, "max_children": 1, "max_items": 2, "local_extraction": "batched",
                "max_tokens_decompose": 60, "max_tokens_extract": 60, "max_tokens_reason": 60,
                "max_tokens_rethink": 30, "k_max": 10},
}


@pytest.fixture(scope="module")
def real_env(tmp_path_factory):
    import os
    home = tmp_path_factory.mktemp("wbhome_scores")
    old = os.environ.get("WORKBENCH_HOME")
    os.environ["WORKBENCH_HOME"] = str(home)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from workbench.llm.base import LLMError
        from workbench.llm.registry import load_backend
        try:
            be = load_backend(model="smollm2-135m")
        except LLMError as e:
            pytest.skip(f"smollm2-135m not installed: {e}")
        from workbench.methods.frag import router as frag_router
        router = tmp_path_factory.mktemp("router")
        try:
            frag_router.train_router("demo:train", out_dir=router)
        except (LookupError, FileNotFoundError) as e:
            pytest.skip(f"demo world not available: {e}")
        yield be, router
    finally:
        if old is None:
            os.environ.pop("WORKBENCH_HOME", None)
        else:
            os.environ["WORKBENCH_HOME"] = old


def _stored_run(method, be, router, monkeypatch):
    from workbench.methods.frag import router as frag_router
    from workbench.execution import run_to_end
    from workbench.store import Store
    from workbench.workspace import build_context
    monkeypatch.setattr(frag_router, "default_dir", lambda: router)
    m, ctx = build_context(method, llm=be, dataset="demo", overrides=SMALL[method],
                           question_id=QID)
    st = Store()
    tr = run_to_end(m, ctx, ctx.gold.question if ctx.gold else "Who?", store=st,
                    question_id=QID)
    return st.trace(tr.run_id)        # what the pages read: the stored run, folded again


def _all_nodes_script():
    import streamlit as st

    from workbench.ui.inspector import inspector
    tr = st.session_state["trace"]
    for nid in tr.nodes:
        inspector(tr, nid, key=f"n_{nid}")


@pytest.mark.parametrize("method", list(SMALL))
def test_displayed_scores_equal_the_stored_values_they_name(real_env, method, monkeypatch):
    be, router = real_env
    tr = _stored_run(method, be, router, monkeypatch)
    assert tr.status in ("finished", "refused"), tr.errors
    scored = [n for n in tr.nodes.values() if n.scores]
    assert scored, f"{method}: no scored node"
    labels = {n["id"]: n["label"] for n in build_view(tr, max_nodes=10_000)["nodes"]}
    want_heads, want_tables = [], []
    for n in scored:
        d = node_details(tr, n.id)
        h = d["headline"]
        assert h and h[0]["value"] == n.scores[h[0]["score"]]
        # the graph label shows the headline's number for the same score
        assert f"{h[0]['score']} {h[0]['text']}" in labels[n.id], (method, n.id)
        for x in h:
            want_heads.append((x["score"].capitalize(), fmt_score(n.scores[x["score"]])))
        for r in d["scores"]:
            src = score_source(tr, n, r["score"])
            if src is not None:        # the named call's own score is the stored one
                call_v = tr.llm_calls[src["call_id"]]["scores"][r["score"]]
                assert fmt_score(call_v) == fmt_score(n.scores[r["score"]]), (method, n.id, r)
                assert src["call"] in r["label"] and src["call"] in r["source"]
        want_tables.append([(r["score"], r["value"]) for r in d["scores"]])
    _check_plain_names_and_waterfall(tr, method)
    at = AppTest.from_function(_all_nodes_script, default_timeout=60)
    at.session_state["trace"] = tr
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    # a scored node without a call of its own says where its scores come from instead of
    # "LLM calls 0" beside them
    assert not any(m.label == "LLM calls" and m.value == "0" for m in at.metric)
    callless = [n for n in scored if not node_call_ids(tr, n)]
    notes = [c.value for c in at.caption if c.value.startswith("No LLM call of its own; its")]
    assert len(notes) == len(callless), (method, [n.id for n in callless], notes)
    call_tab = ("LLM calls", "Latency", "Tokens", "Confidence of this call")
    shown = [(m.label, m.value) for m in at.metric
             if m.label not in call_tab and not m.label.startswith("Perplexity of this ")]
    assert shown == want_heads, method
    tables = [df for df in (x.value for x in at.dataframe) if "source" in df.columns]
    assert len(tables) == len(want_tables)
    for df, want in zip(tables, want_tables):
        got = list(zip(df["score"], df["value"]))
        assert [lbl for lbl, _ in got] == [lbl for lbl, _ in want]
        for (_, gv), (_, wv) in zip(got, want):
            assert (wv is None and gv != gv) or fmt_score(float(gv)) == fmt_score(wv)


def _check_plain_names_and_waterfall(tr, method):
    """Every phase and call purpose of a real run has a plain name, and the waterfall draws
    one bar per call, on its node, with the call's own tokens."""
    from workbench.viz import names as N
    from workbench.viz.waterfall import call_rows, waterfall_figure
    phases = {c.get("phase") for c in tr.llm_calls.values()} - {None, ""}
    assert phases <= set(N.PHASE_NAMES), (method, phases - set(N.PHASE_NAMES))
    purposes = {str(c.get("purpose") or "").partition(":")[0] for c in tr.llm_calls.values()}
    assert purposes <= set(N.CALL_NAMES), (method, purposes - set(N.CALL_NAMES))
    rows = call_rows(tr)
    calls = [r for r in rows if r["type"] == "call"]
    assert {r["id"] for r in calls} == set(tr.llm_calls)
    for r in calls:
        c = tr.llm_calls[r["id"]]
        assert (r["prompt_tokens"], r["completion_tokens"]) == (c["prompt_tokens"],
                                                                 c["completion_tokens"])
        assert 0 <= r["start_ms"] <= r["end_ms"] <= tr.last_t_ms + 1
        if r["node_id"] is not None:
            assert r["id"] in node_call_ids(tr, tr.nodes[r["node_id"]]), (method, r)
    fig = waterfall_figure(tr)
    drawn = sum(len(t.x) for t in fig.data if t.type == "bar" and t.x and t.x[0] is not None)
    assert drawn == len(rows)
