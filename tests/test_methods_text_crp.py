"""CRP-RAG control flow with the scripted backend: one test per spec rule."""
from __future__ import annotations

import json
import math
import re
import zlib
from collections import Counter

import numpy as np
import pytest

from workbench import config as cfgmod
from workbench.knowledge.types import Hit
from workbench.llm.scripted import Rule, ScriptedBackend
from workbench.methods import get_method
from workbench.methods.base import RunContext
from workbench.methods.graph import trace_problems
from workbench.methods.crp_rag import prompts as P
from workbench.execution import run_to_end

from tests.span_helpers import add_span_rule

Q = "Which studio produced the film directed by Hayao Miyazaki in 2001?"


class TinyRetriever:
    name = "dense"

    def __init__(self):
        self.queries: list[str] = []

    def search(self, query: str, k: int = 5) -> list[Hit]:
        self.queries.append(query)
        return [Hit(f"d{i}", f"Doc {i}", f"Passage {i} about {query}", "dense", 1.0 - i / 10, i)
                for i in range(1, min(k, 2) + 1)]


class FakeEmbedder:
    """Deterministic vectors: texts sharing a 'topic' word get the same direction."""
    name = "fake"

    def __init__(self, groups: dict[str, list[float]]):
        self.groups = groups

    def encode(self, texts, **_):
        single = isinstance(texts, str)
        out = []
        for t in ([texts] if single else texts):
            v = next((np.asarray(vec, np.float32) for key, vec in self.groups.items()
                      if key in t), None)
            if v is None:      # unique direction per text; a stable seed, since str hash()
                # changes per process and once in a while put two texts above a merge threshold
                rng = np.random.default_rng(zlib.crc32(t.encode()))
                v = rng.normal(size=8).astype(np.float32)
            out.append(v / np.linalg.norm(v))
        arr = np.stack(out)
        return arr[0] if single else arr


def last_user(prompt: str) -> str:
    return prompt.rsplit("<user>", 1)[-1]


def gen_router(plan: dict[str, list[dict]]):
    """P_gen outputs by the last step in 'Steps done' (or 'none' for the root), cycling."""
    counters: dict[str, int] = {}

    def text(prompt: str) -> str:
        u = last_user(prompt)
        steps = re.findall(r"^\d+\. (.*)$", u, re.M)
        key = steps[-1] if steps else "none"
        outs = plan[key]
        i = counters.get(key, 0)
        counters[key] = i + 1
        return json.dumps(outs[i % len(outs)])
    return text


def make_backend(plan, evals: dict[str, tuple[str, float]], default_eval=("Answer.", -0.05)):
    be = ScriptedBackend()
    be.add(P.GEN_TAG, gen_router(plan))
    be.add(P.COMBINE_TAG, lambda p: json.dumps(
        {"step": "Find the studio of the film (merged).", "is_final": True}))
    be.add(P.AGG_TAG, lambda p: "Knowledge for " + re.search(r"Step: (.*)", last_user(p)).group(1))
    for step, (ans, lp) in evals.items():
        be.add(f"Step: {step}\nAnswer:", ans, logprob=lp)
    be.add(P.EVAL_TAG, default_eval[0], logprob=default_eval[1])
    be.add(P.STEP_TAG, lambda p: "Result of " + re.search(r"Current step: (.*)",
                                                         last_user(p)).group(1))
    be.add(P.ABSTRACT_TAG, {"final_answer": "Studio Ghibli", "details": "paths agree"})
    be.add(P.PATH_TAG, "Studio Ghibli")
    be.add(P.NOISE_TAG, lambda p: "Noise about " + last_user(p).split("Task: ", 1)[1])
    return add_span_rule(be)          # the extraction call copies short answers as they are


# Two root proposals (A, B); each proposes a final step about the studio -> merged node
DIAMOND = {
    "none": [{"step": "Find the film directed by Hayao Miyazaki in 2001.", "is_final": False},
             {"step": "Find the films released in 2001.", "is_final": False}],
    "Find the film directed by Hayao Miyazaki in 2001.": [
        {"step": "Find the studio of that film.", "is_final": True}],
    "Find the films released in 2001.": [
        {"step": "Find the studio that produced that film.", "is_final": True}],
}
A = "Find the film directed by Hayao Miyazaki in 2001."
B = "Find the films released in 2001."


def run(be, overrides=None, embedder=None, retriever=None):
    m = get_method("crp-rag")
    ctx = RunContext(llm=be, config=cfgmod.build(m.Config, overrides or {}),
                     retrievers={"dense": retriever or TinyRetriever()},
                     embedder=embedder or FakeEmbedder({"studio": [1, 0, 0, 0, 0, 0, 0, 0]}))
    tr = run_to_end(m, ctx, Q)
    return tr


def log_types(tr):
    return [e["type"] for e in tr.log]


def nodes_of(tr, kind=None, state=None):
    return [n for n in tr.nodes.values()
            if (kind is None or n.kind == kind) and (state is None or n.state == state)]


def test_similar_proposals_merge_and_keep_all_parents():
    tr = run(make_backend(DIAMOND, {}), {"max_answer_paths": 3})
    assert tr.status == "finished", tr.errors
    assert not trace_problems(tr)
    a = next(n.id for n in tr.nodes.values() if n.text == A)
    b = next(n.id for n in tr.nodes.values() if n.text == B)
    merged = [n for n in tr.nodes.values() if n.attrs.get("merged")]
    assert len(merged) == 1
    m = merged[0]
    assert sorted(m.parents) == sorted([a, b])            # merged node keeps both parents
    assert m.text == "Find the studio of the film (merged)."
    assert len(m.attrs["merged_from"]) == 2                 # one sample under each of A and B
    assert all(s[2] > 0.9 for s in m.attrs["merge_sims"])
    ev = next(e for e in tr.log if e["type"] == "proposals_merged")
    assert sorted(ev["data"]["parents"]) == sorted([a, b])
    # two root-to-sink paths through the merged node, both selected and integrated
    sel = [p for p in tr.paths.values() if p["state"] == "selected"]
    assert len(sel) == 2 and all(p["nodes"][-1] == m.id for p in sel)
    assert any(e["type"] == "answers_integrated" for e in tr.log)
    # the default max_answer_paths=1: the best path alone, the other unused, nothing to
    # integrate
    tr = run(make_backend(DIAMOND, {}))
    sel = [p for p in tr.paths.values() if p["state"] == "selected"]
    unused = [p for p in tr.paths.values() if p["state"] == "unused"]
    assert len(sel) == len(unused) == 1 and sel[0]["nodes"][-1] == unused[0]["nodes"][-1] == m.id
    assert not any(e["type"] == "answers_integrated" for e in tr.log)


