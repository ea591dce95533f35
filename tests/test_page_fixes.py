"""The Knowledge, Compare and Annotate pages as a reader meets them: entities found by their
full name, Compare's columns side by side in time (or a plain place in line), the annotation
form that resets after Save. (Home's recent runs opening on Runs: tests/test_browser_walk.py.)"""
from __future__ import annotations

import math
import threading

import pytest

from tests import test_ui_support as S
from tests.test_ui_pages import app, no_errors, populate
from workbench.store import Store
from workbench.ui import backend, live
from workbench.viz import kgview


@pytest.fixture
def ui(isolated_home, monkeypatch):
    with S.toy_ui(monkeypatch):
        yield isolated_home


# ------------------------------------------------------------------ Knowledge graph

def test_demo_kg_entity_found_by_full_name_alias_and_folded_text():
    from workbench.datasets import load_dataset
    kg = load_dataset("demo").kg()
    for q in ("Christopher Nolan", "christopher nolan", "Chris Nolan", "nolan CHRISTOPHER"):
        assert kgview.search_entities(kg, q)[0][:2] == ("m.christopher_nolan",
                                                        "Christopher Nolan"), q
    assert kgview.search_entities(kg, "Chris Nolan")[0][3] == "Chris Nolan"   # via its alias
    assert kgview.search_entities(kg, "Dusseldorf")[0][1] == "Düsseldorf"     # accents folded
    assert kgview.search_entities(kg, "düsseldorf")[0][1] == "Düsseldorf"


def test_demo_kg_ego_network_is_labelled_by_name_and_never_overlaps():
    from workbench.datasets import load_dataset
    kg = load_dataset("demo").kg()
    for hops in (1, 2, 3):
        v = kgview.neighbourhood(kg, ["m.christopher_nolan"], hops=hops, per_node=12, cap=120,
                                 selected="m.christopher_nolan")
        ents = [n for n in v["nodes"] if n["state"] != "more"]
        assert not any(n["label"].startswith("m.") for n in ents)
        assert ents[0]["plain"] == "Christopher Nolan" and ents[0]["x"] == ents[0]["y"] == 0
        pts = [(n["x"], n["y"]) for n in v["nodes"]]
        gap = min(math.dist(a, b) for i, a in enumerate(pts) for b in pts[i + 1:])
        assert gap >= kgview.GAP - 1, (hops, gap)
        labelled = [e for e in v["edges"] if e["label"]]
        sel = v["selected"]
        assert labelled and all(sel in (e["from"], e["to"]) for e in labelled)
    assert max(n["x"] for n in v["nodes"]) > 0 and len(ents) > 13     # 3 hops reach further


def test_run_paths_are_highlighted_and_pulled_into_the_view():
    from workbench.datasets import load_dataset
    from workbench.trace import Trace, Event, RETRIEVED, node_added
    kg = load_dataset("demo").kg()
    path = [["m.inception", "film.film.directed_by", "m.christopher_nolan"],
            ["m.christopher_nolan", "people.person.place_of_birth", "m.london"]]
    tr = Trace.fold([node_added("st:rerank", "stage", "paths"),
                     Event(RETRIEVED, {"retriever": "kg", "hits": [
                         {"id": "p:1", "meta": {"triples": path}}]}, node_id="st:rerank")])
    paths = kgview.run_paths(tr)
    assert paths == [[tuple(t) for t in path]]
    v = kgview.neighbourhood(kg, ["m.united_kingdom"], hops=1, per_node=3, cap=30, paths=paths)
    on = {n["kg_node"] for n in v["nodes"] if n["state"] == "path"}
    assert {"m.inception", "m.christopher_nolan", "m.london"} <= on
    assert sum(e["color"]["color"] == kgview.PATH_COLOUR for e in v["edges"]) == 2


# ------------------------------------------------------------------ Compare

class _Kind:
    """The toy scripted backend, reporting the given backend kind; calls wait for ``gate``."""

    def __init__(self, kind: str):
        self.inner = S.scripted_backend()
        self.info = type(self.inner.info)(**{**self.inner.info.__dict__, "backend": kind})
        self.gate = threading.Event()
        self.gate.set()

    def generate(self, messages, params=None, on_token=None):
        self.gate.wait(30)
        return self.inner.generate(messages, params, on_token)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _start_compare(at):
    at.selectbox(key="cmp__c0__m").set_value("ui-toy").run()
    at.selectbox(key="cmp__c1__m").set_value("ui-toy-mindmap").run()
    next(b for b in at.button if b.key == "cmp__run").click().run()
    return at.session_state["cmp_batch"]


