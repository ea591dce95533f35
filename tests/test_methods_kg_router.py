"""FRAG's hop-range router: labels from KG shortest paths, training on one named split,
held-out accuracy, the JSON model and its fit record, FRAG-F copies, the CLI."""
from __future__ import annotations

import json

import pytest

from tests.kg_toy import QUESTIONS, import_toy_dataset, toy_kg
from workbench.datasets import load_dataset
from workbench.methods.frag import router as R


@pytest.fixture(scope="module")
def kg():
    return toy_kg()


@pytest.fixture
def toy(tmp_path):
    import_toy_dataset(tmp_path / "src")
    R.clear_cache()
    yield load_dataset("toy")
    R.clear_cache()


def test_template_labels_are_kg_shortest_path_distances(kg):
    qs = R.template_questions(kg, per_hop=20, seed=1)
    assert {q.hops for q in qs} >= {1, 2, 3}
    for q in qs:
        assert q.label == (1 if q.hops > R.DELTA else 0)
    assert len({q.text for q in qs}) == len(qs)


def test_delta_rule_simple_is_at_most_two_hops():
    assert R.LabelledQuestion("x", 2, "t").label == 0
    assert R.LabelledQuestion("x", 3, "t").label == 1


def test_train_save_load_roundtrip_and_report(toy, tmp_path):
    r, rep = R.train_router("toy:train", out_dir=tmp_path, per_hop=40)
    f = tmp_path / "toy-train.json"
    model = json.loads(f.read_text())            # plain JSON, no pickle
    assert model["kind"] == "tfidf_lr" and model["labels"]["complex"] > 0
    assert rep["n_questions"] == 2 and rep["in_sample_accuracy"] is not None
    assert set(rep["heldout"]) == {"test"} and rep["heldout"]["test"]["n"] == 2
    R.clear_cache()
    r2 = R.load_router("toy-train", out_dir=tmp_path, auto_train=False)
    q = "What is the capital of the country of the birthplace of Ilse Varga?"
    assert r2.p_complex(q)[0] == pytest.approx(r.p_complex(q)[0])
    e = r2.estimate(q, 0.5)
    assert e.label == ("complex" if e.p_complex >= 0.5 else "simple")
    p1 = r2.p_complex("What is the directed by of Glass Harbor?")[0]
    p4 = r2.p_complex("What is the capital of the contains of the place of birth of the "
                      "directed by of Glass Harbor?")[0]
    assert p4 > p1


def test_router_sees_only_its_split(toy, tmp_path):
    r, _ = R.train_router("toy:train", out_dir=tmp_path, per_hop=20)
    rec = r.record
    assert (rec.kind, rec.dataset, rec.split) == ("frag_router", "toy", "train")
    assert sorted(rec.question_ids) == ["t1", "t3"]
    texts = {t for t, _, _ in r.model["train_data"]}
    test_qs = toy.split("test")
    assert not texts & {q.question for q in test_qs}          # no test question trained on
    assert {q.question for q in toy.split("train")} <= texts
    assert rec.saw(test_qs, "toy") == []
    assert sorted(rec.saw(toy.questions, "toy")) == ["t1", "t3"]
    # the same question text under another dataset name is still recognised
    assert rec.saw([QUESTIONS[0]], "elsewhere") == ["t1"]


def test_auto_train_on_first_use_of_a_reference(toy, tmp_path):
    assert not (tmp_path / "toy-train.json").exists()
    r = R.load_router("toy:train", out_dir=tmp_path)
    assert r is not None and (tmp_path / "toy-train.json").exists()
    assert R.load_router("toy:train", out_dir=tmp_path, auto_train=False) is r   # cached
    assert R.load_router("no-such-router", out_dir=tmp_path) is None


