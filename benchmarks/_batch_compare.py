"""``--batch-compare`` of methods_text.py and methods_kg.py: every question run with
batch_size 1 and with batch_size N in one process, on one model, the order alternating per
question so neither side always meets a warm cache first.

Per method: wall time per question both ways and the speed-up, how many answers differ
(llama.cpp's numbers in a batch differ in the last bits, so a near-tie can flip), accuracy
and token F1 both ways, the share of LLM calls that shared a batch, and the longest wait
for a run's first node.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Sequence

from workbench.methods.batched import has_batching


def run_timed(method: Any, ctx: Any, question: str, **kw: Any) -> Any:
    """Run to the end; the trace's meta gets ``first_node_s``: seconds from the start to the
    first node, what a user watching the graph waits for."""
    from workbench import trace as T
    from workbench.execution import execute
    tr, t0, first = T.Trace(), time.perf_counter(), None
    for ev in execute(method, ctx, question, trace_out=tr, **kw):
        if first is None and ev.type == T.NODE_ADDED:
            first = time.perf_counter() - t0
    tr.meta["first_node_s"] = None if first is None else round(first, 4)
    return tr


def flush_prompt_cache(llm: Any) -> None:
    """Replace the model's cached prompt with an unrelated one, untimed: otherwise the second
    run of a question starts with the first run's prompt in the cache (a one-call method's
    second run then takes a tenth of the time)."""
    from workbench.llm.base import GenParams
    llm.generate("An unrelated prompt that replaces the cached one.", GenParams(max_tokens=1))


def compare(questions: Sequence[Any], run: Callable[[Any, int], Any], size: int,
            judge: Callable[[str, Any], tuple[bool, float]], label: str = "",
            flush: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """``run(question, batch_size)`` -> the folded trace; ``judge(answer, question)`` ->
    (correct, token F1); a refusal or a failed run answers ""; ``flush()`` before each run."""
    rows = []
    for i, q in enumerate(questions):
        got = {}
        for b in ((1, size) if i % 2 == 0 else (size, 1)):
            flush()
            t0 = time.perf_counter()
            tr = run(q, b)
            wall = time.perf_counter() - t0
            ans = tr.answer or {}
            text = "" if ans.get("refused") or tr.status == "failed" else (ans.get("text") or "")
            ok, f1 = judge(text, q)
            calls = list(tr.llm_calls.values())
            shared = sum(1 for c in calls if (c.get("batch") or {}).get("size", 1) > 1)
            got[b] = {"wall_s": round(wall, 3), "first_node_s": tr.meta.get("first_node_s"),
                      "answer": text, "correct": ok, "f1": f1,
                      "llm_calls": len(calls), "calls_in_batches": shared,
                      "status": tr.status}
        seq, bat = got[1], got[size]
        rows.append({"id": q.id, "wall_s": [seq["wall_s"], bat["wall_s"]],
                     "first_node_s": [seq["first_node_s"], bat["first_node_s"]],
                     "same_answer": seq["answer"] == bat["answer"],
                     "answers": [seq["answer"][:60], bat["answer"][:60]],
                     "correct": [seq["correct"], bat["correct"]],
                     "f1": [round(seq["f1"], 3), round(bat["f1"], 3)],
                     "llm_calls": [seq["llm_calls"], bat["llm_calls"]],
                     "calls_in_batches": bat["calls_in_batches"],
                     "status": [seq["status"], bat["status"]]})
        print(f"{label:14s} {q.id:8s} wall 1: {seq['wall_s']:7.2f}s  {size}: "
              f"{bat['wall_s']:7.2f}s  calls {seq['llm_calls']:3d} ({bat['calls_in_batches']} "
              f"batched)  {'same' if rows[-1]['same_answer'] else 'DIFFERENT'} "
              f"{seq['answer'][:30]!r} / {bat['answer'][:30]!r}", flush=True)
    if not rows:
        return {"batch_size": size, "n": 0}

    def both(key: str, digits: int = 3) -> dict[str, float]:
        return {side: round(statistics.mean(float(r[key][j]) for r in rows), digits)
                for j, side in enumerate(("1", str(size)))}
    seq_s = sum(r["wall_s"][0] for r in rows)
    bat_s = sum(r["wall_s"][1] for r in rows)
    return {"batch_size": size, "n": len(rows), "mean_wall_s": both("wall_s"),
            "speedup": round(seq_s / max(bat_s, 1e-9), 3),
            "answers_differ": sum(not r["same_answer"] for r in rows),
            "max_first_node_s": max((r["first_node_s"][1] or 0.0) for r in rows),
            "accuracy": both("correct"), "token_f1": both("f1"),
            "share_of_calls_batched": round(sum(r["calls_in_batches"] for r in rows)
                                            / max(sum(r["llm_calls"][1] for r in rows), 1), 3),
            "per_question": rows}


def compare_methods(labels: Sequence[str], questions: Sequence[Any], size: int,
                    overrides_of: Callable[[str], tuple[str, dict[str, Any]]],
                    run_one: Callable[[str, dict[str, Any], Any], Any],
                    judge: Callable[[str, Any], tuple[bool, float]],
                    llm: Any = None) -> dict[str, Any]:
    """:func:`compare` for each method label that has batched calls (the others are named
    and skipped); ``run_one(name, overrides, question)`` -> the folded trace."""
    import json
    from workbench.methods import all_methods
    out = {}
    flush = (lambda: flush_prompt_cache(llm)) if llm is not None else (lambda: None)
    for label in labels:
        name, over = overrides_of(label)
        if not has_batching(all_methods()[name]):
            print(f"{label}: no independent LLM calls to batch, skipped", flush=True)
            continue
        out[label] = compare(
            questions, lambda q, b, name=name, over=over: run_one(name, {**over, "batch_size": b}, q),
            size, judge, label, flush)
        print(f"{label}: " + json.dumps({k: v for k, v in out[label].items()
                                         if k != "per_question"}), flush=True)
    return out
