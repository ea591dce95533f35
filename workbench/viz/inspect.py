"""What the node inspector shows, as plain data (used by Streamlit and the HTML export).

All strings are returned raw; renderers escape them.
"""
from __future__ import annotations

import math
from typing import Any

from ..scoring import score_tokens

# Attribute keys that hold a node's aggregated knowledge / answer, in display order.
KNOWLEDGE_KEYS = ("knowledge", "aggregated", "aggregated_knowledge", "summary", "evidence_text",
                  "context")
ANSWER_KEYS = ("answer", "result", "step_result", "final_answer", "eval_answer", "long_answer",
               "full_answer")


def _fmt_num(v: Any) -> Any:
    if isinstance(v, float):
        return round(v, 4) if math.isfinite(v) else str(v)
    return v


def node_call_ids(trace: Any, node: Any) -> list[str]:
    """LLM calls for a node: those the reducer linked, plus calls emitted (with this node
    id) before the node itself was added, plus ids the method listed in ``call_ids``."""
    ids = list(node.llm_calls)
    for cid, c in trace.llm_calls.items():
        if c.get("node_id") == node.id and cid not in ids:
            ids.append(cid)
    for cid in node.attrs.get("call_ids") or []:
        if isinstance(cid, str) and cid in trace.llm_calls and cid not in ids:
            ids.append(cid)
    return sorted(ids, key=lambda c: trace.llm_calls[c].get("seq", 0) if c in trace.llm_calls else 0)


def call_details(trace: Any, call_id: str) -> dict[str, Any]:
    c = trace.llm_calls.get(call_id) or {}
    toks = c.get("tokens") or []
    lps = [t[2] for t in toks if len(t) > 2 and t[2] is not None]
    sc = dict(c.get("scores") or {})
    if not sc and lps:
        sc = score_tokens(lps).to_dict()
    return {
        "call_id": call_id, "purpose": c.get("purpose", ""), "phase": c.get("phase", ""),
        "prompt": c.get("prompt", ""), "output": c.get("output", ""),
        "latency_ms": c.get("latency_ms"), "prompt_tokens": c.get("prompt_tokens"),
        "completion_tokens": c.get("completion_tokens"),
        "finish_reason": c.get("finish_reason"),
        "tokens": [{"piece": t[1], "logprob": t[2],
                    "prob": math.exp(t[2]) if t[2] is not None else None,
                    "entropy": t[3] if len(t) > 3 else None} for t in toks],
        "perplexity": sc.get("perplexity"), "confidence": sc.get("confidence"),
        "mean_nll": sc.get("mean_nll"), "min_prob": sc.get("min_prob"),
        "logprobs_available": c.get("logprobs_available", bool(lps)),
        "cached_prompt_tokens": c.get("cached_prompt_tokens"),
    }


def evidence_rows(node: Any) -> list[dict[str, Any]]:
    """One row per retrieved passage or triple: query, retriever, rank, score, title, text
    and, for a triple of a built KG, the passage it came from."""
    rows = []
    for i, ev in enumerate(node.evidence):
        for h in ev.get("hits", []):
            meta = h.get("meta") or {}
            text = h.get("text", "")
            if not text and {"head", "relation", "tail"} <= set(meta):
                text = f"({meta['head']}, {meta['relation']}, {meta['tail']})"
            rows.append({"retrieval": i + 1, "query": ev.get("query", ""),
                         "retriever": h.get("retriever") or ev.get("retriever", ""),
                         "rank": h.get("rank"), "score": _fmt_num(h.get("score")),
                         "id": h.get("id", ""), "title": h.get("title", ""), "text": text,
                         # a built KG's triples name the passage they were extracted from
                         "passage": "; ".join(map(str, meta.get("sources") or [])),
                         "meta": meta})
    return rows


