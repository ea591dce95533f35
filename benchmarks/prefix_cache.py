"""Prompt-processing time of calls that share a long prefix with an earlier call.

Two cases, in one run of one model:

* **interleaved**: two kinds of call, each with its own ``--prefix-tokens`` system prompt,
  alternate (A B A B ...), as a method's summary and evaluation calls do. Without kept
  prefixes each call follows the other kind and re-evaluates its instructions; with them
  (``prefix_cache_tokens``, llm/prefix_store.py) every call after the first of its kind
  evaluates only its question. With ``--compare-off`` the same calls also run with the
  store off.
* **single** (the baseline, what ``Llama.generate``'s own cache served before the store):
  one more call of the last kind right after the last call, sharing its prefix with the
  call just before it.

Prints each call's prompt-eval time and the ratio of the later calls of each kind to the
first of the kind (target: <= 0.2), and the single case's ratio to the same first call.
``--compare-whole`` says whether a call's output depends on what was cached: the same calls
with every prompt evaluated whole (twice, and in another order), against the previous
call's prompt reused (calls grouped by kind) and against kept prompts.
``--crp N`` also runs CRP-RAG on the first N demo questions with the store on and off
(calls, prompt tokens, the share served from a cache, wall time). The last line is JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# llama_cpp before numpy: a CUDA build crashes loading a model otherwise (docs/gpu.md)
import llama_cpp  # noqa: E402,F401
from workbench.llm.base import GenParams  # noqa: E402
from workbench.llm.llama_cpp_backend import LlamaCppBackend  # noqa: E402
from workbench.llm.prefix_store import DEFAULT_BUDGET_TOKENS, WHOLE  # noqa: E402
from workbench.llm.registry import DEFAULT_MODEL, resolve  # noqa: E402

QUESTIONS = ["Who released the film?", "When was it released?", "Where is the studio?",
             "How long did production take?"]
SENTENCES = ["The studio in Burbank released the film in 2010 after a long production. ",
             "A verdict says yes when the summary names the answer and no otherwise. "]


def _system(be: LlamaCppBackend, sentence: str, n: int) -> dict:
    text = ""
    while be.count_tokens(text) < n:
        text += sentence
    return {"role": "system", "content": text}


def single(be: LlamaCppBackend, system: dict, first_ms: float) -> dict:
    """A call right after one of its own kind: only the previous prompt is needed."""
    c = be.generate([system, {"role": "user", "content": QUESTIONS[-1]}], GenParams(max_tokens=1))
    ratio = c.prompt_eval_ms / first_ms
    print(f"single: {c.prompt_tokens} tokens, {c.cached_prompt_tokens} cached ({c.cache}), "
          f"prompt eval {c.prompt_eval_ms:.0f} ms; ratio to the first call {ratio:.3f}")
    return {"ms": round(c.prompt_eval_ms, 1), "cached_tokens": c.cached_prompt_tokens,
            "cache": c.cache, "ratio": round(ratio, 3)}


def interleaved(be: LlamaCppBackend, systems: list[dict], rounds: int, label: str,
                grouped: bool = False) -> dict:
    """Calls of each kind alternating (A B A B ...), or with ``grouped`` all of one kind
    before the next (A A B B ...: each later call finds its prefix in the previous one)."""
    p = GenParams(max_tokens=4)
    be.llm.reset()
    firsts: dict[int, float] = {}
    ratios, outputs = [], []
    cached = later_prompt = 0
    t0 = time.perf_counter()
    order = ([(r, k) for k in range(len(systems)) for r in range(rounds)] if grouped
             else [(r, k) for r in range(rounds) for k in range(len(systems))])
    for r, k in order:
        system = systems[k]
        c = be.generate([system, {"role": "user", "content": QUESTIONS[r % len(QUESTIONS)]}], p)
        outputs.append([(t.id, t.logprob) for t in c.tokens])
        if r == 0:
            firsts[k] = c.prompt_eval_ms
        else:
            ratios.append(c.prompt_eval_ms / firsts[k])
            cached += c.cached_prompt_tokens
            later_prompt += c.prompt_tokens
        print(f"{label}: kind {'AB'[k]} call {r + 1}: {c.prompt_tokens} tokens, "
              f"{c.cached_prompt_tokens} cached ({c.cache}), prompt eval "
              f"{c.prompt_eval_ms:.0f} ms", flush=True)
    out = {"calls": rounds * len(systems), "first_ms": [round(firsts[k], 1) for k in firsts],
           "wall_s": round(time.perf_counter() - t0, 1),
           "max_ratio": round(max(ratios), 3), "mean_ratio": round(sum(ratios) / len(ratios), 3),
           "cached_share_later_calls": round(cached / max(1, later_prompt), 3),
           "outputs": outputs}
    print(f"{label}: later calls / first call of their kind: max {out['max_ratio']:.3f}, "
          f"mean {out['mean_ratio']:.3f} (target <= 0.2)")
    return out


def crp(model: str, threads: int | None, n: int, budget: int, n_gpu_layers: int = 0) -> dict:
    """CRP-RAG on the first ``n`` demo questions, one backend per setting, warmed by one
    standard-RAG question so that loading is not charged to the method. With offload the
    model runs in a worker process, as in the app: loaded in this process beside the
    embedder, a CUDA build aborted (``free(): invalid pointer``, docs/gpu.md run 5)."""
    from workbench.datasets import load_dataset
    from workbench.llm.registry import load_backend
    from workbench.execution import run_to_end
    from workbench.workspace import build_context
    qs = [q.question for q in load_dataset("demo").questions[:n]]
    out, answers = {}, {}
    for label, tokens in (("store on", budget), ("store off", 0)):
        be = load_backend(model=model, n_threads=threads, prefix_cache_tokens=tokens,
                          n_gpu_layers=n_gpu_layers, shared=False,
                          isolate_model=n_gpu_layers != 0)
        m, ctx = build_context("standard-rag", llm=be, dataset="demo")
        run_to_end(m, ctx, qs[0])
        t0 = time.perf_counter()
        tot = {"llm_calls": 0, "prompt_tokens": 0, "cached_prompt_tokens": 0}
        for q in qs:
            m, ctx = build_context("crp-rag", llm=be, dataset="demo")
            tr = run_to_end(m, ctx, q)
            answers.setdefault(label, []).append(tr.answer)
            t = tr.totals()
            for k in tot:
                tot[k] += int(t[k])
        wall = time.perf_counter() - t0
        be.close()
        out[label] = {**tot, "cached_share": round(tot["cached_prompt_tokens"]
                                                   / max(1, tot["prompt_tokens"]), 3),
                      "wall_s": round(wall, 1), "questions": len(qs)}
        print(f"CRP-RAG, {label}: {out[label]}", flush=True)
    # restored prefixes give what evaluating the whole prompt gives (llm/prefix_store.py)
    out["same_answers"] = answers["store on"] == answers["store off"]
    out["wall_ratio"] = round(out["store on"]["wall_s"] / out["store off"]["wall_s"], 3)
    print(f"CRP-RAG: store on / off wall time {out['wall_ratio']}; same answers: "
          f"{out['same_answers']}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--prefix-tokens", type=int, default=700)
    ap.add_argument("--rounds", type=int, default=3, help="calls of each kind (interleaved)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--n-gpu-layers", type=int, default=0, help="-1 offloads every layer")
    ap.add_argument("--budget", type=int, default=DEFAULT_BUDGET_TOKENS,
                    help="prefix_cache_tokens of the backend with kept prefixes")
    ap.add_argument("--compare-off", action="store_true",
                    help="also run the interleaved calls with the store off")
    ap.add_argument("--compare-whole", action="store_true",
                    help="also run the interleaved calls twice with every prompt evaluated "
                         "whole (nothing cached), and compare each side's output with it")
    ap.add_argument("--crp", type=int, default=0, metavar="N",
                    help="also run CRP-RAG on the first N demo questions, store on and off")
    ap.add_argument("--crp-only", action="store_true", help="only the CRP-RAG comparison")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.crp_only:
        print(json.dumps({"model": args.model, "crp_rag": crp(args.model, args.threads,
                                                               args.crp or 2, args.budget,
                                                               args.n_gpu_layers)}))
        return
    path = resolve(args.model)

    def load(prefix_cache_tokens: int) -> LlamaCppBackend:
        """The model, loaded afresh with this prompt-cache setting."""
        return LlamaCppBackend(path, n_ctx=2048, n_threads=args.threads,
                               prefix_cache_tokens=prefix_cache_tokens,
                               n_gpu_layers=args.n_gpu_layers)

    be = load(args.budget)
    systems = [_system(be, s, args.prefix_tokens) for s in SENTENCES]
    res = {"model": args.model, "prefix_tokens": args.prefix_tokens, "budget": args.budget}
    res["interleaved"] = interleaved(be, systems, args.rounds, "store on")
    # the last interleaved call was of the last kind: one more of it needs the previous prompt only
    res["single"] = single(be, systems[-1], res["interleaved"]["first_ms"][-1])
    store = be.prefix_store
    if store is not None and store.kept():
        kept = store.summary()
        per = kept["bytes"] / kept["cells"]
        res["kv_bytes_per_token"] = round(per)
        print(f"RAM: {kept['bytes'] / 1e6:.1f} MB for {kept['kept']} kept prompts of "
              f"{kept['cells']} tokens ({per / 1e3:.1f} kB a token; the default budget of "
              f"{DEFAULT_BUDGET_TOKENS} tokens is {DEFAULT_BUDGET_TOKENS * per / 1e6:.0f} MB)")
    be.close()
    res["vs_single"] = round(res["interleaved"]["mean_ratio"] / res["single"]["ratio"], 2)
    print(f"interleaved mean ratio / single-prefix ratio: {res['vs_single']}")
    if args.compare_off:
        off = load(0)
        res["interleaved_store_off"] = interleaved(off, systems, args.rounds, "store off")
        off.close()
        # the same tokens and log-probabilities to the last bit (llm/prefix_store.py)
        res["same_output"] = (res["interleaved"]["outputs"]
                              == res["interleaved_store_off"]["outputs"])
        print(f"store on and off: the same tokens and log-probabilities: {res['same_output']}")
    if args.compare_whole:
        # the reference: each call a function of its prompt alone, run twice (is evaluating
        # a prompt whole repeatable on this device?); against it, the previous call's
        # prompt reused (calls grouped by kind, store off) and kept prompts (store on)
        whole = load(WHOLE)
        res["whole"] = interleaved(whole, systems, args.rounds, "whole")
        again = interleaved(whole, systems, args.rounds, "whole again")
        grouped_whole = interleaved(whole, systems, args.rounds, "whole, grouped", grouped=True)
        whole.close()
        prev = load(0)
        res["previous"] = interleaved(prev, systems, args.rounds, "previous prompt", grouped=True)
        prev.close()
        ref = res["whole"]["outputs"]
        res["whole_repeatable"] = again["outputs"] == ref
        res["same_as_whole"] = {
            "previous_prompt": res["previous"]["outputs"] == grouped_whole["outputs"],
            "kept_prompts": res["interleaved"]["outputs"] == ref}
        print("the same tokens and log-probabilities as evaluating every prompt whole: "
              f"{res['same_as_whole']}; whole, run twice: {res['whole_repeatable']}")
    for k in ("interleaved", "interleaved_store_off", "whole", "previous"):
        res.get(k, {}).pop("outputs", None)
    if args.crp:
        res["crp_rag"] = crp(args.model, args.threads, args.crp, args.budget,
                             args.n_gpu_layers)
    res["total_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