def test_merge_by_first_keeps_the_first_proposal_without_a_call():
    called = run(make_backend(DIAMOND, {}))
    tr = run(make_backend(DIAMOND, {}), {"merge_by": "first"})
    assert tr.status == "finished", tr.errors
    assert not trace_problems(tr)
    purposes = [c["purpose"].split(":")[0] for c in tr.llm_calls.values()]
    assert "combine" not in purposes
    assert len(tr.llm_calls) == len(called.llm_calls) - 1
    m = next(n for n in tr.nodes.values() if n.attrs.get("merged"))
    # members sorted by parent, then sample: A's first sample comes first
    assert m.text == "Find the studio of that film."
    assert len(m.parents) == 2 and m.kind == "final"
    ev = next(e for e in tr.log if e["type"] == "proposals_merged")["data"]
    assert ev["merged_by"] == "first" and ev["call_id"] is None and not ev["fallback"]
    assert m.attrs["merge_call_id"] is None and len(m.attrs["merged_from"]) == 2


def test_merge_by_first_is_final_only_when_a_member_is():
    # the root's two samples say the same (not final): the call's demos always answer
    # is_final true, the first-proposal merge keeps the members' verdict and goes on
    step = "Find the studio of the 2001 Miyazaki film."
    plan = {"none": [{"step": step, "is_final": False}],
            step: [{"step": "Name the country of that studio.", "is_final": True}]}
    called = run(make_backend(plan, {}))
    first = run(make_backend(plan, {}), {"merge_by": "first"})
    m_call = next(n for n in called.nodes.values() if n.attrs.get("merged"))
    m_first = next(n for n in first.nodes.values() if n.attrs.get("merged"))
    assert m_call.kind == "final"               # what the scripted P_combine says
    assert m_first.kind == "step" and m_first.text == step
    assert any(n.text == "Name the country of that studio." and n.parents == [m_first.id]
               for n in first.nodes.values())


def test_proposals_below_merge_threshold_stay_separate():
    # the studio proposal under A and the one under B are at cosine 0.8 (the two samples
    # under one parent are identical, cosine 1.0, and always merge)
    s = 0.8
    groups = {"studio of that film": [1, 0, 0, 0, 0, 0, 0, 0],
              "studio that produced": [s, math.sqrt(1 - s * s), 0, 0, 0, 0, 0, 0]}
    tr = run(make_backend(DIAMOND, {}), {"tau_combine": 0.85}, embedder=FakeEmbedder(groups))
    sim = next(e for e in tr.log if e["type"] == "similarity_computed"
               and e["data"]["iteration"] == 1)["data"]
    texts, mat = sim["texts"], np.asarray(sim["matrix"])
    i = texts.index("Find the studio of that film.")
    j = texts.index("Find the studio that produced that film.")
    assert mat[i, j] == pytest.approx(0.8, abs=1e-3)
    finals = [n for n in tr.nodes.values() if n.kind == "final"]
    assert len(finals) == 2 and all(len(n.parents) == 1 for n in finals)
    # the same pair merges once tau is below their similarity
    tr2 = run(make_backend(DIAMOND, {}), {"tau_combine": 0.75}, embedder=FakeEmbedder(groups))
    finals = [n for n in tr2.nodes.values() if n.kind == "final"]
    assert len(finals) == 1 and len(finals[0].parents) == 2 and finals[0].attrs["merged"]


def test_node_at_ppl_threshold_prunes_every_path_through_it():
    tau = math.exp(0.5)          # evaluation answer of A has exactly this perplexity
    tr = run(make_backend(DIAMOND, {A: ("Spirited Away", -0.5)}), {"tau_ppl": tau})
    assert tr.status == "finished"
    a = next(n for n in tr.nodes.values() if n.text == A)
    assert a.state == "insufficient"
    assert a.scores["perplexity"] == pytest.approx(tau)
    assert a.thresholds["tau_ppl"] == tau
    pruned = [p for p in tr.paths.values() if p["state"] == "pruned"]
    selected = [p for p in tr.paths.values() if p["state"] == "selected"]
    assert pruned and all(a.id in p["nodes"] for p in pruned)
    assert all(a.id not in p["nodes"] for p in selected) and len(selected) == 1
    assert all(p["info"]["blocking"] == [a.id] for p in pruned)
    # A was never reasoned on (no P_step call served it)
    assert not [c for c in tr.llm_calls.values()
                if c["purpose"] == "reason" and c["node_id"] == a.id]
    marked = [e for e in tr.log if e["type"] == "node_marked_insufficient"]
    assert [e["node_id"] for e in marked] == [a.id]
    # just below the threshold the same node is sufficient
    tr2 = run(make_backend(DIAMOND, {A: ("Spirited Away", -0.5)}), {"tau_ppl": tau + 1e-9})
    assert next(n for n in tr2.nodes.values() if n.text == A).state == "sufficient"


def test_insufficient_shared_node_prunes_all_paths_and_refuses():
    merged_text = "Find the studio of the film (merged)."
    tr = run(make_backend(DIAMOND, {merged_text: ("Toho", -3.0)}), {"tau_ppl": 5.0})
    assert tr.status == "refused"
    assert tr.answer["refused"] is True and "no root-to-sink path" in tr.answer["reason"]
    assert all(p["state"] == "pruned" for p in tr.paths.values()) and len(tr.paths) == 2
    ref = tr.nodes[tr.answer["node_id"]]
    assert ref.kind == "refusal" and ref.state == "refused"
    assert "refused" in log_types(tr)
    assert not [c for c in tr.llm_calls.values() if c["purpose"] in ("reason", "integrate")]
    assert not trace_problems(tr)


