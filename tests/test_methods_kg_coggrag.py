"""CogGRAG rules on the fictional toy KG with a scripted LLM and a bag-of-words embedder."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tests.kg_toy import question, toy_kg
from tests.span_helpers import add_span_rule
from workbench import config as C
from workbench.llm.scripted import ScriptedBackend
from workbench.methods.base import RunContext
from workbench.methods.coggrag.method import CogConfig, CogGRAG, span_perplexity
from workbench.execution import run_to_end


class BowEmbedder:
    """Deterministic: hashed bag of lower-cased words, L2-normalised."""
    name = "bow-test"
    key = "bow-test"

    def encode(self, texts, **kw):
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        out = np.zeros((len(items), 64), dtype=np.float32)
        for i, t in enumerate(items):
            for w in re.findall(r"[a-z0-9]+", t.lower()):
                out[i, sum(map(ord, w)) % 64] += 1.0
        n = np.linalg.norm(out, axis=1, keepdims=True)
        n[n == 0] = 1
        out /= n
        return out[0] if single else out


@pytest.fixture(scope="module")
def kg():
    return toy_kg()


ROOT_Q = question("t2").question          # Where was the director of Glass Harbor born?
SUB1 = "Who directed Glass Harbor?"
SUB2 = "Where was the person from sub-question #1 born?"


LOCAL_KEYS = {"entities": ["Glass Harbor", "Norvania"],
              "tuples": [["Glass Harbor", "directed by"]],
              "triples": [["Glass Harbor", "directed by", "director"]]}


def _backend(decomp=None, verdicts=None, rethink="Insufficient information, I don't know",
             answers=None):
    be = ScriptedBackend()
    for q, items in (decomp or {ROOT_Q: [[SUB1, "End."], [SUB2, "End."]]}).items():
        be.add("Split the question.*Question: " + re.escape(q),
               [{"Sub-question": s, "State": st} for s, st in items], regex=True)
    be.add("each numbered question", lambda prompt: json.dumps({"questions": [
        LOCAL_KEYS for _ in re.findall(r"^\d+\. ", prompt, re.M)]}))
    be.add("Extract the keys", {"entities": ["Glass Harbor", "Norvania"], "tuples": [["Glass Harbor",
                                                                          "directed by"]],
                                "triples": [["Glass Harbor", "directed by", "director"]]})
    be.add("Organise the information", {"subgraph": [["director", "place of birth", "city"]]})
    answers = answers or {}

    def reason(prompt: str) -> str:
        qs = json.loads(re.search(r"Questions: (\[.*?\])\n", prompt).group(1))
        if "one answer per question" in prompt:
            return json.dumps({"answers": [answers.get(q, "Ilse Varga") for q in qs]})
        return json.dumps({"answers": [{"Question": q, "Answer": answers.get(q, "Ilse Varga")}
                                       for q in qs]})
    be.add("Answer each question", reason)
    for ans, v in (verdicts or {}).items():
        be.add(f'"Answer": "{ans}"', v)
    be.add("Reply [right] or [wrong]", "[right]")
    be.add("judged wrong", {"answer": rethink})
    return add_span_rule(be)          # the extraction call copies short answers as they are


def _run(kg, be, q=ROOT_Q, gold="t2", seed=0, **over):
    cfg = C.build(CogConfig, over)
    ctx = RunContext(llm=be, config=cfg, kg=kg, embedder=BowEmbedder(), seed=seed,
                     gold=question(gold) if gold else None)
    return run_to_end(CogGRAG(), ctx, q)


def _log(tr, typ):
    return [(e["node_id"], e["data"]) for e in tr.log if e["type"] == typ]


def _purposes(tr):
    return [c["purpose"] for c in sorted(tr.llm_calls.values(), key=lambda c: c["seq"])]


# --- decomposition: End / Continue growth ---

def test_mind_map_grows_level_by_level_until_all_end(kg):
    decomp = {ROOT_Q: [["Who made Glass Harbor and where was that person born?", "Continue."],
                       ["What country is that?", "End."]],
              "Who made Glass Harbor and where": [[SUB1, "End."], [SUB2, "End."]]}
    tr = _run(kg, _backend(decomp))
    assert tr.status == "finished"
    mm = {n.id: n for n in tr.nodes.values() if n.kind in ("question", "subquestion")}
    assert set(mm) == {"0", "0.1", "0.2", "0.1.1", "0.1.2"}
    assert [mm[i].layer for i in ("0", "0.1", "0.1.1")] == [0, 1, 2]
    assert mm["0.1"].attrs["mm_state"] == "continue" and mm["0.2"].attrs["mm_state"] == "end"
    assert mm["0.1.2"].parents == ["0.1"] and mm["0.1.2"].attrs["sibling_index"] == 2
    assert mm["0.1.2"].attrs["refers_to"] == [1]
    started = [nid for nid, _ in _log(tr, "decompose_started")]
    assert started == ["0", "0.1"]                       # only Continue nodes, breadth first
    fin = _log(tr, "decomposition_finished")[0][1]
    assert fin == {"num_nodes": 5, "depth": 2, "over_decomposed": False}
    # answers flow back up: deepest level first
    levels = [d["t"] for _, d in _log(tr, "level_reasoning_started")]
    assert levels == [2, 1, 0]


def test_depth_cap_forces_end(kg):
    decomp = {ROOT_Q: [["Who made Glass Harbor and where was that person born?", "Continue."]]}
    tr = _run(kg, _backend(decomp), max_level=1)
    forced = _log(tr, "node_forced_end")
    assert forced == [("0.1", {"reason": "depth cap T_max=1"})]
    n = tr.nodes["0.1"]
    assert n.attrs["forced_end"] and n.attrs["mm_state"] == "end"
    assert _purposes(tr).count("decompose") == 1


def test_node_budget_caps_the_map(kg):
    decomp = {ROOT_Q: [[f"Part {i} of the question about Glass Harbor?", "Continue."]
                       for i in range(1, 6)]}
    tr = _run(kg, _backend(decomp), max_nodes=3)
    mm = [n for n in tr.nodes.values() if n.kind in ("question", "subquestion")]
    assert len(mm) == 3
    assert all(d["reason"].startswith("node budget") for _, d in _log(tr, "node_forced_end"))


def test_degenerate_split_makes_the_root_a_leaf(kg):
    tr = _run(kg, _backend({ROOT_Q: [[ROOT_Q, "End."]]}))
    assert [n for n in tr.nodes.values() if n.kind == "subquestion"] == []
    (nid, d), = _log(tr, "node_forced_end")
    assert nid == "0" and d["reason"].startswith("degenerate")


def test_decomposition_parse_failure_retries_once_then_is_visible(kg):
    be = _backend({})
    be.rules.insert(0, type(be.rules[0])("Split the question", "not json"))
    tr = _run(kg, be)
    assert _purposes(tr)[:2] == ["decompose", "decompose:retry"]
    assert any(n.state == "parse_failed" and n.parents == ["0"] for n in tr.nodes.values())
    assert tr.nodes["0"].state in ("verified", "answered", "unknown")
    assert _log(tr, "node_forced_end")[0][1]["reason"] == "decomposition parse failure"


def test_no_decomposition_ablation(kg):
    tr = _run(kg, _backend(), decomposition=False)
    assert "decompose" not in _purposes(tr)
    assert [n.id for n in tr.nodes.values() if n.kind in ("question", "subquestion")] == ["0"]


# --- retrieval: epsilon ---

def test_epsilon_keeps_exactly_the_candidates_above_it(kg):
    all_scores = sorted(h["score"] for h in
                        _run(kg, _backend(), epsilon=0.0, k_max=0).nodes["kg"].evidence[0]["hits"])
    assert all_scores[0] < all_scores[-1]
    eps = round((all_scores[0] + all_scores[-1]) / 2, 3)
    tr = _run(kg, _backend(), epsilon=eps, k_max=0)
    hits = tr.nodes["kg"].evidence[0]["hits"]
    assert hits and all(h["retriever"] == "kg" for h in hits)
    assert all(h["meta"]["kept"] == (h["score"] > eps) for h in hits)
    kept = [h for h in hits if h["meta"]["kept"]]
    assert 0 < len(kept) < len(hits)
    done = _log(tr, "pruning_done")[0][1]
    assert done["n_kept"] == len(kept) and done["eps"] == eps
    assert tr.nodes["kg"].attrs["epsilon"] == eps
    # per-node attribution carries every candidate, so what-if can re-prune per node
    per_node = [h for n in tr.nodes.values() if n.id != "kg" for ev in n.evidence
                for h in ev["hits"]]
    glob = [h for h in hits if h["meta"]["owner"] == "GLOBAL"]
    assert len(per_node) + len(glob) == len(hits) and glob
    assert all("similarity" in h["meta"] for h in per_node)
    # kept triples reach the reasoning prompt, pruned ones do not
    prompt = next(c["prompt"] for c in tr.llm_calls.values() if c["purpose"] == "reason")
    assert all(h["text"] in prompt for h in kept)
    assert not any(h["text"] in prompt for h in hits if not h["meta"]["kept"])
    # a higher threshold never keeps more; 0.99 starves retrieval (visible)
    tr2 = _run(kg, _backend(), epsilon=min(eps + 0.1, 0.98), k_max=0)
    assert _log(tr2, "pruning_done")[0][1]["n_kept"] <= len(kept)
    tr3 = _run(kg, _backend(), epsilon=0.99)
    assert _log(tr3, "pruning_done")[0][1]["n_kept"] == 0
    assert tr3.nodes["kg"].attrs["starvation"] is True


def test_k_max_caps_kept_triples_and_reports_truncation(kg):
    tr = _run(kg, _backend(), epsilon=0.0, k_max=2)
    d = _log(tr, "pruning_done")[0][1]
    over = sum(1 for h in tr.nodes["kg"].evidence[0]["hits"] if h["score"] > 0.0)
    assert d["n_kept"] == 2 and d["truncated"] == over - 2 > 0


def test_keys_linking_and_expansion_events(kg):
    tr = _run(kg, _backend(), epsilon=0.3)
    linked = {d["string"]: d["kg_node_ids"] for _, d in _log(tr, "entity_linked")}
    assert linked["Glass Harbor"] == ["m.film1"]
    exp = {d["seed"]: d["n_triples"] for _, d in _log(tr, "candidates_expanded")}
    assert exp["m.film1"] == 3                       # 1 hop both ways, schema edges skipped
    texts = [h["text"] for h in tr.nodes["kg"].evidence[0]["hits"]]
    assert not any("type" in t.split(", ")[1] for t in texts)
    assert _log(tr, "keys_global")[0][1]["subgraph"] == [["director", "place of birth", "city"]]
    assert len(_log(tr, "keys_local")) == 3          # per node: root + 2 sub-questions


def test_a_second_hop_expands_the_far_ends_of_first_hop_triples_over_epsilon(kg):
    """expand_hops=2 (not in the paper) reaches the director's birthplace, which no key
    entity links to; the first hop's candidates and scores stay as they were."""
    def hits(tr):
        return {tuple(h["meta"]["triple"]): h for h in tr.nodes["kg"].evidence[0]["hits"]}
    one = hits(_run(kg, _backend(), epsilon=0.0, k_max=0))
    two = hits(_run(kg, _backend(), epsilon=0.0, k_max=0, expand_hops=2))
    born = ("m.p1", "people.person.place_of_birth", "m.c1")
    assert born not in one and two[born]["meta"]["hop"] == 2
    assert two[born]["meta"]["seed"] == "m.p1"     # the far end of (Glass Harbor, directed by, p1)
    assert {k: (h["score"], h["meta"]["hop"]) for k, h in two.items() if k in one} \
        == {k: (h["score"], 1) for k, h in one.items()}
    # a far end is expanded only when its first-hop triple is over epsilon
    assert not any(h["meta"]["hop"] == 2
                   for h in hits(_run(kg, _backend(), epsilon=0.99, expand_hops=2)).values())


