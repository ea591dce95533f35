"""Plain names for the codes methods record (phases, node kinds, call purposes, event types,
graph badges), so that every view (graph, inspector, waterfall, Runs, export) says the same
words for the same thing. Methods keep their short codes in the events; only what is shown
is translated. An unknown code is shown as itself with underscores as spaces, never hidden.
"""
from __future__ import annotations

import re
from typing import Any

# phase codes of every method (ctx.set_phase) -> the step of the paper they are
PHASE_NAMES = {
    # CRP-RAG: the paper's three modules
    "gc": "graph construction",
    "kra": "knowledge retrieval and aggregation",
    "ag": "answer generation",
    "noise": "noise injection (robustness probe)",
    "probe": "robustness probe",
    # the answer-span step every free-text method may end with
    "span": "short-answer extraction",
    # PAR-RAG
    "plan": "planning",
    "act": "acting (retrieve and read)",
    "review": "review of a step",
    "revise": "revision of a step",
    "refine": "refinement of the answer",
    "answer": "answering",
    # FRAG
    "link": "entity linking",
    "route": "routing (simple or complex)",
    "retrieve": "retrieval",
    "reason": "reasoning",
    "feedback": "feedback on the paths",
    # CogGRAG
    "decompose": "decomposition into a mind map",
    "extract": "keyword and triple extraction",
}

# node kinds -> what the node is
KIND_NAMES = {
    "question": "question", "root": "question",
    "step": "reasoning step", "final": "final reasoning step",
    "answer": "answer", "answer_extraction": "short answer extracted from the long answer",
    "refusal": "refusal", "retrieval": "retrieval", "passage": "passage",
    "document": "document", "entity": "entity", "triple": "triple", "path": "KG path",
    "stage": "pipeline stage", "router": "router decision", "reason": "reasoning over paths",
    "feedback": "feedback", "complexity": "question complexity", "exemplar": "chosen exemplar",
    "plan": "plan", "read": "reading of the evidence", "verify": "review of a step",
    "verification": "verification", "trajectory": "step result", "subquestion": "sub-question",
    "thought": "chain-of-thought sentence", "parse_failed": "unparsable model output",
}

# what the graph shows on the answer-like nodes before their text: two nodes that both say
# "London" (the extracted span, then the answer) must say which is which
KIND_PREFIX = {
    "answer_extraction": "Extracted short answer",
    "answer": "Answer",
    "final": "Final step",
    "refusal": "Refusal",
}

# LLM call purposes -> the step of the paper they are (":retry" suffixes are kept in words)
CALL_NAMES = {"aggregate": "summary", "evaluate": "sufficiency evaluation", "reason": "step",
              "verify": "verification", "integrate": "answer integration",
              "answer": "answer", "final": "final answer", "merge": "merge",
              "read": "reading", "refine": "refinement", "judge": "judgement",
              "answer_span": "short-answer extraction", "generate": "proposal",
              "propose": "proposal", "attribution": "attribution",
              "feedback_path": "path feedback", "p_right": "answer-likelihood scoring",
              "plan": "planning", "decompose": "decomposition", "extract": "extraction",
              "rethink": "re-thinking", "cot": "chain-of-thought step", "score": "scoring",
              "keys_local": "local keyword and triple extraction",
              "keys_global": "global keyword extraction", "combine": "combination",
              "complexity": "question-complexity estimate", "noise": "noise passage",
              "path_answer": "answer along a path", "route": "routing"}

# event types on the Runs page's replay line
EVENT_NAMES = {
    "run_started": "run started", "phase": "new phase", "node_added": "node added",
    "node_updated": "node updated", "edge_added": "edge added", "retrieved": "retrieval",
    "llm_call": "LLM call", "llm_score": "teacher-forced scoring", "node_scored": "node scored",
    "path": "path", "answer": "answer", "error": "error", "run_finished": "run finished",
    "node_aggregated": "knowledge aggregated", "proposal_generated": "proposal generated",
}

# the badges drawn after a node's label, and what each means (the graph legend lists those
# on screen)
BADGES = {
    "⊕": "merged: stands for this many proposals that said the same",
    "⚑": "annotations on this node",
    "★": "holds gold evidence (hops found / hops of the question)",
    "✖": "the reasoning chain breaks here",
    "Δ": "changed by the what-if thresholds",
    "⇐": "the answer changes without this node's evidence (attribution)",
}


def _plain(code: Any) -> str:
    return str(code or "").replace("_", " ").strip()


def phase_name(code: Any) -> str:
    """``kra`` -> ``knowledge retrieval and aggregation``; '' for no phase."""
    c = str(code or "")
    return PHASE_NAMES.get(c, _plain(c))


def kind_name(kind: Any) -> str:
    return KIND_NAMES.get(str(kind or ""), _plain(kind))


def call_name(purpose: Any) -> str:
    """``evaluate`` -> ``sufficiency evaluation``; ``evaluate:retry`` -> ``... (retry)``."""
    p = str(purpose or "")
    base, _, retry = p.partition(":")
    name = CALL_NAMES.get(base, _plain(base) or "unnamed")
    return f"{name} ({retry})" if retry else name


def event_name(type_: Any) -> str:
    return EVENT_NAMES.get(str(type_ or ""), _plain(type_))


def badge_legend(labels: list[str]) -> list[tuple[str, str]]:
    """(badge, meaning) for the badges that occur in these node labels."""
    return [(b, m) for b, m in BADGES.items() if any(b in (lbl or "") for lbl in labels)]


# "(spec §7 gap 11)", "spec crp-rag.md §7.1:" and the like: pointers into the method specs
# the developers work from; a reader of a run has no such document
_REF = r"(?:see\s+)?spec(?:\s+[\w.-]+\.md)?\s*§\s*[\w.]+(?:\s*gap\s*\d+)?"
_SPEC_PAREN = re.compile(r"\s*[(\[]\s*" + _REF + r"\s*[)\]]", re.IGNORECASE)
_SPEC_LEAD = re.compile(r"([(\[])\s*" + _REF + r"\s*[:;,]\s*", re.IGNORECASE)
_SPEC_BARE = re.compile(r"\b" + _REF + r"\s*:?\s*", re.IGNORECASE)


def plain_text(text: Any) -> Any:
    """Text with pointers into internal spec documents removed; other values unchanged."""
    if not isinstance(text, str) or "§" not in text:
        return text
    for pat, rep in ((_SPEC_PAREN, ""), (_SPEC_LEAD, r"\1"), (_SPEC_BARE, "")):
        text = pat.sub(rep, text)
    return text.strip()


def plain_values(obj: Any) -> Any:
    """:func:`plain_text` over every string in nested dicts/lists (attrs of a node)."""
    if isinstance(obj, dict):
        return {k: plain_values(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [plain_values(v) for v in obj]
    return plain_text(obj)