def test_unknown_answer_is_insufficient_only_in_ppl_unknown_mode():
    evals = {A: ("UNKNOWN", -0.01)}
    tr = run(make_backend(DIAMOND, evals), {"sufficiency_mode": "ppl+unknown"})
    assert next(n for n in tr.nodes.values() if n.text == A).state == "insufficient"
    tr2 = run(make_backend(DIAMOND, evals))                     # the paper: perplexity only
    assert next(n for n in tr2.nodes.values() if n.text == A).state == "sufficient"


def test_paper_evaluation_prompt_has_no_sentinel_and_no_demo():
    be = make_backend(DIAMOND, {})
    run(be)
    ev = [c["prompt"] for c in be.calls if P.EVAL_TAG in c["prompt"]]
    assert ev and not any(P.UNKNOWN in p for p in ev)
    assert not any("Alfred Hitchcock" in p for p in ev)          # no demonstration
    be2 = make_backend(DIAMOND, {})
    run(be2, {"preset": "small-model"})
    ev2 = [c["prompt"] for c in be2.calls if P.EVAL_TAG in c["prompt"]]
    assert all(P.UNKNOWN in p and "Alfred Hitchcock" in p for p in ev2)
    agg = [c["prompt"] for c in be2.calls if P.AGG_TAG in c["prompt"]]
    assert agg and all("one to three short sentences" in p for p in agg)


def test_events_follow_the_spec_order():
    # two answer paths, so the order reaches the integration (the default answers with one)
    tr = run(make_backend(DIAMOND, {}), {"max_answer_paths": 3})
    # within the merging iteration
    it1 = [e for e in tr.log if e["data"].get("iteration") == 1]
    t1 = [e["type"] for e in it1]
    assert t1[0] == "gc_iteration_started" and t1[-1] == "gc_iteration_finished"
    assert t1.index("proposal_generated") < t1.index("similarity_computed") < \
        t1.index("proposals_merged")
    # across the run (first occurrences)
    order = ["gc_iteration_started", "proposal_generated", "similarity_computed",
             "gc_iteration_finished", "graph_completed", "node_retrieved",
             "node_aggregated", "node_evaluated", "paths_enumerated", "path_selected",
             "step_reasoned", "path_answered", "answers_integrated"]
    types = log_types(tr)
    firsts = [types.index(t) for t in order]
    assert firsts == sorted(firsts), list(zip(order, firsts))
    seqs = {e["type"]: e["seq"] for e in reversed(tr.log)}
    merged = next(n for n in tr.nodes.values() if n.attrs.get("merged"))
    # proposals_merged comes before the merged node is created
    assert seqs["proposals_merged"] < merged.history[0]
    # phases gc -> kra -> ag (-> the answer's span), with per-phase LLM counts in run_finished
    assert list(tr.summary["by_phase"]) == ["gc", "kra", "ag", "span"]
    assert tr.summary["by_phase"]["gc"]["llm_calls"] == 2 + 2 + 1    # 2 root + 2 + 1 merge
    assert tr.summary["by_phase"]["span"]["llm_calls"] == 1


def test_every_llm_call_is_linked_and_evaluated_nodes_are_scored():
    tr = run(make_backend(DIAMOND, {}))
    for c in tr.llm_calls.values():
        assert c["node_id"] in tr.nodes and c["prompt"] and "tokens" in c
    for n in tr.nodes.values():
        if n.kind in ("step", "final"):
            assert "perplexity" in n.scores and "tau_ppl" in n.thresholds
            assert n.attrs["retrieval_query"] == n.text and n.attrs["knowledge"]
            assert n.evidence and n.evidence[0]["hits"]


def test_query_with_question_puts_the_question_before_each_node_text():
    tr = run(make_backend(DIAMOND, {}), {"query_with_question": True})
    question = next(n.text for n in tr.nodes.values() if n.kind == "question")
    steps = [n for n in tr.nodes.values() if n.kind in ("step", "final")]
    assert steps and all(n.attrs["retrieval_query"] == f"{question} {n.text}" for n in steps)


AGG_INSTRUCTIONS = {"paper": "Organise the knowledge", "short": "one to three short sentences"}


@pytest.mark.parametrize("style", sorted(AGG_INSTRUCTIONS))
def test_integration_prompt_choice_decides_the_summary_instruction(style):
    be = make_backend(DIAMOND, {})
    run(be, {"integration_prompt": style})
    agg = [c["prompt"] for c in be.calls if P.AGG_TAG in c["prompt"]]
    assert agg and all("Passage 1 about" in p for p in agg)
    for other, instruction in AGG_INSTRUCTIONS.items():
        assert all((instruction in p) == (other == style) for p in agg), other


@pytest.mark.parametrize("on", [False, True])
def test_comparison_demos_knob_adds_a_comparison_demo_to_combine_and_summary_prompts(on):
    be = make_backend(DIAMOND, {})
    tr = run(be, {"comparison_demos": on})
    assert tr.status == "finished"
    for tag in (P.COMBINE_TAG, P.AGG_TAG):
        prompts = [c["prompt"] for c in be.calls if tag in c["prompt"]]
        assert prompts, tag
        # the demo question is in the demo turns, never in the real (last) user turn
        assert all(("Anthony Perkins" in p) == on for p in prompts), tag
        assert not any("Anthony Perkins" in last_user(p) for p in prompts)


@pytest.mark.parametrize("on", [False, True])
def test_named_steps_asks_for_steps_that_name_their_subject(on):
    be = make_backend(DIAMOND, {})
    tr = run(be, {"named_steps": on})
    assert tr.status == "finished"
    gen = [c["prompt"] for c in be.calls if P.GEN_TAG in c["prompt"]]
    assert gen
    # the instruction and the demo that names the director's film, never the relative one
    assert all(("instead of writing 'that director'" in p) == on for p in gen)
    assert all(("Find where the director of Psycho (1960) was born." in p) == on for p in gen)
    assert all(("Find where that director was born." in p) != on for p in gen)


