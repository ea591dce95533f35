"""The batch runner: planning and sweeps, storage of items and runs, resume without
duplicates (in process and after killing the CLI), parallel workers, export, eval knobs."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.config import ConfigError
from workbench.eval import knobs as K
from workbench.eval import presets
from workbench.eval.item_executor import make_backend
from workbench.eval.plan import apply_sweep, load_sweep, plan_variants
from workbench.eval.export import export_eval
from workbench.eval.runner import EvalInterrupted, EvalRunner, EvalSpec, get_eval
from workbench.knowledge.types import Hit
from workbench.llm.scripted import ScriptedBackend
from workbench.store import Store

from tests.test_eval_helpers import N_QUESTIONS, ToyDataset, answer_rules, toy_methods

ROOT = Path(__file__).resolve().parents[1]


def _backend():
    return ScriptedBackend.from_table(answer_rules(), default="grey")


def _runner(store, spec=None, **kw):
    spec = spec or EvalSpec(dataset="toy", methods=["toy-rag", "toy-llm"], judge="off")
    kw.setdefault("backend", _backend())
    return EvalRunner.new(store, spec, dataset=ToyDataset(), method_classes=toy_methods(), **kw)


# -- planning ------------------------------------------------------------------

def test_plan_variants_grid_method_scoped_and_eval_knobs():
    spec = EvalSpec(dataset="toy", methods=["toy-rag", "toy-llm"],
                    sets={"toy-rag.style": "verbose"},
                    grid={"k": [1, 3], "noise_k": [0, 2], "idk_prompt": [False, True]})
    vs = plan_variants(spec, toy_methods())
    rag = [v for v in vs if v.method == "toy-rag"]
    llm = [v for v in vs if v.method == "toy-llm"]
    # k and noise apply to the retrieving method only; idk_prompt to both
    assert len(rag) == 2 * 2 * 2 and len(llm) == 2
    assert all(v.config["style"] == "verbose" for v in rag)
    assert {v.label for v in llm} == {"idk_prompt=False", "idk_prompt=True"}
    assert len({v.hash for v in vs}) == len(vs)
    v = next(v for v in rag if v.config["k"] == 3 and v.eval_knobs.get("noise_k") == 2
             and not v.eval_knobs.get("idk_prompt"))
    assert v.label == "k=3,noise_k=2,idk_prompt=False" and v.knob_values["noise_k"] == 2


def test_a_named_variant_crossed_with_a_grid_names_each_config():
    spec = EvalSpec(dataset="toy", methods=["toy-rag"], grid={"toy-rag.k": [1, 3]},
                    variants=[{"label": "plain", "set": {}},
                              {"label": "verbose", "set": {"toy-rag.style": "verbose"}}])
    vs = plan_variants(spec, toy_methods())
    assert sorted(v.label for v in vs) == ["plain,k=1", "plain,k=3", "verbose,k=1", "verbose,k=3"]


def test_a_set_without_a_sweep_names_the_variant_it_changes():
    spec = EvalSpec(dataset="toy", methods=["toy-rag", "toy-llm"],
                    sets={"toy-rag.style": "verbose", "idk_prompt": True})
    labels = {v.method: v.label for v in plan_variants(spec, toy_methods())}
    assert labels == {"toy-rag": "style=verbose,idk_prompt=True", "toy-llm": "idk_prompt=True"}
    plain = plan_variants(EvalSpec(dataset="toy", methods=["toy-llm"]), toy_methods())
    assert [v.label for v in plain] == ["default"]


def test_plan_rejects_unknown_and_bad_knobs():
    with pytest.raises(ConfigError, match="belong to none"):
        plan_variants(EvalSpec("toy", ["toy-rag"], sets={"nope": 1}), toy_methods())
    with pytest.raises(ConfigError):
        plan_variants(EvalSpec("toy", ["toy-rag"], grid={"k": [0]}), toy_methods())   # below min
    with pytest.raises(ConfigError):
        plan_variants(EvalSpec("toy", ["toy-rag"], sets={"noise_position": "middle"}), toy_methods())
    with pytest.raises(KeyError):
        plan_variants(EvalSpec("toy", ["missing"]), toy_methods())


def test_sweep_files_yaml_and_toml(tmp_path):
    y = tmp_path / "s.yaml"
    y.write_text("methods: [toy-rag]\nseeds: [0, 1]\nset: {style: verbose}\n"
                 "grid:\n  k: [1, 2, 3]\nlimit: 4\n")
    t = tmp_path / "s.toml"
    t.write_text('methods = ["toy-rag"]\nseed = 7\n[grid]\nnoise_k = [0, 1]\n')
    spec = apply_sweep(EvalSpec("toy", []), load_sweep(str(y)))
    assert spec.methods == ["toy-rag"] and spec.seeds == [0, 1] and spec.limit == 4
    assert len(plan_variants(spec, toy_methods())) == 3
    spec = apply_sweep(EvalSpec("toy", [], sets={"k": "2"}), load_sweep(str(t)))
    assert spec.seeds == [7] and spec.grid == {"noise_k": [0, 1]} and spec.sets == {"k": "2"}
    bad = tmp_path / "b.yaml"
    bad.write_text("grid: {k: 3}\n")
    with pytest.raises(ValueError, match="list"):
        load_sweep(str(bad))


# -- running and storing --------------------------------------------------------------

def test_eval_stores_items_runs_and_metrics(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    seen = []
    r = _runner(st, EvalSpec("toy", ["toy-rag", "toy-llm"], judge="off", seeds=[3],
                             grid={"k": [1, 2]}))
    res = r.run(seen.append)
    n = N_QUESTIONS * 3          # 2 toy-rag variants + 1 toy-llm variant
    assert res.status == "finished" and res.n_done == n == res.n_planned
    assert len(seen) == n and seen[-1].done == n and seen[-1].eta_s == 0.0
    assert seen[0].rate > 0
    rows = st.query("SELECT * FROM eval_items WHERE eval_id = ?", [r.eval_id])
    assert len(rows) == n and len({x["item_key"] for x in rows}) == n
    runs = st.query("SELECT * FROM runs WHERE eval_id = ?", [r.eval_id])
    assert len(runs) == n
    by_run = {x["run_id"]: x for x in runs}
    for it in rows:
        run = by_run[it["run_id"]]
        assert run["correct"] == it["correct"] and run["metrics"]["primary"] in ("contains", "crag")
        assert run["seed"] == 3 and run["model_sha256"] == "scripted"
        assert run["prompt_versions"]["toy-rag" if it["method"] == "toy-rag" else "toy-llm"]
        assert it["wall_ms"] > 0 and it["llm_calls"] == 1
    # config hash: the runner's hash of the method config (no eval knobs here)
    from workbench.config import config_hash
    one = next(x for x in runs if x["method"] == "toy-rag")
    assert one["config_hash"] == config_hash({"method": "toy-rag", **one["config"]})
    item = next(x for x in rows if x["run_id"] == one["run_id"])
    assert item["config_hash"] == one["config_hash"]
    # the answers: even items right, odd wrong, i % 5 == 3 refused (missing for CRAG)
    q3 = [x for x in rows if x["question_id"] == "q003" and x["method"] == "toy-rag"]
    assert len(q3) == 2
    assert all(x["refused"] and not x["correct"] and x["crag_label"] == "missing" for x in q3)
    q2 = [x for x in rows if x["question_id"] == "q002"]
    assert all(x["correct"] and x["em"] == 1.0 for x in q2)
    q0 = [x for x in rows if x["question_id"] == "q000"]       # CRAG meta -> primary crag
    assert all(x["domain"] == "finance" and x["crag_label"] == "accurate" for x in q0)
    # node-level: sub-question match against the gold decomposition
    rag = next(x for x in rows if x["method"] == "toy-rag")
    assert json.loads(rag["structure"])["subq_recall"] == 1.0
    b = st.query("SELECT * FROM eval_batches WHERE eval_id = ?", [r.eval_id])[0]
    assert b["status"] == "finished" and b["n_done"] == n and b["model_name"] == "scripted"


def test_the_variants_of_a_question_alternate_their_order(tmp_path):
    """Whichever variant runs second on a question may find the first one's prompts in the
    prefix cache: no variant is always second."""
    r = _runner(Store(tmp_path / "s.duckdb"))
    order = [(it.question["id"], it.variant["method"]) for it in r.pending(set())]
    by_q: dict[str, list[str]] = {}
    for qid, m in order:
        by_q.setdefault(qid, []).append(m)
    firsts = [ms[0] for ms in by_q.values()]
    assert all(sorted(ms) == ["toy-llm", "toy-rag"] for ms in by_q.values())
    assert firsts[0::2] == ["toy-rag"] * len(firsts[0::2])
    assert firsts[1::2] == ["toy-llm"] * len(firsts[1::2]) and len(firsts) >= 2


def test_eval_knobs_change_the_hash_and_are_stored_on_the_run(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    r = _runner(st, EvalSpec("toy", ["toy-rag"], judge="off", limit=2, grid={"noise_k": [0, 3]}))
    r.run()
    runs = st.query("SELECT config, config_hash, prompt_tokens FROM runs ORDER BY prompt_tokens")
    assert len({x["config_hash"] for x in runs}) == 2
    noisy = [x for x in runs if "_eval" in x["config"]]
    assert len(noisy) == 2 and noisy[0]["config"]["_eval"] == {"noise_k": 3}
    # noise passages make the prompt longer
    assert min(x["prompt_tokens"] for x in noisy) > max(x["prompt_tokens"] for x in runs
                                                        if "_eval" not in x["config"])


def test_interrupt_from_progress_callback_then_resume_exactly_n(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    r = _runner(st)
    total = r.n_planned
    k = 7

    def stop_after_k(p):
        if p.session_done == k:
            raise KeyboardInterrupt

    with pytest.raises(EvalInterrupted) as ei:
        r.run(stop_after_k)
    assert ei.value.done == k
    count = lambda t: st.query(f"SELECT count(*) AS n FROM {t} WHERE eval_id = ?", [r.eval_id])[0]["n"]  # noqa: E731
    assert count("eval_items") == k and count("runs") == k
    b = st.query("SELECT status, n_done FROM eval_batches")[0]
    assert b == {"status": "interrupted", "n_done": k}
    # a batch records its model when it stops; while it runs, `eval show` reads its runs'
    model = st.query("SELECT model_name FROM eval_batches")[0]["model_name"]
    assert model
    st.execute("UPDATE eval_batches SET model_name = NULL, model_sha256 = NULL")
    assert get_eval(st, r.eval_id)["model_name"] == model
    r2 = EvalRunner.resume(st, None, backend=_backend(), dataset=ToyDataset(),
                           method_classes=toy_methods())
    assert r2.eval_id == r.eval_id and len(r2.done_keys()) == k
    res = r2.run()
    assert res.n_new == total - k and res.n_done == total
    assert count("eval_items") == total and count("runs") == total
    assert st.query("SELECT count(DISTINCT item_key) AS n FROM eval_items")[0]["n"] == total
    assert st.query("SELECT status FROM eval_batches")[0]["status"] == "finished"
    # nothing left to resume
    with pytest.raises(LookupError):
        EvalRunner.resume(st, None, backend=_backend(), dataset=ToyDataset(),
                          method_classes=toy_methods())


@pytest.mark.parametrize("signal_as", [RuntimeError("Query interrupted"), KeyboardInterrupt()])
def test_ctrl_c_inside_a_store_write_interrupts_and_keeps_every_finished_item(tmp_path,
                                                                                monkeypatch,
                                                                                signal_as):
    """DuckDB turns a SIGINT that lands inside a query into an error of its own; the eval must
    still end as interrupted (resumable, exit 130 at the CLI), with the items whose write was
    rolled back written by the last flush, not lost or reported as a failure."""
    from workbench.eval import writer as writer_mod
    st = Store(tmp_path / "s.duckdb")
    r = _runner(st)
    real, hit = writer_mod.bulk_insert, []

    def insert_once_interrupted(con, table, rows, replace=False):
        if table == "eval_items" and not hit:
            hit.append(1)
            raise signal_as
        return real(con, table, rows, replace=replace)
    monkeypatch.setattr(writer_mod, "bulk_insert", insert_once_interrupted)
    # every item written as it comes, so the interrupt lands on the first item's write
    monkeypatch.setattr(writer_mod.ResultWriter, "add",
                        lambda self, res: (self.buf.append(res), self.flush()))
    with pytest.raises(EvalInterrupted) as ei:
        r.run()
    assert hit, "the interrupted write was never reached"
    n = st.query("SELECT count(*) AS n FROM eval_items")[0]["n"]
    assert n == st.query("SELECT count(*) AS n FROM runs")[0]["n"] >= 1
    b = st.query("SELECT status, n_done, error FROM eval_batches")[0]
    assert b == {"status": "interrupted", "n_done": n, "error": None}
    assert ei.value.done == n


def test_a_resume_keeps_the_configs_the_eval_started_with(tmp_path):
    """A default changed between start and resume must not change the resumed items: the
    eval would otherwise hold runs of two configs under one label."""
    import dataclasses

    from workbench.config import knob
    from tests.test_eval_helpers import ToyRag

    st = Store(tmp_path / "s.duckdb")
    r = _runner(st, EvalSpec("toy", ["toy-rag"], judge="off"))
    with pytest.raises(EvalInterrupted):
        r.run(lambda p: (_ for _ in ()).throw(KeyboardInterrupt) if p.session_done == 2 else None)

    @dataclasses.dataclass
    class NewDefaults:                    # k's default moved from 2 to 4 since the start
        k: int = knob(4, "passages", min=1, max=10)
        style: str = knob("plain", "answer style", choices=["plain", "verbose"])
        retriever: str = knob("bm25", "passage retriever", choices=["bm25", "dense"])

    class ToyRagToday(ToyRag):
        Config = NewDefaults

    r2 = EvalRunner.resume(st, r.eval_id, backend=_backend(), dataset=ToyDataset(),
                           method_classes={"toy-rag": ToyRagToday})
    assert r2.config_drift == ["toy-rag k: 2 -> 4"]
    r2.run()
    items = st.query("SELECT item_key, config_hash FROM eval_items WHERE eval_id = ?", [r.eval_id])
    assert len(items) == N_QUESTIONS
    assert {i["config_hash"] for i in items} == {r.variants[0].hash}
    configs = {x["config"]["k"] for x in st.query(
        "SELECT config FROM runs WHERE eval_id = ?", [r.eval_id])}
    assert configs == {2}


def test_failed_items_are_stored_and_can_be_retried(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    be = ScriptedBackend.from_table([{"match": "item1?", "text": "boom"}])   # others: no rule
    r = _runner(st, EvalSpec("toy", ["toy-llm"], judge="off", limit=3), backend=be)
    r.run()
    rows = st.query("SELECT question_id, status, correct FROM eval_items ORDER BY question_id")
    assert [x["status"] for x in rows] == ["failed", "finished", "failed"]
    assert not any(x["correct"] for x in rows)
    r2 = EvalRunner.resume(st, r.eval_id, backend=ScriptedBackend(default="x"), dataset=ToyDataset(),
                           method_classes=toy_methods())
    assert r2.retry_failed() == 2
    r2.run()
    rows = st.query("SELECT status FROM eval_items")
    assert len(rows) == 3 and all(x["status"] == "finished" for x in rows)
    assert st.query("SELECT count(*) AS n FROM runs")[0]["n"] == 3


class _LoggedToyDataset(ToyDataset):
    """Logs when its retriever is built, so a test sees whether that fell inside a run."""

    def __init__(self, log):
        super().__init__()
        self.log = log

    def retriever(self, kind="bm25"):
        if self._r is None:
            self.log.append(f"build {kind}")
        return super().retriever(kind)


def _logged_rag(log):
    from dataclasses import dataclass

    from tests.test_eval_helpers import ToyRag, ToyRagConfig
    from workbench.config import knob

    @dataclass
    class Config(ToyRagConfig):
        retriever: str = knob("bm25", "retriever", choices=["bm25", "dense", "hybrid"])

    class LoggedRag(ToyRag):
        def run(self, ctx, question):
            log.append("run")
            yield from super().run(ctx, question)

    LoggedRag.Config = Config
    return LoggedRag


@pytest.mark.parametrize("real_model", [True, False])
def test_an_eval_loads_the_retriever_before_its_first_timed_item(tmp_path, real_model):
    """With a real model the first item's wall time must not hold the index build (41 s of
    standard RAG's first HotpotQA item once): the eval builds it before the first run. The
    scripted backend of control-flow tests skips that."""
    from workbench.llm.base import ModelInfo
    log = []
    be = _backend()
    if real_model:       # what a llama.cpp backend reports; the calls stay scripted
        be.info = ModelInfo(name="q", backend="llama_cpp", sha256="x")
    st = Store(tmp_path / "s.duckdb")
    r = EvalRunner.new(st, EvalSpec("toy", ["toy-rag"], judge="off", limit=2), backend=be,
                       dataset=_LoggedToyDataset(log), method_classes={"toy-rag": _logged_rag(log)})
    ex = r.item_executor()
    assert ex.warm_up is real_model
    assert r.run().n_done == 2
    if real_model:
        assert log == ["build bm25", "run", "run"]
    else:
        assert log == ["run", "build bm25", "run"]
    # a real model's items record the CPU other work took meanwhile (None: under a clock
    # tick, as these scripted calls may be); scripted ones time nothing
    shares = [x["cpu_others"] for x in st.query("SELECT cpu_others FROM eval_items")]
    assert all(s is None or 0.0 <= s <= 1.0 for s in shares) if real_model \
        else shares == [None, None]
    # the loading left out of the wall times is stored with the first item and shown
    from workbench.eval import queries as Q
    notes = Q.warm_up_notes(st, r.eval_id)
    if real_model:
        [line] = notes
        assert line.startswith("Loaded before the first timed item") and "toy-rag: bm25 index" in line
        stored = [x for x in st.query("SELECT metrics FROM runs") if "warm_up" in (x["metrics"] or "")]
        assert len(stored) == 1
    else:
        assert notes == []


def test_items_timed_beside_other_work_are_flagged(tmp_path, capsys):
    from workbench.commands.eval import _print_summary
    from workbench.eval import queries as Q
    st = Store(tmp_path / "s.duckdb")
    r = EvalRunner.new(st, EvalSpec("toy", ["toy-rag"], judge="off", limit=3), backend=_backend(),
                       dataset=_LoggedToyDataset([]), method_classes={"toy-rag": _logged_rag([])})
    r.run()
    assert Q.timing_notes(Q.efficiency(st, r.eval_id)) == []
    keys = [x["item_key"] for x in st.query("SELECT item_key FROM eval_items ORDER BY 1")]
    for k, share in zip(keys, (0.05, 0.45, None)):
        st.execute("UPDATE eval_items SET cpu_others = ? WHERE item_key = ?", [share, k])
    eff = Q.efficiency(st, r.eval_id)[0]
    assert (eff["cpu_measured"], eff["cpu_contended"]) == (2, 1)
    [line] = Q.timing_notes([eff])
    assert "toy-rag: 1 of 2" in line and "more than 20% of the CPU" in line
    _print_summary(st, r.eval_id)
    assert line in capsys.readouterr().out


def test_eval_show_names_the_loading_left_out_of_the_wall_times_and_its_failures(tmp_path, capsys):
    from workbench.commands.eval import _print_summary
    from workbench.eval import queries as Q
    from workbench.llm.base import ModelInfo
    be = _backend()
    be.info = ModelInfo(name="q", backend="llama_cpp", sha256="x")
    st = Store(tmp_path / "s.duckdb")
    r = EvalRunner.new(st, EvalSpec("toy", ["toy-rag"], judge="off", limit=3), backend=be,
                       dataset=_LoggedToyDataset([]), method_classes={"toy-rag": _logged_rag([])})
    r.run()
    # two workers' first items, as threads or Ray actors each loading their own: the longer
    # load is the one an item would have waited for; a failed load is named
    runs = [x["run_id"] for x in st.query("SELECT run_id FROM runs ORDER BY created_at")]
    for rid, warm in zip(runs, ({"seconds": {"bm25 index": 2.5, "dense index": 9.04},
                                 "errors": {"dense index": "OSError: no index"}},
                                {"seconds": {"bm25 index": 4.0}, "errors": {}})):
        st.execute("UPDATE runs SET metrics = json_merge_patch(metrics, ?) WHERE run_id = ?",
                   [json.dumps({"warm_up": warm}), rid])
    loaded, failed = Q.warm_up_notes(st, r.eval_id)
    assert "toy-rag: bm25 index 4.0 s, dense index 9.0 s" in loaded
    assert failed.endswith("toy-rag: dense index: OSError: no index.")
    _print_summary(st, r.eval_id)
    out = capsys.readouterr().out
    assert loaded in out and failed in out


def test_warm_context_loads_what_the_config_names_and_reports_a_failure():
    from dataclasses import dataclass

    from workbench.methods.base import RunContext
    from workbench.workspace import warm_context
    searched, linked = [], []

    class R:
        def __init__(self, name, fail=False):
            self.name, self.fail = name, fail

        def search(self, q, k=5):
            searched.append(self.name)
            if self.fail:
                raise OSError("index file damaged")
            return []

    class KG:
        def link_entities(self, text, k=5, embedder=None):
            linked.append((text, embedder))
            return []

    @dataclass
    class Cfg:
        dense_retriever: str = "default"
        sparse_retriever: str = "bm25"
        top_k: int = 3

    ctx = RunContext(llm=None, config=Cfg(), kg=KG(), embedder="E",
                     retrievers={"bm25": R("bm25", fail=True), "dense": R("dense"),
                                 "hybrid": R("hybrid")}, extra={"default_retriever": "dense"})
    out = warm_context(ctx, "Who directed Inception?")
    assert sorted(searched) == ["bm25", "dense"]              # hybrid is named by no knob
    assert linked == [("Who directed Inception?", "E")]
    assert set(out["seconds"]) == {"bm25 index", "dense index", "KG entity index"}
    assert out["errors"] == {"bm25 index": "OSError: index file damaged"}
    # a KG's entity descriptions load when the config asks for them
    looked = []
    KG.descriptions = type("D", (), {"lookup": lambda self, n: looked.append(n)})()

    @dataclass
    class Described:
        entity_descriptions: bool = True

    assert "entity descriptions" not in out["seconds"]
    out = warm_context(RunContext(llm=None, config=Described(), kg=KG()), "Who?")
    assert looked == ["Who?"] and "entity descriptions" in out["seconds"]


def test_thread_workers_give_the_same_results(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    serial = _runner(st)
    serial.run()
    threaded = _runner(st, workers=3)
    assert threaded._mode() == "threads"
    threaded.run()
    q = "SELECT question_id, method, correct, crag_label FROM eval_items WHERE eval_id = ? " \
        "ORDER BY question_id, method"
    assert st.query(q, [serial.eval_id]) == st.query(q, [threaded.eval_id])


def test_parallel_llama_workers_each_run_their_own_model_process(tmp_path):
    """Two workers on the real default model: each thread loads a model of its own in a
    worker process of its own (one core each), and the parent alone writes the store."""
    from tests.conftest import FAST_MODEL
    st = Store(tmp_path / "s.duckdb")
    spec = EvalSpec("demo", ["vanilla"], judge="off", limit=4, sets={"answer_max_tokens": 6})
    r = EvalRunner.new(st, spec, backend_spec={"kind": "settings", "overrides": {
        "model": FAST_MODEL, "n_ctx": 1024}}, workers=2)
    assert r._mode() == "threads" and r._own_models()
    assert r.run().n_done == 4
    runs = st.query("SELECT run_id, pid, status FROM runs")
    assert len(runs) == 4 and {x["pid"] for x in runs} == {os.getpid()}
    assert all(x["status"] in ("finished", "refused") for x in runs)
    workers = {st.events(x["run_id"])[0].data["model"]["extra"]["worker_pid"] for x in runs}
    assert len(workers) == 2 and os.getpid() not in workers


def test_items_together_on_the_real_model_share_llama_cpp_batches(tmp_path):
    """Four items at once on one real model (eval --items-together 4): their calls are
    decoded as sequences of one llama.cpp batch and every item is stored with its answer."""
    from tests.conftest import FAST_MODEL
    st = Store(tmp_path / "s.duckdb")
    spec = EvalSpec("demo", ["vanilla"], judge="off", limit=4, sets={"answer_max_tokens": 6})
    r = EvalRunner.new(st, spec, backend_spec={"kind": "settings", "overrides": {
        "model": FAST_MODEL, "n_ctx": 1024}}, items_together=4)
    assert r._mode() == "threads" and not r._own_models()
    assert r.run().n_done == 4
    runs = st.query("SELECT run_id, status, answer FROM runs")
    assert len(runs) == 4 and all(x["status"] in ("finished", "refused") for x in runs)
    batches = [(e.data.get("batch") or {}) for x in runs for e in st.events(x["run_id"])
               if e.type == "llm_call"]
    shared = [b for b in batches if b.get("across_items")]
    assert shared and all(b["mode"] == "llama_cpp" and b["size"] > 1 for b in shared)
    # their wall times are latencies under sharing, and the eval says so
    from workbench.eval import queries as Q
    rows = st.query("SELECT items_at_once, cpu_others FROM eval_items")
    assert {x["items_at_once"] for x in rows} == {4}
    assert all(0.0 <= x["cpu_others"] <= 1.0 for x in rows)
    assert any("vanilla: 4" in line and "run several at once" in line
               for line in Q.timing_notes(Q.efficiency(st, r.eval_id)))


def test_judge_same_backend_labels_and_scores(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    be = ScriptedBackend.from_table([{"match": "verdict", "text": '{"verdict": "correct"}'},
                                     {"match": "Accuracy", "text": '{"Accuracy": "True"}'}]
                                    + answer_rules())
    r = _runner(st, EvalSpec("toy", ["toy-rag"], judge="same", limit=4, primary="acc_lm"),
                backend=be)
    r.run()
    rows = st.query("SELECT question_id, acc_lm, judge, correct FROM eval_items ORDER BY question_id")
    assert all(x["judge"] == "local:scripted" for x in rows)
    # q003 is refused -> incorrect without a judge call; the rest judged correct
    assert [x["acc_lm"] for x in rows] == [1.0, 1.0, 1.0, 0.0]
    pv = st.query("SELECT prompt_versions FROM runs LIMIT 1")[0]["prompt_versions"]
    assert pv["judge"].startswith("judge-")


def test_export_csv_and_parquet(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    r = _runner(st)
    r.run()
    n = export_eval(st, r.eval_id, str(tmp_path / "e.csv"), "csv")
    assert n == r.n_planned
    lines = (tmp_path / "e.csv").read_text().splitlines()
    assert len(lines) == n + 1 and "item_key" in lines[0] and "question" in lines[0]
    export_eval(st, r.eval_id, str(tmp_path / "e.parquet"), "parquet")
    import pyarrow.parquet as pq
    t = pq.read_table(tmp_path / "e.parquet")
    assert t.num_rows == n and "config_hash" in t.column_names and "answer" in t.column_names
    with pytest.raises(ValueError):
        export_eval(st, "x'; DROP TABLE runs; --", str(tmp_path / "x.csv"))


# -- the CLI: kill midway, resume ---------------------------------------------------------

def _import_toy(home: Path, n: int) -> None:
    src = home.parent / "toyq.jsonl"
    src.write_text("\n".join(json.dumps({"id": f"t{i:03d}", "question": f"Where is item{i}?",
                                         "answers": [f"place{i}"], "hops": 1 + i % 2})
                             for i in range(n)))
    from workbench.datasets import import_dataset
    import_dataset("jsonl", src, name="toyq")


def _cli(args, home, **kw):
    env = {**os.environ, "WORKBENCH_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(ROOT)}
    # SIGINT back to its default: a shell without job control (CI scripts, `cmd &`) starts its
    # children with SIGINT ignored, and Python then never raises KeyboardInterrupt
    kw.setdefault("preexec_fn", lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    return subprocess.Popen([sys.executable, "-m", "workbench", "eval", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def assert_resumed_exactly_n(st: Store, n: int) -> None:
    """Each of the n items and runs stored once, the eval finished, t001 answered right."""
    rows = st.query("SELECT count(*) AS n, count(DISTINCT item_key) AS k, "
                    "count(DISTINCT question_id) AS q FROM eval_items")[0]
    assert rows == {"n": n, "k": n, "q": n}
    assert st.query("SELECT count(*) AS n FROM runs")[0]["n"] == n
    assert st.query("SELECT status FROM eval_batches")[0]["status"] == "finished"
    assert st.query("SELECT correct FROM eval_items WHERE question_id = 't001'")[0]["correct"]


def kill_after_stored(p, st: Store, at_least: int) -> None:
    """SIGKILL the eval process ``p`` (no chance to clean up) once it has stored
    ``at_least`` items, asserting it was still running then."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.3)
        try:
            if st.query("SELECT count(*) AS n FROM eval_items")[0]["n"] >= at_least:
                break
        except Exception:     # the writer holds the file for a moment
            continue
    assert p.poll() is None, p.communicate()
    os.kill(p.pid, signal.SIGKILL)
    p.communicate()


