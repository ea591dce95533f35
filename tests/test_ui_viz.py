"""Pure rendering helpers: what-if, layouts, graph data, escaping, exports, heatmap,
annotation taxonomy/export and KG neighbourhoods (no Streamlit)."""
from __future__ import annotations

import csv
import io
import json
import re

import networkx as nx
import pytest

from workbench import annotations as A
from workbench import trace as T
from workbench.viz import kgview, layout
from workbench.viz import whatif as wi
from workbench.viz.export import standalone_html
from workbench.viz.graph import build_view, graph_html
from workbench.viz.heatmap import token_heatmap_html, token_rows
from workbench.viz.inspect import node_call_ids, node_details, run_summary
from workbench.viz.safe import json_for_script, label_esc, md_escape
from workbench.viz.style import STATE_STYLES, WHATIF_FAIL, WHATIF_PASS

XSS = ["<script>alert(1)</script>", '<img src=x onerror="alert(2)">']


def fold(events, thresholds=None, config=None):
    start = T.Event(T.RUN_STARTED, {"question": "Q " + XSS[0], "method": "m",
                                    "config": {"tau": 3.0} if config is None else config,
                                    "thresholds": {"perplexity": ["tau", "lower"]}
                                    if thresholds is None else thresholds},
                    run_id="r1")
    clock = T.EventClock("r1")
    return T.Trace.fold([clock.stamp(e) for e in [start] + list(events)])


def crp_like():
    """q -> a, b, c -> f; a sufficient (ppl 2), b insufficient (4), c (2.9)."""
    evs = [T.node_added("q", "question", "Who " + XSS[1] + "?")]
    for nid, ppl in (("a", 2.0), ("b", 4.0), ("c", 2.9)):
        evs += [T.node_added(nid, "step", f"step {nid}", parents=["q"], layer=1),
                T.node_scored(nid, {"perplexity": ppl}, {"perplexity": 3.0}),
                T.node_updated(nid, "sufficient" if ppl < 3 else "insufficient")]
    evs.append(T.node_added("f", "final", "final", parents=["a", "b", "c"], layer=2))
    for nid in ("a", "b", "c"):
        evs.append(T.path_event(f"p{nid}", ["q", nid, "f"], "pruned" if nid == "b" else "selected"))
    return evs


# ------------------------------------------------------------------ what-if

def test_whatif_node_threshold_recolours_and_recomputes_paths():
    tr = fold(crp_like())
    spec = wi.threshold_specs(tr)[0]
    assert (spec.score, spec.knob, spec.direction, spec.target, spec.value) == \
        ("perplexity", "tau", "lower", "node", 3.0)
    w = wi.apply(tr, spec, 3.0)                      # the stored threshold: nothing changes
    assert w.changed == [] and sorted(w.surviving) == ["pa", "pc"]
    w = wi.apply(tr, spec, 2.5)                      # stricter: c fails too
    assert w.node_pass == {"a": True, "b": False, "c": False}
    assert w.changed == ["c"] and w.surviving == ["pa"] and w.blocking["pc"] == ["c"]
    w = wi.apply(tr, spec, 5.0)                      # looser: everything survives
    assert w.changed == ["b"] and len(w.surviving) == 3
    rows = wi.sweep(tr, spec, [1.0, 2.5, 5.0])
    assert [r["paths_surviving"] for r in rows] == [0, 1, 3]


def test_whatif_higher_is_good_direction():
    evs = [T.node_added("s1", "step", "x"), T.node_scored("s1", {"C": 0.7}),
           T.node_added("s2", "step", "y"), T.node_scored("s2", {"C": 0.5})]
    tr = fold(evs, {"C": ["ct", "higher"]}, {"ct": 0.6})
    spec = wi.threshold_specs(tr)[0]
    assert spec.direction == "higher" and spec.value == 0.6
    assert wi.apply(tr, spec, 0.6).node_pass == {"s1": True, "s2": False}
    w = wi.apply(tr, spec, 0.4)
    assert w.node_pass == {"s1": True, "s2": True} and w.changed == ["s2"]


