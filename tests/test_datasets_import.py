"""Importers on the real shared samples and on small files in each dataset's layout;
malformed input (file:line messages, --on-error skip|stop, nothing half-written)."""
from __future__ import annotations

import bz2
import json
from pathlib import Path

import pytest

from workbench import datasets as D
from workbench import paths
from workbench.datasets import ImportProblem, import_dataset, list_datasets, load_dataset

SHARED = paths.shared_data_dir()
HOTPOT = SHARED / "hotpotqa-100" if SHARED else None
CRAG = SHARED / "crag-sample" / "dev_data.jsonl.bz2" if SHARED else None
needs_hotpot = pytest.mark.skipif(not (HOTPOT and (HOTPOT / "questions.json").is_file()),
                                  reason="../shared/data/hotpotqa-100 is absent (a user's clone)")
needs_crag = pytest.mark.skipif(not (CRAG and CRAG.is_file()),
                                reason="../shared/data/crag-sample is absent (a user's clone)")


def leftovers():
    root = D.datasets_root()
    return [p.name for p in root.iterdir() if p.name.startswith(".")]


def write_jsonl(path: Path, rows, raw_lines=()):
    lines = [json.dumps(r) for r in rows] + list(raw_lines)
    path.write_text("\n".join(lines) + "\n")
    return path


# ------------------------------------------------------------------ real samples

@needs_hotpot
def test_hotpotqa_real_sample():
    m = import_dataset("hotpotqa", HOTPOT)
    assert m["name"] == "hotpotqa-100" and m["kind"] == "hotpotqa"
    assert m["counts"]["questions"] == 100 and m["counts"]["passages"] == 994
    assert m["corpus_hash"] and m["skipped"] == 0
    ds = load_dataset("hotpotqa-100")
    assert ds is load_dataset("hotpotqa-100")
    raw = json.loads((HOTPOT / "questions.json").read_text())[0]
    q = ds.question(raw["_id"])
    assert q.question == raw["question"] and q.answers == [raw["answer"]]
    assert q.type == raw["type"] and q.meta["level"] == raw["level"] and q.hops == 2
    assert q.gold_titles == list(dict.fromkeys(t for t, _ in raw["supporting_facts"]))
    assert len(q.meta["context_ids"]) == len(raw["context"])
    titles = {p.title for p in ds.passages}
    assert all(t in titles for qq in ds.questions for t in qq.gold_titles)
    p = ds.passage(q.gold_titles[0])
    assert p is not None and p.text == "".join(dict(raw["context"])[p.title]).strip()
    assert [x.id for x in ds.context_passages(q)] == q.meta["context_ids"]
    # BM25 finds gold paragraphs; the retriever is cached per process and on disk
    r = ds.retriever("bm25")
    assert r is ds.retriever("bm25") and r.cache_path.is_file()
    hits = r.search(q.question, 10)
    assert hits and hits[0].rank == 1 and set(q.gold_titles) & {h.title for h in hits}
    assert ds.kg() is None and not ds.has_kg
    names = [d["name"] for d in list_datasets()]
    assert "hotpotqa-100" in names


@needs_crag
def test_crag_real_sample():
    m = import_dataset("crag", CRAG, "crag", chunk_words=120, chunk_overlap=20)
    assert m["counts"]["questions"] == 10 and m["counts"]["passages"] > 100
    assert m["info"]["pages"] == 50
    ds = load_dataset("crag")
    with bz2.open(CRAG, "rt") as f:
        raw = json.loads(f.readline())
    q = ds.question(raw["interaction_id"])
    for k in ("domain", "question_type", "static_or_dynamic", "query_time"):
        assert q.meta[k] == raw[k]
    assert q.answers == [raw["answer"]] and q.type == raw["question_type"]
    ctx = ds.context_passages(q)
    assert ctx and all(p.meta["question_id"] == q.id for p in ctx)
    for p in ds.passages:
        assert len(p.text.split()) <= 120
        assert "<script" not in p.text.lower() and "</div>" not in p.text.lower()
    hits = ds.retriever("bm25").search(q.question, 5)
    assert hits and hits[0].meta == {}


# ------------------------------------------------------------------ each layout

