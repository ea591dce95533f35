"""Triage rolled up per method over a stored eval: class counts, breaking node kinds,
question- and node-level recall, the runs behind a bar, `eval show` and the Evaluate page."""
from __future__ import annotations

import json
from pathlib import Path

from workbench.eval.runner import EvalRunner, EvalSpec
from workbench.llm.scripted import ScriptedBackend
from workbench.store import Store
from workbench.triage import store as TS

from tests.test_eval_helpers import N_QUESTIONS, ToyDataset, answer_rules, toy_methods

ROOT = Path(__file__).resolve().parents[1]


class GoldToy(ToyDataset):
    """The toy questions with their item's passage as gold (one hop each)."""

    def __init__(self):
        super().__init__()
        for i, q in enumerate(self.questions):
            q.gold_titles = [f"Item {i}"]
            q.meta["gold_passage_ids"] = [f"p{i}"]


def expected(i: int, method: str) -> str:
    out = answer_rules()[i]["text"]
    if out == f"colour{i}":
        return "correct"
    if method == "toy-llm":          # no retrieval; "UNKNOWN" is just a wrong answer there
        return "hallucination"
    return "wrong_refusal" if out == "UNKNOWN" else "reasoning_error"


def _eval(st: Store) -> str:
    r = EvalRunner.new(st, EvalSpec("toy", ["toy-rag", "toy-llm"], judge="off"),
                       backend=ScriptedBackend.from_table(answer_rules(), default="grey"),
                       dataset=GoldToy(), method_classes=toy_methods())
    r.run()
    return r.eval_id


def test_eval_items_are_triaged_and_rolled_up_per_method(monkeypatch):
    st = Store()
    eid = _eval(st)

    def no_fold(*a, **k):
        raise AssertionError("the eval's scored triage should be used, not the events")
    monkeypatch.setattr(TS, "_fold", lambda store, ids: no_fold() if ids else {})
    # the scoring step stored the class with each run's metrics
    m = st.query("SELECT question_id, method, metrics FROM runs WHERE eval_id = ? "
                 "ORDER BY question_id, method", [eid])
    for r in m:
        i = int(r["question_id"][1:])
        assert r["metrics"]["failure_class"] == expected(i, r["method"]), r
    summ = TS.summary(st, eid)
    dist = TS.distribution(summ["classes"])
    for method in ("toy-rag", "toy-llm"):
        want = {}
        for i in range(N_QUESTIONS):
            want[expected(i, method)] = want.get(expected(i, method), 0) + 1
        assert {c: n for c, n in dist[method].items() if n} == want
    kinds = {(r["series"], r["kind"]): r for r in summ["break_kinds"]}
    # toy-rag answers from its sub-question node, which is where wrong runs break;
    # toy-llm answers from the question node
    assert kinds[("toy-rag", "subquestion")]["share"] == 1.0
    assert kinds[("toy-llm", "question")]["n"] == dist["toy-llm"]["hallucination"]
    rec = {r["series"]: r for r in summ["recall"]}
    assert rec["toy-rag"]["recall_node"] == 1.0 and rec["toy-rag"]["n_q"] == N_QUESTIONS
    assert rec["toy-rag"]["all_q"] == 1.0
    assert rec["toy-llm"]["recall_node"] == 0.0 and rec["toy-llm"]["n_q"] == 0
    assert rec["toy-llm"]["recall_q"] is None
    from workbench.eval.queries import session
    with session(st) as db:
        rows = TS.runs_of_class(db, eid, method="toy-rag", failure_class="reasoning_error")
    assert rows and all(r["failure_class"] == "reasoning_error" for r in rows)
    # a second summary has nothing left to compute
    assert TS.ensure(st, eval_ids=[eid]) == 0


def test_eval_show_prints_the_triage_and_json_carries_it(capsys):
    from workbench.cli import main
    st = Store()
    eid = _eval(st)
    assert main(["eval", "show", eid]) == 0
    out = capsys.readouterr().out
    block = out.split("failure classes (runs per class)")[1].splitlines()
    assert block[1].split() == ["method", "correct", "miss", "partial", "reasoning", "format",
                                "refusal", "halluc."]
    line = next(ln for ln in block if ln.split()[:1] == ["toy-llm"])
    counts = [int(x) for x in line.split()[1:]]
    dist = TS.distribution(TS.summary(st, eid)["classes"])["toy-llm"]
    assert counts == list(dist.values())
    assert main(["eval", "show", eid, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rec = {r["method"]: r for r in data["triage"]["recall"]}
    assert rec["toy-rag"]["all_node"] == 1.0


def test_evaluate_page_draws_the_failure_class_chart_and_tables():
    from streamlit.testing.v1 import AppTest
    st = Store()
    _eval(st)
    at = AppTest.from_file(str(ROOT / "pages" / "7_Evaluate.py"), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    assert "Failure triage: where in the graph it went wrong" in [h.value for h in at.subheader]
    frames = [d.value for d in at.dataframe]
    kinds = next(f for f in frames if "node kind" in f.columns)
    assert set(kinds["node kind"]) == {"subquestion", "question"}
    recall = next(f for f in frames if "node level" in f.columns)
    assert list(recall["node level"]) == [0.0, 1.0]         # toy-llm, toy-rag
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    triage_fig = next(f for f in figs if f["layout"].get("xaxis", {}).get("title", {}).get("text")
                      == "% of triaged runs")
    names = {t["name"] for t in triage_fig["data"]}
    assert {"correct", "reasoning error", "wrong refusal", "hallucination"} <= names


def test_benchmark_reports_a_stored_eval_with_json_last(isolated_home):
    import subprocess
    import sys
    st = Store()
    eid = _eval(st)
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "failure_triage.py"),
                          "--report", eid], capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    last = json.loads(out.stdout.strip().splitlines()[-1])
    rag = last["methods"]["toy-rag"]
    assert last["eval_id"] == eid and rag["all_hops_node"] == 1.0 and rag["n_q"] == N_QUESTIONS
    assert sum(rag["classes"].values()) == N_QUESTIONS
    assert "failure classes (runs per class)" in out.stdout
    assert "answer trail: wrong runs" in out.stdout and rag["answer_trail"]["answer"] == 0
