"""The declared event schema (workbench/events.py): strict mode refuses what breaks a
declaration, production tolerates it, and docs/events.md is generated from the declarations."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from workbench import events as E
from workbench import trace as T

ROOT = Path(__file__).resolve().parents[1]


def test_the_test_suite_runs_strict():
    assert E.strict()


def test_an_undeclared_type_is_refused_in_strict_mode_and_kept_without_it(monkeypatch):
    ev = T.custom("from_a_newer_version", "n1", anything=1)
    with pytest.raises(E.EventSchemaError, match="undeclared event type 'from_a_newer_version'"):
        T.Trace().apply(ev)
    monkeypatch.setenv(E.STRICT_ENV, "0")
    tr = T.Trace.fold([T.node_added("n1", "question", "Q?"), ev])
    assert tr.log[0]["type"] == "from_a_newer_version" and tr.nodes["n1"].history


def test_a_missing_required_key_is_refused():
    with pytest.raises(E.EventSchemaError, match="required payload key 'docs'"):
        T.Trace().apply(T.custom("node_retrieved", "v1", query="q", k=3))
    with pytest.raises(E.EventSchemaError, match="required payload key 'src'"):
        T.Trace().apply(T.Event(T.EDGE_ADDED, {"dst": "b"}))


def test_node_events_name_a_node_and_states_are_the_declared_ones():
    assert E.problems(T.node_updated("", "pruned")) == [
        "node_updated: names no node (node_id is empty)"]
    assert "not one of NODE_STATES" in E.problems(T.node_added("n1", "step", "x",
                                                               state="half_done"))[0]
    assert "not one of RUN_STATUSES" in E.problems(T.Event(T.RUN_FINISHED, {"status": "ok"}))[0]
    for s in T.NODE_STATES:
        assert E.problems(T.node_added("n1", "step", "x", state=s)) == []
    for s in T.RUN_STATUSES:
        assert E.problems(T.Event(T.RUN_FINISHED, {"status": s})) == []


def test_every_node_state_has_a_colour():
    """NODE_STATES is the legend's list: a state without a style would draw as 'other'."""
    from workbench.viz.style import STATE_STYLES
    assert set(STATE_STYLES) == set(T.NODE_STATES)


def test_declarations_are_well_formed():
    specs = E.all_specs()
    assert len(specs) >= 90
    for t, s in specs.items():
        assert s.type == t and s.meaning.strip() and "\n" not in s.meaning
        assert not set(s.required) & set(s.optional), t
    core = {t for t, s in specs.items() if s.source == "core"}
    assert core == set(T.CORE_TYPES) | {T.LLM_SCORE}
    # a second, different declaration of a type is an error; the same one is not
    E.declare(specs["kg_partial"])
    with pytest.raises(ValueError, match="declared twice"):
        E.declare(E.EventSpec("kg_partial", "something else"))


def test_declared_scopes_a_toy_declaration():
    with E.declared(E.EventSpec("toy_event", "A toy.", ("x",), source="tests")):
        assert E.problems(T.custom("toy_event", None, x=1)) == []
    assert E.spec("toy_event") is None


def test_every_type_the_methods_emit_is_declared():
    """A static scan of workbench/ for T.custom("...") and the core constructors: a type
    added to a method without a declaration fails here, before any real-model test runs."""
    import ast
    found: set[str] = set()
    for p in (ROOT / "workbench").rglob("*.py"):
        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    and n.func.attr == "custom" and n.args):
                a = n.args[0]
                for c in ([a.body, a.orelse] if isinstance(a, ast.IfExp) else [a]):
                    if isinstance(c, ast.Constant):
                        found.add(c.value)
                    else:
                        found.add("<dynamic: " + ast.unparse(c) + ">")
    from workbench.methods.fitted import ARTEFACT_EVENT
    found.discard("<dynamic: ARTEFACT_EVENT>")
    found.add(ARTEFACT_EVENT)
    assert len(found) > 70
    assert sorted(t for t in found if E.spec(t) is None) == []


def test_docs_events_md_is_up_to_date():
    out = subprocess.run([sys.executable, "-m", "workbench", "events", "--markdown"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (ROOT / "docs" / "events.md").read_text(encoding="utf-8"), (
        "docs/events.md is out of date: python -m workbench events --markdown > docs/events.md")
    assert "| `node_evaluated` |" in out.stdout and "| `run_started` | run started |" in out.stdout


def test_crp_rag_stores_the_evaluation_tokens_once():
    """The evaluation call's tokens live in its llm_call (with their log-probabilities and
    entropies); node_evaluated names that call and the node keeps no copy of them."""
    from tests.test_methods_text_crp import DIAMOND, make_backend, run
    tr = run(make_backend(DIAMOND, {}))
    evaluated = [e for e in tr.log if e["type"] == "node_evaluated"]
    assert evaluated
    for e in evaluated:
        assert "token_logprobs" not in e["data"]
        call = tr.llm_calls[e["data"]["call_id"]]
        assert call["purpose"] == "evaluate" and call["tokens"]
        assert "eval_token_logprobs" not in tr.nodes[e["node_id"]].attrs


def test_a_run_stored_with_the_old_copies_still_reads_and_renders():
    """Runs stored before the copies were dropped keep them: strict reading accepts them and
    the inspector shows the node (its token colours come from the call either way)."""
    from workbench.viz.inspect import node_details
    lps = [["Nolan", -0.1], [".", -0.2]]
    evs = [T.Event(T.RUN_STARTED, {"question": "Who?", "method": "crp-rag"}),
           T.node_added("v1", "question", "Who?"),
           T.Event(T.LLM_CALL, {"prompt": "p", "output": "Nolan.", "purpose": "evaluate",
                                "tokens": [[1, "Nolan", -0.1, None], [2, ".", -0.2, None]]},
                   node_id="v1", llm_call_id="c1"),
           T.custom("node_evaluated", "v1", eval_answer="Nolan.", token_logprobs=lps,
                    mean_nll=0.15, perplexity=1.16, tau_ppl=1.5, verdict="sufficient",
                    unknown=False, ppl_verdict=True, reasons=[], call_id="c1"),
           T.node_updated("v1", "sufficient", eval_answer="Nolan.", eval_token_logprobs=lps)]
    assert all(E.problems(e) == [] for e in evs)
    tr = T.Trace.fold(evs)
    d = node_details(tr, "v1")
    assert d["state"] == "sufficient" and d["llm_calls"][0]["call_id"] == "c1"
    assert tr.nodes["v1"].attrs["eval_token_logprobs"] == lps