def test_whatif_paths_enumerated_when_the_run_stored_none():
    evs = [T.node_added("q", "question", "q"),
           T.node_added("a", "step", "a", parents=["q"]), T.node_scored("a", {"perplexity": 9.0}),
           T.node_added("b", "step", "b", parents=["q"]), T.node_scored("b", {"perplexity": 1.0})]
    tr = fold(evs)
    assert sorted(wi.enumerate_paths(tr).values()) == [["q", "a"], ["q", "b"]]
    w = wi.apply(tr, wi.threshold_specs(tr)[0], 3.0)
    assert len(w.surviving) == 1


def test_whatif_top_k_on_paths_declared_and_inferred():
    evs = [T.node_added("q", "question", "q")]
    for i, sc in enumerate([0.9, 0.5, 0.7, 0.1]):
        evs.append(T.node_added(f"e{i}", "entity", f"e{i}", parents=["q"]))
        evs.append(T.path_event(f"p{i}", ["q", f"e{i}"], "selected", score=sc, rank=i + 1))
    tr = fold(evs, {"score": ["path_top_u", "top"]}, {"path_top_u": 4})
    spec = wi.threshold_specs(tr)[0]
    assert spec.is_topk and spec.target == "path" and spec.hi == 4
    w = wi.apply(tr, spec, 2)
    assert sorted(w.surviving) == ["p0", "p2"]
    assert w.node_pass["e0"] and not w.node_pass["e1"]
    # undeclared: FRAG-like config with a top-u knob and scored paths
    tr2 = fold(evs, {"p_complex": ["route_threshold", "higher"]},
               {"path_top_u": 4, "route_threshold": 0.5})
    inferred = [s for s in wi.threshold_specs(tr2) if s.inferred]
    assert inferred and inferred[0].knob == "path_top_u" and inferred[0].direction == "top"
    assert sorted(wi.apply(tr2, inferred[0], 1).surviving) == ["p0"]


def test_whatif_evidence_threshold_counts_kept_items():
    hits = [{"id": f"t{i}", "title": "r", "text": "h r t", "retriever": "kg", "score": s,
             "rank": i + 1, "meta": {}} for i, s in enumerate([0.9, 0.75, 0.6])]
    evs = [T.node_added("kg", "kg_retrieval", "kept"),
           T.Event(T.RETRIEVED, {"query": "q", "retriever": "kg", "hits": hits}, node_id="kg"),
           T.node_scored("kg", {"similarity": 0.75}, {"similarity": 0.7})]
    tr = fold(evs, {"similarity": ["epsilon", "higher"]}, {"epsilon": 0.7})
    spec = wi.threshold_specs(tr)[0]
    assert spec.target == "evidence" and spec.values == [0.6, 0.75, 0.9]
    assert wi.apply(tr, spec, 0.7).kept_hits == {"kg": 2}
    w = wi.apply(tr, spec, 0.95)
    assert w.kept_hits == {"kg": 0} and w.node_pass == {"kg": False} and w.changed == ["kg"]


def test_whatif_evidence_threshold_reads_only_hits_that_name_the_score():
    """A run whose triples carry meta["similarity"] and whose descriptions carry their own
    score: the ε slider counts the triples only; an old run with bare scores falls back."""
    triples = [{"id": f"t{i}", "text": "h r t", "retriever": "kg", "score": s,
                "meta": {"similarity": s}} for i, s in enumerate([0.9, 0.6])]
    descs = [{"id": "d0", "text": "X is a film.", "retriever": "kg-descriptions", "score": 0.3,
              "meta": {"description_similarity": 0.3}}]
    evs = [T.node_added("kg", "kg_retrieval", "kept"),
           T.node_added("descriptions", "retrieval", "descriptions"),
           T.Event(T.RETRIEVED, {"query": "q", "retriever": "kg", "hits": triples},
                   node_id="kg"),
           T.Event(T.RETRIEVED, {"query": "q", "retriever": "kg-descriptions", "hits": descs},
                   node_id="descriptions")]
    tr = fold(evs, {"similarity": ["epsilon", "higher"]}, {"epsilon": 0.7})
    assert wi.hit_scores(tr, "similarity") == {"kg": [0.9, 0.6]}
    assert wi.apply(tr, wi.threshold_specs(tr)[0], 0.5).kept_hits == {"kg": 2}
    bare = [{k: v for k, v in h.items() if k != "meta"} for h in triples]
    old = fold([evs[0], T.Event(T.RETRIEVED, {"query": "q", "retriever": "kg", "hits": bare},
                                node_id="kg")], {"similarity": ["epsilon", "higher"]})
    assert wi.hit_scores(old, "similarity") == {"kg": [0.9, 0.6]}