def node_details(trace: Any, node_id: str, method_thresholds: dict[str, Any] | None = None
                 ) -> dict[str, Any] | None:
    n = trace.nodes.get(node_id)
    if n is None:
        return None
    calls = [call_details(trace, cid) for cid in node_call_ids(trace, n)]
    declared = dict(method_thresholds or (trace.meta or {}).get("thresholds") or {})
    scores = []
    for k, v in n.scores.items():
        thr = n.thresholds.get(k)
        direction = None
        if k in declared:
            d = declared[k]
            direction = d[1] if isinstance(d, (list, tuple)) else None
            if thr is None:
                thr = (trace.config or {}).get(d[0]) if isinstance(d, (list, tuple)) else None
        margin = None
        ok = None
        try:
            if thr is not None and v is not None:
                margin = float(v) - float(thr)
                if direction in ("lower", "higher"):
                    ok = float(v) < float(thr) if direction == "lower" else float(v) >= float(thr)
        except (TypeError, ValueError):
            pass
        scores.append({"score": k, "value": _fmt_num(v), "threshold": _fmt_num(thr),
                       "direction": direction, "margin": _fmt_num(margin), "passes": ok})
    knowledge = {k: n.attrs[k] for k in KNOWLEDGE_KEYS if n.attrs.get(k)}
    answers = {k: n.attrs[k] for k in ANSWER_KEYS if n.attrs.get(k)}
    other = {k: v for k, v in n.attrs.items() if k not in knowledge and k not in answers}
    events = [e for e in trace.log if e.get("node_id") == node_id]
    ppls = [c["perplexity"] for c in calls if c["perplexity"] is not None]
    paths = [{"path_id": pid, "state": p.get("state"), "nodes": p.get("nodes", [])}
             for pid, p in trace.paths.items() if node_id in p.get("nodes", [])]
    return {
        "id": n.id, "kind": n.kind, "state": n.state, "layer": n.layer, "text": n.text,
        "parents": [{"id": p, "text": trace.nodes[p].text if p in trace.nodes else ""}
                    for p in n.parents],
        "children": [{"id": c, "text": trace.nodes[c].text if c in trace.nodes else ""}
                     for c in n.children],
        "evidence": evidence_rows(n),
        "queries": [ev.get("query", "") for ev in n.evidence],
        "knowledge": knowledge, "answers": answers, "attrs": other,
        "scores": scores, "llm_calls": calls,
        "perplexity": (sum(ppls) / len(ppls)) if ppls else None,
        "confidence": (calls[-1]["confidence"] if calls else None),
        "latency_ms": sum(float(c["latency_ms"] or 0) for c in calls),
        "events": events, "paths": paths,
        "is_answer_node": bool(trace.answer and trace.answer.get("node_id") == node_id),
    }


def run_summary(trace: Any) -> dict[str, Any]:
    """Numbers for the status line, the compare table and exports."""
    tot = trace.totals()
    ppls = [(c.get("scores") or {}).get("perplexity") for c in trace.llm_calls.values()]
    ppls = [p for p in ppls if isinstance(p, (int, float)) and math.isfinite(p)]
    ans = trace.answer or {}
    final_ppl = None
    if ans.get("node_id") and ans["node_id"] in trace.nodes:
        ids = node_call_ids(trace, trace.nodes[ans["node_id"]])
        if ids:
            final_ppl = (trace.llm_calls[ids[-1]].get("scores") or {}).get("perplexity")
    return {
        "run_id": trace.run_id, "method": trace.method, "status": trace.status,
        "phase": trace.phase, "answer": ans.get("text"), "refused": bool(ans.get("refused")),
        "llm_calls": tot["llm_calls"], "prompt_tokens": tot["prompt_tokens"],
        "completion_tokens": tot["completion_tokens"],
        "tokens": tot["prompt_tokens"] + tot["completion_tokens"],
        "elapsed_ms": tot["elapsed_ms"], "llm_ms": tot["llm_ms"], "nodes": tot["nodes"],
        "edges": tot["edges"], "mean_perplexity": (sum(ppls) / len(ppls)) if ppls else None,
        "final_perplexity": final_ppl, "errors": [e.get("message", "") for e in trace.errors],
        "paths": len(trace.paths),
    }
