"""How many prompt tokens each prompt-cache budget would leave to evaluate, read from stored runs.

No model runs. The prompts of stored runs go, in the order they were sent, through the
prefix store's own bookkeeping (``PolicyReplay`` in llm/prefix_store.py: the same restore,
keep and eviction code as the llama.cpp backend, with no KV cells copied), once per
``--budgets`` value. For each budget it prints the fresh prompt tokens (those a call would
evaluate) per kind of call and in all, and their ratio to the first budget's, which is the
baseline of the same replay. On a CPU a fresh token costs about 15 ms with the default model
on 2 cores, a restored one next to nothing (docs/performance.md), and the output is the same
either way, so the fresh tokens are what the budget changes.

    python benchmarks/prefix_budget.py --method crp-rag [--dataset hotpot100]
        [--config tau_combine=0.8] [--since 2026-12-05T23:44] [--until ...]
        [--budgets 4096,8192,12288] [--model NAME]

Replay one backend's runs: both sides of an ``--old-vs-new`` pair ran on backends of their
own, so pick one side with ``--config``. Calls the in-run memo or ``--reuse-calls`` answered
reached no model and are left out; so are batched calls (``batch_size`` above 1), whose
group prefix the replay does not model (it says how many). ``--check`` also compares the
replay at the recorded runs' own budget with what each call recorded. The last line is JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import llama_cpp  # noqa: E402
from workbench.llm.prefix_store import DEFAULT_BUDGET_TOKENS, PolicyReplay  # noqa: E402
from workbench.llm.registry import resolve  # noqa: E402
from workbench.store import Store  # noqa: E402


def _when(s: str | None) -> float | None:
    if not s:
        return None
    t = datetime.fromisoformat(s)
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()


def stored_prompts(st: Store, method: str | None, dataset: str | None, config: dict,
                   since: float | None, until: float | None) -> tuple[list[dict], dict]:
    """The calls that reached a model, oldest run first, each with its run's model name."""
    runs = [r for r in st.list_runs(method=method, dataset=dataset, limit=1 << 31)
            if r["status"] != "running"
            and (since is None or r["created_at"] >= since)
            and (until is None or r["created_at"] <= until)
            and all(str((r["config"] or {}).get(k)) == v for k, v in config.items())]
    runs.sort(key=lambda r: r["created_at"])
    calls, left = [], {"runs": len(runs), "memo_or_replayed": 0, "batched": 0}
    for r in runs:
        for ev in st.events(r["run_id"]):
            d = ev.data
            if ev.type != "llm_call" or "prompt" not in d:
                continue
            if d.get("reused_from") or d.get("replayed_from"):
                left["memo_or_replayed"] += 1
            elif d.get("cache") == "batch" or d.get("batch"):
                left["batched"] += 1
            else:
                calls.append({"model": r["model_name"], "purpose": d.get("purpose") or "?",
                              "prompt": d["prompt"], "cached": d.get("cached_prompt_tokens")})
    return calls, left


def replay(token_lists: list[list[int]], purposes: list[str], budget: int) -> dict:
    store = PolicyReplay(budget)
    fresh, by_kind, served = 0, {}, []
    for toks, kind in zip(token_lists, purposes):
        cached, _ = store.call(toks)
        served.append(cached)
        fresh += len(toks) - cached
        by_kind[kind] = by_kind.get(kind, 0) + len(toks) - cached
    return {"budget_tokens": budget, "fresh_prompt_tokens": fresh, "by_kind": by_kind,
            "served": served}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", help="DuckDB file of the runs (default: the workbench's store)")
    ap.add_argument("--method")
    ap.add_argument("--dataset")
    ap.add_argument("--config", action="append", default=[], metavar="KNOB=VALUE",
                    help="only runs whose config has this value (repeatable)")
    ap.add_argument("--since", help="only runs created at or after this ISO time (UTC)")
    ap.add_argument("--until", help="only runs created at or before this ISO time (UTC)")
    ap.add_argument("--budgets", default=f"4096,{DEFAULT_BUDGET_TOKENS},12288")
    ap.add_argument("--model", help="tokenizer (default: the runs' model)")
    ap.add_argument("--check", type=int, metavar="BUDGET",
                    help="also say how many calls the replay at BUDGET serves differently "
                         "from what they recorded (the budget the runs ran with)")
    a = ap.parse_args()
    config = dict(kv.split("=", 1) for kv in a.config)
    calls, left = stored_prompts(Store(a.store) if a.store else Store(), a.method, a.dataset,
                                 config, _when(a.since), _when(a.until))
    if not calls:
        sys.exit("No stored calls match: check --store, --method, --config and the time window.")
    models = {c["model"] for c in calls}
    if len(models) > 1 and not a.model:
        sys.exit(f"The runs used several models ({', '.join(sorted(models))}): one backend "
                 f"runs one model, so pick its runs or name --model.")
    model = a.model or models.pop()
    tok = llama_cpp.Llama(str(resolve(model)), vocab_only=True, verbose=False)
    token_lists = [tok.tokenize(c["prompt"].encode("utf-8"), add_bos=True, special=True)
                   for c in calls]
    purposes = [c["purpose"] for c in calls]
    total = sum(len(t) for t in token_lists)
    print(f"{len(calls)} calls of {left['runs']} runs, {total} prompt tokens ({model}); left "
          f"out: {left['memo_or_replayed']} answered without the model, {left['batched']} "
          f"batched")
    budgets = [int(b) for b in a.budgets.split(",")]
    results = [replay(token_lists, purposes, b) for b in budgets]
    base = results[0]["fresh_prompt_tokens"]
    for r in results:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(r["by_kind"].items()))
        r["ratio"] = round(r["fresh_prompt_tokens"] / base, 3) if base else None
        print(f"budget {r['budget_tokens']:>6}: fresh prompt tokens {r['fresh_prompt_tokens']} "
              f"({r['fresh_prompt_tokens'] / total:.0%} of all; {r['ratio']}x budget "
              f"{budgets[0]}) | {kinds}")
    out = {"calls": len(calls), "runs": left["runs"], "prompt_tokens": total, "model": model,
           "left_out": {k: v for k, v in left.items() if k != "runs"},
           "budgets": [{k: v for k, v in r.items() if k != "served"} for r in results]}
    if a.check is not None:
        served = replay(token_lists, purposes, a.check)["served"]
        known = [(s, c["cached"]) for s, c in zip(served, calls) if c["cached"] is not None]
        out["check"] = {"budget_tokens": a.check, "calls": len(known),
                        "differ": sum(1 for s, c in known if s != c)}
        print(f"check at {a.check}: {out['check']['differ']} of {len(known)} calls served "
              f"differently from what they recorded")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
