"""Failure triage on hand-built traces: every class, the breaking-node rule, gold marks,
question- and node-level recall, KG hops, decomposition steps, and the stored rows."""
from __future__ import annotations

import json

import pytest

from workbench import trace as T
from workbench.store import Store
from workbench.triage import CLASSES, triage
from workbench.triage import gold as G
from workbench.triage import store as TS

HOTPOT = {"id": "h1", "question": "Which director of Inception was born in London?",
          "answers": ["Christopher Nolan"], "aliases": [], "gold_titles": ["Inception", "London"],
          "meta": {"gold_passage_ids": ["p-inc", "p-lon"]}, "decomposition": []}


def hit(pid, title, rank=1, **meta):
    return {"id": pid, "title": title, "text": f"about {title}", "retriever": "bm25",
            "score": 1.0, "rank": rank, "meta": meta}


class Run:
    """A run written event by event, the way methods emit them."""

    def __init__(self, question=HOTPOT, text=None):
        self.clock = T.EventClock("run_t")
        self.events = []
        self.q = question
        self.text = text or question["question"]
        self.emit(T.Event(T.RUN_STARTED, {"question": self.text, "method": "m", "config": {},
                                          "gold": question}))
        self.emit(T.node_added("q", "question", self.text))

    def emit(self, ev):
        self.events.append(self.clock.stamp(ev))
        return self

    def node(self, nid, kind, text, parents, state="created", **attrs):
        return self.emit(T.node_added(nid, kind, text, parents=parents, state=state, **attrs))

    def retrieve(self, nid, query, hits, parents=("q",), kind="retrieval"):
        self.node(nid, kind, query, list(parents), query=query)
        return self.emit(T.Event(T.RETRIEVED, {"query": query, "retriever": "bm25", "k": 5,
                                               "hits": hits}, node_id=nid))

    def answer(self, text, parents, refused=False, status=None, **attrs):
        self.node("a", "refusal" if refused else "answer", text, parents,
                  state="refused" if refused else "answered", **attrs)
        self.emit(T.answer(text, refused=refused, node_id="a"))
        self.emit(T.Event(T.RUN_FINISHED, {"status": status or ("refused" if refused
                                                                  else "finished")}))
        return T.Trace.fold(self.events)


BOTH = [hit("p-inc", "Inception"), hit("p-lon", "London", 2)]


def test_correct_run_has_no_break_and_marks_the_gold_node():
    r = Run()
    r.retrieve("r1", HOTPOT["question"], BOTH + [hit("p-x", "Paris", 3)])
    t = triage(r.answer("Christopher Nolan", ["r1"]))
    assert t.failure_class == "correct" and t.break_node is None
    assert t.node_hops("r1") == [0, 1]
    assert {m["how"] for m in t.marks["r1"]} == {"id"}
    assert t.recall_node == 1.0 and t.recall_q == 1.0


def test_stored_verdict_decides_correct_and_answer_format_follows():
    r = Run()
    r.retrieve("r1", HOTPOT["question"], BOTH)
    tr = r.answer("It was Christopher Nolan, the director", ["r1"])
    assert triage(tr).failure_class == "correct"            # contains-gold when nothing stored
    t = triage(tr, correct=False)                            # an EM verdict that failed
    assert t.failure_class == "answer_format" and t.break_node == "a"
    # the short answer lost the gold, but the method's full output has it
    r = Run()
    r.retrieve("r1", HOTPOT["question"], [])
    tr = r.answer("Nolan's", ["r1"], full_answer="The answer is Christopher Nolan.")
    t = triage(tr)
    assert t.failure_class == "answer_format" and t.recall_node == 0.0


def test_reasoning_error_breaks_at_the_answer_or_at_a_rejecting_node_below_gold():
    r = Run()
    r.retrieve("r1", HOTPOT["question"], BOTH)
    t = triage(r.answer("Ridley Scott", ["r1"]))
    assert t.failure_class == "reasoning_error" and t.break_node == "a"
    assert "wrong" in t.break_why
    # PAR-RAG shape: retrieval -> read -> verify (failed) -> answer
    r = Run()
    r.retrieve("r1", "Who directed Inception?", BOTH)
    r.node("rd1", "read", "Ridley Scott", ["r1"], state="answered")
    r.node("vf1", "verify", "Review step 1", ["rd1"], state="failed_verification")
    t = triage(r.answer("Ridley Scott", ["vf1"]))
    assert t.failure_class == "reasoning_error"
    assert (t.break_node, t.break_kind) == ("vf1", "verify")


