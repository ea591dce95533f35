"""Triage of real runs: the fast bundled model (SmolLM2-135M) on three demo questions with
known gold, through the eval runner (stored, scored), then triaged from the store.

BM25 retrieval with the question is deterministic, so standard RAG's gold marks are known
exactly; the class must then follow the rules from those marks and the stored verdict,
whatever the model answered. CRP-RAG's marks are checked against its own retrieved items.
Skips with a reason when the model or the demo world is missing."""
from __future__ import annotations

import pytest

from workbench.store import Store
from workbench.triage import CLASSES
from workbench.triage import store as TS

QUESTIONS = {"q001": {0}, "q030": {0, 1, 3}, "q040": {0, 1}}   # hops BM25 top-3 finds
SETS = {"standard-rag.retriever": "bm25", "standard-rag.top_k": 3,
        "standard-rag.answer_max_tokens": 16,
        "crp-rag.retriever": "bm25", "crp-rag.samples_per_sink": 1, "crp-rag.max_iterations": 2,
        "crp-rag.max_nodes": 3, "crp-rag.top_k": 2, "crp-rag.gen_max_tokens": 40,
        "crp-rag.summary_max_tokens": 40, "crp-rag.eval_max_tokens": 12,
        "crp-rag.step_max_tokens": 16, "crp-rag.answer_max_tokens": 40}


def triage_spec():
    """Standard RAG and CRP-RAG on QUESTIONS, stored by the eval runner, unjudged."""
    from workbench.eval.runner import EvalSpec
    # q040 is in demo:train, which CRP-RAG's threshold saw: this checks triage, not accuracy
    return EvalSpec("demo", ["standard-rag", "crp-rag"], question_ids=list(QUESTIONS), sets=SETS,
                    judge="off", allow_leakage=True)


@pytest.fixture(scope="module")
def stored(tmp_path_factory, default_llm):
    import os
    home = tmp_path_factory.mktemp("wbhome")
    old = os.environ.get("WORKBENCH_HOME")
    os.environ["WORKBENCH_HOME"] = str(home)
    try:
        from workbench.datasets import load_dataset
        try:
            ds = load_dataset("demo")
            qs = {i: ds.question(i) for i in QUESTIONS}
        except (LookupError, FileNotFoundError) as e:
            pytest.skip(f"demo world not available: {e}")
        from workbench.eval.runner import EvalRunner
        st = Store(home / "runs.duckdb")
        r = EvalRunner.new(st, triage_spec(), backend=default_llm)
        r.run()
        yield st, r.eval_id, qs
    finally:
        if old is None:
            os.environ.pop("WORKBENCH_HOME", None)
        else:
            os.environ["WORKBENCH_HOME"] = old


def _runs(st, eval_id, method):
    return st.query("SELECT run_id, question_id, correct, answer, metrics FROM runs "
                    "WHERE eval_id = ? AND method = ? ORDER BY question_id", [eval_id, method])


def _rule(correct, contained, refused, found, n):
    if correct:
        return "correct"
    if contained:
        return "answer_format"
    if len(found) == n:
        return "wrong_refusal" if refused else "reasoning_error"
    if found:
        return "partial_retrieval"
    return "retrieval_miss" if refused else "hallucination"


def test_standard_rag_marks_and_class_follow_from_the_retrieval(stored):
    st, eid, qs = stored
    rows = _runs(st, eid, "standard-rag")
    assert [r["question_id"] for r in rows] == sorted(QUESTIONS)
    for r in rows:
        t = TS.get(st, r["run_id"])
        q = qs[r["question_id"]]
        where = (r["question_id"], r["answer"], t.failure_class)
        assert t.hops == q.gold_titles and t.knowledge == "passages", where
        retrieval = [nid for nid in t.marks]                 # the one retrieval node
        assert len(retrieval) == 1 and set(t.node_hops(retrieval[0])) == QUESTIONS[q.id], where
        assert set(t.found) == QUESTIONS[q.id] and t.found_q == t.found, where
        assert t.failure_class == _rule(r["correct"], t.contained, t.refused, t.found,
                                        len(t.hops)), where
        if t.failure_class == "partial_retrieval":
            assert t.break_node == retrieval[0] and t.break_kind == "retrieval", where
        elif t.failure_class != "correct":
            assert t.break_node == t.path[-1], where            # the answer node
        # the eval's scoring step stored the same class with the run
        assert r["metrics"]["failure_class"] == t.failure_class, where


def test_crp_rag_marks_are_its_own_gold_items_and_the_break_is_on_the_answer_path(stored):
    st, eid, qs = stored
    from workbench.triage.gold import norm
    for r in _runs(st, eid, "crp-rag"):
        tr = st.trace(r["run_id"])
        t = TS.get(st, r["run_id"])
        q = qs[r["question_id"]]
        where = (r["question_id"], r["answer"], t.failure_class, t.break_node)
        assert t.failure_class in CLASSES, where
        gold = [norm(x) for x in q.gold_titles]
        found = set()
        for nid, n in tr.nodes.items():
            held = {gold.index(norm(h["title"])) for ev in n.evidence
                    for h in ev.get("hits", []) if norm(h["title"]) in gold}
            assert set(t.node_hops(nid)) == held, (where, nid)
            found |= held
        assert set(t.found) == found and t.found_q is None, where   # nodes query with their text
        assert t.failure_class == _rule(r["correct"], t.contained, t.refused, t.found,
                                        len(t.hops)), where
        if t.failure_class != "correct":
            assert t.break_node in tr.nodes, where
        if t.failure_class in ("partial_retrieval", "retrieval_miss", "hallucination") \
                and any(tr.nodes[n].evidence for n in t.path):
            assert t.break_node in t.path and tr.nodes[t.break_node].evidence, where
    summ = TS.summary(st, eid)
    assert {r["series"] for r in summ["recall"]} == {"standard-rag", "crp-rag"}
    assert sum(r["n"] for r in summ["classes"]) == 2 * len(QUESTIONS)
