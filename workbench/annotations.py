"""Failure-mode taxonomy for annotating runs, nodes and paths, and annotation export.

The taxonomy merges the categories the method specs ask for (PAR-RAG's four paper
categories, CRP-RAG's GC/KRA/evaluation/path tags, CogGRAG's and FRAG's failure
modes) into one list of tags grouped by pipeline stage, so that an aggregate view
can compare methods on the same vocabulary. Tag ids are stable strings stored in
the DuckDB ``annotations`` table; labels are for people. Which tags apply to which method
is the method's own declaration (``failure_tags`` in its package's ``declarations.py``),
read through :attr:`Tag.methods` and :func:`tags_for`.

Annotations themselves live in the store (:meth:`workbench.store.Store.add_annotation`);
this module only validates tags, exports rows as CSV/JSON and maps annotations onto a
trace (badges per node).
"""
from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass
from typing import Any, Iterable

TARGET_KINDS = ("run", "node", "path")


@dataclass(frozen=True)
class Tag:
    id: str
    label: str
    group: str
    description: str = ""

    @property
    def methods(self) -> tuple[str, ...]:
        """The registered methods whose declarations list this tag (``failure_tags``); ()
        for a general tag."""
        return tuple(name for name, cls in _method_classes().items()
                     if self.id in getattr(cls, "failure_tags", ()))


def _method_classes() -> dict[str, type]:
    from .methods import all_methods
    return all_methods()


def tags_for(method: str) -> list[Tag]:
    """The tags that apply to ``method``, in the order its declarations list them."""
    cls = _method_classes().get(method)
    return [TAGS[t] for t in getattr(cls, "failure_tags", ()) if t in TAGS]


GROUPS = {
    "planning": "Planning / decomposition",
    "retrieval": "Retrieval and knowledge",
    "reasoning": "Reasoning and verification",
    "generation": "Generation and answer",
    "evaluation": "Scoring and evaluation",
}

