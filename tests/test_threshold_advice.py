"""Threshold advice: the gate value the train questions choose, and what it gives on the
dev/test questions against the default, paired (hand-built items and `eval thresholds`)."""
from __future__ import annotations

import json

import pytest

from workbench import cli
from workbench import trace as T
from workbench.analysis import thresholds as TH
from workbench.store import Store

TRAIN = ["t1", "t2", "t3", "t4"]
HELD = ["d1", "d2", "d3", "d4"]
# tau_ppl -> outcomes on the train questions, then on the held-out ones
OUTCOMES = {5.0: ([1, 0, 0, 1], [1, 0, 1, 0]),       # the default: 0.5 and 0.5
            10.0: ([1, 1, 0, 1], [1, 1, 1, 0]),      # best on train (0.75), 0.75 held out
            20.0: ([1, 0, 1, 0], [0, 0, 1, 0])}


def items(default=5.0):
    out = []
    for tau, (tr, ho) in OUTCOMES.items():
        knobs = {} if tau == default else {"tau_ppl": tau}
        for qs, ms, split in ((TRAIN, tr, "train"), (HELD, ho, None)):
            for i, (q, m) in enumerate(zip(qs, ms)):
                out.append({"method": "crp-rag", "variant": "" if not knobs else f"tau={tau}",
                            "knobs": knobs, "question_id": q, "seed": 0, "m": float(m),
                            "split": split or ("dev" if i < 2 else "test")})
    return out


def test_advice_chooses_on_train_and_pairs_held_out_against_the_default():
    (a,) = TH.advise(items(), {"crp-rag": {"tau_ppl": 5.0, "top_k": 5}})
    assert (a["knob"], a["best_value"], a["baseline"]) == ("tau_ppl", 10.0, "")
    rows = {r["value"]: r for r in a["values"]}
    assert rows[10.0]["train"] == 0.75 and rows[10.0]["dev"] == 1.0 and rows[10.0]["test"] == 0.5
    assert rows[20.0]["n_train"] == 4 and rows[20.0]["n_test"] == 2
    # held out: 0.75 against 0.5 over the same 4 questions; only d2 differs
    assert a["n_pairs"] == 4 and (a["held_best"], a["held_default"]) == (0.75, 0.5)
    assert a["diff"] == pytest.approx(0.25) and a["lo"] <= 0.25 <= a["hi"]
    assert a["note"].startswith("crp-rag: tau_ppl = 10.0 maximised the metric on train (0.750)")
    assert "+0.250" in a["note"]


def test_advice_says_what_it_cannot_measure():
    # top_k was never varied: no advice for it
    assert [a["knob"] for a in TH.advise(items(), {"crp-rag": {"tau_ppl": 5.0,
                                                                "top_k": 5}})] == ["tau_ppl"]
    # every variant sets tau_ppl, none at the default
    (a,) = TH.advise(items(default=None), {"crp-rag": {"tau_ppl": 7.0}})
    assert a["note"] == "the default tau_ppl = 7.0 was not run: no baseline to pair with"
    only_held = [r for r in items() if r["split"] != "train"]
    (a,) = TH.advise(only_held, {"crp-rag": {"tau_ppl": 5.0}})
    assert a["note"].startswith("no train question was run")


def test_cli_eval_thresholds(capsys):
    st = Store()
    st.execute("INSERT INTO eval_batches (eval_id, created_at, status, dataset) "
               "VALUES ('ev1', 0, 'finished', 'toy')")
    events, rows = [], []
    # the variant that sets nothing runs at crp-rag's shipped tau_ppl, 1.42
    for n, it in enumerate(items()):
        rid = f"run{n}"
        clock = T.EventClock(rid)
        events.append(clock.stamp(T.Event(T.RUN_STARTED, {
            "question": it["question_id"], "method": "crp-rag", "config": {},
            "gold": {"id": it["question_id"], "split": it["split"]}})))
        rows.append(["ev1", f"k{n}", rid, it["question_id"], "crp-rag", it["variant"],
                     json.dumps(it["knobs"]), 0, bool(it["m"])])
    st.add_events(events)
    st.executemany("INSERT INTO eval_items (eval_id, item_key, run_id, question_id, method, "
                   "variant, knobs, seed, correct) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    assert cli.main(["eval", "thresholds", "ev1", "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    (a,) = json.loads(out[-1])["advice"]
    assert (a["knob"], a["best_value"], a["default"]) == ("tau_ppl", 10.0, 1.42)
    assert a["diff"] == pytest.approx(0.25) and a["baseline"] == ""
    assert [r["value"] for r in a["values"]] == [1.42, 10.0, 20.0]
    assert any("<- best on train" in line and "tau_ppl = 10.0" in line for line in out)
    assert cli.main(["eval", "thresholds", "nope"]) == 2
    assert "no eval 'nope'" in capsys.readouterr().err
