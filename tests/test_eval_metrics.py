"""Metrics on hand-made cases: SQuAD EM/F1, containment, ROUGE-L F1, Hits@1, CRAG labels
and summaries, FEVER labels, the judge, node-level structure scores, intervals."""
import math

import pytest

from workbench import trace as T
from workbench.eval import metrics as M
from workbench.llm.scripted import ScriptedBackend


# -- SQuAD ------------------------------------------------------------------

def test_normalisation_drops_case_punctuation_articles():
    assert M.normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert M.normalize_answer("An apple, a day") == "apple day"
    assert M.normalize_answer(None) == ""


def test_exact_match_any_gold():
    assert M.exact_match("the Beatles", ["Beatles", "Fab Four"]) == 1.0
    assert M.exact_match("Beatles band", ["Beatles"]) == 0.0
    assert M.exact_match("Fab four.", ["Beatles", "Fab Four"]) == 1.0
    assert M.exact_match("", []) == 0.0


def test_token_f1_hand_computed():
    # pred tokens: barack obama was president (4); gold: barack obama (2); overlap 2
    # P = 2/4, R = 2/2, F1 = 2*0.5*1/1.5 = 2/3
    assert M.token_f1("Barack Obama was president", "Barack Obama") == pytest.approx(2 / 3)
    assert M.token_f1("Paris", ["London", "Paris"]) == 1.0
    assert M.token_f1("nothing shared", "Paris") == 0.0
    # repeated tokens count with multiplicity: pred "a b b", gold "b b c" -> overlap 2 of 3 each
    assert M.token_f1("x y y", "y y z") == pytest.approx(2 / 3)


def test_contains_gold_is_whole_token():
    assert M.contains_match("It was released in 1999 in Japan.", ["1999"]) == 1.0
    assert M.contains_match("It was released in 19999.", ["1999"]) == 0.0
    assert M.contains_match("The answer is Christopher Nolan", ["christopher nolan"]) == 1.0
    assert M.contains_match("Nolan", ["Christopher Nolan"]) == 0.0


# -- CRP-RAG ------------------------------------------------------------------

def test_rouge_l_and_threshold():
    # LCS("a b c d", "a c d e") = 3 (a c d): 2*3 / (4+4) = 0.75
    assert M.lcs_len("a b c d".split(), "a c d e".split()) == 3
    assert M.rouge_l("w b c d", "w c d e") == pytest.approx(0.75)
    assert M.rouge_l_f1("w b c d", "w c d e", tau=0.75) == 1.0
    assert M.rouge_l_f1("w b c d", "w c d e", tau=0.8) == 0.0
    assert M.rouge_l("", "gold") == 0.0
    assert M.rouge_l("anything", []) == 0.0


def test_acc_lm_judge_parses_verdicts_and_failures():
    be = ScriptedBackend().add("Model answer: Paris", {"verdict": "correct"}) \
        .add("Model answer: Rome", {"verdict": "incorrect"}).add("", "not json")
    j = M.LLMJudge(be)
    assert j.label == "local:scripted"
    assert j.acc_lm("Capital of France?", "Paris", ["Paris"]).verdict is True
    assert j.acc_lm("Capital of France?", "Rome", ["Paris"]).verdict is False
    bad = j.acc_lm("Capital of France?", "Lyon", ["Paris"])
    assert bad.verdict is None and "unparseable" in bad.error
    # cached: a second identical question makes no new call
    n = len(be.calls)
    assert j.acc_lm("Capital of France?", "Paris", ["Paris"]).cached and len(be.calls) == n
    # the judge call is constrained by a JSON schema
    assert be.calls[0]["params"]["json_schema"] == M.ACC_LM_SCHEMA


# -- Hits@1 -------------------------------------------------------------------

