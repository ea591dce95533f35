"""Baselines (vanilla, standard-rag, ircot) and the shared helpers, with the scripted backend."""
from __future__ import annotations

import json

from workbench import config as cfgmod
from workbench.commands.methods import cmd_methods
from workbench.config import knobs
from workbench.knowledge.types import Hit
from workbench.llm.scripted import ScriptedBackend
from workbench.methods import all_methods, get_method
from workbench.methods.base import RunContext
from workbench.methods.answers import contains_gold, extract_answer, is_unknown, parse_citations
from workbench.methods.graph import trace_problems
from workbench.methods.passages import format_passages
from workbench.methods.baselines import prompts as P
from workbench.execution import run_to_end

Q = "Where was the director of Spirited Away born?"


class TinyRetriever:
    name = "bm25"

    def __init__(self):
        self.queries = []

    def search(self, query, k=5):
        self.queries.append(query)
        n = len(self.queries)
        return [Hit(f"d{n}.{i}", f"T{n}.{i}", f"text {n}.{i}", "bm25", 1.0 / i, i)
                for i in range(1, k + 1)]


def run(name, be, overrides=None):
    m = get_method(name)
    r = TinyRetriever()
    ctx = RunContext(llm=be, config=cfgmod.build(m.Config, overrides or {}),
                     retrievers={"bm25": r}, extra={"default_retriever": "bm25"})
    return run_to_end(m, ctx, Q), r


def test_vanilla_is_one_call():
    be = ScriptedBackend().add(P.VANILLA_TAG, "Tokyo.")
    tr, r = run("vanilla", be)
    assert tr.answer["text"] == "Tokyo" and len(tr.llm_calls) == 1 and r.queries == []
    assert [n.kind for n in tr.nodes.values()] == ["question", "answer"]
    assert not trace_problems(tr)


def test_standard_rag_retrieves_once_and_answers():
    be = ScriptedBackend().add(P.RAG_TAG, "Tokyo")
    tr, r = run("standard-rag", be, {"top_k": 4})
    assert r.queries == [Q] and len(tr.llm_calls) == 1
    ret = next(n for n in tr.nodes.values() if n.kind == "retrieval")
    assert len(ret.evidence[0]["hits"]) == 4 and ret.state == "retrieved"
    assert "text 1.4" in next(iter(tr.llm_calls.values()))["prompt"]
    assert not trace_problems(tr)
    assert tr.nodes[tr.answer["node_id"]].scores["perplexity"] > 0


def test_ircot_retrieves_with_each_sentence_and_stops_at_the_answer():
    be = ScriptedBackend()
    be.add(P.IRCOT_TAG, "Spirited Away was directed by Hayao Miyazaki. Extra.", times=1)
    be.add(P.IRCOT_TAG, f"He was born in Tokyo. {P.LEADIN} Tokyo")
    tr, r = run("ircot", be)
    assert r.queries == [Q, "Spirited Away was directed by Hayao Miyazaki."]
    assert tr.answer["text"] == "Tokyo"
    kinds = [n.kind for n in tr.nodes.values()]
    assert kinds == ["question", "retrieval", "thought", "retrieval", "thought", "answer"]
    assert not trace_problems(tr)
    # the second thought saw the passages of both retrievals
    second = [c for c in tr.llm_calls.values() if c["purpose"] == "cot"][1]
    assert "text 2.1" in second["prompt"] and "text 1.1" in second["prompt"]


def test_ircot_step_limit_then_reader():
    be = ScriptedBackend()
    be.add(P.IRCOT_TAG, "Still thinking.")
    be.add(P.IRCOT_READ_TAG, f"{P.LEADIN} Tokyo")
    tr, r = run("ircot", be, {"max_steps": 2})
    assert len(r.queries) == 2          # question + one sentence (no retrieval after the last)
    assert [c["purpose"] for c in tr.llm_calls.values()] == ["cot", "cot", "answer"]
    assert tr.answer["text"] == "Tokyo"
    stop = next(e for e in tr.log if e["type"] == "ircot_stopped")
    assert stop["data"]["reason"] == "step limit"


def test_helpers():
    assert extract_answer("Reasoning... So the answer is: Tokyo.") == "Tokyo"
    assert extract_answer("Hayao Miyazaki [1][2].\nmore") == "Hayao Miyazaki"
    assert parse_citations("a [1], b [2, 3] [7]", 3) == ([1, 2, 3], ["citation [7] is out of "
                                                                     "range 1..3"])
    assert is_unknown("UNKNOWN") and is_unknown("The knowledge does not mention it.")
    assert not is_unknown("Studio Ghibli")
    assert contains_gold("It was the Studio Ghibli.", ["studio ghibli"])
    assert not contains_gold("Ghibli", ["Studio Ghibli"])
    assert format_passages([]) == "(no passages)"


def test_every_method_has_knobs_with_descriptions_and_valid_defaults(capsys):
    ms = all_methods()
    for name in ("crp-rag", "par-rag", "vanilla", "standard-rag", "ircot"):
        cls = ms[name]
        cfg = cfgmod.build(cls.Config, {})          # defaults pass their own range checks
        for k in knobs(cls.Config):
            assert k.description, (name, k.name)
            cfgmod.coerce(k, getattr(cfg, k.name))
    assert ms["crp-rag"].thresholds == {"perplexity": ("tau_ppl", "lower")}
    assert ms["par-rag"].thresholds == {"C": ("ct", "higher")}
    abl = {k.name for k in knobs(ms["crp-rag"].Config) if k.ablation}
    assert {"no_aggregation", "no_evaluation", "no_iterative_reasoning", "structure"} <= abl
    abl = {k.name for k in knobs(ms["par-rag"].Config) if k.ablation}
    assert {"no_plan", "no_review"} <= abl

    class A:
        name, json = None, True
    assert cmd_methods(A()) == 0
    listed = {m["name"] for m in json.loads(capsys.readouterr().out)}
    assert {"crp-rag", "par-rag", "vanilla", "standard-rag", "ircot"} <= listed


