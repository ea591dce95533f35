"""The same interface over an OpenAI-compatible HTTP server (llama.cpp server, vLLM).

Logprobs are requested and used when the server returns them; otherwise the
completion says ``logprobs_available=False`` and scores show as not available.

Servers differ in two places, both handled here:

- Structured output: vLLM and llama.cpp's own server take OpenAI's ``response_format``
  ``{"type": "json_schema", ...}``; llama-cpp-python's server (``python -m llama_cpp.server``)
  rejects it and takes ``{"type": "json_object", "schema": ...}``. The first rejection
  switches the backend to the second form for the rest of its life.
- Per-token logprobs: chat completions carry ``logprobs.content[i]`` (``token``,
  ``logprob``, ``top_logprobs`` as a list), text completions ``logprobs.tokens`` /
  ``token_logprobs`` / ``top_logprobs`` (a token -> logprob mapping per position). Both are
  read into :class:`~workbench.llm.base.Token` so the heatmap and scores see them.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import requests

from . import batching
from .base import (BackendUnavailableError, Completion, ContextOverflowError, GenParams,
                   GenRequest, LLMError, Message, ModelInfo, ScoredText, ScoreRequest, Token,
                   messages_to_plain)
from .repetition import first_loop_cut
from ..scoring import entropy_from_top


def _reason(r: requests.Response) -> str:
    """The status line's reason phrase, trimmed to printable text of a sane length."""
    reason = "".join(c for c in str(r.reason or "") if c.isprintable())[:60]
    return f"({reason})" if reason else ""


