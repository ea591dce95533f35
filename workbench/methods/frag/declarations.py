"""What FRAG declares about itself, read by the central modules: node kinds, the
failure tags that apply to it, the what-if's nodes, thresholds and the event types it emits
(collected by ``workbench/events.py``)."""
from __future__ import annotations

from ...events import declare
from ..events import event

# the node kinds its traces hold
NODE_KINDS = ("question", "entity", "router", "stage", "path", "reason", "answer", "feedback")
# the annotation taxonomy's failure modes that apply to it (workbench/annotations.py)
FAILURE_TAGS = (
    "misrouting", "entity_linking_miss", "answer_pruned_ppr", "answer_pruned_relation",
    "direction_miss", "path_explosion", "ranking_miss", "context_overflow", "wrong_path",
    "ignores_context", "metric_artefact"
)
# what-if: the nodes (id patterns) where it consults each kind of intervention
WHATIF_NODES = {"evidence": r"st:rerank"}
# score -> (threshold knob, which side is good), for the what-if sliders
THRESHOLDS = {"p_complex": ("route_threshold", "higher"), "score": ("path_top_u", "top")}

SOURCE = "FRAG"

EVENTS = (
    event("question_received", SOURCE, "The question and its gold answers and hops (when known).",
          "question gold_answers gold_hops", node=True),
    event("entities_linked", SOURCE, "The question's entities were linked to KG nodes (the "
          "seeds).", "candidates seeds source", node=True),
    event("hop_range_estimated", SOURCE, "The router estimated whether the question is simple "
          "or complex.", "p_complex label estimator threshold features", node=True),
    event("route_selected", SOURCE, "The route taken and its retrieval parameters.",
          "route source params", node=True),
    event("neighbourhood_layer_expanded", SOURCE, "One more hop of the seeds' neighbourhood was "
          "taken.", "layer new_nodes n_new n_drawn", node=True),
    event("ppr_computed", SOURCE, "Personalised PageRank over the neighbourhood.",
          "alpha scores", node=True),
    event("ppr_pruned", SOURCE, "Nodes outside the PageRank top n were dropped.",
          "n kept pruned pruned_nodes", node=True),
    event("relations_scored", SOURCE, "The relations were scored against the question.",
          "ranker relations", node=True),
    event("relations_pruned", SOURCE, "Relations outside the top m were dropped.",
          "m kept dropped nodes_pruned n_nodes_pruned", node=True),
    event("path_found", SOURCE, "A reasoning path was found in the pruned graph (or, with "
          "summary, how many more were not drawn).", "",
          "index text hops start end alternatives summary more", node=True),
    event("paths_filtered", SOURCE, "Paths after removing CVT-only and duplicate ones.",
          "raw after_cvt unique truncated cap", node=True),
    event("paths_scored", SOURCE, "The paths were ranked against the question.",
          "ranker paths n", node=True),
    event("paths_selected", SOURCE, "The top u paths were kept for the prompt.", "u selected",
          node=True),
    event("prompt_built", SOURCE, "The reasoning prompt with the selected paths.",
          "prompt n_paths prompt_tokens ungrounded", node=True),
    event("llm_answered", SOURCE, "The model answered from the paths.",
          "output answer_line completion_tokens llm_calls_retrieval llm_calls_answer",
          node=True),
    event("evaluated", SOURCE, "Against the gold answer: hit, coverage of the gold hops, and "
          "where the answer was lost.", "hit coverage gold_hops gold_min_hops route misrouted "
          "lost_at", node=True),
    event("feedback_path_extracted", SOURCE, "Feedback: the reasoning path the model says it "
          "used, and its hop count.", "line hops", node=True),
    event("feedback_label", SOURCE, "Feedback: the complexity label the used path implies.",
          "hops y_fb predicted", node=True),
    event("classifier_adapted", SOURCE, "Feedback: the complexity classifier was refitted with "
          "the new label.", "before after label_before label_after n_feedback kept note",
          node=True),
)

declare(*EVENTS)
