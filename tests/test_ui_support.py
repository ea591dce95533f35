"""Fixtures for the UI tests: a toy dataset and toy methods, registered as a UI plug-in.

Import this module (or set ``WORKBENCH_UI_PLUGINS=tests.test_ui_support`` for a
``streamlit run`` subprocess) to get dataset ``ui-toy`` and methods ``ui-toy`` (graph)
and ``ui-toy-mindmap``. Passages and scripted model output carry XSS payloads so every
page is exercised with hostile text.
"""
from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from typing import Iterator

from workbench import trace as T
from workbench.config import knob
from workbench.datasets.base import Passage, Question
from workbench.knowledge.types import Hit
from workbench.methods.base import Method, RunContext

XSS_SCRIPT = "<script>window.__xss = 1; alert('xss')</script>"
XSS_IMG = '<img src=x onerror="window.__xss=2;alert(1)">'
ANSWER = "Christopher Nolan"

PASSAGES = [
    Passage("p1", "Inception", "Inception is a 2010 film directed by Christopher Nolan. " + XSS_IMG),
    Passage("p2", "Christopher Nolan", "Christopher Nolan is a British-American film director. "
            + XSS_SCRIPT),
    Passage("p3", "Dunkirk", "Dunkirk is a 2017 war film written and directed by Christopher Nolan."),
    Passage("p4", "Interstellar", "Interstellar (2014) was scored by Hans Zimmer."),
]
QUESTIONS = [
    Question("tq1", "Who directed Inception?", answers=[ANSWER], hops=1, type="single",
             meta={"demo": True}),
    Question("tq2", "Who scored the film Interstellar?", answers=["Hans Zimmer"], hops=1,
             meta={"demo": True}),
    Question("tq3", "Which " + XSS_IMG + " director made Dunkirk?", answers=[ANSWER], hops=2),
]


class ToyRetriever:
    def __init__(self, name: str = "bm25"):
        self.name = name

    def search(self, query: str, k: int = 5) -> list[Hit]:
        words = {w.strip("?.,").lower() for w in query.split() if len(w) > 3}
        scored = []
        for p in PASSAGES:
            s = sum(1.0 for w in words if w in (p.title + " " + p.text).lower())
            scored.append((s, p))
        scored.sort(key=lambda x: -x[0])
        return [Hit(p.id, p.title, p.text, self.name, float(s), i + 1)
                for i, (s, p) in enumerate(scored[:k])]


class ToyDataset:
    name = "ui-toy"

    def __init__(self):
        self.questions = list(QUESTIONS)
        self.passages = list(PASSAGES)

    def question(self, qid: str) -> Question:
        for q in self.questions:
            if q.id == qid:
                return q
        raise KeyError(qid)

    def retriever(self, kind: str = "bm25", **opts) -> ToyRetriever:
        return ToyRetriever(kind)

    def kg(self):
        import networkx as nx
        g = nx.MultiDiGraph()
        g.add_node("nolan", name="Christopher Nolan")
        g.add_node("inception", name="Inception")
        g.add_node("xss", name="Bad " + XSS_SCRIPT)
        g.add_edge("inception", "nolan", relation="directed_by")
        g.add_edge("xss", "nolan", relation="knows " + XSS_IMG)
        for i in range(40):                       # a hub, to exercise the caps
            g.add_node(f"f{i}", name=f"Film {i}")
            g.add_edge(f"f{i}", "nolan", relation="directed_by")
        return g


@dataclass
class ToyConfig:
    steps: int = knob(3, "Number of step nodes", min=1, max=200)
    k: int = knob(2, "Passages per step", min=1, max=5)
    tau: float = knob(3.0, "Perplexity threshold (lower is sufficient)", min=0.0, max=100.0)
    delay: float = knob(0.0, "Seconds to sleep per step (live-view tests)", min=0.0, max=10.0)
    mode: str = knob("plain", "A choice knob", choices=["plain", "fancy"])
    no_review: bool = knob(False, "An ablation toggle", ablation=True)


