"""What CRP-RAG declares about itself, read by the central modules: node kinds, the
failure tags that apply to it, the what-if's nodes, thresholds and the event types it emits
(collected by ``workbench/events.py``)."""
from __future__ import annotations

from ...events import declare
from ..events import event

# the node kinds its traces hold
NODE_KINDS = ("question", "step", "final", "answer", "answer_extraction", "refusal")
# the annotation taxonomy's failure modes that apply to it (workbench/annotations.py)
FAILURE_TAGS = (
    "off_topic_step", "unretrievable_step", "over_decomposition",
    "degenerate_decomposition", "redundant_not_merged", "wrong_merge", "premature_final",
    "cap_hit", "retrieval_miss", "distractor_passage", "aggregation_hallucination",
    "aggregation_refusal", "key_detail_dropped", "conflict_resolved_wrongly",
    "verification_false_positive", "verification_false_negative", "threshold_miscalibrated",
    "error_propagated", "wrong_path", "answer_not_grounded", "over_refusal",
    "wrong_integration", "verbose_answer"
)
# what-if: the nodes (id patterns) where it consults each kind of intervention
WHATIF_NODES = {"evidence": r"v\d+", "step": r"v\d+", "sufficiency": r"v\d+"}
# score -> (threshold knob, which side is good), for the what-if sliders
THRESHOLDS = {"perplexity": ("tau_ppl", "lower")}

SOURCE = "CRP-RAG"

EVENTS = (
    event("tau_calibration_mismatch", SOURCE, "The shipped tau_ppl was calibrated for another "
          "model or dataset; shown as a caveat next to the answer.", "tau_ppl note",
          "calibrated_for calibrated_on running dataset reasons"),
    event("tau_model_mismatch", SOURCE, "Former name of tau_calibration_mismatch.", "",
          "tau_ppl note", legacy=True),
    event("gc_iteration_started", SOURCE, "An iteration of graph construction began on the open "
          "sinks.", "iteration open_sinks", node=False),
    event("gc_iteration_finished", SOURCE, "An iteration of graph construction ended: new nodes, "
          "capped proposals, sinks still open, final nodes.",
          "iteration new_nodes capped open_sinks finals", node=False),
    event("graph_completed", SOURCE, "Graph construction stopped, and why (no open sink, "
          "max_iterations, max_nodes).", "reason forced_finals nodes edges depth iterations",
          node=False),
    event("sibling_near_duplicates", SOURCE, "How often proposals of the same parent said nearly "
          "the same (a diversity measure of the run).",
          "pairs near_duplicates rate threshold embedder proposals", node=False),
    event("proposal_generated", SOURCE, "The model proposed a next reasoning step for a sink.",
          "proposal_id sample_idx step is_final parse_ok",
          "iteration parent temperature seed raw call_id mode list_size dropped fallback",
          node=True),
    event("sink_closed", SOURCE, "A sink got no usable proposal and was closed as final.",
          "iteration reason", "raw", node=True),
    event("similarity_computed", SOURCE, "Pairwise similarity of the iteration's proposals, "
          "before merging.", "iteration proposals texts matrix tau_combine embedder merging",
          "sibling_pairs sibling_near_duplicates", node=False,
          more="the sibling counts are missing from runs stored before they were added"),
    event("node_capped", SOURCE, "A merged proposal was not drawn: the iteration or the graph hit "
          "its node cap.", "iteration proposals text parents reason", node=False),
    event("proposals_merged", SOURCE, "Similar proposals were merged into one node.",
          "iteration members texts sims merged_text is_final parents raw call_id fallback",
          "merged_by", node=False,
          more="merged_by is missing from runs stored before merge_by was added (all call)"),
    event("node_retrieved", SOURCE, "Passages were retrieved for a node's step.",
          "query k docs", node=True),
    event("node_aggregated", SOURCE, "The retrieved passages were summarised into the node's "
          "knowledge.", "knowledge length apology aggregated call_id", node=True),
    event("node_evaluated", SOURCE, "The node's knowledge was judged sufficient or not (perplexity "
          "of the evaluation answer against tau_ppl); the tokens are in the llm_call named by "
          "call_id.", "eval_answer mean_nll perplexity tau_ppl verdict unknown ppl_verdict "
          "reasons call_id", "token_logprobs", node=True,
          more="token_logprobs only in runs stored before it was dropped (a copy of the call's "
               "tokens)"),
    event("node_marked_insufficient", SOURCE, "The node's knowledge was judged insufficient: "
          "paths through it are pruned.", "margin reasons", node=True),
    event("noise_injected", SOURCE, "Robustness probe: a node's step or knowledge was replaced "
          "by noise.", "mode original noise source task", node=True),
    event("root_probe", SOURCE, "The question's own knowledge was judged before building the "
          "graph (sufficient: the graph is skipped).", "sufficient note", node=True),
    event("paths_enumerated", SOURCE, "All root-to-sink paths of the graph were listed.",
          "paths n truncated", node=False),
    event("path_pruned", SOURCE, "A path was dropped: it holds a knowledge-insufficient node.",
          "path_id nodes blocking first_blocking", "max_ppl mean_ppl length truncated",
          node=False),
    event("path_selected", SOURCE, "A path was chosen to answer along.", "path_id nodes",
          "max_ppl mean_ppl length truncated", node=False),
    event("path_unused", SOURCE, "A valid path beyond max_answer_paths was not used.",
          "path_id nodes", "max_ppl mean_ppl length truncated", node=False),
    event("refused", SOURCE, "No path survived: the run refuses to answer, naming the closest "
          "path.", "reason closest_path closest_path_id", node=False),
    event("step_reasoned", SOURCE, "One step of reasoning along a selected path.",
          "path_id condition step knowledge_used result", node=True),
    event("path_answered", SOURCE, "The answer reached along one path.", "path_id answer",
          node=False),
    event("answers_integrated", SOURCE, "The answers of the selected paths were integrated into "
          "one.", "answers final_answer details call_id", node=False),
)

declare(*EVENTS)
