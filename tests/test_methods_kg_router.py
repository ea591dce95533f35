"""FRAG's hop-range router: labels from KG shortest paths, training, JSON model, CLI."""
from __future__ import annotations

import json

import pytest

from tests.kg_toy import toy_kg
from workbench.methods import frag_router as R


@pytest.fixture(scope="module")
def kg():
    return toy_kg()


def test_template_labels_are_kg_shortest_path_distances(kg):
    qs = R.template_questions(kg, per_hop=20, seed=1)
    assert {q.hops for q in qs} >= {1, 2, 3}
    for q in qs:
        assert q.label == (1 if q.hops > R.DELTA else 0)
    assert len({q.text for q in qs}) == len(qs)


def test_delta_rule_simple_is_at_most_two_hops():
    assert R.LabelledQuestion("x", 2, "t").label == 0
    assert R.LabelledQuestion("x", 3, "t").label == 1


def test_train_save_load_roundtrip_and_accuracy(kg, tmp_path):
    r, rep = R.train_router(tmp_path, demo_kg=kg, datasets=[], per_hop=40)
    f = tmp_path / R.MODEL_FILE
    model = json.loads(f.read_text())            # plain JSON, no pickle
    assert model["kind"] == "tfidf_lr" and model["labels"]["complex"] > 0
    assert rep["train_accuracy"] >= 0.8
    R.clear_cache()
    r2 = R.load_router(tmp_path, auto_train=False)
    q = "What is the capital of the country of the birthplace of Ilse Varga?"
    assert r2.p_complex(q)[0] == pytest.approx(r.p_complex(q)[0])
    e = r2.estimate(q, 0.5)
    assert e.label == ("complex" if e.p_complex >= 0.5 else "simple")
    # p_complex grows with chain length for these template-shaped questions
    p1 = r2.p_complex("What is the directed by of Glass Harbor?")[0]
    p4 = r2.p_complex("What is the capital of the contains of the place of birth of the "
                      "directed by of Glass Harbor?")[0]
    assert p4 > p1


def test_auto_train_on_first_use_when_absent(kg, tmp_path, monkeypatch):
    monkeypatch.setattr(R, "collect_training_data",
                        lambda **kw: (R.template_questions(kg, per_hop=20), []))
    R.clear_cache()
    assert not (tmp_path / R.MODEL_FILE).exists()
    r = R.load_router(tmp_path)
    assert r is not None and (tmp_path / R.MODEL_FILE).exists()
    assert R.load_router(tmp_path, auto_train=False) is r      # cached


def test_no_training_data_means_no_router(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "collect_training_data", lambda **kw: ([], []))
    R.clear_cache()
    assert R.load_router(tmp_path) is None


def test_heuristic_counts_structure():
    h = R.HeuristicRouter()
    assert h.estimate("Who directed Inception?").label == "simple"
    assert h.estimate("Which country is the birthplace of the director of the film that "
                      "won the largest award?").label == "complex"


def test_feedback_samples_refit_the_router(kg, tmp_path):
    R.train_router(tmp_path, demo_kg=kg, datasets=[], per_hop=20, evaluate=False)
    q = "Zorbly quux frobnicate?"
    R.add_feedback(q, 4, tmp_path)
    R.add_feedback(q, 4, tmp_path)
    before = R.load_router(tmp_path).p_complex(q)[0]
    after = R.adapt_router(tmp_path).p_complex(q)[0]
    assert after > before
    assert json.loads((tmp_path / R.MODEL_FILE).read_text())["n_feedback"] == 2


def test_cli_train_router_and_route(kg, monkeypatch, capsys):
    from workbench import cli
    monkeypatch.setattr(R, "collect_training_data",
                        lambda **kw: (R.template_questions(kg, per_hop=20), []))
    R.clear_cache()
    assert cli.main(["frag", "train-router"]) == 0
    assert "saved" in capsys.readouterr().out
    assert cli.main(["frag", "route", "Who directed Glass Harbor?"]) == 0
    out = capsys.readouterr().out
    assert "p_complex=" in out and ("SIMPLE" in out or "COMPLEX" in out)