class ToyMethod(Method):
    name = "ui-toy"
    title = "UI toy method"
    kind = "text"
    view = "graph"
    Config = ToyConfig
    description = "Test method: steps with retrieval and perplexity-scored evaluation."
    thresholds = {"perplexity": ("tau", "lower")}

    def run(self, ctx: RunContext, question: str) -> Iterator[T.Event]:
        cfg: ToyConfig = ctx.config
        yield ctx.set_phase("plan")
        yield T.node_added("q", "question", question, state="created")
        steps, ok = [], {}
        for i in range(cfg.steps):
            sid = f"s{i}"
            steps.append(sid)
            yield ctx.set_phase("retrieve")
            yield T.node_added(sid, "step", f"Step {i}: find who is involved ({i})",
                               parents=["q"], layer=1, state="created")
            hits = yield from ctx.retrieve(sid, question, cfg.k, "bm25")
            yield T.node_updated(sid, "retrieved",
                                 knowledge=" ".join(h.text for h in hits)[:300])
            yield ctx.set_phase("evaluate")
            comp = yield from ctx.generate("evaluate", f"evaluate step {i % 3}: {question}",
                                           node_id=sid)
            ppl = comp.scores().perplexity
            yield T.node_scored(sid, {"perplexity": ppl}, {"perplexity": cfg.tau})
            ok[sid] = ppl < cfg.tau
            yield T.node_updated(sid, "sufficient" if ok[sid] else "insufficient")
            if cfg.delay:
                time.sleep(cfg.delay)
        yield ctx.set_phase("answer")
        comp = yield from ctx.generate("answer", f"final answer: {question}", node_id="a")
        yield T.node_added("a", "answer", comp.text, parents=steps, layer=2, state="answered")
        for sid in steps:
            yield T.path_event(f"path-{sid}", ["q", sid, "a"], "selected" if ok[sid] else "pruned")
        yield T.answer(comp.text, node_id="a")


class ToyMindmap(ToyMethod):
    name = "ui-toy-mindmap"
    title = "UI toy mind map"
    view = "mindmap"


def scripted_rules() -> list[dict]:
    """Rules for the scripted backend: step 0 sure, step 1 unsure, output with payloads."""
    return [
        {"match": "evaluate step 0", "text": "Nolan directed it.", "logprob": -0.1},
        {"match": "evaluate step 1", "text": "Maybe " + XSS_SCRIPT, "logprob": -2.0},
        {"match": "evaluate step 2", "text": "It is Nolan.", "logprob": -0.5},
        {"match": "final answer", "text": ANSWER + " " + XSS_IMG, "logprob": -0.2},
    ]


def scripted_backend():
    from workbench.ui.backend import DemoScriptedBackend
    return DemoScriptedBackend.from_table(scripted_rules(), default="I don't know.")


def register() -> None:
    from workbench.ui import data as uidata
    uidata.register_dataset("ui-toy", ToyDataset)
    uidata.register_method(ToyMethod)
    uidata.register_method(ToyMindmap)


def unregister() -> None:
    from workbench.methods import _REGISTRY
    from workbench.ui import data as uidata
    uidata._EXTRA_DATASETS.pop("ui-toy", None)
    for n in ("ui-toy", "ui-toy-mindmap"):
        _REGISTRY.pop(n, None)


@contextlib.contextmanager
def toy_ui(monkeypatch) -> Iterator[None]:
    """The pages on the toy dataset and methods with the scripted backend, the settings file
    pointing at them; host variables of the shell that runs the tests do not leak in."""
    from workbench import settings as settings_mod
    from workbench.ui import backend
    from workbench.ui import widgets as W
    monkeypatch.setenv("WORKBENCH_UI_WARM", "0")
    for var in ("WORKBENCH_STORE", "WORKBENCH_SERVER_URLS", "WORKBENCH_SHARED"):
        monkeypatch.delenv(var, raising=False)
    register()
    backend.set_override(scripted_backend())
    W._STORES.clear()
    s = settings_mod.load()
    s.dataset = "ui-toy"
    settings_mod.save(s)
    try:
        yield
    finally:
        backend.clear_override()
        unregister()
        W._STORES.clear()


# As a plug-in of a `streamlit run` subprocess (WORKBENCH_UI_PLUGINS names this module).
if __name__ in os.environ.get("WORKBENCH_UI_PLUGINS", "").split(","):
    register()


def test_toy_fixtures_run_end_to_end(tmp_path):
    from workbench.execution import run_to_end
    from workbench.methods.base import RunContext
    ctx = RunContext(llm=scripted_backend(), config=ToyConfig(), retrievers={"bm25": ToyRetriever()})
    tr = run_to_end(ToyMethod(), ctx, QUESTIONS[0].question)
    assert tr.status == "finished"
    assert tr.nodes["s0"].state == "sufficient" and tr.nodes["s1"].state == "insufficient"
    assert ANSWER in tr.answer["text"]