def test_wrong_refusal_breaks_at_the_insufficient_node_that_held_the_gold():
    r = Run()
    r.emit(T.node_added("s1", "step", "Find the director of Inception", parents=["q"]))
    r.emit(T.Event(T.RETRIEVED, {"query": "Find the director of Inception", "hits": BOTH},
                   node_id="s1"))
    r.emit(T.node_updated("s1", "insufficient"))
    r.emit(T.path_event("p1", ["q", "s1"], "pruned"))
    tr = r.answer("I refuse to answer", ["q"], refused=True, closest_path=["q", "s1"])
    t = triage(tr)
    assert t.failure_class == "wrong_refusal"
    assert (t.break_node, t.break_kind) == ("s1", "step")
    assert t.found_q is None and t.recall_q is None and t.recall_node == 1.0


def test_partial_retrieval_breaks_where_no_new_gold_was_found():
    # IRCoT shape: the second retrieval finds only what the first had
    r = Run()
    r.retrieve("r1", HOTPOT["question"], [hit("p-inc", "Inception")])
    r.node("t1", "thought", "Inception was directed by Nolan.", ["r1"])
    r.retrieve("r2", "Inception was directed by Nolan.", [hit("p-inc", "Inception")],
               parents=["t1"])
    r.node("t2", "thought", "So the answer is Paris.", ["r2"])
    t = triage(r.answer("Paris", ["t2"]))
    assert t.failure_class == "partial_retrieval"
    assert t.break_node == "r2" and "London" in t.break_why
    assert t.found_q == [0] and t.recall_q == 0.5 and t.recall_node == 0.5
    # one retrieval that found something new: the chain stopped after it
    r = Run()
    r.retrieve("r1", HOTPOT["question"], [hit("p-lon", "London")])
    t = triage(r.answer("Paris", ["r1"]))
    assert (t.failure_class, t.break_node) == ("partial_retrieval", "r1")
    assert "the chain stopped" in t.break_why


def test_no_gold_anywhere_is_a_miss_when_refused_and_a_hallucination_when_answered():
    r = Run()
    r.retrieve("r1", HOTPOT["question"], [hit("p-x", "Paris")])
    t = triage(r.answer("I don't know", ["r1"]))
    assert (t.failure_class, t.break_node) == ("retrieval_miss", "r1") and t.refused
    r = Run()
    r.retrieve("r1", HOTPOT["question"], [hit("p-x", "Paris")])
    t = triage(r.answer("Paris", ["r1"]))
    assert (t.failure_class, t.break_node) == ("hallucination", "r1")
    r = Run()                                               # the LLM alone
    t = triage(r.answer("Paris", ["q"]))
    assert (t.failure_class, t.break_node) == ("hallucination", "a")
    assert t.found_q is None and t.recall_node == 0.0


def test_a_refusal_flagged_by_the_method_counts_as_refused():
    r = Run()
    r.retrieve("r1", HOTPOT["question"], BOTH)
    t = triage(r.answer("not mentioned in the text", ["r1"], idk=True))
    assert t.failure_class == "wrong_refusal"


def test_untriaged_runs_say_why():
    r = Run({**HOTPOT, "answers": [], "answerable": False})
    assert "unanswerable" in triage(r.answer("x", ["q"])).reason
    r = Run({**HOTPOT, "gold_titles": [], "meta": {}})
    t = triage(r.answer("x", ["q"]))
    assert t.failure_class is None and "no gold evidence" in t.reason
    r = Run()
    r.emit(T.Event(T.RUN_FINISHED, {"status": "failed"}))
    assert "did not finish" in triage(T.Trace.fold(r.events)).reason
    r = Run()
    tr = r.answer("x", ["q"])
    tr.meta.pop("gold")
    assert "no gold" in triage(tr).reason


