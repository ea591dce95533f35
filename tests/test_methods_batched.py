"""Independent calls run together (methods/batched.py): the same trace as one after another.

The scheduler on toy items, then each method that batches (CRP-RAG, CogGRAG, FRAG, PAR-RAG)
with the scripted backend at batch_size 1 and 4: the same events in the same order, the
same node ids and answers, and with 4 some calls really shared a batch.
"""
from __future__ import annotations

import json

import pytest

from tests.span_helpers import add_span_rule
from workbench import config as cfgmod
from workbench import trace as T
from workbench.llm.base import GenParams, LLMError, ScoreRequest
from workbench.llm.scripted import ScriptedBackend
from workbench.methods import batched as B
from workbench.methods.base import RunContext
from workbench.execution import execute


@pytest.fixture(autouse=True)
def _toy_events():
    """The toy items' own event types, declared while these tests run (strict events)."""
    from workbench.events import EventSpec, declared
    with declared(EventSpec("start", "A toy item began.", source="tests"),
                  EventSpec("got", "A toy item's call returned.", ("text",), source="tests"),
                  EventSpec("scored", "A toy item's scorings.", ("n",), source="tests"),
                  EventSpec("no_score", "A toy item's scoring failed.", ("error",),
                            source="tests")):
        yield


# what depends on the cache history, not on the run: the prompt cache changes no output
# (llm/prefix_store.py), only how much of a prompt it served
VOLATILE = {"call_id", "call_ids", "merge_call_id", "score_id", "batch", "run_id", "batch_size",
            "extract_batch",
            "seconds", "reused_from", "cached_prompt_tokens", "cache"}


def _clean(x):
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()
                if k not in VOLATILE and not str(k).endswith(("_ms", "_s"))}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def signature(events):
    """What a trace says, without times, random call ids and batch records."""
    return [(e.type, e.node_id, _clean(e.data)) for e in events]


def batch_sizes(events):
    return [e.data["batch"]["size"] for e in events
            if e.type == T.LLM_CALL and e.data.get("batch")]


# --------------------------------------------------------------------------- the scheduler

def _echo():
    be = ScriptedBackend()
    be.add("", lambda p: "echo " + p)
    return be


def _item(ctx, i, n_calls):
    yield T.custom("start", f"n{i}")
    for k in range(n_calls):
        comp = yield from ctx.generate("p", f"item {i} call {k}", GenParams(max_tokens=8),
                                       node_id=f"n{i}")
        yield T.custom("got", f"n{i}", text=comp.text)
    return i * 10


def _drain(gen):
    out = []
    try:
        while True:
            out.append(next(gen))
    except StopIteration as stop:
        return out, stop.value


CALLS = [2, 1, 3, 1, 2]


@pytest.mark.parametrize("size", [2, 3, 8])
def test_together_gives_the_sequential_events_and_results(size):
    seq_be, bat_be = _echo(), _echo()
    seq_ctx, bat_ctx = RunContext(llm=seq_be, config=None), RunContext(llm=bat_be, config=None)
    seq, seq_ret = _drain(B.together(seq_ctx, [_item(seq_ctx, i, n) for i, n in
                                               enumerate(CALLS)], 1))
    bat, bat_ret = _drain(B.together(bat_ctx, [_item(bat_ctx, i, n) for i, n in
                                               enumerate(CALLS)], size))
    assert signature(seq) == signature(bat) and seq_ret == bat_ret == [0, 10, 20, 30, 40]
    assert not batch_sizes(seq)                            # size 1: plain generate calls
    sizes = batch_sizes(bat)
    assert max(sizes) == min(size, len(CALLS)) and all(s <= size for s in sizes)
    # the backend saw the calls interleaved: item 1's first call before item 0's second
    prompts = [c["prompt"] for c in bat_be.calls]
    assert prompts.index("item 1 call 0") < prompts.index("item 0 call 1")
    assert [c["prompt"] for c in seq_be.calls][:3] == ["item 0 call 0", "item 0 call 1",
                                                      "item 1 call 0"]


def test_the_first_item_is_not_held_behind_the_batch():
    seen = []

    class Logged(ScriptedBackend):
        def generate_many(self, requests, **kw):
            seen.append(f"batch of {len(requests)}")
            return super().generate_many(requests, **kw)
    be = Logged()
    be.add("", "x")
    ctx = RunContext(llm=be, config=None)
    for ev in B.together(ctx, [_item(ctx, i, 1) for i in range(4)], 4):
        seen.append(f"{ev.type} {ev.node_id}")
    assert seen[0] == "start n0" and seen[1] == "batch of 4"


