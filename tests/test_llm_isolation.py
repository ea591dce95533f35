"""The model in a worker process: native crashes fail one call, never the caller.

Real SmolLM2 in a real worker process throughout; crashes are real signals sent to it
(SIGSEGV, as llama.cpp's AMX path raises, and SIGKILL, as the OOM killer does).
"""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from workbench import paths
from workbench import trace as T
from workbench.llm import native
from workbench.llm.base import (ContextOverflowError, GenParams, GrammarError, ModelCrashedError,
                                ModelFileError)
from workbench.llm.isolated import IsolatedBackend, is_crash
from workbench.llm.registry import resolve

from tests.conftest import FAST_MODEL
from workbench.store import Store

Q = [{"role": "user", "content": "Who directed the film Inception?"}]


def test_installed_llama_cpp_has_no_amx_path():
    """llama.cpp's AMX matrix multiply crashes every multi-token decode: set-up must build
    without it (scripts/setup.sh passes -mno-amx-int8)."""
    info = native.system_info()
    assert "AMX_INT8 = 1" not in info, (
        f"this llama-cpp-python build reports AMX_INT8 = 1 ({native.cpu_summary(info)}); "
        f"rebuild it with scripts/setup.sh")
    assert not native.amx_enabled(info)


def test_system_info_parsing_and_signal_names():
    info = "CPU : SSE3 = 1 | AVX2 = 1 | AMX_INT8 = 1 | AVX512 = 0 | REPACK = 1 |"
    assert native.features(info) == {"SSE3": True, "AVX2": True, "AMX_INT8": True,
                                     "AVX512": False, "REPACK": True}
    assert native.amx_enabled(info) and not native.amx_enabled("AVX2 = 1 |")
    assert native.signal_name(-signal.SIGSEGV) == "SIGSEGV"
    assert native.signal_name(3) == "exit code 3"
    r = native.SmokeResult(False, -signal.SIGSEGV, "ggml_backend_amx_mul_mat", info)
    msg = r.message()
    assert "SIGSEGV" in msg and "AMX_INT8" in msg and "setup.sh" in msg


def test_smoke_generation_runs_in_a_child_and_succeeds():
    r = native.smoke(FAST_MODEL, max_tokens=4)
    assert r.ok, r.message()
    assert "generated" in r.output


@pytest.fixture(scope="module")
def iso():
    be = IsolatedBackend(resolve(FAST_MODEL), name=FAST_MODEL, n_ctx=2048, n_threads=2)
    yield be
    be.close()


