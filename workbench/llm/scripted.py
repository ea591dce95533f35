"""Deterministic responses from a table, for tests of a method's control flow.

A rule matches on the prompt text (substring or regular expression) and
returns a text and its per-token logprobs, so perplexity-driven branches can
be steered exactly. Rules are tried in order; a rule with ``times`` is used
that many times and then skipped. Unmatched prompts get ``default`` or raise.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from . import batching
from .base import (Completion, GenParams, GenRequest, LLMError, Message, ModelInfo, ScoredText,
                   ScoreRequest, Token, messages_to_plain)


@dataclass
class Rule:
    match: str                      # substring, or a regex when regex=True; "" matches all
    text: str | Callable[[str], str]
    logprob: float = -0.1           # per-token logprob unless logprobs is given
    logprobs: list[float] | None = None
    regex: bool = False
    times: int | None = None
    used: int = 0

    def matches(self, prompt: str) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        if self.regex:
            return re.search(self.match, prompt, re.S) is not None
        return self.match in prompt


def _pieces(text: str) -> list[str]:
    # whitespace-attached pieces, like a BPE tokenizer's: "a b" -> ["a", " b"]
    return re.findall(r"\s*\S+|\s+", text) or ([text] if text else [])


@dataclass
class ScriptedBackend:
    rules: list[Rule] = field(default_factory=list)
    default: str | None = None
    default_logprob: float = -0.5
    n_ctx: int = 8192
    calls: list[dict[str, Any]] = field(default_factory=list)
    info: ModelInfo = field(default_factory=lambda: ModelInfo(
        name="scripted", backend="scripted", quantization="-", n_ctx=8192, sha256="scripted"))

    @classmethod
    def from_table(cls, table: Sequence[dict[str, Any]] | dict[str, Any], **kw: Any) -> "ScriptedBackend":
        """``[{"match": ..., "text": ..., "logprob": ...}, ...]`` or ``{match: text}``."""
        if isinstance(table, dict):
            table = [{"match": k, "text": v} for k, v in table.items()]
        return cls(rules=[Rule(**r) for r in table], **kw)

    def add(self, match: str, text: str | Callable[[str], str] | dict | list, **kw: Any) -> "ScriptedBackend":
        if isinstance(text, (dict, list)):
            text = json.dumps(text)
        self.rules.append(Rule(match, text, **kw))
        return self

    def _render(self, messages: Sequence[Message] | str) -> str:
        return messages if isinstance(messages, str) else "\n".join(
            f"<{m['role']}>{m['content']}" for m in messages)

    def render(self, messages: Sequence[Message] | str, chat: bool = True) -> tuple[str, list[str]]:
        return self._render(messages), []

    def generate(self, messages: Sequence[Message] | str, params: GenParams | None = None,
                 on_token: Callable[[Token], None] | None = None) -> Completion:
        params = params or GenParams()
        t0 = time.perf_counter()
        prompt = self._render(messages)
        rule = next((r for r in self.rules if r.matches(prompt)), None)
        if rule is None:
            if self.default is None:
                raise LLMError(f"scripted backend has no rule for prompt: {prompt[-300:]!r}")
            text, lps, lp = self.default, None, self.default_logprob
        else:
            rule.used += 1
            text = rule.text(prompt) if callable(rule.text) else rule.text
            lps, lp = rule.logprobs, rule.logprob
        pieces = _pieces(text)[: params.max_tokens]
        finish = "stop" if len(_pieces(text)) <= params.max_tokens else "length"
        text = "".join(pieces)
        for s in params.stop:
            if s and s in text:
                text = text[: text.index(s)]
                pieces = _pieces(text)
        tokens = [Token(i, p, (lps[i] if lps and i < len(lps) else lp)) for i, p in enumerate(pieces)]
        n_prompt = len(_pieces(prompt))
        if n_prompt + params.max_tokens > self.n_ctx:
            from .base import ContextOverflowError
            raise ContextOverflowError(n_prompt, params.max_tokens, self.n_ctx)
        self.calls.append({"prompt": prompt, "params": params.to_dict(), "output": text})
        for t in tokens if on_token is not None else ():
            on_token(t)
        return Completion(text=text, tokens=tokens, prompt=prompt, prompt_tokens=n_prompt,
                          completion_tokens=len(tokens),
                          latency_ms=(time.perf_counter() - t0) * 1000, finish_reason=finish,
                          model="scripted", params=params.to_dict())

    def score(self, context: Sequence[Message] | str, continuation: str) -> ScoredText:
        r = self.generate(messages_to_plain(context) + "\n<score>" + continuation)
        return ScoredText(self._render(context), continuation, r.tokens, r.latency_ms)

    def generate_many(self, requests: Sequence[GenRequest], *, max_batch: int | None = None,
                      plan: Sequence[Sequence[int]] | None = None) -> list[Completion]:
        """Exactly ``generate`` on each request in turn, with the batch plan recorded."""
        return batching.sequential_generate_many(self, requests, max_batch=max_batch, plan=plan)

    def score_many(self, requests: Sequence[ScoreRequest], *, max_batch: int | None = None,
                   plan: Sequence[Sequence[int]] | None = None) -> list[ScoredText]:
        return batching.sequential_score_many(self, requests, max_batch=max_batch, plan=plan)

    def count_tokens(self, text: str) -> int:
        return len(_pieces(text))