def test_global_keys_ablation_and_batched_extraction(kg):
    tr = _run(kg, _backend(), global_keys=False, local_extraction="batched")
    p = _purposes(tr)
    assert "keys_global" not in p and p.count("keys_local") == 1


# --- bottom-up reasoning with verification ---

def test_failed_verification_gives_one_rethink_that_may_say_unknown(kg):
    be = _backend(verdicts={"Tessaly": "[wrong]"}, answers={SUB2: "Tessaly"})
    tr = _run(kg, be)
    p = _purposes(tr)
    assert p.count("rethink") == 1
    (nid, d), = _log(tr, "rethought")
    assert nid == "0.2" and d["is_unknown"] is True
    n = tr.nodes["0.2"]
    assert n.state == "unknown" and n.attrs["rethought"] and n.attrs["verdict"] == "wrong"
    assert n.attrs["answer_initial"] == "Tessaly"
    # the re-thought answer is not verified again (paper: one re-think)
    assert [x for x, _ in _log(tr, "verified")].count("0.2") == 1
    # the unknown answer reaches the parent's context, labelled verbatim
    root_prompt = [c["prompt"] for c in tr.llm_calls.values()
                   if c["purpose"] == "reason" and c["node_id"] == "0"][0]
    assert "I don't know" in root_prompt and "Ilse Varga" in root_prompt


