"""One method, one package: a toy method added from a folder outside the repository (its
Method subclass, Config, prompts and declarations) is registered, runs on the scripted
backend with a trace that meets the event schema, and its declared failure tags, what-if
nodes and preselection reach the central modules that read declarations; and no central
module names a method."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workbench import annotations as A
from workbench import config as cfgmod
from workbench import events as E
from workbench import trace as T
from workbench.knowledge.types import Hit
from workbench.llm.scripted import ScriptedBackend
from workbench.methods import all_methods, get_method, register_from, unregister
from workbench.methods.base import RunContext
from workbench.methods.graph import trace_problems
from workbench.execution import run_to_end

ROOT = Path(__file__).resolve().parents[1]
GENERAL_TAGS = {"answer_lost", "parse_failure", "gold_wrong", "other"}

TOY = {
    "__init__.py": '''
        """First hit: answer from the single best passage (a toy method)."""
        from . import declarations  # noqa: F401  (declares the event types)
        from .config import FirstHitConfig
        from .method import FirstHit
        ''',
    "config.py": '''
        from dataclasses import dataclass

        from workbench.config import knob


        @dataclass
        class FirstHitConfig:
            retriever: str = knob("default", "Retriever (default = the Settings choice).",
                                  choices=["default", "bm25", "dense", "hybrid"])
            passage_chars: int = knob(400, "Characters of the passage in the prompt.",
                                      min=50, max=4000)
            answer_max_tokens: int = knob(32, "Token budget of the answer.", min=4, max=512)
        ''',
    "prompts.py": '''
        VERSION = "first-hit-1"
        TAG = "Answer from this passage only."


        def answer(passages, question):
            return [{"role": "system", "content": TAG},
                    {"role": "user", "content": f"{passages}\\n\\nQuestion: {question}\\n"
                                                "Short answer:"}]
        ''',
    "declarations.py": '''
        from workbench.events import declare
        from workbench.methods.events import event

        SOURCE = "First hit"
        NODE_KINDS = ("question", "retrieval", "answer")
        FAILURE_TAGS = ("retrieval_error", "generation_error", "verbose_answer")
        WHATIF_NODES = {"evidence": r"r\\d+", "step": r"r\\d+"}
        THRESHOLDS = {}
        EVENTS = (
            event("first_hit_chosen", SOURCE, "The passage the answer is written from.",
                  "doc_id rank", node=True),
        )
        declare(*EVENTS)
        ''',
    "method.py": '''
        from typing import Iterator

        from workbench import trace as T
        from workbench.methods.generation import greedy, score_dict
        from workbench.methods.graph import question_node
        from workbench.methods.passages import format_passages, hit_brief, retriever_name
        from workbench.methods.base import Method, RunContext

        from . import declarations as D
        from . import prompts as P
        from .config import FirstHitConfig


        class FirstHit(Method):
            name = "first-hit"
            title = "First hit (one passage, one call)"
            kind = "text"
            view = "graph"
            Config = FirstHitConfig
            prompt_version = P.VERSION
            description = "Retrieves the best passage for the question and answers from it."
            node_kinds = D.NODE_KINDS
            failure_tags = D.FAILURE_TAGS
            whatif_nodes = D.WHATIF_NODES
            thresholds = D.THRESHOLDS
            preferred = True

            def run(self, ctx: RunContext, question: str) -> Iterator[T.Event]:
                cfg: FirstHitConfig = ctx.config
                yield ctx.set_phase("retrieve")
                qid, ev = question_node(ctx, question)
                yield ev
                rid = ctx.node_id("r")
                yield T.node_added(rid, "retrieval", question, parents=[qid], layer=1)
                hits = yield from ctx.retrieve(rid, question, 1,
                                               retriever_name(ctx, cfg.retriever))
                yield T.node_updated(rid, "retrieved", docs=[hit_brief(h) for h in hits])
                yield T.custom("first_hit_chosen", rid, doc_id=hits[0].id, rank=1)
                yield ctx.set_phase("answer")
                aid = ctx.node_id("a")
                prompt = P.answer(format_passages(hits, cfg.passage_chars), question)
                comp = yield from ctx.generate("answer", prompt, greedy(cfg.answer_max_tokens),
                                               node_id=aid, prompt_version=P.VERSION)
                text = comp.text.strip()
                yield T.node_added(aid, "answer", text, parents=[rid], layer=2,
                                   state="answered")
                sc = score_dict(comp)
                yield T.node_scored(aid, {"perplexity": sc["perplexity"]})
                yield T.answer(text, node_id=aid, confidence=sc.get("confidence"))
        ''',
}


class OneRetriever:
    name = "bm25"

    def search(self, query, k=5):
        return [Hit("d1", "Spirited Away", "Directed by Hayao Miyazaki, born in Tokyo.",
                    "bm25", 1.0, 1)][:k]


def builtin() -> dict[str, type]:
    """The methods of the package (not toys other tests register for a while)."""
    return {n: c for n, c in all_methods().items() if c.__module__.startswith("workbench.")}


@pytest.fixture
def toy(tmp_path):
    pkg = tmp_path / "first_hit_toy"
    pkg.mkdir()
    for name, text in TOY.items():
        (pkg / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    names = register_from(tmp_path)
    try:
        yield names
    finally:
        unregister(*names)
        for t in ("first_hit_chosen",):
            E._DECLARED.pop(t, None)
        for m in [m for m in sys.modules if m == "first_hit_toy" or
                  m.startswith("first_hit_toy.")]:
            del sys.modules[m]
        if str(tmp_path) in sys.path:
            sys.path.remove(str(tmp_path))


def test_a_method_package_from_a_folder_registers_runs_and_meets_the_schema(toy):
    assert toy == ["first-hit"] and "first-hit" in all_methods()
    assert E.strict()                      # tests/conftest.py: the reducer refuses bad events
    spec = E.spec("first_hit_chosen")
    assert spec is not None and spec.source == "First hit" and spec.required == ("doc_id", "rank")
    m = get_method("first-hit")

    def ctx():
        be = ScriptedBackend().add("Answer from this passage only.", "Tokyo")
        return RunContext(llm=be, config=cfgmod.build(m.Config, {"retriever": "bm25"}),
                          retrievers={"bm25": OneRetriever()})
    events = list(m.run(ctx(), "Where was the director of Spirited Away born?"))
    assert not [p for ev in events for p in E.problems(ev)]
    assert "first_hit_chosen" in {ev.type for ev in events}
    tr = run_to_end(m, ctx(), "Where was the director of Spirited Away born?")
    assert tr.answer["text"] == "Tokyo" and len(tr.llm_calls) == 1
    assert [n.kind for n in tr.nodes.values()] == list(m.node_kinds)
    assert not trace_problems(tr)
    # an event that breaks the toy's own declaration is refused in strict mode
    with pytest.raises(E.EventSchemaError):
        T.Trace().apply(T.custom("first_hit_chosen", "r1", rank=1))


def test_the_toy_methods_declarations_reach_the_central_modules(toy):
    from workbench.ui import whatif_view as WV
    from workbench.ui import widgets as W
    # the annotation taxonomy reads each method's failure_tags
    for tag in ("retrieval_error", "generation_error", "verbose_answer"):
        assert "first-hit" in A.TAGS[tag].methods
    assert "first-hit" not in A.TAGS["planning_error"].methods
    assert [t.id for t in A.tags_for("first-hit")] == ["retrieval_error", "generation_error",
                                                       "verbose_answer"]
    # the what-if reads whatif_nodes
    o = WV.node_options("first-hit", None, T.Node("r1", "retrieval", ""))
    assert (o["evidence"], o["step"], o["known"]) == (True, True, True)
    assert not WV.node_options("first-hit", None, T.Node("a2", "answer", ""))["evidence"]
    # the pages' default pick reads preferred
    names = sorted(all_methods())
    assert W.default_method(["zz-other", "first-hit"]) == "first-hit"
    assert "first-hit" in [n for n in names if all_methods()[n].preferred]


def test_unregistered_after_the_toy_test():
    assert "first-hit" not in all_methods() and E.spec("first_hit_chosen") is None


def test_no_central_module_names_a_method():
    """Central modules read the methods' declarations; only workbench/methods/ (the packages
    and the registry) names a method."""
    out = subprocess.run(
        "grep -rnE '\"(crp-rag|par-rag|coggrag|frag|ircot|standard-rag|vanilla)\"' "
        "workbench pages streamlit_app.py --include=*.py | grep -v workbench/methods/",
        shell=True, cwd=ROOT, capture_output=True, text=True)
    assert out.stdout == "", f"central modules name methods:\n{out.stdout}"
    # the same check without grep, so it also holds where grep is missing
    pat = re.compile(r'"(crp-rag|par-rag|coggrag|frag|ircot|standard-rag|vanilla)"')
    files = [ROOT / "streamlit_app.py", *(ROOT / "workbench").rglob("*.py"),
             *(ROOT / "pages").rglob("*.py")]
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in files
            if "workbench/methods/" not in p.relative_to(ROOT).as_posix()
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if pat.search(line)]
    assert hits == []


def test_every_methods_declarations_are_well_formed():
    """Each registered method declares node kinds, failure tags from the taxonomy and what-if
    patterns that compile; one reference method and the preselections exist."""
    ms = builtin()
    for name, cls in ms.items():
        assert cls.node_kinds and "question" in cls.node_kinds, name
        assert set(cls.failure_tags) <= set(A.TAGS), (name, set(cls.failure_tags) - set(A.TAGS))
        assert isinstance(cls.whatif_nodes, dict), name
        assert set(cls.whatif_nodes) <= {"evidence", "step", "sufficiency", "review"}, name
        for pat in cls.whatif_nodes.values():
            re.compile(pat)
    assert sum(cls.reference for cls in ms.values()) == 1
    assert any(cls.preferred for cls in ms.values())
    assert any(cls.eval_default for cls in ms.values())
    # the general tags apply to every method; every other tag is some method's declaration
    assert {t.id for t in A.TAXONOMY if not t.methods} == GENERAL_TAGS


def test_stored_runs_hold_only_their_methods_declared_node_kinds():
    import gzip
    import json
    ms = builtin()
    seen = set()
    for f in sorted((ROOT / "tests" / "fixtures" / "stored_runs").glob("*.json.gz")):
        d = json.loads(gzip.open(f).read())
        method = d["run"]["method"]
        kinds = {e["data"].get("kind") for e in d["events"] if e["type"] == "node_added"}
        assert kinds <= set(ms[method].node_kinds), (f.name, kinds - set(ms[method].node_kinds))
        seen.add(method)
    assert seen == set(ms)


def test_the_methods_path_variable_registers_a_folder(tmp_path):
    pkg = tmp_path / "first_hit_toy"
    pkg.mkdir()
    for name, text in TOY.items():
        (pkg / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    import os
    env = {**os.environ, "WORKBENCH_METHODS_PATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", "from workbench.methods import all_methods; "
                          "print(' '.join(all_methods()))"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "first-hit" in out.stdout.split() and "crp-rag" in out.stdout.split()


def test_a_flat_module_registers_too(tmp_path):
    """A method may still be one module (a flat file), in the package or from a folder."""
    (tmp_path / "one_file_toy.py").write_text(textwrap.dedent('''
        from workbench.methods.base import Method


        class OneFile(Method):
            name = "one-file-toy"
            node_kinds = ("question", "answer")
        ''').lstrip(), encoding="utf-8")
    try:
        assert register_from(tmp_path / "one_file_toy.py") == ["one-file-toy"]
        assert all_methods()["one-file-toy"].__name__ == "OneFile"
    finally:
        unregister("one-file-toy")
        sys.modules.pop("one_file_toy", None)
        if str(tmp_path) in sys.path:
            sys.path.remove(str(tmp_path))
    assert "one-file-toy" not in all_methods()