def test_2wiki(tmp_path):
    rec = {"_id": "w1", "type": "compositional", "question": "Who is the father of X's director?",
           "context": [["Film X", ["Film X is directed by Ann.", " It is old."]],
                       ["Ann", ["Ann is the daughter of Bob."]]],
           "supporting_facts": [["Film X", 0], ["Ann", 0]],
           "evidences": [["Film X", "director", "Ann"], ["Ann", "father", "Bob"]],
           "answer": "Bob"}
    f = tmp_path / "dev.json"
    f.write_text(json.dumps([rec, {**rec, "_id": "w2"}], indent=1))
    m = import_dataset("2wiki", f, "tw", evidence_kg=True)
    assert m["counts"] == {"questions": 2, "passages": 2, "entities": 3, "triples": 2,
                           "relations": 2}
    ds = load_dataset("tw")
    q = ds.question("w1")
    assert q.gold_path == [["Film X", "director", "Ann"], ["Ann", "father", "Bob"]]
    assert q.hops == 2 and q.gold_titles == ["Film X", "Ann"] and q.answers == ["Bob"]
    assert ds.kg().has_triple("Ann", "father", "Bob")
    # the Hugging Face layout of the same record
    hf = {**rec, "_id": "w3", "context": {"title": ["Film X", "Ann"],
                                          "sentences": [["Film X is directed by Ann."],
                                                        ["Ann is the daughter of Bob."]]},
          "supporting_facts": {"title": ["Film X", "Ann"], "sent_id": [0, 0]}}
    write_jsonl(tmp_path / "hf.jsonl", [hf])
    m2 = import_dataset("2wiki", tmp_path / "hf.jsonl", "tw-hf")
    assert m2["counts"]["questions"] == 1 and m2["counts"]["triples"] == 0


def test_musique_with_decomposition(tmp_path):
    rec = {"id": "2hop__1_2", "question": "Who founded the label of Song Y?", "answer": "Zed",
           "answer_aliases": ["Z."], "answerable": True,
           "paragraphs": [{"idx": 0, "title": "Noise", "paragraph_text": "Unrelated.",
                           "is_supporting": False},
                          {"idx": 1, "title": "Song Y", "paragraph_text": "Song Y is on Lbl.",
                           "is_supporting": True},
                          {"idx": 2, "title": "Lbl", "paragraph_text": "Lbl was founded by Zed.",
                           "is_supporting": True}],
           "question_decomposition": [
               {"id": 1, "question": "Song Y >> record label", "answer": "Lbl",
                "paragraph_support_idx": 1},
               {"id": 2, "question": "#1 >> founded by", "answer": "Zed",
                "paragraph_support_idx": 2}]}
    f = write_jsonl(tmp_path / "musique_ans_v1.0_dev.jsonl", [rec])
    import_dataset("musique", f, "mq")
    q = load_dataset("mq").question("2hop__1_2")
    assert q.hops == 2 and q.type == "2hop" and q.aliases == ["Z."]
    assert [d["answer"] for d in q.decomposition] == ["Lbl", "Zed"]
    assert [d["passage_id"] for d in q.decomposition] == ["Song Y", "Lbl"]
    assert q.gold_titles == ["Song Y", "Lbl"] and q.gold_answers == ["Zed", "Z."]


def _rog_rows():
    return [{"id": "WebQTest-1", "question": "what is the capital of norvania",
             "answer": ["Tessaly"], "q_entity": ["Norvania"], "a_entity": ["Tessaly"],
             "graph": [["Norvania", "location.country.capital", "Tessaly"],
                       ["Tessaly", "location.location.containedby", "Norvania"]]},
            {"id": "WebQTest-2", "question": "who directed glass harbor",
             "answer": ["Ilse Varga"], "q_entity": ["Glass Harbor"], "a_entity": ["Ilse Varga"],
             "graph": [["Glass Harbor", "film.film.directed_by", "Ilse Varga"],
                       ["Norvania", "location.country.capital", "Tessaly"]]}]


def test_webqsp_rog_jsonl(tmp_path):
    f = write_jsonl(tmp_path / "test.jsonl", _rog_rows())
    m = import_dataset("webqsp", f, "wq")
    assert m["counts"]["questions"] == 2 and m["counts"]["triples"] == 3      # merged, deduped
    assert m["counts"]["passages"] == 0 and m["info"]["graph_triples_read"] == 4
    ds = load_dataset("wq")
    q = ds.question("WebQTest-1")
    assert q.topic_entities == ["Norvania"] and q.answer_entities == ["Tessaly"]
    kg = ds.kg()
    assert kg is ds.kg() and kg.has_triple("Glass Harbor", "film.film.directed_by", "Ilse Varga")
    assert kg.shortest_paths("Norvania", ["Tessaly"])["Tessaly"]
    with pytest.raises(LookupError, match="no passages"):
        ds.retriever("bm25")
    bad = {"id": "b", "question": "q", "graph": [["Orphan", "r", "X"], ["only", "two"]]}
    f2 = write_jsonl(tmp_path / "test2.jsonl", _rog_rows() + [bad])
    with pytest.raises(ImportProblem, match=r"test2\.jsonl:3: graph triple 1"):
        import_dataset("webqsp", f2, "wq2")
    m2 = import_dataset("webqsp", f2, "wq2", on_error="skip")
    assert m2["counts"]["questions"] == 2 and m2["counts"]["entities"] == 4
    assert "Orphan" not in load_dataset("wq2").kg()


