"""Structural diff of two runs: alignment by meaning (two methods, the real embedder), by
node id (a counterfactual pair), the optimal matching, the first divergence, the refusal
of runs of different questions, the merged graph and `runs diff`."""
from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest

from workbench import cli
from workbench import trace as T
from workbench.analysis import diff as D
from workbench.store import Store

Q = "Which director of Inception was born in London?"


def hit(pid, title="t"):
    return {"id": pid, "title": title, "text": f"about {title}", "retriever": "bm25",
            "score": 1.0, "rank": 1, "meta": {}}


def build(run_id, method, nodes, *, answer=None, question=Q, **meta):
    """nodes: (id, kind, text, parents, {state, evidence: [ids], attrs})."""
    clock = T.EventClock(run_id)
    evs = [T.Event(T.RUN_STARTED, {"question": question, "method": method, "config": {}, **meta})]
    for nid, kind, text, parents, extra in nodes:
        extra = dict(extra)
        ev_ids = extra.pop("evidence", None)
        state = extra.pop("state", "created")
        evs.append(T.node_added(nid, kind, text, parents=parents, state=state, **extra))
        if ev_ids is not None:
            evs.append(T.Event(T.RETRIEVED, {"query": text, "retriever": "bm25", "k": 5,
                                             "hits": [hit(p) for p in ev_ids]}, node_id=nid))
    if answer:
        evs.append(T.answer(answer[1], node_id=answer[0]))
    evs.append(T.Event(T.RUN_FINISHED, {"status": "finished"}))
    return [clock.stamp(e) for e in evs]


@pytest.fixture(scope="module")
def embedder():
    """The workbench's sentence embedder, loaded once (and before any page's timeout runs)."""
    from workbench.knowledge.dense import get_embedder
    return get_embedder()


def words_embed(texts):
    """Bag-of-words vectors: texts sharing their words are alike, others are not."""
    toks = [re.findall(r"\w+", t.lower()) for t in texts]
    vocab = {w: i for i, w in enumerate(sorted({w for ts in toks for w in ts}))}
    v = np.zeros((len(texts), max(len(vocab), 1)))
    for i, ts in enumerate(toks):
        for w in ts:
            v[i, vocab[w]] += 1
    n = np.linalg.norm(v, axis=1, keepdims=True)
    n[n == 0] = 1
    return v / n


# --- two methods on one question: CRP-RAG's steps against PAR-RAG's plan, by meaning ---

def crp_events(run_id="run_crp"):
    return build(run_id, "crp-rag", [
        ("0", "question", Q, [], {"state": "sufficient"}),
        ("v1", "step", "Who directed the film Inception?", ["0"],
         {"evidence": ["p-inc"], "state": "sufficient", "eval_answer": "Christopher Nolan"}),
        ("v2", "step", "Where was Christopher Nolan born?", ["v1"],
         {"evidence": ["p-lon", "p-nol"], "state": "sufficient", "eval_answer": "London"}),
        ("ans", "answer", "Christopher Nolan", ["v2"], {"state": "answered"}),
    ], answer=("ans", "Christopher Nolan"))


def par_events(run_id="run_par", birth_evidence=("p-lon", "p-nol"), plan=True):
    nodes = [("q", "question", Q, [], {})]
    if plan:
        nodes.append(("plan", "plan", "Plan with 2 steps: look up, then verify", ["q"], {}))
    first = "plan" if plan else "q"
    nodes += [
        ("s1", "plan_step", "Who was the director of Inception?", [first],
         {"evidence": ["p-inc"], "state": "answered", "answer": "Christopher Nolan."}),
        ("s2", "plan_step", "In which city was Christopher Nolan born?", ["s1"],
         {"evidence": list(birth_evidence), "state": "answered", "answer": "London"}),
        ("final", "answer", "Nolan", ["s2"], {"state": "answered"}),
    ]
    return build(run_id, "par-rag", nodes, answer=("final", "Christopher Nolan"))


