"""Answer-span extraction (methods/answer_span.py): parsing, the grammar, and the extraction
node of CRP-RAG and CogGRAG with the scripted backend (spans, parse failures, unknown,
refusals, the knob off), plus the triage's breaking node for a span that lost the gold."""
from __future__ import annotations

import json

import pytest

from tests import test_methods_kg_coggrag as cog
from tests import test_methods_text_crp as crp
from tests.span_helpers import add_span_rule
from tests.test_triage import BOTH, HOTPOT, Run
from workbench import config as cfgmod
from workbench.methods import answer_span as S
from workbench.methods import get_method
from workbench.methods.answers import REFUSAL_TEXT, extract_answer
from workbench.methods.graph import trace_problems
from workbench.methods.prompts import answer_span as P
from workbench.triage import triage

# one DIAMOND path is answered (no integration call): its last step's result is the answer
LONG = "Result of Find the studio of the film (merged)."


def purposes(tr):
    return [c["purpose"] for c in sorted(tr.llm_calls.values(), key=lambda c: c["seq"])]


def crp_run(span=None, raw=None, **over):
    be = crp.make_backend(crp.DIAMOND, {})
    if span is not None or raw is not None:
        add_span_rule(be, span, raw)
    return crp.run(be, {"max_answer_paths": 1, **over}), be


# ---------------------------------------------------------------- parsing and the grammar

def test_parse_reads_a_span_and_names_what_is_not_one():
    assert S.parse('{"answer": "Studio Ghibli."}') == ("Studio Ghibli", "")
    assert S.parse('{"answer": "\\"1999\\""}') == ("1999", "")
    span, why = S.parse("Studio Ghibli")
    assert span is None and why.startswith("not JSON")
    assert S.parse('{"answer": "  "}') == (None, "empty answer")
    assert S.parse('{"span": "x"}') == (None, "no string field 'answer'")
    span, why = S.parse(json.dumps({"answer": "it was produced by the studio in Tokyo in 2001"}))
    assert span is None and "10 words" in why
    assert S.is_unknown_span("Unknown.") and S.is_unknown_span("I don't know")
    assert not S.is_unknown_span("Unknown Pleasures Records")


def test_schema_becomes_a_grammar_that_allows_only_short_spans():
    from llama_cpp.llama_grammar import LlamaGrammar
    g = LlamaGrammar.from_json_schema(json.dumps(P.SCHEMA), verbose=False)
    assert "answer" in g._grammar
    assert P.SCHEMA["properties"]["answer"]["pattern"].endswith("{0,7}$")   # 8 words at most


# ---------------------------------------------------------------- CRP-RAG

def test_crp_answer_is_the_extracted_span_and_the_long_answer_stays():
    tr, be = crp_run(span="Studio Ghibli")
    assert tr.status == "finished" and not trace_problems(tr), trace_problems(tr)
    (x,) = [n for n in tr.nodes.values() if n.kind == S.KIND]
    ans = tr.nodes[tr.answer["node_id"]]
    assert tr.answer["text"] == ans.text == x.text == "Studio Ghibli"
    assert tr.answer["info"]["full_answer"] == LONG == x.attrs["long_answer"]
    assert ans.attrs["full_answer"] == LONG and ans.parents == [x.id]
    assert x.state == "done" and x.attrs["parsed"] and x.layer < ans.layer
    # it reads the answered sink(s), and its call (with scores) is attached to it
    sinks = {p["nodes"][-1] for p in tr.paths.values() if p["state"] == "selected"}
    assert set(x.parents) == sinks
    (cid,) = x.llm_calls
    call = tr.llm_calls[cid]
    assert call["purpose"] == "answer_span" and call["prompt_version"] == P.VERSION
    assert "pattern" in json.dumps(call["params"]["json_schema"])
    assert call["params"]["temperature"] == 0.0
    conf = call["scores"]["confidence"]
    assert 0 < conf <= 1 and call["scores"]["perplexity"] == pytest.approx(1 / conf, rel=1e-3)
    assert not x.scores            # not a node score: no what-if slider may read it
    assert tr.answer["info"]["answer_span"] == {
        "node": x.id, "parsed": True, "unknown": False, "error": "",
        "confidence": pytest.approx(conf, abs=1e-4)}
    # the prompt holds the question and the long answer; the extraction is the last call
    prompt = [c for c in be.calls if P.TAG in c["prompt"]][0]["prompt"]
    assert crp.Q in prompt and f"Long answer: {LONG}" in prompt
    assert purposes(tr)[-1] == "answer_span" and purposes(tr).count("answer_span") == 1
    assert tr.summary["by_phase"][S.PHASE]["llm_calls"] == 1


