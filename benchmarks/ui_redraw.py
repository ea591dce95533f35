"""UI cost of a live redraw and time-to-first-node.

Measures, for synthetic traces of 100 and 300 nodes (scores, evidence, LLM calls,
paths, merges):
  * Python cost of one redraw: incremental fold of new events + build_view (layout,
    colours, escaped labels and tooltips) — what the Ask page does every ~0.4 s;
  * the JSON size sent to the graph component per redraw;
  * a what-if recomputation (threshold move) on the same trace;
  * in headless Chromium (if /usr/bin/chromium exists): vis-network's in-place update
    of the component for the whole graph;
and the time from starting a run to its first node through the UI's LiveBatch
(scripted backend; ``--real`` uses the configured model and the demo world).

Prints figures, then one JSON object as the last line.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench import trace as T  # noqa: E402
from workbench.viz import whatif as wi  # noqa: E402
from workbench.viz.graph import build_view, graph_html  # noqa: E402


def synthetic_events(n: int) -> list[T.Event]:
    clock = T.EventClock("run_bench")
    evs = [T.Event(T.RUN_STARTED, {"question": "Who directed the film?", "method": "bench",
                                   "config": {"tau": 3.0},
                                   "thresholds": {"perplexity": ["tau", "lower"]}})]
    evs.append(T.node_added("n0", "question", "Who directed the film that won in 2011?"))
    for i in range(1, n):
        parents = [f"n{(i - 1) // 3}"] + ([f"n{i - 2}"] if i % 7 == 0 and i > 2 else [])
        evs.append(T.node_added(f"n{i}", "step", f"Step {i}: find the <b>entity</b> & its "
                                f"relation number {i} in the corpus", parents=parents,
                                layer=int(math.log(i + 1, 3)), merged_from=["a", "b"] if i % 9 == 0 else None))
        evs.append(T.Event(T.RETRIEVED, {"query": f"q{i}", "retriever": "bm25", "k": 3, "hits": [
            {"id": f"p{i}{j}", "title": f"T{j}", "text": "passage text " * 20, "retriever": "bm25",
             "score": 3.0 - j, "rank": j + 1, "meta": {}} for j in range(3)]}, node_id=f"n{i}"))
        evs.append(T.Event(T.LLM_CALL, {"prompt": "p " * 200, "output": "answer " * 10,
                                        "tokens": [[k, " tok", -0.3, None] for k in range(10)],
                                        "prompt_tokens": 200, "completion_tokens": 10,
                                        "latency_ms": 120.0, "scores": {"perplexity": 1.35}},
                           node_id=f"n{i}", llm_call_id=f"c{i}"))
        evs.append(T.node_scored(f"n{i}", {"perplexity": 1.0 + (i % 10) / 2.0}, {"perplexity": 3.0}))
        evs.append(T.node_updated(f"n{i}", "sufficient" if i % 10 < 4 else "insufficient"))
    for p in range(min(n // 3, 40)):
        evs.append(T.path_event(f"p{p}", ["n0", f"n{p + 1}"], "selected" if p % 2 else "pruned"))
    return [clock.stamp(e) for e in evs]


def bench_redraw(n: int, reps: int = 5) -> dict:
    evs = synthetic_events(n)
    # the live loop: events arrive in batches; every redraw folds the new ones and rebuilds
    tr = T.Trace()
    per = max(1, len(evs) // 20)
    costs = []
    for i in range(0, len(evs), per):
        t0 = time.perf_counter()
        for e in evs[i:i + per]:
            tr.apply(e)
        data = build_view(tr)
        costs.append((time.perf_counter() - t0) * 1000)
    full = []
    for _ in range(reps):
        t0 = time.perf_counter()
        data = build_view(tr)
        full.append((time.perf_counter() - t0) * 1000)
    sent = {"nodes": [{k: v for k, v in x.items() if k != "title"} for x in data["nodes"]],
            "edges": [{k: v for k, v in x.items() if k != "title"} for x in data["edges"]]}
    payload = len(json.dumps(sent))         # what the component receives per redraw
    spec = wi.threshold_specs(tr)[0]
    t0 = time.perf_counter()
    w = wi.apply(tr, spec, 2.2)
    build_view(tr, whatif=w)
    whatif_ms = (time.perf_counter() - t0) * 1000
    return {"nodes": len(tr.nodes), "edges": len(tr.edges),
            "redraw_ms_max": round(max(costs), 2), "redraw_ms_median": round(statistics.median(costs), 2),
            "build_view_full_ms": round(statistics.median(full), 2),
            "payload_kb": round(payload / 1024, 1), "whatif_ms": round(whatif_ms, 2),
            "_data": data}


def bench_browser(data: dict) -> dict | None:
    chromium = "/usr/bin/chromium"
    if not Path(chromium).exists():
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    import tempfile
    html = graph_html({**data, "nodes": data["nodes"][:1], "edges": []})
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False) as f:
        f.write(html)
        path = f.name
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox",
                                                                "--disable-gpu"])
        pg = b.new_page(viewport={"width": 1280, "height": 800})
        pg.goto(Path(path).as_uri())
        pg.wait_for_function("window.wbNetwork !== undefined")
        ms = pg.evaluate("""(d) => { const t0 = performance.now();
            const g = new WbGraph(document.getElementById('wb-graph'), null, D.options, null);
            g.update({nodes: d.nodes, edges: d.edges, fit: true});
            g.network.redraw(); const t1 = performance.now();
            const n2 = d.nodes.slice(); n2[n2.length - 1] = Object.assign({}, n2[n2.length - 1], {label: 'changed'});
            g.update({nodes: n2, edges: d.edges});   // steady state: one node changed
            g.network.redraw(); return [t1 - t0, performance.now() - t1]; }""",
                         {"nodes": data["nodes"], "edges": data["edges"]})
        b.close()
    os.unlink(path)
    return {"first_draw_ms": round(ms[0], 1), "update_ms": round(ms[1], 1)}


def bench_first_node(real: bool) -> dict:
    os.environ.setdefault("WORKBENCH_HOME", str(Path("/tmp") / "wb-bench-home"))
    from workbench import settings as settings_mod
    from workbench.ui import backend, live
    from workbench.ui import data as uidata
    s = settings_mod.load()
    if not real:
        s.backend = "scripted"
    s.retriever = "bm25"
    llm = backend.get_llm(s)
    ds = uidata.get_dataset(s.dataset)
    qs = uidata.questions(ds)
    q = qs[0]
    methods = [m for m in ("standard-rag", "crp-rag", "par-rag") if m in uidata.method_classes()]
    out = {}
    for m in methods:
        # warm-up run: dataset, retriever index, embedder, prompt cache
        b = live.LiveBatch([live.Job(m)], q.question, question_id=q.id, dataset=s.dataset,
                           llm=llm, store=None, settings=s).start()
        b.join(600)
        b = live.LiveBatch([live.Job(m)], q.question, question_id=q.id, dataset=s.dataset,
                           llm=llm, store=None, settings=s)
        t0 = time.perf_counter()
        b.start()
        while b.jobs[0].first_node_s is None and b.running:
            time.sleep(0.005)
        first = time.perf_counter() - t0
        b.stop()
        b.join(600)
        out[m] = round(first, 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--real", action="store_true", help="first node with the configured model")
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    res: dict = {}
    for n in (100, 300):
        r = bench_redraw(n)
        data = r.pop("_data")
        if not args.no_browser:
            br = bench_browser(data)
            if br:
                r.update({f"browser_{k}": v for k, v in br.items()})
        res[f"graph_{n}"] = r
        print(f"{n} nodes: redraw (fold + build_view) median {r['redraw_ms_median']} ms, "
              f"max {r['redraw_ms_max']} ms; payload {r['payload_kb']} KB; what-if "
              f"{r['whatif_ms']} ms" + (f"; browser first draw {r.get('browser_first_draw_ms')} ms, "
                                          f"update {r.get('browser_update_ms')} ms"
                                          if 'browser_update_ms' in r else ""))
    try:
        res["first_node_s"] = bench_first_node(args.real)
        print(f"time to first node ({'real model' if args.real else 'scripted backend'}): "
              f"{res['first_node_s']}")
    except Exception as e:      # noqa: BLE001 - e.g. the demo world is not built
        res["first_node_error"] = f"{type(e).__name__}: {e}"
        print("first node: skipped:", res["first_node_error"])
    print(json.dumps(res))


if __name__ == "__main__":
    main()
