"""CRP-RAG's knowledge summaries: how often does a summary keep a gold answer that its
node's passages hold? Summary prompt variants, tried on the nodes of a stored eval.

    python benchmarks/crp_summary_retention.py --eval EVAL_ID [--variants paper,question,short]
        [--stored-paper] [--limit N]

The answer trail (Evaluate, ``eval show``) shows where CRP-RAG loses answers on HotpotQA:
its summaries drop them. This benchmark isolates that one stage. It takes every CRP-RAG node
of the eval whose retrieved passages hold a gold answer (contains-gold; yes/no answers and
answers named in the question left out), writes the node's summary again with each prompt
variant on the default model, and counts the summaries that still hold the answer:

- ``paper``: the method's prompt (P_integration); ``--stored-paper`` reads the eval's own
  summaries instead of writing them again (greedy decoding gives the same text);
- ``question``: the same prompt with the question above the step;
- ``short``: the small-model preset's one-to-three-sentence prompt;
- ``lead``: the paper's prompt, told to open with the passage sentence that answers the
  step, copied as written, before organising the rest.

Prints one line per node, each variant's retention with its paired difference to
``paper`` (95% bootstrap CI), and as its LAST line one JSON object.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.eval import metrics as M  # noqa: E402
from workbench.knowledge.types import Hit  # noqa: E402
from workbench.methods.generation import greedy  # noqa: E402
from workbench.methods.passages import format_passages  # noqa: E402
from workbench.methods.crp_rag import prompts as P  # noqa: E402
from workbench.store import Store  # noqa: E402
from workbench.triage.answer_trail import untraceable  # noqa: E402

LEAD = ("\nBegin the summary with the sentence of the passages that answers the step, copied as "
        "written, names, dates and numbers included; then organise the rest.")


def prompt(variant: str, question: str, step: str, passages: str) -> list[dict]:
    if variant == "short":
        return P.aggregate(step, passages, "short")
    msgs = P.aggregate(step, passages)
    if variant == "lead":
        msgs[0]["content"] += LEAD
    if variant == "question":
        msgs[-1]["content"] = f"Question: {question}\n" + msgs[-1]["content"]
    return msgs


def nodes(st: Store, eval_id: str) -> list[dict]:
    """The eval's CRP-RAG nodes whose passages hold a gold answer, with their stored summary."""
    out = []
    runs = st.query("SELECT run_id FROM eval_items WHERE eval_id = ? AND method = 'crp-rag' "
                    "ORDER BY question_id", [eval_id])
    for rid in (r["run_id"] for r in runs):
        question, golds, cfg, steps, hits, summaries = "", [], {}, {}, {}, {}
        for e in st.query("SELECT type, node_id, data FROM events WHERE run_id = ? AND type IN "
                          "('run_started', 'node_added', 'retrieved', 'llm_call') ORDER BY seq",
                          [rid]):
            d = json.loads(e["data"]) if isinstance(e["data"], str) else e["data"]
            if e["type"] == "run_started":
                question, cfg = d["question"], d.get("config") or {}
                golds = [str(g) for g in (d.get("gold") or {}).get("answers") or []]
            elif e["type"] == "node_added":
                steps[e["node_id"]] = d.get("text", "")
            elif e["type"] == "retrieved":
                hits[e["node_id"]] = [Hit(h["id"], h.get("title", ""), h.get("text", ""),
                                          h.get("retriever", ""), h.get("score", 0.0),
                                          h.get("rank", 0)) for h in d["hits"]]
            elif e["type"] == "llm_call" and d.get("purpose") == "aggregate":
                summaries[e["node_id"]] = d.get("output", "")
        if untraceable(golds, question):
            continue
        for nid, hs in hits.items():
            # as the run's knowledge step formatted them (its passage_chars)
            passages = format_passages(hs, cfg.get("passage_chars", 0), numbered=False)
            if nid in summaries and M.contains_match(passages, golds):
                out.append({"run": rid, "node": nid, "question": question, "golds": golds,
                            "step": steps.get(nid, ""), "passages": passages,
                            "stored": summaries[nid],
                            "max_tokens": cfg.get("summary_max_tokens", 256)})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eval", required=True, help="a stored eval with CRP-RAG runs")
    ap.add_argument("--variants", default="paper,question,short")
    ap.add_argument("--stored-paper", action="store_true",
                    help="read the paper prompt's summaries from the eval")
    ap.add_argument("--limit", type=int, default=0, help="first N nodes (0 = all)")
    args = ap.parse_args()
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    todo = nodes(Store(), args.eval)[: args.limit or None]
    print(f"{len(todo)} CRP-RAG nodes whose passages hold a gold answer, in "
          f"{len({n['run'] for n in todo})} runs of eval {args.eval}", flush=True)
    from workbench.llm.registry import load_backend
    be = load_backend()
    held: dict[str, list[float]] = {v: [] for v in variants}
    t0 = time.perf_counter()
    for n in todo:
        for v in variants:
            if v == "paper" and args.stored_paper:
                text = n["stored"]
            else:
                text = be.generate(prompt(v, n["question"], n["step"], n["passages"]),
                                   greedy(n["max_tokens"])).text
            held[v].append(M.contains_match(text, n["golds"]))
        print(f"  {n['run']} {n['node']:5s} " + " ".join(f"{v}={int(held[v][-1])}"
                                                       for v in variants)
              + f"  gold {n['golds'][0]!r}", flush=True)
    out = {"eval": args.eval, "model": be.info.name, "nodes": len(todo),
           "stored_paper": args.stored_paper, "seconds": round(time.perf_counter() - t0, 1),
           "retention": {v: round(sum(h) / max(len(h), 1), 3) for v, h in held.items()}}
    for v, h in held.items():
        print(f"{v:9s} keeps the answer in {int(sum(h))} of {len(h)} summaries", flush=True)
        if v != "paper" and "paper" in held and h:
            d = M.paired_bootstrap(h, held["paper"])
            out.setdefault("vs_paper", {})[v] = [round(x, 3) for x in d]
            print(f"          against paper: {d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}]", flush=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
