"""What-if: an intervention on one node of a stored run re-runs exactly the calls downstream
of it behind CallReplay of the run's own calls; the rest replay; node ids carry over."""
from __future__ import annotations

import json
import time

import pytest

from workbench import config as cfgmod
from workbench import trace as T
from workbench.analysis.whatif import REFUSALS, WhatIfError, check, whatif
from workbench.cli import main
from workbench.knowledge.types import Hit
from workbench.llm.base import ModelInfo
from workbench.llm.scripted import ScriptedBackend
from workbench.methods import get_method
from workbench.methods.base import RunContext
from workbench.methods.embeddings import HashEmbedder
from workbench.methods.intervene import Intervention
from workbench.execution import execute
from workbench.store import Store

import tests.test_methods_kg_coggrag as TC
import tests.test_methods_text_crp as TCRP
import tests.test_methods_text_par as TP
from tests.kg_toy import question, toy_kg

Q = "Where was the director of Spirited Away born?"


class Passages:
    """Three fixed passages for any query (standard RAG's evidence)."""
    name = "bm25"

    def search(self, query, k=5):
        return [Hit(f"d{i}", f"Doc {i}", f"Passage {i} says {query}", "bm25", 1.0 / i, i)
                for i in range(1, 4)][:k]


def _rag_backend():
    be = ScriptedBackend()
    # the answer follows the first passage the prompt shows
    be.add("Passage 1 says", "Tokyo")
    be.add("Passage 2 says", "Kyoto")
    be.add("added text", "Osaka")
    return be.add("", "Nara")


# ---------------------------------------------------------------- harness

def original(st, name, be, ctx_kw, q, over=None):
    m = get_method(name)
    ctx = RunContext(llm=be, config=cfgmod.build(m.Config, over or {}), **ctx_kw())
    evs = list(execute(m, ctx, q, store=st))
    assert evs[-1].data["status"] in ("finished", "refused"), evs[-1].data
    return evs[0].run_id


def builder(ctx_kw):
    def build(run, llm, parent):
        m = get_method(run["method"])
        return m, RunContext(llm=llm, config=cfgmod.build(m.Config, run["config"]),
                             seed=run["seed"], **ctx_kw())
    return build


def fresh_set(res):
    return sorted((f["node"], f["purpose"]) for f in res.fresh)


def n_runs(st):
    return st.query("SELECT count(*) AS n FROM runs")[0]["n"]


RAG_KW = lambda: dict(retrievers={"bm25": Passages()}, dataset="toy")          # noqa: E731
PAR_KW = lambda: dict(retrievers={"dense": TP.TinyRetriever("dense"),          # noqa: E731
                                  "bm25": TP.TinyRetriever("bm25")},
                      embedder=HashEmbedder(), extra={"par_questions": TP.SEEDS})
CRP_KW = lambda: dict(retrievers={"dense": TCRP.TinyRetriever()},              # noqa: E731
                      embedder=TCRP.FakeEmbedder({"studio": [1, 0, 0, 0, 0, 0, 0, 0]}))


@pytest.fixture(scope="module")
def kg():
    return toy_kg()


@pytest.fixture
def st(tmp_path):
    return Store(tmp_path / "s.duckdb")


# ---------------------------------------------------------------- standard RAG

def test_standard_rag_drop_reruns_only_the_answer_and_is_stored_with_its_parent(st):
    rid = original(st, "standard-rag", _rag_backend(), RAG_KW, Q)
    parent = st.trace(rid)
    assert [n for n in parent.nodes] == ["q1", "r2", "a3"] and parent.answer["text"] == "Tokyo"
    be = _rag_backend()
    res = whatif(st, rid, Intervention("r2", drop=["d1"]), llm=be, build=builder(RAG_KW))
    assert fresh_set(res) == [("a3", "answer")] and len(be.calls) == 1
    assert res.replayed_calls == 0 and res.answer == "Kyoto" and res.answer_changed
    assert res.changed_nodes == ["r2", "a3"] and res.added_nodes == res.removed_nodes == []
    row = st.get_run(res.run_id)
    assert row["parent_run_id"] == rid and row["answer"] == "Kyoto"
    tr = st.trace(res.run_id)
    assert tr.meta["parent_run_id"] == rid
    assert tr.meta["intervention"]["drop"] == ["d1"]
    assert [h["id"] for h in tr.nodes["r2"].evidence[0]["hits"]] == ["d2", "d3"]
    applied = [e for e in tr.log if e["type"] == "intervention_applied"]
    assert applied and applied[0]["node_id"] == "r2"
    assert applied[0]["data"]["applied"][0]["dropped"] == ["d1"]
    # the fresh call is not marked replayed; the events end with run_finished
    call = tr.llm_calls[res.fresh_call_ids[0]]
    assert not call.get("replayed_from")
    assert st.events(res.run_id)[-1].type == T.RUN_FINISHED


def test_a_noop_intervention_replays_every_call(st):
    rid = original(st, "standard-rag", _rag_backend(), RAG_KW, Q)
    be = _rag_backend()
    res = whatif(st, rid, Intervention("r2"), llm=be, build=builder(RAG_KW))
    assert res.fresh_calls == 0 and be.calls == [] and res.replayed_calls == 1
    assert res.answer == "Tokyo" and not res.answer_changed and res.changed_nodes == []
    assert list(st.trace(res.run_id).nodes) == ["q1", "r2", "a3"]