def test_crp_unparseable_extraction_keeps_the_long_answer_and_marks_the_failure():
    tr, _ = crp_run(raw="Studio Ghibli, I think")
    assert tr.status == "finished" and not trace_problems(tr)
    (x,) = [n for n in tr.nodes.values() if n.kind == S.KIND]
    assert x.state == "parse_failed" and not x.attrs["parsed"]
    assert x.attrs["error"].startswith("not JSON") and x.attrs["raw_output"] == \
        "Studio Ghibli, I think"
    assert "long answer is kept" in x.text
    assert tr.answer["text"] == extract_answer(LONG)       # what the method said before
    assert tr.answer["info"]["answer_span"]["parsed"] is False
    # a span too long to be one is a failure too (a backend that ignores the grammar)
    tr, _ = crp_run(span="the film was produced by the studio that Miyazaki co-founded")
    x = next(n for n in tr.nodes.values() if n.kind == S.KIND)
    assert x.state == "parse_failed" and "words" in x.attrs["error"]
    assert tr.answer["text"] == extract_answer(LONG)


def test_crp_unknown_span_is_a_non_answer_but_not_a_refusal():
    tr, _ = crp_run(span="unknown")
    x = next(n for n in tr.nodes.values() if n.kind == S.KIND)
    ans = tr.nodes[tr.answer["node_id"]]
    assert x.state == "unknown" and tr.answer["text"] == S.UNKNOWN_ANSWER
    assert ans.attrs["idk"] is True and tr.answer["info"]["answer_span"]["unknown"] is True
    assert tr.answer["refused"] is False and tr.status == "finished"


def test_crp_knob_off_answers_as_before_without_the_call():
    on, _ = crp_run(span="Studio Ghibli")
    off, _ = crp_run(span="Studio Ghibli", answer_span=False)
    assert "answer_span" not in purposes(off) and not [n for n in off.nodes.values()
                                                        if n.kind == S.KIND]
    assert purposes(off) == purposes(on)[:-1]
    ans = off.nodes[off.answer["node_id"]]
    assert off.answer["text"] == ans.text == extract_answer(LONG)
    assert "answer_span" not in off.answer["info"] and "answer_span" not in ans.attrs
    sinks = {p["nodes"][-1] for p in off.paths.values() if p["state"] == "selected"}
    assert set(ans.parents) == sinks and not trace_problems(off)
    assert S.PHASE not in off.summary["by_phase"]
    knob = {k.name: k for k in cfgmod.knobs(get_method("crp-rag").Config)}["answer_span"]
    assert knob.default is True and knob.paper_differs and "EM" in knob.description


def test_crp_root_probe_answer_is_extracted_too():
    be = crp.make_backend(crp.DIAMOND, {crp.Q: ("Studio Ghibli", -0.01)})
    add_span_rule(be, "Studio Ghibli")
    tr = crp.run(be, {"root_probe": True})
    x = next(n for n in tr.nodes.values() if n.kind == S.KIND)
    assert x.parents == [tr.roots()[0]] and tr.answer["info"]["root_probe"] is True
    assert tr.answer["text"] == "Studio Ghibli" and not trace_problems(tr)


def test_crp_refusal_stays_a_refusal_without_extraction():
    merged = "Find the studio of the film (merged)."
    be = crp.make_backend(crp.DIAMOND, {merged: ("Toho", -3.0)})
    tr = crp.run(be, {"tau_ppl": 5.0})
    assert tr.status == "refused" and tr.answer["refused"] is True
    assert tr.answer["text"] == REFUSAL_TEXT and "answer_span" not in purposes(tr)
    assert not [n for n in tr.nodes.values() if n.kind == S.KIND]


# ---------------------------------------------------------------- CogGRAG

def test_coggrag_root_sentence_becomes_its_span(kg):
    sentence = "The director of Glass Harbor, Ilse Varga, was born in Port Amsel."
    be = cog._backend(answers={cog.ROOT_Q: sentence})
    add_span_rule(be, "Port Amsel")
    tr = cog._run(kg, be)
    assert tr.status == "finished" and not trace_problems(tr), trace_problems(tr)
    x = tr.nodes["span"]
    assert x.kind == S.KIND and x.parents == ["0"] and tr.nodes["answer"].parents == ["span"]
    assert tr.answer["text"] == "Port Amsel" and tr.answer["info"]["full_answer"] == sentence
    assert x.attrs["long_answer"] == sentence and x.llm_calls
    assert tr.answer["info"]["em"] is True           # the sentence itself is no exact match
    assert cog._purposes(tr)[-1] == "answer_span"