def test_unparsable_proposals_become_visible_and_run_continues():
    be = ScriptedBackend()
    be.add(P.GEN_TAG, "not json at all")
    be.add(P.AGG_TAG, "Knowledge.")
    be.add(P.EVAL_TAG, "Studio Ghibli", logprob=-0.01)
    be.add(P.STEP_TAG, "Studio Ghibli produced it.")
    tr = run(add_span_rule(be, "Studio Ghibli"))
    fails = nodes_of(tr, kind="parse_failed")
    assert len(fails) == 2 and all(f.state == "parse_failed" for f in fails)
    assert tr.status == "finished" and tr.answer["text"] == "Studio Ghibli"
    fb = [n for n in tr.nodes.values() if n.kind == "final"]
    assert len(fb) == 1 and fb[0].text.startswith("Answer the question")
    assert not trace_problems(tr)


def test_depth_cap_forces_finals():
    plan = {"none": [{"step": "Step one.", "is_final": False}],
            "Step one.": [{"step": "Step two.", "is_final": False}],
            "Step two.": [{"step": "Step three.", "is_final": False}]}
    tr = run(make_backend(plan, {}), {"max_iterations": 2, "samples_per_sink": 1})
    done = next(e for e in tr.log if e["type"] == "graph_completed")
    assert done["data"]["reason"] == "max_iterations"
    last = next(n for n in tr.nodes.values() if n.text == "Step two.")
    assert last.attrs["forced_final"] is True
    assert tr.paths["p1"]["info"]["truncated"] is True


def test_ablation_no_evaluation_uses_shortest_and_longest_paths():
    plan = {"none": [{"step": "Short final.", "is_final": True},
                     {"step": "Long one.", "is_final": False}],
            "Long one.": [{"step": "Long two.", "is_final": True}]}
    tr = run(make_backend(plan, {}), {"no_evaluation": True, "samples_per_sink": 2})
    assert not [c for c in tr.llm_calls.values() if c["purpose"] == "evaluate"]
    sel = sorted(len(p["nodes"]) for p in tr.paths.values() if p["state"] == "selected")
    assert sel == [2, 3]


def test_ablation_no_aggregation_skips_summary_calls():
    tr = run(make_backend(DIAMOND, {}), {"no_aggregation": True})
    assert not [c for c in tr.llm_calls.values() if c["purpose"] == "aggregate"]
    n = next(n for n in tr.nodes.values() if n.text == A)
    assert "Passage 1" in n.attrs["knowledge"]


def test_root_probe_answers_without_a_graph_when_sufficient():
    be = make_backend(DIAMOND, {Q: ("Studio Ghibli", -0.01)})
    tr = run(be, {"root_probe": True})
    assert tr.status == "finished"
    assert not [c for c in tr.llm_calls.values() if c["purpose"] == "propose"]
    assert set(n.kind for n in tr.nodes.values()) == {"question", "answer_extraction", "answer"}


def test_valid_paths_beyond_the_cap_are_unused():
    tr = run(make_backend(DIAMOND, {}), {"max_answer_paths": 1})
    states = sorted(p["state"] for p in tr.paths.values())
    assert states == ["selected", "unused"]
    assert not [e for e in tr.log if e["type"] == "answers_integrated"]   # one path: no P_abstract


def test_noise_injection_replaces_knowledge_and_is_visible():
    tr = run(make_backend(DIAMOND, {}), {"noise_mode": "knowledge", "noise_pct": 50})
    hit = [n for n in tr.nodes.values() if n.attrs.get("noise")]
    assert len(hit) == 2        # 50 % of the 3 non-root nodes, rounded
    ev = [e for e in tr.log if e["type"] == "noise_injected"]
    assert len(ev) == 2 and all(e["data"]["mode"] == "knowledge" for e in ev)
    # the paper's distractors: written by the model for an unrelated task, one call each
    noise_calls = [c for c in tr.llm_calls.values() if c["purpose"] == "noise"]
    assert len(noise_calls) == 2 and {c["node_id"] for c in noise_calls} == {n.id for n in hit}
    assert all(e["data"]["noise"].startswith("Noise about ") and e["data"]["task"] in
               P.NOISE_TASKS for e in ev)
    evals = [c for c in tr.llm_calls.values() if c["purpose"] == "evaluate"
             and c["node_id"] == hit[0].id]
    assert hit[0].attrs["knowledge"] in evals[0]["prompt"]
    assert "noise" in tr.summary["by_phase"]
    fixed = run(make_backend(DIAMOND, {}), {"noise_mode": "nodes", "noise_pct": 50,
                                           "noise_source": "fixed"})
    assert not [c for c in fixed.llm_calls.values() if c["purpose"] == "noise"]
    assert sum(1 for n in fixed.nodes.values() if n.attrs.get("noise")) == 2


# --- Eqs. 11-12, path ranking, known conditions, structure variants ---------------------

CHAIN = {"none": [{"step": "Find the film.", "is_final": False}],
         "Find the film.": [{"step": "Find its studio.", "is_final": False}],
         "Find its studio.": [{"step": "Name the studio's founder.", "is_final": True}]}


def test_condition_accumulates_along_a_path():
    """Eq. 11: result_n = LLM(condition_n, step_n, k_n); Eq. 12: condition_{n+1} =
    concate(condition_n, result_n): every step sees all earlier steps with their results."""
    be = make_backend(CHAIN, {})
    tr = run(be, {"samples_per_sink": 1})
    steps = [c for c in be.calls if P.STEP_TAG in c["prompt"] and "Current step" in
             c["prompt"].rsplit("<user>", 1)[-1]]
    users = [last_user(c["prompt"]) for c in steps]
    assert len(users) == 3
    assert "Known so far:\nnothing yet" in users[0] and "Current step: Find the film." in users[0]
    assert "1. Find the film. -> Result of Find the film." in users[1]
    assert "Current step: Find its studio." in users[1]
    assert ("1. Find the film. -> Result of Find the film.\n"
            "2. Find its studio. -> Result of Find its studio.") in users[2]
    ev = [e["data"] for e in tr.log if e["type"] == "step_reasoned"]
    assert [e["condition"].count("->") for e in ev] == [0, 1, 2]
    assert tr.answer["text"].startswith("Result of Name the studio")
    # only the path's last step is told that its result is the answer to the question
    assert [P.LAST_STEP_NOTE in u for u in users] == [False, False, True]


