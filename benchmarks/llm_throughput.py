"""LLM throughput: plain llama-cpp-python, the workbench backend in-process, and the same
backend in its model worker process (the default), in one run on one model.

1. Tokens/s of a long greedy generation: plain ``create_completion`` without logprobs
   against the workbench backend with per-token logprobs and entropy (target ratio >= 0.90).
2. What isolation costs: the isolated backend (model in a worker process, tokens streamed
   back one message each, as the live UI asks for) against the same backend in-process:
   - per call: the round trip of the smallest call (``count_tokens``);
   - per token: tokens/s of the long generation;
   - per node: a typical node call (a question with three demo passages, ~48 tokens out),
     over the same prompts on both sides. Target: overhead under 5% of the node's time.
Last line: one JSON object.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import llama_cpp  # noqa: E402,F401  (before numpy: see batched_decode.py)
from workbench.llm.base import GenParams  # noqa: E402
from workbench.llm.isolated import IsolatedBackend  # noqa: E402
from workbench.llm.llama_cpp_backend import LlamaCppBackend  # noqa: E402
from workbench.llm.registry import DEFAULT_MODEL, resolve  # noqa: E402

PROMPT = [{"role": "user", "content": "Write a long story about a film director who travels "
                                      "from London to Los Angeles to make a film."}]


def node_prompts(n: int) -> list[list[dict[str, str]]]:
    """Answer-with-passages prompts like a reasoning node's, from the demo world."""
    from workbench.datasets import load_dataset
    ds = load_dataset("demo")
    r = ds.retriever("bm25")
    out = []
    for q in [q for q in ds.questions if q.answerable][:n]:
        passages = "\n\n".join(f"[{i + 1}] {h.title}: {h.text}"
                               for i, h in enumerate(r.search(q.question, 3)))
        out.append([{"role": "system", "content": "Answer the question from the passages. "
                                                  "Think step by step, then give the answer."},
                    {"role": "user", "content": f"Passages:\n{passages}\n\nQuestion: {q.question}"}])
    return out


def gen_tok_s(be, tokens: int, stream: bool) -> float:
    kw = {"on_token": lambda t: None} if stream else {}
    c = be.generate(PROMPT, GenParams(max_tokens=tokens, temperature=0.0), **kw)
    return (c.completion_tokens - 1) / ((c.latency_ms - (c.prompt_eval_ms or 0.0)) / 1000.0)


def plain_tok_s(be: LlamaCppBackend, n: int) -> float:
    llm = be.llm
    prompt, _ = be.render(PROMPT)
    llm.reset()
    first, count = None, 0
    for _ in llm.create_completion(prompt, max_tokens=n, temperature=0.0, stream=True):
        count += 1
        if first is None:
            first = time.perf_counter()
    t1 = time.perf_counter()
    llm.reset()
    return (count - 1) / (t1 - first)


def timed(fn, *a, **kw) -> float:
    t0 = time.perf_counter()
    fn(*a, **kw)
    return (time.perf_counter() - t0) * 1000.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=8, help="node calls per side")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--n-gpu-layers", type=int, default=0, help="-1 offloads every layer")
    args = ap.parse_args()
    path = resolve(args.model)
    kw = dict(n_ctx=4096, n_threads=args.threads, n_gpu_layers=args.n_gpu_layers)
    local = LlamaCppBackend(path, **kw)
    iso = IsolatedBackend(path, **kw)
    sides = {"in_process": local, "isolated": iso}

    # 1. long generation; sides interleaved so drift in machine load hits both alike
    plain, gen = [], {k: [] for k in sides}
    for _ in range(args.repeats):
        for k, be in sides.items():
            gen[k].append(gen_tok_s(be, args.tokens, stream=(k == "isolated")))
        plain.append(plain_tok_s(local, args.tokens))
    p = max(plain)
    tok_s = {k: max(v) for k, v in gen.items()}

    # 2a. fixed cost of a call: the smallest round trip
    rt = {k: statistics.median(timed(be.count_tokens, "Who directed Inception?")
                               for _ in range(200)) for k, be in sides.items()}
    # 2b. a typical node call, same prompts on both sides
    prompts = node_prompts(args.nodes)
    params = GenParams(max_tokens=48, temperature=0.0)
    node = {k: [] for k in sides}
    for msgs in prompts:
        for k, be in sides.items():
            node[k].append(timed(be.generate, msgs, params))
    node_ms = {k: statistics.median(v) for k, v in node.items()}
    per_token_pct = 100.0 * (tok_s["in_process"] / tok_s["isolated"] - 1.0)
    node_pct = 100.0 * (node_ms["isolated"] / node_ms["in_process"] - 1.0)
    fixed_pct = 100.0 * (rt["isolated"] - rt["in_process"]) / node_ms["in_process"]

    info = local.info
    print(f"model: {info.name} ({info.quantization}), {args.tokens} tokens, best of {args.repeats}")
    print(f"plain create_completion (no logprobs):     {p:.1f} tok/s   {[round(x, 1) for x in plain]}")
    for k in sides:
        print(f"workbench backend, {k:10s} (logprobs): {tok_s[k]:.1f} tok/s   "
              f"{[round(x, 1) for x in gen[k]]}")
    print(f"logprob ratio (in-process / plain): {tok_s['in_process'] / p:.3f}  (target >= 0.90)")
    print(f"call round trip: in-process {rt['in_process']:.3f} ms, isolated {rt['isolated']:.3f} ms")
    print(f"node call ({len(prompts)} demo prompts, 48 tokens out), median: in-process "
          f"{node_ms['in_process']:.0f} ms, isolated {node_ms['isolated']:.0f} ms")
    print(f"isolation overhead: per call {rt['isolated'] - rt['in_process']:.3f} ms "
          f"({fixed_pct:.2f}% of a node call), per token {per_token_pct:.2f}%, per node call "
          f"{node_pct:.2f}%  (target < 5%)")
    iso.close()
    print(json.dumps({
        "plain_tok_s": round(p, 1), "logprob_tok_s": round(tok_s["in_process"], 1),
        "ratio": round(tok_s["in_process"] / p, 3), "isolated_tok_s": round(tok_s["isolated"], 1),
        "roundtrip_ms": {k: round(v, 3) for k, v in rt.items()},
        "node_ms": {k: round(v, 1) for k, v in node_ms.items()},
        "isolation_overhead_pct": {"per_call_fixed": round(fixed_pct, 2),
                                   "per_token": round(per_token_pct, 2),
                                   "per_node_call": round(node_pct, 2)},
        "tokens": args.tokens, "model": info.name, "n_gpu_layers": args.n_gpu_layers}))


if __name__ == "__main__":
    main()
