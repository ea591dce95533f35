"""Answer a call from an earlier run's stored call when the model would see the same prompt
with the same parameters (spec crp-rag.md §7.1: cache every call by model, prompt and
parameters, so re-runs and what-ifs of a late stage cost nothing).

``eval --reuse-calls EVAL_ID`` wraps each worker's backend in :class:`CallReplay`. A change
to one stage of a method (a prompt, a knob read late) then re-runs only the calls whose
prompt changed, and every call downstream of a changed output; the rest come back from the
store token for token, log-probabilities included, so perplexities and confidences are those
of the model. Replayed calls carry ``replayed_from`` (the stored call's id), and an eval that
reuses calls says so: its wall times do not measure the model.

Sampled calls replay too: their seed is part of the parameters, and llama.cpp samples the
same tokens from the same prompt and seed. Teacher-forced scorings (``llm_score`` events,
e.g. CogGRAG's p_right) replay the same way, by their context's SHA-256 and continuation.
"""
from __future__ import annotations

import json
import threading
from typing import Any, Iterable, Sequence

from . import batching
from .base import (Completion, GenParams, GenRequest, LLMError, ModelInfo, ScoredText, Token,
                   context_digest)
from .repetition import first_loop_cut


def _key(prompt: str, params: dict[str, Any]) -> str:
    return json.dumps([prompt, params], sort_keys=True, default=str)


def _score_key(context_sha256: str, continuation: str) -> str:
    return json.dumps([context_sha256, continuation])


def load_calls(store: Any, eval_ids: str) -> tuple[list[dict[str, Any]], str | None]:
    """The stored ``llm_call`` and ``llm_score`` records of the runs of one or more evals
    (comma-separated ids), and the model they were made with. Refuses evals that ran more
    than one model. An eval that reused calls offers those too, so naming the latest eval of
    a chain of reuses is enough."""
    ids = [e.strip() for e in eval_ids.split(",") if e.strip()]
    rows = []
    for eval_id in ids:
        got = store.query(
            "SELECT r.model_sha256 AS sha, e.type AS type, e.data AS data FROM events e "
            "JOIN runs r USING (run_id) WHERE r.eval_id = ? AND e.type IN ('llm_call', "
            "'llm_score') ORDER BY r.run_id, e.seq", [eval_id])
        if not got and not store.query("SELECT 1 FROM eval_batches WHERE eval_id = ?",
                                       [eval_id]):
            raise LookupError(f"no eval {eval_id!r} to reuse calls from; `python -m workbench "
                              f"eval list` shows the stored evals")
        rows += got
    shas = {r["sha"] for r in rows if r["sha"]}
    if len(shas) > 1:
        raise ValueError(f"eval(s) {eval_ids} ran more than one model; their calls cannot be "
                         f"reused as one model's")
    calls = []
    for r in rows:
        d = r["data"] if isinstance(r["data"], dict) else json.loads(r["data"])
        if r["type"] == "llm_score":
            if d.get("context_sha256") and d.get("tokens") is not None:
                calls.append({k: d.get(k) for k in ("context_sha256", "continuation", "tokens")}
                             | {"score_id": d.get("replayed_from") or d.get("score_id")})
            continue
        if d.get("prompt") is None or d.get("output") is None:
            continue
        rec = {k: d.get(k) for k in ("prompt", "params", "output", "tokens", "prompt_tokens",
                                     "completion_tokens", "finish_reason", "model", "call_id",
                                     "logprobs_available")}
        # a call this eval itself replayed is reusable too (so reuse chains), and keeps
        # pointing at the call the model made
        rec["call_id"] = d.get("replayed_from") or rec["call_id"]
        calls.append(rec)
    return calls, (shas.pop() if shas else None)