def test_paths_ranked_by_max_node_perplexity():
    evals = {A: ("Spirited Away", -0.3), B: ("2001 films", -0.1)}
    tr = run(make_backend(DIAMOND, evals), {"max_answer_paths": 1, "tau_ppl": 50.0})
    a = next(n.id for n in tr.nodes.values() if n.text == A)
    b = next(n.id for n in tr.nodes.values() if n.text == B)
    sel = [p for p in tr.paths.values() if p["state"] == "selected"]
    unused = [p for p in tr.paths.values() if p["state"] == "unused"]
    assert len(sel) == 1 and b in sel[0]["nodes"]           # max PPL e^0.1 < e^0.3
    assert len(unused) == 1 and a in unused[0]["nodes"]
    assert sel[0]["info"]["max_ppl"] < unused[0]["info"]["max_ppl"]
    assert sel[0]["info"]["max_ppl"] == pytest.approx(math.exp(0.1), abs=1e-3)


def test_known_conditions_are_the_ancestors_without_the_root():
    plan = {"none": [{"step": A, "is_final": False}, {"step": B, "is_final": False}],
            A: [{"step": "Find the studio of that film.", "is_final": False}],
            B: [{"step": "Find the studio that produced that film.", "is_final": False}],
            "Find the studio of the film (merged).": [
                {"step": "Name the founder of that studio.", "is_final": True}]}
    be = make_backend(plan, {})
    combine = next(r for r in be.rules if r.match == P.COMBINE_TAG)
    combine.text = lambda p: json.dumps(
        {"step": "Name the founder of that studio.", "is_final": True} if "founder" in p else
        {"step": "Find the studio of the film (merged).", "is_final": False})
    tr = run(be)
    merged = next(n for n in tr.nodes.values() if n.attrs.get("merged"))
    assert len(merged.parents) == 2
    gen = [last_user(c["prompt"]) for c in be.calls if P.GEN_TAG in c["prompt"]
           and "Steps done:\n1." in last_user(c["prompt"])]
    mine = [u for u in gen if "(merged)" in u]
    assert mine, gen
    done = mine[0].split("Steps done:\n", 1)[1].split("\nNext step?", 1)[0].splitlines()
    # both parents (creation order), then the node itself; the question is not a step
    assert done == [f"1. {A}", f"2. {B}", "3. Find the studio of the film (merged)."]
    assert not any(Q in line for line in done)


def _proposal_calls_per_node(tr) -> dict[str, int]:
    return dict(Counter(c["node_id"] for c in tr.llm_calls.values()
                        if c["purpose"] == "propose"))


@pytest.mark.parametrize("below, per_step", [(None, 1), (0, 2), (3, 3)])
def test_samples_below_root_sets_the_proposals_of_every_step_but_the_root(below, per_step):
    over = {} if below is None else {"samples_below_root": below}
    tr = run(make_backend(DIAMOND, {}), over)
    assert tr.status == "finished", tr.errors
    assert not trace_problems(tr)
    per_node = _proposal_calls_per_node(tr)
    assert per_node.pop(tr.roots()[0]) == 2               # samples_per_sink at the root
    a = next(n.id for n in tr.nodes.values() if n.text == A)
    b = next(n.id for n in tr.nodes.values() if n.text == B)
    assert per_node == {a: per_step, b: per_step}         # 0 = samples_per_sink, as before
    # the deeper proposals of both steps still merge into one node with both parents
    merged = [n for n in tr.nodes.values() if n.attrs.get("merged")]
    assert len(merged) == 1 and sorted(merged[0].parents) == sorted([a, b])
    assert len(merged[0].attrs["merged_from"]) == 2 * per_step
    ev = next(e for e in tr.log if e["type"] == "similarity_computed" and e["data"]["iteration"] == 1)
    assert ev["data"]["sibling_pairs"] == 2 * math.comb(per_step, 2)


def test_structure_variants_tree_and_chain():
    tree = run(make_backend(DIAMOND, {}), {"structure": "tree", "samples_below_root": 0})
    assert not [c for c in tree.llm_calls.values() if c["purpose"] == "combine"]
    # the answer extraction reads every answered sink
    assert all(len(n.parents) <= 1 for n in tree.nodes.values()
               if n.kind not in ("answer", "answer_extraction"))
    assert len([n for n in tree.nodes.values() if n.kind == "final"]) == 4   # 2 samples x 2
    chain_be = make_backend(DIAMOND, {})
    chain = run(chain_be, {"structure": "chain", "samples_below_root": 3})
    per_node = _proposal_calls_per_node(chain)
    assert per_node.pop(chain.roots()[0]) == 2        # the root still branches
    assert per_node and all(v == 1 for v in per_node.values())   # one proposal per sink
    assert not [c for c in chain.llm_calls.values() if c["purpose"] == "combine"]
    assert all(len(n.parents) <= 1 for n in chain.nodes.values()
               if n.kind not in ("answer", "answer_extraction"))


def test_shipped_tau_is_a_fitted_state_recorded_by_the_run():
    from workbench.methods.crp_rag.method import TAU_CALIBRATION, CrpRag, CrpRagConfig
    recs = CrpRag.fitted_state(CrpRagConfig())
    assert len(recs) == 1 and recs[0].fitted_on == TAU_CALIBRATION["ppl"].ref
    assert recs[0].kind == "crp_tau_ppl" and recs[0].question_ids
    assert CrpRag.fitted_state(cfgmod.build(CrpRagConfig, {"tau_ppl": 3.0})) == []
    assert CrpRag.fitted_state(cfgmod.build(CrpRagConfig, {"no_evaluation": True})) == []
    small = CrpRag.fitted_state(cfgmod.build(CrpRagConfig, {"preset": "small-model"}))
    assert small and small[0].extra["mode"] == "ppl+unknown"
    tr = run(make_backend(DIAMOND, {}))
    used = [e["data"] for e in tr.log if e["type"] == "artefact_used"]
    assert used and used[0]["kind"] == "crp_tau_ppl"