def test_whatif_no_declared_thresholds():
    tr = fold([T.node_added("q", "question", "q")], thresholds={})
    assert wi.threshold_specs(tr) == []


# ------------------------------------------------------------------ layout

def test_tree_layout_root_on_top_parent_centred():
    order = ["r", "a", "b", "a1", "a2"]
    parents = {"a": ["r"], "b": ["r"], "a1": ["a"], "a2": ["a"]}
    pos = layout.tree_layout(order, parents)
    assert pos["r"][1] < pos["a"][1] < pos["a1"][1]
    assert pos["a"][0] == pytest.approx((pos["a1"][0] + pos["a2"][0]) / 2)
    assert pos["a1"][0] < pos["a2"][0] < pos["b"][0]


def test_layered_layout_wraps_wide_layers_and_survives_cycles():
    order = ["q"] + [f"e{i}" for i in range(30)]
    parents = {f"e{i}": ["q"] for i in range(30)}
    pos = layout.layered_layout(order, parents, max_per_row=10)
    assert len({round(pos[f"e{i}"][1]) for i in range(30)}) == 3
    cyc = layout.layered_layout(["a", "b"], {"a": ["b"], "b": ["a"]})
    assert set(cyc) == {"a", "b"}


# ------------------------------------------------------------------ graph data

def test_build_view_colours_states_and_escapes_text():
    tr = fold(crp_like())
    v = build_view(tr)
    by = {n["id"]: n for n in v["nodes"]}
    assert by["a"]["color"]["background"] == STATE_STYLES["sufficient"].fill
    assert by["b"]["color"]["background"] == STATE_STYLES["insufficient"].fill
    assert "<" not in by["q"]["label"] and "‹img" in by["q"]["label"]
    assert "&lt;img" in by["q"]["title"] and "<img" not in by["q"]["title"]
    assert by["q"]["tip"]["text"].startswith("Who <img")        # raw: rendered via textContent
    edges = {(e["from"], e["to"]): e for e in v["edges"]}
    assert edges[("q", "a")]["width"] > edges[("q", "b")]["width"]   # selected vs pruned path
    states = [row[0] for row in v["legend"]]
    assert "sufficient" in states and "insufficient" in states


def test_build_view_whatif_selected_badges_and_cap():
    tr = fold(crp_like())
    w = wi.apply(tr, wi.threshold_specs(tr)[0], 5.0)
    v = build_view(tr, whatif=w, selected="a", badges={"c": ["wrong_merge"]})
    by = {n["id"]: n for n in v["nodes"]}
    assert by["b"]["color"]["background"] == WHATIF_PASS.fill and "Δ" in by["b"]["label"]
    assert by["a"]["borderWidth"] == 5
    assert "⚑1" in by["c"]["label"]
    assert any(row[0] == "whatif_pass" for row in v["legend"])
    w2 = wi.apply(tr, wi.threshold_specs(tr)[0], 1.0)
    assert {n["id"]: n for n in build_view(tr, whatif=w2)["nodes"]}["a"]["color"]["background"] \
        == WHATIF_FAIL.fill
    capped = build_view(tr, max_nodes=3)
    assert len(capped["nodes"]) == 4 and capped["hidden"] == 2
    assert capped["nodes"][-1]["id"] == "__more__"


def test_mindmap_view_uses_tree_positions():
    tr = fold(crp_like())
    v = build_view(tr, view="mindmap")
    pos = {n["id"]: (n["x"], n["y"]) for n in v["nodes"]}
    assert pos["q"][1] < pos["a"][1] < pos["f"][1]