def test_coggrag_refusal_and_knob_off_make_no_extraction(kg):
    be = cog._backend(decomp={cog.ROOT_Q: [[cog.ROOT_Q, "End."]]},
                      verdicts={"Ilse Varga": "[wrong]"})
    tr = cog._run(kg, be)
    assert tr.answer["refused"] is True and "span" not in tr.nodes
    assert "answer_span" not in cog._purposes(tr)
    off = cog._run(kg, cog._backend(), answer_span=False)
    assert "span" not in off.nodes and off.nodes["answer"].parents == ["0"]
    assert "answer_span" not in cog._purposes(off)
    assert off.answer["text"] == "Ilse Varga" and not trace_problems(off)
    on = cog._run(kg, cog._backend())
    assert cog._purposes(on) == cog._purposes(off) + ["answer_span"]


@pytest.fixture(scope="module")
def kg():
    return cog.toy_kg()


# ---------------------------------------------------------------- triage

def test_a_span_that_lost_the_gold_breaks_at_the_extraction_node():
    r = Run()
    r.retrieve("r1", HOTPOT["question"], BOTH)
    r.node("x", S.KIND, "Nolan's", ["r1"], state="done",
           long_answer="The answer is Christopher Nolan.")
    tr = r.answer("Nolan's", ["x"], full_answer="The answer is Christopher Nolan.")
    t = triage(tr)
    assert t.failure_class == "answer_format"
    assert (t.break_node, t.break_kind) == ("x", S.KIND) and "extracted" in t.break_why


# ---------------------------------------------------------------- where the answer shows

def test_the_answer_box_and_the_cli_report_show_the_long_answer():
    from streamlit.testing.v1 import AppTest

    from workbench.commands.methods import _report
    tr, _ = crp_run(span="Studio Ghibli")
    rep = _report(tr, None)
    assert "Answer: Studio Ghibli" in rep and f"long answer: {LONG}" in rep
    off, _ = crp_run(answer_span=False)
    assert "long answer" not in _report(off, None)

    def page():
        import streamlit as st

        from workbench.ui import widgets as W
        W.answer_box(st.session_state["tr"])

    at = AppTest.from_function(page)
    at.session_state["tr"] = tr
    at.run()
    assert not at.exception, at.exception
    assert "Studio Ghibli" in at.success[0].value
    assert [c.value for c in at.caption if "Long answer" in c.value]
    assert "Result of Find the studio" in next(c.value for c in at.caption
                                               if "Long answer" in c.value)
    at.session_state["tr"] = off
    at.run()
    assert not [c.value for c in at.caption if "Long answer" in c.value]


# ---------------------------------------------------------------- the real model

def test_a_real_crp_run_answers_with_a_short_span(default_llm):
    """SmolLM2-135M on a demo question. tau_ppl at its maximum keeps every node sufficient
    (the 135M model's perplexities would prune every path and refuse), so the run reasons
    to a long answer and the grammar-constrained extraction cuts it to a span (always called
    here: an answer that states its span would skip the call)."""
    from tests.span_helpers import assert_span_answer
    from tests.test_methods_text_real import OVERRIDES
    from workbench.execution import run_to_end
    from workbench.workspace import build_context
    m, ctx = build_context("crp-rag", llm=default_llm, dataset="demo", question_id="q001",
                           overrides={**OVERRIDES["crp-rag"], "tau_ppl": 1000.0,
                                      "span_if_stated": False})
    tr = run_to_end(m, ctx, ctx.gold.question, question_id="q001")
    assert tr.status == "finished" and not tr.answer["refused"], tr.errors
    assert not trace_problems(tr), trace_problems(tr)
    assert_span_answer(tr, "q001")
    x = tr.nodes[tr.nodes[tr.answer["node_id"]].parents[0]]
    call = tr.llm_calls[x.llm_calls[0]]
    assert call["logprobs_available"] and 0 < call["scores"]["confidence"] <= 1


def test_the_default_model_keeps_a_whole_date_in_the_span(default_model_llm):
    """A HotpotQA-100 question and CRP-RAG's long answer to it: before the prompt had a
    whole-date shot (span-2) the default model cut the date to "April 5"."""
    from workbench.methods import answer_span as S
    from workbench.methods.base import RunContext
    q = ("Zhongzheng District is a district in Taipei, Republic of China, the late President "
         "of the Republic of China was Chiang Kai-shek, who died on which date?")
    gen = S.extract(RunContext(llm=default_model_llm, config=None), q,
                    "Chiang Kai-shek died on April 5, 1975.", "", parents=["a"], layer=0)
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        span = stop.value
    assert span.parsed and span.text == "April 5, 1975"