def test_added_text_and_dataset_passage_and_replaced_query(st):
    rid = original(st, "standard-rag", _rag_backend(), RAG_KW, Q)
    res = whatif(st, rid, Intervention("r2", drop=["d1", "d2", "d3"], add=["added text"]),
                 llm=_rag_backend(), build=builder(RAG_KW))
    assert res.answer == "Osaka" and fresh_set(res) == [("a3", "answer")]
    hits = st.trace(res.run_id).nodes["r2"].evidence[0]["hits"]
    assert [(h["id"], h["retriever"]) for h in hits] == [("added:1", "added")]

    class P:
        id, title, text = "p9", "Nine", "Passage 2 says something"
    res = whatif(st, rid, Intervention("r2", drop=["d1"], add_ids=["p9"]), llm=_rag_backend(),
                 build=builder(RAG_KW), passage={"p9": P}.get)
    assert [h["id"] for h in st.trace(res.run_id).nodes["r2"].evidence[0]["hits"]] == \
        ["d2", "d3", "p9"]
    with pytest.raises(WhatIfError, match="no passage nope"):
        whatif(st, rid, Intervention("r2", add_ids=["nope"]), llm=_rag_backend(),
               build=builder(RAG_KW), passage={"p9": P}.get)
    res = whatif(st, rid, Intervention("r2", step="another query"), llm=_rag_backend(),
                 build=builder(RAG_KW))
    assert st.trace(res.run_id).nodes["r2"].text == "another query"
    assert fresh_set(res) == [("a3", "answer")]


# ---------------------------------------------------------------- CRP-RAG

def _crp(plan=TCRP.DIAMOND):
    return TCRP.make_backend(plan, {})


def test_crp_rag_evidence_verdict_and_step_rerun_only_downstream_calls(st):
    # both answer paths reasoned and integrated, so a verdict that prunes one leaves the
    # other's calls to replay
    rid = original(st, "crp-rag", _crp(), CRP_KW, TCRP.Q, {"max_answer_paths": 3})
    parent = st.trace(rid)
    a = next(n.id for n in parent.nodes.values() if n.text == TCRP.A)
    b = next(n.id for n in parent.nodes.values() if n.text == TCRP.B)
    assert (a, b) == ("v2", "v3")
    total = len(parent.llm_calls)
    # drop a passage of A: A's aggregation re-runs; its summary (scripted: the step only) is
    # the same, so nothing below it changes and every other call replays
    res = whatif(st, rid, Intervention(a, drop=["d1"]), llm=_crp(), build=builder(CRP_KW))
    assert fresh_set(res) == [(a, "aggregate")]
    assert res.replayed_calls + res.reused_calls == total - 1
    # force A insufficient: the paths through A are pruned, the one through B answers alone;
    # its calls replay, and only the span extraction of its (new) answer runs
    res = whatif(st, rid, Intervention(a, verdict="insufficient"), llm=_crp(),
                 build=builder(CRP_KW))
    assert fresh_set(res) == [("x5", "answer_span")]
    tr = st.trace(res.run_id)
    assert tr.nodes[a].state == "insufficient" and parent.nodes[a].state == "sufficient"
    assert all(a not in p["nodes"] for p in tr.paths.values() if p["state"] == "selected")
    assert res.answer != res.parent_answer and set(res.changed_nodes) >= {a, "a6"}
    # a new step text for B: B's proposals re-run (and the merge of its child); A's do not
    plan = dict(TCRP.DIAMOND)
    plan["Find the 2001 films."] = plan[TCRP.B]
    res = whatif(st, rid, Intervention(b, step="Find the 2001 films."), llm=_crp(plan),
                 build=builder(CRP_KW))
    tr = st.trace(res.run_id)
    assert tr.nodes[b].text == "Find the 2001 films."
    assert tr.nodes[a].text == TCRP.A and tr.nodes["v1"].kind == "question"
    fresh = fresh_set(res)
    assert (b, "generate") in {(n, p.split(":")[0]) for n, p in fresh} or \
        any(n == b for n, _ in fresh)
    assert not any(n == a for n, _ in fresh)           # A is upstream of nothing B changed
    assert 0 < res.fresh_calls < len(tr.llm_calls)


# ---------------------------------------------------------------- PAR-RAG

def _par():
    return TP.make_backend(TP.TWO_STEPS)


def test_par_rag_late_drop_reruns_the_step_read_review_and_final(st):
    rid = original(st, "par-rag", _par(), PAR_KW, TP.Q)
    parent = st.trace(rid)
    assert [n.id for n in parent.nodes.values() if n.kind == "retrieval"] == ["r7", "r11"]
    res = whatif(st, rid, Intervention("r11", drop=["dense1"]), llm=_par(),
                 build=builder(PAR_KW))
    # the read of step 2 cites [1], now dense2: the review and the final answer see it
    assert fresh_set(res) == [("a15", "final"), ("rd12", "read"), ("vf13", "attribution"),
                              ("vf13", "judge")]
    assert res.replayed_calls == len(parent.llm_calls) - 4
    assert list(st.trace(res.run_id).nodes) == list(parent.nodes)


