"""Metric profiles (workbench.eval.metrics): ``official`` is exactly the HotpotQA
(``hotpot_evaluate_v1.py``) / MuSiQue (``metrics/answer.py``) definitions, ``lenient`` is
what the workbench computed before profiles, ``crp-paper`` is CRP-RAG's Eqs. 14-15. One
normalisation and one contains-match everywhere; the profile is stored with every eval
and shown by ``eval show``; ``python -m workbench score`` prints one pair's metrics.

The expected values in CASES were worked out by hand from the official definitions:
normalise = lower-case, delete the characters of ``string.punctuation`` (ASCII only),
delete the words a/an/the, collapse whitespace (str.split: Unicode whitespace, NBSP
included). EM: normalised strings equal. F1: token-multiset overlap, 2PR/(P+R); if
either normalised side is yes/no/noanswer and they differ, F1 = 0 (HotpotQA); two
empty token lists score 1 (MuSiQue / SQuAD 2.0). Max over golds. contains: a normalised
gold occurs as whole tokens in the normalised prediction (an empty gold never does).
"""
from __future__ import annotations

import json

import pytest

from workbench.eval import metrics as M
from workbench.methods.answers import contains_gold, hit_at_1, normalize_answer as C_norm

T = 2 / 3

# (prediction, gold(s), official EM, official F1, contains)
CASES = [
    # plain, case, whitespace
    ("Paris", "Paris", 1, 1, 1),
    ("paris", "PARIS", 1, 1, 1),
    ("  Paris  ", "Paris", 1, 1, 1),
    ("Paris\n", "paris", 1, 1, 1),
    ("Paris\u00a0France", "Paris France", 1, 1, 1),          # NBSP is whitespace to str.split
    # articles
    ("The Eiffel Tower", "Eiffel Tower", 1, 1, 1),
    ("an apple", "apple", 1, 1, 1),
    ("A Tale of Two Cities", "Tale of Two Cities", 1, 1, 1),
    ("tale of two cities", "A Tale of Two Cities", 1, 1, 1),
    ("Athens", "Athens", 1, 1, 1),                              # no article inside a word
    ("theater", "the", 0, 0, 0),                                # gold normalises to nothing
    ("An", "Anne", 0, 0, 0),
    ("the 1960s", "1960s", 1, 1, 1),
    # ASCII punctuation goes, typographic punctuation stays
    ("It was O’Brien.", "O'Brien", 0, 0, 0),                    # "it was o’brien" vs "obrien"
    ("O’Brien", "O'Brien", 0, 0, 0),
    ("O’Brien", "O’Brien", 1, 1, 1),
    ("It was O'Brien's", "O'Brien", 0, 0, 0),                   # "obriens"
    ("Mr. O'Neil", "O'Neil", 0, T, 1),                          # "mr oneil" vs "oneil"
    ("“Hamlet”", "Hamlet", 0, 0, 0),
    ('"Hamlet"', "Hamlet", 1, 1, 1),
    ("1939–1945", "1939-1945", 0, 0, 0),                        # en dash kept, hyphen dropped
    ("1939-1945", "1939–1945", 0, 0, 0),
    ("1960’s", "1960s", 0, 0, 0),
    ("Dr. Who…", "Dr Who", 0, 0.5, 0),                          # [dr, who…] vs [dr, who]
    ("Dr. Who...", "Dr Who", 1, 1, 1),
    ("U.S.A.", "USA", 1, 1, 1),
    ("U.S.", "us", 1, 1, 1),
    ("e.g. Paris", "Paris", 0, T, 1),
    ("rock-and-roll", "rock and roll", 0, 0, 0),                # "rockandroll"
    ("rock and roll", "rock-and-roll", 0, 0, 0),
    ("Answer: Paris", "Paris", 0, T, 1),
    ("Paris, France", "Paris", 0, T, 1),
    # punctuation-only and empty predictions
    ("...", "Paris", 0, 0, 0),
    ("", "Paris", 0, 0, 0),
    ("Paris", "...", 0, 0, 0),
    ("?!", "...", 1, 1, 0),           # both normalise to "": EM 1, F1 1 (MuSiQue), never contained
    # partial overlap
    ("Barack Obama was president", "Barack Obama", 0, T, 1),   # P 2/4, R 1
    ("Nolan", "Christopher Nolan", 0, T, 0),                    # P 1, R 1/2
    ("x y y", "y y z", 0, T, 0),                                # common {y: 2}
    ("July 4, 1776", "4 July 1776", 0, 1, 0),                   # same bag of tokens
    # numbers and units
    ("released in 1999", "1999", 0, 0.5, 1),
    ("released in 19999", "1999", 0, 0, 0),
    ("1", "1999", 0, 0, 0),
    ("1999", "1", 0, 0, 0),
    ("1,000", "1000", 1, 1, 1),
    ("3.5 km", "3.5km", 0, 0, 0),                               # "35 km" vs "35km"
    ("3.5 km", "3.5 kilometres", 0, 0.5, 0),
    ("100 m", "100 metres", 0, 0.5, 0),
    ("$5 million", "5 million", 1, 1, 1),
    ("50%", "50 percent", 0, T, 0),
    ("50 percent", "50%", 0, T, 1),
    ("42 years old", ["42", "forty-two"], 0, 0.5, 1),
    ("forty-two", ["42", "forty two"], 0, 0, 0),                # "fortytwo"
    # yes / no / noanswer (HotpotQA's F1 rule)
    ("yes", "yes", 1, 1, 1),
    ("Yes.", "yes", 1, 1, 1),
    ("no", "yes", 0, 0, 0),
    ("yes it is", "yes", 0, 0, 1),                              # lenient: 0.5
    ("yes", "yes it is", 0, 0, 0),                              # the prediction is "yes"
    ("no, it is not", "no", 0, 0, 1),                           # lenient: 0.4
    ("yes yes", "yes", 0, 0, 1),                                # lenient: 2/3
    ("No answer", "noanswer", 0, 0, 0),
    ("noanswer", "noanswer", 1, 1, 1),
    ("noanswer", "Paris", 0, 0, 0),
    ("none", "no", 0, 0, 0),
    ("NO", ["No", "None"], 1, 1, 1),
    # several golds: the max
    ("Fab four.", ["Beatles", "Fab Four"], 1, 1, 1),
    ("the Beatles band", ["The Beatles", "Fab Four"], 0, T, 1),
    ("yes", ["no", "yes"], 1, 1, 1),
    ("maybe yes", ["no", "yes"], 0, 0, 1),
    ("London", ["Paris", "Lyon"], 0, 0, 0),
    # unicode: lower-cased, never folded
    ("Zürich", "Zurich", 0, 0, 0),
    ("ZÜRICH", "Zürich", 1, 1, 1),
    ("Café", "Cafe\u0301", 0, 0, 0),                            # composed vs decomposed é
    ("ＰＡＲＩＳ", "Paris", 0, 0, 0),                           # full-width letters
    ("ﬁsh", "fish", 0, 0, 0),                                   # the fi ligature
    # CRAG's "invalid" answers are plain strings to EM/F1
    ("invalid question", "invalid question", 1, 1, 1),
    ("This is an invalid question.", "invalid question", 0, T, 1),  # [this is invalid question]
]


