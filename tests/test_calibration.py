"""Node-level calibration: the metrics against hand-computed values and scikit-learn, the
recalibrators, node labels from the triage, the report's "too few" rule and `eval
calibration`."""
from __future__ import annotations

import json

import numpy as np
import pytest

from workbench import cli
from workbench import trace as T
from workbench.analysis import calibration as C
from workbench.store import Store
from workbench.triage import triage

# --- metrics, by hand ---


def test_auroc_by_hand():
    # positives 0.35 and 0.8 against negatives 0.1 and 0.4: 3 of 4 pairs ordered
    assert C.auroc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == pytest.approx(0.75)
    assert C.auroc([0.5, 0.5], [0, 1]) == pytest.approx(0.5)          # a tie counts half
    assert C.auroc([0.2, 0.9], [1, 1]) is None                          # one class only


def test_equal_mass_ece_by_hand():
    p = [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9]
    y = [0, 0, 0, 1, 1, 0, 1, 1]
    # two bins of four: (0.25 vs 0.25) and (0.75 vs 0.75)
    assert C.ece(p, y, n_bins=2) == pytest.approx(0.0)
    # four bins of two: |0.15-0| |0.35-0.5| |0.65-0.5| |0.85-1| = 0.15 each
    assert C.ece(p, y, n_bins=4) == pytest.approx(0.15)
    bins = C.reliability_bins(p, y, n_bins=3)
    assert [b["n"] for b in bins] == [3, 3, 2]                           # equal mass
    assert bins[0]["conf"] == pytest.approx(0.2) and bins[2]["acc"] == pytest.approx(1.0)
    # tied values are not split across bins: a 0/1 signal gets two bins
    two = C.reliability_bins([1, 0, 1, 1, 0, 1, 0, 1], [1, 0, 1, 0, 0, 1, 1, 1], n_bins=4)
    assert [(b["n"], b["conf"], b["acc"]) for b in two] == [(3, 0.0, 1 / 3), (5, 1.0, 0.8)]
    assert C.ece([1, 0, 1, 1, 0, 1, 0, 1], [1, 0, 1, 0, 0, 1, 1, 1], 4) == \
        pytest.approx((3 * 1 / 3 + 5 * 0.2) / 8)
    # unsorted input gives the same bins
    order = [5, 2, 7, 0, 1, 6, 4, 3]
    assert C.ece([p[i] for i in order], [y[i] for i in order], 4) == pytest.approx(0.15)


def test_brier_by_hand():
    assert C.brier([0.9, 0.2, 0.6], [1, 0, 0]) == pytest.approx((0.01 + 0.04 + 0.36) / 3)


def test_risk_coverage_by_hand():
    curve = C.risk_coverage([0.9, 0.8, 0.8, 0.5, 0.3], [1, 1, 0, 1, 0])
    got = [v for p in curve for v in (p["threshold"], p["coverage"], p["accuracy"])]
    assert got == pytest.approx([0.9, 0.2, 1.0, 0.8, 0.6, 2 / 3, 0.5, 0.8, 0.75,
                                 0.3, 1.0, 0.6])
    # ties at 0.8 are answered together, so 50% coverage is reached at 60%
    half = C.at_coverage(curve, 0.5)
    assert (half["coverage"], half["accuracy"]) == pytest.approx((0.6, 2 / 3))


def test_metrics_and_recalibrators_match_scikit_learn():
    sk = pytest.importorskip("sklearn")
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import brier_score_loss, roc_auc_score
    assert sk
    rng = np.random.default_rng(3)
    x = np.round(rng.random(200), 2)                     # rounding makes ties
    y = (rng.random(200) < x).astype(int)
    assert C.auroc(x, y) == pytest.approx(roc_auc_score(y, x))
    assert C.brier(x, y) == pytest.approx(brier_score_loss(y, x))
    new = np.linspace(-0.2, 1.2, 57)
    ref = IsotonicRegression(out_of_bounds="clip").fit(x, y).predict(new)
    assert C.Isotonic().fit(x, y).predict(new) == pytest.approx(ref)
    lr = LogisticRegression(C=1e12, tol=1e-12, max_iter=10_000).fit(x[:, None], y)
    assert C.Platt().fit(x, y).predict(new) == pytest.approx(
        lr.predict_proba(new[:, None])[:, 1], abs=1e-5)