def test_a_tau_calibrated_for_another_model_or_dataset_is_flagged():
    """The shipped tau_ppl belongs to the model and dataset it was calibrated on; on any other
    the run says so (and names what to run), on those it stays quiet."""
    from workbench.llm.base import ModelInfo
    from workbench.methods.crp_rag.method import TAU_CALIBRATION
    cal = TAU_CALIBRATION["ppl"]
    home = cal.ref.split(":")[0]

    def flags(model=None, dataset=home, **over):
        be = make_backend(CHAIN, {})
        if model:
            be.info = ModelInfo(name=model)
        m = get_method("crp-rag")
        ctx = RunContext(llm=be, config=cfgmod.build(m.Config, {"samples_per_sink": 1, **over}),
                         retrievers={"dense": TinyRetriever()}, dataset=dataset,
                         embedder=FakeEmbedder({"studio": [1, 0, 0, 0, 0, 0, 0, 0]}))
        tr = run_to_end(m, ctx, Q)
        return [e["data"] for e in tr.log if e["type"] == "tau_calibration_mismatch"], be

    got, be = flags()
    assert len(got) == 1 and got[0]["calibrated_for"] == cal.model
    assert f"--model {be.info.name}" in got[0]["note"] and len(got[0]["reasons"]) == 1
    assert flags(model=cal.model)[0] == []
    got = flags(model=cal.model, dataset="hotpot100")[0]
    assert len(got) == 1 and got[0]["calibrated_on"] == cal.ref
    assert "--dataset hotpot100 --split train" in got[0]["note"]
    # a tau the user chose is theirs: no artefact, no flag
    assert flags(dataset="hotpot100", tau_ppl=2.0)[0] == []


def test_tau_calibration_labels_a_runs_own_nodes_by_supporting_pages():
    """benchmarks/crp_tau_calibration.py --from-eval fits tau on the nodes CRP-RAG wrote; a
    node is supported when it retrieved a supporting-fact page."""
    import importlib.util
    from pathlib import Path

    from workbench import trace as T

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "crp_tau_calibration.py"
    spec = importlib.util.spec_from_file_location("crp_tau_calibration", path)
    cal = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cal)

    class StudioPages(TinyRetriever):
        def search(self, query, k=5):
            title = "Studio Ghibli" if "studio" in query.lower() else "Films of 2001"
            return [Hit("d1", title, f"About {query}", "dense", 0.9, 1)]

    be = make_backend(DIAMOND, {A: ("Spirited Away", -0.3), B: ("Many films", -0.4)},
                      default_eval=("Ghibli.", -0.01))
    tr = run(be, retriever=StudioPages())
    events = [T.node_added(n.id, n.kind, n.text) for n in tr.nodes.values()] + \
        [T.Event(e["type"], e["data"], node_id=e["node_id"]) for e in tr.log]
    rows = cal.label_nodes(events, {"studio ghibli"})
    evaluated = {e["node_id"] for e in tr.log if e["type"] == "node_evaluated"}
    assert len(rows) == len(evaluated) >= 3
    by_step = {r["step"]: r for r in rows}
    assert by_step[A]["supported"] is False and by_step[B]["supported"] is False
    studio = [r for s, r in by_step.items() if "studio" in s.lower()]
    assert studio and all(r["supported"] for r in studio)
    assert by_step[A]["ppl"] == pytest.approx(math.exp(0.3), rel=1e-3)
    # the supported nodes' PPLs sit below the unsupported one's: the fit separates them
    pos = [r["ppl"] for r in rows if r["supported"]]
    neg = [r["ppl"] for r in rows if not r["supported"]]
    tau, acc = cal.best_tau(pos, neg)
    assert max(pos) < tau <= min(neg) and acc == 1.0
    # with gold sub-answers the label is whether the node's knowledge holds one of them
    by_answer = {r["step"]: r["supported"] for r in cal.label_nodes(events, set(), ["2001"])}
    assert by_answer[A] and by_answer[B]
    assert not any(v for s, v in by_answer.items() if s not in (A, B))


# --------------------------------------------------------------- proposals=list (Eq. 4)

def list_backend(plan):
    """make_backend with P_gen's list prompt answered from ``plan`` (lists of steps)."""
    be = make_backend(plan, {})
    be.rules.insert(0, type(be.rules[0])(P.GEN_LIST_TAG, gen_router(plan)))
    return be


C1 = "Find the studio of that film."
C2 = "Find the studio that produced that film."
LIST_PLAN = {"none": [[{"step": A, "is_final": False}, {"step": B, "is_final": False},
                       {"step": A.upper(), "is_final": False}]],      # repeats A: dropped
             A: [[{"step": C1, "is_final": True}]],
             B: [[{"step": C2, "is_final": True}]]}
DISTINCT = {"Miyazaki": [0, 1, 0, 0, 0, 0, 0, 0], "films released": [0, 0, 1, 0, 0, 0, 0, 0],
            "MIYAZAKI": [0, 1, 0, 0, 0, 0, 0, 0], "studio": [1, 0, 0, 0, 0, 0, 0, 0]}


def test_list_mode_makes_one_sampled_call_per_sink_and_each_step_becomes_a_child():
    tr = run(list_backend(LIST_PLAN), {"proposals": "list"},
             embedder=FakeEmbedder(DISTINCT))
    assert tr.status == "finished" and not trace_problems(tr)
    gen = [c for c in tr.llm_calls.values() if c["purpose"].startswith("propose")]
    # the root, then A's and B's node: one call each, sampled, constrained to a 1-3 list
    assert len(gen) == 3 and all(P.GEN_LIST_TAG in c["prompt"] for c in gen)
    assert {c["node_id"] for c in gen} == {tr.roots()[0]} | {
        n.id for n in tr.nodes.values() if n.text in (A, B)}
    assert all(c["params"]["temperature"] == 0.8 for c in gen)
    assert all(c["params"]["json_schema"]["type"] == "array"
               and c["params"]["json_schema"]["maxItems"] == 3 for c in gen)
    root = tr.nodes[tr.roots()[0]]
    assert sorted(tr.nodes[c].text for c in root.children) == sorted([A, B])
    assert root.attrs["proposal_items_dropped"] == ["item 2: repeats an earlier step"]
    props = [e["data"] for e in tr.log if e["type"] == "proposal_generated"]
    assert [p["list_size"] for p in props] == [2, 2, 1, 1] and all(p["parse_ok"] for p in props)
    # the two studio steps (cosine 1.0, different parents) merge into one final with 2 parents
    finals = [n for n in tr.nodes.values() if n.kind == "final"]
    assert len(finals) == 1 and len(finals[0].parents) == 2