def test_compare_batch_runs_side_by_side_on_a_backend_serving_calls_together(ui):
    from workbench import settings as settings_mod
    backend.set_override(_Kind("openai_compat"))
    llm = backend.get_llm()
    assert live.serves_calls_together(llm)
    q = S.QUESTIONS[0]
    b = live.LiveBatch([live.Job("ui-toy"), live.Job("ui-toy-mindmap")], q.question,
                       question_id=q.id, dataset="ui-toy", llm=llm, store=Store(),
                       settings=settings_mod.load(), together=True).start()
    assert b.join(30)
    assert [j.status for j in b.jobs] == ["finished", "finished"]
    # each column drew its first node before either run ended: side by side in time
    assert max(j.started + j.first_node_s for j in b.jobs) < min(j.ended for j in b.jobs)
    assert all(Store().get_run(j.run_id) for j in b.jobs)
    assert llm.queue.holder is None               # the batch's one turn was given back


def test_compare_on_a_one_call_model_shows_the_queued_column_place(ui):
    one = _Kind("llama_cpp")
    one.gate.clear()                              # the first column's first call waits
    backend.set_override(one)
    at = app("pages/compare.py")
    b = _start_compare(at)
    assert not b.together
    at.run()
    infos = [i.value for i in at.info]
    assert b.jobs[1].status == "pending" and any(
        "Waiting for the model: position 2 in line, after column 1" in v for v in infos), infos
    one.gate.set()
    assert b.join(30)
    at.run()
    no_errors(at)
    assert b.jobs[1].started >= b.jobs[0].ended
    fig = next(c for c in at.get("plotly_chart"))
    import json
    axes = [k for k in json.loads(fig.proto.spec)["layout"] if k.startswith("yaxis")]
    assert len(axes) == 3                         # calls, tokens, seconds: a scale each
    # once both columns ended, where the two runs part ways is one toggle away
    at.toggle(key="cmp__livediffon").set_value(True).run()
    no_errors(at)
    view = at.session_state["cmp__livediff__view"]
    sides = {n["diff_side"] for n in view["nodes"] if "diff_side" in n}
    assert sides and sides <= {"both", "a", "b"}
    assert any(m.value.startswith(("**First divergence:**", "The runs agree"))
               for m in [*at.markdown, *at.success]), [m.value for m in at.markdown][:5]


# ------------------------------------------------------------------ Annotate

def test_annotate_save_resets_the_form_and_renders_plainly(ui, monkeypatch):
    from workbench.triage import Triage
    from workbench.ui import triage_view as TV
    rid = populate()
    # the toy question has no gold evidence, so triage says "correct" only when told to
    monkeypatch.setattr(TV, "for_run", lambda *a, **k: Triage("correct", "the answer is right",
                                                              hops=["h"], found=[0],
                                                              correct=True))
    at = app("pages/annotate.py", run=rid)
    tags = at.multiselect(key="ann__tags")
    assert tags.proto.select_all == 0          # no "Select all" for Enter to pick
    tags.set_value(["retrieval_miss"]).run()
    at.text_area(key="ann__note").input("first").run()
    next(b for b in at.button if b.key == "ann__save").click().run()
    no_errors(at)
    assert at.multiselect(key="ann__tags").value == [] and at.text_area(key="ann__note").value == ""
    save = next(b for b in at.button if b.key == "ann__save")
    assert save.disabled                      # empty again, until something is chosen
    at.multiselect(key="ann__tags").set_value(["wrong_merge"]).run()
    assert not next(b for b in at.button if b.key == "ann__save").disabled
    saved = [a for a in Store().annotations(rid) if a["target_kind"] == "run"]
    assert saved and saved[0]["tags"] == ["retrieval_miss"] and saved[0]["note"] == "first"
    shown = [m.value for m in at.markdown if "first" in m.value]
    assert shown and "`" not in shown[0] and shown[0].startswith("the run")
    # a correct run: no suggestion to confirm
    assert any("Correct by the stored verdict" in c.value for c in at.caption)
    assert not any(b.label == "Confirm the suggestion" for b in at.button)