def test_recalibration_fits_on_train_and_improves_held_out_ece():
    rng = np.random.default_rng(0)
    s = rng.random(400)
    y = (rng.random(400) < s ** 3).astype(float)         # the raw score is overconfident
    r = C.recalibrated(s[:200], y[:200], s[200:], y[200:], s[200:])
    assert r["n_train"] == 200 and r["n_test"] == 200
    assert r["platt"]["ece"] < r["before"]["ece"] and r["isotonic"]["ece"] < r["before"]["ece"]


# --- node labels and the report ---

HOTPOT = {"id": "h1", "question": "Which director of Inception was born in London?",
          "answers": ["Christopher Nolan"], "aliases": [], "gold_titles": ["Inception", "London"],
          "meta": {"gold_passage_ids": ["p-inc", "p-lon"]}, "split": "train",
          "decomposition": [
              {"question": "Who directed Inception?", "answer": "Christopher Nolan",
               "passage_id": "p-inc", "title": "Inception"},
              {"question": "Where was #1 born?", "answer": "London", "passage_id": "p-lon",
               "title": "London"}]}


def hit(pid, title):
    return {"id": pid, "title": title, "text": f"about {title}", "retriever": "bm25",
            "score": 1.0, "rank": 1, "meta": {}}


def run_events(run_id, *, ppl_good, ppl_bad, answer="Christopher Nolan", method="crp-rag",
               question=HOTPOT):
    """q -> v1 (retrieves the gold Inception passage) -> v2 (retrieves an unrelated one)
    -> answer; v1 and v2 carry a perplexity, the answer a confidence."""
    clock = T.EventClock(run_id)
    evs = [T.Event(T.RUN_STARTED, {"question": question["question"], "method": method,
                                   "config": {}, "gold": question}),
           T.node_added("q", "question", question["question"]),
           T.node_added("v1", "step", "Who directed Inception?", parents=["q"],
                        state="sufficient", eval_answer="Christopher Nolan"),
           T.Event(T.RETRIEVED, {"query": "Who directed Inception?", "retriever": "bm25",
                                 "k": 1, "hits": [hit("p-inc", "Inception")]}, node_id="v1"),
           T.node_scored("v1", {"perplexity": ppl_good, "mean_prob": 1 / ppl_good}),
           T.node_added("v2", "step", "Where was Christopher Nolan born?", parents=["v1"],
                        state="insufficient", eval_answer="Paris"),
           T.Event(T.RETRIEVED, {"query": "Where was Nolan born?", "retriever": "bm25",
                                 "k": 1, "hits": [hit("p-par", "Paris")]}, node_id="v2"),
           T.node_scored("v2", {"perplexity": ppl_bad, "mean_prob": 1 / ppl_bad}),
           T.node_added("ans", "answer", answer, parents=["v1"], state="answered"),
           T.answer(answer, node_id="ans", confidence=0.8),
           T.Event(T.RUN_FINISHED, {"status": "finished"})]
    return [clock.stamp(e) for e in evs]


def test_node_records_take_labels_from_the_triage():
    tr = T.Trace.fold(run_events("r1", ppl_good=1.5, ppl_bad=4.0))
    tri = triage(tr, correct=True)
    recs = {r["node"]: r for r in C.node_records(tr, tri, method="crp-rag", run_id="r1",
                                                 question_id="h1", split="train")}
    assert recs["v1"]["labels"] == {"gold_evidence": 1.0, "correct_path": 1.0, "hop_answer": 1.0}
    # v2 retrieved no gold passage, is off the answer's path, and answered the hop wrongly
    assert recs["v2"]["labels"] == {"gold_evidence": 0.0, "correct_path": 0.0, "hop_answer": 0.0}
    assert "gold_evidence" not in recs["q"]["labels"]             # it retrieved nothing
    assert recs["v1"]["signals"] == {"perplexity": 1.5, "mean_prob": pytest.approx(1 / 1.5),
                                     "verdict": 1.0}
    assert recs["v2"]["signals"]["verdict"] == 0.0
    # a wrong answer: nothing lies on the path of a correct one
    wrong = triage(tr, correct=False)
    assert all(r["labels"]["correct_path"] == 0.0
               for r in C.node_records(tr, wrong, method="m", run_id="r1", question_id="h1",
                                       split="train"))