def test_rethink_may_answer_and_unknown_root_is_a_refusal(kg):
    be = _backend(verdicts={"Ilse Varga": "[wrong]"}, rethink="Port Amsel")
    tr = _run(kg, be)
    assert tr.answer["text"] == "Port Amsel" and not tr.answer["refused"]
    be = _backend(decomp={ROOT_Q: [[ROOT_Q, "End."]]}, verdicts={"Ilse Varga": "[wrong]"})
    tr = _run(kg, be)
    assert tr.answer["refused"] is True and tr.status == "refused"
    assert tr.nodes["answer"].state == "unknown"


def test_max_rethink_above_one_re_verifies(kg):
    be = _backend(decomp={ROOT_Q: [[ROOT_Q, "End."]]}, verdicts={"Ilse Varga": "[wrong]",
                                                                 "Tessaly": "[wrong]"},
                  rethink="Tessaly")
    tr = _run(kg, be, max_rethink=2)
    assert _purposes(tr).count("rethink") == 2 and _purposes(tr).count("verify") == 3


def test_no_verification_ablation(kg):
    tr = _run(kg, _backend(), verification=False)
    assert "verify" not in _purposes(tr) and "rethink" not in _purposes(tr)


def test_sibling_group_is_one_call_and_call_count_formula(kg):
    tr = _run(kg, _backend())
    p = _purposes(tr)
    # decompose(1) + local(1 per node: 3) + global(1) + reason(levels: 1 group + root) +
    # verify(3) + the root answer's short span(1)
    assert p.count("decompose") == 1 and p.count("keys_local") == 3
    assert p.count("keys_global") == 1 and p.count("reason") == 2 and p.count("verify") == 3
    assert p.count("answer_span") == 1 and len(p) == 11
    one_call = _purposes(_run(kg, _backend(), local_extraction="one_call"))
    assert one_call.count("keys_local") == 1 and len(one_call) == 9     # Eq. 2's one call
    assert tr.summary["by_phase"]["decompose"]["llm_calls"] == 1
    per_node = _purposes(_run(kg, _backend(), reasoning="node"))
    assert per_node.count("reason") == 3


