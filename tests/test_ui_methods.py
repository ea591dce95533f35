"""Every registered method, run through the UI's live runner on the demo world with the
scripted demo backend, renders: graph data, inspector data for every node, what-if at
both ends of each declared threshold, and an inert standalone export."""
from __future__ import annotations

import pytest

from workbench import settings as settings_mod
from workbench.store import Store
from workbench.ui import data as uidata
from workbench.ui import live
from workbench.ui.backend import LockedBackend, scripted_backend
from workbench.viz import whatif as wi
from workbench.viz.export import standalone_html
from workbench.viz.graph import build_view
from workbench.viz.inspect import node_details, run_summary


def _demo_available() -> bool:
    try:
        from workbench.datasets import list_datasets
        return any(d.get("name") == "demo" for d in list_datasets())
    except Exception:      # noqa: BLE001
        return False


METHODS = sorted(uidata.method_classes())


CASES = [(m, {}) for m in METHODS] + [("coggrag", {"entity_descriptions": True})]


@pytest.mark.skipif(not _demo_available(), reason="the demo world (data/demo/*.jsonl) is not built")
@pytest.mark.parametrize("name,overrides", CASES,
                         ids=[m + ("-" + "-".join(o) if o else "") for m, o in CASES])
def test_method_renders_in_the_ui(name, overrides, tmp_path):
    s = settings_mod.load()
    s.retriever = "bm25"
    store = Store(tmp_path / "ui-methods.duckdb")
    ds = uidata.get_dataset("demo")
    q = uidata.questions(ds)[0]
    b = live.LiveBatch([live.Job(name, overrides)], q.question, question_id=q.id, dataset="demo",
                       llm=LockedBackend(scripted_backend()), store=store, settings=s).start()
    assert b.join(600), f"{name} did not finish"
    js = b.jobs[0]
    tr = b.view(0)
    assert js.status in ("finished", "refused", "failed"), js.status
    if js.status == "failed":
        assert js.error and "Traceback" not in js.error
    assert tr.nodes, "no node was drawn"
    # the strict reducer checked every event against the schema; the node kinds are the
    # method's declared ones
    declared = set(uidata.method_classes()[name].node_kinds)
    assert {n.kind for n in tr.nodes.values()} <= declared, (
        {n.kind for n in tr.nodes.values()} - declared)
    v = build_view(tr, view=(tr.meta or {}).get("view", "graph"))
    assert len(v["nodes"]) == min(len(tr.nodes), 300) + (1 if len(tr.nodes) > 300 else 0)
    for nid in tr.nodes:
        assert node_details(tr, nid)["id"] == nid
    run_summary(tr)
    for spec in wi.threshold_specs(tr, uidata.method_classes()[name]):
        for t in (spec.lo, spec.hi):
            w = wi.apply(tr, spec, t)
            build_view(tr, whatif=w)
    if overrides.get("entity_descriptions"):     # a node of their own, drawn and inspectable
        assert tr.nodes["descriptions"].kind == "retrieval"
        assert "descriptions" in {n["id"] for n in v["nodes"]}
    html = standalone_html(store.export_run(js.run_id))
    assert "<script>alert" not in html and js.run_id in html