def test_answer_path_leaves_out_nodes_only_on_pruned_paths():
    r = Run()
    r.retrieve("s1", "Inception director", [hit("p-x", "Paris")], kind="step")
    r.retrieve("s2", "London birth", [hit("p-y", "Rome")], kind="step")
    r.emit(T.path_event("p1", ["q", "s1"], "selected"))
    r.emit(T.path_event("p2", ["q", "s2"], "pruned"))
    r.emit(T.edge_added("s2", "s1", "merge"))              # s2 is an ancestor of s1 too
    t = triage(r.answer("Paris", ["s1"]))
    assert t.path == ["q", "s1", "a"] and t.break_node == "s1"


KG_Q = {"id": "k1", "question": "Who directed Inception?", "answers": ["Christopher Nolan"],
        "gold_titles": ["Inception"],
        "gold_path": [["m.inception", "film.film.directed_by", "m.nolan"],
                      ["m.nolan", "people.person.place_of_birth", "m.london"]],
        "answer_entities": ["m.nolan"]}


def test_kg_hops_match_by_entity_pair_in_either_direction_and_skip_pruned_items():
    r = Run(KG_Q)
    r.node("st", "stage", "paths", ["q"])
    r.emit(T.Event(T.RETRIEVED, {"query": KG_Q["question"], "retriever": "kg", "hits": [
        {"id": "path1", "title": "2-hop path", "text": "...", "retriever": "kg", "rank": 1,
         "meta": {"triples": [["m.nolan", "film.director.films_directed", "m.inception"]]}},
        {"id": "x", "title": "r", "text": "...", "retriever": "kg", "rank": 2,
         "meta": {"kept": False, "triple": ["m.nolan", "people.person.place_of_birth",
                                            "m.london"]}}]}, node_id="st"))
    t = triage(r.answer("Ridley Scott", ["st"]))
    assert t.knowledge == "triples" and t.found == [0]
    assert t.marks["st"][0]["how"] == "entities"
    assert t.failure_class == "partial_retrieval" and t.break_node == "st"
    hop = G.Hop(0, "x", G.TRIPLES, triple=["m.a", "r", "m.b"])
    assert G.hop_matches(hop, {"meta": {"head": "m.a", "relation": "r", "tail": "m.b"}}) == "triple"
    # the same question run by a text method is judged on its gold titles
    r = Run(KG_Q)
    r.retrieve("r1", KG_Q["question"], [hit("p9", "Inception")])
    t = triage(r.answer("Christopher Nolan", ["r1"]))
    assert t.knowledge == "passages" and t.hops == ["Inception"] and t.gold_source == "gold_titles"


def test_answer_entities_are_the_hop_without_a_gold_path():
    q = {"id": "w1", "question": "what language is spoken in jamaica", "answers": ["English"],
         "answer_entities": ["Jamaican English"]}
    r = Run(q)
    r.node("kg", "retrieval", "kg", ["q"])
    r.emit(T.Event(T.RETRIEVED, {"query": "x", "retriever": "kg", "hits": [
        {"id": "t", "title": "lang", "text": "", "retriever": "kg", "rank": 1,
         "meta": {"triple": ["Jamaica", "location.country.languages_spoken",
                             "Jamaican English"]}}]}, node_id="kg"))
    t = triage(r.answer("Patois", ["kg"]))
    assert t.knowledge == "entities" and t.failure_class == "reasoning_error"


MUSIQUE = {"id": "2hop__1", "question": "Who founded the studio that made Spirited Away?",
           "answers": ["Hayao Miyazaki"],
           "decomposition": [
               {"question": "Which studio made Spirited Away?", "passage_id": "m-sa",
                "title": "Spirited Away"},
               {"question": "Who founded #1?", "passage_id": "m-gh", "title": "Studio Ghibli"}]}


def test_musique_hops_are_decomposition_steps_and_nodes_get_their_sub_question():
    r = Run(MUSIQUE)
    r.node("s1", "step", "Which studio made Spirited Away?", ["q"])
    r.retrieve("r1", "Which studio made Spirited Away?", [hit("m-sa", "Spirited Away")],
               parents=["s1"])
    r.node("s2", "step", "Who founded Studio Ghibli?", ["r1"])
    r.retrieve("r2", "Who founded Studio Ghibli?", [hit("m-zz", "Toho")], parents=["s2"])
    t = triage(r.answer("Toshio Suzuki", ["r2"]))
    assert t.gold_source == "decomposition" and t.hops == ["Spirited Away", "Studio Ghibli"]
    assert t.failure_class == "partial_retrieval" and t.break_node == "r2"
    assert t.steps["s1"]["step"] == 0 and t.steps["s1"]["score"] == 1.0
    assert t.steps["s2"]["step"] == 1 and t.steps["s2"]["matched"]
    assert t.steps["r2"]["step"] == 1
    assert "q" not in t.steps and "a" not in t.steps