def test_event_order_and_well_formed_trace(kg):
    tr = _run(kg, _backend())
    order = [e["type"] for e in tr.log]
    spec = ["decompose_started", "decompose_finished", "decomposition_finished", "keys_local",
            "keys_global", "entity_linked", "candidates_expanded", "pruning_done",
            "level_reasoning_started", "answer_drafted", "verified", "node_finalized",
            "level_reasoning_finished"]
    firsts = [order.index(t) for t in spec]
    assert firsts == sorted(firsts)
    assert tr.roots() == ["0"] and tr.answer["node_id"] == "answer"
    assert tr.nodes["answer"].parents == ["span"] and tr.nodes["kg"].parents == ["0"]
    assert tr.nodes["span"].parents == ["0"] and tr.nodes["span"].kind == "answer_extraction"
    assert tr.answer["info"]["contains"] is False      # scripted root says Ilse Varga


def test_span_perplexity_covers_only_the_answer_tokens():
    rec = {"tokens": [[0, '{"a": "', -0.1, None], [1, "Port", -2.0, None],
                      [2, " Amsel", -2.0, None], [3, '"}', -0.1, None]]}
    assert span_perplexity(rec, "Port Amsel") == pytest.approx(np.exp(2.0), rel=1e-3)


def test_config_defaults_follow_the_spec():
    c = CogConfig()
    assert (c.max_level, c.max_children, c.max_nodes, c.epsilon, c.k_max, c.max_rethink,
            c.temperature_explore, c.temperature_reason) == (3, 5, 15, 0.7, 50, 1, 0.4, 0.0)
    abl = {k.name for k in C.knobs(CogConfig) if k.ablation}
    assert {"decomposition", "global_keys", "verification"} <= abl
    assert CogGRAG.view == "mindmap" and CogGRAG.thresholds == {
        "similarity": ("epsilon", "higher"), "p_right": ("min_p_right", "higher"),
        "confidence": ("min_confidence", "higher"),
        "description_similarity": ("description_min_sim", "higher")}
    assert not c.entity_descriptions and c.description_min_sim == 0.5
    assert (c.min_p_right, c.min_confidence) == (0.0, 0.0)        # extensions off: the paper


# --- decoding temperatures, what the verifier sees, M̂, node scores ---

def test_exploration_and_reasoning_temperatures(kg):
    be = _backend(verdicts={"Tessaly": "[wrong]"}, answers={SUB2: "Tessaly"})
    _run(kg, be, seed=7, local_extraction="per_node")
    temps: dict[str, set] = {}
    for c in be.calls:
        p = c["prompt"]
        kind = ("decompose" if "Split the question" in p else "extract" if
                ("Extract the keys" in p or "Organise the information" in p) else
                "score" if "<score>" in p else "verify" if "Reply [right] or [wrong]" in p
                else "rethink" if "judged wrong" in p else "reason")
        temps.setdefault(kind, set()).add(c["params"]["temperature"])
    assert temps["decompose"] == {0.4} and temps["extract"] == {0.4}      # exploration
    assert temps["reason"] == {0.0} and temps["verify"] == {0.0}          # reasoning
    assert temps["rethink"] == {0.0}
    seeds = {c["params"]["seed"] for c in be.calls if "Extract the keys" in c["prompt"]}
    assert len(seeds) == 3 and None not in seeds      # seeded per node, so repeatable
    be2 = _backend()
    _run(kg, be2, deterministic=True)
    assert {c["params"]["temperature"] for c in be2.calls if "<score>" not in c["prompt"]} \
        == {0.0}


def test_the_verifier_sees_all_of_t(kg):
    be = _backend()
    tr = _run(kg, be, epsilon=0.0)
    kept = [h["text"] for h in tr.nodes["kg"].evidence[0]["hits"] if h["meta"]["kept"]]
    assert len(kept) > 5
    verify = [c["prompt"] for c in tr.llm_calls.values() if c["purpose"] == "verify"]
    assert len(verify) == 3
    assert all(t in p for p in verify for t in kept)          # whole T in every check
    assert not _log(tr, "context_overflow")
    # a budget too small for T: the verifier's drop is recorded, never silent
    small = _backend()
    small.info.n_ctx = 150                    # 0.3 x 150 tokens: less than T needs
    tr2 = _run(kg, small, epsilon=0.0, context_budget=0.3)
    drops = [d for _, d in _log(tr2, "context_overflow") if d["purpose"] == "verify"]
    assert drops and all(d["triples_dropped"] > 0 and d["triples_total"] == len(kept)
                         for d in drops)
    assert any("verify_overflow" in n.attrs for n in tr2.nodes.values())


