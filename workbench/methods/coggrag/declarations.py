"""What CogGRAG declares about itself, read by the central modules: node kinds, the
failure tags that apply to it, the what-if's nodes, thresholds and the event types it emits
(collected by ``workbench/events.py``)."""
from __future__ import annotations

from ...events import declare
from ..events import event

# the node kinds its traces hold
NODE_KINDS = ("question", "subquestion", "retrieval", "answer", "answer_extraction")
# the annotation taxonomy's failure modes that apply to it (workbench/annotations.py)
FAILURE_TAGS = (
    "off_topic_step", "over_decomposition", "degenerate_decomposition", "premature_final",
    "cap_hit", "broken_back_reference", "entity_linking_miss", "retrieval_starvation",
    "retrieval_flood", "placeholder_noise", "context_overflow",
    "verification_false_positive", "verification_false_negative", "threshold_miscalibrated",
    "verifier_rubber_stamp", "unknown_propagation", "answer_not_grounded", "verbose_answer"
)
# what-if: the nodes (id patterns) where it consults each kind of intervention
WHATIF_NODES = {"evidence": r"kg|\d+(\.\d+)*", "step": r"\d+(\.\d+)+", "review": r"\d+(\.\d+)*"}
# score -> (threshold knob, which side is good), for the what-if sliders
THRESHOLDS = {"similarity": ("epsilon", "higher"), "p_right": ("min_p_right", "higher"),
              "confidence": ("min_confidence", "higher"),
              "description_similarity": ("description_min_sim", "higher")}

SOURCE = "CogGRAG"

EVENTS = (
    event("decompose_started", SOURCE, "A mind-map node began to be decomposed into "
          "sub-questions.", "level", node=True),
    event("decompose_finished", SOURCE, "A mind-map node's sub-questions (or the parse error).",
          "children raw error", node=True),
    event("node_forced_end", SOURCE, "Decomposition of a mind-map node was stopped (depth or "
          "size limit).", "reason", node=True),
    event("decomposition_finished", SOURCE, "The mind map is complete.",
          "num_nodes depth over_decomposed", node=True),
    event("keys_global", SOURCE, "The question-wide keywords and the subgraph they retrieve.",
          "subgraph enabled", node=True),
    event("keys_local", SOURCE, "A sub-question's entities, tuples and triples.",
          "owner entities tuples triples", "one_call", node=True),
    event("keys_fallback", SOURCE, "The one-call extraction failed; keys are taken per question.",
          "reason n_questions", node=True),
    event("entity_linked", SOURCE, "An extracted entity was matched to KG nodes.",
          "string kg_node_ids matches", node=True),
    event("candidates_expanded", SOURCE, "The triples around a seed entity were gathered.",
          "seed seed_name n_triples", node=True),
    event("pruning_done", SOURCE, "Candidate triples were pruned by similarity (eps, K_max).",
          "n_candidates n_kept eps K_max truncated embedder scores", node=True),
    event("context_overflow", SOURCE, "Triples or answered pairs were dropped to fit the "
          "context window.", "triples_dropped pairs_dropped purpose triples_shown "
          "triples_total", node=True),
    event("level_reasoning_started", SOURCE, "Bottom-up reasoning began on one level of the mind "
          "map.", "t node_ids", node=True),
    event("level_reasoning_finished", SOURCE, "Bottom-up reasoning ended on one level.", "t",
          node=True),
    event("answer_drafted", SOURCE, "A sub-question's draft answer and its perplexity.",
          "answer ppl", node=True),
    event("verified", SOURCE, "The draft answer was verified (right or wrong).",
          "verdict p_right justification raw gated_by", node=True),
    event("verdict_scored", SOURCE, "p_right: the verdict read from teacher-forced scorings of "
          "'right' and 'wrong'.", "p_right", "logprob_right logprob_wrong reason skipped",
          node=True),
    event("rethought", SOURCE, "A draft judged wrong was answered again.",
          "new_answer ppl is_unknown", node=True),
    event("node_finalized", SOURCE, "A mind-map node's final answer.", "final_answer is_unknown",
          node=True),
)

declare(*EVENTS)
