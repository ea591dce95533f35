"""The OpenAI-compatible backend over real HTTP to a small local server."""
import json
import math
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from workbench.llm.base import BackendUnavailableError, GenParams, LLMError
from workbench.llm.openai_compat import OpenAICompatBackend


class _Handler(BaseHTTPRequestHandler):
    with_logprobs = True
    seen: list = []

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.seen.append((self.path, body))
        if self.path.endswith("/chat/completions"):
            choice = {"message": {"role": "assistant", "content": "Christopher Nolan"},
                      "finish_reason": "stop"}
            if _Handler.with_logprobs:
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