def _two_groups_backend():
    a1, a2 = "Who directed Glass Harbor?", "Which genre is Glass Harbor?"
    b1, b2 = "Where was Ilse Varga born?", "Which country contains Port Amsel?"
    decomp = {ROOT_Q: [["What about the film?", "Continue."], ["What about the person?",
                                                                 "Continue."]],
              "What about the film": [[a1, "End."], [a2, "End."]],
              "What about the person": [[b1, "End."], [b2, "End."]]}
    answers = {a1: "ANS-A1", a2: "ANS-A2", b1: "ANS-B1", b2: "ANS-B2"}
    return _backend(decomp=decomp, answers=answers), (a1, a2, b1, b2)


def test_completed_reasoning_holds_deeper_levels_only(kg):
    be, (a1, a2, b1, b2) = _two_groups_backend()
    tr = _run(kg, be)
    reason = {c["node_id"]: c["prompt"] for c in tr.llm_calls.values()
              if c["purpose"] == "reason"}
    # level 2: the second sibling group does not see the first group's (same-level) answers
    assert "ANS-A1" not in reason["0.2.1"] and "ANS-A2" not in reason["0.2.1"]
    assert "Completed reasoning: []" in reason["0.1.1"]
    # level 1 sees all of level 2
    assert all(x in reason["0.1"] for x in ("ANS-A1", "ANS-A2", "ANS-B1", "ANS-B2"))
    # per-node reasoning: earlier siblings join M̂, other groups' nodes do not
    be2, _ = _two_groups_backend()
    tr2 = _run(kg, be2, reasoning="node")
    r2 = {c["node_id"]: c["prompt"] for c in tr2.llm_calls.values() if c["purpose"] == "reason"}
    assert "ANS-B1" in r2["0.2.2"] and "ANS-A1" not in r2["0.2.2"]
    assert "ANS-A1" not in r2["0.2.1"]


def test_answer_perplexity_and_p_right_are_node_scores(kg):
    from workbench.llm.scripted import Rule
    from workbench.viz.whatif import apply, threshold_specs
    be = _backend()
    be.rules[:0] = [Rule("<score>[right]", "[right]", logprob=-0.1),
                    Rule("<score>[wrong]", "[wrong]", logprob=-2.3)]
    tr = _run(kg, be, verdict_scores="always")      # asked for: shown although nothing gates
    n = tr.nodes["0.1"]
    expected = np.exp(-0.1) / (np.exp(-0.1) + np.exp(-2.3))
    assert n.scores["p_right"] == pytest.approx(expected, abs=1e-3)
    assert n.scores["perplexity"] >= 1.0
    assert n.scores["confidence"] == pytest.approx(1 / n.scores["perplexity"], abs=1e-3)
    assert n.thresholds == {"p_right": 0.0, "confidence": 0.0}
    specs = {sp.score: sp for sp in threshold_specs(tr, CogGRAG)}
    assert specs["p_right"].target == "node" and specs["confidence"].target == "node"
    w = apply(tr, specs["p_right"], 0.95)               # the slider: fails above 0.90
    assert w.node_pass["0.1"] is False and apply(tr, specs["p_right"], 0.5).node_pass["0.1"]
    # the gate, when set, re-thinks a [right] verdict that is not confident enough
    be2 = _backend()
    be2.rules[:0] = [Rule("<score>[right]", "[right]", logprob=-0.1),
                     Rule("<score>[wrong]", "[wrong]", logprob=-2.3)]
    tr2 = _run(kg, be2, min_p_right=0.95)
    assert _purposes(tr2).count("rethink") == 3
    assert all(d["gated_by"] == ["p_right"] for _, d in _log(tr2, "verified"))


def test_triples_of_a_built_kg_name_their_passage_so_triage_finds_gold_passages_in_them():
    """On a text dataset (HotpotQA: gold passages, no gold path) a KG method is judged by
    the passages its kept triples were extracted from; the second hop's passage is reached
    only by expand_hops=2."""
    from tests.kg_toy import ENTITIES, built_toy_kg
    from workbench.triage import triage
    names = {i: n or "cvt passage" for i, n in ENTITIES}
    built = built_toy_kg()
    hotpot = {"id": "h2", "question": ROOT_Q, "answers": ["Port Amsel"],
              "gold_titles": ["Glass Harbor", "Ilse Varga"],
              "meta": {"gold_passage_ids": ["Glass Harbor", "Ilse Varga"]}}
    one = _run(built, _backend(), gold=None, epsilon=0.0, k_max=0)
    hits = one.nodes["kg"].evidence[0]["hits"]
    assert hits and all(h["meta"]["sources"] == [names[h["meta"]["triple"][0]]] for h in hits)
    t = triage(one, question=hotpot)
    assert t.knowledge == "passages" and t.found == [0]
    assert {m["how"] for m in t.marks["kg"]} == {"source"}
    assert t.gold_held("kg")[0].startswith("hop 1: Glass Harbor (by a triple from its passage")
    two = triage(_run(built, _backend(), gold=None, epsilon=0.0, k_max=0, expand_hops=2),
                 question=hotpot)
    assert two.found == [0, 1]
    # a KG without sources (the toy KG as imported) carries none, and holds no passage hop
    plain = _run(toy_kg(), _backend(), gold=None, epsilon=0.0, k_max=0)
    assert not any("sources" in h["meta"] for h in plain.nodes["kg"].evidence[0]["hits"])
    assert triage(plain, question=hotpot).found == []


