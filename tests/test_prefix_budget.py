"""Sizing the prompt cache from stored runs: the prefix store's choices replayed without a model
(``PolicyReplay``, llm/prefix_store.py) and ``benchmarks/prefix_budget.py``."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from workbench import trace as T
from workbench.config import knob
from workbench.execution import run_to_end
from workbench.llm.base import GenParams
from workbench.llm.prefix_store import PolicyReplay
from workbench.methods.base import Method, RunContext
from workbench.store import Store

from tests.conftest import FAST_MODEL

ROOT = Path(__file__).resolve().parents[1]


def test_a_kind_called_once_a_round_keeps_its_instructions_only_if_the_budget_holds_a_round():
    """As in a CRP-RAG question: several calls with long passages, then one answer-span call
    whose instructions come back only in the next question."""
    often, once = list(range(1000, 1064)), list(range(2000, 2128))
    calls = []
    for r in range(3):
        calls += [often + [10_000 + 1_000 * r + 100 * i + j for j in range(300)] for i in range(3)]
        calls.append(once + [9_000 + r] * 40)
    served = {}
    for budget in (700, 2048):
        replay = PolicyReplay(budget)
        served[budget] = [replay.call(t)[0] for t in calls]
        assert replay.cells() <= budget
    # the once-a-round kind: pushed out by the long prompts under 700 tokens, kept under 2048
    assert [served[700][i] for i in (7, 11)] == [0, 0]
    assert [served[2048][i] for i in (7, 11)] == [128, 128]
    # the frequent kind is served its instructions either way, after its first call
    assert all(served[b][i] == 64 for b in served for i in (1, 2, 4, 5, 6))
    assert sum(served[2048]) > sum(served[700])


@dataclass
class _Cfg:
    rounds: int = knob(1, "rounds")


SYSTEMS = [
    "You summarise passages about films. Keep every name, studio and year; drop opinions. " * 6,
    "You judge whether a summary answers the question. Reply yes or no, then one reason. " * 6,
    "You propose the next step of a plan as one short question about a film. " * 6,
]


class _Kinds(Method):
    """Three kinds of call, each with its own long instructions, in turn."""
    name = "kinds"
    Config = _Cfg

    def run(self, ctx, question):
        yield T.node_added("q", "question", question)
        out = None
        for system in SYSTEMS:
            msgs = [{"role": "system", "content": system}, {"role": "user", "content": question}]
            out = yield from ctx.generate("kind", msgs, GenParams(max_tokens=2), node_id="q")
        yield T.answer(out.text, node_id="q")


def test_the_replay_serves_every_stored_call_what_the_backend_served_it(tmp_path):
    from workbench.llm.llama_cpp_backend import LlamaCppBackend
    from workbench.llm.registry import resolve
    db = tmp_path / "runs.duckdb"
    st = Store(db)
    # the three kinds' kept prompts take 320 tokens: under 300 the store evicts as it goes
    be = LlamaCppBackend(resolve(FAST_MODEL), n_ctx=1024, max_batch=1, prefix_cache_tokens=300)
    try:
        for q in ("Who directed Alien?", "Which studio made Totoro?", "When was Psycho shown?"):
            run_to_end(_Kinds(), RunContext(llm=be, config=_Cfg()), q, store=st)
        evicted = be.prefix_store.stats.evicted
    finally:
        be.close()
    assert evicted >= 1
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "prefix_budget.py"), "--store", str(db),
         "--method", "kinds", "--budgets", "0,300,400", "--check", "300", "--model", FAST_MODEL],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["calls"] == 9 and res["runs"] == 3
    assert res["check"] == {"budget_tokens": 300, "calls": 9, "differ": 0}
    fresh = [b["fresh_prompt_tokens"] for b in res["budgets"]]
    # three kinds in turn under a budget that holds two: the least recently used prompt is
    # always the one needed next, so 300 tokens serve no more than none; 400 hold all three
    assert fresh[0] == fresh[1] > fresh[2]
    assert res["budgets"][1]["ratio"] == 1.0 and res["budgets"][2]["ratio"] < 0.7


def test_no_matching_runs_is_said_plainly(tmp_path):
    Store(tmp_path / "empty.duckdb")
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "prefix_budget.py"), "--store",
         str(tmp_path / "empty.duckdb"), "--method", "crp-rag"],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode != 0 and "No stored calls match" in out.stderr
