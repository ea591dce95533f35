"""Runs stored before the methods moved into packages render the same graph and inspector.

tests/fixtures/stored_runs/ holds real-model runs of every method on demo questions (SmolLM2
from the GPU check's dry run; CRP-RAG, PAR-RAG and CogGRAG also with the default model, and a
CRP-RAG run the model refused), exported as stored, and beside it what the Runs page drew of it then:
every vis-network node and edge and every inspector headline. A refactor of the methods,
the reducer or the views that changes any of it fails here."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from workbench.viz.export import _trace_of, standalone_html
from workbench.viz.graph import build_view
from workbench.viz.inspect import node_details

FIXTURES = Path(__file__).parent / "fixtures" / "stored_runs"
RUNS = sorted(p.name[:-len(".json.gz")] for p in FIXTURES.glob("*.json.gz"))


def digest(tr: Any) -> dict[str, Any]:
    """What a person sees of a stored run: graph nodes and edges as drawn, and per node the
    inspector's headline fields."""
    v = build_view(tr, view=(tr.meta or {}).get("view", "graph"))
    keep = ("id", "label", "color", "shape", "title", "state", "kind", "plain", "x", "y",
            "from", "to", "dashes", "width", "arrows")
    nodes = [{k: n[k] for k in keep if k in n} for n in v["nodes"]]
    edges = [{k: e[k] for k in keep if k in e} for e in v["edges"]]
    heads = {}
    for nid in tr.nodes:
        d = node_details(tr, nid)
        heads[nid] = {k: d.get(k) for k in ("kind", "state", "text", "perplexity",
                                             "confidence") if k in d}
        heads[nid]["calls"] = [c.get("call_id") for c in d.get("llm_calls") or []]
    return json.loads(json.dumps({"nodes": nodes, "edges": edges, "inspector": heads,
                                  "status": tr.status}, default=str))


def test_every_method_has_a_stored_run():
    from workbench.methods import all_methods
    methods = set()
    for name in RUNS:
        with gzip.open(FIXTURES / f"{name}.json.gz", "rt") as fh:
            methods.add(json.load(fh)["run"]["method"])
    assert set(all_methods()) <= methods


@pytest.mark.parametrize("name", RUNS)
def test_a_run_stored_before_renders_the_same(name):
    with gzip.open(FIXTURES / f"{name}.json.gz", "rt") as fh:
        export = json.load(fh)
    tr = _trace_of(export)
    want = json.loads((FIXTURES / f"{name}.view.json").read_text())
    got = digest(tr)
    assert got["status"] == want["status"] == export["run"]["status"]
    assert got["inspector"] == want["inspector"]
    assert got["edges"] == want["edges"]
    assert got["nodes"] == want["nodes"]
    html = standalone_html(export)
    assert export["run"]["run_id"] in html