# --- entity descriptions (the released code's; spec coggrag.md §7.2 item 3) ---

def _described_kg():
    from workbench.datasets.base import Passage
    from workbench.knowledge.descriptions import EntityDescriptions
    kg = toy_kg()
    kg.descriptions = EntityDescriptions(lambda: [
        Passage("p-gh", "Glass Harbor", "Glass Harbor is a film directed by Ilse Varga. "
                "It was shot in winter."),
        Passage("p-nv", "Norvania (country)", "Norvania is a country. Its flag is green."),
        Passage("p-ob", "Oren Blake", "Oren Blake is an actor.")])
    return kg


def test_entity_descriptions_put_lead_sentences_of_linked_entities_beside_the_triples():
    kg = _described_kg()
    tr = _run(kg, _backend(), entity_descriptions=True, description_min_sim=0.0)
    node = tr.nodes["descriptions"]
    hits = node.evidence[0]["hits"]
    # linked entities only (Glass Harbor, and Norvania through its title's parenthesis)
    assert {h["id"] for h in hits} == {"p-gh", "p-nv"}
    assert all(h["meta"]["kept"] and h["meta"]["sources"] == [h["id"]] for h in hits)
    sims = [h["meta"]["description_similarity"] for h in hits]
    assert sims == sorted(sims, reverse=True)
    reason = [c["prompt"] for c in tr.llm_calls.values() if c["purpose"] == "reason"]
    lead = "Glass Harbor is a film directed by Ilse Varga."
    assert reason and all(lead in p and "shot in winter" not in p for p in reason)
    # before the triples, so a prompt over budget drops triples first
    first = reason[0].split("Knowledge:\n", 1)[1]
    assert first.index(lead) < first.index("(")
    # the answer "Ilse Varga" is in a kept description: it counts as support
    answered = [n for n in tr.nodes.values() if n.attrs.get("answer_final") == "Ilse Varga"]
    assert answered and all(n.attrs["support"] > 0 for n in answered)


def test_entity_descriptions_below_the_threshold_or_switched_off_stay_out_of_prompts():
    kg = _described_kg()
    high = _run(kg, _backend(), entity_descriptions=True, description_min_sim=0.99)
    assert not any(h["meta"]["kept"] for h in high.nodes["descriptions"].evidence[0]["hits"])
    assert high.nodes["descriptions"].state == "insufficient"
    off = _run(kg, _backend())
    assert "descriptions" not in off.nodes
    for tr in (high, off):
        prompts = [c["prompt"] for c in tr.llm_calls.values()]
        assert not any("directed by Ilse Varga." in p for p in prompts)
    # switched off, the prompts are the paper mode's whatever the KG carries
    plain = _run(toy_kg(), _backend())
    assert sorted(c["prompt"] for c in off.llm_calls.values()) == \
        sorted(c["prompt"] for c in plain.llm_calls.values())


def test_triage_finds_a_gold_passage_in_an_entity_description():
    from workbench.triage import triage
    kg = _described_kg()
    hotpot = {"id": "h2", "question": ROOT_Q, "answers": ["Port Amsel"],
              "gold_titles": ["Glass Harbor", "Ilse Varga"],
              "meta": {"gold_passage_ids": ["p-gh", "p-iv"]}}
    t = triage(_run(kg, _backend(), gold=None, entity_descriptions=True,
                    description_min_sim=0.0), question=hotpot)
    assert t.found == [0] and {m["how"] for m in t.marks["descriptions"]} == {"id"}


def test_what_if_sliders_keep_triples_and_descriptions_apart():
    from workbench.viz.whatif import apply, threshold_specs
    tr = _run(_described_kg(), _backend(), entity_descriptions=True, description_min_sim=0.0,
              epsilon=0.0)
    specs = {s.score: s for s in threshold_specs(tr, CogGRAG)}
    eps, desc = specs["similarity"], specs["description_similarity"]
    assert eps.target == desc.target == "evidence"
    assert len(desc.values) == 2 and desc.value == 0.0
    assert len(eps.values) == len(tr.nodes["kg"].evidence[0]["hits"]) + sum(
        len(tr.nodes[i].evidence[0]["hits"]) for i in ("0", "0.1", "0.2")
        if tr.nodes[i].evidence)
    # the strictest ε drops every triple and no description; the strictest description
    # threshold the reverse
    w = apply(tr, eps, 1.01)
    assert w.kept_hits["kg"] == 0 and "descriptions" not in w.kept_hits
    w = apply(tr, desc, 1.01)
    assert w.kept_hits["descriptions"] == 0 and "kg" not in w.kept_hits


# --- Eq. 2's one extraction call; scoring passes only when something reads them ---