class CallReplay:
    """``inner`` with calls answered from ``calls`` (``llm_call`` records) where the
    rendered prompt and the parameters match, and scorings from its ``llm_score`` records
    where the rendered context and the continuation match; the rest go to ``inner``.
    ``model_sha256``: the model the calls were made with; a different model refuses at its
    first call."""

    def __init__(self, inner: Any, calls: Iterable[dict[str, Any]],
                 model_sha256: str | None = None, source: str = ""):
        self.inner = inner
        self.source = source
        self.model_sha256 = model_sha256
        self._index: dict[str, dict[str, Any]] = {}
        self._scores: dict[str, dict[str, Any]] = {}
        for c in calls:
            if "context_sha256" in c:
                self._scores.setdefault(_score_key(c["context_sha256"], c["continuation"]), c)
            else:
                self._index.setdefault(_key(c["prompt"], c["params"] or {}), c)
        self.hits = 0
        self.misses = 0
        self._checked = model_sha256 is None
        self._count_lock = threading.Lock()

    @property
    def info(self) -> ModelInfo:
        return self.inner.info

    def _check_model(self) -> None:
        if self._checked:
            return
        sha = getattr(self.inner.info, "sha256", None)
        if sha and sha != self.model_sha256:
            raise LLMError(
                f"the calls of eval {self.source or '?'} were made with another model "
                f"(sha256 {self.model_sha256[:12]}…, this one {sha[:12]}…); reuse calls only "
                f"from an eval of the same model, or run without --reuse-calls")
        self._checked = True

    def _lookup(self, messages: Any, params: GenParams) -> dict[str, Any] | None:
        self._check_model()
        render = getattr(self.inner, "render", None)
        if render is None:
            return None
        prompt, _ = render(messages, params.chat)
        wanted = params.to_dict()
        rec = self._index.get(_key(prompt, wanted))
        stop = params.loop_tokens()
        if rec is not None and not stop and rec.get("finish_reason") == "loop":
            rec = None      # cut before bounded JSON outputs were let finish
        elif rec is None and stop:
            # a call stored before the loop check existed: the same call, unless its output
            # holds a loop the check would have stopped
            older = self._index.get(_key(prompt, {k: v for k, v in wanted.items()
                                                  if k != "loop_stop"}))
            if older is not None and first_loop_cut(
                    [int(t[0]) for t in older.get("tokens") or []], stop) is None:
                rec = older
        return self._counted(rec)

    def _counted(self, rec: dict[str, Any] | None) -> dict[str, Any] | None:
        with self._count_lock:
            if rec is None:
                self.misses += 1
            else:
                self.hits += 1
        return rec

    @staticmethod
    def _tokens(rec: dict[str, Any]) -> list[Token]:
        return [Token(int(t[0]), t[1], t[2], t[3] if len(t) > 3 else None)
                for t in rec.get("tokens") or []]

    @staticmethod
    def _fill(stored: list[Any], requests: Sequence[Any], run_rest: Any) -> list[Any]:
        """``stored`` (None where the store had no answer), the gaps filled in one go by
        ``run_rest`` on the requests the store could not answer."""
        todo = [i for i, got in enumerate(stored) if got is None]
        if todo:
            for i, got in zip(todo, run_rest([requests[i] for i in todo])):
                stored[i] = got
        return stored

    @staticmethod
    def _completion(rec: dict[str, Any], on_token: Any = None) -> Completion:
        tokens = CallReplay._tokens(rec)
        if on_token is not None:
            for t in tokens:
                on_token(t)
        return Completion(
            text=rec["output"], tokens=tokens, prompt=rec["prompt"],
            prompt_tokens=int(rec.get("prompt_tokens") or 0),
            completion_tokens=int(rec.get("completion_tokens") or len(tokens)),
            latency_ms=0.0, finish_reason=rec.get("finish_reason") or "stop",
            model=rec.get("model") or "", params=dict(rec.get("params") or {}),
            logprobs_available=bool(rec.get("logprobs_available", True)),
            replayed_from=rec.get("call_id") or "?")

    def generate(self, messages: Any, params: GenParams | None = None,
                 on_token: Any = None) -> Completion:
        params = params or GenParams()
        rec = self._lookup(messages, params)
        if rec is not None:
            return self._completion(rec, on_token)
        if on_token is None:
            return self.inner.generate(messages, params)
        return self.inner.generate(messages, params, on_token=on_token)

    def generate_many(self, requests: Sequence[GenRequest], **kw: Any) -> list[Completion]:
        recs = [self._lookup(r.messages, r.params) for r in requests]
        return self._fill([self._completion(rec) if rec is not None else None for rec in recs],
                          requests, lambda rest: batching.generate_many(self.inner, rest, **kw))

    def _stored_score(self, context: Any, continuation: str) -> ScoredText | None:
        self._check_model()
        render = getattr(self.inner, "render", None)
        if render is None or not self._scores:
            return None
        prompt, _ = render(context, True)
        rec = self._counted(self._scores.get(_score_key(context_digest(prompt), continuation)))
        if rec is None:
            return None
        return ScoredText(prompt, continuation, self._tokens(rec), 0.0,
                          replayed_from=rec.get("score_id") or "?")

    def score(self, context: Any, continuation: str) -> Any:
        got = self._stored_score(context, continuation)
        return got if got is not None else self.inner.score(context, continuation)

    def score_many(self, requests: Sequence[Any], **kw: Any) -> list[Any]:
        return self._fill([self._stored_score(r.context, r.continuation) for r in requests],
                          requests, lambda rest: batching.score_many(self.inner, rest, **kw))

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def __getattr__(self, name: str) -> Any:       # backend-specific extras
        return getattr(self.inner, name)


# an ``llm_call`` or ``llm_score`` event ``e`` that was answered from the store
REPLAYED_SQL = "json_extract_string(e.data, '$.replayed_from') IS NOT NULL"


def reuse_counts(store: Any, eval_id: str) -> tuple[int, int]:
    """(calls answered from the store, all calls) over an eval's runs."""
    r = store.query(
        f"SELECT count(*) FILTER (WHERE {REPLAYED_SQL}) AS reused, count(*) AS n FROM events e "
        "JOIN runs r USING (run_id) WHERE r.eval_id = ? AND e.type = 'llm_call'", [eval_id])[0]
    return int(r["reused"] or 0), int(r["n"] or 0)


def runs_with_reused_calls(store: Any, eval_id: str) -> set[str]:
    """The runs of an eval that answered at least one call or scoring from the store (their
    wall time did not measure the model)."""
    return {r["run_id"] for r in store.query(
        f"SELECT DISTINCT e.run_id FROM events e JOIN runs r USING (run_id) "
        f"WHERE r.eval_id = ? AND e.type IN ('llm_call', 'llm_score') AND {REPLAYED_SQL}",
        [eval_id])}


def reuse_note(store: Any, eval_id: str, spec: dict[str, Any]) -> str:
    """One line for an eval that reused calls ('' for one that did not)."""
    src = (spec or {}).get("reuse_calls")
    if not src:
        return ""
    reused, n = reuse_counts(store, eval_id)
    return (f"{reused} of {n} LLM calls answered from the stored calls of eval {src}: wall "
            f"times do not measure the model")