def test_a_review_is_on_the_path_when_the_node_it_judges_is():
    # PAR-RAG's reviews hang off the answer path when they pass and lead into the retry when
    # they fail: labelled by their own position, "on the path" would follow the verdict
    extra = [T.node_added("vf1", "verify", "Review step 1", parents=["v1"], state="verified"),
             T.node_scored("vf1", {"C": 0.9}),
             T.node_added("vf2", "verify", "Review step 2", parents=["v2"],
                          state="failed_verification"),
             T.node_scored("vf2", {"C": 0.2})]
    evs = run_events("r1", ppl_good=1.5, ppl_bad=4.0)
    clock = T.EventClock("r1")
    tr = T.Trace.fold(evs[:-1] + [clock.stamp(e) for e in extra] + evs[-1:])
    tri = triage(tr, correct=True)
    assert "vf1" not in tri.path                    # a passed review is a side branch
    recs = {r["node"]: r for r in C.node_records(tr, tri, method="par-rag", run_id="r1",
                                                 question_id="h1", split="test",
                                                 check_kinds=("verify",))}
    assert recs["vf1"]["labels"]["correct_path"] == 1.0        # it judged v1, on the path
    assert recs["vf2"]["labels"]["correct_path"] == 0.0        # it judged v2, off the path
    assert recs["vf1"]["signals"] == {"C": 0.9, "verdict": 1.0}
    plain = {r["node"]: r for r in C.node_records(tr, tri, method="m", run_id="r1",
                                                  question_id="h1", split="test")}
    assert plain["vf1"]["labels"]["correct_path"] == 0.0       # without the declaration
    from workbench.methods import all_methods
    assert all_methods()["par-rag"].check_kinds == ("verify",)


def records(n, rng):
    out = []
    for i in range(n):
        tr = T.Trace.fold(run_events(f"r{i}", ppl_good=1.2 + rng.random(),
                                     ppl_bad=1.8 + rng.random()))
        out += C.node_records(tr, triage(tr, correct=True), method="crp-rag", run_id=f"r{i}",
                              question_id=f"q{i}", split="train" if i % 2 else "test")
    return out


def test_report_ranks_signals_and_shows_counts_when_too_few():
    rng = np.random.default_rng(1)
    cells = C.node_report(records(30, rng))
    cell = {(c.kind, c.signal, c.label): c for c in cells}
    ppl = cell[("step", "perplexity", "gold_evidence")]
    # gold steps have perplexity 1.2-2.2, the others 1.8-2.8: low perplexity is confident
    assert ppl.n == 60 and ppl.n_pos == 30 and not ppl.too_few
    assert 0.7 < ppl.auroc < 1.0 and ppl.auroc_lo <= ppl.auroc <= ppl.auroc_hi
    assert ppl.ece is not None and len(ppl.bins) == C.N_BINS       # 1 / perplexity
    assert ppl.recal["n_train"] == 30 and ppl.recal["n_test"] == 30
    # the verdict separates them perfectly here, so it ranks first
    assert cell[("step", "verdict", "gold_evidence")].auroc == 1.0
    assert cell[("step", "verdict", "gold_evidence")].rank == 1 and ppl.rank == 3
    few = C.node_report(records(4, rng))
    small = next(c for c in few if (c.kind, c.signal, c.label) == ("step", "perplexity",
                                                                  "gold_evidence"))
    assert small.too_few and (small.n, small.n_pos) == (8, 4)
    assert small.auroc is None and small.ece is None and small.rank is None
    best, worst = C.best_and_worst(cells, "crp-rag")
    assert best.auroc >= worst.auroc


def test_answer_report_risk_coverage_per_method():
    items = [{"method": "m", "variant": "", "confidence": c, "correct": y,
              "split": "test"} for c, y in zip(np.linspace(0.05, 0.95, 40), [0] * 20 + [1] * 20)]
    (row,) = C.answer_report(items)
    assert row["auroc"] == 1.0 and row["at_coverage"]["accuracy"] == 1.0
    assert row["at_coverage"]["coverage"] == 0.5 and "recal" not in row     # no train split
    (small,) = C.answer_report(items[:5])
    assert small["too_few"] and "auroc" not in small


# --- the CLI ---