def test_par_rag_forced_failed_review_adds_a_revision_and_later_nodes_keep_their_ids(st):
    rid = original(st, "par-rag", _par(), PAR_KW, TP.Q)
    parent = st.trace(rid)
    res = whatif(st, rid, Intervention("vf9", verdict="fail"), llm=_par(),
                 build=builder(PAR_KW))
    tr = st.trace(res.run_id)
    assert tr.nodes["vf9"].state == "failed_verification"
    # the revision (sparse retrieval and a second read) is new; step 2's nodes keep their ids
    assert res.added_nodes == ["r10", "rd11", "tj12"] and res.removed_nodes == ["tj10"]
    for nid in ("r11", "rd12", "vf13", "tj14", "a15"):
        assert tr.nodes[nid].kind == parent.nodes[nid].kind
        assert tr.nodes[nid].text == parent.nodes[nid].text
    assert tr.nodes["r11"].parents == ["s6"]
    # only the revision's read and the final answer ran; step 2 replayed
    assert fresh_set(res) == [("a15", "final"), ("rd11", "read")]
    assert not any(n.startswith(("r13", "rd14")) for n in tr.nodes)
    # a step text replaces the refined question: only the refinement call itself re-runs
    res = whatif(st, rid, Intervention("s6", step=TP.REFINED), llm=_par(),
                 build=builder(PAR_KW))
    assert fresh_set(res) == [("s6", "refine")]


# ---------------------------------------------------------------- CogGRAG

def _cog_kw(kg):
    return lambda: dict(kg=kg, embedder=TC.BowEmbedder(), gold=question("t2"))


def test_coggrag_verdict_and_dropped_triple_rerun_the_reasoning_above(st, kg):
    kw = _cog_kw(kg)
    rid = original(st, "coggrag", TC._backend(), kw, TC.ROOT_Q)
    parent = st.trace(rid)
    # forced fail of 0.1's review: its re-think runs, then the root's reasoning over it
    res = whatif(st, rid, Intervention("0.1", verdict="fail"), llm=TC._backend(),
                 build=builder(kw))
    assert fresh_set(res) == [("0", "reason"), ("0", "verify"), ("0.1", "rethink")]
    assert st.trace(res.run_id).nodes["0.1"].attrs.get("rethought") is True
    # a dropped kept triple: every reasoning call that saw it re-runs; decomposition and key
    # extraction replay
    kept = [h["id"] for e in parent.nodes["kg"].evidence for h in e["hits"]
            if h["meta"]["kept"]]
    res = whatif(st, rid, Intervention("kg", drop=kept[:1]), llm=TC._backend(),
                 build=builder(kw))
    assert {p for _, p in fresh_set(res)} == {"reason", "verify"}
    assert not {p for _, p in fresh_set(res)} & {"decompose", "keys_local", "keys_global"}
    child = st.trace(res.run_id)
    assert list(child.nodes) == list(parent.nodes)
    # the counterfactual's retrieval shows what it reasoned over: the dropped triple listed,
    # no longer kept, and the side-by-side view calls it dropped
    hits = {h["id"]: h for e in child.nodes["kg"].evidence for h in e["hits"]}
    assert hits[kept[0]]["meta"]["kept"] is False
    assert hits[kept[0]]["meta"]["whatif"] == "dropped"
    assert all(hits[k]["meta"]["kept"] for k in kept[1:])
    child_kept = [h for e in child.nodes["kg"].evidence for h in e["hits"] if h["meta"]["kept"]]
    assert len(child_kept) == len(kept) - 1
    from workbench.analysis import diff as D
    from workbench.ui.whatif_view import changed_evidence
    rows = changed_evidence(D.diff_runs(parent, child), parent, child)
    assert [(r["node"], r["change"]) for r in rows if r["node"] == "kg"] == [
        ("kg", "dropped (original only)")]
    # an added passage shows as added, after the candidates
    res = whatif(st, rid, Intervention("kg", add=["Tova Lind was born in Port Amsel."]),
                 llm=TC._backend(), build=builder(kw))
    hits = [h for e in st.trace(res.run_id).nodes["kg"].evidence for h in e["hits"]]
    assert hits[-1]["meta"]["whatif"] == "added" and hits[-1]["meta"]["kept"]
    # the inspector's evidence table says so
    from workbench.ui.inspector import found
    from workbench.viz.inspect import evidence_rows
    rows = evidence_rows(st.trace(res.run_id).nodes["kg"])
    assert found(rows[-1], False).endswith("added by the what-if")
    rows = evidence_rows(child.nodes["kg"])
    assert [found(r, False).endswith("dropped by the what-if") for r in rows].count(True) == 1
    # a no-op replays all
    res = whatif(st, rid, Intervention("0.2"), llm=TC._backend(), build=builder(kw))
    assert res.fresh_calls == 0 and res.fresh_scores == 0


# ---------------------------------------------------------------- FRAG

