"""The event types the methods emit besides the core ones (see ``workbench/events.py``):
each with the payload keys it always carries, the ones worth naming that it may carry, and
a one-line meaning. The reducer keeps these in the trace's log, attached to their node.
A new method (or a new event of a method) declares its types here."""
from __future__ import annotations

from ..events import EventSpec, declare

SHARED = "Shared by several methods"
CRP = "CRP-RAG"
PAR = "PAR-RAG"
FRAG = "FRAG"
COG = "CogGRAG"
IRCOT = "IRCoT"


def _s(type_: str, source: str, meaning: str, required: str = "", optional: str = "", *,
       node: bool | None = None, more: str = "", legacy: bool = False) -> EventSpec:
    return EventSpec(type_, meaning, tuple(required.split()), tuple(optional.split()),
                     node=node, source=source, more=more, legacy=legacy)


declare(
    # ---------------------------------------------------------------- shared
    _s("artefact_used", SHARED, "The run used a fitted artefact (a classifier, a "
       "calibrated threshold, an exemplar store); says whether it was fitted on this very "
       "question.", "kind name fitted_on n_questions data_hash supervision saw_question",
       "model mode seed per_hop n_templates decides_route",
       more="and the artefact's own fit details"),
    _s("kg_partial", SHARED, "The knowledge graph was built from part of the corpus only; "
       "shown as a caveat next to the answer.", "note"),

    # ---------------------------------------------------------------- CRP-RAG
    _s("tau_calibration_mismatch", CRP, "The shipped tau_ppl was calibrated for another "
       "model or dataset; shown as a caveat next to the answer.", "tau_ppl note",
       "calibrated_for calibrated_on running dataset reasons"),
    _s("tau_model_mismatch", CRP, "Former name of tau_calibration_mismatch.", "",
       "tau_ppl note", legacy=True),
    _s("gc_iteration_started", CRP, "An iteration of graph construction began on the open "
       "sinks.", "iteration open_sinks", node=False),
    _s("gc_iteration_finished", CRP, "An iteration of graph construction ended: new nodes, "
       "capped proposals, sinks still open, final nodes.",
       "iteration new_nodes capped open_sinks finals", node=False),
    _s("graph_completed", CRP, "Graph construction stopped, and why (no open sink, "
       "max_iterations, max_nodes).", "reason forced_finals nodes edges depth iterations",
       node=False),
    _s("sibling_near_duplicates", CRP, "How often proposals of the same parent said nearly "
       "the same (a diversity measure of the run).",
       "pairs near_duplicates rate threshold embedder proposals", node=False),
    _s("proposal_generated", CRP, "The model proposed a next reasoning step for a sink.",
       "proposal_id sample_idx step is_final parse_ok",
       "iteration parent temperature seed raw call_id mode list_size dropped fallback",
       node=True),
    _s("sink_closed", CRP, "A sink got no usable proposal and was closed as final.",
       "iteration reason", "raw", node=True),
    _s("similarity_computed", CRP, "Pairwise similarity of the iteration's proposals, "
       "before merging.", "iteration proposals texts matrix tau_combine embedder merging",
       "sibling_pairs sibling_near_duplicates", node=False,
       more="the sibling counts are missing from runs stored before they were added"),
    _s("node_capped", CRP, "A merged proposal was not drawn: the iteration or the graph hit "
       "its node cap.", "iteration proposals text parents reason", node=False),
    _s("proposals_merged", CRP, "Similar proposals were merged into one node.",
       "iteration members texts sims merged_text is_final parents raw call_id fallback",
       node=False),
    _s("node_retrieved", CRP, "Passages were retrieved for a node's step.",
       "query k docs", node=True),
    _s("node_aggregated", CRP, "The retrieved passages were summarised into the node's "
       "knowledge.", "knowledge length apology aggregated call_id", node=True),
    _s("node_evaluated", CRP, "The node's knowledge was judged sufficient or not (perplexity "
       "of the evaluation answer against tau_ppl); the tokens are in the llm_call named by "
       "call_id.", "eval_answer mean_nll perplexity tau_ppl verdict unknown ppl_verdict "
       "reasons call_id", "token_logprobs", node=True,
       more="token_logprobs only in runs stored before it was dropped (a copy of the call's "
            "tokens)"),
    _s("node_marked_insufficient", CRP, "The node's knowledge was judged insufficient: "
       "paths through it are pruned.", "margin reasons", node=True),
    _s("noise_injected", CRP, "Robustness probe: a node's step or knowledge was replaced "
       "by noise.", "mode original noise source task", node=True),
    _s("root_probe", CRP, "The question's own knowledge was judged before building the "
       "graph (sufficient: the graph is skipped).", "sufficient note", node=True),
    _s("paths_enumerated", CRP, "All root-to-sink paths of the graph were listed.",
       "paths n truncated", node=False),
    _s("path_pruned", CRP, "A path was dropped: it holds a knowledge-insufficient node.",
       "path_id nodes blocking first_blocking", "max_ppl mean_ppl length truncated",
       node=False),
    _s("path_selected", CRP, "A path was chosen to answer along.", "path_id nodes",
       "max_ppl mean_ppl length truncated", node=False),
    _s("path_unused", CRP, "A valid path beyond max_answer_paths was not used.",
       "path_id nodes", "max_ppl mean_ppl length truncated", node=False),
    _s("refused", CRP, "No path survived: the run refuses to answer, naming the closest "
       "path.", "reason closest_path closest_path_id", node=False),
    _s("step_reasoned", CRP, "One step of reasoning along a selected path.",
       "path_id condition step knowledge_used result", node=True),
    _s("path_answered", CRP, "The answer reached along one path.", "path_id answer",
       node=False),
    _s("answers_integrated", CRP, "The answers of the selected paths were integrated into "
       "one.", "answers final_answer details call_id", node=False),

    # ---------------------------------------------------------------- PAR-RAG
    _s("complexity_estimated", PAR, "The question's number of hops was estimated, and the "
       "weight alpha derived from it.", "hop_hat estimator class_probs alpha "
       "one_minus_alpha gamma h0", "features embedder embedding_dim neighbours gold_hop "
       "mispredicted note", node=True),
    _s("exemplars_selected", PAR, "Exemplar questions and plans were chosen for the "
       "planning prompt.", "chosen_questions strategy", "candidates chosen chosen_plans "
       "hop_bucket k note store_size store_source", node=True),
    _s("plan_generated", PAR, "The model wrote the plan: its steps and which are executed.",
       "steps executed hop_hat plan_length", "parse_ok fallback_used raw_output truncated "
       "ablation_no_plan", node=True),
    _s("step_started", PAR, "A plan step began (with its question as refined so far).",
       "step question question_executed refined", node=True),
    _s("retrieval_done", PAR, "A step's retrieval (dense first, sparse on revision).",
       "step attempt retriever role query docs merged", node=True),
    _s("step_answered", PAR, "A step's question was answered from its evidence.",
       "step attempt answer answer_raw cited idk perplexity tokens latency_ms context",
       node=True),
    _s("evidence_extracted", PAR, "The passages a step's answer cites.",
       "step attempt evidence warnings no_citation", node=True),
    _s("step_verified", PAR, "A step's answer was reviewed: credibility C from accuracy A "
       "and attribution F against C_t.", "step C passed", "accuracy_raw A attr_label F "
       "alpha C_t judge_backend attr_backend parse_errors evidence_ids", node=True),
    _s("step_rescored", PAR, "A revised step's answer was reviewed again, for display only.",
       "step C passed", "accuracy_raw A attr_label F alpha C_t judge_backend attr_backend "
       "parse_errors evidence_ids", node=True),
    _s("trajectory_appended", PAR, "A step's result was added to the trajectory the next "
       "steps read.", "index thought question answer evidence rendered", node=True),
    _s("next_question_refined", PAR, "The next step's question was rewritten with what the "
       "trajectory found.", "step before after context empty_output", node=True),
    _s("final_answer", PAR, "The final answer written from the whole trajectory.",
       "answer raw_output idk trajectory perplexity revisions", node=True),

    # ---------------------------------------------------------------- FRAG
    _s("question_received", FRAG, "The question and its gold answers and hops (when known).",
       "question gold_answers gold_hops", node=True),
    _s("entities_linked", FRAG, "The question's entities were linked to KG nodes (the "
       "seeds).", "candidates seeds source", node=True),
    _s("hop_range_estimated", FRAG, "The router estimated whether the question is simple "
       "or complex.", "p_complex label estimator threshold features", node=True),
    _s("route_selected", FRAG, "The route taken and its retrieval parameters.",
       "route source params", node=True),
    _s("neighbourhood_layer_expanded", FRAG, "One more hop of the seeds' neighbourhood was "
       "taken.", "layer new_nodes n_new n_drawn", node=True),
    _s("ppr_computed", FRAG, "Personalised PageRank over the neighbourhood.",
       "alpha scores", node=True),
    _s("ppr_pruned", FRAG, "Nodes outside the PageRank top n were dropped.",
       "n kept pruned pruned_nodes", node=True),
    _s("relations_scored", FRAG, "The relations were scored against the question.",
       "ranker relations", node=True),
    _s("relations_pruned", FRAG, "Relations outside the top m were dropped.",
       "m kept dropped nodes_pruned n_nodes_pruned", node=True),
    _s("path_found", FRAG, "A reasoning path was found in the pruned graph (or, with "
       "summary, how many more were not drawn).", "",
       "index text hops start end alternatives summary more", node=True),
    _s("paths_filtered", FRAG, "Paths after removing CVT-only and duplicate ones.",
       "raw after_cvt unique truncated cap", node=True),
    _s("paths_scored", FRAG, "The paths were ranked against the question.",
       "ranker paths n", node=True),
    _s("paths_selected", FRAG, "The top u paths were kept for the prompt.", "u selected",
       node=True),
    _s("prompt_built", FRAG, "The reasoning prompt with the selected paths.",
       "prompt n_paths prompt_tokens ungrounded", node=True),
    _s("llm_answered", FRAG, "The model answered from the paths.",
       "output answer_line completion_tokens llm_calls_retrieval llm_calls_answer",
       node=True),
    _s("evaluated", FRAG, "Against the gold answer: hit, coverage of the gold hops, and "
       "where the answer was lost.", "hit coverage gold_hops gold_min_hops route misrouted "
       "lost_at", node=True),
    _s("feedback_path_extracted", FRAG, "Feedback: the reasoning path the model says it "
       "used, and its hop count.", "line hops", node=True),
    _s("feedback_label", FRAG, "Feedback: the complexity label the used path implies.",
       "hops y_fb predicted", node=True),
    _s("classifier_adapted", FRAG, "Feedback: the complexity classifier was refitted with "
       "the new label.", "before after label_before label_after n_feedback kept note",
       node=True),

    # ---------------------------------------------------------------- CogGRAG
    _s("decompose_started", COG, "A mind-map node began to be decomposed into "
       "sub-questions.", "level", node=True),
    _s("decompose_finished", COG, "A mind-map node's sub-questions (or the parse error).",
       "children raw error", node=True),
    _s("node_forced_end", COG, "Decomposition of a mind-map node was stopped (depth or "
       "size limit).", "reason", node=True),
    _s("decomposition_finished", COG, "The mind map is complete.",
       "num_nodes depth over_decomposed", node=True),
    _s("keys_global", COG, "The question-wide keywords and the subgraph they retrieve.",
       "subgraph enabled", node=True),
    _s("keys_local", COG, "A sub-question's entities, tuples and triples.",
       "owner entities tuples triples", "one_call", node=True),
    _s("keys_fallback", COG, "The one-call extraction failed; keys are taken per question.",
       "reason n_questions", node=True),
    _s("entity_linked", COG, "An extracted entity was matched to KG nodes.",
       "string kg_node_ids matches", node=True),
    _s("candidates_expanded", COG, "The triples around a seed entity were gathered.",
       "seed seed_name n_triples", node=True),
    _s("pruning_done", COG, "Candidate triples were pruned by similarity (eps, K_max).",
       "n_candidates n_kept eps K_max truncated embedder scores", node=True),
    _s("context_overflow", COG, "Triples or answered pairs were dropped to fit the "
       "context window.", "triples_dropped pairs_dropped purpose triples_shown "
       "triples_total", node=True),
    _s("level_reasoning_started", COG, "Bottom-up reasoning began on one level of the mind "
       "map.", "t node_ids", node=True),
    _s("level_reasoning_finished", COG, "Bottom-up reasoning ended on one level.", "t",
       node=True),
    _s("answer_drafted", COG, "A sub-question's draft answer and its perplexity.",
       "answer ppl", node=True),
    _s("verified", COG, "The draft answer was verified (right or wrong).",
       "verdict p_right justification raw gated_by", node=True),
    _s("verdict_scored", COG, "p_right: the verdict read from teacher-forced scorings of "
       "'right' and 'wrong'.", "p_right", "logprob_right logprob_wrong reason skipped",
       node=True),
    _s("rethought", COG, "A draft judged wrong was answered again.",
       "new_answer ppl is_unknown", node=True),
    _s("node_finalized", COG, "A mind-map node's final answer.", "final_answer is_unknown",
       node=True),

    # ---------------------------------------------------------------- IRCoT
    _s("cot_step", IRCOT, "One chain-of-thought sentence (it also drives the next "
       "retrieval).", "step sentence has_answer", node=True),
    _s("ircot_stopped", IRCOT, "The interleaving stopped: an answer was found or the step "
       "limit hit.", "reason steps", node=False),
)