def test_list_mode_with_list_max_steps_one_asks_for_one_step():
    tr = run(list_backend({"none": [[{"step": A, "is_final": True}]]}),
             {"proposals": "list", "list_max_steps": 1})
    gen = [c for c in tr.llm_calls.values() if c["purpose"] == "propose"]
    assert len(gen) == 1 and gen[0]["params"]["json_schema"]["maxItems"] == 1
    assert "1 to 1 short instructions" in gen[0]["prompt"]


def test_an_unparseable_list_is_a_parse_failure_on_the_node_and_the_run_goes_on():
    plan = {"none": [[{"step": A, "is_final": False}]]}
    be = list_backend(plan)
    # the root's list parses; A's sink answers with no list at all, twice (the retry too)
    be.rules.insert(0, type(be.rules[0])(f"1. {A}\nNext steps?", "[{\"step\": 3}]"))
    tr = run(be, {"proposals": "list"})
    assert tr.status == "finished" and not trace_problems(tr)
    a = next(n for n in tr.nodes.values() if n.text == A)
    assert [c["purpose"] for c in tr.llm_calls.values() if c["node_id"] == a.id
            and c["purpose"].startswith("propose")] == ["propose", "propose:retry"]
    fail = [n for n in tr.nodes.values() if n.kind == "parse_failed"]
    assert len(fail) == 1 and fail[0].parents == [a.id]
    assert "no valid step" in fail[0].attrs["errors"][0]
    assert a.attrs["proposal_parse_failed"] is True
    assert a.attrs["forced_final"] and a.attrs["forced_reason"] == "no parseable proposal"
    ev = [e["data"] for e in tr.log if e["type"] == "proposal_generated"
          and e["data"]["parent"] == a.id]
    assert len(ev) == 1 and ev[0]["parse_ok"] is False and ev[0]["step"] is None
    # the root failing too falls back to the question as its one final step
    be = list_backend(plan)
    be.rules.insert(0, type(be.rules[0])(P.GEN_LIST_TAG, "not json"))
    tr = run(be, {"proposals": "list"})
    assert tr.status == "finished" and tr.nodes[tr.roots()[0]].attrs["proposal_parse_failed"]
    assert [n.text for n in tr.nodes.values() if n.kind == "final"] == [f"Answer the question: {Q}"]


def _sibling_rate(tr):
    return next(e["data"] for e in tr.log if e["type"] == "sibling_near_duplicates")


def test_sibling_near_duplicate_rate_counts_pairs_of_one_parent_above_0_8():
    # distinct root steps: one sibling pair (A, B), cosine 0; A's and B's children are not
    # siblings of each other
    tr = run(list_backend(LIST_PLAN), {"proposals": "list"}, embedder=FakeEmbedder(DISTINCT))
    got = _sibling_rate(tr)
    assert (got["pairs"], got["near_duplicates"], got["rate"]) == (1, 0, 0.0)
    assert got["threshold"] == 0.8 and got["embedder"] == "fake"
    # a paraphrase at cosine 0.85 is a near-duplicate; below a 0.90 merge both stay nodes
    s = 0.85
    para = "Find the 2001 film of Hayao Miyazaki."
    groups = {"2001 film of": [0, s, math.sqrt(1 - s * s), 0, 0, 0, 0, 0], **DISTINCT}
    plan = {**LIST_PLAN, "none": [[{"step": A, "is_final": False},
                                   {"step": para, "is_final": False}]],
            para: [[{"step": C1, "is_final": True}]]}
    tr = run(list_backend(plan), {"proposals": "list", "tau_combine": 0.9},
             embedder=FakeEmbedder(groups))
    got = _sibling_rate(tr)
    assert (got["pairs"], got["near_duplicates"], got["rate"]) == (1, 1, 1.0)
    root = tr.nodes[tr.roots()[0]]
    assert len(root.children) == 2
    # at the default threshold (0.80) the reworded pair is one merged node; the figure still
    # counts the pair, which is measured before merging
    tr = run(list_backend(plan), {"proposals": "list"}, embedder=FakeEmbedder(groups))
    assert _sibling_rate(tr)["near_duplicates"] == 1
    root = tr.nodes[tr.roots()[0]]
    assert len(root.children) == 1 and tr.nodes[root.children[0]].attrs["merged"]
    # samples mode: the two samples of each sink are siblings (here identical: cosine 1)
    tr = run(make_backend(DIAMOND, {}), {"proposals": "samples", "samples_below_root": 2})
    got = _sibling_rate(tr)
    assert got["pairs"] == 3 and got["near_duplicates"] >= 2


def test_list_mode_runs_end_to_end_on_a_real_model(default_llm):
    """The list grammar (a JSON array of 1-2 step objects) on llama.cpp, and the graph built
    from it, with SmolLM2-135M; small budgets: the trace's shape is checked, not accuracy."""
    m = get_method("crp-rag")
    cfg = cfgmod.build(m.Config, {"proposals": "list", "list_max_steps": 2,
                                  "max_iterations": 1, "no_aggregation": True, "top_k": 1,
                                  "eval_max_tokens": 8, "step_max_tokens": 12,
                                  "answer_max_tokens": 32, "gen_max_tokens": 40,
                                  "answer_span": False})
    ctx = RunContext(llm=default_llm, config=cfg, retrievers={"dense": TinyRetriever()},
                     embedder=FakeEmbedder({}))
    tr = run_to_end(m, ctx, Q)
    assert tr.status in ("finished", "refused"), tr.errors
    assert not trace_problems(tr)
    gen = [c for c in tr.llm_calls.values() if c["purpose"] == "propose"]
    assert len(gen) == 1 and gen[0]["params"]["json_schema"]["maxItems"] == 2
    steps = json.loads(gen[0]["output"])     # the grammar holds it to a list of 1-2 steps
    assert isinstance(steps, list) and 1 <= len(steps) <= 2
    assert all(isinstance(s["step"], str) and isinstance(s["is_final"], bool) for s in steps)
    root = tr.nodes[tr.roots()[0]]
    # a refused run hangs its refusal node off the root too: count the proposed steps
    steps = [c for c in root.children if tr.nodes[c].kind in ("step", "final")]
    assert 1 <= len(steps) <= 2, [(c, tr.nodes[c].kind) for c in root.children]
    taken = sum(1 for e in tr.log if e["type"] == "proposal_generated" and e["data"]["parse_ok"])
    assert _sibling_rate(tr)["pairs"] == taken * (taken - 1) // 2


