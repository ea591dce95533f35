"""KG extraction (``kg build``) passages per second, decoded together vs one at a time.

Same backend and passages in one run: :func:`extract_passage` on each passage in turn,
then :func:`extract_passages` on groups of ``--batch``. Reports passages/s, the ratio,
triples per passage and parse failures on each side (llama.cpp's numbers change with the
group, so the triples need not match), and the projected time of the dataset's whole
corpus at each rate. The machine load is printed with the figures: the CPU may be shared.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.cpu_share import Meter, describe  # noqa: E402
from workbench.datasets import load_dataset  # noqa: E402
from workbench.knowledge.kg_build import extract_passage, extract_passages  # noqa: E402
from workbench.llm.llama_cpp_backend import LlamaCppBackend  # noqa: E402
from workbench.llm.registry import DEFAULT_MODEL, resolve  # noqa: E402


def _side(recs: list[dict], seconds: float) -> dict:
    return {"seconds": round(seconds, 1), "passages_per_s": round(len(recs) / seconds, 3),
            "triples_per_passage": round(sum(len(r["triples"]) for r in recs) / len(recs), 2),
            "parse_failures": sum(not r["ok"] for r in recs),
            "calls": sum(r["calls"] for r in recs)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="hotpot100")
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--passages", type=int, default=8)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    ds = load_dataset(args.dataset)
    corpus = list(ds.passages)
    ps = corpus[args.offset:args.offset + args.passages]
    be = LlamaCppBackend(resolve(args.model), n_ctx=4096, n_threads=args.threads,
                         max_batch=args.batch)
    extract_passage(be, corpus[-1], max_tokens=8)      # warm up: pages in the weights
    meter = Meter()
    t0 = time.perf_counter()
    one = [extract_passage(be, p) for p in ps]
    t1 = time.perf_counter()
    together = [r for i in range(0, len(ps), args.batch)
                for r in extract_passages(be, ps[i:i + args.batch])]
    t2 = time.perf_counter()
    seq, bat = _side(one, t1 - t0), _side(together, t2 - t1)
    ratio = bat["passages_per_s"] / seq["passages_per_s"]
    cpu_others = meter.share()
    print(f"{args.dataset}: {len(ps)} passages (of {len(corpus)}), model {args.model}, "
          f"batch {args.batch}")
    for name, side in (("one at a time", seq), (f"{args.batch} together", bat)):
        hours = len(corpus) / side["passages_per_s"] / 3600
        print(f"  {name:>14}: {side['passages_per_s']:.3f} passages/s, "
              f"{side['triples_per_passage']} triples/passage, {side['parse_failures']} parse "
              f"failures, {side['calls']} calls; whole corpus ~{hours:.1f} h")
    print(f"  ratio (together / one at a time): {ratio:.2f}x; "
          f"{describe(cpu_others)}")
    print(json.dumps({"benchmark": "kg_build_batch", "dataset": args.dataset,
                      "model": args.model, "passages": len(ps), "batch": args.batch,
                      "one_at_a_time": seq, "together": bat, "ratio": round(ratio, 2),
                      "cpu_others": cpu_others}))


if __name__ == "__main__":
    main()