def _json_item(ctx, name, n_calls):
    out = []
    for k in range(n_calls):
        obj = yield from ctx.generate_json("j", f"{name}{k}", {"type": "object"},
                                           GenParams(max_tokens=8), node_id=name)
        out.append(obj)
    return out


def test_parse_failure_nodes_take_ids_in_trace_order():
    """Item a fails on its second call (after 3 rounds), item b on its first (after 2): run
    together, b's failure is found first, but a's node still gets the first id."""
    def backend():
        be = ScriptedBackend()
        be.add("a0", json.dumps({"x": 1}))
        be.add("", "not json")
        return be
    runs = []
    for size in (1, 2):
        ctx = RunContext(llm=backend(), config=None)
        runs.append(_drain(B.together(ctx, [_json_item(ctx, "a", 2), _json_item(ctx, "b", 1)],
                                      size)))
    (seq, seq_ret), (bat, bat_ret) = runs
    assert signature(seq) == signature(bat) and seq_ret == bat_ret == [[{"x": 1}, None], [None]]
    fails = [(e.node_id, e.data["parents"]) for e in bat if e.type == T.NODE_ADDED]
    assert fails == [("fail1", ["a"]), ("fail2", ["b"])]


def _scoring_item(ctx, i):
    yield T.custom("start", f"n{i}")
    try:
        got = yield from ctx.score_many([ScoreRequest(f"ctx {i}", "right"),
                                         ScoreRequest(f"ctx {i}", "wrong")])
        yield T.custom("scored", f"n{i}", n=[len(s.tokens) for s in got])
    except LLMError as e:
        yield T.custom("no_score", f"n{i}", error=type(e).__name__)


def test_scorings_run_together_and_a_failed_batch_reaches_each_item():
    for rules, want in (({"": "one two"}, "scored"), ({}, "no_score")):
        runs = []
        for size in (1, 4):
            ctx = RunContext(llm=ScriptedBackend.from_table(rules), config=None)
            runs.append(_drain(B.together(ctx, [_scoring_item(ctx, i) for i in range(3)],
                                          size))[0])
        assert signature(runs[0]) == signature(runs[1])
        assert [e.type for e in runs[1]].count(want) == 3


def test_an_error_an_item_does_not_handle_ends_the_batch_after_the_earlier_events():
    be = ScriptedBackend()            # no rules: every generation fails
    ctx = RunContext(llm=be, config=None)
    gen = B.together(ctx, [_item(ctx, i, 1) for i in range(3)], 3)
    got = []
    with pytest.raises(LLMError, match="no rule"):
        for ev in gen:
            got.append(ev)
    assert [(e.type, e.node_id) for e in got] == [("start", "n0")]      # as a lone call


def test_each_item_keeps_its_phase():
    def phased(ctx, name):
        yield ctx.set_phase(name)
        yield from ctx.generate("p", name, GenParams(max_tokens=2), node_id=name)
    ctx = RunContext(llm=_echo(), config=None, phase="outer")
    evs, _ = _drain(B.together(ctx, [phased(ctx, "a"), phased(ctx, "b")], 2))
    assert [e.data["phase"] for e in evs if e.type == T.LLM_CALL] == ["a", "b"]
    assert batch_sizes(evs) == [2, 2] and ctx.phase == "b"


# --------------------------------------------------------------------------- the methods

def _run_events(method, ctx, question):
    return list(execute(method, ctx, question))


def _same_trace(make_run):
    """make_run(batch_size) -> events; returns the batched run's events."""
    seq, bat = make_run(1), make_run(4)
    assert signature(seq) == signature(bat)
    assert not batch_sizes(seq) and max(batch_sizes(bat)) > 1
    fin = [e for e in bat if e.type == T.RUN_FINISHED][0]
    assert fin.data["status"] in ("finished", "refused"), fin.data
    return bat


@pytest.mark.parametrize("over", [{}, {"noise_mode": "knowledge", "noise_pct": 50},
                                  {"no_iterative_reasoning": True}, {"structure": "tree"},
                                  {"samples_per_sink": 3, "max_new_per_iter": 2}],
                         ids=["graph", "noise", "one-shot-paths", "tree", "capped"])
