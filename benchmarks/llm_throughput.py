"""Tokens/s of plain generation vs the workbench backend with per-token logprobs.

Same model, prompt and number of tokens; greedy decoding with EOS ignored on
the plain side is not available, so both sides generate a fixed count by
using the workbench's own token budget and a prompt that elicits long output.
Target: logprob_tok_s / plain_tok_s >= 0.90.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.llm.base import GenParams  # noqa: E402
from workbench.llm.llama_cpp_backend import LlamaCppBackend  # noqa: E402
from workbench.llm.registry import DEFAULT_MODEL, resolve  # noqa: E402

PROMPT = [{"role": "user", "content": "Write a long story about a film director who travels "
                                      "from London to Los Angeles to make a film."}]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    be = LlamaCppBackend(resolve(args.model), n_ctx=2048)
    llm = be.llm
    prompt, _ = be.render(PROMPT)
    plain, ours = [], []
    for _ in range(args.repeats):
        # workbench backend: logprobs and entropy for every token
        c = be.generate(PROMPT, GenParams(max_tokens=args.tokens, temperature=0.0))
        n = c.completion_tokens
        gen_ms = c.latency_ms - (c.prompt_eval_ms or 0.0)
        ours.append((n - 1) / (gen_ms / 1000.0))
        # plain llama-cpp-python create_completion, no logprobs, same token count
        llm.reset()
        t0 = time.perf_counter()
        first = None
        count = 0
        for chunk in llm.create_completion(prompt, max_tokens=n, temperature=0.0, stream=True):
            count += 1
            if first is None:
                first = time.perf_counter()
        t1 = time.perf_counter()
        plain.append((count - 1) / (t1 - first))
        llm.reset()
    p, o = max(plain), max(ours)
    print(f"model: {be.info.name} ({be.info.quantization}), {args.tokens} tokens, best of {args.repeats}")
    print(f"plain create_completion (no logprobs): {p:.1f} tok/s   runs: {[round(x, 1) for x in plain]}")
    print(f"workbench backend (logprobs+entropy):  {o:.1f} tok/s   runs: {[round(x, 1) for x in ours]}")
    print(f"ratio: {o / p:.3f}  (target >= 0.90)")
    print(json.dumps({"plain_tok_s": round(p, 1), "logprob_tok_s": round(o, 1),
                      "ratio": round(o / p, 3), "tokens": n}))


if __name__ == "__main__":
    main()
