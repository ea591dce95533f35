"""The page's SQL aggregates agree with the same numbers computed in Python from the rows,
and the charts build from them."""
import pytest

from workbench.eval import metrics as M
from workbench.eval import queries as Q
from workbench.eval.runner import EvalRunner, EvalSpec
from workbench.llm.scripted import ScriptedBackend
from workbench.store import Store
from workbench.viz import eval_charts as C

from tests.test_eval_helpers import ToyDataset, answer_rules, toy_methods


@pytest.fixture
def ev(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    be = ScriptedBackend.from_table(answer_rules(), default="grey")
    r = EvalRunner.new(st, EvalSpec("toy", ["toy-rag", "toy-llm"], judge="off",
                                    grid={"noise_k": [0, 2]}),
                       backend=be, dataset=ToyDataset(), method_classes=toy_methods())
    r.run()
    return st, r.eval_id


def _rows(st, eid):
    return st.query("SELECT * FROM eval_items WHERE eval_id = ?", [eid])


def test_series_names_a_variant_only_where_a_method_has_several():
    lone = Q.series([{"method": "crp-rag", "variant": "root_probe=True"},
                     {"method": "vanilla", "variant": "default"}])
    assert [r["series"] for r in lone] == ["crp-rag", "vanilla"]
    across = Q.series([{"method": "crp-rag", "variant": "default"},     # two evals compared
                       {"method": "crp-rag", "variant": "root_probe=True"}])
    assert [r["series"] for r in across] == ["crp-rag [default]", "crp-rag [root_probe=True]"]


def test_summary_matches_python_and_wilson(ev):
    st, eid = ev
    rows = _rows(st, eid)
    out = Q.summary(st, eid, "correct")
    assert {r["series"] for r in out} == {"toy-rag [noise_k=0]", "toy-rag [noise_k=2]", "toy-llm"}
    for r in out:
        mine = [x for x in rows if x["method"] == r["method"] and x["variant"] == r["variant"]]
        k = sum(bool(x["correct"]) for x in mine)
        assert r["n"] == len(mine) and r["k"] == k
        lo, hi = M.wilson_interval(k, len(mine))
        assert r["lo"] == pytest.approx(lo) and r["hi"] == pytest.approx(hi)
    f1 = Q.summary(st, eid, "f1")
    assert all(r["lo"] <= r["mean"] <= r["hi"] for r in f1)
    with pytest.raises(ValueError):
        Q.summary(st, eid, "correct; DROP TABLE runs")


def test_by_group_hops_and_knob(ev):
    st, eid = ev
    rows = _rows(st, eid)
    out = Q.by_group(st, eid, "em", "hops")
    for r in out:
        mine = [x["em"] for x in rows if x["method"] == r["method"] and x["variant"] == r["variant"]
                and str(x["hops"]) == r["grp"]]
        assert r["mean"] == pytest.approx(sum(mine) / len(mine))
    kn = Q.knob_response(st, eid, "noise_k", "correct")
    rag = [r for r in kn if r["method"] == "toy-rag"]
    assert [r["value"] for r in rag] == ["0", "2"]
    assert [r["value"] for r in kn if r["method"] == "toy-llm"] == ["default"]
    with pytest.raises(ValueError):
        Q.by_group(st, eid, "em", "knob:x') --")


def test_calibration_ece_matches_python(ev):
    st, eid = ev
    rows = [x for x in _rows(st, eid) if x["confidence"] is not None]
    bins, ece = Q.calibration(st, eid, bins=10)
    for e in ece:
        mine = [x for x in rows if x["method"] == e["method"] and x["variant"] == e["variant"]]
        groups = {}
        for x in mine:
            b = min(int(x["confidence"] * 10), 9)
            groups.setdefault(b, []).append(x)
        py = M.expected_calibration_error(
            (len(g), sum(x["confidence"] for x in g) / len(g),
             sum(bool(x["correct"]) for x in g) / len(g)) for g in groups.values())
        assert e["ece"] == pytest.approx(py) and e["n"] == len(mine)


def test_crag_breakdown_matches_python(ev):
    st, eid = ev
    rows = _rows(st, eid)
    out = Q.crag(st, eid, "domain")
    for r in out:
        mine = [{"label": x["crag_label"], "domain": x["domain"] or "-"} for x in rows
                if x["method"] == r["method"] and x["variant"] == r["variant"]]
        py = M.crag_breakdown(mine, "domain")[r["grp"]]
        for k in ("accuracy", "hallucination", "missing", "score"):
            assert r[k] == pytest.approx(py[k])
        assert r["score"] == pytest.approx(r["accuracy"] - r["hallucination"])
    overall = Q.crag(st, eid)
    assert all(r["grp"] == "all" for r in overall)


def test_efficiency_error_modes_and_runs_behind(ev):
    st, eid = ev
    eff = Q.efficiency(st, eid)
    assert all(r["llm_calls"] == 1 and r["wall_ms"] > 0 for r in eff)
    run = Q.runs_behind(st, eid, method="toy-rag", variant="noise_k=2", group="hops", value="2")
    assert run and all(r["method"] == "toy-rag" for r in run)
    assert all(r["question"] for r in run)
    st.add_annotation(run[0]["run_id"], "run", run[0]["run_id"], ["retrieval_miss", "wrong_entity"])
    st.add_annotation(run[1]["run_id"], "run", run[1]["run_id"], ["retrieval_miss"])
    modes = {r["tag"]: r["n"] for r in Q.error_modes(st, eid)}
    assert modes == {"retrieval_miss": 2, "wrong_entity": 1}
    wrong = Q.runs_behind(st, eid, metric="crag_label", outcome="hallucinated")
    assert wrong and all(r["crag_label"] == "hallucinated" for r in wrong)
    assert len(Q.runs_behind(st, eid, limit=3)) == 3
    assert Q.list_evals(st)[0]["eval_id"] == eid


def test_charts_build_and_selection_reads_customdata(ev):
    st, eid = ev
    figs = [C.metric_bars(Q.summary(st, eid, "em"), "EM"),
            C.group_bars(Q.by_group(st, eid, "em", "qtype"), "EM", "type"),
            C.efficiency_bars(Q.efficiency(st, eid)),
            C.reliability_diagram(*Q.calibration(st, eid)),
            C.crag_outcomes(Q.crag(st, eid)),
            C.crag_breakdown(Q.crag(st, eid, "domain"), "domain"),
            C.knob_response(Q.knob_response(st, eid, "noise_k"), "noise_k"),
            C.tradeoff_scatter(Q.crag(st, eid)),
            C.error_mode_bars([{"method": "toy-rag", "tag": "x", "n": 2}])]
    for f in figs:
        assert f.to_dict()["data"]
    cd = figs[0].to_dict()["data"][0]["customdata"]
    assert [tuple(x[:2]) for x in cd] == [(r["method"], r["variant"]) for r in Q.summary(st, eid, "em")]
    event = {"selection": {"points": [{"customdata": ["toy-rag", "noise_k=2", "2"]},
                                      {"customdata": ["toy-rag", "noise_k=2", "2"]}]}}
    assert C.selected_keys(event) == [("toy-rag", "noise_k=2", "2")]
    assert C.selected_keys({}) == []


def test_paired_bootstrap_and_mcnemar_by_hand():
    a = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]
    b = [0, 0, 0, 0, 0, 0, 1, 1, 0, 0]
    diff, lo, hi = M.paired_bootstrap(a, b, n_boot=4000, seed=1)
    assert diff == pytest.approx(0.6)
    assert 0.2 < lo < 0.6 < hi <= 1.0
    t = M.mcnemar(a, b)
    # six discordant pairs all one way: two-sided exact p = 2 * 0.5**6
    assert (t["a_only"], t["b_only"]) == (6, 0)
    assert t["p"] == pytest.approx(2 * 0.5 ** 6)
    assert M.mcnemar(a, a)["p"] == 1.0
    same = M.paired_bootstrap(a, a)
    assert same == (0.0, 0.0, 0.0)