def test_no_training_data_means_no_router(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "template_questions", lambda *a, **k: [])
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "questions.jsonl").write_text(
        json.dumps({"id": "a", "question": "Who?", "answers": ["x"], "hops": 1,
                    "split": "train"}) + "\n" +
        json.dumps({"id": "b", "question": "Who else?", "answers": ["y"], "hops": 1,
                    "split": "test"}) + "\n")
    from workbench.datasets import import_dataset
    import_dataset("jsonl", tmp_path / "src", "flat")
    R.clear_cache()
    assert R.load_router("flat:train", out_dir=tmp_path) is None       # one class only


def test_heuristic_counts_structure():
    h = R.HeuristicRouter()
    assert h.estimate("Who directed Inception?").label == "simple"
    assert h.estimate("Which country is the birthplace of the director of the film that "
                      "won the largest award?").label == "complex"


def test_feedback_adapts_a_copy_and_never_the_saved_router(toy, tmp_path):
    r, _ = R.train_router("toy:train", out_dir=tmp_path, per_hop=20)
    saved = (tmp_path / "toy-train.json").read_bytes()
    q = "Zorbly quux frobnicate?"
    fb = [R.LabelledQuestion(q, 4, "feedback")] * 2
    copy = R.adapted_copy(r, fb)
    assert copy.p_complex(q)[0] > r.p_complex(q)[0]
    assert copy.model["n_feedback"] == 2 and copy.model["base"] == "toy-train"
    assert (tmp_path / "toy-train.json").read_bytes() == saved
    R.clear_cache()
    again = R.load_router("toy-train", out_dir=tmp_path, auto_train=False)
    assert again.p_complex(q)[0] == pytest.approx(r.p_complex(q)[0])


def test_cli_train_router_and_route(toy, capsys):
    from workbench import cli
    assert cli.main(["frag", "train-router", "--train", "toy:train", "--per-hop", "20"]) == 0
    out = capsys.readouterr().out
    assert "in-sample" in out and "held out" in out and "saved" in out
    assert cli.main(["frag", "route", "Who directed Glass Harbor?", "--router",
                     "toy-train"]) == 0
    out = capsys.readouterr().out
    assert "p_complex=" in out and ("SIMPLE" in out or "COMPLEX" in out)


def test_batch_feedback_builds_a_new_router_over_a_share_of_a_split(toy, tmp_path,
                                                                    monkeypatch):
    from workbench.eval import leakage
    from workbench.eval.plan import EvalSpec, plan_variants
    from workbench.llm.scripted import ScriptedBackend
    from workbench.methods import all_methods
    from workbench.methods.frag.feedback import build_feedback_router
    monkeypatch.setattr(R, "default_dir", lambda: tmp_path / "routers")
    base, _ = R.train_router("toy:train", per_hop=20)
    saved = (tmp_path / "routers" / "toy-train.json").read_bytes()
    be = ScriptedBackend(default="Glass Harbor -> film.film.directed_by -> Ilse Varga -> "
                                 "people.person.place_of_birth -> Port Amsel -> "
                                 "location.location.containedby -> Norvania")
    r, rep = build_feedback_router(be, "toy", "test", base="toy:train", ratio=0.5,
                                   overrides={"ranker": "tfidf"})
    assert rep["target"] == 1 and rep["feedback"] == 1 and rep["consulted"] == 1
    assert len(be.calls) == 1 and "copy the one path" in be.calls[0]["prompt"]
    assert rep["rows"][0]["hops"] == 3 and rep["rows"][0]["y_fb"] == "complex"
    assert (tmp_path / "routers" / f"{rep['name']}.json").exists()
    assert (tmp_path / "routers" / "toy-train.json").read_bytes() == saved   # base untouched
    rec = r.record
    assert rec.supervision == "llm-feedback" and rec.fitted_on == "toy:test"
    assert rec.extra["base"] == "toy-train" and rec.extra["ratio"] == 0.5
    # evaluating with it on the split it saw is refused; the message points to another split
    vs = plan_variants(EvalSpec("toy", ["frag"], sets={"router": rep["name"]}), all_methods())
    leaks = leakage.find(toy.split("test"), "toy", vs, all_methods())
    assert [lk.supervision for lk in leaks] == ["llm-feedback"]
    assert "frag feedback --split dev" in leakage.message(leaks, "test")
