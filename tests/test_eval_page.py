"""The Evaluate page: renders the charts of a stored eval (AppTest), launches an eval and
shows its progress; and an eval of the real default model over 5 HotpotQA questions with
two methods, whose stored results render on the page."""
import json
import threading
import time
from pathlib import Path

import pytest

from workbench import paths
from workbench.eval import jobs
from workbench.eval.runner import EvalRunner, EvalSpec
from workbench.llm.scripted import ScriptedBackend
from workbench.store import Store
from workbench.viz.safe import md_escape

from tests.test_eval_helpers import ToyDataset, answer_rules, toy_methods

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "7_Evaluate.py")


def _apptest():
    from streamlit.testing.v1 import AppTest
    return AppTest.from_file(PAGE, default_timeout=120)


def _charts(at):
    return at.get("plotly_chart")


def test_page_renders_charts_of_a_stored_eval():
    st = Store()
    r = EvalRunner.new(st, EvalSpec("toy", ["toy-rag", "toy-llm"], judge="off",
                                    grid={"noise_k": [0, 2]}),
                       backend=ScriptedBackend.from_table(answer_rules(), default="grey"),
                       dataset=ToyDataset(), method_classes=toy_methods())
    r.run()
    runs = st.query("SELECT run_id FROM runs LIMIT 2")
    st.add_annotation(runs[0]["run_id"], "run", runs[0]["run_id"], ["retrieval_miss"])
    at = _apptest()
    at.run()
    assert not at.exception, at.exception
    heads = [h.value for h in at.subheader]
    for h in ("By hop count", "Cost per question", "Calibration", "Score against a knob",
              "Error modes (annotations)", "Paired differences (same questions)"):
        assert h in heads
    paired = at.dataframe[0].value
    assert len(paired) == 3 and {"diff", "lo", "hi", "mcnemar_p"} <= set(paired.columns)
    assert set(paired["retrieval_a"]) | set(paired["retrieval_b"]) == {"bm25", "none"}
    assert not [w for w in at.warning if "different retrievers" in w.value]   # none is by design
    trail = next(df.value for df in at.dataframe if "runs holding it" in df.value.columns)
    rag = trail[trail["method"] == "toy-rag [noise_k=0]"]
    assert list(rag["stage"]) == ["retrieval", "answer"] and rag["runs holding it"].iloc[1] == 0
    # summary, hops, type, cost, calibration, crag outcomes, crag breakdown, knob, error modes
    assert len(_charts(at)) == 9
    # another metric re-queries everything
    metric_box = next(s for s in at.selectbox if s.label == "Metric")
    metric_box.set_value("crag_score").run()
    assert not at.exception and len(_charts(at)) == 9


def test_page_warns_when_a_pair_searched_with_different_retrievers():
    st = Store()
    EvalRunner.new(st, EvalSpec("toy", ["toy-rag"], judge="off",
                                grid={"toy-rag.retriever": ["bm25", "dense"]}),
                   backend=ScriptedBackend.from_table(answer_rules(), default="grey"),
                   dataset=ToyDataset(), method_classes=toy_methods()).run()
    at = _apptest()
    at.run()
    assert not at.exception, at.exception
    (mixed,) = [w.value for w in at.warning if "different retrievers" in w.value]
    assert md_escape("toy-rag [retriever=bm25] (bm25)") in mixed
    assert md_escape("toy-rag [retriever=dense] (dense)") in mixed