def test_two_methods_align_by_meaning_and_part_at_the_plan(embedder):
    a, b = T.Trace.fold(crp_events()), T.Trace.fold(par_events())
    d = D.diff_runs(a, b)                       # the real sentence embedder
    assert d.aligned_by == "meaning"
    got = {(p.a, p.b) for p in d.pairs}
    assert got == {("0", "q"), ("v1", "s1"), ("v2", "s2"), ("ans", "final")}
    assert d.only_a == [] and d.only_b == ["plan"]
    step = d.pair_of("a", "v1")
    assert step.similarity > 0.7 and step.shared == ["p-inc"] and not step.differs
    # PAR-RAG made a plan before its first step; CRP-RAG has nothing like it
    fd = d.first_divergence
    assert (fd.kind, fd.node_a, fd.node_b) == ("only_b", None, "plan")
    assert "no counterpart in A" in fd.reason and fd.reason.count(".") >= 1


def test_two_methods_first_divergence_is_the_evidence_of_the_second_hop():
    a = T.Trace.fold(crp_events())
    b = T.Trace.fold(par_events(birth_evidence=("p-lon", "p-wrong"), plan=False))
    d = D.diff_runs(a, b, embed=words_embed, threshold=0.5)
    fd = d.first_divergence
    assert (fd.kind, fd.node_a, fd.node_b) == ("evidence", "v2", "s2")
    p = d.pair_of("a", "v2")
    assert (p.shared, p.only_a, p.only_b) == (["p-lon"], ["p-nol"], ["p-wrong"])
    assert "1 item(s) shared, 1 only in A, 1 only in B" in fd.reason
    # "Christopher Nolan." and "Christopher Nolan" are one answer after normalisation
    assert "answer" not in d.pair_of("a", "v1").differs


def test_matching_is_optimal_not_greedy():
    # greedy takes x1-y1 (0.9) and leaves x2 alone; the optimum pairs both
    w = np.array([[1.9, 1.85], [1.8, 0.0]])
    assert sorted(D.match(w)) == [(0, 1), (1, 0)]
    rng = np.random.default_rng(0)
    for _ in range(30):
        n, m = (int(x) for x in rng.integers(1, 6, size=2))
        w = rng.random((n, m)) * (rng.random((n, m)) > 0.4)
        got = sum(w[i, j] for i, j in D.match(w))
        best = max(sum(w[i, p[i]] for i in range(n) if p[i] is not None)
                   for p in itertools.permutations(list(range(m)) + [None] * n, n))
        assert got == pytest.approx(best)


def test_threshold_is_the_knob():
    a = T.Trace.fold(crp_events())
    b = T.Trace.fold(par_events(birth_evidence=("p-x",), plan=False))
    loose = D.diff_runs(a, b, embed=words_embed, threshold=0.3)
    strict = D.diff_runs(a, b, embed=words_embed, threshold=0.95)
    assert len(loose.pairs) == 4 and len(strict.pairs) == 3
    assert strict.only_a == ["v2"] and strict.only_b == ["s2"]
    # the first hop's steps are worded apart but retrieved the same passage
    assert strict.pair_of("a", "v1").by == "evidence"
    # the answer nodes always correspond, and matched pairs reach the threshold
    assert ("ans", "final") in {(p.a, p.b) for p in strict.pairs}
    assert all(p.similarity >= 0.95 or p.by in ("answer", "evidence") for p in strict.pairs)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        D.diff_runs(a, b, embed=words_embed, threshold=1.5)


# --- a counterfactual: same ids, one node's evidence changed ---

def base_nodes(v2_evidence, v2_answer):
    return [
        ("0", "question", Q, [], {"state": "sufficient"}),
        ("v1", "step", "Who directed Inception?", ["0"],
         {"evidence": ["p-inc"], "state": "sufficient", "eval_answer": "Christopher Nolan"}),
        ("v2", "step", "Where was Christopher Nolan born?", ["v1"],
         {"evidence": v2_evidence, "state": "sufficient" if v2_answer else "insufficient",
          **({"eval_answer": v2_answer} if v2_answer else {})}),
    ]


