"""Decode time per token of JSON-schema calls: grammar checked on the likeliest tokens first
(``CandidateGrammarSampler``) against llama.cpp's check of the whole vocabulary.

The requests are the workbench's own structured calls: CRP-RAG's next-step proposal (sampled
at temperature 0.8, as the method samples it), the answer-span extraction (greedy) and a
longer greedy JSON answer. Each request runs both ways from the same empty KV cache, so the
two decode the same logits: their tokens must agree (exactly for greedy; for sampling up to
the order of exactly equal logits). The batched side runs the same requests as one group of
``generate_many``. Decode time is a call's time after its first token, per later token; the
best of ``--repeats`` counts, since other work may share the CPU. Also printed: how often a
step had to check the whole vocabulary. Last line JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import llama_cpp  # noqa: E402,F401  (before numpy: see batched_decode.py)
from workbench.cpu_share import Meter, describe  # noqa: E402
from workbench.llm import grammar_sampler  # noqa: E402
from workbench.llm.base import GenParams, GenRequest  # noqa: E402
from workbench.llm.llama_cpp_backend import LlamaCppBackend  # noqa: E402
from workbench.llm.registry import DEFAULT_MODEL, resolve  # noqa: E402
from workbench.methods.prompts import answer_span  # noqa: E402
from workbench.methods.crp_rag import prompts as crp_rag

FILM = {"type": "object",
        "properties": {"title": {"type": "string"}, "director": {"type": "string"},
                       "year": {"type": "integer"},
                       "summary": {"type": "string", "maxLength": 400}},
        "required": ["title", "director", "year", "summary"]}


def requests(tokens: int) -> list[tuple[str, GenRequest]]:
    q = "Where was the director of the film Inception born?"
    return [
        ("propose (t=0.8)", GenRequest(crp_rag.gen(q, []), GenParams(
            max_tokens=64, temperature=0.8, seed=7, json_schema=crp_rag.GEN_SCHEMA))),
        ("propose, 2nd step (t=0.8)", GenRequest(crp_rag.gen(q, ["Find the director of Inception."]),
                                                  GenParams(max_tokens=64, temperature=0.8, seed=11,
                                                            json_schema=crp_rag.GEN_SCHEMA))),
        ("answer span (greedy)", GenRequest(answer_span.messages(
            q, "Inception was directed by Christopher Nolan, who was born in Westminster, "
               "London, England, on July 30, 1970."),
            GenParams(max_tokens=48, json_schema=answer_span.SCHEMA))),
        ("film JSON (greedy)", GenRequest(
            [{"role": "system", "content": "Reply in JSON."},
             {"role": "user", "content": "Describe the film Inception: its title, director, "
                                         "year and a long summary of its plot."}],
            GenParams(max_tokens=tokens, json_schema=FILM))),
    ]


def _decode_ms(c) -> float:
    return (c.latency_ms - c.prompt_eval_ms) / max(c.completion_tokens - 1, 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--tokens", type=int, default=96, help="max tokens of the long JSON answer")
    ap.add_argument("--candidates", type=int, default=grammar_sampler.DEFAULT_CANDIDATES)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--n-gpu-layers", type=int, default=0, help="-1 offloads every layer")
    args = ap.parse_args()
    be = LlamaCppBackend(resolve(args.model), n_ctx=4096, n_threads=args.threads,
                         n_gpu_layers=args.n_gpu_layers)
    reqs = requests(args.tokens)
    counts = {"steps": 0, "full": 0}
    real = grammar_sampler.CandidateGrammarSampler.close

    def counting_close(self):            # tally each sampler's steps as it is closed
        if self._grammar:
            counts["steps"] += self.steps
            counts["full"] += self.full_checks
        real(self)

    grammar_sampler.CandidateGrammarSampler.close = counting_close
    # time spent picking tokens, apart from decoding: on a GPU, whose decode step is a few
    # ms, this is what the grammar costs
    picking = {"full": [0.0, 0], "candidates": [0.0, 0]}

    def timed(cls, mode):
        inner = cls.sample

        def sample(self, ctx, idx=-1):
            t0 = time.perf_counter()
            tok = inner(self, ctx, idx)
            picking[mode][0] += time.perf_counter() - t0
            picking[mode][1] += 1
            return tok
        cls.sample = sample

    from llama_cpp import _internals
    timed(_internals.LlamaSampler, "full")
    timed(grammar_sampler.CandidateGrammarSampler, "candidates")
    meter = Meter()
    rows, totals = [], {"full": [0.0, 0], "candidates": [0.0, 0]}
    for name, r in reqs:
        best: dict[str, tuple[float, object]] = {}
        for _ in range(args.repeats):
            for mode, n in (("full", 0), ("candidates", args.candidates)):
                be.grammar_candidates = n
                be.llm.reset()              # both ways from the same (empty) cache
                c = be.generate(r.messages, r.params)
                if mode not in best or _decode_ms(c) < best[mode][0]:
                    best[mode] = (_decode_ms(c), c)
        full, cand = best["full"][1], best["candidates"][1]
        same = [t.id for t in full.tokens] == [t.id for t in cand.tokens]
        for mode in totals:
            totals[mode][0] += best[mode][0] * (best[mode][1].completion_tokens - 1)
            totals[mode][1] += best[mode][1].completion_tokens - 1
        rows.append({"request": name, "tokens": cand.completion_tokens,
                     "full_ms_per_token": round(best["full"][0], 1),
                     "candidates_ms_per_token": round(best["candidates"][0], 1),
                     "speedup": round(best["full"][0] / best["candidates"][0], 2),
                     "same_tokens": same})
        print(f"{name:28s} {cand.completion_tokens:3d} tokens   whole vocabulary "
              f"{best['full'][0]:6.1f} ms/token   candidates first {best['candidates'][0]:6.1f} "
              f"ms/token   x{rows[-1]['speedup']:.2f}   same tokens: {same}", flush=True)
    batched = None
    if be.max_batch >= len(reqs):
        outs, secs = {}, {}
        for mode, n in (("full", 0), ("candidates", args.candidates)):
            be.grammar_candidates = n
            be.llm.reset()
            t0 = time.perf_counter()
            outs[mode] = be.generate_many([r for _, r in reqs], max_batch=len(reqs))
            secs[mode] = time.perf_counter() - t0
        same = sum([t.id for t in a.tokens] == [t.id for t in b.tokens]
                   for a, b in zip(outs["full"], outs["candidates"]))
        batched = {"n": len(reqs), "full_s": round(secs["full"], 2),
                   "candidates_s": round(secs["candidates"], 2),
                   "speedup": round(secs["full"] / secs["candidates"], 2), "same_tokens": same}
        print(f"{len(reqs)} together (generate_many): whole vocabulary {secs['full']:.2f} s, "
              f"candidates first {secs['candidates']:.2f} s, x{batched['speedup']:.2f}, "
              f"same tokens {same}/{len(reqs)}")
    full_ms = totals["full"][0] / max(totals["full"][1], 1)
    cand_ms = totals["candidates"][0] / max(totals["candidates"][1], 1)
    share = counts["full"] / max(counts["steps"], 1)
    print(f"all requests: {full_ms:.1f} against {cand_ms:.1f} ms per decoded token "
          f"(x{full_ms / cand_ms:.2f}); {counts['full']} of {counts['steps']} candidate-first "
          f"steps ({share:.0%}) checked the whole vocabulary")
    pick = {m: 1000.0 * t / max(n, 1) for m, (t, n) in picking.items()}
    print(f"picking a token (sampler only, no decode): {pick['full']:.2f} ms with the whole "
          f"vocabulary checked, {pick['candidates']:.2f} ms candidates first")
    cpu_others = meter.share()
    print(f"model: {be.info.name} ({be.info.quantization}), {args.candidates} candidates, best "
          f"of {args.repeats}, {os.cpu_count()} CPUs, n_gpu_layers {args.n_gpu_layers}; "
          f"{describe(cpu_others)}")
    print(json.dumps({"model": be.info.name, "candidates": args.candidates,
                      "cpus": os.cpu_count(), "n_gpu_layers": args.n_gpu_layers,
                      "cpu_others": cpu_others,
                      "requests": rows, "batched": batched,
                      "full_ms_per_token": round(full_ms, 1),
                      "candidates_ms_per_token": round(cand_ms, 1),
                      "speedup": round(full_ms / cand_ms, 2),
                      "whole_vocabulary_share": round(share, 3),
                      "pick_ms": {m: round(v, 2) for m, v in pick.items()},
                      "all_same_tokens": all(r["same_tokens"] for r in rows)}))


if __name__ == "__main__":
    main()
