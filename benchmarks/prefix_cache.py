"""Prompt-processing time of a call that shares a 1,000-token prefix with the previous one.

Prints the second call's prompt-eval time over the first's. Target: <= 0.2.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.llm.base import GenParams  # noqa: E402
from workbench.llm.llama_cpp_backend import LlamaCppBackend  # noqa: E402
from workbench.llm.registry import DEFAULT_MODEL, resolve  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--prefix-tokens", type=int, default=1000)
    args = ap.parse_args()
    be = LlamaCppBackend(resolve(args.model), n_ctx=2048)
    # A shared system prompt of the requested length (passages, few-shot examples...).
    sentence = "The studio in Burbank released the film in 2010 after a long production. "
    text = ""
    while be.count_tokens(text) < args.prefix_tokens:
        text += sentence
    system = {"role": "system", "content": text}
    p = GenParams(max_tokens=1)
    be.llm.reset()
    first = be.generate([system, {"role": "user", "content": "Who released the film?"}], p)
    second = be.generate([system, {"role": "user", "content": "When was it released?"}], p)
    ratio = second.prompt_eval_ms / first.prompt_eval_ms
    print(f"shared prefix: {be.count_tokens(text)} tokens; prompts {first.prompt_tokens} and "
          f"{second.prompt_tokens} tokens")
    print(f"first call prompt eval:  {first.prompt_eval_ms:.1f} ms (cached {first.cached_prompt_tokens})")
    print(f"second call prompt eval: {second.prompt_eval_ms:.1f} ms (cached {second.cached_prompt_tokens})")
    print(f"ratio: {ratio:.3f}  (target <= 0.2)")
    print(json.dumps({"first_prompt_ms": round(first.prompt_eval_ms, 1),
                      "second_prompt_ms": round(second.prompt_eval_ms, 1),
                      "cached_tokens": second.cached_prompt_tokens, "ratio": round(ratio, 3)}))


if __name__ == "__main__":
    main()