def test_cli_ask_prints_answer_phases_and_stores_the_run(monkeypatch, tmp_path, capsys):
    import workbench.workspace as ws
    from workbench.cli import main
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    be = ScriptedBackend().add(P.RAG_TAG, "Tokyo")

    def fake_build(method, *, llm, dataset=None, overrides=None, seed=None, question_id=None):
        m = get_method(method)
        return m, RunContext(llm=be, config=cfgmod.build(m.Config, overrides),
                             retrievers={"bm25": TinyRetriever()},
                             extra={"default_retriever": "bm25"})
    monkeypatch.setattr(ws, "build_context", fake_build)
    monkeypatch.setattr("workbench.commands.methods.backend_from_args", lambda a: be)
    assert main(["ask", Q, "--method", "standard-rag", "--set", "top_k=2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "Answer: Tokyo" in out and "\nanswer " in out and "wall" in out
    from workbench.store import Store
    runs = Store().list_runs(method="standard-rag")
    assert runs and runs[0]["answer"] == "Tokyo" and runs[0]["config"]
    assert main(["ask", Q, "--method", "standard-rag", "--json"]) == 0
    tr = json.loads(capsys.readouterr().out)
    assert tr["answer"]["text"] == "Tokyo" and tr["nodes"] and tr["edges"]
    assert main(["ask", Q, "--method", "standard-rag", "--set", "top_k=999"]) == 2
    assert "top_k" in capsys.readouterr().err


# --- passage context by relevance (the same budget as the old head cut) ---

TOTORO = ("Directed by Hayao Miyazaki, My Neighbor Totoro is a Japanese animated fantasy film "
          "released in 1988. Two young sisters who move to the countryside with their father "
          "befriend Totoro, a large forest spirit who later became the studio's mascot. It was "
          "first shown in Japanese cinemas as a double feature with Grave of the Fireflies. "
          "Joe Hisaishi wrote the music, and Studio Ghibli handled the release.")
STUDIO_Q = "Which studio produced My Neighbor Totoro?"


class TotoroRetriever(TinyRetriever):
    def search(self, query, k=5):
        self.queries.append(query)
        return [Hit("p42", "My Neighbor Totoro", TOTORO, "bm25", 2.0, 1),
                Hit("p7", "Toei Company", "Toei Company is a Japanese film studio.", "bm25", 1.0, 2)][:k]


def _totoro(name, be, overrides=None):
    m = get_method(name)
    ctx = RunContext(llm=be, config=cfgmod.build(m.Config, overrides or {}),
                     retrievers={"bm25": TotoroRetriever()}, extra={"default_retriever": "bm25"})
    return run_to_end(m, ctx, STUDIO_Q)


def test_standard_rag_reads_the_relevant_sentences_within_its_budget_and_records_the_cut():
    tr = _totoro("standard-rag", ScriptedBackend().add(P.RAG_TAG, "Studio Ghibli"))
    prompt = next(iter(tr.llm_calls.values()))["prompt"]
    assert "Studio Ghibli handled the release." in prompt and "double feature" not in prompt
    assert "- My Neighbor Totoro: " in prompt                       # the title is kept
    ret = next(n for n in tr.nodes.values() if n.kind == "retrieval")
    rec = ret.attrs["context"]
    assert (rec["mode"], rec["budget"]) == ("relevance", 320) and ret.attrs["context_budget"] == 320
    assert [p["id"] for p in rec["passages"]] == ["p42"]
    assert "double feature" in " ".join(s for s, k in rec["passages"][0]["segments"] if not k)
    old = _totoro("standard-rag", ScriptedBackend().add(P.RAG_TAG, "Toei"), {"context": "head"})
    old_prompt = next(iter(old.llm_calls.values()))["prompt"]
    assert "Studio Ghibli" not in old_prompt and "with Grave of the ..." in old_prompt
    whole = _totoro("standard-rag", ScriptedBackend().add(P.RAG_TAG, "x"), {"context": "whole"})
    assert TOTORO in next(iter(whole.llm_calls.values()))["prompt"]


def test_ircot_cuts_each_passage_once_for_the_query_that_found_it():
    be = ScriptedBackend().add("", "Totoro was released by a studio.")
    tr = _totoro("ircot", be, {"max_steps": 2, "k_per_step": 2})
    prompts = [c["prompt"] for c in tr.llm_calls.values()]
    assert len(prompts) >= 2 and all("Studio Ghibli handled the release." in p for p in prompts)
    rets = [n for n in tr.nodes.values() if n.kind == "retrieval"]
    assert rets[0].attrs["context"]["passages"] and rets[0].attrs["context"]["budget"] == 260
    # a passage found again later is not cut again (its text stays the same in every prompt)
    assert all("context" not in n.attrs for n in rets[1:])


def test_standard_rag_runs_with_relevance_context_on_a_real_model(default_llm):
    tr = _totoro("standard-rag", default_llm, {"answer_max_tokens": 8})
    assert tr.status == "finished" and tr.answer is not None
    call = next(iter(tr.llm_calls.values()))
    assert "Studio Ghibli handled the release." in call["prompt"] and call["completion_tokens"] > 0
    assert tr.nodes[next(n for n in tr.nodes if tr.nodes[n].kind == "retrieval")
                    ].attrs["context"]["cut_chars"] > 0