def test_paired_pairs_series_on_shared_questions(ev):
    st, eid = ev
    rows = _rows(st, eid)
    out = Q.paired(st, eid, "correct", n_boot=500)
    assert len(out) == 3          # three series, every pair once
    for r in out:
        series = {s for s in (r["a"], r["b"])}
        assert len(series) == 2
        assert r["lo"] <= r["diff"] <= r["hi"]
        assert r["diff"] == pytest.approx(r["mean_a"] - r["mean_b"])
        assert 0.0 <= r["mcnemar_p"] <= 1.0
    rag0 = next(r for r in out if {r["a"], r["b"]} == {"toy-llm", "toy-rag [noise_k=0]"})
    want = {}
    for x in rows:
        if x["method"] == "toy-llm" or x["variant"] == "noise_k=0":
            want.setdefault(x["method"], {})[x["question_id"]] = float(x["correct"])
    assert rag0["n_paired"] == len(want["toy-llm"])
    sign = 1 if rag0["a"] == "toy-llm" else -1
    by_hand = sum(want["toy-llm"][q] - want["toy-rag"][q] for q in want["toy-llm"]) \
        / len(want["toy-llm"])
    assert rag0["diff"] == pytest.approx(sign * by_hand)
    assert "mcnemar_p" not in Q.paired(st, eid, "f1", n_boot=100)[0]