def test_cli_killed_midway_resumes_without_duplicates(tmp_path, isolated_home):
    from workbench.methods import all_methods
    if "vanilla" not in all_methods():
        pytest.skip("the vanilla baseline has not landed")
    n = 60
    _import_toy(isolated_home, n)
    table = tmp_path / "table.json"
    # slow enough that a loaded machine still catches it mid-run (60 items, 12 s)
    table.write_text(json.dumps({"rules": [{"match": "item1?", "text": "place1"}],
                                 "default": "nowhere", "delay_ms": 200}))
    args = ["--dataset", "toyq", "--methods", "vanilla", "--scripted", str(table), "--judge", "off"]
    p = _cli(args, isolated_home)
    st = Store()
    kill_after_stored(p, st, 5)
    before = st.query("SELECT count(*) AS n FROM eval_items")[0]["n"]
    assert 5 <= before < n
    b = st.query("SELECT eval_id, status FROM eval_batches")[0]
    assert b["status"] == "running"      # its process died: resumable
    table.write_text(json.dumps({"rules": [{"match": "item1?", "text": "place1"}], "default": "nowhere"}))
    p2 = _cli(["resume", "--scripted", str(table), "--no-progress"], isolated_home)
    out, err = p2.communicate(timeout=180)
    assert p2.returncode == 0, err
    assert f"eval {b['eval_id']}:" in err and f"{before} already done" in err
    assert_resumed_exactly_n(st, n)
    # export from the CLI
    p3 = _cli(["export", b["eval_id"], "--format", "csv", "--out", str(tmp_path / "x.csv")],
              isolated_home)
    out, err = p3.communicate(timeout=120)
    assert p3.returncode == 0 and f"wrote {n} rows" in out
    p4 = _cli(["show", b["eval_id"]], isolated_home)
    out, err = p4.communicate(timeout=120)
    assert p4.returncode == 0 and "vanilla" in out