def test_worker_serves_generation_with_logprobs_grammar_and_streaming(iso):
    assert iso.pid != os.getpid() and iso.alive
    assert iso.info.extra["isolated"] and iso.info.name == FAST_MODEL
    seen = []
    c = iso.generate(Q, GenParams(max_tokens=12), on_token=seen.append)
    assert c.completion_tokens > 0 and [t.id for t in seen] == [t.id for t in c.tokens]
    assert all(t.logprob is not None and t.logprob <= 0 for t in c.tokens)
    again = iso.generate(Q, GenParams(max_tokens=12))
    assert again.text == c.text and again.logprobs == c.logprobs
    # the prefix cache in the worker, for a prompt longer than its 32-token unit
    long = [{"role": "system", "content": "You answer questions about films. " * 8}] + Q
    first = iso.generate(long, GenParams(max_tokens=2))
    assert iso.generate(long, GenParams(max_tokens=2)).cached_prompt_tokens >= 32 > \
        first.cached_prompt_tokens
    j = iso.generate(Q, GenParams(max_tokens=40, json_schema={
        "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}))
    assert "answer" in j.json()
    assert iso.count_tokens("hello world") >= 2
    assert iso.score(Q, " Christopher Nolan").scores().perplexity > 1.0


def test_errors_cross_the_worker_boundary_as_themselves(iso):
    with pytest.raises(ContextOverflowError) as e:
        iso.generate("word " * 3000, GenParams(max_tokens=8))
    assert e.value.n_ctx == 2048 and e.value.prompt_tokens > 2048
    with pytest.raises(GrammarError):
        iso.generate(Q, GenParams(max_tokens=3, grammar="root ::= ("))
    assert iso.generate(Q, GenParams(max_tokens=2)).completion_tokens > 0   # still serving


def test_bad_model_files_fail_before_any_worker(tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        IsolatedBackend(tmp_path / "nope.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all")
    with pytest.raises(ModelFileError, match="not a GGUF"):
        IsolatedBackend(junk)


def test_crash_during_a_call_fails_that_call_and_the_next_restarts(iso):
    pid = iso.pid
    killer = threading.Timer(0.3, lambda: os.kill(pid, signal.SIGSEGV))
    killer.start()
    t0 = time.monotonic()
    with pytest.raises(ModelCrashedError) as e:
        iso.generate("Count from one to a thousand: one, two,",
                     GenParams(max_tokens=1500, chat=False))
    killer.join()
    assert e.value.cause == "SIGSEGV" and "model process crashed: SIGSEGV" in str(e.value)
    assert time.monotonic() - t0 < 30
    c = iso.generate(Q, GenParams(max_tokens=4))
    assert c.completion_tokens > 0 and iso.pid != pid and iso.restarts >= 1


def test_crash_between_calls_is_reported_once(iso):
    pid = iso.pid
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    with pytest.raises(ModelCrashedError, match="SIGKILL"):
        iso.generate(Q, GenParams(max_tokens=2))
    assert iso.generate(Q, GenParams(max_tokens=2)).completion_tokens > 0
    assert iso.pid != pid


class CrashOnCall:
    """The real isolated backend, whose worker gets SIGSEGV when call number ``n`` starts."""

    def __init__(self, inner: IsolatedBackend, n: int):
        self.inner, self.n, self.calls = inner, n, 0

    def generate(self, messages, params=None, on_token=None):
        self.calls += 1
        if self.calls == self.n:
            os.kill(self.inner.pid, signal.SIGSEGV)
            time.sleep(0.1)
        return self.inner.generate(messages, params, on_token=on_token)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _demo_context(llm, method="standard-rag"):
    from workbench.workspace import build_context
    return build_context(method, llm=llm, dataset="demo",
                         overrides={"retriever": "bm25", "top_k": 2, "answer_max_tokens": 8})


def test_run_whose_model_dies_is_stored_failed_with_cause_and_next_run_works(iso):
    from workbench.execution import run_to_end
    st = Store()
    method, ctx = _demo_context(CrashOnCall(iso, 1))
    tr = run_to_end(method, ctx, "Who directed Inception?", store=st)
    run = st.get_run(tr.run_id)
    assert run["status"] == "failed" and "model process crashed: SIGSEGV" in run["error"]
    assert is_crash(run["error"])
    kinds = [e.type for e in st.events(tr.run_id)]
    assert kinds[0] == T.RUN_STARTED and T.RETRIEVED in kinds and kinds[-1] == T.RUN_FINISHED
    method, ctx = _demo_context(iso)
    ok = run_to_end(method, ctx, "Who directed Inception?", store=st)
    assert st.get_run(ok.run_id)["status"] in ("finished", "refused")


def test_eval_item_whose_model_dies_is_failed_and_the_eval_goes_on(iso):
    from workbench.eval.runner import EvalRunner, EvalSpec
    st = Store()
    spec = EvalSpec("demo", ["standard-rag"], limit=3, judge="off",
                    sets={"retriever": "bm25", "top_k": 2, "answer_max_tokens": 8})
    r = EvalRunner.new(st, spec, backend=CrashOnCall(iso, 2))
    res = r.run()
    assert res.n_done == 3
    items = st.query("SELECT i.status, r.error FROM eval_items i JOIN runs r USING (run_id) "
                     "ORDER BY i.created_at")
    assert [i["status"] for i in items].count("failed") == 1
    failed = next(i for i in items if i["status"] == "failed")
    assert "model process crashed: SIGSEGV" in failed["error"]
    assert sum(i["status"] in ("finished", "refused") for i in items) == 2


def test_ask_page_reports_the_crash_and_restarts_the_model(iso, monkeypatch):
    """The page stays up, says the model process crashed, and its button restarts it."""
    from tests import test_ui_pages as P
    from tests import test_ui_support as S
    from workbench import settings as settings_mod
    from workbench.ui import backend
    from workbench.ui import widgets as W
    monkeypatch.setenv("WORKBENCH_UI_WARM", "0")
    S.register()
    W._STORES.clear()
    s = settings_mod.load()
    s.dataset = "ui-toy"
    settings_mod.save(s)
    backend.set_override(CrashOnCall(iso, 2))
    try:
        at = P.app("pages/ask.py")
        at.selectbox(key="ask__m").set_value("ui-toy").run()
        at.button(key="ask_run").click().run()
        assert at.session_state["ask_batch"].join(180), "the run did not finish"
        at.run()
        js = at.session_state["ask_batch"].jobs[0]
        assert js.status == "failed" and "model process crashed: SIGSEGV" in js.error
        assert not at.exception
        assert any("model process crashed: SIGSEGV" in e.value for e in at.error)
        assert any("crashed during this run" in w.value for w in at.warning)
        assert Store().get_run(js.run_id)["status"] == "failed"
        before = iso.pid
        at.button(key="ask__restart_model").click().run()
        assert any("restarted" in m.value for m in at.success)
        assert iso.pid != before and iso.alive
    finally:
        backend.clear_override()
        S.unregister()
        W._STORES.clear()


# -- bundled models: assembled from chunk packages, checked against pinned hashes ------------

def _chunk_packages(root, parts):
    import sys
    names = []
    for i, data in enumerate(parts, 1):
        d = root / f"wbtestchunk{i}" / "data"
        d.mkdir(parents=True)
        (d.parent / "__init__.py").write_text("")
        (d / f"part{i:02d}.bin").write_bytes(data)
        names.append(f"wbtestchunk{i}")
    sys.path.insert(0, str(root))
    return names


def test_chunks_assemble_in_order_and_a_bad_hash_says_to_reinstall(tmp_path, monkeypatch):
    import hashlib
    import importlib
    import sys
    from workbench.llm import bundled
    parts = [b"GGUF" + b"a" * 1000, b"b" * 500, b"c" * 7]
    names = _chunk_packages(tmp_path / "pkgs", parts)
    importlib.invalidate_caches()
    monkeypatch.setattr(bundled, "models_dir", lambda: tmp_path / "models")
    whole = b"".join(parts)
    try:
        with pytest.raises(ModelFileError, match="reinstall the model packages"):
            bundled.assemble(names, "m.gguf", len(whole), "0" * 64)
        assert not (tmp_path / "models" / "m.gguf").exists()        # nothing half-written
        with pytest.raises(ModelFileError, match="add up to"):
            bundled.assemble(names, "m.gguf", len(whole) + 1, hashlib.sha256(whole).hexdigest())
        with pytest.raises(ModelFileError, match="incomplete.*wbtestchunk9"):
            bundled.assemble(names + ["wbtestchunk9"], "m.gguf", len(whole), "0" * 64)
        p = bundled.assemble(names, "m.gguf", len(whole), hashlib.sha256(whole).hexdigest())
        assert p.read_bytes() == whole
        assert bundled.assemble(["wbtestnothing1", "wbtestnothing2"], "x.gguf", 1, "0") is None
    finally:
        sys.path.remove(str(tmp_path / "pkgs"))


def test_a_bundled_file_that_no_longer_matches_its_hash_is_refused(tmp_path, monkeypatch):
    import dataclasses
    from workbench.llm import bundled, registry
    src = resolve(FAST_MODEL)
    copy = tmp_path / "copy.gguf"
    copy.write_bytes(src.read_bytes()[:-16] + b"\0" * 16)      # same size, other bytes
    fake = dataclasses.replace(bundled.MODELS[FAST_MODEL], name="tampered", locate=lambda: copy)
    monkeypatch.setitem(registry.BUNDLED, "tampered", fake)
    with pytest.raises(ModelFileError, match="pinned SHA-256.*reinstall"):
        resolve("tampered")
    assert resolve("tampered", verify=False) == copy


def test_worker_exits_soon_after_its_parent_is_killed(tmp_path):
    """A killed CLI or app must not leave its model generating in the background."""
    import subprocess
    import sys
    code = ("import sys, time; from workbench.llm.isolated import IsolatedBackend; "
            "from workbench.llm.registry import resolve; from workbench.llm.base import GenParams; "
            f"be = IsolatedBackend(resolve({FAST_MODEL!r}), n_ctx=1024); print(be.pid, flush=True); "
            "be.generate('Count to a million: one, two,', GenParams(max_tokens=4000, chat=False))")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              cwd=str(paths.PROJECT_ROOT))
    worker = int(parent.stdout.readline())
    time.sleep(0.5)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        if open(f"/proc/{worker}/stat").read().split()[2] == "Z":   # exited, awaiting reaping
            break
        time.sleep(0.2)
    else:
        os.kill(worker, signal.SIGKILL)
        pytest.fail("the model worker kept running after its parent was killed")