def store_eval(st, n, rng, eval_id="ev1"):
    """An eval of n runs, a third of them wrong, written in a few transactions."""
    st.execute("INSERT INTO eval_batches (eval_id, created_at, status, dataset) "
               "VALUES (?, 0, 'finished', 'toy')", [eval_id])
    events, runs, items = [], [], []
    for i in range(n):
        good = i % 3 != 0
        rid = f"{eval_id}-run{i}"
        events += run_events(rid, ppl_good=1.2 + rng.random(), ppl_bad=1.8 + rng.random(),
                             answer="Christopher Nolan" if good else "Ridley Scott")
        runs.append([rid, "crp-rag", HOTPOT["question"], "finished", eval_id])
        items.append([eval_id, f"k{i}", rid, f"q{i}", "crp-rag", "", good,
                      0.3 + 0.6 * good * rng.random()])
    st.add_events(events)
    st.executemany("INSERT INTO runs (run_id, method, question, status, eval_id) "
                   "VALUES (?, ?, ?, ?, ?)", runs)
    st.executemany("INSERT INTO eval_items (eval_id, item_key, run_id, question_id, method, "
                   "variant, correct, confidence) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", items)


def test_cli_eval_calibration(capsys):
    st = Store()
    store_eval(st, 24, np.random.default_rng(2))
    assert cli.main(["eval", "calibration", "ev1", "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    rep = json.loads(out[-1])
    assert rep["n_runs"] == 24 and rep["n_nodes"] == 24 * 4
    (ans,) = rep["answers"]
    assert ans["n"] == 24 and ans["at_coverage"]["coverage"] >= 0.5
    cells = {(c["kind"], c["signal"], c["label"]): c for c in rep["nodes"]}
    assert cells[("*", "perplexity", "gold_evidence")]["auroc"] > 0.5
    text = "\n".join(out[:-1])
    assert "final answer: confidence against correctness" in text
    assert "holds gold evidence              verdict          n=48 (24 positive) #1" in text
    assert cli.main(["eval", "calibration", "nope"]) == 2
    assert "no eval 'nope'" in capsys.readouterr().err


def test_weighted_auroc_is_the_auroc_of_the_repeated_items():
    # the bootstrap weighs items by how often their cluster was drawn
    rng = np.random.default_rng(4)
    for _ in range(50):
        n = int(rng.integers(2, 30))
        x, y = np.round(rng.random(n), 1), (rng.random(n) < 0.5).astype(float)
        w = rng.integers(0, 3, n)
        ref = C.auroc(np.repeat(x, w), np.repeat(y, w))
        got = C.weighted_auroc(x, y, w.astype(float))[0]
        assert (ref is None and np.isnan(got)) or got == pytest.approx(ref)


# --- the view (the Evaluate page calls it under its Results tab) ---

def _panel_app():
    import streamlit as st

    from workbench.store import Store
    from workbench.ui.calibration_view import calibration_panel
    calibration_panel(Store(), st.session_state.get("eval_id", "ev1"), key="cal")


def test_calibration_view_ranks_signals_and_slides_the_coverage():
    from streamlit.testing.v1 import AppTest
    store_eval(Store(), 24, np.random.default_rng(2))
    at = AppTest.from_function(_panel_app, default_timeout=60)
    at.run()
    assert not at.dataframe                                  # off until asked for
    at.toggle(key="cal__on").set_value(True).run()
    assert not at.exception and not at.error
    answers = at.dataframe[0].value
    assert list(answers["n"]) == [24] and answers["accuracy at coverage"].iloc[0] == 1.0
    at.slider(key="cal__cov").set_value(1.0).run()
    answers = at.dataframe[0].value
    assert answers["accuracy at coverage"].iloc[0] == pytest.approx(16 / 24, abs=1e-3)
    # first label (on a correct answer's path) and every node kind
    assert (at.selectbox(key="cal__l").value, at.selectbox(key="cal__k").value) == \
        ("correct_path", "*")
    signals = at.dataframe[1].value
    assert list(signals["signal"])[:1] == ["verdict"] and signals["rank"].iloc[0] == 1
    assert len(at.get("plotly_chart")) == 2                  # risk-coverage, reliability
    # an eval of 6 runs: counts, and no number
    store_eval(Store(), 6, np.random.default_rng(5), eval_id="ev2")
    at.session_state["eval_id"] = "ev2"
    at.run()
    assert at.dataframe[0].value["note"].iloc[0] == "too few answers with a confidence"
    rows = at.dataframe[1].value
    assert set(rows["note"]) == {"too few labelled nodes"} and rows["auroc"].isna().all()
    assert (rows["labelled"] > 0).all() and len(at.get("plotly_chart")) == 0