def test_cli_sigint_marks_interrupted(tmp_path, isolated_home):
    from workbench.methods import all_methods
    if "vanilla" not in all_methods():
        pytest.skip("the vanilla baseline has not landed")
    _import_toy(isolated_home, 50)
    table = tmp_path / "table.json"
    # slow enough that a loaded machine still catches it mid-run (50 items, 12.5 s)
    table.write_text(json.dumps({"rules": [], "default": "x", "delay_ms": 250}))
    p = _cli(["--dataset", "toyq", "--methods", "vanilla", "--scripted", str(table),
              "--judge", "off"], isolated_home)
    st = Store()
    # The plan line comes just before the first item; polling the store instead can miss the
    # whole run on a loaded machine (the writing process holds the file most of the time).
    seen = []
    while not any("50 items" in line for line in seen):
        line = p.stderr.readline()
        assert line, "".join(seen) + p.communicate()[1]       # ended before planning
        seen.append(line)
    time.sleep(2.0)                      # a few items in; the 50 take 12.5 s
    assert p.poll() is None, p.communicate()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    b = st.query("SELECT eval_id, status, n_done FROM eval_batches")[0]
    assert f"python -m workbench eval resume {b['eval_id']}" in err, err
    assert b["status"] == "interrupted"
    assert b["n_done"] == st.query("SELECT count(*) AS n FROM eval_items")[0]["n"] \
        == st.query("SELECT count(*) AS n FROM runs")[0]["n"]


