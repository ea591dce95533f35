"""The runner: stamping, storing, per-phase counts, failures and interruption."""
from dataclasses import dataclass

from workbench import trace as T
from workbench.config import knob
from workbench.llm.scripted import ScriptedBackend
from workbench.methods.base import Method, RunContext
from workbench.execution import execute, run_to_end
from workbench.store import Store


@dataclass
class _Cfg:
    fail: bool = knob(False, "raise midway")


class _Toy(Method):
    name = "toy"
    Config = _Cfg

    def run(self, ctx, question):
        yield ctx.set_phase("think")
        yield T.node_added("q", "question", question)
        out = yield from ctx.generate("answer", [{"role": "user", "content": question}], node_id="q")
        if ctx.config.fail:
            raise RuntimeError("boom")
        yield ctx.set_phase("check")
        obj = yield from ctx.generate_json("verify", "verify it", {"type": "object"}, node_id="q")
        yield T.answer(out.text, node_id="q", verified=obj is not None)


def _ctx(fail=False, verify_text='{"ok": true}'):
    be = ScriptedBackend().add("verify", verify_text).add("", "Nolan")
    return RunContext(llm=be, config=_Cfg(fail=fail))


def test_run_is_stored_with_counts_per_phase(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    tr = run_to_end(_Toy(), _ctx(), "Who?", store=st)
    assert tr.status == "finished" and tr.answer["text"] == "Nolan"
    by_phase = tr.summary["by_phase"]
    assert by_phase["think"]["llm_calls"] == 1 and by_phase["check"]["llm_calls"] == 1
    run = st.get_run(tr.run_id)
    assert run["status"] == "finished" and run["llm_calls"] == 2 and run["answer"] == "Nolan"
    assert st.trace(tr.run_id).to_dict() == tr.to_dict()


def test_unparseable_output_retries_once_then_shows_parse_failed_node(tmp_path):
    tr = run_to_end(_Toy(), _ctx(verify_text="not json"), "Who?")
    purposes = [c["purpose"] for c in tr.llm_calls.values()]
    assert purposes == ["answer", "verify", "verify:retry"]
    failed = [n for n in tr.nodes.values() if n.state == "parse_failed"]
    assert len(failed) == 1 and failed[0].parents == ["q"]
    assert tr.answer["info"]["verified"] is False


def test_method_error_is_stored_as_failed(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    tr = run_to_end(_Toy(), _ctx(fail=True), "Who?", store=st)
    assert tr.status == "failed" and "boom" in tr.errors[0]["message"]
    assert st.get_run(tr.run_id)["status"] == "failed"


def test_closing_the_stream_stores_interrupted(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    tr = T.Trace()
    gen = execute(_Toy(), _ctx(), "Who?", store=st, trace_out=tr)
    for ev in gen:
        if ev.type == T.LLM_CALL:
            break
    gen.close()        # what the UI's Stop button does
    run = st.get_run(tr.run_id)
    assert run["status"] == "interrupted"
    kinds = [e.type for e in st.events(tr.run_id)]
    assert kinds[0] == T.RUN_STARTED and kinds[-1] == T.RUN_FINISHED