def test_the_table_is_large_enough():
    assert len(CASES) >= 60


@pytest.mark.parametrize("pred,golds,em,f1,cont", CASES)
def test_official_profile_matches_the_official_scripts(pred, golds, em, f1, cont):
    assert M.exact_match(pred, golds) == em
    assert M.token_f1(pred, golds) == pytest.approx(f1)
    assert M.contains_match(pred, golds) == cont
    # the default is the official profile, and every spelling of it agrees
    assert M.exact_match(pred, golds, "official") == em
    assert M.token_f1(pred, golds, "official") == pytest.approx(f1)
    gl = [golds] if isinstance(golds, str) else golds
    assert contains_gold(pred, gl) is bool(cont)
    m = M.answer_metrics(pred, golds)
    assert (m["profile"], m["em"], m["contains"]) == ("official", em, cont)
    assert m["f1"] == pytest.approx(f1)


@pytest.mark.parametrize("pred,golds,em,f1,cont", CASES)
def test_one_contains_match_everywhere(pred, golds, em, f1, cont):
    """The benchmarks' accuracy (methods.answers.contains_gold) and the evals' contains
    (eval.metrics.contains_match) are one function, in every profile."""
    gl = [golds] if isinstance(golds, str) else golds
    for prof in M.METRIC_PROFILES:
        assert contains_gold(pred, gl, prof) is bool(M.contains_match(pred, gl, prof))
    assert C_norm(pred) == M.normalize_answer(pred)
    assert C_norm is M.normalize_answer


