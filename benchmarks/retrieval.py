"""Knowledge-layer benchmark: BM25 latency vs rank-bm25, recall on HotpotQA-100, dense
encoding throughput and cache reload, KG load time and memory at 1M triples.

    python benchmarks/retrieval.py [--passages 100000] [--no-dense] [--no-kg] [--home DIR]

Prints its figures, then as its LAST line one JSON object with them (units in the names).
Runs in a temporary WORKBENCH_HOME unless --home is given (to reuse cached embeddings).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def pct(xs, q):
    return float(np.percentile(np.asarray(xs), q))


def say(msg: str) -> None:
    print(msg, flush=True)


# ------------------------------------------------------------------ corpus synthesis

def hotpot_paths():
    from workbench import paths
    d = paths.shared_data_dir()
    if d is None or not (d / "hotpotqa-100" / "questions.json").is_file():
        return None
    return d / "hotpotqa-100"


def synth_passages(n: int, seed: int = 0):
    """n passages sampled from the HotpotQA-100 corpus's word distribution (deterministic).

    Lengths follow the real paragraphs' length distribution; each passage mixes words
    from a few topic paragraphs with background words, so queries have realistic
    postings-list lengths.
    """
    from workbench.datasets.base import Passage
    hp = hotpot_paths()
    if hp is not None:
        corpus = json.loads((hp / "corpus.json").read_text())
        paras = ["".join(s).split() for s in corpus.values()]
    else:   # no shared data: a fixed synthetic vocabulary
        rng0 = np.random.default_rng(1)
        vocab0 = [f"w{i}" for i in range(30000)]
        paras = [[vocab0[int(x)] for x in rng0.zipf(1.3, 70) % 30000] for _ in range(1000)]
    counts = Counter(w for p in paras for w in p)
    vocab = list(counts)
    prob = np.array([counts[w] for w in vocab], dtype=np.float64)
    prob /= prob.sum()
    lens = np.array([len(p) for p in paras])
    rng = np.random.default_rng(seed)
    out = []
    bg = rng.choice(len(vocab), size=n * 40, p=prob)
    pos = 0
    for i in range(n):
        L = int(max(8, rng.choice(lens)))
        topic = paras[int(rng.integers(len(paras)))]
        k_topic = L // 2
        words = [topic[int(j)] for j in rng.integers(0, len(topic), size=k_topic)]
        k_bg = L - k_topic
        if pos + k_bg > len(bg):
            pos = 0
        words += [vocab[int(j)] for j in bg[pos:pos + k_bg]]
        pos += k_bg
        out.append(Passage(id=f"s{i}", title=f"Synthetic {i}", text=" ".join(words)))
    return out


def queries(n: int):
    hp = hotpot_paths()
    if hp is not None:
        qs = [q["question"] for q in json.loads((hp / "questions.json").read_text())]
    else:
        qs = [f"w{i} w{i * 7 % 3000} w{i * 13 % 3000}" for i in range(100)]
    return (qs * (n // len(qs) + 1))[:n]


# ------------------------------------------------------------------ parts

def bench_bm25(n_passages: int, n_queries: int, n_ref_queries: int) -> dict:
    from rank_bm25 import BM25Okapi

    from workbench.knowledge.bm25 import BM25Retriever
    from workbench.knowledge.text import tokenize
    say(f"== BM25 over {n_passages:,} synthetic passages")
    t0 = time.perf_counter()
    passages = synth_passages(n_passages)
    say(f"synthesised in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    r = BM25Retriever(passages)
    build_s = time.perf_counter() - t0
    say(f"workbench engine (scipy CSC, okapi k1=1.5 b=0.75): built in {build_s:.2f} s, "
        f"vocab {len(r.index.vocab):,}, postings {r.index.W.nnz:,}, "
        f"{r.index.nbytes() / 1e6:.1f} MB")
    qs = queries(n_queries)
    for q in qs[:5]:
        r.search(q, 10)                      # warm-up
    lat = []
    for q in qs:
        t = time.perf_counter()
        r.search(q, 10)
        lat.append((time.perf_counter() - t) * 1000)
    p50, p95 = pct(lat, 50), pct(lat, 95)
    say(f"workbench search(k=10), tokenising included: p50 {p50:.2f} ms, p95 {p95:.2f} ms "
        f"over {len(qs)} queries")

    t0 = time.perf_counter()
    toks = [tokenize(r.doc_text(p)) for p in passages]
    ref = BM25Okapi(toks)
    ref_build = time.perf_counter() - t0
    say(f"rank-bm25 BM25Okapi built in {ref_build:.1f} s")
    ref_lat, max_diff, same_top = [], 0.0, 0
    for q in qs[:n_ref_queries]:
        qt = tokenize(q)
        t = time.perf_counter()
        s_ref = ref.get_scores(qt)
        ref_lat.append((time.perf_counter() - t) * 1000)
        s_wb = r.index.scores(qt)
        max_diff = max(max_diff, float(np.max(np.abs(s_ref - s_wb) / np.maximum(1, np.abs(s_ref)))))
        top_ref = set(np.argsort(-s_ref, kind="stable")[:10].tolist())
        top_wb = {int(i) for i in r.index.top_k(qt, 10)[0]}
        same_top += int(top_ref == top_wb)
    rp50, rp95 = pct(ref_lat, 50), pct(ref_lat, 95)
    say(f"rank-bm25 get_scores: p50 {rp50:.1f} ms, p95 {rp95:.1f} ms over "
        f"{len(ref_lat)} queries")
    say(f"speed-up at p50: {rp50 / p50:.1f}x; scores agree to {max_diff:.1e} (relative), "
        f"identical top-10 sets on {same_top}/{len(ref_lat)} queries")
    del ref, toks
    gc.collect()
    return {"bm25_passages": n_passages, "bm25_build_s": round(build_s, 3),
            "bm25_p50_ms": round(p50, 3), "bm25_p95_ms": round(p95, 3),
            "rank_bm25_p50_ms": round(rp50, 2), "rank_bm25_p95_ms": round(rp95, 2),
            "rank_bm25_build_s": round(ref_build, 2),
            "bm25_speedup_p50_x": round(rp50 / p50, 1),
            "bm25_max_rel_score_diff": float(f"{max_diff:.2e}"),
            "bm25_top10_agree_frac": round(same_top / max(1, len(ref_lat)), 3)}


def recall(ds, retriever, ks=(2, 5, 10)) -> dict[int, float]:
    tot = {k: 0.0 for k in ks}
    for q in ds.questions:
        got = [h.title for h in retriever.search(q.question, max(ks))]
        gold = set(q.gold_titles)
        for k in ks:
            tot[k] += len(gold & set(got[:k])) / len(gold)
    return {k: v / len(ds.questions) for k, v in tot.items()}


def bench_recall(with_dense: bool) -> dict:
    from workbench.datasets import import_dataset, load_dataset
    from workbench.knowledge import dense as D
    from workbench.knowledge.hybrid import DEFAULT_RRF_K, HybridRetriever
    hp = hotpot_paths()
    if hp is None:
        say("== recall: ../shared/data/hotpotqa-100 is absent, skipped")
        return {}
    say("== Recall of supporting paragraphs, HotpotQA-100 (994-paragraph corpus)")
    import_dataset("hotpotqa", hp, "hotpotqa-100", replace=True)
    ds = load_dataset("hotpotqa-100")
    out: dict = {}
    b = ds.retriever("bm25")
    rows = {"bm25": recall(ds, b)}
    if with_dense:
        t0 = time.perf_counter()
        emb = D.get_embedder()
        load_s = time.perf_counter() - t0
        cache = D.cache_path(ds.corpus_hash, emb)
        cache.unlink(missing_ok=True)
        d = ds.retriever("dense")
        enc_s = d.info["seconds"]
        pps = len(ds.passages) / enc_s
        t0 = time.perf_counter()
        again = D.DenseRetriever(ds.passages, emb, corpus_hash=ds.corpus_hash)
        reload_ms = (time.perf_counter() - t0) * 1000
        assert again.info["cached"], "the embedding cache was not reused"
        say(f"dense: model load {load_s:.1f} s; encoded {len(ds.passages)} passages in "
            f"{enc_s:.1f} s = {pps:.1f} passages/s; cached index reload {reload_ms:.1f} ms")
        qlat = []
        for q in ds.questions[:30]:
            t = time.perf_counter()
            d.search(q.question + " ", 10)       # a new string: not memoised
            qlat.append((time.perf_counter() - t) * 1000)
        out.update(dense_model_load_s=round(load_s, 2), dense_encode_passages_per_s=round(pps, 1),
                   dense_encode_s=round(enc_s, 2), dense_cache_reload_ms=round(reload_ms, 2),
                   dense_query_p50_ms=round(pct(qlat, 50), 2))
        rows["dense"] = recall(ds, d)
        h = ds.retriever("hybrid")
        rows["hybrid"] = recall(ds, h)
        sweep = {}
        for rk in (10, 30, 60, 100):
            sweep[f"rrf k={rk}"] = recall(ds, HybridRetriever([b, d], rrf_k=rk))
        for w in ((0.5, 0.5), (0.4, 0.6), (0.6, 0.4)):
            sweep[f"weighted {w[0]}/{w[1]}"] = recall(
                ds, HybridRetriever([b, d], fusion="weighted", weights=w))
    say(f"{'retriever':22s} R@2    R@5    R@10")
    for name, rc in rows.items():
        say(f"{name:22s} {rc[2]:.3f}  {rc[5]:.3f}  {rc[10]:.3f}")
        for k in (2, 5, 10):
            out[f"recall@{k}_{name}"] = round(rc[k], 3)
    if with_dense:
        say(f"hybrid = RRF, k={DEFAULT_RRF_K:g}, equal weights (the default). Sweep:")
        for name, rc in sweep.items():
            say(f"  {name:20s} {rc[2]:.3f}  {rc[5]:.3f}  {rc[10]:.3f}")
        best = max(rows["bm25"][5], rows["dense"][5])
        ok = rows["hybrid"][5] >= best
        say(f"hybrid R@5 {rows['hybrid'][5]:.3f} vs best single {best:.3f}: "
            f"{'not worse' if ok else 'WORSE'}")
        out["hybrid_r5_not_worse"] = bool(ok)
    return out


def _rss_mb() -> float:
    import psutil
    return psutil.Process().memory_info().rss / 1e6


def kg_load_child(directory: str) -> None:
    """Run in a fresh process: load the graph and report time and memory."""
    gc.collect()
    import networkx  # noqa: F401  (imports are not the graph's memory)
    import pyarrow.parquet  # noqa: F401

    import pyarrow as pa

    from workbench.knowledge.kg import KnowledgeGraph
    # warm pyarrow's readers and thread pool on a tiny file, so the figure is the graph's
    with tempfile.TemporaryDirectory() as td:
        pyarrow.parquet.write_table(pa.table({"x": [1, 2]}), f"{td}/w.parquet")
        pyarrow.parquet.read_table(f"{td}/w.parquet")
    gc.collect()
    base = _rss_mb()
    t0 = time.perf_counter()
    kg = KnowledgeGraph.load(directory)
    load_s = time.perf_counter() - t0
    after_load = _rss_mb()
    t0 = time.perf_counter()
    nb = kg.neighbors("e17")
    first_ms = (time.perf_counter() - t0) * 1000
    after_index = _rss_mb()
    lat = []
    for i in range(50):
        t = time.perf_counter()
        g = kg.neighborhood([f"e{i * 997}"], 2, max_nodes=500)
        lat.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    paths_ = kg.simple_paths("e1", None, 2, limit=200)
    sp_ms = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    pr = kg.ppr(["e1", "e2"], top_k=20)
    ppr_ms = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    links = kg.link_entities("what is the capital of Entity 4242 and Entity 17?", k=5)
    link_ms = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    links = kg.link_entities("what is the capital of Entity 4243 and Entity 18?", k=5)
    link2_ms = (time.perf_counter() - t) * 1000
    print(json.dumps({"kg_load_s": round(load_s, 3),
                      "kg_load_rss_mb": round(after_load - base, 1),
                      "kg_first_lookup_ms": round(first_ms, 1),
                      "kg_rss_after_index_mb": round(after_index - base, 1),
                      "kg_neighborhood_2hop_p50_ms": round(pct(lat, 50), 2),
                      "kg_simple_paths_ms": round(sp_ms, 2), "kg_ppr_full_ms": round(ppr_ms, 1),
                      "kg_link_first_ms": round(link_ms, 1), "kg_link_ms": round(link2_ms, 2),
                      "_check": [len(nb), g.number_of_nodes(), len(paths_), len(pr),
                                 links[:2]]}))


def bench_kg(n_triples: int, workdir: Path) -> dict:
    from workbench.knowledge.kg import KnowledgeGraph
    say(f"== KG: synthetic graph of {n_triples:,} triples")
    rng = np.random.default_rng(0)
    n_ent = max(10, n_triples // 5)
    # preferential-attachment-like degrees: a few hubs, a long tail
    h = (rng.zipf(1.6, n_triples) - 1) % n_ent
    t = rng.integers(0, n_ent, n_triples)
    perm = rng.permutation(n_ent)
    h = perm[h]
    r = rng.integers(0, 500, n_triples)
    ids = [f"e{i}" for i in range(n_ent)]
    names = [f"Entity {i}" for i in range(n_ent)]
    rels = [f"rel.domain{i % 20}.relation_{i}" for i in range(500)]
    t0 = time.perf_counter()
    kg = KnowledgeGraph.from_arrays(ids, rels, h, r, t, names=names)
    d = kg.save(workdir / "kg1m")
    save_s = time.perf_counter() - t0
    disk = sum(f.stat().st_size for f in d.iterdir())
    say(f"saved {n_ent:,} entities / {n_triples:,} triples in {save_s:.1f} s, "
        f"{disk / 1e6:.1f} MB on disk")
    del kg, ids, names
    gc.collect()
    res = subprocess.run([sys.executable, __file__, "--kg-load-child", str(d)],
                         capture_output=True, text=True, cwd=str(ROOT))
    if res.returncode != 0:
        say(res.stderr[-2000:])
        raise RuntimeError("KG load child failed")
    m = json.loads(res.stdout.strip().splitlines()[-1])
    m.pop("_check", None)
    say(f"load (fresh process): {m['kg_load_s']:.2f} s, +{m['kg_load_rss_mb']:.0f} MB RSS; "
        f"first lookup (id index + CSR adjacency) {m['kg_first_lookup_ms']:.0f} ms, "
        f"+{m['kg_rss_after_index_mb']:.0f} MB total")
    say(f"2-hop neighbourhood (max 500 nodes) p50 {m['kg_neighborhood_2hop_p50_ms']:.1f} ms; "
        f"simple paths (len<=2, 200) {m['kg_simple_paths_ms']:.1f} ms; full-graph PPR "
        f"{m['kg_ppr_full_ms']:.0f} ms; entity linking first {m['kg_link_first_ms']:.0f} ms "
        f"(builds name index), then {m['kg_link_ms']:.1f} ms")
    return {"kg_triples": n_triples, "kg_entities": n_ent, "kg_save_s": round(save_s, 2),
            "kg_disk_mb": round(disk / 1e6, 1), **m}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--ref-queries", type=int, default=30,
                    help="queries timed on rank-bm25 (about 0.2 s each at 100k)")
    ap.add_argument("--kg-triples", type=int, default=1_000_000)
    ap.add_argument("--no-dense", action="store_true", help="skip dense/hybrid (saves ~40 s)")
    ap.add_argument("--no-kg", action="store_true", help="skip the large-KG figures")
    ap.add_argument("--home", help="WORKBENCH_HOME to use (default: a temporary folder)")
    ap.add_argument("--kg-load-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.kg_load_child:
        kg_load_child(args.kg_load_child)
        return 0
    tmp = tempfile.TemporaryDirectory(prefix="wb-bench-")
    os.environ["WORKBENCH_HOME"] = args.home or tmp.name
    t_all = time.perf_counter()
    figures: dict = {}
    figures.update(bench_bm25(args.passages, args.queries, args.ref_queries))
    figures.update(bench_recall(not args.no_dense))
    if not args.no_kg:
        figures.update(bench_kg(args.kg_triples, Path(tmp.name)))
    figures["bm25_target_met"] = bool(figures["bm25_p50_ms"] <= 20
                                      and figures["bm25_speedup_p50_x"] >= 10)
    figures["total_s"] = round(time.perf_counter() - t_all, 1)
    say(f"== done in {figures['total_s']:.0f} s")
    print(json.dumps(figures))
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