def test_frag_dropped_path_reruns_the_one_reasoning_call(st, kg):
    q = question("t2")
    kw = lambda: dict(kg=kg, gold=q)           # noqa: E731
    rid = original(st, "frag", ScriptedBackend(default="Port Amsel"), kw, q.question,
                   {"ranker": "tfidf", "estimator": "heuristic"})
    be = ScriptedBackend(default="Port Amsel")
    res = whatif(st, rid, Intervention("st:rerank", drop=["p:1"]), llm=be, build=builder(kw))
    assert fresh_set(res) == [("reason", "answer")]
    assert "p:1" not in be.calls[0]["prompt"].split("\n")[0] and res.correct is True
    assert "Glass Harbor" in be.calls[0]["prompt"]
    # the counterfactual's path list shows the dropped path, no longer kept
    hits = {h["id"]: h for e in st.trace(res.run_id).nodes["st:rerank"].evidence
            for h in e["hits"]}
    assert hits["p:1"]["meta"]["kept"] is False and hits["p:1"]["meta"]["whatif"] == "dropped"
    assert all(h["meta"].get("kept", True) for k, h in hits.items() if k != "p:1")
    res = whatif(st, rid, Intervention("st:rerank", add=["Tova Lind lives in Glass Harbor."]),
                 llm=be, build=builder(kw))
    hits = [h for e in st.trace(res.run_id).nodes["st:rerank"].evidence for h in e["hits"]]
    assert hits[-1]["meta"] == {"whatif": "added"} and "Tova Lind" in hits[-1]["text"]
    with pytest.raises(WhatIfError, match="cannot take a verdict intervention on node reason"):
        whatif(st, rid, Intervention("reason", verdict="pass"), llm=be, build=builder(kw))


# ---------------------------------------------------------------- bad input

def test_bad_input_is_one_clear_error_and_writes_nothing(st):
    rid = original(st, "standard-rag", _rag_backend(), RAG_KW, Q)
    crp = original(st, "crp-rag", _crp(), CRP_KW, TCRP.Q)
    before = n_runs(st)
    cases = [
        (rid.replace("run_", "run_x"), Intervention("r2"), RAG_KW, "no run", "unknown_run"),
        (rid, Intervention("v9"), RAG_KW, "has no node 'v9'; its nodes: q1, r2, a3",
         "unknown_node"),
        (rid, Intervention("r2", drop=["d7"]), RAG_KW, "no evidence d7; its evidence ids: d1",
         "unknown_evidence"),
        (rid, Intervention("a3", drop=["d1"]), RAG_KW, "retrieved no evidence", "no_evidence"),
        (rid, Intervention("r2", verdict="sufficient"), RAG_KW,
         "standard-rag cannot take a verdict intervention on node r2", "not_applicable"),
        (rid, Intervention("q1", step="x"), RAG_KW, "nodes that take one: r2",
         "not_applicable"),
        (rid, Intervention("r2", verdict="maybe"), RAG_KW, "unknown verdict",
         "unknown_verdict"),
        (rid, Intervention("r2", step="  "), RAG_KW, "blank", "blank_text"),
        (rid, Intervention("r2", add_ids=["p9999"]), RAG_KW, "has no passage p9999",
         "unknown_passage"),
        (crp, Intervention("v2", verdict="pass"), CRP_KW,
         "node v2 has a sufficiency verdict (sufficient/insufficient), not 'pass'",
         "not_applicable"),
        (crp, Intervention("v1", verdict="insufficient"), CRP_KW, "produces no verdict",
         "not_applicable"),
    ]
    for run_id, iv, kw, msg, code in cases:
        with pytest.raises(WhatIfError) as e:
            whatif(st, run_id, iv, llm=_crp() if kw is CRP_KW else _rag_backend(),
                   build=builder(kw), passage=lambda pid: None)
        assert msg in str(e.value) and "\n" not in str(e.value), (msg, str(e.value))
        assert e.value.code == code and code in REFUSALS, (msg, e.value.code)
    # another model: refused, both named
    other = _rag_backend()
    other.info = ModelInfo(name="other-model", backend="scripted", sha256="f" * 64)
    with pytest.raises(WhatIfError, match="made with model scripted .* but other-model") as e:
        whatif(st, rid, Intervention("r2", drop=["d1"]), llm=other, build=builder(RAG_KW))
    assert e.value.code == "other_model"
    assert n_runs(st) == before


def test_an_interrupted_run_has_incomplete_calls_and_is_refused(st):
    m = get_method("standard-rag")
    ctx = RunContext(llm=_rag_backend(), config=cfgmod.build(m.Config, {}), **RAG_KW())
    gen = execute(m, ctx, Q, store=st)
    rid = next(gen).run_id
    next(gen)
    gen.close()
    assert st.get_run(rid)["status"] == "interrupted"
    with pytest.raises(WhatIfError, match="interrupted.*incomplete"):
        check(st, rid, Intervention("q1"))
    # a finished run whose stored call lost its output is incomplete too
    rid = original(st, "standard-rag", _rag_backend(), RAG_KW, Q)
    st.execute("UPDATE events SET data = json_object('purpose', 'answer') "
               "WHERE run_id = ? AND type = 'llm_call'", [rid])
    with pytest.raises(WhatIfError, match="without prompt or output"):
        check(st, rid, Intervention("r2"))


# ---------------------------------------------------------------- store and CLI

def test_an_old_store_migrates_to_v7_with_a_null_parent_run_id(tmp_path):
    import duckdb

    from workbench.store import _MIGRATIONS
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))          # a store as version 6 made it
    for v in range(1, 7):
        for sql in _MIGRATIONS[v]:
            con.execute(sql)
    con.execute("INSERT INTO meta VALUES ('schema_version', '6')")
    con.execute("INSERT INTO runs (run_id, question, status) VALUES ('run_old', 'q', "
                "'finished')")
    con.close()
    st = Store(path)
    assert st.schema_version() == 7
    assert st.get_run("run_old")["parent_run_id"] is None


