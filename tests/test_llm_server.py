"""A real OpenAI-compatible model server in the loop: llama-cpp-python's own server
(`python -m llama_cpp.server`) on 127.0.0.1 with SmolLM2, driven through
`--backend openai_compat`: `generate`, a text method and a KG method from the CLI, with
per-token logprobs read from the server's answers and shown in the token heatmap."""
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from workbench.llm.base import GenParams
from workbench.llm.openai_compat import OpenAICompatBackend
from workbench.store import Store
from workbench.viz.heatmap import token_heatmap_html
from workbench.viz.inspect import node_details

from tests.conftest import FAST_MODEL

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python's [server] extra is missing")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from workbench.llm.registry import resolve
    model = resolve(FAST_MODEL)
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    with open(log, "w") as f:
        proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model),
                                 "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048"],
                                stdout=f, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if requests.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the server did not come up in 120 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _cli(args: list[str], home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "WORKBENCH_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_generate_cli_through_the_server_prints_token_logprobs(server, isolated_home):
    p = _cli(["generate", "Who directed Inception?", "--backend", "openai_compat",
              "--server-url", server, "--max-tokens", "6", "--show-tokens"], isolated_home)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip()
    ppl = re.search(r"perplexity ([0-9.]+)", p.stderr)
    assert ppl and float(ppl.group(1)) >= 1.0, p.stderr
    lps = [float(x) for x in re.findall(r"logprob=(-?[0-9.]+)", p.stderr)]
    assert 1 <= len(lps) <= 6 and all(x <= 0 for x in lps)


def test_backend_reads_logprobs_schema_and_scores_from_the_server(server):
    be = OpenAICompatBackend(server)
    msgs = [{"role": "user", "content": "Who directed Inception?"}]
    chat = be.generate(msgs, GenParams(max_tokens=6, seed=1))
    assert chat.logprobs_available and len(chat.tokens) == chat.completion_tokens
    assert "".join(t.piece for t in chat.tokens) == chat.text
    assert all(t.logprob <= 0 and t.entropy is not None for t in chat.tokens)
    plain = be.generate("The capital of France is", GenParams(max_tokens=4, chat=False))
    assert plain.logprobs_available and len(plain.tokens) == plain.completion_tokens
    assert "".join(t.piece for t in plain.tokens) == plain.text
    # the server takes {"type": "json_object", "schema"} only: the backend switches once
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 20}},
              "required": ["answer"]}
    js = be.generate(msgs, GenParams(max_tokens=40, json_schema=schema))
    assert be.schema_style == "json_object" and isinstance(js.json()["answer"], str)
    # echo scoring: the continuation's tokens only, and one generated token, not n_ctx
    t0 = time.perf_counter()
    sc = be.score("The capital of France is", " Paris")
    assert [t.piece for t in sc.tokens] == [" Paris"] and sc.tokens[0].logprob < 0
    assert time.perf_counter() - t0 < 60


@pytest.mark.parametrize("method,knobs", [
    ("standard-rag", ["retriever=bm25", "top_k=2", "passage_chars=160", "answer_max_tokens=12"]),
    ("frag", ["route=simple", "ranker=bm25", "path_top_u=6", "max_tokens=16"]),
])
def test_text_and_kg_methods_through_the_server_with_heatmap(server, isolated_home, method, knobs):
    sets = [a for k in knobs for a in ("--set", k)]
    p = _cli(["ask", "--dataset", "demo", "--question-id", "q001", "--method", method, *sets,
              "--backend", "openai_compat", "--server-url", server, "--quiet"], isolated_home)
    assert p.returncode == 0, p.stderr
    st = Store()
    run = st.list_runs(method=method)[0]
    assert run["status"] in ("finished", "refused") and run["llm_calls"] >= 1
    tr = st.trace(run["run_id"])
    calls = list(tr.llm_calls.values())
    assert calls and all(c["logprobs_available"] for c in calls)
    # the inspector's view of the node that made the call: probabilities, not "no logprob"
    node = next(n for n in tr.nodes if node_details(tr, n)["llm_calls"])
    call = node_details(tr, node)["llm_calls"][0]
    html = token_heatmap_html(call["tokens"])
    tips = re.findall(r'title="#\d+ p=([0-9.]+) logprob=(-?[0-9.]+)', html)
    assert len(tips) == len(call["tokens"]) >= 1 and "no logprob" not in html
    assert all(0 < float(p) <= 1 for p, _ in tips)
    assert call["perplexity"] is not None and call["perplexity"] >= 1.0