def test_counterfactual_pair_aligns_by_node_id_and_parts_at_the_intervened_node():
    a = T.Trace.fold(build("run_orig", "crp-rag",
                           base_nodes(["p-lon"], "London")
                           + [("ans", "answer", "Nolan", ["v2"], {"state": "answered"})],
                           answer=("ans", "Christopher Nolan")))
    # the passage was dropped from v2: the method asked again (v3) and answered otherwise
    b = T.Trace.fold(build("run_cf", "crp-rag",
                           base_nodes([], None)
                           + [("v3", "step", "What is Nolan's birthplace?", ["v2"],
                               {"evidence": ["p-other"]}),
                              ("ans", "answer", "Nolan", ["v3"], {"state": "answered"})],
                           answer=("ans", "I don't know"), parent_run_id="run_orig"))
    assert D.shares_parent(a, b) and D.shares_parent(b, a)
    d = D.diff_runs(a, b, embed=words_embed)
    assert d.aligned_by == "node id"
    assert [(p.a, p.b) for p in d.pairs] == [("0", "0"), ("v1", "v1"), ("v2", "v2"),
                                             ("ans", "ans")]
    assert d.only_b == ["v3"] and d.only_a == []
    assert d.pair_of("a", "v1").differs == []
    assert d.pair_of("a", "v2").differs == ["evidence", "verdict"]
    assert "answer" in d.pair_of("a", "ans").differs
    fd = d.first_divergence
    assert (fd.kind, fd.node_a, fd.node_b) == ("evidence", "v2", "v2")
    assert fd.reason.startswith("The runs retrieved different evidence at step v2")
    # without the shared parent the same runs align by meaning and still part at v2
    d2 = D.diff_runs(a, b, embed=words_embed, by_id=False)
    assert d2.aligned_by == "meaning" and d2.first_divergence.node_a == "v2"


def test_identical_runs_have_no_divergence():
    ev = crp_events()
    a = T.Trace.fold(ev)
    b = T.Trace.fold(crp_events("run_crp2"))
    d = D.diff_runs(a, b, embed=words_embed)
    assert d.first_divergence is None and not d.only_a and not d.only_b
    assert "none; the runs agree on every node" in d.lines(a, b)[-1]


def test_runs_of_different_questions_are_refused():
    a = T.Trace.fold(crp_events())
    b = T.Trace.fold(build("run_x", "par-rag", [("q", "question", "Who wrote Dune?", [], {})],
                           question="Who wrote Dune?"))
    with pytest.raises(ValueError, match="answer different questions"):
        D.diff_runs(a, b, embed=words_embed)


def test_merged_graph_keeps_both_runs_edges_and_marks_sides():
    a = T.Trace.fold(crp_events())
    b = T.Trace.fold(par_events(birth_evidence=("p-x",)))
    d = D.diff_runs(a, b, embed=words_embed, threshold=0.5)
    m, side = D.merged_trace(d, a, b)
    assert side["B·plan"] == "b" and side["v1=s1"] == "both"
    assert len(m.nodes) == len(d.pairs) + len(d.only_a) + len(d.only_b)
    # B's q -> plan -> s1 survives the merge as (0=q) -> B·plan -> (v1=s1)
    edges = {(e["src"], e["dst"]) for e in m.edges}
    assert {("0=q", "B·plan"), ("B·plan", "v1=s1"), ("0=q", "v1=s1")} <= edges
    assert D.merged_id(d, "b", "s2") == "v2=s2"


def test_diff_view_colours_sides_and_marks_the_divergence():
    from workbench.ui.diff_view import diff_graph
    a = T.Trace.fold(crp_events())
    b = T.Trace.fold(par_events(birth_evidence=("p-x",), plan=False))
    b.nodes["s2"].text = "<img src=x onerror=alert(1)> In which city was Nolan born?"
    d = D.diff_runs(a, b, embed=words_embed, threshold=0.3)
    data = diff_graph(d, a, b)
    by_id = {n["id"]: n for n in data["nodes"]}
    fd = D.merged_id(d, "a", d.first_divergence.node_a)
    assert "first divergence" in by_id[fd]["label"]
    assert {n["diff_side"] for n in data["nodes"]} == {"both"}
    assert all("<img" not in n["label"] and "<img" not in n["title"] for n in data["nodes"])
    assert [x[1] for x in data["legend"]][:3] == ["in both runs", "only in A", "only in B"]


# --- the CLI ---

def store_run(st, events, method):
    run_id = events[0].run_id
    st.start_run({"run_id": run_id, "method": method, "question": Q, "status": "finished"})
    st.add_events(events)
    return run_id


