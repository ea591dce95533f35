"""Gold repair over an eval: each wrong run replayed with the gold passages its breaking node
(or every retrieving node) lacked; repaired = a retrieval failure by intervention, not
repaired = a reasoning failure; per method the repaired share and its agreement with the
triage class; `eval repair`, `eval show` and the Evaluate page show it."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from workbench import trace as T
from workbench.analysis import repair as R
from workbench.config import knob
from workbench.eval.runner import EvalRunner, EvalSpec
from workbench.llm.base import ModelInfo
from workbench.llm.scripted import ScriptedBackend
from workbench.methods.base import Method
from workbench.store import Store

ROOT = Path(__file__).resolve().parents[1]

# the scripted model answers the Inception-director question right only when the prompt
# shows the Christopher Nolan passage (a gold passage top-1 BM25 misses); anything else
# gets "Paris"
RULES = [{"match": r"- Christopher Nolan:.*Question: Where was the director of Inception born",
          "regex": True, "text": "London"}]
QIDS = ["q014", "q001", "q002"]     # repaired / gold added, still wrong / every gold held
RAG = "standard-rag"


def backend(info: ModelInfo | None = None) -> ScriptedBackend:
    be = ScriptedBackend.from_table(RULES, default="Paris")
    if info is not None:
        be.info = info
    return be


def demo_eval(st: Store, qids=QIDS, methods=(RAG, "vanilla"), be=None) -> str:
    r = EvalRunner.new(st, EvalSpec("demo", list(methods), question_ids=list(qids),
                                    sets={f"{RAG}.top_k": 1, f"{RAG}.retriever": "bm25"},
                                    judge="off"), backend=be or backend())
    r.run()
    return r.eval_id


def by_q(plan: R.Plan, method: str) -> dict[str, R.Target]:
    return {t.question_id: t for t in plan.targets if t.method == method}


def n_runs(st: Store) -> int:
    return st.query("SELECT count(*) AS n FROM runs")[0]["n"]


def repair_records(st: Store) -> list:
    return [r for r in st.query("SELECT json_extract(metrics, '$.gold_repair') AS g FROM runs")
            if r["g"] is not None]


# ---------------------------------------------------------------- the repair

def test_breaking_node_repair_tells_retrieval_from_reasoning_failures():
    st = Store()
    eid = demo_eval(st)
    plan = R.plan(st, eid, "breaking")
    rag, van = by_q(plan, RAG), by_q(plan, "vanilla")
    # q014: top-1 BM25 found no gold passage; the breaking node is the retrieval node
    assert rag["q014"].triage_class == "hallucination" and rag["q014"].node == "r2"
    assert rag["q014"].action == "replay" and "p0161" in rag["q014"].add_ids
    # q001 found Inception but not Christopher Nolan: only the missing one is added
    assert rag["q001"].triage_class == "partial_retrieval" and rag["q001"].add_ids == ["p0161"]
    # q002 retrieved its one gold passage: a reasoning error, breaking at the answer node,
    # which takes no evidence; the retrieval above it already held the gold, so the run
    # counts as not repaired without a replay
    assert rag["q002"].triage_class == "reasoning_error"
    assert rag["q002"].action == "held" and rag["q002"].missing == {}
    assert "a3" in rag["q002"].via and "r2" in rag["q002"].via and "r2" in rag["q002"].reason
    # vanilla retrieves nowhere: nothing above its answer takes evidence
    assert {t.skip for t in van.values()} == {"no_evidence"}

    before = n_runs(st)
    out = {(o.question_id, o.series): o for o in R.run(st, plan, llm=backend())}
    fixed, still = out[("q014", RAG)], out[("q001", RAG)]
    assert (fixed.status, fixed.answer, fixed.correct) == ("repaired", "London", True)
    assert (still.status, still.answer, still.correct) == ("not_repaired", "Paris", False)
    # only the answer call ran on the model; the two re-runs are stored with their parent
    assert fixed.fresh_calls == still.fresh_calls == 1
    assert n_runs(st) == before + 2
    child = st.get_run(fixed.child_run_id)
    assert child["parent_run_id"] == fixed.run_id and child["correct"] is True
    assert child["metrics"]["gold_repair"] == {"eval_id": eid, "scope": "breaking",
                                               "parent_run_id": fixed.run_id, "correct": True}
    tr = st.trace(fixed.child_run_id)
    assert tr.meta["intervention"]["node"] == "r2"
    assert {"p0009", "p0161", "p0667"} <= {h["id"] for h in tr.nodes["r2"].evidence[0]["hits"]}
    # the record sits with the wrong run
    rec = st.get_run(fixed.run_id)["metrics"]["gold_repair"]["breaking"]
    assert rec["status"] == "repaired" and rec["verdict"] == "retrieval"
    assert rec["child_run_id"] == fixed.child_run_id and rec["triage_class"] == "hallucination"

    f = R.summary(st, eid)["breaking"]
    # q002 (held) is tested too: a reasoning failure by intervention, as triage said
    assert (f[RAG]["wrong"], f[RAG]["tested"], f[RAG]["repaired"]) == (3, 3, 1)
    assert f[RAG]["repaired_share"] == pytest.approx(1 / 3)
    assert f[RAG]["table"] == {"retrieval": {"retrieval": 1, "reasoning": 1},
                               "reasoning": {"retrieval": 0, "reasoning": 1}}
    assert f[RAG]["agreement"] == pytest.approx(2 / 3) and f[RAG]["n_agree"] == 3
    assert f[RAG]["skipped"] == {}
    assert f["vanilla"]["tested"] == 0 and f["vanilla"]["skipped"] == {"no_evidence": 3}
    assert f[RAG]["fresh_calls"] == 2

    # a second pass replays nothing: the results are stored
    again = R.plan(st, eid, "breaking")
    assert not again.todo and by_q(again, RAG)["q014"].action == "done"
    assert R.run(st, again, llm=backend()) and n_runs(st) == before + 2


def test_scope_all_counts_a_run_that_held_every_gold_passage_as_not_repaired():
    st = Store()
    eid = demo_eval(st, methods=(RAG,))
    plan = R.plan(st, eid, "all")
    rag = by_q(plan, RAG)
    assert rag["q002"].action == "held"             # nothing to add anywhere: no replay
    assert rag["q014"].node == "r2" and rag["q014"].action == "replay"
    R.run(st, plan, llm=backend())
    f = R.summary(st, eid)
    assert list(f) == ["all"]
    s = f["all"][RAG]
    assert (s["tested"], s["repaired"], s["held"]) == (3, 1, 1)
    # q002 (reasoning error) not repaired: agrees; q014 repaired and q001 not: 1 of 2
    assert s["table"] == {"retrieval": {"retrieval": 1, "reasoning": 1},
                          "reasoning": {"retrieval": 0, "reasoning": 1}}
    assert s["agreement"] == pytest.approx(2 / 3)


# ---------------------------------------------------------------- scope all, several nodes

@dataclass
class TwoStepConfig:
    k: int = knob(1, "passages per retrieval", min=1, max=5)


class TwoStep(Method):
    """Retrieves with the question (r1), asks the model for a follow-up query, retrieves
    with it (r2), answers over both."""
    name = "two-step"
    kind = "text"
    Config = TwoStepConfig
    prompt_version = "two-step-1"

    def run(self, ctx, question):
        yield T.node_added("q1", "question", question)
        yield T.node_added("r2", "retrieval", question, parents=["q1"])
        h1 = yield from ctx.retrieve("r2", question, ctx.config.k, "bm25")
        seen = "\n".join(f"- {h.title}: {h.text}" for h in h1)
        out = yield from ctx.generate("hop", f"Passages:\n{seen}\nNext search for: {question}",
                                      node_id="r2")
        yield T.node_added("r3", "retrieval", out.text, parents=["r2"])
        h2 = yield from ctx.retrieve("r3", out.text, ctx.config.k, "bm25")
        both = "\n".join(f"- {h.title}: {h.text}" for h in h1 + h2)
        ans = yield from ctx.generate("answer", f"Passages:\n{both}\nQuestion: {question}",
                                      node_id="a4")
        yield T.node_added("a4", "answer", ans.text, parents=["r3"])
        yield T.answer(ans.text, node_id="a4")


def _two_step_build(run, llm, parent):
    from workbench.workspace import build_context
    return build_context(TwoStep(), llm=llm, dataset="demo", overrides=run["config"],
                         seed=run["seed"], question_id=run["question_id"])


def _two_step_backend():
    be = ScriptedBackend()
    be.add("Next search for", "Elliot Page Halifax")
    # right only with the London passage in the answer prompt
    be.add(r"- London:.*Question: Where was the director", "London", regex=True)
    return be.add("", "Paris")


def test_scope_all_adds_the_gold_to_every_retrieving_node_in_one_replay():
    st = Store()
    r = EvalRunner.new(st, EvalSpec("demo", ["two-step"], question_ids=["q014"], judge="off"),
                       backend=_two_step_backend(), method_classes={"two-step": TwoStep})
    r.run()
    eid = r.eval_id
    t = R.plan(st, eid, "all").targets[0]
    assert t.triage_class == "hallucination" and set(t.missing) == {"r2", "r3"}
    assert t.node == "r2"
    o = R.run(st, R.plan(st, eid, "all"), llm=_two_step_backend(), build=_two_step_build)[0]
    assert o.status == "repaired" and o.answer == "London"
    tr = st.trace(o.child_run_id)
    gold = {"p0009", "p0161", "p0667"}
    # both retrievals hold every gold passage; the one intervention names the first node,
    # the applied list names both
    for nid in ("r2", "r3"):
        assert gold <= {h["id"] for h in tr.nodes[nid].evidence[0]["hits"]}, nid
    applied = next(e for e in tr.log if e["type"] == "intervention_applied")["data"]["applied"]
    assert {a["node"] for a in applied} == {"r2", "r3"}
    assert tr.meta["intervention"]["node"] == "r2"
    # the hop call and the answer call ran again (the hop prompt changed with r2's evidence)
    assert o.fresh_calls == 2 and o.replayed_calls == 0
    # breaking scope: only the breaking node gets the gold
    b = R.plan(st, eid, "breaking").targets[0]
    ob = R.run(st, R.plan(st, eid, "breaking"), llm=_two_step_backend(),
               build=_two_step_build)[0]
    applied = next(e for e in st.trace(ob.child_run_id).log
                   if e["type"] == "intervention_applied")["data"]["applied"]
    assert {a["node"] for a in applied} == {b.break_node}


# ---------------------------------------------------------------- CLI and bad input

def _rules_file(tmp_path) -> str:
    f = tmp_path / "rules.json"
    f.write_text(json.dumps({"rules": RULES, "default": "Paris"}))
    return str(f)


def test_cli_repair_json_line_limit_and_eval_show(tmp_path, capsys):
    from workbench.cli import main
    st = Store()
    eid = demo_eval(st)
    rules = _rules_file(tmp_path)
    assert main(["eval", "repair", eid, "--scripted", rules, "--limit", "1", "--json"]) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert first["eval_id"] == eid and first["scope"] == "breaking"
    assert first["replayed_now"] == 1 and first["pending"] == 1
    assert first["fresh_calls"] == 1 and first["replayed_calls"] == 0
    assert main(["eval", "repair", eid, "--scripted", rules, "--json"]) == 0
    out = capsys.readouterr().out
    last = json.loads(out.strip().splitlines()[-1])
    assert last["replayed_now"] == 1 and last["pending"] == 0
    m = last["methods"][RAG]
    assert (m["repaired"], m["tested"]) == (1, 3) and m["agreement"] == pytest.approx(2 / 3)
    assert "gold repair, scope breaking" in out
    assert main(["eval", "show", eid]) == 0
    shown = capsys.readouterr().out
    block = shown.split("gold repair, scope breaking")[1].splitlines()
    row = next(ln for ln in block if ln.split()[:1] == [RAG])
    assert row.split()[1:5] == ["3", "3", "1", "33%"]
    assert "vanilla skipped: nothing at or above the breaking node retrieves 3" in shown
    assert main(["eval", "show", eid, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gold_repair"]["breaking"][RAG]["repaired"] == 1


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys):
    from workbench.cli import main
    st = Store()
    eid = demo_eval(st, methods=(RAG,))
    rules = _rules_file(tmp_path)
    before = n_runs(st)
    assert main(["eval", "repair", "ev_nope", "--scripted", rules]) != 0
    assert "no eval 'ev_nope'" in _error_line(capsys)
    # unanswerable questions carry no gold passages
    no_gold = demo_eval(st, qids=["q056", "q057"], methods=(RAG,))
    before = n_runs(st)
    assert main(["eval", "repair", no_gold, "--scripted", rules]) != 0
    assert "has no gold evidence passages" in _error_line(capsys)
    with pytest.raises(R.RepairError, match="unknown scope"):
        R.plan(st, eid, "everywhere")
    # an eval made by another model: refused, naming both, before anything is written
    other = demo_eval(st, methods=(RAG,), be=backend(ModelInfo(
        name="other-model", backend="scripted", sha256="0123456789abcdef")))
    before = n_runs(st)
    assert main(["eval", "repair", other, "--scripted", rules]) != 0
    line = _error_line(capsys)
    assert "other-model" in line and "scripted" in line and "--model" in line
    assert n_runs(st) == before and repair_records(st) == []


# ---------------------------------------------------------------- the Evaluate page

def test_evaluate_page_shows_the_repair_table_beside_the_triage():
    from streamlit.testing.v1 import AppTest
    from workbench.ui.repair_view import rows
    st = Store()
    eid = demo_eval(st)
    R.run(st, R.plan(st, eid, "breaking"), llm=backend())
    table = {r["method"]: r for r in rows(R.summary(st, eid))}
    assert table[RAG]["repaired share"] == pytest.approx(1 / 3)
    assert table[RAG]["agreement with triage"] == pytest.approx(2 / 3)
    assert table[RAG]["triage retrieval → repaired / not"] == "1 / 1"
    at = AppTest.from_file(str(ROOT / "pages" / "7_Evaluate.py"), default_timeout=180)
    at.run()
    assert not at.exception, at.exception
    frames = [d.value for d in at.dataframe]
    rep = next(f for f in frames if "repaired share" in f.columns)
    assert set(rep["method"]) == {RAG, "vanilla"}
    assert "Gold repair" in " ".join(m.value for m in at.markdown)


# ---------------------------------------------------------------- where the gold goes

@pytest.mark.parametrize("method, node, at", [
    ("par-rag", "a15", "r11"),      # under every step's trajectory: the last step's retrieval
    ("par-rag", "vf9", "r7"),       # a verification reads its own step's retrieval
    ("par-rag", "r7", "r7"),        # a node that retrieves takes the gold itself
    ("par-rag", "q1", None),        # nothing above the question
    ("crp-rag", "a5", "v3"),        # the answer, through the extraction, to the final step
    ("ircot", "a10", "r8"),
])
def test_a_breaking_node_that_retrieves_nothing_hands_the_gold_to_the_nearest_retrieval(
        method, node, at):
    import gzip
    from workbench.viz.export import _trace_of
    stored = json.loads(gzip.open(ROOT / "tests" / "fixtures" / "stored_runs"
                                  / f"{method}.json.gz").read())
    assert R.nearest_retrieving(_trace_of(stored), node) == at


def test_gold_goes_ahead_of_the_nodes_own_hits_and_a_replay_it_never_reached_is_skipped(
        monkeypatch):
    """Gold repair adds the gold ahead of the node's own hits (a top-k cut or a merge after
    the retrieval would drop passages added after them: PAR-RAG's sparse retrieval merged
    with its dense one did); a replay in which every call replayed tested nothing and is
    skipped, not counted as a reasoning failure; a new record replaces the old one whole."""
    from types import SimpleNamespace

    from workbench.knowledge.types import Hit
    from workbench.methods.intervene import Apply, Intervention, added_hits

    own = [Hit(f"d{i}", f"T{i}", "x", "bm25", 1.0 / i, i) for i in (1, 2, 3)]
    gold = added_hits((), [SimpleNamespace(id="g1", title="G", text="gold")])
    first = Apply(Intervention("r2", add_ids=["g1"]), gold, first=True)
    got = first.hits("r2", list(own))
    assert [(h.id, h.rank) for h in got] == [("g1", 1), ("d1", 2), ("d2", 3), ("d3", 4)]
    assert first.applied[0]["added_first"] is True
    after = Apply(Intervention("r2", add_ids=["g1"]), gold).hits("r2", list(own))
    assert [(h.id, h.rank) for h in after] == [("d1", 1), ("d2", 2), ("d3", 3), ("g1", 4)]

    st = Store()
    eid = demo_eval(st, qids=["q014"], methods=(RAG,))
    plan = R.plan(st, eid, "breaking")
    calls = []

    def replayed_only(*a, **kw):
        calls.append(kw.get("add_first"))
        return SimpleNamespace(fresh_calls=0, reused_calls=0, replayed_calls=3,
                               run_id="run_child", applied=[])
    # a skip recorded earlier must not leave its keys beside the new record
    t = plan.todo[0]
    R._record(st, plan, t, status="skipped", skip="not_replayable", reason="an old reason")
    monkeypatch.setattr(R, "whatif", replayed_only)
    out = R.run(st, plan, llm=backend())
    assert calls == [True]
    assert [(o.status, o.child_run_id) for o in out] == [("skipped", "run_child")]
    rec = st.get_run(t.run_id)["metrics"]["gold_repair"]["breaking"]
    assert rec["skip"] == "not_reached" and "reached no LLM call" in rec["reason"]
    assert "an old reason" not in json.dumps(rec)
    f = R.summary(st, eid)["breaking"][RAG]
    assert f["tested"] == 0 and f["skipped"] == {"not_reached": 1}
    R._record(st, plan, t, status="repaired", verdict="retrieval")
    rec = st.get_run(t.run_id)["metrics"]["gold_repair"]["breaking"]
    assert rec["status"] == "repaired" and "skip" not in rec and "reason" not in rec
