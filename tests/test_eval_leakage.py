"""Evaluation refuses to score a method on questions its fitted state saw."""
from __future__ import annotations

import json

import pytest

from tests.kg_toy import import_toy_dataset
from workbench import cli
from workbench.datasets import load_dataset
from workbench.eval import leakage
from workbench.eval.runner import EvalSpec, plan_variants
from workbench.methods import all_methods
from workbench.methods.frag import router as frag_router


@pytest.fixture
def toy(tmp_path):
    import_toy_dataset(tmp_path / "src")
    frag_router.clear_cache()
    yield load_dataset("toy")
    frag_router.clear_cache()


def _variants(methods, sets=None):
    return plan_variants(EvalSpec(dataset="toy", methods=methods, sets=sets or {}),
                         all_methods())


def test_find_flags_a_router_scored_on_its_training_questions(toy):
    vs = _variants(["frag"], {"router": "toy:train", "ranker": "tfidf"})
    leaks = leakage.find(toy.split("train"), "toy", vs, all_methods())
    assert len(leaks) == 1
    lk = leaks[0]
    assert (lk.method, lk.kind, lk.fitted_on, lk.n) == ("frag", "frag_router", "toy:train", 2)
    assert sorted(lk.examples) == ["t1", "t3"]
    assert leakage.find(toy.split("test"), "toy", vs, all_methods()) == []
    # a forced route uses no router, so it fits nothing
    forced = _variants(["frag"], {"router": "toy:train", "route": "complex"})
    assert leakage.find(toy.split("train"), "toy", forced, all_methods()) == []
    msg = leakage.message(leaks, "train")
    assert "toy:train" in msg and "--allow-leakage" in msg and "t1" in msg


def test_guard_refuses_unless_allowed_and_records_the_leak(toy):
    vs = _variants(["frag"], {"router": "toy:train"})
    spec = EvalSpec(dataset="toy", methods=["frag"], split="train")
    with pytest.raises(leakage.LeakageError, match="refusing to evaluate"):
        leakage.guard(spec, toy.split("train"), vs, all_methods())
    spec.allow_leakage = True
    assert leakage.guard(spec, toy.split("train"), vs, all_methods())
    marked = leakage.marked(spec.to_dict())
    assert list(marked) == [("frag", vs[0].label)]


def _eval(args, capsys):
    code = cli.main(["eval", "--no-progress", "--judge", "off", *args])
    return code, capsys.readouterr()


def test_cli_eval_refuses_a_leaking_configuration(tmp_path, capsys):
    table = tmp_path / "rules.json"
    table.write_text(json.dumps({"rules": [], "default": "Christopher Nolan"}))
    base = ["--dataset", "demo", "--methods", "frag", "--set", "ranker=tfidf", "--limit", "2",
            "--scripted", str(table)]
    code, out = _eval([*base, "--split", "train"], capsys)
    assert code == 2
    assert "refusing to evaluate" in out.err and "demo:train" in out.err
    assert "frag_router" in out.err and "--allow-leakage" in out.err
    assert cli.main(["eval", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []           # nothing was started
    code, out = _eval([*base, "--split", "test"], capsys)       # held out: runs
    assert code == 0, out.err
    code, out = _eval([*base, "--split", "train", "--allow-leakage"], capsys)
    assert code == 0, out.err
    assert cli.main(["eval", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    spec = shown["eval"]["spec"]
    assert spec["split"] == "train" and spec["allow_leakage"] is True
    assert spec["leakage"] and spec["leakage"][0]["kind"] == "frag_router"
    assert set(spec["question_ids"]) <= {q.id for q in load_dataset("demo").split("train")}


def test_shipped_crp_tau_is_refused_on_its_calibration_split():
    demo = load_dataset("demo")
    vs = plan_variants(EvalSpec(dataset="demo", methods=["crp-rag", "vanilla"]), all_methods())
    leaks = leakage.find(demo.split("train"), "demo", vs, all_methods())
    assert [lk.kind for lk in leaks] == ["crp_tau_ppl"]
    assert leakage.find(demo.split("test"), "demo", vs, all_methods()) == []
    own_tau = plan_variants(EvalSpec(dataset="demo", methods=["crp-rag"],
                                     sets={"tau_ppl": 2.5}), all_methods())
    assert leakage.find(demo.split("train"), "demo", own_tau, all_methods()) == []