def test_page_warns_when_wall_times_were_taken_beside_other_work():
    st = Store()
    r = EvalRunner.new(st, EvalSpec("toy", ["toy-rag"], judge="off",
                                    grid={"toy-rag.retriever": ["bm25", "dense"]}),
                       backend=ScriptedBackend.from_table(answer_rules(), default="grey"),
                       dataset=ToyDataset(), method_classes=toy_methods())
    r.run()
    at = _apptest()
    at.run()
    assert not [w for w in at.warning if "wall times" in w.value]
    # one item measured while other work took 60% of the CPU
    st.execute("UPDATE eval_items SET cpu_others = 0.6 WHERE item_key = (SELECT min(item_key) "
               "FROM eval_items WHERE variant LIKE '%dense%')")
    st.execute("UPDATE eval_items SET cpu_others = 0.01 WHERE cpu_others IS NULL")
    at = _apptest()
    at.run()
    assert not at.exception, at.exception
    (busy,) = [w.value for w in at.warning if "wall times overstate" in w.value]
    assert md_escape("toy-rag [retriever=dense]: 1 of") in busy
    assert "bm25" not in busy
    # the loading an item's wall time left out is named beside the cost chart
    assert not [c for c in at.caption if "Loaded before" in c.value]
    st.execute("UPDATE runs SET metrics = json_merge_patch(metrics, ?) WHERE run_id = (SELECT "
               "min(run_id) FROM runs)", ['{"warm_up": {"seconds": {"dense index": 12.3}}}'])
    at = _apptest()
    at.run()
    (loaded,) = [c.value for c in at.caption if "Loaded before the first timed item" in c.value]
    assert md_escape("dense index 12.3 s") in loaded


def _toy_folder(home: Path) -> Path:
    d = home.parent / "toyfolder"
    d.mkdir(exist_ok=True)
    (d / "questions.jsonl").write_text("\n".join(json.dumps(
        {"id": f"t{i}", "question": f"Where is item{i}?", "answers": [f"place{i}"], "hops": 1})
        for i in range(4)))
    (d / "passages.jsonl").write_text("\n".join(json.dumps(
        {"id": f"p{i}", "title": f"Item {i}", "text": f"item{i} is in place{i}"}) for i in range(4)))
    return d


def test_page_launches_an_eval_and_shows_progress(isolated_home):
    from workbench.datasets import import_dataset
    from workbench.methods import all_methods
    from workbench.ui import backend as ui_backend
    if "vanilla" not in all_methods():
        pytest.skip("the vanilla baseline has not landed")
    import_dataset("jsonl", _toy_folder(isolated_home), name="toyfolder")
    ui_backend.set_override(ScriptedBackend(default="place1"))
    try:
        at = _apptest()
        at.run()
        assert not at.exception, at.exception
        next(s for s in at.selectbox if s.label == "Dataset").set_value("toyfolder")
        next(m for m in at.multiselect if m.label == "Methods").set_value(["vanilla"])
        next(n for n in at.number_input if n.label.startswith("Questions")).set_value(4)
        next(s for s in at.selectbox if s.label == "LLM judge").set_value("off")
        next(s for s in at.selectbox if s.label == "Split").set_value("all")
        next(n for n in at.number_input if n.label == "Items at once per model").set_value(2)
        at.run()
        next(b for b in at.button if b.label == "Launch eval").click().run()
        assert not at.exception, at.exception
        job = jobs.get(at.session_state["eval_job"])
        jobs.wait(job, 120)
        assert job.status == "finished", job.error
        snap = job.snapshot()
        assert snap["done"] == snap["total"] == 4 and snap["rate"] > 0
        at.run()
        assert not at.exception
        st = Store()
        rows = st.query("SELECT question_id, correct FROM eval_items ORDER BY question_id")
        assert [r["correct"] for r in rows] == [False, True, False, False]
        # summary, hops, cost, calibration: no CRAG charts for questions without CRAG labels,
        # no chart of question types these questions do not have, no empty axes
        assert {c.key for c in _charts(at)} == {"ev_summary", "ev_hops", "ev_eff", "ev_calib"}
        assert any(c.value == "These questions carry no question types." for c in at.caption)
        assert any("Drawn for CRAG questions" in c.value for c in at.caption)
        assert any(s.value.startswith("Finished: 4 of 4 items") for s in at.success)
        # the same eval again, its calls answered from the first's
        first = snap["eval_id"]
        next(m for m in at.multiselect
             if m.label == "Reuse LLM calls of earlier evals").set_value([first])
        next(b for b in at.button if b.label == "Launch eval").click().run()
        assert not at.exception, at.exception
        job = jobs.get(at.session_state["eval_job"])
        jobs.wait(job, 120)
        assert job.status == "finished", job.error
        at.run()
        second = job.snapshot()["eval_id"]
        assert second != first
        assert any(f"4 of 4 LLM calls answered from the stored calls of eval {first}" in i.value
                   for i in at.info)
    finally:
        ui_backend.clear_override()