def test_cwq_rog_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    rows = _rog_rows()
    rows.append({"id": "bad", "question": "broken graph", "answer": ["x"], "q_entity": [],
                 "a_entity": [], "graph": [["only", "two"]]})
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "test-00000.parquet")
    with pytest.raises(ImportProblem, match=r"test-00000\.parquet:row 3"):
        import_dataset("cwq", tmp_path, "cq")
    assert not (D.datasets_root() / "cq").exists() and leftovers() == []
    m = import_dataset("cwq", tmp_path, "cq", on_error="skip")
    assert m["counts"]["questions"] == 2 and m["counts"]["triples"] == 3 and m["skipped"] == 1
    kg = load_dataset("cq").kg()
    assert kg.has_triple("Norvania", "location.country.capital", "Tessaly")
    assert "only" not in kg


def test_fever_claims_and_corpus(tmp_path):
    claims = [{"id": 75397, "verifiable": "VERIFIABLE", "label": "SUPPORTS",
               "claim": "Nikolaj Coster-Waldau worked with the Fox Broadcasting Company.",
               "evidence": [[[92206, 104971, "Nikolaj_Coster-Waldau", 7],
                             [92206, 104971, "Fox_Broadcasting_Company", 0]]]},
              {"id": 1, "verifiable": "NOT VERIFIABLE", "label": "NOT ENOUGH INFO",
               "claim": "Something unknowable.", "evidence": [[[1, None, None, None]]]}]
    pages = [{"id": "Nikolaj_Coster-Waldau", "text": "Nikolaj Coster-Waldau is a Danish actor ."},
             {"id": "Fox_Broadcasting_Company", "text": "The Fox Broadcasting Company -LRB- FOX "
                                                        "-RRB- is an American network ."},
             {"id": "", "text": ""}]
    write_jsonl(tmp_path / "wiki-001.jsonl", pages)
    f = write_jsonl(tmp_path / "shared_task_dev.jsonl", claims)
    m = import_dataset("fever", f, "fv", corpus=str(tmp_path / "wiki-001.jsonl"))
    assert m["counts"]["questions"] == 2 and m["counts"]["passages"] == 2
    ds = load_dataset("fv")
    q = ds.question("75397")
    assert q.answers == ["SUPPORTS"] and q.type == "claim"
    assert q.gold_titles == ["Nikolaj Coster-Waldau", "Fox Broadcasting Company"]
    assert ds.question("1").gold_titles == []


def test_generic_jsonl_folder_and_file(tmp_path):
    write_jsonl(tmp_path / "questions.jsonl", [
        {"id": "a", "question": "Who directed Inception?", "answer": "Christopher Nolan",
         "hops": 1, "topic_entities": ["inception"], "domain": "film"},
        {"question": "No id here", "answers": ["x", "y"]}])
    write_jsonl(tmp_path / "passages.jsonl", [
        {"id": "p1", "title": "Inception", "text": "Inception was directed by Christopher Nolan.",
         "year": 2010}])
    write_jsonl(tmp_path / "entities.jsonl", [{"id": "inception", "name": "Inception"},
                                              {"id": "nolan", "name": "Christopher Nolan"}])
    write_jsonl(tmp_path / "triples.jsonl", [{"head": "inception", "relation": "directed_by",
                                              "tail": "nolan"}])
    m = import_dataset("jsonl", tmp_path, "gen")
    assert m["counts"] == {"questions": 2, "passages": 1, "entities": 2, "triples": 1,
                           "relations": 1}
    ds = load_dataset("gen")
    a = ds.question("a")
    assert a.answers == ["Christopher Nolan"] and a.meta["domain"] == "film" and a.hops == 1
    assert ds.questions[1].id == "q2" and ds.questions[1].answers == ["x", "y"]
    assert ds.passages[0].meta == {"year": 2010}
    assert ds.kg().name("nolan") == "Christopher Nolan"
    m2 = import_dataset("jsonl", tmp_path / "questions.jsonl", "gen-q")
    assert m2["counts"]["questions"] == 2 and m2["counts"]["passages"] == 0


# ------------------------------------------------------------------ malformed input

def test_malformed_jsonl_stop_names_file_and_line(tmp_path):
    f = write_jsonl(tmp_path / "q.jsonl", [{"id": "1", "question": "fine?"}],
                    raw_lines=['{"id": "2", "question": "broken', '{"id": "3"}',
                               json.dumps({"id": "4", "question": "fine too"})])
    with pytest.raises(ImportProblem) as ei:
        import_dataset("jsonl", f, "bad")
    assert f"{f}:2:" in str(ei.value) and "not valid JSON" in str(ei.value)
    assert not (D.datasets_root() / "bad").exists() and leftovers() == []
    assert "bad" not in [d["name"] for d in list_datasets()]