def test_cli_whatif_prints_a_summary_and_a_json_last_line(monkeypatch, capsys):
    from workbench.workspace import build_context
    st = Store()
    m, ctx = build_context("standard-rag", llm=_rag_backend(), dataset="demo",
                           overrides={"retriever": "bm25", "top_k": 2})
    rid = list(execute(m, ctx, Q, store=st))[0].run_id
    parent = st.trace(rid)
    first = parent.nodes["r2"].evidence[0]["hits"][0]["id"]
    monkeypatch.setattr("workbench.commands.whatif.backend_from_args",
                        lambda args: _rag_backend())
    assert main(["whatif", rid, "--node", "r2", "--drop", first, "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("what-if run ") and f"of run {rid}" in out[0]
    js = json.loads(out[-1])
    assert js["parent_run_id"] == rid and js["fresh_calls"] == 1
    assert js["replayed_calls"] == 0 and js["fresh_calls"] + js["replayed_calls"] == 1
    assert st.get_run(js["run_id"])["parent_run_id"] == rid
    # bad input: one line on stderr, exit 2, before any model loads
    monkeypatch.setattr("workbench.commands.whatif.backend_from_args",
                        lambda args: pytest.fail("the model must not load"))
    assert main(["whatif", rid, "--node", "r2", "--drop", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: node r2 has no evidence nope")
    # with --json the refusal's code comes last on stdout too, for scripts
    assert main(["whatif", rid, "--node", "r2", "--drop", "nope", "--json"]) == 2
    cap = capsys.readouterr()
    js = json.loads(cap.out.strip().splitlines()[-1])
    assert js["error"] == "unknown_evidence" and js["message"].startswith("node r2 has no")
    assert main(["attribute", rid, "--node", "q1", "--json"]) == 2
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["error"] == "no_evidence"


# ---------------------------------------------------------------- real model

CRP_SMALL = {"retriever": "bm25", "samples_per_sink": 1, "max_iterations": 1, "max_nodes": 3,
             "top_k": 2, "gen_max_tokens": 40, "summary_max_tokens": 40, "eval_max_tokens": 12,
             "step_max_tokens": 16, "answer_max_tokens": 40}


def test_a_real_model_whatif_on_crp_rag_reruns_fewer_calls_than_the_run(default_llm):
    from workbench.datasets import load_dataset
    from workbench.workspace import build_context
    try:
        ds = load_dataset("demo")
    except (LookupError, FileNotFoundError, ValueError) as e:
        pytest.skip(f"demo world not available: {e}")
    qid = next(q.id for q in ds.questions if (q.hops or 0) >= 2 and q.answers)
    st = Store()
    m, ctx = build_context("crp-rag", llm=default_llm, dataset="demo", overrides=CRP_SMALL,
                           question_id=qid)
    rid = list(execute(m, ctx, ds.question(qid).question, store=st,
                       question_id=qid))[0].run_id
    parent = st.trace(rid)
    assert parent.status in ("finished", "refused"), parent.summary
    # the last node that retrieved: drop its first passage
    node = [n for n in parent.nodes.values() if n.evidence][-1]
    first = node.evidence[0]["hits"][0]["id"]
    res = whatif(st, rid, Intervention(node.id, drop=[first]), llm=default_llm)
    total = res.fresh_calls + res.replayed_calls + res.reused_calls
    assert 0 < res.fresh_calls < total, res.summary()
    assert res.replayed_calls > 0
    row = st.get_run(res.run_id)
    assert row["parent_run_id"] == rid and row["status"] in ("finished", "refused")
    assert row["answer"] == res.answer
    tr = st.trace(res.run_id)
    assert first not in [h["id"] for e in tr.nodes[node.id].evidence for h in e["hits"]]
    # every node made before the intervened one keeps its id and text
    for nid in list(parent.nodes)[:list(parent.nodes).index(node.id)]:
        assert tr.nodes[nid].text == parent.nodes[nid].text


# one small run per method family with the small bundled model: each takes one intervention
# (the first evidence item of the last node with evidence dropped) and one attribution of
# that node (the item left out, Δ log P of the original answer scored by the model)
FAMILIES = {
    "crp-rag": CRP_SMALL,
    "par-rag": {"dense_retriever": "bm25", "top_k": 2, "max_plan_steps": 2,
                "passage_chars": 300, "complexity_estimator": "manual", "manual_hops": 2},
    # the small settings of tests/test_methods_kg_real.py, fewer triples and no
    # self-verification (the KG evidence sits before all reasoning, so each re-run redoes it)
    "coggrag": {"max_level": 1, "max_children": 2, "max_items": 2, "local_extraction": "batched",
                "max_tokens_decompose": 100, "max_tokens_extract": 100, "max_tokens_reason": 64,
                "k_max": 10, "verification": False},
    "frag": {"path_top_u": 8},
    "standard-rag": {"retriever": "bm25", "top_k": 2},
}


@pytest.mark.parametrize("name", list(FAMILIES))
def test_a_real_model_intervention_and_attribution_per_method_family(name, default_llm):
    from workbench.analysis.attribute import LOO, attribute
    from workbench.datasets import load_dataset
    from workbench.workspace import build_context
    try:
        ds = load_dataset("demo")
    except (LookupError, FileNotFoundError, ValueError) as e:
        pytest.skip(f"demo world not available: {e}")
    q = next(q for q in ds.questions if (q.hops or 0) >= 2 and q.answers)
    st = Store()
    m, ctx = build_context(name, llm=default_llm, dataset="demo", overrides=FAMILIES[name],
                           question_id=q.id)
    rid = list(execute(m, ctx, q.question, store=st, question_id=q.id))[0].run_id
    parent = st.trace(rid)
    if parent.status not in ("finished", "refused"):
        pytest.skip(f"{name} did not finish on the small model: {parent.summary}")
    node = [n for n in parent.nodes.values() if n.evidence and
            [h for e in n.evidence for h in e.get("hits", [])]][-1]
    from workbench.analysis.whatif import node_evidence_ids
    first = node_evidence_ids(node)[0]
    res = whatif(st, rid, Intervention(node.id, drop=[first]), llm=default_llm)
    total = res.fresh_calls + res.replayed_calls + res.reused_calls
    assert total >= 1 and res.fresh_calls <= total, res.summary()
    assert st.get_run(res.run_id)["parent_run_id"] == rid
    # nodes made before the intervened one keep their ids and texts
    child = st.trace(res.run_id)
    for nid in list(parent.nodes)[:list(parent.nodes).index(node.id)]:
        assert child.nodes[nid].text == parent.nodes[nid].text
    # one attribution variant: that node's first item left out, scored against the answer
    att = attribute(st, rid, node.id, llm=default_llm, limit=1)
    assert [e.evidence_id for e in att.items] == [first] and att.estimator == LOO
    assert att.answer_logprob is not None           # the real backend scores text
    assert att.items[0].delta_logprob is not None
    # the same drop as the what-if above: the same answer
    assert att.items[0].answer == res.answer


# ---------------------------------------------------------------- attribution

def test_attribute_leaves_each_item_out_and_then_all(st, monkeypatch, capsys):
    from workbench.analysis.attribute import attribute
    rid = original(st, "standard-rag", _rag_backend(), RAG_KW, Q)
    before = n_runs(st)
    res = attribute(st, rid, "r2", llm=_rag_backend(), build=builder(RAG_KW))
    assert [e.evidence_id for e in res.items] == ["d1", "d2", "d3"]
    # the answer follows the first passage shown: only dropping d1 changes it
    assert [e.answer_changed for e in res.items] == [True, False, False]
    assert [e.answer for e in res.items] == ["Kyoto", "Tokyo", "Tokyo"]
    assert res.drop_all.answer == "Nara" and res.drop_all.answer_changed
    assert res.fresh_calls == 4 and n_runs(st) == before          # nothing stored
    with pytest.raises(WhatIfError, match="kept no evidence"):
        attribute(st, rid, "a3", llm=_rag_backend(), build=builder(RAG_KW))
    res = attribute(st, rid, "r2", llm=_rag_backend(), build=builder(RAG_KW), write=True,
                    limit=1)
    assert len(res.items) == 1 and res.drop_all is None and n_runs(st) == before + 1


def test_ircot_new_thought_text_reruns_only_the_steps_after_it(st):
    def backend():
        be = ScriptedBackend()
        be.add("Hayao Miyazaki directed it", "So the answer is: Tokyo")
        return be.add("", "So the answer is: Kyoto")
    rid = original(st, "ircot", backend(), RAG_KW, Q)
    parent = st.trace(rid)
    assert list(parent.nodes) == ["q1", "r2", "t3", "a4"] and parent.answer["text"] == "Kyoto"
    res = whatif(st, rid, Intervention("t3", step="Hayao Miyazaki directed it."),
                 llm=backend(), build=builder(RAG_KW))
    tr = st.trace(res.run_id)
    # t3's own call replays; the loop goes on with the new thought: a retrieval and a step
    assert fresh_set(res) == [("t5", "cot")] and res.replayed_calls == 1
    assert [tr.nodes[n].kind for n in tr.nodes] == ["question", "retrieval", "thought",
                                                   "retrieval", "thought", "answer"]
    assert tr.nodes["r4"].text == "Hayao Miyazaki directed it." and res.answer == "Tokyo"
    res = whatif(st, rid, Intervention("r2", drop=["d1"]), llm=backend(), build=builder(RAG_KW))
    assert fresh_set(res) == [("t3", "cot")]


def test_a_run_of_an_eval_replays_with_its_evaluation_level_knobs(st):
    from tests.test_eval_helpers import ToyDataset, answer_rules, toy_methods
    from workbench.analysis.whatif import with_eval_knobs
    from workbench.eval.runner import EvalRunner, EvalSpec
    spec = EvalSpec(dataset="toy", methods=["toy-llm"], judge="off", limit=1,
                    sets={"idk_prompt": True})
    r = EvalRunner.new(st, spec, backend=ScriptedBackend.from_table(answer_rules()),
                       dataset=ToyDataset(), method_classes=toy_methods())
    assert r.run().status == "finished"
    rid = st.query("SELECT run_id FROM runs WHERE eval_id = ?", [r.eval_id])[0]["run_id"]
    assert st.get_run(rid)["config"]["_eval"] == {"idk_prompt": True}

    def build(apply):
        def b(run, llm, parent):
            m = toy_methods()[run["method"]]()
            cfg = {k: v for k, v in run["config"].items() if not k.startswith("_")}
            ctx = RunContext(llm=llm, config=cfgmod.build(m.Config, cfg), seed=run["seed"])
            return m, (with_eval_knobs(run, ctx, passages=[]) if apply else ctx)
        return b
    node = next(iter(st.trace(rid).nodes))
    be = ScriptedBackend.from_table(answer_rules())
    res = whatif(st, rid, Intervention(node), llm=be, build=build(True), write=False)
    assert res.fresh_calls == 0 and res.replayed_calls >= 1 and be.calls == []
    # without the eval's "I don't know" instruction the prompts differ: nothing replays
    res = whatif(st, rid, Intervention(node), llm=be, build=build(False), write=False)
    assert res.replayed_calls == 0 and res.fresh_calls >= 1


def test_attribution_scores_the_original_answer_in_each_variant_without_generating(st):
    """Δ log P: the original answer call's output, teacher-forced in each variant's answer
    prompt, minus the same in the original; it moves with the evidence the answer rests on
    even where the generated answer would not, and it costs scorings, not generations."""
    from workbench.analysis.attribute import attribute

    def backend():
        be = ScriptedBackend()
        be.add("Passage 1 says", "Tokyo", logprob=-0.1)     # the original's first passage
        be.add("Passage 2 says", "Kyoto", logprob=-3.0)
        return be.add("", "Nara", logprob=-5.0)
    rid = original(st, "standard-rag", backend(), RAG_KW, Q)
    be = backend()
    res = attribute(st, rid, "r2", llm=be, build=builder(RAG_KW))
    assert res.scored_output == "Tokyo" and res.answer_logprob is not None
    deltas = {e.evidence_id: e.delta_logprob for e in res.items}
    assert deltas["d1"] < 0 and deltas["d2"] == deltas["d3"] == 0.0, deltas
    assert res.drop_all.delta_logprob < deltas["d1"] < 0
    assert "Δ log P" in res.summary() and f"{deltas['d1']:+.2f}" in res.summary()


def _scored_rag_backend():
    be = ScriptedBackend()
    be.add("Passage 1 says", "Tokyo", logprob=-0.1)     # the answer rests on d1, then d2
    be.add("Passage 2 says", "Kyoto", logprob=-3.0)
    return be.add("", "Nara", logprob=-5.0)


def test_many_items_get_random_ablations_and_a_linear_surrogate(st, monkeypatch, capsys):
    """Above loo_max items: random ablations, each a replayed what-if, and least squares on
    the original answer's Δ log P; the weights rank the items the answer rests on, and the
    result says which estimator made them."""
    from workbench.analysis.attribute import LOO, SURROGATE, attribute
    rid = original(st, "standard-rag", _scored_rag_backend(), RAG_KW, Q)
    before = n_runs(st)
    res = attribute(st, rid, "r2", llm=_scored_rag_backend(), build=builder(RAG_KW),
                    loo_max=2, samples=24, seed=3)
    assert res.estimator == SURROGATE and res.samples == 24 and res.drop_all is None
    w = {e.evidence_id: e.weight for e in res.items}
    assert list(w) == ["d1", "d2", "d3"]
    assert w["d1"] > w["d2"] > abs(w["d3"]) and abs(w["d3"]) < 0.5, w
    assert res.fit_r2 is not None and 0.5 < res.fit_r2 <= 1.0
    assert n_runs(st) == before
    assert f"{SURROGATE} over 24 random ablations" in res.summary()
    # at or below loo_max: one re-run per item, as before
    res = attribute(st, rid, "r2", llm=_scored_rag_backend(), build=builder(RAG_KW), loo_max=3)
    assert res.estimator == LOO and res.samples == 0 and len(res.items) == 3
    # the CLI: --loo-max and --samples, the estimator in the JSON line
    monkeypatch.setattr("workbench.commands.whatif.backend_from_args",
                        lambda args: _scored_rag_backend())
    monkeypatch.setattr("workbench.analysis.attribute.whatif",
                        _with_build(builder(RAG_KW)))
    rid = original(Store(), "standard-rag", _scored_rag_backend(), RAG_KW, Q)   # the CLI's
    assert main(["attribute", rid, "--node", "r2", "--loo-max", "2", "--samples", "8",
                 "--json"]) == 0
    js = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert js["estimator"] == SURROGATE and js["samples"] == 8


def test_variants_run_together_batch_their_fresh_calls_and_read_the_same(st, capsys,
                                                                          monkeypatch):
    """--together K: K variants at once on threads, their fresh calls gathered into one
    generate_many (as an eval's items together); with a deterministic backend every effect
    is what the one-at-a-time run gives, in the same order."""
    from workbench.analysis.attribute import attribute, attribute_path

    class Counting(ScriptedBackend):
        def __init__(self):
            super().__init__()
            self.batches: list[int] = []

        def generate(self, *a, **kw):
            # a call takes a while, as a model's does: the other variants' calls queue up
            # behind the first one meanwhile, and go to the model as one batch after it
            time.sleep(0.2)
            return super().generate(*a, **kw)

        def generate_many(self, requests, **kw):
            self.batches.append(len(requests))
            return [super(Counting, self).generate(r.messages, r.params) for r in requests]

    def backend():
        be = Counting()
        be.add("Passage 1 says", "Tokyo", logprob=-0.1)
        be.add("Passage 2 says", "Kyoto", logprob=-3.0)
        return be.add("", "Nara", logprob=-5.0)
    rid = original(st, "standard-rag", backend(), RAG_KW, Q)
    alone = attribute(st, rid, "r2", llm=backend(), build=builder(RAG_KW))
    be = backend()
    together = attribute(st, rid, "r2", llm=be, build=builder(RAG_KW), together=4)
    assert together.together == 4 and alone.together == 1
    assert [e.evidence_id for e in together.items] == ["d1", "d2", "d3"]
    key = [(e.evidence_id, e.answer, e.answer_changed, e.delta_logprob, e.fresh_calls)
           for e in alone.items + [alone.drop_all]]
    assert [(e.evidence_id, e.answer, e.answer_changed, e.delta_logprob, e.fresh_calls)
            for e in together.items + [together.drop_all]] == key
    assert (together.fresh_calls, together.replayed_calls) == (alone.fresh_calls,
                                                              alone.replayed_calls)
    assert be.batches and max(be.batches) > 1, be.batches     # calls shared a batch
    assert "4 at a time" in together.summary()
    path = attribute_path(st, rid, llm=backend(), build=builder(RAG_KW), together=2)
    assert path.together == 1                 # one node on the path: nothing to run beside it
    # the CLI passes --together on
    monkeypatch.setattr("workbench.commands.whatif.backend_from_args", lambda args: backend())
    monkeypatch.setattr("workbench.analysis.attribute.whatif", _with_build(builder(RAG_KW)))
    rid = original(Store(), "standard-rag", backend(), RAG_KW, Q)     # the CLI's store
    assert main(["attribute", rid, "--node", "r2", "--together", "2", "--json"]) == 0
    js = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert js["together"] == 2 and [i["answer"] for i in js["items"]] == ["Kyoto", "Tokyo",
                                                                          "Tokyo"]


def _with_build(build):
    from workbench.analysis import whatif as W

    def call(store, run_id, iv, **kw):
        kw["build"] = kw.get("build") or build
        return W.whatif(store, run_id, iv, **kw)
    return call


def test_answer_path_attribution_names_the_nodes_the_answer_depends_on(st, monkeypatch,
                                                                       capsys):
    """Standard RAG: without its one retrieval the answer changes. CRP-RAG's diamond: the
    answer path is the nodes with evidence that the answer descends from, one what-if each,
    most of whose calls replay."""
    from workbench.analysis.attribute import answer_path, attribute_path
    rid = original(st, "standard-rag", _scored_rag_backend(), RAG_KW, Q)
    tr = st.trace(rid)
    assert answer_path(tr) == ["r2"]
    res = attribute_path(st, rid, llm=_scored_rag_backend(), build=builder(RAG_KW))
    assert [n.node for n in res.nodes] == ["r2"] and res.nodes[0].items == 3
    assert res.depends_on() == ["r2"] and res.nodes[0].effect.answer == "Nara"
    assert res.nodes[0].effect.delta_logprob < 0
    crp = original(st, "crp-rag", _crp(), CRP_KW, TCRP.Q)
    ctr = st.trace(crp)
    path = answer_path(ctr)
    with_ev = [n for n in ctr.nodes if ctr.nodes[n].evidence]
    assert path and set(path) <= set(with_ev) and "v2" in path
    res = attribute_path(st, crp, llm=_crp(), build=builder(CRP_KW))
    assert [n.node for n in res.nodes] == path
    assert res.fresh_calls > 0 and res.replayed_calls > res.fresh_calls
    assert "the answer depends on" in res.summary()
    # CLI: --answer-path and --node are one or the other
    monkeypatch.setattr("workbench.commands.whatif.backend_from_args",
                        lambda args: _scored_rag_backend())
    monkeypatch.setattr("workbench.analysis.attribute.whatif", _with_build(builder(RAG_KW)))
    rid = original(Store(), "standard-rag", _scored_rag_backend(), RAG_KW, Q)   # the CLI's
    assert main(["attribute", rid, "--answer-path", "--json"]) == 0
    js = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert js["nodes"][0]["node"] == "r2" and js["nodes"][0]["effect"]["answer_changed"]
    with pytest.raises(SystemExit):
        main(["attribute", rid, "--answer-path", "--node", "r2"])


def test_the_answer_path_is_triages_less_paths_not_selected():
    """Attribution of the answer's path and failure triage read one path: a node on an
    answer path the method did not select (CRP-RAG prunes paths through insufficient
    nodes) is not part of it, although the answer node descends from it."""
    from workbench import trace as T
    from workbench.analysis.attribute import answer_path

    def hits(node, *ids):
        return T.Event(T.RETRIEVED, {"query": "q", "retriever": "dense", "k": 2, "hits": [
            {"id": i, "title": i, "text": "t", "retriever": "dense", "score": 1.0,
             "rank": n} for n, i in enumerate(ids, 1)]}, node_id=node)
    evs = [T.node_added("v1", "question", "q"),
           T.node_added("v2", "step", "a", parents=["v1"]),
           hits("v2", "p1", "p2"),
           T.node_added("v3", "step", "b", parents=["v1"]),
           hits("v3", "p3"),
           T.path_event("path0", ["v1", "v2"], "selected"),
           T.path_event("path1", ["v1", "v3"], "pruned"),
           T.node_added("x", "answer", "A", parents=["v2", "v3"]),
           T.answer("A", node_id="x")]
    tr = T.Trace.fold(evs)
    assert tr.answer_path() == ["v1", "v2", "x"]
    assert answer_path(tr) == ["v2"]
    # no selected path at all: every ancestor with evidence
    tr = T.Trace.fold([e for e in evs if e.type != T.PATH])
    assert answer_path(tr) == ["v2", "v3"]