DEEP = {ROOT_Q: [["Who made Glass Harbor and where was that person born?", "Continue."],
                 ["What country is that?", "End."]],
        "Who made Glass Harbor and where": [[SUB1, "End."], [SUB2, "End."]]}


def test_one_call_extracts_the_keys_of_every_node_and_maps_them_back(kg):
    be = _backend(DEEP)
    keys_of = {"Glass Harbor and where": ["Glass Harbor"], "What country": ["Norvania"],
               "Who directed": ["Ilse Varga"], "sub-question #1 born": ["birthplace"]}

    def per_question(prompt: str) -> str:
        qs = re.findall(r"^\d+\. (.*)$", prompt, re.M)
        return json.dumps({"questions": [
            {"entities": next((v for k, v in keys_of.items() if k in q), ["?"]),
             "tuples": [], "triples": [[q[:20], "asks", "x"]]} for q in qs]})
    be.rules.insert(0, type(be.rules[0])("each numbered question", per_question))
    tr = _run(kg, be, local_extraction="one_call")
    calls = [c for c in tr.llm_calls.values() if c["purpose"].startswith("keys_local")]
    assert len(calls) == 1 and calls[0]["node_id"] == "0"        # one call, 5 nodes
    got = {nid: d["entities"] for nid, d in _log(tr, "keys_local")}
    assert got == {"0": ["?"], "0.1": ["Glass Harbor"], "0.2": ["Norvania"],
                   "0.1.1": ["Ilse Varga"], "0.1.2": ["birthplace"]}
    assert all(d["owner"] == nid and d["one_call"] for nid, d in _log(tr, "keys_local"))
    assert tr.nodes["0.2"].attrs["local_keys"]["triples"] == [["What country is that?"[:20],
                                                               "asks", "x"]]
    # the keys are attributed to their own nodes for pruning (not to one batch owner)
    owners = {k["owner"] for k in tr.nodes["kg"].attrs["keys"]}
    assert {"0.1", "0.2", "0.1.1", "0.1.2"} <= owners and "BATCH" not in owners
    per_node = _run(kg, _backend(DEEP))
    assert _purposes(per_node).count("keys_local") == 5      # the default: a call per node


def test_one_call_extraction_that_never_parses_falls_back_to_per_node_calls_visibly(kg):
    be = _backend()
    be.rules.insert(0, type(be.rules[0])("each numbered question",
                                         json.dumps({"questions": [LOCAL_KEYS]})))  # 1 of 3
    tr = _run(kg, be, local_extraction="one_call")
    p = _purposes(tr)
    assert p.count("keys_local") == 1 + 3 and p.count("keys_local:retry") == 1
    fb = _log(tr, "keys_fallback")
    assert len(fb) == 1 and "did not parse twice" in fb[0][1]["reason"]
    assert "falling back" in tr.nodes["0"].attrs["local_extraction_fallback"]
    fails = [n for n in tr.nodes.values() if n.kind == "parse_failed"]
    assert len(fails) == 1 and "1 key sets for 3 questions" in " ".join(fails[0].attrs["errors"])
    assert {nid for nid, _ in _log(tr, "keys_local")} == {"0", "0.1", "0.2"}
    assert tr.status == "finished" and tr.nodes["kg"].attrs["n_kept"] > 0


def test_p_right_scoring_passes_run_only_when_something_reads_them(kg):
    def scored(**over):
        be = _backend()
        tr = _run(kg, be, **over)
        return sum("<score>" in c["prompt"] for c in be.calls), tr
    n, tr = scored()
    assert n == 0                                         # nothing gates or asked: skipped
    v = [d for _, d in _log(tr, "verdict_scored")]
    assert len(v) == 3 and all(d["p_right"] is None and d["skipped"] for d in v)
    assert "min_p_right is 0" in v[0]["reason"]
    assert all("p_right" not in n.scores for n in tr.nodes.values())
    assert scored(min_p_right=0.5)[0] == 6               # the gate reads it: 2 per verdict
    assert scored(verdict_scores="always")[0] == 6       # the user asked to see it


@pytest.mark.parametrize("parses", [True, False])
def test_one_call_extraction_asks_no_more_tokens_than_the_context_has_left(kg, parses):
    # five questions at 768 tokens each asked 3,840 of a 1,500-token context: the run failed
    # with a context overflow (on HotpotQA six questions asked 4,096 of 4,096)
    be = _backend(DEEP)
    be.n_ctx = 1500
    if not parses:                  # one key set for five questions: the retry asks more
        be.rules.insert(0, type(be.rules[0])("each numbered question",
                                             json.dumps({"questions": [LOCAL_KEYS]})))
    tr = _run(kg, be, local_extraction="one_call")
    assert tr.status == "finished", tr.summary
    maps = [c for c in be.calls if "each numbered question" in c["prompt"]]
    assert len(maps) == (1 if parses else 2)
    for c in maps:
        room = be.n_ctx - be.count_tokens(c["prompt"])
        assert 16 <= c["params"]["max_tokens"] <= room
    if not parses:                  # the retry asks at least what the first try asked
        assert maps[1]["params"]["max_tokens"] >= maps[0]["params"]["max_tokens"]
    # a context with room keeps the knob's budget (5 x 768), so stored calls still replay
    roomy = _backend(DEEP)
    _run(kg, roomy, local_extraction="one_call")
    assert [c["params"]["max_tokens"] for c in roomy.calls
            if "each numbered question" in c["prompt"]] == [5 * 768]