def test_malformed_jsonl_skip_goes_on(tmp_path):
    f = write_jsonl(tmp_path / "q.jsonl", [{"id": "1", "question": "fine?"}],
                    raw_lines=['{"id": "2", "question": "broken', '{"id": "3"}', '[1, 2]',
                               json.dumps({"id": "1", "question": "duplicate id"}),
                               json.dumps({"id": "4", "question": "fine too"})])
    seen = []
    m = import_dataset("jsonl", f, "bad", on_error="skip", echo=seen.append)
    assert m["counts"]["questions"] == 2 and m["skipped"] == 4
    msgs = m["problems"]
    assert msgs[0].startswith(f"{f}:2:") and "not valid JSON" in msgs[0]
    assert msgs[1].startswith(f"{f}:3:") and "question" in msgs[1]
    assert msgs[2].startswith(f"{f}:4:") and "JSON object" in msgs[2]
    assert msgs[3].startswith(f"{f}:5:") and "duplicate" in msgs[3]
    assert len(seen) == 4
    assert [q.id for q in load_dataset("bad").questions] == ["1", "4"]


def test_malformed_json_array_items_have_line_numbers(tmp_path):
    good = {"_id": "a", "question": "q?", "answer": "x", "context": [["T", ["s."]]],
            "supporting_facts": [["T", 0]]}
    bad = {"_id": "b", "answer": "x", "context": [["T", ["s."]]]}     # no question
    f = tmp_path / "hp.json"
    f.write_text(json.dumps([good, bad, {**good, "_id": "c"}], indent=2))
    with pytest.raises(ImportProblem) as ei:
        import_dataset("hotpotqa", f, "hp")
    text = f.read_text().splitlines()
    start_b = [i for i, ln in enumerate(text, 1) if ln.strip() == "{"][1]
    assert f"{f}:{start_b}:" in str(ei.value) and "question" in str(ei.value)
    m = import_dataset("hotpotqa", f, "hp", on_error="skip")
    assert m["counts"]["questions"] == 2 and m["skipped"] == 1


def test_truncated_json_stops_even_when_skipping(tmp_path):
    f = tmp_path / "hp.json"
    f.write_text('[\n {"_id": "a", "question": "q?", "context": []},\n {"_id": "b", "quest')
    for mode in ("stop", "skip"):
        with pytest.raises(ImportProblem, match=rf"{f.name}:3:.*must parse whole"):
            import_dataset("hotpotqa", f, "hp", on_error=mode)
    assert leftovers() == [] and not (D.datasets_root() / "hp").exists()


def test_failed_replace_keeps_the_old_dataset(tmp_path):
    f = write_jsonl(tmp_path / "q.jsonl", [{"id": "1", "question": "v1?"}])
    import_dataset("jsonl", f, "keep")
    with pytest.raises(FileExistsError):
        import_dataset("jsonl", f, "keep")
    bad = write_jsonl(tmp_path / "q2.jsonl", [{"id": "1", "question": "v2?"}], ["{oops"])
    with pytest.raises(ImportProblem):
        import_dataset("jsonl", bad, "keep", replace=True)
    assert load_dataset("keep").questions[0].question == "v1?" and leftovers() == []
    good = write_jsonl(tmp_path / "q3.jsonl", [{"id": "1", "question": "v3?"}])
    import_dataset("jsonl", good, "keep", replace=True)
    assert load_dataset("keep").questions[0].question == "v3?" and leftovers() == []


def test_interrupted_import_leaves_nothing(tmp_path, monkeypatch):
    f = write_jsonl(tmp_path / "q.jsonl", [{"id": "1", "question": "q?"}])
    import workbench.datasets.io as dio

    def dies(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(D, "write_jsonl", dies)
    with pytest.raises(KeyboardInterrupt):
        import_dataset("jsonl", f, "int")
    assert leftovers() == [] and not (D.datasets_root() / "int").exists()
    assert dio.write_jsonl is not dies


def test_bad_names_and_kinds(tmp_path):
    f = write_jsonl(tmp_path / "q.jsonl", [{"id": "1", "question": "q?"}])
    with pytest.raises(ValueError, match="built-in"):
        import_dataset("jsonl", f, "demo")
    with pytest.raises(ValueError, match="dataset name"):
        import_dataset("jsonl", f, "../escape")
    with pytest.raises(ValueError, match="unknown dataset kind"):
        import_dataset("nope", f)
    with pytest.raises(FileNotFoundError):
        import_dataset("jsonl", tmp_path / "missing.jsonl")
    with pytest.raises(LookupError, match="no dataset"):
        load_dataset("never-imported")
    empty = write_jsonl(tmp_path / "e.jsonl", [], ['{"id": 1}'])
    with pytest.raises(ImportProblem, match="nothing to import"):
        import_dataset("jsonl", empty, "e", on_error="skip")