def test_job_stop_keeps_finished_items(isolated_home):
    st = Store()
    be = ScriptedBackend.from_table(answer_rules(), default="grey")
    from workbench.eval.item_executor import _Delayed
    slow = _Delayed(be, 0.05)
    job = jobs.start(EvalSpec("toy", ["toy-llm"], judge="off"), store=st, backend=slow,
                     dataset=ToyDataset(), method_classes=toy_methods())
    deadline = time.monotonic() + 30
    while (job.progress is None or job.progress.done < 3) and time.monotonic() < deadline:
        time.sleep(0.02)
    job.stop()
    jobs.wait(job, 30)
    assert job.status == "interrupted"
    n = st.query("SELECT count(*) AS n FROM eval_items")[0]["n"]
    assert 3 <= n < 12 and st.query("SELECT count(*) AS n FROM runs")[0]["n"] == n


# -- an eval followed live ------------------------------------------------------------------

class _Gate:
    """A backend whose calls wait until the test lets them through, so the page can be
    looked at with no item finished, with some, and after the last."""

    def __init__(self, inner):
        self.inner, self.info = inner, inner.info
        self.through = threading.Semaphore(0)
        self.asked = 0

    def let(self, n: int) -> None:
        for _ in range(n):
            self.through.release()

    def generate(self, messages, params=None):
        self.asked += 1
        assert self.through.acquire(timeout=60), "the test never let this call through"
        return self.inner.generate(messages, params)

    def score(self, context, continuation):
        return self.inner.score(context, continuation)

    def count_tokens(self, text):
        return self.inner.count_tokens(text)


