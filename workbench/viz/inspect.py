"""What the node inspector shows, as plain data (used by Streamlit and the HTML export).

All strings are returned raw; renderers escape them.
"""
from __future__ import annotations

import math
from typing import Any

from ..scoring import score_tokens
from .names import CALL_NAMES, call_name, kind_name, phase_name, plain_values  # noqa: F401

# Attribute keys that hold a node's aggregated knowledge / answer, in display order.
KNOWLEDGE_KEYS = ("knowledge", "aggregated", "aggregated_knowledge", "summary", "evidence_text",
                  "context")
ANSWER_KEYS = ("answer", "result", "step_result", "final_answer", "eval_answer", "long_answer",
               "full_answer")


def _fmt_num(v: Any) -> Any:
    if isinstance(v, float):
        return round(v, 4) if math.isfinite(v) else str(v)
    return v


# --- one definition of a node's scores, shared by the graph label, the tooltip, the
# inspector headline and score table and the HTML export: they used to compute three
# different numbers (a mean over all the node's calls, the method's stored score, and that
# score re-rounded) and rounded each their own way.

SCORE_DECIMALS = 3
SCORE_FORMAT = "%.3f"      # the same rule for a dataframe NumberColumn

# scores read from the log-probabilities of a call's generated tokens (workbench.scoring)
TOKEN_SCORES = ("perplexity", "confidence", "mean_nll", "mean_prob", "min_prob",
                "mean_entropy")
# the order in which a node's headline / graph label picks its main score
MAIN_SCORE_KEYS = ("perplexity", "ppl", "C", "confidence", "p_right", "score", "R", "T")


def fmt_score(v: Any) -> str:
    """The one rounding rule for a score wherever it is shown: 3 decimals."""
    if v is None:
        return "–"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return f"{float(v):.{SCORE_DECIMALS}f}" if math.isfinite(v) else str(v)


def _num_or_none(v: Any) -> float | None:
    """A table cell of a numeric column: a float, or None for missing (one Arrow type)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _call_score(c: dict[str, Any], key: str) -> Any:
    return (c.get("scores") or {}).get(key)


def score_source(trace: Any, node: Any, key: str) -> dict[str, Any] | None:
    """The LLM call a node's score ``key`` was read from: the call id the method recorded
    with the score, else (runs stored before it did) the call, of this node first, whose
    own token score equals the stored one; None for a score the method computed itself."""
    if key not in TOKEN_SCORES:       # a call id recorded with it names its token scores only
        return None
    own = node_call_ids(trace, node)
    cid = (getattr(node, "score_calls", None) or {}).get(key)
    if cid not in trace.llm_calls:
        cid = None
        v = node.scores.get(key)
        if isinstance(v, (int, float)) and math.isfinite(v):
            # methods store the score rounded to 4 decimals at most
            others = sorted((c for c in trace.llm_calls if c not in own),
                            key=lambda c: -trace.llm_calls[c].get("seq", 0))
            for c in list(reversed(own)) + others:
                cv = _call_score(trace.llm_calls[c], key)
                if isinstance(cv, (int, float)) and math.isclose(cv, v, abs_tol=6e-5):
                    cid = c
                    break
    if cid is None:
        return None
    c = trace.llm_calls[cid]
    n_tok = sum(1 for t in c.get("tokens") or [] if len(t) > 2 and t[2] is not None)
    return {"call_id": cid, "purpose": c.get("purpose", ""), "call": call_name(c.get("purpose")),
            "node_id": c.get("node_id"), "own": cid in own, "n_tokens": n_tok}


def source_text(src: dict[str, Any] | None) -> str:
    """Where a score comes from, in words (raw; renderers escape)."""
    if src is None:
        return "computed by the method (not a token score of an LLM call)"
    over = f"over its {src['n_tokens']} generated tokens"
    if src["own"]:
        return f"{src['call']} call ({over})"
    where = f"the {src['call']} call of node {src['node_id']}" if src["node_id"] else \
        f"the {src['call']} call"
    return f"{where} ({over})"


def score_label(key: str, src: dict[str, Any] | None) -> str:
    """``perplexity of the step call``: different calls' scores get different labels."""
    return f"{key} of the {src['call']} call" if src else key


def main_score(trace: Any, node: Any) -> dict[str, Any] | None:
    """The score a node is summed up by (graph label, first inspector headline)."""
    keys = [k for k in MAIN_SCORE_KEYS if k in node.scores] or list(node.scores)[:1]
    if not keys:
        return None
    k = keys[0]
    src = score_source(trace, node, k)
    return {"score": k, "value": node.scores[k], "label": score_label(k, src),
            "text": fmt_score(node.scores[k]), "source": source_text(src)}


def headline_scores(trace: Any, node: Any) -> list[dict[str, Any]]:
    """The main score, then confidence when the node has one (at most two)."""
    m = main_score(trace, node)
    if m is None:
        return []
    out = [m]
    if m["score"] != "confidence" and "confidence" in node.scores:
        src = score_source(trace, node, "confidence")
        out.append({"score": "confidence", "value": node.scores["confidence"],
                    "label": score_label("confidence", src),
                    "text": fmt_score(node.scores["confidence"]),
                    "source": source_text(src)})
    return out


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
        "call": call_name(c.get("purpose")), "phase_name": phase_name(c.get("phase")),
        "replayed_from": c.get("replayed_from"),
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
        src = score_source(trace, n, k)
        # one type per column: numbers (None when missing), formatted where shown
        scores.append({"score": k, "value": _num_or_none(v), "threshold": _num_or_none(thr),
                       "direction": direction, "margin": _num_or_none(margin), "passes": ok,
                       "label": score_label(k, src), "source": source_text(src),
                       "call_id": src["call_id"] if src else None})
    knowledge = {k: n.attrs[k] for k in KNOWLEDGE_KEYS if n.attrs.get(k)}
    answers = {k: n.attrs[k] for k in ANSWER_KEYS if n.attrs.get(k)}
    # notes for the developers ("spec §7 gap 11") are not for a reader of the run
    other = {k: plain_values(v) for k, v in n.attrs.items()
             if k not in knowledge and k not in answers}
    events = [{**e, "data": plain_values(e.get("data"))} for e in trace.log
              if e.get("node_id") == node_id]
    paths = [{"path_id": pid, "state": p.get("state"), "nodes": p.get("nodes", [])}
             for pid, p in trace.paths.items() if node_id in p.get("nodes", [])]
    return {
        "id": n.id, "kind": n.kind, "kind_name": kind_name(n.kind), "state": n.state, "layer": n.layer, "text": n.text,
        "parents": [{"id": p, "text": trace.nodes[p].text if p in trace.nodes else ""}
                    for p in n.parents],
        "children": [{"id": c, "text": trace.nodes[c].text if c in trace.nodes else ""}
                     for c in n.children],
        "evidence": evidence_rows(n),
        "queries": [ev.get("query", "") for ev in n.evidence],
        "knowledge": knowledge, "answers": answers, "attrs": other,
        "scores": scores, "llm_calls": calls,
        # the headline is the node's own stored score, as in the graph label
        "headline": headline_scores(trace, n),
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