def test_crp_rag_batched_and_sequential_traces_are_identical(over):
    from tests import test_methods_text_crp as crp
    from workbench.methods import get_method

    def make_run(size):
        m = get_method("crp-rag")
        ctx = RunContext(llm=crp.make_backend(crp.DIAMOND, {crp.B: ("I do not know.", -2.0)}),
                         config=cfgmod.build(m.Config, {**over, "batch_size": size}),
                         retrievers={"dense": crp.TinyRetriever()},
                         embedder=crp.FakeEmbedder({"studio": [1, 0, 0, 0, 0, 0, 0, 0]}))
        return _run_events(m, ctx, crp.Q)
    bat = _same_trace(make_run)
    purposes = {e.data["purpose"] for e in bat if e.type == T.LLM_CALL and
                e.data.get("batch", {}).get("size", 1) > 1}
    assert {"propose", "aggregate", "evaluate"} <= purposes


def test_crp_rag_unparsable_proposals_batched():
    from tests import test_methods_text_crp as crp
    from workbench.methods import get_method

    def make_run(size):
        be = ScriptedBackend()
        be.add(crp.P.GEN_TAG, "not json at all")
        be.add(crp.P.AGG_TAG, "Knowledge.")
        be.add(crp.P.EVAL_TAG, "Studio Ghibli", logprob=-0.01)
        be.add(crp.P.STEP_TAG, "Studio Ghibli produced it.")
        add_span_rule(be, "Studio Ghibli")
        m = get_method("crp-rag")
        ctx = RunContext(llm=be, config=cfgmod.build(m.Config, {"batch_size": size}),
                         retrievers={"dense": crp.TinyRetriever()},
                         embedder=crp.FakeEmbedder({}))
        return _run_events(m, ctx, crp.Q)
    bat = _same_trace(make_run)
    assert [e.node_id for e in bat if e.type == T.NODE_ADDED and
            e.data["kind"] == "parse_failed"] == ["fail2", "fail3"]


@pytest.mark.parametrize("verdicts", [{}, {"Port Amsel": "[wrong]"}])
def test_coggrag_batched_and_sequential_traces_are_identical(verdicts):
    from tests import test_methods_kg_coggrag as cog
    from tests.kg_toy import question, toy_kg
    from workbench.methods.coggrag.method import CogConfig, CogGRAG
    kg = toy_kg()

    def make_run(size):
        be = cog._backend(verdicts=verdicts, answers={cog.SUB1: "Ilse Varga",
                                                      cog.SUB2: "Port Amsel"})
        ctx = RunContext(llm=be, config=cfgmod.build(CogConfig, {"batch_size": size,
                                                              "extract_batch": size,
                                                              "verdict_scores": "always"}),
                         kg=kg, embedder=cog.BowEmbedder(), gold=question("t2"))
        return _run_events(CogGRAG(), ctx, cog.ROOT_Q)
    bat = _same_trace(make_run)
    shared = {e.data["purpose"] for e in bat if e.type == T.LLM_CALL and
              e.data.get("batch", {}).get("size", 1) > 1}
    assert {"keys_local", "keys_global", "verify"} <= shared
    assert all(d["p_right"] is not None for d in
               (e.data for e in bat if e.type == "verdict_scored"))
    if verdicts:
        assert "rethought" in {e.type for e in bat}


def test_frag_answer_and_feedback_run_together():
    from tests.kg_toy import question, toy_kg
    from workbench.methods.frag.method import Frag, FragConfig
    kg = toy_kg()

    def make_run(size):
        be = ScriptedBackend()
        be.add("copy the one path", "Glass Harbor -> film.film.directed_by -> Ilse Varga")
        be.add("", "Norvania")
        cfg = cfgmod.build(FragConfig, {"ranker": "tfidf", "estimator": "heuristic",
                                        "feedback": True, "batch_size": size})
        ctx = RunContext(llm=be, config=cfg, kg=kg, gold=question("t3"))
        return _run_events(Frag(), ctx, question("t3").question)
    bat = _same_trace(make_run)
    calls = [(e.data["purpose"], e.data["phase"], e.data["batch"]["size"]) for e in bat
             if e.type == T.LLM_CALL]
    assert calls == [("answer", "reason", 2), ("feedback_path", "feedback", 2)]


@pytest.mark.parametrize("review", [("1", "Attributable"), ("0.2", "Contradictory")],
                         ids=["pass", "revise"])