def test_paired_rows_say_when_the_two_series_retrieved_differently(ev, tmp_path):
    st, eid = ev
    assert Q.retrieval(st, eid) == {"toy-rag [noise_k=0]": "bm25", "toy-rag [noise_k=2]": "bm25",
                                    "toy-llm": "none"}
    for r in Q.paired(st, eid, "f1", n_boot=100):     # no retrieval differs by design
        with_llm = "toy-llm" in (r["a"], r["b"])
        assert {r["retrieval_a"], r["retrieval_b"]} == ({"bm25", "none"} if with_llm else {"bm25"})
        assert not r["retriever_confound"]
    st2 = Store(tmp_path / "r.duckdb")
    r = EvalRunner.new(st2, EvalSpec("toy", ["toy-rag"], judge="off",
                                     grid={"toy-rag.retriever": ["bm25", "dense"]}),
                       backend=ScriptedBackend.from_table(answer_rules(), default="grey"),
                       dataset=ToyDataset(), method_classes=toy_methods())
    r.run()
    (row,) = Q.paired(st2, r.eval_id, "f1", n_boot=100)
    assert row["retriever_confound"] and {row["retrieval_a"], row["retrieval_b"]} == {"bm25",
                                                                                      "dense"}


def test_cli_summary_prints_paired_lines(ev, capsys):
    from workbench.commands.eval import _print_summary
    st, eid = ev
    _print_summary(st, eid)
    out = capsys.readouterr().out
    assert "paired on shared questions" in out
    assert out.count("McNemar") == 1 and out.count(" p=") == 3
    assert "retrieved differently" not in out     # toy-llm retrieves nothing, by design
    assert "answer trail: wrong runs" in out and "retrieval " in out.split("answer trail")[1]


def test_deleting_a_run_removes_its_eval_item_and_count(ev):
    st, eid = ev
    before = st.query("SELECT n_done FROM eval_batches WHERE eval_id = ?", [eid])[0]["n_done"]
    rid = _rows(st, eid)[0]["run_id"]
    st.delete_run(rid)
    assert not st.query("SELECT 1 FROM eval_items WHERE run_id = ?", [rid])
    assert len(_rows(st, eid)) == before - 1
    assert st.query("SELECT n_done FROM eval_batches WHERE eval_id = ?",
                    [eid])[0]["n_done"] == before - 1