def test_the_answer_path_runs_through_the_sub_questions_the_answer_was_reasoned_from(kg):
    # the mind map grows down from the question but is answered up: the root's answer is
    # made from its sub-questions' answers, so a correct answer's path holds them
    tr = _run(kg, _backend(DEEP))
    subs = {"0.1", "0.2", "0.1.1", "0.1.2"}
    assert set(tr.nodes["0"].attrs["reasoned_from"]) == subs
    # a level is answered from the levels below it only
    assert set(tr.nodes["0.1"].attrs["reasoned_from"]) == {"0.1.1", "0.1.2"}
    assert "reasoned_from" not in tr.nodes["0.1.1"].attrs
    assert subs | {"0", "answer"} <= set(tr.answer_path())
    # the node's own parents come first, then what it read
    assert tr.nodes["0.1"].inputs()[0] == "0"


def test_prompt_layouts_order_the_same_text_differently(kg):
    """knowledge_first: every reasoning, verification and re-think prompt of a run opens
    with one system line and T (what the prompt cache can then serve once); paper: each
    its role line and M̂ before T. The run's calls and answers do not depend on it."""
    runs = {lay: _run(kg, _backend(verdicts={"Tessaly": "[wrong]"}, answers={SUB2: "Tessaly"}),
                      prompt_layout=lay) for lay in ("knowledge_first", "paper")}
    grounded = {lay: [c["prompt"] for c in sorted(tr.llm_calls.values(), key=lambda c: c["seq"])
                      if c["purpose"] in ("reason", "verify", "rethink")]
                for lay, tr in runs.items()}
    assert _purposes(runs["paper"]) == _purposes(runs["knowledge_first"])
    assert runs["paper"].answer["text"] == runs["knowledge_first"].answer["text"]
    assert {"reason", "verify", "rethink"} <= set(_purposes(runs["paper"]))
    first = grounded["knowledge_first"]
    assert all(p.index("Knowledge:") < p.index("Completed reasoning:") for p in first)
    assert len({p[:p.index("Completed reasoning:")] for p in first}) == 1
    paper = grounded["paper"]
    assert all(p.index("Completed reasoning:") < p.index("Knowledge:") for p in paper)
    assert len({p[:p.index("Completed reasoning:")] for p in paper}) == 3   # three roles
    with pytest.raises(ValueError, match="prompt_layout"):
        _run(kg, _backend(), prompt_layout="middle")


@pytest.mark.parametrize("echo", [True, False])
def test_reasoning_answers_map_to_their_nodes_with_or_without_the_questions(kg, echo):
    tr = _run(kg, _backend(answers={SUB1: "Ilse Varga", SUB2: "Tessaly"}), answer_echo=echo)
    assert tr.nodes["0.1"].attrs["answer_initial"] == "Ilse Varga"
    assert tr.nodes["0.2"].attrs["answer_initial"] == "Tessaly"
    call = next(c for c in tr.llm_calls.values() if c["purpose"] == "reason")
    item = call["params"]["json_schema"]["properties"]["answers"]["items"]
    assert (item["type"] == "object") is echo
    assert ("one answer per question" in call["prompt"]) is not echo


def test_extracted_keys_repeated_until_the_list_is_full_are_kept_once():
    from workbench.methods.coggrag.retrieval import validate_local
    keys = validate_local({"entities": ["Jaws", " Jaws", "Spielberg"],
                           "tuples": [["Jaws", "directed by"]] * 3 + [["Jaws", "released"]],
                           "triples": [["Jaws", "directed by", "Spielberg"]] * 2})
    assert keys == {"entities": ["Jaws", "Spielberg"],
                    "tuples": [["Jaws", "directed by"], ["Jaws", "released"]],
                    "triples": [["Jaws", "directed by", "Spielberg"]]}


def test_key_extraction_calls_are_decoded_together_and_nothing_else_is(kg):
    """extract_batch: the per-node key calls and the global one go to the model as one
    batch (decode-bound calls share its steps); the rest of the run stays one call at a
    time under batch_size 1. extract_batch 1 runs them one after another."""
    def batches(**over):
        tr = _run(kg, _backend(), **over)
        calls = sorted(tr.llm_calls.values(), key=lambda c: c["seq"])
        return [(c["purpose"], (c.get("batch") or {}).get("size")) for c in calls], tr
    got, tr = batches()
    keys = [size for p, size in got if p.startswith("keys")]
    assert keys == [4, 4, 4, 4]                       # 3 nodes' local keys + the global
    assert all(size is None for p, size in got if not p.startswith("keys"))
    alone, tr1 = batches(extract_batch=1)
    assert all(size is None for _, size in alone)
    assert [p for p, _ in alone] == [p for p, _ in got]          # the same calls, in order
    assert tr1.answer["text"] == tr.answer["text"]