def test_typographic_answer_scores_alike_in_one_row():
    """Finding: EM 1 and accuracy 0 for the same answer in one table row."""
    pred, gold = "It was O’Brien.", ["O'Brien"]
    assert bool(M.contains_match(pred, gold)) == contains_gold(pred, gold)
    assert (M.exact_match("O’Brien", gold), contains_gold(pred, gold)) == (0.0, False)
    for prof in M.METRIC_PROFILES:
        assert bool(M.contains_match(pred, gold, prof)) == contains_gold(pred, gold, prof)
    assert (M.exact_match("O’Brien", gold, "lenient"),
            contains_gold(pred, gold, "lenient")) == (1.0, True)


def test_official_does_not_fold_unicode_or_typographic_punctuation():
    """Finding: NFKC and typographic folding made EM/F1 more lenient than the scripts."""
    assert M.normalize_answer("ＰＡＲＩＳ “Hamlet” – ﬁ") == "ｐａｒｉｓ “hamlet” – ﬁ"
    assert M.exact_match("ＰＡＲＩＳ", "Paris") == 0.0
    assert M.exact_match("“Hamlet”", "Hamlet") == 0.0
    assert M.token_f1("O’Brien", "O'Brien") == 0.0


def test_hotpotqa_yes_no_rule():
    """Finding: HotpotQA's F1 is 0 when a yes/no/noanswer side differs."""
    assert M.token_f1("yes it is", "yes") == 0.0
    assert M.token_f1("no, it is not", "no") == 0.0
    assert M.token_f1("yes", "yes it is") == 0.0
    assert M.token_f1("no", "no.") == 1.0


# -- lenient keeps today's numbers -------------------------------------------------

LENIENT = [   # (pred, gold, em, f1, contains): what the workbench computed before profiles
    ("It was O’Brien.", "O'Brien", 0, 0.5, 1),
    ("O’Brien", "O'Brien", 1, 1, 1),
    ("“Hamlet”", "Hamlet", 1, 1, 1),
    ("1939–1945", "1939-1945", 1, 1, 1),
    ("Dr. Who…", "Dr Who", 1, 1, 1),
    ("ＰＡＲＩＳ", "Paris", 1, 1, 1),
    ("Café", "Cafe\u0301", 1, 1, 1),
    ("ﬁsh", "fish", 1, 1, 1),
    ("yes it is", "yes", 0, 0.5, 1),
    ("no, it is not", "no", 0, 0.4, 1),
    ("yes yes", "yes", 0, T, 1),
    ("Barack Obama was president", "Barack Obama", 0, T, 1),
    ("released in 19999", "1999", 0, 0, 0),
    ("Zürich", "Zurich", 0, 0, 0),
]


@pytest.mark.parametrize("pred,gold,em,f1,cont", LENIENT)
def test_lenient_profile_keeps_todays_numbers(pred, gold, em, f1, cont):
    assert M.exact_match(pred, gold, "lenient") == em
    assert M.token_f1(pred, gold, "lenient") == pytest.approx(f1)
    assert M.contains_match(pred, gold, "lenient") == cont


def test_lenient_is_documented_in_the_module_docstring():
    doc = M.__doc__
    for word in ("official", "lenient", "crp-paper", "NFKC", "typographic", "noanswer"):
        assert word in doc


# -- golds --------------------------------------------------------------------------

def test_blank_gold_is_no_gold_however_it_is_given():
    """Finding: ``_golds("")`` was [""] but ``_golds([""])`` was []."""
    assert M.exact_match("", "") == M.exact_match("", [""]) == 0.0
    assert M._golds("") == M._golds([""]) == M._golds("  ") == M._golds(None) == []
    for prof in M.METRIC_PROFILES:
        assert M.exact_match("", "", prof) == M.exact_match("", [""], prof) == 0.0
        assert M.token_f1("", "", prof) == M.token_f1("", [""], prof) == 0.0
        assert M.contains_match("x", "", prof) == 0.0


# -- crp-paper ---------------------------------------------------------------------

def test_crp_paper_profile_is_eqs_14_and_15():
    """Finding: nothing named the paper's EM (containment) and F1 (ROUGE-L >= tau)."""
    pred, gold = "The director was Christopher Nolan in 2010", "Christopher Nolan"
    assert M.exact_match(pred, gold, "crp-paper") == 1.0            # contained
    assert M.exact_match(pred, gold) == 0.0                         # official: not equal
    # ROUGE-L over [director, was, christopher, nolan, in, 2010] vs [christopher, nolan]:
    # LCS 2, 2*2/(6+2) = 0.5
    assert M.rouge_l(pred, gold, "crp-paper") == pytest.approx(0.5)
    assert M.token_f1(pred, gold, "crp-paper") == 1.0               # 0.5 >= tau 0.5
    assert M.token_f1(pred, gold, "crp-paper", tau=0.6) == 0.0
    assert M.token_f1("Nolan", gold, "crp-paper") == 1.0            # 2*1/(1+2) = 2/3
    assert M.token_f1("Nolan", gold, "crp-paper", tau=0.7) == 0.0
    m = M.answer_metrics(pred, gold, "crp-paper")
    assert m["em"] == m["contains"] and m["f1"] == m["rouge_f1"]
    # the paper does not say how it normalises: the official normalisation
    assert M.exact_match("It was O’Brien.", "O'Brien", "crp-paper") == 0.0