def test_llm_calls_emitted_before_their_node_are_attached():
    evs = [T.node_added("q", "question", "q"),
           T.Event(T.LLM_CALL, {"prompt": "p", "output": "Nolan", "latency_ms": 5.0,
                                "tokens": [[1, "Nolan", -0.2, None]], "prompt_tokens": 1,
                                "completion_tokens": 1, "scores": {"perplexity": 1.22}},
                   node_id="a", llm_call_id="c1"),
           T.node_added("a", "answer", "Nolan", parents=["q"]),
           T.answer("Nolan", node_id="a")]
    tr = fold(evs)
    assert tr.nodes["a"].llm_calls == ["c1"]        # the reducer links it when the node appears
    assert node_call_ids(tr, tr.nodes["a"]) == ["c1"]
    d = node_details(tr, "a")
    assert d["llm_calls"][0]["output"] == "Nolan"
    assert d["llm_calls"][0]["perplexity"] == pytest.approx(1.22)
    assert run_summary(tr)["final_perplexity"] == pytest.approx(1.22)


def test_node_details_evidence_rows_and_scores():
    hits = [{"id": "p1", "title": "T", "text": XSS[0], "retriever": "bm25", "score": 2.5,
             "rank": 1, "meta": {}}]
    evs = crp_like() + [T.Event(T.RETRIEVED, {"query": "who", "retriever": "bm25", "k": 1,
                                              "hits": hits}, node_id="a")]
    d = node_details(fold(evs), "a")
    assert d["evidence"][0]["rank"] == 1 and d["evidence"][0]["retriever"] == "bm25"
    assert d["queries"] == ["who"] and d["evidence"][0]["passage"] == ""
    kg_hit = {"id": "a|r|b", "title": "r", "text": "(a, r, b)", "retriever": "kg", "rank": 1,
              "meta": {"triple": ["a", "r", "b"], "sources": ["Page A", "Page B"]}}
    d_kg = node_details(fold(evs + [T.Event(T.RETRIEVED, {"query": "kg", "hits": [kg_hit]},
                                            node_id="a")]), "a")
    assert d_kg["evidence"][1]["passage"] == "Page A; Page B"
    sc = d["scores"][0]
    assert sc["threshold"] == 3.0 and sc["passes"] is True and sc["margin"] == -1.0


# ------------------------------------------------------------------ HTML: escaping, offline

def _no_live_markup(html: str) -> None:
    for payload in XSS:
        assert payload not in html
    assert not re.search(r"<img[^>]*onerror", html, re.I)
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", html, re.I)   # nothing remote


def test_graph_html_is_standalone_and_inert():
    tr = fold(crp_like())
    html = graph_html(build_view(tr))
    _no_live_markup(html)
    assert "Content-Security-Policy" in html and "vis.Network" in html


def test_standalone_export_carries_inspector_data_and_is_inert():
    evs = crp_like() + [
        T.Event(T.RETRIEVED, {"query": "q", "retriever": "bm25", "hits": [
            {"id": "p1", "title": XSS[1], "text": XSS[0], "retriever": "bm25", "score": 1.0,
             "rank": 1, "meta": {}}]}, node_id="a"),
        T.Event(T.LLM_CALL, {"prompt": XSS[0], "output": XSS[1], "latency_ms": 3.0,
                             "tokens": [[1, XSS[1], -0.1, None]], "scores": {}}, node_id="a",
                llm_call_id="c1"),
        T.answer(XSS[1], node_id="f")]
    clock = T.EventClock("r1")
    start = T.Event(T.RUN_STARTED, {"question": XSS[0], "method": "m", "config": {}})
    events = [clock.stamp(e).to_dict() for e in [start] + evs]
    export = {"run": {"run_id": "r1", "method": "m", "question": XSS[0], "answer": XSS[1]},
              "events": events, "annotations": [
                  {"target_kind": "node", "target_id": "a", "tags": ["wrong_merge"],
                   "note": XSS[0], "author": XSS[1]}]}
    html = standalone_html(export)
    _no_live_markup(html)
    m = re.search(r'<script id="wb-data" type="application/json">(.*?)</script>', html, re.S)
    data = json.loads(m.group(1))
    assert data["details"]["a"]["llm_calls"][0]["output"] == XSS[1]     # raw, shown as text
    assert data["details"]["a"]["evidence"][0]["text"] == XSS[0]
    assert data["annotations"][0]["tags"] == ["Wrong merge"]
    assert ".innerHTML" not in html[html.index("function wbTip"):]