def test_hits_at_1_first_line_substring():
    assert M.hits_at_1("Jamaica\nmore text", ["jamaica"]) == 1.0
    assert M.hits_at_1("The answer is Jamaican dollar", ["Jamaican Dollar", "JMD"]) == 1.0
    assert M.hits_at_1("no idea\nJamaica", ["Jamaica"]) == 0.0      # only the first line counts
    assert M.hits_at_1("", ["x"]) == 0.0


# -- CRAG -------------------------------------------------------------------

def test_crag_label_order_idk_then_exact_then_judge():
    # "I don't know" wins over an exact-looking answer; curly apostrophe accepted
    assert M.crag_label("I don’t know", ["I don’t know"]).label == "missing"
    assert M.crag_label("i do not know the year", ["1999"]).decided_by == "idk_substring"
    assert M.crag_label("Paris", ["paris"]).label == "accurate"
    assert M.crag_label("Paris", ["paris"]).decided_by == "exact"
    # judge second: True -> accurate, False -> hallucinated, unparseable -> hallucinated
    assert M.crag_label("the city of Paris", ["Paris"], judge_verdict=True,
                        judge_called=True).label == "accurate"
    assert M.crag_label("Rome", ["Paris"], judge_verdict=False, judge_called=True).label == "hallucinated"
    v = M.crag_label("??", ["Paris"], judge_verdict=None, judge_called=True)
    assert (v.label, v.decided_by, v.points) == ("hallucinated", "llm_parse_fail", -1)
    # refusals are missing
    assert M.crag_label("anything", ["Paris"], refused=True).label == "missing"


def test_crag_normalised_mode_dates_and_numbers():
    assert M.normalize_crag("July 28, 1949") == M.normalize_crag("1949-07-28")
    assert M.normalize_crag("28 July 1949") == "1949-07-28"
    assert M.normalize_crag("1,000 people") == M.normalize_crag("1000 people")
    assert M.normalize_crag("5.50") == "5.5"
    assert M.crag_label("July 28, 1949", ["1949-07-28"], mode="normalised").label == "accurate"
    assert M.crag_label("1950", ["1949-07-28"], mode="normalised").label == "hallucinated"


def test_crag_official_invalid_rule():
    ok = M.crag_label("This is an invalid question.", ["invalid question"], profile="crag_official",
                      judge_called=True)
    assert ok.label == "accurate" and ok.decided_by == "invalid_rule"
    bad = M.crag_label("42", ["invalid question"], profile="crag_official", judge_called=True)
    assert bad.label == "hallucinated" and bad.decided_by == "invalid_rule"


def test_crag_summary_score_is_accuracy_minus_hallucination():
    s = M.crag_summary(["accurate"] * 5 + ["missing"] * 3 + ["hallucinated"] * 2)
    assert (s.accuracy, s.missing, s.hallucination) == (0.5, 0.3, 0.2)
    assert s.score == pytest.approx(0.3)
    # the identity against the paper's T1 RAG-X mock-API row (n = 1371): 398/149 of 1371
    s = M.crag_summary(["accurate"] * 398 + ["hallucinated"] * 149 + ["missing"] * 824)
    assert round(100 * s.accuracy, 2) == 29.03
    assert 100 * s.hallucination == pytest.approx(10.86, abs=0.011)
    assert 100 * s.score == pytest.approx(18.16, abs=0.011)
    # mean points equal the score
    labels = ["accurate", "missing", "hallucinated", "hallucinated"]
    assert M.crag_summary(labels).score == pytest.approx(
        sum(M.CRAG_POINTS[x] for x in labels) / len(labels))


def test_crag_breakdown_by_domain():
    rows = [{"label": "accurate", "domain": "finance"}, {"label": "hallucinated", "domain": "finance"},
            {"label": "missing", "domain": "movie"}]
    b = M.crag_breakdown(rows, "domain")
    assert b["finance"]["score"] == 0.0 and b["finance"]["n"] == 2
    assert b["movie"]["missing"] == 1.0


# -- FEVER -------------------------------------------------------------------