def test_unknown_profile_is_refused_naming_the_valid_ones():
    with pytest.raises(ValueError, match="official, lenient, crp-paper"):
        M.exact_match("a", "a", "strict")
    with pytest.raises(ValueError, match="official, lenient, crp-paper"):
        M.score_answer("q", "a", ["a"], metric_profile="squad")


# -- CRAG's "invalid" rule is both-sided ----------------------------------------------

def test_crag_official_invalid_rule_is_both_sided():
    """Finding: a prediction containing "invalid" against a normal gold went to the judge."""
    v = M.crag_label("That is an invalid question.", ["Paris"], profile="crag_official",
                     judge_verdict=True, judge_called=True)
    assert (v.label, v.decided_by) == ("hallucinated", "invalid_rule")
    v = M.crag_label("42", ["invalid question"], profile="crag_official", judge_called=True)
    assert (v.label, v.decided_by) == ("hallucinated", "invalid_rule")
    v = M.crag_label("invalid", ["invalid question"], profile="crag_official", judge_called=True)
    assert (v.label, v.decided_by) == ("accurate", "invalid_rule")
    # paper mode has no such rule: the judge decides
    v = M.crag_label("That is an invalid question.", ["Paris"], judge_verdict=True,
                     judge_called=True)
    assert v.decided_by == "llm_judge"


def test_crag_official_invalid_prediction_costs_no_judge_call():
    class Judge:
        label, calls = "fake", 0

        def crag(self, *a):
            Judge.calls += 1
            return M.JudgeVerdict(True, '{"Accuracy": "True"}')

        def acc_lm(self, *a):
            return self.crag()

    meta = {"domain": "finance", "question_type": "simple", "static_or_dynamic": "static"}
    s = M.score_answer("q", "Invalid question.", ["Paris"], meta=meta, judge=Judge(),
                       crag_profile="crag_official")
    assert (s.crag_label, s.crag_decided_by, Judge.calls) == ("hallucinated", "invalid_rule", 0)


# -- other users of the one normalisation --------------------------------------------

def test_score_answer_follows_the_profile():
    off = M.score_answer("q", "It was O’Brien.", ["O'Brien"])
    len_ = M.score_answer("q", "It was O’Brien.", ["O'Brien"], metric_profile="lenient")
    crp = M.score_answer("q", "The answer: Paris, France", ["Paris"], metric_profile="crp-paper")
    assert (off.metric_profile, off.em, off.contains, off.correct) == ("official", 0, 0, False)
    assert (len_.metric_profile, len_.contains, len_.correct) == ("lenient", 1, True)
    assert crp.em == crp.contains == 1.0 and crp.f1 == crp.rouge_f1


def test_frag_hits_stay_substring_on_the_one_normalisation():
    assert hit_at_1("The answer is Ilse Varga.", ["Ilse Varga"])
    assert hit_at_1("19999", ["1999"]) and not contains_gold("19999", ["1999"])
    assert M.hits_at_1("Ilse Varga\nmore", ["ilse varga"]) == 1.0


def test_ui_gold_judge_uses_the_one_contains():
    from workbench.ui.gold import judge
    v = judge("It was released in 19999.", ["1999"])
    assert v["contains"] == 0.0 and v["correct"] is False     # was a substring match
    v = judge("It was Paris.", ["Paris"], refused=False)
    assert v["correct"] is True and v["profile"] == "official"


# -- the profile is stored with every eval and shown ----------------------------------

def _toy_eval(store, **spec_kw):
    from tests.test_eval_helpers import ToyDataset, answer_rules, toy_methods
    from workbench.eval.runner import EvalRunner, EvalSpec
    from workbench.llm.scripted import ScriptedBackend
    spec = EvalSpec("toy", ["toy-llm"], judge="off", limit=4, **spec_kw)
    r = EvalRunner.new(store, spec, dataset=ToyDataset(), method_classes=toy_methods(),
                       backend=ScriptedBackend.from_table(answer_rules(), default="grey"))
    r.run()
    return r.eval_id