_T = Tag
TAXONOMY: tuple[Tag, ...] = (
    # -- planning / decomposition (PAR-RAG planning error; CRP-RAG GC; CogGRAG decomposition)
    _T("planning_error", "Planning error", "planning",
       "The plan or decomposition cannot lead to the answer (PAR-RAG category)."),
    _T("off_topic_step", "Off-topic or hallucinated step", "planning",
       "A step / sub-question unrelated to the question."),
    _T("unretrievable_step", "Step that cannot be retrieved", "planning",
       "E.g. a pure arithmetic or comparison step sent to the retriever."),
    _T("over_decomposition", "Over-decomposition / over-reasoning", "planning",
       "Far more steps or nodes than the question needs."),
    _T("under_decomposition", "Under-decomposition", "planning",
       "Fewer steps than the question's hops; a bridge entity is skipped."),
    _T("degenerate_decomposition", "Degenerate or looping decomposition", "planning",
       "A child paraphrases its parent, or steps repeat along a path."),
    _T("redundant_not_merged", "Redundant siblings not merged", "planning",
       "Near-duplicate proposals kept apart (merge threshold too high)."),
    _T("wrong_merge", "Wrong merge", "planning",
       "Distinct steps merged, or the merged text lost content."),
    _T("premature_final", "Premature final step", "planning",
       "A step marked final (END) too early."),
    _T("cap_hit", "Depth / size cap hit", "planning",
       "The structure was cut by a configured cap, not by the model."),
    _T("misrouting", "Misrouting / hop misprediction", "planning",
       "Predicted hop count or route (simple/complex) differs from the gold."),
    _T("refinement_drift", "Refinement drift", "planning",
       "A refined sub-question changed the intent."),
    _T("broken_back_reference", "Broken back-reference", "planning",
       "A step refers to a sub-question that was not answered (yet)."),
    # -- retrieval and knowledge
    _T("retrieval_error", "Retrieval error", "retrieval",
       "The needed evidence was not retrieved (PAR-RAG category)."),
    _T("retrieval_miss", "Retrieval miss (gold not in top-k)", "retrieval",
       "The needed passage or triple is not among the retrieved ones."),
    _T("distractor_passage", "Distractor passage", "retrieval",
       "A plausible but wrong passage steered the step."),
    _T("entity_linking_miss", "Entity-linking miss", "retrieval",
       "No, or the wrong, KG entity was linked for a mention."),
    _T("answer_pruned_ppr", "Answer pruned by PPR", "retrieval",
       "The answer entity was in the neighbourhood but pruned by PageRank."),
    _T("answer_pruned_relation", "Answer pruned by relation ranking", "retrieval",
       "The needed relation ranked below the kept set."),
    _T("direction_miss", "Direction miss", "retrieval",
       "The answer is reachable only against edge direction."),
    _T("path_explosion", "Path explosion / truncation", "retrieval",
       "Hub nodes produced too many paths; candidates were truncated."),
    _T("ranking_miss", "Ranking miss", "retrieval",
       "A correct path or passage exists but ranked below the cut."),
    _T("retrieval_starvation", "Retrieval starvation", "retrieval",
       "Nothing survived pruning (threshold too strict)."),
    _T("retrieval_flood", "Retrieval flood", "retrieval",
       "Too much survived; the list was truncated and the context overflowed."),
    _T("placeholder_noise", "Placeholder noise", "retrieval",
       "Generic placeholder keys matched unrelated triples."),
    _T("aggregation_hallucination", "Aggregation hallucination", "retrieval",
       "The knowledge summary states facts not in the passages."),
    _T("aggregation_refusal", "Aggregation refusal / apology", "retrieval",
       "The aggregator refused or apologised instead of summarising."),
    _T("key_detail_dropped", "Key detail dropped", "retrieval",
       "Aggregation or prompt building lost the fact that mattered."),
    _T("conflict_resolved_wrongly", "Conflict resolved wrongly", "retrieval",
       "Conflicting evidence; the wrong side was kept."),
    _T("context_overflow", "Context overflow", "retrieval",
       "The prompt was truncated to fit n_ctx."),
    # -- reasoning and verification
    _T("inference_error", "Inference / reasoning error", "reasoning",
       "Right evidence, wrong conclusion (PAR-RAG category)."),
    _T("verification_false_positive", "Verification false positive", "reasoning",
       "Judged sufficient/right/PASS but wrong or unsupported (confident hallucination)."),
    _T("verification_false_negative", "Verification false negative", "reasoning",
       "Judged insufficient/wrong/FAIL although correct."),
    _T("threshold_miscalibrated", "Threshold miscalibrated", "reasoning",
       "The score threshold is wrong for this model/dataset."),
    _T("verifier_rubber_stamp", "Verifier rubber-stamp", "reasoning",
       "Every verdict passes; the verifier adds nothing."),
    _T("error_propagated", "Error propagated along steps", "reasoning",
       "An early wrong intermediate answer carried to the end."),
    _T("unknown_propagation", "Unknown propagation", "reasoning",
       "An unknown child under a confident parent, or unknown reaching the root."),
    _T("wrong_path", "Wrong path chosen", "reasoning",
       "A wrong path was selected over a correct one."),
    # -- generation and answer
    _T("generation_error", "Generation error", "generation",
       "Evidence present in the final context but the answer is wrong (PAR-RAG category)."),
    _T("answer_lost", "Answer lost at stage X", "generation",
       "The answer was present at some stage and lost later; say where in the note."),
    _T("answer_not_grounded", "Answer not grounded", "generation",
       "The answer is not supported by the retrieved knowledge."),
    _T("over_refusal", "Over-refusal", "generation",
       "The method refused although an answer was possible."),
    _T("wrong_integration", "Integration chose the wrong answer", "generation",
       "Conflicting path answers; integration picked the wrong one."),
    _T("ignores_context", "Ignores context / answers from memory", "generation",
       "The LLM ignored paths or passages."),
    _T("parse_failure", "Parse failure", "generation",
       "Structured output could not be parsed (see the parse_failed node)."),
    _T("verbose_answer", "Answer too verbose for EM", "generation",
       "Correct answer inside a sentence, so exact match fails."),
    # -- scoring and evaluation
    _T("metric_artefact", "Metric artefact", "evaluation",
       "Substring hit on a short answer, list of candidates, alias missing."),
    _T("gold_wrong", "Gold answer wrong or ambiguous", "evaluation",
       "The dataset's gold is wrong, outdated or ambiguous."),
    _T("other", "Other (see note)", "evaluation", "Anything else; describe it in the note."),
)

TAGS: dict[str, Tag] = {t.id: t for t in TAXONOMY}


def tags_by_group() -> dict[str, list[Tag]]:
    out: dict[str, list[Tag]] = {g: [] for g in GROUPS}
    for t in TAXONOMY:
        out.setdefault(t.group, []).append(t)
    return out


def label(tag_id: str) -> str:
    t = TAGS.get(tag_id)
    return t.label if t else tag_id