def test_fever_labels_from_free_text():
    assert M.fever_label("SUPPORTS") == "SUPPORTS"
    assert M.fever_label("The claim is refuted by the evidence.") == "REFUTES"
    assert M.fever_label("There is not enough info to decide; it might be true") == "NOT ENOUGH INFO"
    assert M.fever_label("True.") == "SUPPORTS"
    assert M.fever_label("") is None
    assert M.fever_accuracy("Supported.", "SUPPORTS") == 1.0
    assert M.fever_accuracy("Refuted", "SUPPORTS") == 0.0
    assert M.is_fever_question(["REFUTES"])
    assert not M.is_fever_question(["Paris"])


# -- one answer, all metrics; refusals ------------------------------------------

def test_score_answer_refusal_is_incorrect_everywhere_and_missing_for_crag():
    s = M.score_answer("Who?", "Nolan", ["Nolan"], refused=True)
    assert (s.em, s.f1, s.contains, s.rouge_f1, s.hits1) == (0, 0, 0, 0, 0)
    assert s.crag_label == "missing" and s.correct is False


def test_score_answer_primary_by_dataset_kind():
    s = M.score_answer("Who directed Inception?", "It was Christopher Nolan.", ["Christopher Nolan"])
    assert s.primary == "contains" and s.correct and s.em == 0.0 and s.acc_lm is None
    crag = M.score_answer("q", "Paris", ["paris"], meta={"domain": "open", "question_type": "simple",
                                                         "static_or_dynamic": "static"})
    assert crag.primary == "crag" and crag.crag_label == "accurate" and crag.correct
    fever = M.score_answer("claim", "It is refuted.", ["REFUTES"], qtype="claim")
    assert fever.primary == "fever" and fever.fever == 1.0 and fever.correct
    with pytest.raises(ValueError):
        M.score_answer("q", "a", ["a"], primary="nope")


def test_score_answer_one_judge_call_shared_by_acc_lm_and_crag():
    be = ScriptedBackend().add("verdict", {"verdict": "correct"}).add("Accuracy", {"Accuracy": "False"})
    j = M.LLMJudge(be)
    s = M.score_answer("Capital of France?", "the French capital, Paris", ["Paris"], judge=j,
                       primary="acc_lm")
    assert s.acc_lm == 1.0 and s.crag_label == "accurate" and s.crag_decided_by == "llm_judge"
    assert len(be.calls) == 1 and s.correct and s.judge == "local:scripted"
    # CRAG data: the CRAG prompt is used, and only when idk/exact did not decide
    meta = {"domain": "open", "question_type": "simple", "static_or_dynamic": "static"}
    s = M.score_answer("q2", "Lyon", ["Paris"], judge=j, meta=meta)
    assert s.crag_label == "hallucinated" and s.acc_lm == 0.0 and len(be.calls) == 2
    s = M.score_answer("q3", "paris", ["Paris"], judge=j, meta=meta)
    assert s.crag_decided_by == "exact" and s.acc_lm == 1.0 and len(be.calls) == 2
    s = M.score_answer("q4", "I don't know", ["Paris"], judge=j, meta=meta)
    assert s.crag_label == "missing" and s.acc_lm == 0.0 and len(be.calls) == 2


def test_crag_official_trims_the_prediction_to_75_tokens_before_judging():
    long = ("word " * 80 + "Paris").strip()
    assert M.trim_prediction(long).split() == ["word"] * 75
    assert M.trim_prediction("Paris, France.") == "Paris, France."
    meta = {"domain": "open", "question_type": "simple", "static_or_dynamic": "static"}
    be = ScriptedBackend().add("Accuracy", {"Accuracy": "True"})
    s = M.score_answer("Capital?", long, ["Paris"], meta=meta, judge=M.LLMJudge(be),
                       crag_profile="crag_official")
    assert s.crag_label == "accurate" and s.crag_decided_by == "llm_judge"
    # the paper's profile judges the whole prediction
    be2 = ScriptedBackend().add("Accuracy", {"Accuracy": "True"})
    M.score_answer("Capital?", long, ["Paris"], meta=meta, judge=M.LLMJudge(be2))
    assert "word Paris" in str(be2.calls[-1]["prompt"])
    assert "word Paris" not in str(be.calls[-1]["prompt"])