def test_par_rag_judge_and_attribution_run_together(review):
    from tests import test_methods_text_par as par
    from workbench.methods import get_method
    from workbench.methods.embeddings import HashEmbedder

    def make_run(size):
        m = get_method("par-rag")
        ctx = RunContext(llm=par.make_backend(par.TWO_STEPS, judge=review[0], attr=review[1]),
                         config=cfgmod.build(m.Config, {"batch_size": size}),
                         retrievers={"dense": par.TinyRetriever("dense"),
                                     "bm25": par.TinyRetriever("bm25")},
                         embedder=HashEmbedder(), extra={"par_questions": par.SEEDS})
        return _run_events(m, ctx, par.Q)
    bat = _same_trace(make_run)
    pairs = [e.data["purpose"] for e in bat if e.type == T.LLM_CALL and e.data.get("batch")]
    assert pairs == ["judge", "attribution"] * 2


def test_batch_size_is_a_recorded_knob_of_each_batching_method():
    from workbench.methods import all_methods
    for name in ("crp-rag", "coggrag", "frag", "par-rag"):
        k = {s.name: s for s in cfgmod.knobs(all_methods()[name].Config)}["batch_size"]
        assert (k.default, k.min) == (B.DEFAULT_BATCH, 1)
        with pytest.raises(cfgmod.ConfigError, match="below its minimum"):
            cfgmod.build(all_methods()[name].Config, {"batch_size": 0})
    ctx = RunContext(llm=_echo(), config=cfgmod.build(all_methods()["par-rag"].Config,
                                                      {"batch_size": 2}))
    run = execute(all_methods()["par-rag"](), ctx, "Who?")
    start = next(run)
    run.close()
    assert start.data["config"]["batch_size"] == 2


# --------------------------------------------------------------------------- eval --batch

def test_eval_batch_sets_the_batch_size_of_the_methods_that_batch(capsys):
    from workbench import cli
    from workbench.commands.eval import _spec
    from workbench.eval.plan import batch_sets, plan_variants
    from workbench.methods import all_methods

    def sizes(*extra):
        args = cli.build_parser().parse_args(["eval", "--dataset", "demo", "--methods",
                                              "crp-rag,vanilla,frag", *extra])
        return {v.method: v.config.get("batch_size")
                for v in plan_variants(_spec(args), all_methods())}
    assert sizes() == {"crp-rag": B.DEFAULT_BATCH, "vanilla": None, "frag": B.DEFAULT_BATCH}
    assert sizes("--batch", "1") == {"crp-rag": 1, "vanilla": None, "frag": 1}
    assert sizes("--batch", "2", "--set", "crp-rag.batch_size=3") == \
        {"crp-rag": 3, "vanilla": None, "frag": 2}
    with pytest.raises(SystemExit):          # the command line refuses it with the range
        sizes("--batch", "0")
    assert "0 is out of range; give an integer in [1, inf]" in capsys.readouterr().err
    with pytest.raises(cfgmod.ConfigError, match="--batch 0"):    # so does the library
        batch_sets(0, ["crp-rag"], all_methods())
    with pytest.raises(cfgmod.ConfigError, match="above its maximum"):
        sizes("--batch", "64")


def test_cli_eval_batch_reaches_the_stored_runs(tmp_path, capsys):
    from workbench import cli
    from workbench.store import Store
    table = tmp_path / "rules.json"
    table.write_text(json.dumps({"rules": [{"match": "copy the one path", "text": "NO"}],
                                 "default": "Christopher Nolan"}))
    code = cli.main(["eval", "--no-progress", "--judge", "off", "--dataset", "demo",
                     "--split", "test", "--methods", "frag", "--set", "ranker=tfidf",
                     "--set", "estimator=heuristic", "--set", "feedback=true", "--limit", "1",
                     "--scripted", str(table), "--batch", "2"])
    assert code == 0, capsys.readouterr().err
    st = Store()
    run = st.query("SELECT run_id, config FROM runs")[0]
    cfg = run["config"] if isinstance(run["config"], dict) else json.loads(run["config"])
    assert cfg["batch_size"] == 2
    calls = [e for e in st.events(run["run_id"]) if e.type == T.LLM_CALL]
    assert [(e.data["purpose"], e.data["batch"]["size"]) for e in calls] == \
        [("answer", 2), ("feedback_path", 2)]