def test_profile_is_stored_with_the_eval_and_shown(isolated_home, capsys):
    from workbench.cli import main
    from workbench.eval.runner import get_eval
    from workbench.store import Store
    st = Store()
    eid = _toy_eval(st)
    capsys.readouterr()
    assert main(["eval", "show", eid]) == 0
    assert "metrics: official profile" in capsys.readouterr().out
    assert get_eval(st, eid)["spec"]["metric_profile"] == "official"
    eid2 = _toy_eval(st, metric_profile="crp-paper")
    spec = get_eval(st, eid2)["spec"]
    assert spec["metric_profile"] == "crp-paper"
    rows = st.query("SELECT em, contains, f1, rouge_f1 FROM eval_items WHERE eval_id = ?", [eid2])
    assert rows and all(r["em"] == r["contains"] and r["f1"] == r["rouge_f1"] for r in rows)
    capsys.readouterr()
    assert main(["eval", "show", eid2]) == 0
    assert "metrics: crp-paper profile · tau_f1 0.5" in capsys.readouterr().out
    assert main(["eval", "show", eid, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metric_profile"] == "official"


def test_an_eval_stored_before_profiles_reads_as_lenient(isolated_home, capsys):
    from workbench.cli import main
    from workbench.eval.plan import EvalSpec
    from workbench.eval.runner import get_eval
    from workbench.store import Store
    st = Store()
    eid = _toy_eval(st)
    spec = get_eval(st, eid)["spec"]
    spec.pop("metric_profile")
    st.execute("UPDATE eval_batches SET spec = ? WHERE eval_id = ?", [json.dumps(spec), eid])
    assert M.profile_of(get_eval(st, eid)["spec"]) == "lenient"
    assert EvalSpec.from_dict(get_eval(st, eid)["spec"]).metric_profile == "lenient"  # resume
    assert EvalSpec.from_dict({"dataset": "d", "methods": ["m"],
                               "metric_profile": "official"}).metric_profile == "official"
    capsys.readouterr()
    assert main(["eval", "show", eid]) == 0
    assert "metrics: lenient profile (stored before profiles existed)" in capsys.readouterr().out


def test_sweep_key_and_cli_option(tmp_path):
    from workbench.commands.eval import register
    from workbench.eval.plan import EvalSpec, apply_sweep, load_sweep
    f = tmp_path / "s.yaml"
    f.write_text("methods: [vanilla]\nmetric_profile: lenient\n")
    spec = apply_sweep(EvalSpec("d", []), load_sweep(str(f)))
    assert spec.metric_profile == "lenient"
    bad = EvalSpec("d", ["m"], metric_profile="squad")
    with pytest.raises(ValueError, match="valid: official, lenient, crp-paper"):
        bad.check()
    import argparse
    ap = argparse.ArgumentParser()
    register(ap.add_subparsers())
    assert ap.parse_args(["eval", "--metric-profile", "crp-paper"]).metric_profile == "crp-paper"


# -- python -m workbench score ------------------------------------------------------

def test_score_cli_text(capsys):
    from workbench.cli import main
    assert main(["score", "It was O’Brien.", "O'Brien", "Obrien"]) == 0
    out = capsys.readouterr().out
    lines = {ln.split()[0]: ln.split()[1:] for ln in out.splitlines() if ln.split()}
    assert lines["profile"] == ["em", "f1", "contains", "rouge_l", "rouge_f1", "hits1"]
    assert lines["official"][:3] == ["0.000", "0.000", "0.000"]
    assert lines["lenient"][:3] == ["0.000", "0.500", "1.000"]
    assert "crp-paper" in lines and "CRAG" in out


def test_score_cli_json_and_profile(capsys):
    from workbench.cli import main
    assert main(["score", "yes it is", "yes", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d["profiles"]) == {"official", "lenient", "crp-paper"}
    assert d["profiles"]["official"]["f1"] == 0.0 and d["profiles"]["lenient"]["f1"] == 0.5
    assert d["profiles"]["official"]["contains"] == 1.0 and d["golds"] == ["yes"]
    assert d["crag"]["crag_official"]["label"] == "hallucinated"
    assert main(["score", "Paris", "Paris", "--profile", "crp-paper", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert list(d["profiles"]) == ["crp-paper"] and d["profiles"]["crp-paper"]["em"] == 1.0


def test_score_cli_unknown_profile_is_one_line(capsys):
    from workbench.cli import main
    assert main(["score", "a", "a", "--profile", "squad"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err == "error: unknown metric profile 'squad'; valid: official, lenient, crp-paper"