class LongRetriever(TinyRetriever):
    """Passages whose answer sentence comes after a long opening: a head cut loses it."""

    def search(self, query: str, k: int = 5) -> list[Hit]:
        self.queries.append(query)
        filler = "The film toured festivals for a long time and was shown widely. " * 6
        return [Hit("d1", "Spirited Away", filler + "It was produced by Studio Ghibli in Tokyo.",
                    "dense", 0.9, 1)]


def test_a_passage_budget_keeps_the_sentences_relevant_to_the_step_and_records_the_cut():
    """passage_chars > 0 cuts each passage as `context` says (relevance by default, the same
    kind of context the baselines read); the cut is stored on the node; 0 keeps passages
    whole and records nothing."""
    whole = run(make_backend(DIAMOND, {}), retriever=LongRetriever())
    assert whole.status == "finished", whole.errors
    assert not any((n.attrs or {}).get("context") for n in whole.nodes.values())
    prompts = {}
    for mode in ("relevance", "head"):
        be = make_backend(DIAMOND, {})
        tr = run(be, {"passage_chars": 120, "context": mode}, retriever=LongRetriever())
        assert tr.status == "finished", tr.errors
        assert not trace_problems(tr)
        cut = [n for n in tr.nodes.values() if (n.attrs or {}).get("context")]
        assert cut and all(n.attrs["context"]["mode"] == mode and
                           n.attrs["context"]["cut_chars"] > 0 for n in cut)
        prompts[mode] = [c["prompt"] for c in tr.llm_calls.values() if c["purpose"] == "aggregate"]
    assert prompts["relevance"] and prompts["head"]
    assert all("Studio Ghibli" in p for p in prompts["relevance"])
    assert not any("Studio Ghibli" in p for p in prompts["head"])


# Both samples at the root write the same final step (the router cycles one entry)
SAME_STEP = {"none": [{"step": "Find the studio of the film.", "is_final": True}]}


def _stepping(answer: str):
    be = make_backend(SAME_STEP, {})
    be.rules.insert(0, Rule(P.STEP_TAG, answer))
    return be


def test_a_span_the_answer_states_is_read_without_a_call():
    be = _stepping("The film was made by Studio Ghibli, so the answer is Studio Ghibli.")
    tr = run(be)
    assert tr.status == "finished", tr.errors
    assert tr.answer["text"] == "Studio Ghibli"
    assert not [c for c in tr.llm_calls.values() if c["purpose"] == "answer_span"]
    (x,) = [n for n in tr.nodes.values() if n.kind == "answer_extraction"]
    assert x.attrs["read_from"] == "stated" and x.state == "done"
    assert x.attrs["long_answer"].endswith("so the answer is Studio Ghibli.")
    assert tr.nodes[tr.answer["node_id"]].parents == [x.id]
    assert tr.answer["info"]["answer_span"]["stated"] is True
    # off: the call reads it (the scripted rule copies the long answer)
    tr = run(be, {"span_if_stated": False})
    assert [c for c in tr.llm_calls.values() if c["purpose"] == "answer_span"]


def test_an_answer_that_states_no_span_goes_to_the_call():
    tr = run(_stepping("Studio Ghibli produced it in Tokyo."))
    (c,) = [c for c in tr.llm_calls.values() if c["purpose"] == "answer_span"]
    (x,) = [n for n in tr.nodes.values() if n.kind == "answer_extraction"]
    assert "read_from" not in x.attrs


@pytest.mark.parametrize("question, long_answer, span", [
    ("Where was he born?", "Alfred Hitchcock was born in London, so the answer is London.",
     "London"),
    ("Which came first?", "Vertigo came out in 1958, so the answer is Vertigo.", "Vertigo"),
    ("Which studio?", "The knowledge does not say, so the answer is unknown.", "unknown"),
    ("Which studio?", "So the answer is: Studio Ghibli", "Studio Ghibli"),
    # yes or no opening the answer to a yes/no question
    ("Are Christopher Nolan and Sathish Kalathil both directors?",
     "Yes, Christopher Nolan and Sathish Kalathil are both film directors.", "yes"),
    ("Were the two airports in the same state?",
     "No, Watertown International Airport and Alexandria International Airport are not in "
     "the same state.", "no"),
    ("Is it in Ohio?", "No.", "no"),
    # ... but not to a question naming alternatives, nor a word that only starts with yes/no
    ("Was Psycho or Vertigo released first?", "Yes, Vertigo was released first.", None),
    ("Are they both directors?", "Nobody says so.", None),
    ("Who directed Psycho?", "No, the director was Alfred Hitchcock.", None),
    # a clause or a second sentence after the span: the call reads it
    ("Who?", "so the answer is Alfred Hitchcock, who was born in London.", None),
    ("When?", "so the answer is June 16, 1960.", None),
    ("Which?", "so the answer is Vertigo. It came out first.", None),
    ("Which?", "so the answer is the one that was released first in the United States of "
     "America", None),
    # a non-answer in other words, or no lead-in at all
    ("Which?", "so the answer is not given in the knowledge.", None),
    ("Who?", "Alfred Hitchcock directed it.", None),
    ("Who?", "", None),
])
def test_stated_span(question, long_answer, span):
    from workbench.methods.answer_span import stated_span
    assert stated_span(question, long_answer) == span
