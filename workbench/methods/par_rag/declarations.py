"""What PAR-RAG declares about itself, read by the central modules: node kinds, the
failure tags that apply to it, the what-if's nodes, thresholds and the event types it emits
(collected by ``workbench/events.py``)."""
from __future__ import annotations

from ...events import declare
from ..events import event

# the node kinds its traces hold
NODE_KINDS = (
    "question", "complexity", "exemplar", "plan", "step", "retrieval", "read", "verify",
    "trajectory", "answer"
)
# node kinds that judge their parent: a passed review hangs off the answer's path, a failed
# one leads to the retry, so "on the path" would follow the verdict (analysis/calibration.py)
CHECK_KINDS = ("verify",)
# the annotation taxonomy's failure modes that apply to it (workbench/annotations.py)
FAILURE_TAGS = (
    "planning_error", "under_decomposition", "misrouting", "refinement_drift",
    "retrieval_error", "inference_error", "verification_false_positive",
    "verification_false_negative", "threshold_miscalibrated", "verifier_rubber_stamp",
    "error_propagated", "generation_error"
)
# what-if: the nodes (id patterns) where it consults each kind of intervention
WHATIF_NODES = {"evidence": r"r\d+", "step": r"s\d+", "review": r"vf\d+"}
# score -> (threshold knob, which side is good), for the what-if sliders
THRESHOLDS = {"C": ("ct", "higher")}

SOURCE = "PAR-RAG"

EVENTS = (
    event("complexity_estimated", SOURCE, "The question's number of hops was estimated, and the "
          "weight alpha derived from it.", "hop_hat estimator class_probs alpha "
          "one_minus_alpha gamma h0", "features embedder embedding_dim neighbours gold_hop "
          "mispredicted note", node=True),
    event("exemplars_selected", SOURCE, "Exemplar questions and plans were chosen for the "
          "planning prompt.", "chosen_questions strategy", "candidates chosen chosen_plans "
          "hop_bucket k note store_size store_source", node=True),
    event("plan_generated", SOURCE, "The model wrote the plan: its steps and which are executed.",
          "steps executed hop_hat plan_length", "parse_ok fallback_used raw_output truncated "
          "ablation_no_plan", node=True),
    event("step_started", SOURCE, "A plan step began (with its question as refined so far).",
          "step question question_executed refined", node=True),
    event("retrieval_done", SOURCE, "A step's retrieval (dense first, sparse on revision).",
          "step attempt retriever role query docs merged", node=True),
    event("step_answered", SOURCE, "A step's question was answered from its evidence.",
          "step attempt answer answer_raw cited idk perplexity tokens latency_ms context",
          node=True),
    event("evidence_extracted", SOURCE, "The passages a step's answer cites.",
          "step attempt evidence warnings no_citation", node=True),
    event("step_verified", SOURCE, "A step's answer was reviewed: credibility C from accuracy A "
          "and attribution F against C_t.", "step C passed", "accuracy_raw A attr_label F "
          "alpha C_t judge_backend attr_backend parse_errors evidence_ids", node=True),
    event("step_rescored", SOURCE, "A revised step's answer was reviewed again, for display only.",
          "step C passed", "accuracy_raw A attr_label F alpha C_t judge_backend attr_backend "
          "parse_errors evidence_ids", node=True),
    event("trajectory_appended", SOURCE, "A step's result was added to the trajectory the next "
          "steps read.", "index thought question answer evidence rendered", node=True),
    event("next_question_refined", SOURCE, "The next step's question was rewritten with what the "
          "trajectory found.", "step before after context empty_output", node=True),
    event("final_answer", SOURCE, "The final answer written from the whole trajectory.",
          "answer raw_output idk trajectory perplexity revisions", node=True),
)

declare(*EVENTS)
