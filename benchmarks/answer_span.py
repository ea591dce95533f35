"""Answer-span extraction alone: how often the extraction call (methods/answer_span.py, its
shipped prompt and grammar) reads the right short answer out of a long one, on hand-written
(question, long answer, span) cases about the demo world, with the call's latency. Cases cover
names, a place, a year, a number word, yes/no, a comparison, long answers that do not answer
(span "unknown") and debris a small model leaves (a trailing dash, a cut-off name).

    python benchmarks/answer_span.py [--model smollm2-135m] [--shots 0|all]

``--shots 0`` runs the same system prompt without its few-shot turns. Prints one row per case
and, as its last line, one JSON object of the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from workbench.llm.base import GenParams  # noqa: E402
from workbench.llm.registry import load_backend  # noqa: E402
from workbench.methods import answer_span as S  # noqa: E402
from workbench.methods.answers import normalize_answer  # noqa: E402
from workbench.methods.prompts import answer_span as P  # noqa: E402
from workbench.methods.prompts import chat  # noqa: E402

CASES = [
    ("Who directed Inception?", "Inception (2010) was directed by Christopher Nolan.",
     "Christopher Nolan"),
    ("Where was the director of Inception born?",
     "Christopher Nolan, who directed Inception, was born in London.", "London"),
    ("Which film was released first, Inception or Interstellar?",
     "Inception came out in 2010 and Interstellar in 2014, so Inception was first.",
     "Inception"),
    ("In what year was Interstellar released?", "Interstellar was released in 2014.", "2014"),
    ("On which date was Interstellar first shown?",
     "Interstellar premiered on October 26, 2014, in Los Angeles.", "October 26, 2014"),
    ("Is Interstellar a science fiction film?",
     "Yes, Interstellar is a science fiction film directed by Christopher Nolan.", "yes"),
    ("Who composed the music of Inception?",
     "The passages do not mention who composed the music.", "unknown"),
    ("Which studio produced Spirited Away?",
     "Spirited Away was produced by Studio Ghibli in Tokyo.", "Studio Ghibli"),
    ("Who directed Inception?", "Inception (2010) was directed by Christopher Nolan. -",
     "Christopher Nolan"),
    ("Where was the director of Inception born?",
     "Inception (2010) was a film by Joseph Gordon-Lev", "unknown"),
    ("How many Academy Awards did Inception win?",
     "Inception won four Academy Awards, for its cinematography, sound and effects.", "four"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m", help="bundled model name or .gguf path")
    ap.add_argument("--shots", choices=["0", "all"], default="all")
    args = ap.parse_args()
    be = load_backend(model=args.model)
    shots = P.SHOTS if args.shots == "all" else []
    right, parsed, ms = 0, 0, []
    for q, long_answer, gold in CASES:
        t0 = time.perf_counter()
        comp = be.generate(chat(P.SYSTEM, shots, P.user(q, long_answer)),
                           GenParams(max_tokens=S.MAX_TOKENS, temperature=0.0,
                                     json_schema=P.SCHEMA))
        ms.append((time.perf_counter() - t0) * 1000)
        span, _ = S.parse(comp.text)
        ok = span is not None and normalize_answer(span) == normalize_answer(gold)
        right += ok
        parsed += span is not None
        print(f"{'ok' if ok else '--'} {gold!r:22s} <- {comp.text!r}", flush=True)
    fig = {"model": args.model, "shots": args.shots, "prompt_version": P.VERSION,
           "n": len(CASES), "exact": right, "parsed": parsed,
           "median_ms": round(statistics.median(ms), 1)}
    print(f"{right}/{len(CASES)} exact, {parsed} parsed, median {fig['median_ms']} ms per call")
    print(json.dumps(fig))


if __name__ == "__main__":
    main()
