"""The OpenAI-compatible backend over real HTTP to a small local server."""
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from workbench.llm.base import BackendUnavailableError, GenParams, LLMError
from workbench.llm.openai_compat import OpenAICompatBackend


class _Handler(BaseHTTPRequestHandler):
    with_logprobs = True
    pieces: list | None = None      # the chat answer's tokens, when not the default answer
    seen: list = []

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.seen.append((self.path, body))
        if self.path.endswith("/chat/completions"):
            choice = {"message": {"role": "assistant", "content": "Christopher Nolan"},
                      "finish_reason": "stop"}
            if _Handler.pieces is not None:
                choice = {"message": {"role": "assistant", "content": "".join(_Handler.pieces)},
                          "finish_reason": "length",
                          "logprobs": {"content": [{"token": t, "logprob": -0.1}
                                                   for t in _Handler.pieces]}}
            elif _Handler.with_logprobs:
                choice["logprobs"] = {"content": [
                    {"token": "Christopher", "logprob": math.log(0.5),
                     "top_logprobs": [{"token": "Christopher", "logprob": math.log(0.5)},
                                      {"token": "Chris", "logprob": math.log(0.5)}]},
                    {"token": " Nolan", "logprob": 0.0, "top_logprobs": [{"token": " Nolan", "logprob": 0.0}]}]}
            out = {"model": "m", "choices": [choice], "usage": {"prompt_tokens": 12, "completion_tokens": 2}}
        elif body.get("echo"):
            out = {"choices": [{"text": body["prompt"], "logprobs": None}]}
        else:
            out = {"error": "bad"}
            self.send_response(400)
            self.end_headers()
            self.wfile.write(json.dumps(out).encode())
            return
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    srv = HTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    _Handler.seen = []
    _Handler.with_logprobs = True
    _Handler.pieces = None
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


def test_chat_with_logprobs(server):
    be = OpenAICompatBackend(server, "m")
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    c = be.generate([{"role": "user", "content": "Who directed Inception?"}],
                    GenParams(max_tokens=8, json_schema=schema, seed=3))
    assert c.text == "Christopher Nolan" and c.logprobs_available
    assert c.scores().perplexity == pytest.approx(math.sqrt(2))
    assert c.tokens[0].entropy == pytest.approx(math.log(2))
    path, body = _Handler.seen[-1]
    assert body["response_format"]["json_schema"]["schema"] == schema
    assert body["seed"] == 3 and body["logprobs"] is True


def test_a_looping_answer_is_cut_where_the_local_backend_would_stop(server):
    sentence = [f" w{i}" for i in range(10)] + ["."]
    _Handler.pieces = ["Intro."] + sentence * 5
    be = OpenAICompatBackend(server, "m")
    c = be.generate([{"role": "user", "content": "Summarise."}], GenParams(max_tokens=64))
    assert c.finish_reason == "loop"
    assert c.text == "Intro." + "".join(sentence)
    assert len(c.tokens) == 1 + len(sentence)
    off = be.generate([{"role": "user", "content": "Summarise."}],
                      GenParams(max_tokens=64, loop_stop=0))
    assert off.finish_reason == "length" and len(off.tokens) == 1 + 5 * len(sentence)


def test_missing_logprobs_are_reported_not_invented(server):
    _Handler.with_logprobs = False
    c = OpenAICompatBackend(server, "m").generate([{"role": "user", "content": "q"}])
    assert c.text == "Christopher Nolan"
    assert not c.logprobs_available and c.tokens == [] and c.scores().perplexity is None


def test_score_without_echo_support_says_not_available(server):
    with pytest.raises(LLMError, match="not available"):
        OpenAICompatBackend(server, "m").score("ctx", "continuation")


def test_unreachable_server_names_the_fix():
    be = OpenAICompatBackend("http://127.0.0.1:9/v1", "m", timeout=2)
    with pytest.raises(BackendUnavailableError, match="Cannot reach"):
        be.generate([{"role": "user", "content": "q"}])


class _SlowHandler(BaseHTTPRequestHandler):
    """Answers each chat request with its own question after a delay that makes the first
    request finish last; counts how many requests were in flight at once."""
    lock = threading.Lock()
    in_flight = 0
    peak = 0

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        q = body["messages"][-1]["content"]
        with _SlowHandler.lock:
            _SlowHandler.in_flight += 1
            _SlowHandler.peak = max(_SlowHandler.peak, _SlowHandler.in_flight)
        time.sleep(0.4 - 0.1 * int(q[-1]))
        with _SlowHandler.lock:
            _SlowHandler.in_flight -= 1
        if q.endswith("3"):
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"boom")
            return
        data = json.dumps({"model": "m", "choices": [{"message": {"content": "re " + q},
                                                      "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_generate_many_sends_concurrently_and_keeps_request_order():
    from http.server import ThreadingHTTPServer
    from workbench.llm.base import GenRequest
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _SlowHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        be = OpenAICompatBackend(f"http://127.0.0.1:{srv.server_address[1]}/v1", "m")
        reqs = [GenRequest([{"role": "user", "content": f"q{i}"}]) for i in range(3)]
        _SlowHandler.peak = 0
        got = be.generate_many(reqs)
        assert [c.text for c in got] == ["re q0", "re q1", "re q2"]   # q0 finished last
        assert _SlowHandler.peak == 3
        assert [c.batch["mode"] for c in got] == ["concurrent"] * 3 and got[2].batch["slot"] == 2
        # two at a time: groups [0, 1], [2]
        _SlowHandler.peak = 0
        got = be.generate_many(reqs, max_batch=2)
        assert _SlowHandler.peak == 2 and [c.batch["members"] for c in got] == [[0, 1], [0, 1], [2]]
        # a failing request is raised once its group is done; the first in request order
        bad = reqs + [GenRequest([{"role": "user", "content": "q3"}])]
        with pytest.raises(LLMError, match="HTTP 500"):
            be.generate_many(bad[::-1])
    finally:
        srv.shutdown()
