"""Paper-vs-default tables, the Ask page's preset picker, and leaked rows on Evaluate."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.kg_toy import import_toy_dataset
from tests.test_ui_pages import ui  # noqa: F401  (the pages' fixture: toy data, scripted LLM)
from workbench.methods import all_methods
from workbench.ui.method_docs import paper_rows

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["frag", "crp-rag", "par-rag", "coggrag"])
def test_every_knob_has_a_paper_row(name):
    from workbench import config as C
    cls = all_methods()[name].Config
    rows = paper_rows(cls)
    assert [r["knob"] for r in rows] == [k.name for k in C.knobs(cls) if k.name != "preset"]
    assert any(r["paper"] != C.NOT_IN_PAPER for r in rows)
    for r in rows:
        assert r["differs"] == (r["paper"] not in (C.NOT_IN_PAPER, r["this default"]))
    crp = {r["knob"]: r for r in paper_rows(all_methods()["crp-rag"].Config)}
    assert crp["sufficiency_mode"]["paper"] == "ppl" == crp["sufficiency_mode"]["this default"]


def test_ask_preset_picker_sets_the_knobs_and_records_the_preset(ui):
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/ask.py")
    at.run()
    at.selectbox(key="ask__m").set_value("crp-rag").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="ask__knobs__crp-rag__sufficiency_mode").value == "ppl"
    at.selectbox(key="ask__knobs__crp-rag__preset").set_value("small-model").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="ask__knobs__crp-rag__sufficiency_mode").value == "ppl+unknown"
    assert at.number_input(key="ask__knobs__crp-rag__passage_chars").value == 320
    # a change after the preset is kept on top of it
    at.number_input(key="ask__knobs__crp-rag__top_k").set_value(3).run()
    at.button(key="ask_run").click().run()
    b = at.session_state["ask_batch"]
    assert b.join(60), "the run did not finish"
    assert b.jobs[0].job.overrides == {"preset": "small-model", "top_k": 3}
    from workbench.store import Store
    run = Store().get_run(b.jobs[0].run_id)
    assert run["config"]["preset"] == "small-model"
    assert run["config"]["sufficiency_mode"] == "ppl+unknown" and run["config"]["top_k"] == 3


def test_evaluate_marks_rows_scored_on_what_they_saw(isolated_home, tmp_path):
    from streamlit.testing.v1 import AppTest
    from workbench.eval.runner import EvalRunner, EvalSpec
    from workbench.llm.scripted import ScriptedBackend
    from workbench.store import Store
    import_toy_dataset(tmp_path / "src")
    spec = EvalSpec("toy", ["frag"], split="train", allow_leakage=True, judge="off",
                    sets={"router": "toy:train", "ranker": "tfidf"})
    r = EvalRunner.new(Store(), spec, backend=ScriptedBackend(default="Ilse Varga"))
    r.run()
    at = AppTest.from_file(str(ROOT / "pages" / "7_Evaluate.py"), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    assert any("In-sample rows" in w.value for w in at.warning)
    table = next(d.value for d in at.dataframe if "fitted on" in d.value.columns)
    assert list(table["fitted on"]) == ["toy:train"] and list(table["method"]) == ["frag"]