class OpenAICompatBackend:
    def __init__(self, base_url: str, model: str = "", *, api_key: str = "", timeout: float = 120.0,
                 n_ctx: int | None = None):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.info = ModelInfo(name=model or "server-default", path=self.base_url,
                              backend="openai_compat", n_ctx=n_ctx, sha256=f"server:{model}")
        self.schema_style = "json_schema"       # or "json_object" (llama-cpp-python's server)

    def _post(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        url = f"{self.base_url}/{route}"
        r = self._request(url, body)
        if r.status_code >= 400 and self._fall_back_to_json_object(body, r.text):
            r = self._request(url, body)
        # The body of an error or of a non-JSON answer is never put into a message: the URL
        # may point at something that is not a model server (an admin page, another
        # service on the host), and its answer would be shown to whoever asked.
        if r.status_code >= 400:
            text = r.text[:2000].lower()
            if "context" in text and ("length" in text or "exceed" in text):
                raise ContextOverflowError(-1, body.get("max_tokens", 0), self.info.n_ctx or -1)
            raise LLMError(f"The server at {url} answered HTTP {r.status_code} "
                           f"{_reason(r)}; check the server URL and the server's own log.")
        try:
            return r.json()
        except ValueError as e:
            raise LLMError(f"The server at {url} did not return JSON (HTTP {r.status_code} "
                           f"{_reason(r)}); check that the URL is the base of an "
                           f"OpenAI-compatible API (…/v1).") from None

    def _fall_back_to_json_object(self, body: dict[str, Any], error: str) -> bool:
        rf = body.get("response_format") or {}
        if rf.get("type") != "json_schema" or "response_format" not in error:
            return False
        self.schema_style = "json_object"
        body["response_format"] = {"type": "json_object", "schema": rf["json_schema"]["schema"]}
        return True

    def _request(self, url: str, body: dict[str, Any]) -> requests.Response:
        try:
            # No redirects: an allowed server URL must not forward the request elsewhere.
            return requests.post(url, json=body, headers=self.headers, timeout=self.timeout,
                                 allow_redirects=False)
        except requests.ConnectionError as e:
            raise BackendUnavailableError(
                f"Cannot reach the OpenAI-compatible server at {self.base_url} ({e.__class__.__name__}). "
                f"Start the server (e.g. `python -m llama_cpp.server --model M.gguf` or vLLM) or fix "
                f"the server URL in Settings.") from e
        except requests.Timeout as e:
            raise BackendUnavailableError(
                f"The server at {self.base_url} did not answer within {self.timeout:.0f} s. Check "
                f"that it is not overloaded, or raise the timeout.") from e

    def _body(self, params: GenParams) -> dict[str, Any]:
        body: dict[str, Any] = {"max_tokens": params.max_tokens, "temperature": params.temperature,
                                "top_p": params.top_p, "stop": params.stop or None}
        if self.model:
            body["model"] = self.model
        if params.seed is not None:
            body["seed"] = params.seed
        if params.top_k:
            body["top_k"] = params.top_k          # llama.cpp server and vLLM accept it
        if params.json_schema is not None and self.schema_style == "json_object":
            body["response_format"] = {"type": "json_object", "schema": params.json_schema}
        elif params.json_schema is not None:
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "output", "schema": params.json_schema}}
        elif params.grammar:
            body["grammar"] = params.grammar      # llama.cpp server
            body["guided_grammar"] = params.grammar   # vLLM
        return body

    def generate(self, messages: Sequence[Message] | str, params: GenParams | None = None,
                 on_token: Callable[[Token], None] | None = None) -> Completion:
        params = params or GenParams()
        body = self._body(params)
        t0 = time.perf_counter()
        if isinstance(messages, str) or not params.chat:
            prompt = messages_to_plain(messages)
            body.update(prompt=prompt, logprobs=5)
            data = self._post("completions", body)
            choice = data["choices"][0]
            text = choice.get("text", "")
            tokens = self._tokens_completion(choice.get("logprobs"))
        else:
            prompt = "\n".join(f"<{m['role']}> {m['content']}" for m in messages)
            body.update(messages=list(messages), logprobs=True, top_logprobs=5)
            data = self._post("chat/completions", body)
            choice = data["choices"][0]
            text = (choice.get("message") or {}).get("content") or ""
            tokens = self._tokens_chat(choice.get("logprobs"))
        usage = data.get("usage") or {}
        finish = choice.get("finish_reason") or "stop"
        keep = first_loop_cut([t.piece for t in tokens], params.loop_tokens()) if tokens else None
        if keep is not None and "".join(t.piece for t in tokens) == text:
            # the server cannot stop a loop; its output is cut where this backend would stop
            tokens, finish = tokens[:keep], "loop"
            text = "".join(t.piece for t in tokens)
        for t in tokens if on_token is not None and tokens else ():
            on_token(t)     # a non-streaming request: the tokens arrive together
        return Completion(
            text=text, tokens=tokens or [], prompt=prompt,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", len(tokens or []))),
            latency_ms=(time.perf_counter() - t0) * 1000.0,
            finish_reason=finish, model=data.get("model", self.model),
            params=params.to_dict(), logprobs_available=tokens is not None)

    @staticmethod
    def _tokens_chat(lp: dict[str, Any] | None) -> list[Token] | None:
        if not lp or not lp.get("content"):
            return None
        out = []
        for i, c in enumerate(lp["content"]):
            tops = [t["logprob"] for t in c.get("top_logprobs") or [] if t.get("logprob") is not None]
            out.append(Token(i, c.get("token", ""), c.get("logprob"),
                             entropy_from_top(tops) if tops else None))
        return out

    @staticmethod
    def _tokens_completion(lp: dict[str, Any] | None) -> list[Token] | None:
        if not lp or not lp.get("token_logprobs"):
            return None
        tops = lp.get("top_logprobs") or [None] * len(lp["tokens"])
        return [Token(i, t, l, entropy_from_top(list(tp.values())) if tp else None)
                for i, (t, l, tp) in enumerate(zip(lp["tokens"], lp["token_logprobs"], tops))]

    def score(self, context: Sequence[Message] | str, continuation: str) -> ScoredText:
        """Teacher-forced scoring via ``echo``; servers that lack it say so. One token is
        generated and dropped: llama-cpp-python's server reads ``max_tokens: 0`` as "until
        the context is full"."""
        prompt = messages_to_plain(context)
        end = len(prompt) + len(continuation)
        t0 = time.perf_counter()
        data = self._post("completions", {"model": self.model, "prompt": prompt + continuation,
                                          "max_tokens": 1, "echo": True, "logprobs": 1})
        lp = data["choices"][0].get("logprobs")
        if not lp or not lp.get("token_logprobs"):
            raise LLMError(f"The server at {self.base_url} does not return prompt logprobs "
                           f"(echo=True), so scoring a given text is not available there; use the "
                           f"local llama_cpp backend for perplexity checks.")
        # keep the tokens that lie inside the continuation
        offs = lp.get("text_offset") or []
        toks = [Token(i, t, l) for i, (t, l, o) in
                enumerate(zip(lp["tokens"], lp["token_logprobs"], offs))
                if len(prompt) <= o < end and l is not None]
        return ScoredText(prompt, continuation, toks, (time.perf_counter() - t0) * 1000.0)

    def generate_many(self, requests: Sequence[GenRequest], *, max_batch: int | None = None,
                      plan: Sequence[Sequence[int]] | None = None) -> list[Completion]:
        """The requests of each group in flight together (the server batches them);
        results in request order. An error of any request is raised after its group
        has finished, the first in request order."""
        return self._concurrently(requests, max_batch, plan,
                                  lambda r: self.generate(r.messages, r.params))

    def score_many(self, requests: Sequence[ScoreRequest], *, max_batch: int | None = None,
                   plan: Sequence[Sequence[int]] | None = None) -> list[ScoredText]:
        return self._concurrently(requests, max_batch, plan,
                                  lambda r: self.score(r.context, r.continuation))

    def _concurrently(self, requests, max_batch, plan, call):
        groups = batching.resolve_plan(len(requests), max_batch, plan)

        def run_group(reqs):
            with ThreadPoolExecutor(max_workers=len(reqs)) as pool:
                futures = [pool.submit(call, r) for r in reqs]
            for f in futures:           # all done here: the pool has been shut down
                if f.exception() is not None:
                    raise f.exception()
            return [f.result() for f in futures]

        return batching.run_plan(requests, groups, "concurrent", run_group)

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)   # servers rarely expose a tokenizer; an estimate