# -- evaluation knobs ----------------------------------------------------------------------

class _Fixed:
    name = "fixed"

    def search(self, query, k=5):
        return [Hit(f"p{i}", "", f"text {i}", "bm25", 1.0 / (i + 1), i + 1) for i in range(k)]


def test_noise_retriever_is_seeded_positioned_and_excludes_retrieved():
    from workbench.datasets.base import Passage
    corpus = [Passage(f"p{i}", "", f"text {i}") for i in range(50)]
    mk = lambda **kw: K.KnobRetriever(_Fixed(), name="bm25", corpus=corpus, question_id="q1", **kw)  # noqa: E731
    a = mk(noise_k=3).search("question", 2)
    b = mk(noise_k=3).search("question", 2)
    assert [h.id for h in a] == [h.id for h in b]                 # same seed, same noise
    assert [h.id for h in a[:2]] == ["p0", "p1"] and len(a) == 5
    noise = [h for h in a if h.meta.get("noise")]
    assert len(noise) == 3 and not {h.id for h in noise} & {"p0", "p1"}
    assert [h.rank for h in a] == [1, 2, 3, 4, 5]
    c = mk(noise_k=3, noise_seed=1).search("question", 2)
    assert [h.id for h in c] != [h.id for h in a]
    pre = mk(noise_k=2, noise_position="prepend").search("question", 2)
    assert all(h.meta.get("noise") for h in pre[:2])
    assert len(mk(top_k=4).search("question", 2)) == 4