def test_heatmap_escapes_and_colours_by_probability():
    html = token_heatmap_html([[1, XSS[0], -0.01, None], [2, " low", -3.0, 1.2], [3, "x", None, None]])
    _no_live_markup(html)
    assert "&lt;script&gt;" in html and html.count('class="wb-tok"') == 3
    rows = token_rows([[1, "a", 0.0, None]])
    assert rows[0]["prob"] == 1.0
    assert "no tokens" in token_heatmap_html([])


def test_safe_helpers():
    assert label_esc("<b>x</b>") == "‹b›x‹/b›"
    s = json_for_script({"t": "</script><script>alert(1)</script>"})
    assert "</script>" not in s and json.loads(s)["t"].startswith("</script>")
    md = md_escape("[link](javascript:alert(1)) <b> :red[x]")
    assert "\\[" in md and "\\<" in md and "\\:" in md


# ------------------------------------------------------------------ annotations

def test_taxonomy_merges_spec_categories():
    ids = set(A.TAGS)
    for needed in ("planning_error", "retrieval_error", "inference_error", "generation_error",
                   "wrong_merge", "premature_final", "verification_false_positive",
                   "verification_false_negative", "entity_linking_miss", "answer_lost"):
        assert needed in ids
    assert set(A.tags_by_group()) == set(A.GROUPS)
    assert A.validate(["wrong_merge", "wrong_merge"], "node") == ["wrong_merge"]
    with pytest.raises(ValueError):
        A.validate(["nope"])
    with pytest.raises(ValueError):
        A.validate(["wrong_merge"], "edge")


def test_annotation_export_csv_json_and_badges():
    rows = [{"id": "1", "run_id": "r", "target_kind": "path", "target_id": "pa",
             "tags": ["wrong_path"], "note": "=HYPERLINK(\"x\")", "author": "me", "created_at": 0.0},
            {"id": "2", "run_id": "r", "target_kind": "node", "target_id": "b",
             "tags": ["retrieval_miss"], "note": "n", "author": "", "created_at": 1.0}]
    out = list(csv.DictReader(io.StringIO(A.to_csv(rows))))
    assert out[0]["tags"] == "wrong_path" and out[0]["note"].startswith("'=")
    assert json.loads(A.to_json(rows))[1]["tag_labels"] == ["Retrieval miss (gold not in top-k)"]
    tr = fold(crp_like())
    badges = A.node_badges(rows, tr)
    assert badges["a"] == ["wrong_path"] and badges["b"] == ["retrieval_miss"]


def test_annotation_suggestions():
    evs = crp_like() + [T.node_added("x", "parse_failed", "bad", parents=["a"], state="parse_failed"),
                        T.answer("", refused=True, reason="no path")]
    tags = {(s["target_kind"], s["tag"]) for s in A.suggest(fold(evs))}
    assert ("node", "parse_failure") in tags and ("run", "over_refusal") in tags


# ------------------------------------------------------------------ KG neighbourhood

def _kg():
    g = nx.MultiDiGraph()
    g.add_node("hub", name="Hub " + XSS[0])
    for i in range(50):
        g.add_node(f"n{i}", name=f"Node {i}")
        g.add_edge(f"n{i}", "hub", relation="rel")
        g.add_edge(f"n{i}", f"m{i}", relation="deeper")
    return g


def test_kg_neighbourhood_is_capped_and_collapsible():
    g = _kg()
    assert kgview.search_entities(g, "hub")[0][0] == "hub"
    v = kgview.neighbourhood(g, ["hub"], hops=1, per_node=10, cap=100)
    more = [n for n in v["nodes"] if n["state"] == "more"]
    assert len(v["nodes"]) == 1 + 10 + 1 and more and more[0]["label"] == "+40 more"
    assert all("<" not in n["label"] for n in v["nodes"])
    v2 = kgview.neighbourhood(g, ["hub"], hops=2, per_node=10, cap=100)
    assert len(v2["nodes"]) > len(v["nodes"])
    first = v["ids"][v["nodes"][1]["id"]]
    v3 = kgview.neighbourhood(g, ["hub"], hops=1, per_node=10, cap=100, expanded=[first])
    assert any(n["plain"] == f"m{first[1:]}" or n["kg_node"] == f"m{first[1:]}" for n in v3["nodes"])
    assert len(kgview.neighbourhood(g, ["hub"], hops=2, per_node=60, cap=30)["nodes"]) <= 32
    assert kgview.as_networkx(None) is None