def test_judge_errors_are_parse_failures_not_crashes():
    be = ScriptedBackend()         # no rules, no default: every call raises LLMError
    s = M.score_answer("q", "Lyon", ["Paris"], judge=M.LLMJudge(be))
    assert s.acc_lm == 0.0 and s.crag_decided_by == "llm_parse_fail" and s.judge_error


# -- node-level ---------------------------------------------------------------

def test_subquestion_match_against_musique_decomposition():
    gold = [{"question": "Who directed Inception?", "answer": "Christopher Nolan"},
            {"question": "When was #1 born?", "answer": "1970"}]
    pred = ["Who directed the film Inception?", "When was Christopher Nolan born?",
            "What is the capital of France?"]
    m = M.subquestion_match(pred, gold)
    assert m["subq_recall"] == 1.0 and m["subq_precision"] == pytest.approx(2 / 3)
    assert m["subq_f1"] == pytest.approx(0.8)
    assert M.subquestion_match(pred, []) is None
    assert M.subquestion_match([], gold)["subq_recall"] == 0.0


def test_kg_path_coverage_entities_and_triples():
    gold = [["Inception", "directed_by", "Christopher Nolan", "born_in", "London"]]
    text = "Inception was directed by Christopher Nolan."
    cov = M.kg_path_coverage(gold, text)
    assert cov["path_entity_coverage"] == pytest.approx(2 / 3)
    assert cov["path_triple_coverage"] == pytest.approx(1 / 2)
    cov = M.kg_path_coverage([[["Inception", "directed_by", "Christopher Nolan"]]], "",
                             [("inception", "directed_by", "christopher nolan")])
    assert cov["path_triple_coverage"] == 1.0
    assert M.kg_path_coverage([], "x") is None


def test_structure_scores_and_confidence_from_a_trace():
    clock = T.EventClock("r")
    evs = [T.node_added("q", "question", "Who directed Inception and when was he born?"),
           T.node_added("s1", "subquestion", "Who directed Inception?", parents=["q"]),
           T.node_added("s2", "subquestion", "When was Christopher Nolan born?", parents=["q"]),
           T.Event(T.LLM_CALL, {"prompt": "p", "output": "1970", "scores": {"confidence": 0.8},
                                "prompt_tokens": 3, "completion_tokens": 1, "latency_ms": 1},
                   node_id="s2", llm_call_id="c1"),
           T.answer("1970", node_id="s2")]
    tr = T.Trace.fold(clock.stamp(e) for e in evs)
    sc = M.structure_scores(tr, [{"question": "Who directed Inception?"},
                                 {"question": "When was #1 born?"}],
                            [["Inception", "directed_by", "Christopher Nolan"]])
    assert sc["subq_recall"] == 1.0 and sc["path_entity_coverage"] == 1.0
    assert M.answer_confidence(tr) == pytest.approx(0.8)
    tr.answer["confidence"] = 0.25
    assert M.answer_confidence(tr) == 0.25


# -- intervals and calibration --------------------------------------------------

def test_wilson_interval_and_ece():
    lo, hi = M.wilson_interval(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    assert M.wilson_interval(0, 0) == (0.0, 0.0)
    lo, hi = M.wilson_interval(0, 20)
    assert lo == 0.0 and 0 < hi < 0.2
    # two bins: 10 items at conf 0.9 with acc 0.6, 30 at conf 0.3 with acc 0.3
    assert M.expected_calibration_error([(10, 0.9, 0.6), (30, 0.3, 0.3)]) == pytest.approx(0.075)
    assert math.isclose(M.expected_calibration_error([]), 0.0)
