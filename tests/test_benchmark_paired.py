"""benchmarks/_paired.py: the method benchmarks' paired differences to standard RAG, against
every standard RAG series an eval ran (one per retriever, say), not only a lone default."""
from __future__ import annotations

import importlib.util
from pathlib import Path

SPEC = importlib.util.spec_from_file_location(
    "bench_paired", Path(__file__).resolve().parents[1] / "benchmarks" / "_paired.py")
paired = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(paired)

F1_HYBRID = [1.0, 1.0, 0.0, 1.0, 0.5, 1.0]
F1_DENSE = [1.0, 0.0, 0.0, 1.0, 0.5, 0.0]
F1_CRP = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]


def _series(f1: list[float], retrieval: str) -> tuple[dict, dict]:
    return {"retrieval": retrieval}, {"accuracy": [float(v == 1.0) for v in f1], "token_f1": f1}


def test_a_method_is_read_against_each_standard_rag_series(capsys):
    named = {"standard-rag [retriever=hybrid]": _series(F1_HYBRID, "hybrid"),
             "standard-rag [retriever=dense]": _series(F1_DENSE, "dense"),
             "crp-rag": _series(F1_CRP, "dense")}
    figures = {k: v[0] for k, v in named.items()}
    per_q = {k: v[1] for k, v in named.items()}
    paired.paired_differences(figures, per_q)
    out = capsys.readouterr().out
    crp = figures["crp-rag"]
    assert crp["vs_standard-rag [retriever=hybrid]"]["token_f1"][0] == round(
        (sum(F1_CRP) - sum(F1_HYBRID)) / 6, 3)
    assert crp["vs_standard-rag [retriever=dense]"]["token_f1"][0] == round(
        (sum(F1_CRP) - sum(F1_DENSE)) / 6, 3)
    # the two baselines are compared once (the retriever's own effect), not both ways
    assert "vs_standard-rag [retriever=hybrid]" in figures["standard-rag [retriever=dense]"]
    assert not any(k.startswith("vs_") for k in figures["standard-rag [retriever=hybrid]"])
    assert "(retrieved differently: dense vs hybrid)" in out
    assert "(same retriever: dense)" in out


def test_a_lone_standard_rag_keeps_its_plain_key(capsys):
    figures = {"standard-rag": {"retrieval": "hybrid"}, "crp-rag": {"retrieval": "dense"},
               "vanilla": {"retrieval": "none"}}
    per_q = {"standard-rag": _series(F1_HYBRID, "")[1], "crp-rag": _series(F1_CRP, "")[1],
             "vanilla": _series(F1_DENSE, "")[1]}
    paired.paired_differences(figures, per_q)
    out = capsys.readouterr().out
    assert set(figures["crp-rag"]) == {"retrieval", "vs_standard-rag"}
    assert "vs_standard-rag" in figures["vanilla"]
    assert out.count("paired difference against") == 1
    vanilla_line = next(ln for ln in out.splitlines() if ln.strip().startswith("vanilla"))
    assert "retriev" not in vanilla_line and "same retriever" not in vanilla_line


def test_no_standard_rag_means_no_paired_lines(capsys):
    figures = {"crp-rag": {"retrieval": "dense"}}
    paired.paired_differences(figures, {"crp-rag": _series(F1_CRP, "")[1]})
    assert capsys.readouterr().out == ""
    assert figures == {"crp-rag": {"retrieval": "dense"}}