def _until(cond, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _eval_label(at):
    box = next(s for s in at.selectbox if s.label == "Eval")
    return box.value, box.format_func(box.value)


def test_page_follows_a_running_eval_and_completes_when_it_ends():
    """An eval run by a job of the app: before its first item, with two items stored (the
    third still running), and after the last, the page says what is true at each step."""
    st = Store()
    gate = _Gate(ScriptedBackend.from_table(answer_rules(), default="grey"))
    job = jobs.start(EvalSpec("toy", ["toy-rag", "toy-llm"], judge="off", limit=3), store=st,
                     backend=gate, dataset=ToyDataset(), method_classes=toy_methods())
    try:
        _until(lambda: gate.asked == 1)
        at = _apptest()
        at.session_state["eval_job"] = job.id
        at.run()
        assert not at.exception, at.exception
        line = at.get("progress")[0].text
        assert f"{job.eval_id}: 0/6 items · first item running for" in line, line
        assert "items/s" not in line and "ETA ?" not in line
        assert _eval_label(at)[0] == job.eval_id and "6 items · started" in _eval_label(at)[1]
        assert any(i.value.startswith("Running: 0 of 6 items stored") for i in at.info)
        assert any(c.value == "No item finished yet: the charts appear as items land."
                   for c in at.caption)
        assert not _charts(at)

        gate.let(2)
        _until(lambda: gate.asked == 3)
        # the two finished items are stored although the third does not end
        _until(lambda: st.query("SELECT count(*) AS n FROM eval_items")[0]["n"] == 2, 5)
        at.run()
        assert not at.exception, at.exception
        line = at.get("progress")[0].text
        assert "2/6 items · " in line and "items/s" in line and "ETA 0:" in line, line
        table = next(d.value for d in at.dataframe if "LLM calls" in d.value.columns)
        assert len(table) == 2
        assert {"question", "answer", "correct", "wall time (s)", "LLM calls"} <= set(table.columns)
        assert set(table["question"]) == {"What is the colour of item0?"}
        assert (table["LLM calls"] == 1).all() and (table["wall time (s)"] >= 0).all()
        assert any(i.value.startswith("Running: 2 of 6 items stored") for i in at.info)
        assert {"ev_summary", "ev_eff", "ev_calib"} <= {c.key for c in _charts(at)}
        assert any("metrics: " in c.value and "profile" in c.value for c in at.caption)

        gate.let(100)
        jobs.wait(job, 60)
        assert job.status == "finished", job.error
        at.run()            # what the page's fragment asks for when it sees the eval end
        assert not at.exception, at.exception
        assert _eval_label(at)[0] == job.eval_id
        assert any(s.value.startswith("Finished: 6 of 6 items") for s in at.success)
        assert not [i for i in at.info if i.value.startswith("Running")]
        assert "finished" in at.get("progress")[0].text
        # item 0 of the toy set is a CRAG question; none carries gold evidence to triage
        assert {c.key for c in _charts(at)} == {"ev_summary", "ev_hops", "ev_qtype", "ev_eff",
                                                "ev_calib", "ev_crag", "ev_crag_by"}
        caps = [c.value for c in at.caption]
        assert "Not triaged: toy\\-rag: 3 run(s), the question has no gold evidence \\(no " \
               "supporting passages, decomposition, gold path or answer entities\\)" in caps
        assert "No triaged runs: no run of this eval could be triaged (the reasons are " \
               "listed above)." in caps
        assert not [c for c in caps if "No answer confidences" in c]
    finally:
        gate.let(100)
        jobs.wait(job, 60)


def test_progress_line_is_true_before_the_first_item_and_counts_down_after():
    from workbench.ui.eval_live import progress_text
    snap = {"eval_id": "ev_1", "status": "running", "done": 0, "total": 3, "rate": 0.0,
            "eta_s": None, "elapsed_s": 42.0, "updated": None}
    assert progress_text(snap, now=100.0) == \
        "ev_1: 0/3 items · first item running for 0:00:42 · rate and ETA after the first item"
    snap.update(done=1, rate=0.05, eta_s=40.0, updated=90.0)     # 20 s an item, 10 s ago
    assert progress_text(snap, now=100.0) == \
        "ev_1: 1/3 items · 0.05 items/s (20.0 s per item) · ETA 0:00:30"
    snap.update(status="finished", done=3, elapsed_s=61.0)
    assert progress_text(snap) == "ev_1: 3/3 items · finished in 0:01:01"


def test_knob_chart_without_crag_labels_plots_the_metric():
    from workbench.viz import eval_charts as C
    rows = [{"method": "m", "value": v, "mean": x, "lo": x - 0.1, "hi": x + 0.1, "n": 4,
             "accuracy": None, "hallucination": None, "missing": None, "score": None,
             "score_lo": None, "score_hi": None} for v, x in ((1, 0.2), (3, 0.6))]
    fig = C.knob_response(rows, "top_k", "Exact match")
    named = [t.name for t in fig.data if t.showlegend is not False]
    assert named == ["Exact match"] and list(fig.data[-1].y) == [0.2, 0.6]


class _NoLogprobs:
    """A backend like a server that returns text without token log-probabilities."""

    def __init__(self, inner):
        self.inner, self.info = inner, inner.info

    def generate(self, messages, params=None):
        import dataclasses
        from workbench.llm.base import Token
        c = self.inner.generate(messages, params)
        return dataclasses.replace(c, tokens=[Token(t.id, t.piece, None) for t in c.tokens],
                                   logprobs_available=False)

    def score(self, context, continuation):
        return self.inner.score(context, continuation)

    def count_tokens(self, text):
        return self.inner.count_tokens(text)


def test_page_says_why_calibration_is_empty_and_follows_another_process():
    st = Store()
    EvalRunner.new(st, EvalSpec("toy", ["toy-llm"], judge="off", limit=3),
                   backend=_NoLogprobs(ScriptedBackend.from_table(answer_rules(), default="grey")),
                   dataset=ToyDataset(), method_classes=toy_methods()).run()
    at = _apptest()
    at.run()
    assert not at.exception, at.exception
    caps = [c.value for c in at.caption]
    assert "No answer confidences: this backend (scripted) returns no log-probabilities (3 LLM " \
           "calls, none with them)." in caps, caps
    assert "ev_calib" not in {c.key for c in _charts(at)}
    # marked running by another process (the CLI): followed while that process lives, and
    # called what it is once it is gone
    import subprocess
    import sys
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        st.execute("UPDATE eval_batches SET status = 'running', pid = ?", [other.pid])
        at.run()
        assert any(i.value.startswith("Running: 3 of 3 items stored") and "every 15 s" in i.value
                   for i in at.info), [i.value for i in at.info]
    finally:
        other.kill()
        other.wait()
    at.run()
    assert any(w.value.startswith("Marked running, but no process is running it")
               for w in at.warning)


# -- the real default model ------------------------------------------------------------------

@pytest.fixture(scope="module")
def real_llm():
    """The default model through the registry (so its SHA-256 is known); one thread, which
    stays fast when other processes share the cores (llama.cpp's threads spin)."""
    from workbench.llm.base import LLMError
    from tests.conftest import FAST_MODEL
    from workbench.llm.registry import load_backend
    try:
        return load_backend(None, model=FAST_MODEL, n_ctx=4096, n_threads=1)
    except LLMError as e:
        pytest.skip(f"the default model is not installed: {e}")


def test_real_model_eval_on_hotpotqa_stores_results_and_renders(real_llm, isolated_home):
    default_llm = real_llm
    shared = paths.shared_data_dir()
    src = shared / "hotpotqa-100" / "questions.json" if shared else None
    if src is None or not src.is_file():
        pytest.skip("../shared/data/hotpotqa-100 is absent (a user's clone)")
    from workbench.datasets import import_dataset
    from workbench.methods import all_methods
    ms = all_methods()
    if not {"vanilla", "standard-rag"} <= set(ms):
        pytest.skip("the baselines have not landed")
    import_dataset("hotpotqa", src, name="hotpot100")
    st = Store()
    spec = EvalSpec("hotpot100", ["vanilla", "standard-rag"], limit=5, judge="same",
                    sets={"standard-rag.retriever": "bm25", "standard-rag.top_k": 3})
    progress = []
    r = EvalRunner.new(st, spec, backend=default_llm)
    res = r.run(progress.append)
    assert res.status == "finished" and res.n_done == 10 and len(progress) == 10
    rows = st.query("SELECT * FROM eval_items WHERE eval_id = ?", [r.eval_id])
    assert len(rows) == 10 and {x["method"] for x in rows} == {"vanilla", "standard-rag"}
    assert all(x["judge"] == f"local:{default_llm.info.name}" for x in rows)
    assert all(x["acc_lm"] is not None and x["confidence"] is not None for x in rows)
    assert all(x["hops"] == 2 and x["qtype"] in ("bridge", "comparison") for x in rows)
    runs = st.query("SELECT model_sha256, config_hash, seed, prompt_versions, wall_ms, llm_calls "
                    "FROM runs WHERE eval_id = ?", [r.eval_id])
    assert len(runs) == 10
    assert all(x["model_sha256"] == default_llm.info.sha256 and len(x["model_sha256"]) == 64
               for x in runs)
    assert all(x["prompt_versions"]["judge"] and x["wall_ms"] > 0 and x["llm_calls"] >= 1
               for x in runs)
    at = _apptest()
    at.run()
    assert not at.exception, at.exception
    # HotpotQA carries hop counts, types and gold supports, not CRAG labels
    assert {c.key for c in _charts(at)} == {"ev_summary", "ev_hops", "ev_qtype", "ev_eff",
                                            "ev_calib", "ev_triage"}