def test_cli_runs_diff_prints_the_diff_and_json_last(capsys, embedder):
    st = Store()
    ra = store_run(st, crp_events(), "crp-rag")
    rb = store_run(st, par_events(), "par-rag")
    assert cli.main(["runs", "diff", ra, rb, "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    last = json.loads(out[-1])
    assert last["first_divergence"]["node_b"] == "plan"
    assert last["aligned_by"] == "meaning" and len(last["pairs"]) == 4
    assert any(line.startswith("first divergence: B made plan plan") for line in out)
    # refusals: one run id only; runs of different questions
    assert cli.main(["runs", "diff", ra]) == 2
    assert "needs two run ids" in capsys.readouterr().err
    rx = store_run(st, build("run_x", "par-rag", [("q", "question", "Who wrote Dune?", [], {})],
                             question="Who wrote Dune?"), "par-rag")
    assert cli.main(["runs", "diff", ra, rx]) == 2
    errors = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error:")]
    assert len(errors) == 1
    assert errors[0].startswith("error: runs run_crp and run_x answer different questions")


# --- the Compare page ---

def test_compare_page_shows_where_two_stored_runs_part_ways(isolated_home, monkeypatch,
                                                           embedder):
    from tests import test_ui_support as S
    from tests.test_ui_pages import app, no_errors
    with S.toy_ui(monkeypatch):
        st = Store()
        store_run(st, crp_events(), "crp-rag")
        store_run(st, par_events(), "par-rag")
        at = app("pages/compare.py")
        at.segmented_control(key="cmp__mode").set_value("Stored runs").run()
        at.toggle(key="cmp__diffon").set_value(True).run()
        no_errors(at)
        view = at.session_state["cmp__diff__view"]
        # the page lists the newest run first: PAR-RAG's run is A there
        sides = {n["id"]: n["diff_side"] for n in view["nodes"]}
        assert {k: v for k, v in sides.items() if v != "both"} == {"A·plan": "a"}
        assert list(sides.values()).count("both") == 4
        plan = next(n for n in view["nodes"] if n["id"] == "A·plan")
        assert "first divergence" in plan["label"]
        md = " ".join(m.value for m in at.markdown).replace("\\", "")
        assert "First divergence:" in md and "A made plan plan" in md


def test_question_nodes_correspond_even_when_a_step_repeats_the_question():
    # B's first step restates the question; A's late step is like it: a matching by text
    # alone would pair A's question with B's step and A's step with B's question
    a = T.Trace.fold(build("ra", "crp-rag", [
        ("v1", "question", Q, [], {}),
        ("v2", "step", "Who directed Inception, the film?", ["v1"], {}),
        ("v3", "step", "Which director of Inception was born in London then?", ["v2"], {})]))
    b = T.Trace.fold(build("rb", "par-rag", [
        ("q1", "question", Q, [], {}),
        ("s1", "step", "Which director of Inception was born in London", ["q1"], {})]))
    d = D.diff_runs(a, b, embed=words_embed)
    assert ("v1", "q1") in {(p.a, p.b) for p in d.pairs}
    assert d.pair_of("a", "v1").by == "question" and d.pair_of("a", "v3").b == "s1"
    fd = d.first_divergence
    assert (fd.kind, fd.node_a) == ("only_a", "v2")
    assert "below the threshold 0.7" in fd.reason


def test_a_matched_pair_that_disagrees_is_not_drawn_as_agreement():
    # two runs' answer nodes always correspond; when they answer differently the pair is
    # drawn (and listed) as differing, not in the grey of agreement
    from workbench.ui.diff_view import DIFFERING, SIDES, diff_graph, pair_rows
    a = T.Trace.fold(crp_events())
    b = T.Trace.fold(par_events(birth_evidence=("p-x",), plan=False))
    d = D.diff_runs(a, b, embed=words_embed, threshold=0.3)
    differing = [p for p in d.pairs if p.differs]
    agreeing = [p for p in d.pairs if not p.differs]
    assert differing and agreeing
    data = diff_graph(d, a, b)
    fill = {n["id"]: n["color"]["background"] for n in data["nodes"]}
    for p in differing:
        assert fill[D.merged_id(d, "a", p.a)] == DIFFERING[0]
    for p in agreeing:
        assert fill[D.merged_id(d, "a", p.a)] == SIDES["both"][0]
    assert ("differs", DIFFERING[2], DIFFERING[0], DIFFERING[1], False) in data["legend"]
    sides = {(r["A"], r["B"]): r["side"] for r in pair_rows(d, a, b)}
    assert {sides[(p.a, p.b)] for p in differing} == {DIFFERING[2]}
    assert {sides[(p.a, p.b)] for p in agreeing} == {SIDES["both"][2]}