def test_every_class_is_reachable_and_nothing_else():
    assert set(CLASSES) == {"correct", "retrieval_miss", "partial_retrieval", "reasoning_error",
                            "answer_format", "wrong_refusal", "hallucination"}


# ---------------------------------------------------------------- stored with the run

def _store_run(st, run, rid, correct=None, status="finished"):
    st.start_run({"run_id": rid, "method": "m", "question": run.text, "status": status,
                  "correct": correct})
    for e in run.events:
        e.run_id = rid
    st.add_events(run.events)


def test_old_runs_are_classified_when_first_opened_and_rows_follow_the_version(tmp_path,
                                                                               monkeypatch):
    st = Store(tmp_path / "s.duckdb")
    r = Run()
    r.retrieve("r1", HOTPOT["question"], [hit("p-inc", "Inception")])
    r.answer("Christopher Nolan", ["r1"])
    _store_run(st, r, "old", correct=False)               # stored verdict: wrong (EM, say)
    assert st.query("SELECT count(*) AS n FROM triage")[0]["n"] == 0
    t = TS.get(st, "old")
    assert t.failure_class == "answer_format" and t.node_hops("r1") == [0]
    row = st.query("SELECT * FROM triage WHERE run_id = 'old'")[0]
    assert row["failure_class"] == "answer_format" and row["hops"] == 2 and row["found"] == 1
    assert json.loads(row["detail"])["marks"]["r1"][0]["hit_id"] == "p-inc"
    assert TS.ensure(st, ["old"]) == 0                      # stored: nothing to redo
    monkeypatch.setattr(TS, "VERSION", 99)
    assert TS.ensure(st, ["old"]) == 1                      # new rules: recomputed
    st.delete_run("old")
    assert st.query("SELECT count(*) AS n FROM triage")[0]["n"] == 0


def test_labels_are_kept_apart_and_agreement_is_measured(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    for i, ans in enumerate(["Paris", "Rome", "Christopher Nolan"]):
        r = Run()
        r.retrieve("r1", HOTPOT["question"], [hit("p-x", "Paris")])
        r.answer(ans, ["r1"])
        _store_run(st, r, f"run{i}")
    TS.ensure(st)
    TS.set_label(st, "run0", "hallucination", "r1", "ana")
    TS.set_label(st, "run1", "reasoning_error", "a", "ana")
    with pytest.raises(ValueError, match="unknown failure class"):
        TS.set_label(st, "run2", "bad_luck")
    a = TS.agreement(st)
    assert a["n_labels"] == 2 and a["class_agreement"] == 0.5 and a["node_agreement"] == 0.5
    assert TS.get(st, "run1").failure_class == "hallucination"     # suggestion unchanged
    assert TS.get_label(st, "run1")["failure_class"] == "reasoning_error"


def test_a_v3_store_migrates_with_a_backup_and_its_runs_are_triaged_on_first_open(tmp_path):
    import duckdb
    from workbench.store import _MIGRATIONS, SCHEMA_VERSION
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    for v in (1, 2, 3):
        for sql in _MIGRATIONS[v]:
            con.execute(sql)
    con.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    con.close()
    r = Run()
    r.retrieve("r1", HOTPOT["question"], [hit("p-x", "Paris")])
    r.answer("Paris", ["r1"])
    with duckdb.connect(str(path)) as con:           # a run written by the v3 workbench
        from workbench.store import event_rows
        con.execute("INSERT INTO runs (run_id, status, question) VALUES ('v3run', 'finished', 'q')")
        for e in r.events:
            e.run_id = "v3run"
        for row in event_rows(r.events)[0]:
            con.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)", list(row))
    st = Store(path)
    assert st.schema_version() == SCHEMA_VERSION >= 7      # v7: runs.parent_run_id
    assert (tmp_path / "old.duckdb.v3.bak").exists()
    t = TS.get(st, "v3run")
    assert (t.failure_class, t.break_node) == ("hallucination", "r1")