def test_idk_backend_appends_instruction_to_free_text_only():
    be = ScriptedBackend(default='{"a": 1}')
    w = K.IdkBackend(be)
    from workbench.llm.base import GenParams
    w.generate([{"role": "user", "content": "Q?"}], GenParams())
    w.generate([{"role": "user", "content": "Q?"}], GenParams(json_schema={"type": "object"}))
    assert K.IDK_INSTRUCTION in be.calls[0]["prompt"]
    assert K.IDK_INSTRUCTION not in be.calls[1]["prompt"]
    assert w.info is be.info


def test_chunk_size_knob_rechunks_the_corpus():
    from workbench.datasets.base import Passage
    ps = [Passage("a", "A", " ".join(f"w{i}." for i in range(40)))]
    chunks = K.chunk_passages(ps, 10)
    assert len(chunks) >= 4 and all(len(c.text.split()) <= 10 for c in chunks)
    assert chunks[0].id == "a#c0" and chunks[0].meta["parent"] == "a"


def test_presets_resolve_to_method_or_eval_knobs():
    from workbench.methods import all_methods
    ms = all_methods()
    if "standard-rag" not in ms:
        pytest.skip("standard-rag has not landed")
    assert presets.support("top_k", ms["standard-rag"]) == "method"
    assert presets.support("noise_k", ms["standard-rag"]) == "eval"
    if "vanilla" in ms:
        assert presets.support("noise_k", ms["vanilla"]) == "none"
        assert presets.support("idk_prompt", ms["vanilla"]) == "eval"
    for name in presets.PRESETS:
        sweep = presets.to_sweep(name, ms)
        spec = apply_sweep(EvalSpec("demo", []), sweep)
        vs = plan_variants(spec, ms)
        assert len(vs) == len(presets.PRESETS[name].values), name
        assert spec.preset == name
    d = presets.describe("crag-noise", ms)
    assert d["support"]["standard-rag"]["noise_k"] == "eval"


def test_scripted_backend_spec_with_delay():
    be = make_backend({"kind": "scripted", "table": [], "default": "x", "delay_ms": 20})
    t0 = time.perf_counter()
    assert be.generate("hi").text == "x"
    assert time.perf_counter() - t0 >= 0.02