def validate(tags: Iterable[str], target_kind: str = "run") -> list[str]:
    """Known tag ids, deduplicated in order; raises ValueError on anything else."""
    if target_kind not in TARGET_KINDS:
        raise ValueError(f"annotation target must be one of {TARGET_KINDS}, not {target_kind!r}")
    out: list[str] = []
    for t in tags:
        if t not in TAGS:
            raise ValueError(f"unknown failure-mode tag {t!r}")
        if t not in out:
            out.append(t)
    return out


# -- mapping onto a trace --

def node_badges(annotations: Iterable[dict[str, Any]], trace: Any = None) -> dict[str, list[str]]:
    """node id -> tag ids, from node annotations and (via the trace) path annotations."""
    out: dict[str, list[str]] = {}
    paths = getattr(trace, "paths", {}) or {}
    for a in annotations:
        tags = list(a.get("tags") or []) or ["note"]
        if a.get("target_kind") == "node":
            ids = [a.get("target_id")]
        elif a.get("target_kind") == "path" and a.get("target_id") in paths:
            ids = list(paths[a["target_id"]].get("nodes", []))
        else:
            continue
        for nid in ids:
            lst = out.setdefault(nid, [])
            lst.extend(t for t in tags if t not in lst)
    return out


# -- export --

EXPORT_COLUMNS = ("id", "run_id", "target_kind", "target_id", "tags", "tag_labels", "note",
                  "author", "created_at", "created_iso")


def _row(a: dict[str, Any]) -> dict[str, Any]:
    tags = list(a.get("tags") or [])
    ts = a.get("created_at")
    return {"id": a.get("id"), "run_id": a.get("run_id"), "target_kind": a.get("target_kind"),
            "target_id": a.get("target_id"), "tags": tags,
            "tag_labels": [label(t) for t in tags], "note": a.get("note") or "",
            "author": a.get("author") or "", "created_at": ts,
            "created_iso": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) if ts else ""}


def to_json(annotations: Iterable[dict[str, Any]]) -> str:
    return json.dumps([_row(a) for a in annotations], indent=2)


def to_csv(annotations: Iterable[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(EXPORT_COLUMNS))
    w.writeheader()
    for a in annotations:
        r = _row(a)
        r["tags"] = ";".join(r["tags"])
        r["tag_labels"] = ";".join(r["tag_labels"])
        # Spreadsheet formula injection: a note starting with = + - @ is data, not a formula.
        for k in ("note", "author", "target_id"):
            v = str(r[k] or "")
            if v[:1] in ("=", "+", "-", "@"):
                r[k] = "'" + v
        w.writerow(r)
    return buf.getvalue()


def suggest(trace: Any) -> list[dict[str, Any]]:
    """Heuristic tag suggestions (labelled 'suggested' in the UI; never stored automatically)."""
    out: list[dict[str, Any]] = []
    nodes = getattr(trace, "nodes", {}) or {}
    for n in nodes.values():
        if n.state == "parse_failed":
            out.append({"target_kind": "node", "target_id": n.id, "tag": "parse_failure",
                        "why": "the node's structured output could not be parsed"})
        elif n.state == "capped":
            out.append({"target_kind": "node", "target_id": n.id, "tag": "cap_hit",
                        "why": "the node was dropped by a width/size cap"})
    ans = getattr(trace, "answer", None) or {}
    if ans.get("refused"):
        out.append({"target_kind": "run", "target_id": trace.run_id, "tag": "over_refusal",
                    "why": "the run refused; check whether an answer was possible"})
    gold = (getattr(trace, "meta", {}) or {}).get("gold") or {}
    golds = [g for g in (gold.get("answers") or []) + (gold.get("aliases") or []) if g]
    if golds and ans.get("text") and not ans.get("refused"):
        norm = lambda s: " ".join(str(s).lower().split())   # noqa: E731
        hits_any = any(norm(g) in norm(h.get("text", "")) for n in nodes.values()
                       for ev in n.evidence for h in ev.get("hits", []) for g in golds)
        ans_ok = any(norm(g) in norm(ans["text"]) for g in golds)
        if not ans_ok and not hits_any and any(n.evidence for n in nodes.values()):
            out.append({"target_kind": "run", "target_id": trace.run_id,
                        "tag": "retrieval_error",
                        "why": "no retrieved passage contains a gold answer"})
        elif not ans_ok and hits_any:
            out.append({"target_kind": "run", "target_id": trace.run_id,
                        "tag": "generation_error",
                        "why": "a retrieved passage contains the gold answer but the answer "
                               "does not"})
    return out
