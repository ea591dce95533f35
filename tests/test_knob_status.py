"""Knobs that explain themselves: a one-line help, a status, and evidence that resolves; the
method pages' knob tables agree with the code; `methods` shows the status; the knob forms
hide experimental knobs unless asked (or set)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.test_docs_links import anchors
from workbench import config as C
from workbench.eval.knobs import EVAL_KNOBS, EvalKnobs, coerce_eval_knob
from workbench.methods import all_methods

ROOT = Path(__file__).resolve().parents[1]
PAGES = {"crp-rag": "crp-rag.md", "par-rag": "par-rag.md", "coggrag": "coggrag.md",
         "frag": "frag.md", "vanilla": "baselines.md", "standard-rag": "baselines.md",
         "ircot": "baselines.md"}


def every_knob() -> list[tuple[str, C.KnobSpec]]:
    out = [(name, k) for name, cls in all_methods().items() for k in C.knobs(cls.Config)]
    return out + [("eval", k) for k in EVAL_KNOBS.values()]


def test_every_knob_has_a_one_line_help_a_status_and_evidence():
    bad = []
    for owner, k in every_knob():
        d = k.description
        if not d or "\n" in d or len(d) > C.HELP_MAX:
            bad.append(f"{owner}.{k.name}: help of {len(d)} characters or not one line")
        if k.status not in C.STATUSES:
            bad.append(f"{owner}.{k.name}: status {k.status!r}")
        if not k.evidence:
            bad.append(f"{owner}.{k.name}: no evidence link")
    assert not bad, "\n".join(bad)


def test_every_evidence_link_resolves_to_a_heading():
    bad = []
    for owner, k in every_knob():
        page, _, anchor = k.evidence.partition("#")
        path = ROOT / page
        if not (page.startswith("docs/") and path.is_file()):
            bad.append(f"{owner}.{k.name}: no page {page}")
        elif anchor not in anchors(path):
            bad.append(f"{owner}.{k.name}: no heading #{anchor} in {page}")
    assert not bad, "\n".join(bad)


def test_statuses_where_the_measurements_put_them():
    ms = all_methods()
    st = {n: {k.name: k.status for k in C.knobs(ms[n].Config)} for n in PAGES}
    # measured not to help on held-out questions: kept for study
    assert {st["crp-rag"][k] for k in ("named_steps", "query_with_question",
                                       "comparison_demos")} == {"experimental"}
    assert st["coggrag"]["entity_descriptions"] == "experimental"
    # switches a part off (or stands in for one) to compare
    assert {st["crp-rag"][k] for k in ("no_aggregation", "no_evaluation",
                                       "no_iterative_reasoning", "root_probe")} == {"ablation"}
    assert {st["par-rag"]["no_plan"], st["par-rag"]["no_review"]} == {"ablation"}
    # the paper's own variant, and its settings
    assert st["frag"]["feedback"] == "paper" and st["crp-rag"]["retriever"] == "paper"
    assert st["crp-rag"]["tau_ppl"] == st["crp-rag"]["answer_span"] == "extension"
    # every status is in use, and an ablation knob keeps its flag (the forms group them)
    used = {k.status for _, k in every_knob()}
    assert used == set(C.STATUSES)
    assert all(k.ablation for _, k in every_knob() if k.status == "ablation")


def test_status_is_declared_or_derived_and_checked():
    @dataclass
    class Cfg:
        DOCS = "docs/methods/crp-rag.md"
        a: int = C.knob(1, "paper's value", paper=1)
        b: int = C.knob(2, "not in the paper")
        c: bool = C.knob(False, "switch a part off", ablation=True, paper=False)
        d: bool = C.knob(False, "tried", status="experimental", evidence="#the-root-probe")
        e: bool = C.knob(False, "elsewhere", status="ablation",
                         evidence="docs/performance.md#batching-a-runs-calls")

    got = {k.name: (k.status, k.evidence, k.ablation) for k in C.knobs(Cfg)}
    assert got == {"a": ("paper", "docs/methods/crp-rag.md#knobs", False),
                   "b": ("extension", "docs/methods/crp-rag.md#knobs", False),
                   "c": ("ablation", "docs/methods/crp-rag.md#knobs", True),
                   "d": ("experimental", "docs/methods/crp-rag.md#the-root-probe", False),
                   "e": ("ablation", "docs/performance.md#batching-a-runs-calls", True)}
    with pytest.raises(ValueError, match="status"):
        C.knob(1, "x", status="promising")


def _table(name: str) -> dict[str, list[str]]:
    text = (ROOT / "docs" / "methods" / PAGES[name]).read_text(encoding="utf-8")
    m = re.search(rf"^#### `{re.escape(name)}`\n\n(.*?)(?:\n\n|\Z)", text, re.S | re.M)
    assert m, f"no knob table for {name} in {PAGES[name]}"
    lines = m.group(1).splitlines()
    assert lines[0].startswith("| knob | default | range | paper | status |"), lines[0]
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip()[1:-1].split(" | ")]
        rows[cells[0].strip("`")] = cells
    return rows


@pytest.mark.parametrize("name", list(PAGES))
def test_each_method_page_has_one_row_per_knob_with_its_status(name):
    rows = _table(name)
    specs = C.knobs(all_methods()[name].Config)
    assert list(rows) == [k.name for k in specs]
    for k in specs:
        cells = rows[k.name]
        assert cells[4] == k.status, (k.name, cells[4], k.status)
        assert len(cells[5]) >= len(k.description) * 0.5, k.name   # the recorded text is kept


def test_measurements_moved_out_of_the_help_are_on_the_pages():
    crp = _table("crp-rag")
    assert "0.14 against standard RAG's 0.54" in crp["named_steps"][5]
    assert "-0.22 [-0.41, -0.05]" in crp["comparison_demos"][5]
    assert "16 of 25 questions were refused" in crp["tau_ppl"][5]
    cog = _table("coggrag")
    assert "+0.14 [+0.01, +0.30]" in cog["entity_descriptions"][5]


def test_eval_knobs_are_typed_knobs():
    assert list(EVAL_KNOBS) == [k.name for k in C.knobs(EvalKnobs)]
    assert coerce_eval_knob("top_k", "none") == 0 and coerce_eval_knob("top_k", "3") == 3
    with pytest.raises(C.ConfigError):
        coerce_eval_knob("retriever", "colbert")
    with pytest.raises(C.ConfigError):
        coerce_eval_knob("noise_k", "-1")


def test_methods_command_shows_each_knobs_status(capsys):
    from workbench.cli import main
    assert main(["methods", "crp-rag"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\s+named_steps = False \(bool\) \[experimental\]", out, re.M)
    assert re.search(r"^\s+no_evaluation = False \(bool\) \[ablation\]", out, re.M)
    assert re.search(r"^\s+top_k = 5 \(int \[1\.\.20\]\) \[paper\]", out, re.M)
    assert main(["methods", "crp-rag", "--status", "experimental"]) == 0
    names = re.findall(r"^    (\w+) = ", capsys.readouterr().out, re.M)
    assert names == ["named_steps", "query_with_question", "comparison_demos"]
    assert main(["methods", "--json"]) == 0
    got = {m["name"]: {k["name"]: k for k in m["knobs"]} for m in json.loads(capsys.readouterr().out)}
    assert got["coggrag"]["entity_descriptions"]["status"] == "experimental"
    assert got["coggrag"]["epsilon"]["evidence"] == "docs/methods/coggrag.md#on-hotpotqa"
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    assert "eval knobs" in out and re.search(r"^\s+noise_k = 0 .*\[extension\]", out, re.M)


# --- the knob form ---

def _form_app(initial: dict | None = None):
    from streamlit.testing.v1 import AppTest

    def app(initial):
        from workbench.methods import all_methods
        from workbench.ui.knob_inputs import knob_inputs
        import streamlit as st
        st.session_state["out"] = knob_inputs(all_methods()["crp-rag"].Config, "f",
                                              initial=initial)

    return AppTest.from_function(app, args=(initial,), default_timeout=30)


def _keys(at) -> set[str]:
    return {w.key for w in [*at.toggle, *at.selectbox, *at.number_input]}


def test_the_form_hides_experimental_knobs_until_asked():
    at = _form_app().run()
    assert not at.exception, at.exception
    keys = _keys(at)
    assert "f__top_k" in keys and "f__no_aggregation" in keys
    assert not {"f__named_steps", "f__comparison_demos"} & keys
    assert at.toggle(key="f__no_aggregation").help.endswith("status: ablation")
    at.toggle(key="f__show_experimental").set_value(True).run()
    assert {"f__named_steps", "f__comparison_demos"} <= _keys(at)
    # a value set while shown stays shown (and in the overrides) after the toggle goes off
    at.toggle(key="f__named_steps").set_value(True).run()
    at.toggle(key="f__show_experimental").set_value(False).run()
    assert "f__named_steps" in _keys(at) and "f__comparison_demos" not in _keys(at)
    assert at.session_state["out"] == {"named_steps": True}


def test_the_form_shows_a_stored_runs_experimental_value():
    at = _form_app({"query_with_question": True}).run()
    assert not at.exception, at.exception
    keys = _keys(at)
    assert "f__query_with_question" in keys and "f__named_steps" not in keys
    assert at.session_state["out"] == {"query_with_question": True}
