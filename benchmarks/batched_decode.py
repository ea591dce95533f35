"""Tokens/s of 1, 2, 4 and 8 sequences decoded together vs the same prompts one by one.

Same backend, prompts and token budget in one run: ``generate`` on each prompt in turn,
then ``generate_many`` on all of them as one group. Throughput counts generated tokens
over wall time, prompt evaluation included on both sides (the shared system prompt is
cached for both). Each side is timed ``--repeats`` times, alternating, and the best run
counts, since other work on a shared CPU slows single runs. Also reports how many batched
continuations match the sequential ones token for token: llama.cpp's CPU kernels change
path with the number of rows in a step, so they need not. Target: 4 sequences >= 2.5x the
sequential throughput (2 cores). ``--n-gpu-layers -1`` runs it on a CUDA build's GPU.
The batched side runs twice: with the plain decode loop and with each step's statistics
computed beside the next decode (``overlap``, batch_engine.py), which must give the same
output.
The share of the CPU that other work took meanwhile (``workbench/cpu_share.py``) is printed
with the figures: the CPU may be shared.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Before numpy: with a CUDA 13 build on an H200 machine (numpy 2.5.2) the model load
# crashed whenever numpy was loaded first (see README, "GPU").
import llama_cpp  # noqa: E402,F401
from workbench.cpu_share import Meter, describe  # noqa: E402
from workbench.llm.base import GenParams, GenRequest  # noqa: E402
from workbench.llm.llama_cpp_backend import LlamaCppBackend  # noqa: E402
from workbench.llm.registry import DEFAULT_MODEL, resolve  # noqa: E402

SYSTEM = {"role": "system", "content": "You are a helpful assistant who writes vivid, detailed prose."}
TOPICS = ["a film director travelling from London to Los Angeles", "a lighthouse keeper in a storm",
          "a chess match between two old friends", "a bakery that opens at midnight",
          "a scientist who discovers a new comet", "a river journey through a jungle",
          "a small town preparing for a festival", "a violinist practising for a concert"]


def requests(n: int, tokens: int) -> list[GenRequest]:
    return [GenRequest([SYSTEM, {"role": "user", "content": f"Write a long story about {t}."}],
                       GenParams(max_tokens=tokens)) for t in TOPICS[:n]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--tokens", type=int, default=48, help="max tokens per sequence")
    ap.add_argument("--sizes", default="1,2,4,8")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--n-gpu-layers", type=int, default=0, help="-1 offloads every layer")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    be = LlamaCppBackend(resolve(args.model), n_ctx=4096, n_threads=args.threads,
                         max_batch=max(sizes), n_gpu_layers=args.n_gpu_layers)
    be.generate_many(requests(2, 4))          # warm up: pages in the weights, caches the prefix
    meter = Meter()
    rows = {}
    for n in sizes:
        reqs = requests(n, args.tokens)
        seq_s, bat_s, ovl_s = [], [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            seq = [be.generate(r.messages, r.params) for r in reqs]
            seq_s.append(time.perf_counter() - t0)
            outs = {}
            for on, times in ((False, bat_s), (True, ovl_s)):
                if be._engine is not None:
                    be._engine.overlap = on
                t0 = time.perf_counter()
                outs[on] = be.generate_many(reqs, max_batch=n)
                times.append(time.perf_counter() - t0)
            bat, ovl = outs[False], outs[True]
        n_seq = sum(c.completion_tokens for c in seq)
        n_bat = sum(c.completion_tokens for c in bat)
        same = sum([t.id for t in a.tokens] == [t.id for t in b.tokens] for a, b in zip(seq, bat))
        ts, tb, to = min(seq_s), min(bat_s), min(ovl_s)
        rows[n] = {"seq_tok_s": round(n_seq / ts, 1), "batch_tok_s": round(n_bat / tb, 1),
                   "overlap_tok_s": round(n_bat / to, 1),
                   "seq_s": [round(x, 2) for x in seq_s], "batch_s": [round(x, 2) for x in bat_s],
                   "overlap_s": [round(x, 2) for x in ovl_s],
                   "speedup": round((n_bat / tb) / (n_seq / ts), 2),
                   "overlap_speedup": round((n_bat / to) / (n_seq / ts), 2),
                   "overlap_same": [(c.text, c.logprobs) for c in ovl]
                   == [(c.text, c.logprobs) for c in bat],
                   "identical": same, "n": n, "mode": bat[0].batch["mode"]}
        r = rows[n]
        print(f"{n} sequences: one by one {r['seq_tok_s']:6.1f} tok/s ({n_seq} tokens, "
              f"{r['seq_s']} s)   together {r['batch_tok_s']:6.1f} tok/s ({n_bat} tokens, "
              f"{r['batch_s']} s)   x{r['speedup']:.2f}   identical {same}/{n}   overlapped "
              f"{r['overlap_tok_s']:6.1f} tok/s x{r['overlap_speedup']:.2f} "
              f"(same output: {r['overlap_same']})", flush=True)
    cpu_others = meter.share()
    print(f"model: {be.info.name} ({be.info.quantization}), {args.tokens} tokens per sequence, "
          f"best of {args.repeats}, {os.cpu_count()} CPUs, n_gpu_layers {args.n_gpu_layers}; "
          f"{describe(cpu_others)}")
    if 4 in rows:
        print(f"4 sequences: x{rows[4]['speedup']:.2f} the sequential throughput (target >= 2.5)")
    print(json.dumps({"model": be.info.name, "tokens": args.tokens, "repeats": args.repeats,
                      "cpus": os.cpu_count(), "n_gpu_layers": args.n_gpu_layers,
                      "cpu_others": cpu_others,
                      "sizes": rows,
                      "speedup_4": rows.get(4, {}).get("speedup"), "target_4": 2.5}))


if __name__ == "__main__":
    main()
